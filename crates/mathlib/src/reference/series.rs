//! The transcendental kernels, in ball arithmetic: expm1 and exp, the atanh series behind log
//! and log1p, sine and cosine after a reduction by π/2, and atan.
//!
//! Each kernel shrinks its argument (halving, or the half-angle formulas) until a Taylor
//! series converges in a few terms, sums the series in balls, adds a rigorous bound on the
//! omitted tail to the radius, and undoes the shrinking with an identity evaluated in balls.
//! The identities are chosen so that a small result keeps its relative accuracy (expm1, the
//! versine 1 − cos, atan by halving), which is what makes near-zero results cheap.
//!
//! `p` is the midpoint precision of every ball operation; the radius of the returned ball is
//! the error bound, whatever `p` turns out to buy.

use std::ops::Neg;

use dashu_base::RemEuclid;
use dashu_int::IBig;

use super::ball::{Ball, Mag, EXACT};
use super::consts;

/// log2 of the bound to which a kernel's argument is shrunk: about 0.75·√p, which balances the
/// number of series terms (∝ p/K) against the number of doubling steps (∝ K).
fn shrink_target(p: usize) -> i64 {
    ((p as f64).sqrt() * 0.75) as i64 + 2
}

/// An upper bound of log2(n!) (Stirling-free: a plain sum, n is small).
fn log2_fact(n: u64) -> f64 {
    (2..=n).map(|k| (k as f64).log2()).sum()
}

/// An upper bound of x^n / (a·(a+1)·…·b), computed in Mags.
fn pow_over_fact(x: Mag, n: u32, a: u64, b: u64) -> Mag {
    let mut t = x.powi(n);
    for k in a..=b {
        t = t.div_up(Mag::from_u64(k));
    }
    t
}

/// expm1(r) for |r| ≲ 1 (any ball; wider ones give wider results).
///
/// s = r/2^k with |s| ≤ 2^-K; expm1(s) = s·(1 + s/2·(1 + s/3·(…(1 + s/N)))) by Horner, the
/// tail Σ_{j>N} |s|^j/j! ≤ 2|s|^(N+1)/(N+1)! (|s| ≤ 1/2) added to the radius, N the first
/// count that makes the tail relatively below 2^-(p+8). Then k times expm1(2s) =
/// expm1(s)·(expm1(s) + 2), which keeps a small result relatively accurate.
pub fn expm1_core(r: &Ball, p: usize) -> Ball {
    let up = r.abs_up();
    let Some(lu) = up.log2_ceil() else {
        return Ball::exact(IBig::ZERO, 0);
    };
    let kk = shrink_target(p);
    let k = (lu + kk).max(0);
    let s = r.clone().mul_2k(-(k as isize));
    let ls = lu - k; // |s| ≤ 2^ls ≤ 2^-K
    let mut n: u64 = 1;
    while (n as f64) * (ls as f64) - log2_fact(n + 1) > -(p as f64) - 8.0 && n < 10_000 {
        n += 1;
    }
    let one = Ball::one();
    let mut h = Ball::one();
    for j in (2..=n).rev() {
        h = h.mul(&s, p).div_u(j, p).add(&one, p);
    }
    let tail = pow_over_fact(s.abs_up(), n as u32 + 1, 2, n + 1).mul_2k(1);
    let mut e = h.mul(&s, p).add_err(tail);
    let two = Ball::from_i64(2);
    for _ in 0..k {
        e = e.mul(&e.add(&two, p), p);
    }
    e
}

/// exp(t) for |t| ≤ 2^31 (callers clamp larger arguments): t = n·ln 2 + r, |r| ≲ ln2/2, and
/// exp(t) = 2^n·(1 + expm1(r)). ln 2 carries enough bits that n·ln 2 is off by < 2^-(p+6).
pub fn exp_ball(t: &Ball, p: usize) -> Ball {
    let tf = t.to_f64();
    let n = (tf * std::f64::consts::LOG2_E).round() as i64;
    let r = if n == 0 {
        t.clone()
    } else {
        let nb = (64 - n.unsigned_abs().leading_zeros()) as usize;
        let l2 = consts::ln2(p + nb + 8).mul_int(&IBig::from(n), EXACT);
        t.sub(&l2, p + nb + 8)
    };
    expm1_core(&r, p).add(&Ball::one(), p).mul_2k(n as isize)
}

/// z·Σ_j (±1)^j z^(2j)/(2j+1): atanh(z) (`alternating` false) or atan(z) (true), for
/// |z|² ≤ 1/2. The tail after the last term j is at most w^(j+1)/(2j+3)/(1 − w) ≤
/// 2w^(j+1)/(2j+3) (w = z², bounded by its ball), whether or not the signs alternate.
fn odd_series(z: &Ball, p: usize, alternating: bool) -> Option<Ball> {
    let w = z.sqr(p);
    let wu = w.abs_up();
    if !wu.le(Mag::pow2(-1)) {
        return None;
    }
    let target = Mag::pow2(-(p as i64) - 8);
    let mut sum = Ball::one();
    let mut pw = Ball::one();
    let mut pu = Mag::from_u64(1); // bound of w^j
    let mut j = 0u64;
    loop {
        let tail = pu.mul_up(wu).mul_2k(1).div_up(Mag::from_u64(2 * j + 3));
        if tail.le(target) || j > 100_000 {
            sum = sum.add_err(tail);
            break;
        }
        j += 1;
        pw = pw.mul(&w, p);
        pu = pu.mul_up(wu);
        let term = pw.div_u(2 * j + 1, p);
        sum = if alternating && j % 2 == 1 {
            sum.sub(&term, p)
        } else {
            sum.add(&term, p)
        };
    }
    Some(z.mul(&sum, p))
}

/// atanh(z) for |z| ≤ 1/√2 (used on |z| ≤ 0.18).
pub fn atanh_series(z: &Ball, p: usize) -> Option<Ball> {
    odd_series(z, p, false)
}

/// ln(v) for a ball of positive reals: v = 2^E·y with y in [√½, √2), ln y = 2·atanh(z),
/// z = (y − 1)/(y + 1), |z| ≤ 0.1716; y − 1 is formed exactly, so a v near 1 keeps its
/// relative accuracy.
pub fn log_ball(v: &Ball, p: usize) -> Option<Ball> {
    if v.is_negative() || !v.excludes_zero() {
        return None;
    }
    let mut ex = v.exponent()?;
    let mut y = v.clone().mul_2k(-ex);
    if y.to_f64() > std::f64::consts::SQRT_2 {
        ex += 1;
        y = y.mul_2k(-1);
    }
    let one = Ball::one();
    let num = y.sub(&one, EXACT);
    let den = y.add(&one, p);
    let z = num.div(&den, p)?;
    let l = atanh_series(&z, p)?.mul_2k(1);
    if ex == 0 {
        return Some(l);
    }
    let nb = (usize::BITS - ex.unsigned_abs().leading_zeros()) as usize;
    let c = consts::ln2(p + nb + 8).mul_int(&IBig::from(ex), p + 8);
    Some(c.add(&l, p))
}

/// ln(1 + u) for a ball u > −1: 2·atanh(u/(2 + u)) when |u| < 1/4 (relative accuracy for small
/// u), else ln of 1 + u.
pub fn log1p_ball(u: &Ball, p: usize) -> Option<Ball> {
    if u.to_f64().abs() < 0.25 {
        let den = u.add(&Ball::from_i64(2), p);
        let z = u.div(&den, p)?;
        Some(atanh_series(&z, p)?.mul_2k(1))
    } else {
        log_ball(&u.add(&Ball::one(), p), p)
    }
}

/// (sin r, cos r) for |r| ≲ 1 (after reduction |r| ≤ π/4 + tiny).
///
/// With s = r/2^k, |s| ≤ 2^-K, the versine V(s) = 1 − cos s = Σ_{j≥1} (−1)^(j+1) s^(2j)/(2j)!
/// by Horner in w = s², tail ≤ 2w^(N+1)/(2N+2)!; then k times V(2s) = 2V(2 − V), which keeps
/// V relatively accurate; cos r = 1 − V and sin r = ±√(V(2 − V)), the sign of r (|r| < π/2).
pub fn sincos(r: &Ball, p: usize) -> (Ball, Ball) {
    let one = Ball::one();
    let up = r.abs_up();
    let Some(lu) = up.log2_ceil() else {
        return (Ball::exact(IBig::ZERO, 0), one);
    };
    if !r.excludes_zero() {
        // The ball holds 0: |sin r| ≤ |r|, |1 − cos r| ≤ r²/2.
        let s = Ball {
            m: IBig::ZERO,
            e: 0,
            r: up,
        };
        let c = one.add_err(up.mul_up(up));
        return (s, c);
    }
    let kk = shrink_target(p) / 2 + 1;
    let k = (lu + kk).max(0);
    let s = r.clone().mul_2k(-(k as isize));
    let ls = lu - k;
    let w = s.sqr(p);
    // Relative to V ≈ w/2 the tail is ≤ 4w^N/(2N+2)!.
    let mut n: u64 = 1;
    while 2.0 + (2 * n) as f64 * (ls as f64) - log2_fact(2 * n + 2) > -(p as f64) - 8.0
        && n < 10_000
    {
        n += 1;
    }
    let mut h = Ball::one();
    for j in (1..n).rev() {
        let d = (2 * j + 1) * (2 * j + 2);
        h = one.sub(&h.mul(&w, p).div_u(d, p), p);
    }
    let wu = w.abs_up();
    let tail = pow_over_fact(wu, n as u32 + 1, 2, 2 * n + 2).mul_2k(1);
    let mut v = h.mul(&w, p).mul_2k(-1).add_err(tail);
    let two = Ball::from_i64(2);
    for _ in 0..k {
        v = v.mul(&two.sub(&v, p), p).mul_2k(1);
    }
    let c = one.sub(&v, p);
    let s2 = v.mul(&two.sub(&v, p), p);
    let sin = match s2.sqrt(p) {
        Some(s) => {
            if r.is_negative() {
                s.neg()
            } else {
                s
            }
        }
        None => Ball {
            m: IBig::ZERO,
            e: 0,
            r: up,
        },
    };
    (sin, c)
}

/// x = k·π/2 + r with the nearest integer k: (k mod 4, r), r relatively accurate to about
/// 2^-(p+16). π/2 carries p + 64 + (exponent of x) fractional bits, so k·π/2 is off by about
/// 2^-(p+62); when r comes out small (x near a multiple of π/2) the reduction is redone with
/// as many more bits as r lost.
pub fn reduce(x: f64, p: usize) -> (usize, Ball) {
    let xb = Ball::from_f64(x);
    if x.abs() < 0.78 {
        return (0, xb);
    }
    let ex = crate::format::binary_exponent(x).max(0) as usize;
    let mut extra = 0usize;
    loop {
        let frac = p + ex + 64 + extra;
        let hp = consts::half_pi(frac);
        let k: IBig = if x.abs() < 1e9 {
            IBig::from((x * std::f64::consts::FRAC_2_PI).round() as i64)
        } else {
            // |q − x/(π/2)| is far below 1/4 at ex + 32 bits.
            xb.div(&hp, ex + 32)
                .expect("π/2 is not zero")
                .round_to_int()
        };
        // Exact subtraction: the cancellation is the point, no bit of x may be cut before it.
        let r = xb.sub(&hp.mul_int(&k, EXACT), EXACT).round(p + 32);
        let q = k.rem_euclid(IBig::from(4));
        let q = usize::try_from(q).expect("k mod 4");
        // Relative accuracy: radius ≤ |r|·2^-(p+16)?
        let good = match (r.exponent(), r.r.log2_ceil()) {
            (Some(er), Some(rr)) => (rr as isize) <= er - (p as isize) - 16,
            (Some(_), None) => true,
            _ => false,
        };
        if good || extra > 4 * p + 2200 {
            return (q, r.round(p));
        }
        let lost = match r.exponent() {
            Some(er) => (-er).max(0) as usize,
            None => p,
        };
        extra += lost + 32;
    }
}

/// atan(z) for any ball z: for |z| > 1, ±π/2 − atan(1/z); else `atan_small`.
pub fn atan_ball(z: &Ball, p: usize) -> Option<Ball> {
    let zf = z.to_f64();
    if zf.abs() > 1.0 {
        let inv = Ball::one().div(z, p)?;
        let a = atan_small(&inv, p)?;
        let hp = consts::half_pi(p + 4);
        let hp = if zf < 0.0 { hp.neg() } else { hp };
        return Some(hp.sub(&a, p));
    }
    atan_small(z, p)
}

/// atan(z) for |z| ≤ 1: halve the angle with atan(z) = 2·atan(z/(1 + √(1 + z²))) until
/// |z| ≤ 2^-K, sum the alternating series, scale back (a small z keeps its relative accuracy).
fn atan_small(z: &Ball, p: usize) -> Option<Ball> {
    let one = Ball::one();
    let target = Mag::pow2(-shrink_target(p));
    let mut z = z.clone();
    let mut k = 0isize;
    while !z.abs_up().le(target) && k < 64 {
        let q = z.sqr(p).add(&one, p).sqrt(p)?.add(&one, p);
        z = z.div(&q, p)?;
        k += 1;
    }
    Some(odd_series(&z, p, true)?.mul_2k(k))
}
