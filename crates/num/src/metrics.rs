//! Error metrics: how far a computed value is from a reference, as absolute and relative error,
//! ulps (of f64 or of any binary format), correct bits and correct decimal digits.
//!
//! The reference is a [`Reference`]: an exact finite value ([`Big`]), an infinity or NaN, so
//! that workloads whose true result overflows or is undefined can still be scored. Every metric
//! is computed from the exact difference and rounded once at the end, so errors far below one
//! f64 ulp (double-word and mp results) keep their size: `ulps_f64` of an f64x2 result is a
//! fraction such as 3e-17, not 0.
//!
//! What it is not: a statistic over many results (means, maxima and histograms belong to the
//! study) and not a comparison of two computed values other than [`ulps_between`].
//!
//! Main items: [`measure`] → [`ErrorMetrics`]; the single metrics [`abs_error`],
//! [`rel_error`], [`ulps_f64`], [`ulps_in_format`], [`correct_digits`]; [`ulps_between`] for
//! the ordered-integer distance of two f32 or two f64 values.
//!
//! # Rules for zero and non-finite references
//! * Zero reference: the absolute error is `|computed|`; the relative error is 0 if the computed
//!   value is exactly 0 and +inf otherwise; the ulp of 0 is the smallest subnormal of the format
//!   (2^−1074 for f64), so `ulps_f64` is `|computed| / 2^−1074`; digits and bits are +inf for an
//!   exact 0 and 0 otherwise.
//! * Both NaN, or the same infinity: every error is 0, digits and bits are +inf.
//! * Any other mismatch involving a non-finite value (NaN against anything else, an infinity
//!   against a finite value or the other infinity): every error is +inf, digits and bits are 0.
//! * An exact match of finite values: errors 0, digits and bits +inf.

use dashu_base::{Abs, BitTest, DivRem, Sign, UnsignedAbs};
use dashu_float::{Context, Repr};
use dashu_int::UBig;

use crate::base::Base;
use crate::big::{self, Big};
use crate::real::Real;

/// The value a result is scored against: exact when finite.
#[derive(Clone, Debug, PartialEq)]
pub enum Reference {
    /// A finite exact value: errors are measured against it.
    Finite(Big),
    /// An infinity: only the same infinity is correct.
    Infinite {
        /// −∞ rather than +∞.
        negative: bool,
    },
    /// Not a number: only a NaN result matches it.
    NaN,
}

impl Reference {
    /// The exact value of an f64 (NaN and infinities included).
    pub fn from_f64(x: f64) -> Self {
        if x.is_nan() {
            Self::NaN
        } else if x.is_infinite() {
            Self::Infinite { negative: x < 0.0 }
        } else {
            Self::Finite(big::exact(x))
        }
    }

    /// An exact value (an infinite `Big` maps to the infinity of its sign).
    pub fn from_big(x: Big) -> Self {
        if x.repr().is_infinite() {
            Self::Infinite {
                negative: x.repr().sign() == Sign::Negative,
            }
        } else {
            Self::Finite(x)
        }
    }

    /// The exact value a [`Real`] holds; a non-finite value is classified by its f64 image
    /// (NaN, or the sign of the infinity).
    pub fn of<T: Real>(x: &T) -> Self {
        match x.to_big() {
            Some(b) => Self::Finite(b),
            None if x.is_nan() => Self::NaN,
            None => {
                let f = x.to_f64();
                if f.is_nan() {
                    Self::NaN
                } else {
                    Self::Infinite { negative: f < 0.0 }
                }
            }
        }
    }

    /// The exact value when the reference is finite, `None` for infinities and NaN.
    pub fn as_big(&self) -> Option<&Big> {
        match self {
            Self::Finite(b) => Some(b),
            _ => None,
        }
    }
}

impl From<f64> for Reference {
    fn from(x: f64) -> Self {
        Self::from_f64(x)
    }
}

impl From<Big> for Reference {
    fn from(x: Big) -> Self {
        Self::from_big(x)
    }
}

/// How far one computed value is from its reference. See the [module docs](self) for the rules
/// on zero and non-finite references.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorMetrics {
    /// |computed − reference|, rounded to f64 (+inf if beyond f64's range).
    pub abs: f64,
    /// |computed − reference| / |reference|, within one f64 ulp.
    pub rel: f64,
    /// |computed − reference| / ulp_f64(reference), a real number (fractions matter).
    pub ulps_f64: f64,
    /// Correct significant decimal digits as seed 002 §4.5 counts them: the leading digits,
    /// left to right, that computed and reference share. An integer (+inf on an exact match).
    pub digits: f64,
    /// Correct bits, −log2(rel) clamped at 0 (+inf on an exact match).
    pub bits: f64,
}

impl ErrorMetrics {
    /// An exact match.
    pub const EXACT: Self = Self {
        abs: 0.0,
        rel: 0.0,
        ulps_f64: 0.0,
        digits: f64::INFINITY,
        bits: f64::INFINITY,
    };
    /// A non-finite mismatch: nothing is correct.
    pub const MISMATCH: Self = Self {
        abs: f64::INFINITY,
        rel: f64::INFINITY,
        ulps_f64: f64::INFINITY,
        digits: 0.0,
        bits: 0.0,
    };

    /// All metrics of a finite computed value against a finite reference.
    pub fn of_finite(computed: &Big, reference: &Big) -> Self {
        if computed == reference {
            return Self::EXACT;
        }
        let rel = rel_error(computed, reference);
        Self {
            abs: abs_error(computed, reference),
            rel,
            ulps_f64: ulps_f64(computed, reference),
            digits: correct_digits(computed, reference),
            bits: if rel == 0.0 {
                f64::INFINITY
            } else {
                (-rel.log2()).max(0.0)
            },
        }
    }
}

/// All metrics of `computed` against `reference`.
pub fn measure<T: Real>(computed: &T, reference: &Reference) -> ErrorMetrics {
    measure_values(&Reference::of(computed), reference)
}

/// [`measure`] for a computed value already given as a [`Reference`] (e.g. an f64 from a GPU
/// buffer through [`Reference::from_f64`]).
pub fn measure_values(computed: &Reference, reference: &Reference) -> ErrorMetrics {
    use Reference::*;
    match (computed, reference) {
        (Finite(c), Finite(r)) => ErrorMetrics::of_finite(c, r),
        (NaN, NaN) => ErrorMetrics::EXACT,
        (Infinite { negative: a }, Infinite { negative: b }) if a == b => ErrorMetrics::EXACT,
        _ => ErrorMetrics::MISMATCH,
    }
}

/// |c − r| rounded to f64.
pub fn abs_error(computed: &Big, reference: &Big) -> f64 {
    big::to_f64(&(computed - reference).abs())
}

/// |c − r| / |r| rounded to f64 (within one f64 ulp: both are first rounded to 128 bits). For
/// r = 0: 0 if c = 0, else +inf.
pub fn rel_error(computed: &Big, reference: &Big) -> f64 {
    if reference.repr().is_zero() {
        return if computed.repr().is_zero() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let d = big::with_bits((computed - reference).abs(), 128);
    let r = big::with_bits(reference.clone().abs(), 128);
    big::to_f64(&(d / r))
}

/// The exponent `k` with ulp(r) = 2^k in a binary format of precision `p` (implicit bit
/// included) and smallest normal exponent `emin`: k = max(e, emin) − p + 1 where
/// 2^e ≤ |r| < 2^(e+1). The exact reference decides e, not its rounding to the format. For
/// r = 0 this is the smallest subnormal, emin − p + 1.
pub fn ulp_exponent(reference: &Big, p: u32, emin: i32) -> isize {
    let e = leading_exponent(reference).unwrap_or(isize::MIN);
    e.max(emin as isize) - p as isize + 1
}

/// |c − r| / ulp(r) in the format of precision `p` and minimum exponent `emin` (see
/// [`ulp_exponent`]); the division is exact (a power of two) and the result is rounded once.
pub fn ulps_in_format(computed: &Big, reference: &Big, p: u32, emin: i32) -> f64 {
    let d = computed - reference;
    let (m, e) = (d.repr().significand().clone(), d.repr().exponent());
    let k = ulp_exponent(reference, p, emin);
    big::to_f64(&Big::from_repr(Repr::new(m, e - k), Context::new(0))).abs()
}

/// |c − r| in ulps of f64 at the reference (p = 53, emin = −1022).
pub fn ulps_f64(computed: &Big, reference: &Big) -> f64 {
    ulps_in_format(computed, reference, 53, -1022)
}

/// |c − r| in ulps of the base format `F` at the reference.
pub fn ulps_base<F: Base>(computed: &Big, reference: &Big) -> f64 {
    ulps_in_format(computed, reference, F::DIGITS, F::MIN_EXP)
}

/// e with 2^e ≤ |x| < 2^(e+1); `None` for 0.
fn leading_exponent(x: &Big) -> Option<isize> {
    let r = x.repr();
    if r.is_zero() {
        return None;
    }
    Some(r.exponent() + r.significand().unsigned_abs().bit_len() as isize - 1)
}

/// ⌊|x| · 10^s⌋ for finite x, exactly (integer arithmetic).
fn floor_scaled_by_pow10(x: &Big, s: isize) -> UBig {
    let r = x.repr();
    let mut num = r.significand().unsigned_abs();
    let mut den = UBig::ONE;
    let e = r.exponent();
    if e >= 0 {
        num <<= e as usize;
    } else {
        den <<= (-e) as usize;
    }
    let ten = UBig::from(10u8);
    if s >= 0 {
        num *= ten.pow(s as usize);
    } else {
        den *= ten.pow((-s) as usize);
    }
    let (q, _) = num.div_rem(&den);
    q
}

/// Correct significant decimal digits, as seed 002 (GPUMixer) §4.5 defines its error threshold:
/// the number of leading decimal digits, read from left to right, that the computed value shares
/// with the reference (there, 3.1479 against 3.1415 is "accurate up to 3 digits": 3, 1 and 4).
///
/// Both values are compared through their exact decimal expansions, aligned at the reference's
/// leading digit: d digits are correct when truncating both to d significant digits of the
/// reference's scale gives the same number. Consequences: a value off by 10^−3 relative has 3
/// correct digits (1001 against 1000); a sign difference or a different leading decimal position
/// gives 0 (0.9999 against 1.0 shares no digit, although its relative error is 10^−4); the
/// binary value is read exactly, so the f64 nearest 1.001 (1.000999999999999889…) shares 4
/// digits with 1; an exact match gives +inf; a zero reference gives +inf for an exact 0 and 0
/// otherwise. The count jumps at decimal boundaries by design (it is what §4.5 thresholds on);
/// [`ErrorMetrics::bits`] is the continuous measure.
///
/// Rounding both values to d digits instead would contradict §4.5's example (3.1479 and 3.1415
/// round to 3.15 and 3.14), and so would ⌊−log10(rel)⌋ (2 for that example).
pub fn correct_digits(computed: &Big, reference: &Big) -> f64 {
    if computed == reference {
        return f64::INFINITY;
    }
    let (Some(er), Some(ed)) = (
        leading_exponent(reference),
        leading_exponent(&(computed - reference)),
    ) else {
        // A zero reference with a nonzero computed value (a zero difference was handled above).
        return 0.0;
    };
    if computed.repr().sign() != reference.repr().sign() || computed.repr().is_zero() {
        return 0.0;
    }
    const LOG10_2: f64 = core::f64::consts::LOG10_2;
    // E = ⌊log10 |r|⌋ from a float estimate, then corrected exactly.
    let mut big_e = (er as f64 * LOG10_2).floor() as isize;
    loop {
        let lead = floor_scaled_by_pow10(reference, -big_e);
        if lead.is_zero() {
            big_e -= 1;
        } else if lead >= UBig::from(10u8) {
            big_e += 1;
        } else {
            break;
        }
    }
    // If d digits agree then |c − r| < 10^(E + 1 − d), so d < E + 1 − log10|c − r|, and
    // |c − r| ≥ 2^ed: an upper bound for the search.
    let upper = (big_e + 2 - (ed as f64 * LOG10_2).floor() as isize).max(0);
    let agree = |d: isize| {
        let s = d - 1 - big_e;
        floor_scaled_by_pow10(computed, s) == floor_scaled_by_pow10(reference, s)
    };
    // Largest d in [1, upper] with agree(d): agreement at d implies agreement at d − 1.
    if !agree(1) {
        return 0.0;
    }
    let (mut lo, mut hi) = (1isize, upper.max(1));
    while lo < hi {
        let mid = lo + (hi - lo + 1) / 2;
        if agree(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo as f64
}

/// Bit patterns mapped to integers in the order of the values they encode.
pub trait OrderedBits: Copy {
    /// `None` for NaN; −0 and +0 both map to 0.
    fn ordered(self) -> Option<i64>;
}

impl OrderedBits for f64 {
    fn ordered(self) -> Option<i64> {
        if self.is_nan() {
            return None;
        }
        let b = self.to_bits() as i64;
        // Negative values count down from 0 by their magnitude's bit pattern.
        Some(if b < 0 { -(b & i64::MAX) } else { b })
    }
}

impl OrderedBits for f32 {
    fn ordered(self) -> Option<i64> {
        if self.is_nan() {
            return None;
        }
        let b = self.to_bits() as i32;
        Some(if b < 0 {
            -((b & i32::MAX) as i64)
        } else {
            b as i64
        })
    }
}

/// How many representable values of the format lie between `a` and `b` (ordered-integer
/// distance): 0 for equal values (−0 and +0 included), 1 for neighbours, counting subnormals
/// and with ±inf one step beyond ±MAX. `None` if either is NaN.
pub fn ulps_between<F: OrderedBits>(a: F, b: F) -> Option<u64> {
    let (x, y) = (a.ordered()?, b.ordered()?);
    Some((x as i128 - y as i128).unsigned_abs() as u64)
}

#[cfg(test)]
mod tests;
