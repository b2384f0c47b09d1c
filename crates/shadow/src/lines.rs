//! Per-site statistics gathered per function and per source line, and ranked by what matters.
//!
//! **Which line a site counts on.** A site's `.loc` names the innermost source position; code
//! inlined from a header (a math function's body in `math_functions.hpp`) would then count on a
//! line of the header the user never wrote. So a site counts on the outermost position of its
//! inlined chain (the call in the user's code) when it has one, else on its own line.
//!
//! **How a line's numbers combine its sites.** Demotion error: counts, sums and the two edge-case
//! counts add, the maximum is the largest; the mean is the line's sum over its count (the mean
//! over every finite sample of every site of the line, not a mean of means); the sum is the set
//! error Σ of seed 002 §4.5 (the error of running the whole line in f32 is estimated by the sum of
//! its instructions' total errors). Exceptions: every count adds.
//!
//! Shadow values: counts add, maxima are the largest, means are over every sample of the line,
//! and the digits are those of the line's worst accumulated error.
//!
//! **Ranking** (most important first): exception origins (NaN or ±inf results from operands that
//! were not), then the largest demotion error, the mean, the set error Σ, then the largest
//! accumulated error against the shadow; ties keep the order of their first sites (the PTX's
//! order).

use crate::values::Values;
use mantissa_ptx::pass::shadow::{ErrorStats, ExceptionCounts, ShadowSite, SiteStats};
use mantissa_ptx::site::Site;
use serde::Serialize;
use std::cmp::Ordering;

/// One instrumented instruction and what the run measured at it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteResult {
    /// Its index among the module's candidate sites (stable whatever subset was instrumented).
    pub index: u32,
    /// Its address (function, file, line, ordinal, inlined chain).
    pub site: Site,
    /// Its full opcode (`fma.rn.f64`).
    pub opcode: String,
    /// `f32` or `f64`.
    pub value_type: String,
    /// Demotion error, where it is measured (f64 arithmetic, when asked for).
    pub demotion: Option<Demotion>,
    /// Exception counts, where they are counted (when asked for).
    pub exceptions: Option<Exceptions>,
    /// Shadow values, where the values analysis instrumented the site.
    pub values: Option<Values>,
}

impl SiteResult {
    /// `site` with what was measured at it.
    pub fn new(site: &ShadowSite, stats: &SiteStats) -> SiteResult {
        SiteResult {
            index: site.index,
            site: site.site.clone(),
            opcode: site.opcode.clone(),
            value_type: site.value_type.to_string(),
            demotion: stats.demotion.as_ref().map(Demotion::from),
            exceptions: stats.exceptions.as_ref().map(Exceptions::from),
            values: None,
        }
    }
}

/// Relative error statistics over many executions: for the demotion error `|r32 − r64| / |r64|`
/// of the instruction's f32 form against its f64 result (the shadow values' local and
/// accumulated errors use it too, with their own reference).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Demotion {
    /// Executions with a finite, nonzero f64 result and a finite f32 form (the samples).
    pub count: u64,
    /// The sum of their relative errors (the set error Σ of seed 002 §4.5, for this site or line).
    pub sum: f64,
    /// The largest of them.
    pub max: f64,
    /// `sum / count` (0 with no sample).
    pub mean: f64,
    /// Executions whose f64 result was 0 (no relative error exists; not in the samples).
    pub zero_reference: u64,
    /// Executions where the f64 result or its f32 form was not finite (not in the samples).
    pub non_finite: u64,
}

impl From<&ErrorStats> for Demotion {
    fn from(e: &ErrorStats) -> Self {
        Demotion {
            count: e.count,
            sum: e.sum,
            max: e.max,
            mean: mean(e.sum, e.count),
            zero_reference: e.zero_reference,
            non_finite: e.non_finite,
        }
    }
}

fn mean(sum: f64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        sum / count as f64
    }
}

impl Demotion {
    /// Both sets of samples together.
    pub fn merge(&self, other: &Demotion) -> Demotion {
        let count = self.count + other.count;
        let sum = self.sum + other.sum;
        Demotion {
            count,
            sum,
            max: self.max.max(other.max),
            mean: mean(sum, count),
            zero_reference: self.zero_reference + other.zero_reference,
            non_finite: self.non_finite + other.non_finite,
        }
    }
}

/// Exceptional results over many executions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Exceptions {
    /// NaN results.
    pub nan: u64,
    /// Of those, NaN from operands none of which was NaN (the NaN starts here).
    pub nan_origin: u64,
    /// ±inf results.
    pub inf: u64,
    /// Of those, ±inf from finite operands (the infinity starts here).
    pub inf_origin: u64,
    /// Divisions (`div`, `rcp`) by zero.
    pub div_by_zero: u64,
    /// Subnormal results.
    pub subnormal: u64,
}

impl From<&ExceptionCounts> for Exceptions {
    fn from(e: &ExceptionCounts) -> Self {
        Exceptions {
            nan: e.nan,
            nan_origin: e.nan_origin,
            inf: e.inf,
            inf_origin: e.inf_origin,
            div_by_zero: e.div_by_zero,
            subnormal: e.subnormal,
        }
    }
}

impl Exceptions {
    /// Both counts together.
    pub fn merge(&self, o: &Exceptions) -> Exceptions {
        Exceptions {
            nan: self.nan + o.nan,
            nan_origin: self.nan_origin + o.nan_origin,
            inf: self.inf + o.inf,
            inf_origin: self.inf_origin + o.inf_origin,
            div_by_zero: self.div_by_zero + o.div_by_zero,
            subnormal: self.subnormal + o.subnormal,
        }
    }

    /// Results that start a NaN or an infinity here.
    pub fn origins(&self) -> u64 {
        self.nan_origin + self.inf_origin
    }

    /// NaN or ±inf results that came in through an operand.
    pub fn propagated(&self) -> u64 {
        (self.nan - self.nan_origin.min(self.nan)) + (self.inf - self.inf_origin.min(self.inf))
    }

    /// Whether anything happened here that the exceptions block shows as a source: an origin, a
    /// division by zero or a subnormal result.
    pub fn is_source(&self) -> bool {
        self.origins() > 0 || self.div_by_zero > 0 || self.subnormal > 0
    }

    /// Whether any count is nonzero.
    pub fn any(&self) -> bool {
        *self != Exceptions::default()
    }
}

/// The sites of one source line of one function, combined (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineSummary {
    /// The function (kernel or device function) the line's code is in.
    pub function: String,
    /// The source file, as the PTX's `.file` names it.
    pub file: String,
    /// The 1-based line (0: code before any `.loc`).
    pub line: u32,
    /// The line's text, when the file could be read.
    pub source: Option<String>,
    /// Its sites' indices, in order.
    pub sites: Vec<u32>,
    /// Its sites' distinct opcodes, in first-seen order.
    pub opcodes: Vec<String>,
    /// How many of its sites are code inlined from elsewhere (a header's function body).
    pub inlined: u32,
    /// Its sites' demotion errors combined, when any is measured.
    pub demotion: Option<Demotion>,
    /// Its sites' exceptions combined, when any is counted.
    pub exceptions: Option<Exceptions>,
    /// Its sites' shadow values combined, when any is measured.
    pub values: Option<Values>,
}

/// One function's lines, ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionSummary {
    /// The function as the PTX names it.
    pub function: String,
    /// Every line with a site, most important first (see the module docs).
    pub lines: Vec<LineSummary>,
    /// All its sites' demotion errors combined.
    pub demotion: Option<Demotion>,
    /// All its sites' exceptions combined.
    pub exceptions: Option<Exceptions>,
    /// All its sites' shadow values combined.
    pub values: Option<Values>,
}

/// The source position a site counts on: the outermost call of its inlined chain, or its own.
pub fn counted_position(site: &Site) -> (&str, u32) {
    match site.inlined.first() {
        Some((file, line)) => (file.as_str(), *line),
        None => (site.file.as_str(), site.line),
    }
}

fn merge_opt<T: Clone>(a: Option<T>, b: Option<T>, f: impl Fn(&T, &T) -> T) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(&x, &y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The sites gathered per function (in order of each function's first site) and per line, each
/// function's lines ranked (see the module docs). Source text is left `None`
/// ([`crate::source::attach`] fills it).
pub fn summarise(sites: &[SiteResult]) -> Vec<FunctionSummary> {
    let mut functions: Vec<FunctionSummary> = Vec::new();
    for s in sites {
        let fi = match functions.iter().position(|f| f.function == s.site.function) {
            Some(i) => i,
            None => {
                functions.push(FunctionSummary {
                    function: s.site.function.clone(),
                    lines: Vec::new(),
                    demotion: None,
                    exceptions: None,
                    values: None,
                });
                functions.len() - 1
            }
        };
        let f = &mut functions[fi];
        f.demotion = merge_opt(f.demotion, s.demotion, Demotion::merge);
        f.exceptions = merge_opt(f.exceptions, s.exceptions, Exceptions::merge);
        f.values = merge_opt(f.values.take(), s.values.clone(), Values::merge);
        let (file, line) = counted_position(&s.site);
        let li = match f
            .lines
            .iter()
            .position(|l| l.file == file && l.line == line)
        {
            Some(i) => i,
            None => {
                f.lines.push(LineSummary {
                    function: s.site.function.clone(),
                    file: file.to_string(),
                    line,
                    source: None,
                    sites: Vec::new(),
                    opcodes: Vec::new(),
                    inlined: 0,
                    demotion: None,
                    exceptions: None,
                    values: None,
                });
                f.lines.len() - 1
            }
        };
        let l = &mut f.lines[li];
        l.sites.push(s.index);
        if !l.opcodes.contains(&s.opcode) {
            l.opcodes.push(s.opcode.clone());
        }
        l.inlined += u32::from(!s.site.inlined.is_empty());
        l.demotion = merge_opt(l.demotion, s.demotion, Demotion::merge);
        l.exceptions = merge_opt(l.exceptions, s.exceptions, Exceptions::merge);
        l.values = merge_opt(l.values.take(), s.values.clone(), Values::merge);
    }
    for f in &mut functions {
        // Stable: lines equal on every measure keep their first-seen (source) order.
        f.lines.sort_by(rank);
    }
    functions
}

/// Most important first: exception origins, then the largest, mean and summed demotion error,
/// then the largest accumulated error against the shadow.
pub fn rank(a: &LineSummary, b: &LineSummary) -> Ordering {
    let origins = |l: &LineSummary| l.exceptions.map_or(0, |e| e.origins());
    let d = |l: &LineSummary| {
        l.demotion
            .map_or((0.0, 0.0, 0.0), |d| (d.max, d.mean, d.sum))
    };
    let (da, db) = (d(a), d(b));
    let accumulated = |l: &LineSummary| l.values.as_ref().map_or(0.0, |v| v.accumulated.max);
    origins(b)
        .cmp(&origins(a))
        .then(db.0.total_cmp(&da.0))
        .then(db.1.total_cmp(&da.1))
        .then(db.2.total_cmp(&da.2))
        .then(accumulated(b).total_cmp(&accumulated(a)))
}

#[cfg(test)]
mod tests;
