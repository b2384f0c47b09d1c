//! GPU tests of the shadow pass (skip without a GPU; fail under `MANTISSA_REQUIRE_GPU=1`): the
//! known kernels (`fixtures/shadow/known.cu`, through NVRTC) and the guarded, self-overwriting
//! profile kernel (`fixtures/count/profile.ptx`) are instrumented, merged with the runtime,
//! loaded and launched, and
//! - compute the same bits as the kernels as written;
//! - give, per site, exactly the counts and maxima the CPU oracle computes from the original
//!   kernel in the interpreter (`oracle::expected`), and sums within the bound of summation order;
//! - report the seeded exceptions on exactly their lines, and none on clean kernels;
//! - instrumented with shadow values, give the same statistics whether the sites outside loops
//!   add to the global at once (`_once` forms, warp-combined) or count into thread records
//!   (the form the interpreter tests check against hand-worked values).

#[path = "support/shadow_known.rs"]
mod known;

use known::{Case, Param};
#[path = "support/shadow_check.rs"]
mod check;
#[path = "support/modules.rs"]
mod modules;

use check::{assert_agree, assert_same_values, oracle_of};
use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{runtime, DType, FlagSet, Gpu, HostData, KernelArg, LaunchDims, Source, Target};
use mantissa_ptx::interp::{self, Launch, Memory};
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::pass::shadow::{
    instrument, oracle, ErrorStats, ExceptionCounts, ShadowOptions, ShadowReport, SiteStats,
};
use mantissa_ptx::pass::shadow_values::{self, ValueStats};
use mantissa_ptx::Module;
use modules::{parse_clean, target_arch};

/// Launches `case` on `module` and returns every output array as bits (f64 as u64, f32 as u32).
fn launch(gpu: &Gpu, module: &mantissa_gpu::Module, case: &Case) -> Vec<Vec<u64>> {
    let mut buffers = Vec::new();
    for p in &case.params {
        let b = match p {
            Param::F64s(v) => Some(gpu.upload("in", &HostData::from(v.clone()))),
            Param::F32s(v) => Some(gpu.upload("in", &HostData::from(v.clone()))),
            Param::OutF64(n) => Some(gpu.alloc_zeros("out", DType::F64, *n)),
            Param::OutF32(n) => Some(gpu.alloc_zeros("out", DType::F32, *n)),
            Param::Int(_) => None,
        };
        buffers.push(b.map(|r| r.unwrap_or_else(|e| panic!("{e}"))));
    }
    let args: Vec<KernelArg> = case
        .params
        .iter()
        .zip(&buffers)
        .map(|(p, b)| match (p, b) {
            (Param::Int(k), _) => KernelArg::from(*k),
            (_, Some(b)) => KernelArg::from(b),
            _ => unreachable!("every array has a buffer"),
        })
        .collect();
    gpu.launch_sync(
        module,
        case.kernel,
        LaunchDims::new((case.blocks, 1, 1), (case.threads, 1, 1)),
        &args,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", case.kernel));
    case.params
        .iter()
        .zip(&buffers)
        .filter(|(p, _)| matches!(p, Param::OutF64(_) | Param::OutF32(_)))
        .map(|(_, b)| match b.as_ref().map(|b| gpu.download(b)) {
            Some(Ok(HostData::F64(v))) => v.iter().map(|x| x.to_bits()).collect(),
            Some(Ok(HostData::F32(v))) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            other => panic!("{}: download: {other:?}", case.kernel),
        })
        .collect()
}

/// The outputs of `case` on `m` as written.
fn as_written(gpu: &Gpu, what: &str, m: &Module, case: &Case) -> Vec<Vec<u64>> {
    let original = gpu
        .load_ptx(what, &m.to_string())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    launch(gpu, &original, case)
}

/// Launches `case` on the instrumented `loaded`, asserts it computes the bits `as_written`, and
/// returns the bytes of its statistics global `global`.
fn same_bits_then_read(
    gpu: &Gpu,
    what: &str,
    loaded: &mantissa_gpu::Module,
    case: &Case,
    as_written: &[Vec<u64>],
    global: &str,
) -> Vec<u8> {
    assert!(
        launch(gpu, loaded, case) == as_written,
        "{what}: the instrumented kernel computes other bits than the kernel as written"
    );
    gpu.read_symbol(loaded, global)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Runs `case` on `m` as written and instrumented; asserts identical outputs and returns the
/// report with the statistics read back.
fn run_instrumented(
    gpu: &Gpu,
    what: &str,
    m: &Module,
    case: &Case,
    options: &ShadowOptions,
) -> (ShadowReport, Vec<SiteStats>) {
    let as_written = as_written(gpu, what, m, case);
    let out = instrument(m, options).unwrap_or_else(|e| panic!("{what}: {e}"));
    let rt = runtime::compile(gpu.compiler(), &runtime::SHADOW, target_arch(m))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let ptx = merged.to_string();
    let loaded = gpu
        .load_ptx(what, &ptx)
        .unwrap_or_else(|e| panic!("{what}: {e}\n{ptx}"));
    let report = out.report;
    gpu.write_symbol(&loaded, &report.global, &vec![0u8; report.global_bytes()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let bytes = same_bits_then_read(gpu, what, &loaded, case, &as_written, &report.global);
    let stats = report
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (report, stats)
}

fn known_module(gpu: &Gpu, flags: FlagSet) -> Module {
    let source = Source::new(known::KNOWN_NAME, known::KNOWN);
    let compiled = gpu
        .compiler()
        .compile(&source, flags, Target::Ptx(gpu.arch()))
        .unwrap_or_else(|e| panic!("{e}"));
    parse_clean("known.cu", &compiled.ptx)
}

#[test]
fn known_kernels_agree_with_the_oracle_and_compute_the_same_bits() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let all = ShadowOptions::all();
    for flags in [FlagSet::DEFAULT, FlagSet::NOFMA] {
        let m = known_module(&gpu, flags);
        for case in known::gpu_cases() {
            let what = format!("{} {flags}", case.kernel);
            let (report, gpu_stats) = run_instrumented(&gpu, &what, &m, &case, &all);
            let cpu_stats = oracle_of(&m, &case, &all);
            assert_agree(&what, &report, &gpu_stats, &cpu_stats);
            let lines = known::exception_lines(&report, &gpu_stats, case.kernel);
            if case.kernel == "exceptions" {
                assert_eq!(lines, known::exceptions_expected(128), "{what}");
            } else {
                assert_eq!(
                    lines,
                    Vec::<(u32, ExceptionCounts)>::new(),
                    "{what}: a clean kernel"
                );
            }
        }
        // (1 + x) − 1 on 256 threads: the subtraction's error is exactly 1 on each.
        let case = known::one_plus_x(4, 64);
        let (report, s) = run_instrumented(&gpu, "one_plus_x", &m, &case, &all);
        let sub = known::on_line(&report, &s, case.kernel, known::line_of("minus_one"));
        assert_eq!(
            sub.demotion,
            ErrorStats {
                count: 256,
                sum: 256.0,
                max: 1.0,
                zero_reference: 0,
                non_finite: 0
            },
            "{flags}"
        );
    }
}

#[test]
fn each_analysis_alone_and_a_subset_of_sites_agree_with_the_oracle() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let m = known_module(&gpu, FlagSet::DEFAULT);
    let case = known::exceptions(2, 64);
    let sites = instrument(&m, &ShadowOptions::all())
        .unwrap()
        .report
        .sites
        .len() as u32;
    for options in [
        ShadowOptions {
            exceptions: false,
            ..ShadowOptions::all()
        },
        ShadowOptions {
            demotion: false,
            ..ShadowOptions::all()
        },
        ShadowOptions {
            only: Some(sites / 2..sites),
            ..ShadowOptions::all()
        },
    ] {
        let what = format!("exceptions {options:?}");
        let (report, g) = run_instrumented(&gpu, &what, &m, &case, &options);
        assert_agree(&what, &report, &g, &oracle_of(&m, &case, &options));
    }
}

#[test]
fn a_guarded_self_overwriting_kernel_agrees_with_the_oracle() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    // profile.ptx: `@%p2 mul.rn.f64 %fd1, %fd1, 2` on even threads, sqrt and add in place.
    let m = parse_clean("profile", include_str!("fixtures/count/profile.ptx"));
    let all = ShadowOptions::all();
    let case = Case {
        kernel: "profile",
        blocks: 2,
        threads: 128,
        params: vec![Param::OutF64(256), Param::Int(5)],
    };
    let (report, g) = run_instrumented(&gpu, "profile", &m, &case, &all);
    let c = oracle_of(&m, &case, &all);
    assert_agree("profile", &report, &g, &c);
    // The guarded mul runs on the 128 even threads only.
    let mul = report
        .sites
        .iter()
        .position(|s| s.opcode == "mul.rn.f64")
        .expect("a mul site");
    let d = g[mul].demotion.unwrap_or_default();
    assert_eq!(d.count + d.zero_reference + d.non_finite, 128);
}

/// `case` on `m` instrumented with shadow values (thread records everywhere when
/// `records_everywhere`), run on the GPU with no registered buffer; asserts the outputs are the
/// kernel's as written and returns the statistics of the sites and re-seed points.
fn run_values(
    gpu: &Gpu,
    what: &str,
    m: &Module,
    case: &Case,
    records_everywhere: bool,
) -> (Vec<ValueStats>, Vec<ValueStats>) {
    let as_written = as_written(gpu, what, m, case);
    let out = shadow_values::instrument_with(m, records_everywhere)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let rt = runtime::compile(gpu.compiler(), &runtime::SHADOW_VALUES, target_arch(m))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let inlined = shadow_values::inline_runtime(&merged).unwrap_or_else(|e| panic!("{what}: {e}"));
    let loaded = gpu
        .load_ptx(what, &inlined.to_string())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let report = out.report;
    gpu.write_symbol(&loaded, &report.global, &vec![0u8; report.global_bytes()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let table = shadow_values::table_bytes(&[]).unwrap_or_else(|e| panic!("{e}"));
    gpu.write_symbol(&loaded, &report.table, &table)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let bytes = same_bits_then_read(gpu, what, &loaded, case, &as_written, &report.global);
    let stats = report
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (stats.sites, stats.reseeds)
}

#[test]
fn shadow_values_outside_loops_add_at_once_what_thread_records_add() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut measured = 0;
    for flags in [FlagSet::DEFAULT, FlagSet::NOFMA] {
        let m = known_module(&gpu, flags);
        for case in known::gpu_cases() {
            let what = format!("{} {flags}", case.kernel);
            let (sites, reseeds) = run_values(&gpu, &what, &m, &case, false);
            let (want_sites, want_reseeds) = run_values(&gpu, &what, &m, &case, true);
            assert_same_values(&what, &sites, &want_sites);
            assert_same_values(&what, &reseeds, &want_reseeds);
            measured += sites.iter().filter(|s| s.local.count > 0).count();
        }
    }
    assert!(measured > 0, "some site measured a local error");
}
