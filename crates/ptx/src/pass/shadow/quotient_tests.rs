//! The demotion error's quotient without a correctly rounded division (`instrument/quotient.rs`):
//! the loop sites' code as the pass emits it, and the runtime's `mantissa_shadow_quotient`
//! compiled by NVRTC, run in the interpreter (whose `rcp.approx.ftz.f64` is a model within the
//! instruction's error) on adversarial inputs, each result checked against the exact quotient
//! by integer arithmetic.

use super::instrument::quotient::{self, FAST_FROM, FAST_SPAN};
use super::*;
use crate::interp::{self, Arg, Launch, Memory};
use crate::model::{Instruction, Item, Operand, Statement};
use crate::op::{Control, OpKind};
use crate::test_support::{parse_clean, Dyadic, Rng};
use dashu_int::IBig;
use std::cmp::Ordering;

/// Draws of the inputs these tests need.
trait Draw {
    fn f64_in(&mut self, exponents: std::ops::RangeInclusive<u64>) -> f64;
    fn f32(&mut self) -> f32;
    fn sign(&mut self, x: f64) -> f64;
}

impl Draw for Rng {
    /// A positive double of biased exponent in `exponents` (0: subnormal), random significand.
    fn f64_in(&mut self, exponents: std::ops::RangeInclusive<u64>) -> f64 {
        let span = exponents.end() - exponents.start() + 1;
        let e = exponents.start() + self.next() % span;
        f64::from_bits((e << 52) | (self.next() >> 12)).max(f64::from_bits(1))
    }
    /// A finite f32, subnormals included, either sign.
    fn f32(&mut self) -> f32 {
        let e = self.next() % 255;
        let sign = (self.next() & 1) << 31;
        f32::from_bits(sign as u32 | (e << 23) as u32 | (self.next() >> 41) as u32)
    }
    fn sign(&mut self, x: f64) -> f64 {
        if self.next() & 1 == 1 {
            -x
        } else {
            x
        }
    }
}

/// 2^k, subnormal powers included.
fn pow2(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1 << (k + 1074))
    }
}

fn next_up(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1)
}

fn next_down(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

/// The two midpoints around a positive finite `e`: with the double below (0 below the least
/// subnormal) and above (2^1024 above the largest double).
fn midpoints(e: f64) -> (Dyadic, Dyadic) {
    (Dyadic::mid(next_down(e), e), Dyadic::mid(e, next_up(e)))
}

/// Whether `e` is d/a rounded to nearest (d ≥ 0 and a > 0 finite): +0 for d = 0, +inf when
/// d/a is at least the midpoint past the largest double, otherwise the midpoints around `e`
/// bracket d/a (a quotient of doubles is never a midpoint, but a tie would go to even).
fn correctly_rounded(e: f64, d: f64, a: f64) -> bool {
    if d == 0.0 {
        return e.to_bits() == 0;
    }
    let (dd, da) = (Dyadic::of(d), Dyadic::of(a));
    // The sign of m·a − d is that of m − d/a.
    let side = |m: &Dyadic| m.mul(&da).cmp(&dd);
    if e == f64::INFINITY {
        return side(&Dyadic::mid(f64::MAX, f64::INFINITY)) != Ordering::Greater;
    }
    if !(e.is_finite() && e > 0.0) {
        return false;
    }
    let even = e.to_bits() & 1 == 0;
    let (lo, hi) = midpoints(e);
    let below = match side(&lo) {
        Ordering::Less => true,
        Ordering::Equal => even,
        Ordering::Greater => false,
    };
    let above = match side(&hi) {
        Ordering::Greater => true,
        Ordering::Equal => even,
        Ordering::Less => false,
    };
    below && above
}

/// (r64, r32) pairs whose quotient is measured (r64 finite and nonzero, r32 finite): the ends
/// of the fast range and just past them, subnormal r64, the largest ones, r32 = 0 (e = 1),
/// r32 at the f32 extremes (the largest quotients), r32 a few f32 units from r64 (quotients
/// near 2^-24 with long significands), and random pairs over the whole range.
fn adversarial() -> Vec<(f64, f32)> {
    let mut rng = Rng(0x0bad_5eed_d15c_0de5);
    let low = pow2(-896);
    let high = pow2(1021);
    let mut r64s = vec![
        low,
        next_down(low),
        next_up(low),
        pow2(-897),
        next_down(pow2(-897)),
        1.5 * low,
        next_down(pow2(-895)),
        high,
        next_down(high),
        next_up(high),
        1.75 * pow2(1020),
        pow2(1022),
        1.5 * pow2(1022),
        f64::MAX,
        pow2(-1074),
        3.0 * pow2(-1074),
        next_down(f64::MIN_POSITIVE),
        f64::MIN_POSITIVE,
        pow2(-1000),
        pow2(1000),
        pow2(-149),
        f64::from(f32::MAX),
        next_up(f64::from(f32::MAX)),
        1.0,
        next_up(1.0),
        next_down(1.0),
        1.0 / 3.0,
    ];
    for _ in 0..20 {
        r64s.push(rng.f64_in(0..=0));
        r64s.push(rng.f64_in(1..=128));
        r64s.push(rng.f64_in(1919..=2046));
    }
    let mut pairs = Vec::new();
    for &x in &r64s {
        let near = x as f32;
        let mut r32s = vec![
            0.0,
            -0.0,
            f32::MAX,
            -f32::MAX,
            f32::from_bits(1),
            -f32::from_bits(1),
            1.0,
            rng.f32(),
        ];
        if near.is_finite() && near != 0.0 {
            r32s.extend([
                near,
                f32::from_bits(near.to_bits() + 1),
                f32::from_bits(near.to_bits() - 1),
            ]);
        }
        for r32 in r32s.into_iter().filter(|r| r.is_finite()) {
            pairs.push((x, r32));
            pairs.push((-x, r32));
        }
    }
    for _ in 0..3000 {
        // Anywhere: sizes and quotients over the whole range.
        let x = rng.f64_in(0..=2046);
        pairs.push((rng.sign(x), rng.f32()));
        // r32 a few units from r64: the usual small error, with a long quotient.
        let x = rng.f64_in(1023 - 149..=1023 + 127);
        let x = rng.sign(x);
        let near = x as f32;
        let k = (rng.next() % 9) as i32 - 4;
        let r32 = f32::from_bits((near.to_bits() as i32).wrapping_add(k) as u32);
        if r32.is_finite() {
            pairs.push((x, r32));
        }
        // r32 = 0: e exactly 1.
        let x = rng.f64_in(0..=2046);
        pairs.push((rng.sign(x), 0.0));
    }
    pairs
}

/// `quotient::code` on the registers of [`kernel_of`], then the division where it is rare, as
/// the site's out-of-line path computes it.
fn loop_code() -> Vec<Statement> {
    let mut code = quotient::code(&quotient::Registers {
        d: "%fd4",
        a: "%fd3",
        high: "%r6",
        r32_finite: "%p1",
        e: "%fd5",
        y: "%fd6",
        t: "%fd7",
        q: "%fd8",
        minus_a: "%fd9",
        offset: "%r7",
        rare: "%p2",
    });
    let mut branch = crate::rewrite::instruction("bra", &[], vec![Operand::Symbol("$Lq".into())]);
    if let Statement::Inst(i) = &mut branch {
        i.guard = Some(crate::model::Guard {
            negated: true,
            reg: "%p2".into(),
        });
    }
    code.extend([
        branch,
        quotient::division("%fd5", "%fd4", "%fd3"),
        Statement::Label("$Lq".into(), crate::model::SrcLine(0)),
    ]);
    code
}

/// A kernel computing, per thread, the loop sites' e (the pass's code, `quotient::code`) of
/// `r64[i]` and `r32[i]` into `e[i]`: a, d and the high word as `demotion.rs` computes them.
fn loop_code_kernel() -> crate::model::Module {
    kernel_of(&loop_code())
}

/// The kernel of [`loop_code_kernel`] with `code` in place of the quotient's.
fn kernel_of(code: &[Statement]) -> crate::model::Module {
    let code: String = code.iter().map(|s| format!("{s}\n")).collect();
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry quotient(.param .u64 p_r64, .param .u64 p_r32, .param .u64 p_e)\n{{\n\
         \t.reg .pred %p<3>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<2>;\n\t.reg .f64 %fd<10>;\n\
         \t.reg .b64 %rd<9>;\n\
         \tld.param.u64 %rd1, [p_r64];\n\tld.param.u64 %rd2, [p_r32];\n\
         \tld.param.u64 %rd3, [p_e];\n\
         \tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n\
         \tmad.lo.u32 %r4, %r2, %r3, %r1;\n\
         \tmul.wide.u32 %rd4, %r4, 8;\n\tadd.s64 %rd5, %rd1, %rd4;\n\tld.global.f64 %fd1, [%rd5];\n\
         \tmul.wide.u32 %rd6, %r4, 4;\n\tadd.s64 %rd7, %rd2, %rd6;\n\tld.global.f32 %f1, [%rd7];\n\
         \tcvt.f64.f32 %fd2, %f1;\n\
         \tmov.b64 {{%r5, %r6}}, %fd1;\n\tand.b32 %r6, %r6, 2147483647;\n\
         \ttestp.finite.f32 %p1, %f1;\n\
         \tabs.f64 %fd3, %fd1;\n\tsub.rn.f64 %fd4, %fd2, %fd1;\n\tabs.f64 %fd4, %fd4;\n\
         {code}\
         \tadd.s64 %rd8, %rd3, %rd4;\n\tst.global.f64 [%rd8], %fd5;\n\tret;\n}}\n"
    );
    parse_clean("quotient", &ptx)
}

/// Runs `kernel` of `m` (parameters r64, r32, e) on `pairs`; the e of each.
fn run_pairs(m: &crate::model::Module, kernel: &str, pairs: &[(f64, f32)]) -> Vec<f64> {
    let threads = 128;
    let n = pairs.len().div_ceil(threads) * threads;
    // Padding: r64 = r32 = 1, d = 0.
    let mut r64: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let mut r32: Vec<f32> = pairs.iter().map(|p| p.1).collect();
    r64.resize(n, 1.0);
    r32.resize(n, 1.0);
    let mut mem = Memory::new();
    let (a64, a32, out) = (mem.f64s(&r64), mem.f32s(&r32), mem.alloc(8 * n));
    interp::run(
        m,
        kernel,
        Launch::linear((n / threads) as u32, threads as u32),
        &[Arg::u64(a64), Arg::u64(a32), Arg::u64(out)],
        &mut mem,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut e = mem.read_f64s(out, n).unwrap_or_else(|e| panic!("{e}"));
    e.truncate(pairs.len());
    e
}

/// d and a of a pair, as the inserted code and the runtime compute them.
fn d_and_a(r64: f64, r32: f32) -> (f64, f64) {
    ((f64::from(r32) - r64).abs(), r64.abs())
}

/// Whether d/a lies within a relative 2^-79.75 of one of the midpoints around `e` (positive,
/// finite): |m·a − d| · 2^80 < 1.19 · d.
fn in_band(e: f64, d: f64, a: f64) -> bool {
    let (lo, hi) = midpoints(e);
    [lo, hi].iter().any(|m| {
        let gap = m.mul(&Dyadic::of(a)).sub(&Dyadic::of(d));
        let magnitude = if gap.0 < IBig::ZERO { -gap.0 } else { gap.0 };
        let scaled = Dyadic(magnitude * IBig::from(100u32), gap.1 + 80);
        scaled.cmp(&Dyadic::of(d).mul(&Dyadic(IBig::from(119u32), 0))) == Ordering::Less
    })
}

/// What [`check`] counted.
#[derive(Debug, Default)]
struct Tally {
    /// Pairs checked.
    pairs: usize,
    /// Of them, on the fast path.
    fast: usize,
    /// Of those, with d/a within the band (a relative 2^-79.75 of a midpoint).
    band: usize,
    /// Of those, given the other neighbour rather than the correctly rounded one.
    other_neighbour: usize,
}

/// Checks the claim of `quotient`'s module docs on every pair: e is the correctly rounded d/a
/// (exactly 1 where r32 = 0), on the division's side of the range always, on the fast path
/// except where d/a lies within the band, where it is one of the two doubles around d/a.
fn check(what: &str, pairs: &[(f64, f32)], es: &[f64]) -> Tally {
    let mut tally = Tally::default();
    for (&(r64, r32), &e) in pairs.iter().zip(es) {
        let (d, a) = d_and_a(r64, r32);
        tally.pairs += 1;
        let high = (a.to_bits() >> 32) as u32;
        let fast = high.wrapping_sub(FAST_FROM) < FAST_SPAN;
        let band = fast && d != 0.0 && e.is_finite() && e > 0.0 && in_band(e, d, a);
        tally.fast += usize::from(fast);
        tally.band += usize::from(band);
        let at = format!(
            "{what}: r64 {r64:e} ({:#018x}), r32 {r32:e}: e = {e:e} ({:#018x}), d/a rounded {:e}",
            r64.to_bits(),
            e.to_bits(),
            d / a
        );
        if correctly_rounded(e, d, a) {
            if r32 == 0.0 {
                assert_eq!(e, 1.0, "{at}");
            }
            continue;
        }
        assert!(band, "{at}: not correctly rounded outside the band");
        assert!(
            correctly_rounded(next_up(e), d, a) || correctly_rounded(next_down(e), d, a),
            "{at}: not faithful"
        );
        tally.other_neighbour += 1;
    }
    tally
}

#[test]
fn the_range_is_where_the_arithmetic_says() {
    // 2^-896 is the first value in it, 2^1021 the first past it.
    assert_eq!(FAST_FROM, (pow2(-896).to_bits() >> 32) as u32);
    assert_eq!(FAST_FROM + FAST_SPAN, (pow2(1021).to_bits() >> 32) as u32);
    // The runtime tests the same range on the same word.
    let runtime = mantissa_gpu::runtime::SHADOW.text;
    for constant in [format!("{FAST_FROM:#010x}u"), format!("{FAST_SPAN:#010x}u")] {
        assert!(runtime.contains(&constant), "the runtime has no {constant}");
    }
}

/// The loop sites' code on every adversarial pair, by exact arithmetic: e is the correctly
/// rounded d/a on the division's side of each end of the range, and on the fast path too but
/// where d/a lies within the band (there, one of the two doubles around it). About a dozen
/// pairs fall in the band, edges like r64 = 1 − 2^-53 with r32 = 1.
#[test]
fn the_loop_code_rounds_adversarial_quotients_as_documented() {
    let pairs = adversarial();
    let es = run_pairs(&loop_code_kernel(), "quotient", &pairs);
    let tally = check("loop code", &pairs, &es);
    eprintln!("loop code: {tally:?}");
    // Both sides of the guard were exercised.
    assert!(
        tally.fast > 5000 && tally.pairs - tally.fast > 500,
        "{tally:?}"
    );
    // The largest quotients: at the bottom of the range the largest f32 gives
    // 2^1024 − 2^1000 exactly (fast path, finite); a binade lower, +inf (division).
    let edge = [(pow2(-896), f32::MAX), (-pow2(-897), f32::MAX)];
    let es = run_pairs(&loop_code_kernel(), "quotient", &edge);
    assert_eq!(es[0], f64::from(f32::MAX) * pow2(896));
    assert_eq!(es[1], f64::INFINITY);
}

/// Why the range: the sequence alone (the division removed) just outside it gives NaN where
/// the quotient overflows (a below 2^-896 with r32 the largest f32), 0 where the reciprocal is
/// flushed (a above 2^1022) and NaN for a subnormal r64 (the operand flushed: 1/0).
#[test]
fn the_sequence_alone_fails_outside_the_range() {
    let mut code = loop_code();
    let tail: Vec<Statement> = code.split_off(code.len() - 3);
    let kinds: Vec<OpKind> = tail
        .iter()
        .filter_map(|s| match s {
            Statement::Inst(i) => Some(i.decode().kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [OpKind::Control(Control::Bra), OpKind::Div],
        "{tail:?}"
    );
    let pairs = [
        (1.5 * pow2(-897), f32::MAX),
        (1.5 * pow2(1022), 1.0),
        (3.0 * pow2(-1074), 0.0),
    ];
    let alone = run_pairs(&kernel_of(&code), "quotient", &pairs);
    assert!(alone[0].is_nan(), "{:e}", alone[0]);
    assert_eq!(alone[1], 0.0);
    assert!(alone[2].is_nan(), "{:e}", alone[2]);
    let guarded = run_pairs(&loop_code_kernel(), "quotient", &pairs);
    assert_eq!(guarded[0], f64::INFINITY);
    assert_eq!(guarded[1], 1.0);
    assert_eq!(guarded[2], 1.0);
}

/// Quotients within the band the module docs of `quotient` leave, where the code returns the
/// neighbour below the correctly rounded quotient (faithful, as documented): r64 = 1 − 2^-53
/// with r32 = 1 (d = 2^-53, d/a = 2^-53·(1 + 2^-53 + 2^-106 + …), 2^-106 above a midpoint: a
/// divisor with an all-ones significand and a power of two), and a pair found by searching
/// 3.6·10^9 random pairs near 1 with r32 a few f32 units away (2^-85.7 above a midpoint).
#[test]
fn a_quotient_within_the_band_is_faithful_but_not_correctly_rounded() {
    let pairs = [
        (next_down(1.0), 1.0),
        (
            f64::from_bits(0x3ff1_863c_83bf_a2e9),
            f32::from_bits(0x3f8c_31e4),
        ),
    ];
    let es = run_pairs(&loop_code_kernel(), "quotient", &pairs);
    assert_eq!(es[0], pow2(-53));
    for (&(r64, r32), &e) in pairs.iter().zip(&es) {
        let (d, a) = d_and_a(r64, r32);
        assert!(!correctly_rounded(e, d, a), "{r64:e} {r32:e}");
        assert!(
            correctly_rounded(next_up(e), d, a),
            "e is the neighbour below"
        );
        assert!(in_band(e, d, a), "{r64:e} {r32:e}");
    }
    let tally = check("band", &pairs, &es);
    assert_eq!((tally.band, tally.other_neighbour), (2, 2));
}

/// What the pass inserts at an accumulated site is `quotient::code` on its registers: every
/// `rcp.approx.ftz.f64` of an instrumented loop kernel sits in a window that `code` rebuilds
/// exactly from the window's own registers.
#[test]
fn the_pass_inserts_the_quotient_code_at_every_accumulated_site() {
    let m = parse_clean(
        "profile",
        include_str!("../../../tests/fixtures/count/profile.ptx"),
    );
    let options = ShadowOptions {
        exceptions: false,
        ..ShadowOptions::all()
    };
    let out = instrument_with(&m, &options, ACCUMULATED_PER_FUNCTION, true)
        .unwrap_or_else(|e| panic!("{e}"));
    let measured = out.report.sites.iter().filter(|s| s.demotion).count();
    let f = out
        .module
        .functions()
        .find(|f| f.name == "profile")
        .unwrap_or_else(|| panic!("no profile"));
    let body = f.body.clone().unwrap_or_default();
    let name = |s: &Statement, o: usize| match s {
        Statement::Inst(i) => match &i.operands[o] {
            Operand::Reg(r) | Operand::Symbol(r) => r.clone(),
            Operand::Not(inner) => match inner.as_ref() {
                Operand::Reg(r) => r.clone(),
                o => panic!("{o:?}"),
            },
            o => panic!("{o:?}"),
        },
        s => panic!("{s:?}"),
    };
    let mut seen = 0;
    for (j, s) in body.iter().enumerate() {
        let rcp_approx = |i: &Instruction| {
            let o = i.decode();
            o.kind == OpKind::Rcp && o.approx && o.ftz && o.ty == Some(ValueType::F64)
        };
        if !matches!(s, Statement::Inst(i) if rcp_approx(i)) {
            continue;
        }
        seen += 1;
        let w = &body[j - 3..j + 6];
        let op = |k: usize, o: usize| name(&w[k], o);
        let rebuilt = quotient::code(&quotient::Registers {
            offset: &op(0, 0),
            high: &op(0, 1),
            rare: &op(1, 0),
            r32_finite: &op(1, 3),
            minus_a: &op(2, 0),
            a: &op(2, 1),
            y: &op(3, 0),
            t: &op(4, 0),
            q: &op(6, 0),
            d: &op(6, 1),
            e: &op(8, 0),
        });
        let printed =
            |code: &[Statement]| -> Vec<String> { code.iter().map(|s| s.to_string()).collect() };
        assert_eq!(printed(w), printed(&rebuilt));
    }
    assert_eq!(seen, measured, "one quotient per measured site");
}

/// The runtime's `mantissa_shadow_quotient` (the sites outside loops), compiled by NVRTC into
/// a kernel that applies it as `mantissa_shadow_demotion_over` does, gives the loop code's
/// bits on every adversarial pair (and on the pair within the band): the same sequence and
/// range in both places.
#[test]
fn the_runtime_computes_the_loop_codes_quotients() {
    let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    let kernel = "\nextern \"C\" __global__ void runtime_quotient(const double *r64, \
                  const float *r32, double *e)\n{\n    unsigned int i = blockIdx.x * \
                  blockDim.x + threadIdx.x;\n    e[i] = mantissa_shadow_quotient(\
                  fabs(__dsub_rn((double)r32[i], r64[i])), fabs(r64[i]));\n}\n";
    let source = mantissa_gpu::Source::new(
        "runtime_quotient.cu",
        format!("{}{kernel}", mantissa_gpu::runtime::SHADOW.text),
    )
    .with_option(mantissa_gpu::runtime::RDC_OPTION);
    let compiled = nvrtc
        .compile(
            &source,
            mantissa_gpu::FlagSet::STRICT,
            mantissa_gpu::Target::Ptx(mantissa_gpu::Arch::new(9, 0)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let mut m = parse_clean("runtime_quotient.cu", &compiled.ptx);
    // The statistics array is only declared (`.extern`); the kernel does not touch it.
    m.items
        .retain(|i| !matches!(i, Item::Var(v) if v.name == SHADOW_GLOBAL));
    let runtime: Vec<String> = m
        .functions()
        .find(|f| f.name == "runtime_quotient")
        .map(|f| f.instructions().map(|i| i.full_opcode()).collect())
        .unwrap_or_default();
    for op in ["rcp.approx.ftz.f64", "div.rn.f64"] {
        assert!(
            runtime.iter().any(|o| o == op),
            "no {op}:\n{}",
            compiled.ptx
        );
    }
    let mut pairs = adversarial();
    pairs.push((
        f64::from_bits(0x3ff1_863c_83bf_a2e9),
        f32::from_bits(0x3f8c_31e4),
    ));
    let from_runtime = run_pairs(&m, "runtime_quotient", &pairs);
    let from_loop = run_pairs(&loop_code_kernel(), "quotient", &pairs);
    for ((p, r), l) in pairs.iter().zip(&from_runtime).zip(&from_loop) {
        assert_eq!(
            r.to_bits(),
            l.to_bits(),
            "{p:?}: runtime {r:e}, loop code {l:e}"
        );
    }
    let tally = check("runtime", &pairs, &from_runtime);
    eprintln!("runtime: {tally:?}");
    assert!(tally.other_neighbour > 0, "{tally:?}");
}

/// The GPU tests (`tests/shadow_gpu.rs`) compare maxima with the oracle's bit for bit, which
/// the band would break: none of their executions on the fast path has a quotient within it,
/// so the GPU's e is the oracle's whatever its reciprocal's bits (within the measured error).
/// Their cases: the known kernels in both flag sets, the profile kernel on 2 × 128 threads.
#[test]
fn no_quotient_of_the_gpu_tests_is_within_the_band() {
    use super::oracle_tests::{known, known_module, launch_args};
    let profile = parse_clean(
        "profile",
        include_str!("../../../tests/fixtures/count/profile.ptx"),
    );
    let mut runs = vec![(
        profile,
        known::Case {
            kernel: "profile",
            blocks: 2,
            threads: 128,
            params: vec![known::Param::OutF64(256), known::Param::Int(5)],
        },
    )];
    for flags in [mantissa_gpu::FlagSet::DEFAULT, mantissa_gpu::FlagSet::NOFMA] {
        let Some(m) = known_module(flags) else {
            return;
        };
        for case in known::gpu_cases() {
            runs.push((m.clone(), case));
        }
    }
    let mut fast = 0;
    for (m, case) in &runs {
        let (sites, _, _) = super::instrument::sites(m, &ShadowOptions::all());
        let measured: std::collections::HashSet<_> = sites
            .iter()
            .filter(|s| s.demotion)
            .map(|s| s.inst)
            .collect();
        let mut mem = Memory::new();
        let args = launch_args(case, &mut mem);
        let mut band = Vec::new();
        interp::run_observed(
            m,
            case.kernel,
            Launch::linear(case.blocks, case.threads),
            &args,
            &mut mem,
            &interp::Options::default(),
            &mut |e| {
                if !measured.contains(&e.inst) {
                    return;
                }
                let Some(r32) = super::oracle::f32_form(e.op, e.sources) else {
                    return;
                };
                let r64 = f64::from_bits(e.result);
                if !r64.is_finite() || r64 == 0.0 || !r32.is_finite() {
                    return;
                }
                let (d, a) = d_and_a(r64, r32);
                let high = (a.to_bits() >> 32) as u32;
                if d == 0.0 || high.wrapping_sub(FAST_FROM) >= FAST_SPAN {
                    return;
                }
                fast += 1;
                if in_band(d / a, d, a) {
                    band.push((r64, r32));
                }
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.kernel));
        assert!(band.is_empty(), "{}: {band:?}", case.kernel);
    }
    eprintln!("{fast} executions on the fast path, none within the band");
    assert!(fast > 1000, "{fast}");
}

/// The oracle does not take the interpreter's model of `rcp.approx.ftz.f64` for the GPU's
/// bits: a kernel that executes one is refused, as before the model existed.
#[test]
fn the_oracle_refuses_a_kernel_that_runs_the_approximate_reciprocal() {
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry k(.param .u64 p)\n{\n\t.reg .f64 %fd<4>;\n\t.reg .b64 %rd<2>;\n\
               \tld.param.u64 %rd1, [p];\n\tld.global.f64 %fd1, [%rd1];\n\
               \trcp.approx.ftz.f64 %fd2, %fd1;\n\tadd.rn.f64 %fd3, %fd2, %fd1;\n\
               \tst.global.f64 [%rd1], %fd3;\n\tret;\n}\n";
    let m = parse_clean("rcp", ptx);
    let mut mem = Memory::new();
    let x = mem.f64s(&[3.0]);
    let refused = super::oracle::expected(
        &m,
        "k",
        Launch::single(),
        &[Arg::u64(x)],
        &mut mem,
        &ShadowOptions::all(),
    );
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("approximate"), "{message}");
}
