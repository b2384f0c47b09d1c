//! Tests of the interpreter: real NVRTC kernels against the same computation in Rust, every
//! rounding mode against exact integer arithmetic, integer semantics, and the typed errors.

use super::round::{self, Mode};
use super::*;
use crate::parse;
use crate::test_support::{Dyadic, Rng};
use crate::tests::fixture;
use dashu_int::IBig;

/// Draws of the inputs these tests need.
trait Draw {
    fn f64(&mut self) -> f64;
    fn f32(&mut self) -> f32;
}

impl Draw for Rng {
    /// A float in ±[2^-30, 2^30), sign and exponent random, significand random.
    fn f64(&mut self) -> f64 {
        let e = (self.next() % 61) as i32 - 30;
        let m = 1.0 + (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let s = if self.next() & 1 == 1 { -1.0 } else { 1.0 };
        s * m * 2f64.powi(e)
    }
    fn f32(&mut self) -> f32 {
        let e = (self.next() % 41) as i32 - 20;
        let m = 1.0 + (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        let s = if self.next() & 1 == 1 { -1.0 } else { 1.0 };
        s * m * 2f32.powi(e)
    }
}

/// Runs `kernel` of `ptx` on `launch`, with arguments from the memory builder.
pub(super) fn go(
    ptx: &str,
    kernel: &str,
    launch: Launch,
    setup: impl FnOnce(&mut Memory) -> Vec<Arg>,
) -> (Memory, Result<Run, InterpError>) {
    let p = parse(ptx);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let mut mem = Memory::new();
    let args = setup(&mut mem);
    let r = run(&p.module, kernel, launch, &args, &mut mem);
    (mem, r)
}

/// loop_sum.cu on 2 blocks of 64 threads: each thread's strided sum of squares (an fma in the
/// default build, a multiply and an add in the strict one), then thread 0's ordered sum of the
/// block's partial sums from shared memory after a barrier. Bit for bit what Rust computes in
/// the same order.
#[test]
fn loop_sum_matches_rust_bit_for_bit_in_both_builds() {
    let mut rng = Rng(7);
    let n = 300usize;
    let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let threads = 64usize;
    for (build, fused) in [("loop_sum.default", true), ("loop_sum.strict", false)] {
        let m = fixture(build);
        let mut mem = Memory::new();
        let xa = mem.f32s(&x);
        let out = mem.f32s(&[0.0; 2]);
        let args = [Arg::u64(xa), Arg::u64(out), Arg::i32(n as i32)];
        let r = run(
            &m,
            "loop_sum",
            Launch::linear(2, threads as u32),
            &args,
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{build}: {e}"));
        assert!(r.steps > 1000);
        let part: Vec<f32> = (0..threads)
            .map(|t| {
                (t..n).step_by(threads).fold(0.0f32, |acc, i| {
                    if fused {
                        x[i].mul_add(x[i], acc)
                    } else {
                        acc + x[i] * x[i]
                    }
                })
            })
            .collect();
        let s = part.iter().fold(0.0f32, |s, p| s + p);
        let got = mem.read_f32s(out, 2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            [s.to_bits(), s.to_bits()],
            "{build}"
        );
    }
}

/// The operations checked, with the exact comparison `sign(y − exact)` for a candidate y.
#[derive(Debug, Clone, Copy)]
enum Exact {
    Add(f64, f64),
    Mul(f64, f64),
    Fma(f64, f64, f64),
    Div(f64, f64),
    Sqrt(f64),
}

impl Exact {
    /// The sign of y − (exact result), by integer arithmetic only.
    fn sign(self, y: f64) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let d = Dyadic::of;
        let y = d(y);
        match self {
            Exact::Add(a, b) => y.cmp(&d(a).add(&d(b))),
            Exact::Mul(a, b) => y.cmp(&d(a).mul(&d(b))),
            Exact::Fma(a, b, c) => y.cmp(&d(a).mul(&d(b)).add(&d(c))),
            // y − a/b has the sign of (y·b − a)·sign(b).
            Exact::Div(a, b) => {
                let s = y.mul(&d(b)).cmp(&d(a));
                if b < 0.0 {
                    s.reverse()
                } else {
                    s
                }
            }
            // For y ≥ 0: y − √a has the sign of y² − a.
            Exact::Sqrt(a) => {
                if y.0 < IBig::ZERO {
                    Ordering::Less
                } else {
                    y.mul(&y).cmp(&d(a))
                }
            }
        }
    }

    /// Whether `y` (a value of a format whose neighbours are `down`, `up`) is the exact result
    /// rounded in `mode`.
    fn holds(self, y: f64, down: f64, up: f64, even: bool, mode: Mode) -> bool {
        use std::cmp::Ordering::*;
        let s = self.sign(y);
        let below = self.sign(down) == Less; // down < exact
        let above = self.sign(up) == Greater; // up > exact
        match mode {
            Mode::Down => s != Greater && above,
            Mode::Up => s != Less && below,
            Mode::Zero => {
                if y > 0.0 || (y == 0.0 && self.sign(0.0) != Greater) {
                    s != Greater && above
                } else {
                    s != Less && below
                }
            }
            Mode::Nearest => {
                // Between the midpoints to each neighbour, a tie going to the even one.
                let lo = Dyadic::of(down).add(&Dyadic::of(y)).half();
                let hi = Dyadic::of(y).add(&Dyadic::of(up)).half();
                let m_lo = self.sign_of_dyadic(&lo);
                let m_hi = self.sign_of_dyadic(&hi);
                (m_lo == Less || (m_lo == Equal && even))
                    && (m_hi == Greater || (m_hi == Equal && even))
            }
        }
    }

    /// The sign of a dyadic midpoint minus the exact result (sums, products and fmas only, or
    /// via the same identities for quotients and roots).
    fn sign_of_dyadic(self, m: &Dyadic) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let d = Dyadic::of;
        match self {
            Exact::Add(a, b) => m.cmp(&d(a).add(&d(b))),
            Exact::Mul(a, b) => m.cmp(&d(a).mul(&d(b))),
            Exact::Fma(a, b, c) => m.cmp(&d(a).mul(&d(b)).add(&d(c))),
            Exact::Div(a, b) => {
                let s = m.mul(&d(b)).cmp(&d(a));
                if b < 0.0 {
                    s.reverse()
                } else {
                    s
                }
            }
            Exact::Sqrt(a) => {
                if m.0 < IBig::ZERO {
                    Ordering::Less
                } else {
                    m.mul(m).cmp(&d(a))
                }
            }
        }
    }
}

const MODES: [Mode; 4] = [Mode::Nearest, Mode::Zero, Mode::Down, Mode::Up];

/// Every operation in every mode, f64 and f32, on 3,000 random operand sets each (and exact
/// cases: sums that cancel, products of powers of two), checked against integer arithmetic.
#[test]
fn every_rounding_mode_is_correct_by_exact_arithmetic() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for round_no in 0..3000 {
        let (a, b, c) = (rng.f64(), rng.f64(), rng.f64());
        let b = if round_no % 50 == 0 { -a } else { b };
        let cases = [
            (Exact::Add(a, b), round::add(a, b)),
            (Exact::Mul(a, b), round::mul(a, b)),
            (Exact::Fma(a, b, c), round::fma(a, b, c)),
            (Exact::Div(a, b), round::div(a, b)),
            (Exact::Sqrt(a.abs()), round::sqrt(a.abs())),
        ];
        for (exact, r) in cases {
            for mode in MODES {
                let y = round::to_f64(r, mode, true);
                let (down, up) = (round::next_down_f64(y), round::next_up_f64(y));
                let even = y.to_bits() & 1 == 0;
                assert!(
                    exact.holds(y, down, up, even, mode),
                    "f64 {exact:?} {mode:?} gave {y:e}"
                );
            }
        }
        let (x, y, z) = (rng.f32(), rng.f32(), rng.f32());
        let (xd, yd, zd) = (f64::from(x), f64::from(y), f64::from(z));
        let cases = [
            (Exact::Add(xd, yd), round::add(xd, yd)),
            (Exact::Mul(xd, yd), round::mul(xd, yd)),
            (Exact::Fma(xd, yd, zd), round::add(xd * yd, zd)),
            (Exact::Div(xd, yd), round::div(xd, yd)),
            (Exact::Sqrt(xd.abs()), round::sqrt(xd.abs())),
        ];
        for (exact, r) in cases {
            for mode in MODES {
                let v = round::to_f32(r, mode);
                let (down, up) = (round::next_down_f32(v), round::next_up_f32(v));
                let even = v.to_bits() & 1 == 0;
                assert!(
                    exact.holds(f64::from(v), f64::from(down), f64::from(up), even, mode),
                    "f32 {exact:?} {mode:?} gave {v:e}"
                );
            }
        }
    }
}

/// Overflow in the directed modes stops at the largest finite value; ties go to even.
#[test]
fn overflow_and_ties() {
    let big = round::mul(f64::MAX, 2.0);
    assert_eq!(round::to_f64(big, Mode::Nearest, true), f64::INFINITY);
    assert_eq!(round::to_f64(big, Mode::Zero, true), f64::MAX);
    assert_eq!(round::to_f64(big, Mode::Down, true), f64::MAX);
    assert_eq!(round::to_f64(big, Mode::Up, true), f64::INFINITY);
    let neg = round::mul(-f64::MAX, 2.0);
    assert_eq!(round::to_f64(neg, Mode::Up, true), -f64::MAX);
    // Infinite operands are exact.
    let inf = round::add(f64::INFINITY, 1.0);
    assert_eq!(round::to_f64(inf, Mode::Zero, false), f64::INFINITY);
    let m = f64::from(f32::MAX);
    let over = round::mul(m, 2.0);
    assert_eq!(round::to_f32(over, Mode::Zero), f32::MAX);
    assert_eq!(round::to_f32(over, Mode::Nearest), f32::INFINITY);
    // 1 + 2^-24 is a tie in f32: to even (1); one more bit below breaks it upwards.
    let tie = round::add(1.0, 2f64.powi(-24));
    assert_eq!(round::to_f32(tie, Mode::Nearest), 1.0);
    let above = round::add(1.0 + 2f64.powi(-24), 2f64.powi(-80));
    assert_eq!(round::to_f32(above, Mode::Nearest), 1.0 + 2f32.powi(-23));
    let below = round::add(1.0 + 2f64.powi(-24), -(2f64.powi(-80)));
    assert_eq!(round::to_f32(below, Mode::Nearest), 1.0);
}

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

pub(super) fn kernel(body: &str, regs: &str) -> String {
    format!(
        "{HEADER}.visible .entry k(\n\t.param .u64 k_param_0\n)\n{{\n{regs}\n\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n{body}\n\tret;\n}}\n"
    )
}

/// Rounding modifiers reach the arithmetic: `add.rz/rm/rp.f32` of 1 and 2^-30.
#[test]
fn rounding_modifiers_in_ptx() {
    let body = "\tld.global.f32 %f1, [%rd2];\n\tld.global.f32 %f2, [%rd2+4];\n\
        \tadd.rn.f32 %f3, %f1, %f2;\n\tadd.rz.f32 %f4, %f1, %f2;\n\
        \tadd.rm.f32 %f5, %f1, %f2;\n\tadd.rp.f32 %f6, %f1, %f2;\n\
        \tst.global.v4.f32 [%rd2+8], {%f3, %f4, %f5, %f6};";
    let ptx = kernel(body, "\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<3>;");
    let (mem, r) = go(&ptx, "k", Launch::single(), |m| {
        vec![Arg::u64(m.f32s(&[1.0, -(2f32.powi(-30)), 0., 0., 0., 0.]))]
    });
    r.unwrap_or_else(|e| panic!("{e}"));
    let got = mem
        .read_f32s(GLOBAL_BASE + 8, 4)
        .unwrap_or_else(|e| panic!("{e}"));
    let below = round::next_down_f32(1.0);
    assert_eq!(got, [1.0, below, below, 1.0]);
}

/// Integer semantics at width: wide and high products, arithmetic shifts, saturating and
/// rounding conversions, NaN to integer.
#[test]
fn integer_and_conversion_semantics() {
    let body = "\tmov.u32 %r1, -7;\n\tmov.u32 %r2, 3;\n\
        \tmul.wide.s32 %rd3, %r1, %r2;\n\tst.global.u64 [%rd2], %rd3;\n\
        \tmul.hi.u32 %r3, %r1, %r2;\n\tst.global.u32 [%rd2+8], %r3;\n\
        \tshr.s32 %r4, %r1, 1;\n\tst.global.u32 [%rd2+12], %r4;\n\
        \tmov.f32 %f1, 0f501502F9;\n\tcvt.rzi.s32.f32 %r5, %f1;\n\tst.global.u32 [%rd2+16], %r5;\n\
        \tmov.f32 %f2, 0f40200000;\n\tcvt.rni.s32.f32 %r6, %f2;\n\tst.global.u32 [%rd2+20], %r6;\n\
        \tmov.f32 %f3, 0f7FC00000;\n\tcvt.rzi.u32.f32 %r7, %f3;\n\tst.global.u32 [%rd2+24], %r7;\n\
        \tmov.f32 %f4, 0fC0200000;\n\tcvt.rzi.u32.f32 %r8, %f4;\n\tst.global.u32 [%rd2+28], %r8;\n\
        \tmov.u64 %rd4, 9007199254740993;\n\tcvt.rn.f64.u64 %fd1, %rd4;\n\tst.global.f64 [%rd2+32], %fd1;\n\
        \tcvt.rp.f64.u64 %fd2, %rd4;\n\tst.global.f64 [%rd2+40], %fd2;\n\
        \tmad.lo.s32 %r9, %r1, %r2, 100;\n\tst.global.u32 [%rd2+48], %r9;\n\
        \trem.s32 %r10, %r1, %r2;\n\tst.global.u32 [%rd2+52], %r10;";
    let ptx = kernel(
        body,
        "\t.reg .b32 %r<12>;\n\t.reg .f32 %f<6>;\n\t.reg .f64 %fd<4>;\n\t.reg .b64 %rd<6>;",
    );
    let (mem, r) = go(&ptx, "k", Launch::single(), |m| {
        vec![Arg::u64(m.f64s(&[0.0; 7]))]
    });
    r.unwrap_or_else(|e| panic!("{e}"));
    let raw = mem.read(GLOBAL_BASE, 56).unwrap_or_else(|e| panic!("{e}"));
    let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap_or_default());
    let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap_or_default());
    assert_eq!(u64_at(0) as i64, -21);
    assert_eq!(u32_at(8), ((u64::from(-7i32 as u32) * 3) >> 32) as u32);
    assert_eq!(u32_at(12) as i32, -4);
    assert_eq!(u32_at(16) as i32, i32::MAX, "1e10 saturates");
    assert_eq!(u32_at(20), 2, "2.5 rounds to even");
    assert_eq!(u32_at(24), 0, "NaN converts to 0");
    assert_eq!(u32_at(28), 0, "-2.5 saturates at 0 for unsigned");
    assert_eq!(f64::from_bits(u64_at(32)), 9007199254740992.0);
    assert_eq!(f64::from_bits(u64_at(40)), 9007199254740994.0);
    assert_eq!(u32_at(48) as i32, 79);
    assert_eq!(u32_at(52) as i32, -1);
}

/// What the interpreter does not model, and faults, are typed errors naming the instruction.
#[test]
fn unknown_and_approximate_instructions_are_refused_by_name() {
    let regs = "\t.reg .f32 %f<4>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;";
    for (body, want) in [
        (
            "\tmov.f32 %f1, 0f3F800000;\n\tsin.approx.f32 %f2, %f1;",
            "sin.approx.f32",
        ),
        (
            "\tmov.b32 %r1, 1;\n\tmatch.all.sync.b32 %r2, %r1, -1;",
            "match.all.sync.b32",
        ),
        (
            "\tadd.f32 %f2, %f1, %f1;",
            "read before any instruction writes it",
        ),
        ("\tld.global.f32 %f1, [%rd2+4096];", "not allocated"),
    ] {
        let ptx = kernel(body, regs);
        let (_, r) = go(&ptx, "k", Launch::single(), |m| {
            vec![Arg::u64(m.f32s(&[0.0]))]
        });
        let e = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{e}");
        assert!(e.starts_with("k: `"), "{e}");
    }
    // An endless loop stops at the step limit.
    let ptx = kernel("$L:\n\tbra $L;", regs);
    let p = parse(&ptx).module;
    let mut mem = Memory::new();
    let a = mem.f32s(&[0.0]);
    let options = Options {
        steps: 1000,
        ..Options::default()
    };
    let e = run_with(
        &p,
        "k",
        Launch::single(),
        &[Arg::u64(a)],
        &mut mem,
        &options,
    );
    assert!(matches!(e, Err(InterpError::StepLimit { limit: 1000, .. })));
    let e = run(&p, "nope", Launch::single(), &[], &mut mem);
    assert_eq!(e, Err(InterpError::NoKernel("nope".into())));
    let e = run(&p, "k", Launch::single(), &[], &mut mem);
    assert!(matches!(e, Err(InterpError::Arguments { .. })));
}

/// Module variables with initialisers are read through their symbols (`__constant__` tables).
#[test]
fn constant_tables_are_initialised() {
    let ptx = format!(
        "{HEADER}.const .align 8 .b8 pad[3];\n.const .align 8 .f64 table[3] = {{0d3FB999999999999A, 0d3FD0000000000000, 0d3FF8000000000000}};\n\
         .visible .entry k(\n\t.param .u64 k_param_0\n)\n{{\n\t.reg .f64 %fd<3>;\n\t.reg .b64 %rd<4>;\n\
         \tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
         \tmov.u64 %rd3, table;\n\tld.const.f64 %fd1, [%rd3+16];\n\tld.const.f64 %fd2, [table+8];\n\
         \tadd.rn.f64 %fd1, %fd1, %fd2;\n\tst.global.f64 [%rd2], %fd1;\n\tret;\n}}\n"
    );
    let (mem, r) = go(&ptx, "k", Launch::single(), |m| {
        vec![Arg::u64(m.f64s(&[0.0]))]
    });
    r.unwrap_or_else(|e| panic!("{e}"));
    let out = mem
        .read_f64s(GLOBAL_BASE, 1)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out, [1.75]);
}

/// `bfi` against the PTX ISA's bit-by-bit definition, for b32 and b64, positions and lengths
/// at and beyond the width (taken mod 256), zero lengths included.
#[test]
fn bit_field_insert_follows_the_isa_definition() {
    let reference = |a: u64, b: u64, pos: u32, len: u32, bits: u32| -> u64 {
        let (pos, len) = (pos & 0xff, len & 0xff);
        let mut f = b;
        let mut i = 0;
        while i < len && pos + i < bits {
            let bit = (a >> i) & 1;
            f = (f & !(1u64 << (pos + i))) | (bit << (pos + i));
            i += 1;
        }
        if bits == 32 {
            f & 0xffff_ffff
        } else {
            f
        }
    };
    let cases: Vec<(u32, u32)> = vec![
        (0, 0),
        (0, 1),
        (3, 5),
        (32, 32),
        (31, 8),
        (60, 10),
        (0, 64),
        (64, 3),
        (200, 4),
        (257, 2),
        (5, 300),
    ];
    let (a, b) = (0x9abc_def0_1234_5678u64, 0x0f0f_0f0f_f0f0_f0f0u64);
    for (bits, ty) in [(32u32, "b32"), (64, "b64")] {
        let reg = if bits == 32 { "%r" } else { "%rd" };
        let store = if bits == 32 { "u32" } else { "u64" };
        for &(pos, len) in &cases {
            let ptx = format!(
                r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
	.reg .b32 %r<4>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd4, [out];
	mov.b64 %rd1, {a};
	mov.b64 %rd2, {b};
	cvt.u32.u64 %r1, %rd1;
	cvt.u32.u64 %r2, %rd2;
	bfi.{ty} {reg}3, {reg}1, {reg}2, {pos}, {len};
	st.global.{store} [%rd4], {reg}3;
	ret;
}}
"#
            );
            let p = parse(&ptx);
            assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
            let mut mem = Memory::new();
            let out = mem.f64s(&[0.0]);
            run(
                &p.module,
                "k",
                Launch::linear(1, 1),
                &[Arg::u64(out)],
                &mut mem,
            )
            .unwrap_or_else(|e| panic!("bfi.{ty} {pos} {len}: {e}"));
            let bytes = mem.read(out, 8).unwrap();
            let got = u64::from_le_bytes(bytes.try_into().unwrap()) & (u64::MAX >> (64 - bits));
            let want = reference(a, b, pos, len, bits);
            assert_eq!(got, want, "bfi.{ty} pos {pos} len {len}");
        }
    }
}

/// `rcp.approx.ftz.f64` runs by its model (module docs): on a spread of operands over the whole
/// range its error |1 − a·y|, computed exactly, is below 2^-20 and its low word is zero; a
/// subnormal operand is flushed (±inf), a subnormal reciprocal too (±0); ±0 gives ±inf, ±inf
/// gives ±0 and NaN the canonical NaN. Nothing else approximate runs: the f32 reciprocal and
/// the f64 reciprocal square root are still refused.
#[test]
fn the_approximate_f64_reciprocal_is_modelled_within_its_error() {
    let mut rng = Rng(0xfeed_f00d_0123_4567);
    let pow2 = |k: i32| 2f64.powi(k);
    let mut inputs: Vec<f64> = (0..3000)
        .map(|_| {
            let exponent = 1 + rng.next() % 2046;
            let sign = (rng.next() & 1) << 63;
            f64::from_bits(sign | (exponent << 52) | (rng.next() >> 12))
        })
        .collect();
    let specials = [
        1.0,
        -1.0,
        3.0,
        f64::from_bits(0x3ff0_0000_0000_0001),
        f64::from_bits(0x3fff_ffff_ffff_ffff),
        f64::MIN_POSITIVE,
        f64::MAX,
        pow2(1022),
        f64::from_bits(pow2(1022).to_bits() + 1),
        -1.5 * pow2(1022),
        f64::from_bits(1),
        -f64::from_bits(0x000f_ffff_ffff_ffff),
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    inputs.extend(specials);
    let body = "\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 8;\n\
        \tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.f64 %fd1, [%rd4];\n\
        \trcp.approx.ftz.f64 %fd2, %fd1;\n\tst.global.f64 [%rd4], %fd2;";
    let ptx = kernel(
        body,
        "\t.reg .b32 %r<2>;\n\t.reg .f64 %fd<3>;\n\t.reg .b64 %rd<5>;",
    );
    let n = inputs.len();
    let (mem, r) = go(&ptx, "k", Launch::linear(1, n as u32), |m| {
        vec![Arg::u64(m.f64s(&inputs))]
    });
    r.unwrap_or_else(|e| panic!("{e}"));
    let got = mem
        .read_f64s(GLOBAL_BASE, n)
        .unwrap_or_else(|e| panic!("{e}"));
    let (below, above) = (Dyadic::of(1.0 - pow2(-20)), Dyadic::of(1.0 + pow2(-20)));
    let mut bounded = 0;
    for (&a, &y) in inputs.iter().zip(&got) {
        let what = format!(
            "rcp.approx.ftz.f64 of {a:e} ({:#018x}) = {y:e}",
            a.to_bits()
        );
        if a.is_nan() {
            assert_eq!(y.to_bits(), 0x7fff_ffff_ffff_ffff, "{what}");
        } else if a == 0.0 || a.is_subnormal() {
            assert_eq!(y, f64::INFINITY.copysign(a), "{what}");
        } else if a.is_infinite() || a.abs() > pow2(1022) {
            assert_eq!(y.to_bits(), 0.0f64.copysign(a).to_bits(), "{what}");
        } else {
            assert!(y.is_normal() && y.to_bits() & 0xffff_ffff == 0, "{what}");
            // 1 − 2^-20 < a·y < 1 + 2^-20, exactly.
            let product = Dyadic::of(a).mul(&Dyadic::of(y));
            assert_eq!(product.cmp(&below), std::cmp::Ordering::Greater, "{what}");
            assert_eq!(product.cmp(&above), std::cmp::Ordering::Less, "{what}");
            bounded += 1;
        }
    }
    assert!(bounded > 2500, "{bounded}");
    let regs = "\t.reg .f32 %f<4>;\n\t.reg .f64 %fd<4>;\n\t.reg .b64 %rd<3>;";
    for (body, want) in [
        (
            "\tmov.f32 %f1, 0f40000000;\n\trcp.approx.ftz.f32 %f2, %f1;",
            "rcp.approx.ftz.f32",
        ),
        (
            "\tmov.f64 %fd1, 0d4000000000000000;\n\trsqrt.approx.f64 %fd2, %fd1;",
            "rsqrt.approx.f64",
        ),
    ] {
        let (_, r) = go(&kernel(body, regs), "k", Launch::single(), |m| {
            vec![Arg::u64(m.f32s(&[0.0]))]
        });
        let e = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want) && e.contains("approximate"), "{e}");
    }
}
