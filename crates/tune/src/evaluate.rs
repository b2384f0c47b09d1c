//! The question every search asks: run a configuration, how accurate and how fast is it.

use crate::unit::Config;
use serde::{Deserialize, Serialize};

/// What the search needs from a trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Need {
    /// Accuracy only (no timing).
    Accuracy,
    /// Accuracy, then — when the error threshold is met — the speed-up, with enough repetitions
    /// that the decision `speedup ≥ threshold_pct` is outside the timing noise where the
    /// evaluator's repetition budget allows (`None`: any speed-up, as mode 1 asks).
    Speed {
        /// The performance threshold the speed-up is compared with, in % of the ideal.
        threshold_pct: Option<f64>,
    },
}

/// How accurate a configuration must be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorThreshold {
    /// At least this many correct decimal digits in every output, against the f64 program
    /// (the harness's `Comparison::digits`, the minimum over outputs).
    Digits(f64),
    /// Every output within the spec's own tolerance (rel/abs, as the spec defines it).
    SpecTolerance,
}

/// The two thresholds of seed 002 §4.5.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// The error threshold.
    pub error: ErrorThreshold,
    /// The performance threshold in % of the ideal speed-up (seed 002 Eq. 3); `None` for mode 1.
    pub speedup_pct: Option<f64>,
}

/// What one trial run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Correct digits of the worst output against the f64 program (as written).
    pub digits: f64,
    /// Whether every output met the spec's tolerance (`None`: the spec states none).
    pub within_tolerance: Option<bool>,
    /// Speed-up in % of the ideal, seed 002 Eq. 3 with times: (t64 − t)/(t64 − t32) × 100;
    /// `None` when not timed.
    pub speedup_pct: Option<f64>,
    /// The timing noise of `speedup_pct`, in the same % units (half the spread of the
    /// configuration's and the f64 program's repetitions, carried through Eq. 3); `None` when
    /// not timed.
    pub noise_pct: Option<f64>,
    /// Median time of the configuration, ms; `None` when not timed.
    pub time_ms: Option<f64>,
    /// The trial could not run (refused, build failure, fault): why. A failed trial meets no
    /// threshold.
    pub failed: Option<String>,
}

impl Trial {
    /// Whether the error threshold is met.
    pub fn meets_error(&self, t: &Thresholds) -> bool {
        if self.failed.is_some() {
            return false;
        }
        match t.error {
            ErrorThreshold::Digits(d) => self.digits >= d,
            ErrorThreshold::SpecTolerance => self.within_tolerance == Some(true),
        }
    }

    /// Whether the performance threshold is met: the measured speed-up reaches it *and* lies
    /// outside the timing noise (a speed-up inside the noise is not a speed-up). Without a
    /// performance threshold (mode 1), any speed-up outside the noise.
    pub fn meets_speed(&self, t: &Thresholds) -> bool {
        if self.failed.is_some() {
            return false;
        }
        match (self.speedup_pct, self.noise_pct) {
            (Some(s), Some(n)) => s > n && t.speedup_pct.is_none_or(|p| s >= p),
            _ => false,
        }
    }
}

/// Runs configurations. Implementations memoise nothing the search relies on: a search asks
/// each distinct configuration once (by `trial`, or ahead of time by `trials`) and counts each
/// one it uses as one trial run.
pub trait Evaluate {
    /// Why a trial could not be asked at all (the device is lost, the store cannot be written):
    /// stops the search. A configuration that fails to build or faults is a [`Trial`] with
    /// `failed` set, not an error.
    type Error;

    /// Runs `config` (units demoted, everything else as written) and measures what `need` asks.
    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, Self::Error>;

    /// How many configurations it runs at once (its devices). A search with more than one hands
    /// it, through [`Evaluate::trials`], the configurations it may ask next, so that devices that
    /// would otherwise wait run them ahead.
    fn width(&self) -> usize {
        1
    }

    /// Runs `configs` (distinct, none asked before) and answers in their order, with what
    /// [`Evaluate::trial`] would have answered for each, one after another: an evaluator with
    /// several devices runs them at the same time, each on one device alone.
    fn trials(&mut self, configs: &[Config], need: Need) -> Result<Vec<Trial>, Self::Error> {
        configs.iter().map(|c| self.trial(c, need)).collect()
    }
}
