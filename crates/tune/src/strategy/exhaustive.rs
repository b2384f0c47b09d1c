//! The exhaustive search: every non-empty subset of the units, for small programs and as the
//! reference the other strategies are measured against (how far from the best they stop).

use super::{passes, Aborted, Over, Runner, Search, SearchError, Selector, Speedups, Strategy};
use crate::evaluate::{Evaluate, Thresholds, Trial};
use crate::unit::{Config, TuneUnit};

/// Its name, as [`Search::strategy`] and tables write it.
pub const EXHAUSTIVE: &str = "exhaustive";

/// The exhaustive search as a [`Strategy`]: over FISets (the modes' units, so that it judges
/// them), asked for by `--exhaustive`, last.
pub struct Exhaustive;

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        EXHAUSTIVE
    }

    fn over(&self) -> Over {
        Over::Fisets
    }

    fn speedups(&self) -> Speedups {
        Speedups::Each
    }

    fn needs_ideal(&self) -> bool {
        true
    }

    fn selector(&self) -> Selector {
        Selector::Exhaustive
    }

    fn place(&self) -> u32 {
        2
    }

    fn max_units(&self) -> Option<usize> {
        Some(EXHAUSTIVE_MAX_UNITS)
    }

    fn run(
        &self,
        units: &[TuneUnit],
        thresholds: &Thresholds,
        eval: &mut dyn Evaluate<Error = Aborted>,
        progress: &mut dyn FnMut(&Config, &Trial),
    ) -> Result<Search, SearchError<Aborted>> {
        exhaustive(units, thresholds, eval, progress)
    }
}

/// The most units the exhaustive search takes: 2^16 − 1 = 65,535 trials is already hours of
/// GPU runs; beyond that the search is refused rather than left running for days.
pub const EXHAUSTIVE_MAX_UNITS: usize = 16;

/// Runs every non-empty configuration (2^n − 1 trials, in the order of the bit mask whose bit i
/// is unit i) and chooses, among those passing both thresholds, the one with the highest
/// measured speed-up (on a tie, the earlier in that order). Refuses more than
/// [`EXHAUSTIVE_MAX_UNITS`] units. `progress` sees each trial as it completes.
pub fn exhaustive<V: Evaluate + ?Sized>(
    units: &[TuneUnit],
    thresholds: &Thresholds,
    eval: &mut V,
    progress: &mut dyn FnMut(&Config, &Trial),
) -> Result<Search, SearchError<V::Error>> {
    if units.len() > EXHAUSTIVE_MAX_UNITS {
        return Err(SearchError::TooManyUnits {
            units: units.len(),
            max: EXHAUSTIVE_MAX_UNITS,
        });
    }
    let mut runner = Runner::new(eval, *thresholds, progress);
    let mut best: Option<(Config, f64)> = None;
    let n = units.len();
    let config_of = |mask: u32| -> Config { (0..n).filter(|i| mask & (1 << i) != 0).collect() };
    for mask in 1u32..(1u32 << n) {
        runner.ahead((mask..1u32 << n).map(config_of))?;
        let config = config_of(mask);
        let trial = runner.trial(&config)?;
        if !passes(trial, thresholds) {
            continue;
        }
        // A passing trial has a speed-up (meets_speed requires one).
        let speedup = trial.speedup_pct.unwrap_or(f64::NEG_INFINITY);
        if best.as_ref().is_none_or(|(_, s)| speedup > *s) {
            best = Some((config, speedup));
        }
    }
    Ok(runner.finish(EXHAUSTIVE, best.map(|(c, _)| c)))
}
