#![deny(missing_docs)]
//! mantissa's experiments. Each module is one experiment: it takes a plain configuration, runs
//! on the CPU and the GPU, reports progress through [`Progress`], and returns or appends plain
//! records for the report layer. Nothing here prints to the terminal.
//!
//! - [`ops`]: the accuracy of single arithmetic operations in every precision (seed 001 Table 1).
//! - [`gpu_ops`]: the same on the GPU with the CUDA twin, plus element-wise time, speed-up over
//!   f64 (seed 001 Table 2) and compute-bound throughput against the device's roofline.
//! - [`gpu_reduce`]: sums, dot products and π quadratures reduced on the GPU entirely in the
//!   precision under test (with CPU models of their exact order), and an exact f64 sum.
//!
//! `mantissa study`, the precision experiments as one plan of measurement points:
//! - the framework: [`study`] (configuration, points, plan, CPU timing), [`workload`] (the
//!   [`workload::Workload`] trait every workload implements), [`measurement`] (a point's result
//!   and its record) and [`runner`] (one point loop for the CPU and the GPU);
//! - the workloads, one module each (a module may hold two that share a runner):
//!   [`reductions`] (sums, dot products, π; CPU algorithms in [`reduce`], data in [`inputs`]),
//!   [`intensity`] (arithmetic intensity), [`linalg`] (Gaussian elimination and LU) and
//!   [`chains`] (multiplication chains and do/undo), after seed 000 ch. 5–8;
//! - [`registry`]: the list of workloads, which only the runner and the CLI import.
//!
//! Adding a workload is one module implementing [`workload::Workload`] and one line in
//! [`registry::WORKLOADS`].

pub mod chains;
pub mod cost;
pub mod gpu_ops;
pub mod gpu_reduce;
pub mod guard;
pub mod inputs;
pub mod intensity;
pub mod linalg;
pub mod measurement;
pub mod ops;
pub mod progress;
pub mod reduce;
pub mod reductions;
pub mod registry;
pub mod runner;
pub mod stop;
pub mod study;
pub mod workload;

pub use progress::{NoProgress, Progress};
