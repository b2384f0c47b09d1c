//! The pass on small hand-written kernels, against what ptxas makes of them (skipped without
//! ptxas and nvdisasm). The claim checked on every example (per function, the pinned module's
//! SASS opcodes are the original's) is in `crates/shadow/tests/pin_contraction.rs`.

use super::*;
use crate::sass::{disassemble, per_instruction};
use crate::test_support::{assert_sound, parse_clean, sass_tools_or_skip};
use std::path::Path;

/// A kernel loading f32 `%f1..%f4` and f64 `%fd1..%fd4` from its argument, then `body`.
fn kernel(body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 p)\n{{\n\
         .reg .f32 %f<20>;\n.reg .f64 %fd<20>;\n.reg .b64 %rd<3>;\n\
         ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\n\
         ld.global.f32 %f1, [%rd2];\nld.global.f32 %f2, [%rd2+4];\n\
         ld.global.f32 %f3, [%rd2+8];\nld.global.f32 %f4, [%rd2+12];\n\
         ld.global.f64 %fd1, [%rd2+16];\nld.global.f64 %fd2, [%rd2+24];\n\
         ld.global.f64 %fd3, [%rd2+32];\nld.global.f64 %fd4, [%rd2+40];\n\
         {body}\nret;\n}}\n"
    )
}

/// SASS opcodes per (function, opcode) of `m` for sm_90.
fn opcodes(ptxas: &Path, nvdisasm: &Path, m: &Module) -> BTreeMap<(String, String), u32> {
    let sass =
        disassemble(ptxas, nvdisasm, &m.to_string(), "sm_90").unwrap_or_else(|e| panic!("{e}"));
    let mut out = BTreeMap::new();
    for l in &sass.lines {
        for (op, n) in &l.ops {
            *out.entry((l.function.clone(), op.clone())).or_default() += n;
        }
    }
    out
}

/// The instruction writing `reg` in kernel `k`.
fn def(m: &Module, reg: &str) -> InstId {
    m.function("k")
        .and_then(|f| f.instructions().find(|i| i.defs() == [reg]))
        .map(|i| i.id)
        .unwrap_or_else(|| panic!("no def of {reg}"))
}

/// The pinned kernel `k` as text, one instruction a line, `.loc`s and declarations left out.
fn code(m: &Module) -> Vec<String> {
    m.function("k")
        .map(|f| {
            f.instructions()
                .map(|i| {
                    i.to_string()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Pins `ptx` from its real SASS and checks what holds for every module: the pinned SASS has
/// the original's opcodes, the pinned module parses back and assembles, and no unrounded
/// f32/f64 `mul`/`add`/`sub` is left but the reported ones. `None` without the tools.
fn pin(ptx: &str) -> Option<(Module, Module, PinReport, InstSass)> {
    let (ptxas, nvdisasm) = sass_tools_or_skip()?;
    let original = parse_clean("kernel", ptx);
    let sass =
        per_instruction(&ptxas, &nvdisasm, &original, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    let out = PinContraction::new(sass.clone())
        .run(&original)
        .unwrap_or_else(|e| panic!("{e}"));
    let report = out
        .report
        .details::<PinReport>()
        .cloned()
        .expect("a PinReport");
    assert_sound("pinned", &out.module);
    assert_eq!(
        opcodes(&ptxas, &nvdisasm, &out.module),
        opcodes(&ptxas, &nvdisasm, &original),
        "SASS opcodes changed:\n{}",
        out.module
    );
    let left: BTreeSet<InstId> = report.left.iter().map(|l| l.inst).collect();
    for f in out.module.functions() {
        for i in f.instructions() {
            let op = i.decode();
            let unrounded = matches!(op.kind, OpKind::Arith(Arith::Mul | Arith::Add | Arith::Sub))
                && matches!(op.ty, Some(ValueType::F32 | ValueType::F64))
                && op.rounding.is_none();
            assert!(
                !unrounded || left.contains(&i.id),
                "unrounded and not reported: {i}"
            );
        }
    }
    Some((original, out.module, report, sass))
}

/// The nbody `energy` case: two products into one `sub`. ptxas fuses the one whose line keeps
/// no FMUL; the pinned sub is that product's `fma` with the other product negated.
#[test]
fn two_products_into_one_sub_pin_the_one_ptxas_fused() {
    let ptx = kernel(
        "mul.f32 %f5, %f1, %f2;\nmul.f32 %f6, %f3, %f4;\nsub.f32 %f7, %f5, %f6;\n\
         st.global.f32 [%rd2+48], %f7;",
    );
    let Some((m, pinned, report, sass)) = pin(&ptx) else {
        return;
    };
    let (p5, p6, sub) = (def(&m, "%f5"), def(&m, "%f6"), def(&m, "%f7"));
    assert_eq!(report.pairs.len(), 1, "{report:?}");
    let pair = &report.pairs[0];
    assert_eq!(pair.add, sub);
    // ptxas 13.0 (sm_90) keeps %f6 = f3*f4 as an FMUL and fuses %f5 into the sub.
    assert_eq!(sass.count("k", p6, "FMUL"), 1);
    assert_eq!(sass.count("k", p5, "FMUL"), 0);
    assert_eq!(sass.count("k", sub, "FFMA"), 1);
    assert_eq!(pair.mul, p5);
    assert!(!pair.negated_product && pair.negated_addend);
    let code = code(&pinned);
    assert!(
        code.contains(&"mul.rn.f32 %f6, %f3, %f4;".to_string()),
        "{code:?}"
    );
    let neg = code
        .iter()
        .find(|l| l.starts_with("neg.f32") && l.ends_with(", %f6;"))
        .unwrap_or_else(|| panic!("{code:?}"));
    let t = neg["neg.f32 ".len()..].split(',').next().unwrap_or("");
    assert!(
        code.contains(&format!("fma.rn.f32 %f7, %f1, %f2, {t};")),
        "{code:?}"
    );
    assert_eq!(report.rounded, 2, "both muls rounded: {report:?}");
    assert!(report.left.is_empty(), "{report:?}");
}

/// A product feeding two adds: ptxas fuses the other product into the first add and adds this
/// one unfused in both. The first add has two candidate products; the one with an FMUL is not
/// the fused one.
#[test]
fn a_product_in_two_adds_with_one_fused_add() {
    let ptx = kernel(
        "mul.f32 %f5, %f1, %f2;\nmul.f32 %f6, %f3, %f4;\nadd.f32 %f7, %f5, %f6;\n\
         add.f32 %f8, %f5, %f3;\nst.global.f32 [%rd2+48], %f7;\nst.global.f32 [%rd2+52], %f8;",
    );
    let Some((m, pinned, report, sass)) = pin(&ptx) else {
        return;
    };
    let (p5, p6) = (def(&m, "%f5"), def(&m, "%f6"));
    let (a7, a8) = (def(&m, "%f7"), def(&m, "%f8"));
    assert_eq!(sass.count("k", p5, "FMUL"), 1);
    assert_eq!(sass.count("k", a8, "FADD"), 1);
    assert_eq!(sass.count("k", a7, "FFMA"), 1);
    assert_eq!(
        report
            .pairs
            .iter()
            .map(|p| (p.mul, p.add, p.negated_product, p.negated_addend))
            .collect::<Vec<_>>(),
        [(p6, a7, false, false)]
    );
    let code = code(&pinned);
    for want in [
        "mul.rn.f32 %f5, %f1, %f2;",
        "fma.rn.f32 %f7, %f3, %f4, %f5;",
        "add.rn.f32 %f8, %f5, %f3;",
    ] {
        assert!(code.contains(&want.to_string()), "{want}: {code:?}");
    }
}

/// `-(a*b) + c` through a `neg`: ptxas folds the sign into the FFMA; the pin negates a factor.
/// (`.ftz` on both: ptxas fuses no product into an add of the other `.ftz`.)
#[test]
fn a_neg_between_product_and_add_is_folded_into_a_factor() {
    let ptx = kernel(
        "mul.ftz.f32 %f5, %f1, %f2;\nneg.f32 %f6, %f5;\nadd.ftz.f32 %f7, %f6, %f3;\n\
         mul.ftz.f32 %f8, %f1, %f3;\nadd.ftz.f32 %f9, %f8, %f7;\n\
         st.global.f32 [%rd2+48], %f9;",
    );
    let Some((m, pinned, report, _)) = pin(&ptx) else {
        return;
    };
    let pairs: Vec<_> = report
        .pairs
        .iter()
        .map(|p| (p.mul, p.add, p.negated_product, p.negated_addend))
        .collect();
    assert!(
        pairs.contains(&(def(&m, "%f5"), def(&m, "%f7"), true, false)),
        "{report:?}"
    );
    let code = code(&pinned);
    let neg = code
        .iter()
        .find(|l| l.starts_with("neg.f32") && l.ends_with(", %f1;"))
        .unwrap_or_else(|| panic!("{code:?}"));
    let t = neg["neg.f32 ".len()..].split(',').next().unwrap_or("");
    assert!(
        code.contains(&format!("fma.rn.ftz.f32 %f7, {t}, %f2, %f3;")),
        "{code:?}"
    );
}

/// f64: DMUL into DADD and a `sub` whose subtrahend is the product (`c - a*b`).
#[test]
fn f64_products_are_pinned_as_dfma() {
    let ptx = kernel(
        "mul.f64 %fd5, %fd1, %fd2;\nadd.f64 %fd6, %fd5, %fd3;\n\
         mul.f64 %fd7, %fd3, %fd4;\nsub.f64 %fd8, %fd6, %fd7;\n\
         st.global.f64 [%rd2+48], %fd8;",
    );
    let Some((m, pinned, report, sass)) = pin(&ptx) else {
        return;
    };
    let (p5, a6, p7, s8) = (
        def(&m, "%fd5"),
        def(&m, "%fd6"),
        def(&m, "%fd7"),
        def(&m, "%fd8"),
    );
    assert_eq!(sass.count("k", a6, "DFMA") + sass.count("k", s8, "DFMA"), 2);
    let pairs: Vec<_> = report
        .pairs
        .iter()
        .map(|p| (p.mul, p.add, p.negated_product, p.negated_addend))
        .collect();
    assert_eq!(pairs, [(p5, a6, false, false), (p7, s8, true, false)]);
    let code = code(&pinned);
    assert!(code.contains(&"fma.rn.f64 %fd6, %fd1, %fd2, %fd3;".to_string()));
    assert!(
        code.iter()
            .any(|l| l.starts_with("fma.rn.f64 %fd8, ") && l.ends_with(", %fd4, %fd6;")),
        "{code:?}"
    );
}

/// An immediate addend is negated in place, no `neg`: `a*b - 2`.
#[test]
fn an_immediate_addend_is_negated_in_place() {
    let ptx = kernel(
        "mul.f32 %f5, %f1, %f2;\nsub.f32 %f6, %f5, 0f40000000;\nst.global.f32 [%rd2+48], %f6;",
    );
    let Some((_, pinned, report, _)) = pin(&ptx) else {
        return;
    };
    assert_eq!(report.pairs.len(), 1);
    let code = code(&pinned);
    assert!(
        code.contains(&"fma.rn.f32 %f6, %f1, %f2, 0fC0000000;".to_string()),
        "{code:?}"
    );
    assert!(!code.iter().any(|l| l.starts_with("neg")), "{code:?}");
}

/// What cannot be pinned is left as written with everything it could be fused with: an
/// approximate division's result added to a product, and a product in a saturating add.
#[test]
fn approximate_division_and_sat_are_left_with_their_partners() {
    let ptx = kernel(
        "div.full.f32 %f5, %f1, %f2;\nmul.f32 %f6, %f3, %f4;\nadd.f32 %f7, %f5, %f6;\n\
         mul.f32 %f8, %f1, %f3;\nadd.sat.f32 %f9, %f8, %f7;\n\
         mul.f32 %f10, %f2, %f4;\nadd.f32 %f11, %f10, %f9;\n\
         st.global.f32 [%rd2+48], %f11;",
    );
    let Some((m, pinned, report, _)) = pin(&ptx) else {
        return;
    };
    let left: BTreeMap<InstId, &str> = report
        .left
        .iter()
        .map(|l| (l.inst, l.reason.as_str()))
        .collect();
    for reg in ["%f5", "%f6", "%f7", "%f8", "%f9"] {
        assert!(left.contains_key(&def(&m, reg)), "{reg}: {report:?}");
    }
    assert!(
        left[&def(&m, "%f5")].contains("div without .rn"),
        "{left:?}"
    );
    assert!(left[&def(&m, "%f9")].contains(".sat"), "{left:?}");
    // The last product and add are their own pair, pinned.
    assert_eq!(
        report
            .pairs
            .iter()
            .map(|p| (p.mul, p.add))
            .collect::<Vec<_>>(),
        [(def(&m, "%f10"), def(&m, "%f11"))]
    );
    let code = code(&pinned);
    assert!(
        code.contains(&"add.f32 %f7, %f5, %f6;".to_string()),
        "{code:?}"
    );
    assert!(
        code.contains(&"mul.f32 %f8, %f1, %f3;".to_string()),
        "{code:?}"
    );
}

/// Without SASS evidence of a fusion nothing is fused: an empty [`InstSass`] leaves every
/// linked add that has no SASS at all as written, and leaves lone products alone too (they
/// cannot be contracted). Asked to pin eliminated pairs as fused, it does.
#[test]
fn no_sass_means_no_pairs() {
    let m = parse_clean(
        "kernel",
        &kernel(
            "mul.f32 %f5, %f1, %f2;\nadd.f32 %f6, %f5, %f3;\nmul.f32 %f7, %f1, %f1;\n\
             st.global.f32 [%rd2+48], %f6;\nst.global.f32 [%rd2+52], %f7;",
        ),
    );
    let out = PinContraction::new(InstSass::default())
        .run(&m)
        .unwrap_or_else(|e| panic!("{e}"));
    let report = out
        .report
        .details::<PinReport>()
        .cloned()
        .unwrap_or_default();
    assert!(report.pairs.is_empty());
    assert_eq!(report.rounded, 0, "{report:?}");
    assert_eq!(
        report.left.iter().map(|l| l.inst).collect::<Vec<_>>(),
        [def(&m, "%f5"), def(&m, "%f6")]
    );
    assert!(
        report.left[1].reason.contains("no add or fma"),
        "{report:?}"
    );
    assert!(code(&out.module).contains(&"mul.f32 %f7, %f1, %f1;".to_string()));

    let fused = PinContraction::with_eliminated(InstSass::default(), Eliminated::Fused)
        .run(&m)
        .unwrap_or_else(|e| panic!("{e}"));
    let code = code(&fused.module);
    assert!(
        code.contains(&"fma.rn.f32 %f6, %f1, %f2, %f3;".to_string()),
        "{code:?}"
    );
    assert!(
        code.contains(&"mul.f32 %f7, %f1, %f1;".to_string()),
        "{code:?}"
    );
}
