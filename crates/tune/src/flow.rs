//! The flow of `mantissa tune`: build and run the program as written, find its units (FISets,
//! variables), measure their demotion error with the shadow analysis, time the f64 and the
//! all-f32 programs (Eq. 3's 0% and 100%), then run each requested search — modes 1–3 over
//! FISets and the delta-debugging baseline over variables, for every threshold — through one
//! [`GpuEvaluator`], so that a configuration met by two searches is run once and every trial is
//! in the store as soon as it is measured.

use crate::detail::Detail;
use crate::evaluate::{ErrorThreshold, Evaluate, Need, Trial};
use crate::gpu::{reference_time, Device, EvaluateError, GpuEvaluator, References, TimingPolicy};
use crate::noise::Time;
use crate::plan::label;
use crate::store::{Identity, StoreError, StoreShard, TrialStore};
use crate::strategy::{self, Mode, Search, SearchError};
use crate::unit::{Config, Unit};
use crate::units::{
    attach_errors, buffer_units, demoted_module, math_units, program_units, site_errors,
    ErrorCoverage, ProgramUnits,
};
use mantissa_gpu::{FlagSet, Gpu};
use mantissa_harness::{
    Base, Configuration, Demotion, RunnerOptions, Spec, TrialError, TrialRunner, TrialTiming,
};
use mantissa_ptx::fiset::{FisetOptions, FunctionProfile};
use mantissa_report::{Backend, Shard};
use mantissa_shadow::{Analyses, ShadowRequest};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// What to tune and how.
#[derive(Debug, Clone)]
pub struct TuneRequest {
    /// The flag set the program is built with.
    pub flags: FlagSet,
    /// Error thresholds, one search per threshold (and per performance threshold).
    pub errors: Vec<ErrorThreshold>,
    /// Performance thresholds in % of the ideal speed-up (modes 2, 3 and the baseline).
    pub speedups: Vec<f64>,
    /// Modes among 1, 2, 3.
    pub modes: Vec<u8>,
    /// Also run the delta-debugging baseline.
    pub baseline: bool,
    /// Also search every subset of FISets (the best configuration there is; small programs).
    pub exhaustive: bool,
    /// φ and the FISet analysis's options.
    pub fiset: FisetOptions,
    /// Repetitions.
    pub policy: TimingPolicy,
    /// The results store's directory (none: nothing kept).
    pub out: Option<PathBuf>,
    /// Keep what `out` holds and run only what is missing.
    pub resume: bool,
    /// Run only this shard's searches ([`crate::plan`]), into its own store file.
    pub shard: Option<Shard>,
}

/// Where a tuning run is, for a progress display.
#[derive(Debug, Clone, PartialEq)]
pub enum TuneEvent {
    /// Building the program and running it as written.
    Baseline,
    /// The units were found.
    Units {
        /// FISets.
        fisets: usize,
        /// Variables.
        variables: usize,
        /// Buffers that can be kept in f32.
        buffers: usize,
        /// Math calls that can be replaced by their f32 functions.
        math: usize,
    },
    /// Measuring the demotion error of every f64 instruction (one instrumented run).
    Shadow,
    /// Timing the f64 and the all-f32 programs.
    References,
    /// They are timed (or read from the resumed store).
    Timed(References),
    /// A search begins.
    Search {
        /// `mode 2, 3 digits, 10%`.
        label: String,
    },
    /// A trial of the current search finished.
    Trial {
        /// Its number in the search (1-based).
        number: usize,
        /// Its configuration.
        config: String,
        /// What it measured.
        trial: Trial,
    },
    /// The store held this many records of an interrupted run.
    Resumed(usize),
}

/// One search with the thresholds it ran under (read back by [`crate::doc`]).
#[derive(Debug, Clone, Serialize)]
pub struct SearchEntry {
    /// `mode 2, 3 digits, 10%`.
    pub label: String,
    /// Its place in the run's plan ([`crate::plan`]).
    pub unit: usize,
    /// Over FISets (`fisets`) or variables (`variables`).
    pub units: &'static str,
    /// The search and what it found (its configurations index that unit list).
    #[serde(with = "crate::doc::search")]
    pub search: Search,
    /// Where its chosen configuration was saved (`--out`), as a configuration file beside its
    /// listing per source line.
    pub saved: Option<PathBuf>,
    /// Its chosen configuration's digits per output element and registers per kernel.
    pub detail: Option<Detail>,
}

/// A kernel's profile (seed 002 Table 3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelProfile {
    /// The FISet analysis's profile of the function.
    pub fisets: FunctionProfile,
    /// Its share of the program's kernel time as written, 0–1 (`None` for a `.func`, or when
    /// the profiling runs failed: the notes say why).
    pub share: Option<f64>,
    /// Its median GPU time per run of the steps as written, ms.
    pub time_ms: Option<f64>,
    /// Launches per run of the steps.
    pub launches: Option<u64>,
    /// Registers per thread as written.
    pub registers_f64: Option<u32>,
    /// Registers per thread with every FISet demoted.
    pub registers_mixed: Option<u32>,
    /// Local memory per thread as written, bytes (spills).
    pub local_f64: Option<u32>,
    /// Local memory with every FISet demoted.
    pub local_mixed: Option<u32>,
}

/// What a tuning run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneRun {
    /// The spec's name.
    pub spec: String,
    /// The device's name.
    pub device: String,
    /// The flag set's name.
    pub flags: String,
    /// What modes 1–3 search (their configurations index this list): the FISets, then the
    /// buffers that can be kept in f32.
    pub fisets: Vec<Unit>,
    /// What the baseline searches (its configurations index this list): the variables, then
    /// the same buffers.
    pub variables: Vec<Unit>,
    /// Of those, the units both lists end with (math calls, then buffers).
    pub shared: usize,
    /// Math-call units among them.
    pub math: usize,
    /// Buffer units among them (the last of each list).
    pub buffers: usize,
    /// How many unit sites the shadow run measured.
    pub coverage: ErrorCoverage,
    /// Per kernel: FISets, mean r_ac, registers.
    pub profile: Vec<KernelProfile>,
    /// The f64 and the all-f32 program (on the first GPU).
    pub references: References,
    /// With several GPUs: each one's CUDA ordinal and references (empty with one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<(u32, References)>,
    /// Every search, in the order run.
    pub searches: Vec<SearchEntry>,
    /// Trials that ran on the device (the searches' trials met again are not run again).
    pub device_trials: usize,
    /// Records the store held from an interrupted run.
    pub resumed: usize,
    /// Anything the reader should know.
    pub notes: Vec<String>,
    /// The shard this run is (its searches are that shard's); `None` for a whole run.
    #[serde(default)]
    pub shard: Option<Shard>,
}

/// Why a tuning run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The spec, the program or the device failed before any search.
    #[error(transparent)]
    Trial(#[from] TrialError),
    /// The shadow analysis failed.
    #[error("measuring the demotion errors: {0}")]
    Shadow(#[from] mantissa_shadow::ShadowError),
    /// A search stopped.
    #[error(transparent)]
    Evaluate(#[from] EvaluateError),
    /// A search could not run.
    #[error(transparent)]
    Search(#[from] SearchError<EvaluateError>),
    /// The results store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A chosen configuration could not be saved.
    #[error("{0}")]
    Save(String),
    /// Nothing to tune: the program has no f64 arithmetic to demote.
    #[error("{0}")]
    NothingToTune(String),
    /// The GPUs given cannot serve one run.
    #[error("{0}")]
    Devices(String),
}

impl TuneError {
    /// Whether the user's input is at fault (exit 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, TuneError::Trial(TrialError::Spec(_)))
    }

    /// Whether the run was stopped (a signal) rather than failed.
    pub fn is_stopped(&self) -> bool {
        matches!(
            self,
            TuneError::Evaluate(EvaluateError::Stopped)
                | TuneError::Search(SearchError::Evaluate(EvaluateError::Stopped))
        )
    }
}

/// An evaluator over a sub-list of the run's units: the search's index i is unit `map[i]`.
struct Sub<'e, 'r, 'g> {
    inner: &'e mut GpuEvaluator<'r, 'g>,
    map: &'e [usize],
}

impl Sub<'_, '_, '_> {
    fn mapped(&self, config: &Config) -> Config {
        config.iter().map(|&i| self.map[i]).collect()
    }
}

impl Evaluate for Sub<'_, '_, '_> {
    type Error = EvaluateError;
    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, EvaluateError> {
        let mapped = self.mapped(config);
        self.inner.trial(&mapped, need)
    }

    fn width(&self) -> usize {
        self.inner.width()
    }

    fn trials(&mut self, configs: &[Config], need: Need) -> Result<Vec<Trial>, EvaluateError> {
        let mapped: Vec<Config> = configs.iter().map(|c| self.mapped(c)).collect();
        self.inner.trials(&mapped, need)
    }
}

/// What identifies the unit list across runs of the same program: each unit's kind, name, sites
/// and buffers — not its measured error, whose sums over atomics differ in their last bits from
/// run to run.
fn fingerprint(units: &[Unit]) -> String {
    let shape: Vec<_> = units
        .iter()
        .map(|u| (u.kind, &u.name, &u.sites, &u.buffers))
        .collect();
    let text = serde_json::to_string(&shape).unwrap_or_default();
    format!("{:016x}", mantissa_gpu::cache::fnv1a64(text.as_bytes()))
}

/// Runs `request` on `spec` (see the module docs) on `gpus`: everything but the searches runs
/// on the first; the searches' trials run on all of them, each timed on one device alone against
/// the references timed on that device. The GPUs must be of one model.
pub fn tune(
    gpus: &[&Gpu],
    spec: &Spec,
    request: &TuneRequest,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<TuneRun, TuneError> {
    tune_until(gpus, spec, request, &AtomicBool::new(false), progress)
}

/// [`tune`], stopping before the next trial once `stop` is set (a signal): the searches end
/// with [`EvaluateError::Stopped`], every trial finished is in the store, and `--resume`
/// goes on from them.
pub fn tune_until(
    gpus: &[&Gpu],
    spec: &Spec,
    request: &TuneRequest,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<TuneRun, TuneError> {
    let Some(&gpu) = gpus.first() else {
        return Err(TuneError::Devices("no GPU to tune on".into()));
    };
    if let Some(other) = gpus.iter().find(|g| g.info().name != gpu.info().name) {
        return Err(TuneError::Devices(format!(
            "GPU {} is a {} and GPU {} a {}: a tuning run's speed-ups are of one model; choose GPUs of one model with --devices",
            gpu.ordinal(),
            gpu.info().name,
            other.ordinal(),
            other.info().name
        )));
    }
    progress(TuneEvent::Baseline);
    let opts = RunnerOptions {
        baseline_timing: TrialTiming::AccuracyOnly,
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(gpu, spec, request.flags, opts.clone())?;
    let module = demoted_module(&mut runner)?;
    let mut units = program_units(module, &request.fiset);
    let mut notes = units.report.notes.clone();
    let (buffers, why_not) = buffer_units(&mut runner, spec);
    notes.extend(why_not);
    let maths = math_units(&units.module);
    progress(TuneEvent::Units {
        fisets: units.fisets.len(),
        variables: units.variables.len(),
        buffers: buffers.len(),
        math: maths.len(),
    });
    if units.fisets.is_empty()
        && units.variables.is_empty()
        && buffers.is_empty()
        && maths.is_empty()
    {
        return Err(TuneError::NothingToTune(format!(
            "{}: no f64 arithmetic that a configuration can demote and no f64 buffer that can be kept in f32 (no FISet, variable or buffer): nothing to tune",
            spec.name
        )));
    }
    if units.fisets.is_empty() {
        notes.push(
            "no FISet: no group of f64 arithmetic runs in f32 with fewer conversions than operations (memory-bound code, or arithmetic only inside math functions); modes 1-3 search the buffers alone".into(),
        );
    }

    // The demotion error of every f64 instruction: seed 002 §4.5's shadow run.
    progress(TuneEvent::Shadow);
    let shadow = mantissa_shadow::analyse_on(
        gpu,
        &mut runner,
        spec,
        &ShadowRequest {
            flags: request.flags,
            analyses: Analyses {
                demotion: true,
                shadow: false,
                exceptions: false,
            },
            time: false,
        },
        &mut |_| {},
    )?;
    let plain = runner.base_module(&Base::AsBuilt)?;
    let pinned = runner.base_module(&Base::Pinned)?;
    let errors = site_errors(&shadow, &plain.module, &pinned.module);
    let mut coverage = ErrorCoverage::default();
    attach_errors(&mut units.fisets, &errors, &mut coverage);
    attach_errors(&mut units.variables, &errors, &mut coverage);
    if coverage.measured < coverage.sites {
        notes.push(format!(
            "the shadow run measured {} of the units' {} instructions (the others are ordered as if exact)",
            coverage.measured, coverage.sites
        ));
    }

    let profile = profile(
        &mut runner,
        &units.report.profiles,
        &units.fisets,
        &mut notes,
    );

    // One list for the evaluator (FISets, math calls, buffers, variables); each search sees
    // its own: modes the FISets, then math calls and buffers; the baseline the variables, then
    // the same math calls and buffers.
    let (nf, nm, nb, nv) = (
        units.fisets.len(),
        maths.len(),
        buffers.len(),
        units.variables.len(),
    );
    let shared: Vec<Unit> = maths.iter().chain(buffers.iter()).cloned().collect();
    let all_units: Vec<Unit> = units
        .fisets
        .iter()
        .chain(shared.iter())
        .chain(units.variables.iter())
        .cloned()
        .collect();
    let mode_map: Vec<usize> = (0..nf + nm + nb).collect();
    let baseline_map: Vec<usize> = (nf + nm + nb..nf + nm + nb + nv)
        .chain(nf..nf + nm + nb)
        .collect();
    units.fisets.extend(shared.iter().cloned());
    units.variables.extend(shared.iter().cloned());
    let identity = Identity {
        spec: spec.name.clone(),
        flags: request.flags.name().to_string(),
        device: gpu.info().name.clone(),
        backend: runner
            .baseline()
            .first_launch
            .map_or(Backend::gpu(0, 0), |d| Backend::Gpu {
                grid: [d.grid.0, d.grid.1, d.grid.2],
                block: [d.block.0, d.block.1, d.block.2],
            }),
        name_devices: gpus.len() > 1 || gpu.ordinal() != 0,
    };
    let mut store = TrialStore::open(
        request.out.as_deref(),
        request.resume,
        request.shard.map(|shard| StoreShard {
            shard,
            settings: crate::shard::settings(spec, request),
        }),
        identity,
        &fingerprint(&all_units),
    )?;
    if store.resumed > 0 {
        progress(TuneEvent::Resumed(store.resumed));
    }

    // The other devices' runners: the program built (the toolchain's caches make that one
    // compile per architecture), loaded and run as written on each.
    let mut others = gpus[1..]
        .iter()
        .map(|g| TrialRunner::new(g, spec, request.flags, opts.clone()))
        .collect::<Result<Vec<_>, _>>()?;

    // Eq. 3's references, timed once per device for the whole run (or taken from the resumed
    // one), all devices at once: a speed-up is measured against its own device's references.
    progress(TuneEvent::References);
    let mut runners: Vec<&mut TrialRunner<'_>> = std::iter::once(&mut runner)
        .chain(others.iter_mut())
        .collect();
    let timed = device_references(&mut runners, gpus, &store, &request.policy)?;
    let mut devices = Vec::with_capacity(gpus.len());
    for ((runner, g), (references, measured)) in runners.into_iter().zip(gpus).zip(timed) {
        let ordinal = g.ordinal() as u32;
        for (which, (t, d)) in measured {
            store.reference_measured(which, ordinal, t, d)?;
        }
        devices.push(Device {
            runner,
            ordinal,
            references,
        });
    }
    let references = devices[0].references;
    progress(TuneEvent::Timed(references));
    if devices.len() > 1 {
        let each: Vec<String> = devices
            .iter()
            .map(|d| {
                format!(
                    "GPU {} {:.4}/{:.4} ms",
                    d.ordinal, d.references.t64.median_ms, d.references.t32.median_ms
                )
            })
            .collect();
        notes.push(format!(
            "the trials ran on {} GPUs, each timed against the f64/all-f32 programs timed on its own GPU: {}",
            devices.len(),
            each.join(", ")
        ));
    }
    let measurable =
        crate::noise::speedup(&references.t64, &references.t64, &references.t32).is_some();
    if !measurable {
        notes.push(format!(
            "the all-f32 program ({:.4} ms) is not measurably faster than the f64 program ({:.4} ms): no speed-up in % of the ideal exists, so no performance threshold can be met and only mode 1 ran",
            references.t32.median_ms, references.t64.median_ms
        ));
    }
    // Accuracy-only trials without a JIT each: one switched build of everything per device.
    for d in devices.iter_mut() {
        if let Err(e) = d
            .runner
            .enable_switching(&Configuration::Demote(Demotion::all()))
        {
            notes.push(format!(
                "GPU {}: every trial is a build of its own: {e}",
                d.ordinal
            ));
        }
    }
    let device_list: Vec<(u32, References)> =
        devices.iter().map(|d| (d.ordinal, d.references)).collect();

    let resumed = store.resumed;
    let mut eval =
        GpuEvaluator::new(devices, all_units, request.policy, &mut store).stopping_on(stop);
    let mut searches = Vec::new();
    let plans = crate::plan::plans(request);
    // In runs of one error threshold, which the evaluator is set to once per run.
    for group in plans.chunk_by(|a, b| a.thresholds.error == b.thresholds.error) {
        eval.set_error(group[0].thresholds.error);
        for plan in group {
            let (unit, name, mode, t) =
                (plan.unit, plan.strategy.clone(), plan.mode, plan.thresholds);
            progress(TuneEvent::Search {
                label: label(&name, &t),
            });
            // Every search but mode 1 stops only on a measured speed-up: without a measurable
            // ideal none can, and its trials would be spent for nothing.
            if mode != 1 && !measurable {
                searches.push(SearchEntry {
                    label: label(&name, &t),
                    unit,
                    units: if mode == 0 { "variables" } else { "fisets" },
                    search: Search {
                        strategy: name.clone(),
                        thresholds: t,
                        chosen: None,
                        chosen_trial: None,
                        trials: 0,
                        log: Vec::new(),
                        first_met_at: None,
                        unused_ahead: 0,
                    },
                    saved: None,
                    detail: None,
                });
                continue;
            }
            let mut number = 0;
            let mut report = |c: &Config, trial: &Trial| {
                number += 1;
                progress(TuneEvent::Trial {
                    number,
                    config: crate::store::config_key(c),
                    trial: trial.clone(),
                });
            };
            let name_label = label(&name, &t);
            let (search, over) = if mode == 0 {
                let mut sub = Sub {
                    inner: &mut eval,
                    map: &baseline_map,
                };
                let s = strategy::delta_debugging(&units.variables, &t, &mut sub, &mut report)?;
                (s, "variables")
            } else if mode == 4 {
                let mut sub = Sub {
                    inner: &mut eval,
                    map: &mode_map,
                };
                match strategy::exhaustive(&units.fisets, &t, &mut sub, &mut report) {
                    Ok(s) => (s, "fisets"),
                    Err(e @ SearchError::TooManyUnits { .. }) => {
                        notes.push(e.to_string());
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            } else {
                let mut sub = Sub {
                    inner: &mut eval,
                    map: &mode_map,
                };
                let m = Mode::from_number(mode).unwrap_or(Mode::ErrorFirst);
                let s = strategy::mode(m, &units.fisets, &t, &mut sub, &mut report)?;
                (s, "fisets")
            };
            let list = if over == "fisets" {
                &units.fisets
            } else {
                &units.variables
            };
            let saved = match (&request.out, &search.chosen) {
                (Some(dir), Some(c)) => Some(
                    crate::save::save(
                        &dir.join("configs"),
                        &crate::save::slug(&name_label),
                        list,
                        c,
                        &units.module,
                        &spec.dir,
                    )
                    .map_err(|e| {
                        TuneError::Save(format!("saving a configuration in {}: {e}", dir.display()))
                    })?,
                ),
                _ => None,
            };
            searches.push(SearchEntry {
                label: name_label,
                unit,
                units: over,
                search,
                saved,
                detail: None,
            });
        }
    }
    let device_trials = eval.device_trials();
    if eval.batches > 0 {
        let busy: Vec<String> = device_list
            .iter()
            .zip(&eval.busy)
            .map(|((o, _), b)| format!("GPU {o} {:.2} s", b.as_secs_f64()))
            .collect();
        notes.push(format!(
            "{} batches of trials ran over the GPUs, busy {}",
            eval.batches,
            busy.join(", ")
        ));
    }
    drop(eval);
    details(
        &mut runner,
        spec,
        request,
        &units,
        &mut searches,
        &mut notes,
    );
    Ok(TuneRun {
        spec: spec.name.clone(),
        device: gpu.info().name.clone(),
        flags: request.flags.name().to_string(),
        fisets: units.fisets,
        variables: units.variables,
        shared: nm + nb,
        math: nm,
        buffers: nb,
        coverage,
        profile,
        references,
        devices: if device_list.len() > 1 {
            device_list
        } else {
            Vec::new()
        },
        searches,
        device_trials,
        resumed,
        notes,
        shard: request.shard,
    })
}

/// Measures every chosen configuration's output elements and registers ([`crate::detail`]);
/// a configuration that fails here is noted, not fatal (its search's result stands).
fn details(
    runner: &mut TrialRunner<'_>,
    spec: &Spec,
    request: &TuneRequest,
    units: &ProgramUnits,
    searches: &mut [SearchEntry],
    notes: &mut Vec<String>,
) {
    if searches.iter().all(|s| s.search.chosen.is_none()) {
        return;
    }
    let baseline = match crate::detail::baseline_outputs(runner) {
        Ok(b) => b,
        Err(e) => {
            notes.push(format!(
                "the outputs as written could not be read back: {e}"
            ));
            return;
        }
    };
    let mut done: Vec<(&'static str, Config, Detail)> = Vec::new();
    for s in searches.iter_mut() {
        let Some(c) = s.search.chosen.clone() else {
            continue;
        };
        if let Some((_, _, d)) = done.iter().find(|(u, k, _)| *u == s.units && *k == c) {
            s.detail = Some(d.clone());
            continue;
        }
        let list = if s.units == "fisets" {
            &units.fisets
        } else {
            &units.variables
        };
        let dir = request.out.as_ref().map(|d| d.join("configs"));
        let stem = crate::save::slug(&s.label);
        let save = dir.as_deref().map(|d| (d, stem.as_str()));
        match crate::detail::detail(runner, spec, list, &c, &baseline, save) {
            Ok(d) => {
                done.push((s.units, c, d.clone()));
                s.detail = Some(d);
            }
            Err(e) => notes.push(format!("{}: measuring its elements: {e}", s.label)),
        }
    }
}

/// Profiling runs of the program as written (one warm-up): enough for a share of time, which
/// only decides where demoting can pay.
const PROFILE_RUNS: u32 = 5;

/// Share of time, registers as written and with every FISet demoted, per kernel.
fn profile(
    runner: &mut TrialRunner<'_>,
    profiles: &[FunctionProfile],
    fisets: &[Unit],
    notes: &mut Vec<String>,
) -> Vec<KernelProfile> {
    let times = match runner.kernel_times(&Configuration::AsWritten, PROFILE_RUNS) {
        Ok(t) => t,
        Err(e) => {
            notes.push(format!("the time per kernel was not measured: {e}"));
            Vec::new()
        }
    };
    let f64_res = runner.baseline_resources().unwrap_or_default();
    let everything: Config = (0..fisets.len()).collect();
    let mixed_res = crate::gpu::configuration(fisets, &everything, "all fisets");
    let mixed = runner
        .configuration_resources(&mixed_res)
        .unwrap_or_default();
    profiles
        .iter()
        .map(|p| {
            let f = f64_res.iter().find(|(k, _)| *k == p.function).map(|r| r.1);
            let m = mixed.iter().find(|(k, _)| *k == p.function).map(|r| r.1);
            let t = times.iter().find(|t| t.kernel == p.function);
            KernelProfile {
                fisets: p.clone(),
                share: t.map(|t| t.share),
                time_ms: t.map(|t| t.median_ms),
                launches: t.map(|t| t.launches),
                registers_f64: f.map(|r| r.registers),
                registers_mixed: m.map(|r| r.registers),
                local_f64: f.map(|r| r.local_bytes),
                local_mixed: m.map(|r| r.local_bytes),
            }
        })
        .collect()
}

/// References a device timed, to be recorded: `(which, (time, digits))`.
type Timed = Vec<(&'static str, (Time, f64))>;

/// The f64 and all-f32 references of every runner (one per GPU of `gpus`), from the resumed
/// store or timed now, the runners at the same time, each on its own GPU.
fn device_references(
    runners: &mut [&mut TrialRunner<'_>],
    gpus: &[&Gpu],
    store: &TrialStore,
    policy: &TimingPolicy,
) -> Result<Vec<(References, Timed)>, EvaluateError> {
    let time = |runner: &mut TrialRunner<'_>, ordinal: u32| {
        let mut measured: Timed = Vec::new();
        let mut get = |which: &'static str, c: &Configuration| {
            if let Some(r) = store.reference(which, ordinal) {
                return Ok(r);
            }
            let r = reference_time(runner, c, policy)?;
            measured.push((which, r));
            Ok::<_, EvaluateError>(r)
        };
        let (t64, _) = get("f64", &Configuration::AsWritten)?;
        let (t32, digits32) = get("all-f32", &Configuration::Demote(Demotion::all()))?;
        Ok((References { t64, t32, digits32 }, measured))
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = runners
            .iter_mut()
            .zip(gpus)
            .map(|(runner, g)| {
                let time = &time;
                scope.spawn(move || time(runner, g.ordinal() as u32))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(EvaluateError::Fatal(
                        "timing the references panicked".into(),
                    ))
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stop asked for between trials reaches the caller as a stop, whichever search saw it;
    /// other evaluator errors do not.
    #[test]
    fn a_stopped_evaluator_is_a_stopped_run() {
        let stopped: TuneError = SearchError::Evaluate(EvaluateError::Stopped).into();
        assert!(stopped.is_stopped());
        assert!(TuneError::from(EvaluateError::Stopped).is_stopped());
        let lost: TuneError = SearchError::Evaluate(EvaluateError::Fatal("lost".into())).into();
        assert!(!lost.is_stopped());
        assert!(!TuneError::NothingToTune("none".into()).is_stopped());
    }
}
