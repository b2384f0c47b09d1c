//! Gaussian elimination (workload `ge`, seed 000 §7.2, Table 16, Figs 15–17) and blocked LU
//! decomposition (workload `lu`, §7.3, Tables 17–19, Figs 18–21), without pivoting as in the
//! thesis (Rodinia's `gaussian` and `lud`), on the CPU in every precision (mp at small n) and on
//! the GPU with the CUDA twin (`cuda/linalg.cu`).
//!
//! Inputs ([`system`]): every entry of A (and b) is drawn, with probability 1/2 each, from the
//! small or the large interval of an [`InputClass`] (positive values, as the thesis's intervals
//! are stated), from a seeded xoshiro256++ stream; A is the first n² draws, b the next n, so GE
//! and LU at the same (input, n, seed) share A. A precision gets A and b converted by `from_f64`
//! (the thesis converts its inputs), and every error is measured against the exact solution of
//! THAT converted system, so it is the arithmetic's error, not the input's rounding. (The
//! converted values are exactly f64 values in every precision; a unit test checks it.)
//!
//! Algorithms. [`ge_forward`]: for t = 0..n−2, m_i = a_it / a_tt stored in a_it, then
//! a_ij ← a_ij − m_i·a_tj (j > t) and b_i ← b_i − m_i·b_t; the GPU runs the same as a Fan1 kernel
//! (blocks of 512) and a Fan2 kernel (tile×tile blocks) per step. [`back_substitute`] then runs on
//! the CPU in the same precision for both backends (x_i = (b_i − Σ_{j>i} a_ij·x_j) / a_ii, the
//! subtractions in increasing j), untimed. [`lu_factor`] is the right-looking order (a_ik ← a_ik /
//! a_kk, then a_ij ← a_ij − a_ik·a_kj), L (unit lower) and U in place; the GPU runs it blocked as
//! Rodinia's lud (diagonal, perimeter, internal kernels on b×b tiles), arranged so that every
//! element gets the same operations in the same order (see `cuda/linalg.cu`). So every GPU
//! result equals the sequential CPU result bit for bit, for every tile, and so do the rayon
//! versions (which split the rows of each step): the tile and thread count change only the time.
//! GE and LU share the algorithm names `fan` and `blocked` on both backends for that reason.
//!
//! Accuracy of GE ([`GeReference`]): the exact solution of the converted system to at least
//! 2·p + 8 bits (p = the precision's significand bits, at least 220), by iterative refinement: an
//! f64 LU with partial pivoting solves for corrections, the residual b − A·x is computed exactly
//! ([`ExactDot`] over A's f64 entries and every f64 part of x) and rounded once, and x is kept as
//! the unevaluated sum of all corrections, so nothing limits the bits but the iteration count.
//! `error.abs` is the mean over i of |x_i − x*_i| (computed exactly), `error.rel` that mean over the
//! mean |x*_i|, `error.digits` = −log10(rel); `value`/`reference` are x_0 and x*_0.
//!
//! Accuracy of LU: `extra.mismatches` / `extra.mismatch_pct` count entries with
//! |(L·U)_ij − A_ij| > 1e-4 (Table 17), the residual computed in f64x2 arithmetic from the exact
//! factors ([`lu_residual_model`]; about 2^-104·Σ|L||U| from the exact one, far below the
//! threshold unless the factors are astronomically large); a NaN or infinite residual counts as a
//! mismatch. `error.abs` is the mean over all n² entries of |F_ij − F*_ij| against a reference
//! factorization F* of the same converted A: f64x2 (the same right-looking LU, 106 bits) for the
//! precisions of at most 53 bits, mp512 for f64x2, comp64(n) and mp up to n = [`MP_REFERENCE_MAX`];
//! beyond that the f64-pair precisions are compared with f64x2 and the note says so (f64x2 itself
//! then gets no error: it would be compared with itself). `error.rel` = Σ|F − F*| / Σ|F*|.
//!
//! Both: a pivot |u_tt| < n·2^-p·max|a| is reported in the note ("near-singular: pivot … at step
//! …"), NaN/inf results are counted in the note and leave `error` empty. `extra.gflops` counts
//! 2/3·n³ operations. Times: the CPU times the elimination (GE: forward elimination only) including
//! the copy of the input; the GPU times, with CUDA events, every launch of the forward
//! elimination (GE) or of the factorization (LU) plus the device-to-device copy that restores the
//! input before each run.
//!
//! Out of resources (Table 19's rows): every LU kernel runs b×b threads with 2·b²·sizeof(T) bytes
//! of static shared memory, so b = 64 (4096 threads) is out of resources in every precision (the
//! thesis's f32 ran at 64×64 with Rodinia's kernels, which give a thread a row or column of the
//! tile; ours give every element its own thread, which the internal kernel's speed relies on); for
//! smaller tiles the compiled kernels' thread limits (which registers lower) are checked before
//! launching ([`lu_needs`], [`out_of_resources`]). Registers are not a limit today: ptxas
//! (NVRTC 13.0, sm_90) gives every kernel at most 40 registers, so 1024 threads fit.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use mantissa_gpu::{
    twin, DType, DeviceBuffer, FlagSet, Gpu, GpuError, HostData, KernelArg, LaunchDims, Module,
    Scalar, Source, Timing, TimingOptions,
};
use mantissa_gpu::{
    values_of, visit_device_type, words_of, DeviceType, DeviceTypeVisitor, DeviceWords, Word,
};
use mantissa_num::big::{self, Big};
use mantissa_num::precision::{Precision, PrecisionVisitor};
use mantissa_num::{f64x2, ExactDot, ExactSum};
use mantissa_num::{Mp, Real};
use mantissa_report::{Backend, ErrorMetrics, Status};
use rayon::prelude::*;
use rayon::ThreadPool;

use crate::cost::{
    all_cores, generation, significand_bits, value_bytes, Cost, Pace, Work, F64, F64X2,
};
use crate::inputs::InputClass;
use crate::measurement::{time_stats, Measurement};
use crate::stop::Stop;
use crate::study::{CpuTiming, Data, Point, StudyConfig, StudyPrecision, Suite};
use crate::workload::{CpuMeasure, GpuMeasure, Workload};

/// The kernels (templates over the precision), compiled after the twin header.
const LINALG_CU: &str = include_str!("../cuda/linalg.cu");

/// The flag set of every linalg kernel (the twin's arithmetic does not depend on it).
pub const FLAGS: FlagSet = FlagSet::DEFAULT;
/// Fan2 tiles (Table 16 used 4×4 and 8×8).
pub const GE_TILES: [u32; 4] = [4, 8, 16, 32];
/// LU tiles of Table 19 (64 is out of resources, see the module doc).
pub const LU_TILES: [u32; 5] = [4, 8, 16, 32, 64];
/// The LU tiles with compiled kernels.
const LU_KERNEL_TILES: [u32; 4] = [4, 8, 16, 32];
/// Fan1's block (Table 16).
pub const FAN1_BLOCK: u32 = 512;
/// Table 17's mismatch tolerance.
pub const MISMATCH_TOLERANCE: f64 = 1e-4;
/// Largest n with an mp512 LU reference (n³/3 mp operations).
pub const MP_REFERENCE_MAX: usize = 128;
/// Static shared memory a block may declare.
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;
/// Largest mp size in the quick and full CPU plans.
const QUICK_MP_MAX: u64 = 64;
const FULL_MP_MAX: u64 = 128;
/// Refinement steps before the reference gives up.
const MAX_REFINEMENTS: usize = 100;

// ---- Inputs ------------------------------------------------------------------------------------

/// A linear system of order n: A row-major and b, as f64.
#[derive(Debug, Clone, PartialEq)]
pub struct System {
    /// The order.
    pub n: usize,
    /// A, n × n, row-major.
    pub a: Vec<f64>,
    /// b, n values.
    pub b: Vec<f64>,
}

/// The system of (class, n, seed): A from the first n² values, b from the next n.
pub fn system(class: &InputClass, n: usize, seed: u64) -> System {
    let mut a = class.mixed(n * n + n, seed);
    let b = a.split_off(n * n);
    System { n, a, b }
}

fn convert<T: Real>(xs: &[f64]) -> Vec<T> {
    xs.iter().map(|&x| T::from_f64(x)).collect()
}

// ---- The plan ----------------------------------------------------------------------------------

fn is_mp(p: StudyPrecision) -> bool {
    matches!(p, StudyPrecision::Real(Precision::Mp(_)))
}

fn thesis_four(p: StudyPrecision) -> bool {
    matches!(
        p,
        StudyPrecision::Real(Precision::F32 | Precision::F64 | Precision::F32x2 | Precision::F64x2)
    )
}

/// The module's two workloads ([`GE`], [`LU`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solver {
    /// Gaussian elimination, Fan1/Fan2 style (seed 000 §7.2).
    Ge,
    /// Blocked LU decomposition: diagonal, perimeter, internal (seed 000 §7.3).
    Lu,
}

fn default_classes(w: Solver) -> Vec<InputClass> {
    match w {
        // Seed 000 §7.2: GE on (1e-2, 1e-1) & (1e1, 1e2).
        Solver::Ge => vec![InputClass::range(1)],
        // Table 17's intervals.
        _ => {
            let mut v = vec![InputClass::gmp_range(1)];
            v.extend((1..=4).map(InputClass::range));
            v
        }
    }
}

fn names(w: Solver) -> (&'static str, &'static str) {
    match w {
        Solver::Ge => ("ge", "fan"),
        _ => ("lu", "blocked"),
    }
}

/// The CPU points of workload `w` in `cfg`.
///
/// Quick (both workloads: 100 points, 6–7 s on a busy 2-core machine with the test profile): GE on n = 16 and 64 in every precision (mp included)
/// sequentially, n = 256 in f32, f64, f32x2, f64x2 with every thread count; LU on n = 64 for every
/// class and precision sequentially, n = 256 on the first class in the four thesis precisions
/// with every thread count. Full: n up to 2048 (Table 18's 64…2048), mp up to 128, every class
/// up to 512 and the first class above. User sizes run everything (mp only up to the suite's
/// mp limit).
pub fn cpu_points(cfg: &StudyConfig, w: Solver) -> Vec<Point> {
    let (workload, algorithm) = names(w);
    let quick = cfg.suite == Suite::Quick;
    let mp_max = if quick { QUICK_MP_MAX } else { FULL_MP_MAX };
    let classes = cfg.classes.clone().unwrap_or_else(|| default_classes(w));
    let threads: Vec<u32> = cfg.threads.iter().map(|&t| t.max(1) as u32).collect();
    let mut seen_threads = Vec::new();
    for t in std::iter::once(1).chain(threads) {
        if !seen_threads.contains(&t) {
            seen_threads.push(t);
        }
    }
    // (size, classes used, all threads?, only the thesis's four precisions?)
    let mut sets: Vec<(u64, Vec<InputClass>, bool, bool)> = Vec::new();
    match &cfg.sizes {
        Some(sizes) => {
            for &s in sizes {
                sets.push((s, classes.clone(), true, false));
            }
        }
        None => {
            let first: Vec<InputClass> = classes.iter().take(1).cloned().collect();
            match (w, quick) {
                (Solver::Ge, true) => {
                    sets.push((16, classes.clone(), false, false));
                    sets.push((64, classes.clone(), false, false));
                    sets.push((256, classes.clone(), true, true));
                }
                (Solver::Ge, false) => {
                    for s in [16, 64, 256, 512, 1024, 2048] {
                        sets.push((s, classes.clone(), true, false));
                    }
                }
                (_, true) => {
                    sets.push((64, classes.clone(), false, false));
                    sets.push((256, first, true, true));
                }
                (_, false) => {
                    for s in [64, 256, 512] {
                        sets.push((s, classes.clone(), true, false));
                    }
                    for s in [1024, 2048] {
                        sets.push((s, first.clone(), true, false));
                    }
                }
            }
        }
    }
    let mut points = Vec::new();
    for (size, classes, all_threads, four) in sets {
        for class in &classes {
            for &p in &cfg.precisions {
                if p == StudyPrecision::Exact
                    || (is_mp(p) && size > mp_max)
                    || (four && !thesis_four(p))
                {
                    continue;
                }
                for &t in &seen_threads {
                    if t > 1 && !all_threads {
                        continue;
                    }
                    points.push(Point {
                        workload,
                        algorithm,
                        data: Data::Intervals(class.clone()),
                        size,
                        seed: cfg.seed,
                        precision: p,
                        backend: Backend::Cpu { threads: t },
                        flags: None,
                    });
                }
            }
        }
    }
    points
}

/// The GPU points of workload `w` in `cfg` (the grids follow from n and the tile).
///
/// Quick: GE n = 64, 256, 1024, 2048 with tiles 4…32 (4 up to n = 1024); LU at Table 17's
/// n = 64, 256, 512, 2048 with tiles 4…64 (64 records "out of resources"; 4 up to 512, at 2048
/// only 16, 32, 64). Full: n = 16…8192, tile 4 up to 2048. LU tiles must divide n. User sizes
/// get every tile that fits.
pub fn gpu_points(cfg: &StudyConfig, w: Solver) -> Vec<Point> {
    let (workload, algorithm) = names(w);
    let quick = cfg.suite == Suite::Quick;
    let classes = cfg.classes.clone().unwrap_or_else(|| default_classes(w));
    let user_sizes = cfg.sizes.is_some();
    let sizes = cfg.sizes.clone().unwrap_or_else(|| match (w, quick) {
        (Solver::Ge, true) => vec![64, 256, 1024, 2048],
        (_, true) => vec![64, 256, 512, 2048],
        _ => vec![16, 64, 256, 512, 1024, 2048, 4096, 8192],
    });
    let tile4_max = match (w, quick) {
        (_, false) => 2048,
        (Solver::Ge, true) => 1024,
        _ => 512,
    };
    let tiles: &[u32] = if w == Solver::Ge {
        &GE_TILES
    } else {
        &LU_TILES
    };
    let mut points = Vec::new();
    for class in &classes {
        for &size in &sizes {
            for &p in &cfg.precisions {
                let StudyPrecision::Real(q) = p else { continue };
                if !Precision::NATIVE.contains(&q) {
                    continue;
                }
                for &tile in tiles {
                    let t = u64::from(tile);
                    let fits = if w == Solver::Ge {
                        t <= size
                    } else {
                        size % t == 0
                    };
                    // Quick LU at 2048 keeps the fast tiles (and 64's record): the accuracy is the
                    // same for every tile, the 4×4 and 8×8 times add a minute.
                    let slow = (tile == 4 && size > tile4_max)
                        || (quick && w == Solver::Lu && size >= 2048 && tile < 16);
                    if !fits || (slow && !user_sizes) {
                        continue;
                    }
                    points.push(Point {
                        workload,
                        algorithm,
                        data: Data::Intervals(class.clone()),
                        size,
                        seed: cfg.seed,
                        precision: p,
                        backend: Backend::GpuTiles { tile },
                        flags: Some(FLAGS),
                    });
                }
            }
        }
    }
    points
}

// ---- The workloads ----------------------------------------------------------------------------

/// The Gaussian-elimination workload.
pub static GE: Solver = Solver::Ge;
/// The LU workload.
pub static LU: Solver = Solver::Lu;

impl Workload for Solver {
    fn name(&self) -> &'static str {
        names(*self).0
    }
    fn description(&self) -> &'static str {
        match self {
            Solver::Ge => "Gaussian elimination without pivoting, Fan1/Fan2 style (seed 000 §7.2)",
            Solver::Lu => {
                "blocked LU decomposition without pivoting: diagonal, perimeter, internal \
                 (seed 000 §7.3)"
            }
        }
    }
    fn record_names(&self) -> &'static [&'static str] {
        match self {
            Solver::Ge => &["ge"],
            Solver::Lu => &["lu"],
        }
    }
    fn size_limit(&self) -> (u64, &'static str) {
        // f64x2 at 16384: 4 GiB per matrix copy.
        (16_384, "matrix order")
    }
    fn cpu_points(&self, cfg: &StudyConfig) -> Vec<Point> {
        cpu_points(cfg, *self)
    }
    fn gpu_points(&self, cfg: &StudyConfig, _full: (u32, u32)) -> Vec<Point> {
        gpu_points(cfg, *self)
    }
    fn runner_group(&self) -> &'static str {
        // GE and LU share compiled modules and the generated system on the GPU.
        "linalg"
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
            Solver::Ge => &[GFLOPS],
            Solver::Lu => LU_QUANTITIES,
        }
    }
}

const GFLOPS: (&str, &str) = (
    "gflops",
    "10^9 operations per second, counting 2/3·n³ operations",
);
const LU_QUANTITIES: &[(&str, &str)] = &[
    GFLOPS,
    (
        "mismatches",
        "entries with |(L·U)_ij − A_ij| > 1e-4 (Table 17's tolerance), NaN or infinite ones included",
    ),
    (
        "mismatch_pct",
        "mismatches as a percentage of the n² entries (tolerance 1e-4)",
    ),
];

mod algorithms;
mod cpu;
mod gpu;
mod reference;
mod score;

pub use algorithms::*;
pub use cpu::*;
pub use gpu::*;
pub use reference::*;
pub use score::*;

#[cfg(test)]
mod tests;
