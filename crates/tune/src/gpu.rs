//! The evaluator that answers [`Evaluate::trial`] on the GPU, through the harness's one
//! [`Session`] per device: accuracy first (an accuracy-only trial, on the switched build when the
//! runner has one: no JIT), then — only when the search needs a speed-up and the error threshold
//! is met — timed repetitions of the configuration's own build, as many as it takes for the
//! decision the search makes on the speed-up to lie outside the timing noise (up to a budget).
//!
//! Everything measured is kept per configuration for the rest of the run (a configuration met
//! again under another threshold is not run again) and appended to the results store as it is
//! measured, so that an interrupted run resumed loses no finished trial ([`crate::store`]).

use crate::evaluate::{ErrorThreshold, Evaluate, Need, Trial};
use crate::noise::{self, Time};
use crate::store::{config_key, Measured, TrialStore};
use crate::unit::{Config, TuneUnit};
use mantissa_gpu::{run_pool, PoolError};
use mantissa_harness::config::{Demotion, MathCall, Selection};
use mantissa_harness::{Configuration, Session, TrialError, TrialOutcome, TrialTiming};
use mantissa_ptx::demote::Request;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How many times a configuration is run for its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimingPolicy {
    /// Untimed runs before each batch of timed ones.
    pub warmup: u32,
    /// Timed runs of a configuration's first batch; each further batch doubles the samples.
    pub repeats: u32,
    /// At most this many timed runs per configuration; the references (f64 and all-f32
    /// programs) get this many from the start, since every speed-up is measured against them.
    pub max_repeats: u32,
}

impl Default for TimingPolicy {
    fn default() -> Self {
        TimingPolicy {
            warmup: 2,
            repeats: 10,
            max_repeats: 80,
        }
    }
}

/// The f64 program (as written) and the whole program demoted: Eq. 3's 0% and 100%.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct References {
    /// The program as written.
    pub t64: Time,
    /// Every f64 instruction and math call demoted ([`Demotion::all`]).
    pub t32: Time,
    /// Digits of the all-f32 program against the f64 one (+inf when bit-identical: written as
    /// the results store writes non-finite numbers, so that a run's document reads back).
    #[serde(with = "mantissa_report::record::float")]
    pub digits32: f64,
}

/// One device of the evaluator: its runner (the program built and loaded there), its CUDA
/// ordinal, and the references timed on it, which the speed-ups of the configurations timed there
/// are measured against.
pub struct Device<'r, 'g> {
    /// The device's session (a spec's trial runner, or an application).
    pub runner: &'r mut (dyn Session + Send + 'g),
    /// Its CUDA ordinal, as records name it.
    pub ordinal: u32,
    /// The f64 and all-f32 programs timed on it.
    pub references: References,
}

/// [`Evaluate`] on one or more GPUs (see the module docs).
pub struct GpuEvaluator<'r, 'g> {
    devices: Vec<Mutex<Device<'r, 'g>>>,
    plan: Plan,
    memory: Memory<'r>,
    /// Per device (in the order given), the time spent running configurations in batches.
    pub busy: Vec<Duration>,
    /// Batches run over several devices.
    pub batches: usize,
    /// Once set, no further trial starts ([`EvaluateError::Stopped`]).
    stop: &'r AtomicBool,
}

/// The stop flag of an evaluator nobody stops.
static NEVER: AtomicBool = AtomicBool::new(false);

/// What the evaluator keeps of what the devices did.
struct Memory<'r> {
    known: HashMap<Config, Measured>,
    store: &'r mut TrialStore,
    /// Timed samples of this process per configuration (merged across batches), with the
    /// ordinal of the device that took them: a time is never made of two devices' samples.
    samples: HashMap<Config, (u32, Vec<f64>)>,
    /// Runs on a device (cached answers are not counted).
    device_trials: usize,
}

impl Memory<'_> {
    /// Keeps what a device did for `config` (memory, store) and answers the search.
    fn keep(&mut self, plan: &Plan, config: &Config, done: Done) -> Result<Trial, EvaluateError> {
        self.device_trials += done.runs;
        let store = |e: crate::store::StoreError| EvaluateError::Store(e.to_string());
        if let Some(a) = &done.accuracy {
            self.store.accuracy(config, a).map_err(store)?;
        }
        if done.timed {
            self.store.timed(config, &done.measured).map_err(store)?;
        }
        if let Some(s) = done.samples {
            self.samples.insert(config.clone(), s);
        }
        let trial = plan.trial_of(&done.measured);
        self.known.insert(config.clone(), done.measured);
        Ok(trial)
    }

    fn job(&self, config: &Config, need: Need) -> Job {
        Job {
            config: config.clone(),
            known: self.known.get(config).cloned(),
            samples: self.samples.get(config).cloned(),
            need,
        }
    }
}

/// What a measurement needs besides a device, shared by the devices' workers.
struct Plan {
    units: Vec<TuneUnit>,
    error: ErrorThreshold,
    policy: TimingPolicy,
    /// The references of every device, by ordinal.
    references: HashMap<u32, References>,
}

impl Plan {
    fn meets(&self, m: &Measured) -> bool {
        m.failed.is_none()
            && match self.error {
                ErrorThreshold::Digits(d) => m.digits >= d,
                ErrorThreshold::SpecTolerance => m.within_tolerance == Some(true),
            }
    }

    /// The speed-up of `m` against the references of the device that timed it: `None` when it is
    /// not timed, when the ideal speed-up is not measurable, or when that device is not one of
    /// this run's (see [`Plan::timed_here`]).
    fn speedup(&self, m: &Measured) -> Option<(f64, f64)> {
        let r = self.references.get(&m.device?)?;
        noise::speedup(&m.time?, &r.t64, &r.t32)
    }

    /// Whether `m`'s time can be judged in this run: it was taken on one of its devices.
    fn timed_here(&self, m: &Measured) -> bool {
        m.device.is_some_and(|d| self.references.contains_key(&d))
    }

    fn trial_of(&self, m: &Measured) -> Trial {
        let s = self.speedup(m);
        Trial {
            digits: m.digits,
            within_tolerance: m.within_tolerance,
            speedup_pct: s.map(|s| s.0),
            noise_pct: s.map(|s| s.1),
            time_ms: m.time.map(|t| t.median_ms),
            failed: m.failed.clone(),
        }
    }

    /// Whether the speed-up of `m` is still inside the noise around `threshold_pct` (or
    /// unknown), so that more timed runs could decide it.
    fn undecided(&self, m: &Measured, threshold_pct: Option<f64>) -> bool {
        if m.time.is_none() || !self.timed_here(m) {
            return true;
        }
        match self.speedup(m) {
            Some((s, n)) => noise::undecided(s, n, threshold_pct),
            // Not measurable against these references: no number of runs decides it.
            None => false,
        }
    }
}

/// One configuration to answer, with what is known of it.
struct Job {
    config: Config,
    known: Option<Measured>,
    samples: Option<(u32, Vec<f64>)>,
    need: Need,
}

/// What a device did for one job.
struct Done {
    /// The accuracy-only measurement, when one ran (it is recorded on its own).
    accuracy: Option<Measured>,
    /// Whether timed runs were added (the final measurement is recorded as timed).
    timed: bool,
    measured: Measured,
    samples: Option<(u32, Vec<f64>)>,
    /// Runs on the device.
    runs: usize,
}

/// Answers `job` on `device`: accuracy first when not known, then, when the need asks for a
/// speed-up and the error threshold is met, timed runs on this device until the decision is
/// outside the noise or the budget is spent. A time taken on another device is dropped and taken
/// again here: a time is never made of two devices' samples (see the module docs).
fn measure(plan: &Plan, device: &mut Device<'_, '_>, job: &Job) -> Result<Done, EvaluateError> {
    let mut done = Done {
        accuracy: None,
        timed: false,
        measured: Measured::failed(String::new()),
        samples: job.samples.clone(),
        runs: 0,
    };
    let mut m = match job.known.clone() {
        Some(m) => m,
        None => {
            let c = configuration(&plan.units, &job.config, &config_key(&job.config));
            done.runs += 1;
            let m = match run(device.runner, &c, TrialTiming::AccuracyOnly)? {
                Ok(o) => {
                    let (digits, within_tolerance) = accuracy(&o);
                    Measured {
                        digits,
                        within_tolerance,
                        time: None,
                        device: None,
                        failed: None,
                    }
                }
                Err(why) => Measured::failed(why),
            };
            done.accuracy = Some(m.clone());
            m
        }
    };
    if let Need::Speed { threshold_pct } = job.need {
        if plan.meets(&m) && plan.undecided(&m, threshold_pct) {
            if m.time.is_some() && m.device != Some(device.ordinal) {
                m.time = None;
                m.device = None;
                done.samples = None;
            }
            let more = done.samples.as_ref().map_or(m.time.is_none(), |(_, s)| {
                (s.len() as u32) < plan.policy.max_repeats
            });
            if more {
                m = time(plan, device, &job.config, m, threshold_pct, &mut done)?;
                done.timed = true;
            }
        }
    }
    done.measured = m;
    Ok(done)
}

/// Times `config` on `device` until the decision against `threshold_pct` is outside the noise
/// or the budget is spent; the timed build's own digits replace the accuracy-only ones (they are
/// the same bits when the switched build is exact, which its tests check).
fn time(
    plan: &Plan,
    device: &mut Device<'_, '_>,
    config: &Config,
    mut m: Measured,
    threshold_pct: Option<f64>,
    done: &mut Done,
) -> Result<Measured, EvaluateError> {
    let c = configuration(&plan.units, config, &config_key(config));
    let samples = &mut done
        .samples
        .get_or_insert_with(|| (device.ordinal, Vec::new()))
        .1;
    loop {
        let have = samples.len() as u32;
        if m.time.is_some()
            && (!plan.undecided(&m, threshold_pct) || have >= plan.policy.max_repeats)
        {
            break;
        }
        let repeats = if have == 0 {
            plan.policy.repeats
        } else {
            have.min(plan.policy.max_repeats - have)
        };
        done.runs += 1;
        let timing = TrialTiming::Timed {
            warmup: plan.policy.warmup,
            repeats: repeats.max(1),
        };
        match run(device.runner, &c, timing)? {
            Ok(o) => {
                let (digits, within) = accuracy(&o);
                m.digits = digits;
                m.within_tolerance = within;
                samples.extend(samples_of(&o));
                m.time = Time::of(samples);
                m.device = Some(device.ordinal);
                if m.time.is_none() {
                    m.failed = Some("timed run gave no sample".into());
                    break;
                }
            }
            Err(why) => {
                m = Measured::failed(why);
                break;
            }
        }
    }
    Ok(m)
}

/// Why the evaluator stopped a search: the device or the store failed.
#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    /// The device is lost or the spec is wrong: nothing more can run.
    #[error("{0}")]
    Fatal(String),
    /// The results store could not be written.
    #[error("{0}")]
    Store(String),
    /// The run was asked to stop (a signal): the trials finished are kept in the store.
    #[error("stopped before the next trial")]
    Stopped,
}

/// The configuration that demotes the units of `config`.
pub fn configuration(units: &[TuneUnit], config: &Config, name: &str) -> Configuration {
    let mut sites: Vec<Request> = Vec::new();
    for &u in config {
        sites.extend(units[u].sites.iter().cloned().map(Request::Site));
    }
    let mut buffers: Vec<String> = config
        .iter()
        .flat_map(|&u| units[u].buffers.iter().cloned())
        .collect();
    buffers.sort();
    buffers.dedup();
    let mut math: Vec<MathCall> = config
        .iter()
        .flat_map(|&u| units[u].math.iter().cloned())
        .collect();
    math.sort();
    math.dedup();
    Configuration::Demote(Demotion {
        name: name.to_string(),
        math: Selection::Only(math),
        instructions: Selection::Only(sites),
        buffers,
    })
}

/// Correct digits as the tuner counts them: −log10 of the largest relative error against the
/// f64 program (+inf when no element differs). Not seed 002's count of shared leading decimal
/// digits (`Comparison::digits`): over many elements that count is set by whichever element
/// straddles a decimal boundary, not by the error — with a million elements and relative errors
/// of 1e-7, about one element differs already in its second digit (0.19999999 against
/// 0.2000001), so every f32 configuration would read "1 digit". A relative error of 10^−D is
/// what "D correct digits" means to a numerical analyst, and it is monotone in the error.
pub fn relative_digits(c: &mantissa_harness::Comparison) -> f64 {
    if c.differing == 0 && c.nonfinite_mismatches == 0 {
        f64::INFINITY
    } else if c.nonfinite_mismatches > 0 || c.max_rel.is_nan() {
        0.0
    } else if c.max_rel == 0.0 {
        f64::INFINITY // only -0 against +0
    } else {
        // `+ 0.0` makes the −0 of a relative error of exactly 1 a +0 ("-0.0 digits").
        (-c.max_rel.log10()).max(0.0) + 0.0
    }
}

/// The worst digits over the outputs ([`relative_digits`]), and whether every tolerance the
/// spec states is met.
fn accuracy(o: &TrialOutcome) -> (f64, Option<bool>) {
    let digits = o
        .outputs
        .iter()
        .map(|r| relative_digits(&r.vs_baseline))
        .fold(f64::INFINITY, f64::min);
    let met: Vec<bool> = o.outputs.iter().filter_map(|r| r.met).collect();
    let within = (!met.is_empty()).then(|| met.iter().all(|&m| m));
    (digits, within)
}

/// Runs `configuration` once, mapping a trial that could not run to its reason (or a fatal error).
fn run(
    runner: &mut dyn Session,
    configuration: &Configuration,
    timing: TrialTiming,
) -> Result<Result<TrialOutcome, String>, EvaluateError> {
    match runner.trial(configuration, timing) {
        Ok(o) => Ok(Ok(o)),
        Err(e) if e.is_fatal() => Err(EvaluateError::Fatal(e.to_string())),
        Err(e @ TrialError::OutOfResources { .. }) => Ok(Err(format!("out of resources: {e}"))),
        Err(e) => Ok(Err(e.to_string())),
    }
}

fn samples_of(o: &TrialOutcome) -> Vec<f64> {
    o.timing
        .as_ref()
        .map_or(Vec::new(), |t| t.samples_ms.clone())
}

/// Times `configuration` with `reps` timed runs (for the references).
pub fn reference_time(
    runner: &mut dyn Session,
    configuration: &Configuration,
    policy: &TimingPolicy,
) -> Result<(Time, f64), EvaluateError> {
    let timing = TrialTiming::Timed {
        warmup: policy.warmup,
        repeats: policy.max_repeats.max(1),
    };
    let o = run(runner, configuration, timing)?
        .map_err(|why| EvaluateError::Fatal(format!("{}: {why}", configuration.name())))?;
    let time = Time::of(&samples_of(&o)).ok_or_else(|| {
        EvaluateError::Fatal(format!("{}: no timed sample", configuration.name()))
    })?;
    Ok((time, accuracy(&o).0))
}

impl<'r, 'g> GpuEvaluator<'r, 'g> {
    /// An evaluator over `units` on `devices` (at least one; the first answers single trials),
    /// with what `store` already holds (a resumed run) counted as known.
    pub fn new(
        devices: Vec<Device<'r, 'g>>,
        units: Vec<TuneUnit>,
        policy: TimingPolicy,
        store: &'r mut TrialStore,
    ) -> Self {
        assert!(!devices.is_empty(), "an evaluator needs a device");
        let known = store.known().clone();
        let references = devices.iter().map(|d| (d.ordinal, d.references)).collect();
        let busy = vec![Duration::ZERO; devices.len()];
        GpuEvaluator {
            devices: devices.into_iter().map(Mutex::new).collect(),
            plan: Plan {
                units,
                error: ErrorThreshold::Digits(0.0),
                policy,
                references,
            },
            memory: Memory {
                known,
                store,
                samples: HashMap::new(),
                device_trials: 0,
            },
            busy,
            batches: 0,
            stop: &NEVER,
        }
    }

    /// This evaluator, refusing every trial once `stop` is set (with [`EvaluateError::Stopped`]):
    /// what a signal asks for between trials.
    pub fn stopping_on(self, stop: &'r AtomicBool) -> Self {
        GpuEvaluator { stop, ..self }
    }

    /// [`EvaluateError::Stopped`] once the stop flag is set.
    fn check_stop(&self) -> Result<(), EvaluateError> {
        match self.stop.load(Ordering::SeqCst) {
            true => Err(EvaluateError::Stopped),
            false => Ok(()),
        }
    }

    /// The error threshold the next trials decide timing by (a search's own).
    pub fn set_error(&mut self, error: ErrorThreshold) {
        self.plan.error = error;
    }

    /// What is known of `config` (measured in this run or a resumed one).
    pub fn known(&self, config: &Config) -> Option<&Measured> {
        self.memory.known.get(config)
    }

    /// Runs on the devices so far (cached answers are not counted).
    pub fn device_trials(&self) -> usize {
        self.memory.device_trials
    }
}

/// A device's lock: a worker that panicked while holding it left the runner as it was between
/// runs (a panic inside a run is the pool's error, which ends the search), so it is taken back.
fn lock<'a, 'r, 'g>(device: &'a Mutex<Device<'r, 'g>>) -> MutexGuard<'a, Device<'r, 'g>> {
    device.lock().unwrap_or_else(|p| p.into_inner())
}

impl Evaluate for GpuEvaluator<'_, '_> {
    type Error = EvaluateError;

    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, EvaluateError> {
        self.check_stop()?;
        let job = self.memory.job(config, need);
        // A configuration whose time is being refined goes back to the device that took it.
        let at = job
            .samples
            .as_ref()
            .and_then(|(o, _)| self.devices.iter().position(|d| lock(d).ordinal == *o))
            .unwrap_or(0);
        let done = measure(&self.plan, &mut lock(&self.devices[at]), &job)?;
        self.memory.keep(&self.plan, config, done)
    }

    fn width(&self) -> usize {
        self.devices.len()
    }

    /// The configurations go to the devices through [`run_pool`]: a free device takes the next,
    /// each device runs one at a time (a timed run never shares its device), and what they did is
    /// kept and recorded in the order given, on this thread.
    fn trials(&mut self, configs: &[Config], need: Need) -> Result<Vec<Trial>, EvaluateError> {
        self.check_stop()?;
        if self.devices.len() < 2 || configs.len() < 2 {
            return configs.iter().map(|c| self.trial(c, need)).collect();
        }
        let jobs: Vec<Job> = configs.iter().map(|c| self.memory.job(c, need)).collect();
        let (plan, memory) = (&self.plan, &mut self.memory);
        let mut trials = Vec::with_capacity(configs.len());
        let summary = run_pool(
            self.devices.as_slice(),
            &jobs,
            &AtomicBool::new(false),
            |_, device| lock(device),
            |device, _, job| measure(plan, device, job),
            |_, job, done| {
                trials.push(memory.keep(plan, &job.config, done?)?);
                Ok::<(), EvaluateError>(())
            },
        )
        .map_err(|e| match e {
            PoolError::Emit(e) => e,
            other => EvaluateError::Fatal(other.to_string()),
        })?;
        self.batches += 1;
        for (b, w) in self.busy.iter_mut().zip(&summary.workers) {
            *b += w.busy;
        }
        Ok(trials)
    }
}

#[cfg(test)]
mod tests {
    use super::relative_digits;
    use mantissa_gpu::DType;
    use mantissa_harness::compare::compare;

    #[test]
    fn relative_digits_are_the_largest_relative_error_s_and_never_negative_zero() {
        let exact = compare(DType::F64, &[1.0, 2.0], &[1.0, 2.0]);
        assert_eq!(relative_digits(&exact), f64::INFINITY);
        let three = compare(DType::F64, &[1.001, 2.0], &[1.0, 2.0]);
        assert!((relative_digits(&three) - 3.0).abs() < 1e-6);
        // A relative error of exactly 1 (0 against 1) is 0 digits, printed "0.0", not "-0.0".
        let none = compare(DType::F64, &[0.0], &[1.0]);
        let d = relative_digits(&none);
        assert_eq!(d, 0.0);
        assert!(d.is_sign_positive(), "{d:?}");
        assert_eq!(format!("{d:.1}"), "0.0");
        let nan = compare(DType::F64, &[f64::NAN], &[1.0]);
        assert_eq!(relative_digits(&nan), 0.0);
    }
}
