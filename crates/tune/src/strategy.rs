//! Search strategies over units: they call [`crate::Evaluate::trial`] and know nothing else.
//!
//! - [`modes`]: GPUMixer's modes 1–3 (seed 002 §4.5), one candidate configuration per FISet in
//!   the order of its error (modes 1 and 2) or of its arithmetic-to-cast ratio (mode 3), then the
//!   unions of the first k of those accurate enough alone.
//! - [`delta`]: the Precimonious baseline (seed 002 §5.1), Zeller's ddmin to a 1-minimal set of
//!   units kept in f64.
//! - [`exhaustive`](mod@exhaustive): every non-empty subset, for small cases and benchmark references.
//!
//! Each is one file implementing [`Strategy`] and one entry of [`STRATEGIES`]: the plan, the
//! shards, the tables, the flow and the CLI know the strategies only through that list, so that
//! a new one is a file and a line, not a number matched in seven places.
//!
//! Every strategy returns a [`Search`]: what it settled on, how many trials it ran and every trial
//! in order. A configuration is run at most once per search (results are remembered, and a
//! remembered result is not a trial); an evaluator error stops the search and is returned.

pub mod delta;
pub mod exhaustive;
pub mod modes;

#[cfg(test)]
mod registry_tests;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod strategy_tests;

pub use delta::{delta_debugging, DeltaDebugging, DELTA_DEBUGGING};
pub use exhaustive::{exhaustive, Exhaustive, EXHAUSTIVE, EXHAUSTIVE_MAX_UNITS};
pub use modes::{candidates, mode, Mode};

use crate::evaluate::{Evaluate, Need, Thresholds, Trial};
use crate::unit::{Config, TuneUnit};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Every strategy a run can ask for, in the order tables show them (seed 002's column order).
pub static STRATEGIES: &[&dyn Strategy] = &[
    &Mode::ErrorOnly,
    &Mode::ErrorFirst,
    &Mode::SpeedFirst,
    &DeltaDebugging,
    &Exhaustive,
];

/// A search strategy, as the rest of the crate sees it: what a plan, a table or a run needs to
/// know of it, and the search itself. Implemented once per file of this directory and listed in
/// [`STRATEGIES`].
pub trait Strategy: Sync {
    /// Its name in [`Search::strategy`], labels, tables and configuration file names (`mode 1`,
    /// `delta debugging`): the documents and stores of earlier runs hold it, so it never changes.
    fn name(&self) -> &'static str;

    /// The unit list its configurations index.
    fn over(&self) -> Over;

    /// How the run's performance thresholds multiply its searches.
    fn speedups(&self) -> Speedups;

    /// Whether it can only stop on a measured speed-up: when the all-f32 program is not
    /// measurably faster than the f64 one, no speed-up in % of the ideal exists and the run
    /// records it as having run no trial rather than spend trials that cannot succeed.
    fn needs_ideal(&self) -> bool;

    /// Which option of the request asks for it.
    fn selector(&self) -> Selector;

    /// Where its searches go among one error threshold's, ascending; strategies of one place
    /// in the order `--mode` lists them (then in [`STRATEGIES`]' order). The plan's order is
    /// its division into shards, so a strategy's place never changes.
    fn place(&self) -> u32;

    /// The most units it takes (`None`: any number). Beyond it the search refuses
    /// ([`SearchError::TooManyUnits`]); the run notes that and leaves the search out, and a
    /// merge does not miss it.
    fn max_units(&self) -> Option<usize> {
        None
    }

    /// Searches `units` under `thresholds`, asking `eval` for trials and showing each to
    /// `progress` as it completes. The evaluator's own errors reach it as [`Aborted`] (a trait
    /// object cannot be generic over them); [`search`](Strategy#method.search) gives the caller
    /// the real one.
    fn run(
        &self,
        units: &[TuneUnit],
        thresholds: &Thresholds,
        eval: &mut dyn Evaluate<Error = Aborted>,
        progress: &mut dyn FnMut(&Config, &Trial),
    ) -> Result<Search, SearchError<Aborted>>;
}

impl dyn Strategy + '_ {
    /// [`Strategy::run`] with any evaluator, its error returned as the evaluator raised it.
    pub fn search<V: Evaluate>(
        &self,
        units: &[TuneUnit],
        thresholds: &Thresholds,
        eval: &mut V,
        progress: &mut dyn FnMut(&Config, &Trial),
    ) -> Result<Search, SearchError<V::Error>> {
        let mut kept = KeepError {
            inner: eval,
            error: None,
        };
        match self.run(units, thresholds, &mut kept, progress) {
            Ok(search) => Ok(search),
            Err(SearchError::Evaluate(Aborted)) => Err(SearchError::Evaluate(
                kept.error
                    .expect("a strategy reported an evaluator error the evaluator did not raise"),
            )),
            Err(SearchError::TooManyUnits { units, max }) => {
                Err(SearchError::TooManyUnits { units, max })
            }
        }
    }
}

/// Plans and their tests print and compare strategies by name: two strategies never share one.
impl fmt::Debug for dyn Strategy + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for dyn Strategy + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// The strategy named `name` ([`Strategy::name`]), as a document or a store names it.
pub fn by_name(name: &str) -> Option<&'static dyn Strategy> {
    STRATEGIES.iter().copied().find(|s| s.name() == name)
}

/// The numbers `--mode` takes: those of the strategies it selects, ascending.
pub fn mode_numbers() -> Vec<u8> {
    let mut numbers: Vec<u8> = STRATEGIES
        .iter()
        .filter_map(|s| match s.selector() {
            Selector::Mode(n) => Some(n),
            _ => None,
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The evaluator's error as [`Strategy::run`] sees it: only that there was one. The evaluator
/// behind it keeps the error itself, and [`search`](Strategy#method.search) returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aborted;

/// An evaluator that keeps its inner evaluator's error and reports [`Aborted`] in its place.
struct KeepError<'a, V: Evaluate> {
    inner: &'a mut V,
    error: Option<V::Error>,
}

impl<V: Evaluate> KeepError<'_, V> {
    fn keep<T>(&mut self, result: Result<T, V::Error>) -> Result<T, Aborted> {
        result.map_err(|e| {
            self.error = Some(e);
            Aborted
        })
    }
}

impl<V: Evaluate> Evaluate for KeepError<'_, V> {
    type Error = Aborted;

    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, Aborted> {
        let result = self.inner.trial(config, need);
        self.keep(result)
    }

    fn width(&self) -> usize {
        self.inner.width()
    }

    fn trials(&mut self, configs: &[Config], need: Need) -> Result<Vec<Trial>, Aborted> {
        let result = self.inner.trials(configs, need);
        self.keep(result)
    }
}

/// The unit list a strategy searches. The run document names it (`"units": "fisets"`), so its
/// written names never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Over {
    /// The FISets, then the math calls and buffers (modes 1–3, the exhaustive search).
    Fisets,
    /// The variables, then the same math calls and buffers (delta debugging).
    Variables,
}

impl Over {
    /// `fisets` or `variables`, as the run document writes it.
    pub fn name(self) -> &'static str {
        match self {
            Over::Fisets => "fisets",
            Over::Variables => "variables",
        }
    }
}

impl fmt::Display for Over {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Over {
    type Err = String;

    /// The inverse of [`Over::name`]; anything else is refused in words a reader of the
    /// document can act on.
    fn from_str(s: &str) -> Result<Over, String> {
        [Over::Fisets, Over::Variables]
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| format!("units {s:?}: expected \"fisets\" or \"variables\""))
    }
}

impl Serialize for Over {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Over {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Over, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// How a strategy takes the run's performance thresholds (`--speedup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speedups {
    /// It has none (mode 1: "the user provides only an error threshold"): one search per error
    /// threshold, whatever was given.
    Ignored,
    /// One search per performance threshold, and none when none is given.
    Each,
    /// One search per performance threshold, or one without a threshold when none is given
    /// (then any speed-up outside the noise passes).
    EachOrNone,
}

impl Speedups {
    /// The performance thresholds of its searches, in order, given the run's.
    pub fn of(self, given: &[f64]) -> Vec<Option<f64>> {
        match self {
            Speedups::Ignored => vec![None],
            Speedups::EachOrNone if given.is_empty() => vec![None],
            Speedups::Each | Speedups::EachOrNone => given.iter().copied().map(Some).collect(),
        }
    }
}

/// The option of `mantissa tune` that asks for a strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// Its number in `--mode LIST`: one run of it for each time the list names it.
    Mode(u8),
    /// `--baseline`.
    Baseline,
    /// `--exhaustive`.
    Exhaustive,
}

/// What a request asks for, in the terms of `mantissa tune`'s options (and of the store
/// manifest's settings, which record them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Selection<'a> {
    /// `--mode LIST`, in the order given.
    pub modes: &'a [u8],
    /// `--baseline`.
    pub baseline: bool,
    /// `--exhaustive`.
    pub exhaustive: bool,
}

impl Selection<'_> {
    /// Where the request asks for a strategy that `selector` selects: the positions of its
    /// number in `--mode`'s list (as often as it is given), `[0]` for a flag that is set, none
    /// otherwise. The positions order strategies of one [`Strategy::place`].
    pub fn picks(&self, selector: Selector) -> Vec<usize> {
        let flag = |set: bool| if set { vec![0] } else { Vec::new() };
        match selector {
            Selector::Mode(n) => (0..self.modes.len())
                .filter(|&i| self.modes[i] == n)
                .collect(),
            Selector::Baseline => flag(self.baseline),
            Selector::Exhaustive => flag(self.exhaustive),
        }
    }
}

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
struct Runner<'a, V: Evaluate + ?Sized> {
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

impl<'a, V: Evaluate + ?Sized> Runner<'a, V> {
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
