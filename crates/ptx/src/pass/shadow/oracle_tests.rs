//! The oracle on kernels whose answers are known by hand (`tests/fixtures/shadow/known.cu`,
//! compiled by NVRTC: skipped without it), and on statistics it must refuse to invent.

use super::oracle::expected;
use super::*;
use crate::interp::{Arg, Launch, Memory};
use crate::op::{decode_name, Arith, OpKind};
use crate::test_support::parse_clean;

#[path = "../../../tests/support/shadow_known.rs"]
pub(super) mod known;
use known::{line_of, on_line, Case, Param};

/// known.cu compiled by NVRTC for sm_90 under `flags`, parsed; `None` (skip) without NVRTC.
pub(super) fn known_module(flags: mantissa_gpu::FlagSet) -> Option<Module> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let source = mantissa_gpu::Source::new(known::KNOWN_NAME, known::KNOWN);
    let compiled = nvrtc
        .compile(
            &source,
            flags,
            mantissa_gpu::Target::Ptx(mantissa_gpu::Arch::new(9, 0)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    Some(parse_clean("known.cu", &compiled.ptx))
}

/// The kernel arguments of `case`, its arrays allocated in `mem`.
pub(super) fn launch_args(case: &Case, mem: &mut Memory) -> Vec<Arg> {
    case.params
        .iter()
        .map(|p| match p {
            Param::F64s(v) => Arg::u64(mem.f64s(v)),
            Param::F32s(v) => Arg::u64(mem.f32s(v)),
            Param::OutF64(n) => Arg::u64(mem.alloc(8 * n)),
            Param::OutF32(n) => Arg::u64(mem.alloc(4 * n)),
            Param::Int(k) => Arg::i32(*k),
        })
        .collect()
}

/// The oracle's statistics for one case, and the report listing the sites.
fn oracle(m: &Module, case: &Case, options: &ShadowOptions) -> (ShadowReport, Vec<SiteStats>) {
    let mut mem = Memory::new();
    let args = launch_args(case, &mut mem);
    let launch = Launch::linear(case.blocks, case.threads);
    let stats = expected(m, case.kernel, launch, &args, &mut mem, options)
        .unwrap_or_else(|e| panic!("{}: {e}", case.kernel));
    let report = instrument(m, options)
        .unwrap_or_else(|e| panic!("{e}"))
        .report;
    assert_eq!(stats.len(), report.sites.len());
    (report, stats)
}

const T: f64 = 1.0 / (1u64 << 30) as f64;

#[test]
fn one_plus_x_minus_one_loses_x_entirely_in_f32() {
    let Some(m) = known_module(mantissa_gpu::FlagSet::DEFAULT) else {
        return;
    };
    let case = known::one_plus_x(2, 3);
    let (r, s) = oracle(&m, &case, &ShadowOptions::all());
    let add = on_line(&r, &s, case.kernel, line_of("one_plus"));
    let sub = on_line(&r, &s, case.kernel, line_of("minus_one"));
    assert_eq!(add.sites, 1, "{r:#?}");
    assert_eq!(sub.sites, 1);
    // The add: f32 gives 1 for 1 + 2^-30.
    let e_add = T / (1.0 + T);
    assert_eq!(add.demotion.count, 6);
    assert_eq!(add.demotion.max, e_add);
    assert_eq!(add.demotion.sum, 6.0 * e_add);
    // The subtraction: f32 gives 0 for 2^-30: an error of exactly 1 on each of 6 threads.
    let exact = ErrorStats {
        count: 6,
        sum: 6.0,
        max: 1.0,
        zero_reference: 0,
        non_finite: 0,
    };
    assert_eq!(sub.demotion, exact);
    assert!(add.exceptions.is_clean() && sub.exceptions.is_clean());
    // A clean kernel reports no exception anywhere.
    assert!(known::exception_lines(&r, &s, case.kernel).is_empty());
}

#[test]
fn a_serial_zero_sum_has_the_errors_of_its_partial_sums() {
    let Some(m) = known_module(mantissa_gpu::FlagSet::DEFAULT) else {
        return;
    };
    let case = known::serial_sum();
    let (r, s) = oracle(&m, &case, &ShadowOptions::all());
    let sum = on_line(&r, &s, case.kernel, line_of("sum"));
    // 0 + 1 (exact in f32), 1 + 2^-30 (f32: 1), (1 + 2^-30) − 1 (f32: 0, error 1),
    // 2^-30 − 2^-30 = 0 (no relative error).
    assert_eq!(
        sum.demotion,
        ErrorStats {
            count: 3,
            sum: 1.0 + T / (1.0 + T),
            max: 1.0,
            zero_reference: 1,
            non_finite: 0,
        }
    );
    assert!(sum.exceptions.is_clean());
}

#[test]
fn a_times_a_plus_b_with_and_without_contraction() {
    let case = known::square_plus(1, 4);
    let line = line_of("square_plus");
    // Contracted: one fma, exact in f32 too (a and b are f32 numbers): no error.
    if let Some(m) = known_module(mantissa_gpu::FlagSet::DEFAULT) {
        let (r, s) = oracle(&m, &case, &ShadowOptions::all());
        let fma = on_line(&r, &s, case.kernel, line);
        assert_eq!(fma.sites, 1);
        assert_eq!(
            fma.demotion,
            ErrorStats {
                count: 4,
                ..ErrorStats::default()
            }
        );
    }
    // Not contracted: f32 rounds a·a = 1 + 2^-19 + 2^-40 to 1 + 2^-19, so the sum is 0 for 2^-40.
    if let Some(m) = known_module(mantissa_gpu::FlagSet::NOFMA) {
        let (r, s) = oracle(&m, &case, &ShadowOptions::all());
        let by_op = |op: Arith| {
            let k = r
                .sites
                .iter()
                .position(|x| {
                    x.site.line == line && decode_name(&x.opcode).kind == OpKind::Arith(op)
                })
                .unwrap_or_else(|| panic!("no {op:?} on line {line}: {r:#?}"));
            s[k].demotion.unwrap_or_default()
        };
        let p = 1.0 + 2f64.powi(-19) + 2f64.powi(-40);
        let mul = by_op(Arith::Mul);
        assert_eq!((mul.count, mul.max), (4, 2f64.powi(-40) / p));
        let add = by_op(Arith::Add);
        assert_eq!((add.count, add.sum, add.max), (4, 4.0, 1.0));
    }
}

#[test]
fn exceptions_are_counted_on_the_lines_that_seed_and_propagate_them() {
    let Some(m) = known_module(mantissa_gpu::FlagSet::DEFAULT) else {
        return;
    };
    let case = known::exceptions(1, 3);
    let (r, s) = oracle(&m, &case, &ShadowOptions::all());
    assert_eq!(
        known::exception_lines(&r, &s, case.kernel),
        known::exceptions_expected(3),
        "{r:#?}"
    );
    // The demotion error of 0/0 is not finite; of 1e-160², whose f32 form is 0, exactly 1.
    let nan = on_line(&r, &s, case.kernel, line_of("nan"));
    assert_eq!((nan.demotion.non_finite, nan.demotion.count), (3, 0));
    let sub = on_line(&r, &s, case.kernel, line_of("subnormal"));
    assert_eq!((sub.demotion.count, sub.demotion.max), (3, 1.0));
    // f32 sites count exceptions but have no demotion error.
    let subf = r
        .sites
        .iter()
        .find(|x| x.site.line == line_of("subnormal_f32") && x.value_type == ValueType::F32)
        .unwrap_or_else(|| panic!("no f32 site: {r:#?}"));
    assert!(!subf.demotion && subf.exceptions);
    assert_eq!(s[subf.index as usize].demotion, None);
}

#[test]
fn analyses_not_asked_for_and_sites_outside_only_are_none() {
    let Some(m) = known_module(mantissa_gpu::FlagSet::DEFAULT) else {
        return;
    };
    let case = known::one_plus_x(1, 1);
    let demotion_only = ShadowOptions {
        exceptions: false,
        ..ShadowOptions::all()
    };
    let (_, s) = oracle(&m, &case, &demotion_only);
    assert!(s.iter().all(|x| x.exceptions.is_none()));
    assert!(s.iter().any(|x| x.demotion.is_some()));
    let (r, all) = oracle(&m, &case, &ShadowOptions::all());
    let first = r
        .sites
        .iter()
        .find(|x| x.site.function == case.kernel)
        .map_or(0, |x| x.index);
    let only = ShadowOptions {
        only: Some(first..first + 1),
        ..ShadowOptions::all()
    };
    let (r1, one) = oracle(&m, &case, &only);
    for (k, (x, site)) in one.iter().zip(&r1.sites).enumerate() {
        if k as u32 == first {
            assert!(site.instrumented);
            assert_eq!(*x, all[k]);
        } else {
            assert!(!site.instrumented);
            assert_eq!(*x, SiteStats::default());
        }
    }
}

/// Every case the GPU test launches runs in the oracle (nothing it uses is refused), and the
/// known module, instrumented and merged with the runtime, assembles for sm_90.
#[test]
fn every_gpu_case_runs_in_the_oracle_and_its_module_assembles() {
    for flags in [mantissa_gpu::FlagSet::DEFAULT, mantissa_gpu::FlagSet::NOFMA] {
        let Some(m) = known_module(flags) else {
            return;
        };
        for case in known::gpu_cases() {
            let (r, s) = oracle(&m, &case, &ShadowOptions::all());
            let executions: u64 = s
                .iter()
                .filter_map(|x| x.demotion)
                .map(|d| d.count + d.zero_reference + d.non_finite)
                .sum();
            assert!(executions > 0, "{} {flags}: nothing measured", case.kernel);
            if case.kernel == "exceptions" {
                assert_eq!(
                    known::exception_lines(&r, &s, case.kernel),
                    known::exceptions_expected(128)
                );
            }
        }
        let Some(rt) = super::tests::shadow_runtime() else {
            return;
        };
        for o in [
            ShadowOptions::all(),
            ShadowOptions {
                demotion: false,
                ..ShadowOptions::all()
            },
        ] {
            let out = instrument(&m, &o).unwrap_or_else(|e| panic!("{e}"));
            let merged =
                crate::link::merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{e}"));
            crate::test_support::assert_sound(&format!("known.cu {flags} {o:?}"), &merged);
        }
    }
}

/// The guarded, self-overwriting profile kernel (as the GPU test launches it): each site is
/// measured exactly as often as it runs (the counting pass's known profile), the guarded mul on
/// the even threads only; every result is finite, non-zero and normal.
#[test]
fn the_profile_kernel_is_measured_once_per_execution() {
    let m = parse_clean(
        "profile",
        include_str!("../../../tests/fixtures/count/profile.ptx"),
    );
    let case = Case {
        kernel: "profile",
        blocks: 2,
        threads: 128,
        params: vec![Param::OutF64(256), Param::Int(5)],
    };
    let (r, s) = oracle(&m, &case, &ShadowOptions::all());
    let runs: Vec<(&str, u64)> = r
        .sites
        .iter()
        .zip(&s)
        .filter_map(|(site, st)| Some((site.opcode.as_str(), st.demotion?.count)))
        .collect();
    assert_eq!(
        runs,
        [
            ("fma.rn.f64", 256 * 5),
            ("mul.rn.f64", 128),
            ("sqrt.rn.f64", 128),
            ("add.rn.f64", 128)
        ]
    );
    assert!(s.iter().all(|x| x.exceptions.is_some_and(|e| e.is_clean())));
}
