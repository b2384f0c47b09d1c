//! The GPU backend of `mantissa study`: runs the GPU points of a [`Plan`] with
//! [`GpuReducer`] (every reduction in the precision under test on the device) into the same
//! [`ResultsLog`] as the CPU points.

use std::sync::atomic::{AtomicBool, Ordering};

use mantissa_gpu::{Gpu, GpuError, Timing, TimingOptions};
use mantissa_num::metrics::Reference;
use mantissa_num::precision::Precision;
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};
use mantissa_report::{Backend, Record, ResultsLog, Status};

use crate::device_words::{DeviceWords, Word};
use crate::gpu_reduce::{GpuReducer, Shape};
use crate::measurement::{time_stats, Measurement};
use crate::study::{
    record, DataKey, Inputs, Outcome, Plan, Point, RunSummary, StudyError, StudyPrecision, Suite,
};
use crate::Progress;

/// Repetitions of GPU timings per suite.
pub fn timing_for(suite: Suite) -> TimingOptions {
    match suite {
        Suite::Quick => TimingOptions { warmup: 1, reps: 5 },
        Suite::Full => TimingOptions {
            warmup: 3,
            reps: 20,
        },
    }
}

/// The launch that fills `gpu` (the study's "full device" configuration).
pub fn full_device(gpu: &Gpu) -> (u32, u32) {
    let s = Shape::full_device(gpu);
    (s.grid, s.block)
}

/// Device bytes a point needs: its input vectors in the precision's words (f64 data stays f64
/// for the f64-based types), plus headroom for partials.
fn device_bytes(point: &Point) -> u64 {
    match point.workload {
        "intensity" => return crate::intensity::device_bytes(point),
        "ge" | "lu" => return crate::linalg::device_bytes(point),
        "chain" | "doundo" => return crate::chains::device_bytes(point),
        _ => {}
    }
    let per_value: u64 = match point.precision {
        StudyPrecision::Exact => 8,
        StudyPrecision::Real(Precision::F32) => 4,
        StudyPrecision::Real(Precision::F32x2 | Precision::Comp32 | Precision::Comp32n) => 8,
        StudyPrecision::Real(_) => 8,
    };
    let vectors = match point.workload {
        "dot" => 2,
        "sum" => 1,
        _ => 0,
    };
    point.size * per_value * vectors
}

/// Checks, before anything is allocated, that every point's data fits in device memory.
pub fn check_fits(plan: &Plan, gpu: &Gpu) -> Result<(), StudyError> {
    let total = gpu.info().total_memory_bytes;
    // Leave room for the context, the modules and the partial sums.
    let usable = total / 10 * 9;
    if let Some(p) = plan
        .points
        .iter()
        .filter(|p| p.backend.is_gpu())
        .max_by_key(|p| device_bytes(p))
    {
        let need = device_bytes(p);
        if need > usable {
            return Err(StudyError::Usage(format!(
                "size {} does not fit in {} GiB of GPU memory ({} {} needs {:.1} GiB): choose a smaller --size",
                p.size,
                total >> 30,
                p.workload,
                p.precision,
                need as f64 / (1u64 << 30) as f64
            )));
        }
    }
    Ok(())
}

/// Runs the GPU points of `plan` into `log`, skipping those already recorded. A point that fails
/// on the device becomes a `failed` record with the reason, and the run goes on, unless the
/// device itself is lost (a sticky error), which ends the GPU part.
pub fn run_gpu(
    plan: &Plan,
    gpu: &Gpu,
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    check_fits(plan, gpu)?;
    let device = gpu.info().name.clone();
    let timing = timing_for(suite);
    let mut reducer = GpuReducer::new(gpu);
    let mut kernel_style = KernelStyleRunners::new(gpu);
    let mut summary = RunSummary::default();
    let mut cached: Option<(DataKey, Inputs)> = None;
    let todo: Vec<&Point> = plan.points.iter().filter(|p| p.backend.is_gpu()).collect();
    progress.start("gpu", todo.len() as u64);
    for point in todo {
        if stop.load(Ordering::Relaxed) {
            summary.interrupted = true;
            break;
        }
        if log.contains(&point.key(&device)) {
            summary.skipped_done += 1;
            progress.advance(1);
            continue;
        }
        // Kernel-style workloads measure themselves; the reductions run here.
        let result = match kernel_style.measure(point, timing) {
            Some(result) => result.map(|m| m.record(point, &device)),
            None => {
                let id: DataKey = (point.data.name(), point.size, point.seed, point.workload);
                if cached.as_ref().map(|(k, _)| k) != Some(&id) {
                    cached = Some((id.clone(), Inputs::of(point)));
                }
                let inputs = &cached.as_ref().expect("just filled").1;
                let Backend::Gpu {
                    grid: [grid, 1, 1],
                    block: [block, 1, 1],
                } = point.backend
                else {
                    unreachable!("reductions run on grid × block launches")
                };
                run_point(&mut reducer, point, inputs, Shape::new(grid, block), timing)
                    .map(|outcome| record(point, &device, inputs, &outcome, None))
            }
        };
        match result {
            Ok(r) => {
                log.append(&r)?;
                summary.measured += 1;
            }
            Err(e) => {
                let sticky = e.driver_status().is_some_and(|s| s.is_sticky());
                log.append(&failed_record(point, &device, &e))?;
                summary.failed += 1;
                if sticky {
                    progress.finish();
                    return Err(StudyError::Gpu(format!(
                        "the GPU failed and cannot continue: {e}"
                    )));
                }
            }
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(summary)
}

/// The GPU runners of the kernel-style workloads, each created when its first point runs (so a
/// run without them compiles nothing of theirs).
struct KernelStyleRunners<'g> {
    gpu: &'g Gpu,
    intensity: Option<crate::intensity::GpuRunner<'g>>,
    linalg: Option<crate::linalg::GpuRunner<'g>>,
    chains: Option<crate::chains::GpuRunner<'g>>,
}

impl<'g> KernelStyleRunners<'g> {
    fn new(gpu: &'g Gpu) -> Self {
        KernelStyleRunners {
            gpu,
            intensity: None,
            linalg: None,
            chains: None,
        }
    }

    /// Measures `point` if it belongs to a kernel-style workload; `None` otherwise.
    fn measure(
        &mut self,
        point: &Point,
        timing: TimingOptions,
    ) -> Option<Result<Measurement, GpuError>> {
        let gpu = self.gpu;
        Some(match point.workload {
            "intensity" => self
                .intensity
                .get_or_insert_with(|| crate::intensity::GpuRunner::new(gpu))
                .measure(point, timing),
            "ge" | "lu" => self
                .linalg
                .get_or_insert_with(|| crate::linalg::GpuRunner::new(gpu))
                .measure(point, timing),
            "chain" | "doundo" => self
                .chains
                .get_or_insert_with(|| crate::chains::GpuRunner::new(gpu))
                .measure(point, timing),
            _ => return None,
        })
    }
}

fn failed_record(point: &Point, device: &str, e: &GpuError) -> Record {
    Measurement {
        status: Status::Failed,
        value: None,
        reference: None,
        error: None,
        time: None,
        extra: Default::default(),
        note: Some(e.to_string()),
        build: None,
    }
    .record(point, device)
}

fn run_point(
    reducer: &mut GpuReducer<'_>,
    point: &Point,
    inputs: &Inputs,
    shape: Shape,
    timing: TimingOptions,
) -> Result<Outcome, GpuError> {
    let p = match point.precision {
        StudyPrecision::Exact => {
            let (v, t) = reducer.exact_sum(&inputs.xs, shape, timing)?;
            return Ok(Outcome {
                value: Reference::from_f64(v),
                value_f64: v,
                time: time_stats(&t),
            });
        }
        StudyPrecision::Real(p) => p,
    };
    let go = GpuPoint {
        reducer,
        point,
        inputs,
        shape,
        timing,
    };
    match p {
        Precision::F32 => go.run::<f32>(),
        Precision::F64 => go.run::<f64>(),
        Precision::F32x2 => go.run::<f32x2>(),
        Precision::F64x2 => go.run::<f64x2>(),
        Precision::Comp32 => go.run::<Comp32>(),
        Precision::Comp64 => go.run::<Comp64>(),
        Precision::Comp32n => go.run::<CompNorm32>(),
        Precision::Comp64n => go.run::<CompNorm64>(),
        Precision::Mp(_) => unreachable!("the GPU plan has no mp points"),
    }
}

struct GpuPoint<'r, 'g, 'a> {
    reducer: &'r mut GpuReducer<'g>,
    point: &'a Point,
    inputs: &'a Inputs,
    shape: Shape,
    timing: TimingOptions,
}

impl GpuPoint<'_, '_, '_> {
    fn run<T: DeviceWords>(self) -> Result<Outcome, GpuError> {
        let (p, shape, timing) = (self.point, self.shape, self.timing);
        let convert = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        // f64-based types take the f64 data as it is (from_f64 is exact for them), which also
        // halves the bytes a pair type reads; f32-based ones get it converted on the host.
        let f64_words = T::Word::DTYPE == mantissa_gpu::DType::F64;
        let (value, t): (T, Timing) = match (p.workload, p.algorithm) {
            ("sum", _) if f64_words => {
                self.reducer
                    .sum_f64_in::<T>(&self.inputs.xs, shape, timing)?
            }
            ("sum", _) => self
                .reducer
                .sum::<T>(&convert(&self.inputs.xs), shape, timing)?,
            ("dot", a) => {
                let fused = a.starts_with("fma");
                let (x, y) = (convert(&self.inputs.xs), convert(&self.inputs.ys));
                self.reducer.dot::<T>(&x, &y, fused, shape, timing)?
            }
            ("pi-midpoint", _) => self.reducer.pi_midpoint::<T>(p.size, shape, timing)?,
            ("pi-leibniz", _) => self.reducer.pi_leibniz::<T>(p.size, timing)?,
            (w, a) => unreachable!("no GPU algorithm {a} for {w}: the planner never makes one"),
        };
        Ok(Outcome {
            value: Reference::of(&value),
            value_f64: value.to_f64(),
            time: time_stats(&t),
        })
    }
}
