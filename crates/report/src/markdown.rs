//! The report in Markdown, for a terminal: [`markdown`] prints the header, the summary and every
//! table of [`crate::tables`] as pipe tables whose columns line up; tables too wide for a
//! terminal are split in two.

use std::fmt::Write as _;

use crate::record::Record;
use crate::tables::{groups, precision_rank, Naming, Provenance, Table};

/// Precision columns beyond which a terminal table is split in two.
const MAX_TERMINAL_PRECISIONS: usize = 10;

/// Splits a table wider than a terminal into the fixed-width formats (f32 … f64x2, with the
/// slowdown columns that compare them) and the arbitrary-precision ones (mp…, exact), repeating
/// the row labels. Footnotes go under the second part. Narrow tables come back unchanged.
pub(crate) fn split_wide(t: Table) -> Vec<Table> {
    let is_fixed = |h: &str| precision_rank(h).0 == 0 || h.starts_with('(');
    let data = t.headers.len() - t.text_columns;
    let fixed: Vec<usize> = (t.text_columns..t.headers.len())
        .filter(|&c| is_fixed(&t.headers[c]))
        .collect();
    let wide: Vec<usize> = (t.text_columns..t.headers.len())
        .filter(|&c| !is_fixed(&t.headers[c]))
        .collect();
    let precisions = (t.text_columns..t.headers.len())
        .filter(|&c| !t.headers[c].starts_with('('))
        .count();
    if precisions <= MAX_TERMINAL_PRECISIONS || fixed.is_empty() || wide.is_empty() {
        return vec![t];
    }
    debug_assert_eq!(fixed.len() + wide.len(), data);
    let part = |cols: &[usize], what: &str, notes: Vec<String>| {
        let keep: Vec<usize> = (0..t.text_columns).chain(cols.iter().copied()).collect();
        Table {
            title: format!("{} — {what}", t.title),
            headers: keep.iter().map(|&c| t.headers[c].clone()).collect(),
            rows: t
                .rows
                .iter()
                .map(|r| {
                    keep.iter()
                        .map(|&c| r.get(c).cloned().unwrap_or_default())
                        .collect()
                })
                .collect(),
            text_columns: t.text_columns,
            notes,
        }
    };
    vec![
        part(&fixed, "fixed-width formats", Vec::new()),
        part(&wide, "arbitrary precision", t.notes.clone()),
    ]
}

/// A Markdown pipe table whose columns also line up in a terminal.
pub(crate) fn render_markdown(t: &Table) -> String {
    let ncol = t.headers.len();
    let width = |c: usize| {
        t.rows
            .iter()
            .filter_map(|r| r.get(c))
            .chain([&t.headers[c]])
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
            .max(3)
    };
    let widths: Vec<usize> = (0..ncol).map(width).collect();
    let cell = |c: usize, s: &str| {
        let pad = " ".repeat(widths[c].saturating_sub(s.chars().count()));
        if c < t.text_columns {
            format!("{s}{pad}")
        } else {
            format!("{pad}{s}")
        }
    };
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = format!("### {}\n\n", t.title);
    out += &line(
        t.headers
            .iter()
            .enumerate()
            .map(|(c, h)| cell(c, h))
            .collect(),
    );
    out += &line(
        (0..ncol)
            .map(|c| {
                if c < t.text_columns {
                    "-".repeat(widths[c])
                } else {
                    format!("{}:", "-".repeat(widths[c] - 1))
                }
            })
            .collect(),
    );
    for r in &t.rows {
        out += &line(
            (0..ncol)
                .map(|c| cell(c, r.get(c).map_or("", String::as_str)))
                .collect(),
        );
    }
    if !t.notes.is_empty() {
        out.push('\n');
        for n in &t.notes {
            out += n;
            out.push('\n');
        }
    }
    out
}

/// The Markdown report's title and its line of provenance: how many records, which versions,
/// when, on which devices.
pub(crate) fn header(records: &[Record]) -> String {
    let prov = Provenance::of(records);
    let mut out = String::from("# mantissa report\n\n");
    let _ = writeln!(
        out,
        "{} records; mantissa {}; {}; devices: {}.",
        records.len(),
        prov.versions.join(", "),
        prov.dates(),
        prov.devices.join(", ")
    );
    out.push('\n');
    out
}

/// The Markdown tables of a set of records: a header line, then per workload and algorithm its
/// accuracy tables and time tables. Never fails; no records gives a one-line message.
pub fn markdown(records: &[Record]) -> String {
    if records.is_empty() {
        return "No records: nothing to report (has the study completed a point yet?)\n".into();
    }
    let naming = Naming::of(records);
    let mut out = header(records);
    out += &crate::summary::markdown(&crate::summary::summary(records));
    for g in groups(records) {
        let _ = write!(out, "\n## {}\n", g.title());
        let tables = g.accuracy.iter().map(|a| a.table(&naming));
        let tables = tables.chain(g.timing.iter().map(|t| t.table(&naming)));
        let tables = tables.chain(g.extra_tables(&naming));
        for t in tables.flat_map(split_wide) {
            out.push('\n');
            out += &render_markdown(&t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::tables::tests::{fixture, rec, CPU1};

    #[test]
    fn markdown_of_the_fixture_has_header_sections_and_aligned_tables() {
        let md = markdown(&fixture());
        assert!(md.starts_with("# mantissa report\n\n"), "{md}");
        assert!(md.contains("devices: Test CPU, Test GPU."), "{md}");
        assert!(md.contains("\n## sum / serial\n"), "{md}");
        assert!(
            md.contains("### Absolute error — cpu×1, cpu×2 (n = 2^20)"),
            "{md}"
        );
        assert!(md.contains("### Time, median ms (n = 2^20)"), "{md}");
        // Every line of a table has the same width (columns line up in a terminal).
        for block in md.split("\n\n").filter(|b| b.starts_with('|')) {
            let widths: BTreeSet<usize> = block.lines().map(|l| l.chars().count()).collect();
            assert_eq!(widths.len(), 1, "ragged table:\n{block}");
        }
    }

    #[test]
    fn tables_with_many_precisions_split_for_the_terminal() {
        let all = [
            "f32", "comp32", "comp32n", "f32x2", "f64", "comp64", "comp64n", "f64x2", "mp32",
            "mp64", "mp128", "mp256", "mp512", "mp1024", "exact",
        ];
        let records: Vec<Record> = all
            .iter()
            .map(|p| rec(p, "range1", CPU1, 1.2345e-10, 1.0))
            .collect();
        let naming = Naming::of(&records);
        let g = &groups(&records)[0];
        let parts = split_wide(g.accuracy[0].table(&naming));
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].headers[1..], all[..8]);
        assert_eq!(parts[1].headers[1..], all[8..]);
        assert_eq!(parts[1].rows[0][0], "range1");
        assert!(parts[0].title.ends_with("— fixed-width formats"));
        let time = split_wide(g.timing[0].table(&naming));
        assert_eq!(
            time[0].headers.last().map(String::as_str),
            Some("(f64x2−f32)/f32")
        );
        assert_eq!(time[0].rows[0].last().map(String::as_str), Some("0.00"));
        // The fixture's five precisions stay in one table.
        let records = fixture();
        let naming = Naming::of(&records);
        assert_eq!(
            split_wide(groups(&records)[0].accuracy[0].table(&naming)).len(),
            1
        );
        let md = markdown(&records);
        assert!(!md.contains("fixed-width formats"));
    }

    #[test]
    fn markdown_of_nothing_is_a_message() {
        assert!(markdown(&[]).starts_with("No records"));
    }
}
