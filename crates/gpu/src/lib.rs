//! The CUDA runtime of mantissa, over cudarc (being built up: versions and flag sets first).

pub mod flags;
pub mod version;

pub use flags::{FlagSet, UnknownFlagSet};
pub use version::{Arch, CudaVersion, PtxIsa};
