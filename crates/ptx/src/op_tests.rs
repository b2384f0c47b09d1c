//! Tests of op.rs: the decode and its predicates.

use super::*;
use crate::parse;

fn ops(body: &str) -> Vec<(String, Op)> {
    let text = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{body}\n}}\n"
    );
    let p = parse(&text);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    p.module
        .kernels()
        .flat_map(|f| f.instructions())
        .map(|i| (i.full_opcode(), decode(i)))
        .collect()
}

#[test]
fn decodes_kinds_types_and_modifiers() {
    let got = ops("fma.rn.ftz.f32 %f1, %f2, %f3, %f4;\n\
         mad.lo.s32 %r1, %r2, %r3, %r4;\n\
         mad.rn.f64 %fd1, %fd2, %fd3, %fd4;\n\
         div.full.f32 %f1, %f2, %f3;\n\
         div.s32 %r1, %r2, %r3;\n\
         cvt.rzi.sat.u32.f64 %r1, %fd1;\n\
         setp.ltu.and.f64 %p1, %fd1, %fd2, %p2;\n\
         ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];\n\
         mul.wide.s32 %rd1, %r1, 4;\n\
         mul.hi.u32 %r1, %r2, %r3;\n\
         setp.hi.u32 %p1, %r2, %r3;\n\
         mov.b64 %rd1, {%r1, %r2};\n\
         mov.b64 %rd1, %fd1;\n\
         st.global.f64 [%rd1], %fd1;\n\
         ex2.approx.ftz.f32 %f1, %f2;\n\
         shfl.sync.idx.b32 %r1, %r2, %r3, %r4, %r5;\n\
         vote.sync.ballot.b32 %r1, %p1, %r2;\n\
         redux.sync.max.u32 %r1, %r2, %r3;\n\
         activemask.b32 %r1;\n\
         bar.warp.sync -1;\n\
         bar.sync 0;");
    let k: Vec<&OpKind> = got.iter().map(|(_, o)| &o.kind).collect();
    assert_eq!(
        k,
        [
            &OpKind::Fma,
            &OpKind::Arith(Arith::Mad),
            &OpKind::Fma,
            &OpKind::Div,
            &OpKind::Arith(Arith::IntDiv),
            &OpKind::Convert {
                from: ValueType::F64,
                to: ValueType::U32
            },
            &OpKind::Compare(Cmp::Ltu),
            &OpKind::Load(Space::Shared),
            &OpKind::Arith(Arith::Mul),
            &OpKind::Arith(Arith::Mul),
            &OpKind::Compare(Cmp::Hi),
            &OpKind::Move { reinterpret: true },
            &OpKind::Move { reinterpret: false },
            &OpKind::Store(Space::Global),
            &OpKind::Approx(MathFn::Ex2),
            &OpKind::Warp(Warp::Shuffle(Shuffle::Idx)),
            &OpKind::Warp(Warp::Vote(Vote::Ballot)),
            &OpKind::Warp(Warp::Reduce(Reduce::Max)),
            &OpKind::Warp(Warp::ActiveMask),
            &OpKind::Warp(Warp::Sync),
            &OpKind::Control(Control::Barrier),
        ]
    );
    let fma = &got[0].1;
    assert_eq!(
        (fma.ty, fma.rounding, fma.ftz, fma.approx),
        (Some(ValueType::F32), Some(Rounding::Rn), true, false)
    );
    assert!(fma.is_float_arith() && fma.is_ieee());
    assert!(!got[1].1.is_float_arith());
    assert!(got[3].1.full && !got[3].1.is_ieee());
    let cvt = &got[5].1;
    assert_eq!((cvt.rounding, cvt.sat), (Some(Rounding::Rzi), true));
    assert_eq!(got[6].1.combine, Some(BoolOp::And));
    assert_eq!(got[7].1.vector, 4);
    assert_eq!(got[8].1.part, Some(Part::Wide));
    assert_eq!((got[9].1.part, got[10].1.part), (Some(Part::Hi), None));
    assert!(got[11].1.is_terminal() && !got[12].1.is_terminal());
    assert_eq!(got[13].1.writes, Writes::Nothing);
    assert!(got[14].1.approx && !got[14].1.is_ieee());
    assert_eq!(got[15].1.writes, Writes::First);
}

#[test]
fn value_types_round_trip_and_size() {
    for (t, n) in TYPE_NAMES {
        assert_eq!(ValueType::parse(n), Some(t));
        assert_eq!(t.name(), n);
        // Independent of the table: the digits of the name give the width, but for the
        // packed, tf32, fp8 and predicate types.
        let digits: String = n.chars().filter(char::is_ascii_digit).collect();
        let bits = match n {
            "pred" | "e4m3" | "e5m2" => 8,
            "f16x2" | "bf16x2" | "tf32" => 32,
            _ => digits.parse().unwrap_or(0),
        };
        assert_eq!(t.bits(), bits, "{n}");
    }
    assert_eq!(ValueType::parse("f128"), None);
}

#[test]
fn defs_and_uses_of_calls_stores_and_guards() {
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\
        @!%p1 st.global.f32 [%rd1+4], %f1;\n\
        call.uni (retval0), f, (param0, param1);\n\
        call.uni f, (param0);\n\
        ld.global.v2.f32 {%f1, %f2}, [%rd2];\n\
        setp.lt.f32 %p1|%p2, %f1, %f2;\n}\n";
    let m = parse(text).module;
    let got: Vec<(Vec<&str>, Vec<&str>)> = m
        .kernels()
        .flat_map(|f| f.instructions())
        .map(|i| defs_uses(i, &decode(i)))
        .collect();
    assert_eq!(got[0], (vec![], vec!["%p1", "%rd1", "%f1"]));
    assert_eq!(got[1].1, Vec::<&str>::new());
    assert_eq!(got[3], (vec!["%f1", "%f2"], vec!["%rd2"]));
    assert_eq!(got[4].1, vec!["%f1", "%f2"]);
}

#[test]
fn predicates_of_calls_params_and_control() {
    let got = ops("call.uni (retval0), f, (param0);\n\
         ld.param.f64 %fd1, [retval0];\n\
         st.param.f64 [param0], %fd1;\n\
         ld.global.f64 %fd1, [%rd1];\n\
         ldu.global.f64 %fd1, [%rd1];\n\
         ret;\n\
         exit;\n\
         trap;\n\
         bra $L1;\n\
         bar.sync 0;\n\
         setp.lt.f32 %p1, %f1, %f2;\n\
         set.lt.u32.f32 %r1, %f1, %f2;\n\
         ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r2];\n\
         st.shared.f32 [%r2], %f1;\n\
         abs.f32 %f1, %f2;\n\
         add.rn.f32 %f1, %f2, %f3;\n\
         $L1:\n\
         cvt.rn.f32.f64 %f1, %fd1;");
    let o: Vec<&Op> = got.iter().map(|(_, o)| o).collect();
    let which = |p: fn(&Op) -> bool| -> Vec<usize> { (0..o.len()).filter(|&k| p(o[k])).collect() };
    assert_eq!(which(Op::is_call), [0]);
    assert_eq!(which(Op::is_param_load), [1]);
    assert_eq!(which(Op::is_param_store), [2]);
    assert_eq!(which(Op::is_param_access), [1, 2]);
    assert_eq!(which(Op::is_return), [5, 6]);
    assert_eq!(which(Op::transfers_control), [5, 6, 7, 8]);
    assert_eq!(which(Op::is_predicate_compare), [10]);
    assert!(o[11].value_result && matches!(o[11].kind, OpKind::Compare(Cmp::Lt)));
    assert_eq!(which(Op::reads_memory_only), [1, 3, 4, 12]);
    assert_eq!(which(Op::counts_as_arithmetic), [15]);
}

#[test]
fn names_decode_as_the_instructions_they_name() {
    let got = ops("fma.rn.f64 %fd1, %fd2, %fd3, %fd4;\n\
         cvt.rn.f32.f64 %f1, %fd1;\n\
         ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];\n\
         mad.lo.s32 %r1, %r2, %r3, %r4;\n\
         div.full.f32 %f1, %f2, %f3;");
    for (name, op) in &got {
        assert_eq!(&decode_name(name), op, "{name}");
    }
    // What the census and the study count: conversions and sign changes are not arithmetic.
    assert!(decode_name("div.full.f32").counts_as_arithmetic());
    assert!(decode_name("mad.f32").counts_as_arithmetic());
    assert!(!decode_name("cvt.rn.f32.f64").counts_as_arithmetic());
    assert!(!decode_name("cvt.f64").counts_as_arithmetic());
    assert!(!decode_name("neg.f64").counts_as_arithmetic());
    assert!(!decode_name("copysign.f32").counts_as_arithmetic());
    assert!(!decode_name("add.s32").counts_as_arithmetic());
}
