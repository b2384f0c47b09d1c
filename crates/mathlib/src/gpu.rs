//! STUB (replaced by the GPU work): the contract's signatures only.
use crate::format::Format;
use crate::functions::{Function, Variant};
use mantissa_gpu::GpuError;
use std::ops::Range;

/// Bins.
pub const BINS: usize = 4096;
/// GPU.
pub struct MathGpu {
    gpu: mantissa_gpu::Gpu,
}
/// Bin.
#[derive(Clone, Debug, Default)]
pub struct Bin {
    /// x
    pub max_ulps: f64,
    /// x
    pub argmax: u32,
    /// x
    pub sum_ulps: f64,
    /// x
    pub count: u64,
    /// x
    pub not_correctly_rounded: u64,
}
/// Sweep.
#[allow(missing_docs)]
pub struct Sweep {
    pub inputs: u64,
    pub max_ulps: f64,
    pub argmax: u32,
    pub sum_ulps: f64,
    pub finite: u64,
    pub not_correctly_rounded: u64,
    pub infinite: u64,
    pub hard: Vec<u32>,
    pub hard_total: u64,
    pub bins: Vec<Bin>,
    pub device_ms: f64,
}
impl MathGpu {
    /// New.
    pub fn new(gpu: mantissa_gpu::Gpu) -> Self {
        MathGpu { gpu }
    }
    /// Gpu.
    pub fn gpu(&self) -> &mantissa_gpu::Gpu {
        &self.gpu
    }
    /// Eval.
    pub fn eval(&self, f: Function, format: Format, variant: Variant, xs: &[f64], ys: &[f64]) -> Result<Vec<f64>, GpuError> {
        let _ = (f, format, variant, ys);
        Ok(xs.to_vec())
    }
    /// Sweep.
    pub fn sweep_f32(&self, f: Function, variant: Variant, range: Range<u64>, progress: &mut dyn FnMut(u64, u64)) -> Result<Sweep, GpuError> {
        let _ = (f, variant, range, progress);
        unimplemented!()
    }
}
