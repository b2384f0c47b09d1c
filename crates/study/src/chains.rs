//! Multiplication chains and do/undo (seed 000 ch. 8): the workloads `chain` and `doundo`, on the
//! CPU in every precision and on the GPU in the CUDA twin's arithmetic (`cuda/chains.cu`).
//!
//! **chain** (§8.1, Figs 22–23). The product of n factors, each drawn from the class's small or
//! large interval with probability 1/2 ([`InputClass::mixed`]; defaults `chain-6` = (0.1, 1) &
//! (1, 6) and `chain-10` = (0.1, 1) & (1, 10), the thesis's two figures). The factors are generated
//! in f64 and converted to the precision with `from_f64`; the result is scored against the
//! **exact product of the converted factors** ([`exact_product`], an integer product tree), so the
//! error is the arithmetic's alone, not the conversion's (for f32 the conversion rounds each
//! factor to 24 bits; for f32x2/comp32 it keeps ~48 bits; for the f64-based types and mp ≥ 64 it
//! is exact). The product is the left fold from the first factor ([`chain_product`]). The
//! factors' logarithms drift upwards (E ln x ≈ 0.20 per factor for chain-6, 0.41 for chain-10),
//! so f32 overflows after a few hundred factors and f64 after a few thousand: such points are
//! recorded as they happen, infinite error and a note with the exact product's magnitude. Sizes:
//! quick {10, 100, 300, 1000}, full {10, 30, 100, 300, 1000, 3000} (`cfg.sizes` overrides); mp only
//! up to [`MP_MAX_FACTORS`]. CPU: algorithm `serial`, one thread (the chain is one dependency
//! chain). GPU: `serial` on one thread (`1×1`, bit-identical to the CPU) and `rotations` on the
//! full device, where thread t multiplies the same factors starting at factor t mod n (a
//! rotation: same exact product, another rounding order); its value and error are thread 0's
//! (the serial order), `extra` has `threads`, `gmul_per_s` (multiplications per second over all
//! threads, 10^9) and the relative errors of up to 4096 evenly spaced threads (`rel_mean_threads`,
//! `rel_max_threads`, `threads_scored`, `threads_nonfinite`).
//!
//! What it shows (tested below): the composite product (value = RN(xv·yv), error from the operands'
//! error words only) never captures its own rounding error, so comp64 on f64 factors is f64 bit
//! for bit and comp32 has f32's relative error, as the thesis found ("float2/double2 worse than
//! float/double" — here equal, since our conversion keeps the factors' error words). The thesis's
//! other finding, that normalizing before each product helps, does not hold here: on both default
//! classes comp32n is on average about 20% *less* accurate than comp32 (50 seeds, n = 100).
//!
//! **doundo** (§8.2.2, Figs 24–29, Table 20). x ← (x·y_i)/y_i for i = 1..steps; exactly, x never
//! changes, so the error is |x_final − x_0| (abs, and rel = abs/|x_0|) with x_0 the converted
//! start value. Classes ([`InputClass::doundo`]) read a class as (x's interval, y's interval):
//! `du-small` (0,10)/(0,10), `du-large` (10^5,10^6)/(10^5,10^6), `du-xsmall-ylarge`,
//! `du-xlarge-ysmall`; a user class `A:B,C:D` means x in (A,B) and y in (C,D). Steps: 10^6
//! (quick), 10^7 (full). Algorithm = division mode:
//! - `div-rn`: IEEE division (the CPU's only one; on the GPU, f32's `/` under the default flags,
//!   PTX div.rn.f32, and the twin's comp32/f32x2 divisions, bit-identical to the CPU);
//! - `div-full`: f32's `/` under `--prec-div=false` (flag set `approx-div`), PTX div.full.f32;
//! - `div-approx`: `__fdividef`, PTX div.approx.f32.
//!
//! In the approximate modes comp32 and f32x2 run variants of the twin's division whose f32
//! divisions (and only those: the reciprocal of the divisor's leading word and the special-case
//! quotient) are the mode's; `cuda/chains.cu` lists them. Each compiled kernel's PTX is checked
//! ([`check_division`], a `mantissa-ptx` census): the mode's instruction must be there and no
//! other f32 division or non-IEEE reciprocal; otherwise the point fails with the reason rather
//! than being recorded as a result. The counts go to `extra` as `ptx.div.rn.f32`,
//! `ptx.div.full.f32`, `ptx.div.approx.f32` (static counts in the kernel, with its 8-way unrolled
//! loop) plus any `ptx.rcp.*`. The GPU precisions are f32, comp32 and f32x2 (the modes change
//! f32 divisions only); the CPU runs every non-mp precision of the config (mp: 10^6 divisions
//! would take seconds per point and add nothing to Table 20's comparison). GPU `1×1` points are
//! the thesis's serial runs, the accuracy points; full-device points run one x per thread (thread
//! 0's x_0 is the serial one, the others drawn from the same interval) over steps/10 shared y's,
//! for throughput (`gsteps_per_s`), with per-thread errors in `extra` as for chains (only the
//! first class in the quick suite: at these moderate magnitudes the class changes the values, not
//! the work per step). GPU do/undo runs are 10^6–10^7 dependent steps on one thread, so they are
//! timed with at most 1 warm-up and 3 timed runs.
//!
//! Main items: [`cpu_points`]/[`gpu_points`] (the plan), [`measure_cpu`], [`GpuRunner`];
//! [`chain_product`], [`doundo`], [`exact_product`] (the CPU algorithms and the reference);
//! [`DivMode`], [`doundo_source`], [`check_division`] (the GPU division modes).

use std::collections::{BTreeMap, HashMap, HashSet};

use dashu_int::IBig;
use mantissa_gpu::{
    twin, FlagSet, Gpu, GpuError, KernelArg, LaunchDims, Module, Scalar, Source, Timing,
    TimingOptions,
};
use mantissa_gpu::{
    values_of, visit_device_type, words_of, DeviceType, DeviceTypeVisitor, DeviceWords, Word,
};
use mantissa_num::big::Big;
use mantissa_num::metrics::{measure_values, rel_error, ulp_exponent, Reference};
use mantissa_num::precision::{Precision, PrecisionVisitor};
use mantissa_num::Real;
use mantissa_ptx::census::{census, Counts};
use mantissa_report::{Backend, Status, TimeStats};
use rayon::ThreadPool;

use crate::cost::{generation, significand_bits, value_bytes, Cost, Pace, Work};
use crate::inputs::InputClass;
use crate::measurement::{error_metrics, reference_f64, time_stats, Measurement};
use crate::stop::{Stop, CHECK_EVERY};
use crate::study::{CpuTiming, Data, Point, StudyConfig, StudyPrecision, Suite};
use crate::workload::{CpuMeasure, GpuMeasure, Workload};

/// The kernels (after the twin header).
const CHAINS_CU: &str = include_str!("../cuda/chains.cu");

/// Chain lengths of the quick suite.
const CHAIN_QUICK: [u64; 4] = [10, 100, 300, 1000];
/// Chain lengths of the full suite.
const CHAIN_FULL: [u64; 6] = [10, 30, 100, 300, 1000, 3000];
/// The longest chain run in mp: an mp256 product takes ~0.3 µs here, so 10^5 factors and their
/// exact reference (a product tree of 5·10^6 bits) take well under a second per point.
pub const MP_MAX_FACTORS: u64 = 100_000;
/// Do/undo steps: seed 000 Figs 24, 28, 29 (10^6) and 25–27 (10^7).
const DOUNDO_QUICK: u64 = 1_000_000;
const DOUNDO_FULL: u64 = 10_000_000;
/// Full-device do/undo points run this fraction of the serial steps per thread.
const THROUGHPUT_DIVISOR: u64 = 10;
/// Threads of a full-device launch whose errors are scored (evenly spaced).
const SCORED_THREADS: usize = 4096;
/// The flag set of the chain kernels (the twin's arithmetic does not depend on it).
pub const CHAIN_FLAGS: FlagSet = FlagSet::DEFAULT;

/// The precisions the GPU's division modes apply to.
pub const DOUNDO_GPU_PRECISIONS: [Precision; 3] =
    [Precision::F32, Precision::Comp32, Precision::F32x2];

// ---- Inputs and the plan -----------------------------------------------------------------------

/// The chain's classes: the user's, or seed 000 Figs 22 and 23.
fn chain_classes(cfg: &StudyConfig) -> Vec<InputClass> {
    cfg.classes
        .clone()
        .unwrap_or_else(|| vec![InputClass::chain(6), InputClass::chain(10)])
}

fn chain_sizes(cfg: &StudyConfig) -> Vec<u64> {
    let sizes = cfg.sizes.clone().unwrap_or_else(|| match cfg.suite {
        Suite::Quick => CHAIN_QUICK.to_vec(),
        Suite::Full => CHAIN_FULL.to_vec(),
    });
    // A product of no factors measures nothing.
    sizes.into_iter().filter(|&n| n > 0).collect()
}

/// The do/undo classes: the user's, or Table 20's four.
fn doundo_classes(cfg: &StudyConfig) -> Vec<InputClass> {
    cfg.classes
        .clone()
        .unwrap_or_else(InputClass::doundo_classes)
}

fn doundo_sizes(cfg: &StudyConfig) -> Vec<u64> {
    cfg.sizes.clone().unwrap_or_else(|| match cfg.suite {
        Suite::Quick => vec![DOUNDO_QUICK],
        Suite::Full => vec![DOUNDO_FULL],
    })
}

/// The chain's factors of a point (f64, before conversion).
pub fn chain_factors(class: &InputClass, n: u64, seed: u64) -> Vec<f64> {
    class.mixed(n as usize, seed)
}

/// Do/undo's start values (one per thread) and y's of a point (f64, before conversion). The
/// first start value does not depend on `threads`.
pub fn doundo_operands(
    class: &InputClass,
    threads: u64,
    steps: u64,
    seed: u64,
) -> (Vec<f64>, Vec<f64>) {
    class.split_draws(threads as usize, steps as usize, seed)
}

fn class_of(point: &Point) -> Option<&InputClass> {
    match &point.data {
        Data::Intervals(c) => Some(c),
        _ => None,
    }
}

fn real_precisions(cfg: &StudyConfig) -> impl Iterator<Item = Precision> + '_ {
    cfg.precisions.iter().filter_map(|p| match p {
        StudyPrecision::Real(p) => Some(*p),
        StudyPrecision::Exact => None,
    })
}

fn dedup(points: Vec<Point>) -> Vec<Point> {
    let mut seen = HashSet::new();
    points
        .into_iter()
        .filter(|p| seen.insert(p.key("")))
        .collect()
}

/// The module's two workloads ([`CHAIN`], [`DOUNDO`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// Products of n factors from magnitude intervals (seed 000 §8.1).
    Chain,
    /// x ← (x·y_i)/y_i under three division modes (seed 000 §8.2.2).
    DoUndo,
}

/// The CPU points of workload `w` in `cfg`: one thread each (chains and do/undo are single
/// dependency chains; more threads would only run independent copies).
pub fn cpu_points(cfg: &StudyConfig, w: Experiment) -> Vec<Point> {
    let seq = Backend::Cpu { threads: 1 };
    let mut points = Vec::new();
    match w {
        Experiment::Chain => {
            for class in chain_classes(cfg) {
                for n in chain_sizes(cfg) {
                    for p in real_precisions(cfg) {
                        if matches!(p, Precision::Mp(_)) && n > MP_MAX_FACTORS {
                            continue;
                        }
                        points.push(Point {
                            workload: "chain",
                            algorithm: "serial",
                            data: Data::Intervals(class.clone()),
                            size: n,
                            seed: cfg.seed,
                            precision: StudyPrecision::Real(p),
                            backend: seq,
                            flags: None,
                        });
                    }
                }
            }
        }
        Experiment::DoUndo => {
            for class in doundo_classes(cfg) {
                for steps in doundo_sizes(cfg) {
                    for p in real_precisions(cfg).filter(|p| !matches!(p, Precision::Mp(_))) {
                        points.push(Point {
                            workload: "doundo",
                            algorithm: DivMode::Rn.name(),
                            data: Data::Intervals(class.clone()),
                            size: steps,
                            seed: cfg.seed,
                            precision: StudyPrecision::Real(p),
                            backend: seq,
                            flags: None,
                        });
                    }
                }
            }
        }
    }
    dedup(points)
}

/// The GPU points of workload `w` in `cfg` on a device whose full launch is `full`.
pub fn gpu_points(cfg: &StudyConfig, w: Experiment, full: (u32, u32)) -> Vec<Point> {
    let one = Backend::gpu(1, 1);
    let all = Backend::gpu(full.0, full.1);
    let mut points = Vec::new();
    let mut add = |workload, algorithm, flags, class: &InputClass, size, p, backend| {
        points.push(Point {
            workload,
            algorithm,
            data: Data::Intervals(class.clone()),
            size,
            seed: cfg.seed,
            precision: StudyPrecision::Real(p),
            backend,
            flags: Some(flags),
        })
    };
    match w {
        Experiment::Chain => {
            let precisions: Vec<Precision> = real_precisions(cfg)
                .filter(|p| Precision::NATIVE.contains(p))
                .collect();
            for class in chain_classes(cfg) {
                for n in chain_sizes(cfg) {
                    for &p in &precisions {
                        add("chain", "serial", CHAIN_FLAGS, &class, n, p, one);
                        add("chain", "rotations", CHAIN_FLAGS, &class, n, p, all);
                    }
                }
            }
        }
        Experiment::DoUndo => {
            let precisions: Vec<Precision> = real_precisions(cfg)
                .filter(|p| DOUNDO_GPU_PRECISIONS.contains(p))
                .collect();
            let classes = doundo_classes(cfg);
            for (k, class) in classes.iter().enumerate() {
                let throughput = k == 0 || cfg.suite == Suite::Full || cfg.classes.is_some();
                for steps in doundo_sizes(cfg) {
                    for mode in DivMode::ALL {
                        for &p in &precisions {
                            add("doundo", mode.name(), mode.flags(), class, steps, p, one);
                            if throughput {
                                let s = (steps / THROUGHPUT_DIVISOR).max(1);
                                add("doundo", mode.name(), mode.flags(), class, s, p, all);
                            }
                        }
                    }
                }
            }
        }
    }
    dedup(points)
}

// ---- The CPU algorithms and the reference ------------------------------------------------------

/// x_0 · x_1 · … · x_{n−1}, left to right from the first factor (one for no factors).
pub fn chain_product<T: Real>(xs: &[T]) -> T {
    chain_product_until(xs, Stop::NEVER)
}

/// [`chain_product`], checking `stop` every block of factors (the same products in the same
/// order; a meaningless value once it is set).
pub fn chain_product_until<T: Real>(xs: &[T], stop: Stop) -> T {
    let Some((first, rest)) = xs.split_first() else {
        return T::one();
    };
    let mut acc = first.clone();
    for block in rest.chunks(CHECK_EVERY) {
        if stop.requested() {
            break;
        }
        acc = block.iter().fold(acc, |acc, x| acc * x.clone());
    }
    acc
}

/// x ← (x·y)/y for each y in order, from `x0`.
pub fn doundo<T: Real>(x0: T, ys: &[T]) -> T {
    doundo_until(x0, ys, Stop::NEVER)
}

/// [`doundo`], checking `stop` every block of steps.
pub fn doundo_until<T: Real>(x0: T, ys: &[T], stop: Stop) -> T {
    let mut x = x0;
    for block in ys.chunks(CHECK_EVERY) {
        if stop.requested() {
            break;
        }
        x = block.iter().fold(x, |x, y| (x * y.clone()) / y.clone());
    }
    x
}

/// The exact product of exact values, by a balanced tree of integer products (the significands
/// multiply, the exponents add), so n factors of b bits cost O(M(nb) log n) rather than the
/// O(n² b) of a left fold. One for no factors.
pub fn exact_product(xs: &[Big]) -> Big {
    fn tree(v: &[(IBig, isize)]) -> (IBig, isize) {
        match v {
            [] => (IBig::ONE, 0),
            [x] => x.clone(),
            _ => {
                let (a, b) = v.split_at(v.len() / 2);
                let ((ma, ea), (mb, eb)) = (tree(a), tree(b));
                (ma * mb, ea + eb)
            }
        }
    }
    let parts: Vec<(IBig, isize)> = xs
        .iter()
        .map(|x| (x.repr().significand().clone(), x.repr().exponent()))
        .collect();
    let (m, e) = tree(&parts);
    Big::from_repr(dashu_float::Repr::new(m, e), dashu_float::Context::new(0))
}

/// The exact product of the values of `xs` (as converted to their precision). Non-finite
/// factors give the IEEE product's class: NaN for 0·∞ or a NaN, else the signed infinity.
pub fn chain_reference<T: Real>(xs: &[T]) -> Reference {
    let mut exact = Vec::with_capacity(xs.len());
    let (mut infinite, mut zero, mut negative) = (false, false, false);
    for x in xs {
        if x.is_nan() {
            return Reference::NaN;
        }
        match x.to_big() {
            Some(b) => {
                zero |= b.repr().is_zero();
                negative ^= b.repr().significand() < &IBig::ZERO;
                exact.push(b);
            }
            None => {
                infinite = true;
                negative ^= x.to_f64() < 0.0;
            }
        }
    }
    match (infinite, zero) {
        (true, true) => Reference::NaN,
        (true, false) => Reference::Infinite { negative },
        _ => Reference::Finite(exact_product(&exact)),
    }
}

// ---- Scoring -----------------------------------------------------------------------------------

/// The relative error alone (cheaper than all metrics: no decimal digits).
fn rel_of(computed: &Reference, reference: &Reference) -> f64 {
    match (computed, reference) {
        (Reference::Finite(c), Reference::Finite(r)) => rel_error(c, r),
        _ => measure_values(computed, reference).rel,
    }
}

/// log2 of a finite nonzero exact value's magnitude, rounded down.
fn log2_floor(b: &Big) -> Option<isize> {
    // The ulp exponent of a 1-bit format without a lower exponent bound is the leading exponent.
    (!b.repr().is_zero()).then(|| ulp_exponent(b, 1, i32::MIN))
}

/// A note when the computed value left the format's range while the exact one did not.
fn range_note(what: &str, p: &str, computed: &Reference, reference: &Reference) -> Option<String> {
    let Reference::Finite(r) = reference else {
        return None;
    };
    let mag = log2_floor(r).map_or("0".to_string(), |e| format!("2^{e}"));
    match computed {
        Reference::Finite(c) if c.repr().is_zero() && !r.repr().is_zero() => Some(format!(
            "{what} underflows to 0 in {p} (exact magnitude {mag})"
        )),
        Reference::Finite(_) => None,
        _ => Some(format!(
            "{what} is not finite in {p} (exact magnitude {mag}): the format's range is exceeded, error infinite"
        )),
    }
}

/// Errors of many threads' results: mean and max relative error over the finite ones, up to
/// [`SCORED_THREADS`] evenly spaced threads.
fn thread_errors<T: Real>(
    results: &[T],
    reference: impl Fn(usize) -> Reference,
    extra: &mut BTreeMap<String, f64>,
) {
    let n = results.len();
    let picks: Vec<usize> = if n <= SCORED_THREADS {
        (0..n).collect()
    } else {
        (0..SCORED_THREADS)
            .map(|k| k * n / SCORED_THREADS)
            .collect()
    };
    let (mut sum, mut max, mut finite, mut nonfinite) = (0.0, 0.0f64, 0usize, 0usize);
    for &t in &picks {
        let rel = rel_of(&Reference::of(&results[t]), &reference(t));
        if rel.is_finite() {
            sum += rel;
            max = max.max(rel);
            finite += 1;
        } else {
            nonfinite += 1;
        }
    }
    extra.insert("threads_scored".into(), picks.len() as f64);
    extra.insert("threads_nonfinite".into(), nonfinite as f64);
    // extra holds finite numbers only (JSON has no infinities there).
    if finite > 0 {
        extra.insert("rel_mean_threads".into(), sum / finite as f64);
        extra.insert("rel_max_threads".into(), max);
    }
}

fn ok_measurement(
    value: &Reference,
    value_f64: f64,
    reference: &Reference,
    time: TimeStats,
    extra: BTreeMap<String, f64>,
    note: Option<String>,
) -> Measurement {
    Measurement {
        status: Status::Ok,
        value: Some(value_f64),
        reference: Some(reference_f64(reference)),
        error: Some(error_metrics(value, reference)),
        time: Some(time),
        extra,
        note,
        build: None,
    }
}

/// 10^9 operations per second from a count and a time in ms.
fn giga_per_s(ops: f64, ms: f64) -> f64 {
    if ms > 0.0 {
        ops / (ms * 1e-3) / 1e9
    } else {
        0.0
    }
}

// ---- The workloads -----------------------------------------------------------------------------

/// The chain workload.
pub static CHAIN: Experiment = Experiment::Chain;
/// The do/undo workload.
pub static DOUNDO: Experiment = Experiment::DoUndo;

impl Workload for Experiment {
    fn name(&self) -> &'static str {
        match self {
            Experiment::Chain => "chain",
            Experiment::DoUndo => "doundo",
        }
    }
    fn description(&self) -> &'static str {
        match self {
            Experiment::Chain => "products of n factors from magnitude intervals (seed 000 §8.1)",
            Experiment::DoUndo => "x ← (x·y_i)/y_i under three division modes (seed 000 §8.2.2)",
        }
    }
    fn aliases(&self) -> &'static [&'static str] {
        match self {
            Experiment::Chain => &[],
            Experiment::DoUndo => &["do-undo"],
        }
    }
    fn record_names(&self) -> &'static [&'static str] {
        match self {
            Experiment::Chain => &["chain"],
            Experiment::DoUndo => &["doundo"],
        }
    }
    fn size_limit(&self) -> (u64, &'static str) {
        match self {
            Experiment::Chain => (1 << 24, "factors"),
            Experiment::DoUndo => (1 << 28, "steps"),
        }
    }
    fn cpu_points(&self, cfg: &StudyConfig) -> Vec<Point> {
        cpu_points(cfg, *self)
    }
    fn gpu_points(&self, cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
        gpu_points(cfg, *self, full)
    }
    fn runner_group(&self) -> &'static str {
        // Chains and do/undo share one runner per backend (compiled modules).
        "chains"
    }
    fn cpu_runner(&self) -> Box<dyn CpuMeasure> {
        Box::new(measure_cpu)
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
        match self {
            Experiment::Chain => CHAIN_QUANTITIES,
            Experiment::DoUndo => DOUNDO_QUANTITIES,
        }
    }
}

const THREADS: (&str, &str) = ("threads", "GPU threads, each running its own copy");
const THREADS_SCORED: (&str, &str) = (
    "threads_scored",
    "threads whose result was scored (evenly spaced, at most 4096)",
);
const THREADS_NONFINITE: (&str, &str) = (
    "threads_nonfinite",
    "scored threads whose result is NaN or infinite",
);
const REL_MEAN_THREADS: (&str, &str) = (
    "rel_mean_threads",
    "mean relative error over the scored threads with a finite error",
);
const REL_MAX_THREADS: (&str, &str) = (
    "rel_max_threads",
    "largest relative error over the scored threads with a finite error",
);
const CHAIN_QUANTITIES: &[(&str, &str)] = &[
    ("gmul_per_s", "multiplications per second, in 10^9"),
    THREADS,
    THREADS_SCORED,
    THREADS_NONFINITE,
    REL_MEAN_THREADS,
    REL_MAX_THREADS,
];
const DOUNDO_QUANTITIES: &[(&str, &str)] = &[
    ("gsteps_per_s", "do/undo steps per second, in 10^9"),
    (
        "ptx.",
        "division and reciprocal instructions in the kernel's PTX, by <op>.<type> (mantissa-ptx's census)",
    ),
    THREADS,
    THREADS_SCORED,
    THREADS_NONFINITE,
    REL_MEAN_THREADS,
    REL_MAX_THREADS,
];

// ---- The CPU runner ----------------------------------------------------------------------------

/// Measures one CPU point (`pool` is unused: every point runs on one thread).
pub fn measure_cpu(point: &Point, _pool: Option<&ThreadPool>, timing: CpuTiming) -> Measurement {
    let (Some(class), StudyPrecision::Real(p)) = (class_of(point), point.precision) else {
        return Measurement::failed(format!(
            "{} needs an interval class and a real precision, got {} and {}",
            point.workload,
            point.data.name(),
            point.precision
        ));
    };
    match (point.workload, point.algorithm) {
        ("chain", "serial") => p.visit(ChainCpu {
            factors: chain_factors(class, point.size, point.seed),
            timing,
        }),
        ("doundo", "div-rn") => {
            let (xs, ys) = doundo_operands(class, 1, point.size, point.seed);
            p.visit(DoUndoCpu {
                x0: xs[0],
                ys,
                timing,
            })
        }
        (w, a) => Measurement::failed(format!(
            "no CPU algorithm {a} for {w}: the CPU has chain serial and doundo div-rn"
        )),
    }
}

struct ChainCpu<'a> {
    factors: Vec<f64>,
    timing: CpuTiming<'a>,
}

impl PrecisionVisitor for ChainCpu<'_> {
    type Output = Measurement;
    fn visit<T: Real>(self) -> Measurement {
        let xs: Vec<T> = self.factors.iter().map(|&x| T::from_f64(x)).collect();
        let reference = chain_reference(&xs);
        let stop = self.timing.stop;
        let (value, time) = self.timing.measure(|| chain_product_until(&xs, stop));
        let computed = Reference::of(&value);
        let mut extra = BTreeMap::new();
        let mults = xs.len().saturating_sub(1) as f64;
        extra.insert("gmul_per_s".into(), giga_per_s(mults, time.median_ms));
        let note = range_note("the product", &T::precision_name(), &computed, &reference);
        ok_measurement(&computed, value.to_f64(), &reference, time, extra, note)
    }
}

struct DoUndoCpu<'a> {
    x0: f64,
    ys: Vec<f64>,
    timing: CpuTiming<'a>,
}

impl PrecisionVisitor for DoUndoCpu<'_> {
    type Output = Measurement;
    fn visit<T: Real>(self) -> Measurement {
        let x0 = T::from_f64(self.x0);
        let ys: Vec<T> = self.ys.iter().map(|&y| T::from_f64(y)).collect();
        let reference = Reference::of(&x0);
        let stop = self.timing.stop;
        let (value, time) = self.timing.measure(|| doundo_until(x0.clone(), &ys, stop));
        let computed = Reference::of(&value);
        let mut extra = BTreeMap::new();
        extra.insert(
            "gsteps_per_s".into(),
            giga_per_s(ys.len() as f64, time.median_ms),
        );
        let note = range_note("x", &T::precision_name(), &computed, &reference);
        ok_measurement(&computed, value.to_f64(), &reference, time, extra, note)
    }
}

// ---- Division modes ----------------------------------------------------------------------------

/// How the GPU divides in f32 (seed 000 §8.2.1.3's three PTX divisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DivMode {
    /// IEEE round to nearest: `/` under the default flags, div.rn.f32.
    Rn,
    /// `/` under `--prec-div=false`: div.full.f32 (full range, max 2 ulp, not IEEE).
    Full,
    /// `__fdividef`: div.approx.f32 (x · approximate 1/y, restricted range).
    Approx,
}

impl DivMode {
    /// Every mode, in the order records list them.
    pub const ALL: [DivMode; 3] = [DivMode::Rn, DivMode::Full, DivMode::Approx];

    /// The algorithm name in records.
    pub fn name(self) -> &'static str {
        match self {
            DivMode::Rn => "div-rn",
            DivMode::Full => "div-full",
            DivMode::Approx => "div-approx",
        }
    }

    /// The mode of a record's algorithm name.
    pub fn from_name(s: &str) -> Option<DivMode> {
        DivMode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The flag set the do/undo module of this mode is compiled under.
    pub fn flags(self) -> FlagSet {
        match self {
            DivMode::Full => FlagSet::APPROX_DIV,
            DivMode::Rn | DivMode::Approx => FlagSet::DEFAULT,
        }
    }

    /// The PTX instruction this mode's f32 divisions must compile to.
    pub fn instruction(self) -> &'static str {
        match self {
            DivMode::Rn => "div.rn.f32",
            DivMode::Full => "div.full.f32",
            DivMode::Approx => "div.approx.f32",
        }
    }

    fn code(self) -> u32 {
        match self {
            DivMode::Rn => 0,
            DivMode::Full => 1,
            DivMode::Approx => 2,
        }
    }
}

/// The CUDA source of the chain kernels (every twin precision).
pub fn chain_source() -> Source {
    let mut text = format!("{}\n{}\n", twin::HEADER, CHAINS_CU);
    for t in &DeviceType::ALL {
        let (p, ty, w) = (t.name, t.cuda_type, t.word_cuda());
        text.push_str(&format!("CHAINS_CHAIN_KERNEL({p}, {ty}, {w})\n"));
    }
    Source::new("chains.cu", text)
}

/// The CUDA source of the do/undo kernels of `mode` (to compile under [`DivMode::flags`]).
pub fn doundo_source(mode: DivMode) -> Source {
    let mut text = format!(
        "#define CHAINS_DIV_MODE {}\n{}\n{}\n",
        mode.code(),
        twin::HEADER,
        CHAINS_CU
    );
    for t in DOUNDO_GPU_PRECISIONS
        .iter()
        .filter_map(|&p| DeviceType::of(p))
    {
        let (p, ty) = (t.name, t.cuda_type);
        text.push_str(&format!("CHAINS_DOUNDO_KERNEL({p}, {ty})\n"));
    }
    Source::new(format!("doundo_{}.cu", mode.name()), text)
}

/// The census counts of each kernel of a PTX text, by kernel name.
pub fn kernel_counts(ptx: &str) -> BTreeMap<String, Counts> {
    census(&mantissa_ptx::parse(ptx).module)
        .into_iter()
        .map(|f| (f.name, f.total))
        .collect()
}

/// Checks that a do/undo kernel divides in f32 the way `mode` says: at least one
/// [`DivMode::instruction`], no other f32 division, and no reciprocal other than rcp.rn.f32 (the
/// twin's IEEE 1/y, allowed in div-rn only). The error is one line naming what was found.
pub fn check_division(mode: DivMode, kernel: &str, counts: &Counts) -> Result<(), String> {
    let want = mode.instruction();
    let found: Vec<String> = counts
        .ops
        .iter()
        .filter(|(op, _)| op.starts_with("div.") || op.starts_with("rcp."))
        .map(|(op, n)| format!("{op} ×{n}"))
        .collect();
    let found_list = if found.is_empty() {
        "none".to_string()
    } else {
        found.join(", ")
    };
    let bad = counts.ops.iter().find(|(op, &n)| {
        n > 0
            && op.ends_with(".f32")
            && ((op.starts_with("div.") && op.as_str() != want)
                || (op.starts_with("rcp.")
                    && !(mode == DivMode::Rn && op.as_str() == "rcp.rn.f32")))
    });
    if counts.op(want) == 0 {
        return Err(format!(
            "{kernel} was to divide with {want} ({}) but its PTX has none (f32 divisions found: {found_list})",
            mode.name()
        ));
    }
    if let Some((op, _)) = bad {
        return Err(format!(
            "{kernel} ({}) has {op} besides {want} (divisions found: {found_list})",
            mode.name()
        ));
    }
    Ok(())
}

/// The PTX division and reciprocal counts of a kernel, as `extra` keys (`ptx.div.rn.f32`, ...);
/// the three f32 divisions are always present.
pub fn division_extra(counts: &Counts) -> BTreeMap<String, f64> {
    let mut extra: BTreeMap<String, f64> = DivMode::ALL
        .iter()
        .map(|m| {
            (
                format!("ptx.{}", m.instruction()),
                f64::from(counts.op(m.instruction())),
            )
        })
        .collect();
    for (op, &n) in &counts.ops {
        if op.starts_with("div.") || op.starts_with("rcp.") {
            extra.insert(format!("ptx.{op}"), f64::from(n));
        }
    }
    extra
}

// ---- The GPU runner ----------------------------------------------------------------------------

/// Device bytes a GPU point of this module allocates.
pub fn device_bytes(point: &Point) -> u64 {
    let value = match point.precision {
        StudyPrecision::Real(p) => DeviceType::of(p).map_or(0, DeviceType::bytes),
        StudyPrecision::Exact => 0,
    };
    let threads = point.backend.gpu_threads().unwrap_or(1);
    // Factors or y's, and per thread a start value (do/undo) and a result.
    point.size * value + 2 * threads * value
}

/// What a point costs the host: the f64 operands and their converted copy; for chains, the exact
/// values of the factors and the exact reference ([`chain_reference`]), counted from two
/// measurements of whole f64 chain points on the development VM (2^20 factors 35 s, 2^22 169 s,
/// 2026-11-25: n^1.13, almost all of it the reference) and scaled with the significand's bits; on
/// the CPU, the timed left fold (n − 1 products) or do/undo's n products and n divisions.
pub fn host_cost(point: &Point) -> Cost {
    let (n, p) = (point.size as f64, point.precision);
    // Do/undo's GPU points draw a start value per thread.
    let threads = point.backend.gpu_threads().unwrap_or(1) as f64;
    let mut cost = Cost {
        bytes: ((8 + value_bytes(p)) as f64 * n) as u64,
        work: vec![generation(n + threads), Work::new(p, n, Pace::Independent)],
    };
    if point.workload == "chain" {
        // A Big per factor (its struct and digits), then the product's digits.
        let bits = f64::from(significand_bits(p));
        cost.bytes += (64.0 * n + n * bits / 8.0) as u64;
        let reference_ns = 33_000.0 * n * (n / 1_048_576.0).powf(0.13) * bits / 53.0;
        cost.work.push(Work::new(
            StudyPrecision::Exact,
            reference_ns,
            Pace::Dependent,
        ));
    }
    if !point.backend.is_gpu() {
        let ops = if point.workload == "chain" {
            n - 1.0
        } else {
            2.0 * n
        };
        cost.work
            .push(Work::new(p, ops.max(0.0), Pace::Dependent).timed());
    }
    cost
}

/// A compiled do/undo module and its kernels' census.
struct DoUndoModule {
    module: Module,
    counts: BTreeMap<String, Counts>,
}

/// Runs this module's GPU points, keeping compiled kernels between points.
pub struct GpuRunner<'g> {
    gpu: &'g Gpu,
    chain: Option<Module>,
    doundo: HashMap<DivMode, DoUndoModule>,
}

impl<'g> GpuRunner<'g> {
    /// A runner for `gpu`; nothing is compiled until a point needs it.
    pub fn new(gpu: &'g Gpu) -> Self {
        GpuRunner {
            gpu,
            chain: None,
            doundo: HashMap::new(),
        }
    }

    fn chain_module(&mut self) -> Result<&Module, GpuError> {
        Ok(match self.chain {
            Some(ref m) => m,
            None => self
                .chain
                .insert(self.gpu.build(&chain_source(), CHAIN_FLAGS)?),
        })
    }

    fn doundo_module(&mut self, mode: DivMode) -> Result<&DoUndoModule, GpuError> {
        if !self.doundo.contains_key(&mode) {
            let compiled = self.gpu.compile(&doundo_source(mode), mode.flags())?;
            let module = self.gpu.load(&compiled)?;
            let counts = kernel_counts(&compiled.ptx);
            self.doundo.insert(mode, DoUndoModule { module, counts });
        }
        self.doundo.get(&mode).ok_or_else(|| GpuError::BadImage {
            module: format!("doundo_{}", mode.name()),
            problem: "not kept after loading".into(),
        })
    }

    /// Refuses a block larger than the kernel allows (as an out-of-resources measurement).
    fn fits(module: &Module, kernel: &str, block: u32) -> Result<Option<Measurement>, GpuError> {
        let r = module.resources(kernel)?;
        Ok((block > r.max_threads_per_block).then(|| {
            Measurement::out_of_resources(format!(
                "{kernel} allows {} threads per block ({} registers each); {block} asked",
                r.max_threads_per_block, r.registers
            ))
        }))
    }

    /// The product of `factors` on each of grid × block threads, thread t starting at factor
    /// t mod n (see `cuda/chains.cu`), and the timing of the launch. Thread 0's result is
    /// [`chain_product`]'s, bit for bit.
    pub fn chain_products<T: DeviceWords>(
        &mut self,
        factors: &[T],
        shape: (u32, u32),
        timing: TimingOptions,
    ) -> Result<(Vec<T>, Timing), GpuError> {
        let gpu = self.gpu;
        let threads = u64::from(shape.0) * u64::from(shape.1);
        let x = gpu.upload("chain_factors", &words_of(factors))?;
        let out = gpu.alloc_zeros("chain_out", T::Word::DTYPE, threads as usize * T::words())?;
        let kernel = format!("chain_{}", T::precision_name());
        let module = self.chain_module()?;
        let args = [
            KernelArg::from(&x),
            KernelArg::Scalar(Scalar::U64(factors.len() as u64)),
            KernelArg::Scalar(Scalar::U64(threads)),
            KernelArg::from(&out),
        ];
        let dims = LaunchDims::new((shape.0, 1, 1), (shape.1, 1, 1));
        let t = gpu.time_with(timing, 1, |_| gpu.launch(module, &kernel, dims, &args))?;
        let values = values_of::<T>(gpu.download(&out)?, threads as usize, "chain results")?;
        Ok((values, t))
    }

    /// Do/undo in `mode` on grid × block threads, thread t from `x0s[t]` over all of `ys`,
    /// after checking the kernel's PTX divisions ([`check_division`]). Returns the final x's,
    /// the timing and the kernel's division counts. T is f32, Comp32 or f32x2.
    pub fn doundo_run<T: DeviceWords>(
        &mut self,
        mode: DivMode,
        x0s: &[T],
        ys: &[T],
        shape: (u32, u32),
        timing: TimingOptions,
    ) -> Result<(Vec<T>, Timing, Counts), GpuError> {
        let gpu = self.gpu;
        let kernel = format!("doundo_{}", T::precision_name());
        let threads = u64::from(shape.0) * u64::from(shape.1);
        if (x0s.len() as u64) < threads || T::Word::DTYPE != mantissa_gpu::DType::F32 {
            return Err(GpuError::BadArguments {
                kernel,
                problem: format!(
                    "{} start values for {threads} threads; the kernels exist for f32, comp32 and f32x2",
                    x0s.len()
                ),
            });
        }
        let m = self.doundo_module(mode)?;
        let counts = m
            .counts
            .get(&kernel)
            .cloned()
            .ok_or_else(|| GpuError::KernelNotFound {
                kernel: kernel.clone(),
                module: format!("doundo_{}", mode.name()),
                entries: m.counts.keys().cloned().collect::<Vec<_>>().join(", "),
            })?;
        check_division(mode, &kernel, &counts).map_err(|problem| GpuError::BadArguments {
            kernel: kernel.clone(),
            problem: format!("PTX check failed, not measured: {problem}"),
        })?;
        let x = gpu.upload("doundo_x0", &words_of(x0s))?;
        let y = gpu.upload("doundo_y", &words_of(ys))?;
        let out = gpu.alloc_zeros("doundo_out", T::Word::DTYPE, threads as usize * T::words())?;
        let args = [
            KernelArg::from(&x),
            KernelArg::from(&y),
            KernelArg::Scalar(Scalar::U64(ys.len() as u64)),
            KernelArg::Scalar(Scalar::F32(1.0)),
            KernelArg::from(&out),
            KernelArg::Scalar(Scalar::U64(threads)),
        ];
        let dims = LaunchDims::new((shape.0, 1, 1), (shape.1, 1, 1));
        let module = &m.module;
        let t = gpu.time_with(timing, 1, |_| gpu.launch(module, &kernel, dims, &args))?;
        let values = values_of::<T>(gpu.download(&out)?, threads as usize, "do/undo results")?;
        Ok((values, t, counts))
    }
}

impl GpuMeasure for GpuRunner<'_> {
    fn measure(&mut self, point: &Point, timing: TimingOptions) -> Result<Measurement, GpuError> {
        let (Some(class), StudyPrecision::Real(p), Some((grid, block))) =
            (class_of(point), point.precision, point.backend.gpu_1d())
        else {
            return Ok(Measurement::failed(format!(
                "{} on the GPU needs an interval class, a real precision and a grid × block launch",
                point.workload
            )));
        };
        let shape = (grid, block);
        match point.workload {
            "chain" => {
                let factors = chain_factors(class, point.size, point.seed);
                let kernel = format!("chain_{p}");
                if let Some(m) = Self::fits(self.chain_module()?, &kernel, block)? {
                    return Ok(m);
                }
                let run = ChainGpu {
                    runner: self,
                    factors: &factors,
                    shape,
                    timing,
                };
                visit_device_type(p, run)
                    .unwrap_or_else(|| Ok(Measurement::failed(format!("no GPU chain in {p}"))))
            }
            "doundo" => {
                let Some(mode) = DivMode::from_name(point.algorithm) else {
                    return Ok(Measurement::failed(format!(
                        "unknown division mode {}: div-rn, div-full or div-approx",
                        point.algorithm
                    )));
                };
                let threads = u64::from(grid) * u64::from(block);
                let (x0s, ys) = doundo_operands(class, threads, point.size, point.seed);
                let kernel = format!("doundo_{p}");
                let m = self.doundo_module(mode)?;
                if m.counts.contains_key(&kernel) {
                    if let Some(m) = Self::fits(&m.module, &kernel, block)? {
                        return Ok(m);
                    }
                }
                // Long runs: at most 1 warm-up and 3 timed runs (see the module doc).
                let timing = TimingOptions {
                    warmup: timing.warmup.min(1),
                    reps: timing.reps.clamp(1, 3),
                };
                if !DOUNDO_GPU_PRECISIONS.contains(&p) {
                    return Ok(Measurement::failed(format!(
                        "no GPU do/undo in {p}: the division modes apply to f32, comp32 and f32x2"
                    )));
                }
                let run = DoUndoGpu {
                    runner: self,
                    mode,
                    x0s: &x0s,
                    ys: &ys,
                    shape,
                    timing,
                };
                visit_device_type(p, run).expect("the do/undo precisions have device types")
            }
            w => Ok(Measurement::failed(format!(
                "{w} is not a workload of the chains module"
            ))),
        }
    }
}

/// A GPU chain point in its precision's device type.
struct ChainGpu<'r, 'g, 'a> {
    runner: &'r mut GpuRunner<'g>,
    factors: &'a [f64],
    shape: (u32, u32),
    timing: TimingOptions,
}

impl DeviceTypeVisitor for ChainGpu<'_, '_, '_> {
    type Output = Result<Measurement, GpuError>;
    fn visit<T: DeviceWords>(self) -> Self::Output {
        measure_chain::<T>(self.runner, self.factors, self.shape, self.timing)
    }
}

/// A GPU do/undo point in its precision's device type.
struct DoUndoGpu<'r, 'g, 'a> {
    runner: &'r mut GpuRunner<'g>,
    mode: DivMode,
    x0s: &'a [f64],
    ys: &'a [f64],
    shape: (u32, u32),
    timing: TimingOptions,
}

impl DeviceTypeVisitor for DoUndoGpu<'_, '_, '_> {
    type Output = Result<Measurement, GpuError>;
    fn visit<T: DeviceWords>(self) -> Self::Output {
        measure_doundo::<T>(
            self.runner,
            self.mode,
            self.x0s,
            self.ys,
            self.shape,
            self.timing,
        )
    }
}

fn measure_chain<T: DeviceWords>(
    runner: &mut GpuRunner<'_>,
    factors: &[f64],
    shape: (u32, u32),
    timing: TimingOptions,
) -> Result<Measurement, GpuError> {
    let xs: Vec<T> = factors.iter().map(|&x| T::from_f64(x)).collect();
    let reference = chain_reference(&xs);
    let (values, t) = runner.chain_products(&xs, shape, timing)?;
    let threads = values.len();
    let first = values.first().copied().unwrap_or_else(T::one);
    let computed = Reference::of(&first);
    let mut extra = BTreeMap::new();
    let mults = (threads * xs.len().saturating_sub(1)) as f64;
    extra.insert("threads".into(), threads as f64);
    extra.insert("gmul_per_s".into(), giga_per_s(mults, t.median_ms));
    if threads > 1 {
        thread_errors(&values, |_| reference.clone(), &mut extra);
    }
    let note = range_note("the product", &T::precision_name(), &computed, &reference);
    Ok(ok_measurement(
        &computed,
        first.to_f64(),
        &reference,
        time_stats(&t),
        extra,
        note,
    ))
}

fn measure_doundo<T: DeviceWords>(
    runner: &mut GpuRunner<'_>,
    mode: DivMode,
    x0s: &[f64],
    ys: &[f64],
    shape: (u32, u32),
    timing: TimingOptions,
) -> Result<Measurement, GpuError> {
    let x0: Vec<T> = x0s.iter().map(|&x| T::from_f64(x)).collect();
    let y: Vec<T> = ys.iter().map(|&v| T::from_f64(v)).collect();
    let (values, t, counts) = runner.doundo_run(mode, &x0, &y, shape, timing)?;
    let threads = values.len();
    let reference = Reference::of(&x0[0]);
    let computed = Reference::of(&values[0]);
    let mut extra = division_extra(&counts);
    extra.insert("threads".into(), threads as f64);
    extra.insert(
        "gsteps_per_s".into(),
        giga_per_s((threads * y.len()) as f64, t.median_ms),
    );
    if threads > 1 {
        thread_errors(&values, |k| Reference::of(&x0[k]), &mut extra);
    }
    let note = range_note("x", &T::precision_name(), &computed, &reference);
    Ok(ok_measurement(
        &computed,
        values[0].to_f64(),
        &reference,
        time_stats(&t),
        extra,
        note,
    ))
}

#[cfg(test)]
mod tests;

/// The kernels compile for sm_90 under their flag sets, and each division mode's PTX has its
/// instruction (where NVRTC is available; skips elsewhere).
#[cfg(test)]
mod nvrtc_tests;
