//! Searches laid out as seed 002's Table 4: one row per error threshold, one column per strategy
//! and performance threshold (mode 1 has one column, it has no performance threshold); a cell is
//! the chosen configuration's speed-up with the trials run, `46.4% (3)`, or `– (12)` when the
//! search chose nothing. Plain text for terminals and Markdown for reports.

use crate::evaluate::ErrorThreshold;
use crate::strategy::{Search, STRATEGIES};
use std::cmp::Ordering;

/// A column: one strategy under one performance threshold.
#[derive(Debug, Clone, PartialEq)]
struct Column {
    strategy: String,
    speedup_pct: Option<f64>,
}

/// The table's contents before formatting.
struct Layout {
    rows: Vec<ErrorThreshold>,
    columns: Vec<Column>,
    /// `cells[row][column]`; empty where no search was given for that pair.
    cells: Vec<Vec<String>>,
}

/// Digits ascending, the spec's tolerance last.
fn error_order(a: &ErrorThreshold, b: &ErrorThreshold) -> Ordering {
    match (a, b) {
        (ErrorThreshold::Digits(x), ErrorThreshold::Digits(y)) => x.total_cmp(y),
        (ErrorThreshold::Digits(_), ErrorThreshold::SpecTolerance) => Ordering::Less,
        (ErrorThreshold::SpecTolerance, ErrorThreshold::Digits(_)) => Ordering::Greater,
        (ErrorThreshold::SpecTolerance, ErrorThreshold::SpecTolerance) => Ordering::Equal,
    }
}

fn row_label(e: &ErrorThreshold) -> String {
    match e {
        ErrorThreshold::Digits(d) => format!("{d}"),
        ErrorThreshold::SpecTolerance => "spec".into(),
    }
}

fn threshold_label(p: Option<f64>) -> String {
    p.map_or_else(|| "any".into(), |p| format!("{p}%"))
}

/// A cell: the chosen configuration's speed-up and the trials, `– (n)` when nothing was chosen.
fn cell(search: &Search) -> String {
    let trials = search.trials;
    match (
        &search.chosen,
        search.chosen_trial.as_ref().and_then(|t| t.speedup_pct),
    ) {
        (Some(_), Some(s)) => format!("{s:.1}% ({trials})"),
        // Chosen but not timed: only an evaluator that ignores `Need::Speed` gets here.
        (Some(_), None) => format!("untimed ({trials})"),
        (None, _) => format!("– ({trials})"),
    }
}

fn layout(searches: &[Search]) -> Layout {
    let mut rows: Vec<ErrorThreshold> = Vec::new();
    let mut columns: Vec<Column> = Vec::new();
    for s in searches {
        if !rows.contains(&s.thresholds.error) {
            rows.push(s.thresholds.error);
        }
        let column = Column {
            strategy: s.strategy.clone(),
            speedup_pct: s.thresholds.speedup_pct,
        };
        if !columns.contains(&column) {
            columns.push(column);
        }
    }
    rows.sort_by(error_order);
    // Columns in the registry's order (the seed's); a strategy a document names that the
    // registry lacks follows, in its order of appearance (stable sort).
    let rank = |name: &str| {
        STRATEGIES
            .iter()
            .position(|s| s.name() == name)
            .unwrap_or(STRATEGIES.len())
    };
    let first_seen = |name: &str| columns.iter().position(|c| c.strategy == name);
    let mut order: Vec<(usize, Option<usize>, Column)> = columns
        .iter()
        .map(|c| (rank(&c.strategy), first_seen(&c.strategy), c.clone()))
        .collect();
    order.sort_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| match (a.2.speedup_pct, b.2.speedup_pct) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (x, y) => x.is_some().cmp(&y.is_some()),
            })
    });
    let columns: Vec<Column> = order.into_iter().map(|(_, _, c)| c).collect();

    let cells = rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|col| {
                    // The first search given for a cell fills it.
                    searches
                        .iter()
                        .find(|s| {
                            s.thresholds.error == *row
                                && s.strategy == col.strategy
                                && s.thresholds.speedup_pct == col.speedup_pct
                        })
                        .map(cell)
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    Layout {
        rows,
        columns,
        cells,
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

/// The table in plain text, columns aligned: a header line of strategies (each named once, over
/// its first column), a header line of performance thresholds (`any` for mode 1), then one line
/// per error threshold. Empty for no searches.
pub fn text(searches: &[Search]) -> String {
    if searches.is_empty() {
        return String::new();
    }
    let l = layout(searches);
    let mut strategies = vec!["error".to_string()];
    let mut thresholds = vec!["(digits)".to_string()];
    for (i, c) in l.columns.iter().enumerate() {
        let opens_group = i == 0 || l.columns[i - 1].strategy != c.strategy;
        strategies.push(if opens_group {
            c.strategy.clone()
        } else {
            String::new()
        });
        thresholds.push(threshold_label(c.speedup_pct));
    }
    let mut lines = vec![strategies, thresholds];
    for (row, cells) in l.rows.iter().zip(&l.cells) {
        lines.push(
            std::iter::once(row_label(row))
                .chain(cells.iter().cloned())
                .collect(),
        );
    }
    let widths: Vec<usize> = (0..=l.columns.len())
        .map(|c| lines.iter().map(|line| width(&line[c])).max().unwrap_or(0))
        .collect();
    lines
        .iter()
        .map(|line| {
            let joined: Vec<String> = line.iter().zip(&widths).map(|(s, &w)| pad(s, w)).collect();
            format!("{}\n", joined.join("  ").trim_end())
        })
        .collect()
}

/// The table as a Markdown pipe table (one header row: `mode 2, 5%`), padded so that it also
/// lines up as text. Empty for no searches.
pub fn markdown(searches: &[Search]) -> String {
    if searches.is_empty() {
        return String::new();
    }
    let l = layout(searches);
    let header: Vec<String> = std::iter::once("error (digits)".to_string())
        .chain(l.columns.iter().map(|c| match c.speedup_pct {
            Some(_) => format!("{}, {}", c.strategy, threshold_label(c.speedup_pct)),
            None => c.strategy.clone(),
        }))
        .collect();
    let body: Vec<Vec<String>> = l
        .rows
        .iter()
        .zip(&l.cells)
        .map(|(row, cells)| {
            std::iter::once(row_label(row))
                .chain(cells.iter().cloned())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            body.iter()
                .map(|r| width(&r[c]))
                .chain([width(&header[c]), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let row = |r: &[String]| line(r.iter().zip(&widths).map(|(s, &w)| pad(s, w)).collect());
    let mut out = row(&header);
    out += &line(widths.iter().map(|&w| "-".repeat(w)).collect());
    for r in &body {
        out += &row(r);
    }
    out
}

/// The table as HTML: a header row of strategies (each spanning its thresholds' columns), a
/// header row of performance thresholds, then one row per error threshold, numbers right-aligned
/// (class `num`). Empty for no searches.
pub fn html(searches: &[Search]) -> String {
    if searches.is_empty() {
        return String::new();
    }
    let l = layout(searches);
    let esc = mantissa_report::escape;
    let mut out =
        String::from("<table class=\"summary\">\n<tr><th rowspan=\"2\">error (digits)</th>");
    let mut i = 0;
    while i < l.columns.len() {
        let span = l.columns[i..]
            .iter()
            .take_while(|c| c.strategy == l.columns[i].strategy)
            .count();
        out += &format!(
            "<th colspan=\"{span}\">{}</th>",
            esc(&l.columns[i].strategy)
        );
        i += span;
    }
    out += "</tr>\n<tr>";
    for c in &l.columns {
        out += &format!("<th>{}</th>", esc(&threshold_label(c.speedup_pct)));
    }
    out += "</tr>\n";
    for (row, cells) in l.rows.iter().zip(&l.cells) {
        out += &format!("<tr><th>{}</th>", esc(&row_label(row)));
        for c in cells {
            out += &format!("<td class=\"num\">{}</td>", esc(c));
        }
        out += "</tr>\n";
    }
    out + "</table>\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::{Thresholds, Trial};
    use crate::strategy::{DELTA_DEBUGGING, EXHAUSTIVE};
    use crate::unit::Config;

    fn search(
        strategy: &str,
        digits: f64,
        pct: Option<f64>,
        speedup: Option<f64>,
        trials: usize,
    ) -> Search {
        Search {
            strategy: strategy.into(),
            thresholds: Thresholds {
                error: ErrorThreshold::Digits(digits),
                speedup_pct: pct,
            },
            chosen: speedup.map(|_| Config::from([0])),
            chosen_trial: speedup.map(|s| Trial {
                digits,
                within_tolerance: None,
                speedup_pct: Some(s),
                noise_pct: Some(0.1),
                time_ms: Some(1.0),
                failed: None,
            }),
            trials,
            log: Vec::new(),
            first_met_at: None,
            unused_ahead: 0,
        }
    }

    /// Seed 002's LULESH rows for 3 and 6 digits (modes 1, 2 at 5 and 10 %), with the baseline at
    /// 5 %, given out of order: rows and columns come out in the table's order.
    fn lulesh() -> Vec<Search> {
        vec![
            search(DELTA_DEBUGGING, 3.0, Some(5.0), Some(11.6), 11),
            search("mode 2", 6.0, Some(10.0), None, 79),
            search("mode 2", 3.0, Some(10.0), Some(30.4), 2),
            search("mode 1", 6.0, None, Some(0.3), 12),
            search("mode 2", 3.0, Some(5.0), Some(9.8), 1),
            search("mode 1", 3.0, None, Some(9.8), 1),
            search("mode 2", 6.0, Some(5.0), Some(8.4), 79),
        ]
    }

    #[test]
    fn text_table_has_table_4_s_shape() {
        // Column widths 8, 9, 9, 9, 15 (the widest entry of each), two spaces between columns,
        // no trailing spaces; the baseline has no 6-digit search, so its cell is empty.
        let expected = [
            format!(
                "error{}mode 1{}mode 2{}delta debugging",
                " ".repeat(5),
                " ".repeat(5),
                " ".repeat(16)
            ),
            format!(
                "(digits)  any{}5%{}10%{}5%",
                " ".repeat(8),
                " ".repeat(9),
                " ".repeat(8)
            ),
            format!(
                "3{}9.8% (1)   9.8% (1)   30.4% (2)  11.6% (11)",
                " ".repeat(9)
            ),
            format!("6{}0.3% (12)  8.4% (79)  – (79)", " ".repeat(9)),
        ];
        assert_eq!(text(&lulesh()), expected.map(|l| l + "\n").concat());
    }

    #[test]
    fn markdown_table_names_each_column() {
        assert_eq!(
            markdown(&lulesh()),
            "| error (digits) | mode 1    | mode 2, 5% | mode 2, 10% | delta debugging, 5% |\n\
             | -------------- | --------- | ---------- | ----------- | ------------------- |\n\
             | 3              | 9.8% (1)  | 9.8% (1)   | 30.4% (2)   | 11.6% (11)          |\n\
             | 6              | 0.3% (12) | 8.4% (79)  | – (79)      |                     |\n"
        );
    }

    #[test]
    fn spec_tolerance_is_the_last_row_and_unknown_strategies_the_last_columns() {
        let mut spec = search(EXHAUSTIVE, 0.0, Some(5.0), Some(50.0), 31);
        spec.thresholds.error = ErrorThreshold::SpecTolerance;
        let searches = [
            spec,
            search("random", 4.5, Some(5.0), None, 100),
            search(EXHAUSTIVE, 4.5, Some(5.0), Some(-1.25), 31),
            search("mode 3", 4.5, Some(5.0), Some(12.0), 2),
            search("mode 3", 4.5, None, Some(3.0), 1),
        ];
        assert_eq!(
            markdown(&searches),
            "| error (digits) | mode 3   | mode 3, 5% | exhaustive, 5% | random, 5% |\n\
             | -------------- | -------- | ---------- | -------------- | ---------- |\n\
             | 4.5            | 3.0% (1) | 12.0% (2)  | -1.2% (31)     | – (100)    |\n\
             | spec           |          |            | 50.0% (31)     |            |\n"
        );
    }

    #[test]
    fn html_table_spans_each_strategy_over_its_thresholds() {
        let t = html(&lulesh());
        assert!(t.starts_with("<table class=\"summary\">"), "{t}");
        assert!(
            t.contains("<th>mode 1</th><th colspan=\"2\">mode 2</th><th>delta debugging</th></tr>")
                || t.contains("<th colspan=\"1\">mode 1</th><th colspan=\"2\">mode 2</th><th colspan=\"1\">delta debugging</th></tr>"),
            "{t}"
        );
        assert!(
            t.contains("<tr><th>any</th><th>5%</th><th>10%</th><th>5%</th></tr>"),
            "{t}"
        );
        assert!(
            t.contains("<tr><th>6</th><td class=\"num\">0.3% (12)</td><td class=\"num\">8.4% (79)</td><td class=\"num\">– (79)</td><td class=\"num\"></td></tr>"),
            "{t}"
        );
        assert_eq!(t.matches("<tr>").count(), 4);
    }

    #[test]
    fn no_searches_no_table() {
        assert_eq!(text(&[]), "");
        assert_eq!(markdown(&[]), "");
        assert_eq!(html(&[]), "");
    }
}
