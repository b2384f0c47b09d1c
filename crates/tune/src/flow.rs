//! The flow of `mantissa tune`: build and run the program as written, find its units (FISets,
//! variables), measure their demotion error with the shadow analysis, time the f64 and the
//! all-f32 programs (Eq. 3's 0% and 100%), then run each planned search — every strategy the
//! request selects ([`crate::strategy::STRATEGIES`]), for every threshold — through one
//! [`GpuEvaluator`], so that a configuration met by two searches is run once and every trial is
//! in the store as soon as it is measured.
//!
//! Here: what a run is given and gives back, and [`tune_until`], the stages in order; each stage
//! is a file of its own (`prepare`, `devices`, `search`, `details`).

mod details;
mod devices;
mod prepare;
mod search;

use crate::detail::Detail;
use crate::evaluate::{ErrorThreshold, Trial};
use crate::gpu::{EvaluateError, GpuEvaluator, References, TimingPolicy};
use crate::store::StoreError;
use crate::strategy::{Over, Search, SearchError, Selection};
use crate::unit::TuneUnit;
use crate::units::ErrorCoverage;
use devices::Devices;
use mantissa_gpu::{FlagSet, Gpu};
use mantissa_harness::{Session, Spec, TrialError, TrialRunner};
use mantissa_ptx::fiset::{FisetOptions, FunctionProfile};
use mantissa_report::Shard;
use prepare::Prepared;
use search::Searching;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
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

impl TuneRequest {
    /// The strategies it asks for, as the registry's selectors read them.
    pub fn selection(&self) -> Selection<'_> {
        Selection {
            modes: &self.modes,
            baseline: self.baseline,
            exhaustive: self.exhaustive,
        }
    }
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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchEntry {
    /// `mode 2, 3 digits, 10%`.
    pub label: String,
    /// Its place in the run's plan ([`crate::plan`]); a document written before shards has
    /// none: a whole run's first.
    #[serde(default)]
    pub unit: usize,
    /// The unit list its configurations index (written `fisets` or `variables`).
    pub units: Over,
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
    pub fisets: Vec<TuneUnit>,
    /// What the baseline searches (its configurations index this list): the variables, then
    /// the same buffers.
    pub variables: Vec<TuneUnit>,
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

impl TuneRun {
    /// The unit list `over` names: the one a search's configurations index.
    pub fn units(&self, over: Over) -> &[TuneUnit] {
        match over {
            Over::Fisets => &self.fisets,
            Over::Variables => &self.variables,
        }
    }
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

/// The program a run tunes, as its stages need it: a spec, or an application whose session
/// was started (its baseline run) before the run.
pub struct Subject<'a> {
    /// Its name (the spec's, or the application's).
    pub name: &'a str,
    /// Where the sources a chosen configuration's listing reads are.
    pub dir: &'a Path,
    /// How it was built, for the records (a flag set's name; `as built` for an application).
    pub flags: String,
    /// The spec, when it is one: its buffers are units too, its outputs are read as it defines
    /// them, and it can be sharded and run on several GPUs.
    pub spec: Option<&'a Spec>,
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
    let gpu = prepare::first_of_one_model(gpus)?;
    progress(TuneEvent::Baseline);
    let mut runner = TrialRunner::new(gpu, spec, request.flags, prepare::runner_options())?;
    let mut others = devices::other_runners(gpus, spec, request)?;
    let sessions = std::iter::once(&mut runner)
        .chain(others.iter_mut())
        .zip(gpus)
        .map(|(r, g)| (r as &mut (dyn Session + Send), g.ordinal() as u32))
        .collect();
    let subject = Subject {
        name: &spec.name,
        dir: &spec.dir,
        flags: request.flags.name().to_string(),
        spec: Some(spec),
    };
    tune_sessions(sessions, &subject, request, stop, progress)
}

/// Tunes the program a started session runs (an application: see
/// [`mantissa_harness::app::session`]), one trial at a time, as [`tune_until`] tunes a spec.
/// The request's shard must be none.
pub fn tune_session_until(
    session: &mut (dyn Session + Send),
    subject: &Subject<'_>,
    request: &TuneRequest,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<TuneRun, TuneError> {
    tune_sessions(vec![(session, 0)], subject, request, stop, progress)
}

/// The run on `sessions` (each with its GPU's ordinal; the first is where everything but the
/// searches runs), in four stages: prepare (the units and their errors), the devices (their
/// references), the plan's searches, then the details of what they chose.
fn tune_sessions(
    mut sessions: Vec<(&mut (dyn Session + Send + '_), u32)>,
    subject: &Subject<'_>,
    request: &TuneRequest,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<TuneRun, TuneError> {
    let Prepared {
        units,
        all_units,
        maps,
        math,
        buffers,
        coverage,
        profile,
        mut notes,
    } = prepare::prepare(&mut *sessions[0].0, subject, request, progress)?;
    let name_devices = sessions.len() > 1 || sessions[0].1 != 0;
    let mut store =
        prepare::open_store(subject, request, &*sessions[0].0, name_devices, &all_units)?;
    let resumed = store.resumed;
    if resumed > 0 {
        progress(TuneEvent::Resumed(resumed));
    }
    let device = sessions[0].0.device_name();

    let runners = sessions.iter_mut().map(|(s, o)| (&mut **s, *o)).collect();
    let Devices {
        devices,
        measurable,
    } = devices::devices(runners, &mut store, &request.policy, &mut notes, progress)?;
    let references = devices[0].references;
    let device_list: Vec<(u32, References)> =
        devices.iter().map(|d| (d.ordinal, d.references)).collect();

    let plans = crate::plan::plans(request);
    let mut eval =
        GpuEvaluator::new(devices, all_units, request.policy, &mut store).stopping_on(stop);
    let searching = Searching {
        request,
        subject,
        units: &units,
        maps: &maps,
        measurable,
    };
    let mut searches = search::search_all(&mut eval, &plans, &searching, &mut notes, progress)?;
    let device_trials = eval.device_trials();
    notes.extend(search::batches_note(&eval, &device_list));
    drop(eval);

    details::details(
        &mut *sessions[0].0,
        subject.spec,
        request,
        &units,
        &mut searches,
        &mut notes,
    );
    Ok(TuneRun {
        spec: subject.name.to_string(),
        device,
        flags: subject.flags.clone(),
        fisets: units.fisets,
        variables: units.variables,
        shared: math + buffers,
        math,
        buffers,
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
