//! Enclosures of erf, erfc, erfinv, lgamma and tgamma (see the module docs of [`super`]).
//!
//! Everything is computed in ball arithmetic ([`ball`]): a midpoint and a rigorous radius
//! that collects rounding errors, series remainders and the errors of constants, so the error
//! bound handed to the driver is the radius of the final ball (plus the rounding of the
//! returned value). Each function evaluates at a working precision a little above the one
//! asked for and, when the ball comes out too wide relative to its midpoint (cancellation
//! near a zero of lgamma, 1 − erf for erfc, …), evaluates again with the missing bits added
//! ([`refine`]), so that the driver's first precision usually suffices.
//!
//! - [`erf`]: erf, erfc (series, asymptotic expansion), erfinv (Newton plus a proved bracket).
//! - [`gamma`]: lgamma and tgamma (Stirling with exact Bernoulli numbers, shifts, reflection).
//! - [`kernels`]: exp, ln, sin(πx) and cached constants in ball arithmetic.

pub mod ball;
pub mod erf;
pub mod gamma;
pub mod kernels;

use mantissa_num::big;

use self::ball::{top, Ball};
use super::Approx;
use crate::functions::Function;

/// See [`super::approx`].
pub fn approx(f: Function, args: &[f64], prec: usize) -> Approx {
    let x = args[0];
    match f {
        Function::Erf => erf::erf(x, prec),
        Function::Erfc => erf::erfc(x, prec),
        Function::Erfinv => erf::erfinv(x, prec),
        Function::Lgamma => gamma::lgamma(x, prec),
        Function::Tgamma => gamma::tgamma(x, prec),
        _ => panic!("special::approx called for {}", f.name()),
    }
}

/// Evaluates `compute` at working precisions from prec + 16 upward until its ball has about
/// prec + 2 bits relative to its midpoint (or the precision reaches 4·prec + 256, after which
/// the driver's own doubling takes over), then hands it to [`finalize`].
pub fn refine(prec: usize, mut compute: impl FnMut(usize) -> Ball) -> Approx {
    let mut w = prec + 16;
    let cap = 4 * prec + 256;
    loop {
        let b = compute(w);
        let missing = match (top(&b.mid), b.rad.ceil_log2()) {
            (_, None) => 0,
            (None, Some(_)) => w,
            (Some(e), Some(l)) => {
                let have = e - l;
                (prec as i64 + 2 - have).max(0) as usize
            }
        };
        if missing == 0 || w >= cap {
            return finalize(b, prec);
        }
        w = (w + missing + 16).min(cap);
    }
}

/// The driver's view of a ball: a value with a limited precision (the driver subtracts and
/// adds 2^err to it; a value of unlimited precision would make that exact, and with a tiny
/// error, enormous) and an error bound that is at least a few ulps of that precision, so that
/// value ± 2^err is computed exactly.
///
/// With L = ⌈log2 rad⌉ (raised to e − 2·prec − 64 when smaller, e the value's exponent), the
/// value is rounded to W = e − L + 4 bits, which moves it by at most 2^(L−3); the bound
/// returned is 2^(L+1) ≥ rad + 2^(L−3).
pub fn finalize(b: Ball, prec: usize) -> Approx {
    let floor = |e: i64| e - 2 * prec as i64 - 64;
    match top(&b.mid) {
        None => {
            let l = b.rad.ceil_log2().unwrap_or(-(prec as i64) - 64);
            Approx::Near {
                value: big::with_bits(b.mid, 8),
                err_log2: (l + 1) as isize,
            }
        }
        Some(e) => {
            let l = b.rad.ceil_log2().unwrap_or(i64::MIN).max(floor(e));
            let bits = (e - l + 4).max(8) as usize;
            let value = big::with_bits(b.mid, bits);
            Approx::Near {
                value,
                err_log2: (l + 1) as isize,
            }
        }
    }
}

