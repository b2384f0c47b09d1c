//! Enclosures of erf, erfc, erfinv, lgamma and tgamma (see the module docs of [`super`]).
//!
//! Everything is computed in ball arithmetic ([`ball`](super::ball), shared with the elementary
//! functions): a midpoint and a rigorous radius that collects rounding errors, series
//! remainders and the errors of constants, so the error bound handed to the driver is the
//! radius of the final ball (plus the rounding of the returned value, see [`finalize`]). Each
//! function evaluates at a working precision a little above the one asked for and, when the
//! ball comes out too wide relative to its midpoint (cancellation near a zero of lgamma,
//! 1 − erf for erfc, …), evaluates again with the missing bits added ([`refine`]), so that the
//! driver's first precision usually suffices and the result is relative even near zeros of
//! the function.
//!
//! Of dashu's floating-point arithmetic only the final rounding of [`finalize`] is relied on:
//! balls round their integer midpoints themselves, π, ln 2, exp and ln are the elementary
//! functions' ([`consts`](super::consts), [`series`](super::series)), and sin(πx) and the
//! Bernoulli numbers are computed here, all with explicit remainder bounds.
//!
//! Per function (x the argument, w the working precision):
//! - erf, erfc ([`erf`]): Maclaurin series for |x| ≤ 1 (alternating: tail ≤ first omitted
//!   term); the all-positive series (2/√π) x e^(−x²) Σ (2x²)^k/(2k+1)!! up to the point where
//!   erfc's asymptotic series suffices (tail ≤ 2 × first omitted term once the ratio is ≤ ½);
//!   the asymptotic series of erfc beyond (for real x > 0 the remainder is below the first
//!   omitted term). erfc = 1 − erf in the middle range, with 1.45 x² extra bits.
//!   erf(x) for 1.44 x² > 2w + 64 is 1 within 2^(−1.44 x²). erfc(x ≥ 256) is the stand-in
//!   `Exact(Finite(2^(−65536)))` (an upper bound that rounds to +0 and measures alike; see
//!   [`erf::erfc`] for why not the true value).
//! - erfinv ([`erf::erfinv`]): Newton on erf (x ≤ ½) or erfc (x > ½, with the exact 1 − x)
//!   from an f64 guess, then a proved bracket erf(y − δ) < x < erf(y + δ) (enclosures
//!   compared with x exactly), δ = 2^(e(y) − prec − 8): the value is y within δ.
//! - lgamma, tgamma ([`gamma`]): Stirling's series at z ≥ X0 = max(12, w/4) with the
//!   Bernoulli numbers exact (from the tangent numbers) and the remainder bounded by the first
//!   omitted term; smaller |x| shifted up by the recurrence with exact factors; x ≤ −X0 by the
//!   reflection formula with sin(πx) after an exact reduction modulo 2. Γ = exp(ln Γ) with
//!   ln Γ to as many more bits as its integer part has. Γ(n) = (n−1)! exactly for integers
//!   n ≤ 1024; Γ(x) for |x| ≥ 8192 is the stand-in ±2^(±65536) (see [`gamma::tgamma`]).

pub mod erf;
pub mod gamma;
pub mod kernels;

use mantissa_num::big;

use super::ball::Ball;
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
/// prec + 2 bits relative to its midpoint (or the precision reaches 2·prec + 256, after which
/// the driver's own doubling takes over), then hands it to [`finalize`].
pub fn refine(prec: usize, mut compute: impl FnMut(usize) -> Ball) -> Approx {
    let mut w = prec + 16;
    let cap = 2 * prec + 256;
    loop {
        let b = compute(w);
        let missing = match (b.exponent(), b.r.log2_ceil()) {
            (_, None) => 0,
            (None, Some(_)) => w,
            (Some(e), Some(l)) => {
                let have = e as i64 - l;
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
    match b.exponent() {
        None => {
            let l = b.r.log2_ceil().unwrap_or(-(prec as i64) - 64);
            Approx::Near {
                value: big::with_bits(b.mid_big(), 8),
                err_log2: (l + 1) as isize,
            }
        }
        Some(e) => {
            let e = e as i64;
            let l = b.r.log2_ceil().unwrap_or(i64::MIN).max(floor(e));
            let bits = (e - l + 4).max(8) as usize;
            let value = big::with_bits(b.mid_big(), bits);
            Approx::Near {
                value,
                err_log2: (l + 1) as isize,
            }
        }
    }
}
