//! GPUMixer's modes of operation (seed 002 §4.5): trial runs of FISet configurations in the
//! order the shadow analysis (modes 1, 2) or the static ratio r_ac (mode 3) suggests.
//!
//! The seed runs one FISet per configuration and, "if FISets do not overlap, multiple
//! configurations combining these FISets"; it does not say which combinations. Here the
//! candidates are each unit alone in the mode's order, then the unions of the first k units for
//! k = 2..n: the singles find a FISet that is enough on its own at one trial each, the unions
//! then add units in the same order of promise until everything is demoted. That is at most
//! 2n − 1 trials, linear like the seed's search (its trial counts in Table 4 stay under φ).

use super::{passes, Aborted, Over, Runner, Search, SearchError, Selector, Speedups, Strategy};
use crate::evaluate::{Evaluate, Thresholds, Trial};
use crate::unit::{Config, TuneUnit};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A mode of operation (seed 002 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Mode 1: only the error matters (any speed-up will do); FISets in increasing error; stops
    /// at the first configuration meeting the error threshold.
    ErrorOnly,
    /// Mode 2: error first; FISets in increasing error; stops at the first configuration meeting
    /// both thresholds.
    ErrorFirst,
    /// Mode 3: speed first; FISets in decreasing r_ac; stops at the first configuration meeting
    /// both thresholds.
    SpeedFirst,
}

impl Mode {
    /// Every mode, in the seed's numbering.
    pub const ALL: [Mode; 3] = [Mode::ErrorOnly, Mode::ErrorFirst, Mode::SpeedFirst];

    /// The seed's number of the mode (1, 2 or 3).
    pub fn number(self) -> u8 {
        match self {
            Mode::ErrorOnly => 1,
            Mode::ErrorFirst => 2,
            Mode::SpeedFirst => 3,
        }
    }

    /// The thresholds the mode searches under: mode 1 has no performance threshold (the seed:
    /// "the user provides only an error threshold"), so any threshold given is dropped.
    pub fn thresholds(self, t: &Thresholds) -> Thresholds {
        match self {
            Mode::ErrorOnly => Thresholds {
                error: t.error,
                speedup_pct: None,
            },
            Mode::ErrorFirst | Mode::SpeedFirst => *t,
        }
    }

    /// Whether the search stops at this trial.
    fn stops_at(self, trial: &Trial, t: &Thresholds) -> bool {
        match self {
            Mode::ErrorOnly => trial.meets_error(t),
            Mode::ErrorFirst | Mode::SpeedFirst => passes(trial, t),
        }
    }
}

/// The modes are one strategy each, selected by their number in `--mode`, all in the plan's
/// first place.
impl Strategy for Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::ErrorOnly => "mode 1",
            Mode::ErrorFirst => "mode 2",
            Mode::SpeedFirst => "mode 3",
        }
    }

    fn over(&self) -> Over {
        Over::Fisets
    }

    fn speedups(&self) -> Speedups {
        match self {
            Mode::ErrorOnly => Speedups::Ignored,
            Mode::ErrorFirst | Mode::SpeedFirst => Speedups::Each,
        }
    }

    /// Mode 1 stops on the error threshold alone; modes 2 and 3 on a speed-up too.
    fn needs_ideal(&self) -> bool {
        *self != Mode::ErrorOnly
    }

    fn selector(&self) -> Selector {
        Selector::Mode(self.number())
    }

    fn place(&self) -> u32 {
        0
    }

    fn run(
        &self,
        units: &[TuneUnit],
        thresholds: &Thresholds,
        eval: &mut dyn Evaluate<Error = Aborted>,
        progress: &mut dyn FnMut(&Config, &Trial),
    ) -> Result<Search, SearchError<Aborted>> {
        mode(*self, units, thresholds, eval, progress)
    }
}

/// Ascending by a key that some units lack: the units with the key first, in its order, the others
/// last; ties (and the units without) by index, so the order is stable and reproducible.
fn by_key(a: (usize, Option<f64>), b: (usize, Option<f64>)) -> Ordering {
    match (a.1, b.1) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
    .then(a.0.cmp(&b.0))
}

/// The unit indices in the order the mode visits them: modes 1 and 2 by increasing `error`,
/// mode 3 by decreasing `r_ac`; units without the key last; ties by index.
pub fn order(mode: Mode, units: &[TuneUnit]) -> Vec<usize> {
    let mut keyed: Vec<(usize, Option<f64>)> = units
        .iter()
        .enumerate()
        .map(|(i, u)| match mode {
            Mode::ErrorOnly | Mode::ErrorFirst => (i, u.error),
            // Negated so that one ascending sort serves both: the largest r_ac comes first.
            Mode::SpeedFirst => (i, u.r_ac.map(|r| -r)),
        })
        .collect();
    keyed.sort_by(|&a, &b| by_key(a, b));
    keyed.into_iter().map(|(i, _)| i).collect()
}

/// The candidate configurations of a mode when every unit alone meets the error threshold, in
/// the order they are tried: each unit alone in the mode's [`order`], then the unions of the
/// first k units for k = 2..n. [`mode`] leaves out of the unions every unit that missed the
/// error threshold alone (see there).
pub fn candidates(mode: Mode, units: &[TuneUnit]) -> Vec<Config> {
    let order = order(mode, units);
    let singles = order.iter().map(|&i| Config::from([i]));
    let unions = (2..=order.len()).map(|k| order[..k].iter().copied().collect());
    singles.chain(unions).collect()
}

/// Runs a mode: each unit alone in the mode's [`order`], then the unions of the first k of the
/// units that met the error threshold alone (k = 2..), until the mode's stop rule holds (mode 1:
/// the error threshold, even when the speed-up is small or negative; modes 2 and 3: both
/// thresholds). A unit too inaccurate alone is left out of the unions: with it, every union
/// after it would miss the threshold too (one inaccurate FISet ahead of the others would
/// otherwise spoil every combination — seed 002 combines FISets, it does not require the
/// inaccurate ones). `chosen` is the candidate it stopped at, or `None` when every candidate ran
/// without stopping. Modes 2 and 3 without a performance threshold stop at the first candidate
/// that is accurate enough *and* faster than f64 beyond the noise ([`Trial::meets_speed`]).
/// `progress` sees each trial as it completes.
pub fn mode<V: Evaluate + ?Sized>(
    mode: Mode,
    units: &[TuneUnit],
    thresholds: &Thresholds,
    eval: &mut V,
    progress: &mut dyn FnMut(&Config, &Trial),
) -> Result<Search, SearchError<V::Error>> {
    let thresholds = mode.thresholds(thresholds);
    let mut runner = Runner::new(eval, thresholds, progress);
    let mut accurate: Vec<usize> = Vec::new();
    let order = order(mode, units);
    for (at, &i) in order.iter().enumerate() {
        runner.ahead(order[at..].iter().map(|&j| Config::from([j])))?;
        let single = Config::from([i]);
        let trial = runner.trial(&single)?;
        if mode.stops_at(trial, &thresholds) {
            return Ok(runner.finish(mode.name(), Some(single)));
        }
        if trial.meets_error(&thresholds) {
            accurate.push(i);
        }
    }
    let union_of = |k: usize| -> Config { accurate[..k].iter().copied().collect() };
    for k in 2..=accurate.len() {
        runner.ahead((k..=accurate.len()).map(union_of))?;
        let union = union_of(k);
        if mode.stops_at(runner.trial(&union)?, &thresholds) {
            return Ok(runner.finish(mode.name(), Some(union)));
        }
    }
    Ok(runner.finish(mode.name(), None))
}
