//! mantissa's experiments. Each module is one experiment: it takes a plain configuration, runs
//! on the CPU (and, in later modules, the GPU), reports progress through [`Progress`], and
//! returns plain records for the report layer to print. Nothing here prints to the terminal.
//!
//! - [`ops`]: the accuracy of single arithmetic operations in every precision (seed 001 Table 1).

pub mod ops;
pub mod progress;

pub use progress::{NoProgress, Progress};
