//! Time per kernel ([`TrialRunner::kernel_times`]): seed 002's Table 3 gives each kernel's
//! share of the program's time, which says where demoting can pay at all. A profiling run
//! brackets every launch with marks ([`mantissa_gpu::Mark`]); the marks cost host time
//! between launches, so these runs are separate from the timed repeats of a trial and their
//! total is not the program's time (only the shares and per-kernel medians are reported).

use super::{ModuleRef, TrialError, TrialRunner};
use crate::config::Configuration;
use crate::exec::Steps;
use mantissa_gpu::Gpu;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The longest hold before a profiling run: a program whose steps take the host longer to
/// queue keeps some of the waits in its kernels' times.
const MAX_HOLD: Duration = Duration::from_secs(1);

/// One kernel's GPU time in a run of the program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelTime {
    /// The entry's name as the PTX spells it.
    pub kernel: String,
    /// Launches of it per run of the steps.
    pub launches: u64,
    /// Median over the profiling runs of its launches' summed GPU time, ms.
    pub median_ms: f64,
    /// Its share of the kernels' summed median times, 0–1.
    pub share: f64,
}

impl TrialRunner<'_> {
    /// Each kernel's time in `configuration`'s static build: one warm-up and `runs` profiling
    /// runs of the steps (each restored first, like a trial's repeats), every launch between two
    /// marks. The setup steps are not counted. Kernels in order of first launch.
    pub fn kernel_times(
        &mut self,
        configuration: &Configuration,
        runs: u32,
    ) -> Result<Vec<KernelTime>, TrialError> {
        let prepared = self.prepared_ptx(configuration)?;
        let m = match &prepared.ptx {
            None => ModuleRef::Baseline,
            Some(ptx) => self.load(ptx)?,
        };
        let stored = prepared.f32_buffers;
        self.restore_and_check(m, &[], &stored)?;
        let mut order: Vec<String> = Vec::new();
        let mut per_run: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut launches: BTreeMap<String, u64> = BTreeMap::new();
        let runs = runs.max(1);
        let mut hold = Duration::ZERO;
        for r in 0..=runs {
            self.restore_repeat(m, &[], &stored)?;
            let TrialRunner {
                gpu,
                spec,
                plan,
                fills,
                work,
                baseline_module,
                loaded,
                switched,
                ..
            } = &mut *self;
            let gpu: &Gpu = gpu;
            let loaded = super::pick(m, baseline_module, loaded, switched)?;
            let mut steps = Steps::new(gpu, spec, plan, fills);
            steps.launch_marks = Some(Vec::new());
            if r > 0 {
                gpu.hold(hold).map_err(super::device_error(
                    "holding the GPU before a profiling run",
                ))?;
            }
            let queued = Instant::now();
            steps.run(&spec.steps, work, &loaded.module, false)?;
            if r == 0 {
                hold = (2 * queued.elapsed() + Duration::from_millis(1)).min(MAX_HOLD);
            }
            gpu.synchronize()
                .map_err(super::device_error("waiting for a profiling run"))?;
            let marks = steps.launch_marks.take().unwrap_or_default();
            if r == 0 {
                // The warm-up: names the kernels and counts their launches.
                for (kernel, _, _) in &marks {
                    if !launches.contains_key(kernel) {
                        order.push(kernel.clone());
                    }
                    *launches.entry(kernel.clone()).or_default() += 1;
                }
                continue;
            }
            let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
            for (kernel, before, after) in &marks {
                let ms = gpu
                    .elapsed_ms(before, after)
                    .map_err(super::device_error("reading a profiling mark"))?;
                *sums.entry(kernel.as_str()).or_default() += ms;
            }
            for (kernel, ms) in sums {
                per_run.entry(kernel.to_string()).or_default().push(ms);
            }
        }
        let medians: Vec<(String, f64)> = order
            .into_iter()
            .map(|k| {
                let mut v = per_run.remove(&k).unwrap_or_default();
                v.sort_by(f64::total_cmp);
                let median = if v.is_empty() { 0.0 } else { v[v.len() / 2] };
                (k, median)
            })
            .collect();
        let total: f64 = medians.iter().map(|(_, ms)| ms).sum();
        Ok(medians
            .into_iter()
            .map(|(kernel, median_ms)| KernelTime {
                launches: launches.get(&kernel).copied().unwrap_or(0),
                share: if total > 0.0 { median_ms / total } else { 0.0 },
                kernel,
                median_ms,
            })
            .collect())
    }
}
