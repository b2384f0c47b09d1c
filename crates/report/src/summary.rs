//! The answer first: what a set of records measured, and per workload the cheapest precision
//! that reaches an error of 10^-6, 10^-12 and "exact to f64", with its cost against f64 on each
//! backend. [`crate::html`] and [`crate::markdown::markdown`] open with it, and `mantissa study`
//! prints it ([`summary_markdown`]).
//!
//! Definitions (the page states them too):
//! - A point's error is its record's relative error `error.rel` (|value − reference| /
//!   |reference|, computed exactly, rounded once). A point whose exact result is 0 has none: it
//!   is judged by its absolute error instead, in rows of its own, as seed 000 reports such points
//!   (ch. 5, Tables 7 and 11: for its zero-sum arrays the table entry is the computed sum itself,
//!   the absolute error, unscaled). A non-finite error counts as infinitely large.
//! - A precision *reaches* a target on a backend when its largest error over every point of that
//!   workload and algorithm it ran there (all inputs, sizes, seeds and configurations) is at most
//!   the target. "Exact to f64" is an error of at most 2^-53, the unit roundoff of f64: what the
//!   correctly rounded f64 of the exact result is guaranteed to reach.
//! - Costs, "cheapest" and ties in time: see [`crate::cheapest`].

use std::collections::{BTreeMap, BTreeSet};

use crate::cheapest::{and_list, candidates, cell, plural, BASELINE};
use crate::record::{Record, Status};
use crate::tables::{groups, precision_rank, Config, Group, Naming, Provenance, Table};

/// The accuracy targets, as (column header, largest admissible error).
pub(crate) const TARGETS: [(&str, f64); 3] = [
    ("error ≤ 1e-6", 1e-6),
    ("error ≤ 1e-12", 1e-12),
    // 2^-53: the unit roundoff of f64.
    ("exact to f64 (error ≤ 2^-53)", 1.1102230246251565e-16),
];

/// What the report opens with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// "What was measured", one line per fact: (label, text).
    pub measured: Vec<(String, String)>,
    /// The findings: a row per workload, algorithm, backend and error measure; a column per
    /// target.
    pub findings: Table,
}

/// Which error a row judges its points by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Measure {
    /// |value − exact| / |exact|.
    Relative,
    /// |value − exact| where the exact result is 0 (seed 000's zero-sum arrays).
    AbsoluteAtZero,
}

impl Measure {
    /// The row's text in the table's "error" column.
    fn label(self) -> &'static str {
        match self {
            Measure::Relative => "relative",
            Measure::AbsoluteAtZero => "absolute (exact result 0)",
        }
    }
}

/// The error a record that ran is judged by, and by which measure (see the module docs).
fn scored(r: &Record) -> Option<(Measure, f64)> {
    if r.status != Status::Ok {
        return None;
    }
    let e = r.error.as_ref()?;
    let (measure, x) = match e.rel {
        Some(rel) => (Measure::Relative, rel),
        None if r.reference == Some(0.0) => (Measure::AbsoluteAtZero, e.abs),
        None => return None,
    };
    Some((measure, if x.is_nan() { f64::INFINITY } else { x.abs() }))
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
            let measures: BTreeMap<Measure, usize> = mine.iter().filter_map(|r| scored(r)).fold(
                BTreeMap::new(),
                |mut m, (measure, _)| {
                    *m.entry(measure).or_default() += 1;
                    m
                },
            );
            if let Some(&zero) = measures.get(&Measure::AbsoluteAtZero) {
                let z = zero_refs.entry(g.workload.clone()).or_default();
                z.0 += zero;
                z.1 += ran;
            }
            for &measure in measures.keys() {
                // Every record of the side stays in, so f64's times are there to cost against.
                let cands =
                    candidates(&mine, |r| scored(r).filter(|s| s.0 == measure).map(|s| s.1));
                let mut row = vec![g.title(), side.label(naming), measure.label().to_string()];
                row.extend(TARGETS.iter().map(|&(_, t)| cell(&cands, t)));
                rows.push(row);
            }
        }
    }
    let mut headers = vec![
        "workload / algorithm".to_string(),
        "backend".to_string(),
        "error".to_string(),
    ];
    headers.extend(TARGETS.iter().map(|(h, _)| h.to_string()));
    // The error column says which rows are judged by the absolute error; without such rows
    // every row would say "relative", which the notes already do.
    if zero_refs.is_empty() {
        headers.remove(2);
        for row in &mut rows {
            row.remove(2);
        }
    }
    let mut notes = vec![
        "Each cell: the cheapest precision whose largest error, over every point it ran on that \
         backend (all inputs, sizes, seeds and configurations), is at most the target; then its \
         cost against f64. A point is out of reach when no precision reaches the target there \
         (the error is the method's, e.g. a quadrature's with few steps): it counts against \
         none, and the cell says how many there were."
            .to_string(),
        "Relative error = |value − exact| / |exact|, computed exactly and rounded once. Exact to \
         f64 means at most 2^-53 ≈ 1.11e-16, the unit roundoff of f64: what the correctly rounded \
         f64 of the exact result reaches."
            .to_string(),
        format!(
            "Cost = the median, over the points where the precision and {BASELINE} both ran and \
             were timed (same algorithm, input, size, seed, configuration, device and flag set), \
             of the ratio of their median times; below 1 is faster than {BASELINE}. Cheapest = \
             the smallest such ratio. (a…b): the smallest and largest ratio, where they differ \
             by more than 1.5×; (1 point), (2 points): the ratio rests on that few. \
             \"a…b× {BASELINE} (too far apart for one figure)\": the ratios differ by more than \
             100× between points (the cost depends on the size, or a timing is suspect): no \
             median is given, and the tables show each point."
        ),
        "\"A or B (tied in time)\": both reach the target and the measurements cannot tell their \
         times apart: at no more than half of the points where both ran was one's median time \
         below the other's fastest repetition. Tied precisions are named narrowest first, so \
         timing noise cannot flip the answer between them."
            .to_string(),
        "\"none (best: P, E)\": no precision reaches the target everywhere it is reachable; \
         the smallest error measured at any point was E, by P."
            .to_string(),
    ];
    if !zero_refs.is_empty() {
        notes.push(
            "Error \"absolute (exact result 0)\": a point whose exact result is 0 (the zero-sum \
             arrays of seed 000, ch. 5) has no relative error. It is judged by its absolute \
             error, unscaled, against the same targets, as seed 000 reports these points \
             (Table 11, and Table 7 for the GMP ranges, list the computed sum itself); such \
             points have rows of their own so the two measures never mix."
                .to_string(),
        );
    }
    for (w, (zero, ran)) in zero_refs {
        notes.push(format!(
            "{w}: {zero} of {ran} points have an exact result of 0 and are judged by their \
             absolute error."
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
    out += &crate::markdown::render_markdown(&s.findings);
    out
}

/// What `mantissa study` prints when a run ends: the report's header line and its summary in
/// Markdown, without the per-workload tables ([`crate::markdown`] has everything).
pub fn summary_markdown(records: &[Record]) -> String {
    if records.is_empty() {
        return crate::markdown::markdown(records);
    }
    let mut out = crate::markdown::header(records);
    out += &markdown(&summary(records));
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
    use crate::cheapest::{fmt_cost, Cost};
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
        // 6 times f64 on the two inputs: the median of the ratios is 3.75. f64x2 (4× f64) also
        // reaches 1e-12, and f32x2 is faster than it at one of the two points only: a tie.
        assert_eq!(
            row(t, "CPU")[2..],
            [
                "f64",
                "f32x2 or f64x2 (tied in time) · 3.75× f64 (2 points)",
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
        // The shipped H200 run's pi-midpoint/serial on the CPU: ratios from 2.2e-4 to 55.7
        // (double-word times flat at 28 µs from 100 to 10^5 steps, then 83 ms at 10^6). Their
        // median, 0.02, would be one figure for costs 250,000× apart: the range alone is shown.
        assert_eq!(
            fmt_cost(cost(0.0204, 2.2e-4, 55.7, 5)),
            "2.2e-4…55.7× f64 (5 points, too far apart for one figure)"
        );
        assert_eq!(fmt_cost(cost(10.8, 4.14, 62.8, 7)), "10.8× f64 (4.14…62.8)");
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
        assert!(md.contains("exact to f64 (error ≤ 2^-53)"));
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

    fn row_of<'t>(t: &'t Table, backend: &str, measure: &str) -> &'t [String] {
        t.rows
            .iter()
            .find(|r| r[1] == backend && r[2] == measure)
            .unwrap_or_else(|| panic!("no row {backend} {measure}: {t:?}"))
    }

    #[test]
    fn zero_results_are_judged_by_their_absolute_error_in_rows_of_their_own() {
        let mut v = vec![
            point("f64", "general-range1", CPU1, 1e-15, 1.0),
            point("f32", "general-range1", CPU1, 1e-3, 0.5),
        ];
        // Seed 000's zero-sum arrays: the exact sum is 0, the error is the computed sum (Table
        // 11's f32, double, double2 and CUMP entries for range 1 at 8M elements, and a 1e-9).
        for (p, abs, ms) in [
            ("f32", 1.38e-1, 0.5),
            ("f64", 3.18e-10, 1.0),
            ("f64x2", 0.0, 2.0),
            ("mp256", 0.0, 40.0),
        ] {
            let mut z = rec(p, "range1", CPU1, abs, ms);
            z.reference = Some(0.0);
            v.push(z);
        }
        let s = summary(&v);
        let rel = row_of(&s.findings, "CPU", "relative");
        assert_eq!(rel[3..5], ["f64", "f64"]);
        let zero = row_of(&s.findings, "CPU", "absolute (exact result 0)");
        // f64's absolute error 3.18e-10 reaches 1e-6 but not 1e-12; f64x2 sums exactly.
        assert_eq!(
            zero[3..],
            [
                "f64",
                "f64x2 · 2.00× f64 (1 point)",
                "f64x2 · 2.00× f64 (1 point)"
            ]
        );
        let notes = &s.findings.notes;
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("sum: 4 of 6 points have an exact result of 0")),
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("Table 11")), "{notes:?}");
        // The page says it in its table too: the error column names the measure of each row.
        assert!(s.findings.headers.contains(&"error".to_string()));
        // A zero-result point that failed, or has no error, is not judged at all.
        let mut failed = rec("f32", "range2", CPU1, 0.0, 1.0);
        failed.reference = Some(0.0);
        failed.status = Status::Failed;
        assert_eq!(scored(&failed), None);
        let mut nan = rec("f32", "range2", CPU1, f64::NAN, 1.0);
        nan.reference = Some(0.0);
        assert_eq!(scored(&nan), Some((Measure::AbsoluteAtZero, f64::INFINITY)));
        // Without a zero point the note and the error column are absent.
        let t = summary(&v[..2]).findings;
        assert!(!t.notes.iter().any(|n| n.contains("Table 11")));
        assert_eq!(t.rows.len(), 1);
        assert!(!t.headers.contains(&"error".to_string()));
        assert_eq!(t.rows[0].len(), t.headers.len());
    }

    #[test]
    fn f32_and_f64_within_their_timing_spread_tie_in_the_table() {
        // The CPU sum of seed 000 at two sizes: f32 a hair faster by its median, well inside
        // the repetitions' spread.
        let mut v = Vec::new();
        for (n, f32_ms, f64_ms) in [
            (1024u64, [0.9, 1.0, 1.3], [0.95, 1.02, 1.2]),
            (4096, [3.8, 4.0, 4.5], [3.9, 4.1, 4.4]),
        ] {
            for (p, rel, samples) in [("f32", 3e-7, f32_ms), ("f64", 1e-15, f64_ms)] {
                let mut r = point(p, "general-range1", CPU1, rel, 1.0);
                r.size = n;
                r.time = crate::record::TimeStats::from_samples(&samples);
                v.push(r);
            }
        }
        let t = summary(&v).findings;
        assert_eq!(row(&t, "CPU")[2], "f32 or f64 (tied in time)");
        assert_eq!(row(&t, "CPU")[3], "f64");
        assert!(t.notes.iter().any(|n| n.contains("tied in time")));
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
