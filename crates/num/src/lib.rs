//! Floating-point arithmetic for mantissa: base formats and error-free transforms ([`base`],
//! [`eft`]), double-word ([`dw`]), composite ([`comp`]) and arbitrary-precision ([`mp`])
//! numbers behind one [`Real`] trait, exact references ([`big`]) and error metrics
//! ([`metrics`]). It has no GPU dependency and does no I/O: workloads, sweeps and reports live
//! in the crates above it.
pub mod base;
pub mod big;
pub mod comp;
pub mod dw;
pub mod eft;
pub mod metrics;
pub mod mp;
pub mod real;

pub use comp::{Comp32, Comp64, CompNorm32, CompNorm64};
pub use dw::{f32x2, f64x2, DoubleWord, F32x2, F64x2};
pub use metrics::{measure, ErrorMetrics, Reference};
pub use mp::{Mp, Mp1024, Mp128, Mp256, Mp32, Mp512, Mp64};
pub use real::Real;
