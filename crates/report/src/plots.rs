//! SVG plots of the records, in the style of seed 000, Figures 5–11: errors and times on
//! logarithmic axes, an exact zero drawn at 1e-25 (it has no logarithm).
//!
//! Plotters' own log coordinates are not used: their tick search loops for as many decades as
//! the range spans divided by the label budget, and overflows for ranges like 1e-300..1e300.
//! Instead values are plotted as log10 on a linear axis whose labels print `1e-25` — the same
//! picture, for any finite positive data.
//!
//! Text is written as SVG `<text>` with a generic `sans-serif` family: the browser lays it
//! out, so no font is read at build or run time (plotters is built without `ttf`/`ab_glyph`
//! and sizes labels with its built-in estimate).

use std::collections::{BTreeMap, BTreeSet};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::heatmap::{Heat, HeatMap};
use crate::labels::x_labels;
use crate::record::{fmt_dim3, Record};
use crate::tables::{
    fmt_size, natural_cmp, precision_index, precision_rank, Accuracy, Cell, Config, Group, Naming,
    Shown, Timing,
};

/// Where an exact zero is drawn, as in seed 000 ("the accurate sum (zero) is represented by
/// 10^-25 rather than by 10^-∞"), unless real errors go that low.
pub const ZERO_AT: f64 = 1e-25;

const WIDTH: u32 = 900;
const HEIGHT: u32 = 440;
const LEGEND_WIDTH: u32 = 190;
pub(crate) const FONT: &str = "sans-serif";

/// A drawn plot and what a reader needs beside it.
#[derive(Debug, Clone)]
pub struct Plot {
    /// File stem under `plots/` (unique within a report).
    pub name: String,
    /// The title drawn above the plot.
    pub title: String,
    /// One sentence under the plot: what a point is, and where exact zeros are drawn.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
    /// Points that could not be drawn (non-finite values), one line each.
    pub not_plotted: Vec<String>,
}

/// Distinguishable colours (Tableau 10, then darker variants), indexed by
/// [`precision_index`] so that a precision keeps its colour across plots.
const COLOURS: [(u8, u8, u8); 23] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (57, 59, 121),
    (99, 121, 57),
    (140, 109, 49),
    (132, 60, 57),
    (123, 65, 115),
    (0, 0, 0),
    (82, 84, 163),
    (107, 110, 207),
    (156, 158, 222),
    (140, 162, 82),
    (181, 207, 107),
    (189, 158, 57),
    (231, 186, 82),
];

fn colour(precision: &str) -> RGBColor {
    let (r, g, b) = COLOURS[precision_index(precision) % COLOURS.len()];
    RGBColor(r, g, b)
}

/// A logarithmic axis in exponent space: whole decades with room below the smallest value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LogAxis {
    lo: f64,
    hi: f64,
}

impl LogAxis {
    /// The axis for these values; non-positive and non-finite ones are ignored (callers list
    /// them as not plotted).
    fn of(values: impl IntoIterator<Item = f64>) -> LogAxis {
        let logs: Vec<f64> = values
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(f64::log10)
            .collect();
        let lo = logs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() || !hi.is_finite() {
            return LogAxis { lo: -1.0, hi: 1.0 };
        }
        // A decade of room below, so bars drawn from the bottom always show.
        let mut lo = lo.floor() - 1.0;
        // Markers have a size: keep the largest value off the top edge.
        let mut hi = (hi + 0.3).ceil();
        if hi <= lo + 2.0 {
            hi += 1.0;
            lo -= 1.0;
        }
        LogAxis { lo, hi }
    }

    fn label(y: &f64) -> String {
        if (y - y.round()).abs() < 1e-9 {
            format!("1e{}", y.round() as i64)
        } else {
            format!("{:.1e}", 10f64.powf(*y))
        }
    }
}

/// Exponent of a positive finite value.
fn lg(v: f64) -> f64 {
    v.log10()
}

/// Where exact zeros go on a plot whose smallest nonzero value is `min_nonzero`: 1e-25 as in
/// seed 000, or lower when real errors reach that far, so a zero never sits above an error.
fn zero_floor(min_nonzero: Option<f64>) -> f64 {
    match min_nonzero {
        Some(m) if m <= ZERO_AT * 10.0 => 10f64
            .powi(m.log10().floor() as i32 - 2)
            .max(f64::MIN_POSITIVE),
        _ => ZERO_AT,
    }
}

fn zero_label(floor: f64) -> String {
    format!("exact 0, drawn at {floor:.0e}")
}

/// One series over categories: `values[i]` is the value at category i, if any, and
/// `ranges[i]` the smallest and largest measurement behind it (drawn by [`Style::Dots`]).
struct CatSeries {
    name: String,
    values: Vec<Option<f64>>,
    ranges: Vec<Option<(f64, f64)>>,
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    /// A dot per value with a bar over its range; the categories name the series, so there is
    /// no colour legend.
    Dots,
    /// A line per series through its values, with a dot at each.
    Lines,
}

type DrawResult = Result<(), String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Legend entries drawn in their own column right of the chart, so they never cover data.
enum Key {
    Swatch(RGBColor),
    Line(RGBColor),
    Circle,
    Triangle,
    /// A vertical bar: the range of the repetitions.
    Whisker,
}

fn legend(area: &DrawingArea<SVGBackend, Shift>, entries: &[(Key, String)]) -> DrawResult {
    let font = (FONT, 13).into_font();
    area.draw(&Text::new(
        "legend",
        (8, 40),
        font.clone().style(FontStyle::Bold),
    ))
    .map_err(err)?;
    for (k, (key, label)) in entries.iter().enumerate() {
        let y = 62 + 19 * k as i32;
        match key {
            Key::Swatch(c) => area.draw(&Rectangle::new([(8, y - 6), (22, y + 6)], c.filled())),
            Key::Line(c) => area.draw(&PathElement::new(vec![(6, y), (24, y)], c.stroke_width(2))),
            Key::Circle => area.draw(&Circle::new((15, y), 5, BLACK.filled())),
            Key::Triangle => area.draw(&TriangleMarker::new((15, y), 6, BLACK.filled())),
            Key::Whisker => area.draw(&PathElement::new(
                vec![(15, y - 7), (15, y + 7)],
                BLACK.stroke_width(2),
            )),
        }
        .map_err(err)?;
        area.draw(&Text::new(label.clone(), (30, y - 4), font.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// The x label area under a chart with horizontal labels (the labels and the axis name).
const X_AREA: u32 = 45;
/// The left edge of the plot inside the chart area: margin plus the y label area.
const PLOT_LEFT: u32 = 10 + 70;

/// Draws `series` over `categories` with a log y axis.
fn categorical(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[CatSeries],
    style: Style,
) -> Result<String, String> {
    let axis = LogAxis::of(series.iter().flat_map(|s| {
        let ranges = s.ranges.iter().flatten().flat_map(|&(lo, hi)| [lo, hi]);
        s.values.iter().flatten().copied().chain(ranges)
    }));
    let n = categories.len().max(1);
    // The plot spans n category widths between the y label area and the legend.
    let spacing = f64::from(WIDTH - LEGEND_WIDTH - PLOT_LEFT - 10) / n as f64;
    let labels = x_labels(categories, spacing);
    // Room under the axis: tick, labels, a gap, the axis name.
    let x_area = X_AREA.max((labels.height + 8.0 + 6.0 + 18.0).ceil() as u32);
    let height = HEIGHT + (x_area - X_AREA);
    let mut svg = String::new();
    let mut label_xs = Vec::with_capacity(n);
    let mut label_y = 0.0;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
        let x_max = n as f64 - 0.5;
        let mut chart = ChartBuilder::on(&left)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(x_area)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..x_max, axis.lo..axis.hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            // 0.5 steps are the coarsest "nice" step that hits every integer (category centre):
            // plotters draws the ticks, the names are drawn below (see `XLabels`).
            .x_labels(2 * n + 1)
            .y_labels(10)
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&LogAxis::label)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(err)?;
        for i in 0..categories.len() {
            let (x, y) = chart.backend_coord(&(i as f64, axis.lo));
            label_xs.push(f64::from(x));
            // Below the tick marks (5 px) with a little air.
            label_y = f64::from(y) + 8.0;
        }
        let mut keys = Vec::new();
        for s in series {
            let c = colour(&s.name);
            match style {
                Style::Dots => {
                    let whiskers = s.ranges.iter().enumerate().filter_map(|(i, r)| {
                        let (lo, hi) = (*r)?;
                        let x = i as f64;
                        Some(PathElement::new(
                            vec![(x, lg(lo)), (x, lg(hi))],
                            c.mix(0.8).stroke_width(2),
                        ))
                    });
                    chart.draw_series(whiskers).map_err(err)?;
                    let dots = s.values.iter().enumerate().filter_map(|(i, v)| {
                        Some(Circle::new((i as f64, lg((*v)?)), 5, c.filled()))
                    });
                    chart.draw_series(dots).map_err(err)?;
                }
                Style::Lines => {
                    // A missing point (out of resources) breaks the line rather than bridging it.
                    let mut run: Vec<(f64, f64)> = Vec::new();
                    let mut runs = Vec::new();
                    for (i, v) in s.values.iter().enumerate() {
                        match v {
                            Some(v) => run.push((i as f64, lg(*v))),
                            None => runs.push(std::mem::take(&mut run)),
                        }
                    }
                    runs.push(run);
                    for r in runs.into_iter().filter(|r| r.len() > 1) {
                        chart
                            .draw_series([PathElement::new(r, c.stroke_width(2))])
                            .map_err(err)?;
                    }
                    let dots = s.values.iter().enumerate().filter_map(|(i, v)| {
                        Some(Circle::new((i as f64, lg((*v)?)), 4, c.filled()))
                    });
                    chart.draw_series(dots).map_err(err)?;
                    keys.push((Key::Line(c), s.name.clone()));
                }
            }
        }
        if style == Style::Dots {
            keys.push((Key::Circle, "median".into()));
            if series.iter().any(|s| s.ranges.iter().any(Option::is_some)) {
                keys.push((Key::Whisker, "fastest … slowest".into()));
            }
        }
        legend(&right, &keys)?;
        root.present().map_err(err)?;
    }
    let labels = labels.svg(&label_xs, label_y);
    match svg.rfind("</svg>") {
        Some(end) => svg.insert_str(end, &labels),
        None => return Err("the SVG backend wrote no closing tag".into()),
    }
    Ok(svg)
}

/// One scatter series: points (time, error, on a GPU).
struct PointSeries {
    name: String,
    points: Vec<(f64, f64, bool)>,
}

/// Scatter series per precision, in column order, with exact zeros drawn at `floor`.
fn point_series(
    by_precision: BTreeMap<String, Vec<(f64, f64, bool)>>,
    floor: f64,
) -> Vec<PointSeries> {
    let mut series: Vec<PointSeries> = by_precision
        .into_iter()
        .map(|(name, points)| PointSeries {
            name,
            points: points
                .into_iter()
                .map(|(t, e, gpu)| (t, if e == 0.0 { floor } else { e }, gpu))
                .collect(),
        })
        .collect();
    series.sort_by_key(|s| precision_rank(&s.name));
    series
}

/// Accuracy (y) against time (x) on log axes. `connect`: join each series' points in the order
/// given (a sweep over sizes) with a line.
fn scatter(
    title: &str,
    series: &[PointSeries],
    zero: Option<f64>,
    connect: bool,
) -> Result<String, String> {
    let xs = LogAxis::of(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let ys = LogAxis::of(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(zero),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut chart = ChartBuilder::on(&left)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(xs.lo..xs.hi, ys.lo..ys.hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(10)
            .y_labels(10)
            .x_label_formatter(&LogAxis::label)
            .y_label_formatter(&LogAxis::label)
            .x_desc("median time (ms, log scale)")
            .y_desc("absolute error (log scale)")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(err)?;
        let mut keys = Vec::new();
        for s in series {
            let c = colour(&s.name);
            if connect {
                let line: Vec<(f64, f64)> = s.points.iter().map(|p| (lg(p.0), lg(p.1))).collect();
                chart
                    .draw_series([PathElement::new(line, c.mix(0.7).stroke_width(1))])
                    .map_err(err)?;
            }
            let cpu = s
                .points
                .iter()
                .filter(|p| !p.2)
                .map(|p| Circle::new((lg(p.0), lg(p.1)), 5, c.filled()));
            chart.draw_series(cpu).map_err(err)?;
            let gpu = s
                .points
                .iter()
                .filter(|p| p.2)
                .map(|p| TriangleMarker::new((lg(p.0), lg(p.1)), 6, c.filled()));
            chart.draw_series(gpu).map_err(err)?;
            keys.push((Key::Swatch(c), s.name.clone()));
        }
        let any = |gpu: bool| series.iter().any(|s| s.points.iter().any(|p| p.2 == gpu));
        if any(false) {
            keys.push((Key::Circle, "CPU run".into()));
        }
        if any(true) {
            keys.push((Key::Triangle, "GPU launch".into()));
        }
        if let Some(z) = zero {
            let y = lg(z);
            chart
                .draw_series([PathElement::new(
                    vec![(xs.lo, y), (xs.hi, y)],
                    BLACK.mix(0.6).stroke_width(1),
                )])
                .map_err(err)?;
            keys.push((Key::Line(BLACK), zero_label(z)));
        }
        legend(&right, &keys)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Why a cell's error is not on the plot: `f32 range5: sum overflowed to inf`.
fn non_finite_line(workload: &str, precision: &str, row: &str, cell: &Cell, error: f64) -> String {
    format!(
        "{precision} {row}: {}",
        non_finite_reason(workload, cell, error)
    )
}

/// Why a cell's error is not finite: `sum overflowed to inf`, `sum result is nan`, `error is
/// inf`. Lower-case `nan`, as the tables print it.
fn non_finite_reason(workload: &str, cell: &Cell, error: f64) -> String {
    match cell.non_finite_result() {
        Some(v) if v.is_nan() => format!("{workload} result is nan"),
        Some(v) => format!(
            "{workload} overflowed to {}",
            if v > 0.0 { "inf" } else { "-inf" }
        ),
        None => format!("error is {}", if error.is_nan() { "nan" } else { "inf" }),
    }
}

/// Lower-case letters, digits and dashes only: safe as a file name anywhere, and as an HTML id.
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    // Long sweeps of configurations would make absurd names.
    out.chars().take(80).collect()
}

fn backend_slug(c: &Config) -> String {
    match c.backend {
        crate::record::Backend::Cpu { threads } => format!("cpu{threads}"),
        crate::record::Backend::Gpu { grid, block } => {
            let dim = |d: [u32; 3]| fmt_dim3(d).replace('×', "x");
            format!("gpu{}x{}", dim(grid), dim(block))
        }
        crate::record::Backend::GpuTiles { tile } => format!("gputiles{tile}"),
    }
}

/// (a) Errors by precision and input class for one accuracy table, as a heat map (why a heat
/// map: see [`crate::heatmap`]). `None` when nothing in the table ran: an empty grid tells
/// nothing.
fn error_plot(g: &Group, a: &Accuracy, naming: &Naming) -> Result<Option<Plot>, String> {
    let one_size = a.sizes().len() == 1;
    let rows: Vec<String> = a
        .rows
        .iter()
        .map(|r| {
            if one_size {
                r.input.clone()
            } else {
                format!("{} n={}", r.input, fmt_size(r.size))
            }
        })
        .collect();
    let mut any_ran = false;
    let cells: Vec<Vec<Heat>> = (0..rows.len())
        .map(|i| {
            (0..a.precisions.len())
                .map(|j| {
                    let Some(cell) = a.cells.get(&(i, j)) else {
                        return Heat::Missing("-");
                    };
                    match cell.error() {
                        Some(Shown::Value(e)) => {
                            any_ran = true;
                            let e = e.abs();
                            if e == 0.0 {
                                Heat::Exact
                            } else if e.is_finite() {
                                Heat::Error(e)
                            } else {
                                Heat::NotFinite {
                                    text: if e.is_nan() { "nan" } else { "inf" },
                                    why: non_finite_reason(&g.workload, cell, e),
                                }
                            }
                        }
                        Some(Shown::NotMeasured) => Heat::Missing("n/a"),
                        Some(Shown::OutOfResources) => Heat::Missing("oor"),
                        Some(Shown::Failed) => Heat::Missing("failed"),
                        None => Heat::Missing("-"),
                    }
                })
                .collect()
        })
        .collect();
    if !any_ran {
        return Ok(None);
    }
    let configs = a.configs_label(naming);
    let size = if one_size {
        a.sizes()
            .first()
            .map(|n| format!(", n = {}", fmt_size(*n)))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let title = format!("{} — absolute error, {configs}{size}", g.title());
    let svg = HeatMap {
        title: &title,
        rows: &rows,
        columns: &a.precisions,
        cells: &cells,
    }
    .svg();
    let stem: Vec<String> = a.configs.iter().map(backend_slug).collect();
    Ok(Some(Plot {
        name: slug(&format!(
            "error {} {} {}",
            g.workload,
            g.algorithm,
            stem.join(" ")
        )),
        title,
        caption: "Median absolute error of each precision (column) per input class (row): the \
                  colour on a log scale, the value printed in the cell (hover for three digits); \
                  \"exact\" marks an error of exactly 0."
            .into(),
        svg,
        // Non-finite errors are cells of their own (hover says why), not gaps.
        not_plotted: Vec::new(),
    }))
}

fn caption_zero(what: &str, zero: Option<f64>) -> String {
    match zero {
        Some(z) => format!("{what}; an exact 0 has no logarithm and is drawn at {z:.0e}."),
        None => format!("{what}."),
    }
}

fn has_values(series: &[CatSeries]) -> bool {
    series.iter().any(|s| s.values.iter().any(Option::is_some))
}

/// A time plot's mark at one category: the median time and the fastest and slowest repetition.
type TimeMark = (Option<f64>, Option<(f64, f64)>);

/// (b) Time by launch configuration, one line per precision; with a single configuration (a
/// serial CPU algorithm) a dot per precision along the x axis instead, with the range of its
/// repetitions, since lines over one category would stack every dot in one column.
/// `None` when nothing was timed.
fn time_plot(g: &Group, t: &Timing, naming: &Naming) -> Result<Option<Plot>, String> {
    let configs: Vec<String> = t.configs.iter().map(|c| naming.label(c)).collect();
    let mut not_plotted = Vec::new();
    // (value, range) per precision and configuration.
    let mut measured: Vec<Vec<TimeMark>> = Vec::new();
    for (j, p) in t.precisions.iter().enumerate() {
        let mut row = Vec::new();
        for (i, cat) in configs.iter().enumerate() {
            let cell = t.cells.get(&(i, j));
            let v = match cell.and_then(Cell::time) {
                Some(Shown::Value(ms)) if ms.is_finite() && ms > 0.0 => Some(ms),
                Some(Shown::Value(ms)) => {
                    not_plotted.push(format!("{p} {cat}: time {ms} ms"));
                    None
                }
                _ => None,
            };
            let range = v.and(cell.and_then(Cell::time_range));
            row.push((v, range));
        }
        measured.push(row);
    }
    let one_config = configs.len() == 1;
    let series: Vec<CatSeries> = t
        .precisions
        .iter()
        .zip(&measured)
        .enumerate()
        .map(|(j, (p, row))| {
            if one_config {
                // The precision's own category holds its one value.
                let at = |k: usize| if k == j { row[0] } else { (None, None) };
                CatSeries {
                    name: p.clone(),
                    values: (0..t.precisions.len()).map(|k| at(k).0).collect(),
                    ranges: (0..t.precisions.len()).map(|k| at(k).1).collect(),
                }
            } else {
                CatSeries {
                    name: p.clone(),
                    values: row.iter().map(|m| m.0).collect(),
                    ranges: vec![None; row.len()],
                }
            }
        })
        .collect();
    if !has_values(&series) && not_plotted.is_empty() {
        return Ok(None);
    }
    let (title, svg, caption) = if one_config {
        let title = format!(
            "{} — time, n = {}, {}",
            g.title(),
            fmt_size(t.size),
            configs[0]
        );
        let svg = categorical(
            &title,
            "precision",
            "time (ms, log scale)",
            &t.precisions,
            &series,
            Style::Dots,
        )?;
        let caption = format!(
            "Median run time of each precision on {}; the bar spans its fastest and slowest \
             repetition. Missing dots did not run (see the table).",
            configs[0]
        );
        (title, svg, caption)
    } else {
        let title = format!("{} — time, n = {}", g.title(), fmt_size(t.size));
        let svg = categorical(
            &title,
            "backend configuration (CPU threads, GPU grid × block)",
            "median time (ms, log scale)",
            &configs,
            &series,
            Style::Lines,
        )?;
        let caption = "Median run time of each precision per backend configuration; gaps are \
                       configurations that did not run (see the table)."
            .to_string();
        (title, svg, caption)
    };
    Ok(Some(Plot {
        name: slug(&format!("time {} {} n{}", g.workload, g.algorithm, t.size)),
        title,
        caption,
        svg,
        not_plotted,
    }))
}

/// (c) Accuracy versus time, one plot per input class and size: a point per precision and
/// configuration.
fn tradeoff_plots(g: &Group, naming: &Naming) -> Vec<Result<Plot, String>> {
    let mut keys: Vec<(&str, u64)> = g
        .records
        .iter()
        .map(|r| (r.input.as_str(), r.size))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    keys.sort_by(|a, b| natural_cmp(a.0, b.0).then(a.1.cmp(&b.1)));
    let sizes: BTreeSet<u64> = keys.iter().map(|k| k.1).collect();
    let mut plots = Vec::new();
    for (input, size) in keys {
        // (precision, configuration) → the records of that point (several seeds).
        let mut cells: BTreeMap<(String, Config), Vec<&Record>> = BTreeMap::new();
        for r in g
            .records
            .iter()
            .filter(|r| r.input == input && r.size == size)
        {
            cells
                .entry((r.precision.clone(), Config::of(r)))
                .or_default()
                .push(r);
        }
        let mut not_plotted = Vec::new();
        let mut raw: BTreeMap<String, Vec<(f64, f64, bool)>> = BTreeMap::new();
        for ((p, c), recs) in &cells {
            let cell = Cell {
                records: recs.clone(),
            };
            let (Some(Shown::Value(e)), Some(Shown::Value(t))) = (cell.error(), cell.time()) else {
                continue;
            };
            if !e.is_finite() {
                let what = format!("{input} {}", naming.label(c));
                not_plotted.push(non_finite_line(&g.workload, p, &what, &cell, e));
                continue;
            }
            if !(t.is_finite() && t > 0.0) {
                continue;
            }
            raw.entry(p.clone())
                .or_default()
                .push((t, e.abs(), c.backend.is_gpu()));
        }
        if raw.is_empty() && not_plotted.is_empty() {
            continue;
        }
        let min_nonzero = raw
            .values()
            .flatten()
            .map(|p| p.1)
            .filter(|e| *e > 0.0)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))));
        let floor = zero_floor(min_nonzero);
        let any_zero = raw.values().flatten().any(|p| p.1 == 0.0);
        let series = point_series(raw, floor);
        let zero = any_zero.then_some(floor);
        let size_text = if sizes.len() > 1 {
            format!(", n = {}", fmt_size(size))
        } else {
            String::new()
        };
        let title = format!("{} — accuracy vs time, {input}{size_text}", g.title());
        let name = slug(&format!(
            "tradeoff {} {} {input} n{size}",
            g.workload, g.algorithm
        ));
        plots.push(scatter(&title, &series, zero, false).map(|svg| Plot {
            name,
            title,
            caption: caption_zero(
                "Each point is one precision on one backend configuration (median over seeds); \
                 lower and further left is better",
                zero,
            ),
            svg,
            not_plotted,
        }));
    }
    plots
}

/// Sizes a configuration must cover before its accuracy-versus-time curve over sizes is drawn.
const SWEEP_MIN_SIZES: usize = 3;

/// (d) Accuracy versus time over the problem sizes (seed 000 Fig. 17: GE, sizes 16 … 8192 on one
/// launch configuration): per input class, the configuration that covers the most sizes, a line
/// per precision through its sizes in increasing order.
fn sweep_plots(g: &Group, naming: &Naming) -> Vec<Result<Plot, String>> {
    let mut inputs: Vec<&str> = g
        .records
        .iter()
        .map(|r| r.input.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    inputs.sort_by(|a, b| natural_cmp(a, b));
    let mut plots = Vec::new();
    for input in inputs {
        let mine: Vec<&Record> = g
            .records
            .iter()
            .copied()
            .filter(|r| r.input == input)
            .collect();
        // The configuration with the most sizes (GPU first on ties: the thesis's figure is).
        let mut per_config: BTreeMap<Config, BTreeSet<u64>> = BTreeMap::new();
        for r in &mine {
            per_config.entry(Config::of(r)).or_default().insert(r.size);
        }
        let Some((config, sizes)) = per_config
            .into_iter()
            .max_by_key(|(c, s)| (s.len(), c.backend.is_gpu()))
        else {
            continue;
        };
        if sizes.len() < SWEEP_MIN_SIZES {
            continue;
        }
        let mut by_precision: BTreeMap<String, Vec<(f64, f64, bool)>> = BTreeMap::new();
        let mut any_zero = false;
        let mut min_nonzero: Option<f64> = None;
        for &size in &sizes {
            let mut cells: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
            for r in mine
                .iter()
                .filter(|r| r.size == size && Config::of(r) == config)
            {
                cells.entry(r.precision.clone()).or_default().push(r);
            }
            for (p, recs) in cells {
                let cell = Cell { records: recs };
                let (Some(Shown::Value(e)), Some(Shown::Value(t))) = (cell.error(), cell.time())
                else {
                    continue;
                };
                if !(e.is_finite() && t.is_finite() && t > 0.0) {
                    continue;
                }
                let e = e.abs();
                if e == 0.0 {
                    any_zero = true;
                } else {
                    min_nonzero = Some(min_nonzero.map_or(e, |m: f64| m.min(e)));
                }
                by_precision
                    .entry(p)
                    .or_default()
                    .push((t, e, config.backend.is_gpu()));
            }
        }
        if by_precision.is_empty() {
            continue;
        }
        let floor = zero_floor(min_nonzero);
        let series = point_series(by_precision, floor);
        let zero = any_zero.then_some(floor);
        let (lo, hi) = (
            sizes.first().copied().unwrap_or(0),
            sizes.last().copied().unwrap_or(0),
        );
        let label = naming.label(&config);
        let title = format!(
            "{} — accuracy vs time over n = {} … {}, {input}, {label}",
            g.title(),
            fmt_size(lo),
            fmt_size(hi)
        );
        let name = slug(&format!(
            "sweep {} {} {input} {}",
            g.workload,
            g.algorithm,
            backend_slug(&config)
        ));
        plots.push(scatter(&title, &series, zero, true).map(|svg| Plot {
            name,
            title,
            caption: caption_zero(
                "Each line is one precision through the problem sizes, smallest at the left \
                 (median over seeds)",
                zero,
            ),
            svg,
            not_plotted: Vec::new(),
        }));
    }
    plots
}

/// The plots of one workload group: an error plot per accuracy table, a time plot per time
/// table, and an accuracy-versus-time plot per input class.
pub(crate) fn group_plots(g: &Group, naming: &Naming) -> Result<Vec<Plot>, crate::ReportError> {
    let mut out = Vec::new();
    let mut results: Vec<Result<Plot, String>> = Vec::new();
    results.extend(
        g.accuracy
            .iter()
            .filter_map(|a| error_plot(g, a, naming).transpose()),
    );
    results.extend(
        g.timing
            .iter()
            .filter_map(|t| time_plot(g, t, naming).transpose()),
    );
    results.extend(tradeoff_plots(g, naming));
    results.extend(sweep_plots(g, naming));
    for r in results {
        out.push(r.map_err(|message| crate::ReportError::Plot {
            name: g.title(),
            message,
        })?);
    }
    Ok(out)
}

/// Draws the plots of every group; names are made unique across the report.
pub(crate) fn all_plots(
    groups: &[Group],
    naming: &Naming,
) -> Result<Vec<Vec<Plot>>, crate::ReportError> {
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    for g in groups {
        let mut plots = group_plots(g, naming)?;
        for p in &mut plots {
            let base = if p.name.is_empty() {
                "plot".to_string()
            } else {
                p.name.clone()
            };
            let mut name = base.clone();
            let mut k = 2;
            while !seen.insert(name.clone()) {
                name = format!("{base}-{k}");
                k += 1;
            }
            p.name = name;
        }
        all.push(plots);
    }
    Ok(all)
}

#[cfg(test)]
pub(crate) mod tests;
