//! lgamma and tgamma.
//!
//! Stirling's series for z ≥ X0(w):
//!   ln Γ(z) = (z − ½) ln z − z + ½ ln 2π + Σ_{k=1}^{N} B_2k / (2k(2k−1) z^(2k−1)) + R_N,
//! where for real z > 0 the remainder R_N has the sign of, and is smaller than, the first
//! omitted term. The Bernoulli numbers come exactly from the tangent numbers T_k (integers):
//! B_2k / (2k(2k−1)) = (−1)^(k−1) T_k / ((2k−1) 4^k (4^k − 1)).
//!
//! Smaller arguments are shifted up: ln Γ(x) = ln Γ(x + n) − ln |x (x+1) … (x+n−1)|, and
//! Γ(x) = Γ(x + n) / (x (x+1) … (x+n−1)); every factor x + k is exact, so a negative x close to
//! a pole keeps its relative accuracy. Far-negative x use the reflection
//! Γ(x) Γ(1−x) = π / sin(πx), with sin(πx) after an exact reduction of x modulo 2.
//!
//! Cancellation (lgamma near its zeros 1, 2, −2.457…, …) is not estimated ahead: the retry
//! loop of [`super::refine`] sees the result's relative radius and raises the precision.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use dashu_int::{IBig, UBig};
use mantissa_num::big::Big;

use super::kernels::{constant, exp, ln, sin_pi, K};
use super::refine;
use crate::format::Exact;
use crate::reference::ball::{Ball, Mag, EXACT};
use crate::reference::Approx;

/// From this |x| on, |Γ(x)| is beyond 2^(±94000) and replaced by the stand-in 2^(±65536). See
/// [`tgamma`].
const TGAMMA_HUGE: f64 = 8192.0;

/// Positive integers up to this get Γ(n) = (n−1)! exactly; beyond, Γ(n) is far past both
/// formats' range and an enclosure serves as well.
const EXACT_FACTORIAL_MAX: f64 = 1024.0;

/// The argument from which Stirling's series is used directly at w bits. The series' smallest
/// term is about e^(−2πz), so z ≈ w/9 would just suffice; a larger z needs fewer terms (each a
/// few multiplications) for a few more shift factors (one multiplication each).
fn x0(w: usize) -> f64 {
    (w as f64 * 0.25).max(12.0).ceil()
}

/// lgamma(x) = ln |Γ(x)|.
pub fn lgamma(x: f64, prec: usize) -> Approx {
    if x.is_nan() {
        return Approx::Exact(Exact::NaN);
    }
    if x.is_infinite() || x == 0.0 || (x < 0.0 && x == x.floor()) {
        return Approx::Exact(Exact::Inf { negative: false });
    }
    if x == 1.0 || x == 2.0 {
        return Approx::Exact(Exact::Finite(Big::ZERO));
    }
    let xb = Ball::from_f64(x);
    refine(prec, |w| lgamma_ball(&xb, x, w))
}

/// tgamma(x) = Γ(x).
///
/// For x ≥ 8192, Γ(x) > 2^94000; for non-integers x ≤ −8192, |Γ(x)| < 2^(−94000). Both are
/// returned as stand-ins, `Exact(Finite(±2^(±65536)))` with Γ's sign: each rounds as the true
/// value does (±inf, ±0) and, beyond the format's range, gives every result the same ulp error
/// to the precision an f64 count of ulps has (see [`super::erf::erfc`] for why the true
/// values are not returned).
pub fn tgamma(x: f64, prec: usize) -> Approx {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return Approx::Exact(Exact::NaN);
    }
    if x == f64::INFINITY {
        return Approx::Exact(Exact::Inf { negative: false });
    }
    if x >= TGAMMA_HUGE {
        return Approx::Exact(Exact::Finite(stand_in(65536, false)));
    }
    if x <= -TGAMMA_HUGE && x != x.floor() {
        // Γ(x) < 0 exactly when ⌊x⌋ is odd (|x| < 2^52 here, so ⌊x⌋ is exact).
        let negative = (x.floor() as i64) % 2 != 0;
        return Approx::Exact(Exact::Finite(stand_in(-65536, negative)));
    }
    if x == 0.0 {
        return Approx::Exact(Exact::Inf {
            negative: x.is_sign_negative(),
        });
    }
    if x == x.floor() {
        if x < 0.0 {
            return Approx::Exact(Exact::NaN);
        }
        if x <= EXACT_FACTORIAL_MAX {
            let mut f = UBig::ONE;
            for k in 2..(x as u64) {
                f *= k;
            }
            return Approx::Exact(Exact::Finite(Big::from(f)));
        }
    }
    let xb = Ball::from_f64(x);
    refine(prec, |w| tgamma_ball(&xb, x, w))
}

/// ±2^k, with a limited precision so that arithmetic with it never builds huge exact numbers.
fn stand_in(k: isize, negative: bool) -> Big {
    let one = if negative { -IBig::ONE } else { IBig::ONE };
    Big::from_repr(
        dashu_float::Repr::new(one, k),
        dashu_float::Context::new(64),
    )
}

fn lgamma_ball(x: &Ball, xf: f64, w: usize) -> Ball {
    let x0 = x0(w);
    if xf >= x0 {
        stirling(x, w)
    } else if xf > -x0 {
        let n = (x0 - xf).ceil() as i64;
        let (z, p) = shift(x, n, w);
        stirling(&z, w).sub(&ln(&p.abs(), w), w)
    } else {
        // ln |Γ(x)| = ln π − ln |sin πx| − ln Γ(1 − x).
        let s = sin_pi(x, w).abs();
        let z = Ball::one().sub(x, EXACT);
        let a = constant(K::LnPi, w).sub(&ln(&s, w), w);
        a.sub(&stirling(&z, w), w)
    }
}

/// Bits above the binary point of ln Γ(z) ≈ z ln z, so that exp(ln Γ) gets w bits relative.
fn lg_bits(z: f64) -> usize {
    let z = z.abs().max(2.0);
    (z * z.ln()).log2().ceil().max(0.0) as usize + 4
}

fn tgamma_ball(x: &Ball, xf: f64, w: usize) -> Ball {
    let x0 = x0(w);
    if xf >= x0 {
        exp(&stirling(x, w + lg_bits(xf)), w)
    } else if xf > -x0 {
        let n = (x0 - xf).ceil() as i64;
        let (z, p) = shift(x, n, w);
        let g = exp(&stirling(&z, w + lg_bits(z.to_f64())), w);
        g.div(&p, w).unwrap_or_else(Ball::useless)
    } else {
        // Γ(x) = π / (sin(πx) Γ(1 − x)).
        let z = Ball::one().sub(x, EXACT);
        let g = exp(&stirling(&z, w + lg_bits(z.to_f64())), w);
        let s = sin_pi(x, w);
        constant(K::Pi, w)
            .div(&s.mul(&g, w), w)
            .unwrap_or_else(Ball::useless)
    }
}

/// z = x + n and the ball of x (x+1) … (x+n−1), each factor exact.
fn shift(x: &Ball, n: i64, w: usize) -> (Ball, Ball) {
    let mut p = x.clone();
    for k in 1..n {
        p = p.mul(&x.add(&Ball::from_i64(k), EXACT), w);
    }
    (x.add(&Ball::from_i64(n), EXACT), p)
}

/// ln Γ(z) for an exact z ≥ 8 by Stirling's series, absolute radius about 2^-w times
/// max(1, ln Γ(z)).
fn stirling(z: &Ball, w: usize) -> Ball {
    let w = w + 8;
    let lnz = ln(z, w);
    let zm = z.sub(&Ball::exact(IBig::ONE, -1), EXACT).round(w);
    let main = zm
        .mul(&lnz, w)
        .sub(&z.clone().round(w), w)
        .add(&constant(K::HalfLn2Pi, w), w);
    let target = main.abs_up().mul_up(Mag::pow2(-(w as i64) - 4));
    let Some(iz) = Ball::one().div(z, w) else {
        return Ball::useless();
    };
    let iz2 = iz.sqr(w);
    let mut coefs = stirling_coefs(w, 32);
    let mut sum = main;
    let mut p = iz;
    let mut prev = Mag::HUGE;
    let mut k = 1usize;
    loop {
        if k > coefs.len() {
            coefs = stirling_coefs(w, 2 * k);
        }
        let t = coefs[k - 1].mul(&p, w);
        let tu = t.abs_up();
        // Stop when the next term is negligible, or when the terms start to grow (z too
        // small for w: the bound stays valid, the retry loop sees a wide ball).
        if tu.le(target) || tu.is_zero() || !tu.le(prev) {
            return sum.add_err(tu);
        }
        sum = sum.add(&t, w);
        prev = tu;
        p = p.mul(&iz2, w);
        k += 1;
    }
}

/// T_1 … T_n, the tangent numbers (tan x = Σ T_k x^(2k−1)/(2k−1)!), by Brent and Harvey's
/// integer recurrence; cached and recomputed larger on demand.
fn tangent_numbers(n: usize) -> Arc<Vec<UBig>> {
    static CACHE: OnceLock<Mutex<Arc<Vec<UBig>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Arc::new(Vec::new())));
    let mut guard = cache.lock().expect("tangent cache");
    if guard.len() >= n {
        return guard.clone();
    }
    let m = n.max(2 * guard.len()).max(64);
    let mut t = vec![UBig::ZERO; m + 1];
    t[1] = UBig::ONE;
    for k in 2..=m {
        t[k] = &t[k - 1] * (k - 1);
    }
    for k in 2..=m {
        for j in k..=m {
            t[j] = &t[j - 1] * (j - k) + &t[j] * (j - k + 2);
        }
    }
    t.remove(0);
    *guard = Arc::new(t);
    guard.clone()
}

/// The Stirling coefficients B_2k / (2k(2k−1)), k = 1…≥n, as balls at w bits or more.
fn stirling_coefs(w: usize, n: usize) -> Arc<Vec<Ball>> {
    type Coefs = Mutex<HashMap<usize, Arc<Vec<Ball>>>>;
    static CACHE: OnceLock<Coefs> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let b = w.div_ceil(64) * 64 + 64;
    if let Some(v) = cache.lock().expect("coef cache").get(&b) {
        if v.len() >= n {
            return v.clone();
        }
    }
    let m = n.max(32);
    let tn = tangent_numbers(m);
    let v: Vec<Ball> = (1..=m)
        .map(|k| {
            let four_k = UBig::ONE << (2 * k);
            let den = (&four_k - UBig::ONE) * &four_k * (2 * k - 1);
            let num = if k % 2 == 1 {
                IBig::from(tn[k - 1].clone())
            } else {
                -IBig::from(tn[k - 1].clone())
            };
            Ball::exact(num, 0)
                .div(&Ball::exact(IBig::from(den), 0), b)
                .expect("the denominator is positive")
        })
        .collect();
    let v = Arc::new(v);
    let mut guard = cache.lock().expect("coef cache");
    let entry = guard.entry(b).or_insert_with(|| v.clone());
    if entry.len() < v.len() {
        *entry = v.clone();
    }
    entry.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tangent_numbers_and_bernoulli() {
        let t = tangent_numbers(6);
        let want = [1u64, 2, 16, 272, 7936, 353792];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(t[k], UBig::from(*w));
        }
        // B_2 = 1/6 → 1/12, B_4 = −1/30 → −1/360, B_6 = 1/42 → 1/1260.
        let c = stirling_coefs(128, 3);
        let check = |k: usize, v: f64| {
            assert!((c[k].to_f64() - v).abs() < 1e-17, "{k}");
        };
        check(0, 1.0 / 12.0);
        check(1, -1.0 / 360.0);
        check(2, 1.0 / 1260.0);
        // B_20 = −174611/330, and B_40 = −261082718496449122051/13530.
        let c = stirling_coefs(128, 20);
        check(9, -174611.0 / 330.0 / 380.0);
        let b40 = -261082718496449122051.0f64 / 13530.0 / (40.0 * 39.0);
        assert!((c[19].to_f64() / b40 - 1.0).abs() < 1e-15);
    }
}
