//! The tables `mantissa mathlib` prints and the report shows: per format one summary table
//! (documented CUDA bound beside the measured maxima, CPU columns, GPU-vs-CPU differences) and
//! one table of worst inputs, re-checkable with `--check`.

use crate::format::Format;
use crate::functions::{Function, Variant};
use crate::hexfloat::{to_decimal, to_hex};
use crate::measure::{Column, Measurement};
use crate::published::documented;

/// A table: title, header and rows of text cells (numbers already formatted).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// What it shows.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<String>>,
    /// Leading text columns (left-aligned); the rest are numbers.
    pub text_columns: usize,
    /// Lines printed under it.
    pub notes: Vec<String>,
}

/// An error in ulps for a table cell: 3 significant digits, `inf` for special mismatches.
pub fn ulps(x: f64) -> String {
    if x.is_infinite() {
        "inf".into()
    } else if x == 0.0 {
        "0".into()
    } else if x < 1e4 {
        format!("{x:.3}")
    } else {
        format!("{x:.3e}")
    }
}

fn find(ms: &[Measurement], f: Function, format: Format, column: Column) -> Option<&Measurement> {
    ms.iter()
        .find(|m| m.function == f && m.format == format && m.column == column)
}

/// The columns present in `ms` for `format`, in table order.
fn columns(ms: &[Measurement], format: Format) -> Vec<Column> {
    let mut cols: Vec<Column> = Vec::new();
    for m in ms.iter().filter(|m| m.format == format) {
        if !cols.contains(&m.column) {
            cols.push(m.column);
        }
    }
    let order = |c: &Column| match c {
        Column::Gpu(v) => Variant::ALL.iter().position(|x| x == v).unwrap_or(0),
        Column::Cpu(l) => {
            10 + crate::cpu::CpuLibrary::ALL
                .iter()
                .position(|x| x == l)
                .unwrap_or(0)
        }
    };
    cols.sort_by_key(order);
    cols
}

/// The summary and worst-input tables of one format (empty when nothing was measured in it).
pub fn tables(ms: &[Measurement], format: Format) -> Vec<Table> {
    let cols = columns(ms, format);
    if cols.is_empty() {
        return Vec::new();
    }
    let mut functions: Vec<Function> = ms
        .iter()
        .filter(|m| m.format == format)
        .map(|m| m.function)
        .collect();
    functions.sort();
    functions.dedup();

    let mut header = vec!["function".to_string(), "CUDA doc".to_string()];
    for c in &cols {
        header.push(match c {
            Column::Gpu(v) => format!("{} max", v.name()),
            Column::Cpu(l) => format!("{} max", l.name()),
        });
    }
    let gpu_default = cols.contains(&Column::Gpu(Variant::Default));
    if gpu_default {
        header.push("default mean".into());
        header.push("default not CR".into());
    }
    let cpu_cols: Vec<Column> = cols
        .iter()
        .copied()
        .filter(|c| matches!(c, Column::Cpu(_)))
        .collect();
    if gpu_default {
        for c in &cpu_cols {
            header.push(format!("≠ {}", c.label()));
        }
    }
    let mut rows = Vec::new();
    let mut exceeded = false;
    let mut footnotes: Vec<String> = Vec::new();
    for &f in &functions {
        let doc = documented(f, format, Variant::Default);
        let doc_cell = match doc {
            Some(d) => match d.ulps {
                Some(u) => ulps(u),
                None => {
                    // A bound on part of the range only (lgamma): the figure with a mark, and
                    // the guide's condition under the table.
                    footnotes.push(format!("{}: {}", f.cuda_name(format), d.text));
                    match d.partial_ulps {
                        Some(p) => format!("{}*", ulps(p.value)),
                        None => "*".into(),
                    }
                }
            },
            None => "—".into(),
        };
        let mut row = vec![f.cuda_name(format).to_string(), doc_cell];
        for &c in &cols {
            row.push(match find(ms, f, format, c) {
                Some(m) => {
                    // The guide's bound where the largest error occurs (it may hold on part of
                    // the range only, or grow with x as __expf's does).
                    let doc = match (c, &m.stats.worst) {
                        (Column::Gpu(v), Some(w)) => documented(f, format, v).and_then(|d| {
                            d.ulps_at(w.args[0], w.args.get(1).copied().unwrap_or(0.0))
                        }),
                        _ => None,
                    };
                    // The measured maximum is the error against the exact value; the guide's
                    // bound is against the correctly rounded result, so it is exceeded when
                    // measured − 0.5 > bound.
                    let over = doc.is_some_and(|d| m.stats.max_ulps - 0.5 > d + 1e-9);
                    exceeded |= over;
                    format!("{}{}", ulps(m.stats.max_ulps), if over { " !" } else { "" })
                }
                None => "—".into(),
            });
        }
        if gpu_default {
            match find(ms, f, format, Column::Gpu(Variant::Default)) {
                Some(m) => {
                    row.push(ulps(m.stats.mean_ulps()));
                    row.push(format!(
                        "{:.3}%",
                        100.0 * m.stats.not_correctly_rounded_share()
                    ));
                }
                None => row.extend(["—".into(), "—".into()]),
            }
            for &c in &cpu_cols {
                row.push(
                    match find(ms, f, format, c).and_then(|m| m.compared_with_gpu) {
                        Some((n, d)) => format!("{d} / {n}"),
                        None => "—".into(),
                    },
                );
            }
        }
        rows.push(row);
    }
    let mut notes = vec![
        "max: largest error in ulps of the exact result (the correctly rounded result has ≤ 0.5); \
         CUDA doc: the CUDA Programming Guide's bound (against the correctly rounded result), \
         `!` where the measured maximum exceeds it."
            .to_string(),
    ];
    if format == Format::F32 {
        notes.push(
            "GPU columns of univariate functions: all 2^32 inputs; CPU columns and bivariate \
             functions: a uniform sample, then a search from the largest errors."
                .into(),
        );
    } else {
        notes.push("Random inputs over the whole range and the hard regions, then a search from the largest errors: maxima are lower bounds.".into());
    }
    if gpu_default {
        notes.push("mean and not CR: over all inputs swept or sampled; ≠ lib: sampled inputs where the CPU library's result differs from CUDA's default build.".into());
    }
    if cols.contains(&Column::Gpu(Variant::Fast)) {
        notes.push(
            "fast: -use_fast_math also flushes subnormal inputs and results to zero; maxima near \
             2^23 ulps (8.389e6) or infinite ones at subnormal inputs come from that (see the \
             worst inputs)."
                .into(),
        );
    }
    for n in footnotes {
        notes.push(format!("* {n}"));
    }
    if exceeded {
        notes.push("`!`: measured maximum above the documented bound; re-check with `mantissa mathlib --check FUNCTION INPUT`.".into());
    }
    let summary = Table {
        title: format!(
            "{} ({})",
            format.name(),
            if format == Format::F32 {
                "binary32"
            } else {
                "binary64"
            }
        ),
        header,
        rows,
        text_columns: 1,
        notes,
    };

    let mut worst_rows = Vec::new();
    for &f in &functions {
        for &c in &cols {
            let Some(m) = find(ms, f, format, c) else {
                continue;
            };
            let Some(w) = &m.stats.worst else { continue };
            let input_hex = w
                .args
                .iter()
                .map(|&a| to_hex(a, format))
                .collect::<Vec<_>>()
                .join(", ");
            let input_dec = w
                .args
                .iter()
                .map(|&a| to_decimal(a, format))
                .collect::<Vec<_>>()
                .join(", ");
            worst_rows.push(vec![
                f.cuda_name(format).to_string(),
                c.label(),
                ulps(w.ulps),
                input_hex,
                input_dec,
                to_hex(w.result, format),
                to_hex(w.correctly_rounded, format),
            ]);
        }
    }
    let worst = Table {
        title: format!("{}: where the largest errors occur", format.name()),
        header: ["function", "column", "ulps", "input (hex)", "input", "result", "correctly rounded"]
            .map(String::from)
            .to_vec(),
        rows: worst_rows,
        text_columns: 7,
        notes: vec!["Re-check one: `mantissa mathlib --check FUNCTION INPUT` (f32 spellings such as sinf select binary32).".into()],
    };
    vec![summary, worst]
}
