//! CPU tests of the shadow pass: which instructions are sites, what is inserted where, that the
//! instrumented modules (merged with the runtime NVRTC compiles) round-trip and assemble, that
//! the original code is untouched, and that `decode` reads the layout the runtime writes.
//! The oracle's known cases are in `oracle_tests.rs`; the GPU runs in `tests/shadow_gpu.rs`.

use super::*;
use crate::link::merge_runtime;
use crate::model::{Instruction, Item, Operand, Statement};
use crate::op::{decode_name, OpKind};
use crate::test_support::{assert_sound, parse_clean};
use std::collections::{HashMap, HashSet};

const PROFILE: &str = include_str!("../../../tests/fixtures/count/profile.ptx");

const FIXTURES: [(&str, &str); 7] = [
    ("profile", PROFILE),
    (
        "loop_sum",
        include_str!("../../../tests/fixtures/loop_sum.default.ptx"),
    ),
    (
        "divsqrt fast",
        include_str!("../../../tests/fixtures/divsqrt.fast.ptx"),
    ),
    (
        "divsqrt strict",
        include_str!("../../../tests/fixtures/divsqrt.strict.ptx"),
    ),
    (
        "ray_step",
        include_str!("../../../tests/fixtures/ray_step.default.ptx"),
    ),
    (
        "ray_step fast",
        include_str!("../../../tests/fixtures/ray_step.fast.ptx"),
    ),
    (
        "calls",
        include_str!("../../../tests/fixtures/calls.default.ptx"),
    ),
];

/// The shadow runtime compiled by NVRTC for sm_90, or `None` (skip) without NVRTC.
pub(super) fn shadow_runtime() -> Option<String> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let arch = mantissa_gpu::Arch::new(9, 0);
    Some(
        mantissa_gpu::runtime::compile(&nvrtc, &mantissa_gpu::runtime::SHADOW, arch)
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

fn options() -> [ShadowOptions; 4] {
    [
        ShadowOptions::all(),
        ShadowOptions {
            exceptions: false,
            ..ShadowOptions::all()
        },
        ShadowOptions {
            demotion: false,
            ..ShadowOptions::all()
        },
        ShadowOptions {
            only: Some(1..3),
            ..ShadowOptions::all()
        },
    ]
}

fn body(m: &Module, f: &str) -> Vec<Statement> {
    m.functions()
        .find(|x| x.name == f && x.body.is_some())
        .and_then(|x| x.body.clone())
        .unwrap_or_default()
}

fn insts(body: &[Statement]) -> Vec<&Instruction> {
    body.iter()
        .filter_map(|s| match s {
            Statement::Inst(i) => Some(i),
            _ => None,
        })
        .collect()
}

#[test]
fn sites_are_the_rounding_float_instructions_with_their_analyses() {
    let m = parse_clean("profile", PROFILE);
    let r = instrument(&m, &ShadowOptions::all()).unwrap().report;
    let got: Vec<(&str, u32, bool)> = r
        .sites
        .iter()
        .map(|s| (s.opcode.as_str(), s.site.line, s.demotion))
        .collect();
    // By hand from the fixture: the conversion has no demotion error; the f64 arithmetic has.
    assert_eq!(
        got,
        [
            ("cvt.rn.f64.u32", 1, false),
            ("fma.rn.f64", 2, true),
            ("mul.rn.f64", 3, true),
            ("sqrt.rn.f64", 4, true),
            ("add.rn.f64", 4, true),
        ]
    );
    for (k, s) in r.sites.iter().enumerate() {
        assert_eq!(s.index, k as u32);
        assert!(s.exceptions && s.instrumented);
        assert_eq!(s.value_type, ValueType::F64);
        assert_eq!(s.site.function, "profile");
    }
    assert_eq!((r.global.as_str(), r.words_per_site), (SHADOW_GLOBAL, 11));
    assert_eq!(r.global_bytes(), 5 * 16 * 11 * 8);

    // f32 sites, approximate ones included, count exceptions only; integer arithmetic is none.
    let fast = parse_clean("divsqrt fast", FIXTURES[2].1);
    let r = instrument(&fast, &ShadowOptions::all()).unwrap().report;
    let ops: HashSet<&str> = r.sites.iter().map(|s| s.opcode.as_str()).collect();
    for op in [
        "div.approx.ftz.f32",
        "rsqrt.approx.ftz.f32",
        "sqrt.approx.ftz.f32",
    ] {
        assert!(ops.contains(op), "{op} in {ops:?}");
    }
    assert!(r.sites.iter().all(|s| s.demotion
        == (s.value_type == ValueType::F64
            && !matches!(decode_name(&s.opcode).kind, OpKind::Convert { .. }))));
    assert!(!ops
        .iter()
        .any(|o| o.ends_with(".s32") || o.ends_with(".u64")));
}

#[test]
fn numbering_is_the_same_whatever_is_instrumented() {
    for (name, ptx) in FIXTURES {
        let m = parse_clean(name, ptx);
        let all = instrument(&m, &ShadowOptions::all()).unwrap().report;
        for o in options() {
            let r = instrument(&m, &o).unwrap().report;
            let key = |s: &ShadowSite| (s.index, s.site.clone(), s.inst);
            assert_eq!(
                r.sites.iter().map(key).collect::<Vec<_>>(),
                all.sites.iter().map(key).collect::<Vec<_>>(),
                "{name} {o:?}"
            );
            for s in &r.sites {
                let inside = o.only.as_ref().is_none_or(|x| x.contains(&s.index));
                assert_eq!(s.instrumented, inside, "{name}");
                assert!(!s.demotion || o.demotion);
                assert!(!s.exceptions || o.exceptions);
            }
        }
    }
}

#[test]
fn instrumented_modules_merge_and_assemble_and_keep_the_original_code() {
    let runtime = shadow_runtime();
    for (name, ptx) in FIXTURES {
        let m = parse_clean(name, ptx);
        for o in options() {
            let what = format!("{name} {o:?}");
            let out = instrument(&m, &o).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_original_code_kept(&what, &m, &out.module);
            assert_calls(&what, &out);
            if let Some(rt) = &runtime {
                let merged =
                    merge_runtime(&out.module, rt).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_sound(&what, &merged);
            }
        }
    }
}

/// Every original instruction is still there, in order and as written; inserted code writes
/// only registers the pass declared and stores only call parameters.
fn assert_original_code_kept(what: &str, original: &Module, out: &Module) {
    for f in original.functions().filter(|f| f.body.is_some()) {
        let before = body(original, &f.name);
        let after = body(out, &f.name);
        let ids: HashSet<_> = insts(&before).iter().map(|i| i.id).collect();
        let kept: Vec<String> = insts(&after)
            .into_iter()
            .filter(|i| ids.contains(&i.id))
            .map(|i| i.to_string())
            .collect();
        let was: Vec<String> = insts(&before).iter().map(|i| i.to_string()).collect();
        assert_eq!(kept, was, "{what}: {}", f.name);
        let user_regs: HashSet<String> = crate::decode::Decoded::of(f)
            .insts
            .iter()
            .flat_map(|i| i.defs().into_iter().chain(i.uses()))
            .map(str::to_string)
            .collect();
        for i in insts(&after).into_iter().filter(|i| !ids.contains(&i.id)) {
            for d in i.defs() {
                assert!(
                    !user_regs.contains(d),
                    "{what}: `{i}` writes a user register"
                );
            }
            let op = i.decode();
            if matches!(op.kind, OpKind::Store(_)) {
                assert!(op.is_param_store(), "{what}: `{i}` stores to memory");
            }
        }
    }
}

/// The site index each runtime call passes (its first argument), per called function.
fn call_sites(out: &Instrumented) -> HashMap<String, Vec<u32>> {
    let mut calls: HashMap<String, Vec<u32>> = HashMap::new();
    for f in out.module.functions().filter(|f| f.body.is_some()) {
        let mut first = None;
        for i in f.instructions() {
            let op = i.decode();
            if op.is_param_store() {
                if let (Some(Operand::Addr { base, .. }), Some(Operand::Imm(imm))) =
                    (i.operands.first(), i.operands.get(1))
                {
                    if base == "mantissa_param0" {
                        first = Some(imm.to_string().parse::<u32>().unwrap_or(u32::MAX));
                    }
                }
            }
            if op.is_call() {
                if let (Some(Operand::Symbol(callee)), Some(index)) = (i.operands.first(), first) {
                    calls.entry(callee.clone()).or_default().push(index);
                }
                first = None;
            }
        }
    }
    calls
}

/// Every instrumented demotion site either calls the runtime once (past the accumulation cap)
/// or is flushed (at every exit of its function), never both; one exception call per
/// instrumented exception site; each passes its own index.
fn assert_calls(what: &str, out: &Instrumented) {
    let calls = call_sites(out);
    let r = &out.report;
    let on = |p: fn(&ShadowSite) -> bool| -> Vec<u32> {
        r.sites
            .iter()
            .filter(|s| s.instrumented && p(s))
            .map(|s| s.index)
            .collect()
    };
    let of = |f: &str| calls.get(f).cloned().unwrap_or_default();
    let called = of(DEMOTION_FUNCTION);
    let mut flushed = of(FLUSH_FUNCTION);
    flushed.sort();
    flushed.dedup();
    assert!(
        called.iter().all(|k| !flushed.contains(k)),
        "{what}: {called:?} {flushed:?}"
    );
    let mut measured: Vec<u32> = called.iter().chain(&flushed).copied().collect();
    measured.sort();
    assert_eq!(measured, on(|s| s.demotion), "{what}");
    assert_eq!(of(EXCEPTION_FUNCTION), on(|s| s.exceptions), "{what}");
}

#[test]
fn a_destination_that_is_an_operand_is_read_before_it_is_written_and_guards_hold() {
    let m = parse_clean("profile", PROFILE);
    // Every site accumulated (by default only the loop's fma is; see below).
    let out = instrument_with(&m, &ShadowOptions::all(), ACCUMULATED_PER_FUNCTION, true).unwrap();
    let b = body(&out.module, "profile");
    let text: Vec<String> = insts(&b)
        .iter()
        .map(|i| {
            i.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    // `@%p2 mul.rn.f64 %fd1, %fd1, 0d4000000000000000` (site 2): the operand is rounded to f32
    // and saved before the mul, under its guard; after it, the demotion error is jumped over
    // where the guard is false (the f32 form reads the rounding) and the exception test counts
    // a false guard as fine.
    let at = text
        .iter()
        .position(|t| t.starts_with("@%p2 mul.rn.f64"))
        .unwrap_or_else(|| panic!("{text:#?}"));
    // The exception group the site opens starts its minimum right before it, and the demotion
    // group its rare-execution predicate.
    let text: Vec<String> = text
        .iter()
        .enumerate()
        .filter(|(k, t)| {
            !(*k + 4 > at && *k < at && (t.starts_with("mov.b32") || t.starts_with("mov.pred")))
        })
        .map(|(_, t)| t.clone())
        .collect();
    let at = text
        .iter()
        .position(|t| t.starts_with("@%p2 mul.rn.f64"))
        .unwrap_or_else(|| panic!("{text:#?}"));
    assert!(text[at - 2].starts_with("@%p2 cvt.rn.f32.f64"), "{text:#?}");
    assert!(text[at - 2].ends_with(", %fd1;"), "{}", text[at - 2]);
    assert!(text[at - 1].starts_with("@%p2 mov.f64"), "{}", text[at - 1]);
    assert!(text[at - 1].ends_with(", %fd1;"), "{}", text[at - 1]);
    let narrow = text[at - 2]
        .trim_start_matches("@%p2 cvt.rn.f32.f64")
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    assert_eq!(text[at + 1], "@!%p2 bra $mantissa_shadow_d2;", "{text:#?}");
    assert!(text[at + 2].starts_with("mul.rn.f32"), "{}", text[at + 2]);
    assert!(
        text[at + 2].ends_with(&format!("{narrow}, 0f40000000;")),
        "{}",
        text[at + 2]
    );
    assert!(text[at + 3].starts_with("cvt.f64.f32"), "{}", text[at + 3]);
    // The exception test folds the result's exponent into the group's minimum only where the
    // guard held.
    let folded = text[at..]
        .iter()
        .position(|t| t.starts_with("@%p2 min.u32"));
    let user_branch = text[at..].iter().position(|t| t == "@!%p2 bra $L__skip;");
    assert!(folded < user_branch && folded.is_some(), "{text:#?}");
    // No call per execution: the sites accumulate, flushed before the one `ret`, after which
    // only the slow paths follow.
    let calls = call_sites(&out);
    assert!(!calls.contains_key(DEMOTION_FUNCTION), "{calls:?}");
    let ret = text.iter().position(|t| t == "ret;").unwrap_or(0);
    let flushes = text[..ret]
        .iter()
        .filter(|t| t.starts_with("call") && t.contains(FLUSH_FUNCTION))
        .count();
    assert_eq!(flushes, 4, "{text:#?}");
    assert!(
        text[..ret].iter().all(|t| !t.contains(EXCEPTION_FUNCTION)),
        "{text:#?}"
    );
    // By default the fma in the loop (site 1) accumulates, the three sites after the loop call
    // the runtime once per execution, the guarded one under its guard.
    let out = instrument(&m, &ShadowOptions::all()).unwrap();
    let calls = call_sites(&out);
    assert_eq!(calls.get(FLUSH_FUNCTION), Some(&vec![1]));
    assert_eq!(calls.get(DEMOTION_FUNCTION), Some(&vec![2, 3, 4]));
    let guarded_call = out
        .module
        .function("profile")
        .into_iter()
        .flat_map(|f| f.instructions())
        .any(|i| {
            i.decode().is_call()
                && i.operands.first() == Some(&Operand::Symbol(DEMOTION_FUNCTION.into()))
                && i.guard
                    .as_ref()
                    .is_some_and(|g| g.reg == "%p2" && !g.negated)
        });
    assert!(guarded_call);
}

#[test]
fn decode_reads_the_runtime_layout() {
    let m = parse_clean("profile", PROFILE);
    let r = instrument(&m, &ShadowOptions::all()).unwrap().report;
    let mut bytes = vec![0u8; r.global_bytes()];
    // Site `site`'s copy `c`: 16 copies of 11 words side by side per site.
    let mut put = |site: usize, c: usize, word: Word, v: u64| {
        let at = 8 * ((16 * site + c) * 11 + word as usize);
        bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
    };
    // Site 1 spread over copies: counts and sums add, the maximum is the largest; the measured
    // count is the executions less the zero references and the non-finite ones.
    put(1, 0, Word::Executions, 10);
    put(1, 15, Word::Executions, 2);
    put(1, 0, Word::Sum, 0.25f64.to_bits());
    put(1, 7, Word::Sum, 0.25f64.to_bits());
    put(1, 0, Word::Max, 0.125f64.to_bits());
    put(1, 7, Word::Max, 0.25f64.to_bits());
    put(1, 3, Word::ZeroReference, 2);
    put(1, 0, Word::NonFinite, 3);
    put(4, 0, Word::Nan, 11);
    put(4, 0, Word::NanOrigin, 12);
    put(4, 0, Word::Inf, 13);
    put(4, 0, Word::InfOrigin, 14);
    put(4, 0, Word::DivByZero, 15);
    put(4, 0, Word::Subnormal, 16);
    let s = r.decode(&bytes).unwrap();
    assert_eq!(s.len(), 5);
    assert_eq!(
        s[1].demotion,
        Some(ErrorStats {
            count: 7,
            sum: 0.5,
            max: 0.25,
            zero_reference: 2,
            non_finite: 3
        })
    );
    assert_eq!(
        s[4].exceptions,
        Some(ExceptionCounts {
            nan: 11,
            nan_origin: 12,
            inf: 13,
            inf_origin: 14,
            div_by_zero: 15,
            subnormal: 16
        })
    );
    // The conversion (site 0) has no demotion error; everything else read zero.
    assert_eq!(s[0].demotion, None);
    assert_eq!(s[0].exceptions, Some(ExceptionCounts::default()));
    assert_eq!(
        r.decode(&bytes[8..]),
        Err(ShadowError::Bytes {
            got: bytes.len() - 8,
            expected: bytes.len()
        })
    );
}

#[test]
fn a_module_instrumented_twice_or_using_the_names_is_refused() {
    let m = parse_clean("profile", PROFILE);
    let once = instrument(&m, &ShadowOptions::all()).unwrap().module;
    assert_eq!(
        instrument(&once, &ShadowOptions::all()).err(),
        Some(ShadowError::NameTaken(SHADOW_GLOBAL.into()))
    );
    // A parameter named like the global would shadow it inside the kernel.
    let mut clash = m.clone();
    for item in &mut clash.items {
        if let Item::Function(f) = item {
            f.params[0].name = SHADOW_GLOBAL.into();
        }
    }
    assert_eq!(
        instrument(&clash, &ShadowOptions::all()).err(),
        Some(ShadowError::NameTaken(SHADOW_GLOBAL.into()))
    );
}

#[test]
fn the_pass_runs_in_a_pipeline_with_its_report() {
    let m = parse_clean("profile", PROFILE);
    let run = crate::pass::Pipeline::new()
        .then(Shadow::new(ShadowOptions::all()))
        .run(&m)
        .unwrap();
    assert_eq!(
        run.reports[0].summary,
        "5 sites: demotion error at 4, exceptions at 5"
    );
    let r = run.reports[0].details::<ShadowReport>().unwrap();
    assert_eq!(r.sites.len(), 5);
    assert!(run.module.to_string().contains(SHADOW_GLOBAL));
}

/// An unrounded mul whose only use is an unrounded add is one FMA after ptxas: neither is read
/// by the instrumentation (a read of the product would stop the fusion and change the bits),
/// and the report says why; a rounded pair next to it is measured.
#[test]
fn fusible_mul_add_pairs_are_left_unread() {
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p)
{
	.reg .b64 %rd<3>;
	.reg .f64 %fd<9>;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f64 %fd1, [%rd2];
	ld.global.f64 %fd2, [%rd2+8];
	mul.f64 %fd3, %fd1, %fd2;
	add.f64 %fd4, %fd3, %fd1;
	mul.rn.f64 %fd5, %fd4, %fd2;
	add.rn.f64 %fd6, %fd5, %fd1;
	st.global.f64 [%rd2], %fd6;
	ret;
}
"#;
    let m = parse_clean("pair", ptx);
    let r = instrument(&m, &ShadowOptions::all()).unwrap();
    let measured: Vec<(String, bool, bool)> = r
        .report
        .sites
        .iter()
        .map(|s| (s.opcode.clone(), s.demotion, s.exceptions))
        .collect();
    assert_eq!(
        measured,
        [
            ("mul.f64".to_string(), false, false),
            ("add.f64".to_string(), false, false),
            ("mul.rn.f64".to_string(), true, true),
            ("add.rn.f64".to_string(), true, true),
        ]
    );
    assert_eq!(
        r.report
            .notes
            .iter()
            .filter(|n| n.contains("may fuse into one FMA"))
            .count(),
        2,
        "{:?}",
        r.report.notes
    );
    // %fd3 (the product) is read by the add alone, as written.
    let k = r.module.function("k").unwrap();
    let readers: Vec<String> = k
        .instructions()
        .filter(|i| {
            i.operands
                .iter()
                .skip(1)
                .any(|o| matches!(o, Operand::Reg(x) if x == "%fd3"))
        })
        .map(|i| i.full_opcode())
        .collect();
    assert_eq!(readers, ["add.f64"]);
}

/// An approximate f32 division or reciprocal ends in an `FMUL` that ptxas fuses with an
/// unrounded add like a `mul` (nbody_f32's energy loop under `fast`): the pair and the
/// division's other readers are left unread; a rounded division is an ordinary site.
#[test]
fn approximate_divisions_feeding_an_add_are_left_unread() {
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p)
{
	.reg .b64 %rd<3>;
	.reg .f32 %f<12>;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	ld.global.f32 %f2, [%rd2+4];
	div.approx.ftz.f32 %f3, %f1, %f2;
	add.ftz.f32 %f4, %f3, %f1;
	div.full.f32 %f5, %f4, %f2;
	sub.f32 %f6, %f1, %f5;
	rcp.approx.f32 %f7, %f6;
	neg.f32 %f8, %f7;
	add.f32 %f9, %f8, %f1;
	div.rn.f32 %f10, %f9, %f2;
	add.f32 %f11, %f10, %f1;
	st.global.f32 [%rd2], %f11;
	ret;
}
"#;
    let m = parse_clean("divisions", ptx);
    let r = instrument(&m, &ShadowOptions::all()).unwrap();
    let measured: Vec<(String, bool)> = r
        .report
        .sites
        .iter()
        .map(|s| (s.opcode.clone(), s.exceptions))
        .collect();
    assert_eq!(
        measured,
        [
            ("div.approx.ftz.f32".to_string(), false),
            ("add.ftz.f32".to_string(), false),
            ("div.full.f32".to_string(), false),
            ("sub.f32".to_string(), false),
            ("rcp.approx.f32".to_string(), false),
            ("add.f32".to_string(), false),
            ("div.rn.f32".to_string(), true),
            ("add.f32".to_string(), true),
        ]
    );
}
