//! π, ln 2 and ln 10 to any number of bits, computed once and kept for every thread.
//!
//! Each constant is held as an integer C with |C·2^-B − c| ≤ 2·2^-B for the largest B asked
//! so far (rounded up, so that a slowly growing demand does not recompute each time); a request
//! for fewer bits shifts C right. The series are evaluated in integers with guard bits whose
//! number covers the counted truncations (see each function).

use std::sync::RwLock;

use dashu_base::BitTest;
use dashu_int::{IBig, UBig};

use super::ball::{Ball, Mag};

struct Cached {
    bits: usize,
    value: IBig,
}

static PI: RwLock<Option<Cached>> = RwLock::new(None);
static LN2: RwLock<Option<Cached>> = RwLock::new(None);
static LN10: RwLock<Option<Cached>> = RwLock::new(None);

/// The constant as an integer with `bits` fractional bits, error ≤ 2 units of its last bit
/// (+ 1 for the shift, so the ball below uses 4 units, generously).
fn get(cell: &RwLock<Option<Cached>>, bits: usize, compute: fn(usize) -> IBig) -> IBig {
    {
        let guard = cell.read().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = guard.as_ref() {
            if c.bits >= bits {
                return &c.value >> (c.bits - bits);
            }
        }
    }
    let want = (bits + bits / 4).max(1024).next_multiple_of(256);
    let value = compute(want);
    let out = &value >> (want - bits);
    let mut guard = cell.write().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_none_or(|c| c.bits < want) {
        *guard = Some(Cached { bits: want, value });
    }
    out
}

/// A ball around the constant with `frac` fractional bits: the stored error (2 units at the
/// stored precision) plus the floor of the shift (1 unit at `frac`) is below 4·2^-frac.
fn ball(cell: &RwLock<Option<Cached>>, frac: usize, compute: fn(usize) -> IBig) -> Ball {
    let m = get(cell, frac, compute);
    Ball {
        m,
        e: -(frac as isize),
        r: Mag::pow2(2 - frac as i64),
    }
}

/// π with `frac` fractional bits.
pub fn pi(frac: usize) -> Ball {
    ball(&PI, frac, compute_pi)
}

/// π/2 with `frac` fractional bits.
pub fn half_pi(frac: usize) -> Ball {
    pi(frac + 1).mul_2k(-1)
}

/// ln 2 with `frac` fractional bits.
pub fn ln2(frac: usize) -> Ball {
    ball(&LN2, frac, compute_ln2)
}

/// ln 10 with `frac` fractional bits.
pub fn ln10(frac: usize) -> Ball {
    ball(&LN10, frac, compute_ln10)
}

/// Guard bits for a sum of about `bits` series terms each off by a few units: the total
/// error, at most 64·bits + 64 units (see the bounds below), shifts to below half a unit.
fn guard(bits: usize) -> usize {
    (64 * bits + 64).bit_len() + 2
}

/// Σ_j s^j / ((2j+1)·n^(2j+1)) · 2^scale, s = −1 (atan) or +1 (atanh), in integers.
///
/// With t_j the floored 2^scale/n^(2j+1) (t_0 = ⌊2^scale/n⌋, t_(j+1) = ⌊t_j/n²⌋), each t_j is
/// below its true value by less than 1 + 1/n² + 1/n⁴ + … < 1.05 units (n ≥ 5; < 1.125 for
/// n = 3), each term ⌊t_j/(2j+1)⌋ by less than 2.2 units, and the loop stops at the first
/// t_J = 0, whose true value is below 1.125, so the tail is below 1.125/(1 − 1/n²) < 1.3.
/// The error of the sum is below 2.2·J + 1.3 units, J the number of terms.
fn arctan_series(n: u64, scale: usize, alternating: bool) -> (IBig, usize) {
    let n2 = UBig::from(n * n);
    let mut t = (UBig::ONE << scale) / UBig::from(n);
    let mut sum = IBig::ZERO;
    let mut j = 0u64;
    while !t.is_zero() {
        let term = IBig::from(&t / UBig::from(2 * j + 1));
        if alternating && j % 2 == 1 {
            sum -= term;
        } else {
            sum += term;
        }
        t /= &n2;
        j += 1;
    }
    (sum, j as usize)
}

/// π = 16·atan(1/5) − 4·atan(1/239) (Machin). The error before the final shift is below
/// 16·(2.2·J₁ + 1.3) + 4·(2.2·J₂ + 1.3) units with J₁, J₂ < scale/4 + 1, far below the
/// 2^(g−1) the guard allows; the shift adds one unit: total < 2 units of 2^-bits.
fn compute_pi(bits: usize) -> IBig {
    let g = guard(bits);
    let s = bits + g;
    let (a, _) = arctan_series(5, s, true);
    let (b, _) = arctan_series(239, s, true);
    (a * 16 - b * 4) >> g
}

/// ln 2 = 2·atanh(1/3); error before the shift below 2·(2.2·J + 1.3) units, J < scale/3 + 1.
fn compute_ln2(bits: usize) -> IBig {
    let g = guard(bits);
    let (a, _) = arctan_series(3, bits + g, false);
    (a * 2) >> g
}

/// ln 10 = 3·ln 2 + ln(5/4) = 6·atanh(1/3) + 2·atanh(1/9); error before the shift below
/// 6·(2.2·J + 1.3) + 2·(2.2·J' + 1.3) units.
fn compute_ln10(bits: usize) -> IBig {
    let g = guard(bits);
    let (a, _) = arctan_series(3, bits + g, false);
    let (b, _) = arctan_series(9, bits + g, false);
    (a * 6 + b * 2) >> g
}
