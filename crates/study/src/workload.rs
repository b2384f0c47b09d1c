//! The shape of a workload of `mantissa study`: [`Workload`] says what it is called, how large
//! it may be, which points it measures on each backend, and makes the runners that measure them
//! ([`CpuMeasure`], [`GpuMeasure`]). The framework ([`crate::study`], [`crate::runner`]) knows
//! workloads only through this trait; [`crate::registry`] lists them.
//!
//! This module imports no workload: each workload module imports it.

use std::collections::BTreeMap;
use std::fmt;

use mantissa_gpu::{Gpu, GpuError, TimingOptions};
use rayon::ThreadPool;

use crate::cost::Cost;
use crate::measurement::Measurement;
use crate::study::{CpuTiming, Point, StudyConfig, Suite};

/// One workload of `mantissa study` (one command-line name).
///
/// Planning and measuring both go through it: the plan asks [`Workload::cpu_points`] and
/// [`Workload::gpu_points`], and the runner asks the workload that produced a point (by
/// [`Workload::record_names`]) for the runner that measures it. Hot loops stay inside the
/// runners, generic over the precision: the trait is called once per point, never per value.
pub trait Workload: Sync {
    /// The name on the command line (`sum`, `lu`, `doundo`, ...).
    fn name(&self) -> &'static str;
    /// What it measures, in one line (for `--help` and the report).
    fn description(&self) -> &'static str;
    /// Further command-line spellings that select it (`do-undo`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// The `workload` names its points and records carry: usually just [`Workload::name`]; π's
    /// points are `pi-leibniz` and `pi-midpoint`.
    fn record_names(&self) -> &'static [&'static str];
    /// The largest `--size` it accepts and what its size counts: beyond it a point would need
    /// more memory than a workstation has or run for days, so the run is refused before
    /// anything starts.
    fn size_limit(&self) -> (u64, &'static str);
    /// Its CPU points in `cfg`.
    fn cpu_points(&self, cfg: &StudyConfig) -> Vec<Point>;
    /// Its GPU points in `cfg`, on a device whose full-occupancy launch is `full` (grid, block).
    fn gpu_points(&self, cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point>;
    /// The name of the runner its points share with the other workloads of its module (`ge` and
    /// `lu` share compiled modules and generated systems): workloads of one group get one
    /// runner per backend, made by whichever of them has the first point.
    fn runner_group(&self) -> &'static str {
        self.name()
    }
    /// A runner for its CPU points (and those of its group).
    fn cpu_runner(&self) -> Box<dyn CpuMeasure>;
    /// A runner for its GPU points (and those of its group) on `gpu`; it compiles on first use.
    fn gpu_runner<'g>(&self, gpu: &'g Gpu) -> Box<dyn GpuMeasure + 'g>;
    /// The device memory a GPU point allocates, checked against the device before a run starts.
    fn device_bytes(&self, point: &Point) -> u64;
    /// What `point` costs the host (CPU points: everything; GPU points: the host's share, the
    /// inputs and the references they are scored against), from the workload's own operation
    /// counts: the guard refuses a run whose point cannot fit in memory and warns before hours
    /// of work ([`crate::guard`]).
    /// `suite` sizes what the point does beyond its key (intensity's CPU element count).
    fn host_cost(&self, point: &Point, suite: Suite) -> Cost;
    /// The quantities its records carry in `extra`, each with what it means (thresholds such as
    /// LU's mismatch tolerance are part of the description). A name ending in `.` describes a
    /// family: every quantity whose name starts with it (`ptx.` for `ptx.add.f64`, ...).
    fn quantities(&self) -> &'static [(&'static str, &'static str)];
}

/// Measures CPU points. Infallible: a CPU point always gives a measurement.
pub trait CpuMeasure {
    /// Measures `point` (`pool` is set when its backend has more than one thread).
    fn measure(
        &mut self,
        point: &Point,
        pool: Option<&ThreadPool>,
        timing: CpuTiming,
    ) -> Measurement;
}

/// A stateless CPU measurement is a function of the point.
impl<F> CpuMeasure for F
where
    F: FnMut(&Point, Option<&ThreadPool>, CpuTiming) -> Measurement,
{
    fn measure(
        &mut self,
        point: &Point,
        pool: Option<&ThreadPool>,
        timing: CpuTiming,
    ) -> Measurement {
        self(point, pool, timing)
    }
}

/// Measures GPU points, keeping what it compiled between them.
pub trait GpuMeasure {
    /// Measures `point`; an error becomes the point's `failed` record (and ends the GPU part of
    /// the run when the device is lost).
    fn measure(&mut self, point: &Point, timing: TimingOptions) -> Result<Measurement, GpuError>;
}

/// The descriptions of the quantities of `extra` that `w` describes, by name: what a record
/// carries beside its numbers so that a reader (and the report) knows what each one is.
pub fn descriptions(w: &dyn Workload, extra: &BTreeMap<String, f64>) -> BTreeMap<String, String> {
    extra
        .keys()
        .filter_map(|key| {
            w.quantities()
                .iter()
                .find(|(name, _)| key == name || (name.ends_with('.') && key.starts_with(name)))
                .map(|(_, what)| (key.clone(), what.to_string()))
        })
        .collect()
}

impl fmt::Debug for dyn Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for dyn Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Workloads are equal when they have the same name (the registry holds one of each).
impl PartialEq for dyn Workload {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}
