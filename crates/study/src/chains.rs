//! (being written: see the part-2 study issue)

use mantissa_gpu::{Gpu, GpuError, TimingOptions};
use rayon::ThreadPool;

use crate::measurement::Measurement;
use crate::study::{CpuTiming, Point, StudyConfig, Workload};

/// The CPU points of workload `w` in `cfg`.
pub fn cpu_points(_cfg: &StudyConfig, _w: Workload) -> Vec<Point> {
    Vec::new()
}

/// The GPU points of workload `w` in `cfg` on a device whose full launch is `full`.
pub fn gpu_points(_cfg: &StudyConfig, _w: Workload, _full: (u32, u32)) -> Vec<Point> {
    Vec::new()
}

/// Measures one CPU point (`pool` is set when the point's backend has more than one thread).
pub fn measure_cpu(_point: &Point, _pool: Option<&ThreadPool>, _timing: CpuTiming) -> Measurement {
    unreachable!("no points yet")
}

/// Device bytes a GPU point of this module allocates (checked against device memory first).
pub fn device_bytes(_point: &Point) -> u64 {
    0
}

/// Runs this module's GPU points, keeping compiled kernels between points.
pub struct GpuRunner<'g> {
    _gpu: &'g Gpu,
}

impl<'g> GpuRunner<'g> {
    pub fn new(gpu: &'g Gpu) -> Self {
        GpuRunner { _gpu: gpu }
    }

    /// Measures one GPU point.
    pub fn measure(
        &mut self,
        _point: &Point,
        _timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        unreachable!("no points yet")
    }
}
