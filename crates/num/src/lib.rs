//! Floating-point arithmetic for mantissa.
pub mod base;
pub mod big;
pub mod eft;
pub mod real;

pub use real::Real;
