//! The base binary floating-point formats (`f32`, `f64`) that double-word and composite types are
//! built from, behind one trait so every algorithm is written once.

use core::fmt::{Debug, Display, LowerExp};
use core::ops::{Add, Div, Mul, Neg, Sub};

/// An IEEE 754 binary format with round-to-nearest-even arithmetic and a fused multiply-add.
///
/// Every arithmetic operator must round once (no extended-precision intermediates, no contraction
/// of `a * b + c` into an FMA): the error-free transforms depend on it. Rust guarantees this for
/// `f32` and `f64` on x86-64 with SSE2, and never contracts on its own.
pub trait Base:
    Copy
    + PartialEq
    + PartialOrd
    + Debug
    + Display
    + LowerExp
    + Default
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// Name used in records and on the command line (`f32`, `f64`).
    const NAME: &'static str;
    /// Precision p in bits, the implicit bit included (24 or 53).
    const DIGITS: u32;
    /// Smallest exponent e of a normal number 2^e (−126 or −1022).
    const MIN_EXP: i32;
    /// Largest exponent e of a finite number 2^e (127 or 1023).
    const MAX_EXP: i32;
    /// +0.
    const ZERO: Self;
    /// 1, exactly.
    const ONE: Self;
    /// 2, exactly (scaling by it is exact away from overflow).
    const TWO: Self;
    /// +∞, what an overflowing operation returns.
    const INFINITY: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// The largest finite value, (2 − 2^(1−p))·2^MAX_EXP (`f32::MAX`, `f64::MAX`).
    const MAX: Self;
    /// 2^⌈p/2⌉ + 1, Veltkamp's splitting constant (4097 for f32, 134217729 for f64).
    const SPLITTER: Self;

    /// a·b + c with a single rounding.
    fn fma(a: Self, b: Self, c: Self) -> Self;
    /// Correctly rounded square root.
    fn sqrt(self) -> Self;
    /// |self|, exact (clears the sign bit, NaN included).
    fn abs(self) -> Self;
    /// Neither infinite nor NaN: the special-value rules of the double-word operations test it.
    fn is_finite(self) -> bool;
    /// Whether this is a NaN of any payload.
    fn is_nan(self) -> bool;
    /// The sign bit, so −0 and negative NaNs count as negative (IEEE `signbit`).
    fn is_sign_negative(self) -> bool;
    /// Exact widening to f64.
    fn to_f64(self) -> f64;
    /// Round-to-nearest narrowing (identity for f64).
    fn from_f64(x: f64) -> Self;
    /// x · 2^k computed exactly whenever the result is a normal number (k within ±300 for f64,
    /// ±250 for f32 is enough for every caller here).
    fn scale2(self, k: i32) -> Self;
    /// The exponent e of x = m·2^e with 1 ≤ |m| < 2 for normal x; `None` for 0, inf and NaN,
    /// the exponent of the leading bit for subnormals.
    fn exponent(self) -> Option<i32>;
    /// Unit roundoff u = 2^−p as an f64.
    fn unit_roundoff() -> f64 {
        (-(Self::DIGITS as f64)).exp2()
    }
}

/// 2^k as f64, exact for −1074 ≤ k ≤ 1023 (built from bits, so no rounding is involved);
/// 0 below that range and +inf above it.
pub(crate) fn pow2_f64(k: i32) -> f64 {
    if k > 1023 {
        f64::INFINITY
    } else if k < -1074 {
        0.0
    } else if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// 2^k as f32, exact for −149 ≤ k ≤ 127; 0 below that range and +inf above it.
pub(crate) fn pow2_f32(k: i32) -> f32 {
    if k > 127 {
        f32::INFINITY
    } else if k < -149 {
        0.0
    } else if k >= -126 {
        f32::from_bits(((k + 127) as u32) << 23)
    } else {
        f32::from_bits(1u32 << (k + 149))
    }
}

macro_rules! impl_base {
    ($t:ty, $name:literal, $digits:expr, $min:expr, $max:expr, $split:expr, $pow2:ident, $bits:ty, $mant:expr) => {
        impl Base for $t {
            const NAME: &'static str = $name;
            const DIGITS: u32 = $digits;
            const MIN_EXP: i32 = $min;
            const MAX_EXP: i32 = $max;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const TWO: Self = 2.0;
            const INFINITY: Self = <$t>::INFINITY;
            const NAN: Self = <$t>::NAN;
            const MAX: Self = <$t>::MAX;
            const SPLITTER: Self = $split;

            #[inline(always)]
            fn fma(a: Self, b: Self, c: Self) -> Self {
                a.mul_add(b, c)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline]
            fn scale2(self, k: i32) -> Self {
                // Two steps so that 2^k itself never over- or underflows for |k| up to 2·MAX_EXP.
                let half = k / 2;
                self * $pow2(half) * $pow2(k - half)
            }
            #[inline]
            fn exponent(self) -> Option<i32> {
                if self == 0.0 || !self.is_finite() {
                    return None;
                }
                let bits = self.to_bits();
                let biased = ((bits >> $mant) & ((1 << (<$bits>::BITS - 1 - $mant)) - 1)) as i32;
                if biased != 0 {
                    Some(biased + $min - 1)
                } else {
                    // Subnormal: the leading bit of the fraction sets the exponent.
                    let frac = bits & ((1 << $mant) - 1);
                    let lead = (<$bits>::BITS - 1 - frac.leading_zeros()) as i32;
                    Some($min - $mant + lead)
                }
            }
        }
    };
}

impl_base!(f32, "f32", 24, -126, 127, 4097.0, pow2_f32, u32, 23);
impl_base!(f64, "f64", 53, -1022, 1023, 134217729.0, pow2_f64, u64, 52);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponent_of_normals_subnormals_and_specials() {
        assert_eq!(1.0f64.exponent(), Some(0));
        assert_eq!(1.5f64.exponent(), Some(0));
        assert_eq!(0.75f64.exponent(), Some(-1));
        assert_eq!(f64::MAX.exponent(), Some(1023));
        assert_eq!(f64::MIN_POSITIVE.exponent(), Some(-1022));
        assert_eq!((f64::MIN_POSITIVE / 2.0).exponent(), Some(-1023));
        assert_eq!(f64::from_bits(1).exponent(), Some(-1074));
        assert_eq!(f32::from_bits(1).exponent(), Some(-149));
        assert_eq!(f32::MAX.exponent(), Some(127));
        assert_eq!((-3.0f32).exponent(), Some(1));
        assert_eq!(0.0f64.exponent(), None);
        assert_eq!(f64::INFINITY.exponent(), None);
        assert_eq!(f32::NAN.exponent(), None);
    }

    #[test]
    fn scale2_is_exact_across_the_range() {
        assert_eq!(1.0f64.scale2(1023), f64::MAX / (2.0 - f64::EPSILON));
        assert_eq!(1.0f64.scale2(-1074), f64::from_bits(1));
        assert_eq!(
            f64::MAX.scale2(-2000),
            f64::MAX * pow2_f64(-1000) * pow2_f64(-1000)
        );
        assert_eq!(3.0f32.scale2(-149), f32::from_bits(3));
        assert_eq!(f32::from_bits(1).scale2(149 + 100), 2f32.powi(100));
    }

    #[test]
    fn splitter_is_two_to_half_precision_plus_one() {
        assert_eq!(<f32 as Base>::SPLITTER, 2f32.powi(12) + 1.0);
        assert_eq!(<f64 as Base>::SPLITTER, 2f64.powi(27) + 1.0);
    }
}
