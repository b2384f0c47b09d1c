//! mantissa's experiments. Each module is one experiment: it takes a plain configuration, runs
//! on the CPU and the GPU, reports progress through [`Progress`], and returns or appends plain
//! records for the report layer. Nothing here prints to the terminal.
//!
//! - [`ops`]: the accuracy of single arithmetic operations in every precision (seed 001 Table 1).
//! - [`gpu_ops`]: the same on the GPU with the CUDA twin, plus element-wise time, speed-up over
//!   f64 (seed 001 Table 2) and compute-bound throughput against the device's roofline.
//! - [`gpu_reduce`]: sums, dot products and π quadratures reduced on the GPU entirely in the
//!   precision under test (with CPU models of their exact order), and an exact f64 sum.
//! - [`study`]: `mantissa study` — the plan of measurement points (sums, dot products, π) over
//!   precisions × CPU threads × GPU launch shapes, and the CPU runner; [`gpu_study`] runs its GPU
//!   points, [`inputs`] makes the data (seed 000's ranges), [`reduce`] holds the CPU algorithms.
//! - [`intensity`], [`linalg`], [`chains`]: the kernel-style workloads of seed 000 ch. 6–8
//!   (arithmetic intensity; Gaussian elimination and LU; multiplication chains and do/undo), each
//!   with its CPU and GPU runs, reporting a [`measurement::Measurement`] per point.
//! - [`device_words`]: how each precision's values travel to the GPU as base-format words.

pub mod chains;
pub mod device_words;
pub mod gpu_ops;
pub mod gpu_reduce;
pub mod gpu_study;
pub mod inputs;
pub mod intensity;
pub mod linalg;
pub mod measurement;
pub mod ops;
pub mod progress;
pub mod reduce;
pub mod study;

pub use progress::{NoProgress, Progress};
