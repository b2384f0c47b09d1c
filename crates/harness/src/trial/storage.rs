//! Storage precision on the device: the contents of buffers a configuration keeps in f32
//! ([`crate::config::Demotion::buffers`]) converted between the two layouts.
//!
//! A buffer kept in f32 keeps its allocation of n doubles; its values live as n floats in the
//! first half ([`mantissa_ptx::pass::store_f32`]). The pristine copies and the baseline's outputs
//! stay f64, so after every restore from the pristine copies the buffer is *narrowed* (each
//! double rounded to nearest into the first half, as the rewritten stores round), and before
//! outputs are compared or downloaded it is *widened* back to n doubles (exactly). Both go
//! through a scratch copy of the buffer, so that no element is overwritten before it is read.
//! The two kernels are compiled once per runner, through the same NVRTC path (and cache) as the
//! comparison kernels ([`crate::device_compare`]).

use mantissa_gpu::{
    DType, DeviceBuffer, FlagSet, Gpu, GpuError, KernelArg, LaunchDims, Module, Scalar, Source,
};
use std::collections::HashMap;

/// The conversion kernels: grid-stride loops over n elements.
pub const STORAGE_CU: &str = r#"
extern "C" __global__ void mantissa_narrow_f32(float* dst, const double* src,
                                               unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    dst[i] = (float)src[i];
}
extern "C" __global__ void mantissa_widen_f32(double* dst, const float* src,
                                              unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    dst[i] = (double)src[i];
}
"#;

/// Blocks of the conversion launches (grid-stride beyond).
const MAX_BLOCKS: u64 = 4096;
const THREADS: u32 = 256;

/// The loaded conversion kernels and one scratch buffer per converted buffer.
pub struct Storage {
    module: Module,
    scratch: HashMap<String, DeviceBuffer>,
}

impl Storage {
    /// Builds (NVRTC, cached) and loads the kernels. `strict`: no contraction, IEEE conversions.
    pub fn new(gpu: &Gpu) -> Result<Storage, GpuError> {
        let module = gpu.build(
            &Source::new("mantissa_storage.cu", STORAGE_CU),
            FlagSet::STRICT,
        )?;
        Ok(Storage {
            module,
            scratch: HashMap::new(),
        })
    }

    /// Rounds each double of `buffer` to a float in its first half (after a restore).
    pub fn narrow(&mut self, gpu: &Gpu, buffer: &mut DeviceBuffer) -> Result<(), GpuError> {
        self.convert(gpu, buffer, "mantissa_narrow_f32")
    }

    /// Widens the floats of `buffer`'s first half to the whole buffer's doubles (before a
    /// comparison or a download).
    pub fn widen(&mut self, gpu: &Gpu, buffer: &mut DeviceBuffer) -> Result<(), GpuError> {
        self.convert(gpu, buffer, "mantissa_widen_f32")
    }

    /// Copies `buffer` to its scratch and runs `kernel` from the scratch into `buffer`.
    fn convert(
        &mut self,
        gpu: &Gpu,
        buffer: &mut DeviceBuffer,
        kernel: &str,
    ) -> Result<(), GpuError> {
        if buffer.dtype() != DType::F64 {
            return Err(GpuError::BadBuffer {
                what: format!("keeping '{}' in f32", buffer.name()),
                problem: format!(
                    "a {} buffer; only f64 buffers are kept in f32",
                    buffer.dtype()
                ),
            });
        }
        let n = buffer.len();
        let stale = self.scratch.get(buffer.name()).is_none_or(|s| s.len() != n);
        if stale {
            let s = gpu.alloc_zeros(&format!("{}#f32-scratch", buffer.name()), DType::F64, n)?;
            self.scratch.insert(buffer.name().to_string(), s);
        }
        let Some(scratch) = self.scratch.get_mut(buffer.name()) else {
            return Ok(());
        };
        gpu.copy(buffer, scratch)?;
        if n == 0 {
            return Ok(());
        }
        let blocks = (n as u64).div_ceil(u64::from(THREADS)).min(MAX_BLOCKS) as u32;
        gpu.launch(
            &self.module,
            kernel,
            LaunchDims::new((blocks, 1, 1), (THREADS, 1, 1)),
            &[
                KernelArg::Buffer(buffer),
                KernelArg::Buffer(scratch),
                KernelArg::Scalar(Scalar::U64(n as u64)),
            ],
        )
    }
}
