//! Ball arithmetic: a binary floating-point midpoint with a rigorous radius, shared by the
//! elementary and the special references.
//!
//! Every operation returns a ball that contains the exact result of the operation applied to
//! every pair of points of its argument balls. The radius therefore carries, without any
//! per-function error analysis, the error of each rounding of the midpoint and the propagation
//! of the inputs' errors; a function only has to add what ball arithmetic cannot see: the
//! truncation error of a series, bounded separately (see `series.rs`).
//!
//! The midpoint is an integer significand and an exponent, and every rounding is done here on
//! the integer (a right shift, charged one unit of the last kept bit): nothing is trusted of a
//! floating-point library's rounding, only exact integer arithmetic. This is why this design
//! was kept over one on dashu's floats, which had to trust their `+ − × ÷ √` to an ulp.
//!
//! Radii are [`Mag`]s: a 32-bit significand with an unbounded exponent, every operation
//! rounded upward (or downward for the lower bounds a division or square root needs). Their
//! exponent range is what f64 lacks: a radius of 2^-20000 is met at high precision on tiny
//! results, and erfc's bounds reach 2^-94000.

use std::ops::Neg;

use dashu_base::{BitTest, Sign, SquareRoot, UnsignedAbs};
use dashu_int::{IBig, UBig, Word};

use mantissa_num::big::Big;

/// A precision large enough that an operation given it never rounds (used for sums and
/// products whose operands are exact and short).
pub const EXACT: usize = usize::MAX / 8;

/// A nonnegative real m·2^e with m normalised to [2^31, 2^32), or zero. Used as an upper
/// bound (operations without suffix round up) or as a lower bound (`_down` operations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mag {
    m: u64,
    e: i64,
}

impl Mag {
    /// Zero.
    pub const ZERO: Mag = Mag { m: 0, e: 0 };
    /// 2^(2^40): larger than any bound a finite result of these functions needs, so a ball
    /// carrying it ([`Ball::useless`]) is never accepted and its caller asks for more precision.
    pub const HUGE: Mag = Mag {
        m: 1 << 31,
        e: (1 << 40) - 31,
    };

    /// The smallest normalised Mag ≥ m·2^e.
    #[inline]
    fn up(m: u128, e: i64) -> Mag {
        Mag::norm(m, e, true)
    }

    /// The largest normalised Mag ≤ m·2^e.
    #[inline]
    fn down(m: u128, e: i64) -> Mag {
        Mag::norm(m, e, false)
    }

    /// m·2^e normalised to 32 bits, the dropped bits rounding up or down.
    #[inline]
    fn norm(m: u128, e: i64, up: bool) -> Mag {
        if m == 0 {
            return Mag::ZERO;
        }
        let bits = 128 - m.leading_zeros() as i64;
        if bits <= 32 {
            let s = 32 - bits;
            return Mag {
                m: (m << s) as u64,
                e: e - s,
            };
        }
        let s = (bits - 32) as u32;
        let mut q = m >> s;
        if up && (q << s) != m {
            q += 1;
        }
        if q >> 32 != 0 {
            // Rounding up carried into a 33rd bit: q is exactly 2^32.
            Mag {
                m: (q >> 1) as u64,
                e: e + s as i64 + 1,
            }
        } else {
            Mag {
                m: q as u64,
                e: e + s as i64,
            }
        }
    }

    /// 2^k exactly.
    pub fn pow2(k: i64) -> Mag {
        Mag {
            m: 1 << 31,
            e: k - 31,
        }
    }

    /// n exactly when n < 2^32, else rounded up.
    pub fn from_u64(n: u64) -> Mag {
        Mag::up(n as u128, 0)
    }

    /// Whether this is zero.
    pub fn is_zero(self) -> bool {
        self.m == 0
    }

    /// An upper bound of self + o.
    pub fn add_up(self, o: Mag) -> Mag {
        if self.m == 0 {
            return o;
        }
        if o.m == 0 {
            return self;
        }
        let (a, b) = if self.e >= o.e { (self, o) } else { (o, self) };
        let gap = (a.e - b.e) as u64;
        if gap > 90 {
            // b < 2^(b.e+32) is far below one unit of a's last bit: one unit covers it.
            Mag::up(a.m as u128 + 1, a.e)
        } else {
            Mag::up(((a.m as u128) << gap) + b.m as u128, b.e)
        }
    }

    /// An upper bound of self · o.
    pub fn mul_up(self, o: Mag) -> Mag {
        if self.m == 0 || o.m == 0 {
            return Mag::ZERO;
        }
        Mag::up(self.m as u128 * o.m as u128, self.e + o.e)
    }

    /// An upper bound of self / o (o must be nonzero).
    pub fn div_up(self, o: Mag) -> Mag {
        assert!(o.m != 0, "Mag division by zero");
        if self.m == 0 {
            return Mag::ZERO;
        }
        let n = (self.m as u128) << 64;
        let d = o.m as u128;
        let q = n.div_ceil(d);
        Mag::up(q, self.e - o.e - 64)
    }

    /// A lower bound of max(self − o, 0).
    pub fn sub_down(self, o: Mag) -> Mag {
        if o.m == 0 || self.m == 0 {
            return if o.m == 0 { self } else { Mag::ZERO };
        }
        if o.e > self.e {
            // Both normalised: o ≥ 2^(o.e+31) ≥ 2^(self.e+32) > self.
            return Mag::ZERO;
        }
        let gap = (self.e - o.e) as u64;
        if gap > 90 {
            // o < 2^(o.e+32) < 2^(self.e−58): subtracting 2^(self.e−59)·2 covers it.
            return Mag::down(((self.m as u128) << 64) - 64, self.e - 64);
        }
        let a = (self.m as u128) << gap;
        let b = o.m as u128;
        if b >= a {
            Mag::ZERO
        } else {
            Mag::down(a - b, o.e)
        }
    }

    /// self · 2^k, exact.
    pub fn mul_2k(self, k: i64) -> Mag {
        if self.m == 0 {
            self
        } else {
            Mag {
                m: self.m,
                e: self.e + k,
            }
        }
    }

    /// An upper bound of self^n.
    pub fn powi(self, n: u32) -> Mag {
        let mut acc = Mag::from_u64(1);
        for _ in 0..n {
            acc = acc.mul_up(self);
        }
        acc
    }

    /// The smallest k with self ≤ 2^k; None for zero.
    pub fn log2_ceil(self) -> Option<i64> {
        if self.m == 0 {
            None
        } else if self.m == 1 << 31 {
            Some(self.e + 31)
        } else {
            Some(self.e + 32)
        }
    }

    /// Whether self ≤ o, exactly.
    pub fn le(self, o: Mag) -> bool {
        if self.m == 0 {
            return true;
        }
        if o.m == 0 {
            return false;
        }
        (self.e, self.m) <= (o.e, o.m)
    }

    /// An upper bound of |m|·2^e.
    pub fn from_ibig_up(m: &IBig, e: isize) -> Mag {
        let l = m.bit_len();
        if l == 0 {
            return Mag::ZERO;
        }
        let top = top_u64(m, l);
        if l <= 64 {
            Mag::up(top as u128, e as i64)
        } else {
            Mag::up(top as u128 + 1, e as i64 + (l - 64) as i64)
        }
    }

    /// A lower bound of |m|·2^e.
    pub fn from_ibig_down(m: &IBig, e: isize) -> Mag {
        let l = m.bit_len();
        if l == 0 {
            return Mag::ZERO;
        }
        let top = top_u64(m, l);
        Mag::down(top as u128, e as i64 + l.saturating_sub(64) as i64)
    }
}

impl Mag {
    /// The exact value as a Big, with a 64-bit precision so that arithmetic with it never
    /// builds huge exact numbers (for tests and checks).
    pub fn to_big(self) -> Big {
        Big::from_repr(
            dashu_float::Repr::new(IBig::from(self.m), self.e as isize),
            dashu_float::Context::new(64),
        )
    }
}

/// The top min(64, l) bits of |m| (l = bit length of m), as an integer.
fn top_u64(m: &IBig, l: usize) -> u64 {
    let (_, words) = m.as_sign_words();
    let wbits = Word::BITS as usize;
    let shift = l.saturating_sub(64);
    let lo_word = shift / wbits;
    let hi_word = (l - 1) / wbits;
    let mut acc: u128 = 0;
    for i in (lo_word..=hi_word).rev() {
        acc = (acc << wbits) | words[i] as u128;
    }
    (acc >> (shift - lo_word * wbits)) as u64
}

/// A ball: every real within `r` of `m`·2^`e`.
#[derive(Clone, Debug)]
pub struct Ball {
    /// Midpoint significand.
    pub m: IBig,
    /// Midpoint exponent.
    pub e: isize,
    /// Radius.
    pub r: Mag,
}

impl Ball {
    /// The exact value m·2^e.
    pub fn exact(m: IBig, e: isize) -> Ball {
        Ball { m, e, r: Mag::ZERO }
    }

    /// The exact value of a finite f64, its significand odd (trailing zeros go to the
    /// exponent: exactness tests of the elementary functions rely on it). Decoded here rather
    /// than through `big::exact`: every reference call starts with it, and the detour through
    /// a Big showed in the timings of the cheap cases (special values, ~3%).
    pub fn from_f64(x: f64) -> Ball {
        assert!(x.is_finite());
        if x == 0.0 {
            return Ball::exact(IBig::ZERO, 0);
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as isize;
        let frac = bits & ((1u64 << 52) - 1);
        let (mant, e) = if biased == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), biased - 1075)
        };
        let tz = mant.trailing_zeros() as isize;
        let m = IBig::from(mant >> tz);
        Ball::exact(if x < 0.0 { -m } else { m }, e + tz)
    }

    /// The exact value of a Big.
    pub fn from_big(x: &Big) -> Ball {
        let r = x.repr();
        Ball::exact(r.significand().clone(), r.exponent())
    }

    /// A ball that holds every real (for failed preconditions: the callers' retry loops then
    /// ask for more precision, and the driver never accepts it).
    pub fn useless() -> Ball {
        Ball {
            m: IBig::ZERO,
            e: 0,
            r: Mag::HUGE,
        }
    }

    /// The exact integer n.
    pub fn from_i64(n: i64) -> Ball {
        Ball::exact(IBig::from(n), 0)
    }

    /// The exact value 1.
    pub fn one() -> Ball {
        Ball::from_i64(1)
    }

    /// The midpoint as an exact Big.
    pub fn mid_big(&self) -> Big {
        Big::from_repr(
            dashu_float::Repr::new(self.m.clone(), self.e),
            dashu_float::Context::new(0),
        )
    }

    /// Whether the midpoint is negative.
    pub fn is_negative(&self) -> bool {
        self.m.sign() == Sign::Negative
    }

    /// The binary exponent of the midpoint (|mid| in [2^k, 2^(k+1))), None for zero.
    pub fn exponent(&self) -> Option<isize> {
        let l = self.m.bit_len();
        (l > 0).then(|| self.e + l as isize - 1)
    }

    /// Upper bound of |x| for every x in the ball.
    pub fn abs_up(&self) -> Mag {
        Mag::from_ibig_up(&self.m, self.e).add_up(self.r)
    }

    /// Lower bound of |x| for every x in the ball (zero when the ball contains zero).
    pub fn abs_down(&self) -> Mag {
        Mag::from_ibig_down(&self.m, self.e).sub_down(self.r)
    }

    /// Whether every point of the ball is nonzero (and of the midpoint's sign).
    pub fn excludes_zero(&self) -> bool {
        !self.abs_down().is_zero()
    }

    /// Whether every point of the ball is > 0.
    pub fn is_positive(&self) -> bool {
        !self.is_negative() && self.excludes_zero()
    }

    /// The midpoint, approximately, as f64 (saturating); for choices only.
    pub fn to_f64(&self) -> f64 {
        let l = self.m.bit_len();
        if l == 0 {
            return 0.0;
        }
        let top = top_u64(&self.m, l) as f64;
        let k = self.e as i64 + l.saturating_sub(64) as i64;
        let v = if k > 2000 {
            f64::INFINITY
        } else if k < -2200 {
            0.0
        } else {
            let k = k as i32;
            top * 2f64.powi(k / 2) * 2f64.powi(k - k / 2)
        };
        if self.is_negative() {
            -v
        } else {
            v
        }
    }

    /// The ball with the midpoint rounded (toward −∞) to at most `p` bits.
    pub fn round(mut self, p: usize) -> Ball {
        let l = self.m.bit_len();
        if l > p {
            let s = l - p;
            self.m = &self.m >> s;
            self.e += s as isize;
            self.r = self.r.add_up(Mag::pow2(self.e as i64));
        }
        self
    }

    /// |x| (the ball reflected when its midpoint is negative; a ball holding zero stays as
    /// wide, which still contains every |x|).
    pub fn abs(self) -> Ball {
        if self.is_negative() {
            self.neg()
        } else {
            self
        }
    }

    /// x·2^k, exact.
    pub fn mul_2k(mut self, k: isize) -> Ball {
        self.e += k;
        self.r = self.r.mul_2k(k as i64);
        self
    }

    /// The ball widened by `err`.
    pub fn add_err(mut self, err: Mag) -> Ball {
        self.r = self.r.add_up(err);
        self
    }

    /// x + y, the midpoint rounded to `p` bits.
    pub fn add(&self, o: &Ball, p: usize) -> Ball {
        let mut r = self.r.add_up(o.r);
        let (la, lb) = (self.m.bit_len(), o.m.bit_len());
        if la == 0 {
            return Ball {
                m: o.m.clone(),
                e: o.e,
                r,
            }
            .round(p);
        }
        if lb == 0 {
            return Ball {
                m: self.m.clone(),
                e: self.e,
                r,
            }
            .round(p);
        }
        let ta = self.e + la as isize;
        let tb = o.e + lb as isize;
        // When the leading bits are two or more places apart the sum cannot cancel below half
        // the larger operand, so bits far below its precision cannot survive the rounding:
        // drop them with an error of one unit at `cut`, instead of building a huge aligned
        // integer. When they are close the sum may cancel to almost nothing, and is exact.
        let cut = if p >= EXACT || (ta - tb).abs() < 2 {
            isize::MIN
        } else {
            ta.max(tb) - p as isize - 16
        };
        let (mut ma, mut ea) = (std::borrow::Cow::Borrowed(&self.m), self.e);
        let (mut mb, mut eb) = (std::borrow::Cow::Borrowed(&o.m), o.e);
        if ea < cut {
            ma = std::borrow::Cow::Owned(&*ma >> (cut - ea) as usize);
            ea = cut;
            r = r.add_up(Mag::pow2(cut as i64));
        }
        if eb < cut {
            mb = std::borrow::Cow::Owned(&*mb >> (cut - eb) as usize);
            eb = cut;
            r = r.add_up(Mag::pow2(cut as i64));
        }
        let e = ea.min(eb);
        let m = if ea > e {
            (&*ma << (ea - e) as usize) + &*mb
        } else if eb > e {
            &*ma + (&*mb << (eb - e) as usize)
        } else {
            &*ma + &*mb
        };
        Ball { m, e, r }.round(p)
    }

    /// x − y, the midpoint rounded to `p` bits.
    pub fn sub(&self, o: &Ball, p: usize) -> Ball {
        self.add(&o.clone().neg(), p)
    }

    /// x · y, the midpoint rounded to `p` bits.
    pub fn mul(&self, o: &Ball, p: usize) -> Ball {
        let ma = Mag::from_ibig_up(&self.m, self.e);
        let mb = Mag::from_ibig_up(&o.m, o.e);
        let r = ma
            .mul_up(o.r)
            .add_up(mb.mul_up(self.r))
            .add_up(self.r.mul_up(o.r));
        Ball {
            m: &self.m * &o.m,
            e: self.e + o.e,
            r,
        }
        .round(p)
    }

    /// x · x.
    pub fn sqr(&self, p: usize) -> Ball {
        self.mul(self, p)
    }

    /// x · n for an integer n.
    pub fn mul_int(&self, n: &IBig, p: usize) -> Ball {
        let mn = Mag::from_ibig_up(n, 0);
        Ball {
            m: &self.m * n,
            e: self.e,
            r: self.r.mul_up(mn),
        }
        .round(p)
    }

    /// x / n for an integer n ≥ 1, the quotient rounded to `p` bits.
    pub fn div_u(&self, n: u64, p: usize) -> Ball {
        assert!(n >= 1);
        let r = self.r.div_up(Mag::from_u64(n));
        let l = self.m.bit_len();
        if l == 0 {
            return Ball {
                m: IBig::ZERO,
                e: 0,
                r,
            };
        }
        let nbits = 64 - n.leading_zeros() as usize;
        let s = (p + nbits + 1).saturating_sub(l);
        let q = (&self.m << s) / IBig::from(n);
        let e = self.e - s as isize;
        // Truncation of the quotient: less than one unit of its last place.
        Ball {
            m: q,
            e,
            r: r.add_up(Mag::pow2(e as i64)),
        }
        .round(p)
    }

    /// x / y, or None when y's ball contains zero.
    pub fn div(&self, o: &Ball, p: usize) -> Option<Ball> {
        let lo = o.abs_down();
        if lo.is_zero() {
            return None;
        }
        let la = self.m.bit_len();
        let lb = o.m.bit_len();
        let s = (p + lb + 2).saturating_sub(la);
        let (q, e) = if la == 0 {
            (IBig::ZERO, 0)
        } else {
            ((&self.m << s) / &o.m, self.e - o.e - s as isize)
        };
        let unit = if la == 0 {
            Mag::ZERO
        } else {
            Mag::pow2(e as i64)
        };
        // |a'/b' − a/b| ≤ (ra + |a/b|·rb)/(|b| − rb), with |a/b| ≤ |q| + unit.
        let qa = Mag::from_ibig_up(&q, e).add_up(unit);
        let prop = self.r.add_up(qa.mul_up(o.r)).div_up(lo);
        Some(
            Ball {
                m: q,
                e,
                r: prop.add_up(unit),
            }
            .round(p),
        )
    }

    /// √x, or None unless every point of the ball is positive.
    pub fn sqrt(&self, p: usize) -> Option<Ball> {
        if self.is_negative() || self.abs_down().is_zero() {
            return None;
        }
        let l = self.m.bit_len();
        let mut s = (2 * p + 4).saturating_sub(l);
        if (self.e - s as isize).rem_euclid(2) != 0 {
            s += 1;
        }
        let scaled = (&self.m << s).unsigned_abs();
        let root: UBig = scaled.sqrt();
        let e = (self.e - s as isize) / 2;
        let unit = Mag::pow2(e as i64);
        // |√a' − √a| = |a' − a|/(√a' + √a) ≤ ra/√a, and √a ≥ root·2^e (root is a floor).
        let prop = if self.r.is_zero() {
            Mag::ZERO
        } else {
            let root_lo = Mag::from_ibig_down(&IBig::from(root.clone()), e);
            self.r.div_up(root_lo)
        };
        Some(
            Ball {
                m: IBig::from(root),
                e,
                r: prop.add_up(unit),
            }
            .round(p),
        )
    }

    /// The nearest integer to the midpoint (ties away from zero do not matter here).
    pub fn round_to_int(&self) -> IBig {
        if self.e >= 0 {
            &self.m << self.e as usize
        } else {
            let s = (-self.e) as usize;
            // floor(m·2^-s + 1/2)
            (&self.m + (IBig::ONE << (s - 1))) >> s
        }
    }
}

impl Neg for Ball {
    type Output = Ball;

    /// −x (exact: the radius stays).
    fn neg(mut self) -> Ball {
        self.m = -self.m;
        self
    }
}
