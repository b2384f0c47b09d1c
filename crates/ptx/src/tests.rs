//! Round-trip and parser tests on the committed NVRTC 13.0 fixtures (tests/fixtures/*.cu
//! compiled for sm_90 with -lineinfo under the default, strict and fast flag sets).

use crate::op::{Arith, BitOp, Control, Op, OpKind, Rounding, Space, ValueType};
use crate::*;

/// The first instruction of `f` whose decode satisfies `what`.
fn first(f: &Function, what: impl Fn(&Op) -> bool) -> &Instruction {
    f.instructions()
        .find(|i| what(&i.decode()))
        .unwrap_or_else(|| panic!("no such instruction in {}", f.name))
}

/// An instruction of kind `kind` on `ty` with no modifier the decode reads besides.
fn plain(op: &Op, kind: OpKind, ty: ValueType) -> bool {
    op.kind == kind
        && op.ty == Some(ty)
        && op.rounding.is_none()
        && !(op.ftz || op.approx || op.full || op.sat)
        && op.part.is_none()
}

/// (name, PTX) of every fixture.
pub(crate) const FIXTURES: [(&str, &str); 13] = [
    (
        "loop_sum.default",
        include_str!("../tests/fixtures/loop_sum.default.ptx"),
    ),
    (
        "loop_sum.strict",
        include_str!("../tests/fixtures/loop_sum.strict.ptx"),
    ),
    (
        "loop_sum.fast",
        include_str!("../tests/fixtures/loop_sum.fast.ptx"),
    ),
    (
        "calls.default",
        include_str!("../tests/fixtures/calls.default.ptx"),
    ),
    (
        "calls.strict",
        include_str!("../tests/fixtures/calls.strict.ptx"),
    ),
    (
        "calls.fast",
        include_str!("../tests/fixtures/calls.fast.ptx"),
    ),
    (
        "divsqrt.default",
        include_str!("../tests/fixtures/divsqrt.default.ptx"),
    ),
    (
        "divsqrt.strict",
        include_str!("../tests/fixtures/divsqrt.strict.ptx"),
    ),
    (
        "divsqrt.fast",
        include_str!("../tests/fixtures/divsqrt.fast.ptx"),
    ),
    (
        "ray_step.default",
        include_str!("../tests/fixtures/ray_step.default.ptx"),
    ),
    (
        "ray_step.strict",
        include_str!("../tests/fixtures/ray_step.strict.ptx"),
    ),
    (
        "ray_step.fast",
        include_str!("../tests/fixtures/ray_step.fast.ptx"),
    ),
    // Written by hand (ptxas 13.0 accepts it): module variables with initialisers, an extern
    // prototype, performance directives, negated guards, atomics, saturating conversions.
    (
        "hand_written",
        include_str!("../tests/fixtures/hand_written.ptx"),
    ),
];

pub(crate) fn fixture(name: &str) -> Module {
    let (_, text) = FIXTURES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fixture {name}"));
    let parsed = parse(text);
    assert!(
        parsed.diagnostics.is_empty(),
        "{name}: {:?}",
        parsed.diagnostics
    );
    parsed.module
}

#[test]
fn fixtures_parse_without_diagnostics_and_round_trip() {
    for (name, text) in FIXTURES {
        let first = parse(text);
        assert!(
            first.diagnostics.is_empty(),
            "{name}: {:?}",
            first.diagnostics
        );
        let printed = first.module.to_string();
        let second = parse(&printed);
        assert!(
            second.diagnostics.is_empty(),
            "{name} printed: {:?}",
            second.diagnostics
        );
        assert_eq!(first.module, second.module, "{name}:\n{printed}");
        // Printing is a fixed point after one round.
        assert_eq!(printed, second.module.to_string(), "{name}");
    }
}

#[test]
fn instruction_counts_match_the_text() {
    // Every line of NVRTC's PTX ending in ';' that is not a declaration or pragma is one
    // instruction (the multi-line call's ';' closes "param1\n\t);"; a lone ';' ends the
    // hand-written fixture's extern prototype).
    for (name, text) in FIXTURES {
        let m = parse(text).module;
        let expected = text
            .lines()
            .map(str::trim)
            .filter(|l| l.ends_with(';') && *l != ";")
            .filter(|l| !l.starts_with('.') && !l.starts_with("//"))
            .count();
        let got: usize = m.functions().map(|f| f.instructions().count()).sum();
        assert_eq!(got, expected, "{name}");
        assert_eq!(m.next_inst_id as usize, got, "{name}");
    }
}

#[test]
fn module_structure_of_calls() {
    let m = fixture("calls.default");
    assert_eq!(m.items[0], Item::Version("9.0".into()));
    assert_eq!(m.items[1], Item::Target(vec!["sm_90".into()]));
    assert_eq!(m.items[2], Item::AddressSize(64));
    let names: Vec<(&str, FunctionKind)> =
        m.functions().map(|f| (f.name.as_str(), f.kind)).collect();
    assert_eq!(
        names,
        [
            ("_Z6scaleddd", FunctionKind::Func),
            ("calls", FunctionKind::Entry)
        ]
    );
    let scaled = m.function("_Z6scaleddd").unwrap();
    assert_eq!(
        scaled.returns,
        Some(vec![Param {
            attrs: vec![".param".into(), ".b64".into()],
            name: "func_retval0".into(),
            dims: vec![],
        }])
    );
    assert_eq!(scaled.params.len(), 2);
    let calls = m.function("calls").unwrap();
    assert_eq!(calls.linkage, [".visible"]);
    assert_eq!(calls.params.len(), 5);
    assert_eq!(calls.params[4].attrs, [".param", ".u32"]);
    let body = calls.body.as_ref().unwrap();
    assert!(body.contains(&Statement::Reg(RegDecl {
        ty: ".f64".into(),
        names: vec![RegName::Range {
            prefix: "%fd".into(),
            count: 6
        }],
        line: SrcLine(0),
    })));
    // The call sequence: a block with its own declarations and a call with lists.
    assert_eq!(
        body.iter()
            .filter(|s| matches!(s, Statement::BlockStart(_)))
            .count(),
        1
    );
    let call = first(calls, Op::is_call);
    assert_eq!(call.modifiers, ["uni"]);
    assert_eq!(
        call.operands,
        [
            Operand::List(vec![Operand::Symbol("retval0".into())]),
            Operand::Symbol("_Z6scaleddd".into()),
            Operand::List(vec![
                Operand::Symbol("param0".into()),
                Operand::Symbol("param1".into())
            ]),
        ]
    );
    // inlined_at line info, and the files table.
    let inlined: Vec<&Loc> = body
        .iter()
        .filter_map(|s| match s {
            Statement::Loc(l) if l.inlined.is_some() => Some(l),
            _ => None,
        })
        .collect();
    assert_eq!(inlined.len(), 1);
    assert_eq!((inlined[0].line, inlined[0].col), (9, 5));
    assert_eq!(
        inlined[0].inlined,
        Some(Inlined {
            function_name: "$L__info_string0".into(),
            file: 1,
            line: 17,
            col: 9
        })
    );
    assert_eq!(m.files().len(), 1);
    assert!(m.files()[0].1.ends_with("calls.cu"));
    assert!(m
        .items
        .iter()
        .any(|i| matches!(i, Item::Section { name, .. } if name == ".debug_str")));
}

#[test]
fn hand_written_constructs() {
    let m = fixture("hand_written");
    let vars: Vec<(&str, Option<&str>)> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) => Some((v.name.as_str(), v.init.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(
        vars,
        [
            ("table", Some("{ 0 , 0 , 128 , 63 , 0 , 0 , 0 , 64 }")),
            ("scale", Some("0d4000000000000000")),
            ("dyn_smem", None),
        ]
    );
    let ext = m.function("ext_fn").unwrap();
    assert_eq!(ext.linkage, [".extern"]);
    assert!(ext.body.is_none());
    assert_eq!(ext.returns.as_ref().map(Vec::len), Some(1));
    let k = m.function("extra").unwrap();
    assert_eq!(k.directives, [".maxntid 256, 1, 1", ".minnctapersm 2"]);
    assert_eq!(k.params[1].attrs, [".param", ".align", "8", ".b8"]);
    assert_eq!(k.params[1].dims, [Some(16)]);
    assert_eq!(m.kernels().count(), 1);
    let bra = first(k, |o| o.control() == Some(Control::Bra));
    assert_eq!(
        bra.guard,
        Some(Guard {
            negated: true,
            reg: "%p1".into()
        })
    );
    let st = first(k, |o| {
        o.kind == OpKind::Store(Space::Shared) && o.vector == 2 && o.ty == Some(ValueType::F32)
    });
    assert_eq!(
        st.operands[0],
        Operand::Addr {
            base: "%rd4".into(),
            offset: -8
        }
    );
    assert_eq!(st.defs(), Vec::<&str>::new());
    assert_eq!(st.uses(), ["%rd4", "%f5", "%f2"]);
    let atom = first(k, |o| matches!(o.kind, OpKind::Atom(_)));
    assert_eq!(atom.defs(), ["%r3"]);
    assert_eq!(atom.uses(), ["%rd2", "%r2"]);
    let selp = first(k, |o| o.kind == OpKind::Select);
    assert_eq!(
        selp.operands[2],
        Operand::Imm(Imm::Int {
            value: -1,
            hex: false,
            unsigned: false
        })
    );
    let and = first(k, |o| o.kind == OpKind::Bits(BitOp::And));
    assert_eq!(and.operands[2].to_string(), "0xFF");
}

#[test]
fn operands_are_typed() {
    let m = fixture("divsqrt.default");
    let k = m.function("divsqrt").unwrap();
    let ld = first(k, |o| {
        o.kind == OpKind::Load(Space::Global) && o.vector == 4 && o.ty == Some(ValueType::F32)
    });
    assert!(ld.has_mod("nc"));
    assert_eq!(
        ld.operands[0],
        Operand::Vector((1..=4).map(|n| Operand::Reg(format!("%f{n}"))).collect())
    );
    assert_eq!(
        ld.operands[1],
        Operand::Addr {
            base: "%rd8".into(),
            offset: 0
        }
    );
    assert_eq!(ld.vector_width(), 4);
    assert_eq!(ld.space(), "global");
    let mul = first(k, |o| plain(o, OpKind::Arith(Arith::Mul), ValueType::F32));
    assert_eq!(mul.operands[2], Operand::Imm(Imm::F32(0x3FB8AA3B)));
    let div = first(k, |o| {
        o.kind == OpKind::Div && o.ty == Some(ValueType::F64) && o.rounding == Some(Rounding::Rn)
    });
    assert_eq!(div.operands[2], Operand::Imm(Imm::F64(0x4008000000000000)));
    let bra = first(k, |o| o.control() == Some(Control::Bra));
    assert_eq!(
        bra.guard,
        Some(Guard {
            negated: false,
            reg: "%p1".into()
        })
    );
    assert_eq!(bra.operands, [Operand::Symbol("$L__BB0_2".into())]);
    let cvt = first(k, |o| {
        o.kind
            == OpKind::Convert {
                from: ValueType::F32,
                to: ValueType::U32,
            }
            && o.rounding == Some(Rounding::Rzi)
    });
    assert_eq!(cvt.types(), ["u32", "f32"]);
    let special = first(k, |o| matches!(o.kind, OpKind::Move { .. }));
    assert_eq!(special.operands[1], Operand::Reg("%ntid.x".into()));
    // Shared memory and an address with an offset, in loop_sum.
    let m = fixture("loop_sum.default");
    let k = m.function("loop_sum").unwrap();
    let shared = k
        .body
        .iter()
        .flatten()
        .find_map(|s| match s {
            Statement::Var(v) => Some(v),
            _ => None,
        })
        .unwrap();
    assert_eq!(shared.space(), ".shared");
    assert_eq!(shared.dims, [Some(1024)]);
    assert!(k
        .instructions()
        .any(|i| i.operands.contains(&Operand::Addr {
            base: "%rd20".into(),
            offset: 12
        })));
    assert!(k
        .body
        .iter()
        .flatten()
        .any(|s| matches!(s, Statement::Pragma(p, _) if p == &["\"nounroll\""])));
}

#[test]
fn ids_are_stable_and_fresh_ids_are_new() {
    let mut m = fixture("ray_step.default");
    let ids: Vec<InstId> = m
        .functions()
        .flat_map(|f| f.instructions().map(|i| i.id))
        .collect();
    assert_eq!(ids, (0..ids.len() as u32).map(InstId).collect::<Vec<_>>());
    let fresh = m.fresh_inst_id();
    assert_eq!(fresh, InstId(ids.len() as u32));
    assert_ne!(m.fresh_inst_id(), fresh);
}

#[test]
fn rewrites_print_and_parse_back() {
    // A rewrite adds a parameter, a fresh register and an instruction; the result still
    // round-trips and the old instruction ids are unchanged.
    let mut m = fixture("ray_step.default");
    let id = m.fresh_inst_id();
    let f = m.functions_mut().next().unwrap();
    f.params.push(Param::new(".u64", "ray_step_shadow"));
    let r = f.fresh_reg(".f64");
    assert_eq!(r, "%mf64_0");
    assert_eq!(f.fresh_reg(".f64"), "%mf64_1");
    let body = f.body.as_mut().unwrap();
    let at = body
        .iter()
        .position(|s| matches!(s, Statement::Inst(_)))
        .unwrap();
    body.insert(
        at,
        Statement::Inst(Instruction {
            id,
            guard: None,
            opcode: "mov".into(),
            modifiers: vec!["f64".into()],
            operands: vec![Operand::Reg(r), Operand::Imm(Imm::F64(0))],
            line: SrcLine(0),
        }),
    );
    let text = m.to_string();
    assert!(
        text.contains("mov.f64 \t%mf64_0, 0d0000000000000000;"),
        "{text}"
    );
    assert!(text.contains(".param .u64 ray_step_shadow"), "{text}");
    // In the rewritten model the old instructions keep their ids; the new one has a fresh id.
    let now: Vec<u32> = m
        .functions()
        .flat_map(|f| f.instructions().map(|i| i.id.0))
        .collect();
    assert_eq!(now[0], id.0);
    assert_eq!(now[1..], (0..id.0).collect::<Vec<_>>()[..]);
    // ptxas (when installed) accepts the rewritten module.
    if let Some(ptxas) = crate::ptxas::find() {
        crate::ptxas::assemble_with(&ptxas, &text, "sm_90")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    let back = parse(&text);
    assert!(back.diagnostics.is_empty(), "{:?}", back.diagnostics);
    let ids: Vec<u32> = back
        .module
        .functions()
        .flat_map(|f| f.instructions().map(|i| i.id.0))
        .collect();
    // Reparsing renumbers in text order: the inserted instruction is first.
    assert_eq!(ids[0], 0);
}

#[test]
fn malformed_lines_are_kept_verbatim_with_their_line() {
    let text = ".version 9.0\n.target sm_90\n.address_size 64\n\
        .visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .f32 %f<3>;\n\
        \tadd.f32 %f1, %f2, ;\n\t@ bogus;\n\t#weird stuff\n\tmul.f32 %f1, %f1, %f2;\n\tret;\n}\n\
        .mystery 1 2 3;\n";
    let p = parse(text);
    let lines: Vec<u32> = p.diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(lines, [9, 10, 11, 15], "{:?}", p.diagnostics);
    assert_eq!(p.diagnostics[0].text, "add.f32 %f1, %f2, ;");
    // The good instructions around the bad ones are still there.
    let k = p.module.function("k").unwrap();
    let ops: Vec<String> = k.instructions().map(|i| i.full_opcode()).collect();
    assert_eq!(ops, ["mul.f32", "ret"]);
    let printed = p.module.to_string();
    for d in &p.diagnostics {
        assert!(printed.contains(&d.text), "{} lost from\n{printed}", d.text);
    }
    let again = parse(&printed);
    assert_eq!(again.module, p.module);
    assert_eq!(again.diagnostics.len(), p.diagnostics.len());
    assert!(p.diagnostics[0].to_string().starts_with("line 9: "));
}

#[test]
fn raw_operands_are_kept_and_reported() {
    let text = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\
        \t.reg .f64 %fd<5>;\n\tadd.f64 %fd4, %fd3 0d3FF;\n\tret;\n}\n";
    let p = parse(text);
    assert_eq!(p.diagnostics.len(), 1, "{:?}", p.diagnostics);
    assert_eq!(p.diagnostics[0].line, 7);
    assert!(p.diagnostics[0].message.contains("'%fd3 0d3FF'"));
    let add = p
        .module
        .function("k")
        .unwrap()
        .instructions()
        .next()
        .unwrap();
    assert_eq!(add.operands[1], Operand::Raw("%fd3 0d3FF".into()));
    assert!(p.module.to_string().contains("add.f64 \t%fd4, %fd3 0d3FF;"));
}

#[test]
fn numbers() {
    use crate::parse::parse_number as n;
    assert_eq!(n("0f3F800000", false), Some(Imm::F32(0x3F80_0000)));
    assert_eq!(n("0F3F800000", true), Some(Imm::F32(0xBF80_0000)));
    assert_eq!(
        n("0d3FF0000000000000", false),
        Some(Imm::F64(1f64.to_bits()))
    );
    assert_eq!(
        n("42", true),
        Some(Imm::Int {
            value: -42,
            hex: false,
            unsigned: false
        })
    );
    assert_eq!(
        n("0xFFFFFFFFFFFFFFFF", false),
        Some(Imm::Int {
            value: u64::MAX as i128,
            hex: true,
            unsigned: false
        })
    );
    assert_eq!(
        n("7U", false),
        Some(Imm::Int {
            value: 7,
            hex: false,
            unsigned: true
        })
    );
    assert_eq!(n("1.5", false), Some(Imm::F64(1.5f64.to_bits())));
    assert_eq!(n("017", false), None);
    for imm in [
        Imm::F32(1),
        Imm::F64(2),
        Imm::Int {
            value: -255,
            hex: true,
            unsigned: false,
        },
    ] {
        let s = imm.to_string();
        let neg = s.starts_with('-');
        assert_eq!(n(s.trim_start_matches('-'), neg), Some(imm), "{s}");
    }
}

/// Set to `1` where ptxas must be present: its absence then fails the ptxas test.
const REQUIRE_PTXAS_ENV: &str = "MANTISSA_REQUIRE_PTXAS";

#[test]
fn ptxas_accepts_printed_ptx() {
    let Some(ptxas) = crate::ptxas::find() else {
        mantissa_gpu::testing::skip_or_fail(
            std::env::var(REQUIRE_PTXAS_ENV).is_ok_and(|v| v == "1"),
            REQUIRE_PTXAS_ENV,
            &crate::ptxas::PtxasError::NotFound,
        );
        return;
    };
    for (name, text) in FIXTURES {
        let printed = parse(text).module.to_string();
        let original = crate::ptxas::assemble_with(&ptxas, text, "sm_90")
            .unwrap_or_else(|e| panic!("{name} original: {e}"));
        let again = crate::ptxas::assemble_with(&ptxas, &printed, "sm_90")
            .unwrap_or_else(|e| panic!("{name} printed: {e}\n{printed}"));
        // Same code, so the same registers and spills.
        assert_eq!(original, again, "{name}");
    }
}

#[test]
fn fresh_nvrtc_kernels_parse_and_round_trip() {
    use mantissa_gpu::{Arch, FlagSet, Source, Target};
    let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    let sources = [
        ("loop_sum.cu", include_str!("../tests/fixtures/loop_sum.cu")),
        ("calls.cu", include_str!("../tests/fixtures/calls.cu")),
        ("divsqrt.cu", include_str!("../tests/fixtures/divsqrt.cu")),
        ("ray_step.cu", include_str!("../tests/fixtures/ray_step.cu")),
    ];
    for (name, text) in sources {
        for flags in FlagSet::ALL {
            let c = nvrtc
                .compile(
                    &Source::new(name, text),
                    flags,
                    Target::Ptx(Arch::new(9, 0)),
                )
                .unwrap_or_else(|e| panic!("{name} {flags}: {e}"));
            let p = parse(&c.ptx);
            assert!(
                p.diagnostics.is_empty(),
                "{name} {flags}: {:?}",
                p.diagnostics
            );
            assert_eq!(
                parse(&p.module.to_string()).module,
                p.module,
                "{name} {flags}"
            );
        }
    }
}

#[test]
fn mangled_input_never_panics() {
    // Deterministic mutations (cut a range, insert odd text) of every fixture: the parser must
    // return, and its printed output must parse again, whatever it is given.
    let inserts = [
        "{", "}", "(", ";", "\n", "\"", "é", "[%r1+", ".loc 1", "@!", "0f", "-", ":",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    for (name, text) in FIXTURES {
        for _ in 0..150 {
            let mut t = text.to_string();
            let mut at = next(t.len());
            while !t.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + next(40)).min(t.len());
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t.replace_range(at..end, inserts[next(inserts.len())]);
            let p = parse(&t);
            let printed = p.module.to_string();
            let again = parse(&printed);
            // Everything kept verbatim is still in the printed text (spacing aside: an
            // instruction with a raw operand is printed from its parts).
            let squeeze = |s: &str| s.split_whitespace().collect::<String>();
            let all = squeeze(&printed);
            for d in &p.diagnostics {
                // A raw operand keeps its own text; the rest of its instruction is typed.
                let kept = match d.message.strip_prefix("operand '") {
                    Some(m) => m.rsplit_once("' not understood").map_or(m, |(raw, _)| raw),
                    None => d.text.as_str(),
                };
                assert!(all.contains(&squeeze(kept)), "{name}: lost {kept:?}");
            }
            let _ = again.module.to_string();
        }
    }
}

#[test]
fn arithmetic_is_every_classified_instruction_but_sign_changes_and_conversions() {
    let ptx = ".visible .entry k()\n{\n\tadd.rn.f64 %fd1, %fd2, %fd3;\n\tmin.f32 %f1, %f2, %f3;\n\tdiv.full.f32 %f4, %f1, %f2;\n\tabs.f64 %fd4, %fd1;\n\tneg.f32 %f5, %f4;\n\tcvt.rn.f32.f64 %f6, %fd4;\n\tadd.s32 %r1, %r2, 1;\n}\n";
    let parsed = parse(ptx);
    let f = parsed.module.functions().next().unwrap();
    let arithmetic: Vec<String> = f
        .body
        .iter()
        .flatten()
        .filter_map(|s| match s {
            Statement::Inst(i) => census::classify(i),
            _ => None,
        })
        .filter(census::is_arithmetic)
        .map(|op| op.name)
        .collect();
    assert_eq!(arithmetic, ["add.rn.f64", "min.f32", "div.full.f32"]);
    assert!(
        !census::is_arithmetic_name("cvt.rn.f32.f64") && census::is_arithmetic_name("fma.rn.f64")
    );
}

#[test]
fn a_module_variable_s_space_follows_its_linkage() {
    let m = crate::parse(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .global .align 8 .f64 total;\n.global .u32 count;\n.extern .shared .align 16 .b8 dyn[];\n",
    )
    .module;
    let spaces: Vec<(&str, &str)> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) => Some((v.name.as_str(), v.space())),
            _ => None,
        })
        .collect();
    assert_eq!(
        spaces,
        [
            ("total", ".global"),
            ("count", ".global"),
            ("dyn", ".shared")
        ]
    );
}
