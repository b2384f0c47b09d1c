//! Arbitrary precision (`mp<bits>`): binary floating point with a fixed number of significant
//! bits, every operation correctly rounded (to nearest, ties to even).
//!
//! [`Mp<BITS>`] wraps a dashu-float `FBig<HalfEven, 2>` and adds what dashu lacks: NaN and
//! signed infinities with IEEE-like rules (dashu panics on infinite operands, on square roots
//! of negatives and on division by zero; every such case is decided here before dashu is
//! called). It is the role GMP's `mpf_t` and CUMP play in seed 000 (§2.3, Tables 7–8), but
//! rounded exactly at `BITS` bits, whereas `mpf_t` works in whole 64-bit limbs (seed 000 notes
//! that its "32-bit" and "64-bit" precisions both use two limbs).
//!
//! What it is not: an IEEE interchange format. The exponent is unbounded (an `isize`), so there
//! is no overflow, no underflow and no subnormal range: `mp53` is not `f64` (it keeps `MAX · 2`
//! finite and `MIN_POSITIVE / 2^60` exact). Conversion to f64 is where ranges meet: `to_f64`
//! rounds once, overflowing to ±inf and underflowing through subnormals to ±0.
//!
//! Zero is unsigned: dashu has no −0, so `−0.0` converts to `+0` and `−x + x`, `−1 · 0` are all
//! `+0`; the sign of a zero divisor is therefore not seen (`1 / −0.0 = +inf` here, `−inf` in
//! IEEE). Everything else follows IEEE 754: `x / 0 = ±inf` (sign of x), `0 / 0 = NaN`,
//! `inf − inf = NaN`, `0 · inf = NaN`, `inf / inf = NaN`, `x / inf = 0`, `sqrt(x < 0) = NaN`,
//! `sqrt(+inf) = +inf`, and NaN propagates. NaN is unordered and unequal to itself.
//!
//! Why dashu-float: it is pure Rust and rounds to an exact bit count. `rug` (MPFR/GMP) would be
//! the reference implementation, but it builds GMP from source and needs `m4` and a C
//! toolchain, which a fresh machine or the GPU hosts do not have. `astro-float` rounds the
//! requested precision up to whole 64-bit words (its `BigFloat::new` documents "Precision is
//! rounded upwards to the word size", checked in astro-float-num 0.3.7), so an "mp32" would
//! silently carry 64 bits and the study's low precisions would be meaningless. dashu-float was
//! already the crate's reference arithmetic ([`crate::big`]).
//!
//! Main types: [`Mp`], with aliases [`Mp32`], [`Mp64`], [`Mp128`], [`Mp256`], [`Mp512`],
//! [`Mp1024`].
//!
//! Cost: an mp256 addition took about 0.6–0.8 µs, a multiplication 0.7–0.95 µs and a division
//! about 1.3 µs (operands with ~255 significant bits, references in, a fresh value out),
//! measured once in release mode on the shared 2-core Xeon development machine under a load
//! average of about 3.5 (2026-11-22), with a throwaway program timing 2·10^6 operations per
//! kind over three rounds (no f64 baseline was timed). mp is for references and for the
//! study's precision sweeps, not for inner loops.

use core::cmp::Ordering;
use core::fmt;
use core::ops::{Add, Div, Mul, Neg, Sub};

use dashu_base::{BitTest, DivRem, Sign, SquareRootRem, UnsignedAbs};
use dashu_float::{round::mode::HalfEven, Context, Repr};
use dashu_int::{IBig, UBig};

use crate::big::{self, Big};
use crate::real::Real;

/// What an [`Mp`] holds: a finite value of at most `BITS` significant bits, or a special.
#[derive(Clone, Debug)]
enum Value {
    Finite(Big),
    Inf { negative: bool },
    NaN,
}

/// A binary floating-point number with `BITS` significant bits and an unbounded exponent; every
/// operation rounds its exact result once, to nearest with ties to even. See the
/// [module docs](self) for the special values.
#[derive(Clone, Debug)]
pub struct Mp<const BITS: u32> {
    v: Value,
}

/// `mp32`: 32 significand bits, a check on the arbitrary-precision path against f32's 24.
pub type Mp32 = Mp<32>;
/// `mp64`: 64 significand bits, slightly more than f64's 53.
pub type Mp64 = Mp<64>;
/// `mp128`: 128 significand bits, more than double-double's ~106.
pub type Mp128 = Mp<128>;
/// `mp256`: 256 significand bits, the precision of seed 000's CUMP references.
pub type Mp256 = Mp<256>;
/// `mp512`: 512 significand bits.
pub type Mp512 = Mp<512>;
/// `mp1024`: 1024 significand bits, the widest precision on the command line.
pub type Mp1024 = Mp<1024>;

impl<const BITS: u32> Mp<BITS> {
    /// Rejected at compile time: a precision of 0 would mean "unlimited" to dashu, and 1 bit
    /// cannot round to even.
    const VALID: () = assert!(BITS >= 2, "Mp<BITS> needs BITS >= 2");

    #[inline(always)]
    fn ctx() -> Context<HalfEven> {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID;
        Context::new(BITS as usize)
    }

    fn finite(x: Big) -> Self {
        Self {
            v: Value::Finite(x),
        }
    }

    /// Not a number: what invalid operations (0/0, ∞ − ∞, √−1) return.
    pub fn nan() -> Self {
        Self { v: Value::NaN }
    }

    /// −∞ when `negative`, else +∞ (dashu has no infinities in its arithmetic, so they are
    /// kept beside it).
    pub fn infinity(negative: bool) -> Self {
        Self {
            v: Value::Inf { negative },
        }
    }

    /// Zero, carrying precision `BITS` so that arithmetic on it rounds to `BITS` bits.
    pub fn zero() -> Self {
        Self::finite(Self::round(&Big::ZERO))
    }

    /// `x` rounded to `BITS` bits. Infinite `Big`s (dashu has them, though this crate never
    /// builds one) map to the infinities.
    pub fn from_big(x: &Big) -> Self {
        let r = x.repr();
        if r.is_infinite() {
            return Self::infinity(r.sign() == Sign::Negative);
        }
        Self::finite(Self::round(x))
    }

    /// The held value, `None` for NaN and the infinities. It carries precision `BITS`, so
    /// dashu operations on it round to `BITS` bits too.
    pub fn as_big(&self) -> Option<&Big> {
        match &self.v {
            Value::Finite(x) => Some(x),
            _ => None,
        }
    }

    /// +∞ or −∞.
    pub fn is_infinite(&self) -> bool {
        matches!(self.v, Value::Inf { .. })
    }

    /// Negative and nonzero, or −inf (zero is unsigned here).
    pub fn is_sign_negative(&self) -> bool {
        match &self.v {
            Value::Finite(x) => x.repr().sign() == Sign::Negative && !x.repr().is_zero(),
            Value::Inf { negative } => *negative,
            Value::NaN => false,
        }
    }

    fn is_zero(&self) -> bool {
        matches!(&self.v, Value::Finite(x) if x.repr().is_zero())
    }

    /// Correct rounding of a finite value to `BITS` bits, through the context so that it
    /// happens whatever precision `x` carries (dashu's `with_precision` skips values of
    /// unlimited precision).
    fn round(x: &Big) -> Big {
        Self::ctx().add(x.repr(), Big::ZERO.repr()).value()
    }
}

/// `m · 2^e` for a truncated result `m` with at least `BITS + 1` significant bits, plus a
/// sticky bit for a nonzero remainder, rounded once to `BITS` bits. The sticky bit lies below
/// the first discarded bit, so it breaks ties exactly as the infinite remainder would.
fn round_with_sticky<const BITS: u32>(m: UBig, inexact: bool, e: isize, negative: bool) -> Big {
    let m = (m << 1) | UBig::from(u8::from(inexact));
    let signed = if negative {
        -IBig::from(m)
    } else {
        IBig::from(m)
    };
    Mp::<BITS>::round(&Big::from_repr(Repr::new(signed, e - 1), Context::new(0)))
}

impl<const BITS: u32> Mp<BITS> {
    /// Correctly rounded a / b (b ≠ 0) by integer division. dashu 0.4.5's `Context::div` is not
    /// used: it can return BITS + 1 significant bits, and rounding that again is not correct
    /// rounding (on 3000 random mp32 quotients: 269 over-long results, 130 wrong after
    /// re-rounding; found by this module's tests).
    fn div_rounded(a: &Big, b: &Big) -> Big {
        let (ra, rb) = (a.repr(), b.repr());
        let negative = (ra.sign() == Sign::Negative) != (rb.sign() == Sign::Negative);
        let (na, nb) = (
            ra.significand().unsigned_abs(),
            rb.significand().unsigned_abs(),
        );
        // Enough shift that the integer quotient has at least BITS + 1 bits.
        let shift = (BITS as isize + 2 + nb.bit_len() as isize - na.bit_len() as isize).max(0);
        let (q, r) = (na << shift as usize).div_rem(&nb);
        round_with_sticky::<BITS>(
            q,
            !r.is_zero(),
            ra.exponent() - rb.exponent() - shift,
            negative,
        )
    }

    /// Correctly rounded √a (a > 0) by integer square root. dashu 0.4.5's `Context::sqrt` is not
    /// used: it rounds the truncated root and then rounds again, which misrounded 224 of 3000
    /// random mp32 operands.
    fn sqrt_rounded(a: &Big) -> Big {
        let r = a.repr();
        let n = r.significand().unsigned_abs();
        // Shift so that the exponent is even and the radicand has at least 2·(BITS + 2) bits.
        let mut shift = (2 * (BITS as isize + 2) - n.bit_len() as isize).max(0);
        if (r.exponent() - shift) % 2 != 0 {
            shift += 1;
        }
        let (root, rem) = (n << shift as usize).sqrt_rem();
        round_with_sticky::<BITS>(root, !rem.is_zero(), (r.exponent() - shift) / 2, false)
    }
}

impl<const BITS: u32> Default for Mp<BITS> {
    fn default() -> Self {
        Self::zero()
    }
}

impl<const BITS: u32> fmt::Display for Mp<BITS> {
    /// Finite values print as dashu prints them (binary digits); specials as `NaN`, `inf`,
    /// `-inf`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.v {
            Value::Finite(x) => fmt::Display::fmt(x, f),
            Value::Inf { negative: false } => f.write_str("inf"),
            Value::Inf { negative: true } => f.write_str("-inf"),
            Value::NaN => f.write_str("NaN"),
        }
    }
}

impl<const BITS: u32> PartialEq for Mp<BITS> {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

impl<const BITS: u32> PartialOrd for Mp<BITS> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        use Value::*;
        match (&self.v, &other.v) {
            (NaN, _) | (_, NaN) => None,
            (Inf { negative: a }, Inf { negative: b }) => Some(b.cmp(a)),
            (Inf { negative }, Finite(_)) => Some(if *negative {
                Ordering::Less
            } else {
                Ordering::Greater
            }),
            (Finite(_), Inf { negative }) => Some(if *negative {
                Ordering::Greater
            } else {
                Ordering::Less
            }),
            // Repr's order is exact (FBig's own consults the precisions for a fast path).
            (Finite(a), Finite(b)) => Some(a.repr().cmp(b.repr())),
        }
    }
}

impl<const BITS: u32> Neg for Mp<BITS> {
    type Output = Self;
    fn neg(self) -> Self {
        match self.v {
            Value::Finite(x) => Self::finite(-x),
            Value::Inf { negative } => Self::infinity(!negative),
            Value::NaN => self,
        }
    }
}

impl<const BITS: u32> Neg for &Mp<BITS> {
    type Output = Mp<BITS>;
    fn neg(self) -> Mp<BITS> {
        -self.clone()
    }
}

// The operators work on references (dashu reads its operands by reference, so nothing is
// cloned); the by-value forms below delegate to them.

impl<const BITS: u32> Add<&Mp<BITS>> for &Mp<BITS> {
    type Output = Mp<BITS>;
    /// Correctly rounded sum. inf + (−inf) is NaN; an infinity absorbs any finite value.
    fn add(self, y: &Mp<BITS>) -> Mp<BITS> {
        Mp::add_signed(self, y, false)
    }
}

impl<const BITS: u32> Sub<&Mp<BITS>> for &Mp<BITS> {
    type Output = Mp<BITS>;
    /// Correctly rounded difference. inf − inf is NaN.
    fn sub(self, y: &Mp<BITS>) -> Mp<BITS> {
        Mp::add_signed(self, y, true)
    }
}

impl<const BITS: u32> Mul<&Mp<BITS>> for &Mp<BITS> {
    type Output = Mp<BITS>;
    /// Correctly rounded product. 0 · inf is NaN.
    fn mul(self, y: &Mp<BITS>) -> Mp<BITS> {
        use Value::*;
        let negative = self.is_sign_negative() != y.is_sign_negative();
        match (&self.v, &y.v) {
            (NaN, _) | (_, NaN) => Mp::nan(),
            (Inf { .. }, _) | (_, Inf { .. }) => {
                if self.is_zero() || y.is_zero() {
                    Mp::nan()
                } else {
                    Mp::infinity(negative)
                }
            }
            (Finite(a), Finite(b)) => Mp::finite(Mp::<BITS>::ctx().mul(a.repr(), b.repr()).value()),
        }
    }
}

impl<const BITS: u32> Div<&Mp<BITS>> for &Mp<BITS> {
    type Output = Mp<BITS>;
    /// Correctly rounded quotient. x/0 = ±inf (sign of x, zero being unsigned), 0/0 = NaN,
    /// inf/inf = NaN, x/inf = 0.
    fn div(self, y: &Mp<BITS>) -> Mp<BITS> {
        use Value::*;
        let negative = self.is_sign_negative() != y.is_sign_negative();
        match (&self.v, &y.v) {
            (NaN, _) | (_, NaN) => Mp::nan(),
            (Inf { .. }, Inf { .. }) => Mp::nan(),
            (Inf { .. }, Finite(_)) => Mp::infinity(negative),
            (Finite(_), Inf { .. }) => Mp::zero(),
            (Finite(a), Finite(b)) => {
                if b.repr().is_zero() {
                    if a.repr().is_zero() {
                        Mp::nan()
                    } else {
                        Mp::infinity(self.is_sign_negative())
                    }
                } else {
                    Mp::finite(Mp::<BITS>::div_rounded(a, b))
                }
            }
        }
    }
}

impl<const BITS: u32> Mp<BITS> {
    /// x + y, or x − y when `subtract`.
    fn add_signed(x: &Self, y: &Self, subtract: bool) -> Self {
        use Value::*;
        match (&x.v, &y.v) {
            (NaN, _) | (_, NaN) => Self::nan(),
            (Inf { negative: a }, Inf { negative: b }) => {
                if *a == (*b != subtract) {
                    x.clone()
                } else {
                    Self::nan()
                }
            }
            (Inf { .. }, _) => x.clone(),
            (_, Inf { negative }) => Self::infinity(*negative != subtract),
            (Finite(a), Finite(b)) => {
                let ctx = Self::ctx();
                let r = if subtract {
                    ctx.sub(a.repr(), b.repr())
                } else {
                    ctx.add(a.repr(), b.repr())
                };
                Self::finite(r.value())
            }
        }
    }
}

macro_rules! impl_by_value_ops {
    ($($tr:ident $f:ident),*) => {$(
        impl<const BITS: u32> $tr for Mp<BITS> {
            type Output = Self;
            /// Same as the operator on references.
            fn $f(self, y: Self) -> Self {
                $tr::$f(&self, &y)
            }
        }
    )*};
}
impl_by_value_ops!(Add add, Sub sub, Mul mul, Div div);

impl<const BITS: u32> Real for Mp<BITS> {
    fn precision_name() -> String {
        format!("mp{BITS}")
    }
    fn significand_bits() -> u32 {
        BITS
    }
    /// `x` rounded to `BITS` bits (so mp32 of 0.1 is 0.1f64 rounded to 32 bits); −0 becomes +0.
    fn from_f64(x: f64) -> Self {
        if x.is_nan() {
            Self::nan()
        } else if x.is_infinite() {
            Self::infinity(x < 0.0)
        } else {
            Self::finite(Self::round(&big::exact(x)))
        }
    }
    fn from_i64(n: i64) -> Self {
        Self::finite(Self::round(&Big::from(IBig::from(n))))
    }
    /// Correctly rounded (ties to even), overflowing to ±inf, through subnormals to ±0.
    fn to_f64(&self) -> f64 {
        match &self.v {
            Value::Finite(x) => big::to_f64(x),
            Value::Inf { negative: false } => f64::INFINITY,
            Value::Inf { negative: true } => f64::NEG_INFINITY,
            Value::NaN => f64::NAN,
        }
    }
    fn to_big(&self) -> Option<Big> {
        self.as_big().cloned()
    }
    /// Correctly rounded. sqrt(x < 0) = NaN, sqrt(−inf) = NaN, sqrt(+inf) = +inf, sqrt(0) = 0.
    fn sqrt(&self) -> Self {
        match &self.v {
            Value::NaN | Value::Inf { negative: true } => Self::nan(),
            Value::Inf { negative: false } => self.clone(),
            Value::Finite(x) => {
                if x.repr().is_zero() {
                    Self::zero()
                } else if x.repr().sign() == Sign::Negative {
                    Self::nan()
                } else {
                    Self::finite(Self::sqrt_rounded(x))
                }
            }
        }
    }
    fn abs(&self) -> Self {
        if self.is_sign_negative() {
            -self
        } else {
            self.clone()
        }
    }
    /// The type's product then its sum (two roundings), as [`Real::mul_add`] specifies for
    /// non-hardware types.
    fn mul_add(&self, b: &Self, c: &Self) -> Self {
        &(self * b) + c
    }
    fn is_finite(&self) -> bool {
        matches!(self.v, Value::Finite(_))
    }
    fn is_nan(&self) -> bool {
        matches!(self.v, Value::NaN)
    }
}

#[cfg(test)]
mod tests;
