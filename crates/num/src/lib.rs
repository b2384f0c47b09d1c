//! Floating-point arithmetic for mantissa: base formats and error-free transforms ([`base`],
//! [`eft`]), double-word ([`dw`]), composite ([`comp`]) and arbitrary-precision ([`mp`])
//! numbers behind one [`Real`] trait, the precision registry ([`precision`]), decimal strings
//! ([`decimal`]), exact references ([`big`]), exact sums and dot products ([`exact`]) and error
//! metrics ([`metrics`]). It has no GPU dependency and does no I/O: workloads, sweeps and reports
//! live in the crates above it.
//!
//! Arbitrary precision is pure Rust (dashu-float), so the crate builds with cargo alone: `rug`
//! (GMP/MPFR) needs `m4` and a C toolchain build that a fresh machine lacks, and astro-float
//! rounds every precision up to whole 64-bit words, so its "32-bit" numbers would really carry
//! 64 bits (see [`mp`] for the details and for the dashu defects worked around).

#![deny(missing_docs)]

pub mod base;
pub mod big;
pub mod comp;
pub mod decimal;
pub mod dw;
pub mod eft;
pub mod exact;
pub mod metrics;
pub mod mp;
pub mod precision;
pub mod real;

pub use comp::{Comp32, Comp64, CompNorm32, CompNorm64};
pub use dw::{f32x2, f64x2, DoubleWord, F32x2, F64x2};
pub use exact::{exact_dot, exact_sum, exact_sum_f32, ExactDot, ExactSum, LengthMismatch};
pub use metrics::{measure, ErrorMetrics, Reference};
pub use mp::{Mp, Mp1024, Mp128, Mp256, Mp32, Mp512, Mp64};
pub use precision::Precision;
pub use real::Real;
