//! Known answers on `examples/inspect/promotion.cu` (NVRTC 13.0 default and strict, nvcc 13.0)
//! and `examples/kernels/float_literal/float_literal.cu` (nvcc 13.0), all sm_90 `-lineinfo`;
//! counts read off the PTX by hand.

use super::*;
use crate::parse;

const NVRTC: &str = include_str!("../../tests/fixtures/promotion/promotion.default.ptx");
const NVRTC_STRICT: &str = include_str!("../../tests/fixtures/promotion/promotion.strict.ptx");
const NVCC: &str = include_str!("../../tests/fixtures/promotion/promotion.nvcc.ptx");
const FLOAT_LITERAL: &str = include_str!("../../tests/fixtures/promotion/float_literal.nvcc.ptx");

fn of(ptx: &str, kernel: &str) -> Vec<Promotion> {
    promotions(&parse(ptx).module, kernel)
}

fn line(n: u32) -> SourceLine {
    SourceLine { file: 1, line: n }
}

/// (line, promoted f32 values, constants, math, per execution, accidental) of a promotion.
type Summary = (u32, u32, Vec<f64>, Vec<String>, u32, bool);

fn summary(p: &[Promotion]) -> Vec<Summary> {
    p.iter()
        .map(|p| {
            (
                p.at.line,
                p.promotions,
                p.constants.clone(),
                p.math.clone(),
                p.per_execution,
                p.accidental(),
            )
        })
        .collect()
}

#[test]
fn each_accident_is_found_on_its_line_with_its_constant() {
    // 2.0 * x * x: x + x and a multiply in f64 (the 2.0 became an add).
    assert_eq!(
        summary(&of(NVRTC, "literal")),
        [(8, 1, vec![], vec![], 2, true)]
    );
    // x * DAMPING (0.3): one f64 multiply by 0d3FD3333333333333.
    assert_eq!(
        summary(&of(NVRTC, "macro_constant")),
        [(14, 1, vec![0.3], vec![], 1, true)]
    );
    // 1.0 / (1.0 + d): add.f64 and rcp.rn.f64.
    assert_eq!(
        summary(&of(NVRTC, "reciprocal")),
        [(20, 1, vec![1.0], vec![], 2, true)]
    );
    // exp(-0.1 * x): libdevice's exp inlined on the line, 18 f64 instructions.
    assert_eq!(
        summary(&of(NVRTC, "exponential")),
        [(36, 1, vec![-0.1], vec![], 18, true)]
    );
    let e = &of(NVRTC, "exponential")[0];
    assert_eq!(
        (e.promoted.as_slice(), e.to_f32, e.copies),
        (&["%f2".to_string()][..], 1, 1)
    );
    // The float kernel has no f64 at all.
    assert!(of(NVRTC, "all_float").is_empty());
}

#[test]
fn pow_of_a_float_is_double_under_nvcc_and_float_under_nvrtc() {
    // NVRTC's pow(float, int) stays float (line 27); pow(x + 1.0, 1.5) calls
    // __internal_accurate_pow, whose 92 f64 instructions count at line 28.
    let nvrtc = of(NVRTC, "power");
    assert_eq!(
        summary(&nvrtc),
        [(28, 1, vec![1.0], vec!["pow".into()], 97, true)]
    );
    let callee = parse(NVRTC).module;
    let cost = crate::compare::call_tree(&callee, "__internal_accurate_pow")
        .into_iter()
        .flat_map(|f| f.instructions())
        .filter(|i| is_f64_arithmetic(i))
        .count();
    assert_eq!(cost, 92);
    assert_eq!(nvrtc[0].f64_instructions, 97);
    // nvcc's std::pow(float, int) is double pow, inlined from <cmath> (its .loc names
    // std::pow): one region for both lines, since they share the promoted x.
    let nvcc = of(NVCC, "power");
    assert_eq!(
        nvcc.iter()
            .map(|p| (p.at, p.math.clone(), p.accidental()))
            .collect::<Vec<_>>(),
        [
            (line(27), vec!["pow".to_string()], true),
            (line(28), vec!["pow".to_string()], true)
        ]
    );
    assert_eq!(nvcc[0].constants, [2.0, 1.0]);
    assert!(nvcc[0].lines.contains(&SourceLine { file: 2, line: 418 }));
}

#[test]
fn a_double_accumulator_is_intentional() {
    for ptx in [NVRTC, NVRTC_STRICT, NVCC] {
        let p = of(ptx, "double_accumulator");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(!p[0].accidental());
        assert_eq!(
            p[0].carried,
            [Carried::LoopCarried {
                register: "%fd23".into()
            }]
        );
        // Unrolled by 4 plus a remainder loop: 5 promotions, 5 f64 adds, 1 rounding.
        assert_eq!(
            (p[0].promotions, p[0].f64_instructions, p[0].to_f32),
            (5, 5, 1)
        );
        assert_eq!(p[0].lines, [line(42), line(43)]);
    }
}

#[test]
fn float_literal_is_one_accident_unrolled_five_times() {
    let p = of(FLOAT_LITERAL, "_Z5relaxiifPKfPf");
    assert_eq!(p.len(), 1, "{p:?}");
    let p = &p[0];
    assert!(p.accidental());
    // Rounded back at line 51, five times (the loop unrolled by 4, and the remainder).
    assert_eq!((p.at, p.to_f32, p.copies), (line(51), 5, 5));
    // 2.0 * xi * xi hoisted to line 48 (add.f64, mul.f64); per sweep: add, sqrt, div, sub, fma.
    assert_eq!(p.lines, [line(48), line(51)]);
    assert_eq!((p.f64_instructions, p.per_execution), (27, 5));
    assert_eq!(p.promotions, 12);
    assert_eq!(p.constants, [1.0]);
}

#[test]
fn strict_builds_agree_on_what_is_promoted() {
    for k in [
        "literal",
        "macro_constant",
        "reciprocal",
        "exponential",
        "power",
    ] {
        let (d, s) = (of(NVRTC, k), of(NVRTC_STRICT, k));
        assert_eq!(
            d.iter()
                .map(|p| (p.at, p.promotions, p.constants.clone()))
                .collect::<Vec<_>>(),
            s.iter()
                .map(|p| (p.at, p.promotions, p.constants.clone()))
                .collect::<Vec<_>>(),
            "{k}"
        );
    }
}

#[test]
fn carried_values_from_memory_and_parameters() {
    // A hand-written device function: an f64 parameter, an f64 load and store.
    let ptx = ".version 9.0\n.target sm_90\n.address_size 64\n\
.visible .func (.param .b64 r) scale(.param .b64 scale_param_0, .param .b64 scale_param_1)\n{\n\
.reg .f32 %f<3>;\n.reg .f64 %fd<5>;\n.reg .b64 %rd<2>;\n\
ld.param.f64 %fd1, [scale_param_0];\nld.param.u64 %rd1, [scale_param_1];\n\
ld.global.f32 %f1, [%rd1];\ncvt.f64.f32 %fd2, %f1;\nmul.f64 %fd3, %fd2, %fd1;\n\
cvt.rn.f32.f64 %f2, %fd3;\nst.global.f32 [%rd1], %f2;\n\
ld.global.f64 %fd4, [%rd1+8];\ncvt.rn.f32.f64 %f2, %fd4;\nst.global.f32 [%rd1+4], %f2;\n\
st.param.f64 [r], %fd3;\nret;\n}\n";
    let parsed = parse(ptx);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let p = promotions(&parsed.module, "scale");
    let carried: Vec<Vec<Carried>> = p.iter().map(|p| p.carried.clone()).collect();
    assert_eq!(
        carried,
        [
            vec![
                Carried::Parameter {
                    name: "scale_param_0".into()
                },
                Carried::Returned
            ],
            vec![Carried::Loaded]
        ]
    );
}

#[test]
fn math_function_names() {
    assert_eq!(math_function("_ZSt3powIfiEN9__gnu_cxx11__promote_2IT_T0_NS0_9__promoteIS2_XsrSt12__is_integerIS2_E7__valueEE6__typeENS4_IS3_XsrS5_IS3_E7__valueEE6__typeEE6__typeES2_S3_"), Some("pow"));
    assert_eq!(math_function("__nv_exp"), Some("exp"));
    assert_eq!(math_function("__internal_accurate_pow"), Some("pow"));
    assert_eq!(math_function("_Z6helperf"), None);
    assert_eq!(math_function("_Z"), None);
    assert!(is_library("__nv_log") && is_library("__internal_accurate_pow") && !is_library("pow"));
}
