//! The report page of an analysis (`shadow.html`, written by `mantissa shadow --out DIR`): one
//! self-contained HTML file (inline CSS, no script, nothing fetched) that shows, per function,
//! the source beside what was measured on each line, so that a reader sees *where* in their
//! code the digits go and the NaNs start, not only a ranked list.
//!
//! Per function: one table per source file its sites count on ([`crate::lines::counted_position`]), covering
//! the lines from a little before its first measured line to a little after its last; a line
//! with sites shows the demotion error (largest, mean, set error Σ), the exceptions and the
//! opcodes, and its background darkens with the largest demotion error (one step per three
//! decimal digits lost) or turns red where a NaN or infinity starts. Lines whose file cannot be
//! read are listed without text. The ranked text report ([`crate::text`]) stays the summary;
//! this page is the view beside the source.

use crate::analyse::ShadowRun;
use crate::lines::{FunctionSummary, LineSummary};
use crate::source::read_lines;
use crate::text::exceptions;
use mantissa_report::escape;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The page's file name inside the output directory.
pub const PAGE_FILE: &str = "shadow.html";

/// Unmeasured source lines shown before a file's first measured line and after its last.
const CONTEXT: u32 = 3;

/// Unmeasured lines in a row beyond which the page folds them into one "…" row.
const GAP: u32 = 8;

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em;
       color: #222; }
.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.4em 0 1.2em; font-size: 0.88em; width: 100%; }
th, td { padding: 0.1em 0.5em; border-bottom: 1px solid #eee; vertical-align: top; }
th { background: #f2f2f2; text-align: left; position: sticky; top: 0; }
td.no { color: #999; text-align: right; font-family: ui-monospace, monospace; }
td.src { font-family: ui-monospace, monospace; white-space: pre; }
td.num { text-align: right; font-family: ui-monospace, monospace; white-space: nowrap; }
td.ops { color: #666; font-size: 0.85em; }
tr.quiet td.src { color: #888; }
tr.gap td { color: #aaa; text-align: center; }
tr.e1 { background: #fff6e0; } tr.e2 { background: #ffe6b8; } tr.e3 { background: #ffc98a; }
tr.e4 { background: #ffab66; }
tr.origin { background: #ffd0d0; } tr.origin td.exc { color: #a00; font-weight: 600; }
.legend span { display: inline-block; padding: 0 0.5em; margin-right: 0.3em; }
ul.notes { font-size: 0.85em; color: #555; }
";

/// The page of `run`; source files are looked up as the text report does, under `spec_dir`.
pub fn render(run: &ShadowRun, spec_dir: &Path) -> String {
    let mut h = String::new();
    let title = format!("mantissa shadow: {}", run.spec);
    write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    )
    .ok();
    writeln!(h, "<p class=\"meta\">{}</p>", escape(&meta(run))).ok();
    h.push_str(LEGEND);
    if run.functions.is_empty() {
        h.push_str("<p>No floating-point instruction was measured.</p>\n");
    }
    let mut files: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    for f in &run.functions {
        function(&mut h, f, run.analyses.shadow, &mut |file: &str| {
            files
                .entry(file.to_string())
                .or_insert_with(|| read_lines(file, spec_dir))
                .clone()
        });
    }
    let quiet = run.kernels_without_sites();
    if !quiet.is_empty() {
        writeln!(
            h,
            "<p>Kernels with nothing measured: {}.</p>",
            escape(&quiet.join(", "))
        )
        .ok();
    }
    if !run.notes.is_empty() {
        h.push_str("<details><summary>Notes</summary><ul class=\"notes\">\n");
        for n in &run.notes {
            writeln!(h, "<li>{}</li>", escape(n)).ok();
        }
        h.push_str("</ul></details>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// Writes the page into `dir` atomically; returns its path.
pub fn write(dir: &Path, run: &ShadowRun, spec_dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join(PAGE_FILE);
    mantissa_report::write_atomically(&path, render(run, spec_dir).as_bytes())
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(path)
}

const LEGEND: &str = "<p class=\"legend\">Largest demotion error on the line: \
<span style=\"background:#fff6e0\">&ge; 1e-9</span>\
<span style=\"background:#ffe6b8\">&ge; 1e-6</span>\
<span style=\"background:#ffc98a\">&ge; 1e-3</span>\
<span style=\"background:#ffab66\">&ge; 1</span>\
<span style=\"background:#ffd0d0\">a NaN or infinity starts here</span></p>\n";

fn meta(run: &ShadowRun) -> String {
    let mut m = format!(
        "flags {} · device {} · {} sites in {} functions",
        run.flags,
        run.device,
        run.sites.len(),
        run.functions.len()
    );
    if run.runs.len() > 1 {
        write!(m, " · measured in {} runs", run.runs.len()).ok();
    }
    if let Some(t) = &run.timing {
        write!(
            m,
            " · {:.3} ms as written, {:.3} ms instrumented ({:.1}×)",
            t.original_ms, t.instrumented_ms, t.ratio
        )
        .ok();
    }
    m
}

/// The row class of a line: a NaN/inf origin first, then the demotion error's decade band.
fn class(l: &LineSummary) -> &'static str {
    if l.exceptions.is_some_and(|e| e.origins() > 0) {
        return "origin";
    }
    match l.demotion.map(|d| d.max) {
        Some(m) if m >= 1.0 => "e4",
        Some(m) if m >= 1e-3 => "e3",
        Some(m) if m >= 1e-6 => "e2",
        Some(m) if m >= 1e-9 => "e1",
        _ => "",
    }
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.2e}")
    }
}

fn function(
    h: &mut String,
    f: &FunctionSummary,
    values: bool,
    source: &mut dyn FnMut(&str) -> Option<Vec<String>>,
) {
    writeln!(h, "<h2><code>{}</code></h2>", escape(&f.function)).ok();
    let mut by_file: BTreeMap<&str, Vec<&LineSummary>> = BTreeMap::new();
    for l in &f.lines {
        by_file.entry(l.file.as_str()).or_default().push(l);
    }
    for (file, lines) in by_file {
        let text = source(file);
        writeln!(
            h,
            "<h3>{}{}</h3>",
            escape(if file.is_empty() { "(no file)" } else { file }),
            if text.is_none() {
                " <small>(source not readable: measured lines only)</small>"
            } else {
                ""
            }
        )
        .ok();
        let value_heads = if values {
            "<th>digits</th><th>cancel</th>"
        } else {
            ""
        };
        let columns = if values { 8 } else { 6 };
        writeln!(
            h,
            "<table><tr><th>line</th><th>source</th><th>max</th><th>mean</th><th>sum Σ</th><th>exceptions</th>{value_heads}<th>ops</th></tr>"
        )
        .ok();
        let measured: BTreeMap<u32, &LineSummary> = lines.iter().map(|l| (l.line, *l)).collect();
        let shown: Vec<u32> = match &text {
            Some(t) => {
                let first = measured.keys().next().copied().unwrap_or(1);
                let last = measured.keys().last().copied().unwrap_or(1);
                let from = first.saturating_sub(CONTEXT).max(1);
                let to = (last + CONTEXT).min(t.len() as u32);
                let mut v: Vec<u32> = (from..=to).collect();
                // Line 0 (code before any .loc) has no text but may be measured.
                if measured.contains_key(&0) {
                    v.insert(0, 0);
                }
                v
            }
            None => measured.keys().copied().collect(),
        };
        let mut quiet_run = 0u32;
        for (k, &n) in shown.iter().enumerate() {
            let line_text = text
                .as_ref()
                .and_then(|t| n.checked_sub(1).and_then(|i| t.get(i as usize)))
                .map(String::as_str)
                .unwrap_or("");
            match measured.get(&n) {
                Some(l) => {
                    quiet_run = 0;
                    row(h, n, line_text, l, values);
                }
                None => {
                    quiet_run += 1;
                    // Fold a long unmeasured stretch: show its first lines, then one gap row.
                    let next_measured = shown[k..].iter().position(|m| measured.contains_key(m));
                    let remaining = next_measured.unwrap_or(shown.len() - k) as u32;
                    if quiet_run == GAP / 2 + 1 && remaining > GAP / 2 {
                        writeln!(
                            h,
                            "<tr class=\"gap\"><td></td><td colspan=\"6\">…</td></tr>"
                        )
                        .ok();
                    }
                    if quiet_run <= GAP / 2 || remaining <= GAP / 2 {
                        writeln!(
                            h,
                            "<tr class=\"quiet\"><td class=\"no\">{n}</td><td class=\"src\">{}</td><td colspan=\"{}\"></td></tr>",
                            escape(line_text),
                            columns - 1
                        )
                        .ok();
                    }
                }
            }
        }
        h.push_str("</table>\n");
    }
}

fn row(h: &mut String, n: u32, text: &str, l: &LineSummary, values: bool) {
    let (max, mean, sum) = match &l.demotion {
        Some(d) if d.count > 0 => (sci(d.max), sci(d.mean), sci(d.sum)),
        _ => ("-".into(), "-".into(), "-".into()),
    };
    let exc = l.exceptions.as_ref().map_or("-".into(), exceptions);
    let text = if text.is_empty() {
        l.source.as_deref().unwrap_or("")
    } else {
        text
    };
    let inlined = if l.inlined > 0 {
        format!(" ({} inlined)", l.inlined)
    } else {
        String::new()
    };
    // Digits kept against the shadow, and cancellations with the most bits they lost.
    let value_cells = match (values, &l.values) {
        (false, _) => String::new(),
        (true, None) => "<td class=\"num\">-</td><td class=\"num\">-</td>".into(),
        (true, Some(v)) => format!(
            "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
            v.digits.map_or("-".into(), |d| format!("{d:.1}")),
            if v.cancellations > 0 {
                format!("{} ({}b)", v.cancellations, v.cancel_max_bits)
            } else {
                "0".into()
            }
        ),
    };
    writeln!(
        h,
        "<tr class=\"{}\"><td class=\"no\">{n}</td><td class=\"src\">{}</td><td class=\"num\">{max}</td><td class=\"num\">{mean}</td><td class=\"num\">{sum}</td><td class=\"num exc\">{}</td>{value_cells}<td class=\"ops\">{}{}</td></tr>",
        class(l),
        escape(text),
        escape(&exc),
        escape(&l.opcodes.join(" ")),
        escape(&inlined)
    )
    .ok();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn without_readable_source_the_measured_lines_are_listed_with_their_numbers() {
        let page = render(&fixture::run(), Path::new("/nonexistent"));
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(!page.contains("<script"));
        assert!(page.contains("source not readable"));
        for line in [20, 22, 24, 26] {
            assert!(
                page.contains(&format!("<td class=\"no\">{line}</td>")),
                "line {line}"
            );
        }
        // The NaN origin's row is marked, the cancellation (max 1) is in the darkest band.
        assert!(page.contains("<tr class=\"origin\"><td class=\"no\">22</td>"));
        assert!(page.contains("<tr class=\"e4\"><td class=\"no\">20</td>"));
        assert!(page.contains("<tr class=\"e3\"><td class=\"no\">26</td>"));
        assert!(page.contains("Kernels with nothing measured: copy."));
    }

    #[test]
    fn with_the_source_each_measured_line_sits_beside_its_text_and_long_gaps_fold() {
        let dir = std::env::temp_dir().join(format!("mantissa-page-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text: Vec<String> = (1..=40).map(|k| format!("line_{k} <x> & y;")).collect();
        std::fs::write(dir.join("shadow.cu"), text.join("\n")).unwrap();
        let mut run = fixture::run();
        for s in &mut run.sites {
            s.site.file = "shadow.cu".into();
        }
        run.functions = crate::lines::summarise(&run.sites);
        let page = render(&run, &dir);
        // Escaped text beside its number; context before the first (20) and after the last (26).
        assert!(page
            .contains("<td class=\"no\">20</td><td class=\"src\">line_20 &lt;x&gt; &amp; y;</td>"));
        assert!(page.contains("<td class=\"no\">17</td>"));
        assert!(!page.contains("<td class=\"no\">16</td>"));
        assert!(page.contains("<td class=\"no\">29</td>"));
        assert!(!page.contains("<td class=\"no\">30</td>"));
        // Lines 21, 23, 25 are unmeasured and shown quietly (short gaps are not folded).
        assert!(page.contains("<tr class=\"quiet\"><td class=\"no\">21</td>"));
        assert!(!page.contains("<tr class=\"gap\">"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_long_unmeasured_stretch_is_folded_into_one_gap_row() {
        let dir = std::env::temp_dir().join(format!("mantissa-page-gap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text: Vec<String> = (1..=80).map(|k| format!("l{k}")).collect();
        std::fs::write(dir.join("shadow.cu"), text.join("\n")).unwrap();
        let mut run = fixture::run();
        for s in &mut run.sites {
            s.site.file = "shadow.cu".into();
        }
        run.sites[3].site.line = 60;
        run.functions = crate::lines::summarise(&run.sites);
        let page = render(&run, &dir);
        assert_eq!(page.matches("<tr class=\"gap\">").count(), 1);
        // The stretch 25..59 keeps its first and last GAP/2 lines.
        assert!(page.contains("<td class=\"no\">25</td>"));
        assert!(page.contains("<td class=\"no\">59</td>"));
        assert!(!page.contains("<td class=\"no\">40</td>"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn with_shadow_values_each_line_shows_its_digits_and_cancellations() {
        let mut run = fixture::run();
        run.analyses.shadow = true;
        let page = render(&run, Path::new("/nonexistent"));
        assert!(page.contains("<th>digits</th><th>cancel</th>"));
        // The fixture's lines carry no values: a dash in each value column.
        assert!(page.contains("<td class=\"num\">-</td><td class=\"num\">-</td><td class=\"ops\">"));
        run.analyses.shadow = false;
        assert!(!render(&run, Path::new("/nonexistent")).contains("<th>digits</th>"));
    }
}
