//! The cheapest precision reaching an error target, for one row of the summary: each
//! precision's errors by point, its cost against f64, and whether two precisions' times can be
//! told apart at all.
//!
//! Definitions (the summary's notes state them too):
//! - A precision's *cost* is the median, over the points where it and f64 both ran and were timed
//!   (same algorithm, input, size, seed, configuration, device and flag set), of the ratio of
//!   their median times. "Cheapest" is the smallest such ratio; a precision that never ran beside
//!   f64 has no cost and is chosen only when no costed one reaches the target. Ratios more than
//!   100× apart are shown as their range alone: no one figure stands for them.
//! - Two precisions that both reach a target are *tied in time* unless one is faster beyond the
//!   measured spread at most of the points where both ran: faster there means its median
//!   repetition took less time than the other's fastest. A median ratio of 0.98 or 1.02 is noise
//!   on a shared CPU, and the answer must not flip between f32 and f64 on it; tied precisions
//!   are all named, narrowest first, so the cell reads the same on every run. The spread is
//!   taken from the fastest repetition to the median, not to the slowest: interference only
//!   ever adds time, so a shared machine's slowest repetitions are outliers (one preempted run
//!   would otherwise tie everything), while its fastest and median ones are stable.

use std::collections::{BTreeMap, HashMap};

use crate::record::{Record, Status};
use crate::tables::{fmt_err, median, precision_rank, Config};

/// The precision every cost is measured against.
pub(crate) const BASELINE: &str = "f64";

/// A point less its precision: records with equal keys are comparable.
pub(crate) type PointKey = (String, u64, u64, Config, Option<String>);

pub(crate) fn comparable_key(r: &Record) -> PointKey {
    (
        r.input.clone(),
        r.size,
        r.seed,
        Config::of(r),
        r.flags.clone().filter(|f| f != crate::DEFAULT_FLAGS),
    )
}

/// A record's median time, if it ran and was timed.
fn time_ms(r: &Record) -> Option<f64> {
    let t = r.time.as_ref()?.median_ms;
    (r.status == Status::Ok && t.is_finite() && t > 0.0).then_some(t)
}

/// A precision's times at one point: the median repetition and the fastest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    pub median: f64,
    pub min: f64,
}

impl Spread {
    /// The record's times; a record whose fastest repetition is not at most its median (none
    /// was written that way, but the file is input) spreads over its median alone.
    fn of(r: &Record) -> Option<Spread> {
        let median = time_ms(r)?;
        let min = r.time.as_ref()?.min_ms;
        let min = if min.is_finite() && min > 0.0 && min <= median {
            min
        } else {
            median
        };
        Some(Spread { median, min })
    }

    /// Several records of one point: the median of their medians, the fastest of all.
    fn merge(spreads: &[Spread]) -> Option<Spread> {
        let medians: Vec<f64> = spreads.iter().map(|s| s.median).collect();
        Some(Spread {
            median: median(&medians)?,
            min: spreads.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
        })
    }
}

/// One precision of one row: its errors by point, its times by point and its cost.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub precision: String,
    /// The largest error at each comparable point it ran.
    pub errors: HashMap<PointKey, f64>,
    /// Its times at each comparable point where it was timed.
    pub times: HashMap<PointKey, Spread>,
    /// Its time over f64's at the same points.
    pub cost: Option<Cost>,
}

/// A precision's time over f64's at the points where both ran: the median ratio, the smallest
/// and the largest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cost {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// How many points were compared.
    pub points: usize,
}

/// The candidates of `records` (one row), cheapest first; `error_of` is the error a record is
/// judged by (relative, or absolute where the exact result is 0), `None` for one it cannot be.
pub(crate) fn candidates(
    records: &[&Record],
    error_of: impl Fn(&Record) -> Option<f64>,
) -> Vec<Candidate> {
    let mut errors: BTreeMap<&str, HashMap<PointKey, f64>> = BTreeMap::new();
    let mut times: HashMap<&str, HashMap<PointKey, Vec<Spread>>> = HashMap::new();
    for r in records {
        let Some(e) = error_of(r) else { continue };
        let w = errors
            .entry(r.precision.as_str())
            .or_default()
            .entry(comparable_key(r))
            .or_insert(0.0);
        *w = w.max(e);
        if let Some(s) = Spread::of(r) {
            times
                .entry(r.precision.as_str())
                .or_default()
                .entry(comparable_key(r))
                .or_default()
                .push(s);
        }
    }
    // f64's times by comparable point, over every f64 record of the row (those judged by
    // another error measure are still timed beside the others).
    let mut base: HashMap<PointKey, Vec<f64>> = HashMap::new();
    for r in records.iter().filter(|r| r.precision == BASELINE) {
        if let Some(t) = time_ms(r) {
            base.entry(comparable_key(r)).or_default().push(t);
        }
    }
    let base: HashMap<PointKey, f64> = base
        .into_iter()
        .filter_map(|(k, v)| median(&v).map(|m| (k, m)))
        .collect();
    let mut out: Vec<Candidate> = errors
        .into_iter()
        .map(|(p, errors)| {
            let times: HashMap<PointKey, Spread> = times
                .remove(p)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(k, v)| Some((k, Spread::merge(&v)?)))
                .collect();
            let ratios: Vec<f64> = times
                .iter()
                .filter_map(|(k, s)| Some(s.median / base.get(k)?))
                .collect();
            let cost = median(&ratios).map(|median| Cost {
                median,
                min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
                max: ratios.iter().copied().fold(0.0, f64::max),
                points: ratios.len(),
            });
            Candidate {
                precision: p.to_string(),
                errors,
                times,
                cost,
            }
        })
        .collect();
    // Cheapest first; precisions without a cost after those with one, narrow before wide.
    out.sort_by(|a, b| {
        let key = |c: &Candidate| c.cost.map_or(f64::INFINITY, |c| c.median);
        key(a)
            .total_cmp(&key(b))
            .then_with(|| precision_rank(&a.precision).cmp(&precision_rank(&b.precision)))
    });
    out
}

/// Whether `a` is faster than `b` beyond the measured spread: at more than half of the points
/// where both were timed, `a`'s median repetition beat `b`'s fastest. `None` when they were
/// never timed at the same point, so the measurements cannot say.
pub(crate) fn clearly_faster(a: &Candidate, b: &Candidate) -> Option<bool> {
    let common: Vec<(&Spread, &Spread)> = a
        .times
        .iter()
        .filter_map(|(k, sa)| Some((sa, b.times.get(k)?)))
        .collect();
    if common.is_empty() {
        return None;
    }
    let faster = common.iter().filter(|(sa, sb)| sa.median < sb.min).count();
    Some(2 * faster > common.len())
}

/// A ratio in three significant digits at most: `1.63`, `0.52`, `37.1`, `1180`, `2.0e-4`.
fn fmt_ratio(x: f64) -> String {
    if x < 0.01 {
        format!("{x:.1e}")
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Ratios that spread wider than this (largest over smallest) show their range: a median alone
/// would hide that the precision costs very different amounts at different points.
const SPREAD_SHOWN: f64 = 1.5;

/// Ratios that spread wider than this have no median in the cell, only their range: a precision
/// whose cost against f64 differs by two orders of magnitude between points of one row (sizes
/// that change what dominates, or a suspect timing) has no single cost, and a median of such
/// ratios (0.02× from 2.2e-4…55.7) reads as a finding it is not.
const SPREAD_TOO_WIDE: f64 = 100.0;

/// Fewer compared points than this are named in the cell: one timing is a weak basis.
const FEW_POINTS: usize = 3;

/// Tied precisions named in a cell before the rest are counted (`and 2 more`).
const TIES_NAMED: usize = 4;

/// `1.63× f64`, `1.07× f64 (0.59…1.16)` when the ratios spread widely, `0.75× f64 (1 point)`
/// when few points were compared, `2.2e-4…55.7× f64 (5 points, too far apart for one figure)`
/// when they spread too widely for a median to mean anything.
pub(crate) fn fmt_cost(c: Cost) -> String {
    if c.points >= FEW_POINTS && c.max > SPREAD_TOO_WIDE * c.min {
        return format!(
            "{}…{}× {BASELINE} ({}, too far apart for one figure)",
            fmt_ratio(c.min),
            fmt_ratio(c.max),
            plural(c.points, "point")
        );
    }
    let mut s = format!("{}× {BASELINE}", fmt_ratio(c.median));
    if c.points < FEW_POINTS {
        s += &format!(" ({})", plural(c.points, "point"));
    } else if c.max > SPREAD_SHOWN * c.min {
        s += &format!(" ({}…{})", fmt_ratio(c.min), fmt_ratio(c.max));
    }
    s
}

/// `1 record`, `2 records`.
pub(crate) fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A list of names as `a, b and c`.
pub(crate) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The names of tied precisions: `f32 or f64`, `f32, comp32 or f64`, `a, b, c, d and 2 more`.
fn or_list(names: &[&str]) -> String {
    if names.len() > TIES_NAMED {
        let more = names.len() - TIES_NAMED;
        return format!("{} and {more} more", names[..TIES_NAMED].join(", "));
    }
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The findings cell of one target: the cheapest precision reaching it and its cost (with the
/// precisions tied with it in time), or the precision that came closest when none does. Points
/// where no precision reaches the target (an error that is the method's, not the arithmetic's,
/// such as a quadrature's at few steps) do not count against any precision; the cell says how
/// many there were.
pub(crate) fn cell(cands: &[Candidate], target: f64) -> String {
    let mut best_at: HashMap<&PointKey, f64> = HashMap::new();
    for c in cands {
        for (k, e) in &c.errors {
            let b = best_at.entry(k).or_insert(f64::INFINITY);
            *b = b.min(*e);
        }
    }
    let total = best_at.len();
    let out_of_reach = best_at.values().filter(|b| **b > target).count();
    let reaches = |c: &Candidate| {
        let judged: Vec<f64> = c
            .errors
            .iter()
            .filter(|(k, _)| best_at[k] <= target)
            .map(|(_, e)| *e)
            .collect();
        !judged.is_empty() && judged.iter().all(|e| *e <= target)
    };
    let reaching: Vec<&Candidate> = cands.iter().filter(|c| reaches(c)).collect();
    let Some(&cheapest) = reaching.first() else {
        // The best single result anywhere says how far the target is.
        let best = cands
            .iter()
            .flat_map(|c| c.errors.values().map(move |e| (*e, &c.precision)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        return match best {
            Some((e, p)) => format!("none (best: {p}, {})", fmt_err(e)),
            None => "-".into(),
        };
    };
    // Only costed precisions can tie: one never timed beside f64 is last for want of a cost.
    let mut tied: Vec<&Candidate> = reaching
        .iter()
        .copied()
        .filter(|c| {
            std::ptr::eq(*c, cheapest)
                || (c.cost.is_some()
                    && cheapest.cost.is_some()
                    && clearly_faster(cheapest, c) == Some(false))
        })
        .collect();
    tied.sort_by_key(|c| precision_rank(&c.precision));
    let names: Vec<&str> = tied.iter().map(|c| c.precision.as_str()).collect();
    let mut text = or_list(&names);
    if tied.len() > 1 {
        text += " (tied in time)";
    }
    if !names.contains(&BASELINE) {
        // The narrowest is named first, so its cost is the one shown.
        match tied[0].cost.or(cheapest.cost) {
            Some(c) => text += &format!(" · {}", fmt_cost(c)),
            None => text += &format!(" · no {BASELINE} timed beside it"),
        }
    }
    if out_of_reach > 0 {
        text += &format!("; out of reach at {out_of_reach} of {total} points");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TimeStats;
    use crate::tables::tests::{rec, CPU1};

    /// A record with this relative error, judged by it, and these timed repetitions.
    fn timed(p: &str, input: &str, rel: f64, samples: &[f64]) -> Record {
        let mut r = rec(p, input, CPU1, rel, 1.0);
        r.time = TimeStats::from_samples(samples);
        r
    }

    fn cell_of(records: &[Record], target: f64) -> String {
        let refs: Vec<&Record> = records.iter().collect();
        // The fixture's `abs` is the error these tests judge by.
        cell(&candidates(&refs, |r| Some(r.error.as_ref()?.abs)), target)
    }

    #[test]
    fn overlapping_time_ranges_are_a_tie_named_narrowest_first() {
        // f32's median is 2% below f64's at both points, but not below f64's fastest
        // repetition: noise, not a cost difference.
        let v = vec![
            timed("f64", "range1", 1e-9, &[0.95, 1.00, 1.10]),
            timed("f32", "range1", 1e-7, &[0.93, 0.98, 1.08]),
            timed("f64", "range2", 1e-9, &[2.0, 2.1, 2.3]),
            timed("f32", "range2", 1e-7, &[1.9, 2.05, 2.2]),
        ];
        assert_eq!(cell_of(&v, 1e-6), "f32 or f64 (tied in time)");
        // The median alone would have said f32 is cheaper.
        let refs: Vec<&Record> = v.iter().collect();
        let c = candidates(&refs, |r| Some(r.error.as_ref()?.abs));
        assert_eq!(c[0].precision, "f32");
        assert!(c[0].cost.unwrap().median < 1.0);
        // Only f64 reaches 1e-8: no tie to report.
        assert_eq!(cell_of(&v, 1e-8), "f64");
    }

    #[test]
    fn a_difference_beyond_the_spread_at_most_points_is_not_a_tie() {
        // f32 is faster beyond the spread at two of three points (its median 0.5 below f64's
        // fastest 1.0); at the third its median 1.02 is not below f64's fastest 1.0.
        let v = vec![
            timed("f64", "range1", 1e-9, &[1.0, 1.0, 1.1]),
            timed("f32", "range1", 1e-7, &[0.5, 0.5, 0.6]),
            timed("f64", "range2", 1e-9, &[1.0, 1.0, 1.1]),
            timed("f32", "range2", 1e-7, &[0.5, 0.5, 0.6]),
            timed("f64", "range3", 1e-9, &[1.0, 1.0, 1.1]),
            timed("f32", "range3", 1e-7, &[0.98, 1.02, 1.1]),
        ];
        assert_eq!(cell_of(&v, 1e-6), "f32 · 0.50× f64 (0.50…1.02)");
        // Beyond the spread at one of three points only: a tie.
        let mut w = v.clone();
        w[3] = timed("f32", "range2", 1e-7, &[0.98, 1.02, 1.1]);
        assert_eq!(cell_of(&w, 1e-6), "f32 or f64 (tied in time)");
    }

    #[test]
    fn ties_without_f64_keep_the_cost_and_long_ties_are_counted() {
        let mut v = vec![timed("f64", "range1", 1e-3, &[1.0, 1.0, 1.0])];
        for p in ["f32x2", "comp32", "comp32n", "f32", "mp32", "mp64"] {
            v.push(timed(p, "range1", 1e-9, &[0.45, 0.5, 0.55]));
        }
        assert_eq!(
            cell_of(&v, 1e-6),
            "f32, comp32, comp32n, f32x2 and 2 more (tied in time) · 0.50× f64 (1 point)"
        );
        // Two only, the narrow one first whatever its median.
        let v = vec![
            timed("f64", "range1", 1e-3, &[1.0, 1.0, 1.0]),
            timed("f32x2", "range1", 1e-9, &[0.4, 0.45, 0.55]),
            timed("comp32", "range1", 1e-9, &[0.45, 0.5, 0.55]),
        ];
        assert_eq!(
            cell_of(&v, 1e-6),
            "comp32 or f32x2 (tied in time) · 0.50× f64 (1 point)"
        );
    }

    #[test]
    fn precisions_never_timed_together_are_not_tied() {
        let a = Candidate {
            precision: "f32".into(),
            errors: HashMap::new(),
            times: HashMap::new(),
            cost: None,
        };
        assert_eq!(clearly_faster(&a, &a.clone()), None);
        assert_eq!(or_list(&["a"]), "a");
        assert_eq!(or_list(&["a", "b", "c"]), "a, b or c");
    }

    #[test]
    fn repeated_records_of_a_point_merge_and_the_slowest_repetition_is_ignored() {
        let s = Spread::merge(&[
            Spread {
                median: 1.0,
                min: 0.9,
            },
            Spread {
                median: 3.0,
                min: 0.8,
            },
        ])
        .unwrap();
        assert_eq!((s.median, s.min), (2.0, 0.8));
        let mut r = timed("f32", "range1", 1e-7, &[1.0]);
        r.time = Some(TimeStats {
            median_ms: 1.0,
            min_ms: 2.0,
            max_ms: 0.5,
            reps: 3,
        });
        // A fastest repetition above the median is not trusted.
        assert_eq!(
            Spread::of(&r),
            Some(Spread {
                median: 1.0,
                min: 1.0
            })
        );
        // One preempted repetition (50 ms) does not make 1 ms and 2 ms a tie.
        let v = vec![
            timed("f64", "range1", 1e-9, &[2.0, 2.0, 2.1, 50.0]),
            timed("f32", "range1", 1e-7, &[1.0, 1.0, 1.05, 50.0]),
        ];
        assert_eq!(cell_of(&v, 1e-6), "f32 · 0.50× f64 (1 point)");
    }
}
