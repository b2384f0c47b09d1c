//! `OUT/mathlib.html`: the tables and, per function, the largest error per input bin plotted
//! over the input range (sign and magnitude on a log scale), one series per column — where a
//! person would rather look than read. Self-contained: inline CSS and SVG, nothing fetched.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mantissa_report::escape;
use mantissa_report::record::write_atomically;

use crate::format::Format;
use crate::functions::Function;
use crate::measure::{Column, Measurement};
use crate::records::Setting;
use crate::regions::bins_per_sign;
use crate::table::{tables, Table};
use crate::MathlibError;

/// File name of the page inside the output directory.
pub const HTML_FILE: &str = "mathlib.html";

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.2em .5em}
th{background:#f2f2f2}td.num{text-align:right;font-family:ui-monospace,monospace}
.note{font-size:.85em;color:#555;margin:.1em 0}.plots{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0}figcaption{font-size:.9em;color:#444}.scroll{overflow-x:auto}";

/// Colours of the columns' series, in table order.
const COLOURS: [&str; 5] = ["#1f77b4", "#d62728", "#9467bd", "#2ca02c", "#ff7f0e"];

/// Write the page; returns its path.
pub fn write_html(
    out: &Path,
    ms: &[Measurement],
    setting: Option<&Setting>,
) -> Result<PathBuf, MathlibError> {
    let mut page = String::new();
    let _ = write!(page, "<!doctype html><html lang=en><meta charset=utf-8><title>mantissa mathlib</title><style>{STYLE}</style><body><h1>Math-library accuracy</h1>");
    if let Some(s) = setting {
        let _ = write!(
            page,
            "<p class=note>GPU: {} (driver CUDA {}). CPU: {}. Search budget {} s per function and format; binary32 CPU sample {} inputs.</p>",
            escape(s.device.as_deref().unwrap_or("none")),
            escape(s.driver.as_deref().unwrap_or("—")),
            escape(&s.cpu.join("; ")),
            s.budget_s,
            s.cpu_sample
        );
    }
    for format in Format::ALL {
        for t in tables(ms, format) {
            page += &table_html(&t);
        }
        let mut functions: Vec<Function> = ms
            .iter()
            .filter(|m| m.format == format)
            .map(|m| m.function)
            .collect();
        functions.sort();
        functions.dedup();
        if functions.is_empty() {
            continue;
        }
        let _ = write!(
            page,
            "<h2>{}: largest error per input bin</h2><div class=plots>",
            format.name()
        );
        for f in functions {
            let series: Vec<&Measurement> = ms
                .iter()
                .filter(|m| m.format == format && m.function == f)
                .collect();
            page += &plot(f, format, &series);
        }
        page += "</div>";
    }
    page += "</body></html>\n";
    let path = out.join(HTML_FILE);
    mantissa_files::ensure_dir(out).map_err(|e| MathlibError::Io(e.to_string()))?;
    write_atomically(&path, page.as_bytes()).map_err(|e| MathlibError::Io(e.to_string()))?;
    Ok(path)
}

fn table_html(t: &Table) -> String {
    let mut s = format!("<h2>{}</h2><div class=scroll><table><tr>", escape(&t.title));
    for h in &t.header {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s += "</tr>";
    for r in &t.rows {
        s += "<tr>";
        for (i, c) in r.iter().enumerate() {
            let class = if i < t.text_columns { "" } else { " class=num" };
            let _ = write!(s, "<td{class}>{}</td>", escape(c));
        }
        s += "</tr>";
    }
    s += "</table></div>";
    for n in &t.notes {
        let _ = write!(s, "<p class=note>{}</p>", escape(n));
    }
    s
}

/// The horizontal position of a bin: the biased exponent, negative inputs to the left, the
/// magnitude's binade growing outwards (bins are sign and exponent, see `regions::bin_of`).
fn bin_x(bin: u32, format: Format) -> f64 {
    let half = bins_per_sign(format) as u32;
    if bin >= half {
        -((bin - half) as f64)
    } else {
        bin as f64
    }
}

/// One function's SVG: x = input (signed, log scale), y = largest error in the bin (log scale).
fn plot(f: Function, format: Format, series: &[&Measurement]) -> String {
    let (w, h, left, right, top, bottom) = (520.0, 260.0, 52.0, 10.0, 10.0, 40.0);
    let points: Vec<f64> = series
        .iter()
        .flat_map(|m| m.stats.bins.iter().map(|b| b.ulps))
        .filter(|u| u.is_finite() && *u > 0.0)
        .collect();
    let ymax = points.iter().copied().fold(1.0f64, f64::max);
    let ymin = points.iter().copied().fold(0.5f64, f64::min).max(1e-3);
    let (ly0, ly1) = (
        ymin.log10().floor(),
        ymax.log10().ceil().max(ymin.log10().floor() + 1.0),
    );
    // The x range: the bins that occur, widened a little.
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|m| m.stats.bins.iter().map(|b| bin_x(b.bin, format)))
        .collect();
    let (x0, x1) = match (
        xs.iter().copied().reduce(f64::min),
        xs.iter().copied().reduce(f64::max),
    ) {
        (Some(a), Some(b)) if b > a => (a - 2.0, b + 2.0),
        (Some(a), _) => (a - 16.0, a + 16.0),
        _ => (
            -(bins_per_sign(format) as f64),
            bins_per_sign(format) as f64,
        ),
    };
    let px = |x: f64| left + (x - x0) / (x1 - x0) * (w - left - right);
    let py = |u: f64| top + (ly1 - u.log10()) / (ly1 - ly0) * (h - top - bottom);
    let mut s = format!("<figure><svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' font-size='11' font-family='sans-serif'>");
    let _ = write!(
        s,
        "<rect x='{left}' y='{top}' width='{}' height='{}' fill='none' stroke='#999'/>",
        w - left - right,
        h - top - bottom
    );
    // y ticks: powers of ten.
    let mut e = ly0;
    while e <= ly1 + 1e-9 {
        let y = py(10f64.powf(e));
        let _ = write!(s, "<line x1='{left}' x2='{}' y1='{y:.1}' y2='{y:.1}' stroke='#eee'/><text x='{}' y='{:.1}' text-anchor='end'>{}</text>", w - right, left - 4.0, y + 4.0, tick_label(e));
        e += 1.0;
    }
    // x ticks: a few input magnitudes at the bin starts of powers of two.
    for x in x_ticks(x0, x1, format) {
        let xp = px(x.0);
        let _ = write!(s, "<line x1='{xp:.1}' x2='{xp:.1}' y1='{top}' y2='{}' stroke='#eee'/><text x='{xp:.1}' y='{}' text-anchor='middle'>{}</text>", h - bottom, h - bottom + 14.0, x.1);
    }
    let _ = write!(
        s,
        "<text x='{}' y='{}' text-anchor='middle'>input (sign, log scale)</text>",
        (left + w - right) / 2.0,
        h - 6.0
    );
    let _ = write!(
        s,
        "<text x='12' y='{}' transform='rotate(-90 12 {})' text-anchor='middle'>max ulps</text>",
        (top + h - bottom) / 2.0,
        (top + h - bottom) / 2.0
    );
    let mut legend = String::new();
    for (i, m) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        // One path of small squares per series: a circle element per bin would make pages of
        // tens of megabytes.
        let mut d = String::new();
        for b in &m.stats.bins {
            if b.ulps.is_finite() && b.ulps > 0.0 {
                let _ = write!(
                    d,
                    "M{:.0} {:.0}h3v3h-3z",
                    px(bin_x(b.bin, format)) - 1.5,
                    py(b.ulps.max(10f64.powf(ly0))) - 1.5
                );
            }
        }
        let _ = write!(s, "<path d='{d}' fill='{colour}' fill-opacity='0.8'/>");
        let _ = write!(
            legend,
            "<tspan fill='{colour}'>● {} </tspan>",
            escape(&m.column.label())
        );
    }
    let _ = write!(
        s,
        "<text x='{}' y='{}' font-size='11'>{legend}</text>",
        left + 6.0,
        top + 12.0
    );
    s += "</svg>";
    let _ = write!(
        s,
        "<figcaption>{} — largest error per input bin{}</figcaption></figure>",
        escape(f.cuda_name(format)),
        if series.iter().any(|m| matches!(m.column, Column::Cpu(_))) {
            " (CPU columns: sampled and searched inputs only)"
        } else {
            ""
        }
    );
    s
}

fn tick_label(e: f64) -> String {
    match e as i32 {
        0 => "1".into(),
        1 => "10".into(),
        -1 => "0.1".into(),
        k => format!("1e{k}"),
    }
}

/// Tick positions (bin x) and labels: ±2^k for k spread over the visible range.
fn x_ticks(x0: f64, x1: f64, format: Format) -> Vec<(f64, String)> {
    let bias = match format {
        Format::F32 => 127.0,
        Format::F64 => 1023.0,
    };
    let mut out = Vec::new();
    let span = x1 - x0; // binades visible (one bin each)
    let step = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
        .into_iter()
        .find(|s| span / s <= 6.0)
        .unwrap_or(1000.0);
    let mut k = -bias - 30.0;
    while k <= bias + 1.0 {
        let k_round = (k / step).round() * step;
        for sign in [1.0, -1.0] {
            let x = sign * (k_round + bias);
            if x >= x0 && x <= x1 && (k_round + bias) > 0.0 {
                let label = format!("{}2^{}", if sign < 0.0 { "−" } else { "" }, k_round as i64);
                if !out
                    .iter()
                    .any(|(p, _): &(f64, String)| (*p - x).abs() < 1e-9)
                {
                    out.push((x, label));
                }
            }
        }
        k += step;
    }
    out
}
