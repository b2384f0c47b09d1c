//! What the special functions need beyond the shared pieces, in ball arithmetic: the constants
//! derived from π and ln 2 (√π, 2/√π, ln π, ½ ln 2π), exp and ln at a relative precision, and
//! sin(πx).
//!
//! π and ln 2 themselves come from [`consts`] and exp and ln from [`series`], the same code the
//! elementary functions use: integer series with explicit remainder bounds, so no constant or
//! kernel of dashu is trusted. The functions here only state their precision the way the
//! special functions ask for it (`w` bits relative to the result) and answer a failed
//! precondition with [`Ball::useless`], which the retry loops meet with more precision.

use std::collections::HashMap;
use std::ops::Neg;
use std::sync::{Mutex, OnceLock};

use dashu_int::IBig;

use crate::reference::ball::{Ball, Mag, EXACT};
use crate::reference::{consts, series};

/// A constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum K {
    /// π.
    Pi,
    /// ln 2.
    Ln2,
    /// √π.
    SqrtPi,
    /// 2/√π.
    TwoOverSqrtPi,
    /// ln π.
    LnPi,
    /// ½ ln(2π).
    HalfLn2Pi,
}

/// Precisions are grouped in steps of 64 bits (and 64 bits beyond the request) so that the
/// cache stays small while every caller gets at least what it asked for.
fn bucket(w: usize) -> usize {
    w.div_ceil(64) * 64 + 64
}

fn cache() -> &'static Mutex<HashMap<(K, usize), Ball>> {
    static CACHE: OnceLock<Mutex<HashMap<(K, usize), Ball>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The constant k as a ball whose radius is below 2^-w relative to it.
pub fn constant(k: K, w: usize) -> Ball {
    let b = bucket(w);
    match k {
        // consts keeps its own cache and hands out any number of fractional bits by a shift;
        // its radius is 4·2^-frac, so a few bits over b (π > 3, ln 2 > ½) put it below 2^-b
        // relatively, with the margin the constants computed here once had.
        K::Pi => return consts::pi(b + 8),
        K::Ln2 => return consts::ln2(b + 16),
        _ => {}
    }
    if let Some(v) = cache().lock().expect("cache lock").get(&(k, b)) {
        return v.clone();
    }
    // Computed outside the lock: some constants are built from others.
    let v = compute(k, b);
    cache()
        .lock()
        .expect("cache lock")
        .entry((k, b))
        .or_insert(v)
        .clone()
}

fn compute(k: K, b: usize) -> Ball {
    match k {
        K::Pi | K::Ln2 => constant(k, b),
        K::SqrtPi => constant(K::Pi, b).sqrt(b).unwrap_or_else(Ball::useless),
        K::TwoOverSqrtPi => Ball::from_i64(2)
            .div(&constant(K::SqrtPi, b), b)
            .unwrap_or_else(Ball::useless),
        K::LnPi => ln(&constant(K::Pi, b), b),
        K::HalfLn2Pi => constant(K::Ln2, b).add(&constant(K::LnPi, b), b).mul_2k(-1),
    }
}

/// Guard bits of exp and ln over the requested precision: the shared kernels' radius is a few
/// dozen roundings of their midpoint precision, and the callers count on about `w` bits.
const KERNEL_GUARD: usize = 10;

/// e^a, with a radius about 2^-w relative to it. The kernel reduces by the midpoint and carries
/// the radius through its doubling steps: a ball beyond 2^31 (e^a past any Big's exponent) or
/// wider than 1 (no useful result) is answered as useless, not pushed through a number of
/// steps that grows with its size.
pub fn exp(a: &Ball, w: usize) -> Ball {
    if !a.abs_up().le(Mag::pow2(31)) || !a.r.le(Mag::pow2(0)) {
        return Ball::useless();
    }
    series::exp_ball(a, w + KERNEL_GUARD)
}

/// ln a for a ball of positive numbers (useless otherwise), with a radius about 2^-w relative
/// to the result (the kernel forms y − 1 exactly, so a near 1 loses nothing).
pub fn ln(a: &Ball, w: usize) -> Ball {
    series::log_ball(a, w + KERNEL_GUARD).unwrap_or_else(Ball::useless)
}

/// sin(πx) for an exact x. x is reduced modulo 2 exactly (x − 2·round(x/2), a dyadic), then
/// folded into t in [0, ½] with sin(π(1−t)) = sin(πt), so that near the integers the result
/// keeps its full relative accuracy. The Taylor series of sin y for y = πt ≤ π/2 alternates
/// with decreasing terms (y² < 6), so the first omitted term bounds the tail.
pub fn sin_pi(x: &Ball, w: usize) -> Ball {
    debug_assert!(x.r.is_zero(), "sin_pi takes an exact argument");
    let n = x.clone().mul_2k(-1).round_to_int();
    let r = x.sub(&Ball::exact(n, 1), EXACT);
    let negative = r.is_negative();
    let mut t = r.abs();
    // t > ½, decided exactly.
    let d = t.sub(&Ball::exact(IBig::ONE, -1), EXACT);
    if d.exponent().is_some() && !d.is_negative() {
        t = Ball::one().sub(&t, EXACT);
    }
    if t.exponent().is_none() {
        return Ball::exact(IBig::ZERO, 0);
    }
    let w = w + 8;
    let y = constant(K::Pi, w).mul(&t, w);
    let y2 = y.sqr(w);
    let target = y.abs_down().mul_up(Mag::pow2(-(w as i64) - 4));
    let mut sum = y.clone();
    let mut p = y;
    let mut k: u64 = 1;
    loop {
        p = p.mul(&y2, w).div_u((2 * k) * (2 * k + 1), w);
        let pu = p.abs_up();
        if pu.le(target) || pu.is_zero() {
            sum = sum.add_err(pu);
            break;
        }
        sum = if k % 2 == 1 {
            sum.sub(&p, w)
        } else {
            sum.add(&p, w)
        };
        k += 1;
    }
    if negative {
        sum.neg()
    } else {
        sum
    }
}
