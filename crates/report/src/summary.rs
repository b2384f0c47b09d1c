//! The answer first: what a set of records measured, and per workload the cheapest precision
//! that reaches a relative error of 10^-6, 10^-12 and "exact to f64", with its cost against f64
//! on each backend. [`crate::html`] and [`crate::tables::markdown`] open with it.
//!
//! Definitions (the page states them too):
//! - A point's relative error is its record's `error.rel` (|value − reference| / |reference|,
//!   computed exactly, rounded once). A point whose reference is 0 has none; such points are left
//!   out and counted in a note (their absolute errors are in the tables). A non-finite error
//!   counts as infinitely large.
//! - A precision *reaches* a target on a backend when its largest relative error over every point
//!   of that workload and algorithm it ran there (all inputs, sizes, seeds and configurations) is
//!   at most the target. "Exact to f64" is a relative error of at most 2^-53, the unit roundoff of
//!   f64: what the correctly rounded f64 of the exact result is guaranteed to reach.
//! - Its *cost* is the median, over the points where it and f64 both ran and were timed (same
//!   algorithm, input, size, seed, configuration, device and flag set), of the ratio of their
//!   median times. "Cheapest" is the smallest such ratio; a precision that never ran beside f64
//!   has no cost and is chosen only when no costed one reaches the target.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::record::{Record, Status};
use crate::tables::{
    fmt_err, groups, median, precision_rank, Config, Group, Naming, Provenance, Table,
};

/// The accuracy targets, as (column header, largest admissible relative error).
pub(crate) const TARGETS: [(&str, f64); 3] = [
    ("rel. error ≤ 1e-6", 1e-6),
    ("rel. error ≤ 1e-12", 1e-12),
    // 2^-53: the unit roundoff of f64.
    ("exact to f64 (rel. ≤ 2^-53)", 1.1102230246251565e-16),
];

/// The precision every cost is measured against.
const BASELINE: &str = "f64";

/// What the report opens with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// "What was measured", one line per fact: (label, text).
    pub measured: Vec<(String, String)>,
    /// The findings: a row per workload, algorithm and backend; a column per target.
    pub findings: Table,
}

/// The relative error of a record that ran, if it has one (see the module docs).
fn rel_error(r: &Record) -> Option<f64> {
    if r.status != Status::Ok {
        return None;
    }
    let rel = r.error.as_ref()?.rel?;
    Some(if rel.is_nan() {
        f64::INFINITY
    } else {
        rel.abs()
    })
}

/// A record's median time, if it ran and was timed.
fn time_ms(r: &Record) -> Option<f64> {
    let t = r.time.as_ref()?.median_ms;
    (r.status == Status::Ok && t.is_finite() && t > 0.0).then_some(t)
}

/// What a backend row stands for: CPU or GPU, on one device, under one flag set. Another flag
/// set is another build whose accuracy must not be mixed with the default one's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Side {
    gpu: bool,
    device: String,
    /// The flag set, unless it is the default.
    flags: Option<String>,
}

impl Side {
    fn of(r: &Record) -> Side {
        Side {
            gpu: r.backend.is_gpu(),
            device: r.device.clone(),
            flags: r.flags.clone().filter(|f| f != crate::DEFAULT_FLAGS),
        }
    }

    /// `CPU` / `GPU`, with the device where one kind ran on several and a flag set other than
    /// the default: `GPU (H200), flags approx-div`.
    fn label(&self, naming: &Naming) -> String {
        let mut label = if self.gpu { "GPU" } else { "CPU" }.to_string();
        if naming.several_devices(self.gpu) {
            label += &format!(" ({})", self.device);
        }
        if let Some(f) = &self.flags {
            label += &format!(", flags {f}");
        }
        label
    }
}

/// One precision of one group on one side: its relative errors by point and its cost.
#[derive(Debug, Clone)]
struct Candidate {
    precision: String,
    /// The largest relative error at each comparable point it ran.
    errors: HashMap<PointKey, f64>,
    /// Its time over f64's at the same points: the median ratio, the smallest and the largest.
    cost: Option<Cost>,
}

/// A precision's time over f64's at the points where both ran.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cost {
    median: f64,
    min: f64,
    max: f64,
    /// How many points were compared.
    points: usize,
}

/// A point less its precision: records with equal keys are comparable.
type PointKey = (String, u64, u64, Config, Option<String>);

fn comparable_key(r: &Record) -> PointKey {
    (
        r.input.clone(),
        r.size,
        r.seed,
        Config::of(r),
        r.flags.clone().filter(|f| f != crate::DEFAULT_FLAGS),
    )
}

fn candidates(records: &[&Record]) -> Vec<Candidate> {
    let mut errors: BTreeMap<&str, HashMap<PointKey, f64>> = BTreeMap::new();
    for r in records {
        if let Some(e) = rel_error(r) {
            let w = errors
                .entry(r.precision.as_str())
                .or_default()
                .entry(comparable_key(r))
                .or_insert(0.0);
            *w = w.max(e);
        }
    }
    // f64's times by comparable point (median over repeated records of the same point).
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
            let ratios: Vec<f64> = records
                .iter()
                .filter(|r| r.precision == p)
                .filter_map(|r| Some(time_ms(r)? / base.get(&comparable_key(r))?))
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

/// Fewer compared points than this are named in the cell: one timing is a weak basis.
const FEW_POINTS: usize = 3;

/// `1.63× f64`, `0.02× f64 (0.02…56)` when the ratios spread widely, `0.75× f64 (1 point)`
/// when few points were compared.
fn fmt_cost(c: Cost) -> String {
    let mut s = format!("{}× {BASELINE}", fmt_ratio(c.median));
    if c.points < FEW_POINTS {
        s += &format!(" ({})", plural(c.points, "point"));
    } else if c.max > SPREAD_SHOWN * c.min {
        s += &format!(" ({}…{})", fmt_ratio(c.min), fmt_ratio(c.max));
    }
    s
}

/// The findings cell of one target: the cheapest precision reaching it and its cost, or the
/// precision that came closest when none does. Points where no precision reaches the target
/// (an error that is the method's, not the arithmetic's, such as a quadrature's at few steps)
/// do not count against any precision; the cell says how many there were.
fn cell(cands: &[Candidate], target: f64) -> String {
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
    let mut text = match cands.iter().find(|c| reaches(c)) {
        Some(c) => match (c.precision.as_str(), c.cost) {
            (BASELINE, _) => BASELINE.to_string(),
            (p, Some(c)) => format!("{p} · {}", fmt_cost(c)),
            (p, None) => format!("{p} · no {BASELINE} timed beside it"),
        },
        None => {
            // The best single result anywhere says how far the target is.
            let best = cands
                .iter()
                .flat_map(|c| c.errors.values().map(move |e| (*e, &c.precision)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            return match best {
                Some((e, p)) => format!("none (best: {p}, {})", fmt_err(e)),
                None => "-".into(),
            };
        }
    };
    if out_of_reach > 0 {
        text += &format!("; out of reach at {out_of_reach} of {total} points");
    }
    text
}

fn findings(groups: &[Group], naming: &Naming) -> Table {
    let mut rows = Vec::new();
    // Per workload: points with an exact result of 0, and points that ran.
    let mut zero_refs: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for g in groups {
        let sides: BTreeSet<Side> = g.records.iter().map(|r| Side::of(r)).collect();
        for side in sides {
            let mine: Vec<&Record> = g
                .records
                .iter()
                .copied()
                .filter(|r| Side::of(r) == side)
                .collect();
            let ran = mine.iter().filter(|r| r.status == Status::Ok).count();
            let unscored = mine
                .iter()
                .filter(|r| r.status == Status::Ok && r.reference == Some(0.0))
                .filter(|r| rel_error(r).is_none())
                .count();
            if unscored > 0 {
                let z = zero_refs.entry(g.workload.clone()).or_default();
                z.0 += unscored;
                z.1 += ran;
            }
            let cands = candidates(&mine);
            if cands.is_empty() {
                continue;
            }
            let mut row = vec![g.title(), side.label(naming)];
            row.extend(TARGETS.iter().map(|&(_, t)| cell(&cands, t)));
            rows.push(row);
        }
    }
    let mut headers = vec!["workload / algorithm".to_string(), "backend".to_string()];
    headers.extend(TARGETS.iter().map(|(h, _)| h.to_string()));
    let mut notes = vec![
        "Each cell: the cheapest precision whose largest relative error, over every point it ran \
         on that backend (all inputs, sizes, seeds and configurations), is at most the target; \
         then its cost against f64. A point is out of reach when no precision reaches the target \
         there (the error is the method's, e.g. a quadrature's with few steps): it counts \
         against none, and the cell says how many there were."
            .to_string(),
        "Relative error = |value − exact| / |exact|, computed exactly and rounded once. Exact to \
         f64 means at most 2^-53 ≈ 1.11e-16, the unit roundoff of f64: what the correctly rounded \
         f64 of the exact result reaches."
            .to_string(),
        "Cost = the median, over the points where the precision and f64 both ran and were timed \
         (same algorithm, input, size, seed, configuration, device and flag set), of the ratio of \
         their median times; below 1 is faster than f64. Cheapest = the smallest such ratio. \
         (a…b): the smallest and largest ratio, where they differ by more than 1.5×; \
         (1 point), (2 points): the ratio rests on that few."
            .to_string(),
        "\"none (best: P, E)\": no precision reaches the target everywhere it is reachable; \
         the smallest relative error measured at any point was E, by P."
            .to_string(),
    ];
    for (w, (unscored, ran)) in zero_refs {
        notes.push(format!(
            "{w}: {unscored} of {ran} points have an exact result of 0, hence no relative error; \
             they are left out here (their absolute errors are in the tables)."
        ));
    }
    Table {
        title: "Cheapest precision per accuracy target".into(),
        // Every column is words (a precision and its cost), so all are left-aligned text.
        text_columns: headers.len(),
        headers,
        rows,
        notes,
    }
}

/// `1 record`, `2 records`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A list of names as `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn measured(records: &[Record], groups: &[Group]) -> Vec<(String, String)> {
    let prov = Provenance::of(records);
    let ran = records.iter().filter(|r| r.status == Status::Ok).count();
    let oor = records
        .iter()
        .filter(|r| r.status == Status::OutOfResources)
        .count();
    let failed = records.len() - ran - oor;
    let mut workloads: Vec<String> = Vec::new();
    for g in groups {
        if !workloads.contains(&g.workload) {
            workloads.push(g.workload.clone());
        }
    }
    let workloads: Vec<String> = workloads
        .iter()
        .map(|w| {
            let algs: Vec<&str> = groups
                .iter()
                .filter(|g| &g.workload == w)
                .map(|g| g.algorithm.as_str())
                .collect();
            format!("{w} ({})", algs.join(", "))
        })
        .collect();
    let mut precisions: Vec<String> = records
        .iter()
        .map(|r| r.precision.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    precisions.sort_by_key(|p| precision_rank(p));
    let mut backends = Vec::new();
    for gpu in [false, true] {
        let mine: Vec<&Record> = records
            .iter()
            .filter(|r| r.backend.is_gpu() == gpu)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let devices: BTreeSet<&str> = mine.iter().map(|r| r.device.as_str()).collect();
        let configs: BTreeSet<Config> = mine.iter().map(|r| Config::of(r)).collect();
        let what = if gpu {
            plural(configs.len(), "launch configuration")
        } else {
            // In configuration order (1, 2, 4 … threads); one entry per thread count.
            let mut threads: Vec<String> = configs.iter().map(|c| c.backend.to_string()).collect();
            threads.dedup();
            threads.join(", ")
        };
        let devices: Vec<String> = devices.into_iter().map(String::from).collect();
        backends.push(format!(
            "{} on {} ({what})",
            if gpu { "GPU" } else { "CPU" },
            and_list(&devices)
        ));
    }
    let mut status = format!("{} points: {ran} ran", records.len());
    if oor > 0 {
        status += &format!(", {oor} did not fit the device (out of resources)");
    }
    if failed > 0 {
        status += &format!(", {failed} failed");
    }
    let revisions: BTreeSet<&str> = records.iter().map(|r| r.git_revision.as_str()).collect();
    let revisions: Vec<String> = revisions.into_iter().map(String::from).collect();
    let old = records.iter().filter(|r| r.schema < 2).count();
    let mut build = format!(
        "mantissa {}, git revision {}",
        prov.versions.join(", "),
        and_list(&revisions)
    );
    if old > 0 {
        build += &format!(
            " ({} of schema 1, which did not record the revision or build flags)",
            plural(old, "record")
        );
    }
    vec![
        ("Workloads".into(), and_list(&workloads)),
        ("Backends".into(), backends.join("; ")),
        ("Precisions".into(), precisions.join(", ")),
        ("Points".into(), status),
        ("Dates (UTC)".into(), prov.dates()),
        ("Built by".into(), build),
    ]
}

/// The summary in Markdown: the facts as a list, then the findings table and its notes.
pub(crate) fn markdown(s: &Summary) -> String {
    let mut out = String::from("## Summary\n\n");
    for (label, text) in &s.measured {
        out += &format!("- **{label}**: {text}\n");
    }
    out.push('\n');
    out += &crate::tables::render_markdown(&s.findings);
    out
}

/// The summary of `records` (which must not be empty to say anything useful).
pub(crate) fn summary(records: &[Record]) -> Summary {
    let naming = Naming::of(records);
    let gs = groups(records);
    Summary {
        measured: measured(records, &gs),
        findings: findings(&gs, &naming),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Backend, ErrorMetrics};
    use crate::tables::tests::{rec, CPU1, G1};

    /// A point with a nonzero reference and this relative error and time.
    fn point(p: &str, input: &str, backend: Backend, rel: f64, ms: f64) -> Record {
        let mut r = rec(p, input, backend, rel, ms);
        r.reference = Some(1.0);
        r.error = Some(ErrorMetrics {
            abs: rel,
            rel: Some(rel),
            ulps: None,
            digits: None,
        });
        r
    }

    fn row<'t>(t: &'t Table, backend: &str) -> &'t [String] {
        t.rows
            .iter()
            .find(|r| r[1] == backend)
            .unwrap_or_else(|| panic!("no row {backend}: {t:?}"))
    }

    #[test]
    fn the_cheapest_precision_reaching_each_target_and_its_cost() {
        let mut v = Vec::new();
        for (input, scale) in [("range1", 1.0), ("range2", 4.0)] {
            // CPU: f32 misses 1e-6 on range2, f64 misses 1e-12 there; f32x2 reaches 1e-12 but
            // not 2^-53; f64x2 everything.
            v.push(point("f32", input, CPU1, 3e-7 * scale, 1.0));
            v.push(point("f64", input, CPU1, 1e-12 * scale, 2.0));
            v.push(point("f32x2", input, CPU1, 1e-13 * scale, 3.0 * scale));
            v.push(point("f64x2", input, CPU1, 1e-30, 8.0));
            v.push(point("mp256", input, CPU1, 0.0, 100.0));
            // GPU: f32x2 is cheaper than f64 there.
            v.push(point("f64", input, G1, 1e-15, 10.0));
            v.push(point("f32x2", input, G1, 1e-13, 5.0));
        }
        let s = summary(&v);
        let t = &s.findings;
        assert_eq!(t.headers.len(), 5);
        // f32 fails 1e-6 at range2 (1.2e-6), so f64 is the cheapest there; f32x2 costs 1.5 and
        // 6 times f64 on the two inputs: the median of the ratios is 3.75.
        assert_eq!(
            row(t, "CPU")[2..],
            [
                "f64",
                "f32x2 · 3.75× f64 (2 points)",
                "f64x2 · 4.00× f64 (2 points)"
            ]
        );
        let cost = |median, min, max, points| Cost {
            median,
            min,
            max,
            points,
        };
        assert_eq!(fmt_cost(cost(3.75, 1.5, 6.0, 3)), "3.75× f64 (1.50…6.00)");
        assert_eq!(fmt_cost(cost(1.2, 1.0, 1.4, 9)), "1.20× f64");
        assert_eq!(
            fmt_cost(cost(2e-4, 2e-4, 55.7, 5)),
            "2.0e-4× f64 (2.0e-4…55.7)"
        );
        // On the GPU f32x2 (half f64's time) is the cheapest for 1e-6; nothing reaches 2^-53.
        assert_eq!(
            row(t, "GPU")[2..],
            [
                "f32x2 · 0.50× f64 (2 points)",
                "f32x2 · 0.50× f64 (2 points)",
                "none (best: f64, 1.00e-15)"
            ]
        );
        assert!(t.notes.iter().any(|n| n.contains("2^-53")));
    }

    #[test]
    fn points_beyond_every_precision_count_against_none() {
        // A quadrature: with few steps the method's error (2.6e-6) hides the arithmetic's.
        let mut v = Vec::new();
        for (n, f32_err, f64_err) in [(100, 2.61e-6, 2.65e-6), (10_000, 6.6e-7, 2.7e-10)] {
            for (p, e, ms) in [("f32", f32_err, 1.0), ("f64", f64_err, 2.0)] {
                let mut r = point(p, "-", CPU1, e, ms);
                r.size = n;
                v.push(r);
            }
        }
        let t = summary(&v).findings;
        assert_eq!(
            row(&t, "CPU")[2..],
            [
                "f32 · 0.50× f64 (2 points); out of reach at 1 of 2 points",
                "none (best: f64, 2.70e-10)",
                "none (best: f64, 2.70e-10)"
            ]
        );
    }

    #[test]
    fn markdown_opens_with_the_same_summary() {
        let records = crate::tables::tests::fixture();
        let md = crate::markdown(&records);
        let summary_at = md.find("## Summary").expect("summary");
        assert!(summary_at < md.find("## sum / serial").expect("section"));
        assert!(md.contains("- **Workloads**: sum (serial)"), "{md}");
        assert!(md.contains("### Cheapest precision per accuracy target"));
        assert!(
            md.contains("| exact to f64 (rel. ≤ 2^-53) |")
                || md.contains("exact to f64 (rel. ≤ 2^-53)")
        );
    }

    #[test]
    fn another_flag_set_is_another_row() {
        let mut v = vec![
            point("f32", "range1", G1, 1e-7, 1.0),
            point("f64", "range1", G1, 1e-16, 2.0),
        ];
        let mut fast = point("f32", "range1", G1, 1e-3, 0.5);
        fast.flags = Some("fast".into());
        v.push(fast);
        let t = summary(&v).findings;
        assert_eq!(row(&t, "GPU")[2], "f32 · 0.50× f64 (1 point)");
        // No f64 was built with `fast`: nothing to compare its f32 with, nor anything reaching.
        assert_eq!(row(&t, "GPU, flags fast")[2], "none (best: f32, 1.00e-3)");
    }

    #[test]
    fn zero_references_are_left_out_and_counted() {
        let mut v = vec![
            point("f64", "range1", CPU1, 1e-15, 1.0),
            point("f32", "range1", CPU1, 1e-3, 1.0),
        ];
        // Exact sum 0: absolute error only.
        let mut z = rec("f32", "range5", CPU1, 0.5, 1.0);
        z.reference = Some(0.0);
        v.push(z);
        let s = summary(&v);
        assert_eq!(row(&s.findings, "CPU")[2..4], ["f64", "f64"]);
        assert!(
            s.findings
                .notes
                .iter()
                .any(|n| n.starts_with("sum: 1 of 3 points have an exact result of 0")),
            "{:?}",
            s.findings.notes
        );
    }

    #[test]
    fn what_was_measured_names_workloads_backends_and_provenance() {
        let mut v = vec![point("f64", "range1", CPU1, 1e-15, 1.0)];
        let mut g = point("f32", "range1", G1, 1e-7, 1.0);
        g.status = Status::OutOfResources;
        v.push(g);
        let mut d = point("f64", "range1", CPU1, 1e-15, 1.0);
        d.workload = "dot".into();
        d.algorithm = "fma-serial".into();
        d.schema = 1;
        d.git_revision = "unknown".into();
        v.push(d);
        let s = summary(&v);
        let m: BTreeMap<String, String> = s.measured.into_iter().collect();
        assert_eq!(m["Workloads"], "sum (serial) and dot (fma-serial)");
        assert_eq!(
            m["Backends"],
            "CPU on Test CPU (cpu×1); GPU on Test GPU (1 launch configuration)"
        );
        assert_eq!(m["Precisions"], "f32, f64");
        assert_eq!(
            m["Points"],
            "3 points: 2 ran, 1 did not fit the device (out of resources)"
        );
        assert!(m["Built by"].starts_with("mantissa 0.1.0, git revision 0123456789ab and unknown"));
        assert!(m["Built by"].contains("(1 record of schema 1,"));
    }
}
