//! Tests of the rewriting toolkit: edits land where promised (guard, `.loc`, fresh ids, one
//! register range per type, unique names), the result round-trips through print/parse and
//! ptxas assembles it.

use super::*;
use crate::census::located;
use crate::op::{Arith, Control, OpKind};
use crate::test_support::{assert_sound, parse_clean};

const LOOP_SUM: &str = include_str!("../tests/fixtures/loop_sum.default.ptx");
const CALLS: &str = include_str!("../tests/fixtures/calls.default.ptx");
const HAND_WRITTEN: &str = include_str!("../tests/fixtures/hand_written.ptx");

fn ids(f: &Function) -> Vec<InstId> {
    f.instructions().map(|i| i.id).collect()
}

fn kernel<'m>(m: &'m Module, name: &str) -> &'m Function {
    m.function(name)
        .unwrap_or_else(|| panic!("no function {name}"))
}

/// Before every instruction of every function with a body: a counter increment into a new
/// global and a move into a new register of each of three types, under the anchor's guard; a
/// new parameter on each kernel. Everything must round-trip and assemble.
#[test]
fn instrumenting_every_instruction_round_trips_and_assembles() {
    for (what, ptx) in [
        ("loop_sum", LOOP_SUM),
        ("calls", CALLS),
        ("hand_written", HAND_WRITTEN),
    ] {
        let mut m = parse_clean(what, ptx);
        let original_ids: Vec<Vec<InstId>> = m.functions().map(ids).collect();
        let total: usize = original_ids.iter().map(Vec::len).sum();
        let counts = add_global(&mut m, "u64", 8, "__test_counts", total as u64);
        let names: Vec<String> = m
            .functions()
            .filter(|f| f.body.is_some())
            .map(|f| f.name.clone())
            .collect();
        let mut site = 0i64;
        for name in &names {
            let mut rw = Rewriter::new(&m, name).unwrap();
            let targets = ids(kernel(&m, name));
            for id in targets {
                let wide = rw.reg("f64").unwrap();
                let narrow = rw.reg(".u32").unwrap();
                let flag = rw.reg("pred").unwrap();
                let code = vec![
                    instruction(
                        "red",
                        &["global", "add", "u64"],
                        vec![
                            Operand::Addr {
                                base: counts.clone(),
                                offset: 8 * site,
                            },
                            int(1),
                        ],
                    ),
                    instruction(
                        "mov",
                        &["f64"],
                        vec![Operand::Reg(wide), Operand::Imm(Imm::F64(1.5f64.to_bits()))],
                    ),
                    instruction("mov", &["u32"], vec![Operand::Reg(narrow.clone()), int(3)]),
                    instruction(
                        "setp",
                        &["eq", "u32"],
                        vec![Operand::Reg(flag), Operand::Reg(narrow), int(3)],
                    ),
                ];
                rw.insert_before(id, code, Guarding::Keep).unwrap();
                site += 1;
            }
            if kernel(&m, name).kind == FunctionKind::Entry {
                let p = rw.add_param("u64", "added").unwrap();
                assert_eq!(p, "added");
            }
            rw.apply(&mut m).unwrap();
        }
        let printed = assert_sound(what, &m);

        // The original instructions keep their ids and order; 4 new ones sit before each.
        let now: Vec<Vec<InstId>> = m.functions().map(ids).collect();
        for (before, after) in original_ids.iter().zip(&now) {
            assert_eq!(after.len(), 5 * before.len(), "{what}");
            let kept: Vec<InstId> = after.iter().skip(4).step_by(5).copied().collect();
            assert_eq!(&kept, before, "{what}");
        }
        // Fresh ids: all distinct, above the parsed ones, and next_inst_id past them all.
        let all: Vec<InstId> = now.iter().flatten().copied().collect();
        let distinct: HashSet<InstId> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "{what}: duplicate ids");
        assert!(all.iter().all(|i| i.0 < m.next_inst_id), "{what}");
        assert_eq!(m.next_inst_id as usize, 5 * total, "{what}");
        // One new declaration per type per function, sized to what was asked for.
        for f in m.functions().filter(|f| f.body.is_some()) {
            let n = original_ids[m.functions().position(|g| g.name == f.name).unwrap()].len();
            let new_decls: Vec<&RegDecl> = f
                .body
                .iter()
                .flatten()
                .filter_map(|s| match s {
                    Statement::Reg(d) if d.names.iter().any(|r| matches!(r, RegName::Range { prefix, .. } if prefix.starts_with("%mx"))) => Some(d),
                    _ => None,
                })
                .collect();
            let shape: Vec<(String, Vec<RegName>)> = new_decls
                .iter()
                .map(|d| (d.ty.clone(), d.names.clone()))
                .collect();
            let range = |ty: &str| RegName::Range {
                prefix: format!("%mx{ty}_"),
                count: n as u32,
            };
            assert_eq!(
                shape,
                [
                    (".f64".to_string(), vec![range("f64")]),
                    (".u32".to_string(), vec![range("u32")]),
                    (".pred".to_string(), vec![range("pred")]),
                ],
                "{what}: {}",
                f.name
            );
        }
        assert!(printed.contains(&format!(".global .align 8 .u64 {counts}[{total}];")));
    }
}

/// Inserted code sits under the anchor's `.loc` and guard, before or after it as asked.
#[test]
fn inserted_code_keeps_the_anchor_loc_and_guard() {
    let mut m = parse_clean("loop_sum", LOOP_SUM);
    let f = kernel(&m, "loop_sum");
    let guarded = f
        .instructions()
        .find(|i| i.guard.as_ref().is_some_and(|g| g.reg == "%p1"))
        .expect("loop_sum has `@%p1 bra`");
    let (guarded_id, guard) = (guarded.id, guarded.guard.clone());
    let fma = f
        .instructions()
        .find(|i| i.decode().kind == OpKind::Fma)
        .unwrap()
        .id;
    let mut rw = Rewriter::new(&m, "loop_sum").unwrap();
    let marker = |k: i128| {
        instruction(
            "add",
            &["u32"],
            vec![
                Operand::Reg("%r1".into()),
                Operand::Reg("%r1".into()),
                int(k),
            ],
        )
    };
    rw.insert_before(guarded_id, vec![marker(100)], Guarding::Keep)
        .unwrap();
    rw.insert_before(guarded_id, vec![marker(101)], Guarding::Ignore)
        .unwrap();
    rw.insert_after(fma, vec![marker(102)], Guarding::Keep)
        .unwrap();
    rw.insert_before(fma, vec![marker(103)], Guarding::Keep)
        .unwrap();
    rw.apply(&mut m).unwrap();
    assert_sound("loop_sum markers", &m);

    let f = kernel(&m, "loop_sum");
    let placed = located(f);
    let at = |id: InstId| placed.iter().position(|(i, _)| i.id == id).unwrap();
    let marker_at = |k: i128| {
        placed
            .iter()
            .position(|(i, _)| {
                i.decode().kind == OpKind::Arith(Arith::Add) && matches!(i.operands.get(2), Some(Operand::Imm(Imm::Int { value, .. })) if *value == k)
            })
            .unwrap_or_else(|| panic!("marker {k} missing"))
    };
    // Order: both markers right before the guarded branch, in insertion order; 103 right before
    // the fma and 102 right after it.
    assert_eq!(marker_at(100) + 1, marker_at(101));
    assert_eq!(marker_at(101) + 1, at(guarded_id));
    assert_eq!(marker_at(103) + 1, at(fma));
    assert_eq!(at(fma) + 1, marker_at(102));
    // Same `.loc` as the anchor.
    for (k, anchor) in [(100, guarded_id), (101, guarded_id), (102, fma), (103, fma)] {
        assert_eq!(placed[marker_at(k)].1, placed[at(anchor)].1, "marker {k}");
        assert!(placed[marker_at(k)].1.is_some());
    }
    // Guards: Keep copies the anchor's, Ignore leaves none, an unguarded anchor gives none.
    assert_eq!(placed[marker_at(100)].0.guard, guard);
    assert_eq!(placed[marker_at(101)].0.guard, None);
    assert_eq!(placed[marker_at(102)].0.guard, None);
    assert_eq!(placed[marker_at(103)].0.guard, None);
}

/// A negated guard is copied negated, and an inserted instruction's own guard is kept.
#[test]
fn negated_guards_are_copied_and_own_guards_kept() {
    let mut m = parse_clean("hand_written", HAND_WRITTEN);
    let f = kernel(&m, "extra");
    let negated = f
        .instructions()
        .find(|i| i.guard.as_ref().is_some_and(|g| g.negated))
        .expect("hand_written has `@!%p1 bra`");
    let id = negated.id;
    let mut rw = Rewriter::new(&m, "extra").unwrap();
    let own = Guard {
        negated: false,
        reg: "%p2".into(),
    };
    let mut with_own = instruction("mov", &["u32"], vec![Operand::Reg("%r1".into()), int(7)]);
    if let Statement::Inst(i) = &mut with_own {
        i.guard = Some(own.clone());
    }
    rw.insert_before(
        id,
        vec![
            instruction("mov", &["u32"], vec![Operand::Reg("%r1".into()), int(5)]),
            with_own,
        ],
        Guarding::Keep,
    )
    .unwrap();
    rw.apply(&mut m).unwrap();
    assert_sound("hand_written guards", &m);
    let f = kernel(&m, "extra");
    let insts: Vec<&Instruction> = f.instructions().collect();
    let k = insts.iter().position(|i| i.id == id).unwrap();
    assert_eq!(
        insts[k - 2]
            .guard
            .as_ref()
            .map(|g| (g.negated, g.reg.as_str())),
        Some((true, "%p1"))
    );
    assert_eq!(insts[k - 1].guard, Some(own));
}

#[test]
fn the_register_prefix_avoids_every_declared_name() {
    assert_eq!(unused_prefix(&["%f", "%fd", "%r", "%rd", "%p"]), "%mx");
    assert_eq!(unused_prefix(&["%mx"]), "%mxa");
    assert_eq!(unused_prefix(&["%f", "%mxf64_"]), "%mxa");
    // A single name starting with the base takes it too; a shorter prefix does not.
    assert_eq!(unused_prefix(&["%mxa_x", "%mx1", "%m"]), "%mxb");
    let all: Vec<String> = std::iter::once("%mx".to_string())
        .chain(('a'..='z').map(|c| format!("%mx{c}")))
        .collect();
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    assert_eq!(unused_prefix(&refs), "%mx0x");

    // And in a function: `%mx` is declared, so the new range is `%mxa...`, which ptxas accepts.
    let ptx = LOOP_SUM.replace(
        ".reg .pred \t%p<9>;",
        ".reg .pred \t%p<9>;\n\t.reg .b32 \t%mx<2>;",
    );
    assert_ne!(ptx, LOOP_SUM);
    let mut m = parse_clean("loop_sum with %mx", &ptx);
    let mut rw = Rewriter::new(&m, "loop_sum").unwrap();
    let r = rw.reg("b32").unwrap();
    assert_eq!(r, "%mxab32_0");
    let first = kernel(&m, "loop_sum").instructions().next().unwrap().id;
    rw.insert_before(
        first,
        vec![instruction("mov", &["b32"], vec![Operand::Reg(r), int(1)])],
        Guarding::Keep,
    )
    .unwrap();
    rw.apply(&mut m).unwrap();
    assert_sound("loop_sum with %mx", &m);
}

#[test]
fn new_names_avoid_every_name_they_could_shadow() {
    let mut m = parse_clean("loop_sum", LOOP_SUM);
    // A parameter named after a module global or an existing parameter gets a suffix.
    let g = add_global(&mut m, "u64", 8, "loop_sum_param_0", 4);
    assert_eq!(g, "loop_sum_param_0_1", "a kernel parameter has the name");
    let g2 = add_global(&mut m, "u64", 8, "_ZZ8loop_sumE4part", 4);
    assert_eq!(
        g2, "_ZZ8loop_sumE4part_1",
        "a function-scope .shared has the name"
    );
    let g3 = add_global(&mut m, "u64", 8, "fresh", 4);
    assert_eq!(g3, "fresh");
    let g4 = add_global(&mut m, "u64", 8, "fresh", 4);
    assert_eq!(g4, "fresh_1");
    let mut rw = Rewriter::new(&m, "loop_sum").unwrap();
    assert_eq!(rw.add_param("u64", "fresh").unwrap(), "fresh_2");
    assert_eq!(
        rw.add_param("u64", "loop_sum_param_1").unwrap(),
        "loop_sum_param_1_1"
    );
    assert_eq!(rw.add_param(".u32", "n").unwrap(), "n");
    assert_eq!(
        rw.add_param("u64", "_ZZ8loop_sumE4part").unwrap(),
        "_ZZ8loop_sumE4part_2",
        "the kernel's .shared variable and the global named after it"
    );
    assert_eq!(rw.add_param("u32", "n").unwrap(), "n_1");
    rw.apply(&mut m).unwrap();
    let printed = assert_sound("loop_sum names", &m);
    // Globals go before the first function, in the order added; parameters at the end.
    let globals: Vec<&str> = m
        .items
        .iter()
        .take(crate::rewrite::first_function(&m))
        .filter_map(|i| match i {
            Item::Var(v) => Some(v.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(globals, [g.as_str(), &g2, &g3, &g4]);
    let params: Vec<&str> = kernel(&m, "loop_sum")
        .params
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        params,
        [
            "loop_sum_param_0",
            "loop_sum_param_1",
            "loop_sum_param_2",
            "fresh_2",
            "loop_sum_param_1_1",
            "n",
            "_ZZ8loop_sumE4part_2",
            "n_1"
        ]
    );
    assert!(printed.contains("\t.param .u32 n_1\n)"), "{printed}");
}

#[test]
fn impossible_edits_are_typed_errors() {
    let m = parse_clean("calls", CALLS);
    assert_eq!(
        Rewriter::new(&m, "nope").unwrap_err(),
        RewriteError::NoFunction("nope".into())
    );
    let device_fn = m
        .functions()
        .find(|f| f.kind == FunctionKind::Func && f.body.is_some())
        .expect("calls has a device function");
    let kernel_fn = m.kernels().next().unwrap();
    let mut rw = Rewriter::new(&m, &device_fn.name).unwrap();
    assert_eq!(
        rw.add_param("u64", "x").unwrap_err(),
        RewriteError::NotAKernel(device_fn.name.clone())
    );
    let elsewhere = kernel_fn.instructions().next().unwrap().id;
    assert_eq!(
        rw.insert_before(elsewhere, vec![], Guarding::Keep)
            .unwrap_err(),
        RewriteError::NotInFunction {
            id: elsewhere,
            function: device_fn.name.clone()
        }
    );
    let ret = device_fn
        .instructions()
        .find(|i| i.decode().control() == Some(Control::Ret))
        .unwrap()
        .id;
    assert!(matches!(
        rw.insert_after(ret, vec![], Guarding::Ignore),
        Err(RewriteError::AfterControlTransfer { .. })
    ));
    assert!(rw.insert_before(ret, vec![], Guarding::Ignore).is_ok());
    assert_eq!(
        rw.reg("f8").unwrap_err(),
        RewriteError::BadRegisterType("f8".into())
    );
    // The messages are one line naming the value and what is accepted.
    let msg = RewriteError::BadRegisterType("f8".into()).to_string();
    assert!(msg.contains("'f8'") && msg.contains("f64") && !msg.contains('\n'));

    // An instruction that writes its own guard: nothing after it with that guard.
    let ptx = "\
.version 9.0
.target sm_90
.address_size 64

.visible .entry k()
{
\t.reg .pred \t%p<2>;
\t.reg .b32 \t%r<2>;
\tmov.u32 \t%r1, %tid.x;
\tsetp.eq.u32 \t%p1, %r1, 0;
\t@%p1 setp.eq.u32 \t%p1, %r1, 1;
\tret;
}
";
    let m = parse_clean("self guard", ptx);
    let f = kernel(&m, "k");
    let own = f.instructions().nth(2).unwrap().id;
    let mut rw = Rewriter::new(&m, "k").unwrap();
    assert_eq!(
        rw.insert_after(own, vec![], Guarding::Keep).unwrap_err(),
        RewriteError::GuardRewritten {
            id: own,
            guard: "%p1".into()
        }
    );
    assert!(rw.insert_after(own, vec![], Guarding::Ignore).is_ok());
    assert!(rw.insert_before(own, vec![], Guarding::Keep).is_ok());
}

/// A call sequence inserted before every instruction, including those inside NVRTC's own call
/// sequences, assembles: the helper declares its own `.param`s in its own block.
#[test]
fn inserted_calls_assemble_everywhere() {
    let mut m = parse_clean("calls", CALLS);
    // The callee: a device function defined before every other function.
    let callee = "\
.version 9.0
.target sm_90
.address_size 64

.func mantissa_test_hit(
\t.param .b32 mantissa_test_hit_param_0
)
{
\tret;
}
";
    let callee = parse_clean("callee", callee);
    let def = callee.functions().next().unwrap().clone();
    let at = first_function(&m);
    m.items.insert(at, Item::Function(def));
    let names: Vec<String> = m
        .functions()
        .filter(|f| f.body.is_some() && f.name != "mantissa_test_hit")
        .map(|f| f.name.clone())
        .collect();
    let mut k = 0;
    for name in names {
        let mut rw = Rewriter::new(&m, &name).unwrap();
        for id in ids(kernel(&m, &name)) {
            rw.insert_before(
                id,
                call("mantissa_test_hit", &[("b32", int(k))]),
                Guarding::Keep,
            )
            .unwrap();
            k += 1;
        }
        rw.apply(&mut m).unwrap();
    }
    let printed = assert_sound("calls with calls", &m);
    assert!(
        printed.contains("call \tmantissa_test_hit, (mantissa_param0);"),
        "{printed}"
    );
}
