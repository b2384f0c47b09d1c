//! The shadow-values code as it runs (instrumented, the runtime merged by NVRTC's PTX and
//! inlined) executed in the interpreter, and its statistics checked against values worked out
//! by hand from the runtime's contract. The entry's `mantissa_sv_zero` becomes the stores it
//! stands for and each exit's `mantissa_sv_flush` the per-thread atomics it stands for (counts
//! and sums added, maxima by `max`, into copy 0), so that each word is checked alone;
//! everything per execution is the inlined runtime itself. `tests/it/shadow_interp.rs` runs the
//! `_once` forms and the flush as they are (warp operations included) against these records.

use super::emit::call_ret;
use super::tests::{runtime, slots_of};
use super::*;
use crate::interp::{self, Arg, Launch, Memory};
use crate::link::merge_runtime;
use crate::model::{Imm, Operand, RegDecl, RegName, SrcLine, Statement};
use crate::op::{decode_name, Arith, OpKind, Space};
use crate::rewrite::{instruction, int};
use crate::test_support::parse_clean;

/// y = ((x + 1) - 1)^2 per thread: an add that may lose x, a subtraction that cancels, a
/// product that may overflow.
const KERNEL: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
{
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<5>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd2, [k_param_1];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f64 	%fd1, [%rd4];
	add.rn.f64 	%fd2, %fd1, 0d3FF0000000000000;
	sub.rn.f64 	%fd3, %fd2, 0d3FF0000000000000;
	mul.rn.f64 	%fd4, %fd3, %fd3;
	add.s64 	%rd5, %rd2, %rd3;
	st.global.f64 	[%rd5], %fd4;
	ret;
}
"#;

const WORD: &str = "%interp_word";
const SUM: &str = "%interp_sum";
const AT: &str = "%interp_at";

/// Whether a report's opcode (`add.rn.f64`) names a `kind` on f64.
fn is_f64(opcode: &str, kind: &OpKind) -> bool {
    let op = decode_name(opcode);
    op.kind == *kind && op.ty == Some(ValueType::F64)
}

/// The values of the `st.param`s of a call block, in order.
fn call_args(block: &[Statement]) -> Vec<Operand> {
    block
        .iter()
        .filter_map(|s| match s {
            Statement::Inst(i) if matches!(i.decode().kind, OpKind::Store(_)) => {
                i.operands.get(1).cloned()
            }
            _ => None,
        })
        .collect()
}

fn number(o: &Operand) -> u32 {
    match o {
        Operand::Imm(Imm::Int { value, .. }) => *value as u32,
        other => panic!("not an immediate: {other:?}"),
    }
}

/// `merged` (instrumented, the runtime merged, not inlined) with the zero and flush calls
/// replaced by what they stand for, then inlined: the flush reads each word of each thread
/// record through the runtime's own `mantissa_sv_word` (inlined too) and adds it with one
/// atomic per thread into copy 0.
fn runnable(merged: &Module) -> Module {
    let slot_table = slots_of(merged);
    let mut out = merged.clone();
    for f in out.functions_mut() {
        let Some(body) = f.body.as_mut() else {
            continue;
        };
        let old = std::mem::take(body);
        let scratch = |name: &str, ty: &str| {
            Statement::Reg(RegDecl {
                ty: ty.into(),
                names: vec![RegName::Single(name.into())],
                line: SrcLine(0),
            })
        };
        let mut new = vec![
            scratch(WORD, ".b64"),
            scratch(SUM, ".f64"),
            scratch(AT, ".b64"),
        ];
        let mut k = 0;
        while k < old.len() {
            let end = old[k..]
                .iter()
                .position(|s| matches!(s, Statement::BlockEnd(_)))
                .map(|e| k + e);
            let call = match (&old[k], end) {
                (Statement::BlockStart(_), Some(end)) => old[k..end].iter().find_map(|s| match s {
                    Statement::Inst(i) if i.decode().is_call() => {
                        let callee = i.operands.iter().find_map(|o| match o {
                            Operand::Symbol(s) => Some(s.clone()),
                            _ => None,
                        })?;
                        [ZERO_FUNCTION, FLUSH_FUNCTION]
                            .contains(&callee.as_str())
                            .then(|| (callee, i.guard.clone(), end))
                    }
                    _ => None,
                }),
                _ => None,
            };
            let Some((callee, guard, end)) = call else {
                new.push(old[k].clone());
                k += 1;
                continue;
            };
            assert!(guard.is_none(), "the test kernels exit unguarded");
            let args = call_args(&old[k..end]);
            let Operand::Reg(base) = &args[0] else {
                panic!("no record address: {args:?}")
            };
            let record_bytes = i64::from(THREAD_RECORD_BYTES);
            if callee == ZERO_FUNCTION {
                for w in 0..i64::from(number(&args[1])) * record_bytes / 8 {
                    new.push(instruction(
                        "st",
                        &["local", "u64"],
                        vec![
                            Operand::Addr {
                                base: base.clone(),
                                offset: 8 * w,
                            },
                            int(0),
                        ],
                    ));
                }
            } else {
                let words = i64::from(WORDS_PER_RECORD);
                let (first, slots) = (number(&args[1]) as usize, number(&args[2]) as usize);
                for (slot, &record) in slot_table[first..first + slots].iter().enumerate() {
                    new.push(instruction(
                        "add",
                        &["s64"],
                        vec![
                            Operand::Reg(AT.into()),
                            Operand::Reg(base.clone()),
                            int(i128::from(record_bytes) * slot as i128),
                        ],
                    ));
                    for w in 0..words {
                        new.extend(call_ret(
                            WORD_FUNCTION,
                            &[
                                ("b64", Operand::Reg(AT.into())),
                                ("b32", int(i128::from(w))),
                            ],
                            Some(&[WORD.to_string()]),
                        ));
                        let global = Operand::Addr {
                            base: VALUES_GLOBAL.into(),
                            offset: 8 * (i64::from(record) * i64::from(COPIES) * words + w),
                        };
                        let sum = w == Word::LocalSum as i64 || w == Word::AccSum as i64;
                        let max = w == Word::LocalMax as i64
                            || w == Word::AccMax as i64
                            || w == Word::CancelMaxBits as i64;
                        if sum {
                            new.push(instruction(
                                "mov",
                                &["b64"],
                                vec![Operand::Reg(SUM.into()), Operand::Reg(WORD.into())],
                            ));
                            new.push(instruction(
                                "red",
                                &["global", "add", "f64"],
                                vec![global, Operand::Reg(SUM.into())],
                            ));
                        } else {
                            let op = if max { "max" } else { "add" };
                            new.push(instruction(
                                "red",
                                &["global", op, "u64"],
                                vec![global, Operand::Reg(WORD.into())],
                            ));
                        }
                    }
                }
            }
            k = end + 1;
        }
        *body = new;
    }
    let mut names = inlined_functions();
    names.push(WORD_FUNCTION.to_string());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::pass::inline::inline(&out, &names)
        .unwrap_or_else(|e| panic!("{e}"))
        .module
}

/// `ptx` instrumented, the runtime merged and [`runnable`]; `None` (the test skips) without
/// NVRTC.
fn instrumented_runnable(name: &str, ptx: &str) -> Option<(Instrumented, Module)> {
    let rt = runtime()?;
    // Thread records everywhere, whose words are checked here one by one; the `_once` forms
    // outside loops give the same statistics (tests/it/shadow_interp.rs, tests/shadow_gpu.rs).
    let out = instrument::instrument_with(&parse_clean(name, ptx), true)
        .unwrap_or_else(|e| panic!("{e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{e}"));
    let run = parse_clean("runnable", &runnable(&merged).to_string());
    Some((out, run))
}

/// The statistics a run of `run` left in its global records.
fn statistics(mem: &mut Memory, run: &Module, report: &ValuesReport) -> ValuesStats {
    let at = mem.symbol(run, VALUES_GLOBAL).unwrap();
    let bytes = mem.read(at, report.global_bytes()).unwrap().to_vec();
    report.decode(&bytes).unwrap()
}

/// The largest double with the high word of `x` rounded up: what the runtime reports as the
/// maximum of measurements whose largest is `x` (an upper bound within a relative 2^-20).
fn high_up(x: f64) -> f64 {
    let bits = x.to_bits();
    let high = (bits >> 32) + u64::from(bits as u32 != 0);
    f64::from_bits(high << 32)
}

#[test]
fn the_inlined_code_measures_what_the_contract_says() {
    let Some((out, run)) = instrumented_runnable("values interp", KERNEL) else {
        return;
    };

    let x = [2f64.powi(-60), 0.5, 1e300];
    let mut mem = Memory::new();
    let input = mem.f64s(&x);
    let output = mem.f64s(&[0.0; 3]);
    interp::run(
        &run,
        "k",
        Launch::linear(1, 3),
        &[Arg::u64(input), Arg::u64(output)],
        &mut mem,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // The program's own results are untouched.
    let y = mem.read_f64s(output, 3).unwrap();
    let want: Vec<f64> = x
        .iter()
        .map(|&v| ((v + 1.0) - 1.0) * ((v + 1.0) - 1.0))
        .collect();
    assert_eq!(
        y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let stats = statistics(&mut mem, &run, &out.report);
    assert_eq!(stats.sites.len(), 3);
    let tiny = 2f64.powi(-60);
    let (add, sub, mul) = (stats.sites[0], stats.sites[1], stats.sites[2]);
    // x + 1: 2^-60 is lost (error 2^-60 exactly), 0.5 is exact, 1e300 + 1 loses the 1.
    assert_eq!(add.executions, 3);
    let add_errors = (3, tiny + 0.0 + 1.0 / 1e300, tiny);
    assert_eq!((add.local.count, add.local.sum, add.local.max), add_errors);
    assert_eq!(
        (
            add.accumulated.count,
            add.accumulated.sum,
            add.accumulated.max
        ),
        add_errors
    );
    assert_eq!((add.cancellations, add.reseeded), (0, 0));
    // (x + 1) - 1: exact for 2^-60 (0: a zero reference) and 0.5; 1e300 - 1 rounds. Its shadow
    // keeps 2^-60, which the result lost entirely (accumulated error 1), a cancellation of 64
    // bits with an operand carrying error.
    assert_eq!(sub.executions, 3);
    assert_eq!(
        (
            sub.local.count,
            sub.local.sum,
            sub.local.max,
            sub.local.zero_reference
        ),
        (2, 1.0 / 1e300, high_up(1.0 / 1e300), 1)
    );
    assert_eq!(
        (
            sub.accumulated.count,
            sub.accumulated.sum,
            sub.accumulated.max
        ),
        (3, 1.0, 1.0)
    );
    assert_eq!((sub.cancellations, sub.cancel_max_bits), (1, 64));
    // The square: 0 (exact: a zero reference; its shadow 2^-120: error 1), 0.25, and an
    // overflow (not finite, both errors).
    assert_eq!(
        (
            mul.local.count,
            mul.local.zero_reference,
            mul.local.non_finite
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (
            mul.accumulated.count,
            mul.accumulated.sum,
            mul.accumulated.max,
            mul.accumulated.non_finite
        ),
        (2, 1.0, 1.0, 1)
    );
    // The load re-seeds: no buffer is registered.
    assert_eq!(stats.reseeds.len(), 1);
    assert_eq!(
        (stats.reseeds[0].executions, stats.reseeds[0].reseeded),
        (3, 3)
    );
}

/// Thread 0 computes s = a·b and stages it through shared memory; after the barrier every
/// thread reads s and computes (s + 1) − 1 (`staged`). `direct` computes the same with s in a
/// register. With a = b = 1 + 2^-30 the product rounds away 2^-60, an error the shadow must
/// carry through shared memory to the subtraction.
const STAGED: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.shared .align 8 .b8 _ZZ6stagedE1s[8];

.visible .entry staged(
	.param .u64 staged_param_0,
	.param .u64 staged_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<7>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [staged_param_0];
	ld.param.u64 	%rd2, [staged_param_1];
	mov.u32 	%r1, %tid.x;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	ld.global.f64 	%fd1, [%rd1];
	ld.global.f64 	%fd2, [%rd1+8];
	mul.rn.f64 	%fd3, %fd1, %fd2;
	st.shared.f64 	[_ZZ6stagedE1s], %fd3;
$L__BB0_2:
	bar.sync 	0;
	ld.shared.f64 	%fd4, [_ZZ6stagedE1s];
	add.rn.f64 	%fd5, %fd4, 0d3FF0000000000000;
	sub.rn.f64 	%fd6, %fd5, 0d3FF0000000000000;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.f64 	[%rd4], %fd6;
	ret;
}

.visible .entry direct(
	.param .u64 direct_param_0,
	.param .u64 direct_param_1
)
{
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<7>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [direct_param_0];
	ld.param.u64 	%rd2, [direct_param_1];
	mov.u32 	%r1, %tid.x;
	ld.global.f64 	%fd1, [%rd1];
	ld.global.f64 	%fd2, [%rd1+8];
	mul.rn.f64 	%fd3, %fd1, %fd2;
	add.rn.f64 	%fd5, %fd3, 0d3FF0000000000000;
	sub.rn.f64 	%fd6, %fd5, 0d3FF0000000000000;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.f64 	[%rd4], %fd6;
	ret;
}
"#;

#[test]
fn a_value_staged_through_shared_memory_keeps_its_shadow() {
    let Some((out, run)) = instrumented_runnable("staged", STAGED) else {
        return;
    };

    let a = 1.0 + 2f64.powi(-30);
    let threads = 4;
    let mut mem = Memory::new();
    let input = mem.f64s(&[a, a]);
    let outputs = [mem.f64s(&[0.0; 4]), mem.f64s(&[0.0; 4])];
    for (kernel, output) in ["staged", "direct"].into_iter().zip(outputs) {
        interp::run(
            &run,
            kernel,
            Launch::linear(1, threads),
            &[Arg::u64(input), Arg::u64(output)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let y = mem.read_f64s(output, 4).unwrap();
        assert!(
            y.iter().all(|&v| v == 1.0 + 2f64.powi(-29)),
            "{kernel}: {y:?}"
        );
    }
    let stats = statistics(&mut mem, &run, &out.report);
    let site = |function: &str, kind: OpKind| {
        let s = out
            .report
            .sites
            .iter()
            .find(|s| s.site.function == function && is_f64(&s.opcode, &kind))
            .unwrap_or_else(|| panic!("{function} {kind:?}"));
        stats.sites[s.index as usize]
    };
    // The subtraction's result 1 + 2^-29 against the shadow 1 + 2^-29 + 2^-60: the product's
    // lost 2^-60, carried through shared memory exactly as through a register.
    let want = 2f64.powi(-60) / (1.0 + 2f64.powi(-29));
    for op in [Arith::Add, Arith::Sub].map(OpKind::Arith) {
        let (staged, direct) = (site("staged", op.clone()), site("direct", op.clone()));
        assert_eq!(staged.accumulated, direct.accumulated, "{op:?}");
        assert_eq!(staged.executions, threads as u64, "{op:?}");
    }
    let sub = site("staged", OpKind::Arith(Arith::Sub)).accumulated;
    // The maximum is kept as its high word rounded up (an upper bound within 2^-20).
    assert_eq!((sub.count, sub.max), (threads as u64, high_up(want)));
    assert!(sub.max >= want && sub.max <= want * (1.0 + 2f64.powi(-20)));
    // The shared load is a re-seed point that never re-seeds: the address is static.
    let load = out
        .report
        .reseeds
        .iter()
        .position(|r| is_f64(&r.opcode, &OpKind::Load(Space::Shared)))
        .unwrap();
    let load = stats.reseeds[load];
    assert_eq!((load.executions, load.reseeded), (threads as u64, 0));
}

/// q = x / y, s = sqrt(x), t = 1 / y per thread, correctly rounded.
const REMAINDERS: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
{
	.reg .f64 	%fd<6>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd2, [k_param_1];
	ld.global.f64 	%fd1, [%rd1];
	ld.global.f64 	%fd2, [%rd1+8];
	div.rn.f64 	%fd3, %fd1, %fd2;
	sqrt.rn.f64 	%fd4, %fd1;
	rcp.rn.f64 	%fd5, %fd2;
	st.global.f64 	[%rd2], %fd3;
	st.global.f64 	[%rd2+8], %fd4;
	st.global.f64 	[%rd2+16], %fd5;
	ret;
}
"#;

/// A finite nonzero double as m·2^e, m an integer.
fn dyadic(x: f64) -> (i128, i32) {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = (bits & ((1u64 << 52) - 1)) as i128;
    let (m, e) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1i128 << 52), exponent - 1075)
    };
    (if x < 0.0 { -m } else { m }, e)
}

/// |a − b·c| exactly, as a double: asserted to be one (at most 53 significant bits; the
/// callers keep it far from underflow).
fn exact_remainder(a: f64, b: f64, c: f64) -> f64 {
    let ((ma, ea), (mb, eb), (mc, ec)) = (dyadic(a), dyadic(b), dyadic(c));
    let (mp, ep) = (mb * mc, eb + ec);
    let e = ea.min(ep);
    let d = ((ma << (ea - e)) - (mp << (ep - e))).unsigned_abs();
    if d == 0 {
        return 0.0;
    }
    assert!(
        d >> d.trailing_zeros() < 1 << 53,
        "the remainder of {a} - {b}·{c} is not a double"
    );
    // 2^e in two factors: either alone may overflow or underflow.
    (d as f64) * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
}

/// The local errors of div, sqrt and rcp against the exact remainders worked out in integers:
/// for a/b the runtime's value must be exactly |x − q·y| / |x| rounded once, for 1/y exactly
/// |1 − t·y|, for sqrt(x) |x − s²| / (√x(√x + s)) within 2^-50; operands far from the range of
/// the remainder path take the double-word path and are still measured.
#[test]
fn division_reciprocal_and_square_root_errors_come_from_exact_remainders() {
    let Some((out, run)) = instrumented_runnable("remainders", REMAINDERS) else {
        return;
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let m = 1.0 + (state >> 12) as f64 / (1u64 << 52) as f64;
        m * 2f64.powi((state % 200) as i32 - 100)
    };
    let mut cases: Vec<(f64, f64)> = (0..40).map(|_| (random(), random())).collect();
    cases.extend([
        (1.0, 3.0),
        (2.0, 1.0 + f64::EPSILON),
        (1.0 - f64::EPSILON / 2.0, 1.0 + f64::EPSILON),
        (2f64.powi(-899), 3.0),
        (2f64.powi(899), 7.0),
        (1e-300, 3.0),
        (5.0, 1e300),
    ]);
    let site = |stats: &ValuesStats, kind: OpKind| {
        let s = out
            .report
            .sites
            .iter()
            .find(|s| is_f64(&s.opcode, &kind))
            .unwrap();
        stats.sites[s.index as usize]
    };
    for (x, y) in cases {
        let mut mem = Memory::new();
        let input = mem.f64s(&[x, y]);
        let output = mem.f64s(&[0.0; 3]);
        interp::run(
            &run,
            "k",
            Launch::linear(1, 1),
            &[Arg::u64(input), Arg::u64(output)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let v = mem.read_f64s(output, 3).unwrap();
        let (q, s, t) = (v[0], v[1], v[2]);
        assert_eq!((q, s, t), (x / y, x.sqrt(), 1.0 / y));
        let stats = statistics(&mut mem, &run, &out.report);
        let (div, sqrt, rcp) = (
            site(&stats, OpKind::Div).local,
            site(&stats, OpKind::Sqrt).local,
            site(&stats, OpKind::Rcp).local,
        );
        assert_eq!(
            (div.count, sqrt.count, rcp.count),
            (1, 1, 1),
            "{x} {y}: every error measured"
        );
        let moderate = |v: f64| (2f64.powi(-900)..2f64.powi(901)).contains(&v.abs());
        if [x, y, q].into_iter().all(moderate) {
            assert_eq!(div.sum, exact_remainder(x, q, y) / x.abs(), "{x} / {y}");
        }
        if [y, t].into_iter().all(moderate) {
            assert_eq!(rcp.sum, exact_remainder(1.0, t, y), "1 / {y}");
        }
        if [x, s].into_iter().all(moderate) {
            let root = x.sqrt();
            let want = exact_remainder(x, s, s) / (root * (root + s));
            assert!(
                (sqrt.sum - want).abs() <= 2f64.powi(-50) * want,
                "sqrt({x}): {} against {want}",
                sqrt.sum
            );
        }
        assert!(
            div.sum <= 2f64.powi(-53) && rcp.sum <= 2f64.powi(-53) && sqrt.sum <= 2f64.powi(-53)
        );
    }
}
