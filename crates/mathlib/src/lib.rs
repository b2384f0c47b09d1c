//! Math-library accuracy: the largest ulp errors of CUDA's f32 and f64 math functions (as built
//! by default, with `-use_fast_math`, and the `__` intrinsics) and of the CPU's libraries, each
//! against a correctly rounded reference.
//!
//! - [`functions`]: the registry: every function, its CUDA names per precision and variant.
//! - [`format`]: the two formats, ulps and the error of a result in ulps of the exact value.
//! - [`reference`]: correctly rounded references from arbitrary precision (Ziv's strategy).
//! - [`cpu`]: the CPU libraries measured beside CUDA (Rust `std` over the platform libm, the
//!   `libm` crate).
//! - [`published`]: the CUDA guide's documented bounds and Gladman et al.'s measured errors.

pub mod cpu;
pub mod format;
pub mod functions;
pub mod published;
pub mod reference;

pub use format::Format;
pub use functions::{Function, Variant};
