//! `mantissa study`: the precision experiments of seeds 000 ch. 5–8, 001, 003 §3.1.1 and 004 ch. 3
//! as one plan of measurement points, run point by point into a [`ResultsLog`]. Sums, dot
//! products and π are planned and run here (scored by [`Outcome`]); the kernel-style workloads
//! plan and measure themselves in [`crate::intensity`], [`crate::linalg`] and [`crate::chains`]
//! (scored by [`crate::measurement::Measurement`]), and this module only dispatches to them.
//!
//! The flow is the design's: a [`StudyConfig`] becomes a [`Plan`] (a list of [`Point`]s), each
//! point runs on its backend and becomes one [`Record`], appended to `results.jsonl` as soon as
//! it completes. Points already in the log are skipped (`--resume`); a stop request (Ctrl-C) is
//! honoured between points, so the file always holds whole records.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mantissa_num::big::Big;
use mantissa_num::metrics::{measure_values, Reference};
use mantissa_num::precision::{Precision, PrecisionVisitor};
use mantissa_num::{ExactDot, ExactSum, Mp, Real};
use mantissa_report::{
    point_key, Backend, ErrorMetrics, Record, RecordError, ResultsLog, Status, TimeStats,
};
use rayon::ThreadPool;

use crate::inputs::{uniform_vectors, InputClass, WHITE_PAPER_A, WHITE_PAPER_B};
use crate::measurement::Measurement;
use crate::reduce;
use crate::Progress;

/// A workload as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Global summation of zero-sum and general arrays (seed 000 ch. 5).
    Sum,
    /// Dot products: serial, FMA-serial, pairwise (seed 004 ch. 3).
    Dot,
    /// π by Leibniz's series (seed 001) and by the midpoint rule (seed 003 §3.1.1).
    Pi,
    /// Generated kernels of 16 add or mul chains per thread, N iterations (seed 000 ch. 6).
    Intensity,
    /// Gaussian elimination, Fan1/Fan2 style (seed 000 §7.2).
    Ge,
    /// Blocked LU decomposition: diagonal, perimeter, internal (seed 000 §7.3).
    Lu,
    /// Products of n factors from magnitude intervals (seed 000 §8.1).
    Chain,
    /// x ← (x·y_i)/y_i under three division modes (seed 000 §8.2.2).
    DoUndo,
}

impl Workload {
    pub const ALL: [Workload; 8] = [
        Workload::Sum,
        Workload::Dot,
        Workload::Pi,
        Workload::Intensity,
        Workload::Ge,
        Workload::Lu,
        Workload::Chain,
        Workload::DoUndo,
    ];
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Workload::Sum => "sum",
            Workload::Dot => "dot",
            Workload::Pi => "pi",
            Workload::Intensity => "intensity",
            Workload::Ge => "ge",
            Workload::Lu => "lu",
            Workload::Chain => "chain",
            Workload::DoUndo => "doundo",
        })
    }
}

impl FromStr for Workload {
    type Err = StudyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sum" => Ok(Workload::Sum),
            "dot" => Ok(Workload::Dot),
            "pi" => Ok(Workload::Pi),
            "intensity" => Ok(Workload::Intensity),
            "ge" => Ok(Workload::Ge),
            "lu" => Ok(Workload::Lu),
            "chain" => Ok(Workload::Chain),
            "doundo" | "do-undo" => Ok(Workload::DoUndo),
            _ => Err(StudyError::Usage(format!(
                "unknown workload {s:?}: expected sum, dot, pi, intensity, ge, lu, chain or doundo"
            ))),
        }
    }
}

/// A precision of the study: one of the arithmetic types, or the exact (superaccumulator)
/// computation, which only sums and dot products have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StudyPrecision {
    Real(Precision),
    Exact,
}

impl fmt::Display for StudyPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StudyPrecision::Real(p) => write!(f, "{p}"),
            StudyPrecision::Exact => f.write_str("exact"),
        }
    }
}

impl StudyPrecision {
    /// The study's default precisions: f32, f64, f32x2, f64x2, comp32, comp64 and their
    /// normalized variants, mp32…mp256 (seed 000's GMP widths) and exact.
    pub fn defaults() -> Vec<StudyPrecision> {
        let mut v: Vec<StudyPrecision> = Precision::NATIVE
            .iter()
            .map(|&p| StudyPrecision::Real(p))
            .collect();
        v.extend([32, 64, 128, 256].map(|b| StudyPrecision::Real(Precision::Mp(b))));
        v.push(StudyPrecision::Exact);
        v
    }

    /// Parses a comma-separated list (`f32,f64x2,mp256,exact`, or `all`).
    pub fn parse_list(s: &str) -> Result<Vec<StudyPrecision>, StudyError> {
        if s.trim().eq_ignore_ascii_case("all") {
            let mut v: Vec<_> = Precision::ALL
                .iter()
                .map(|&p| StudyPrecision::Real(p))
                .collect();
            v.push(StudyPrecision::Exact);
            return Ok(v);
        }
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let p = if item.eq_ignore_ascii_case("exact") {
                StudyPrecision::Exact
            } else {
                StudyPrecision::Real(item.parse().map_err(|_| {
                    StudyError::Usage(format!(
                        "unknown precision {item:?}: expected a list of f32, f64, f32x2, f64x2, comp32, comp64, comp32n, comp64n, mp32, mp64, mp128, mp256, mp512, mp1024, exact (or all)"
                    ))
                })?)
            };
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            return Err(StudyError::Usage(format!(
                "empty precision list {s:?}: name at least one precision"
            )));
        }
        Ok(out)
    }

    fn is_mp(self) -> bool {
        matches!(self, StudyPrecision::Real(Precision::Mp(_)))
    }
}

/// How much to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// Small sizes: about two minutes on a 2-core machine.
    Quick,
    /// The thesis's sizes (up to 2^27 elements, 10^9 π steps where the backend allows).
    Full,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct StudyConfig {
    pub workloads: Vec<Workload>,
    pub suite: Suite,
    pub cpu: bool,
    pub precisions: Vec<StudyPrecision>,
    /// Input classes for the sums; `None` means the thesis's named ranges.
    pub classes: Option<Vec<InputClass>>,
    /// Sizes for sums and dot products; `None` means the suite's.
    pub sizes: Option<Vec<u64>>,
    /// CPU thread counts for the parallel variants (besides sequential runs).
    pub threads: Vec<usize>,
    /// Seed of every generated input.
    pub seed: u64,
}

impl StudyConfig {
    /// The default CPU thread counts: 1, 2, 4, … up to all cores (and all cores itself).
    pub fn default_threads() -> Vec<usize> {
        let all = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
            .take_while(|&t| t < all)
            .collect();
        v.push(all);
        v
    }
}

impl Workload {
    /// The largest `--size` this workload accepts, and what its size counts: beyond it a
    /// point would need more memory than a workstation has (a matrix of order 2^20) or run for
    /// days, so the run is refused before anything starts.
    pub fn size_limit(self) -> (u64, &'static str) {
        match self {
            Workload::Sum | Workload::Dot => (1 << 31, "elements"),
            // π's step counts are fixed (10^2 … 10^9); --size does not apply.
            Workload::Pi => (u64::MAX, "steps"),
            Workload::Intensity => (1_000_000, "operations per thread"),
            // f64x2 at 16384: 4 GiB per matrix copy.
            Workload::Ge | Workload::Lu => (16_384, "matrix order"),
            Workload::Chain => (1 << 24, "factors"),
            Workload::DoUndo => (1 << 28, "steps"),
        }
    }
}

impl StudyConfig {
    /// Refuses user sizes beyond a chosen workload's limit, in one line naming both.
    pub fn check_sizes(&self) -> Result<(), StudyError> {
        let Some(sizes) = &self.sizes else {
            return Ok(());
        };
        for &w in &self.workloads {
            let (limit, unit) = w.size_limit();
            if let Some(&n) = sizes.iter().find(|&&n| n > limit) {
                return Err(StudyError::Usage(format!(
                    "size {n} is too large for {w}: its size is the {unit}, at most {limit} \
                     (run workloads with different size ranges separately)"
                )));
            }
        }
        Ok(())
    }
}

/// Problems of a study run.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A bad value from the user (one line, exit code 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The GPU failed in a way the run cannot continue from.
    #[error("{0}")]
    Gpu(String),
}

/// The data a point runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// A zero-sum array from the class's two intervals.
    ZeroSum(InputClass),
    /// A general array (non-zero exact sum) from the class's intervals.
    General(InputClass),
    /// Two vectors uniform in (lo, hi).
    Uniform { lo: f64, hi: f64 },
    /// Seed 004's 4-element f32 vectors.
    WhitePaper,
    /// Values drawn from the class's two intervals (matrix entries, chain factors, do/undo
    /// operands); the workload says how many and how they are used.
    Intervals(InputClass),
    /// No input (π).
    Nothing,
}

impl Data {
    /// The input class name in records.
    pub fn name(&self) -> String {
        match self {
            Data::ZeroSum(c) => c.name.clone(),
            Data::General(c) => format!("general-{}", c.name),
            Data::Uniform { lo, hi } => format!("uniform({lo},{hi})"),
            Data::WhitePaper => "white-paper".into(),
            Data::Intervals(c) => c.name.clone(),
            Data::Nothing => "-".into(),
        }
    }
}

/// One measurement point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// `sum`, `dot`, `pi-leibniz`, `pi-midpoint`.
    pub workload: &'static str,
    /// `serial`, `chunked`, `pairwise`, `fma-serial`, `tree`.
    pub algorithm: &'static str,
    pub data: Data,
    pub size: u64,
    pub seed: u64,
    pub precision: StudyPrecision,
    pub backend: Backend,
}

impl Point {
    pub fn key(&self, device: &str) -> String {
        point_key(
            self.workload,
            self.algorithm,
            &self.data.name(),
            self.size,
            self.seed,
            &self.precision.to_string(),
            &self.backend,
            device,
            // Every kernel of these points is built with the default flag set.
            None,
        )
    }
}

/// The ordered list of points of a run.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub points: Vec<Point>,
}

/// The largest size at which a precision runs sequentially in the quick suite: mp arithmetic
/// costs ~100× a hardware operation.
const QUICK_MP_MAX: u64 = 1 << 16;
const FULL_MP_MAX: u64 = 1 << 20;

impl Plan {
    /// The CPU points of `cfg`.
    pub fn cpu(cfg: &StudyConfig) -> Plan {
        let mut points = Vec::new();
        if !cfg.cpu {
            return Plan { points };
        }
        let quick = cfg.suite == Suite::Quick;
        let mp_max = if quick { QUICK_MP_MAX } else { FULL_MP_MAX };
        let parallel: Vec<u32> = cfg
            .threads
            .iter()
            .filter(|&&t| t > 1)
            .map(|&t| t as u32)
            .collect();
        let seq = Backend::Cpu { threads: 1 };
        let fits = |p: StudyPrecision, size: u64| !p.is_mp() || size <= mp_max;
        for &w in &cfg.workloads {
            match w {
                Workload::Sum => {
                    let sizes = cfg.sizes.clone().unwrap_or_else(|| {
                        if quick {
                            vec![1 << 10, 1 << 16, 1 << 20]
                        } else {
                            // The sizes of seed 000 Figs 7–11.
                            vec![1 << 10, 1 << 17, 1 << 18, 1 << 20, 1 << 21, 1 << 23]
                        }
                    });
                    let mut datasets: Vec<(Data, Vec<u64>)> = Vec::new();
                    match &cfg.classes {
                        Some(classes) => {
                            for c in classes {
                                datasets.push((Data::ZeroSum(c.clone()), sizes.clone()));
                            }
                        }
                        None => {
                            for c in InputClass::table_11() {
                                datasets.push((Data::ZeroSum(c), sizes.clone()));
                            }
                            // Table 7's ranges at its sizes (1024 and 1,048,576 elements).
                            let t7 = if quick {
                                vec![1 << 10]
                            } else {
                                vec![1 << 10, 1 << 20]
                            };
                            for c in InputClass::table_7() {
                                datasets.push((Data::ZeroSum(c), t7.clone()));
                            }
                            let general = if quick { vec![1 << 16] } else { vec![1 << 20] };
                            for k in [1, 5] {
                                datasets
                                    .push((Data::General(InputClass::range(k)), general.clone()));
                            }
                        }
                    }
                    for (data, sizes) in datasets {
                        for &size in &sizes {
                            for &p in &cfg.precisions {
                                if !fits(p, size) {
                                    continue;
                                }
                                let mut add = |algorithm, backend| {
                                    points.push(Point {
                                        workload: "sum",
                                        algorithm,
                                        data: data.clone(),
                                        size,
                                        seed: cfg.seed,
                                        precision: p,
                                        backend,
                                    })
                                };
                                add("serial", seq);
                                if p != StudyPrecision::Exact {
                                    add("pairwise", seq);
                                }
                                for &t in &parallel {
                                    add("chunked", Backend::Cpu { threads: t });
                                }
                            }
                        }
                    }
                }
                Workload::Dot => {
                    let sizes = cfg.sizes.clone().unwrap_or_else(|| {
                        if quick {
                            vec![1 << 10, 1 << 16, 1 << 20]
                        } else {
                            vec![1 << 10, 1 << 16, 1 << 20, 1 << 23]
                        }
                    });
                    let mut datasets = vec![(Data::WhitePaper, 4u64)];
                    for s in sizes {
                        datasets.push((Data::Uniform { lo: -1.0, hi: 2.0 }, s));
                    }
                    for (data, size) in datasets {
                        for &p in &cfg.precisions {
                            if !fits(p, size) {
                                continue;
                            }
                            let algorithms: &[&'static str] = if p == StudyPrecision::Exact {
                                &["serial"]
                            } else {
                                &["serial", "fma-serial", "pairwise"]
                            };
                            for &algorithm in algorithms {
                                points.push(Point {
                                    workload: "dot",
                                    algorithm,
                                    data: data.clone(),
                                    size,
                                    seed: if data == Data::WhitePaper {
                                        0
                                    } else {
                                        cfg.seed
                                    },
                                    precision: p,
                                    backend: seq,
                                });
                            }
                        }
                    }
                }
                Workload::Intensity => points.extend(crate::intensity::cpu_points(cfg, w)),
                Workload::Ge | Workload::Lu => points.extend(crate::linalg::cpu_points(cfg, w)),
                Workload::Chain | Workload::DoUndo => {
                    points.extend(crate::chains::cpu_points(cfg, w))
                }
                Workload::Pi => {
                    for &p in &cfg.precisions {
                        if p == StudyPrecision::Exact {
                            continue;
                        }
                        points.push(Point {
                            workload: "pi-leibniz",
                            algorithm: "serial",
                            data: Data::Nothing,
                            size: 2000,
                            seed: 0,
                            precision: p,
                            backend: seq,
                        });
                    }
                    let max_exp = if quick { 6 } else { 8 };
                    for e in 2..=max_exp {
                        let steps = 10u64.pow(e);
                        for &p in &cfg.precisions {
                            if p == StudyPrecision::Exact || (p.is_mp() && steps > 10_000) {
                                continue;
                            }
                            for algorithm in ["serial", "pairwise"] {
                                points.push(Point {
                                    workload: "pi-midpoint",
                                    algorithm,
                                    data: Data::Nothing,
                                    size: steps,
                                    seed: 0,
                                    precision: p,
                                    backend: seq,
                                });
                            }
                            for &t in &parallel {
                                points.push(Point {
                                    workload: "pi-midpoint",
                                    algorithm: "chunked",
                                    data: Data::Nothing,
                                    size: steps,
                                    seed: 0,
                                    precision: p,
                                    backend: Backend::Cpu { threads: t },
                                });
                            }
                        }
                    }
                }
            }
        }
        Plan { points }
    }
}

/// Seed 000's launch grid (Tables 10 and 12): (blocks, threads per block).
pub const SEED_000_GRID: [(u32, u32); 9] = [
    (1, 1),
    (1, 32),
    (1, 64),
    (1, 128),
    (1, 1024),
    (16, 32),
    (32, 32),
    (64, 32),
    (128, 32),
];

/// The precisions the GPU runs: the CUDA twin's types and the exact sum (no mp on the device).
pub fn gpu_precision(p: StudyPrecision) -> bool {
    match p {
        StudyPrecision::Real(p) => Precision::NATIVE.contains(&p),
        StudyPrecision::Exact => true,
    }
}

impl Plan {
    /// The GPU points of `cfg` on a device whose full-occupancy launch is `full` (grid, block).
    ///
    /// Accuracy depends on the launch shape (it fixes the reduction tree), time on everything:
    /// so range 5 (seed 000 Table 12's input) runs on the whole seed-000 grid plus `full`, the
    /// other classes on 128×32 (the thesis's best) and `full`.
    pub fn gpu(cfg: &StudyConfig, full: (u32, u32)) -> Plan {
        let quick = cfg.suite == Suite::Quick;
        let full_backend = Backend::gpu(full.0, full.1);
        let all_shapes: Vec<Backend> = SEED_000_GRID
            .iter()
            .map(|&(grid, block)| Backend::gpu(grid, block))
            .chain([full_backend])
            .collect();
        let few_shapes = vec![Backend::gpu(128, 32), full_backend];
        let precisions: Vec<StudyPrecision> = cfg
            .precisions
            .iter()
            .copied()
            .filter(|&p| gpu_precision(p))
            .collect();
        let mut points = Vec::new();
        // The kernel-style workloads plan their own points (added after the reductions).
        let mut kernel_style: Vec<Point> = Vec::new();
        let mut add = |workload, algorithm, data: &Data, size, seed, backends: &[Backend]| {
            for &p in &precisions {
                if p == StudyPrecision::Exact && workload != "sum" {
                    continue;
                }
                for &backend in backends {
                    points.push(Point {
                        workload,
                        algorithm,
                        data: data.clone(),
                        size,
                        seed,
                        precision: p,
                        backend,
                    });
                }
            }
        };
        for &w in &cfg.workloads {
            match w {
                Workload::Sum => {
                    let sizes = cfg.sizes.clone().unwrap_or_else(|| {
                        if quick {
                            vec![1 << 20]
                        } else {
                            // Table 12's 8M elements, and 2^27 (1 GiB of f64) for bandwidth.
                            vec![1 << 23, 1 << 27]
                        }
                    });
                    let classes = cfg.classes.clone().unwrap_or_else(InputClass::table_11);
                    for c in &classes {
                        let timing_class = cfg.classes.is_some() || c.name == "range5";
                        for &size in &sizes {
                            // The 1-thread launches of 2^27 elements would take minutes.
                            let shapes = if timing_class && size <= 1 << 23 {
                                &all_shapes
                            } else {
                                &few_shapes
                            };
                            add(
                                "sum",
                                "tree",
                                &Data::ZeroSum(c.clone()),
                                size,
                                cfg.seed,
                                shapes,
                            );
                        }
                    }
                    if cfg.classes.is_none() {
                        for c in InputClass::table_7() {
                            add(
                                "sum",
                                "tree",
                                &Data::ZeroSum(c),
                                1 << 20,
                                cfg.seed,
                                &[full_backend],
                            );
                        }
                        let general = if quick { 1 << 16 } else { 1 << 20 };
                        for k in [1, 5] {
                            let data = Data::General(InputClass::range(k));
                            add("sum", "tree", &data, general, cfg.seed, &[full_backend]);
                        }
                    }
                }
                Workload::Dot => {
                    // The white paper's vectors on one thread: the same serial algorithms as the
                    // CPU, so the same bits (seed 004 §3.2).
                    let one = [Backend::gpu(1, 1)];
                    add("dot", "serial", &Data::WhitePaper, 4, 0, &one);
                    add("dot", "fma-serial", &Data::WhitePaper, 4, 0, &one);
                    let sizes = cfg.sizes.clone().unwrap_or_else(|| {
                        if quick {
                            vec![1 << 20]
                        } else {
                            vec![1 << 20, 1 << 23]
                        }
                    });
                    let uniform = Data::Uniform { lo: -1.0, hi: 2.0 };
                    for size in sizes {
                        add("dot", "tree", &uniform, size, cfg.seed, &[full_backend]);
                        add("dot", "fma-tree", &uniform, size, cfg.seed, &[full_backend]);
                    }
                }
                Workload::Intensity => {
                    kernel_style.extend(crate::intensity::gpu_points(cfg, w, full))
                }
                Workload::Ge | Workload::Lu => {
                    kernel_style.extend(crate::linalg::gpu_points(cfg, w, full))
                }
                Workload::Chain | Workload::DoUndo => {
                    kernel_style.extend(crate::chains::gpu_points(cfg, w, full))
                }
                Workload::Pi => {
                    let one = [Backend::gpu(1, 1)];
                    add("pi-leibniz", "serial", &Data::Nothing, 2000, 0, &one);
                    for e in 2..=9 {
                        add(
                            "pi-midpoint",
                            "tree",
                            &Data::Nothing,
                            10u64.pow(e),
                            0,
                            &[full_backend],
                        );
                    }
                }
            }
        }
        points.extend(kernel_style);
        Plan { points }
    }
}

/// The generated inputs of one (data, size, seed) and their exact results.
pub struct Inputs {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    /// The exact result the point is scored against.
    pub reference: Reference,
}

impl Inputs {
    /// Generates the inputs of `point` (the same for every precision and backend).
    pub fn of(point: &Point) -> Inputs {
        let n = point.size as usize;
        match (&point.data, point.workload) {
            (Data::ZeroSum(c), _) => {
                let xs = c.zero_sum(n, point.seed);
                Inputs::summed(xs)
            }
            (Data::General(c), _) => Inputs::summed(c.general(n, point.seed)),
            (Data::Uniform { lo, hi }, _) => {
                let (xs, ys) = uniform_vectors(n, *lo, *hi, point.seed);
                Inputs::dotted(xs, ys)
            }
            (Data::Intervals(_), w) => {
                unreachable!("{w} makes its own inputs; the runners never ask for them here")
            }
            (Data::WhitePaper, _) => Inputs::dotted(
                WHITE_PAPER_A.iter().map(|&x| x as f64).collect(),
                WHITE_PAPER_B.iter().map(|&x| x as f64).collect(),
            ),
            // Leibniz: scored against the exact partial sum of the same terms (1024-bit
            // arithmetic; its own error is below 2^-1000), so the error is the arithmetic's, not
            // the series' truncation (≈ 1/terms). Seed 001 compared against the f64 result.
            (Data::Nothing, "pi-leibniz") => Inputs {
                xs: Vec::new(),
                ys: Vec::new(),
                reference: reduce::leibniz::<Mp<1024>>(point.size)
                    .to_big()
                    .map_or(Reference::NaN, Reference::Finite),
            },
            // The midpoint rule is scored against π itself, as seed 003 Fig. 13 does: the error
            // includes the rule's own (≈ h²/12 · …), which is the floor the high precisions reach.
            (Data::Nothing, _) => Inputs {
                xs: Vec::new(),
                ys: Vec::new(),
                reference: Reference::Finite(pi_big()),
            },
        }
    }

    fn summed(xs: Vec<f64>) -> Inputs {
        let mut acc = ExactSum::new();
        acc.add_slice(&xs);
        let reference = acc.to_big().map_or(Reference::NaN, Reference::Finite);
        Inputs {
            xs,
            ys: Vec::new(),
            reference,
        }
    }

    fn dotted(xs: Vec<f64>, ys: Vec<f64>) -> Inputs {
        let mut acc = ExactDot::new();
        for (a, b) in xs.iter().zip(&ys) {
            acc.add_product(*a, *b);
        }
        let reference = acc.to_big().map_or(Reference::NaN, Reference::Finite);
        Inputs { xs, ys, reference }
    }
}

/// π to well beyond any precision under study (Machin's formula in 1024-bit arithmetic).
pub fn pi_big() -> Big {
    type M = Mp<1024>;
    // atan(1/x) = Σ (−1)^k / ((2k+1) x^(2k+1)); 1024 bits need ~220 terms for x = 5.
    let atan_inv = |x: i64| {
        let x2 = M::from_i64(x * x);
        let mut power = M::one() / M::from_i64(x);
        let mut sum = M::zero();
        for k in 0..400i64 {
            let term = power.clone() / M::from_i64(2 * k + 1);
            sum = if k % 2 == 0 { sum + term } else { sum - term };
            power = power / x2.clone();
        }
        sum
    };
    let pi = M::from_i64(16) * atan_inv(5) - M::from_i64(4) * atan_inv(239);
    pi.to_big()
        .unwrap_or_else(|| mantissa_num::big::exact(std::f64::consts::PI))
}

/// The outcome of one point on some backend.
pub struct Outcome {
    pub value: Reference,
    pub value_f64: f64,
    pub time: TimeStats,
}

/// How long CPU points repeat: enough repetitions for a median, bounded in time.
#[derive(Debug, Clone, Copy)]
pub struct CpuTiming {
    /// Target total time of the timed repetitions.
    pub budget: Duration,
    pub min_reps: u32,
    pub max_reps: u32,
}

impl CpuTiming {
    pub fn for_suite(suite: Suite) -> CpuTiming {
        match suite {
            Suite::Quick => CpuTiming {
                budget: Duration::from_millis(60),
                min_reps: 3,
                max_reps: 15,
            },
            Suite::Full => CpuTiming {
                budget: Duration::from_millis(500),
                min_reps: 5,
                max_reps: 51,
            },
        }
    }

    /// Runs `f` once to warm up and size the repetitions, then times it. A first run longer
    /// than the budget is the only sample (rerunning a multi-second point buys little).
    pub fn measure<R>(&self, mut f: impl FnMut() -> R) -> (R, TimeStats) {
        let start = Instant::now();
        let first = f();
        let t1 = start.elapsed();
        if t1 >= self.budget {
            let ms = t1.as_secs_f64() * 1e3;
            return (first, TimeStats::from_samples(&[ms]).expect("one sample"));
        }
        let reps = (self.budget.as_secs_f64() / t1.as_secs_f64().max(1e-9)) as u32;
        let reps = reps.clamp(self.min_reps, self.max_reps);
        let mut samples = Vec::with_capacity(reps as usize);
        for _ in 0..reps {
            let s = Instant::now();
            std::hint::black_box(f());
            samples.push(s.elapsed().as_secs_f64() * 1e3);
        }
        (
            first,
            TimeStats::from_samples(&samples).expect("at least one sample"),
        )
    }
}

/// Runs one CPU point in precision `T` (through [`PrecisionVisitor`]).
struct CpuPoint<'a> {
    point: &'a Point,
    inputs: &'a Inputs,
    pool: Option<&'a ThreadPool>,
    timing: CpuTiming,
}

impl PrecisionVisitor for CpuPoint<'_> {
    type Output = Outcome;
    fn visit<T: Real>(self) -> Outcome {
        let p = self.point;
        let convert = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let (xs, ys) = (convert(&self.inputs.xs), convert(&self.inputs.ys));
        let pool = self.pool;
        let (value, time) = match (p.workload, p.algorithm) {
            ("sum", "serial") => self.timing.measure(|| reduce::serial_sum(&xs)),
            ("sum", "pairwise") => self.timing.measure(|| reduce::pairwise_sum(&xs)),
            ("sum", "chunked") => self
                .timing
                .measure(|| reduce::chunked_sum(&xs, pool.expect("chunked points have a pool"))),
            ("dot", "serial") => self.timing.measure(|| reduce::serial_dot(&xs, &ys, false)),
            ("dot", "fma-serial") => self.timing.measure(|| reduce::serial_dot(&xs, &ys, true)),
            ("dot", "pairwise") => self.timing.measure(|| reduce::pairwise_dot(&xs, &ys)),
            ("pi-leibniz", _) => self.timing.measure(|| reduce::leibniz::<T>(p.size)),
            ("pi-midpoint", "serial") => self
                .timing
                .measure(|| reduce::pi_midpoint_serial::<T>(p.size)),
            ("pi-midpoint", "pairwise") => self
                .timing
                .measure(|| reduce::pi_midpoint_pairwise::<T>(p.size)),
            ("pi-midpoint", "chunked") => self.timing.measure(|| {
                reduce::pi_midpoint_chunked::<T>(p.size, pool.expect("chunked points have a pool"))
            }),
            (w, a) => unreachable!("no CPU algorithm {a} for {w}: the planner never makes one"),
        };
        Outcome {
            value: Reference::of(&value),
            value_f64: value.to_f64(),
            time,
        }
    }
}

/// The exact (superaccumulator) computation of a sum or dot point.
fn exact_point(
    point: &Point,
    inputs: &Inputs,
    pool: Option<&ThreadPool>,
    timing: CpuTiming,
) -> Outcome {
    let (value, time) = match (point.workload, pool) {
        ("sum", Some(pool)) => timing.measure(|| {
            use rayon::prelude::*;
            let n = inputs.xs.len();
            let t = pool.current_num_threads().max(1);
            pool.install(|| {
                (0..t)
                    .into_par_iter()
                    .map(|k| {
                        let mut acc = ExactSum::new();
                        acc.add_slice(&inputs.xs[n * k / t..n * (k + 1) / t]);
                        acc
                    })
                    .reduce(ExactSum::new, |mut a, b| {
                        a.merge(&b);
                        a
                    })
                    .round()
            })
        }),
        ("sum", None) => timing.measure(|| {
            let mut acc = ExactSum::new();
            acc.add_slice(&inputs.xs);
            acc.round()
        }),
        _ => timing.measure(|| {
            let mut acc = ExactDot::new();
            for (a, b) in inputs.xs.iter().zip(&inputs.ys) {
                acc.add_product(*a, *b);
            }
            acc.round()
        }),
    };
    Outcome {
        value: Reference::from_f64(value),
        value_f64: value,
        time,
    }
}

/// The CPU as records name it: its model and hardware thread count.
pub fn cpu_name() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({threads} threads)")
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct RunSummary {
    pub measured: usize,
    pub skipped_done: usize,
    pub failed: usize,
    /// The run stopped early on request; the remaining points were not measured.
    pub interrupted: bool,
}

/// Builds the record of a finished point.
pub fn record(
    point: &Point,
    device: &str,
    inputs: &Inputs,
    outcome: &Outcome,
    note: Option<String>,
) -> Record {
    let m = measure_values(&outcome.value, &inputs.reference);
    let reference_f64 = match &inputs.reference {
        Reference::Finite(b) => mantissa_num::big::to_f64(b),
        Reference::Infinite { negative } => {
            if *negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Reference::NaN => f64::NAN,
    };
    let zero_reference = reference_f64 == 0.0;
    Measurement {
        status: Status::Ok,
        value: Some(outcome.value_f64),
        reference: Some(reference_f64),
        error: Some(ErrorMetrics {
            abs: m.abs,
            rel: (!zero_reference).then_some(m.rel),
            ulps: (!zero_reference).then_some(m.ulps_f64),
            digits: (!zero_reference).then_some(m.digits.min(99.0)),
        }),
        time: Some(outcome.time.clone()),
        extra: Default::default(),
        note,
        build: None,
    }
    .record(point, device)
}

/// What identifies a point's input data: (input name, size, seed, workload).
pub(crate) type DataKey = (String, u64, u64, &'static str);

/// Measures a CPU point of the kernel-style workloads (intensity, GE, LU, chain, do/undo), which
/// make their own inputs; `None` for the part-1 workloads.
fn measure_kernel_style_cpu(
    point: &Point,
    pool: Option<&ThreadPool>,
    timing: CpuTiming,
) -> Option<Measurement> {
    match point.workload {
        "intensity" => Some(crate::intensity::measure_cpu(point, pool, timing)),
        "ge" | "lu" => Some(crate::linalg::measure_cpu(point, pool, timing)),
        "chain" | "doundo" => Some(crate::chains::measure_cpu(point, pool, timing)),
        _ => None,
    }
}

/// Runs the CPU points of `plan` into `log`, skipping those already recorded.
pub fn run_cpu(
    plan: &Plan,
    suite: Suite,
    log: &mut ResultsLog,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<RunSummary, StudyError> {
    let device = cpu_name();
    let timing = CpuTiming::for_suite(suite);
    let mut summary = RunSummary::default();
    let mut pools: HashMap<u32, ThreadPool> = HashMap::new();
    // Points sharing data are adjacent in the plan: generate each dataset once.
    let mut cached: Option<(DataKey, Inputs)> = None;
    let todo: Vec<&Point> = plan.points.iter().filter(|p| !p.backend.is_gpu()).collect();
    progress.start("cpu", todo.len() as u64);
    for point in todo {
        if stop.load(Ordering::Relaxed) {
            summary.interrupted = true;
            break;
        }
        if log.contains(&point.key(&device)) {
            summary.skipped_done += 1;
            progress.advance(1);
            continue;
        }
        let threads = match point.backend {
            Backend::Cpu { threads } => threads,
            Backend::Gpu { .. } | Backend::GpuTiles { .. } => unreachable!("filtered above"),
        };
        let pool = if threads > 1 {
            let pool = match pools.entry(threads) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads as usize)
                        .build()
                        .map_err(|e| {
                            StudyError::Usage(format!("cannot start {threads} CPU threads: {e}"))
                        })?;
                    v.insert(pool)
                }
            };
            Some(&*pool)
        } else {
            None
        };
        if let Some(m) = measure_kernel_style_cpu(point, pool, timing) {
            log.append(&m.record(point, &device))?;
            summary.measured += 1;
            progress.advance(1);
            continue;
        }
        let id = (point.data.name(), point.size, point.seed, point.workload);
        if cached.as_ref().map(|(k, _)| k) != Some(&id) {
            cached = Some((id.clone(), Inputs::of(point)));
        }
        let inputs = &cached.as_ref().expect("just filled").1;
        let outcome = match point.precision {
            StudyPrecision::Exact => exact_point(point, inputs, pool, timing),
            StudyPrecision::Real(p) => p.visit(CpuPoint {
                point,
                inputs,
                pool,
                timing,
            }),
        };
        log.append(&record(point, &device, inputs, &outcome, None))?;
        summary.measured += 1;
        progress.advance(1);
    }
    progress.finish();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(workloads: Vec<Workload>) -> StudyConfig {
        StudyConfig {
            workloads,
            suite: Suite::Quick,
            cpu: true,
            precisions: StudyPrecision::defaults(),
            classes: None,
            sizes: None,
            threads: vec![1, 2],
            seed: 1,
        }
    }

    #[test]
    fn sizes_beyond_a_workload_limit_are_refused_in_one_line() {
        let mut cfg = config(vec![Workload::Sum, Workload::Lu]);
        cfg.sizes = Some(vec![1 << 10, 1 << 20]);
        let e = cfg.check_sizes().unwrap_err().to_string();
        assert!(
            e.contains("1048576") && e.contains("lu") && e.contains("16384"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        cfg.workloads = vec![Workload::Sum];
        cfg.check_sizes().unwrap();
        cfg.sizes = None;
        cfg.workloads = Workload::ALL.to_vec();
        cfg.check_sizes().unwrap();
    }

    #[test]
    fn pi_reference_is_pi() {
        let pi = pi_big();
        assert_eq!(mantissa_num::big::to_f64(&pi), std::f64::consts::PI);
        // 3.14159265358979323846264338327950288419716939937510 − the f64 nearest π.
        let f64_pi = mantissa_num::big::exact(std::f64::consts::PI);
        let diff = mantissa_num::big::to_f64(&(pi - f64_pi));
        assert!((diff - 1.2246467991473532e-16).abs() < 1e-31, "{diff:e}");
    }

    #[test]
    fn precision_lists_parse_and_reject_clearly() {
        let v = StudyPrecision::parse_list("f32, f64x2,mp256,exact,f32").unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[3], StudyPrecision::Exact);
        assert_eq!(StudyPrecision::parse_list("all").unwrap().len(), 15);
        let e = StudyPrecision::parse_list("f32,f16")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"f16\"") && e.contains("mp256"), "{e}");
        assert!(StudyPrecision::parse_list(" , ").is_err());
    }

    #[test]
    fn quick_plan_keeps_mp_small_and_exact_where_it_exists() {
        let plan = Plan::cpu(&config(Workload::ALL.to_vec()));
        assert!(plan
            .points
            .iter()
            .filter(|p| p.precision.is_mp())
            .all(|p| p.size <= QUICK_MP_MAX));
        assert!(plan
            .points
            .iter()
            .filter(|p| p.precision == StudyPrecision::Exact)
            .all(|p| (p.workload == "sum" || p.workload == "dot") && p.algorithm != "pairwise"));
        let keys: std::collections::HashSet<_> = plan.points.iter().map(|p| p.key("d")).collect();
        assert_eq!(keys.len(), plan.points.len(), "every point has its own key");
    }

    #[test]
    fn a_small_run_records_every_point_and_resumes_without_repeating() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(vec![Workload::Sum, Workload::Dot]);
        cfg.classes = Some(vec![InputClass::range(5)]);
        cfg.sizes = Some(vec![256]);
        cfg.precisions = StudyPrecision::parse_list("f32,f64,f64x2,mp128,exact").unwrap();
        let plan = Plan::cpu(&cfg);
        let stop = AtomicBool::new(false);
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let s = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
        assert_eq!(s.measured, plan.points.len());
        drop(log);
        let (records, _) =
            mantissa_report::read_records(&dir.path().join("results.jsonl")).unwrap();
        assert_eq!(records.len(), plan.points.len());
        for r in &records {
            let err = r.error.as_ref().unwrap();
            match (r.workload.as_str(), r.precision.as_str()) {
                // Exact sums and dots are correctly rounded: within half an f64 ulp (and 0 for
                // the zero-sum arrays).
                ("sum", "exact") => assert_eq!(err.abs, 0.0, "{r:?}"),
                (_, "exact") => assert!(err.ulps.unwrap() <= 0.5, "{r:?}"),
                ("sum", "f32") => assert!(err.abs > 0.0, "f32 range5 sums are not exact: {r:?}"),
                _ => assert!(err.abs.is_finite()),
            }
        }
        let mut log = ResultsLog::open(dir.path(), true).unwrap();
        let again = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
        assert_eq!((again.measured, again.skipped_done), (0, plan.points.len()));
    }

    #[test]
    fn a_stop_request_ends_the_run_between_points() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(vec![Workload::Pi]);
        cfg.precisions = vec![StudyPrecision::Real(Precision::F64)];
        let plan = Plan::cpu(&cfg);
        let stop = AtomicBool::new(true);
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let s = run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
        assert!(s.interrupted);
        assert_eq!(s.measured, 0);
    }

    #[test]
    fn accuracy_order_matches_the_thesis_on_range5() {
        // Seed 000 Table 11 order: f32 < comp32 (≈ f32x2 here) < f64 < f64x2 < exact.
        let data = Data::ZeroSum(InputClass::range(5));
        let point = |p: &str| Point {
            workload: "sum",
            algorithm: "serial",
            data: data.clone(),
            size: 1 << 16,
            seed: 3,
            precision: StudyPrecision::parse_list(p).unwrap()[0],
            backend: Backend::Cpu { threads: 1 },
        };
        let inputs = Inputs::of(&point("f32"));
        let err = |p: &str| {
            let pt = point(p);
            let out = match pt.precision {
                StudyPrecision::Exact => {
                    exact_point(&pt, &inputs, None, CpuTiming::for_suite(Suite::Quick))
                }
                StudyPrecision::Real(pr) => pr.visit(CpuPoint {
                    point: &pt,
                    inputs: &inputs,
                    pool: None,
                    timing: CpuTiming::for_suite(Suite::Quick),
                }),
            };
            out.value_f64.abs()
        };
        let (f32e, c32, f64e, dd, ex) = (
            err("f32"),
            err("comp32"),
            err("f64"),
            err("f64x2"),
            err("exact"),
        );
        assert!(
            f32e > c32 && c32 > f64e && f64e > dd,
            "{f32e:e} {c32:e} {f64e:e} {dd:e}"
        );
        assert_eq!(ex, 0.0);
    }
}
