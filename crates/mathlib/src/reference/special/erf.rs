//! erf, erfc and erfinv.
//!
//! For an exact x > 0 (the odd/even symmetries handle x < 0):
//! - x ≤ 1: erf x = (2/√π) Σ (−1)^k x^(2k+1) / (k! (2k+1)). The terms decrease (x² ≤ 1) and
//!   alternate, so the first omitted term bounds the tail; the sum is at least 2/3 of its
//!   first term, so there is no cancellation.
//! - larger x, while erfc's asymptotic series cannot reach the precision:
//!   erf x = (2/√π) x e^(−x²) Σ (2x²)^k / (2k+1)!!, all terms positive (no cancellation); once
//!   the ratio 2x²/(2k+3) of consecutive terms is ≤ ½ the tail is at most twice the first
//!   omitted term. erfc = 1 − erf then, computed with 1.45 x² more bits to absorb the
//!   cancellation.
//! - large x (1.44 x² ≥ w + 8): erfc x = e^(−x²)/(x√π) Σ_{m<N} (−1)^m (2m−1)!!/(2x²)^m + R_N,
//!   where for real x > 0 the remainder has the sign of, and is smaller than, the first
//!   omitted term; erf = 1 − erfc. Beyond 1.44 x² > 2w + 64, erf is 1 within
//!   erfc x < e^(−x²) < 2^(−1.44 x²).
//!
//! erfinv: Newton's iteration on erf (or on erfc when x > ½, so that 1 − x keeps its relative
//! accuracy) gives y; then two enclosures prove erf(y − δ) < x < erf(y + δ), and erfinv x is
//! y within δ.

use std::ops::Neg;

use dashu_int::IBig;
use mantissa_num::big::{self, Big};

use super::kernels::{constant, exp, K};
use super::{finalize, refine};
use crate::format::Exact;
use crate::reference::ball::{Ball, Mag, EXACT};
use crate::reference::Approx;

/// From this x on, erfc(x) < e^(−x²) < 2^(−94_000) is replaced by the stand-in 2^(−65536).
/// See [`erfc`].
const ERFC_HUGE: f64 = 256.0;

/// erf(x).
pub fn erf(x: f64, prec: usize) -> Approx {
    if x.is_nan() {
        return Approx::Exact(Exact::NaN);
    }
    if x.is_infinite() {
        return Approx::Exact(Exact::Finite(big::exact(x.signum())));
    }
    if x == 0.0 {
        return Approx::Exact(Exact::Finite(Big::ZERO));
    }
    let xb = Ball::from_f64(x.abs());
    let approx = refine(prec, |w| erf_ball(&xb, w));
    if x < 0.0 {
        negate(approx)
    } else {
        approx
    }
}

/// erfc(x).
///
/// For x ≥ 256 (erfc(x) < 2^(−94000)) the value is the stand-in `Exact(Finite(2^(−65536)))`,
/// an upper bound of the true value. Like the true value it rounds to +0 in both formats and
/// gives every result the same ulp error (the difference is below 2^(−64000) ulp). The true
/// value is not returned because its exponent (−1.44 x², down to −10^617) soon leaves what a
/// Big can hold, and because `format::ulp_error` subtracts the exact value from the result in
/// dashu, whose addition materialises 2^gap for a gap of exponents beyond the rounding window:
/// with gaps of 2^30 or more that runs out of memory. 2^16 keeps it to microseconds.
pub fn erfc(x: f64, prec: usize) -> Approx {
    if x.is_nan() {
        return Approx::Exact(Exact::NaN);
    }
    if x == f64::INFINITY {
        return Approx::Exact(Exact::Finite(Big::ZERO));
    }
    if x == f64::NEG_INFINITY {
        return Approx::Exact(Exact::Finite(big::exact(2.0)));
    }
    if x == 0.0 {
        return Approx::Exact(Exact::Finite(big::exact(1.0)));
    }
    if x >= ERFC_HUGE {
        let tiny = Big::from_repr(
            dashu_float::Repr::new(IBig::ONE, -65536),
            dashu_float::Context::new(64),
        );
        return Approx::Exact(Exact::Finite(tiny));
    }
    let xb = Ball::from_f64(x.abs());
    if x > 0.0 {
        refine(prec, |w| erfc_ball(&xb, w))
    } else {
        // erfc(−a) = 1 + erf(a), in (1, 2): no cancellation.
        refine(prec, |w| Ball::one().add(&erf_ball(&xb, w), w))
    }
}

fn negate(a: Approx) -> Approx {
    match a {
        Approx::Near { value, err_log2 } => Approx::Near {
            value: -value,
            err_log2,
        },
        Approx::Exact(Exact::Finite(v)) => Approx::Exact(Exact::Finite(-v)),
        Approx::Exact(Exact::Inf { negative }) => Approx::Exact(Exact::Inf {
            negative: !negative,
        }),
        other => other,
    }
}

/// erf(x) for an exact x > 0, with absolute (hence relative, erf x ≥ erf' · x/2 … ≥ 0.5 x for
/// x ≤ 1) radius about 2^-w.
pub fn erf_ball(x: &Ball, w: usize) -> Ball {
    let xf = x.to_f64();
    if xf <= 1.0 {
        return erf_alternating(x, w);
    }
    let wf = w as f64;
    let capped = xf.min(ERFC_HUGE);
    if 1.44 * capped * capped > 2.0 * wf + 64.0 {
        // erfc x ≤ e^(−x²)/(x√π) < 2^(−1.44 x²) (x ≥ 1, and 1.44 < log2 e by enough to cover
        // the f64 rounding of x²).
        let bound = Mag::pow2(-(1.44 * capped * capped).floor() as i64);
        return Ball::one().add_err(bound);
    }
    if 2.88 * xf * xf >= wf + 16.0 {
        // erfc's relative error e^(−x²) times erfc ≈ e^(−x²) is below 2^-w.
        return Ball::one().sub(&erfc_asymptotic(x, w), w);
    }
    erf_positive(x, w)
}

/// erfc(x) for an exact x > 0 (in practice below 256, or the exponent of the result and
/// the reduction e^(−x²) grow with x²), with relative radius about 2^-w.
pub fn erfc_ball(x: &Ball, w: usize) -> Ball {
    let xf = x.to_f64();
    if xf <= 0.5 {
        // erfc ≥ 0.47 here: 1 − erf loses at most a bit.
        let w = w + 4;
        return Ball::one().sub(&erf_alternating(x, w), w);
    }
    if 1.44 * xf * xf >= w as f64 + 8.0 {
        return erfc_asymptotic(x, w);
    }
    // erf x = 1 − erfc x with erfc x ≈ e^(−x²)/(x√π): 1.45 x² extra bits absorb the
    // cancellation (the retry loop adds more if this estimate falls short).
    let w = w + (1.45 * xf * xf).ceil() as usize + 8;
    let e = if xf <= 1.0 {
        erf_alternating(x, w)
    } else {
        erf_positive(x, w)
    };
    Ball::one().sub(&e, w)
}

/// erf by its alternating Maclaurin series, for 0 < x ≤ 1.
fn erf_alternating(x: &Ball, w: usize) -> Ball {
    let w = w + 8;
    let x2 = x.sqr(w);
    let target = x.abs_down().mul_up(Mag::pow2(-(w as i64) - 4));
    // p_k = x^(2k+1)/k!, term_k = p_k/(2k+1).
    let mut p = x.clone();
    let mut sum = x.clone();
    let mut k: u64 = 1;
    loop {
        p = p.mul(&x2, w).div_u(k, w);
        let t = p.div_u(2 * k + 1, w);
        let tu = t.abs_up();
        if tu.le(target) || tu.is_zero() {
            sum = sum.add_err(tu);
            break;
        }
        sum = if k % 2 == 1 {
            sum.sub(&t, w)
        } else {
            sum.add(&t, w)
        };
        k += 1;
    }
    constant(K::TwoOverSqrtPi, w).mul(&sum, w)
}

/// erf by the positive series (2/√π) x e^(−x²) Σ (2x²)^k/(2k+1)!!.
fn erf_positive(x: &Ball, w: usize) -> Ball {
    let w = w + 12;
    let xx = x.sqr(EXACT);
    let a = xx.clone().mul_2k(1).round(w);
    let af = a.to_f64();
    let mut t = Ball::one();
    let mut sum = t.clone();
    let mut k: u64 = 1;
    // Stop once the terms are below 2^-(w+4) of the sum and shrinking at least twofold.
    loop {
        t = t.mul(&a, w).div_u(2 * k + 1, w);
        let tu = t.abs_up();
        let ratio_ok = af / (2 * k + 3) as f64 <= 0.49;
        let small = tu.le(sum.abs_down().mul_up(Mag::pow2(-(w as i64) - 4)));
        if ratio_ok && (small || tu.is_zero()) {
            sum = sum.add_err(tu.mul_2k(1));
            break;
        }
        sum = sum.add(&t, w);
        k += 1;
    }
    let e = exp(&xx.neg(), w);
    let f = constant(K::TwoOverSqrtPi, w).mul(x, w);
    f.mul(&e, w).mul(&sum, w)
}

/// erfc by its asymptotic series (see the module docs), for x with 1.44 x² ≳ w.
fn erfc_asymptotic(x: &Ball, w: usize) -> Ball {
    let w = w + 12;
    let xx = x.sqr(EXACT);
    let Some(inv2x2) = Ball::one().div(&xx.clone().mul_2k(1), w) else {
        return Ball::useless();
    };
    let xxf = xx.to_f64();
    let target = Mag::pow2(-(w as i64) - 4);
    let mut u = Ball::one();
    let mut sum = u.clone();
    let mut m: u64 = 1;
    loop {
        u = u.mul_int(&IBig::from(2 * m - 1), w).mul(&inv2x2, w);
        let uu = u.abs_up();
        // Past m ≈ x² the terms grow: stop there whatever the size (the bound stays valid).
        if uu.le(target) || uu.is_zero() || (2 * m + 1) as f64 > 2.0 * xxf {
            sum = sum.add_err(uu);
            break;
        }
        sum = if m % 2 == 1 {
            sum.sub(&u, w)
        } else {
            sum.add(&u, w)
        };
        m += 1;
    }
    let e = exp(&xx.neg(), w);
    let d = constant(K::SqrtPi, w).mul(x, w);
    e.mul(&sum, w).div(&d, w).unwrap_or_else(Ball::useless)
}

/// erfinv(x).
pub fn erfinv(x: f64, prec: usize) -> Approx {
    if x.is_nan() || x.abs() > 1.0 {
        return Approx::Exact(Exact::NaN);
    }
    if x.abs() == 1.0 {
        return Approx::Exact(Exact::Inf { negative: x < 0.0 });
    }
    if x == 0.0 {
        return Approx::Exact(Exact::Finite(Big::ZERO));
    }
    let a = x.abs();
    let res = match erfinv_bracket(a, prec) {
        Some(b) => finalize(b, prec),
        // Never seen; a rigorous if useless answer (erfinv of a double is below 6) that
        // the driver rejects and asks again at twice the precision.
        None => Approx::Near {
            value: big::with_bits(Big::ZERO, 8),
            err_log2: 3,
        },
    };
    if x < 0.0 {
        negate(res)
    } else {
        res
    }
}

/// A ball (y, δ) with erfinv(a) in (y − δ, y + δ), δ ≈ 2^-(prec+8) relative, for 0 < a < 1.
fn erfinv_bracket(a: f64, prec: usize) -> Option<Ball> {
    let use_c = a > 0.5;
    // The target: a itself, or c = 1 − a (exact: a is a double in (½, 1)).
    let target = if use_c {
        Ball::one().sub(&Ball::from_f64(a), EXACT)
    } else {
        Ball::from_f64(a)
    };
    let mut y = initial_guess(a, &target, use_c);
    let mut bits = 40usize;
    let goal = prec + 24;
    while bits < goal {
        bits = (2 * bits).min(goal);
        y = newton_step(&y, &target, use_c, bits + 16);
    }
    for attempt in 0..4 {
        let de = y.exponent()? - prec as isize - 8;
        let delta = Ball::exact(IBig::ONE, de);
        let lo = y.sub(&delta, EXACT);
        let hi = y.add(&delta, EXACT);
        let w = prec + 32 + 32 * attempt;
        let ok = if use_c {
            // erfc decreases: erfc(lo) > c > erfc(hi).
            is_above(&erfc_ball(&lo, w), &target) && is_below(&erfc_ball(&hi, w), &target)
        } else {
            is_below(&erf_ball(&lo, w), &target) && is_above(&erf_ball(&hi, w), &target)
        };
        if ok {
            return Some(y.add_err(Mag::pow2(de as i64)));
        }
        y = newton_step(&y, &target, use_c, goal + 32 * (attempt + 1));
    }
    None
}

/// The midpoint of b as an exact ball.
fn mid(b: &Ball) -> Ball {
    Ball::exact(b.m.clone(), b.e)
}

/// Whether every point of b is < t (t exact).
fn is_below(b: &Ball, t: &Ball) -> bool {
    // t − mid > rad.
    let d = t.sub(&mid(b), EXACT);
    !d.is_negative() && !d.abs_down().le(b.r)
}

/// Whether every point of b is > t (t exact).
fn is_above(b: &Ball, t: &Ball) -> bool {
    let d = mid(b).sub(t, EXACT);
    !d.is_negative() && !d.abs_down().le(b.r)
}

/// A starting point good to about 40 bits: Newton in f64 on libm's erf/erfc (only a guess:
/// the enclosures decide).
fn initial_guess(a: f64, target: &Ball, use_c: bool) -> Ball {
    const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    if use_c {
        let c = target.to_f64();
        let mut y = 0.4f64;
        for _ in 0..200 {
            let step = (libm::erfc(y) - c) / (TWO_OVER_SQRT_PI * (-y * y).exp());
            y += step;
            if step.abs() <= 1e-15 * y {
                break;
            }
        }
        Ball::from_f64(y)
    } else {
        // Work with the ratio y/a (≈ √π/2 for small a) so that subnormal a keep their
        // relative accuracy.
        let mut y = a * 0.886_226_925_452_758;
        if a > 1e-150 {
            for _ in 0..20 {
                y -= (libm::erf(y) - a) / (TWO_OVER_SQRT_PI * (-y * y).exp());
            }
        }
        let ratio = if a > 1e-150 {
            y / a
        } else {
            0.886_226_925_452_758
        };
        mid(&Ball::from_f64(a).mul(&Ball::from_f64(ratio), 64))
    }
}

/// One Newton step y − (erf y − a)/erf'(y) (or with erfc), at w bits; y and the result are
/// exact points.
fn newton_step(y: &Ball, target: &Ball, use_c: bool, w: usize) -> Ball {
    // 1/erf'(y) = (√π/2) e^(y²).
    let inv_d = exp(&y.sqr(EXACT), w).mul(&constant(K::SqrtPi, w).mul_2k(-1), w);
    let step = if use_c {
        // erfc' = −erf': y + (erfc y − c)/erf'.
        erfc_ball(y, w).sub(target, w).mul(&inv_d, w)
    } else {
        target.sub(&erf_ball(y, w), w).mul(&inv_d, w)
    };
    mid(&y.add(&step, w))
}
