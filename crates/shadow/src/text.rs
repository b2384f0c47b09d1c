//! The text report of an analysis (returned as a string; the CLI prints it): per function, its
//! source lines ranked with their numbers and text; then the exceptions, origin lines first and
//! the lines they propagated to; then one summary line.
//!
//! Columns of a function's table:
//! - `line`: file (last path component) and line the sites count on;
//! - `max`, `mean`: the largest and mean demotion error `|r32 − r64| / |r64|` over the line's
//!   samples (`-`: nothing demotable on the line, or no sample);
//! - `sum`: the set error Σ of seed 002 §4.5 (the line's errors added over every execution);
//! - `samples`: executions measured (`+z` zero results and `+n` non-finite ones not among them);
//! - `exceptions`: NaN and inf results (with how many started there), divisions by zero,
//!   subnormal results;
//! - with shadow values (`--analysis shadow`): `local` the largest / mean local error (each
//!   instruction's own rounding against the exact operation on its operand values), `digits`
//!   the correct digits of the line's worst result against its shadow, `cancel` cancellations
//!   (with the most bits lost), `reseeded` executions whose shadow was re-seeded;
//! - `ops`: the line's distinct opcodes; then the source text.
//!
//! With shadow values, two blocks follow the tables: the digits right per output buffer (the
//! fewest, the median, the worst elements with value and shadow) and the re-seed points that
//! re-seeded (loads outside the buffers, shared memory, call results...).

use crate::analyse::ShadowRun;
use crate::lines::{Demotion, Exceptions, LineSummary};
use crate::values::Values;
use std::fmt::Write;

/// How many lines per function to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// The first N (ranked).
    Top(usize),
    /// Every line.
    All,
}

/// A file path's last component.
fn short(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

fn position(l: &LineSummary) -> String {
    format!("{}:{}", short(&l.file), l.line)
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.2e}")
    }
}

fn samples(d: &Demotion) -> String {
    let mut s = d.count.to_string();
    if d.zero_reference > 0 {
        write!(s, " +{}z", d.zero_reference).ok();
    }
    if d.non_finite > 0 {
        write!(s, " +{}n", d.non_finite).ok();
    }
    s
}

/// `2 NaN (2 origin), 1 inf, 2 div0, 3 subnormal`, or `-`.
pub fn exceptions(e: &Exceptions) -> String {
    let mut parts = Vec::new();
    let with_origin = |n: u64, origin: u64, what: &str| {
        if origin > 0 {
            format!("{n} {what} ({origin} origin)")
        } else {
            format!("{n} {what}")
        }
    };
    if e.nan > 0 {
        parts.push(with_origin(e.nan, e.nan_origin, "NaN"));
    }
    if e.inf > 0 {
        parts.push(with_origin(e.inf, e.inf_origin, "inf"));
    }
    if e.div_by_zero > 0 {
        parts.push(format!("{} div0", e.div_by_zero));
    }
    if e.subnormal > 0 {
        parts.push(format!("{} subnormal", e.subnormal));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// Left-aligned columns separated by two spaces (the last column unpadded).
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::from("  ");
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                write!(line, "{cell:<w$}  ", w = widths[c]).ok();
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The whole text report (see the module docs).
pub fn render(run: &ShadowRun, shown: Shown) -> String {
    let mut out = String::new();
    for f in &run.functions {
        let kind = if run.kernels.contains(&f.function) {
            "kernel"
        } else {
            "function"
        };
        writeln!(out, "{kind} {}", f.function).ok();
        let mut header: Vec<String> = ["line", "max", "mean", "sum", "samples", "exceptions"]
            .map(String::from)
            .to_vec();
        if run.analyses.shadow {
            header.extend(["local", "digits", "cancel", "reseeded"].map(String::from));
        }
        header.extend(["ops", "source"].map(String::from));
        let mut rows = vec![header];
        let limit = match shown {
            Shown::Top(n) => n,
            Shown::All => usize::MAX,
        };
        for l in f.lines.iter().take(limit) {
            let (max, mean, sum, n) = match &l.demotion {
                Some(d) if d.count > 0 => (sci(d.max), sci(d.mean), sci(d.sum), samples(d)),
                Some(d) => ("-".into(), "-".into(), "-".into(), samples(d)),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            let mut row = vec![
                position(l),
                max,
                mean,
                sum,
                n,
                l.exceptions.as_ref().map_or("-".into(), exceptions),
            ];
            if run.analyses.shadow {
                row.extend(value_columns(l.values.as_ref()));
            }
            row.extend([l.opcodes.join(" "), l.source.clone().unwrap_or_default()]);
            rows.push(row);
        }
        out.push_str(&columns(&rows));
        if f.lines.len() > limit {
            writeln!(
                out,
                "  ... {} more lines (--all shows them)",
                f.lines.len() - limit
            )
            .ok();
        }
        out.push('\n');
    }
    let bare = run.kernels_without_sites();
    if !bare.is_empty() {
        writeln!(
            out,
            "nothing measured in: {} (no floating-point instruction, or only ones left unread: see the notes)\n",
            bare.join(", ")
        )
        .ok();
    }
    out.push_str(&exceptions_block(run));
    out.push_str(&values_block(run));
    out.push_str(&contraction_block(run));
    out.push_str(&resources_block(run));
    out.push_str(&summary(run));
    out.push('\n');
    out
}

/// What pinning ptxas's contractions did, and what it left as written (those products ptxas
/// may still fuse differently once instrumented; the analyses treat them as fusible spans).
pub fn contraction_block(run: &ShadowRun) -> String {
    let c = &run.contraction;
    let mut out = String::new();
    if let Some(note) = &c.note {
        writeln!(out, "{note}\n").ok();
    }
    let Some(p) = &c.pinned else {
        return out;
    };
    writeln!(
        out,
        "contraction pinned for {}: {} as fma.rn, {} given .rn, {} left as written",
        p.arch,
        plural(p.pairs.len(), "fused pair"),
        p.rounded,
        p.left.len()
    )
    .ok();
    for l in &p.left {
        let line = l.line.map_or(String::new(), |n| format!(" line {n}"));
        writeln!(
            out,
            "  {}{line}: {}: {}",
            l.function, l.instruction, l.reason
        )
        .ok();
    }
    out.push('\n');
    out
}

/// The shadow-value columns of a line: local max/mean, digits, cancellations, re-seeds.
fn value_columns(v: Option<&Values>) -> [String; 4] {
    let Some(v) = v else {
        return ["-", "-", "-", "-"].map(String::from);
    };
    let local = if v.local.count > 0 {
        format!("{}/{}", sci(v.local.max), sci(v.local.mean))
    } else {
        "-".into()
    };
    let digits = v.digits.map_or("-".into(), |d| format!("{d:.1}"));
    let cancel = if v.cancellations > 0 {
        format!("{} ({}b)", v.cancellations, v.cancel_max_bits)
    } else {
        "0".into()
    };
    [local, digits, cancel, v.reseeded.to_string()]
}

/// Digits right per output element and the re-seed points that re-seeded; empty without
/// shadow values.
pub fn values_block(run: &ShadowRun) -> String {
    if !run.analyses.shadow {
        return String::new();
    }
    let mut out = String::from(
        "digits right per output element (against the shadow)
",
    );
    if run.outputs.is_empty() {
        out.push_str(
            "  no floating-point output
",
        );
    }
    let digits = |d: Option<f64>| d.map_or("-".into(), |x| format!("{x:.1}"));
    for o in &run.outputs {
        writeln!(
            out,
            "  {} ({}, {} elements{}): min {}, median {}",
            o.buffer,
            o.dtype,
            o.elements,
            if o.finite < o.elements {
                format!(", {} not finite", o.elements - o.finite)
            } else {
                String::new()
            },
            digits(o.min_digits),
            digits(o.median_digits)
        )
        .ok();
        for e in &o.worst {
            writeln!(
                out,
                "    [{}] {:e} (shadow {:e}): {:.1} digits",
                e.index, e.value, e.shadow, e.digits
            )
            .ok();
        }
    }
    let reseeded: Vec<_> = run.reseeds.iter().filter(|r| r.reseeded > 0).collect();
    if !reseeded.is_empty() {
        out.push_str(
            "shadows re-seeded from values (not propagated)
",
        );
        for r in reseeded {
            writeln!(
                out,
                "  {} of {}  {}  {}: {}",
                r.reseeded, r.executions, r.site, r.opcode, r.reason
            )
            .ok();
        }
    }
    out.push('\n');
    out
}

/// The exceptions: where they start (origins, divisions by zero, subnormals) and where NaN and
/// inf came in through operands; empty when exceptions were not counted.
pub fn exceptions_block(run: &ShadowRun) -> String {
    if !run.analyses.exceptions {
        return String::new();
    }
    let lines: Vec<&LineSummary> = run.functions.iter().flat_map(|f| &f.lines).collect();
    let at = |l: &LineSummary| {
        format!(
            "{} ({}){}",
            position(l),
            l.function,
            l.source
                .as_ref()
                .map_or(String::new(), |s| format!(": {s}"))
        )
    };
    let sources: Vec<String> = lines
        .iter()
        .filter(|l| l.exceptions.is_some_and(|e| e.is_source()))
        .map(|l| {
            let e = l.exceptions.unwrap_or_default();
            format!("  {}  {}\n", exceptions(&e), at(l))
        })
        .collect();
    let propagated: Vec<String> = lines
        .iter()
        .filter(|l| l.exceptions.is_some_and(|e| e.propagated() > 0))
        .map(|l| {
            let e = l.exceptions.unwrap_or_default();
            let mut what = Vec::new();
            if e.nan > e.nan_origin {
                what.push(format!("{} NaN", e.nan - e.nan_origin));
            }
            if e.inf > e.inf_origin {
                what.push(format!("{} inf", e.inf - e.inf_origin));
            }
            format!("  {}  {}\n", what.join(", "), at(l))
        })
        .collect();
    if sources.is_empty() && propagated.is_empty() {
        return "exceptions: none\n\n".into();
    }
    let mut out = String::from("exceptions: where they start\n");
    if sources.is_empty() {
        out.push_str("  none (every NaN or inf came in through the inputs)\n");
    }
    for s in sources {
        out.push_str(&s);
    }
    if !propagated.is_empty() {
        out.push_str("propagated to (NaN or inf operands in, NaN or inf out)\n");
        for p in propagated {
            out.push_str(&p);
        }
    }
    out.push('\n');
    out
}

/// One line: what was measured, the worst demotion error and where, exception origins, the
/// bit-identity of the outputs, the runs and, when timed, the overhead.
pub fn summary(run: &ShadowRun) -> String {
    let lines: usize = run.functions.iter().map(|f| f.lines.len()).sum();
    let mut s = format!(
        "{} ({} flags, {}): {} on {} in {}",
        run.spec,
        run.flags,
        run.analyses,
        plural(run.sites.len(), "site"),
        plural(lines, "line"),
        plural(run.functions.len(), "function")
    );
    if run.analyses.demotion {
        let worst = run
            .functions
            .iter()
            .flat_map(|f| &f.lines)
            .filter_map(|l| l.demotion.map(|d| (d.max, l)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match worst {
            Some((max, l)) => write!(
                s,
                "; largest demotion error {} at {} ({})",
                sci(max),
                position(l),
                l.function
            ),
            None => write!(s, "; no f64 arithmetic to demote"),
        }
        .ok();
    }
    if run.analyses.shadow {
        let worst = run
            .functions
            .iter()
            .flat_map(|f| &f.lines)
            .filter_map(|l| l.values.as_ref().and_then(|v| v.digits).map(|d| (d, l)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((d, l)) = worst {
            write!(
                s,
                "; fewest correct digits {d:.1} at {} ({})",
                position(l),
                l.function
            )
            .ok();
        }
    }
    if run.analyses.exceptions {
        let origins: u64 = run
            .sites
            .iter()
            .filter_map(|x| x.exceptions.map(|e| e.origins()))
            .sum();
        write!(s, "; {origins} NaN/inf origins").ok();
    }
    let runs = run.runs.len();
    write!(
        s,
        "; outputs bit-identical to the program as written; {}",
        plural(runs, "run")
    )
    .ok();
    if let Some(t) = &run.timing {
        write!(
            s,
            "; time {:.3} ms as written, {:.3} ms instrumented ({:.1}x)",
            t.original_ms, t.instrumented_ms, t.ratio
        )
        .ok();
    }
    s
}

/// Per kernel, registers per thread (and spilled bytes where any) as written and in each
/// instrumented build: `registers: k 40 as written, 56 demotion,exceptions, 120 shadow`.
fn resources_block(run: &ShadowRun) -> String {
    let mut out = String::new();
    for k in &run.kernels {
        let builds: Vec<String> = run
            .resources
            .iter()
            .filter(|c| &c.kernel == k)
            .map(|c| {
                let spill = if c.local_bytes > 0 {
                    format!(" (+{} B local)", c.local_bytes)
                } else {
                    String::new()
                };
                format!("{}{spill} {}", c.registers, c.build)
            })
            .collect();
        if builds.len() > 1 {
            writeln!(out, "registers per thread, {k}: {}", builds.join(", ")).ok();
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// `1 site`, `2 sites`.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The one line for a program with no site to measure.
pub fn nothing_to_measure(run: &ShadowRun) -> String {
    format!(
        "{}: no floating-point instruction for {} to measure in kernel{} {}",
        run.spec,
        run.analyses,
        if run.kernels.len() == 1 { "" } else { "s" },
        run.kernels.join(", ")
    )
}

#[cfg(test)]
mod tests;
