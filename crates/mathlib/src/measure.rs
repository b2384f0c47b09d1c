//! The measurement of one function in one format, every column: the GPU variants (binary32
//! univariate functions swept exhaustively on the device, the rest by [`crate::search`]) and
//! the CPU libraries (sampled and searched), with the GPU-vs-CPU difference counts.
//!
//! Exhaustive sweeps take their errors from the device's double-precision reference (accurate
//! to about 1e-8 ulps of f32); everything the device cannot decide is decided here with the
//! arbitrary-precision reference: the inputs whose double lies too close to a rounding
//! boundary, and the largest error of every input bin, which is also how the device reference
//! itself is checked (a disagreement is counted and reported, never hidden).

use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::cpu::CpuLibrary;
use crate::format::{ulp_error, Format};
use crate::functions::{Function, Variant};
use crate::gpu::{MathGpu, Sweep};
use crate::reference::reference;
use crate::search::{search, SearchOptions, Subject};
use crate::stats::{same_value, Stats, Worst};
use crate::MathlibError;

/// A column of the table: a GPU build or a CPU library.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Column {
    /// CUDA, built as the variant says.
    Gpu(Variant),
    /// A CPU library.
    Cpu(CpuLibrary),
}

impl Column {
    /// `default`, `fast`, `intrinsic`, `std`, `libm`.
    pub fn label(self) -> String {
        match self {
            Column::Gpu(v) => v.name().to_string(),
            Column::Cpu(l) => l.name().to_string(),
        }
    }
}

/// How a column's inputs were chosen.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// All 2^32 binary32 inputs.
    Exhaustive,
    /// An unbiased sample, then a search from the largest errors.
    Search,
}

/// One measured column of one function in one format: what `mathlib.jsonl` holds per line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    /// The function.
    pub function: Function,
    /// The format.
    pub format: Format,
    /// The column.
    pub column: Column,
    /// Exhaustive or search.
    pub method: Method,
    /// The errors.
    pub stats: Stats,
    /// Inputs whose rounding the device could not decide, decided with the arbitrary-precision
    /// reference (exhaustive sweeps).
    pub hard: u64,
    /// Inputs whose rounding no precision up to the reference's limit decided (skipped).
    pub undecided: u64,
    /// Bin maxima where the device's estimate and the arbitrary-precision error disagree by
    /// more than 1e-6 ulps (a wrong device reference; expected 0).
    pub reference_disagreements: u64,
    /// Inputs compared with the GPU's default build, and how many results differ (CPU columns
    /// with a GPU present).
    pub compared_with_gpu: Option<(u64, u64)>,
    /// Wall-clock seconds for this column (shared work split evenly).
    pub seconds: f64,
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Functions.
    pub functions: Vec<Function>,
    /// Formats.
    pub formats: Vec<Format>,
    /// GPU variants (ignored without a GPU).
    pub variants: Vec<Variant>,
    /// CPU libraries.
    pub libraries: Vec<CpuLibrary>,
    /// Time for each (function, format)'s search.
    pub budget: Duration,
    /// Size of the uniform sample of binary32 inputs for the CPU columns of univariate
    /// functions (a stride over all bit patterns).
    pub cpu_sample: u64,
    /// Seed of the random inputs.
    pub seed: u64,
}

/// A GPU variant as a search subject (CUDA's function as built under `variant`).
pub struct GpuSubject<'a> {
    /// The GPU evaluator.
    pub gpu: &'a MathGpu,
    /// Which build of CUDA's function.
    pub variant: Variant,
}

impl Subject for GpuSubject<'_> {
    fn eval(
        &self,
        f: Function,
        format: Format,
        xs: &[f64],
        ys: &[f64],
    ) -> Result<Vec<f64>, MathlibError> {
        Ok(self.gpu.eval(f, format, self.variant, xs, ys)?)
    }
}

/// A CPU library as a search subject.
pub struct CpuSubject(pub CpuLibrary);

impl Subject for CpuSubject {
    fn eval(
        &self,
        f: Function,
        format: Format,
        xs: &[f64],
        ys: &[f64],
    ) -> Result<Vec<f64>, MathlibError> {
        Ok(xs
            .par_iter()
            .zip(ys.par_iter())
            .map(|(&x, &y)| self.0.eval(f, format, x, y).unwrap_or(f64::NAN))
            .collect())
    }
}

/// Progress of a long measurement: (what, fraction done).
pub type Progress<'a> = &'a mut dyn FnMut(&str, f64);

/// Measure every column of `f` in `format`. `gpu` is None on a machine without one (CPU
/// columns only).
pub fn measure(
    f: Function,
    format: Format,
    plan: &Plan,
    gpu: Option<&MathGpu>,
    progress: Progress<'_>,
) -> Result<Vec<Measurement>, MathlibError> {
    let variants: Vec<Variant> = match gpu {
        Some(_) => plan
            .variants
            .iter()
            .copied()
            .filter(|&v| f.has_variant(format, v))
            .collect(),
        None => Vec::new(),
    };
    let libraries: Vec<CpuLibrary> = plan
        .libraries
        .iter()
        .copied()
        .filter(|l| l.has(f, format))
        .collect();
    let mut out = Vec::new();
    let exhaustive = format == Format::F32 && f.arity() == 1;
    let mut seeds: Vec<[f64; 2]> = Vec::new();
    if let (true, Some(gpu)) = (exhaustive, gpu) {
        for &v in &variants {
            let started = Instant::now();
            let label = format!("{} {} {}: sweep", f.name(), format.name(), v.name());
            let sweep = gpu.sweep_f32(f, v, 0..1u64 << 32, &mut |done, total| {
                progress(&label, done as f64 / total as f64)
            })?;
            let m = settle_sweep(f, v, gpu, &sweep, started)?;
            if v == Variant::Default {
                // The CPU columns' search starts where CUDA's errors are largest, too.
                seeds = sweep
                    .bins
                    .iter()
                    .filter(|b| b.max_ulps > 0.0)
                    .map(|b| [f32::from_bits(b.argmax) as f64, 0.0])
                    .collect();
            }
            out.push(m);
        }
    }
    // The search: CPU libraries always; the GPU variants too when not swept. The GPU default
    // build goes first (when there is one) so the CPU columns count their differences from it.
    let gpu_subjects: Vec<GpuSubject> = match gpu {
        Some(gpu) => variants
            .iter()
            .filter(|&&v| !exhaustive || v == Variant::Default)
            .map(|&v| GpuSubject { gpu, variant: v })
            .collect(),
        None => Vec::new(),
    };
    let cpu_subjects: Vec<CpuSubject> = libraries.iter().map(|&l| CpuSubject(l)).collect();
    let mut subjects: Vec<&dyn Subject> = Vec::new();
    let mut columns: Vec<Column> = Vec::new();
    for s in &gpu_subjects {
        subjects.push(s);
        columns.push(Column::Gpu(s.variant));
    }
    for s in &cpu_subjects {
        subjects.push(s);
        columns.push(Column::Cpu(s.0));
    }
    if subjects.is_empty() || (exhaustive && cpu_subjects.is_empty()) {
        return Ok(out);
    }
    let mut options = SearchOptions {
        budget: plan.budget,
        seed: plan.seed,
        seeds,
        ..Default::default()
    };
    if exhaustive {
        options.uniform = stride_sample(plan.cpu_sample, plan.seed);
    }
    let label = format!("{} {}: search", f.name(), format.name());
    let summary = search(f, format, &subjects, &options, &mut |p| progress(&label, p))?;
    let gpu_first = columns
        .first()
        .is_some_and(|c| matches!(c, Column::Gpu(Variant::Default)));
    let share = summary.seconds / subjects.len() as f64;
    for (i, (column, result)) in columns.iter().zip(summary.results).enumerate() {
        // A swept GPU default already has its exhaustive row; its sampled one is dropped.
        if exhaustive && matches!(column, Column::Gpu(_)) {
            continue;
        }
        let compared =
            (gpu_first && i > 0).then_some((result.stats.sampled, result.differs_from_first));
        out.push(Measurement {
            function: f,
            format,
            column: *column,
            method: Method::Search,
            stats: result.stats,
            hard: 0,
            undecided: summary.undecided,
            reference_disagreements: 0,
            compared_with_gpu: compared,
            seconds: share,
        });
    }
    Ok(out)
}

/// `n` binary32 inputs spread evenly over all 2^32 bit patterns (a stride, with a seeded
/// offset), NaN patterns skipped: an unbiased sample of the whole range.
pub fn stride_sample(n: u64, seed: u64) -> Vec<[f64; 2]> {
    let n = n.clamp(1, 1 << 32);
    let stride = (1u64 << 32) / n;
    let offset = seed % stride.max(1);
    (0..n)
        .map(|i| f32::from_bits((offset + i * stride) as u32) as f64)
        .filter(|x| !x.is_nan())
        .map(|x| [x, 0.0])
        .collect()
}

/// Turn a device sweep into a measurement: decide its hard inputs and check every bin's
/// maximum with the arbitrary-precision reference.
fn settle_sweep(
    f: Function,
    variant: Variant,
    gpu: &MathGpu,
    sweep: &Sweep,
    started: Instant,
) -> Result<Measurement, MathlibError> {
    let format = Format::F32;
    let mut stats = Stats {
        evaluated: sweep.inputs,
        sampled: sweep.inputs,
        sum_ulps: sweep.sum_ulps,
        finite: sweep.finite,
        not_correctly_rounded: sweep.not_correctly_rounded,
        infinite: sweep.infinite,
        ..Default::default()
    };
    // Hard inputs: the device left their rounding undecided.
    let hard: Vec<f64> = sweep
        .hard
        .iter()
        .map(|&b| f32::from_bits(b) as f64)
        .collect();
    let results = gpu.eval(f, format, variant, &hard, &vec![0.0; hard.len()])?;
    let refs: Vec<_> = hard
        .par_iter()
        .map(|&x| reference(f, &[x], format).ok())
        .collect();
    // Hard inputs past the device's list were never decided: counted as such, not guessed.
    let mut undecided = sweep.hard_total - sweep.hard.len() as u64;
    for (r, y) in refs.iter().zip(&results) {
        match r {
            Some(r) if !same_value(*y, r.rounded) => stats.not_correctly_rounded += 1,
            Some(_) => {}
            None => undecided += 1,
        }
    }
    // Every bin's maximum (and the overall one), re-measured exactly.
    let candidates: Vec<(usize, f64)> = sweep
        .bins
        .iter()
        .enumerate()
        .filter(|(_, b)| b.max_ulps > 0.0)
        .map(|(i, b)| (i, f32::from_bits(b.argmax) as f64))
        .collect();
    let xs: Vec<f64> = candidates.iter().map(|c| c.1).collect();
    let ys = gpu.eval(f, format, variant, &xs, &vec![0.0; xs.len()])?;
    let exact: Vec<_> = xs
        .par_iter()
        .map(|&x| reference(f, &[x], format).ok())
        .collect();
    let mut disagreements = 0;
    for ((&(bin, x), y), r) in candidates.iter().zip(&ys).zip(&exact) {
        let Some(r) = r else {
            undecided += 1;
            continue;
        };
        let e = ulp_error(format, *y, &r.exact);
        let device = sweep.bins[bin].max_ulps;
        let agree =
            (e.is_infinite() && device.is_infinite()) || (e - device).abs() <= 1e-6 * e.max(1.0);
        if !agree {
            disagreements += 1;
        }
        stats.note_max(format, &[x], *y, r.rounded, e);
    }
    // An infinite error the bins did not show (they keep finite maxima too): keep its input.
    if sweep.max_ulps.is_infinite() && stats.max_ulps.is_finite() {
        let x = f32::from_bits(sweep.argmax) as f64;
        let y = gpu.eval(f, format, variant, &[x], &[0.0])?[0];
        stats.max_ulps = f64::INFINITY;
        stats.worst = Some(Worst {
            args: vec![x],
            result: y,
            correctly_rounded: f64::NAN,
            ulps: f64::INFINITY,
        });
    }
    Ok(Measurement {
        function: f,
        format,
        column: Column::Gpu(variant),
        method: Method::Exhaustive,
        stats,
        hard: sweep.hard_total,
        undecided,
        reference_disagreements: disagreements,
        compared_with_gpu: None,
        seconds: started.elapsed().as_secs_f64(),
    })
}
