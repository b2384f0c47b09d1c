//! Enclosures of the elementary functions (see the module docs of [`super`]).
//!
//! Special values (NaN, infinities, zeros, C99 Annex F's tables for pow and atan2) and every
//! exactly representable result are answered [`Approx::Exact`]: the transcendental functions
//! are exact only at their trivial points (a transcendental function of a nonzero rational is
//! irrational, by Lindemann–Weierstrass, except where log2/log10/exp2/exp10 meet exact powers),
//! and the algebraic ones (sqrt, rsqrt, cbrt, hypot, pow, div) are tested for an exact dyadic
//! result with integer roots and divisibility. Anything else is [`Approx::Near`]: a ball from
//! [`ball`] arithmetic, whose radius is a rigorous error bound (series tails included, see
//! [`series`]). A result that is not dyadic cannot be a rounding midpoint, so Ziv's loop ends
//! on it.
//!
//! Results whose binary exponent would pass ±2^31 (exp(3e9), pow(2, 1e300), …) are far beyond
//! both formats; they are answered exactly as ±∞ or ±0, which every format rounds them to.
//! Big's exponent is a machine integer, so the exact value could not be held anyway.

use std::ops::Neg;

use dashu_base::{BitTest, CubicRoot, SquareRootRem, UnsignedAbs};
use dashu_int::{IBig, UBig};
use mantissa_num::big::{self, Big};

use super::ball::{self, Ball, EXACT};
use super::series::{self, atan_ball, atanh_series, exp_ball, expm1_core, log1p_ball, log_ball};
use super::{consts, Approx};
use crate::format::Exact;
use crate::functions::Function;

/// Guard bits of the working precision over the requested one: covers the roundings of a few
/// dozen operations and the doubling steps of the kernels with room to spare (the radius is
/// the bound in any case; the guard only makes the first precision step usually enough).
const GUARD: usize = 24;

/// |t| beyond which exp(t) is clamped (binary exponent beyond 2^31: t/ln 2 > 2^31).
const EXP_ARG_LIMIT: f64 = 1.48e9;

/// The error exponent of a failed evaluation (a ball operation met a divisor or square-root
/// argument whose ball holds zero): no finite result of these functions reaches 2^(2^40).
const FAILED: isize = 1 << 40;

/// See [`super::approx`].
pub fn approx(f: Function, args: &[f64], prec: usize) -> Approx {
    // A ball holding zero where the true value is not is cured by more working precision: try
    // again with more guard bits before answering with the useless (but true) FAILED bound,
    // which the driver meets by doubling `prec`.
    let mut p = prec + GUARD;
    loop {
        let a = evaluate(f, args, prec, p);
        match &a {
            Approx::Near { value, err_log2 } if *err_log2 == FAILED && p < 4 * prec + 512 => {
                debug_assert!(value.repr().is_zero());
                p *= 2;
            }
            _ => return a,
        }
    }
}

fn evaluate(f: Function, args: &[f64], prec: usize, p: usize) -> Approx {
    let x = args[0];
    let y = args.get(1).copied().unwrap_or(f64::NAN);
    use Function as F;
    match f {
        F::Sin | F::Cos | F::Tan => trig(f, x, prec, p),
        F::Asin => asin(x, prec, p),
        F::Acos => acos(x, prec, p),
        F::Atan => atan(x, prec, p),
        F::Atan2 => atan2(x, y, prec, p),
        F::Sinh => sinh(x, prec, p),
        F::Cosh => cosh(x, prec, p),
        F::Tanh => tanh(x, prec, p),
        F::Asinh => asinh(x, prec, p),
        F::Acosh => acosh(x, prec, p),
        F::Atanh => atanh(x, prec, p),
        F::Exp => exp(x, prec, p),
        F::Exp2 => exp2(x, prec, p),
        F::Exp10 => exp10(x, prec, p),
        F::Expm1 => expm1(x, prec, p),
        F::Log | F::Log2 | F::Log10 => log(f, x, prec, p),
        F::Log1p => log1p(x, prec, p),
        F::Pow => pow(x, y, prec, p),
        F::Sqrt => sqrt(x, prec, p),
        F::Rsqrt => rsqrt(x, prec, p),
        F::Cbrt => cbrt(x, prec, p),
        F::Hypot => hypot(x, y, prec, p),
        F::Div => div(x, y, prec, p),
        F::Erf | F::Erfc | F::Erfinv | F::Lgamma | F::Tgamma => {
            unreachable!("{} is a special function (reference::special)", f.name())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Results.

fn nan() -> Approx {
    Approx::Exact(Exact::NaN)
}

fn inf(negative: bool) -> Approx {
    Approx::Exact(Exact::Inf { negative })
}

/// An exact f64 value (a zero keeps no sign: Big has none; see the contract).
fn exact(v: f64) -> Approx {
    Approx::Exact(Exact::Finite(big::exact(v)))
}

fn exact_ball(b: &Ball) -> Approx {
    Approx::Exact(Exact::Finite(b.mid_big()))
}

/// 2^k·m exactly.
fn exact_scaled(m: IBig, k: isize) -> Approx {
    Approx::Exact(Exact::Finite(Ball::exact(m, k).mid_big()))
}

/// A ball as an enclosure. The error bound is never reported below 2^(e − 2·prec − 64) (a
/// looser bound is still a bound): it keeps the driver's value ± error short. `None` (an
/// operation met a ball holding zero, which more precision cures) is a zero with a huge error,
/// which the driver answers by doubling the precision.
fn near(b: Option<Ball>, prec: usize) -> Approx {
    let Some(b) = b else {
        return Approx::Near {
            value: Big::ZERO,
            err_log2: FAILED,
        };
    };
    let floor = b.exponent().map(|e| e - 2 * prec as isize - 64);
    let err = match (b.r.log2_ceil(), floor) {
        (Some(r), Some(f)) => (r as isize).max(f),
        (Some(r), None) => r as isize,
        (None, Some(f)) => f,
        (None, None) => return exact(0.0),
    };
    Approx::Near {
        value: b.mid_big(),
        err_log2: err,
    }
}

fn neg_if(b: Option<Ball>, negative: bool) -> Option<Ball> {
    b.map(|b| if negative { b.neg() } else { b })
}

/// ±π/2 (or any multiple of π/4) as an enclosure: `num`·π/4.
fn pi_quarters(num: i64, p: usize) -> Option<Ball> {
    Some(consts::pi(p + 8).mul_int(&IBig::from(num), p).mul_2k(-2))
}

// ---------------------------------------------------------------------------------------------
// Trigonometric functions.

fn trig(f: Function, x: f64, prec: usize, p: usize) -> Approx {
    if !x.is_finite() {
        return nan();
    }
    if x == 0.0 {
        return if f == Function::Cos {
            exact(1.0)
        } else {
            exact(x)
        };
    }
    let (q, r) = series::reduce(x, p);
    let (s, c) = series::sincos(&r, p);
    let v = match (f, q) {
        (Function::Sin, 0) | (Function::Cos, 3) => Some(s),
        (Function::Sin, 1) | (Function::Cos, 0) => Some(c),
        (Function::Sin, 2) | (Function::Cos, 1) => Some(s.neg()),
        (Function::Sin, _) | (Function::Cos, _) => Some(c.neg()),
        (_, q) if q % 2 == 0 => s.div(&c, p),
        _ => c.div(&s, p).map(Ball::neg),
    };
    near(v, prec)
}

fn asin(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x.abs() > 1.0 {
        return nan();
    }
    if x == 0.0 {
        return exact(x);
    }
    if x.abs() == 1.0 {
        return near(pi_quarters(if x > 0.0 { 2 } else { -2 }, p), prec);
    }
    // asin x = atan(x/√((1 − x)(1 + x))); 1 ∓ x are exact, so x near ±1 loses nothing.
    let xb = Ball::from_f64(x);
    let one = Ball::one();
    let d = one.sub(&xb, EXACT).mul(&one.add(&xb, EXACT), p);
    let v = d
        .sqrt(p)
        .and_then(|s| xb.div(&s, p))
        .and_then(|z| atan_ball(&z, p));
    near(v, prec)
}

fn acos(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x.abs() > 1.0 {
        return nan();
    }
    if x == 1.0 {
        return exact(0.0);
    }
    if x == -1.0 {
        return near(pi_quarters(4, p), prec);
    }
    // acos x = 2·atan(√((1 − x)/(1 + x))), relatively accurate near x = 1 (1 − x exact).
    let xb = Ball::from_f64(x);
    let one = Ball::one();
    let v = one
        .sub(&xb, EXACT)
        .div(&one.add(&xb, EXACT), p)
        .and_then(|q| q.sqrt(p))
        .and_then(|z| atan_ball(&z, p))
        .map(|a| a.mul_2k(1));
    near(v, prec)
}

fn atan(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x == 0.0 {
        return exact(x);
    }
    if x.is_infinite() {
        return near(pi_quarters(if x > 0.0 { 2 } else { -2 }, p), prec);
    }
    near(atan_ball(&Ball::from_f64(x), p), prec)
}

/// atan2(y, x) with C99 Annex F's special cases.
fn atan2(y: f64, x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || y.is_nan() {
        return nan();
    }
    let sy: i64 = if y.is_sign_negative() { -1 } else { 1 };
    if y == 0.0 {
        // ±0 for x > 0 or x = +0; ±π for x < 0 or x = −0.
        return if x > 0.0 || (x == 0.0 && x.is_sign_positive()) {
            exact(y)
        } else {
            near(pi_quarters(4 * sy, p), prec)
        };
    }
    if y.is_infinite() {
        let q = if x == f64::INFINITY {
            1
        } else if x == f64::NEG_INFINITY {
            3
        } else {
            2
        };
        return near(pi_quarters(q * sy, p), prec);
    }
    if x == 0.0 {
        return near(pi_quarters(2 * sy, p), prec);
    }
    if x.is_infinite() {
        return if x > 0.0 {
            exact(0.0 * y.signum())
        } else {
            near(pi_quarters(4 * sy, p), prec)
        };
    }
    let q = Ball::from_f64(y).div(&Ball::from_f64(x), p);
    let a = q.and_then(|q| atan_ball(&q, p));
    let v = if x > 0.0 {
        a
    } else {
        // |atan(y/x)| ≤ π/2 against |π| added: no cancellation.
        a.and_then(|a| pi_quarters(4 * sy, p + 4).map(|pi| pi.add(&a, p)))
    };
    near(v, prec)
}

// ---------------------------------------------------------------------------------------------
// Hyperbolic functions.

fn sinh(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x == 0.0 {
        return exact(x);
    }
    if x.is_infinite() || x.abs() > EXP_ARG_LIMIT {
        return inf(x < 0.0);
    }
    let a = Ball::from_f64(x.abs());
    let v = if x.abs() < 0.5 {
        // sinh a = (E + E/(1 + E))/2 with E = expm1(a): both terms positive, relative.
        let e = expm1_core(&a, p);
        e.div(&e.add(&Ball::one(), p), p)
            .map(|q| e.add(&q, p).mul_2k(-1))
    } else {
        let e = exp_ball(&a, p);
        Ball::one().div(&e, p).map(|r| e.sub(&r, p).mul_2k(-1))
    };
    near(neg_if(v, x < 0.0), prec)
}

fn cosh(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x == 0.0 {
        return exact(1.0);
    }
    if x.is_infinite() || x.abs() > EXP_ARG_LIMIT {
        return inf(false);
    }
    let e = exp_ball(&Ball::from_f64(x.abs()), p);
    let v = Ball::one().div(&e, p).map(|r| e.add(&r, p).mul_2k(-1));
    near(v, prec)
}

fn tanh(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x == 0.0 {
        return exact(x);
    }
    let one = if x > 0.0 { 1.0 } else { -1.0 };
    if x.is_infinite() {
        return exact(one);
    }
    if x.abs() > (prec + 40) as f64 {
        // 1 − tanh|x| = 2/(e^(2|x|) + 1) < 2^(1 − 2.88|x|) ≤ 2^-(2·prec + 64).
        return Approx::Near {
            value: big::exact(one),
            err_log2: -(2 * prec as isize) - 64,
        };
    }
    let a2 = Ball::from_f64(x.abs()).mul_2k(1);
    // tanh a = E/(E + 2), E = expm1(2a).
    let e = if x.abs() < 0.25 {
        expm1_core(&a2, p)
    } else {
        exp_ball(&a2, p).sub(&Ball::one(), p)
    };
    let v = e.div(&e.add(&Ball::from_i64(2), p), p);
    near(neg_if(v, x < 0.0), prec)
}

fn asinh(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x.is_infinite() {
        return if x.is_nan() { nan() } else { inf(x < 0.0) };
    }
    if x == 0.0 {
        return exact(x);
    }
    let a = Ball::from_f64(x.abs());
    let one = Ball::one();
    let a2 = a.sqr(EXACT);
    let root = a2.add(&one, p).sqrt(p);
    let v = if x.abs() < 0.5 {
        // asinh a = log1p(a + a²/(1 + √(1 + a²))), all terms positive.
        root.and_then(|r| a2.div(&r.add(&one, p), p))
            .and_then(|t| log1p_ball(&a.add(&t, p), p))
    } else {
        root.and_then(|r| log_ball(&a.add(&r, p), p))
    };
    near(neg_if(v, x < 0.0), prec)
}

fn acosh(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x < 1.0 {
        return nan();
    }
    if x.is_infinite() {
        return inf(false);
    }
    if x == 1.0 {
        return exact(0.0);
    }
    let xb = Ball::from_f64(x);
    let one = Ball::one();
    let t = xb.sub(&one, EXACT);
    let v = if x < 1.5 {
        // acosh(1 + t) = log1p(t + √(t(t + 2))), t exact: relative accuracy near 1.
        t.mul(&t.add(&Ball::from_i64(2), EXACT), p)
            .sqrt(p)
            .and_then(|r| log1p_ball(&t.add(&r, p), p))
    } else {
        xb.sqr(EXACT)
            .sub(&one, p)
            .sqrt(p)
            .and_then(|r| log_ball(&xb.add(&r, p), p))
    };
    near(v, prec)
}

fn atanh(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x.abs() > 1.0 {
        return nan();
    }
    if x.abs() == 1.0 {
        return inf(x < 0.0);
    }
    if x == 0.0 {
        return exact(x);
    }
    let a = Ball::from_f64(x.abs());
    let one = Ball::one();
    let v = if x.abs() < 0.125 {
        atanh_series(&a, p)
    } else {
        // ½·ln((1 + a)/(1 − a)), both factors exact.
        one.add(&a, EXACT)
            .div(&one.sub(&a, EXACT), p)
            .and_then(|q| log_ball(&q, p))
            .map(|l| l.mul_2k(-1))
    };
    near(neg_if(v, x < 0.0), prec)
}

// ---------------------------------------------------------------------------------------------
// Exponentials and logarithms.

fn exp(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x == 0.0 {
        return exact(1.0);
    }
    if x.is_infinite() || x.abs() > EXP_ARG_LIMIT {
        return if x > 0.0 { inf(false) } else { exact(0.0) };
    }
    near(Some(exp_ball(&Ball::from_f64(x), p)), prec)
}

fn exp2(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x.is_infinite() || x.abs() > 2_147_483_648.0 {
        return if x > 0.0 { inf(false) } else { exact(0.0) };
    }
    let n = x.round();
    if n == x {
        return exact_scaled(IBig::ONE, n as isize);
    }
    // x = n + f exactly (|f| ≤ 1/2); 2^x = 2^n·(1 + expm1(f·ln 2)).
    let f = x - n;
    let t = Ball::from_f64(f).mul(&consts::ln2(p + 8), p);
    let v = expm1_core(&t, p).add(&Ball::one(), p).mul_2k(n as isize);
    near(Some(v), prec)
}

fn exp10(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x.is_infinite() || x.abs() > EXP_ARG_LIMIT / std::f64::consts::LN_10 {
        return if x > 0.0 { inf(false) } else { exact(0.0) };
    }
    if x == x.trunc() && (0.0..=400.0).contains(&x) {
        return exact_scaled(IBig::from(10u8).pow(x as usize), 0);
    }
    let ex = crate::format::binary_exponent(x).max(0) as usize;
    let t = Ball::from_f64(x).mul(&consts::ln10(p + ex + 10), p + ex + 10);
    near(Some(exp_ball(&t, p)), prec)
}

fn expm1(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() {
        return nan();
    }
    if x == 0.0 {
        return exact(x);
    }
    if x == f64::NEG_INFINITY {
        return exact(-1.0);
    }
    if x.is_infinite() || x > EXP_ARG_LIMIT {
        return inf(false);
    }
    if x < -((prec + 64) as f64) {
        // e^x < e^-(prec+64) < 2^-(prec+64).
        return Approx::Near {
            value: big::exact(-1.0),
            err_log2: -(prec as isize) - 64,
        };
    }
    let xb = Ball::from_f64(x);
    let v = if x.abs() < 0.5 {
        expm1_core(&xb, p)
    } else {
        // e^x ≥ e^0.5 or ≤ e^-0.5: the subtraction loses at most 2 bits.
        exp_ball(&xb, p).sub(&Ball::one(), p)
    };
    near(Some(v), prec)
}

fn log(f: Function, x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x < 0.0 {
        return nan();
    }
    if x == 0.0 {
        return inf(true);
    }
    if x.is_infinite() {
        return inf(false);
    }
    if x == 1.0 {
        return exact(0.0);
    }
    let xb = Ball::from_f64(x);
    match f {
        Function::Log2 if xb.m == IBig::ONE => return exact(xb.e as f64),
        Function::Log10 => {
            if let Some(k) = power_of_ten(x) {
                return exact(k as f64);
            }
        }
        _ => {}
    }
    let l = log_ball(&xb, p);
    let v = match f {
        Function::Log2 => l.and_then(|l| l.div(&consts::ln2(p + 8), p)),
        Function::Log10 => l.and_then(|l| l.div(&consts::ln10(p + 8), p)),
        _ => l,
    };
    near(v, prec)
}

/// k when x = 10^k exactly (k ≥ 0: negative powers of ten are not dyadic).
fn power_of_ten(x: f64) -> Option<u32> {
    let mut v = 1.0f64;
    for k in 0..=22 {
        if v == x {
            return Some(k);
        }
        v *= 10.0; // exact up to 1e22
    }
    None
}

fn log1p(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x < -1.0 {
        return nan();
    }
    if x == -1.0 {
        return inf(true);
    }
    if x.is_infinite() {
        return inf(false);
    }
    if x == 0.0 {
        return exact(x);
    }
    near(log1p_ball(&Ball::from_f64(x), p), prec)
}

// ---------------------------------------------------------------------------------------------
// pow.

fn pow(x: f64, y: f64, prec: usize, p: usize) -> Approx {
    // C99 Annex F, in its order of precedence.
    if y == 0.0 || x == 1.0 {
        return exact(1.0);
    }
    if x.is_nan() || y.is_nan() {
        return nan();
    }
    let y_int = y.is_finite() && y == y.trunc();
    let y_odd = y_int && y.abs() < 9_007_199_254_740_992.0 && (y as i64) % 2 != 0;
    if x == 0.0 {
        let negative = x.is_sign_negative() && y_odd;
        return if y < 0.0 { inf(negative) } else { exact(0.0) };
    }
    if y.is_infinite() {
        let ax = x.abs();
        if ax == 1.0 {
            return exact(1.0);
        }
        return if (ax < 1.0) == (y < 0.0) {
            inf(false)
        } else {
            exact(0.0)
        };
    }
    if x.is_infinite() {
        let negative = x < 0.0 && y_odd;
        return if y < 0.0 { exact(0.0) } else { inf(negative) };
    }
    if x < 0.0 && !y_int {
        return nan();
    }
    let negative = x < 0.0 && y_odd;
    let ax = x.abs();
    match pow_exact(ax, y) {
        PowExact::Exact(b) => return exact_ball(&if negative { b.neg() } else { b }),
        PowExact::Overflow => return inf(negative),
        PowExact::Underflow => return exact(0.0),
        PowExact::Inexact => {}
    }
    // x^y = exp(y·ln|x|); ln|x| to p + log2|y·ln x| bits so that t = y·ln|x| is off by about
    // 2^-p absolutely.
    let t_est = y * ax.ln();
    // NaN (∞·0 cannot happen here, but ∞ can) and huge estimates are both clamped.
    if t_est.is_nan() || t_est.abs() > EXP_ARG_LIMIT {
        return if t_est > 0.0 {
            inf(negative)
        } else {
            exact(0.0)
        };
    }
    let extra = t_est.abs().log2().max(0.0) as usize + 2;
    let pl = p + extra + 8;
    let v = log_ball(&Ball::from_f64(ax), pl)
        .map(|l| l.mul(&Ball::from_f64(y), pl))
        .map(|t| exp_ball(&t, p));
    near(neg_if(v, negative), prec)
}

enum PowExact {
    Exact(Ball),
    Overflow,
    Underflow,
    Inexact,
}

/// x^y exactly when it is a dyadic rational (x > 0 finite, y finite nonzero).
///
/// x = m·2^a (m odd), y = n/2^k (n odd). x^(1/2^k) is dyadic only if k successive square
/// roots are exact; then x^y = root^n, dyadic for n > 0, and for n < 0 only when the root is a
/// power of two. A positive power of an odd m > 1 with more than 4096 bits is left to the
/// approximation: it has more than 54 significant bits, so it is neither a format number nor a
/// midpoint, and Ziv's loop ends on it.
fn pow_exact(x: f64, y: f64) -> PowExact {
    let xb = Ball::from_f64(x);
    let yb = Ball::from_f64(y);
    let (mut m, mut a) = (xb.m.clone(), xb.e);
    let mut n = yb.m.clone();
    if yb.e >= 0 {
        // y is an integer: n·2^e.
        if yb.e > 64 {
            // |y| ≥ 2^65: only powers of two can be exact, and they are clamped (a ≠ 0).
            return if m == IBig::ONE {
                clamp_pow2(a as f64 * y)
            } else {
                PowExact::Inexact
            };
        }
        n <<= yb.e as usize;
    } else {
        for _ in 0..(-yb.e) {
            match exact_sqrt(&m, a) {
                Some((r, e)) => {
                    m = r;
                    a = e;
                }
                None => return PowExact::Inexact,
            }
        }
    }
    if m == IBig::ONE {
        // 2^(a·n).
        let an = a as f64 * n.to_f64().value();
        return match clamp_pow2(an) {
            PowExact::Inexact => PowExact::Exact(Ball::exact(
                IBig::ONE,
                (IBig::from(a) * &n).try_into().expect("checked range"),
            )),
            other => other,
        };
    }
    if n.sign() == dashu_base::Sign::Negative {
        return PowExact::Inexact;
    }
    let bits = m.bit_len();
    let nn: usize = match usize::try_from(n.clone()) {
        Ok(v) if v.saturating_mul(bits) <= 4096 => v,
        _ => return PowExact::Inexact,
    };
    let e = a * nn as isize;
    PowExact::Exact(Ball::exact(m.pow(nn), e))
}

/// 2^e for an integral e given as f64: clamped beyond ±2^31 (Inexact means "in range").
fn clamp_pow2(e: f64) -> PowExact {
    if e > 2_147_483_648.0 {
        PowExact::Overflow
    } else if e < -2_147_483_648.0 {
        PowExact::Underflow
    } else {
        PowExact::Inexact
    }
}

/// √(m·2^e) when it is dyadic (m > 0).
fn exact_sqrt(m: &IBig, e: isize) -> Option<(IBig, isize)> {
    let (mut m, mut e) = (m.unsigned_abs(), e);
    if e.rem_euclid(2) != 0 {
        m <<= 1;
        e -= 1;
    }
    let (r, rem) = m.sqrt_rem();
    rem.is_zero().then(|| (IBig::from(r), e / 2))
}

// ---------------------------------------------------------------------------------------------
// Algebraic functions.

fn sqrt(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x < 0.0 {
        return nan();
    }
    if x == 0.0 || x.is_infinite() {
        return if x == 0.0 { exact(x) } else { inf(false) };
    }
    let xb = Ball::from_f64(x);
    if let Some((r, e)) = exact_sqrt(&xb.m, xb.e) {
        return exact_scaled(r, e);
    }
    near(xb.sqrt(p), prec)
}

fn rsqrt(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x < 0.0 {
        return nan();
    }
    if x == 0.0 {
        return inf(x.is_sign_negative());
    }
    if x.is_infinite() {
        return exact(0.0);
    }
    let xb = Ball::from_f64(x);
    // 1/√x is dyadic only when √x is a power of two: x = 4^j.
    if xb.m == IBig::ONE && xb.e % 2 == 0 {
        return exact_scaled(IBig::ONE, -xb.e / 2);
    }
    near(xb.sqrt(p).and_then(|s| Ball::one().div(&s, p)), prec)
}

fn cbrt(x: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        return if x.is_nan() {
            nan()
        } else if x == 0.0 {
            exact(x)
        } else {
            inf(x < 0.0)
        };
    }
    let xb = Ball::from_f64(x);
    let shift = xb.e.rem_euclid(3) as usize;
    let m: UBig = xb.m.unsigned_abs() << shift;
    let e = xb.e - shift as isize; // divisible by 3
    let negative = x < 0.0;
    let r = m.cbrt();
    if r.pow(3) == m {
        let v = IBig::from(r);
        return exact_scaled(if negative { -v } else { v }, e / 3);
    }
    // ⌊∛(m·2^(3s))⌋·2^(e/3 − s) is below the cube root by less than one unit of its last bit.
    let s = (p + 2).saturating_sub(m.bit_len() / 3);
    let r = (m << (3 * s)).cbrt();
    let unit_e = e / 3 - s as isize;
    let v = Ball {
        m: IBig::from(r),
        e: unit_e,
        r: ball::Mag::pow2(unit_e as i64),
    };
    near(neg_if(Some(v), negative), prec)
}

fn hypot(x: f64, y: f64, prec: usize, p: usize) -> Approx {
    if x.is_infinite() || y.is_infinite() {
        return inf(false);
    }
    if x.is_nan() || y.is_nan() {
        return nan();
    }
    if x == 0.0 || y == 0.0 {
        return exact(if x == 0.0 { y.abs() } else { x.abs() });
    }
    let (xb, yb) = (Ball::from_f64(x.abs()), Ball::from_f64(y.abs()));
    let gap = (xb.exponent().unwrap() - yb.exponent().unwrap()).abs();
    // An exact hypot needs integers X² + Y² = Z² (scaled by the smaller operand's last bit),
    // so X < Y²/2 < 2^105: exponents more than 160 apart never give an exact result.
    if gap <= 200 {
        let n = xb.sqr(EXACT).add(&yb.sqr(EXACT), EXACT);
        if let Some((r, e)) = exact_sqrt(&n.m, n.e) {
            return exact_scaled(r, e);
        }
        return near(n.sqrt(p), prec);
    }
    let n = xb.sqr(p).add(&yb.sqr(p), p);
    near(n.sqrt(p), prec)
}

fn div(x: f64, y: f64, prec: usize, p: usize) -> Approx {
    if x.is_nan() || y.is_nan() {
        return nan();
    }
    let negative = x.is_sign_negative() != y.is_sign_negative();
    if x.is_infinite() {
        return if y.is_infinite() {
            nan()
        } else {
            inf(negative)
        };
    }
    if y == 0.0 {
        return if x == 0.0 { nan() } else { inf(negative) };
    }
    if x == 0.0 || y.is_infinite() {
        return exact(if negative { -0.0 } else { 0.0 });
    }
    let (xb, yb) = (Ball::from_f64(x), Ball::from_f64(y));
    // Both significands are odd: x/y is dyadic iff the divisor's divides the dividend's.
    let (q, r) = (&xb.m / &yb.m, &xb.m % &yb.m);
    if r.is_zero() {
        return exact_scaled(q, xb.e - yb.e);
    }
    near(xb.div(&yb, p), prec)
}
