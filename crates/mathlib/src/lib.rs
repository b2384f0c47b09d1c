//! Math-library accuracy: the largest ulp errors of CUDA's f32 and f64 math functions (as built
//! by default, with `-use_fast_math`, and the `__` intrinsics) and of the CPU's libraries, each
//! against a correctly rounded reference.
//!
//! - [`functions`]: the registry: every function, its CUDA names per precision and variant.
//! - [`format`](mod@format): the two formats, ulps and the error of a result in ulps of the exact value.
//! - [`reference`](mod@reference): correctly rounded references from arbitrary precision (Ziv's strategy).
//! - [`regions`], [`search`], [`stats`]: where to look, the sampling and search engine, what
//!   a measurement keeps.
//! - [`measure`], [`run`]: one function's every column; a whole plan with records; `--check`.
//! - [`estimate`]: a plan's time and memory before it runs, per unit and per shard.
//! - [`records`], [`table`], [`html`], [`hexfloat`]: `mathlib.jsonl` (through the results
//!   store), the tables, the page, input spellings.
//! - [`cpu`]: the CPU libraries measured beside CUDA (Rust `std` over the platform libm, the
//!   `libm` crate).
//! - [`published`]: the CUDA guide's documented bounds and Gladman et al.'s measured errors.
//! - [`gpu`]: CUDA's functions on the GPU: evaluation, exhaustive f32 sweeps, screening.

#![deny(missing_docs)]

pub mod cpu;
pub mod estimate;
pub mod format;
pub mod functions;
pub mod gpu;
pub mod hexfloat;
pub mod html;
pub mod measure;
pub mod published;
pub mod records;
pub mod reference;
pub mod regions;
pub mod run;
pub mod search;
pub mod stats;
pub mod table;

pub use format::Format;
pub use functions::{Function, Variant};
pub use gpu::MathGpu;

/// What can go wrong measuring.
#[derive(Debug, thiserror::Error)]
pub enum MathlibError {
    /// The GPU failed (build, launch, fault).
    #[error(transparent)]
    Gpu(#[from] mantissa_gpu::GpuError),
    /// A bad option or input: one line, exit code 2.
    #[error("{0}")]
    Usage(String),
    /// Records could not be read or written.
    #[error("{0}")]
    Io(String),
    /// The results store refused or failed: another writer, a resumed file of another plan, a
    /// file system error.
    #[error(transparent)]
    Store(#[from] mantissa_report::RecordError),
}
