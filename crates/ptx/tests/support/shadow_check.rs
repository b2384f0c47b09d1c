//! What the shadow pass's GPU test (`tests/shadow_gpu.rs`) and its interpreter twin
//! (`tests/it/shadow_interp.rs`) both check, each with its own way of running an instrumented
//! case ([`RunFn`], [`ValuesFn`]): the CPU oracle's statistics of a known case, and the checks
//! themselves.

#![allow(dead_code)] // Each including test uses its part.

// The including test module imports these (and includes `support/stats_agree.rs` as `agree`).
use super::agree::{assert_agree, assert_same_values};
use super::known::{self, Case, Param};
use super::modules::parse_clean;
use super::{instrument, interp, oracle, ErrorStats, ExceptionCounts, Launch, Memory, Module};
use super::{ShadowOptions, ShadowReport, SiteStats, ValueStats};
use mantissa_gpu::FlagSet;
use mantissa_ptx::op::{decode_name, Arith, OpKind, Rounding, ValueType};

/// `case`'s arguments in the interpreter's `mem`: inputs uploaded, outputs zeroed.
pub fn interp_args(mem: &mut Memory, case: &Case) -> Vec<interp::Arg> {
    case.params
        .iter()
        .map(|p| match p {
            Param::F64s(v) => interp::Arg::u64(mem.f64s(v)),
            Param::F32s(v) => interp::Arg::u64(mem.f32s(v)),
            Param::OutF64(n) => interp::Arg::u64(mem.alloc(8 * n)),
            Param::OutF32(n) => interp::Arg::u64(mem.alloc(4 * n)),
            Param::Int(k) => interp::Arg::i32(*k),
        })
        .collect()
}

/// What the oracle says for `case` on the original module.
pub fn oracle_of(m: &Module, case: &Case, options: &ShadowOptions) -> Vec<SiteStats> {
    let mut mem = Memory::new();
    let args = interp_args(&mut mem, case);
    let launch = Launch::linear(case.blocks, case.threads);
    oracle::expected(m, case.kernel, launch, &args, &mut mem, options)
        .unwrap_or_else(|e| panic!("{}: oracle: {e}", case.kernel))
}

/// Runs a case instrumented with the options given and returns the report and the statistics
/// read back (asserting first that the outputs are the kernel's as written): on the GPU, or in
/// the interpreter.
pub type RunFn<'a> =
    dyn FnMut(&str, &Module, &Case, &ShadowOptions) -> (ShadowReport, Vec<SiteStats>) + 'a;

/// Runs a case instrumented with shadow values (thread records everywhere when told) and
/// returns the statistics of the sites and re-seed points.
pub type ValuesFn<'a> =
    dyn FnMut(&str, &Module, &Case, bool) -> (Vec<ValueStats>, Vec<ValueStats>) + 'a;

/// The known kernels under the default and no-FMA flags (`known_module` builds them): every
/// case agrees with the oracle, the seeded exceptions are on exactly their lines and clean
/// kernels have none, and `(1 + x) − 1`'s subtraction has a demotion error of exactly 1.
pub fn check_known_kernels(known_module: &dyn Fn(FlagSet) -> Module, run: &mut RunFn) {
    let all = ShadowOptions::all();
    for flags in [FlagSet::DEFAULT, FlagSet::NOFMA] {
        let m = known_module(flags);
        for case in known::gpu_cases() {
            let what = format!("{} {flags}", case.kernel);
            let (report, got) = run(&what, &m, &case, &all);
            assert_agree(&what, &report, &got, &oracle_of(&m, &case, &all));
            let lines = known::exception_lines(&report, &got, case.kernel);
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
        let (report, s) = run("one_plus_x", &m, &case, &all);
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

/// Demotion alone, exceptions alone and the second half of the sites alone agree with the
/// oracle on each of `cases`.
pub fn check_each_analysis_alone(m: &Module, cases: &[Case], run: &mut RunFn) {
    let sites = instrument(m, &ShadowOptions::all())
        .unwrap()
        .report
        .sites
        .len() as u32;
    for case in cases {
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
            let what = format!("{} {} threads {options:?}", case.kernel, case.threads);
            let (report, got) = run(&what, m, case, &options);
            assert_agree(&what, &report, &got, &oracle_of(m, case, &options));
        }
    }
}

/// The guarded, self-overwriting profile kernel agrees with the oracle, and its guarded `mul`
/// runs on the 128 even threads only.
pub fn check_guarded_kernel(run: &mut RunFn) {
    // profile.ptx: `@%p2 mul.rn.f64 %fd1, %fd1, 2` on even threads, sqrt and add in place.
    let m = parse_clean("profile", include_str!("../fixtures/count/profile.ptx"));
    let all = ShadowOptions::all();
    let case = Case {
        kernel: "profile",
        blocks: 2,
        threads: 128,
        params: vec![Param::OutF64(256), Param::Int(5)],
    };
    let (report, got) = run("profile", &m, &case, &all);
    assert_agree("profile", &report, &got, &oracle_of(&m, &case, &all));
    let mul = report
        .sites
        .iter()
        .position(|s| {
            let op = decode_name(&s.opcode);
            op.kind == OpKind::Arith(Arith::Mul)
                && op.rounding == Some(Rounding::Rn)
                && op.ty == Some(ValueType::F64)
        })
        .expect("a mul site");
    let d = got[mul].demotion.unwrap_or_default();
    assert_eq!(d.count + d.zero_reference + d.non_finite, 128);
}

/// On the known kernels (and `extra` cases), shadow values outside loops add at once (the
/// `_once` forms) exactly what thread records add, and some site measures a local error.
pub fn check_values_once_as_records(
    known_module: &dyn Fn(FlagSet) -> Module,
    extra: &[Case],
    run: &mut ValuesFn,
) {
    let mut measured = 0;
    for flags in [FlagSet::DEFAULT, FlagSet::NOFMA] {
        let m = known_module(flags);
        for case in known::gpu_cases().iter().chain(extra) {
            let what = format!("{} {} threads {flags}", case.kernel, case.threads);
            let (sites, reseeds) = run(&what, &m, case, false);
            let (want_sites, want_reseeds) = run(&what, &m, case, true);
            assert_same_values(&what, &sites, &want_sites);
            assert_same_values(&what, &reseeds, &want_reseeds);
            measured += sites.iter().filter(|s| s.local.count > 0).count();
        }
    }
    assert!(measured > 0, "some site measured a local error");
}
