//! The reductions of `mantissa study`: global sums (seed 000 ch. 5), dot products (seed 004
//! ch. 3) and π (seed 001's Leibniz series, seed 003 §3.1.1's midpoint rule), each scored as one
//! scalar against one exact value. [`SUM`], [`DOT`] and [`PI`] are their [`Workload`]s; they
//! share one runner per backend (the generated inputs of a point and the compiled GPU kernels
//! serve the next points). The CPU algorithms are in [`crate::reduce`], the GPU ones in
//! [`crate::gpu_reduce`], the data in [`crate::inputs`].

use mantissa_gpu::{visit_device_type, DeviceType, DeviceTypeVisitor, DeviceWords, GpuError};
use mantissa_gpu::{Gpu, Timing, TimingOptions};
use mantissa_num::big::Big;
use mantissa_num::metrics::Reference;
use mantissa_num::precision::PrecisionVisitor;
use mantissa_num::{ExactDot, ExactSum, Mp, Real};
use mantissa_report::{Backend, Status, TimeStats};
use rayon::ThreadPool;

use crate::cost::{generation, value_bytes, Cost, Pace, Work};
use crate::gpu_reduce::{GpuReducer, Shape};
use crate::inputs::{uniform_vectors, InputClass, WHITE_PAPER_A, WHITE_PAPER_B};
use crate::measurement::{error_metrics, reference_f64, time_stats, Measurement};
use crate::reduce;
use crate::stop::CHECK_EVERY;
use crate::study::{CpuTiming, Data, Point, StudyConfig, StudyPrecision, Suite};
use crate::workload::{CpuMeasure, GpuMeasure, Workload};

/// The largest size at which an mp precision runs in the quick suite: mp arithmetic costs ~100×
/// a hardware operation.
pub const QUICK_MP_MAX: u64 = 1 << 16;
/// The same in the full suite.
pub const FULL_MP_MAX: u64 = 1 << 20;

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

/// One of the three reductions, each a [`Workload`] ([`SUM`], [`DOT`], [`PI`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// Global summation of zero-sum and general arrays (seed 000 ch. 5).
    Sum,
    /// Dot products: serial, FMA-serial, pairwise (seed 004 ch. 3).
    Dot,
    /// π by Leibniz's series (seed 001) and by the midpoint rule (seed 003 §3.1.1).
    Pi,
}

/// The sum workload.
pub static SUM: Reduction = Reduction::Sum;
/// The dot-product workload.
pub static DOT: Reduction = Reduction::Dot;
/// The π workload.
pub static PI: Reduction = Reduction::Pi;

impl Workload for Reduction {
    fn name(&self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Dot => "dot",
            Reduction::Pi => "pi",
        }
    }
    fn description(&self) -> &'static str {
        match self {
            Reduction::Sum => "global sums of zero-sum and general arrays (seed 000 ch. 5)",
            Reduction::Dot => {
                "dot products: serial, FMA-serial, pairwise and tree (seed 004 ch. 3)"
            }
            Reduction::Pi => {
                "π by Leibniz's series (seed 001) and the midpoint rule (seed 003 §3.1.1)"
            }
        }
    }
    fn record_names(&self) -> &'static [&'static str] {
        match self {
            Reduction::Sum => &["sum"],
            Reduction::Dot => &["dot"],
            Reduction::Pi => &["pi-leibniz", "pi-midpoint"],
        }
    }
    fn size_limit(&self) -> (u64, &'static str) {
        match self {
            // Memory decides first: the guard refuses a point that does not fit (crate::guard).
            Reduction::Sum | Reduction::Dot => (1 << 40, "elements"),
            // π's step counts are fixed (10^2 … 10^9); --size does not apply.
            Reduction::Pi => (u64::MAX, "steps"),
        }
    }
    fn cpu_points(&self, cfg: &StudyConfig) -> Vec<Point> {
        match self {
            Reduction::Sum => sum_cpu_points(cfg),
            Reduction::Dot => dot_cpu_points(cfg),
            Reduction::Pi => pi_cpu_points(cfg),
        }
    }
    fn gpu_points(&self, cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
        match self {
            Reduction::Sum => sum_gpu_points(cfg, full),
            Reduction::Dot => dot_gpu_points(cfg, full),
            Reduction::Pi => pi_gpu_points(cfg, full),
        }
    }
    fn runner_group(&self) -> &'static str {
        "reductions"
    }
    fn cpu_runner(&self) -> Box<dyn CpuMeasure> {
        Box::new(CpuRunner::default())
    }
    fn gpu_runner<'g>(&self, gpu: &'g Gpu) -> Box<dyn GpuMeasure + 'g> {
        Box::new(GpuRunner::new(gpu))
    }
    fn device_bytes(&self, point: &Point) -> u64 {
        device_bytes(point)
    }
    fn host_cost(&self, point: &Point, _suite: Suite) -> Cost {
        host_cost(point)
    }
    fn quantities(&self) -> &'static [(&'static str, &'static str)] {
        // One scalar against one exact value: everything is in the record's own fields.
        &[]
    }
}

// ---- The plan -----------------------------------------------------------------------------------

/// The CPU thread counts of the parallel variants (besides the sequential runs).
fn parallel_threads(cfg: &StudyConfig) -> Vec<u32> {
    cfg.threads
        .iter()
        .filter(|&&t| t > 1)
        .map(|&t| t as u32)
        .collect()
}

/// Whether precision `p` runs at `size` on the CPU in `cfg`'s suite (mp is kept small).
fn fits(cfg: &StudyConfig, p: StudyPrecision, size: u64) -> bool {
    let mp_max = match cfg.suite {
        Suite::Quick => QUICK_MP_MAX,
        Suite::Full => FULL_MP_MAX,
    };
    !p.is_mp() || size <= mp_max
}

const SEQUENTIAL: Backend = Backend::Cpu { threads: 1 };

fn sum_cpu_points(cfg: &StudyConfig) -> Vec<Point> {
    let quick = cfg.suite == Suite::Quick;
    let parallel = parallel_threads(cfg);
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
                datasets.push((Data::General(InputClass::range(k)), general.clone()));
            }
        }
    }
    let mut points = Vec::new();
    for (data, sizes) in datasets {
        for &size in &sizes {
            for &p in &cfg.precisions {
                if !fits(cfg, p, size) {
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
                        flags: None,
                    })
                };
                add("serial", SEQUENTIAL);
                if p != StudyPrecision::Exact {
                    add("pairwise", SEQUENTIAL);
                }
                for &t in &parallel {
                    add("chunked", Backend::Cpu { threads: t });
                }
            }
        }
    }
    points
}

fn dot_cpu_points(cfg: &StudyConfig) -> Vec<Point> {
    let sizes = cfg.sizes.clone().unwrap_or_else(|| match cfg.suite {
        Suite::Quick => vec![1 << 10, 1 << 16, 1 << 20],
        Suite::Full => vec![1 << 10, 1 << 16, 1 << 20, 1 << 23],
    });
    let mut datasets = vec![(Data::WhitePaper, 4u64)];
    for s in sizes {
        datasets.push((Data::Uniform { lo: -1.0, hi: 2.0 }, s));
    }
    let mut points = Vec::new();
    for (data, size) in datasets {
        for &p in &cfg.precisions {
            if !fits(cfg, p, size) {
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
                    backend: SEQUENTIAL,
                    flags: None,
                });
            }
        }
    }
    points
}

fn pi_cpu_points(cfg: &StudyConfig) -> Vec<Point> {
    let parallel = parallel_threads(cfg);
    let mut points = Vec::new();
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
            backend: SEQUENTIAL,
            flags: None,
        });
    }
    let max_exp = match cfg.suite {
        Suite::Quick => 6,
        Suite::Full => 8,
    };
    for e in 2..=max_exp {
        let steps = 10u64.pow(e);
        for &p in &cfg.precisions {
            if p == StudyPrecision::Exact || (p.is_mp() && steps > 10_000) {
                continue;
            }
            let mut add = |algorithm, backend| {
                points.push(Point {
                    workload: "pi-midpoint",
                    algorithm,
                    data: Data::Nothing,
                    size: steps,
                    seed: 0,
                    precision: p,
                    backend,
                    flags: None,
                })
            };
            add("serial", SEQUENTIAL);
            add("pairwise", SEQUENTIAL);
            for &t in &parallel {
                add("chunked", Backend::Cpu { threads: t });
            }
        }
    }
    points
}

/// The precisions the GPU runs: the CUDA twin's types and the exact sum (no mp on the device).
pub fn gpu_precision(p: StudyPrecision) -> bool {
    match p {
        StudyPrecision::Real(p) => DeviceType::of(p).is_some(),
        StudyPrecision::Exact => true,
    }
}

/// GPU points in `cfg`'s precisions that the device runs (exact only for sums), each on every
/// one of `backends`.
struct GpuPoints<'c> {
    cfg: &'c StudyConfig,
    points: Vec<Point>,
}

impl GpuPoints<'_> {
    fn add(
        &mut self,
        workload: &'static str,
        algorithm: &'static str,
        data: &Data,
        size: u64,
        seed: u64,
        backends: &[Backend],
    ) {
        for &p in &self.cfg.precisions {
            if !gpu_precision(p) || (p == StudyPrecision::Exact && workload != "sum") {
                continue;
            }
            for &backend in backends {
                self.points.push(Point {
                    workload,
                    algorithm,
                    data: data.clone(),
                    size,
                    seed,
                    precision: p,
                    backend,
                    flags: Some(crate::gpu_reduce::FLAGS),
                });
            }
        }
    }
}

fn full_backend(full: (u32, u32)) -> Backend {
    Backend::gpu(full.0, full.1)
}

/// Accuracy depends on the launch shape (it fixes the reduction tree), time on everything: so
/// range 5 (seed 000 Table 12's input) runs on the whole seed-000 grid plus `full`, the other
/// classes on 128×32 (the thesis's best) and `full`.
fn sum_gpu_points(cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
    let quick = cfg.suite == Suite::Quick;
    let full_backend = full_backend(full);
    let all_shapes: Vec<Backend> = SEED_000_GRID
        .iter()
        .map(|&(grid, block)| Backend::gpu(grid, block))
        .chain([full_backend])
        .collect();
    let few_shapes = vec![Backend::gpu(128, 32), full_backend];
    let mut out = GpuPoints {
        cfg,
        points: Vec::new(),
    };
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
            out.add(
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
            out.add(
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
            out.add("sum", "tree", &data, general, cfg.seed, &[full_backend]);
        }
    }
    out.points
}

fn dot_gpu_points(cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
    let mut out = GpuPoints {
        cfg,
        points: Vec::new(),
    };
    // The white paper's vectors on one thread: the same serial algorithms as the CPU, so the
    // same bits (seed 004 §3.2).
    let one = [Backend::gpu(1, 1)];
    out.add("dot", "serial", &Data::WhitePaper, 4, 0, &one);
    out.add("dot", "fma-serial", &Data::WhitePaper, 4, 0, &one);
    let sizes = cfg.sizes.clone().unwrap_or_else(|| match cfg.suite {
        Suite::Quick => vec![1 << 20],
        Suite::Full => vec![1 << 20, 1 << 23],
    });
    let uniform = Data::Uniform { lo: -1.0, hi: 2.0 };
    let full = [full_backend(full)];
    for size in sizes {
        out.add("dot", "tree", &uniform, size, cfg.seed, &full);
        out.add("dot", "fma-tree", &uniform, size, cfg.seed, &full);
    }
    out.points
}

fn pi_gpu_points(cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
    let mut out = GpuPoints {
        cfg,
        points: Vec::new(),
    };
    let one = [Backend::gpu(1, 1)];
    out.add("pi-leibniz", "serial", &Data::Nothing, 2000, 0, &one);
    for e in 2..=9 {
        let steps = 10u64.pow(e);
        out.add(
            "pi-midpoint",
            "tree",
            &Data::Nothing,
            steps,
            0,
            &[full_backend(full)],
        );
    }
    out.points
}

// ---- Inputs and scoring -------------------------------------------------------------------------

/// The generated inputs of one (data, size, seed) and their exact results.
pub struct Inputs {
    /// The first (or only) vector.
    pub xs: Vec<f64>,
    /// The second vector of a dot product (empty otherwise).
    pub ys: Vec<f64>,
    /// The exact result the point is scored against.
    pub reference: Reference,
}

impl Inputs {
    /// Generates the inputs of `point` (the same for every precision and backend).
    pub fn of(point: &Point) -> Inputs {
        let n = point.size as usize;
        match (&point.data, point.workload) {
            (Data::ZeroSum(c), _) => Inputs::summed(c.zero_sum(n, point.seed)),
            (Data::General(c), _) => Inputs::summed(c.general(n, point.seed)),
            (Data::Uniform { lo, hi }, _) => {
                let (xs, ys) = uniform_vectors(n, *lo, *hi, point.seed);
                Inputs::dotted(xs, ys)
            }
            (Data::Intervals(_), w) => {
                unreachable!("{w} points never have interval data: the planner makes none")
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

/// What identifies a point's input data: the same for every precision and backend.
#[derive(Debug, Clone, PartialEq)]
struct DataId {
    input: String,
    size: u64,
    seed: u64,
    workload: &'static str,
}

/// The inputs of the last point, kept for the next: points sharing data are adjacent in the
/// plan, so each dataset is generated once.
#[derive(Default)]
struct InputCache {
    last: Option<(DataId, Inputs)>,
}

impl InputCache {
    fn of(&mut self, point: &Point) -> &Inputs {
        let id = DataId {
            input: point.data.name(),
            size: point.size,
            seed: point.seed,
            workload: point.workload,
        };
        if self.last.as_ref().map(|(k, _)| k) != Some(&id) {
            // Dropped first, so that two datasets are never held at once (the cost model's peak).
            self.last = None;
            self.last = Some((id.clone(), Inputs::of(point)));
        }
        &self.last.as_ref().expect("just filled").1
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
pub struct PointOutcome {
    /// The computed value, exactly.
    pub value: Reference,
    /// The computed value rounded to f64.
    pub value_f64: f64,
    /// How long it took.
    pub time: TimeStats,
}

/// The measurement of a finished point: its outcome scored against the inputs' exact result.
pub fn score(inputs: &Inputs, outcome: &PointOutcome) -> Measurement {
    Measurement {
        status: Status::Ok,
        value: Some(outcome.value_f64),
        reference: Some(reference_f64(&inputs.reference)),
        error: Some(error_metrics(&outcome.value, &inputs.reference)),
        time: Some(outcome.time.clone()),
        extra: Default::default(),
        note: None,
        build: None,
    }
}

// ---- The cost ----------------------------------------------------------------------------------

/// Operations per π term: Leibniz's division, conversion and addition; the midpoint rule's
/// conversion, two additions, two multiplications, a division and the accumulation.
const LEIBNIZ_OPS: f64 = 3.0;
const MIDPOINT_OPS: f64 = 7.0;

/// What a point costs the host: the f64 inputs, their exact reference (a superaccumulator pass)
/// and, on the CPU, the converted copy and the timed reduction (n additions, or n products and n
/// additions); on the GPU, the host's converted copies.
pub fn host_cost(point: &Point) -> Cost {
    let n = point.size as f64;
    let p = point.precision;
    let cpu_threads = match point.backend {
        Backend::Cpu { threads } => Some(threads),
        _ => None,
    };
    let mut cost = Cost::default();
    match point.workload {
        "sum" | "dot" => {
            let vectors = if point.workload == "dot" { 2.0 } else { 1.0 };
            let mut bytes = 8.0 * n * vectors;
            cost.work.push(generation(n * vectors));
            cost.work
                .push(Work::new(StudyPrecision::Exact, n, Pace::Dependent));
            match cpu_threads {
                Some(threads) => {
                    if p != StudyPrecision::Exact {
                        bytes += value_bytes(p) as f64 * n * vectors;
                        cost.work.push(Work::new(p, n * vectors, Pace::Independent));
                    }
                    let ops = n * vectors;
                    cost.work
                        .push(Work::new(p, ops, Pace::Dependent).on(threads).timed());
                }
                None => bytes += device_bytes(point) as f64,
            }
            cost.bytes = bytes as u64;
        }
        "pi-leibniz" => {
            // Scored against the same series in mp1024.
            let reference = StudyPrecision::Real(mantissa_num::precision::Precision::Mp(1024));
            cost.work
                .push(Work::new(reference, LEIBNIZ_OPS * n, Pace::Dependent));
            if cpu_threads.is_some() {
                cost.work
                    .push(Work::new(p, LEIBNIZ_OPS * n, Pace::Dependent).timed());
            }
        }
        _ => {
            if let Some(threads) = cpu_threads {
                cost.work.push(
                    Work::new(p, MIDPOINT_OPS * n, Pace::Dependent)
                        .on(threads)
                        .timed(),
                );
            }
        }
    }
    cost
}

// ---- The CPU run --------------------------------------------------------------------------------

/// The CPU runner of the three reductions.
#[derive(Default)]
struct CpuRunner {
    inputs: InputCache,
}

impl CpuMeasure for CpuRunner {
    fn measure(
        &mut self,
        point: &Point,
        pool: Option<&ThreadPool>,
        timing: CpuTiming,
    ) -> Measurement {
        let inputs = self.inputs.of(point);
        score(inputs, &cpu_outcome(point, inputs, pool, timing))
    }
}

/// Runs one CPU point on its inputs.
pub fn cpu_outcome(
    point: &Point,
    inputs: &Inputs,
    pool: Option<&ThreadPool>,
    timing: CpuTiming,
) -> PointOutcome {
    match point.precision {
        StudyPrecision::Exact => exact_point(point, inputs, pool, timing),
        StudyPrecision::Real(p) => p.visit(CpuPoint {
            point,
            inputs,
            pool,
            timing,
        }),
    }
}

/// Runs one CPU point in precision `T` (through [`PrecisionVisitor`]).
struct CpuPoint<'a> {
    point: &'a Point,
    inputs: &'a Inputs,
    pool: Option<&'a ThreadPool>,
    timing: CpuTiming<'a>,
}

impl PrecisionVisitor for CpuPoint<'_> {
    type Output = PointOutcome;
    fn visit<T: Real>(self) -> PointOutcome {
        let p = self.point;
        let convert = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let (xs, ys) = (convert(&self.inputs.xs), convert(&self.inputs.ys));
        let (pool, stop) = (self.pool, self.timing.stop);
        let chunked = || pool.expect("chunked points have a pool");
        let (value, time) = match (p.workload, p.algorithm) {
            ("sum", "serial") => self.timing.measure(|| reduce::serial_sum_until(&xs, stop)),
            ("sum", "pairwise") => self
                .timing
                .measure(|| reduce::pairwise_sum_until(&xs, stop)),
            ("sum", "chunked") => self
                .timing
                .measure(|| reduce::chunked_sum_until(&xs, chunked(), stop)),
            ("dot", "serial") => self
                .timing
                .measure(|| reduce::serial_dot_until(&xs, &ys, false, stop)),
            ("dot", "fma-serial") => self
                .timing
                .measure(|| reduce::serial_dot_until(&xs, &ys, true, stop)),
            ("dot", "pairwise") => self
                .timing
                .measure(|| reduce::pairwise_dot_until(&xs, &ys, stop)),
            // 2000 terms: no check needed.
            ("pi-leibniz", _) => self.timing.measure(|| reduce::leibniz::<T>(p.size)),
            ("pi-midpoint", "serial") => self
                .timing
                .measure(|| reduce::pi_midpoint_serial_until::<T>(p.size, stop)),
            ("pi-midpoint", "pairwise") => self
                .timing
                .measure(|| reduce::pi_midpoint_pairwise_until::<T>(p.size, stop)),
            ("pi-midpoint", "chunked") => self
                .timing
                .measure(|| reduce::pi_midpoint_chunked_until::<T>(p.size, chunked(), stop)),
            (w, a) => unreachable!("no CPU algorithm {a} for {w}: the planner never makes one"),
        };
        PointOutcome {
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
) -> PointOutcome {
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
                        for block in inputs.xs[n * k / t..n * (k + 1) / t].chunks(CHECK_EVERY) {
                            if timing.stop.requested() {
                                break;
                            }
                            acc.add_slice(block);
                        }
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
            for block in inputs.xs.chunks(CHECK_EVERY) {
                if timing.stop.requested() {
                    break;
                }
                acc.add_slice(block);
            }
            acc.round()
        }),
        _ => timing.measure(|| {
            let mut acc = ExactDot::new();
            for (k, (a, b)) in inputs.xs.iter().zip(&inputs.ys).enumerate() {
                if k % CHECK_EVERY == 0 && timing.stop.requested() {
                    break;
                }
                acc.add_product(*a, *b);
            }
            acc.round()
        }),
    };
    PointOutcome {
        value: Reference::from_f64(value),
        value_f64: value,
        time,
    }
}

// ---- The GPU run --------------------------------------------------------------------------------

/// Device bytes a point needs: its input vectors in the precision's values (sums of f64-based
/// types read the f64 data as it is), plus headroom for partials.
fn device_bytes(point: &Point) -> u64 {
    let (vectors, per_value) = match (point.workload, point.precision) {
        ("sum", StudyPrecision::Exact) => (1, 8),
        // Sums of f64-based types read the f64 data (see `GpuPoint::run`); f32-based types
        // get it converted, one value each.
        ("sum", StudyPrecision::Real(p)) => (
            1,
            DeviceType::of(p).map_or(8, |t| if t.word_bytes() == 8 { 8 } else { t.bytes() }),
        ),
        // Both vectors converted to the precision's values.
        ("dot", StudyPrecision::Real(p)) => (2, DeviceType::of(p).map_or(8, DeviceType::bytes)),
        _ => (0, 0),
    };
    point.size * per_value * vectors
}

/// The GPU runner of the three reductions.
struct GpuRunner<'g> {
    reducer: GpuReducer<'g>,
    inputs: InputCache,
}

impl<'g> GpuRunner<'g> {
    fn new(gpu: &'g Gpu) -> Self {
        GpuRunner {
            reducer: GpuReducer::new(gpu),
            inputs: InputCache::default(),
        }
    }
}

impl GpuMeasure for GpuRunner<'_> {
    fn measure(&mut self, point: &Point, timing: TimingOptions) -> Result<Measurement, GpuError> {
        let inputs = self.inputs.of(point);
        let Some((grid, block)) = point.backend.gpu_1d() else {
            unreachable!("reductions run on grid × block launches")
        };
        let shape = Shape::new(grid, block);
        let outcome = match point.precision {
            StudyPrecision::Exact => {
                let (v, t) = self.reducer.exact_sum(&inputs.xs, shape, timing)?;
                PointOutcome {
                    value: Reference::from_f64(v),
                    value_f64: v,
                    time: time_stats(&t),
                }
            }
            StudyPrecision::Real(p) => visit_device_type(
                p,
                GpuPoint {
                    reducer: &mut self.reducer,
                    point,
                    inputs,
                    shape,
                    timing,
                },
            )
            .unwrap_or_else(|| unreachable!("the GPU plan has no {p} points"))?,
        };
        Ok(score(inputs, &outcome))
    }
}

struct GpuPoint<'r, 'g, 'a> {
    reducer: &'r mut GpuReducer<'g>,
    point: &'a Point,
    inputs: &'a Inputs,
    shape: Shape,
    timing: TimingOptions,
}

impl DeviceTypeVisitor for GpuPoint<'_, '_, '_> {
    type Output = Result<PointOutcome, GpuError>;
    fn visit<T: DeviceWords>(self) -> Result<PointOutcome, GpuError> {
        let (p, shape, timing) = (self.point, self.shape, self.timing);
        let convert = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        // f64-based types take the f64 data as it is (from_f64 is exact for them), which also
        // halves the bytes a pair type reads; f32-based ones get it converted on the host.
        let f64_words = T::TYPE.word_bytes() == 8;
        let (value, t): (T, Timing) = match (p.workload, p.algorithm) {
            ("sum", _) if f64_words => {
                self.reducer
                    .sum_f64_in::<T>(&self.inputs.xs, shape, timing)?
            }
            ("sum", _) => self
                .reducer
                .sum::<T>(&convert(&self.inputs.xs), shape, timing)?,
            ("dot", a) => {
                let fused = a.starts_with("fma");
                let (x, y) = (convert(&self.inputs.xs), convert(&self.inputs.ys));
                self.reducer.dot::<T>(&x, &y, fused, shape, timing)?
            }
            ("pi-midpoint", _) => self.reducer.pi_midpoint::<T>(p.size, shape, timing)?,
            ("pi-leibniz", _) => self.reducer.pi_leibniz::<T>(p.size, timing)?,
            (w, a) => unreachable!("no GPU algorithm {a} for {w}: the planner never makes one"),
        };
        Ok(PointOutcome {
            value: Reference::of(&value),
            value_f64: value.to_f64(),
            time: time_stats(&t),
        })
    }
}

#[cfg(test)]
mod tests;
