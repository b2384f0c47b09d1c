//! A CPU model of f32 arithmetic under NVRTC's `--ftz=true` (which `--use_fast_math` implies),
//! as the twin header is compiled: [`Ftz32`] implements mantissa-num's `Base`, so the very
//! algorithms of `dw.rs`, `comp.rs` and `eft.rs`, instantiated over it, say what the GPU computes
//! under `fast` and `ftz`.
//!
//! The rule, read off the PTX (`ptx.rs` checks it under every flag set): with ftz, each f32
//! `add`, `sub`, `mul`, `fma`, `div`, `sqrt` of the header is `<op>.rn.ftz.f32` and each f32
//! comparison is `setp.<cmp>.ftz.f32`. Per the PTX ISA, `.ftz` flushes subnormal operands and
//! results to zero of the same sign. Everything the header does on bits is exact here too:
//! negation and absolute value (sign bit), `is_nan`, `is_finite`, `is_sign_negative`, `exponent`,
//! and the powers of two of `scale2` (built from bits, possibly subnormal, and then flushed as
//! operands of the `mul`).
//!
//! What the PTX ISA leaves open is when a result counts as subnormal: after rounding (a `mul`,
//! `fma` or `div` whose exact value lies just below 2^-126 but rounds up to 2^-126 stays), or
//! before (it is flushed). `Ftz32<false>` ([`FtzAfter`]) flushes after rounding, `Ftz32<true>`
//! ([`FtzBefore`]) before; they differ only on such results, and the GPU test accepts either as
//! long as the GPU follows one of them throughout, and says which.
//!
//! Every flush of a non-zero subnormal is counted per thread ([`take_flushes`]), so the tests can
//! say which inputs `ftz` touches at all.

use mantissa_num::base::Base;
use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Sub};

thread_local! {
    static FLUSHES: Cell<u64> = const { Cell::new(0) };
}

/// The number of non-zero subnormals this thread flushed since the last call.
pub fn take_flushes() -> u64 {
    FLUSHES.with(|c| c.replace(0))
}

/// A subnormal operand becomes a zero of its sign.
#[inline]
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        FLUSHES.with(|c| c.set(c.get() + 1));
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// The flushed result `r` (rounded as IEEE does) of an operation whose exact value is `exact`
/// (computed in f64, where it is exact or, for `div` and `fma`, close enough to decide on which
/// side of 2^-126 it lies). With tininess before rounding, a result rounded up to ±2^-126 from
/// below is flushed too.
#[inline]
fn result<const BEFORE: bool>(r: f32, exact: impl FnOnce() -> f64) -> f32 {
    let tiny = r.is_subnormal()
        || (BEFORE && r.abs() == f32::MIN_POSITIVE && exact().abs() < f32::MIN_POSITIVE as f64);
    if tiny {
        FLUSHES.with(|c| c.set(c.get() + 1));
        0.0f32.copysign(r)
    } else {
        r
    }
}

/// An f32 whose arithmetic and comparisons flush subnormals as `.ftz.f32` PTX instructions do;
/// `BEFORE` says whether results are judged subnormal before rounding.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ftz32<const BEFORE: bool>(pub f32);

/// Tininess after rounding (IEEE 754's default choice on x86 and ARM).
pub type FtzAfter = Ftz32<false>;
/// Tininess before rounding.
pub type FtzBefore = Ftz32<true>;

impl<const B: bool> PartialEq for Ftz32<B> {
    /// `setp.eq.ftz.f32` (and `setp.neu.ftz.f32` for `!=`).
    fn eq(&self, other: &Self) -> bool {
        flush(self.0) == flush(other.0)
    }
}

impl<const B: bool> PartialOrd for Ftz32<B> {
    /// `setp.lt/le/gt/ge.ftz.f32`.
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        flush(self.0).partial_cmp(&flush(other.0))
    }
}

impl<const B: bool> fmt::Display for Ftz32<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl<const B: bool> fmt::LowerExp for Ftz32<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerExp::fmt(&self.0, f)
    }
}

macro_rules! flushed_binop {
    ($tr:ident, $m:ident, $op:tt) => {
        impl<const B: bool> $tr for Ftz32<B> {
            type Output = Self;
            #[inline]
            fn $m(self, y: Self) -> Self {
                let (a, b) = (flush(self.0), flush(y.0));
                Ftz32(result::<B>(a $op b, || a as f64 $op b as f64))
            }
        }
    };
}
flushed_binop!(Add, add, +);
flushed_binop!(Sub, sub, -);
flushed_binop!(Mul, mul, *);
flushed_binop!(Div, div, /);

impl<const B: bool> Neg for Ftz32<B> {
    type Output = Self;
    /// The header flips the sign bit (no `neg.ftz.f32`), so negation never flushes.
    #[inline]
    fn neg(self) -> Self {
        Ftz32(-self.0)
    }
}

/// 2^k from bits, as base.rs's `pow2_f32` and the header's `pow2<float>`.
fn pow2(k: i32) -> f32 {
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

impl<const B: bool> Base for Ftz32<B> {
    const NAME: &'static str = "f32";
    const DIGITS: u32 = 24;
    const MIN_EXP: i32 = -126;
    const MAX_EXP: i32 = 127;
    const ZERO: Self = Ftz32(0.0);
    const ONE: Self = Ftz32(1.0);
    const TWO: Self = Ftz32(2.0);
    const INFINITY: Self = Ftz32(f32::INFINITY);
    const NAN: Self = Ftz32(f32::NAN);
    const MAX: Self = Ftz32(f32::MAX);
    const SPLITTER: Self = Ftz32(4097.0);

    /// `fma.rn.ftz.f32`: operands flushed, one rounding, result flushed.
    fn fma(a: Self, b: Self, c: Self) -> Self {
        let (a, b, c) = (flush(a.0), flush(b.0), flush(c.0));
        Ftz32(result::<B>(a.mul_add(b, c), || {
            (a as f64).mul_add(b as f64, c as f64)
        }))
    }
    /// `sqrt.rn.ftz.f32` (the root of a normal is normal, so no tininess question arises).
    fn sqrt(self) -> Self {
        let a = flush(self.0);
        Ftz32(result::<B>(a.sqrt(), || (a as f64).sqrt()))
    }
    /// Sign bit cleared, as the header's `clear_sign`.
    fn abs(self) -> Self {
        Ftz32(self.0.abs())
    }
    fn is_finite(self) -> bool {
        self.0.is_finite()
    }
    fn is_nan(self) -> bool {
        self.0.is_nan()
    }
    fn is_sign_negative(self) -> bool {
        self.0.is_sign_negative()
    }
    fn to_f64(self) -> f64 {
        self.0 as f64
    }
    fn from_f64(x: f64) -> Self {
        Ftz32(x as f32)
    }
    /// The header's `scale2`: two `mul.rn.ftz.f32` by powers of two built from bits.
    fn scale2(self, k: i32) -> Self {
        let half = k / 2;
        self * Ftz32(pow2(half)) * Ftz32(pow2(k - half))
    }
    /// Read from bits (exact), as in the header.
    fn exponent(self) -> Option<i32> {
        self.0.exponent()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_num::{Comp32, DoubleWord, F32x2};

    fn bits<const B: bool>(x: Ftz32<B>) -> u32 {
        x.0.to_bits()
    }
    fn m(x: f32) -> FtzAfter {
        Ftz32(x)
    }

    #[test]
    fn operands_and_results_flush_with_their_sign() {
        let tiny = m(f32::from_bits(0x0040_0000)); // 2^-127, subnormal
        let min = m(f32::MIN_POSITIVE);
        let _ = take_flushes();
        assert_eq!(bits(tiny + m(0.0)), 0);
        assert_eq!(bits(-tiny + m(-0.0)), 0x8000_0000);
        assert_eq!(bits(min * m(0.5)), 0); // exact 2^-127, flushed
        assert_eq!(bits(min * m(-0.5)), 0x8000_0000);
        assert_eq!(bits(tiny * m(4.0)), 0); // the operand flushes first
        assert_eq!(take_flushes(), 5);
        // (1 - 2^-24) 2^-126 rounds up to the normal 2^-126 (ties to even): not flushed.
        let below = m(1.0 - f32::EPSILON / 2.0);
        assert_eq!((below * min).0, f32::MIN_POSITIVE);
        // With tininess before rounding it is flushed (and counted).
        assert_eq!(bits(Ftz32::<true>(below.0) * Ftz32::<true>(min.0)), 0);
        // Comparisons see flushed operands; classification and negation do not flush.
        assert!(tiny == m(0.0) && tiny <= m(0.0) && tiny >= m(-0.0));
        assert_eq!(bits(-tiny), 0x8040_0000);
        assert!(tiny.is_finite() && tiny.exponent() == Some(-127));
        assert_eq!(bits(FtzAfter::fma(min, m(-0.5), m(0.0))), 0x8000_0000);
        assert_eq!(take_flushes(), 5); // one product, three comparisons, one fma
    }

    #[test]
    fn normal_arithmetic_is_ieee_and_flushes_nothing() {
        let x = F32x2::from_sum(1.5, 3.0e-8);
        let y = F32x2::from_sum(-0.7, 1.0e-9);
        let dm = |d: F32x2| DoubleWord::<FtzAfter>::from_parts(m(d.hi), m(d.lo));
        let _ = take_flushes();
        for (a, b) in [
            (x + y, dm(x) + dm(y)),
            (x * y, dm(x) * dm(y)),
            (x / y, dm(x) / dm(y)),
            (x.sqrt(), dm(x).sqrt()),
        ] {
            assert_eq!((a.hi.to_bits(), a.lo.to_bits()), (bits(b.hi), bits(b.lo)));
        }
        let c = Comp32::new(2.0, 1e-9) * Comp32::new(3.0, -1e-9);
        let cm = mantissa_num::comp::Comp::new(m(2.0), m(1e-9))
            * mantissa_num::comp::Comp::new(m(3.0), m(-1e-9));
        assert_eq!(c.value.to_bits(), bits(cm.value));
        assert_eq!(c.error.to_bits(), bits(cm.error));
        assert_eq!(take_flushes(), 0);
    }

    #[test]
    fn scale2_flushes_a_subnormal_power_of_two() {
        // 2^-253 is applied as 2^-126 * 2^-127; the second factor is subnormal, so the GPU's mul
        // flushes it even where the IEEE result, here 2^-126, is normal.
        assert_eq!(Base::scale2(2f32.powi(127), -253), f32::MIN_POSITIVE);
        assert_eq!(bits(m(2f32.powi(127)).scale2(-253)), 0);
        assert_eq!(m(3.0).scale2(-100).0, 3.0 * 2f32.powi(-100));
    }
}
