//! Correctly rounded references from arbitrary precision, by Ziv's strategy: evaluate an
//! enclosure of f(x) at a working precision, round both ends of the enclosure to the target
//! format, and accept when they agree; otherwise double the precision and try again.
//!
//! Every function supplies [`approx`]: a value and a *rigorous* bound on its absolute error at a
//! requested precision, or the exact value when it is special (NaN, ±inf, an exact zero, an
//! exactly representable result such as exp(0) = 1 or sqrt(4) = 2, a midpoint such as some
//! pow results). The driver here never trusts a result whose enclosure straddles a rounding
//! boundary, so a reported error can only be wrong if a function's error bound is wrong — which
//! the tests check against evaluations at much higher precision.
//!
//! - [`elementary`]: exp, exp2, exp10, expm1, log, log2, log10, log1p, pow, sqrt, rsqrt, cbrt,
//!   hypot, div, the trigonometric, inverse trigonometric and hyperbolic functions.
//! - [`special`]: erf, erfc, erfinv, lgamma, tgamma.
//!
//! Both are built on the same pieces: [`ball`] arithmetic (a midpoint and a rigorous radius),
//! the cached constants of [`consts`] (π, ln 2, ln 10) and the exp/log/trigonometric kernels
//! of [`series`].

pub mod ball;
pub mod consts;
pub mod elementary;
pub mod series;
pub mod special;

use mantissa_num::big::Big;

use crate::format::{big_exponent, Exact, Format};
use crate::functions::Function;

/// An enclosure of f(args) at some working precision.
#[derive(Clone, Debug)]
pub enum Approx {
    /// The exact value is known (special values, exact zeros, exactly representable results).
    Exact(Exact),
    /// |value − f(args)| ≤ 2^err_log2.
    Near {
        /// The approximation (any precision).
        value: Big,
        /// log2 of a rigorous bound on the absolute error.
        err_log2: isize,
    },
}

/// A correctly rounded reference for one input.
#[derive(Clone, Debug)]
pub struct Reference {
    /// The exact value (finite values known to at least [`Format::working_bits`] bits).
    pub exact: Exact,
    /// The exact value rounded to nearest (ties to even) in the target format, as f64.
    pub rounded: f64,
    /// The working precision at which the rounding was decided (0 for exact values).
    pub bits: usize,
}

/// Rounding could not be decided below [`MAX_BITS`]: reported, never guessed.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{function}({args:?}): rounding to {format:?} undecided at {bits} bits")]
pub struct Undecided {
    /// The function.
    pub function: &'static str,
    /// Its arguments.
    pub args: Vec<f64>,
    /// The target format.
    pub format: Format,
    /// The last precision tried.
    pub bits: usize,
}

/// The largest working precision Ziv's loop tries.
pub const MAX_BITS: usize = 16_384;

/// An enclosure of `f(args)` with about `prec` correct bits (relative to the result's
/// magnitude, where the function can give that cheaply; the driver asks again with more bits
/// when it is not enough). `args` has `f.arity()` finite-or-special f64 values (f32 inputs come
/// widened, exactly).
pub fn approx(f: Function, args: &[f64], prec: usize) -> Approx {
    if f.is_special() {
        special::approx(f, args, prec)
    } else {
        elementary::approx(f, args, prec)
    }
}

/// The correctly rounded value of `f(args)` in `format`, with the exact value to enough bits to
/// measure any result's error in ulps.
pub fn reference(f: Function, args: &[f64], format: Format) -> Result<Reference, Undecided> {
    let need = format.working_bits() as isize;
    let mut prec = (format.working_bits() as usize + 32).next_power_of_two();
    while prec <= MAX_BITS {
        match approx(f, args, prec) {
            Approx::Exact(exact) => {
                let rounded = match &exact {
                    Exact::Finite(z) => format.round_big(z),
                    Exact::NaN => f64::NAN,
                    Exact::Inf { negative } => {
                        if *negative {
                            f64::NEG_INFINITY
                        } else {
                            f64::INFINITY
                        }
                    }
                };
                return Ok(Reference {
                    exact,
                    rounded,
                    bits: 0,
                });
            }
            Approx::Near { value, err_log2 } => {
                if let Some(e) = big_exponent(&value) {
                    // Enough bits for the ulp error, and both ends of the enclosure round alike.
                    if err_log2 <= e as isize - need {
                        let err = pow2(err_log2);
                        let lo = value.clone() - err.clone();
                        let hi = value.clone() + err;
                        let (rlo, rhi) = (format.round_big(&lo), format.round_big(&hi));
                        if rlo.to_bits() == rhi.to_bits() {
                            return Ok(Reference {
                                rounded: format.round_big(&value),
                                exact: Exact::Finite(value),
                                bits: prec,
                            });
                        }
                    }
                }
            }
        }
        prec *= 2;
    }
    Err(Undecided {
        function: f.name(),
        args: args.to_vec(),
        format,
        bits: prec / 2,
    })
}

/// 2^k as an exact Big.
pub fn pow2(k: isize) -> Big {
    Big::from_repr(
        dashu_float::Repr::new(dashu_int::IBig::ONE, k),
        dashu_float::Context::new(0),
    )
}
