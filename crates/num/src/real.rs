//! [`Real`]: the one interface every precision implements, so a workload is written once and runs
//! in f32, f64, f32x2, f64x2, comp32, comp64 and `mp<bits>`.

use core::fmt::Debug;
use core::ops::{Add, Div, Mul, Neg, Sub};

use crate::big::{self, Big};

/// A real-number type under study.
///
/// Operators round as the type does (one IEEE rounding for f32/f64, the documented double-word or
/// composite algorithm otherwise). Values are `Clone` rather than `Copy` so that arbitrary
/// precision fits the same interface; for the hardware types a clone is a register copy.
pub trait Real:
    Clone
    + Debug
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// The precision's name in records and on the command line (`f32`, `f64x2`, `mp256`, ...).
    fn precision_name() -> String;
    /// Significand bits the type carries at best (24, 53, 48, 106, or the mp bit count). For the
    /// composite types this is the nominal width of the pair, which the scheme does not deliver
    /// in general: that gap is what the study measures.
    fn significand_bits() -> u32;
    /// The representable value nearest to `x` (exact whenever the type can hold `x`).
    fn from_f64(x: f64) -> Self;
    /// The integer `n`, rounded as `from_f64` would if it is not representable.
    fn from_i64(n: i64) -> Self;
    /// The f64 nearest to the represented value.
    fn to_f64(&self) -> f64;
    /// The exact represented value; `None` for NaN and infinities.
    fn to_big(&self) -> Option<Big>;
    /// Zero, the start of every sum.
    fn zero() -> Self {
        Self::from_f64(0.0)
    }
    /// One, the start of every product.
    fn one() -> Self {
        Self::from_f64(1.0)
    }
    /// The type's own square root: correctly rounded for f32, f64 and mp, within the stated
    /// bound for double-word, about 2p − 2 bits for the composite types.
    fn sqrt(&self) -> Self;
    /// |self|, exact in every type.
    fn abs(&self) -> Self;
    /// `self · b + c`: fused (one rounding) for f32 and f64; for the other types, the type's own
    /// product followed by its own sum.
    fn mul_add(&self, b: &Self, c: &Self) -> Self;
    /// Neither infinite nor NaN (such results are counted apart rather than scored).
    fn is_finite(&self) -> bool;
    /// Whether the value is NaN.
    fn is_nan(&self) -> bool;
}

macro_rules! impl_real_for_native {
    ($t:ty, $bits:expr) => {
        impl Real for $t {
            fn precision_name() -> String {
                stringify!($t).to_string()
            }
            fn significand_bits() -> u32 {
                $bits
            }
            #[inline]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline]
            fn from_i64(n: i64) -> Self {
                n as $t
            }
            #[inline]
            fn to_f64(&self) -> f64 {
                *self as f64
            }
            fn to_big(&self) -> Option<Big> {
                self.is_finite().then(|| big::exact(*self as f64))
            }
            #[inline]
            fn sqrt(&self) -> Self {
                <$t>::sqrt(*self)
            }
            #[inline]
            fn abs(&self) -> Self {
                <$t>::abs(*self)
            }
            #[inline]
            fn mul_add(&self, b: &Self, c: &Self) -> Self {
                <$t>::mul_add(*self, *b, *c)
            }
            #[inline]
            fn is_finite(&self) -> bool {
                <$t>::is_finite(*self)
            }
            #[inline]
            fn is_nan(&self) -> bool {
                <$t>::is_nan(*self)
            }
        }
    };
}

impl_real_for_native!(f32, 24);
impl_real_for_native!(f64, 53);
