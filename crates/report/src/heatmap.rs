//! The error heat map: one cell per input class (row) and precision (column), coloured by the
//! logarithm of the absolute error and labelled with it.
//!
//! Why a heat map and not grouped bars (seed 000 Fig. 5's form): a sum's table is 14 precisions
//! × up to 46 input classes and sizes, which as bars is 600 bars about 2 px wide, with exact
//! results stood in for by an invented tiny number under an axis spanning 70 decades. A grid
//! gives every measurement the same readable area; a row compares the precisions on one input,
//! a column follows one precision across inputs; the printed value makes the colour exact; and
//! an exact result is a cell of its own colour saying "exact", not a bar at 1e-41. Small
//! multiples would repeat 25 axes, and a dot plot would stack 14 dots per input.
//!
//! The SVG is written by hand (rectangles and text, no plotters): every cell carries a class
//! (`cell err`, `cell exact`, `cell nonfinite`, `cell missing`) and a `<title>` with the exact
//! value, so a browser shows it on hover.

use std::fmt::Write as _;

use crate::html::escape;
use crate::labels::shorten;
use crate::tables::fmt_err;

/// What one cell of the heat map shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Heat {
    /// A finite, nonzero error.
    Error(f64),
    /// An error of exactly 0.
    Exact,
    /// An infinite or NaN error, with the reason shown on hover (`sum overflowed to inf`).
    NotFinite { text: &'static str, why: String },
    /// Nothing measured: `oor`, `failed`, `n/a`, or `-` when the point never ran.
    Missing(&'static str),
}

/// The grid: row names (input classes), column names (precisions), and `cells[row][column]`.
pub(crate) struct HeatMap<'a> {
    pub title: &'a str,
    pub rows: &'a [String],
    pub columns: &'a [String],
    pub cells: &'a [Vec<Heat>],
}

const FONT: &str = "sans-serif";
const CELL_W: f64 = 60.0;
const CELL_H: f64 = 20.0;
const MARGIN: f64 = 12.0;
const TITLE_H: f64 = 34.0;
/// Room for the column names above the grid and the axis name above them.
const HEADER_H: f64 = 40.0;
/// Row names are at most this many characters (shortened in the middle beyond).
const MAX_ROW_CHARS: usize = 28;
/// Column names are at most this many characters: a cell's width at the header font.
const MAX_COLUMN_CHARS: usize = 8;
/// Average advance of a character, in em (as in [`crate::labels`]).
const CHAR_EM: f64 = crate::labels::CHAR_EM;
const LABEL_FONT: f64 = 11.0;
const VALUE_FONT: f64 = 10.0;

/// Colour of an exact result: a blue outside the yellow-to-red error scale.
pub(crate) const EXACT_FILL: (u8, u8, u8) = (33, 102, 172);
/// Colour of a non-finite error.
const NONFINITE_FILL: (u8, u8, u8) = (20, 20, 20);
/// Colour of a cell with nothing measured.
const MISSING_FILL: (u8, u8, u8) = (236, 236, 236);

/// The error scale, small (pale yellow) to large (dark red): ColorBrewer's YlOrRd, whose
/// lightness falls steadily, so order reads without a legend and survives greyscale.
const SCALE: [(u8, u8, u8); 9] = [
    (255, 255, 204),
    (255, 237, 160),
    (254, 217, 118),
    (254, 178, 76),
    (253, 141, 60),
    (252, 78, 42),
    (227, 26, 28),
    (189, 0, 38),
    (128, 0, 38),
];

/// The colour at `t` in [0, 1] along [`SCALE`].
fn scale_colour(t: f64) -> (u8, u8, u8) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (SCALE.len() - 1) as f64;
    let i = (x.floor() as usize).min(SCALE.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (SCALE[i], SCALE[i + 1]);
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Black or white, whichever reads on `fill` (relative luminance above or below one half).
fn ink((r, g, b): (u8, u8, u8)) -> &'static str {
    let l = 0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b);
    if l > 140.0 {
        "#000"
    } else {
        "#fff"
    }
}

/// The decades the colour scale spans: whole powers of ten around the finite nonzero errors.
fn decades(cells: &[Vec<Heat>]) -> (f64, f64) {
    let logs = cells.iter().flatten().filter_map(|h| match h {
        Heat::Error(e) if e.is_finite() && *e > 0.0 => Some(e.log10()),
        _ => None,
    });
    let (lo, hi) = logs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), l| {
        (lo.min(l), hi.max(l))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let (lo, hi) = (lo.floor(), hi.ceil());
    (lo, if hi > lo { hi } else { lo + 1.0 })
}

/// A short value for inside a cell: `1.4e-1`, `3.2e-10` (the title has three digits).
fn short(e: f64) -> String {
    format!("{e:.1e}")
}

impl HeatMap<'_> {
    /// The heat map as an SVG document.
    pub fn svg(&self) -> String {
        let (lo, hi) = decades(self.cells);
        let row_names: Vec<String> = self
            .rows
            .iter()
            .map(|r| shorten(r, MAX_ROW_CHARS))
            .collect();
        let longest = row_names
            .iter()
            .map(|r| r.chars().count())
            .max()
            .unwrap_or(0);
        let label_w = (longest as f64 * CHAR_EM * LABEL_FONT).ceil() + 14.0;
        let grid_x = MARGIN + label_w;
        let grid_y = TITLE_H + HEADER_H;
        let grid_w = CELL_W * self.columns.len() as f64;
        let grid_h = CELL_H * self.rows.len() as f64;
        // The legend below: the colour bar, then the three special cells.
        let legend_y = grid_y + grid_h + 22.0;
        let bar_w = 320.0_f64.max(grid_w.min(520.0));
        let keys_w = 520.0;
        let width = (grid_x + grid_w + MARGIN)
            .max(MARGIN * 2.0 + bar_w + 48.0)
            .max(MARGIN * 2.0 + keys_w)
            .max(self.title.chars().count() as f64 * CHAR_EM * 16.0 + 2.0 * MARGIN)
            .ceil();
        let height = (legend_y + 92.0).ceil();
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" class=\"heatmap\" font-family=\"{FONT}\">\n\
             <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#fff\"/>\n"
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"22\" font-size=\"16\" text-anchor=\"middle\">{}</text>",
            width / 2.0,
            escape(self.title)
        );
        // Axis names: above the column names, and above the row names.
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" \
             font-weight=\"bold\">precision</text>",
            grid_x + grid_w / 2.0,
            TITLE_H + 12.0
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\" \
             font-weight=\"bold\">input class</text>",
            grid_x - 6.0,
            grid_y - 8.0
        );
        for (j, c) in self.columns.iter().enumerate() {
            let x = grid_x + CELL_W * (j as f64 + 0.5);
            let _ = writeln!(
                out,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"{LABEL_FONT}\" \
                 text-anchor=\"middle\" class=\"column-label\">{}</text>",
                grid_y - 8.0,
                escape(&shorten(c, MAX_COLUMN_CHARS))
            );
        }
        for (i, name) in row_names.iter().enumerate() {
            let y = grid_y + CELL_H * (i as f64 + 0.5);
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{y:.1}\" dy=\"0.35em\" font-size=\"{LABEL_FONT}\" \
                 text-anchor=\"end\" class=\"row-label\">{}</text>",
                grid_x - 6.0,
                escape(name)
            );
            for (j, column) in self.columns.iter().enumerate() {
                let heat = self
                    .cells
                    .get(i)
                    .and_then(|r| r.get(j))
                    .cloned()
                    .unwrap_or(Heat::Missing("-"));
                let x = grid_x + CELL_W * j as f64;
                let y = grid_y + CELL_H * i as f64;
                out += &cell_svg(
                    &heat,
                    x,
                    y,
                    (lo, hi),
                    &format!("{column} · {}", self.rows[i]),
                );
            }
        }
        // Indented so that the first decade's label, centred on the bar's end, stays inside.
        out += &legend(lo, hi, MARGIN + 24.0, legend_y, bar_w);
        out.push_str("</svg>\n");
        out
    }
}

/// One cell: its rectangle (with a hover title) and its value.
fn cell_svg(heat: &Heat, x: f64, y: f64, (lo, hi): (f64, f64), what: &str) -> String {
    let (class, fill, text, title) = match heat {
        Heat::Error(e) => {
            let fill = scale_colour((e.log10() - lo) / (hi - lo));
            ("err", fill, short(*e), fmt_err(*e))
        }
        Heat::Exact => (
            "exact",
            EXACT_FILL,
            "exact".to_string(),
            "exact (error 0)".to_string(),
        ),
        Heat::NotFinite { text, why } => {
            ("nonfinite", NONFINITE_FILL, text.to_string(), why.clone())
        }
        Heat::Missing(m) => (
            "missing",
            MISSING_FILL,
            m.to_string(),
            match *m {
                "oor" => "did not fit the device (out of resources)".to_string(),
                "failed" => "failed (see the table's notes)".to_string(),
                "n/a" => "ran, but no error was recorded".to_string(),
                _ => "not run".to_string(),
            },
        ),
    };
    let colour = if matches!(heat, Heat::Missing(_)) {
        "#777"
    } else {
        ink(fill)
    };
    format!(
        "<rect class=\"cell {class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{CELL_W}\" \
         height=\"{CELL_H}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"1\">\
         <title>{}: {}</title></rect>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" dy=\"0.35em\" font-size=\"{VALUE_FONT}\" \
         text-anchor=\"middle\" fill=\"{colour}\" pointer-events=\"none\">{}</text>\n",
        hex(fill),
        escape(what),
        escape(&title),
        x + CELL_W / 2.0,
        y + CELL_H / 2.0,
        escape(&text)
    )
}

/// Segments of the colour bar: enough that the steps do not show.
const BAR_STEPS: usize = 64;
/// At most this many decade labels under the colour bar.
const BAR_LABELS: usize = 8;

/// The colour bar with its decades, then a swatch for each colour outside the scale.
fn legend(lo: f64, hi: f64, x0: f64, y0: f64, bar_w: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<text x=\"{x0:.1}\" y=\"{:.1}\" font-size=\"12\" font-weight=\"bold\">absolute error \
         (colour on a log scale)</text>",
        y0 - 4.0
    );
    let step = bar_w / BAR_STEPS as f64;
    for k in 0..BAR_STEPS {
        let t = (k as f64 + 0.5) / BAR_STEPS as f64;
        let _ = writeln!(
            out,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.2}\" height=\"12\" fill=\"{}\"/>",
            x0 + step * k as f64,
            y0 + 2.0,
            step + 0.3,
            hex(scale_colour(t))
        );
    }
    let span = (hi - lo).max(1.0);
    let every = ((span / BAR_LABELS as f64).ceil() as i64).max(1);
    let mut d = lo as i64;
    while d as f64 <= hi {
        if (d - lo as i64) % every == 0 || d as f64 == hi {
            let x = x0 + bar_w * (d as f64 - lo) / span;
            let _ = writeln!(
                out,
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">1e{d}</text>",
                y0 + 26.0
            );
        }
        d += 1;
    }
    let keys = [
        (EXACT_FILL, "exact", "exact result (error 0)"),
        (NONFINITE_FILL, "inf", "not finite (inf, nan)"),
        (MISSING_FILL, "oor", "not measured (oor, failed, -)"),
    ];
    let mut x = x0;
    let y = y0 + 44.0;
    for (fill, sample, label) in keys {
        let colour = if fill == MISSING_FILL {
            "#777"
        } else {
            ink(fill)
        };
        let _ = writeln!(
            out,
            "<rect class=\"key\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"40\" height=\"16\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" dy=\"0.35em\" font-size=\"9\" text-anchor=\"middle\" \
             fill=\"{colour}\">{sample}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" dy=\"0.35em\" font-size=\"11\">{}</text>",
            hex(fill),
            x + 20.0,
            y + 8.0,
            x + 46.0,
            y + 8.0,
            escape(label)
        );
        x += 46.0 + label.chars().count() as f64 * CHAR_EM * 11.0 + 20.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(cells: Vec<Vec<Heat>>) -> String {
        let rows: Vec<String> = (0..cells.len())
            .map(|i| format!("range{}", i + 1))
            .collect();
        let columns: Vec<String> = ["f32", "f64", "mp256"].map(String::from).to_vec();
        HeatMap {
            title: "sum / serial — absolute error",
            rows: &rows,
            columns: &columns,
            cells: &cells,
        }
        .svg()
    }

    #[test]
    fn exact_results_are_cells_of_their_own_class_and_colour() {
        let svg = map(vec![
            vec![Heat::Error(1.38e-1), Heat::Error(3.18e-10), Heat::Exact],
            vec![
                Heat::NotFinite {
                    text: "inf",
                    why: "sum overflowed to inf".into(),
                },
                Heat::Missing("oor"),
                Heat::Exact,
            ],
        ]);
        crate::plots::tests::assert_clean_svg(&svg);
        assert_eq!(svg.matches("class=\"cell exact\"").count(), 2);
        assert_eq!(svg.matches("class=\"cell err\"").count(), 2);
        assert_eq!(svg.matches("class=\"cell nonfinite\"").count(), 1);
        assert_eq!(svg.matches("class=\"cell missing\"").count(), 1);
        // Exact is drawn as exact, in its own colour, and the legend names it.
        let exact = hex(EXACT_FILL);
        assert_eq!(
            svg.matches(&format!("fill=\"{exact}\"")).count(),
            3,
            "two cells and the legend's swatch"
        );
        assert!(svg.contains(">exact result (error 0)</text>"));
        assert!(!svg.contains("e-41") && !svg.contains("e-25"));
        // No error colour is the exact colour.
        for k in 0..=100 {
            assert_ne!(scale_colour(f64::from(k) / 100.0), EXACT_FILL);
        }
        // Values are printed and the hover title has three digits.
        assert!(svg.contains(">1.4e-1</text>"));
        assert!(svg.contains("<title>f32 · range1: 1.38e-1</title>"));
        assert!(svg.contains("<title>f32 · range2: sum overflowed to inf</title>"));
        assert!(
            svg.contains("<title>f64 · range2: did not fit the device (out of resources)</title>")
        );
        // The scale spans the decades of the errors: 1e-10 to 1e0.
        assert!(svg.contains(">1e-10</text>") && svg.contains(">1e0</text>"));
    }

    #[test]
    fn the_scale_runs_pale_to_dark_and_text_stays_readable() {
        let lum = |(r, g, b): (u8, u8, u8)| {
            0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b)
        };
        let mut last = f64::INFINITY;
        for k in 0..=20 {
            let c = scale_colour(f64::from(k) / 20.0);
            assert!(lum(c) <= last + 1e-9, "lightness must fall along the scale");
            last = lum(c);
        }
        assert_eq!(scale_colour(0.0), SCALE[0]);
        assert_eq!(scale_colour(1.0), SCALE[8]);
        assert_eq!(scale_colour(f64::NAN), SCALE[0]);
        assert_eq!(ink(SCALE[0]), "#000");
        assert_eq!(ink(SCALE[8]), "#fff");
        assert_eq!(ink(EXACT_FILL), "#fff");
        assert_eq!(
            decades(&[vec![Heat::Error(3e-7), Heat::Error(2e5)]]),
            (-7.0, 6.0)
        );
        assert_eq!(decades(&[vec![Heat::Exact]]), (0.0, 1.0));
        assert_eq!(decades(&[vec![Heat::Error(1e-3)]]), (-3.0, -2.0));
    }

    #[test]
    fn a_grid_of_only_exact_results_and_a_ragged_grid_draw() {
        let svg = map(vec![vec![Heat::Exact; 3]]);
        crate::plots::tests::assert_clean_svg(&svg);
        assert_eq!(svg.matches("class=\"cell exact\"").count(), 3);
        // A short row is padded with "not run" cells rather than left ragged.
        let svg = map(vec![vec![Heat::Error(1.0)]]);
        assert_eq!(svg.matches("class=\"cell missing\"").count(), 2);
    }
}
