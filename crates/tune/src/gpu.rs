//! The evaluator that answers [`Evaluate::trial`] on the GPU, through the harness's one
//! [`TrialRunner`]: accuracy first (an accuracy-only trial, on the switched build when the
//! runner has one: no JIT), then — only when the search needs a speed-up and the error threshold
//! is met — timed repetitions of the configuration's own build, as many as it takes for the
//! decision the search makes on the speed-up to lie outside the timing noise (up to a budget).
//!
//! Everything measured is kept per configuration for the rest of the run (a configuration met
//! again under another threshold is not run again) and appended to the results store as it is
//! measured, so that an interrupted run resumed loses no finished trial ([`crate::store`]).

use crate::evaluate::{ErrorThreshold, Evaluate, Need, Trial};
use crate::noise::{self, Time};
use crate::store::{Measured, TrialStore};
use crate::unit::{Config, Unit};
use mantissa_harness::config::{Demotion, MathCall, Selection};
use mantissa_harness::{Configuration, TrialError, TrialOutcome, TrialRunner, TrialTiming};
use mantissa_ptx::demote::Request;
use std::collections::HashMap;

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
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct References {
    /// The program as written.
    pub t64: Time,
    /// Every f64 instruction and math call demoted ([`Demotion::all`]).
    pub t32: Time,
    /// Digits of the all-f32 program against the f64 one.
    pub digits32: f64,
}

/// [`Evaluate`] on the GPU (see the module docs).
pub struct GpuEvaluator<'r, 'g> {
    runner: &'r mut TrialRunner<'g>,
    units: Vec<Unit>,
    error: ErrorThreshold,
    policy: TimingPolicy,
    references: References,
    known: HashMap<Config, Measured>,
    store: &'r mut TrialStore,
    /// Timed samples of this process per configuration (merged across batches).
    samples: HashMap<Config, Vec<f64>>,
    /// Trials that ran on the device (cached answers are not counted).
    pub device_trials: usize,
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
}

/// The configuration that demotes the units of `config`.
pub fn configuration(units: &[Unit], config: &Config, name: &str) -> Configuration {
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
        (-c.max_rel.log10()).max(0.0)
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
    runner: &mut TrialRunner<'_>,
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
    runner: &mut TrialRunner<'_>,
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
    /// An evaluator over `units`, measuring speed-ups against `references`, with what `store`
    /// already holds (a resumed run) counted as known.
    pub fn new(
        runner: &'r mut TrialRunner<'g>,
        units: Vec<Unit>,
        references: References,
        policy: TimingPolicy,
        store: &'r mut TrialStore,
    ) -> Self {
        let known = store.known().clone();
        GpuEvaluator {
            runner,
            units,
            error: ErrorThreshold::Digits(0.0),
            policy,
            references,
            known,
            store,
            samples: HashMap::new(),
            device_trials: 0,
        }
    }

    /// The error threshold the next trials decide timing by (a search's own).
    pub fn set_error(&mut self, error: ErrorThreshold) {
        self.error = error;
    }

    /// What is known of `config` (measured in this run or a resumed one).
    pub fn known(&self, config: &Config) -> Option<&Measured> {
        self.known.get(config)
    }

    fn meets(&self, m: &Measured) -> bool {
        m.failed.is_none()
            && match self.error {
                ErrorThreshold::Digits(d) => m.digits >= d,
                ErrorThreshold::SpecTolerance => m.within_tolerance == Some(true),
            }
    }

    fn trial_of(&self, m: &Measured) -> Trial {
        let s = m
            .time
            .and_then(|t| noise::speedup(&t, &self.references.t64, &self.references.t32));
        Trial {
            digits: m.digits,
            within_tolerance: m.within_tolerance,
            speedup_pct: s.map(|s| s.0),
            noise_pct: s.map(|s| s.1),
            time_ms: m.time.map(|t| t.median_ms),
            failed: m.failed.clone(),
        }
    }

    fn measure_accuracy(&mut self, config: &Config) -> Result<Measured, EvaluateError> {
        let c = configuration(&self.units, config, &crate::store::config_key(config));
        self.device_trials += 1;
        let m = match run(self.runner, &c, TrialTiming::AccuracyOnly)? {
            Ok(o) => {
                let (digits, within_tolerance) = accuracy(&o);
                Measured {
                    digits,
                    within_tolerance,
                    time: None,
                    failed: None,
                }
            }
            Err(why) => Measured::failed(why),
        };
        self.store
            .accuracy(config, &m)
            .map_err(|e| EvaluateError::Store(e.to_string()))?;
        Ok(m)
    }

    /// Times `config` until the decision against `threshold_pct` is outside the noise or the
    /// budget is spent; the timed build's own digits replace the accuracy-only ones (they are
    /// the same bits when the switched build is exact, which its tests check).
    fn measure_time(
        &mut self,
        config: &Config,
        mut m: Measured,
        threshold_pct: Option<f64>,
    ) -> Result<Measured, EvaluateError> {
        let c = configuration(&self.units, config, &crate::store::config_key(config));
        loop {
            let have = self.samples.get(config).map_or(0, Vec::len) as u32;
            if let Some(t) = m.time {
                let decided = match noise::speedup(&t, &self.references.t64, &self.references.t32) {
                    Some((s, n)) => !noise::undecided(s, n, threshold_pct),
                    None => true,
                };
                if decided || have >= self.policy.max_repeats {
                    break;
                }
            }
            let repeats = if have == 0 {
                self.policy.repeats
            } else {
                have.min(self.policy.max_repeats - have)
            };
            self.device_trials += 1;
            let timing = TrialTiming::Timed {
                warmup: self.policy.warmup,
                repeats: repeats.max(1),
            };
            match run(self.runner, &c, timing)? {
                Ok(o) => {
                    let (digits, within) = accuracy(&o);
                    m.digits = digits;
                    m.within_tolerance = within;
                    let all = self.samples.entry(config.clone()).or_default();
                    all.extend(samples_of(&o));
                    m.time = Time::of(all);
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
        self.store
            .timed(config, &m)
            .map_err(|e| EvaluateError::Store(e.to_string()))?;
        Ok(m)
    }
}

impl Evaluate for GpuEvaluator<'_, '_> {
    type Error = EvaluateError;

    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, EvaluateError> {
        let mut m = match self.known.get(config) {
            Some(m) => m.clone(),
            None => self.measure_accuracy(config)?,
        };
        if let Need::Speed { threshold_pct } = need {
            if self.meets(&m) {
                let undecided = match m.time {
                    None => true,
                    Some(t) => {
                        match noise::speedup(&t, &self.references.t64, &self.references.t32) {
                            Some((s, n)) => noise::undecided(s, n, threshold_pct),
                            None => false,
                        }
                    }
                };
                let more = self.samples.get(config).map_or(m.time.is_none(), |s| {
                    (s.len() as u32) < self.policy.max_repeats
                });
                if undecided && more {
                    m = self.measure_time(config, m, threshold_pct)?;
                }
            }
        }
        self.known.insert(config.clone(), m.clone());
        Ok(self.trial_of(&m))
    }
}
