//! Marks: CUDA events recorded on the GPU's stream between queued launches, so that the parts
//! of one run (each kernel of a multi-launch program) can be timed without waiting between
//! them. [`Gpu::time_with`] times whole runs; marks time what lies between two of them.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::launch::{KernelArg, LaunchDims, Scalar};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;
use std::time::Duration;

/// One thread spinning on the global timer for the nanoseconds it is given.
const HOLD_PTX: &str = r#".version 7.0
.target sm_70
.address_size 64
.visible .entry mantissa_hold(.param .u64 ns)
{
    .reg .u64 %start, %now, %spent, %limit;
    .reg .pred %wait;
    ld.param.u64 %limit, [ns];
    mov.u64 %start, %globaltimer;
SPIN:
    mov.u64 %now, %globaltimer;
    sub.u64 %spent, %now, %start;
    setp.lt.u64 %wait, %spent, %limit;
    @%wait bra SPIN;
    ret;
}
"#;

/// A point in the GPU's stream: every operation queued before it has finished when it has.
#[derive(Debug)]
pub struct Mark(CudaEvent);

impl Gpu {
    /// Records a mark after the work queued so far. It costs an event creation (a few
    /// microseconds of host time), so callers mark profiling runs, not the timed ones.
    pub fn mark(&self) -> Result<Mark, GpuError> {
        let event = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| GpuError::driver("creating a mark", e))?;
        event
            .record(&self.stream)
            .map_err(|e| self.async_error(e, "recording a mark"))?;
        Ok(Mark(event))
    }

    /// Queues a kernel that keeps the GPU busy for `duration`, so that the work the host queues
    /// meanwhile runs back to back afterwards. Marks around launches otherwise also count the
    /// time the GPU waits for the host to queue the next launch (several microseconds each,
    /// as long as a small kernel itself).
    pub fn hold(&self, duration: Duration) -> Result<(), GpuError> {
        let module = self.load_ptx("mantissa_hold", HOLD_PTX)?;
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.launch(
            &module,
            "mantissa_hold",
            LaunchDims::new((1, 1, 1), (1, 1, 1)),
            &[KernelArg::Scalar(Scalar::U64(ns))],
        )
    }

    /// Milliseconds of GPU time from `from` to `to`. Both must have completed: call
    /// [`Gpu::synchronize`] once after the last mark, then read as many as needed.
    pub fn elapsed_ms(&self, from: &Mark, to: &Mark) -> Result<f64, GpuError> {
        from.0
            .elapsed_ms(&to.0)
            .map(f64::from)
            .map_err(|e| self.async_error(e, "reading a mark"))
    }
}
