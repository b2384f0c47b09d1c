//! Floating-point arithmetic for mantissa.
pub mod base;
pub mod big;
pub mod eft;
pub mod real;

pub use real::Real;
pub mod decimal;
pub mod dw;

pub use dw::{f32x2, f64x2, DoubleWord, F32x2, F64x2};
