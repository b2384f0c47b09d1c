//! GPU tests of the counting pass and the runtime merge (skip without a GPU; fail under
//! `MANTISSA_REQUIRE_GPU=1`): counted kernels, with the runtime compiled by NVRTC and merged, are
//! loaded as one module, launched, and
//! - give exactly the per-instruction counts of a kernel whose profile is known
//!   (`tests/fixtures/count/profile.ptx`: a loop of known trip count, a guarded instruction and a
//!   guarded branch taken by half the threads);
//! - compute the same bits as the kernel as written (and as a CPU model of it);
//! - run a shipped example (gauss, through NVRTC) end to end, with counts that must hold whatever
//!   code NVRTC chose: every thread runs the first instruction and exactly one `ret`, the
//!   division of `fan1` runs once per active row, kernels not launched count nothing, and the
//!   two counters (runtime call, inline atomic) and the floating-point-only option agree.

#[path = "support/example.rs"]
mod example;

#[path = "support/modules.rs"]
mod modules;

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{
    runtime, DeviceBuffer, FlagSet, Gpu, HostData, KernelArg, LaunchDims, Source, Target,
};
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::op::{decode_name, OpKind, Rounding, ValueType};
use mantissa_ptx::pass::count::{count, CountOptions, CountReport, Counter, Which};
use mantissa_ptx::Module;
use modules::{parse_clean, target_arch};
use std::collections::HashMap;

const PROFILE: &str = include_str!("fixtures/count/profile.ptx");

const EVERY_CALL: CountOptions = CountOptions {
    which: Which::Every,
    counter: Counter::RuntimeCall,
};
const EVERY_INLINE: CountOptions = CountOptions {
    which: Which::Every,
    counter: Counter::InlineAtomic,
};
const FP_CALL: CountOptions = CountOptions {
    which: Which::FloatingPoint,
    counter: Counter::RuntimeCall,
};

/// A module ready to load: `m` counted with `options`, merged with the count runtime when the
/// counter calls it; its counters zeroed.
fn load_counted(
    gpu: &Gpu,
    what: &str,
    m: &Module,
    options: CountOptions,
) -> (mantissa_gpu::Module, CountReport) {
    let counted = count(m, options).unwrap_or_else(|e| panic!("{what}: {e}"));
    let module = match options.counter {
        Counter::RuntimeCall => {
            let rt = runtime::compile(gpu.compiler(), &runtime::COUNT, target_arch(m))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            merge_runtime(&counted.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"))
        }
        Counter::InlineAtomic => counted.module,
    };
    let ptx = module.to_string();
    let loaded = gpu
        .load_ptx(what, &ptx)
        .unwrap_or_else(|e| panic!("{what}: {e}\n{ptx}"));
    let report = counted.report;
    gpu.write_symbol(
        &loaded,
        &report.global,
        &vec![0u8; 8 * report.slots as usize],
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    (loaded, report)
}

fn read_counts(gpu: &Gpu, module: &mantissa_gpu::Module, report: &CountReport) -> Vec<u64> {
    let bytes = gpu
        .read_symbol(module, &report.global)
        .unwrap_or_else(|e| panic!("{e}"));
    report.decode(&bytes).unwrap_or_else(|e| panic!("{e}"))
}

/// Site, function, opcode, count: one line each, for failure messages.
fn table(report: &CountReport, counts: &[u64]) -> String {
    report
        .sites
        .iter()
        .map(|s| {
            format!(
                "{:>4} {:<24} {:<5} {:<24} {}\n",
                s.index,
                s.function,
                s.inst.to_string(),
                s.opcode,
                counts[s.index as usize]
            )
        })
        .collect()
}

fn f64s(data: HostData) -> Vec<u64> {
    match data {
        HostData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        other => panic!("expected f64 data, got {:?}", other.dtype()),
    }
}

// ---- The known profile

const BLOCKS: u32 = 2;
const BLOCK: u32 = 128;
const T: u64 = (BLOCKS * BLOCK) as u64;

/// Every instruction of profile.ptx, in order, with how often it runs for `trips` (see the
/// fixture's comment): T threads, half of them even.
fn profile_expected(trips: u64) -> Vec<(&'static str, u64)> {
    let half = T / 2;
    vec![
        ("ld.param.u64", T),
        ("ld.param.u32", T),
        ("mov.u32", T),
        ("mov.u32", T),
        ("mov.u32", T),
        ("mad.lo.s32", T),
        ("cvt.rn.f64.u32", T),
        ("mov.u32", T),
        // The loop body, `trips` times; its back branch is taken trips - 1 times.
        ("fma.rn.f64", T * trips),
        ("add.s32", T * trips),
        ("setp.lt.u32", T * trips),
        ("bra", T * (trips - 1)),
        ("and.b32", T),
        ("setp.eq.u32", T),
        // `@%p2 mul`: even threads only; `@!%p2 bra`: taken by odd threads only.
        ("mul.rn.f64", half),
        ("bra", half),
        ("sqrt.rn.f64", half),
        ("add.rn.f64", half),
        ("cvta.to.global.u64", T),
        ("mul.wide.u32", T),
        ("add.s64", T),
        ("st.global.f64", T),
        ("ret", T),
    ]
}

/// What profile.ptx computes, by the same correctly rounded operations on the CPU.
fn profile_model(trips: u32) -> Vec<u64> {
    (0..T)
        .map(|i| {
            let mut x = i as f64;
            for _ in 0..trips {
                x = x.mul_add(1.5, 0.25);
            }
            if i % 2 == 0 {
                x = (x * 2.0).sqrt() + 1.0;
            }
            x.to_bits()
        })
        .collect()
}

fn run_profile(gpu: &Gpu, module: &mantissa_gpu::Module, trips: u32) -> Vec<u64> {
    let out = gpu
        .alloc_zeros("out", mantissa_gpu::DType::F64, T as usize)
        .unwrap();
    gpu.launch_sync(
        module,
        "profile",
        LaunchDims::new((BLOCKS, 1, 1), (BLOCK, 1, 1)),
        &[KernelArg::from(&out), KernelArg::from(trips)],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    f64s(gpu.download(&out).unwrap())
}

#[test]
fn counts_of_a_known_profile_are_exact_and_results_unchanged() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let m = parse_clean("profile", PROFILE);
    let trips = 5u32;
    let original = gpu
        .load_ptx("profile", PROFILE)
        .unwrap_or_else(|e| panic!("{e}"));
    let as_written = run_profile(&gpu, &original, trips);
    assert_eq!(
        as_written,
        profile_model(trips),
        "the kernel as written vs the CPU model"
    );

    for options in [EVERY_CALL, EVERY_INLINE] {
        let what = format!("profile {options:?}");
        let (module, report) = load_counted(&gpu, &what, &m, options);
        let out = run_profile(&gpu, &module, trips);
        assert!(
            out == as_written,
            "{what}: results differ from the kernel as written"
        );
        let counts = read_counts(&gpu, &module, &report);
        let expected = profile_expected(u64::from(trips));
        let ops: Vec<&str> = report.sites.iter().map(|s| s.opcode.as_str()).collect();
        let want_ops: Vec<&str> = expected.iter().map(|e| e.0).collect();
        assert_eq!(ops, want_ops, "{what}: sites");
        let want: Vec<u64> = expected.iter().map(|e| e.1).collect();
        assert_eq!(counts, want, "{what}:\n{}", table(&report, &counts));

        // Counts accumulate over launches: a second launch with 2 trips adds its own profile.
        let out = run_profile(&gpu, &module, 2);
        assert_eq!(out, profile_model(2), "{what}: 2 trips");
        let counts = read_counts(&gpu, &module, &report);
        let want: Vec<u64> = expected
            .iter()
            .zip(profile_expected(2))
            .map(|(a, b)| a.1 + b.1)
            .collect();
        assert_eq!(
            counts,
            want,
            "{what} after 5 + 2 trips:\n{}",
            table(&report, &counts)
        );
    }

    // Floating-point sites only: the five of the fixture, with their counts from above.
    let (module, report) = load_counted(&gpu, "profile fp", &m, FP_CALL);
    assert_eq!(
        run_profile(&gpu, &module, trips),
        as_written,
        "profile fp: results"
    );
    let counts = read_counts(&gpu, &module, &report);
    let t = u64::from(trips);
    assert_eq!(
        counts,
        [T, T * t, T / 2, T / 2, T / 2],
        "profile fp:\n{}",
        table(&report, &counts)
    );
}

// ---- A shipped example through NVRTC

const N: i32 = 200;
const PIVOT: i32 = 3;
const GAUSS_BLOCK: u32 = 64;

/// Runs gauss's `make_dominant` then `fan1` (pivot row PIVOT) on an N x N matrix; returns the
/// matrix after `make_dominant` and the multipliers `m`, as bits.
fn run_gauss(gpu: &Gpu, module: &mantissa_gpu::Module, names: &Names) -> (Vec<u64>, Vec<u64>) {
    let n = N as usize;
    let a0: Vec<f64> = (0..n * n)
        .map(|k| ((k * 7919) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    let a = gpu.upload("a", &HostData::from(a0)).unwrap();
    let m: DeviceBuffer = gpu
        .alloc_zeros("m", mantissa_gpu::DType::F64, n * n)
        .unwrap();
    let b = gpu.alloc_zeros("b", mantissa_gpu::DType::F64, n).unwrap();
    let dims = LaunchDims::linear(n as u64, GAUSS_BLOCK);
    gpu.launch_sync(
        module,
        &names.make_dominant,
        dims,
        &[KernelArg::from(&a), KernelArg::from(N)],
    )
    .unwrap_or_else(|e| panic!("make_dominant: {e}"));
    gpu.launch_sync(
        module,
        &names.fan1,
        dims,
        &[
            KernelArg::from(&m),
            KernelArg::from(&a),
            KernelArg::from(&b),
            KernelArg::from(N),
            KernelArg::from(PIVOT),
        ],
    )
    .unwrap_or_else(|e| panic!("fan1: {e}"));
    (
        f64s(gpu.download(&a).unwrap()),
        f64s(gpu.download(&m).unwrap()),
    )
}

/// The mangled names of the kernels launched.
struct Names {
    make_dominant: String,
    fan1: String,
}

#[test]
fn an_example_program_runs_counted_with_consistent_counts() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let source = Source::new("gauss.cu", example::device_code(example::GAUSS));
    let compiled = gpu
        .compiler()
        .compile(&source, FlagSet::DEFAULT, Target::Ptx(gpu.arch()))
        .unwrap_or_else(|e| panic!("{e}"));
    let m = parse_clean("gauss", &compiled.ptx);
    let name_of = |part: &str| {
        m.kernels()
            .find(|k| k.name.contains(part))
            .map(|k| k.name.clone())
            .unwrap_or_else(|| panic!("no kernel {part} in gauss"))
    };
    let names = Names {
        make_dominant: name_of("make_dominant"),
        fan1: name_of("fan1"),
    };
    let original = gpu
        .load_ptx("gauss", &compiled.ptx)
        .unwrap_or_else(|e| panic!("{e}"));
    let as_written = run_gauss(&gpu, &original, &names);
    let threads = u64::from(N as u32).div_ceil(u64::from(GAUSS_BLOCK)) * u64::from(GAUSS_BLOCK);
    let active_rows = (N - 1 - PIVOT) as u64;

    let mut every: Vec<HashMap<mantissa_ptx::InstId, u64>> = Vec::new();
    for options in [EVERY_CALL, EVERY_INLINE] {
        let what = format!("gauss {options:?}");
        let (module, report) = load_counted(&gpu, &what, &m, options);
        let out = run_gauss(&gpu, &module, &names);
        assert!(
            out == as_written,
            "{what}: results differ from the program as written"
        );
        let counts = read_counts(&gpu, &module, &report);
        let context = table(&report, &counts);
        for k in m.kernels() {
            let sites: Vec<_> = report
                .sites
                .iter()
                .filter(|s| s.function == k.name)
                .collect();
            let of = |s: &&mantissa_ptx::pass::count::Site| counts[s.index as usize];
            let launched = k.name == names.make_dominant || k.name == names.fan1;
            if !launched {
                assert!(
                    sites.iter().all(|s| of(s) == 0),
                    "{what}: {} ran\n{context}",
                    k.name
                );
                continue;
            }
            assert_eq!(
                of(&sites[0]),
                threads,
                "{what}: first instruction of {}\n{context}",
                k.name
            );
            let rets: u64 = sites
                .iter()
                .filter(|s| decode_name(&s.opcode).is_return())
                .map(of)
                .sum();
            assert_eq!(rets, threads, "{what}: returns of {}\n{context}", k.name);
        }
        let divisions: Vec<u64> = report
            .sites
            .iter()
            .filter(|s| {
                let op = decode_name(&s.opcode);
                s.function == names.fan1
                    && op.kind == OpKind::Div
                    && op.rounding == Some(Rounding::Rn)
                    && op.ty == Some(ValueType::F64)
            })
            .map(|s| counts[s.index as usize])
            .collect();
        assert_eq!(
            divisions,
            [active_rows],
            "{what}: fan1's division\n{context}"
        );
        every.push(
            report
                .sites
                .iter()
                .map(|s| (s.inst, counts[s.index as usize]))
                .collect(),
        );
    }
    assert_eq!(
        every[0], every[1],
        "runtime calls and inline atomics count differently"
    );

    let (module, report) = load_counted(&gpu, "gauss fp", &m, FP_CALL);
    assert!(
        run_gauss(&gpu, &module, &names) == as_written,
        "gauss fp: results differ"
    );
    let counts = read_counts(&gpu, &module, &report);
    assert!(!report.sites.is_empty());
    for s in &report.sites {
        assert_eq!(
            Some(&counts[s.index as usize]),
            every[0].get(&s.inst),
            "gauss fp: site {} ({} {}) vs counting every instruction",
            s.index,
            s.function,
            s.opcode
        );
    }
}
