//! CPU tests of the shadow-values pass: the sites are the demotion/exception pass's, what is
//! propagated, inline, re-seeded and shadowed in memory on a hand-written kernel, the original
//! code is untouched, the fusible pairs keep their product unread, `decode` and `table_bytes`
//! read and write the runtime's layouts, and every instrumented fixture (merged with the runtime
//! NVRTC compiles) round-trips and assembles with ptxas.

use super::*;
use crate::link::merge_runtime;
use crate::model::{Instruction, Item, Operand, Statement};
use crate::op::OpKind;
use crate::pass::shadow::{self, ShadowOptions};
use crate::test_support::{assert_sound, parse_clean};

const MIXED: &str = include_str!("../../../tests/fixtures/shadow_values/mixed.ptx");

const FIXTURES: [(&str, &str); 10] = [
    ("mixed", MIXED),
    ("shared", super::shared_tests::SHARED),
    (
        "values example",
        include_str!("../../../tests/fixtures/shadow_values/values.ptx"),
    ),
    (
        "profile",
        include_str!("../../../tests/fixtures/count/profile.ptx"),
    ),
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

fn insts(m: &Module, f: &str) -> Vec<Instruction> {
    m.functions()
        .find(|x| x.name == f && x.body.is_some())
        .and_then(|x| x.body.clone())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| match s {
            Statement::Inst(i) => Some(i),
            _ => None,
        })
        .collect()
}

/// The instructions inserted right after original instruction `id` (up to the next original).
fn after(m: &Module, original: &Module, f: &str, id: InstId) -> Vec<String> {
    let kept: HashSet<InstId> = insts(original, f).iter().map(|i| i.id).collect();
    insts(m, f)
        .iter()
        .skip_while(|i| i.id != id)
        .skip(1)
        .take_while(|i| !kept.contains(&i.id))
        .map(|i| i.to_string())
        .collect()
}

use std::collections::HashSet;

/// The instructions inserted right after the first original instruction of `f` whose text
/// contains `text`.
pub(super) fn after_in(m: &Module, original: &Module, f: &str, text: &str) -> Vec<String> {
    let id = insts(original, f)
        .into_iter()
        .find(|i| i.to_string().contains(text))
        .map(|i| i.id)
        .unwrap_or_else(|| panic!("no {text} in {f}"));
    after(m, original, f, id)
}

/// The runtime functions `code` calls, in order ("?" for any other call).
pub(super) fn calls_in(code: &[String]) -> Vec<String> {
    code.iter()
        .filter(|i| i.starts_with("call") || i.contains(" call"))
        .map(|i| {
            // `call (ret), name, (args);` or `call name, (args);`: the callee is the first
            // comma-separated piece whose last word is a bare name.
            i.split(',')
                .filter_map(|piece| piece.split_whitespace().last())
                .find(|w| !w.contains(['(', ')']))
                .filter(|w| w.starts_with("mantissa_sv_"))
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

/// The entries of [`SLOTS_GLOBAL`]'s initialiser in `m`.
pub(super) fn slots_of(m: &Module) -> Vec<u32> {
    let init = m
        .items
        .iter()
        .find_map(|i| match i {
            Item::Var(v) if v.name == SLOTS_GLOBAL => v.init.clone(),
            _ => None,
        })
        .expect("the slot table");
    init.trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace())
        .split(',')
        .map(|e| e.trim().parse().expect("a slot entry"))
        .collect()
}

#[test]
fn loop_instructions_count_into_thread_slots_and_the_others_into_the_global_at_once() {
    use crate::cfg::Cfg;
    use crate::decode::Decoded;
    let mut both = 0;
    for (name, ptx) in FIXTURES {
        let m = parse_clean(name, ptx);
        let out = instrument(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut in_loop = HashSet::new();
        for f in m.functions().filter(|f| f.body.is_some()) {
            let d = Decoded::of(f);
            let cfg = Cfg::build(&d);
            for k in 0..d.insts.len() {
                if cfg.innermost_loop(k).is_some() {
                    in_loop.insert((f.name.clone(), d.insts[k].id));
                }
            }
        }
        // Every record the code counts into, with whether its instruction is in a loop.
        let r = &out.report;
        let records: Vec<(u32, bool)> = r
            .sites
            .iter()
            .filter(|s| !matches!(s.treatment, Treatment::Skipped(_)))
            .map(|s| {
                (
                    s.index,
                    in_loop.contains(&(s.site.function.clone(), s.inst)),
                )
            })
            .chain(r.reseeds.iter().map(|p| {
                let key = (p.site.function.clone(), p.inst);
                (p.record, in_loop.contains(&key))
            }))
            .collect();
        let mut want: Vec<u32> = records.iter().filter(|r| r.1).map(|r| r.0).collect();
        want.sort_unstable();
        let mut slots = slots_of(&out.module);
        if want.is_empty() {
            assert_eq!(slots, [0], "{name}: the one-entry placeholder");
        } else {
            slots.sort_unstable();
            assert_eq!(slots, want, "{name}: one slot per loop record");
        }
        // Outside loops the `_once` forms, with the record's index as an immediate.
        let text = out.module.to_string();
        let once_calls = text.matches("_once, (").count();
        assert_eq!(
            once_calls > 0,
            records.iter().any(|r| !r.1),
            "{name}: the _once forms are used exactly where there are records outside loops"
        );
        both += usize::from(once_calls > 0 && !want.is_empty());
    }
    assert!(both > 0, "some fixture has records of both kinds");
}

#[test]
fn sites_are_the_shadow_pass_sites_with_their_treatment() {
    for (name, ptx) in FIXTURES {
        let m = parse_clean(name, ptx);
        let values = instrument(&m)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .report;
        let demotion = shadow::instrument(&m, &ShadowOptions::all())
            .unwrap()
            .report;
        let key = |index: u32, site: &Site, inst: InstId| (index, site.clone(), inst);
        assert_eq!(
            values
                .sites
                .iter()
                .map(|s| key(s.index, &s.site, s.inst))
                .collect::<Vec<_>>(),
            demotion
                .sites
                .iter()
                .map(|s| key(s.index, &s.site, s.inst))
                .collect::<Vec<_>>(),
            "{name}"
        );
        // A site the demotion pass leaves unmeasured although it writes one register is part
        // of a fusible pair here too.
        for (v, d) in values.sites.iter().zip(&demotion.sites) {
            if !d.exceptions && !matches!(v.treatment, Treatment::Skipped(_)) {
                assert!(matches!(v.treatment, Treatment::Fused(_)), "{name}: {v:?}");
            }
            assert!(
                !matches!(&v.treatment, Treatment::Skipped(w) if w == "not reached"),
                "{name}: {v:?}"
            );
        }
        for (k, r) in values.reseeds.iter().enumerate() {
            assert_eq!(r.record as usize, values.sites.len() + k);
        }
    }
}

#[test]
fn the_mixed_kernel_propagates_inlines_and_reseeds_as_documented() {
    let m = parse_clean("mixed", MIXED);
    let r = instrument(&m).unwrap().report;
    let treatment: Vec<(&str, String)> = r
        .sites
        .iter()
        .map(|s| {
            let t = match &s.treatment {
                Treatment::Propagated => "propagated".to_string(),
                Treatment::Fused(_) => "fused".to_string(),
                Treatment::Reseeded(w) => format!("reseeded: {w}"),
                Treatment::Skipped(w) => format!("skipped: {w}"),
            };
            (s.opcode.as_str(), t)
        })
        .collect();
    let p = || "propagated".to_string();
    assert_eq!(
        treatment,
        [
            ("mul.rn.f64", p()),
            ("add.rn.f64", p()),
            ("fma.rn.f64", p()),
            ("div.rn.f64", p()),
            ("sqrt.rn.f64", p()),
            (
                "cvt.rn.f64.s32",
                "reseeded: a conversion from an integer or a narrower float".into()
            ),
            ("cvt.rn.f32.f64", p()),
            (
                "sin.approx.f32",
                "reseeded: an approximate function, measured as one unit".into()
            ),
            ("cvt.f64.f32", p()),
            ("cvt.rmi.f64.f64", p()),
            ("mul.f64", "fused".into()),
            ("add.f64", "fused".into()),
            ("add.rn.f64", p()),
            ("add.rn.f64", p()),
        ]
    );
    let reseeds: Vec<(&str, &str, bool)> = r
        .reseeds
        .iter()
        .map(|x| (x.opcode.as_str(), x.reason.as_str(), x.conditional))
        .collect();
    let global = "a global load: re-seeds where the address is in no registered buffer";
    assert_eq!(
        reseeds,
        [
            ("ld.global.f64", global, true),
            ("ld.global.v2.f64", global, true),
            ("mov.b64", "bits moved from a non-float register", false),
            (
                "ld.shared.f64",
                "a shared load: re-seeds where the address is in dynamic shared memory (not shadowed)",
                true
            ),
        ]
    );
    assert_eq!(r.records(), 14 + 4);
    assert_eq!(r.global_bytes(), 18 * 16 * 14 * 8);
}

#[test]
fn inserted_code_is_what_each_definition_needs() {
    let m = parse_clean("mixed", MIXED);
    let out = instrument(&m).unwrap().module;
    let id_of = |text: &str| {
        insts(&m, "mixed")
            .into_iter()
            .find(|i| i.to_string().contains(text))
            .map(|i| i.id)
            .unwrap_or_else(|| panic!("no {text}"))
    };
    let after = |text: &str| after(&out, &m, "mixed", id_of(text));
    let calls = |code: &[String]| calls_in(code);
    // A kernel parameter is an input: its shadow is its value, no runtime call.
    let param = after("[mixed_param_2]");
    assert_eq!(param.len(), 2, "{param:?}");
    assert!(
        param[0].starts_with("mov.f64") && param[0].ends_with("%fd1;"),
        "{param:?}"
    );
    assert!(param[1].starts_with("mov.f64") && param[1].contains("0d0000000000000000"));
    // Arithmetic calls the runtime once and takes the pair.
    let mul = after("mul.rn.f64");
    // Outside loops: the `_once` forms, which add to the global record at once.
    assert_eq!(calls(&mul), [once("mantissa_sv_mul_f64")], "{mul:?}");
    assert_eq!(
        mul.iter().filter(|i| i.starts_with("ld.param.f64")).count(),
        2
    );
    // neg, abs, selp, min, mov: inline, no call.
    for text in [
        "neg.f64",
        "abs.f64 ",
        "selp.f64",
        "min.f64",
        "mov.f64 \t%fd14",
    ] {
        let code = after(text);
        assert!(calls(&code).is_empty(), "{text}: {code:?}");
        assert!(!code.is_empty(), "{text}");
    }
    // Loads and stores of global floats go through the shadow buffer; an integer store clears.
    assert_eq!(
        calls(&after("ld.global.v2.f64")),
        [once(LOAD_FUNCTION), once(LOAD_FUNCTION)]
    );
    assert_eq!(
        calls(&after("st.global.v2.f64")),
        [STORE_FUNCTION, STORE_FUNCTION]
    );
    assert_eq!(calls(&after("st.global.u32")), [CLEAR_FUNCTION]);
    // Re-seeds count into their record; shared memory has its shadow area.
    assert_eq!(calls(&after("ld.shared.f64")), [once(LOAD_SHARED_FUNCTION)]);
    assert_eq!(calls(&after("mov.b64")), [once(RESEED_FUNCTION)]);
    // A guarded instruction's shadow code runs under its guard (call staging aside).
    for i in after("@%p1 add.rn.f64") {
        let staging = i.starts_with("st.param") || i.starts_with("ld.param");
        assert!(staging || i.starts_with("@%p1"), "{i}");
    }
}

#[test]
fn the_fusible_product_is_never_read() {
    let m = parse_clean("mixed", MIXED);
    let out = instrument(&m).unwrap().module;
    let original = insts(&m, "mixed");
    let kept: HashSet<InstId> = original.iter().map(|i| i.id).collect();
    let reads_product = insts(&out, "mixed")
        .into_iter()
        .filter(|i| !kept.contains(&i.id))
        .filter(|i| i.uses().contains(&"%fd20"))
        .map(|i| i.to_string())
        .collect::<Vec<_>>();
    assert!(reads_product.is_empty(), "{reads_product:?}");
}

#[test]
fn the_original_code_is_kept_and_inserted_code_writes_only_its_registers() {
    for (name, ptx) in FIXTURES {
        let m = parse_clean(name, ptx);
        let out = instrument(&m).unwrap().module;
        for f in m.functions().filter(|f| f.body.is_some()) {
            let before = insts(&m, &f.name);
            let after = insts(&out, &f.name);
            let ids: HashSet<InstId> = before.iter().map(|i| i.id).collect();
            let kept: Vec<&Instruction> = after.iter().filter(|i| ids.contains(&i.id)).collect();
            assert_eq!(kept.len(), before.len(), "{name} {}", f.name);
            for (a, b) in kept.iter().zip(&before) {
                assert_eq!(a.to_string(), b.to_string(), "{name}");
            }
            let declared: HashSet<&str> = before
                .iter()
                .flat_map(|i| i.defs())
                .chain(before.iter().flat_map(|i| i.uses()))
                .collect();
            for i in after.iter().filter(|i| !ids.contains(&i.id)) {
                for d in i.defs() {
                    assert!(!declared.contains(d), "{name}: {i} writes the user's {d}");
                }
                let op = i.decode();
                if matches!(op.kind, OpKind::Store(_)) {
                    assert!(op.is_param_store(), "{name}: {i}");
                }
            }
        }
    }
}

#[test]
fn decode_reads_the_runtime_layout_and_the_table_is_written_as_the_runtime_reads_it() {
    let m = parse_clean("mixed", MIXED);
    let r = instrument(&m).unwrap().report;
    let copies = COPIES as usize;
    let mut words = vec![0u64; r.records() * copies * WORDS_PER_RECORD as usize];
    // Record `rec`'s copy `c`: the copies of a record are side by side.
    let at =
        |rec: usize, c: usize, w: Word| (rec * copies + c) * WORDS_PER_RECORD as usize + w as usize;
    // Record 1 spread over copies 0, 3 and the last: counts and sums add, maxima the largest.
    words[at(1, 0, Word::Executions)] = 4;
    words[at(1, 3, Word::Executions)] = 2;
    words[at(1, copies - 1, Word::Executions)] = 1;
    words[at(1, 0, Word::LocalCount)] = 6;
    words[at(1, 0, Word::LocalSum)] = 1e-16f64.to_bits();
    words[at(1, 3, Word::LocalSum)] = 2e-16f64.to_bits();
    words[at(1, 0, Word::LocalMax)] = 0.5e-16f64.to_bits();
    words[at(1, copies - 1, Word::LocalMax)] = 1e-16f64.to_bits();
    words[at(1, 3, Word::LocalZero)] = 1;
    words[at(1, 0, Word::AccCount)] = 5;
    words[at(1, 3, Word::AccMax)] = 1e-9f64.to_bits();
    words[at(1, 0, Word::AccNonFinite)] = 2;
    words[at(1, 0, Word::Cancellations)] = 3;
    words[at(1, 0, Word::CancelMaxBits)] = 12;
    words[at(1, 3, Word::CancelMaxBits)] = 40;
    words[at(15, 2, Word::Reseeded)] = 9;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let stats = r.decode(&bytes).unwrap();
    assert_eq!(stats.sites.len(), 14);
    assert_eq!(stats.reseeds.len(), 4);
    let s = stats.sites[1];
    assert_eq!(
        (s.executions, s.local.count, s.local.zero_reference),
        (7, 6, 1)
    );
    assert_eq!((s.local.sum, s.local.max), (1e-16 + 2e-16, 1e-16));
    assert_eq!((s.accumulated.count, s.accumulated.non_finite), (5, 2));
    assert_eq!((s.cancellations, s.cancel_max_bits), (3, 40));
    assert!((s.worst_digits().unwrap() - 9.0).abs() < 1e-12);
    assert_eq!(stats.reseeds[1].reseeded, 9);
    assert_eq!(stats.sites[0], ValueStats::default());
    assert!(matches!(
        r.decode(&bytes[8..]),
        Err(ValuesError::Bytes { .. })
    ));

    let table = table_bytes(&[
        ShadowedBuffer {
            address: 0x1000,
            bytes: 64,
            shadow: 0x9000,
        },
        ShadowedBuffer {
            address: 0x2000,
            bytes: 8,
            shadow: 0xa000,
        },
    ])
    .unwrap();
    assert_eq!(table.len(), 8 * (1 + 3 * MAX_BUFFERS));
    let word = |k: usize| u64::from_le_bytes(table[8 * k..8 * k + 8].try_into().unwrap());
    assert_eq!(
        (0..7).map(word).collect::<Vec<_>>(),
        [2, 0x1000, 64, 0x9000, 0x2000, 8, 0xa000]
    );
    assert!(word(7) == 0 && word(3 * MAX_BUFFERS) == 0);
    let many = vec![
        ShadowedBuffer {
            address: 0,
            bytes: 0,
            shadow: 0
        };
        MAX_BUFFERS + 1
    ];
    assert_eq!(
        table_bytes(&many),
        Err(ValuesError::TooManyBuffers(MAX_BUFFERS + 1))
    );
}

#[test]
fn digits_are_minus_log10_capped() {
    assert_eq!(digits(0.0), 17.0);
    assert!((digits(1e-6) - 6.0).abs() < 1e-12);
    assert_eq!(digits(10.0), 0.0);
    assert_eq!(digits(f64::NAN), 0.0);
    assert_eq!(digits(f64::INFINITY), 0.0);
    // A relative error of exactly 1 is no correct digit: +0, never −0 (which the summary
    // printed as "fewest correct digits -0.0").
    for e in [1.0, 10.0, f64::INFINITY, f64::NAN] {
        assert_eq!(digits(e).to_bits(), 0.0f64.to_bits(), "{e}");
    }
}

#[test]
fn a_module_instrumented_once_is_refused() {
    let m = parse_clean("mixed", MIXED);
    let once = instrument(&m).unwrap().module;
    assert!(matches!(instrument(&once), Err(ValuesError::NameTaken(_))));
}

/// The shadow-values runtime compiled by NVRTC for sm_90, or `None` (skip) without NVRTC.
pub(super) fn runtime() -> Option<String> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    Some(
        mantissa_gpu::runtime::compile(
            &nvrtc,
            &mantissa_gpu::runtime::SHADOW_VALUES,
            mantissa_gpu::Arch::new(9, 0),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
}

#[test]
fn instrumented_modules_merge_with_the_runtime_and_assemble() {
    let Some(rt) = runtime() else {
        return;
    };
    for (name, ptx) in FIXTURES {
        let m = parse_clean(name, ptx);
        let out = instrument(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
        let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            merged
                .items
                .iter()
                .any(|i| matches!(i, Item::Var(v) if v.name == VALUES_GLOBAL)),
            "{name}"
        );
        assert_sound(name, &merged);
        // What runs: no call per execution is left, only the entry zeroing and exit flushes.
        let inlined = inline_runtime(&merged).unwrap_or_else(|e| panic!("{name}: {e}"));
        let per_execution: HashSet<String> = inlined_functions().into_iter().collect();
        for f in inlined.functions() {
            assert!(
                !per_execution.contains(&f.name),
                "{name}: {} is still defined",
                f.name
            );
            for i in f.instructions().filter(|i| i.decode().is_call()) {
                let callee = i.operands.iter().find_map(|o| match o {
                    Operand::Symbol(s) => Some(s.as_str()),
                    _ => None,
                });
                assert!(
                    matches!(callee, Some(ZERO_FUNCTION | FLUSH_FUNCTION))
                        || !callee.is_some_and(|c| c.starts_with("mantissa_sv")),
                    "{name}: {i}"
                );
            }
        }
        assert_sound(&format!("{name} inlined"), &inlined);
    }
}
