//! The plan of a tuning run: its searches in the order they run, each numbered. A search is the
//! run's work unit, so this list is the one partition of a run into shards: `--shard I/N` runs
//! the searches whose number k has `k mod N == I` (everything else — building, units, the
//! shadow run, the references — every shard does on its own).
//!
//! The order: for each error threshold (as given), the registry's strategies ([`STRATEGIES`])
//! the request selects, by [`Strategy::place`] — the modes (mode 1 once, modes 2 and 3 once per
//! speed-up threshold) in `--mode`'s order, then the delta-debugging baseline per speed-up
//! threshold (once without one), then the exhaustive search per speed-up threshold.

use crate::evaluate::{ErrorThreshold, Thresholds};
use crate::flow::TuneRequest;
use crate::strategy::{Selection, Strategy, STRATEGIES};
use mantissa_report::Shard;

/// One search of the plan (named apart from the plans of the harness, the math library and the
/// study, which divide other work).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPlan {
    /// Its 0-based place in the whole plan (counted over every error threshold): its unit.
    pub unit: usize,
    /// The strategy that runs it.
    pub strategy: &'static dyn Strategy,
    /// Its thresholds.
    pub thresholds: Thresholds,
}

impl SearchPlan {
    /// `mode 2, 3 digits, 10%`: how tables and file names call the search.
    pub fn label(&self) -> String {
        label(self.strategy.name(), &self.thresholds)
    }
}

/// `strategy, E, P%` (`strategy, E` without a performance threshold).
pub fn label(strategy: &str, t: &Thresholds) -> String {
    let e = match t.error {
        ErrorThreshold::Digits(d) => format!("{d} digits"),
        ErrorThreshold::SpecTolerance => "the spec's tolerance".into(),
    };
    match t.speedup_pct {
        Some(p) => format!("{strategy}, {e}, {p}%"),
        None => format!("{strategy}, {e}"),
    }
}

/// The searches `request` runs, in run order, numbered over the whole plan: all of them, or
/// only its shard's (see the module docs).
pub fn plans(request: &TuneRequest) -> Vec<SearchPlan> {
    plans_of(
        &request.errors,
        &request.speedups,
        request.selection(),
        request.shard,
    )
}

/// [`plans`] from the request's parts (the merge has them from a store's manifest, not as a
/// request): the whole plan's searches that `shard` owns (every one without a shard).
pub fn plans_of(
    errors: &[ErrorThreshold],
    speedups: &[f64],
    selection: Selection<'_>,
    shard: Option<Shard>,
) -> Vec<SearchPlan> {
    // The selected strategies in one error threshold's order: by place, then by where the
    // request names them; a stable sort keeps the registry's order on a tie.
    let mut selected: Vec<(u32, usize, &'static dyn Strategy)> = STRATEGIES
        .iter()
        .flat_map(|&s| {
            let picks = selection.picks(s.selector());
            picks.into_iter().map(move |at| (s.place(), at, s))
        })
        .collect();
    selected.sort_by_key(|&(place, at, _)| (place, at));
    let mut out: Vec<SearchPlan> = Vec::new();
    for &error in errors {
        for &(_, _, strategy) in &selected {
            for speedup_pct in strategy.speedups().of(speedups) {
                out.push(SearchPlan {
                    unit: out.len(),
                    strategy,
                    thresholds: Thresholds { error, speedup_pct },
                });
            }
        }
    }
    out.retain(|p| shard.is_none_or(|s| s.owns(p.unit as u64)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::{DELTA_DEBUGGING, EXHAUSTIVE};

    fn select(modes: &[u8], baseline: bool, exhaustive: bool) -> Selection<'_> {
        Selection {
            modes,
            baseline,
            exhaustive,
        }
    }

    /// 2 error thresholds, modes 1–3, 2 speed-ups, the baseline and the exhaustive search.
    fn shard_of(shard: Option<Shard>) -> Vec<SearchPlan> {
        plans_of(
            &[ErrorThreshold::Digits(3.0), ErrorThreshold::SpecTolerance],
            &[10.0, 50.0],
            select(&[1, 2, 3], true, true),
            shard,
        )
    }

    fn full() -> Vec<SearchPlan> {
        shard_of(None)
    }

    #[test]
    fn the_plan_is_in_run_order_and_numbered() {
        let p = full();
        // Per error threshold: mode 1, mode 2 ×2, mode 3 ×2, baseline ×2, exhaustive ×2.
        assert_eq!(p.len(), 18);
        assert!(p.iter().enumerate().all(|(k, plan)| plan.unit == k));
        let labels: Vec<String> = p[..9].iter().map(SearchPlan::label).collect();
        assert_eq!(
            labels,
            [
                "mode 1, 3 digits",
                "mode 2, 3 digits, 10%",
                "mode 2, 3 digits, 50%",
                "mode 3, 3 digits, 10%",
                "mode 3, 3 digits, 50%",
                "delta debugging, 3 digits, 10%",
                "delta debugging, 3 digits, 50%",
                "exhaustive, 3 digits, 10%",
                "exhaustive, 3 digits, 50%",
            ]
        );
        assert_eq!(p[9].label(), "mode 1, the spec's tolerance");
        assert_eq!(p[14].strategy.name(), DELTA_DEBUGGING);
        assert_eq!(p[17].strategy.name(), EXHAUSTIVE);
        // Without a speed-up threshold the baseline runs once, the exhaustive search not at all.
        let bare = plans_of(
            &[ErrorThreshold::Digits(3.0)],
            &[],
            select(&[1, 2], true, true),
            None,
        );
        let labels: Vec<String> = bare.iter().map(SearchPlan::label).collect();
        assert_eq!(labels, ["mode 1, 3 digits", "delta debugging, 3 digits"]);
    }

    #[test]
    fn the_modes_run_in_the_order_mode_lists_them_before_the_other_strategies() {
        let p = plans_of(
            &[ErrorThreshold::Digits(3.0)],
            &[10.0],
            select(&[3, 1, 3], true, false),
            None,
        );
        let labels: Vec<String> = p.iter().map(SearchPlan::label).collect();
        assert_eq!(
            labels,
            [
                "mode 3, 3 digits, 10%",
                "mode 1, 3 digits",
                "mode 3, 3 digits, 10%",
                "delta debugging, 3 digits, 10%",
            ]
        );
        // A number no strategy has selects nothing (the CLI refuses it before).
        assert!(plans_of(
            &[ErrorThreshold::Digits(3.0)],
            &[10.0],
            select(&[9], false, false),
            None
        )
        .is_empty());
    }

    #[test]
    fn the_shards_partition_the_plan_round_robin() {
        let whole = full();
        for n in 1..=7u32 {
            let mut union: Vec<SearchPlan> = Vec::new();
            for i in 0..n {
                let shard = Shard::new(i, n).unwrap();
                let mine = shard_of(Some(shard));
                let want: Vec<usize> = (0..whole.len())
                    .filter(|k| k % n as usize == i as usize)
                    .collect();
                assert_eq!(
                    mine.iter().map(|p| p.unit).collect::<Vec<_>>(),
                    want,
                    "{shard}"
                );
                union.extend(mine);
            }
            union.sort_by_key(|p| p.unit);
            assert_eq!(union, whole, "{n} shards");
        }
    }
}
