//! Ball arithmetic: a midpoint (an arbitrary-precision binary float) and a radius (a small
//! float that only ever rounds upward), so that every operation returns a ball containing the
//! exact result of the operation applied to any points of its operand balls.
//!
//! Composing the special functions out of balls means no error analysis has to be redone by
//! hand for each formula: rounding errors, truncation remainders and the errors of constants
//! are all carried in the radius. The only trusted pieces are
//! - dashu's `+ − × ÷` at a limited precision returning a value within one unit in the last
//!   place of the exact result (they are correctly rounded; one ulp leaves a factor two of
//!   slack), and `sqrt` within two ulps;
//! - dashu's π within two ulps;
//! - the truncation bounds of the series used (stated where they are used).
//!
//! The tests in `tests/reference_special.rs` check the first two against exact products and
//! against evaluations at four times the precision.

use std::cmp::Ordering;

use dashu_base::{BitTest, Sign, UnsignedAbs};
use dashu_float::{round::mode::HalfEven, Context, Repr};
use dashu_int::IBig;
use mantissa_num::big::Big;

/// Significant bits of a [`Mag`] (normalised mantissas lie in `[2^(MB−1), 2^MB)`).
const MB: u32 = 30;

/// A non-negative upper bound `m · 2^e` (or zero), kept to 30 bits and always rounded up.
/// The exponent is an i64: bounds such as erfc(x) < 2^(−1.44 x²) for large x reach far below
/// any f64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mag {
    m: u64,
    e: i64,
}

impl Mag {
    /// Zero.
    pub const ZERO: Mag = Mag { m: 0, e: 0 };
    /// A bound so large that any ball carrying it is useless (2^(2^40)); the callers' retry
    /// loops then ask for more precision.
    pub const HUGE: Mag = Mag {
        m: 1 << (MB - 1),
        e: 1 << 40,
    };

    fn norm(m: u128, e: i64, up: bool) -> Mag {
        if m == 0 {
            return Mag::ZERO;
        }
        let bl = 128 - m.leading_zeros();
        if bl > MB {
            let s = bl - MB;
            let mut q = (m >> s) as u64;
            if up && m & ((1u128 << s) - 1) != 0 {
                q += 1;
            }
            let mut e = e + s as i64;
            if q == 1 << MB {
                q >>= 1;
                e += 1;
            }
            Mag { m: q, e }
        } else {
            let s = MB - bl;
            Mag {
                m: (m << s) as u64,
                e: e - s as i64,
            }
        }
    }

    /// 2^k.
    pub fn pow2(k: i64) -> Mag {
        Mag {
            m: 1 << (MB - 1),
            e: k - (MB as i64 - 1),
        }
    }

    /// n, rounded up.
    pub fn from_u64(n: u64) -> Mag {
        Mag::norm(n as u128, 0, true)
    }

    /// Whether this is zero.
    pub fn is_zero(self) -> bool {
        self.m == 0
    }

    /// An upper bound of self + o.
    fn add_up(self, o: Mag) -> Mag {
        if self.is_zero() {
            return o;
        }
        if o.is_zero() {
            return self;
        }
        let (hi, lo) = if self.e >= o.e { (self, o) } else { (o, self) };
        let d = hi.e - lo.e;
        if d > 90 {
            // lo < 2^(hi.e − 60): one unit of hi's last place covers it.
            Mag::norm(hi.m as u128 + 1, hi.e, true)
        } else {
            Mag::norm(((hi.m as u128) << d) + lo.m as u128, lo.e, true)
        }
    }

    /// An upper bound of self · o.
    fn mul_up(self, o: Mag) -> Mag {
        if self.is_zero() || o.is_zero() {
            return Mag::ZERO;
        }
        Mag::norm(self.m as u128 * o.m as u128, self.e + o.e, true)
    }

    /// An upper bound of self / o (o a lower bound of the divisor); HUGE when o is zero.
    fn div_up(self, o: Mag) -> Mag {
        if self.is_zero() {
            return Mag::ZERO;
        }
        if o.is_zero() {
            return Mag::HUGE;
        }
        let n = (self.m as u128) << 64;
        let q = n / o.m as u128;
        let q = if n % o.m as u128 != 0 { q + 1 } else { q };
        Mag::norm(q, self.e - o.e - 64, true)
    }

    /// A lower bound of max(self − o, 0), where self is read as a lower bound and o as an upper
    /// bound.
    pub fn sub_lower(self, o: Mag) -> Mag {
        if o.is_zero() {
            return self;
        }
        if self <= o {
            return Mag::ZERO;
        }
        // self > o with both normalised implies self.e ≥ o.e.
        let d = self.e - o.e;
        if d > 90 {
            Mag::norm(self.m as u128 - 1, self.e, false)
        } else {
            Mag::norm(((self.m as u128) << d) - o.m as u128, o.e, false)
        }
    }

    /// self · 2^k (exact).
    pub fn mul_pow2(self, k: i64) -> Mag {
        if self.is_zero() {
            self
        } else {
            Mag {
                m: self.m,
                e: self.e + k,
            }
        }
    }

    /// The least L with self ≤ 2^L; None for zero.
    pub fn ceil_log2(self) -> Option<i64> {
        if self.is_zero() {
            None
        } else {
            Some(self.e + (64 - (self.m - 1).leading_zeros()) as i64)
        }
    }

    /// The greatest L with 2^L ≤ self; None for zero.
    pub fn floor_log2(self) -> Option<i64> {
        if self.is_zero() {
            None
        } else {
            Some(self.e + (63 - self.m.leading_zeros()) as i64)
        }
    }

    fn sig_top(x: &Big) -> Option<(u128, bool, i64)> {
        let repr = x.repr();
        let sig = repr.significand().unsigned_abs();
        let bl = sig.bit_len();
        if bl == 0 {
            return None;
        }
        let ex = repr.exponent() as i64;
        if bl <= 100 {
            let v: u128 = (&sig).try_into().expect("fits");
            Some((v, false, ex))
        } else {
            let s = bl - 100;
            let top: u128 = (&sig >> s).try_into().expect("fits");
            let sticky = sig.trailing_zeros().is_some_and(|tz| tz < s);
            Some((top, sticky, ex + s as i64))
        }
    }

    /// An upper bound of |x|.
    pub fn of_big_upper(x: &Big) -> Mag {
        match Mag::sig_top(x) {
            None => Mag::ZERO,
            Some((m, sticky, e)) => Mag::norm(m + sticky as u128, e, true),
        }
    }

    /// A lower bound of |x|.
    pub fn of_big_lower(x: &Big) -> Mag {
        match Mag::sig_top(x) {
            None => Mag::ZERO,
            Some((m, _, e)) => Mag::norm(m, e, false),
        }
    }

    /// The exact value as a Big (limited to 64 bits of precision so that arithmetic with it
    /// never builds huge exact numbers).
    pub fn to_big(self) -> Big {
        Big::from_repr(
            Repr::new(IBig::from(self.m), self.e as isize),
            Context::new(64),
        )
    }

    /// An approximation as f64 (saturating), for heuristics only.
    pub fn to_f64(self) -> f64 {
        if self.is_zero() {
            return 0.0;
        }
        let e = self.e.clamp(-2000, 2000) as i32;
        self.m as f64 * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
    }
}

impl std::ops::Add for Mag {
    type Output = Mag;
    /// An upper bound of the sum.
    fn add(self, o: Mag) -> Mag {
        self.add_up(o)
    }
}

impl std::ops::Mul for Mag {
    type Output = Mag;
    /// An upper bound of the product.
    fn mul(self, o: Mag) -> Mag {
        self.mul_up(o)
    }
}

impl std::ops::Div for Mag {
    type Output = Mag;
    /// An upper bound of the quotient, the divisor read as a lower bound (HUGE for zero).
    fn div(self, o: Mag) -> Mag {
        self.div_up(o)
    }
}

impl PartialOrd for Mag {
    fn partial_cmp(&self, o: &Mag) -> Option<Ordering> {
        Some(match (self.is_zero(), o.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self.e.cmp(&o.e).then(self.m.cmp(&o.m)),
        })
    }
}

/// The binary exponent of the leading bit of a nonzero Big (|x| in [2^t, 2^(t+1))).
pub fn top(x: &Big) -> Option<i64> {
    crate::format::big_exponent(x)
}

/// An exact integer as a Big.
pub fn int(n: i64) -> Big {
    Big::from_repr(Repr::new(IBig::from(n), 0), Context::new(0))
}

/// An exact dyadic m · 2^e as a Big.
pub fn dyadic(m: i64, e: isize) -> Big {
    Big::from_repr(Repr::new(IBig::from(m), e), Context::new(0))
}

/// x · 2^k, exact.
pub fn shl(x: &Big, k: i64) -> Big {
    x.clone() << k as isize
}

/// Exact x − y (unlimited precision: only for operands whose exponents are close, such as an
/// f64 and a working-precision value).
pub fn exact_sub(x: &Big, y: &Big) -> Big {
    Context::<HalfEven>::new(0).sub(x.repr(), y.repr()).value()
}

/// Exact x + y.
pub fn exact_add(x: &Big, y: &Big) -> Big {
    Context::<HalfEven>::new(0).add(x.repr(), y.repr()).value()
}

/// Exact x · y.
pub fn exact_mul(x: &Big, y: &Big) -> Big {
    Context::<HalfEven>::new(0).mul(x.repr(), y.repr()).value()
}

/// Whether x < 0.
pub fn is_neg(x: &Big) -> bool {
    x.repr().significand().sign() == Sign::Negative
}

/// An approximation as f64 (for heuristics only; ±inf or 0 outside f64's range).
pub fn approx_f64(x: &Big) -> f64 {
    x.to_f64().value()
}

/// A ball: every value within `rad` of `mid`.
#[derive(Clone, Debug)]
pub struct Ball {
    /// The midpoint.
    pub mid: Big,
    /// The radius (an upper bound).
    pub rad: Mag,
}

impl Ball {
    /// The exact point x.
    pub fn exact(x: Big) -> Ball {
        Ball {
            mid: x,
            rad: Mag::ZERO,
        }
    }

    /// An upper bound of |v| over the ball.
    pub fn upper(&self) -> Mag {
        Mag::of_big_upper(&self.mid) + self.rad
    }

    /// A lower bound of |v| over the ball (zero when the ball contains zero).
    pub fn lower(&self) -> Mag {
        Mag::of_big_lower(&self.mid).sub_lower(self.rad)
    }

    /// The ball widened by r.
    pub fn widen(mut self, r: Mag) -> Ball {
        self.rad = self.rad + r;
        self
    }

    /// −ball.
    pub fn neg(&self) -> Ball {
        Ball {
            mid: -self.mid.clone(),
            rad: self.rad,
        }
    }

    /// ball · 2^k (exact).
    pub fn shl(&self, k: i64) -> Ball {
        Ball {
            mid: shl(&self.mid, k),
            rad: self.rad.mul_pow2(k),
        }
    }

    /// Whether every point of the ball is > 0.
    pub fn is_positive(&self) -> bool {
        !is_neg(&self.mid) && !self.lower().is_zero()
    }

    /// A ball that contains everything (for failed preconditions: the retry loops then ask for
    /// more precision, and the driver never accepts it).
    pub fn useless() -> Ball {
        Ball {
            mid: Big::ZERO,
            rad: Mag::HUGE,
        }
    }
}

/// Arithmetic at a working precision of `w` bits.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// The working precision.
    pub w: usize,
    ctx: Context<HalfEven>,
}

impl Ctx {
    /// Arithmetic rounding to `w` bits.
    pub fn new(w: usize) -> Ctx {
        Ctx {
            w,
            ctx: Context::new(w.max(8)),
        }
    }

    /// The value of a rounded operation, with a bound of its rounding error: one ulp of the
    /// result at w bits (twice the half-ulp of correct rounding). dashu's exact/inexact flag is
    /// not relied on: every nonzero result is charged its ulp.
    fn rounded(&self, r: dashu_float::round::Rounded<Big>) -> (Big, Mag) {
        let v = r.value();
        let err = match top(&v) {
            Some(t) => Mag::pow2(t - self.ctx.precision() as i64 + 1),
            None => Mag::ZERO,
        };
        (v, err)
    }

    /// a + b.
    pub fn add(&self, a: &Ball, b: &Ball) -> Ball {
        let (mid, e) = self.rounded(self.ctx.add(a.mid.repr(), b.mid.repr()));
        Ball {
            mid,
            rad: a.rad + b.rad + e,
        }
    }

    /// a − b.
    pub fn sub(&self, a: &Ball, b: &Ball) -> Ball {
        let (mid, e) = self.rounded(self.ctx.sub(a.mid.repr(), b.mid.repr()));
        Ball {
            mid,
            rad: a.rad + b.rad + e,
        }
    }

    /// a · b.
    pub fn mul(&self, a: &Ball, b: &Ball) -> Ball {
        let (mid, e) = self.rounded(self.ctx.mul(a.mid.repr(), b.mid.repr()));
        // |ab − (a+α)(b+β)| ≤ |a|β + |b|α + αβ.
        let prop = Mag::of_big_upper(&a.mid) * b.rad
            + Mag::of_big_upper(&b.mid) * a.rad
            + a.rad * b.rad;
        Ball {
            mid,
            rad: prop + e,
        }
    }

    /// a².
    pub fn sqr(&self, a: &Ball) -> Ball {
        self.mul(a, a)
    }

    /// a / b (useless when b's ball contains zero).
    pub fn div(&self, a: &Ball, b: &Ball) -> Ball {
        let blow = b.lower();
        if blow.is_zero() {
            return Ball::useless();
        }
        let (mid, e) = self.rounded(self.ctx.div(a.mid.repr(), b.mid.repr()));
        // |a/b − (a+α)/(b+β)| = |aβ − bα| / (|b| |b+β|) ≤ (|a/b| β + α) / (|b| − β).
        let rad = if a.rad.is_zero() && b.rad.is_zero() {
            e
        } else {
            let q = Mag::of_big_upper(&mid) + e;
            (q * b.rad + a.rad) / blow + e
        };
        Ball { mid, rad }
    }

    /// a / n for a positive integer n.
    pub fn div_int(&self, a: &Ball, n: u64) -> Ball {
        let (mid, e) = self.rounded(
            self.ctx
                .div(a.mid.repr(), &Repr::new(IBig::from(n), 0)),
        );
        Ball {
            mid,
            rad: a.rad / Mag::from_u64(n) + e,
        }
    }

    /// a · n for an integer n.
    pub fn mul_int(&self, a: &Ball, n: i64) -> Ball {
        let (mid, e) = self.rounded(self.ctx.mul(a.mid.repr(), &Repr::new(IBig::from(n), 0)));
        Ball {
            mid,
            rad: a.rad * Mag::from_u64(n.unsigned_abs()) + e,
        }
    }

    /// The exact x rounded to w bits, as a ball (the rounding error measured exactly).
    pub fn round(&self, x: &Big) -> Ball {
        let mid = mantissa_num::big::with_bits(x.clone(), self.ctx.precision());
        let mid = Big::from_repr(mid.into_repr(), self.ctx);
        let rad = Mag::of_big_upper(&exact_sub(x, &mid));
        Ball { mid, rad }
    }

    /// √a for a ball lying in [1, ∞) (dashu's square root, trusted within two ulps). There
    /// |√a − √(a+α)| ≤ α / (√a + √(a+α)) ≤ α / 2.
    pub fn sqrt(&self, a: &Ball) -> Ball {
        if a.lower() < Mag::from_u64(1) || is_neg(&a.mid) {
            return Ball::useless();
        }
        let (mid, e) = self.rounded(self.ctx.sqrt(a.mid.repr()));
        Ball {
            mid,
            rad: a.rad + e.mul_pow2(1),
        }
    }
}

impl Mag {
    /// A lower bound of self / o (o an upper bound of the divisor).
    pub fn div_lower(self, o: Mag) -> Mag {
        if self.is_zero() || o.is_zero() {
            return Mag::ZERO;
        }
        let n = (self.m as u128) << 64;
        Mag::norm(n / o.m as u128, self.e - o.e - 64, false)
    }
}
