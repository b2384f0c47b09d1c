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

// ---- CPU algorithms (generic over the precision) -----------------------------------------------

/// Runs `f` on every row chunk of `rest` (rows of length n), in parallel on `pool` if given;
/// rows after a stop request are left alone (a row is at most n operations: an mp256 row of
/// order 16,384 is about 15 ms).
fn for_rows<T: Real>(
    rest: &mut [T],
    extra: Option<&mut [T]>,
    n: usize,
    pool: Option<&ThreadPool>,
    stop: Stop,
    f: &(dyn Fn(&mut [T], Option<&mut T>) + Sync),
) {
    let f = &|row: &mut [T], bi: Option<&mut T>| {
        if !stop.requested() {
            f(row, bi)
        }
    };
    match (pool, extra) {
        (Some(pool), Some(b)) => pool.install(|| {
            rest.par_chunks_mut(n)
                .zip(b.par_iter_mut())
                .for_each(|(row, bi)| f(row, Some(bi)))
        }),
        (Some(pool), None) => pool.install(|| rest.par_chunks_mut(n).for_each(|row| f(row, None))),
        (None, Some(b)) => rest
            .chunks_mut(n)
            .zip(b.iter_mut())
            .for_each(|(row, bi)| f(row, Some(bi))),
        (None, None) => rest.chunks_mut(n).for_each(|row| f(row, None)),
    }
}

/// Forward elimination without pivoting (the GPU's Fan1/Fan2 order): for t = 0..n−2,
/// m_i = a_it / a_tt stored in a_it, a_ij ← a_ij − m_i·a_tj for j > t, b_i ← b_i − m_i·b_t.
/// With a pool, the rows of each step are updated in parallel (same operations, same bits).
pub fn ge_forward<T: Real>(a: &mut [T], b: &mut [T], n: usize, pool: Option<&ThreadPool>) {
    ge_forward_until(a, b, n, pool, Stop::NEVER)
}

/// [`ge_forward`], checking `stop` every row (and leaving the system half-eliminated when it is
/// set: the point is dropped).
pub fn ge_forward_until<T: Real>(
    a: &mut [T],
    b: &mut [T],
    n: usize,
    pool: Option<&ThreadPool>,
    stop: Stop,
) {
    for t in 0..n.saturating_sub(1) {
        if stop.requested() {
            return;
        }
        let (top, rest) = a.split_at_mut((t + 1) * n);
        let pivot_row = &top[t * n..];
        let (b_top, b_rest) = b.split_at_mut(t + 1);
        let bt = &b_top[t];
        let update = |row: &mut [T], bi: Option<&mut T>| {
            let m = row[t].clone() / pivot_row[t].clone();
            for j in t + 1..n {
                row[j] = row[j].clone() - m.clone() * pivot_row[j].clone();
            }
            if let Some(bi) = bi {
                *bi = bi.clone() - m.clone() * bt.clone();
            }
            row[t] = m;
        };
        for_rows(rest, Some(b_rest), n, pool, stop, &update);
    }
}

/// Back substitution on the upper triangle of `a`: x_i = (b_i − Σ_{j>i} a_ij·x_j) / a_ii, the
/// subtractions in increasing j.
pub fn back_substitute<T: Real>(a: &[T], b: &[T], n: usize) -> Vec<T> {
    let mut x: Vec<T> = vec![T::zero(); n];
    for i in (0..n).rev() {
        let mut s = b[i].clone();
        for j in i + 1..n {
            s = s - a[i * n + j].clone() * x[j].clone();
        }
        x[i] = s / a[i * n + i].clone();
    }
    x
}

/// Right-looking LU without pivoting, in place (unit L below the diagonal, U on and above): for
/// k = 0..n−1, a_ik ← a_ik / a_kk, then a_ij ← a_ij − a_ik·a_kj for i, j > k. The GPU's blocked
/// kernels apply exactly these operations to each element in the same order.
pub fn lu_factor<T: Real>(a: &mut [T], n: usize, pool: Option<&ThreadPool>) {
    lu_factor_until(a, n, pool, Stop::NEVER)
}

/// [`lu_factor`], checking `stop` every row (and leaving the factors incomplete when it is set:
/// the point is dropped).
pub fn lu_factor_until<T: Real>(a: &mut [T], n: usize, pool: Option<&ThreadPool>, stop: Stop) {
    for k in 0..n.saturating_sub(1) {
        if stop.requested() {
            return;
        }
        let (top, rest) = a.split_at_mut((k + 1) * n);
        let pivot_row = &top[k * n..];
        let update = |row: &mut [T], _: Option<&mut T>| {
            let l = row[k].clone() / pivot_row[k].clone();
            for j in k + 1..n {
                row[j] = row[j].clone() - l.clone() * pivot_row[j].clone();
            }
            row[k] = l;
        };
        for_rows(rest, None, n, pool, stop, &update);
    }
}

/// The residual A − L·U of packed factors `f` (exact f64x2 values) against `a`, in f64x2
/// arithmetic, as the GPU kernel `lu_residual_f64x2` computes it: products for k < min(i, j) in
/// increasing k, then U_ij (i ≤ j) or L_ij·U_jj (i > j); the high word of each entry.
pub fn lu_residual_model(f: &[f64x2], a: &[f64x2], n: usize) -> Vec<f64> {
    lu_residual_model_until(f, a, n, Stop::NEVER)
}

/// [`lu_residual_model`], checking `stop` every row (rows after it are NaN: the point is
/// dropped).
pub fn lu_residual_model_until(f: &[f64x2], a: &[f64x2], n: usize, stop: Stop) -> Vec<f64> {
    let row = |i: usize| -> Vec<f64> {
        if stop.requested() {
            return vec![f64::NAN; n];
        }
        (0..n)
            .map(|j| {
                let mut acc = a[i * n + j];
                for k in 0..i.min(j) {
                    acc -= f[i * n + k] * f[k * n + j];
                }
                acc = if i <= j {
                    acc - f[i * n + j]
                } else {
                    acc - f[i * n + j] * f[j * n + j]
                };
                acc.hi
            })
            .collect()
    };
    let rows: Vec<Vec<f64>> = if n >= 128 {
        (0..n).into_par_iter().map(row).collect()
    } else {
        (0..n).map(row).collect()
    };
    rows.concat()
}

// ---- References --------------------------------------------------------------------------------

/// An f64 LU with partial pivoting (the reference's correction solver).
struct PivotedLu {
    n: usize,
    lu: Vec<f64>,
    perm: Vec<usize>,
}

impl PivotedLu {
    fn new(a: &[f64], n: usize, stop: Stop) -> PivotedLu {
        let mut lu = a.to_vec();
        let mut perm: Vec<usize> = (0..n).collect();
        for k in 0..n {
            if stop.requested() {
                break;
            }
            let p = (k..n)
                .max_by(|&x, &y| lu[x * n + k].abs().total_cmp(&lu[y * n + k].abs()))
                .unwrap_or(k);
            if p != k {
                for j in 0..n {
                    lu.swap(p * n + j, k * n + j);
                }
                perm.swap(p, k);
            }
            let (top, rest) = lu.split_at_mut((k + 1) * n);
            let prow = &top[k * n..];
            let update = |row: &mut [f64]| {
                let l = row[k] / prow[k];
                row[k] = l;
                if l != 0.0 {
                    for j in k + 1..n {
                        row[j] -= l * prow[j];
                    }
                }
            };
            if n >= 256 {
                rest.par_chunks_mut(n).for_each(update);
            } else {
                rest.chunks_mut(n).for_each(update);
            }
        }
        PivotedLu { n, lu, perm }
    }

    fn solve(&self, r: &[f64]) -> Vec<f64> {
        let n = self.n;
        let mut y: Vec<f64> = self.perm.iter().map(|&p| r[p]).collect();
        for i in 0..n {
            for j in 0..i {
                y[i] -= self.lu[i * n + j] * y[j];
            }
        }
        for i in (0..n).rev() {
            for j in i + 1..n {
                y[i] -= self.lu[i * n + j] * y[j];
            }
            y[i] /= self.lu[i * n + i];
        }
        y
    }
}

/// The exact solution of A·x = b (f64 data) to a requested number of bits.
#[derive(Debug, Clone)]
pub struct GeReference {
    /// x*, exactly the sum of the refinement's parts; `None` entries where it failed.
    pub x: Vec<Option<Big>>,
    /// The last correction was below 2^-bits of x.
    pub converged: bool,
    /// Refinement steps taken.
    pub iterations: usize,
}

/// Iterative refinement to `bits` bits (see the module doc).
pub fn ge_reference(a: &[f64], b: &[f64], n: usize, bits: u32) -> GeReference {
    ge_reference_until(a, b, n, bits, Stop::NEVER)
}

/// [`ge_reference`], checking `stop` every elimination step and refinement (a stopped reference
/// is meaningless: the point is dropped, and the reference cache does not keep it).
pub fn ge_reference_until(a: &[f64], b: &[f64], n: usize, bits: u32, stop: Stop) -> GeReference {
    let lu = PivotedLu::new(a, n, stop);
    let first = lu.solve(b);
    let scale = first.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let mut parts = vec![first];
    let mut converged = false;
    let mut iterations = 0;
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    if finite(&parts[0]) {
        let tolerance = scale * 2f64.powi(-(bits as i32));
        while iterations < MAX_REFINEMENTS && !stop.requested() {
            iterations += 1;
            let residual_row = |i: usize| {
                let mut acc = ExactDot::new();
                acc.add_product(b[i], 1.0);
                for p in &parts {
                    for j in 0..n {
                        acc.add_product(-a[i * n + j], p[j]);
                    }
                }
                acc.round()
            };
            let r: Vec<f64> = if n >= 128 {
                (0..n).into_par_iter().map(residual_row).collect()
            } else {
                (0..n).map(residual_row).collect()
            };
            if r.iter().all(|&x| x == 0.0) {
                converged = true;
                break;
            }
            let d = lu.solve(&r);
            if !finite(&d) {
                break;
            }
            let size = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            parts.push(d);
            if size <= tolerance {
                converged = true;
                break;
            }
        }
    }
    let x = (0..n)
        .map(|i| {
            let mut s = ExactSum::new();
            for p in &parts {
                s.add(p[i]);
            }
            s.to_big()
        })
        .collect();
    GeReference {
        x,
        converged,
        iterations,
    }
}

/// Bits a reference needs for precision T: twice its significand, and at least 220.
fn reference_bits<T: Real>() -> u32 {
    (2 * T::significand_bits() + 8).max(220)
}

/// A reference LU factorization (packed like the tested one).
#[derive(Debug, Clone)]
pub enum LuReference {
    /// f64x2 (106 bits).
    Pairs(Vec<f64x2>),
    /// mp512 values, exact as stored.
    Exact(Vec<Option<Big>>),
}

/// A pool of all cores for references of large systems (`None`: sequential, also when the pool
/// cannot start; the result is the same either way).
fn reference_pool(n: usize) -> Option<ThreadPool> {
    (n >= 256)
        .then(|| rayon::ThreadPoolBuilder::new().build().ok())
        .flatten()
}

/// The mp512 right-looking factorization of `a` (f64 data).
fn lu_reference_mp(a: &[f64], n: usize, stop: Stop) -> LuReference {
    let mut m: Vec<Mp<512>> = convert(a);
    lu_factor_until(&mut m, n, reference_pool(n).as_ref(), stop);
    LuReference::Exact(m.iter().map(|x| x.to_big()).collect())
}

/// The f64x2 right-looking factorization of `a` on the CPU.
fn lu_reference_pairs(a: &[f64], n: usize, stop: Stop) -> LuReference {
    let mut m: Vec<f64x2> = convert(a);
    lu_factor_until(&mut m, n, reference_pool(n).as_ref(), stop);
    LuReference::Pairs(m)
}

/// A small cache of references keyed by their input (the same reference serves every tile and
/// thread count, and every precision whose converted input is the same).
struct RefCache<V> {
    entries: Vec<(u64, Arc<V>)>,
}

impl<V> RefCache<V> {
    const KEEP: usize = 6;
    const fn new() -> Self {
        RefCache {
            entries: Vec::new(),
        }
    }
    fn get_or(&mut self, key: u64, stop: Stop, make: impl FnOnce() -> V) -> Arc<V> {
        if let Some((_, v)) = self.entries.iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        let v = Arc::new(make());
        if stop.requested() {
            // Made in part: good for nothing, least of all for the next run's points.
            return v;
        }
        if self.entries.len() >= Self::KEEP {
            self.entries.remove(0);
        }
        self.entries.push((key, v.clone()));
        v
    }
}

/// FNV-1a over 64-bit words (a cache key; inputs of 4M values are hashed per point, so it must
/// cost about a nanosecond a value).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// A key for f64 data and a label.
fn data_key(label: &str, parts: &[&[f64]]) -> u64 {
    let mut h = Fnv::new();
    for b in label.bytes() {
        h.word(u64::from(b));
    }
    for p in parts {
        h.word(p.len() as u64);
        for x in *p {
            h.word(x.to_bits());
        }
    }
    h.0
}

static CPU_GE_REFS: Mutex<RefCache<GeReference>> = Mutex::new(RefCache::new());
static CPU_LU_REFS: Mutex<RefCache<LuReference>> = Mutex::new(RefCache::new());

fn cached<V>(cache: &Mutex<RefCache<V>>, key: u64, stop: Stop, make: impl FnOnce() -> V) -> Arc<V> {
    // A poisoned cache only means another point panicked while filling it; the entries are whole.
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or(key, stop, make)
}

// ---- Scoring -----------------------------------------------------------------------------------

/// The note for the smallest pivot if it is below n·2^-p·max|a|.
pub fn near_singular_note(pivots: &[f64], n: usize, bits: u32, max_abs: f64) -> Option<String> {
    let threshold = n as f64 * 2f64.powi(-(bits as i32)) * max_abs;
    let (step, pivot) = pivots
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_finite())
        .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    (pivot.abs() < threshold).then(|| {
        format!(
            "near-singular: pivot {:.1e} at step {step} (below n·u·max|a| = {threshold:.1e})",
            pivot
        )
    })
}

fn join_notes(notes: Vec<String>) -> Option<String> {
    (!notes.is_empty()).then(|| notes.join("; "))
}

fn max_abs(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// Scores a GE solution `x` (with the eliminated matrix `u` for its pivots) against `reference`;
/// `a_max` is max|a| of the converted system.
pub fn score_ge<T: Real>(
    x: &[T],
    u: &[T],
    n: usize,
    a_max: f64,
    reference: &GeReference,
) -> Measurement {
    let mut m = measured();
    let mut notes = Vec::new();
    let pivots: Vec<f64> = (0..n).map(|t| u[t * n + t].to_f64()).collect();
    notes.extend(near_singular_note(&pivots, n, T::significand_bits(), a_max));
    m.value = x.first().map(|v| v.to_f64());
    m.reference = reference
        .x
        .first()
        .and_then(|r| r.as_ref())
        .map(big::to_f64);
    let bad = x.iter().filter(|v| !v.is_finite()).count();
    if bad > 0 {
        notes.push(format!("{bad} of {n} solution entries are NaN or infinite"));
    } else if !reference.converged || reference.x.iter().any(|r| r.is_none()) {
        notes.push(format!(
            "reference did not converge in {} refinement steps (A numerically singular in f64?)",
            reference.iterations
        ));
    } else if n > 0 {
        let mut sum_err = 0.0;
        let mut sum_ref = 0.0;
        for (xi, ri) in x.iter().zip(&reference.x) {
            let (Some(xb), Some(rb)) = (xi.to_big(), ri.as_ref()) else {
                continue;
            };
            sum_err += big::to_f64(&(xb - rb.clone())).abs();
            sum_ref += big::to_f64(rb).abs();
        }
        m.error = Some(mean_errors(sum_err, sum_ref, n as f64));
    }
    m.note = join_notes(notes);
    m
}

/// An `Ok` measurement with nothing filled in yet.
fn measured() -> Measurement {
    Measurement {
        status: Status::Ok,
        value: None,
        reference: None,
        error: None,
        time: None,
        extra: BTreeMap::new(),
        note: None,
        build: None,
    }
}

fn mean_errors(sum_err: f64, sum_ref: f64, count: f64) -> ErrorMetrics {
    let rel = (sum_ref > 0.0).then(|| sum_err / sum_ref);
    ErrorMetrics {
        abs: sum_err / count,
        rel,
        ulps: None,
        digits: rel.map(|r| {
            if r > 0.0 {
                (-r.log10()).min(99.0)
            } else {
                99.0
            }
        }),
    }
}

/// Counts residual entries above the tolerance (NaN and infinities included).
pub fn count_mismatches(residual: &[f64]) -> usize {
    residual
        .iter()
        .filter(|r| r.is_nan() || r.abs() > MISMATCH_TOLERANCE)
        .count()
}

/// The exact f64x2 of a value (nearest for mp: only the residual uses it).
fn pair_of<T: Real>(x: &T) -> f64x2 {
    match x.to_big() {
        Some(b) => {
            let hi = big::to_f64(&b);
            if !hi.is_finite() {
                return f64x2::from_parts(hi, 0.0);
            }
            f64x2::from_parts(hi, big::to_f64(&(b - big::exact(hi))))
        }
        None => f64x2::from_parts(x.to_f64(), 0.0),
    }
}

/// What the LU scoring needs from the tested factors.
pub struct LuFactors<'a> {
    /// The order.
    pub n: usize,
    /// The factors as f64x2 (exact, or nearest for mp).
    pub pairs: &'a [f64x2],
    /// The exact value of entry k (`None` for NaN/inf).
    pub exact: &'a dyn Fn(usize) -> Option<Big>,
    /// Significand bits of the tested precision.
    pub bits: u32,
}

/// Scores LU factors: mismatches from `residual`, mean error against `reference` (if any), the
/// near-singular note; `note` is added (the reference's caveat).
pub fn score_lu(
    f: &LuFactors,
    residual: &[f64],
    a_max: f64,
    reference: Option<&LuReference>,
    note: Option<String>,
) -> Measurement {
    let n = f.n;
    let mut m = measured();
    let mut notes = Vec::new();
    let pivots: Vec<f64> = (0..n).map(|t| f.pairs[t * n + t].hi).collect();
    notes.extend(near_singular_note(&pivots, n, f.bits, a_max));
    let mismatches = count_mismatches(residual);
    m.extra.insert("mismatches".into(), mismatches as f64);
    m.extra.insert(
        "mismatch_pct".into(),
        100.0 * mismatches as f64 / (n * n).max(1) as f64,
    );
    let last = (n * n).checked_sub(1);
    m.value = last.map(|k| f.pairs[k].to_f64());
    let bad = f.pairs.iter().filter(|p| !p.is_finite()).count();
    if bad > 0 {
        notes.push(format!(
            "{bad} of {} factor entries are NaN or infinite",
            n * n
        ));
    } else if let Some(reference) = reference {
        let (mut sum_err, mut sum_ref) = (0.0, 0.0);
        match reference {
            LuReference::Pairs(r) => {
                m.reference = last.map(|k| r[k].to_f64());
                for (x, y) in f.pairs.iter().zip(r) {
                    sum_err += (*x - *y).to_f64().abs();
                    sum_ref += y.to_f64().abs();
                }
            }
            LuReference::Exact(r) => {
                m.reference = last.and_then(|k| r[k].as_ref()).map(big::to_f64);
                for (k, y) in r.iter().enumerate() {
                    if let (Some(x), Some(y)) = ((f.exact)(k), y) {
                        sum_err += big::to_f64(&(x - y.clone())).abs();
                        sum_ref += big::to_f64(y).abs();
                    }
                }
            }
        }
        if n > 0 {
            m.error = Some(mean_errors(sum_err, sum_ref, (n * n) as f64));
        }
    }
    notes.extend(note);
    m.note = join_notes(notes);
    m
}

/// Which LU reference precision T gets at order n, and the caveat for the note.
enum LuRefKind {
    /// f64x2, enough bits.
    Pairs,
    /// mp512.
    Mp,
    /// f64x2, fewer than twice the tested bits.
    PairsShort,
    /// None: the tested precision is f64x2 itself.
    Nothing,
}

fn lu_ref_kind<T: Real>(n: usize) -> LuRefKind {
    if T::significand_bits() <= 53 {
        LuRefKind::Pairs
    } else if n <= MP_REFERENCE_MAX {
        LuRefKind::Mp
    } else if T::precision_name() == "f64x2" {
        LuRefKind::Nothing
    } else {
        LuRefKind::PairsShort
    }
}

/// The computed factors as f64x2 (`to_pair`: exact for every pair type), in parallel for large
/// matrices.
fn factor_pairs<T: Sync>(f: &[T], n: usize, to_pair: fn(&T) -> f64x2) -> Vec<f64x2> {
    if n >= 256 {
        f.par_iter().map(to_pair).collect()
    } else {
        f.iter().map(to_pair).collect()
    }
}

/// Scores computed LU factors `f` (and their `pairs`) against `reference` and the residual,
/// with the note of the reference `kind`: the same for CPU and GPU points.
fn score_factors<T: Real>(
    f: &[T],
    pairs: &[f64x2],
    n: usize,
    kind: &LuRefKind,
    residual: &[f64],
    a_max: f64,
    reference: Option<std::sync::Arc<LuReference>>,
) -> Measurement {
    let exact = |k: usize| f[k].to_big();
    let factors = LuFactors {
        n,
        pairs,
        exact: &exact,
        bits: T::significand_bits(),
    };
    let note = lu_ref_note(kind, T::significand_bits());
    score_lu(&factors, residual, a_max, reference.as_deref(), note)
}

fn lu_ref_note(kind: &LuRefKind, bits: u32) -> Option<String> {
    match kind {
        LuRefKind::PairsShort => Some(format!(
            "error.abs against an f64x2 reference (106 bits), not twice the tested {bits} bits (mp512 only up to n = {MP_REFERENCE_MAX})"
        )),
        LuRefKind::Nothing => Some(format!(
            "no error.abs: the only reference above n = {MP_REFERENCE_MAX} is f64x2 itself"
        )),
        LuRefKind::Mp if bits > 256 => Some(format!(
            "error.abs against mp512, fewer than twice the tested {bits} bits"
        )),
        LuRefKind::Mp | LuRefKind::Pairs => None,
    }
}

fn gflops(n: usize, ms: f64) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n / (ms * 1e6)
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

// ---- CPU runs ----------------------------------------------------------------------------------

/// Measures one CPU point (`pool` is set when the point's backend has more than one thread).
pub fn measure_cpu(point: &Point, pool: Option<&ThreadPool>, timing: CpuTiming) -> Measurement {
    let (StudyPrecision::Real(p), Data::Intervals(class)) = (point.precision, &point.data) else {
        unreachable!("the linalg plan has real precisions and interval data only")
    };
    p.visit(CpuRun {
        point,
        class,
        pool,
        timing,
    })
}

struct CpuRun<'a> {
    point: &'a Point,
    class: &'a InputClass,
    pool: Option<&'a ThreadPool>,
    timing: CpuTiming<'a>,
}

impl PrecisionVisitor for CpuRun<'_> {
    type Output = Measurement;
    fn visit<T: Real>(self) -> Measurement {
        let n = self.point.size as usize;
        let sys = system(self.class, n, self.point.seed);
        let a: Vec<T> = convert(&sys.a);
        // The converted system as f64 (exact: see the module doc).
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let a_max = max_abs(&a64);
        let (pool, stop) = (self.pool, self.timing.stop);
        let (mut m, time) = if self.point.workload == "ge" {
            let b: Vec<T> = convert(&sys.b);
            let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
            let ((ua, ub), time) = self.timing.measure(|| {
                let (mut a, mut b) = (a.clone(), b.clone());
                ge_forward_until(&mut a, &mut b, n, pool, stop);
                (a, b)
            });
            let x = back_substitute(&ua, &ub, n);
            let bits = reference_bits::<T>();
            let key = data_key(&format!("ge{bits}"), &[&a64, &b64]);
            let reference = cached(&CPU_GE_REFS, key, stop, || {
                ge_reference_until(&a64, &b64, n, bits, stop)
            });
            (score_ge(&x, &ua, n, a_max, &reference), time)
        } else {
            let (f, time) = self.timing.measure(|| {
                let mut a = a.clone();
                lu_factor_until(&mut a, n, pool, stop);
                a
            });
            let pairs = factor_pairs(&f, n, pair_of);
            let a_pairs: Vec<f64x2> = a64.iter().map(|&x| f64x2::from_base(x)).collect();
            let residual = lu_residual_model_until(&pairs, &a_pairs, n, stop);
            let kind = lu_ref_kind::<T>(n);
            let reference = match kind {
                LuRefKind::Mp => Some(cached(&CPU_LU_REFS, data_key("mp", &[&a64]), stop, || {
                    lu_reference_mp(&a64, n, stop)
                })),
                LuRefKind::Pairs | LuRefKind::PairsShort => {
                    Some(cached(&CPU_LU_REFS, data_key("dd", &[&a64]), stop, || {
                        lu_reference_pairs(&a64, n, stop)
                    }))
                }
                LuRefKind::Nothing => None,
            };
            let scored = score_factors(&f, &pairs, n, &kind, &residual, a_max, reference);
            (scored, time)
        };
        m.extra
            .insert("gflops".into(), gflops(n, time.median_ms.max(1e-9)));
        m.time = Some(time);
        m
    }
}

// ---- The cost ----------------------------------------------------------------------------------

/// Refinement steps the GE reference is counted with: each adds about 50 bits to the solution's
/// f64 start, so 2·p + 8 bits need (2·p + 8) / 50 of them, at least 2.
fn refinement_steps(precision: StudyPrecision) -> f64 {
    let bits = (2 * significand_bits(precision) + 8).max(220);
    f64::from(bits.div_ceil(50)).max(2.0)
}

/// What a GE or LU point costs the host. Both: the system (n² + n f64 values) and its f64 copy.
/// GE: the reference (a pivoted f64 LU, then k refinement steps of n² exact products per part, so
/// about k²/2 · n²); LU: the factors and A as f64x2, the f64x2 residual (n³/3 products and
/// subtractions; the GPU computes its own) and the reference factorization (f64x2, or mp512 up to
/// [`MP_REFERENCE_MAX`]). On the CPU, the converted A, the factors kept from the first run and
/// the copy each repetition makes, and the timed elimination: 2n³/3 operations in the precision.
pub fn host_cost(point: &Point) -> Cost {
    let (n, p) = (point.size as f64, point.precision);
    let (nn, cube) = (n * n, 2.0 / 3.0 * n * n * n);
    let big_pool = if point.size >= 256 { all_cores() } else { 1 };
    let mut work = vec![generation(nn + n)];
    let mut bytes = 8.0 * (nn + n) + 8.0 * nn;
    if point.workload == "ge" {
        bytes += 8.0 * nn;
        work.push(Work::new(F64, cube, Pace::Independent).on(big_pool));
        let k = refinement_steps(p);
        let pool = if point.size >= 128 { all_cores() } else { 1 };
        work.push(Work::new(StudyPrecision::Exact, k * k / 2.0 * nn, Pace::Dependent).on(pool));
    } else {
        bytes += 40.0 * nn;
        if !point.backend.is_gpu() {
            // The GPU computes its points' residual itself.
            let pool = if point.size >= 128 { all_cores() } else { 1 };
            work.push(Work::new(F64X2, cube, Pace::Independent).on(pool));
        }
        let bits = significand_bits(p);
        let mp512 = StudyPrecision::Real(Precision::Mp(512));
        if bits > 53 && point.size as usize <= MP_REFERENCE_MAX {
            bytes += 2.0 * value_bytes(mp512) as f64 * nn;
            work.push(Work::new(mp512, cube, Pace::Independent).on(big_pool));
        } else if p != F64X2 || bits <= 53 {
            bytes += 16.0 * nn;
            work.push(Work::new(F64X2, cube, Pace::Independent).on(big_pool));
        }
    }
    if let Backend::Cpu { threads } = point.backend {
        bytes += 3.0 * value_bytes(p) as f64 * (nn + n);
        work.push(Work::new(p, cube, Pace::Independent).on(threads).timed());
    }
    Cost {
        bytes: bytes as u64,
        work,
    }
}

// ---- GPU runs ----------------------------------------------------------------------------------

/// Device bytes a GPU point allocates: the input and working copies, plus (LU) the f64x2
/// factors, input, residual and reference factorization of the accuracy check.
pub fn device_bytes(point: &Point) -> u64 {
    let n = point.size;
    let v = match point.precision {
        StudyPrecision::Real(p) => DeviceType::of(p).map_or(0, DeviceType::bytes),
        StudyPrecision::Exact => 0,
    };
    match point.workload {
        "ge" => 2 * (n * n + n) * v,
        _ => 2 * n * n * v + n * n * (16 + 16 + 8 + 2 * 16),
    }
}

/// What a kernel configuration needs per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockNeeds {
    /// Threads per block.
    pub threads: u32,
    /// Static shared memory per block, in bytes.
    pub static_shared_bytes: u32,
}

/// The LU kernels' needs at tile b for values of `value_bytes` bytes (all three kernels run b×b
/// threads with two b×b tiles of shared memory).
pub fn lu_needs(tile: u32, value_bytes: u32) -> BlockNeeds {
    BlockNeeds {
        threads: tile * tile,
        static_shared_bytes: 2 * tile * tile * value_bytes,
    }
}

/// Fan2's needs at tile b.
pub fn fan2_needs(tile: u32) -> BlockNeeds {
    BlockNeeds {
        threads: tile * tile,
        static_shared_bytes: 0,
    }
}

/// Why `needs` cannot run on a device allowing `max_threads` per block and
/// [`STATIC_SHARED_LIMIT`] bytes of static shared memory; `None` if it can.
pub fn out_of_resources(what: &str, needs: BlockNeeds, max_threads: u32) -> Option<String> {
    if needs.threads > max_threads {
        Some(format!(
            "out of resources: {what}: {} threads per block, the device allows {max_threads}",
            needs.threads
        ))
    } else if needs.static_shared_bytes > STATIC_SHARED_LIMIT {
        Some(format!(
            "out of resources: {what}: {} bytes of shared memory per block, a block may declare {STATIC_SHARED_LIMIT}",
            needs.static_shared_bytes
        ))
    } else {
        None
    }
}

/// The CUDA source of precision T's kernels (and the f64x2 residual kernel).
pub fn linalg_source<T: DeviceWords>() -> Source {
    let p = T::precision_name();
    Source::new(
        format!("linalg_{p}.cu"),
        format!(
            "{}\n{}\nMANTISSA_LINALG_KERNELS({p}, {}, {})\nMANTISSA_LINALG_CHECK()\n",
            twin::HEADER,
            LINALG_CU,
            T::CUDA_TYPE,
            T::Word::CUDA
        ),
    )
}

/// The kernel names of precision T: Fan1, Fan2, and per LU tile (diagonal, perimeter, internal).
pub fn ge_kernels<T: DeviceWords>() -> [String; 2] {
    let p = T::precision_name();
    [format!("ge_fan1_{p}"), format!("ge_fan2_{p}")]
}

/// The LU kernel names of precision T at tile b: diagonal, perimeter, internal.
pub fn lu_kernels<T: DeviceWords>(tile: u32) -> [String; 3] {
    let p = T::precision_name();
    [
        format!("lu_diagonal_{p}_{tile}"),
        format!("lu_perimeter_{p}_{tile}"),
        format!("lu_internal_{p}_{tile}"),
    ]
}

/// The name of the residual kernel (in every precision's module).
pub const RESIDUAL_KERNEL: &str = "lu_residual_f64x2";

/// The exact f64x2 of a device value: TwoSum of its words (exact for every pair type).
pub fn device_pair<T: DeviceWords>(x: &T) -> f64x2 {
    let mut w: Vec<T::Word> = Vec::with_capacity(2);
    x.push_words(&mut w);
    // (One small allocation per value; the LU check converts n² values once per precision.)
    let word = |k: usize| -> f64 {
        match T::Word::DTYPE {
            DType::F32 => f32::from_bits(w[k].bits() as u32) as f64,
            _ => f64::from_bits(w[k].bits()),
        }
    };
    if w.len() == 1 {
        f64x2::from_parts(word(0), 0.0)
    } else {
        let (a, b) = (word(0), word(1));
        if a.is_finite() && b.is_finite() {
            f64x2::from_sum(a, b)
        } else {
            f64x2::from_parts(a + b, 0.0)
        }
    }
}

fn pair_words(xs: &[f64x2]) -> HostData {
    let mut w = Vec::with_capacity(2 * xs.len().max(1));
    for x in xs {
        w.push(x.hi);
        w.push(x.lo);
    }
    if w.is_empty() {
        w.extend([0.0, 0.0]);
    }
    HostData::F64(w)
}

fn module_for<'m, T: DeviceWords>(
    gpu: &Gpu,
    modules: &'m mut HashMap<String, Module>,
) -> Result<&'m Module, GpuError> {
    let p = T::precision_name();
    if !modules.contains_key(&p) {
        let m = gpu.build(&linalg_source::<T>(), FLAGS)?;
        modules.insert(p.clone(), m);
    }
    Ok(&modules[&p])
}

/// Queues the whole blocked LU of the n×n matrix in `a` with tile `tile`.
fn launch_lu(
    gpu: &Gpu,
    module: &Module,
    kernels: &[String; 3],
    a: &DeviceBuffer,
    n: usize,
    tile: u32,
) -> Result<(), GpuError> {
    let steps = n / tile as usize;
    let block = (tile, tile, 1);
    for s in 0..steps {
        let o = (s * tile as usize) as i32;
        let m = (steps - s - 1) as u32;
        let args = [
            KernelArg::from(a),
            KernelArg::Scalar(Scalar::I32(n as i32)),
            KernelArg::Scalar(Scalar::I32(o)),
        ];
        gpu.launch(
            module,
            &kernels[0],
            LaunchDims::new((1, 1, 1), block),
            &args,
        )?;
        if m > 0 {
            gpu.launch(
                module,
                &kernels[1],
                LaunchDims::new((2 * m, 1, 1), block),
                &args,
            )?;
            gpu.launch(
                module,
                &kernels[2],
                LaunchDims::new((m, m, 1), block),
                &args,
            )?;
        }
    }
    Ok(())
}

/// Runs this module's GPU points, keeping compiled modules and references between points.
pub struct GpuRunner<'g> {
    gpu: &'g Gpu,
    modules: HashMap<String, Module>,
    ge_refs: RefCache<GeReference>,
    lu_refs: RefCache<LuReference>,
    /// The last LU accuracy: (point key without backend, hash of the factors, its measurement).
    lu_last: Option<(String, u64, Measurement)>,
    /// The last system generated, by (input, n, seed): points of every precision and tile share it.
    system: Option<((String, usize, u64), Arc<System>)>,
}

impl GpuMeasure for GpuRunner<'_> {
    fn measure(&mut self, point: &Point, timing: TimingOptions) -> Result<Measurement, GpuError> {
        let StudyPrecision::Real(p) = point.precision else {
            return Err(bad_point(point, "needs a real precision"));
        };
        let run = RunOn {
            runner: self,
            point,
            timing,
        };
        visit_device_type(p, run)
            .unwrap_or_else(|| Err(bad_point(point, "mp does not run on the GPU")))
    }
}

/// A GPU point in its precision's device type.
struct RunOn<'r, 'g, 'p> {
    runner: &'r mut GpuRunner<'g>,
    point: &'p Point,
    timing: TimingOptions,
}

impl DeviceTypeVisitor for RunOn<'_, '_, '_> {
    type Output = Result<Measurement, GpuError>;
    fn visit<T: DeviceWords>(self) -> Self::Output {
        self.runner.run::<T>(self.point, self.timing)
    }
}

impl<'g> GpuRunner<'g> {
    /// A runner for `gpu`; nothing is compiled until a point needs it.
    pub fn new(gpu: &'g Gpu) -> Self {
        GpuRunner {
            gpu,
            modules: HashMap::new(),
            ge_refs: RefCache::new(),
            lu_refs: RefCache::new(),
            lu_last: None,
            system: None,
        }
    }

    fn run<T: DeviceWords>(
        &mut self,
        point: &Point,
        timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        let (Backend::GpuTiles { tile }, Data::Intervals(class)) = (point.backend, &point.data)
        else {
            return Err(bad_point(point, "needs a tile backend and interval data"));
        };
        let n = point.size as usize;
        let max_threads = self.gpu.info().max_threads_per_block;
        let ge = point.workload == "ge";
        let (what, needs) = if ge {
            ("Fan2", fan2_needs(tile))
        } else {
            ("the LU kernels", lu_needs(tile, T::TYPE.bytes() as u32))
        };
        if let Some(why) = out_of_resources(&format!("{what} at {tile}×{tile}"), needs, max_threads)
        {
            return Ok(Measurement::out_of_resources(why));
        }
        if (!ge && (!LU_KERNEL_TILES.contains(&tile) || n % tile as usize != 0)) || n < 2 {
            return Err(bad_point(point, "has no kernels for this tile and size"));
        }
        // Registers lower a compiled kernel's thread limit below the device's.
        let module = module_for::<T>(self.gpu, &mut self.modules)?;
        let launches: Vec<(String, u32)> = if ge {
            let [fan1, fan2] = ge_kernels::<T>();
            vec![(fan1, FAN1_BLOCK), (fan2, needs.threads)]
        } else {
            lu_kernels::<T>(tile)
                .into_iter()
                .map(|k| (k, needs.threads))
                .collect()
        };
        for (k, threads) in &launches {
            let r = module.resources(k)?;
            if r.max_threads_per_block < *threads {
                return Ok(Measurement::out_of_resources(format!(
                    "out of resources: {k} uses {} registers per thread, so at most {} threads per block, {threads} needed",
                    r.registers, r.max_threads_per_block
                )));
            }
        }
        let id = (class.name.clone(), n, point.seed);
        let sys = match &self.system {
            Some((k, sys)) if *k == id => sys.clone(),
            _ => {
                let sys = Arc::new(system(class, n, point.seed));
                self.system = Some((id, sys.clone()));
                sys
            }
        };
        if ge {
            self.run_ge::<T>(&sys, tile, timing)
        } else {
            self.run_lu::<T>(point, &sys, tile, timing)
        }
    }

    /// Forward elimination of (a, b) on the GPU with Fan2 tiles of `tile`×`tile`, timed over
    /// `timing` runs (each restores the input first); returns the eliminated matrix and vector.
    pub fn ge_forward_gpu<T: DeviceWords>(
        &mut self,
        a: &[T],
        b: &[T],
        n: usize,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<(Vec<T>, Vec<T>, Timing), GpuError> {
        let gpu = self.gpu;
        let module = module_for::<T>(gpu, &mut self.modules)?;
        let [fan1, fan2] = ge_kernels::<T>();
        let a0 = gpu.upload("ge_a0", &words_of(a))?;
        let b0 = gpu.upload("ge_b0", &words_of(b))?;
        let mut aw = gpu.alloc_zeros("ge_a", T::Word::DTYPE, (n * n).max(1) * T::words())?;
        let mut bw = gpu.alloc_zeros("ge_b", T::Word::DTYPE, n.max(1) * T::words())?;
        let t = gpu.time_with(timing, 1, |_| {
            gpu.copy(&a0, &mut aw)?;
            gpu.copy(&b0, &mut bw)?;
            for t in 0..n.saturating_sub(1) {
                let rows = (n - t - 1) as u32;
                let cols = (n - t) as u32;
                let ti = Scalar::I32(t as i32);
                let ni = Scalar::I32(n as i32);
                let args1 = [
                    KernelArg::from(&aw),
                    KernelArg::Scalar(ni),
                    KernelArg::Scalar(ti),
                ];
                gpu.launch(
                    module,
                    &fan1,
                    LaunchDims::new((rows.div_ceil(FAN1_BLOCK), 1, 1), (FAN1_BLOCK, 1, 1)),
                    &args1,
                )?;
                let args2 = [
                    KernelArg::from(&aw),
                    KernelArg::from(&bw),
                    KernelArg::Scalar(ni),
                    KernelArg::Scalar(ti),
                ];
                gpu.launch(
                    module,
                    &fan2,
                    LaunchDims::new(
                        (cols.div_ceil(tile), rows.div_ceil(tile), 1),
                        (tile, tile, 1),
                    ),
                    &args2,
                )?;
            }
            Ok(())
        })?;
        let ua: Vec<T> = values_of(gpu.download(&aw)?, n * n, "linalg matrix")?;
        let ub: Vec<T> = values_of(gpu.download(&bw)?, n, "linalg right-hand side")?;
        Ok((ua, ub, t))
    }

    /// The blocked LU of `a` (n a multiple of `tile`, a tile with kernels) on the GPU, timed
    /// over `timing` runs (each restores the input first); returns the packed factors.
    pub fn lu_gpu<T: DeviceWords>(
        &mut self,
        a: &[T],
        n: usize,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<(Vec<T>, Timing), GpuError> {
        let gpu = self.gpu;
        if !LU_KERNEL_TILES.contains(&tile) || n % tile as usize != 0 {
            return Err(GpuError::BadArguments {
                kernel: "lu".into(),
                problem: format!("n = {n} with tile {tile}: tiles are 4, 8, 16, 32 and divide n"),
            });
        }
        let module = module_for::<T>(gpu, &mut self.modules)?;
        let kernels = lu_kernels::<T>(tile);
        let a0 = gpu.upload("lu_a0", &words_of(a))?;
        let mut aw = gpu.alloc_zeros("lu_a", T::Word::DTYPE, (n * n).max(1) * T::words())?;
        let t = gpu.time_with(timing, 1, |_| {
            gpu.copy(&a0, &mut aw)?;
            launch_lu(gpu, module, &kernels, &aw, n, tile)
        })?;
        let f: Vec<T> = values_of(gpu.download(&aw)?, n * n, "linalg matrix")?;
        Ok((f, t))
    }

    /// The residual A − L·U on the GPU in f64x2 ([`lu_residual_model`]'s bits).
    pub fn residual_gpu(
        &mut self,
        f: &[f64x2],
        a: &[f64x2],
        n: usize,
    ) -> Result<Vec<f64>, GpuError> {
        let gpu = self.gpu;
        let module = module_for::<f64x2>(gpu, &mut self.modules)?;
        let fd = gpu.upload("lu_f_pairs", &pair_words(f))?;
        let ad = gpu.upload("lu_a_pairs", &pair_words(a))?;
        let r = gpu.alloc_zeros("lu_residual", DType::F64, (n * n).max(1))?;
        let blocks = (n as u32).div_ceil(16).max(1);
        gpu.launch(
            module,
            RESIDUAL_KERNEL,
            LaunchDims::new((blocks, blocks, 1), (16, 16, 1)),
            &[
                KernelArg::from(&fd),
                KernelArg::from(&ad),
                KernelArg::Scalar(Scalar::I32(n as i32)),
                KernelArg::from(&r),
            ],
        )?;
        match gpu.download(&r)? {
            HostData::F64(mut v) => {
                v.truncate(n * n);
                Ok(v)
            }
            _ => Err(GpuError::BadBuffer {
                what: "lu residual".into(),
                problem: "not f64".into(),
            }),
        }
    }

    fn run_ge<T: DeviceWords>(
        &mut self,
        sys: &System,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        let n = sys.n;
        let a: Vec<T> = convert(&sys.a);
        let b: Vec<T> = convert(&sys.b);
        let (ua, ub, t) = self.ge_forward_gpu(&a, &b, n, tile, timing)?;
        let x = back_substitute(&ua, &ub, n);
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        let bits = reference_bits::<T>();
        let key = data_key(&format!("ge{bits}"), &[&a64, &b64]);
        let reference = self
            .ge_refs
            .get_or(key, Stop::NEVER, || ge_reference(&a64, &b64, n, bits));
        let mut m = score_ge(&x, &ua, n, max_abs(&a64), &reference);
        let time = time_stats(&t);
        m.extra
            .insert("gflops".into(), gflops(n, time.median_ms.max(1e-9)));
        m.time = Some(time);
        Ok(m)
    }

    fn run_lu<T: DeviceWords>(
        &mut self,
        point: &Point,
        sys: &System,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        let n = sys.n;
        let a: Vec<T> = convert(&sys.a);
        let (f, t) = self.lu_gpu(&a, n, tile, timing)?;
        let mut h = Fnv::new();
        let mut w = Vec::with_capacity(2);
        for x in &f {
            w.clear();
            x.push_words(&mut w);
            for v in &w {
                h.word(v.bits());
            }
        }
        let hash = h.0;
        let id = format!(
            "{}|{}|{}|{}",
            point.data.name(),
            n,
            point.seed,
            point.precision
        );
        let mut m = match &self.lu_last {
            // The same factors as another tile's (the order is the same): same accuracy.
            Some((k, hh, m)) if *k == id && *hh == hash => m.clone(),
            _ => {
                let m = self.lu_accuracy::<T>(&a, &f, n, tile)?;
                self.lu_last = Some((id, hash, m.clone()));
                m
            }
        };
        let time = time_stats(&t);
        m.extra
            .insert("gflops".into(), gflops(n, time.median_ms.max(1e-9)));
        m.time = Some(time);
        Ok(m)
    }

    /// Mismatches (residual on the GPU) and the error against the reference factorization.
    fn lu_accuracy<T: DeviceWords>(
        &mut self,
        a: &[T],
        f: &[T],
        n: usize,
        tile: u32,
    ) -> Result<Measurement, GpuError> {
        let pairs = factor_pairs(f, n, device_pair);
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let a_pairs: Vec<f64x2> = a64.iter().map(|&x| f64x2::from_base(x)).collect();
        let residual = self.residual_gpu(&pairs, &a_pairs, n)?;
        let kind = lu_ref_kind::<T>(n);
        let reference = match kind {
            LuRefKind::Mp => Some(self.lu_refs.get_or(
                data_key("mp", &[&a64]),
                Stop::NEVER,
                || lu_reference_mp(&a64, n, Stop::NEVER),
            )),
            LuRefKind::Pairs | LuRefKind::PairsShort => {
                let key = data_key("dd", &[&a64]);
                if let Some((_, r)) = self.lu_refs.entries.iter().find(|(k, _)| *k == key) {
                    Some(r.clone())
                } else {
                    // The f64x2 kernels give the CPU model's bits (GPU tests), much faster; 16×16
                    // (or the point's smaller tile) keeps f64x2 within any register budget.
                    let once = TimingOptions { warmup: 0, reps: 1 };
                    let (r, _) = self.lu_gpu(&a_pairs, n, tile.min(16), once)?;
                    Some(
                        self.lu_refs
                            .get_or(key, Stop::NEVER, || LuReference::Pairs(r)),
                    )
                }
            }
            LuRefKind::Nothing => None,
        };
        Ok(score_factors(
            f,
            &pairs,
            n,
            &kind,
            &residual,
            max_abs(&a64),
            reference,
        ))
    }
}

fn bad_point(point: &Point, problem: &str) -> GpuError {
    GpuError::BadArguments {
        kernel: format!("{} {}", point.workload, point.algorithm),
        problem: format!("point {} {problem}", point.key("-")),
    }
}

#[cfg(test)]
mod tests;
