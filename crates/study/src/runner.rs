//! Runs a [`Plan`]'s points into a [`ResultsLog`], on the CPU ([`run_cpu`]) or on one or more
//! GPUs ([`run_gpu`], [`run_gpus`]: the points go through `mantissa_gpu::run_pool`, one worker
//! per device, and are recorded in plan order): points already in the log are skipped, a stop
//! request (Ctrl-C) ends the run (CPU points check it inside their loops and the interrupted
//! point is dropped, never recorded; a GPU point finishes first), progress advances per point, a
//! point that fails becomes a `failed` record with the reason, and a sticky device error ends the
//! GPU part. Each point is measured by its workload's runner ([`crate::registry::of_point`]), one
//! runner per runner group (and per device), made when the group's first point runs (so a run
//! without a workload compiles nothing of it).
//!
//! A point's work unit is its place in the run's plan, the CPU plan's points first, then the GPU
//! plan's (`Plan::first_unit`): a sharded run (`--shard I/N`) measures only the units k ≡ I (mod N)
//! and its records carry their `shard` and `unit`. A point's key names the device model, not the
//! ordinal, so a resumed run may use other GPUs of that model. Each measured point becomes one
//! record through `Measurement::record`, which adds the workload's descriptions of its quantities
//! and the flag set the point was compiled with, and is appended by `ResultsLog::append_unit` and
//! synced before the next point starts. A launch out of resources is recorded as such, not
//! measured.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

use mantissa_gpu::{run_pool, Gpu, PoolError, TimingOptions};
use mantissa_report::{Backend, ResultsLog};
use rayon::ThreadPool;

use crate::gpu_reduce::Shape;
use crate::measurement::Measurement;
use crate::registry;
use crate::stop::Stop;
use crate::study::{cpu_name, CpuTiming, Plan, Point, RunSummary, StudyError, Suite};
use crate::workload::{descriptions, CpuMeasure, GpuMeasure, Workload};
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

/// The launch that fills a device of `sm_count` multiprocessors: [`full_device`] without the
/// device, for plans made where it is not (`mantissa slurm`'s estimates).
pub fn full_device_of(sm_count: u32) -> (u32, u32) {
    let s = Shape::for_sms(sm_count);
    (s.grid, s.block)
}

/// The workload that made `point`.
fn workload_of(point: &Point) -> Result<&'static dyn Workload, StudyError> {
    registry::of_point(point).ok_or_else(|| {
        StudyError::Usage(format!(
            "no workload makes {} points: the plan is not one of this version's",
            point.workload
        ))
    })
}

/// Device bytes a GPU point needs (its workload's count).
fn device_bytes(point: &Point) -> u64 {
    workload_of(point).map_or(0, |w| w.device_bytes(point))
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

/// Runs the CPU points of `plan` into `log`, skipping those already recorded.
pub fn run_cpu(
    plan: &Plan,
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    let timing = CpuTiming::for_suite(suite).stopping_on(Stop::on(stop));
    let mut pools: HashMap<u32, ThreadPool> = HashMap::new();
    let mut runners: HashMap<&'static str, Box<dyn CpuMeasure>> = HashMap::new();
    let backend = Loop { device: cpu_name() };
    backend.run(plan, log, progress, stop, |workload, point| {
        let Backend::Cpu { threads } = point.backend else {
            unreachable!("the loop gives CPU points only")
        };
        let pool = if threads > 1 {
            Some(pool_of(&mut pools, threads)?)
        } else {
            None
        };
        let runner = runners
            .entry(workload.runner_group())
            .or_insert_with(|| workload.cpu_runner());
        Ok(runner.measure(point, pool, timing))
    })
}

/// The pool of `threads` threads, started on first use.
fn pool_of(pools: &mut HashMap<u32, ThreadPool>, threads: u32) -> Result<&ThreadPool, StudyError> {
    use std::collections::hash_map::Entry;
    Ok(match pools.entry(threads) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(v) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads as usize)
                .build()
                .map_err(|e| {
                    StudyError::Usage(format!("cannot start {threads} CPU threads: {e}"))
                })?;
            v.insert(pool)
        }
    })
}

/// Runs the GPU points of `plan` into `log` on one device, skipping those already recorded:
/// [`run_gpus`] with one device.
pub fn run_gpu(
    plan: &Plan,
    gpu: &Gpu,
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    run_gpus(plan, std::slice::from_ref(gpu), suite, log, progress, stop)
}

/// Runs the GPU points of `plan` into `log` on `devices`, skipping those already recorded. Each
/// device has a worker thread with its own runners (its own compiled modules) and measures one
/// point at a time, so a timed point never shares its device; a free device takes the next
/// point, and records are appended in plan order whichever device measured them
/// ([`mantissa_gpu::run_pool`]). A point that fails on a device becomes a `failed` record with
/// the reason, and the run goes on, unless a device is lost (a sticky error), which ends the GPU
/// part. The devices must be distinct and of one model: the plan's launches and the records'
/// `device` are per model.
pub fn run_gpus(
    plan: &Plan,
    devices: &[Gpu],
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    check_devices(devices)?;
    run_pooled(plan, devices, suite, log, progress, stop)
}

/// [`run_gpus`] without the check that devices are distinct: two handles on one GPU, the only
/// way to exercise the pool's concurrency on a machine with one GPU. Timings are then shared
/// and mean nothing; for tests only.
#[doc(hidden)]
pub fn run_gpus_sharing_devices_for_tests(
    plan: &Plan,
    devices: &[Gpu],
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    run_pooled(plan, devices, suite, log, progress, stop)
}

/// Refuses an empty device list, a device given twice, and devices of different models.
pub fn check_devices(devices: &[Gpu]) -> Result<(), StudyError> {
    let Some(first) = devices.first() else {
        return Err(StudyError::Usage("no GPU to run the GPU points on".into()));
    };
    for (i, d) in devices.iter().enumerate() {
        if devices[..i].iter().any(|e| e.ordinal() == d.ordinal()) {
            return Err(StudyError::Usage(format!(
                "GPU {} is given twice: each GPU runs one point at a time, so timings stay its own",
                d.ordinal()
            )));
        }
        let (a, b) = (first.info(), d.info());
        if a.name != b.name || a.sm_count != b.sm_count {
            return Err(StudyError::Usage(format!(
                "GPU {} ({}, {} SMs) and GPU {} ({}, {} SMs) differ: a study's launches and records are per GPU model; choose GPUs of one model with --devices",
                a.ordinal, a.name, a.sm_count, b.ordinal, b.name, b.sm_count
            )));
        }
    }
    Ok(())
}

/// One device's worker: its runners, made on its thread when its first point of a group runs.
struct DeviceWorker<'g> {
    gpu: &'g Gpu,
    runners: HashMap<&'static str, Box<dyn GpuMeasure + 'g>>,
}

/// The pooled GPU point loop of [`run_gpus`].
fn run_pooled(
    plan: &Plan,
    devices: &[Gpu],
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    let Some(first) = devices.first() else {
        return Err(StudyError::Usage("no GPU to run the GPU points on".into()));
    };
    for gpu in devices {
        check_fits(plan, gpu)?;
    }
    let timing = timing_for(suite);
    let device = first.info().name.clone();
    // A record names its GPU's ordinal only where that is news: several GPUs, or not GPU 0.
    let name_ordinals = devices.len() > 1 || first.ordinal() != 0;
    let mut summary = RunSummary::default();
    let owned: Vec<(u64, &Point)> = plan
        .units()
        .filter(|(unit, p)| p.backend.is_gpu() && log.owns(*unit))
        .collect();
    let total = owned.len();
    progress.start("gpu", total as u64);
    let todo: Vec<(u64, &Point)> = owned
        .into_iter()
        .filter(|(_, p)| !log.contains(&p.key(&device)))
        .collect();
    summary.skipped_done = total - todo.len();
    progress.advance(summary.skipped_done as u64);
    let pooled = run_pool(
        devices,
        &todo,
        stop,
        |_, gpu| DeviceWorker {
            gpu,
            runners: HashMap::new(),
        },
        |worker, _, &(_, point)| {
            let workload = workload_of(point)?;
            let runner = worker
                .runners
                .entry(workload.runner_group())
                .or_insert_with(|| workload.gpu_runner(worker.gpu));
            Ok((runner.measure(point, timing), worker.gpu.ordinal()))
        },
        |_, &(unit, point), measured: Result<_, StudyError>| {
            let (measured, ordinal) = measured?;
            let workload = workload_of(point)?;
            let record = |m: &Measurement, described| {
                let mut r = m.record(point, &device, described);
                r.device_ordinal = name_ordinals.then_some(ordinal as u32);
                r
            };
            let outcome = match measured {
                Ok(m) => {
                    let described = descriptions(workload, &m.extra);
                    log.append_unit([record(&m, described)], unit)?;
                    summary.measured += 1;
                    Ok(())
                }
                Err(e) => {
                    let sticky = e.driver_status().is_some_and(|s| s.is_sticky());
                    let failed = Measurement::failed(e.to_string());
                    log.append_unit([record(&failed, BTreeMap::new())], unit)?;
                    summary.failed += 1;
                    if sticky {
                        Err(StudyError::Gpu(format!(
                            "the GPU failed and cannot continue: {e}"
                        )))
                    } else {
                        Ok(())
                    }
                }
            };
            progress.advance(1);
            outcome
        },
    );
    progress.finish();
    match pooled {
        Ok(pool) => {
            summary.interrupted = pool.stopped;
            summary.pool = Some(pool);
            Ok(summary)
        }
        Err(PoolError::Emit(e)) => Err(e),
        Err(e) => Err(StudyError::Gpu(e.to_string())),
    }
}

/// The point loop of the CPU.
struct Loop {
    /// The device as records name it.
    device: String,
}

impl Loop {
    /// Runs the CPU points of `plan` through `measure`, which gives a point's measurement, or an
    /// error that ends the run.
    fn run(
        &self,
        plan: &Plan,
        log: &mut ResultsLog,
        progress: &dyn Progress,
        stop: &AtomicBool,
        mut measure: impl FnMut(&'static dyn Workload, &Point) -> Result<Measurement, StudyError>,
    ) -> Result<RunSummary, StudyError> {
        let device = &self.device;
        let mut summary = RunSummary::default();
        // A shard's points are the units it owns; the others are another shard's to run.
        let todo: Vec<(u64, &Point)> = plan
            .units()
            .filter(|(unit, p)| !p.backend.is_gpu() && log.owns(*unit))
            .collect();
        progress.start("cpu", todo.len() as u64);
        for (unit, point) in todo {
            if stop.load(Ordering::Relaxed) {
                summary.interrupted = true;
                break;
            }
            if log.contains(&point.key(device)) {
                summary.skipped_done += 1;
                progress.advance(1);
                continue;
            }
            let workload = workload_of(point)?;
            let m = measure(workload, point)?;
            if stop.load(Ordering::Relaxed) {
                // The point's loops returned early: its numbers mean nothing.
                summary.interrupted = true;
                break;
            }
            let described = descriptions(workload, &m.extra);
            log.append_unit([m.record(point, device, described)], unit)?;
            summary.measured += 1;
            progress.advance(1);
        }
        progress.finish();
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::InputClass;
    use crate::reductions::QUICK_MP_MAX;
    use crate::registry::{find, WORKLOADS};
    use crate::study::{Data, StudyConfig, StudyPrecision};
    use mantissa_num::precision::Precision;

    fn config(workloads: &[&str]) -> StudyConfig {
        StudyConfig::for_tests(
            workloads.iter().map(|w| find(w).unwrap()).collect(),
            Suite::Quick,
        )
    }

    #[test]
    fn sizes_beyond_a_workload_limit_are_refused_in_one_line() {
        let mut cfg = config(&["sum", "lu"]);
        cfg.sizes = Some(vec![1 << 10, 1 << 20]);
        let e = cfg.check_sizes().unwrap_err().to_string();
        assert!(
            e.contains("1048576") && e.contains("lu") && e.contains("16384"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        cfg.workloads = vec![find("sum").unwrap()];
        cfg.check_sizes().unwrap();
        cfg.sizes = None;
        cfg.workloads = WORKLOADS.to_vec();
        cfg.check_sizes().unwrap();
    }

    #[test]
    fn quick_plan_keeps_mp_small_and_exact_where_it_exists() {
        let mut cfg = config(&[]);
        cfg.workloads = WORKLOADS.to_vec();
        let plan = Plan::cpu(&cfg);
        assert!(plan
            .points
            .iter()
            .filter(|p| p.precision.is_mp())
            .all(|p| p.size <= QUICK_MP_MAX));
        assert!(plan
            .points
            .iter()
            .filter(|p| p.precision == StudyPrecision::Exact)
            .all(|p| (p.workload == "sum" || p.workload == "dot") && p.algorithm != "pairwise"));
        let keys: std::collections::HashSet<_> = plan.points.iter().map(|p| p.key("d")).collect();
        assert_eq!(keys.len(), plan.points.len(), "every point has its own key");
        // Every point belongs to the workload that planned it.
        for p in &plan.points {
            let w = registry::of_point(p).unwrap();
            assert!(cfg.workloads.contains(&w), "{}", p.workload);
        }
    }

    #[test]
    fn a_small_run_records_every_point_and_resumes_without_repeating() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&["sum", "dot"]);
        cfg.classes = Some(vec![InputClass::range(5)]);
        cfg.sizes = Some(vec![256]);
        cfg.precisions = StudyPrecision::parse_list("f32,f64,f64x2,mp128,exact").unwrap();
        let plan = Plan::cpu(&cfg);
        let stop = AtomicBool::new(false);
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let s = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
        assert_eq!(s.measured, plan.points.len());
        drop(log);
        let (records, _) =
            mantissa_report::read_records(&dir.path().join("results.jsonl")).unwrap();
        assert_eq!(records.len(), plan.points.len());
        for r in &records {
            let err = r.error.as_ref().unwrap();
            match (r.workload.as_str(), r.precision.as_str()) {
                // Exact sums and dots are correctly rounded: within half an f64 ulp (and 0 for
                // the zero-sum arrays).
                ("sum", "exact") => assert_eq!(err.abs, 0.0, "{r:?}"),
                (_, "exact") => assert!(err.ulps.unwrap() <= 0.5, "{r:?}"),
                ("sum", "f32") => assert!(err.abs > 0.0, "f32 range5 sums are not exact: {r:?}"),
                _ => assert!(err.abs.is_finite()),
            }
        }
        let mut log = ResultsLog::open(dir.path(), true).unwrap();
        let again = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
        assert_eq!((again.measured, again.skipped_done), (0, plan.points.len()));
    }

    #[test]
    fn shards_run_their_own_units_and_together_the_whole_plan() {
        let mut cfg = config(&["sum", "dot"]);
        cfg.classes = Some(vec![InputClass::range(1)]);
        cfg.sizes = Some(vec![256]);
        cfg.precisions = StudyPrecision::parse_list("f32,f64").unwrap();
        let plan = Plan::cpu(&cfg);
        assert!(plan.points.len() > 3, "{} points", plan.points.len());
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let mut units = Vec::new();
        for i in 0..3 {
            let shard = mantissa_report::Shard::new(i, 3).unwrap();
            let options = mantissa_report::StoreOptions {
                shard: Some(shard),
                ..Default::default()
            };
            let mut log = ResultsLog::open_with(dir.path(), options).unwrap();
            let s = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
            let path = log.path().to_path_buf();
            drop(log);
            let (records, _) = mantissa_report::read_records(&path).unwrap();
            assert_eq!(s.measured, records.len());
            for r in records {
                let unit = r.unit.expect("a shard's records carry their unit");
                assert_eq!(r.shard, Some(shard));
                assert_eq!(unit % 3, u64::from(i), "{shard} ran unit {unit}");
                assert_eq!(r.key(), plan.points[unit as usize].key(&r.device));
                units.push(unit);
            }
        }
        units.sort_unstable();
        let all: Vec<u64> = (0..plan.points.len() as u64).collect();
        assert_eq!(units, all, "every unit ran once");
    }

    #[test]
    fn a_stop_request_ends_the_run_between_points() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&["pi"]);
        cfg.precisions = vec![StudyPrecision::Real(Precision::F64)];
        let plan = Plan::cpu(&cfg);
        let stop = AtomicBool::new(true);
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let s = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
        assert!(s.interrupted);
        assert_eq!(s.measured, 0);
    }

    #[test]
    fn a_stop_inside_a_long_point_drops_it_and_keeps_the_points_before() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&["sum"]);
        cfg.classes = Some(vec![InputClass::range(5)]);
        cfg.sizes = Some(vec![1024]);
        cfg.precisions = vec![StudyPrecision::Real(Precision::F64)];
        let quick = Plan::cpu(&cfg).points[0].clone();
        // An mp256 LU of order 512: 2/3 · 512³ operations at about 0.4 µs, a minute or more.
        let long = Point {
            workload: "lu",
            algorithm: "blocked",
            data: Data::Intervals(InputClass::range(1)),
            size: 512,
            seed: 1,
            precision: StudyPrecision::Real(Precision::Mp(256)),
            backend: Backend::Cpu { threads: 1 },
            flags: None,
        };
        let plan = Plan {
            points: vec![quick, long],
            first_unit: 0,
        };
        let stop = AtomicBool::new(false);
        let path = dir.path().join("results.jsonl");
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let (summary, stopped_after) = std::thread::scope(|s| {
            let run = s.spawn(|| run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop));
            // Once the first point is on disk the long one is running: stop it.
            while std::fs::read_to_string(&path).map_or(0, |t| t.lines().count()) < 1 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
            let asked = std::time::Instant::now();
            let summary = run.join().unwrap().unwrap();
            (summary, asked.elapsed())
        });
        assert!(summary.interrupted);
        assert_eq!(summary.measured, 1);
        let (records, notes) = mantissa_report::read_records(&path).unwrap();
        assert_eq!(records.len(), 1, "the interrupted point is not recorded");
        assert_eq!(records[0].workload, "sum");
        assert!(notes.skipped.is_empty() && !notes.truncated_tail);
        // Not a timing assertion: the point would take a minute or more; it stopped at a check.
        assert!(stopped_after.as_secs() < 20, "{stopped_after:?}");
    }

    #[test]
    fn a_point_of_no_workload_ends_the_run_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan {
            points: vec![Point {
                workload: "fft",
                algorithm: "serial",
                data: Data::Nothing,
                size: 8,
                seed: 0,
                precision: StudyPrecision::Real(Precision::F64),
                backend: Backend::Cpu { threads: 1 },
                flags: None,
            }],
            first_unit: 0,
        };
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let stop = AtomicBool::new(false);
        let e = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap_err();
        assert!(e.to_string().contains("fft"), "{e}");
    }
}
