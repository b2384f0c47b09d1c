//! mantissa's experiments. Each module is one experiment: it takes a plain configuration, runs
//! on the CPU (and, in later modules, the GPU), reports progress through [`Progress`], and
//! returns plain records for the report layer to print. Nothing here prints to the terminal.
//!
//! - [`ops`]: the accuracy of single arithmetic operations in every precision (seed 001 Table 1).
//! - [`gpu_ops`]: the same on the GPU with the CUDA twin, plus element-wise time, speed-up over
//!   f64 (seed 001 Table 2) and compute-bound throughput against the device's roofline.

pub mod gpu_ops;
pub mod inputs;
pub mod ops;
pub mod progress;
pub mod reduce;
pub mod study;

pub use progress::{NoProgress, Progress};
