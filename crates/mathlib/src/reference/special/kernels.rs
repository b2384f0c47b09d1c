//! The elementary pieces the special functions are built from, in ball arithmetic: cached
//! constants (π, ln 2, √π, 2/√π, ln π, ½ ln 2π), exp, ln and sin(πx).
//!
//! exp and ln are this module's own series (not dashu's `exp`/`ln`, whose error is not
//! specified, and whose exp loses accuracy for large arguments because it reduces by an ln 2
//! that is only a few bits more precise than the result). Every truncation adds a bound of
//! the neglected tail to the radius.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use dashu_float::{round::mode::HalfEven, Context};
use mantissa_num::big::Big;

use super::ball::{dyadic, exact_add, exact_sub, int, is_neg, shl, top, Ball, Ctx, Mag};

/// A cached constant.
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

/// The constant k as a ball whose radius is below 2^-w relative to it (computed once per
/// precision bucket).
pub fn constant(k: K, w: usize) -> Ball {
    let b = bucket(w);
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
    let c = Ctx::new(b);
    match k {
        K::Pi => {
            // dashu's Chudnovsky series, trusted within two ulps (tested against a value at
            // four times the precision).
            let v = Context::<HalfEven>::new(b).pi::<2>().value();
            let err = Mag::pow2(top(&v).expect("π ≠ 0") - b as i64 + 2);
            Ball { mid: v, rad: err }
        }
        K::Ln2 => {
            // ln 2 = 2 atanh(1/3).
            let cw = Ctx::new(b + 16);
            let z = cw.div_int(&Ball::exact(int(1)), 3);
            atanh_series(&z, cw).shl(1)
        }
        K::SqrtPi => c.sqrt(&constant(K::Pi, b)),
        K::TwoOverSqrtPi => c.div(&Ball::exact(int(2)), &constant(K::SqrtPi, b)),
        K::LnPi => ln(&constant(K::Pi, b), c),
        K::HalfLn2Pi => c
            .add(&constant(K::Ln2, b), &constant(K::LnPi, b))
            .shl(-1),
    }
}

/// Σ_{i≥0} z^(2i+1)/(2i+1) = atanh z for |z| ≤ 1/3, summed until the terms fall below 2^-(w+4)
/// relative to z. The tail after the first omitted term t is at most |t|/(1 − z²) ≤ 2|t|.
fn atanh_series(z: &Ball, c: Ctx) -> Ball {
    let z2 = c.sqr(z);
    let target = z.upper() * Mag::pow2(-(c.w as i64) - 4);
    let mut sum = z.clone();
    let mut p = z.clone();
    let mut i: u64 = 1;
    loop {
        p = c.mul(&p, &z2);
        let t = c.div_int(&p, 2 * i + 1);
        let tu = t.upper();
        if tu <= target || tu.is_zero() {
            return sum.widen(tu.mul_pow2(1));
        }
        sum = c.add(&sum, &t);
        i += 1;
    }
}

/// e^a. Reduces a = s ln 2 + r with |r| ≲ ½ (ln 2 to as many extra bits as s has), then
/// e^r = (e^(r/2^k))^(2^k) by a Taylor series. Arguments beyond 2^61 give a useless ball.
pub fn exp(a: &Ball, c: Ctx) -> Ball {
    let m = &a.mid;
    let core = match top(m) {
        None => Ball::exact(int(1)),
        Some(t) if t > 61 => return Ball::useless(),
        Some(t) if t < -2 => exp_point(m, c),
        Some(t) => {
            let kb = (t.max(0) + 2) as usize;
            let cw = Ctx::new(c.w + kb + 8);
            let ln2 = constant(K::Ln2, cw.w);
            // s need not be exact: any integer near a/ln 2 keeps r small.
            let q = Context::<HalfEven>::new(kb + 16)
                .div(m.repr(), ln2.mid.repr())
                .value();
            let s: i64 = q
                .round()
                .to_int()
                .value()
                .try_into()
                .expect("|s| < 2^62");
            let r = cw.sub(&Ball::exact(m.clone()), &cw.mul_int(&ln2, s));
            let e = exp_point(&r.mid, c);
            widen_exp(e, r.rad).shl(s)
        }
    };
    widen_exp(core, a.rad)
}

/// Widens e = e^m (as a ball) to cover e^(m ± r): e^(m±r) − e^m ≤ e^m (e^r − 1), and
/// e^r − 1 ≤ 2r for r ≤ ½, ≤ 2^(⌈1.5 r⌉) beyond.
fn widen_exp(e: Ball, r: Mag) -> Ball {
    if r.is_zero() {
        return e;
    }
    let f = if r <= Mag::pow2(-1) {
        r.mul_pow2(1)
    } else {
        let rf = r.to_f64();
        if rf > 1e12 {
            Mag::HUGE
        } else {
            Mag::pow2((1.5 * rf).ceil() as i64)
        }
    };
    let u = e.upper();
    e.widen(u * f)
}

/// e^r for an exact r with |r| ≤ 1: r' = r/2^k, Taylor series for e^r' (tail after the first
/// omitted term t_j is at most t_j Σ (|r'|/(j+1))^i ≤ 2 t_j), then k squarings, each of which
/// roughly doubles the relative radius: k + 10 guard bits cover them.
fn exp_point(r: &Big, c: Ctx) -> Ball {
    let Some(t) = top(r) else {
        return Ball::exact(int(1));
    };
    let half = ((c.w as f64).sqrt() / 2.0) as i64 + 1;
    let k = (t + 1 + half).max(0);
    let cw = Ctx::new(c.w + k as usize + 10);
    let rr = Ball::exact(shl(r, -k));
    let target = Mag::pow2(-(cw.w as i64) - 2);
    let mut sum = cw.add(&Ball::exact(int(1)), &rr);
    let mut term = rr.clone();
    let mut j: u64 = 2;
    loop {
        term = cw.div_int(&cw.mul(&term, &rr), j);
        let tu = term.upper();
        if tu <= target || tu.is_zero() {
            sum = sum.widen(tu.mul_pow2(1));
            break;
        }
        sum = cw.add(&sum, &term);
        j += 1;
    }
    for _ in 0..k {
        sum = cw.sqr(&sum);
    }
    sum
}

/// ln a for a ball of positive numbers: a = f · 2^e with f in [3/4, 3/2], ln f = 2 atanh z
/// with z = (f−1)/(f+1), |z| ≤ 1/5; ln a = 2 atanh z + e ln 2. The input radius α widens the
/// result by α/(a − α) (the slope of ln over the ball).
pub fn ln(a: &Ball, c: Ctx) -> Ball {
    if !a.is_positive() {
        return Ball::useless();
    }
    let m = &a.mid;
    let mut e = top(m).expect("positive");
    let mut f = shl(m, -e);
    if shl(&f, 1) > int(3) {
        f = shl(&f, -1);
        e += 1;
    }
    let cw = Ctx::new(c.w + 10);
    let num = exact_sub(&f, &int(1));
    let mut res = if top(&num).is_none() {
        Ball::exact(Big::ZERO)
    } else {
        let den = exact_add(&f, &int(1));
        let z = cw.div(&Ball::exact(num), &Ball::exact(den));
        atanh_series(&z, cw).shl(1)
    };
    if e != 0 {
        let eb = 64 - e.unsigned_abs().leading_zeros() as usize;
        let ln2 = constant(K::Ln2, cw.w + eb);
        let cl = Ctx::new(cw.w + eb);
        res = cl.add(&res, &cl.mul_int(&ln2, e));
    }
    if a.rad.is_zero() {
        res
    } else {
        let slope = a.rad / a.lower();
        res.widen(slope)
    }
}

/// sin(πx) for an exact x. x is reduced modulo 2 exactly (x − 2·round(x/2), a dyadic), then
/// folded into t in [0, ½] with sin(π(1−t)) = sin(πt), so that near the integers the result
/// keeps its full relative accuracy. The Taylor series of sin y for y = πt ≤ π/2 alternates
/// with decreasing terms (y² < 6), so the first omitted term bounds the tail.
pub fn sin_pi(x: &Big, c: Ctx) -> Ball {
    let n = shl(x, -1).round();
    let r = exact_sub(x, &shl(&n, 1));
    let negative = is_neg(&r);
    let mut t = if negative { -r } else { r };
    if t > int(1) {
        // Only if dashu's rounding to an integer misbehaved: nothing is claimed then.
        return Ball::useless();
    }
    let half = dyadic(1, -1);
    if t > half {
        t = exact_sub(&int(1), &t);
    }
    if top(&t).is_none() {
        return Ball::exact(Big::ZERO);
    }
    let cw = Ctx::new(c.w + 8);
    let y = cw.mul(&constant(K::Pi, cw.w), &Ball::exact(t));
    let y2 = cw.sqr(&y);
    let target = y.lower() * Mag::pow2(-(cw.w as i64) - 4);
    let mut sum = y.clone();
    let mut p = y;
    let mut k: u64 = 1;
    loop {
        p = cw.div_int(&cw.mul(&p, &y2), (2 * k) * (2 * k + 1));
        let pu = p.upper();
        if pu <= target || pu.is_zero() {
            sum = sum.widen(pu);
            break;
        }
        sum = if k % 2 == 1 {
            cw.sub(&sum, &p)
        } else {
            cw.add(&sum, &p)
        };
        k += 1;
    }
    if negative {
        sum.neg()
    } else {
        sum
    }
}
