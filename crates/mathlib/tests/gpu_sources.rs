//! The generated CUDA sources compile under NVRTC for sm_90, every function, format and
//! variant, both kernels, without a GPU (skips without NVRTC; required under
//! MANTISSA_REQUIRE_NVRTC=1 or MANTISSA_REQUIRE_GPU=1).

use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::{Arch, FlagSet, Target};
use mantissa_mathlib::gpu::source::{eval_flags, eval_source, score_source, sweepable};
use mantissa_mathlib::{Format, Function, Variant};

/// The kernels a PTX text defines, sorted.
fn entries(ptx: &str) -> Vec<String> {
    let mut v: Vec<String> = ptx
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|rest| rest.split('(').next().unwrap_or("").trim().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn every_eval_and_score_source_compiles_for_sm_90() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    let target = Target::Cubin(Arch::new(9, 0));
    let mut compiled = 0;
    for f in Function::ALL {
        for format in Format::ALL {
            for variant in Variant::ALL {
                if !f.has_variant(format, variant) {
                    continue;
                }
                let src = eval_source(f, format, variant);
                let c = nvrtc
                    .compile(&src, eval_flags(variant), target)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{}", src.name, src.text));
                assert!(c.cubin.is_some(), "{}", src.name);
                let want = if sweepable(f, format) {
                    vec!["eval_list", "eval_range"]
                } else {
                    vec!["eval_list"]
                };
                assert_eq!(entries(&c.ptx), want, "{}", src.name);
                compiled += 1;
            }
        }
        let src = score_source(f);
        let c = nvrtc
            .compile(&src, FlagSet::DEFAULT, target)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", src.name, src.text));
        let want = if f.arity() == 1 {
            vec!["score_list", "score_range"]
        } else {
            vec!["score_list"]
        };
        assert_eq!(entries(&c.ptx), want, "{}", src.name);
        compiled += 1;
    }
    // Eval: 32 functions x 2 formats x {default, fast}, plus 10 intrinsics; score: 32.
    assert_eq!(compiled, 32 * 2 * 2 + 10 + 32);
}

/// The variant's flags reach the call under test and nothing else: sinf under fast math is the
/// hardware approximation, by default it is not, and the score module (one for all variants,
/// default flags) never uses the f32 approximations.
#[test]
fn fast_math_changes_only_the_eval_module() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    let target = Target::Ptx(Arch::new(9, 0));
    let ptx = |f: Function, v: Variant| {
        nvrtc
            .compile(&eval_source(f, Format::F32, v), eval_flags(v), target)
            .unwrap()
            .ptx
            .clone()
    };
    assert!(ptx(Function::Sin, Variant::Fast).contains("sin.approx.ftz.f32"));
    assert!(!ptx(Function::Sin, Variant::Default).contains("sin.approx"));
    assert!(ptx(Function::Sin, Variant::Intrinsic).contains("sin.approx.f32"));
    assert!(
        ptx(Function::Div, Variant::Fast).contains("div.approx")
            || ptx(Function::Div, Variant::Fast).contains("div.full")
    );
    assert!(ptx(Function::Div, Variant::Default).contains("div.rn.f32"));
    for f in [
        Function::Sin,
        Function::Div,
        Function::Exp,
        Function::Lgamma,
    ] {
        let score = nvrtc
            .compile(&score_source(f), FlagSet::DEFAULT, target)
            .unwrap()
            .ptx
            .clone();
        for approx in [
            "sin.approx",
            "cos.approx",
            "ex2.approx.ftz.f32",
            "lg2.approx",
            "div.approx.f32",
            "div.full.f32",
        ] {
            assert!(
                !score.contains(approx),
                "{f:?}: {approx} in the score module"
            );
        }
    }
}
