//! Tests of promote.rs: every fixture and compiled example promoted (parses back, assembles
//! with ptxas when it is installed), each eligible form's f64 form, and what promoted code
//! computes in the interpreter ([`crate::interp`]): single operations exactly the IEEE f32
//! result over adversarial inputs (fma: the f64 fma rounded again), a chain that cancels in f32
//! the f64 chain's answer rounded once, and promoting then demoting everything the original's
//! result, bit for bit, for any subset.

use super::*;
use crate::demote::{demote, same_code, DemoteSet};
use crate::interp::{run, Arg, Launch, Memory};
use crate::pass::demote::tests::{all_fixtures, assembles, module, ptxas};
use crate::test_support::arith_like;

/// The compiled examples (tests/fixtures/promote, see its README): f32 programs.
const EXAMPLES: [(&str, &str); 17] = [
    (
        "projector.default",
        include_str!("../../../tests/fixtures/promote/projector.default.ptx"),
    ),
    (
        "projector.strict",
        include_str!("../../../tests/fixtures/promote/projector.strict.ptx"),
    ),
    (
        "projector.fast",
        include_str!("../../../tests/fixtures/promote/projector.fast.ptx"),
    ),
    (
        "expsin.default",
        include_str!("../../../tests/fixtures/promote/expsin.default.ptx"),
    ),
    (
        "expsin.strict",
        include_str!("../../../tests/fixtures/promote/expsin.strict.ptx"),
    ),
    (
        "expsin.fast",
        include_str!("../../../tests/fixtures/promote/expsin.fast.ptx"),
    ),
    (
        "dbt_ray_step.default",
        include_str!("../../../tests/fixtures/promote/dbt_ray_step.default.ptx"),
    ),
    (
        "dbt_ray_step.strict",
        include_str!("../../../tests/fixtures/promote/dbt_ray_step.strict.ptx"),
    ),
    (
        "dbt_ray_step.fast",
        include_str!("../../../tests/fixtures/promote/dbt_ray_step.fast.ptx"),
    ),
    (
        "gauss_f32.nvcc",
        include_str!("../../../tests/fixtures/promote/gauss_f32.nvcc.ptx"),
    ),
    (
        "gauss_f32.nvcc.fast",
        include_str!("../../../tests/fixtures/promote/gauss_f32.nvcc.fast.ptx"),
    ),
    (
        "heat2d_f32.nvcc",
        include_str!("../../../tests/fixtures/promote/heat2d_f32.nvcc.ptx"),
    ),
    (
        "heat2d_f32.nvcc.fast",
        include_str!("../../../tests/fixtures/promote/heat2d_f32.nvcc.fast.ptx"),
    ),
    (
        "nbody_f32.nvcc",
        include_str!("../../../tests/fixtures/promote/nbody_f32.nvcc.ptx"),
    ),
    (
        "nbody_f32.nvcc.fast",
        include_str!("../../../tests/fixtures/promote/nbody_f32.nvcc.fast.ptx"),
    ),
    (
        "options_f32.nvcc",
        include_str!("../../../tests/fixtures/promote/options_f32.nvcc.ptx"),
    ),
    (
        "options_f32.nvcc.fast",
        include_str!("../../../tests/fixtures/promote/options_f32.nvcc.fast.ptx"),
    ),
];

fn every_module() -> Vec<(&'static str, &'static str)> {
    let mut v = all_fixtures();
    v.extend(EXAMPLES);
    v
}

fn promoted(m: &Module, set: &PromoteSet) -> Promoted {
    promote(m, set).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_empty_set_gives_the_input_back() {
    for (name, text) in every_module() {
        let m = module(text);
        let p = promoted(&m, &PromoteSet::empty());
        assert_eq!(p.module, m, "{name}");
        assert_eq!(p.report.promoted(), 0, "{name}");
        assert!(p.report.changes.is_empty(), "{name}");
    }
}

#[test]
fn promoting_everything_parses_back_leaves_no_eligible_f32_arithmetic_and_assembles() {
    let ptxas = ptxas();
    let mut total = 0;
    for (name, text) in every_module() {
        let m = module(text);
        let eligible: HashMap<InstId, bool> = candidates(&m)
            .into_iter()
            .map(|c| (c.id, c.reason.is_none()))
            .collect();
        let p = promoted(&m, &PromoteSet::all());
        let want = eligible.values().filter(|e| **e).count() as u32;
        assert_eq!(p.report.promoted(), want, "{name}");
        total += want;
        let printed = p.module.to_string();
        let back = module(&printed);
        assert!(same_code(&back, &p.module), "{name}");
        // What is left in f32 arithmetic was ineligible in the input: nothing eligible was
        // skipped (inserted instructions have new ids, and are conversions or f64).
        for f in p.module.functions() {
            for i in f.instructions() {
                if arith_like(&i.decode(), ValueType::F32) {
                    // Ineligible, or in a math-library function (not listed).
                    assert_ne!(eligible.get(&i.id), Some(&true), "{name}: {i}");
                }
            }
        }
        // Every promoted instruction is listed as a change, with its site.
        let listed = p.report.changes.iter().filter(|c| c.promoted).count() as u32;
        assert_eq!(listed, p.report.promoted(), "{name}");
        assembles(&format!("{name} promoted"), &printed, &ptxas);
    }
    // The f32 examples have plenty to promote.
    assert!(total > 1000, "{total}");
}

/// Inserted instructions directly follow the one they serve, under its `.loc` and guard.
#[test]
fn inserted_instructions_follow_their_instruction_under_its_loc_and_guard() {
    for (name, text) in every_module() {
        let m = module(text);
        let p = promoted(&m, &PromoteSet::all());
        for f in p.module.functions() {
            let located = crate::census::located(f);
            let mut anchor: Option<(&Instruction, Option<&Loc>)> = None;
            for &(inst, loc) in &located {
                if inst.id.0 < m.next_inst_id {
                    anchor = Some((inst, loc));
                    continue;
                }
                // An entry conversion (of a register never written) has no anchor.
                let Some((a, aloc)) = anchor else { continue };
                assert_eq!(loc, aloc, "{name}: {inst} after {a}");
                assert_eq!(inst.guard, a.guard, "{name}: {inst} after {a}");
                assert!(
                    matches!(
                        inst.decode().kind,
                        OpKind::Convert { .. }
                            | OpKind::Rcp
                            | OpKind::Arith(Arith::Max | Arith::Min)
                    ),
                    "{name}: {inst}"
                );
            }
        }
    }
}

/// Every eligible form, written by hand, with the f64 form it must become; the ineligible ones
/// around them stay. Bit operations have their own line (as in the demotion tests).
const OPS: &str = ".version 8.0
.target sm_90
.address_size 64

.visible .entry ops(
	.param .u64 ops_param_0
)
{
	.reg .pred %p<4>;
	.reg .b32 %r<6>;
	.reg .f32 %f<40>;
	.reg .b64 %rd<4>;
	.reg .f64 %fd<4>;

	.loc 1 1 0
	ld.param.u64 %rd1, [ops_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	ld.global.f32 %f2, [%rd2+4];
	mad.rn.f32 %f3, %f1, %f2, 0f3F800000;
	fma.rn.ftz.sat.f32 %f4, %f3, %f2, %f1;
	rsqrt.approx.ftz.f32 %f5, %f4;
	rcp.approx.ftz.f32 %f6, %f5;
	rcp.rn.f32 %f7, %f6;
	sqrt.approx.f32 %f8, %f7;
	sqrt.rn.ftz.f32 %f9, %f8;
	div.approx.f32 %f10, %f9, %f2;
	div.full.ftz.f32 %f11, %f10, %f2;
	div.rn.f32 %f12, %f11, %f2;
	min.ftz.f32 %f13, %f12, %f1;
	max.f32 %f14, %f13, 0f00000000;
	neg.f32 %f15, %f14;
	abs.ftz.f32 %f16, %f15;
	add.f32 %f17, %f16, %f1;
	sub.rn.f32 %f18, %f17, %f2;
	mul.ftz.f32 %f19, %f18, %f18;
	add.sat.f32 %f20, %f19, 0d3FB999999999999A;
	setp.ltu.ftz.f32 %p1, %f20, %f19;
	setp.gt.and.f32 %p2, %f20, %f1, %p1;
	selp.f32 %f21, %f20, %f19, %p2;
	mov.f32 %f22, %f21;
	mov.f32 %f23, 0f3DCCCCCD;
	cvt.rzi.s32.f32 %r1, %f22;
	cvt.rni.sat.u32.f32 %r2, %f22;
	cvt.rn.f32.s32 %f24, %r1;
	cvt.rn.f32.u32 %f25, %r2;
	cvt.rmi.f32.f32 %f26, %f24;
	cvt.sat.f32.f32 %f27, %f26;
	cvt.f64.f32 %fd1, %f27;
	mul.f64 %fd2, %fd1, %fd1;
	cvt.rn.f32.f64 %f28, %fd2;
	add.f32 %f29, %f28, %f25;
	ex2.approx.ftz.f32 %f30, %f29;
	mul.rz.f32 %f31, %f30, %f23;
	fma.rm.f32 %f32, %f31, %f23, %f29;
	@%p2 add.f32 %f32, %f32, %f31;
	.loc 1 2 0
	mov.b32 %r3, %f32;
	testp.finite.f32 %p3, %f32;
	.loc 1 3 0
	st.global.f32 [%rd2], %f32;
	st.global.u32 [%rd2+4], %r3;
	st.global.f64 [%rd2+8], %fd2;
	ret;
}
	.file 1 \"ops.cu\"
";

#[test]
fn every_eligible_form_maps_to_its_f64_form_and_assembles() {
    let m = module(OPS);
    let p = promoted(&m, &PromoteSet::all());
    let before: HashMap<InstId, String> = m
        .kernels()
        .flat_map(|f| f.instructions())
        .map(|i| (i.id, format!("{}{}", guard_text(i), i.full_opcode())))
        .collect();
    // Each original instruction, then what follows it up to the next original one.
    let mut mapped: Vec<(String, Vec<String>)> = Vec::new();
    for i in p.module.kernels().flat_map(|f| f.instructions()) {
        match before.get(&i.id) {
            Some(b) => mapped.push((b.clone(), vec![i.full_opcode()])),
            None => {
                if let Some(last) = mapped.last_mut() {
                    last.1.push(i.full_opcode())
                }
            }
        }
    }
    let want: [(&str, &[&str]); 40] = [
        ("ld.global.f32", &["ld.global.f32", "cvt.f64.f32"]),
        ("ld.global.f32", &["ld.global.f32", "cvt.f64.f32"]),
        ("mad.rn.f32", &["fma.rn.f64"]),
        ("fma.rn.ftz.sat.f32", &["fma.rn.f64", "max.f64", "min.f64"]),
        ("rsqrt.approx.ftz.f32", &["sqrt.rn.f64", "rcp.rn.f64"]),
        ("rcp.approx.ftz.f32", &["rcp.rn.f64"]),
        ("rcp.rn.f32", &["rcp.rn.f64"]),
        ("sqrt.approx.f32", &["sqrt.rn.f64"]),
        ("sqrt.rn.ftz.f32", &["sqrt.rn.f64"]),
        ("div.approx.f32", &["div.rn.f64"]),
        ("div.full.ftz.f32", &["div.rn.f64"]),
        ("div.rn.f32", &["div.rn.f64"]),
        ("min.ftz.f32", &["min.f64"]),
        ("max.f32", &["max.f64"]),
        ("neg.f32", &["neg.f64"]),
        ("abs.ftz.f32", &["abs.f64"]),
        ("add.f32", &["add.f64"]),
        ("sub.rn.f32", &["sub.rn.f64"]),
        ("mul.ftz.f32", &["mul.f64"]),
        ("add.sat.f32", &["add.f64", "max.f64", "min.f64"]),
        ("setp.ltu.ftz.f32", &["setp.ltu.f64"]),
        ("setp.gt.and.f32", &["setp.gt.and.f64"]),
        ("selp.f32", &["selp.f64"]),
        ("mov.f32", &["mov.f64"]),
        // Read by the directed roundings in f32.
        ("mov.f32", &["mov.f64", "cvt.rn.f32.f64"]),
        ("cvt.rzi.s32.f32", &["cvt.rzi.s32.f64"]),
        ("cvt.rni.sat.u32.f32", &["cvt.rni.sat.u32.f64"]),
        ("cvt.rn.f32.s32", &["cvt.rn.f64.s32"]),
        ("cvt.rn.f32.u32", &["cvt.rn.f64.u32"]),
        ("cvt.rmi.f32.f32", &["cvt.rmi.f64.f64"]),
        ("cvt.sat.f32.f32", &["mov.f64", "max.f64", "min.f64"]),
        ("cvt.f64.f32", &["mov.f64"]),
        ("mul.f64", &["mul.f64"]),
        ("cvt.rn.f32.f64", &["mov.f64"]),
        // Leaves the chain: the special function reads it in f32.
        ("add.f32", &["add.f64", "cvt.rn.f32.f64"]),
        ("ex2.approx.ftz.f32", &["ex2.approx.ftz.f32"]),
        // Directed roundings stay f32; their results enter the (guarded) add.
        ("mul.rz.f32", &["mul.rz.f32", "cvt.f64.f32"]),
        ("fma.rm.f32", &["fma.rm.f32", "cvt.f64.f32"]),
        ("@%p2 add.f32", &["add.f64", "cvt.rn.f32.f64"]),
        ("mov.b32", &["mov.b32"]),
    ];
    // After the parameter load and the address conversion.
    let mapped = &mapped[2..];
    for (k, (from, to)) in want.iter().enumerate() {
        let (b, a) = &mapped[k];
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        assert_eq!((b.as_str(), a.as_slice()), (*from, *to), "#{k}: {mapped:?}");
    }
    let printed = p.module.to_string();
    // Immediates: 1.0f widened exactly, 0.1 (an f64 literal in an f32 add) first rounded to
    // f32 as the f32 instruction used it, 0.1f widened; the clamp bounds.
    assert!(printed.contains("0d3FF0000000000000"), "{printed}");
    let tenth = f64::from(0.1f32).to_bits();
    assert!(printed.contains(&format!("0d{tenth:016X}")), "{printed}");
    assert!(!printed.contains("0d3FB999999999999A"), "{printed}");
    assert!(printed.contains("0d0000000000000000"), "{printed}");
    // No .ftz, .approx or .full is left on an f64 instruction.
    for i in p.module.kernels().flat_map(|f| f.instructions()) {
        if i.has_mod("f64") && !i.has_mod("f32") {
            // A conversion to an integer keeps its `.sat`.
            let sat = if matches!(i.decode().kind, OpKind::Convert { .. }) {
                "-"
            } else {
                "sat"
            };
            for m in ["ftz", "approx", "full", sat] {
                assert!(!i.has_mod(m), "{i}");
            }
        }
    }
    // The special function and the directed roundings are noted; the load is not.
    let notes = p.report.notes.join("\n");
    assert!(
        notes.contains("ex2.approx.ftz.f32: a hardware special function"),
        "{notes}"
    );
    assert!(notes.contains("mul.rz.f32: a directed rounding"), "{notes}");
    assert!(notes.contains("fma.rm.f32: a directed rounding"), "{notes}");
    assert!(!notes.contains("a load"), "{notes}");
    // 33 promoted: every instruction of the table but the loads, the f64 mul, ex2, the
    // directed roundings and mov.b32.
    assert_eq!(p.report.promoted(), 33, "{printed}");
    // Into f64: after the two loads, mul.rz and fma.rm (read by the guarded add); out: %f23
    // for the directed roundings, %f29 for ex2 and fma.rm, %f32 for the bit move, the test
    // and the store.
    assert_eq!(p.report.conversions(), (4, 3), "{printed}");
    assembles("ops", &printed, &ptxas());
}

fn guard_text(i: &Instruction) -> String {
    i.guard.as_ref().map_or(String::new(), |g| {
        format!("@{}{} ", if g.negated { "!" } else { "" }, g.reg)
    })
}

/// A kernel of one thread per case: reads three f32 (a, b, c) at 12·i, computes `body` (which
/// reads %f1..%f3 and writes %f4), writes %f4 at 4·i.
fn case_kernel(body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry op(\n\t.param .u64 op_param_0,\n\t.param .u64 op_param_1\n)\n{{\n\t.reg .pred %p<3>;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<8>;\n\n\t.loc 1 1 0\n\tld.param.u64 %rd1, [op_param_0];\n\tld.param.u64 %rd2, [op_param_1];\n\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n\tmad.lo.s32 %r4, %r2, %r3, %r1;\n\tmul.wide.u32 %rd5, %r4, 12;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tld.global.f32 %f1, [%rd6];\n\tld.global.f32 %f2, [%rd6+4];\n\tld.global.f32 %f3, [%rd6+8];\n\t.loc 1 2 0\n{body}\n\t.loc 1 3 0\n\tmul.wide.u32 %rd7, %r4, 4;\n\tadd.s64 %rd7, %rd4, %rd7;\n\tst.global.f32 [%rd7], %f4;\n\tret;\n}}\n\t.file 1 \"op.cu\"\n"
    )
}

/// Runs a [`case_kernel`] on `cases` (one thread each) in the interpreter.
fn run_cases(m: &Module, cases: &[[f32; 3]]) -> Vec<f32> {
    let mut mem = Memory::new();
    let flat: Vec<f32> = cases.iter().flatten().copied().collect();
    let input = mem.f32s(&flat);
    let output = mem.f32s(&vec![0.0; cases.len()]);
    let threads = 64u32;
    let blocks = (cases.len() as u32).div_ceil(threads);
    // Threads past the cases read and write within padded buffers.
    let padded = (blocks * threads) as usize;
    let input = if padded > cases.len() {
        let mut f = flat.clone();
        f.resize(padded * 3, 0.0);
        mem.f32s(&f)
    } else {
        input
    };
    let output = if padded > cases.len() {
        mem.f32s(&vec![0.0; padded])
    } else {
        output
    };
    run(
        m,
        "op",
        Launch::linear(blocks, threads),
        &[Arg::u64(input), Arg::u64(output)],
        &mut mem,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut out = mem
        .read_f32s(output, padded)
        .unwrap_or_else(|e| panic!("{e}"));
    out.truncate(cases.len());
    out
}

/// Values where roundings go wrong: zeros, subnormals, the normal range's ends, infinities,
/// NaN, neighbours of 1 (ties: 1 + 2^-24 is halfway between 1 and its successor), thirds and
/// tenths, huge and tiny exponents.
fn adversarial() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::from_bits(1),
        f32::from_bits(3),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        f32::EPSILON / 2.0,
        f32::EPSILON,
        0.1,
        1.0 / 3.0,
        -7.0 / 3.0,
        3.0,
        1.5e38,
        1.2e-38,
        16_777_216.0,
        1e8,
        0.5,
        2.0,
    ];
    // A few seeded random values over the whole range of bit patterns.
    let mut s = 0x9E37_79B9u32;
    for _ in 0..12 {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        v.push(f32::from_bits(s));
    }
    v
}

/// Whether `got` is `want`: the same bits, or both NaN (NaN payloads are the hardware's), or
/// with `zero_sign_free`, both zeros (min/max and clamps may pick either zero).
fn same(got: f32, want: f32, zero_sign_free: bool) -> bool {
    got.to_bits() == want.to_bits()
        || (got.is_nan() && want.is_nan())
        || (zero_sign_free && got == 0.0 && want == 0.0)
}

/// A single promoted operation on f32 values, rounded back once, gives exactly the IEEE f32
/// result (53 ≥ 2·24 + 2), with `.ftz` gone and approximate forms correctly rounded; fma gives
/// the f64 fma rounded again, which differs from the f32 fma on a constructed double-rounding
/// case.
#[test]
fn single_promoted_operations_round_exactly_like_ieee_f32() {
    let values = adversarial();
    let pairs: Vec<[f32; 3]> = values
        .iter()
        .flat_map(|&a| values.iter().map(move |&b| [a, b, 0.0]))
        .collect();
    let clamp = |x: f32| if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    type Case = (&'static str, Box<dyn Fn(f32, f32, f32) -> f32>, bool);
    let cases: Vec<Case> = vec![
        ("add.f32 %f4, %f1, %f2;", Box::new(|a, b, _| a + b), false),
        (
            "add.rn.ftz.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a + b),
            false,
        ),
        ("sub.f32 %f4, %f1, %f2;", Box::new(|a, b, _| a - b), false),
        (
            "mul.ftz.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a * b),
            false,
        ),
        (
            "mul.rn.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a * b),
            false,
        ),
        (
            "div.rn.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a / b),
            false,
        ),
        (
            "div.approx.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a / b),
            false,
        ),
        (
            "div.full.ftz.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a / b),
            false,
        ),
        (
            "rcp.approx.ftz.f32 %f4, %f1;",
            Box::new(|a, _, _| 1.0 / a),
            false,
        ),
        ("rcp.rn.f32 %f4, %f1;", Box::new(|a, _, _| 1.0 / a), false),
        ("sqrt.rn.f32 %f4, %f1;", Box::new(|a, _, _| a.sqrt()), false),
        (
            "sqrt.approx.ftz.f32 %f4, %f1;",
            Box::new(|a, _, _| a.sqrt()),
            false,
        ),
        // Two correctly rounded f64 steps, then rounded to f32.
        (
            "rsqrt.approx.f32 %f4, %f1;",
            Box::new(|a, _, _| (1.0 / f64::from(a).sqrt()) as f32),
            false,
        ),
        (
            "min.ftz.f32 %f4, %f1, %f2;",
            Box::new(|a, b, _| a.min(b)),
            true,
        ),
        ("max.f32 %f4, %f1, %f2;", Box::new(|a, b, _| a.max(b)), true),
        ("neg.ftz.f32 %f4, %f1;", Box::new(|a, _, _| -a), false),
        ("abs.f32 %f4, %f1;", Box::new(|a, _, _| a.abs()), false),
        (
            "add.sat.f32 %f4, %f1, %f2;",
            Box::new(move |a, b, _| clamp(a + b)),
            true,
        ),
        (
            "setp.lt.f32 %p1, %f1, %f2;\n\tselp.f32 %f4, %f1, %f2, %p1;",
            Box::new(|a, b, _| if a < b { a } else { b }),
            false,
        ),
        // Through an integer and back (f32 → s32 saturates; NaN → 0).
        (
            "cvt.rzi.s32.f32 %r5, %f1;\n\tcvt.rn.f32.s32 %f4, %r5;",
            // Rust's `as` truncates, saturates and sends NaN to 0, as cvt.rzi does.
            Box::new(|a, _, _| a as i32 as f32),
            false,
        ),
    ];
    for (body, want, zero_sign_free) in &cases {
        let m = module(&case_kernel(body));
        let p = promoted(&m, &PromoteSet::all());
        assert!(p.report.promoted() >= 1, "{body}");
        let got = run_cases(&p.module, &pairs);
        for (c, g) in pairs.iter().zip(&got) {
            let w = want(c[0], c[1], c[2]);
            assert!(
                same(*g, w, *zero_sign_free),
                "{body} ({:e}, {:e}): promoted {g:e} ({:#x}), IEEE f32 {w:e} ({:#x})",
                c[0],
                c[1],
                g.to_bits(),
                w.to_bits()
            );
        }
    }
}

/// fma: the promoted one computes the f64 fma of the operands and rounds that to f32. It is
/// the f32 fma but where the exact a·b + c lies within half an f64 ulp of an f32 midpoint:
/// a = 2^-12(1 + 2^-15), b = 2^-12(1 - 2^-15), c = 1 + 2^-23 give 1 + 2^-23 + 2^-24 - 2^-54,
/// which f32 rounds down to c, and f64 rounds to the midpoint, which then ties to even, up.
#[test]
fn a_promoted_fma_rounds_twice() {
    let values = adversarial();
    let mut triples: Vec<[f32; 3]> = Vec::new();
    for (k, &a) in values.iter().enumerate() {
        for &b in &values {
            triples.push([a, b, values[(k * 7 + 3) % values.len()]]);
        }
    }
    let a = (1.0 + 2f32.powi(-15)) * 2f32.powi(-12);
    let b = (1.0 - 2f32.powi(-15)) * 2f32.powi(-12);
    let c = 1.0 + 2f32.powi(-23);
    triples.push([a, b, c]);
    let m = module(&case_kernel("fma.rn.f32 %f4, %f1, %f2, %f3;"));
    let p = promoted(&m, &PromoteSet::all());
    let got = run_cases(&p.module, &triples);
    for (t, g) in triples.iter().zip(&got) {
        let twice = f64::from(t[0]).mul_add(f64::from(t[1]), f64::from(t[2])) as f32;
        assert!(same(*g, twice, false), "{t:?}: {g:e} vs {twice:e}");
        // Within one f32 ulp of the f32 fma.
        let once = t[0].mul_add(t[1], t[2]);
        if once.is_finite() && g.is_finite() {
            assert!(
                (g.to_bits() as i64 - once.to_bits() as i64).abs() <= 1,
                "{t:?}"
            );
        }
    }
    let last = got[got.len() - 1];
    assert_eq!(a.mul_add(b, c), c);
    assert_eq!(last, 1.0 + 2f32.powi(-22));
}

/// `(x + 1e8) - 1e8` and `x · 3 / 3` kept in registers: in f32 the first loses x's digits
/// (1e8's ulp is 8); promoted, the chain is computed in f64 and rounded once.
#[test]
fn a_chain_that_cancels_in_f32_gets_the_f64_answer_rounded_once() {
    let body = "add.f32 %f5, %f1, 0f4CBEBC20;\n\tsub.f32 %f6, %f5, 0f4CBEBC20;\n\tmul.f32 %f7, %f6, %f2;\n\tdiv.rn.f32 %f4, %f7, %f2;";
    let m = module(&case_kernel(body));
    let p = promoted(&m, &PromoteSet::all());
    assert_eq!(p.report.promoted(), 4);
    // In: the two loads read by promoted instructions; out: only the stored result.
    assert_eq!(p.report.conversions(), (2, 1));
    let cases: Vec<[f32; 3]> = [1.2345f32, 3.0, -0.7, 1e-3, 77.125]
        .iter()
        .map(|&x| [x, 3.0, 0.0])
        .collect();
    let f32_result = run_cases(&m, &cases);
    let got = run_cases(&p.module, &cases);
    let mut differ = 0;
    for ((c, g), f) in cases.iter().zip(&got).zip(&f32_result) {
        let (x, y) = (f64::from(c[0]), f64::from(c[1]));
        let want = ((((x + 1e8) - 1e8) * y) / y) as f32;
        assert_eq!(g.to_bits(), want.to_bits(), "{c:?}: {g} vs {want}");
        assert_eq!(*f, (((c[0] + 1e8) - 1e8) * c[1]) / c[1], "{c:?}");
        differ += usize::from(g != f);
    }
    assert!(differ >= 4, "{got:?} vs {f32_result:?}");
    assembles("chain", &p.module.to_string(), &ptxas());
}

/// A serial sum in a loop (the accumulator loop-carried, defined before the loop and in it):
/// promoted, it is the f64 serial sum rounded once at the store.
const SUM: &str = ".version 8.0
.target sm_90
.address_size 64

.visible .entry sum(
	.param .u64 sum_param_0,
	.param .u64 sum_param_1,
	.param .u32 sum_param_2
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<6>;

	.loc 1 1 0
	ld.param.u64 %rd1, [sum_param_0];
	ld.param.u64 %rd2, [sum_param_1];
	ld.param.u32 %r1, [sum_param_2];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.f32 %f1, 0f00000000;
	mov.u32 %r2, 0;
$L__BB0_1:
	.loc 1 2 0
	mul.wide.u32 %rd5, %r2, 4;
	add.s64 %rd5, %rd3, %rd5;
	ld.global.f32 %f2, [%rd5];
	add.f32 %f1, %f1, %f2;
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, %r1;
	@%p1 bra $L__BB0_1;
	.loc 1 3 0
	st.global.f32 [%rd4], %f1;
	ret;
}
	.file 1 \"sum.cu\"
";

#[test]
fn a_serial_sum_is_the_f64_sum_rounded_once() {
    let m = module(SUM);
    let p = promoted(&m, &PromoteSet::all());
    assert_eq!(p.report.promoted(), 2);
    // In: the loaded element. Out: after both defs of the accumulator (its f32 form is
    // stored after the loop), as demotion does.
    assert_eq!(p.report.conversions(), (1, 2));
    let mut data = vec![1e8f32];
    data.extend(std::iter::repeat_n(1.0f32, 999));
    data.extend([0.1, -1e8, 1.0 / 3.0]);
    let sum = |m: &Module| {
        let mut mem = Memory::new();
        let a = mem.f32s(&data);
        let out = mem.f32s(&[0.0]);
        run(
            m,
            "sum",
            Launch::single(),
            &[Arg::u64(a), Arg::u64(out), Arg::i32(data.len() as i32)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        mem.read_f32s(out, 1).unwrap_or_else(|e| panic!("{e}"))[0]
    };
    let want = data.iter().fold(0f64, |s, &x| s + f64::from(x)) as f32;
    let in_f32 = data.iter().fold(0f32, |s, &x| s + x);
    assert_eq!(sum(&m), in_f32);
    assert_eq!(sum(&p.module), want);
    assert!(
        (want - 999.4333).abs() < 1e-3 && in_f32.abs() < 1.0,
        "{want} {in_f32}"
    );
    assembles("sum", &p.module.to_string(), &ptxas());
}

/// Kernels the interpreter runs whole (IEEE operations only): the chain and sum kernels and
/// one with a join point, a guarded def, a comparison and conversions.
const JOIN: &str = "setp.gt.f32 %p1, %f1, %f2;\n\tmul.f32 %f5, %f1, %f3;\n\t@%p1 sub.f32 %f5, %f1, %f2;\n\t@!%p1 add.f32 %f6, %f5, 0f3F000000;\n\t@%p1 mov.f32 %f6, %f2;\n\tfma.rn.f32 %f7, %f6, %f5, %f3;\n\tcvt.rzi.s32.f32 %r5, %f7;\n\tcvt.rn.f32.s32 %f6, %r5;\n\tmov.b32 %r5, %f7;\n\tadd.s32 %r5, %r5, 1;\n\tmov.b32 %f5, %r5;\n\tmax.f32 %f4, %f5, %f6;";

/// Promoting any subset, then demoting everything, computes exactly what the original does:
/// demotion gives every promoted instruction its f32 form back and makes the conversions
/// copies, so any def whose conversion is missing (a form out of sync) shows.
#[test]
fn promoting_any_subset_then_demoting_everything_computes_what_the_original_does() {
    let ptxas = ptxas();
    let cases: Vec<[f32; 3]> = adversarial()
        .chunks(3)
        .filter(|c| c.len() == 3)
        .map(|c| [c[0], c[1], c[2]])
        .chain([[1.5, -2.25, 0.1], [3.0, 2.0, 1e-40], [-1.0, 7.0, 2.5]])
        .collect();
    let mut rng = 0x5EED_0022u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let bodies = [
        "add.f32 %f5, %f1, 0f4CBEBC20;\n\tsub.f32 %f6, %f5, 0f4CBEBC20;\n\tmul.f32 %f7, %f6, %f2;\n\tdiv.rn.f32 %f4, %f7, %f2;",
        JOIN,
    ];
    for body in bodies {
        let m = module(&case_kernel(body));
        let want = run_cases(&m, &cases);
        let eligible: Vec<Site> = candidates(&m)
            .into_iter()
            .filter(|c| c.reason.is_none())
            .map(|c| c.site)
            .collect();
        assert!(eligible.len() >= 4, "{body}");
        for round in 0..24 {
            let subset: Vec<Site> = match round {
                0 => eligible.clone(),
                _ => eligible
                    .iter()
                    .filter(|_| next() % 2 == 0)
                    .cloned()
                    .collect(),
            };
            let p = promoted(&m, &PromoteSet::sites(subset.clone()));
            assert_eq!(p.report.promoted() as usize, subset.len(), "{body}");
            assert!(p.report.refused.is_empty() && p.report.unmatched_sites.is_empty());
            let back = demote(&p.module, &DemoteSet::all())
                .unwrap_or_else(|e| panic!("{e}"))
                .module;
            assert!(
                back.functions()
                    .flat_map(|f| f.instructions())
                    .all(|i| !i.has_mod("f64") || matches!(i.decode().kind, OpKind::Load(_))),
                "{back}"
            );
            let got = run_cases(&back, &cases);
            for ((c, g), w) in cases.iter().zip(&got).zip(&want) {
                assert!(
                    same(*g, *w, false),
                    "{body} round {round} {c:?}: {g} vs {w}"
                );
            }
            if round < 3 {
                assembles(&format!("subset {round}"), &p.module.to_string(), &ptxas);
            }
        }
    }
}

/// Whether a candidate's opcode (as the report names it) is a `kind` on f32 with no modifier
/// the decode reads besides its state space.
fn is(opcode: &str, kind: OpKind) -> bool {
    let op = crate::op::decode_name(opcode);
    op.kind == kind
        && op.ty == Some(ValueType::F32)
        && op.rounding.is_none()
        && !(op.ftz || op.approx || op.full || op.sat)
}

#[test]
fn sites_and_ids_choose_and_bad_requests_are_reported() {
    let m = module(&case_kernel(
        "add.f32 %f5, %f1, %f2;\n\tmul.f32 %f4, %f5, %f3;",
    ));
    let cands = candidates(&m);
    let add = cands
        .iter()
        .find(|c| is(&c.opcode, OpKind::Arith(Arith::Add)))
        .unwrap_or_else(|| panic!("{cands:?}"));
    let load = cands
        .iter()
        .find(|c| is(&c.opcode, OpKind::Load(Space::Global)))
        .unwrap_or_else(|| panic!("{cands:?}"));
    assert_eq!(load.reason.as_deref(), Some("a load"));
    let stale = Site {
        line: 99,
        ..add.site.clone()
    };
    let p = promoted(
        &m,
        &PromoteSet::sites([add.site.clone(), load.site.clone(), stale.clone()]),
    );
    assert_eq!(p.report.promoted(), 1);
    assert_eq!(p.report.unmatched_sites, [stale]);
    assert_eq!(p.report.refused.len(), 1);
    assert_eq!(p.report.refused[0].reason, "a load");
    // The add's result leaves for the f32 mul; its operands enter from the loads.
    assert_eq!(p.report.conversions(), (2, 1));
    let changes: Vec<(u32, bool)> = p
        .report
        .changes
        .iter()
        .map(|c| (c.site.line, c.promoted))
        .collect();
    assert_eq!(changes, [(1, false), (1, false), (2, true)]);
    let add_change = &p.report.changes[2];
    assert_eq!(add_change.before, "add.f32 \t%f5, %f1, %f2;");
    assert!(
        add_change
            .after
            .starts_with("add.f64 \t%mpd0, %mpd1, %mpd2; cvt.rn.f32.f64 \t%f5, %mpd0;"),
        "{}",
        add_change.after
    );
    // By id; an id that names nothing is a note; a non-f32 instruction is refused.
    let int_add = m
        .functions()
        .flat_map(|f| f.instructions())
        .find(|i| i.decode().kind == OpKind::Arith(Arith::Mad))
        .map(|i| i.id)
        .unwrap_or(InstId(u32::MAX));
    let p = promoted(&m, &PromoteSet::ids([add.id, int_add, InstId(9_999_999)]));
    assert_eq!(p.report.promoted(), 1);
    assert_eq!(p.report.refused[0].reason, "not an f32 instruction");
    assert!(p.report.notes.iter().any(|n| n.contains("i9999999")));
}

/// The pass in a pipeline: its summary, notes and report.
#[test]
fn the_pass_reports_what_it_did() {
    let m = module(OPS);
    let run = crate::pass::Pipeline::new()
        .then(Promote::new(PromoteSet::all()))
        .run(&m)
        .unwrap_or_else(|e| panic!("{e}"));
    let r = &run.reports[0];
    assert_eq!(
        r.summary,
        "promoted 33 instructions; 4 conversions to f64, 3 to f32"
    );
    assert!(r.notes.iter().any(|n| n.contains("ex2.approx")));
    assert_eq!(
        r.details::<PromoteReport>().map(PromoteReport::promoted),
        Some(33)
    );
}

/// Code inlined from a math function (nvcc writes where: `inlined_at` a libdevice or CUDA
/// routine) is left alone; the user's own inlined helpers are promoted. NVRTC writes no
/// inlining information for libdevice, so there the directed rounding of `expf`'s range
/// reduction (`fma.rm`) is what keeps it intact.
#[test]
fn math_library_code_is_left_alone() {
    let m = module(EXAMPLES[13].1); // nbody_f32.nvcc: its user helper is inlined
    let p = promoted(&m, &PromoteSet::all());
    let helper = p
        .report
        .changes
        .iter()
        .filter(|c| c.promoted && !c.site.inlined.is_empty())
        .count();
    assert!(helper > 10, "{helper}");
    let m = module(EXAMPLES[3].1); // expsin.default
    let p = promoted(&m, &PromoteSet::all());
    let notes = p.report.notes.join("\n");
    assert!(notes.contains("fma.rm.f32: a directed rounding"), "{notes}");
    assert!(notes.contains("ex2.approx.ftz.f32"), "{notes}");
    // A math function inlined with its chain is not promoted: rename the user's helper in the
    // debug strings to a libdevice name.
    let libm = EXAMPLES[13].1.replace(
        ".b8 95,90,57,98,111,100,121,95,98,111,100,121",
        ".b8 95,95,110,118,95,98,111,100,121,95,98,111",
    );
    let m = module(&libm);
    let p = promoted(&m, &PromoteSet::all());
    let inlined = p
        .report
        .changes
        .iter()
        .filter(|c| c.promoted && !c.site.inlined.is_empty())
        .count();
    assert_eq!(inlined, 0);
    assert!(
        p.report
            .notes
            .iter()
            .any(|n| n.contains("inlined math-library code")),
        "{:?}",
        p.report.notes
    );
}

#[test]
fn f32_immediates_widen_exactly() {
    for x in [
        0.1f32,
        1.0 / 3.0,
        f32::MAX,
        f32::from_bits(1),
        -0.0,
        f32::INFINITY,
    ] {
        assert_eq!(f64::from_bits(f32_imm_to_f64(x.to_bits())), f64::from(x));
    }
    assert!(f64::from_bits(f32_imm_to_f64(f32::NAN.to_bits())).is_nan());
}
