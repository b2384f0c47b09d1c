//! IEEE arithmetic in the four rounding directions for f32 and f64, as PTX's `.rn`, `.rz`,
//! `.rm` and `.rp` define it, on a CPU that rounds to nearest.
//!
//! Each operation is computed to nearest in f64 together with the sign of its exact error
//! (error-free transforms: TwoSum for sums, an fma for products, quotients and square roots,
//! Boldo and Muller's ErrFma for fused multiply-adds); the directed result is then the nearest
//! value or its neighbour, decided by that sign. f32 operations are computed on their exact f64
//! values, whose sums and products are exact or carry an exact error in f64, and rounded once to
//! f32 from (nearest f64, error sign): when the nearest f64 is not an f32 the exact value lies
//! strictly between the same two f32 neighbours, and when it is an f32 midpoint the error's
//! sign breaks the tie, so no double rounding occurs.
//!
//! Limitation: the error terms are exact only while they do not underflow, i.e. for products,
//! quotients and square roots whose results are above about 2^-969 (f64); below that the
//! directed modes may be one ulp off. f32 results are not affected (their f64 computation is far
//! from f64 underflow). Round-to-nearest is exact everywhere.

use crate::op::Rounding;

/// The rounding directions of IEEE arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// To nearest, ties to even.
    Nearest,
    /// Toward zero.
    Zero,
    /// Toward minus infinity.
    Down,
    /// Toward plus infinity.
    Up,
}

impl Mode {
    /// The mode of a PTX rounding modifier (`None` for the integer ones), nearest when absent.
    pub fn of(r: Option<Rounding>) -> Option<Mode> {
        Some(match r {
            None | Some(Rounding::Rn) => Mode::Nearest,
            Some(Rounding::Rz) => Mode::Zero,
            Some(Rounding::Rm) => Mode::Down,
            Some(Rounding::Rp) => Mode::Up,
            _ => return None,
        })
    }
}

/// A value rounded to nearest f64 and the sign of what rounding dropped (-1, 0, 1).
#[derive(Debug, Clone, Copy)]
pub struct Rounded {
    hi: f64,
    err: i8,
}

fn sign(x: f64) -> i8 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

impl Rounded {
    fn new(hi: f64, err: f64) -> Rounded {
        // A non-finite result has no meaningful error term.
        let err = if hi.is_finite() { sign(err) } else { 0 };
        Rounded { hi, err }
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// a + b.
pub fn add(a: f64, b: f64) -> Rounded {
    let (s, e) = two_sum(a, b);
    Rounded::new(s, e)
}

/// a · b.
pub fn mul(a: f64, b: f64) -> Rounded {
    let p = a * b;
    Rounded::new(p, a.mul_add(b, -p))
}

/// a · b + c, rounded once.
pub fn fma(a: f64, b: f64, c: f64) -> Rounded {
    let r1 = a.mul_add(b, c);
    if !r1.is_finite() {
        return Rounded::new(r1, 0.0);
    }
    // ErrFma (Boldo and Muller 2005): a·b + c = r1 + r2 + r3 exactly, |r3| tiny against r2.
    let u1 = a * b;
    let u2 = a.mul_add(b, -u1);
    let (alpha1, z) = two_sum(c, u2);
    let (beta1, beta2) = two_sum(u1, alpha1);
    let gamma = (beta1 - r1) + beta2;
    let r2 = gamma + z;
    let r3 = z - (r2 - gamma);
    Rounded::new(r1, if r2 != 0.0 { r2 } else { r3 })
}

/// a / b.
pub fn div(a: f64, b: f64) -> Rounded {
    let q = a / b;
    if !q.is_finite() || q == 0.0 {
        return Rounded::new(q, 0.0);
    }
    // a − q·b is exact; the exact quotient exceeds q when it has b's sign.
    let r = (-q).mul_add(b, a);
    Rounded::new(q, r * b.signum())
}

/// √a.
pub fn sqrt(a: f64) -> Rounded {
    let s = a.sqrt();
    if !s.is_finite() || s == 0.0 {
        return Rounded::new(s, 0.0);
    }
    Rounded::new(s, (-s).mul_add(s, a))
}

/// The exact value `x` as an f64 in `mode`. `operands_finite` tells an overflow (which the
/// directed modes stop at the largest finite number) from an exact infinity.
pub fn to_f64(x: Rounded, mode: Mode, operands_finite: bool) -> f64 {
    let Rounded { hi, err } = x;
    if hi.is_nan() {
        return hi;
    }
    if hi.is_infinite() {
        return if operands_finite {
            overflow_f64(hi, mode)
        } else {
            hi
        };
    }
    match (mode, err) {
        (Mode::Nearest, _) | (_, 0) => hi,
        (Mode::Down, e) => {
            if e < 0 {
                next_down_f64(hi)
            } else {
                hi
            }
        }
        (Mode::Up, e) => {
            if e > 0 {
                next_up_f64(hi)
            } else {
                hi
            }
        }
        (Mode::Zero, e) => {
            if hi > 0.0 && e < 0 {
                next_down_f64(hi)
            } else if hi < 0.0 && e > 0 {
                next_up_f64(hi)
            } else {
                hi
            }
        }
    }
}

/// An overflowed (infinite when rounded to nearest) result in `mode`.
fn overflow_f64(hi: f64, mode: Mode) -> f64 {
    match (mode, hi > 0.0) {
        (Mode::Nearest, _) | (Mode::Up, true) | (Mode::Down, false) => hi,
        (_, true) => f64::MAX,
        (_, false) => -f64::MAX,
    }
}

/// The exact value `x` (computed on f32 operands) as an f32 in `mode`; past the largest f32,
/// the directed modes stop at it.
pub fn to_f32(x: Rounded, mode: Mode) -> f32 {
    let Rounded { hi, err } = x;
    if hi.is_nan() {
        return f32::NAN;
    }
    // f32 operands never overflow f64: an infinity here is exact.
    if hi.is_infinite() {
        return hi as f32;
    }
    let y = hi as f32;
    if f64::from(y) == hi {
        // An f32 already: the error alone decides.
        return match (mode, err) {
            (Mode::Nearest, _) | (_, 0) => y,
            (Mode::Down, e) => {
                if e < 0 {
                    next_down_f32(y)
                } else {
                    y
                }
            }
            (Mode::Up, e) => {
                if e > 0 {
                    next_up_f32(y)
                } else {
                    y
                }
            }
            (Mode::Zero, e) => {
                if hi > 0.0 && e < 0 {
                    next_down_f32(y)
                } else if hi < 0.0 && e > 0 {
                    next_up_f32(y)
                } else {
                    y
                }
            }
        };
    }
    // Strictly between two f32 neighbours (the upper one may be +inf past the largest f32).
    let (lower, upper) = if f64::from(y) < hi {
        (y, next_up_f32(y))
    } else {
        (next_down_f32(y), y)
    };
    match mode {
        Mode::Down => lower,
        Mode::Up => upper,
        Mode::Zero => {
            if hi > 0.0 {
                lower
            } else {
                upper
            }
        }
        Mode::Nearest => {
            let mid = (f64::from(lower) + f64::from(upper)) / 2.0;
            // A tie of the f64 value is broken by what its own rounding dropped.
            if hi == mid && err != 0 {
                if err > 0 {
                    upper
                } else {
                    lower
                }
            } else {
                y
            }
        }
    }
}

/// An exact value (nothing to round: an operand, an infinity, a NaN).
pub fn exact(x: f64) -> Rounded {
    Rounded { hi: x, err: 0 }
}

/// The next f64 above `x` (`x` finite).
pub fn next_up_f64(x: f64) -> f64 {
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next f64 below `x` (`x` finite).
pub fn next_down_f64(x: f64) -> f64 {
    -next_up_f64(-x)
}

/// The next f32 above `x` (`x` finite; +inf after the largest).
pub fn next_up_f32(x: f32) -> f32 {
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next f32 below `x` (`x` finite).
pub fn next_down_f32(x: f32) -> f32 {
    -next_up_f32(-x)
}
