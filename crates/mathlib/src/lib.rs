//! Math-library accuracy: the largest ulp errors of CUDA's f32 and f64 math functions (as built
//! by default, with `-use_fast_math`, and the `__` intrinsics) and of the CPU's libraries, each
//! against a correctly rounded reference.
//!
//! - [`functions`]: the registry: every function, its CUDA names per precision and variant.
//! - [`format`]: the two formats, ulps and the error of a result in ulps of the exact value.
//! - [`reference`]: correctly rounded references from arbitrary precision (Ziv's strategy).
//! - [`gpu`]: CUDA's functions on the GPU: evaluation, exhaustive f32 sweeps, screening.

pub mod format;
pub mod functions;
pub mod gpu;
pub mod published;
pub mod reference;

pub use format::Format;
pub use functions::{Function, Variant};
