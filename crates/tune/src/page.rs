//! The report page of a tuning run (`tune.html`, written by `mantissa tune` into its output
//! directory): one self-contained HTML file (inline CSS and SVG, no script) with the table of
//! seed 002 Table 4's shape, the scatter of speed-up against digits of every timed trial (each
//! configuration once, coloured by the search that ran it first; the chosen ones ringed), and
//! per search what it chose.
//!
//! The scatter is drawn by hand rather than through the report crate's plots, which are made
//! from study records: here a point is a configuration, its x the worst digits over the outputs
//! (bit-identical outputs drawn at the right edge), its y the speed-up in % of the ideal with its
//! noise as a vertical bar.

use crate::flow::TuneRun;
use crate::store::config_key;
use crate::strategy::Over;
use mantissa_report::escape;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The page's file name inside the output directory.
pub const PAGE_FILE: &str = "tune.html";

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em;
       color: #222; }
.meta { color: #555; margin-top: 0; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.5em 0 1.2em; }
th, td { padding: 0.15em 0.6em; border-bottom: 1px solid #eee; text-align: left; }
th { background: #f2f2f2; }
td.num { text-align: right; font-family: ui-monospace, monospace; white-space: nowrap; }
table.choices td { vertical-align: top; overflow-wrap: anywhere; }
table.summary th[colspan] { text-align: center; }
ul.notes { font-size: 0.85em; color: #555; }
";

const COLOURS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

/// Where digits of bit-identical outputs are drawn.
const IDENTICAL_AT: f64 = 17.0;

struct Point {
    digits: f64,
    speedup: f64,
    noise: f64,
    series: usize,
    chosen: bool,
    label: String,
}

/// The scatter of every timed trial (see the module docs).
pub fn scatter(run: &TuneRun) -> String {
    let mut series: Vec<String> = Vec::new();
    let mut seen: BTreeMap<(String, Over), usize> = BTreeMap::new();
    let mut points: Vec<Point> = Vec::new();
    for s in &run.searches {
        let name = s.search.strategy.clone();
        let k = match series.iter().position(|x| *x == name) {
            Some(k) => k,
            None => {
                series.push(name.clone());
                series.len() - 1
            }
        };
        for (config, t) in &s.search.log {
            let (Some(sp), Some(n)) = (t.speedup_pct, t.noise_pct) else {
                continue;
            };
            let key = (config_key(config), s.units);
            let chosen = s.search.chosen.as_ref() == Some(config);
            match seen.get(&key) {
                Some(&i) => points[i].chosen |= chosen,
                None => {
                    seen.insert(key.clone(), points.len());
                    points.push(Point {
                        digits: if t.digits.is_finite() {
                            t.digits.min(IDENTICAL_AT)
                        } else {
                            IDENTICAL_AT
                        },
                        speedup: sp,
                        noise: n,
                        series: k,
                        chosen,
                        label: format!("{} {}: {}", s.units, key.0, crate::text::trial_line("", t)),
                    });
                }
            }
        }
    }
    let (w, h, left, bottom, top, right) = (720.0, 380.0, 60.0, 44.0, 16.0, 170.0);
    let x_max = points
        .iter()
        .map(|p| p.digits)
        .fold(8.0_f64, f64::max)
        .ceil();
    let y_lo = points
        .iter()
        .map(|p| p.speedup - p.noise)
        .fold(0.0_f64, f64::min)
        .floor();
    // Room above the highest point for its ring.
    let y_hi = points
        .iter()
        .map(|p| p.speedup + p.noise)
        .fold(100.0_f64, f64::max)
        .ceil()
        + 5.0;
    let px = |d: f64| left + d / x_max * (w - left - right);
    let py = |s: f64| top + (y_hi - s) / (y_hi - y_lo) * (h - top - bottom);
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    // Axes, ticks every digit and every 20%.
    let _ = write!(
        o,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        w - left - right,
        h - top - bottom
    );
    for d in 0..=(x_max as i64) {
        let x = px(d as f64);
        let label = if d as f64 == IDENTICAL_AT {
            "same".to_string()
        } else {
            d.to_string()
        };
        let _ = write!(
            o,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#ccc\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
            h - bottom,
            h - bottom + 4.0,
            h - bottom + 16.0
        );
    }
    let mut s = (y_lo / 20.0).ceil() * 20.0;
    while s <= y_hi {
        let y = py(s);
        let _ = write!(
            o,
            "<line x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{s}%</text>",
            w - right,
            left - 4.0,
            y + 4.0
        );
        s += 20.0;
    }
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">correct digits of the worst output (against the f64 program)</text>",
        (left + w - right) / 2.0,
        h - 8.0
    );
    let _ = write!(
        o,
        "<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">speed-up, % of the ideal (Eq. 3)</text>",
        (top + h - bottom) / 2.0
    );
    for p in &points {
        let (x, y) = (px(p.digits), py(p.speedup));
        let c = COLOURS[p.series % COLOURS.len()];
        let _ = write!(
            o,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"{c}\" stroke-opacity=\"0.5\"/><circle cx=\"{x}\" cy=\"{y}\" r=\"4\" fill=\"{c}\" fill-opacity=\"0.8\"><title>{}</title></circle>",
            py(p.speedup - p.noise),
            py(p.speedup + p.noise),
            escape(&p.label)
        );
        if p.chosen {
            let _ = write!(
                o,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"8\" fill=\"none\" stroke=\"#000\"/>"
            );
        }
    }
    for (k, name) in series.iter().enumerate() {
        let y = top + 14.0 + 18.0 * k as f64;
        let x = w - right + 16.0;
        let _ = write!(
            o,
            "<circle cx=\"{x}\" cy=\"{}\" r=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 4.0,
            COLOURS[k % COLOURS.len()],
            x + 10.0,
            escape(name)
        );
    }
    let y = top + 14.0 + 18.0 * series.len() as f64;
    let _ = write!(
        o,
        "<circle cx=\"{}\" cy=\"{}\" r=\"8\" fill=\"none\" stroke=\"#000\"/><text x=\"{}\" y=\"{y}\">chosen</text>",
        w - right + 16.0,
        y - 4.0,
        w - right + 26.0
    );
    o.push_str("</svg>");
    o
}

/// The page of `run`.
pub fn render(run: &TuneRun) -> String {
    let mut h = String::new();
    let title = format!("mantissa tune: {}", run.spec);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let r = &run.references;
    let _ = writeln!(
        h,
        "<p class=\"meta\">device {} · flags {} · f64 program {:.4} ms, all-f32 {:.4} ms ({:.2}×) · {} FISets, {} variables, {} math calls, {} buffers · {} trials on the device</p>",
        escape(&run.device),
        escape(&run.flags),
        r.t64.median_ms,
        r.t32.median_ms,
        r.t64.median_ms / r.t32.median_ms,
        run.fisets.len() - run.shared,
        run.variables.len() - run.shared,
        run.math,
        run.buffers,
        run.device_trials
    );
    h.push_str("<h2>Speed-up found (trials in parentheses)</h2>\n");
    h.push_str(&crate::table::html(
        &run.searches
            .iter()
            .map(|s| s.search.clone())
            .collect::<Vec<_>>(),
    ));
    h.push_str("<h2>Every timed trial</h2>\n");
    h.push_str(&scatter(run));
    h.push_str(&choices(run));
    if !run.notes.is_empty() {
        h.push_str("<ul class=\"notes\">\n");
        for n in &run.notes {
            let _ = writeln!(h, "<li>{}</li>", escape(n));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// What the searches chose: one row per configuration with the searches that chose it (and
/// their trials), one for the searches that chose nothing.
fn choices(run: &TuneRun) -> String {
    let mut h = String::from("\n<h2>What the searches chose</h2>\n<table class=\"choices\"><tr><th>configuration</th><th>chosen by (trials)</th><th>digits</th><th>speed-up</th><th>saved</th></tr>\n");
    for choice in crate::chosen::group(run) {
        let s = choice.first();
        let (conf, digits, speed) = match (choice.config, &s.search.chosen_trial) {
            (Some(c), Some(t)) => (
                crate::text::names(choice.units, c),
                if t.digits.is_finite() {
                    format!("{:.2}", t.digits)
                } else {
                    "identical".into()
                },
                match (t.speedup_pct, t.noise_pct) {
                    (Some(s), Some(n)) => format!("{s:.1}% ±{n:.1}"),
                    _ => "–".into(),
                },
            ),
            _ => ("none met".into(), "–".into(), "–".into()),
        };
        let by: Vec<String> = choice
            .searches
            .iter()
            .map(|s| format!("{} ({})", s.label, s.search.trials))
            .collect();
        // Each search saves its choice under its own name: the first file, and how many more.
        let saved: Vec<String> = choice
            .searches
            .iter()
            .filter_map(|s| s.saved.as_ref().map(|p| p.display().to_string()))
            .collect();
        let saved = match saved.len() {
            0 | 1 => saved.concat(),
            n => format!("{} (+{} copies, one per search)", saved[0], n - 1),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{digits}</td><td class=\"num\">{speed}</td><td>{}</td></tr>",
            escape(&conf),
            escape(&by.join("; ")),
            escape(&saved)
        );
    }
    h.push_str("</table>\n");
    h
}

/// Writes the page into `dir` atomically; returns its path.
pub fn write(dir: &Path, run: &TuneRun) -> std::io::Result<PathBuf> {
    let path = dir.join(PAGE_FILE);
    mantissa_report::write_atomically(&path, render(run).as_bytes())
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::run;

    #[test]
    fn the_scatter_draws_every_timed_trial_once_and_rings_the_chosen() {
        let svg = scatter(&run());
        // Two timed trials (the inaccurate one was not timed), one legend dot, one ring for
        // the chosen configuration and one in the legend.
        assert_eq!(svg.matches("<circle").count(), 2 + 1 + 2, "{svg}");
        assert_eq!(svg.matches("r=\"8\"").count(), 2);
        // Bit-identical outputs are drawn at the right edge, labelled "same".
        assert!(svg.contains(">same</text>"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn the_page_escapes_names_and_lists_what_each_search_chose() {
        let page = render(&run());
        assert!(page.contains("mantissa tune: k&lt;1&gt;"));
        assert!(page.contains("<li>a &lt;note&gt;</li>"));
        assert!(page.contains("<td>fiset 1 (k.cu:3)</td>"), "{page}");
        assert!(
            page.contains("<td>mode 2, 3 digits, 10% (3)</td>"),
            "{page}"
        );
        assert!(page.contains("40.0% ±1.0"));
        assert!(!page.contains("<script"));
    }

    /// 24 searches that chose one FISet of 65 lines: the summary is a table, the choice one row
    /// whose lines are ranges that wrap, naming the 24 searches.
    #[test]
    fn searches_with_one_choice_are_one_row_and_the_summary_a_table() {
        let page = render(&crate::fixture::repeated(run(), 24));
        assert!(!page.contains("<pre>"), "{page}");
        assert!(page.contains("<table class=\"summary\">"), "{page}");
        let choices = &page[page.find("<table class=\"choices\">").expect("the choices")..];
        let choices = &choices[..choices.find("</table>").unwrap()];
        // A header, the FISet, the search that chose nothing.
        assert_eq!(choices.matches("<tr>").count(), 3, "{choices}");
        assert_eq!(page.matches("solver.cu:").count(), 1, "{page}");
        assert!(
            choices.contains("<td>fiset 1 (solver.cu:100–101, 103–104, 106–107,"),
            "{choices}"
        );
        assert!(
            choices.contains("<td>mode 2, 1 digits, 5% (3); mode 2, 1 digits, 10% (3);"),
            "{choices}"
        );
        assert_eq!(choices.matches(" (3)").count(), 25, "{choices}");
        assert!(
            choices.contains("<td>none met</td><td>mode 2, 7 digits, 5% (3)</td>"),
            "{choices}"
        );
    }
}
