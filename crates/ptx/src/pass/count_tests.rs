//! CPU tests of the counting pass: which instructions become sites, what is inserted where, and
//! that the rewritten module (merged with the runtime NVRTC compiles, for runtime calls)
//! round-trips and assembles. The GPU runs are in `tests/count_gpu.rs`.

use super::*;
use crate::link::merge_runtime;
use crate::op::{AtomicOp, OpKind, Space, ValueType};
use crate::test_support::{assert_sound, parse_clean};

#[path = "../../tests/support/example.rs"]
mod example;

const PROFILE: &str = include_str!("../../tests/fixtures/count/profile.ptx");
const LOOP_SUM: &str = include_str!("../../tests/fixtures/loop_sum.default.ptx");

const EVERY_CALL: CountOptions = CountOptions {
    which: Which::Every,
    counter: Counter::RuntimeCall,
};
const EVERY_INLINE: CountOptions = CountOptions {
    which: Which::Every,
    counter: Counter::InlineAtomic,
};
const FP_INLINE: CountOptions = CountOptions {
    which: Which::FloatingPoint,
    counter: Counter::InlineAtomic,
};

/// The count runtime compiled by NVRTC for sm_90, or `None` (skip) without NVRTC.
fn count_runtime() -> Option<String> {
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let arch = mantissa_gpu::Arch::new(9, 0);
    Some(
        mantissa_gpu::runtime::compile(&nvrtc, &mantissa_gpu::runtime::COUNT, arch)
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

#[test]
fn every_instruction_is_a_site_in_text_order_with_its_source_line() {
    let m = parse_clean("profile", PROFILE);
    let counted = count(&m, EVERY_INLINE).unwrap();
    let r = &counted.report;
    let f = m.function("profile").unwrap();
    let insts: Vec<&Instruction> = f.instructions().collect();
    assert_eq!(r.sites.len(), insts.len());
    assert_eq!(r.slots, insts.len() as u64);
    assert_eq!(r.global, COUNTS_GLOBAL);
    // Source lines, by hand from the fixture: 8 instructions on line 1, 4 on 2, 4 on 3, 2 on 4,
    // 5 on 5.
    let lines: Vec<u32> = [1; 8]
        .into_iter()
        .chain([2; 4])
        .chain([3; 4])
        .chain([4; 2])
        .chain([5; 5])
        .collect();
    for (k, (site, inst)) in r.sites.iter().zip(&insts).enumerate() {
        assert_eq!(site.index, k as u32);
        assert_eq!(site.inst, inst.id);
        assert_eq!(site.function, "profile");
        assert!(site.kernel);
        assert_eq!(site.opcode, inst.full_opcode());
        assert_eq!(site.guarded, inst.guard.is_some());
        assert_eq!(
            site.loc,
            Some(SourcePos {
                file: "profile.cu".into(),
                line: lines[k]
            }),
            "site {k}"
        );
        assert_eq!(site.inlined_at, None);
        assert_eq!(r.site_of(inst.id), Some(site));
    }
    let guarded: Vec<&str> = r
        .sites
        .iter()
        .filter(|s| s.guarded)
        .map(|s| s.opcode.as_str())
        .collect();
    assert_eq!(guarded, ["bra", "mul.rn.f64", "bra"]);
}

#[test]
fn floating_point_sites_are_the_census_ones() {
    let m = parse_clean("profile", PROFILE);
    let counted = count(&m, FP_INLINE).unwrap();
    let ops: Vec<&str> = counted
        .report
        .sites
        .iter()
        .map(|s| s.opcode.as_str())
        .collect();
    // By hand from the fixture.
    assert_eq!(
        ops,
        [
            "cvt.rn.f64.u32",
            "fma.rn.f64",
            "mul.rn.f64",
            "sqrt.rn.f64",
            "add.rn.f64"
        ]
    );
    assert_eq!(
        counted
            .report
            .sites
            .iter()
            .map(|s| s.index)
            .collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_sound("profile fp", &counted.module);
    // loop_sum: by hand from the fixture, its f32 arithmetic is 5 add.f32 and 1 fma.rn.f32;
    // its f32 moves, loads and stores are not floating-point operations.
    let m = parse_clean("loop_sum", LOOP_SUM);
    let counted = count(&m, FP_INLINE).unwrap();
    let mut ops: Vec<&str> = counted
        .report
        .sites
        .iter()
        .map(|s| s.opcode.as_str())
        .collect();
    ops.sort();
    assert_eq!(
        ops,
        ["add.f32"; 5]
            .into_iter()
            .chain(["fma.rn.f32"])
            .collect::<Vec<_>>()
    );
    assert_sound("loop_sum fp", &counted.module);
}

/// Each original instruction is preceded by exactly its counter, with its guard: an inline
/// `red` at slot 8*k, or a call sequence passing k.
#[test]
fn each_site_gets_its_counter_right_before_it_under_its_guard() {
    let m = parse_clean("profile", PROFILE);
    for options in [EVERY_INLINE, EVERY_CALL] {
        let counted = count(&m, options).unwrap();
        let f = counted.module.function("profile").unwrap();
        let body: Vec<&Statement> = f.body.iter().flatten().collect();
        for site in &counted.report.sites {
            let at = body
                .iter()
                .position(|s| matches!(s, Statement::Inst(i) if i.id == site.inst))
                .unwrap();
            let anchor = match body[at] {
                Statement::Inst(i) => i,
                _ => unreachable!(),
            };
            match options.counter {
                Counter::InlineAtomic => {
                    let Statement::Inst(red) = body[at - 1] else {
                        panic!("no counter before site {}", site.index)
                    };
                    let op = red.decode();
                    assert_eq!(
                        (op.kind, op.atomic, op.ty),
                        (
                            OpKind::Red(Space::Global),
                            Some(AtomicOp::Add),
                            Some(ValueType::U64)
                        ),
                        "{red}"
                    );
                    assert_eq!(red.guard, anchor.guard);
                    assert_eq!(
                        red.operands,
                        [
                            Operand::Addr {
                                base: COUNTS_GLOBAL.into(),
                                offset: 8 * i64::from(site.index)
                            },
                            int(1)
                        ]
                    );
                }
                Counter::RuntimeCall => {
                    // { .param .b32 p; st.param.b32 [p], k; call mantissa_count_hit, (p); }
                    assert!(matches!(body[at - 1], Statement::BlockEnd(_)));
                    let Statement::Inst(c) = body[at - 2] else {
                        panic!()
                    };
                    assert!(c.decode().is_call(), "{c}");
                    assert_eq!(c.operands[0], Operand::Symbol(HIT_FUNCTION.into()));
                    assert_eq!(c.guard, anchor.guard);
                    let Statement::Inst(st) = body[at - 3] else {
                        panic!()
                    };
                    assert_eq!(st.operands[1], int(site.index.into()));
                    // ptxas refuses a predicated st.param: the call alone carries the guard.
                    assert_eq!(st.guard, None);
                    assert!(matches!(body[at - 4], Statement::Var(_)));
                    assert!(matches!(body[at - 5], Statement::BlockStart(_)));
                }
            }
        }
        // Nothing but counters was added: the original instructions are all there, in order.
        let original: Vec<InstId> = m
            .function("profile")
            .unwrap()
            .instructions()
            .map(|i| i.id)
            .collect();
        let kept: Vec<InstId> = f
            .instructions()
            .map(|i| i.id)
            .filter(|id| id.0 < m.next_inst_id)
            .collect();
        assert_eq!(kept, original);
    }
}

/// The committed NVRTC fixtures (device functions, call sequences, DWARF `.debug_str`, inlined
/// `.loc`s, fast-math approximations) and the hand-written ones, counted both ways.
const FIXTURES: [(&str, &str); 5] = [
    ("profile", PROFILE),
    ("loop_sum", LOOP_SUM),
    (
        "calls.default",
        include_str!("../../tests/fixtures/calls.default.ptx"),
    ),
    (
        "ray_step.fast",
        include_str!("../../tests/fixtures/ray_step.fast.ptx"),
    ),
    (
        "hand_written",
        include_str!("../../tests/fixtures/hand_written.ptx"),
    ),
];

#[test]
fn inline_counters_assemble_alone_and_runtime_calls_once_merged() {
    let m = parse_clean("profile", PROFILE);
    let inline = count(&m, EVERY_INLINE).unwrap();
    let printed = assert_sound("profile inline", &inline.module);
    assert!(printed.contains(&format!(".global .align 8 .u64 {COUNTS_GLOBAL}[23];")));
    let runtime = count_runtime();
    for (what, ptx) in FIXTURES {
        let m = parse_clean(what, ptx);
        assert_sound(
            &format!("{what} inline"),
            &count(&m, EVERY_INLINE).unwrap().module,
        );
        let Some(runtime) = &runtime else {
            continue;
        };
        let called = count(&m, EVERY_CALL).unwrap();
        let merged =
            merge_runtime(&called.module, runtime).unwrap_or_else(|e| panic!("{what}: {e}"));
        let printed = assert_sound(&format!("{what} merged"), &merged);
        assert!(
            printed.contains(".visible .func mantissa_count_hit("),
            "{printed}"
        );
        assert!(
            !printed.contains("mantissa_count_hit(\n\t.param .b32 mantissa_count_hit_param_0\n);")
        );
        // The pass's report still names the merged module's instructions.
        for site in &called.report.sites {
            let f = merged.function(&site.function).unwrap();
            let inst = f.instructions().find(|i| i.id == site.inst).unwrap();
            assert_eq!(inst.full_opcode(), site.opcode, "{what}");
        }
    }
}

/// NVRTC's PTX of a shipped example (gauss: four kernels, loops, guards, division) survives
/// both counters and the merge, and ptxas takes the result.
#[test]
fn an_example_program_survives_the_pass() {
    let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    let source = mantissa_gpu::Source::new("gauss.cu", example::device_code(example::GAUSS));
    let arch = mantissa_gpu::Arch::new(9, 0);
    let compiled = nvrtc
        .compile(
            &source,
            mantissa_gpu::FlagSet::DEFAULT,
            mantissa_gpu::Target::Ptx(arch),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let m = parse_clean("gauss", &compiled.ptx);
    assert_eq!(m.kernels().count(), 4);
    let total: usize = m.functions().map(|f| f.instructions().count()).sum();
    let Some(runtime) = count_runtime() else {
        return;
    };
    for options in [EVERY_CALL, EVERY_INLINE, FP_INLINE] {
        let counted = count(&m, options).unwrap();
        if options.which == Which::Every {
            assert_eq!(counted.report.sites.len(), total);
        }
        let module = match options.counter {
            Counter::RuntimeCall => merge_runtime(&counted.module, &runtime).unwrap(),
            Counter::InlineAtomic => counted.module,
        };
        assert_sound(&format!("gauss {options:?}"), &module);
    }
}

#[test]
fn counting_twice_or_over_a_user_name_is_refused() {
    let m = parse_clean("profile", PROFILE);
    let once = count(&m, EVERY_CALL).unwrap();
    assert_eq!(
        count(&once.module, EVERY_INLINE).unwrap_err(),
        CountError::NameTaken(COUNTS_GLOBAL.into())
    );
    // A kernel parameter named like the array would shadow it in the kernel.
    let shadow = parse_clean("shadow", &PROFILE.replace("profile_param_1", COUNTS_GLOBAL));
    assert_eq!(
        count(&shadow, EVERY_INLINE).unwrap_err(),
        CountError::NameTaken(COUNTS_GLOBAL.into())
    );
}

#[test]
fn counts_decode_from_the_bytes_read_back() {
    let m = parse_clean("profile", PROFILE);
    let r = count(&m, FP_INLINE).unwrap().report;
    let values = [0u64, 1, 255, 1 << 40, u64::MAX];
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(r.decode(&bytes).unwrap(), values);
    assert_eq!(
        r.decode(&bytes[1..]).unwrap_err(),
        CountError::CountBytes { got: 39, slots: 5 }
    );
}

/// A module without functions still gets a valid (one-slot) array, so the runtime merges.
#[test]
fn a_module_without_code_still_merges() {
    let m = parse_clean("empty", ".version 9.0\n.target sm_90\n.address_size 64\n");
    let counted = count(&m, EVERY_CALL).unwrap();
    assert_eq!(counted.report.slots, 1);
    assert!(counted.report.sites.is_empty());
    let Some(runtime) = count_runtime() else {
        return;
    };
    let merged = merge_runtime(&counted.module, &runtime).unwrap();
    assert_sound("empty merged", &merged);
}
