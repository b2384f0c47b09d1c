//! The Precimonious baseline (seed 002 §5.1; Rubio-González et al., SC'13): delta debugging
//! over the set H of units kept in f64, every other unit demoted.
//!
//! **The test.** pass(H) = the configuration "demote everything outside H" meets the error
//! threshold *and* the performance threshold (seed 002 runs the baseline in one mode: it stops
//! once both constraints are met). Demoting nothing (H = all units) cannot pass: its speed-up is
//! zero, inside any noise. So ddmin's usual precondition (the whole set passes) never holds and
//! is not tested; instead the search first tries demoting everything (H = ∅): if that passes it
//! is done in one trial.
//!
//! **The search** is Zeller's ddmin on H, starting from H = all units at granularity n = 2: split
//! H into n parts of near-equal size (in index order); if keeping only one part passes, H becomes
//! that part and n = 2; else if keeping all but one part passes, H becomes that complement and
//! n = max(n − 1, 2); else, while n < |H|, n = min(2n, |H|); at n = |H| with no reduction it
//! stops. A configuration is run at most once (remembered results are not trials).
//!
//! **What it guarantees (1-minimality).** When it chooses a configuration C (= all units
//! outside H), C passes and *demoting any one more unit fails*: for every unit u kept in f64,
//! C ∪ {u} does not pass. (The last granularity, n = |H|, tested every H ∖ {u}; for |H| = 1 that
//! is "demote everything", tested first.) This is the seed's "lowering the precision of any one
//! additional variable would cause the program to compute an insufficiently accurate answer or
//! violate the performance threshold". It is a local property: a larger passing configuration may
//! exist elsewhere (the exhaustive search finds it on small cases). When nothing passes, `chosen`
//! is `None`; then demoting everything, every single unit alone and every "all but one" failed.

use super::{Aborted, Over, Runner, Search, SearchError, Selector, Speedups, Strategy};
use crate::evaluate::{Evaluate, Thresholds, Trial};
use crate::unit::{Config, TuneUnit};

/// Its name, as [`Search::strategy`] and tables write it.
pub const DELTA_DEBUGGING: &str = "delta debugging";

/// The baseline as a [`Strategy`]: over variables (Precimonious's unit), asked for by
/// `--baseline`, after the modes.
pub struct DeltaDebugging;

impl Strategy for DeltaDebugging {
    fn name(&self) -> &'static str {
        DELTA_DEBUGGING
    }

    fn over(&self) -> Over {
        Over::Variables
    }

    /// Without a performance threshold it still runs, passing any speed-up outside the noise.
    fn speedups(&self) -> Speedups {
        Speedups::EachOrNone
    }

    fn needs_ideal(&self) -> bool {
        true
    }

    fn selector(&self) -> Selector {
        Selector::Baseline
    }

    fn place(&self) -> u32 {
        1
    }

    fn run(
        &self,
        units: &[TuneUnit],
        thresholds: &Thresholds,
        eval: &mut dyn Evaluate<Error = Aborted>,
        progress: &mut dyn FnMut(&Config, &Trial),
    ) -> Result<Search, SearchError<Aborted>> {
        delta_debugging(units, thresholds, eval, progress)
    }
}

/// `kept` split into `n` contiguous parts of near-equal size (the first `len mod n` one longer).
/// `n` is at most `kept.len()`, so no part is empty.
fn split(kept: &[usize], n: usize) -> Vec<&[usize]> {
    let (size, longer) = (kept.len() / n, kept.len() % n);
    let mut parts = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let len = size + usize::from(i < longer);
        parts.push(&kept[start..start + len]);
        start += len;
    }
    parts
}

/// Runs the delta-debugging baseline (see the module docs for the test and the guarantee) under
/// both thresholds. `progress` sees each trial as it completes.
pub fn delta_debugging<V: Evaluate + ?Sized>(
    units: &[TuneUnit],
    thresholds: &Thresholds,
    eval: &mut V,
    progress: &mut dyn FnMut(&Config, &Trial),
) -> Result<Search, SearchError<V::Error>> {
    let mut runner = Runner::new(eval, *thresholds, progress);
    let all: Vec<usize> = (0..units.len()).collect();
    let demoting_all_but =
        |kept: &[usize]| -> Config { all.iter().copied().filter(|u| !kept.contains(u)).collect() };
    if units.is_empty() {
        return Ok(runner.finish(DELTA_DEBUGGING, None));
    }
    let everything = demoting_all_but(&[]);
    // With several devices, the first round's candidates run beside "demote everything".
    let first_round: Vec<Config> = if all.len() >= 2 {
        split(&all, 2).into_iter().map(&demoting_all_but).collect()
    } else {
        Vec::new()
    };
    runner.ahead(std::iter::once(everything.clone()).chain(first_round))?;
    if runner.passes(&everything)? {
        return Ok(runner.finish(DELTA_DEBUGGING, Some(everything)));
    }

    let mut kept = all.clone();
    let mut chosen = None;
    let mut n = 2;
    while kept.len() >= 2 {
        n = n.min(kept.len());
        let parts = split(&kept, n);
        let mut reduced = None;
        runner.ahead(parts.iter().map(|part| demoting_all_but(part)))?;
        for part in &parts {
            let config = demoting_all_but(part);
            if runner.passes(&config)? {
                reduced = Some((part.to_vec(), config, 2));
                break;
            }
        }
        // At n = 2 the complements are the parts themselves, just tested.
        if reduced.is_none() && n > 2 {
            let complement_of = |part: &[usize]| -> Vec<usize> {
                kept.iter().copied().filter(|u| !part.contains(u)).collect()
            };
            runner.ahead(
                parts
                    .iter()
                    .map(|part| demoting_all_but(&complement_of(part))),
            )?;
            for part in &parts {
                let complement = complement_of(part);
                let config = demoting_all_but(&complement);
                if runner.passes(&config)? {
                    reduced = Some((complement, config, (n - 1).max(2)));
                    break;
                }
            }
        }
        match reduced {
            Some((smaller, config, granularity)) => {
                kept = smaller;
                chosen = Some(config);
                n = granularity;
            }
            None if n < kept.len() => n = (2 * n).min(kept.len()),
            None => break,
        }
    }
    Ok(runner.finish(DELTA_DEBUGGING, chosen))
}
