//! The two binary formats measured, and the error of a result in ulps.
//!
//! The ulp of a real z (not necessarily representable) is the distance between the two format
//! numbers around it with the format's precision, the exponent clamped below at the format's
//! minimum (so the subnormal range has a fixed ulp) and unbounded above (so an exact value past
//! the largest finite number still has a ulp, and a finite result there has a finite error).
//! This is the definition Gladman et al. use (Muller's ulp with Goldberg's extension upward).

use mantissa_num::big::{self, Big};
use serde::{Deserialize, Serialize};

/// A binary interchange format whose functions are measured.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// binary32.
    F32,
    /// binary64.
    F64,
}

impl Format {
    /// Both formats, in table order.
    pub const ALL: [Format; 2] = [Format::F32, Format::F64];

    /// `f32` or `f64`.
    pub fn name(self) -> &'static str {
        match self {
            Format::F32 => "f32",
            Format::F64 => "f64",
        }
    }

    /// Parse `f32`/`f64` (also `binary32`, `binary64`, `float`, `double`).
    pub fn parse(s: &str) -> Option<Format> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" | "binary32" | "float" | "single" => Some(Format::F32),
            "f64" | "binary64" | "double" => Some(Format::F64),
            _ => None,
        }
    }

    /// Significand bits, the hidden one included: 24 or 53.
    pub fn precision(self) -> u32 {
        match self {
            Format::F32 => 24,
            Format::F64 => 53,
        }
    }

    /// The exponent of the smallest normal number: −126 or −1022.
    pub fn emin(self) -> i32 {
        match self {
            Format::F32 => -126,
            Format::F64 => -1022,
        }
    }

    /// The largest finite value, as f64.
    pub fn max(self) -> f64 {
        match self {
            Format::F32 => f32::MAX as f64,
            Format::F64 => f64::MAX,
        }
    }

    /// Round an f64 to this format (to nearest even; f32 through `as f32`, which is IEEE
    /// rounding with subnormals and overflow).
    pub fn round_f64(self, x: f64) -> f64 {
        match self {
            Format::F32 => x as f32 as f64,
            Format::F64 => x,
        }
    }

    /// The exact value rounded to this format (ties to even, subnormals, overflow to ±inf).
    pub fn round_big(self, x: &Big) -> f64 {
        match self {
            Format::F32 => big::to_format(x, &big::Format::of::<f32>()),
            Format::F64 => big::to_f64(x),
        }
    }

    /// log2 of the ulp of a nonzero real whose binary exponent is `e` (|z| in [2^e, 2^(e+1))).
    pub fn ulp_exp(self, e: i64) -> i64 {
        e.max(self.emin() as i64) - (self.precision() as i64 - 1)
    }

    /// The ulp of a finite f64 `z` viewed as a real number in this format (see the module docs);
    /// for z = 0, the smallest subnormal.
    pub fn ulp_of_f64(self, z: f64) -> f64 {
        let e = if z == 0.0 {
            self.emin() as i64
        } else {
            binary_exponent(z)
        };
        // Through `scale`: powi(−1074) underflows to 0 on its way.
        scale(1.0, self.ulp_exp(e))
    }

    /// The number of bits needed to decide a result's error to about 2^-20 of an ulp.
    pub fn working_bits(self) -> u32 {
        self.precision() + 40
    }
}

/// The binary exponent e of a finite nonzero f64: |z| in [2^e, 2^(e+1)).
pub fn binary_exponent(z: f64) -> i64 {
    let bits = z.abs().to_bits();
    let biased = (bits >> 52) as i64;
    if biased == 0 {
        // Subnormal: 2^-1074 · frac.
        let frac = bits & ((1u64 << 52) - 1);
        -1074 + 63 - frac.leading_zeros() as i64
    } else {
        biased - 1023
    }
}

/// The error of `result` against the exact value `exact`, in ulps of `exact` in `format`.
///
/// Special values: a NaN result against a NaN exact value, an infinite result equal to an
/// infinite exact value, and an infinite result where the exact value overflows to it, are 0;
/// any other mismatch between NaN, infinity and finite is infinite (reported, never hidden). `exact` is `None` when the exact value is NaN or ±inf,
/// given then by `special`.
pub fn ulp_error(format: Format, result: f64, exact: &Exact) -> f64 {
    match exact {
        Exact::NaN => {
            if result.is_nan() {
                0.0
            } else {
                f64::INFINITY
            }
        }
        Exact::Inf { negative } => {
            if result.is_infinite() && result.is_sign_negative() == *negative {
                0.0
            } else {
                f64::INFINITY
            }
        }
        Exact::Finite(z) => {
            if result.is_nan() {
                return f64::INFINITY;
            }
            if result.is_infinite() {
                // A finite exact value past the overflow threshold rounds to infinity: that
                // result is correctly rounded (0 ulps); any other infinity is infinitely wrong.
                return if format.round_big(z) == result {
                    0.0
                } else {
                    f64::INFINITY
                };
            }
            let diff = big::exact(result) - z.clone();
            if diff.repr().is_zero() {
                return 0.0;
            }
            // The ulp of z: its binary exponent from the leading bit of the significand.
            let e = big_exponent(z);
            let ulp_log2 = match e {
                Some(e) => format.ulp_exp(e),
                None => format.ulp_exp(format.emin() as i64),
            };
            // |diff| / 2^ulp_log2: scaled exactly in Big first, then rounded once. Rounding
            // |diff| itself to f64 would lose its low bits below 2^-1022 (binary64 results
            // near the subnormal range: a 0.57-ulp error became 1 ulp).
            let scaled = diff * crate::reference::pow2(-ulp_log2 as isize);
            big::to_f64(&scaled).abs()
        }
    }
}

/// The binary exponent of a nonzero Big (|z| in [2^e, 2^(e+1))); None for zero.
pub fn big_exponent(z: &Big) -> Option<i64> {
    let repr = z.repr();
    if repr.is_zero() {
        return None;
    }
    let bits = repr.significand().unsigned_abs().bit_len() as i64;
    Some(repr.exponent() as i64 + bits - 1)
}

/// x · 2^k without intermediate overflow or underflow for the ranges met here.
fn scale(x: f64, k: i64) -> f64 {
    let mut x = x;
    let mut k = k;
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k as i32)
}

/// An exact function value: finite (as an arbitrary-precision number, exact or known to far
/// more bits than the format has), infinite, or NaN.
#[derive(Clone, Debug)]
pub enum Exact {
    /// A finite real value.
    Finite(Big),
    /// ±infinity (a pole, or an infinite argument).
    Inf {
        /// The sign.
        negative: bool,
    },
    /// Not a number (outside the domain).
    NaN,
}

use dashu_base::{BitTest, UnsignedAbs};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::pow2;

    fn fin(x: Big) -> Exact {
        Exact::Finite(x)
    }

    #[test]
    fn ulp_errors_on_known_cases() {
        let one = big::exact(1.0);
        // 1 + 2^-24 is half an f32 ulp above 1 (ulp at 1 is 2^-23).
        let z = one.clone() + pow2(-24);
        assert_eq!(ulp_error(Format::F32, 1.0, &fin(z.clone())), 0.5);
        assert_eq!(ulp_error(Format::F64, 1.0, &fin(z)), (2f64).powi(28));
        // Below 1 the ulp halves: 1 − 2^-25 has ulp 2^-24.
        let z = one.clone() - pow2(-25);
        assert_eq!(ulp_error(Format::F32, 1.0, &fin(z)), 0.5);
        // Subnormal range: fixed ulp 2^-149.
        assert_eq!(ulp_error(Format::F32, 0.0, &fin(pow2(-150))), 0.5);
        assert_eq!(
            ulp_error(Format::F32, 0.0, &fin(pow2(-160))),
            (2f64).powi(-11)
        );
        // Past the largest f32: the ulp keeps growing (2^105 at 2^128).
        assert_eq!(
            ulp_error(Format::F32, f32::MAX as f64, &fin(pow2(128))),
            0.5
        );
        // 2^128 rounds to +inf in f32 (it is past MAX + ulp/2): inf is correctly rounded.
        assert_eq!(ulp_error(Format::F32, f64::INFINITY, &fin(pow2(128))), 0.0);
        assert_eq!(
            ulp_error(
                Format::F32,
                f64::INFINITY,
                &fin(big::exact(f32::MAX as f64))
            ),
            f64::INFINITY
        );
        assert_eq!(
            ulp_error(Format::F32, f64::NEG_INFINITY, &fin(pow2(128))),
            f64::INFINITY
        );
        // Exact and special values.
        assert_eq!(ulp_error(Format::F64, 2.0, &fin(big::exact(2.0))), 0.0);
        assert_eq!(ulp_error(Format::F64, f64::NAN, &Exact::NaN), 0.0);
        assert_eq!(ulp_error(Format::F64, 1.0, &Exact::NaN), f64::INFINITY);
        assert_eq!(
            ulp_error(
                Format::F64,
                f64::NEG_INFINITY,
                &Exact::Inf { negative: true }
            ),
            0.0
        );
        assert_eq!(
            ulp_error(Format::F64, f64::INFINITY, &Exact::Inf { negative: true }),
            f64::INFINITY
        );
        // A result far from a tiny exact value: the quotient is still computed.
        let e = ulp_error(Format::F64, (2f64).powi(-1000), &fin(pow2(-1074)));
        assert_eq!(e, (2f64).powi(74) - 1.0);
        // Errors of results near binary64's subnormal range keep their fractions: 0 against
        // 2^-1075 + 2^-1081 is 0.5 + 2^-7 ulps, and 2^-1074 against it 0.5 − 2^-7.
        let z = pow2(-1075) + pow2(-1081);
        assert_eq!(
            ulp_error(Format::F64, 0.0, &fin(z.clone())),
            0.5 + 2f64.powi(-7)
        );
        assert_eq!(ulp_error(Format::F64, 5e-324, &fin(z)), 0.5 - 2f64.powi(-7));
        let z = big::exact(2f64.powi(-1022)) + pow2(-1076);
        assert_eq!(ulp_error(Format::F64, 2f64.powi(-1022), &fin(z)), 0.25);
        // Format facts.
        assert_eq!(Format::F32.ulp_of_f64(1.0), (2f64).powi(-23));
        assert_eq!(Format::F32.ulp_of_f64(1e-40), (2f64).powi(-149));
        assert_eq!(Format::F64.ulp_of_f64(0.0), 5e-324);
        assert_eq!(Format::F64.ulp_of_f64(1e-310), 5e-324);
        assert_eq!(binary_exponent(5e-324), -1074);
        assert_eq!(binary_exponent(-3.0), 1);
        assert_eq!(big_exponent(&big::exact(0.75)), Some(-1));
    }
}
