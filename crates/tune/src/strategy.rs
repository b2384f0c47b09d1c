//! Search strategies over units: they call [`crate::Evaluate::trial`] and know nothing else.
//!
//! - [`modes`]: GPUMixer's modes 1–3 (seed 002 §4.5), one candidate configuration per FISet in
//!   the order of its error (modes 1 and 2) or of its arithmetic-to-cast ratio (mode 3), then the
//!   unions of the first k of those accurate enough alone.
//! - [`delta`]: the Precimonious baseline (seed 002 §5.1), Zeller's ddmin to a 1-minimal set of
//!   units kept in f64.
//! - [`exhaustive`](mod@exhaustive): every non-empty subset, for small cases and benchmark references.
//!
//! Every strategy returns a [`Search`]: what it settled on, how many trials it ran and every trial
//! in order. A configuration is run at most once per search (results are remembered, and a
//! remembered result is not a trial); an evaluator error stops the search and is returned.

pub mod delta;
pub mod exhaustive;
pub mod modes;

#[cfg(test)]
mod sim;
#[cfg(test)]
mod strategy_tests;

pub use delta::delta_debugging;
pub use exhaustive::{exhaustive, EXHAUSTIVE_MAX_UNITS};
pub use modes::{candidates, mode, Mode};

use crate::evaluate::{Evaluate, Need, Thresholds, Trial};
use crate::unit::Config;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The strategy name of the delta-debugging baseline, as [`Search::strategy`] and tables write it.
pub const DELTA_DEBUGGING: &str = "delta debugging";
/// The strategy name of the exhaustive search.
pub const EXHAUSTIVE: &str = "exhaustive";

/// What a strategy found, and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// Which strategy: `mode 1`, `mode 2`, `mode 3`, [`DELTA_DEBUGGING`] or [`EXHAUSTIVE`].
    pub strategy: String,
    /// The thresholds it searched under (mode 1 records no performance threshold: it has none).
    pub thresholds: Thresholds,
    /// The configuration it settled on; `None` when no configuration met its stop rule.
    pub chosen: Option<Config>,
    /// The trial of `chosen`.
    pub chosen_trial: Option<Trial>,
    /// Distinct configurations run (= calls to [`Evaluate::trial`]).
    pub trials: usize,
    /// Every trial, in the order run.
    pub log: Vec<(Config, Trial)>,
    /// The 1-based number of the first trial that met both thresholds (for mode 1: the error
    /// threshold and a speed-up outside the noise), whether or not the strategy chose it.
    pub first_met_at: Option<usize>,
    /// Configurations run ahead on devices that were free (an evaluator of several devices)
    /// that the search then did not need: the price of running ahead, not in `trials` or `log`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unused_ahead: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Why a search stopped without a result.
#[derive(Debug, thiserror::Error)]
pub enum SearchError<E> {
    /// The evaluator could not ask a trial at all (see [`Evaluate::Error`]).
    #[error("a trial could not be run: {0}")]
    Evaluate(E),
    /// The exhaustive search was given more units than it enumerates.
    #[error(
        "the exhaustive search takes at most {max} units (2^{max} - 1 trials), not {units}; \
         use a mode or delta debugging"
    )]
    TooManyUnits {
        /// Units given.
        units: usize,
        /// The most it takes ([`EXHAUSTIVE_MAX_UNITS`]).
        max: usize,
    },
}

/// Whether a trial passes both thresholds: the stop rule of modes 2 and 3, the test of delta
/// debugging, the filter of the exhaustive search. A failed trial never passes.
pub fn passes(trial: &Trial, t: &Thresholds) -> bool {
    trial.meets_error(t) && trial.meets_speed(t)
}

/// The evaluator of one search, with what it has run so far: remembers every configuration's
/// trial, logs them in order, reports each to the progress callback and notes the first that
/// passed.
struct Runner<'a, V: Evaluate> {
    eval: &'a mut V,
    need: Need,
    thresholds: Thresholds,
    progress: &'a mut dyn FnMut(&Config, &Trial),
    /// Index into `log` of each configuration run.
    seen: BTreeMap<Config, usize>,
    log: Vec<(Config, Trial)>,
    first_met_at: Option<usize>,
    /// Trials run ahead ([`Runner::ahead`]) that the search has not asked yet.
    ahead: BTreeMap<Config, Trial>,
}

impl<'a, V: Evaluate> Runner<'a, V> {
    fn new(
        eval: &'a mut V,
        thresholds: Thresholds,
        progress: &'a mut dyn FnMut(&Config, &Trial),
    ) -> Self {
        Runner {
            eval,
            // Every strategy needs the speed-up of a configuration that is accurate enough; the
            // evaluator skips timing the others, so asking for speed costs nothing on a failure.
            need: Need::Speed {
                threshold_pct: thresholds.speedup_pct,
            },
            thresholds,
            progress,
            seen: BTreeMap::new(),
            log: Vec::new(),
            first_met_at: None,
            ahead: BTreeMap::new(),
        }
    }

    /// Runs ahead, when the evaluator has several devices, the configurations the search may ask
    /// next, `upcoming` in the order it would ask them: if the first of them not yet run is not
    /// already waiting, the first [`Evaluate::width`] not yet run go to the devices together.
    /// What the search then asks is answered from them in its own order, so its trials, log and
    /// choice are those of the search run one trial at a time; the ones it never asks are
    /// counted in [`Search::unused_ahead`].
    fn ahead(
        &mut self,
        upcoming: impl IntoIterator<Item = Config>,
    ) -> Result<(), SearchError<V::Error>> {
        let width = self.eval.width();
        if width < 2 {
            return Ok(());
        }
        let mut pending = upcoming.into_iter().filter(|c| !self.seen.contains_key(c));
        let first = match pending.next() {
            Some(c) if !self.ahead.contains_key(&c) => c,
            _ => return Ok(()),
        };
        let mut batch = vec![first];
        for c in pending {
            if batch.len() == width {
                break;
            }
            if !self.ahead.contains_key(&c) && !batch.contains(&c) {
                batch.push(c);
            }
        }
        if batch.len() < 2 {
            return Ok(()); // nothing to run beside it: `trial` runs it when asked
        }
        let trials = self
            .eval
            .trials(&batch, self.need)
            .map_err(SearchError::Evaluate)?;
        self.ahead.extend(batch.into_iter().zip(trials));
        Ok(())
    }

    /// The trial of `config`: remembered, or run now (one trial).
    fn trial(&mut self, config: &Config) -> Result<&Trial, SearchError<V::Error>> {
        let index = match self.seen.get(config) {
            Some(&i) => i,
            None => {
                let trial = match self.ahead.remove(config) {
                    Some(t) => t,
                    None => self
                        .eval
                        .trial(config, self.need)
                        .map_err(SearchError::Evaluate)?,
                };
                (self.progress)(config, &trial);
                if self.first_met_at.is_none() && passes(&trial, &self.thresholds) {
                    self.first_met_at = Some(self.log.len() + 1);
                }
                self.log.push((config.clone(), trial));
                self.seen.insert(config.clone(), self.log.len() - 1);
                self.log.len() - 1
            }
        };
        Ok(&self.log[index].1)
    }

    /// Whether `config` passes both thresholds (running it if it has not run).
    fn passes(&mut self, config: &Config) -> Result<bool, SearchError<V::Error>> {
        let thresholds = self.thresholds;
        Ok(passes(self.trial(config)?, &thresholds))
    }

    fn finish(self, strategy: &str, chosen: Option<Config>) -> Search {
        let chosen_trial = chosen
            .as_ref()
            .and_then(|c| self.seen.get(c))
            .map(|&i| self.log[i].1.clone());
        Search {
            strategy: strategy.to_string(),
            thresholds: self.thresholds,
            chosen,
            chosen_trial,
            trials: self.log.len(),
            log: self.log,
            first_met_at: self.first_met_at,
            unused_ahead: self.ahead.len(),
        }
    }
}
