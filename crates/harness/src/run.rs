//! [`run_spec`]: every (flag set x configuration) of a spec built, checked against its PTX, run,
//! compared with the baseline (default flags, as written) and the user's references, timed, and
//! recorded.
//!
//! Each flag set is one [`TrialRunner`] (built, planned, inputs uploaded and baseline run once)
//! and each configuration one trial of it; the runners share the inputs, references and the
//! baseline's outputs on the device.
//!
//! Spec errors come back as `Err` before anything runs. A build or run that fails later does not:
//! it becomes a [`ConfigRun`] whose outcome is the error (and a failed record), so the
//! configurations that finished are kept, and the caller is told of each record as it is made
//! ([`RunEvent::Record`]) to append it at once.

use crate::compare::{Comparison, OutputResult};
use crate::config::Configuration;
use crate::exec::ExecOptions;
use crate::npy;
use crate::spec::{Spec, SpecError};
use crate::trial::{RunnerOptions, TrialError, TrialOutcome, TrialRunner, TrialTiming};
use mantissa_gpu::{BuildFacts, FlagSet, Gpu, Timing};
use mantissa_report::{Backend, Build, ErrorMetrics, Record, Status, TimeStats, SCHEMA};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// Flag sets; `default` is added first if missing (it is the baseline).
    pub flag_sets: Vec<FlagSet>,
    /// Configurations; `AsWritten` is added first if missing (it is the baseline).
    pub configurations: Vec<Configuration>,
    /// Warm-up and timed repeats.
    pub exec: ExecOptions,
    /// Where to write each run's output buffers as `.npy` (`None`: nowhere).
    pub save_dir: Option<PathBuf>,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            flag_sets: vec![FlagSet::DEFAULT],
            configurations: vec![Configuration::AsWritten],
            exec: ExecOptions::default(),
            save_dir: None,
        }
    }
}

/// What happened, for progress displays and for appending records as they are made.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// A build starts.
    Building {
        /// Its flag set.
        flags: FlagSet,
    },
    /// A (flag set, configuration) run starts.
    Running {
        /// Its flag set.
        flags: FlagSet,
        /// Its configuration.
        configuration: &'a Configuration,
    },
    /// A record is ready (one per output per run).
    Record(&'a Record),
}

/// Errors that stop a spec before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The spec is wrong (one line with its position).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The baseline could not be built, so nothing can be checked or compared.
    #[error("{0}")]
    Build(String),
}

/// One (flag set, configuration) run.
#[derive(Debug, Clone)]
pub struct ConfigRun {
    /// Its flag set.
    pub flags: FlagSet,
    /// Its configuration.
    pub configuration: Configuration,
    /// How its program was built.
    pub build: Option<BuildFacts>,
    /// What the configuration's rewrite did (instructions demoted, conversions, math calls in
    /// f32) and anything it could not do.
    pub notes: Vec<String>,
    /// Its outputs compared, and its time; or why it failed (one line).
    pub outcome: Result<RunOutcome, String>,
}

/// A run that finished.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Per output, in spec order.
    pub outputs: Vec<OutputResult>,
    /// Device time of the whole step sequence.
    pub timing: Option<Timing>,
}

/// Everything a spec run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The spec's name.
    pub name: String,
    /// Which front end built the program, in words (`nvrtc 13.0`, `ptx file`).
    pub front_end: String,
    /// One per (flag set, configuration), baseline first.
    pub runs: Vec<ConfigRun>,
    /// The records made (also given to the callback as they were made).
    pub records: Vec<Record>,
}

/// What a trial gave, as a run of the result: its outcome (saved outputs included) and the
/// first launch's shape.
fn as_run(
    trial: Result<TrialOutcome, TrialError>,
    save_dir: Option<&std::path::Path>,
    flags: FlagSet,
    configuration: &Configuration,
) -> (Result<RunOutcome, String>, Option<mantissa_gpu::LaunchDims>) {
    match trial {
        Ok(t) => {
            if let Some(dir) = save_dir {
                if let Err(e) = save(dir, flags, configuration, &t.downloaded) {
                    return (Err(e), None);
                }
            }
            (
                Ok(RunOutcome {
                    outputs: t.outputs,
                    timing: t.timing,
                }),
                t.first_launch,
            )
        }
        Err(e) => (Err(e.to_string()), None),
    }
}

/// Runs a spec: the baseline first (default flags, as written), then every other (flag set,
/// configuration), each a trial of one [`TrialRunner`] per flag set; see the module docs for
/// what is an error and what is a failed run. After a failure that loses the device, the runs
/// left are recorded as not run, with why.
pub fn run_spec(
    gpu: &Gpu,
    spec: &Spec,
    request: &RunRequest,
    progress: &mut dyn FnMut(RunEvent),
) -> Result<RunResult, HarnessError> {
    let mut flag_sets = vec![FlagSet::DEFAULT];
    flag_sets.extend(
        request
            .flag_sets
            .iter()
            .copied()
            .filter(|f| *f != FlagSet::DEFAULT),
    );
    flag_sets.dedup();
    let mut configurations = vec![Configuration::AsWritten];
    configurations.extend(
        request
            .configurations
            .iter()
            .filter(|c| **c != Configuration::AsWritten)
            .cloned(),
    );
    let timing = TrialTiming::Timed {
        warmup: request.exec.warmup,
        repeats: request.exec.repeats,
    };
    let save_dir = request.save_dir.as_deref();

    let mut result = RunResult {
        name: spec.name.clone(),
        front_end: String::new(),
        runs: Vec::new(),
        records: Vec::new(),
    };
    let mut shared = None;
    let mut lost: Option<String> = None;
    let failed = |result: &mut RunResult,
                  progress: &mut dyn FnMut(RunEvent),
                  flags: FlagSet,
                  configuration: &Configuration,
                  build: Option<BuildFacts>,
                  notes: Vec<String>,
                  why: String| {
        let run = ConfigRun {
            flags,
            configuration: configuration.clone(),
            build,
            notes,
            outcome: Err(why),
        };
        push_records(gpu, spec, &run, None, result, progress);
        result.runs.push(run);
    };
    for flags in flag_sets {
        progress(RunEvent::Building { flags });
        if let Some(why) = &lost {
            for configuration in &configurations {
                let why = format!("not run: {why}");
                failed(
                    &mut result,
                    progress,
                    flags,
                    configuration,
                    None,
                    Vec::new(),
                    why,
                );
            }
            continue;
        }
        progress(RunEvent::Running {
            flags,
            configuration: &configurations[0],
        });
        let opts = RunnerOptions {
            baseline_timing: timing,
            shared: shared.clone(),
            download_outputs: save_dir.is_some(),
            ..RunnerOptions::default()
        };
        let mut runner = match TrialRunner::new(gpu, spec, flags, opts) {
            Ok(r) => r,
            Err(TrialError::Spec(e)) => return Err(e.into()),
            Err(TrialError::Build { message }) if flags == FlagSet::DEFAULT => {
                return Err(HarnessError::Build(message))
            }
            Err(e) => {
                if e.is_fatal() {
                    lost = Some(e.to_string());
                }
                let why = e.to_string();
                failed(
                    &mut result,
                    progress,
                    flags,
                    &configurations[0],
                    None,
                    Vec::new(),
                    why.clone(),
                );
                for configuration in &configurations[1..] {
                    let why = format!("not run: the program as written failed: {why}");
                    failed(
                        &mut result,
                        progress,
                        flags,
                        configuration,
                        None,
                        Vec::new(),
                        why,
                    );
                }
                continue;
            }
        };
        shared.get_or_insert_with(|| runner.shared());
        if result.front_end.is_empty() {
            result.front_end = runner.built().front_end.clone();
        }
        let build = runner.built().facts.clone();
        let (outcome, dims) = as_run(
            Ok(runner.baseline().clone()),
            save_dir,
            flags,
            &configurations[0],
        );
        let run = ConfigRun {
            flags,
            configuration: configurations[0].clone(),
            build: build.clone(),
            notes: Vec::new(),
            outcome,
        };
        push_records(gpu, spec, &run, dims, &mut result, progress);
        result.runs.push(run);
        // Every configuration's JIT at once, on several CPU threads.
        runner.prepare(&configurations[1..]);
        for configuration in &configurations[1..] {
            progress(RunEvent::Running {
                flags,
                configuration,
            });
            if let Some(why) = &lost {
                let why = format!("not run: {why}");
                failed(
                    &mut result,
                    progress,
                    flags,
                    configuration,
                    build.clone(),
                    Vec::new(),
                    why,
                );
                continue;
            }
            let trial = runner.trial(configuration, timing);
            if let Err(e) = &trial {
                if e.is_fatal() {
                    lost = Some(e.to_string());
                }
            }
            let notes = match &trial {
                Ok(t) => t.notes.clone(),
                Err(_) => runner.notes(configuration),
            };
            let (outcome, dims) = as_run(trial, save_dir, flags, configuration);
            let run = ConfigRun {
                flags,
                configuration: configuration.clone(),
                build: build.clone(),
                notes,
                outcome,
            };
            push_records(gpu, spec, &run, dims, &mut result, progress);
            result.runs.push(run);
        }
    }
    Ok(result)
}

fn save(
    dir: &std::path::Path,
    flags: FlagSet,
    configuration: &Configuration,
    outputs: &[(String, mantissa_gpu::HostData)],
) -> Result<(), String> {
    let sub = if flags == FlagSet::DEFAULT && *configuration == Configuration::AsWritten {
        dir.to_path_buf()
    } else {
        dir.join(format!("{}.{}", flags.name(), configuration.name()))
    };
    mantissa_files::ensure_dir(&sub).map_err(|e| e.to_string())?;
    for (name, data) in outputs {
        npy::write(&sub.join(format!("{name}.npy")), data).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn metrics(c: &Comparison) -> ErrorMetrics {
    ErrorMetrics {
        abs: c.max_abs,
        rel: Some(c.max_rel),
        ulps: Some(c.max_ulps),
        digits: Some(c.digits.min(99.0)),
    }
}

fn push_records(
    gpu: &Gpu,
    spec: &Spec,
    run: &ConfigRun,
    dims: Option<mantissa_gpu::LaunchDims>,
    result: &mut RunResult,
    progress: &mut dyn FnMut(RunEvent),
) {
    let seeds = spec.seeds();
    let backend = dims.map_or(
        Backend::Gpu {
            grid: [0; 3],
            block: [0; 3],
        },
        |d| Backend::Gpu {
            grid: [d.grid.0, d.grid.1, d.grid.2],
            block: [d.block.0, d.block.1, d.block.2],
        },
    );
    let seed_note = if seeds.is_empty() {
        String::new()
    } else {
        format!(
            "seeds: {}",
            seeds
                .iter()
                .map(|(b, s)| format!("{b}={s}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    for (i, o) in spec.outputs.iter().enumerate() {
        let size = spec
            .buffer(&o.buffer)
            .map_or(0, |b| o.view.map_or(b.len, |v| v.len)) as u64;
        let mut extra = BTreeMap::new();
        let mut descriptions = BTreeMap::new();
        let mut note = run.notes.clone();
        let (status, value, reference, error, time) = match &run.outcome {
            Ok(out) => {
                let r = &out.outputs[i];
                let c = &r.vs_baseline;
                let mut put = |k: &str, v: f64, d: &str| {
                    extra.insert(k.to_string(), v);
                    descriptions.insert(k.to_string(), d.to_string());
                };
                put("baseline.digits", c.digits.min(99.0), "correct decimal digits against the baseline (default flags, as written), minimum over elements (seed 002), capped at 99");
                put(
                    "baseline.max_rel",
                    c.max_rel,
                    "largest relative error against the baseline",
                );
                put(
                    "baseline.mean_rel",
                    c.mean_rel,
                    "mean relative error against the baseline, finite elements",
                );
                put(
                    "baseline.max_ulps",
                    c.max_ulps,
                    "largest distance to the baseline in ulps of the output's type",
                );
                put(
                    "baseline.differing",
                    c.differing as f64,
                    "elements whose bits differ from the baseline",
                );
                put(
                    "baseline.nonfinite_mismatches",
                    c.nonfinite_mismatches as f64,
                    "elements NaN or infinite where the baseline is not the same",
                );
                if let Some(rc) = &r.vs_reference {
                    put("reference.digits", rc.digits.min(99.0), "correct decimal digits against the spec's reference .npy, minimum over elements");
                    put(
                        "reference.max_rel",
                        rc.max_rel,
                        "largest relative error against the spec's reference",
                    );
                }
                if let Some(m) = r.met {
                    put("tolerance_met", f64::from(u8::from(m)), "1 when the output's tolerance is met (against the reference if given, else the baseline)");
                    note.push(format!(
                        "tolerance {}: {}",
                        r.tolerance.map_or(String::new(), |t| t.to_string()),
                        if m { "met" } else { "NOT met" }
                    ));
                }
                let error = Some(metrics(r.vs_reference.as_ref().unwrap_or(c)));
                // A record's `reference` is one number; a buffer's reference is not, and a
                // reduced output's reference value lives in the .npy the spec names.
                let reference = None;
                let time = out.timing.as_ref().map(|t| TimeStats {
                    median_ms: t.median_ms,
                    min_ms: t.min_ms,
                    max_ms: t.max_ms,
                    reps: t.samples_ms.len() as u32,
                });
                (Status::Ok, r.value, reference, error, time)
            }
            Err(e) => {
                note.push(e.clone());
                (Status::Failed, None, None, None, None)
            }
        };
        if !seed_note.is_empty() {
            note.push(seed_note.clone());
        }
        let record = Record {
            schema: SCHEMA,
            workload: spec.name.clone(),
            algorithm: o.name(),
            input: "spec".into(),
            size,
            seed: seeds.first().map_or(0, |s| s.1),
            precision: run.configuration.name(),
            backend,
            flags: Some(run.flags.name()),
            device: gpu.info().name.clone(),
            device_ordinal: None,
            status,
            value,
            reference,
            error,
            time,
            extra,
            descriptions,
            note: (!note.is_empty()).then(|| note.join("; ")),
            build: run.build.as_ref().map(record_build),
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: Record::now(),
            shard: None,
            unit: None,
        };
        progress(RunEvent::Record(&record));
        result.records.push(record);
    }
}

pub use crate::trial::build::{build_module, build_request, full_configuration, Built};

/// A build's facts as a record's `build` field.
pub fn record_build(f: &BuildFacts) -> Build {
    Build {
        front_end: f.front_end.clone(),
        front_end_version: f.front_end_version.clone(),
        flags: f.flags.clone(),
        options: f.options.clone(),
        arch: f.arch.clone(),
        source_hash: f.source_hash.clone(),
    }
}
