//! The arithmetic-intensity micro-benchmark of seed 000 ch. 6 (Tables 13–15, Figs 12–14):
//! generated kernels with one global load and one global store per thread and `N` additions (or
//! multiplications) spread round-robin over 16 independent accumulator chains, in every precision
//! of the CUDA twin, timed over launch configurations from one thread to the full device; plus the
//! same computation on the CPU over a rayon pool, and the error of both against exact arithmetic.
//!
//! The computation (one thread, or one CPU element), in the precision `T` under test, with `op`
//! being `+` or `·`:
//! - `x0` is loaded; `x_i = x_{i-1} op k` for `i < m = min(16, N)`, with `k = 1` for add (the
//!   thesis's `x_i = x_{i-1} + 1`) and `k = 1 − 2^-9` for mul. The thesis's `x_i = 2·x_{i-1}`
//!   would reach `2^15` in x15 and its chain `x15^626` would overflow f32 at N = 10000; with `x0`
//!   drawn from `[1, 1 + 2^-6)` and `k = 1 − 2^-9`, every `x_i` lies in `[0.97, 1.016)`, so the
//!   largest chain value (`1.016^626 < 2^14`) and the smallest (`0.97^626 > 2^-28`, its
//!   composite/double-word low word above `2^-80`) stay far inside f32's normal range.
//!   For add `x0` is drawn from `[1, 2)`, and the chains stay below `16 · 630 < 2^14`.
//!   Every `x0` carries the type's full width (a random f64 plus a random word 2^-60 below it, added
//!   in `T`), so every operation rounds.
//! - `y_i = x_i` (so the compiler cannot fold a `0 + x` or `1 · x`), then `N` operations
//!   `y_{j mod 16} = y_{j mod 16} op x_{j mod 16}` for `j = 0..N`: chain `c` gets
//!   `⌊N/16⌋ + [c < N mod 16]` of them ([`ops_on_chain`]);
//! - one store of `y_0 + y_1 + … + y_{m-1}` (left to right, in `T`).
//!
//! [`model`] is that computation in Rust over [`Real`]; [`kernel_text`] emits it as CUDA in which
//! f32/f64 use the twin's explicit `_rn` intrinsics (`mantissa::add_rn`, …: never contracted into
//! FMAs, whatever the flags) and the pair types the twin's functions (`mantissa::f64x2_add`,
//! `comp32_mul`, …), which compute the bits of the Rust operators. So a GPU thread's result equals
//! [`model`] of its `x0` bit for bit (the GPU test checks it, and every GPU record counts sampled
//! threads that differ, `differs_from_cpu`). [`exact`] runs the same chains, derivations included, in
//! exact rational arithmetic from the same `x0`, so the error is the arithmetic's alone.
//!
//! Code shape. Up to [`straight_max`] operations (1000 for f32/f64, 100 for the pair types) the
//! kernel is straight-line, as the thesis generated it. Beyond, it is a `#pragma unroll 1` loop of
//! `⌊N/16⌋` rounds whose body is one round of the 16 chains, after the `N mod 16` remaining
//! operations (the same values: the chains are independent). Why: NVRTC 13.0 for sm_90 on this project's 2-core CI machine (shared) took, for
//! f64x2 add, 1.05 s straight-line at N = 100, 22.9 s at N = 1000 and over ten minutes at
//! N = 10000, against 0.6 s looped at N = 1000 or 10000; f64 add took 0.10 s (N = 100) and 0.40 s
//! (N = 1000) straight-line, 0.13 s looped (`nvrtc_compile_times`, an ignored test, measures it).
//! So f32/f64 keep the thesis's straight-line code up to its 1000-iteration kernels, whose PTX
//! counts it reports. The loop adds one counter increment, compare and branch per round (against
//! 16 FP operations, or 16 × 20 for f64x2).
//!
//! Records (workload `intensity`, algorithm `add` or `mul`, size `N`). GPU points run on grid 1 ×
//! block {1, 256, 512, 1024} (Tables 13–15 and one more) and on the full device (`full`, and the
//! same thread count in blocks of 256). A block larger than the default build's registers allow
//! runs the kernel built for that block size (`__launch_bounds__`, registers capped and spilled;
//! [`GpuRunner::run_kernel`]), and the record's note says so. Each record's `extra` holds:
//! - `ptx.<op>.<type>` (`ptx.add.f64`, `ptx.fma.f32`, …): floating-point instructions each thread
//!   executes, from mantissa-ptx's census of the generated PTX (static counts outside the loop plus
//!   the round count times the loop body's). For the straight-line kernels (N ≤ [`straight_max`])
//!   they are the static counts the thesis reports for its 1000-iteration kernels.
//! - `fp32_ginstr_s`, `fp64_ginstr_s`: f32 / f64 arithmetic instructions (add, sub, mul, fma, min,
//!   max, div, sqrt, …; not abs/neg/cvt) per thread × threads / median time, in 10^9 per second;
//! - `fp32_of_peak`, `fp64_of_peak`: that rate over the device's FMA instruction ceiling
//!   ([`mantissa_gpu::Ceilings`] FMA GFLOP/s ÷ 2), and `saturated` = 1 when either is ≥ 0.7
//!   ([`SATURATED`]), else 0. The ceilings come from `mantissa devices`' cache, or are measured
//!   once per runner (about a second) when absent; without them these three keys are left out.
//! - `differs_from_cpu`: sampled threads whose GPU result differs in any bit from [`model`] (0 expected).
//! - `rel_err_mean`, `rel_err_max`: relative error against [`exact`] over [`SAMPLES`] elements
//!   spread over the array (element 0 included). The record's `error` is element 0's, its `value`
//!   and `reference` element 0's result and exact value.
//!
//! What the error means (CPU, mean relative error over 64 elements, N = 20 → 1000 → 10000): the
//! add chains compute `(k+1)·x_i` by `k` repeated roundings, so f32 and f64 lose about
//! `log10(k)` digits as N grows (f32 7e-8 → 3e-7 → 3e-6, f64 9e-17 → 6e-16 → 5e-15); f32x2 and
//! f64x2 keep about twice the digits (f64x2 8e-33 → 2e-31); N = 1 (`x0 + x0`) is exact. The
//! composite add grows faster than the double-word one (comp32 5e-15 → 8e-14 → 9e-12 against
//! f32x2's 7e-14 at 10000), since Table 4's error word is never renormalised; comp32n tracks
//! f32x2. Mul chains compute powers `x_i^(k+1)` whose error grows about linearly in `k` in every
//! precision; the composite products equal their base type's to two digits (Table 4's product
//! keeps the cross terms but not the rounding error of `xv·yv`, which dominates), so comp32/comp64
//! mul give f32/f64 accuracy at twice the cost — the thesis's "float2 should not be used".
//!
//! CPU points (`Backend::Cpu{threads}` for the configured thread counts) run [`model`] on every
//! element of an array ([`cpu_elements`]) split over the pool, timed with [`CpuTiming`].

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use mantissa_gpu::{
    twin, Ceilings, FlagSet, Gpu, GpuError, KernelArg, LaunchDims, Module, ReportOptions, Source,
    Timing, TimingOptions,
};
use mantissa_gpu::{visit_device_type, DeviceType, DeviceTypeVisitor, DeviceWords, Word};
use mantissa_num::big::{self, Big};
use mantissa_num::metrics::{measure_values, Reference};
use mantissa_num::precision::{Precision, PrecisionError, PrecisionVisitor};
use mantissa_num::Real;
use mantissa_ptx::census;
use mantissa_ptx::{Function, Statement};
use mantissa_report::{Backend, ErrorMetrics, Status};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use rayon::ThreadPool;

use crate::cost::{generation, value_bytes, Cost, Pace, Work};
use crate::measurement::{record_metrics, time_stats, Measurement};
use crate::study::{CpuTiming, Data, Point, StudyConfig, StudyPrecision, Suite};
use crate::workload::{CpuMeasure, GpuMeasure, Workload};

/// The flag set of every intensity kernel (f32/f64 use `_rn` intrinsics, the pair types the
/// twin: the arithmetic does not depend on it).
pub const FLAGS: FlagSet = FlagSet::DEFAULT;
/// Independent accumulator chains per thread (seed 000 ch. 6: y0..y15).
pub const CHAINS: u64 = 16;
/// The multiplier of the mul kernels' derivations `x_i = x_{i-1} · k`: 1 − 2^-9, exact in every
/// precision (see the module doc for why not the thesis's 2).
pub const MUL_STEP: f64 = 1.0 - 1.0 / 512.0;
/// Elements scored against the exact reference (element 0 and others spread evenly).
pub const SAMPLES: usize = 16;
/// The fraction of a ceiling above which a point counts as saturating the FP units.
pub const SATURATED: f64 = 0.7;
/// Seed 000 ch. 6's iteration counts (Tables 13–15).
pub const THESIS_SIZES: [u64; 8] = [1, 20, 50, 100, 500, 1000, 5000, 10000];

/// Addition or multiplication chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Additions (`x + k`, chains `y + x`).
    Add,
    /// Multiplications (`x · k`, chains `y · x`).
    Mul,
}

impl Op {
    /// Both operations, in the order plans list them.
    pub const BOTH: [Op; 2] = [Op::Add, Op::Mul];

    /// The algorithm name in records.
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Mul => "mul",
        }
    }

    /// The op of a record's algorithm name.
    pub fn of_algorithm(algorithm: &str) -> Option<Op> {
        match algorithm {
            "add" => Some(Op::Add),
            "mul" => Some(Op::Mul),
            _ => None,
        }
    }

    fn apply<T: Real>(self, a: &T, b: &T) -> T {
        match self {
            Op::Add => a.clone() + b.clone(),
            Op::Mul => a.clone() * b.clone(),
        }
    }

    /// The derivation constant k of `x_i = x_{i-1} op k`.
    fn step(self) -> f64 {
        match self {
            Op::Add => 1.0,
            Op::Mul => MUL_STEP,
        }
    }

    /// Where `x0` is drawn from.
    fn range(self) -> (f64, f64) {
        match self {
            Op::Add => (1.0, 2.0),
            Op::Mul => (1.0, 1.0 + 1.0 / 64.0),
        }
    }
}

/// Problems of the generator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntensityError {
    #[error("an intensity kernel needs at least one operation (N = 0 given): choose N >= 1")]
    /// N = 0: a kernel needs at least one operation.
    NoOperations,
    #[error("precision {0} has no CUDA twin: the intensity kernels run f32, f64, f32x2, f64x2, comp32, comp64, comp32n and comp64n")]
    /// The precision has no CUDA twin (mp).
    NoGpuPrecision(Precision),
}

/// Chains in use: min(16, N).
pub fn chains_used(n: u64) -> u64 {
    n.min(CHAINS)
}

/// Operations applied to chain `c` (0-based) out of N round-robin.
pub fn ops_on_chain(n: u64, c: u64) -> u64 {
    n / CHAINS + u64::from(c < n % CHAINS)
}

// ---- The computation ----------------------------------------------------------------------------

/// One thread's (one element's) result for loaded value `x0`, in `T` (see the module doc).
/// N = 0 gives `x0` itself (no chain ran); the planner and the generator never use it.
pub fn model<T: Real>(x0: &T, op: Op, n: u64) -> T {
    if n == 0 {
        return x0.clone();
    }
    let m = chains_used(n) as usize;
    let k = T::from_f64(op.step());
    let mut xs: Vec<T> = Vec::with_capacity(m);
    xs.push(x0.clone());
    for i in 1..m {
        let next = op.apply(&xs[i - 1], &k);
        xs.push(next);
    }
    let mut ys = xs.clone();
    // Round-robin like the kernel (the chains are independent, so any interleaving gives the
    // same values; this one keeps 16 operations in flight on the CPU too).
    for _ in 0..n / CHAINS {
        for (y, x) in ys.iter_mut().zip(&xs) {
            *y = op.apply(y, x);
        }
    }
    for c in 0..(n % CHAINS) as usize {
        ys[c] = op.apply(&ys[c], &xs[c]);
    }
    let mut s = ys[0].clone();
    for y in &ys[1..] {
        s = s + y.clone();
    }
    s
}

/// x^e exactly (square and multiply; `Big` products of exact values are exact).
fn pow_exact(x: &Big, mut e: u64) -> Big {
    let mut result = big::exact(1.0);
    let mut base = x.clone();
    while e > 0 {
        if e & 1 == 1 {
            result = &result * &base;
        }
        e >>= 1;
        if e > 0 {
            base = &base * &base;
        }
    }
    result
}

/// [`model`] in exact arithmetic from the exact `x0`: the derivations, the N operations and the
/// final sum all exact.
pub fn exact(x0: &Big, op: Op, n: u64) -> Big {
    if n == 0 {
        return x0.clone();
    }
    let m = chains_used(n);
    let k = big::exact(op.step());
    let mut x = x0.clone();
    let mut sum = big::exact(0.0);
    for c in 0..m {
        if c > 0 {
            x = match op {
                Op::Add => &x + &k,
                Op::Mul => &x * &k,
            };
        }
        let times = ops_on_chain(n, c) + 1;
        let y = match op {
            // (times) copies of x: an exact integer multiple.
            Op::Add => &x * &big::exact(times as f64),
            Op::Mul => pow_exact(&x, times),
        };
        sum = &sum + &y;
    }
    sum
}

/// The loaded values of `count` threads (elements) for `op`, from `seed`: a random f64 in the
/// op's range plus a random word up to 2^-60 of it, added in `T` so pair types use both words.
pub fn inputs<T: Real>(op: Op, count: usize, seed: u64) -> Vec<T> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1e7e_5177);
    let (lo, hi) = op.range();
    (0..count)
        .map(|_| {
            let a: f64 = rng.random_range(lo..hi);
            let b: f64 = a * rng.random::<f64>() * 2f64.powi(-60);
            T::from_f64(a) + T::from_f64(b)
        })
        .collect()
}

/// The elements scored: element 0 and others spread evenly over `count`.
pub fn sample_indices(count: usize) -> Vec<usize> {
    let k = SAMPLES.min(count);
    (0..k).map(|i| i * count / k.max(1)).collect()
}

/// Errors of the sampled results against the exact chains: element 0's metrics (value,
/// reference) and the mean and max relative error over the sample.
struct Scored {
    value: f64,
    reference: f64,
    error: ErrorMetrics,
    rel_mean: f64,
    rel_max: f64,
}

fn score<T: Real>(xs: &[T], results: &[T], op: Op, n: u64) -> Scored {
    let mut first = None;
    let (mut sum, mut max, mut count) = (0.0f64, 0.0f64, 0usize);
    for i in sample_indices(xs.len()) {
        let reference = match xs[i].to_big() {
            Some(x0) => Reference::Finite(exact(&x0, op, n)),
            None => Reference::NaN,
        };
        let computed = Reference::of(&results[i]);
        let m = measure_values(&computed, &reference);
        sum += m.rel;
        max = max.max(m.rel);
        count += 1;
        if first.is_none() {
            let ref_f64 = reference.as_big().map_or(f64::NAN, big::to_f64);
            first = Some((results[i].to_f64(), ref_f64, record_metrics(&m, &reference)));
        }
    }
    let (value, reference, error) = first.unwrap_or_else(|| {
        let none = mantissa_num::metrics::ErrorMetrics::MISMATCH;
        (f64::NAN, f64::NAN, record_metrics(&none, &Reference::NaN))
    });
    // The chains never reach zero (all values are positive), so rel is always defined.
    Scored {
        value,
        reference,
        error,
        rel_mean: sum / count.max(1) as f64,
        rel_max: max,
    }
}

// ---- The generator ------------------------------------------------------------------------------

/// How the CUDA text names a precision's type and operations.
struct CudaNames {
    ty: &'static str,
    /// The base word (`float`, `double`).
    word: &'static str,
    add: String,
    mul: String,
    /// For pair types: the constructor from two words, and the two field names.
    pair: Option<(&'static str, &'static str, &'static str)>,
}

/// The names from the device-type table: f32/f64 use the twin's `_rn` intrinsics (never
/// contracted), the pair types the header's functions.
fn cuda_names(p: Precision) -> Result<CudaNames, IntensityError> {
    let t = DeviceType::of(p).ok_or(IntensityError::NoGpuPrecision(p))?;
    let (add, mul) = match t.functions {
        Some(f) => (format!("{f}add"), format!("{f}mul")),
        None => ("mantissa::add_rn".into(), "mantissa::mul_rn".into()),
    };
    Ok(CudaNames {
        ty: t.cuda_type,
        word: t.word_cuda(),
        add,
        mul,
        pair: t.make.zip(t.fields).map(|(make, (a, b))| (make, a, b)),
    })
}

/// The kernel's name: `intensity_<op>_<precision>_n<N>`.
pub fn kernel_name(p: Precision, op: Op, n: u64) -> String {
    format!("intensity_{}_{p}_n{n}", op.name())
}

/// The largest N emitted as straight-line code in precision `p`; larger N become a loop of
/// 16-operation rounds (see the module doc for the compile times behind these limits).
pub fn straight_max(p: Precision) -> u64 {
    match p {
        Precision::F32 | Precision::F64 => 1000,
        _ => 100,
    }
}

/// Whether the kernel of N operations in `p` is a loop of rounds (else straight-line).
pub fn looped(p: Precision, n: u64) -> bool {
    n > straight_max(p)
}

/// Loop trips of the kernel of N operations in `p` (0 for straight-line code).
pub fn rounds(p: Precision, n: u64) -> u64 {
    if looped(p, n) {
        n / CHAINS
    } else {
        0
    }
}

/// The kernel of `op` in precision `p` with N operations per thread, without the twin header
/// (see the module doc for its shape). Parameters: `(const W2* in, W2* out)` for pair types
/// (`float2`/`double2`: one 8- or 16-byte load and store), `(const W* in, W* out)` otherwise.
pub fn kernel_text(p: Precision, op: Op, n: u64) -> Result<String, IntensityError> {
    generate(p, op, n, looped(p, n), None)
}

/// [`kernel_text`] with the code shape chosen by the caller (`looped`: a loop of ⌊N/16⌋ rounds)
/// and, with `bound`, declared `__launch_bounds__(bound)` (see [`GpuRunner::run_kernel`]).
fn generate(
    p: Precision,
    op: Op,
    n: u64,
    looped: bool,
    bound: Option<u32>,
) -> Result<String, IntensityError> {
    if n == 0 {
        return Err(IntensityError::NoOperations);
    }
    let c = cuda_names(p)?;
    let f = if c.word == "float" { "f" } else { "" };
    let m = chains_used(n);
    let apply = match op {
        Op::Add => c.add.as_str(),
        Op::Mul => c.mul.as_str(),
    };
    let literal = |v: f64| format!("{v:?}{f}");
    let constant = |v: f64| match c.pair {
        Some((make, _, _)) => format!("{make}({}, {})", literal(v), literal(0.0)),
        None => literal(v),
    };
    let mut s = String::new();
    let name = kernel_name(p, op, n);
    let (load_ty, x0) = match c.pair {
        Some((make, _, _)) => (format!("{}2", c.word), format!("{make}(w.x, w.y)")),
        None => (c.word.to_string(), "w".to_string()),
    };
    // Writing to a String cannot fail.
    let _ = writeln!(
        s,
        "// {n} {} operations in {p} over {m} chains (mantissa intensity generator, seed 000 ch. 6)",
        op.name()
    );
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void {}{name}(const {load_ty}* __restrict__ in, {load_ty}* __restrict__ out) {{",
        bound.map_or(String::new(), |b| format!("__launch_bounds__({b}) "))
    );
    let _ = writeln!(
        s,
        "    const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;"
    );
    let _ = writeln!(s, "    const {load_ty} w = in[gid];");
    let ty = c.ty;
    let _ = writeln!(s, "    const {ty} x0 = {x0};");
    if m > 1 {
        let _ = writeln!(s, "    const {ty} k = {};", constant(op.step()));
    }
    for i in 1..m {
        let _ = writeln!(s, "    const {ty} x{i} = {apply}(x{}, k);", i - 1);
    }
    for i in 0..m {
        let _ = writeln!(s, "    {ty} y{i} = x{i};");
    }
    let line = |s: &mut String, indent: &str, i: u64| {
        let _ = writeln!(s, "{indent}y{i} = {apply}(y{i}, x{i});");
    };
    if looped {
        // The N mod 16 remaining operations go first: after the loop, NVVM merged them with the
        // first half of the body (a rotated loop leaving in its middle), which hides from the
        // census how often that half runs.
        for i in 0..n % CHAINS {
            line(&mut s, "    ", i);
        }
        let _ = writeln!(s, "#pragma unroll 1");
        let _ = writeln!(s, "    for (int r = 0; r < {}; ++r) {{", n / CHAINS);
        for i in 0..CHAINS {
            line(&mut s, "        ", i);
        }
        let _ = writeln!(s, "    }}");
    } else {
        for j in 0..n {
            line(&mut s, "    ", j % CHAINS);
        }
    }
    let _ = writeln!(s, "    {ty} s = y0;");
    for i in 1..m {
        let _ = writeln!(s, "    s = {}(s, y{i});", c.add);
    }
    match c.pair {
        Some((_, a, b)) => {
            let _ = writeln!(s, "    out[gid] = make_{load_ty}(s.{a}, s.{b});");
        }
        None => {
            let _ = writeln!(s, "    out[gid] = s;");
        }
    }
    let _ = writeln!(s, "}}");
    Ok(s)
}

/// The compilable source: the twin header then [`kernel_text`].
pub fn kernel_source(p: Precision, op: Op, n: u64) -> Result<Source, IntensityError> {
    bounded_source(p, op, n, None)
}

/// [`kernel_source`] declared with `__launch_bounds__(bound)` when `bound` is given.
pub fn bounded_source(
    p: Precision,
    op: Op,
    n: u64,
    bound: Option<u32>,
) -> Result<Source, IntensityError> {
    let text = generate(p, op, n, looped(p, n), bound)?;
    let suffix = bound.map_or(String::new(), |b| format!("_lb{b}"));
    Ok(Source::new(
        format!("{}{suffix}.cu", kernel_name(p, op, n)),
        format!("{}\n{text}", twin::HEADER),
    ))
}

/// Floating-point instructions one thread executes, by `<op>.<type>` (`add.f64`, `fma.f32`), from
/// the PTX of the kernel's function: every FP instruction once, and those inside the loop region
/// `rounds` times when the kernel is a loop (`rounds` > 0). The loop region runs from the first
/// loop header to the last back edge that [`census::loops`] finds: the kernels have one source
/// loop, but the compiler may lay a block of it out before its header (a second back edge).
///
/// Exact for kernels whose branches carry no FP work (f32, f64, f32x2, f64x2: the double-word
/// result check selects with integer tests). The composite types' non-finite fallbacks are
/// branches with an addition; where the compiler keeps them as branches, they are counted as if
/// taken, so their counts are upper bounds.
pub fn executed_counts(f: &Function, rounds: u64) -> BTreeMap<String, u64> {
    let region = if rounds > 0 {
        census::loops(f)
            .into_iter()
            .map(|(_, start, end)| (start, end))
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    } else {
        None
    };
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (k, s) in f.body.iter().flatten().enumerate() {
        let Statement::Inst(inst) = s else { continue };
        let Some(fp) = census::classify(inst) else {
            continue;
        };
        let times = match region {
            Some((a, b)) if (a..=b).contains(&k) => rounds,
            _ => 1,
        };
        *out.entry(format!("{}.{}", inst.opcode, fp.ty)).or_default() += times;
    }
    out
}

/// Arithmetic instructions of one float type (`f32`, `f64`) in executed counts, as
/// [`census::is_arithmetic_name`] defines them (of the `opcode.type` keys [`executed_counts`]
/// writes).
pub fn arithmetic_of(counts: &BTreeMap<String, u64>, ty: &str) -> u64 {
    counts
        .iter()
        .filter(|(k, _)| {
            let t = k.split_once('.').map_or("", |(_, t)| t);
            t == ty && census::is_arithmetic_name(k)
        })
        .map(|(_, &v)| v)
        .sum()
}

// ---- The plan -----------------------------------------------------------------------------------

/// Elements of a CPU point's array.
pub fn cpu_elements(suite: Suite) -> usize {
    match suite {
        Suite::Quick => 1 << 12,
        Suite::Full => 1 << 16,
    }
}

fn native_precisions(cfg: &StudyConfig) -> Vec<Precision> {
    cfg.precisions
        .iter()
        .filter_map(|p| match p {
            StudyPrecision::Real(p) if Precision::NATIVE.contains(p) => Some(*p),
            _ => None,
        })
        .collect()
}

fn sizes(cfg: &StudyConfig, quick: &[u64]) -> Vec<u64> {
    let mut v = cfg.sizes.clone().unwrap_or_else(|| match cfg.suite {
        Suite::Quick => quick.to_vec(),
        Suite::Full => THESIS_SIZES.to_vec(),
    });
    // N = 0 has no kernel; a user's 0 is skipped rather than failing the whole plan.
    v.retain(|&n| n > 0);
    v.dedup();
    v
}

fn points(cfg: &StudyConfig, sizes: &[u64], backends: &[Backend]) -> Vec<Point> {
    let mut out = Vec::new();
    for op in Op::BOTH {
        for &n in sizes {
            for &backend in backends {
                for &p in &native_precisions(cfg) {
                    out.push(Point {
                        workload: "intensity",
                        algorithm: op.name(),
                        data: Data::Nothing,
                        size: n,
                        seed: cfg.seed,
                        precision: StudyPrecision::Real(p),
                        backend,
                        flags: backend.is_gpu().then_some(FLAGS),
                    });
                }
            }
        }
    }
    out
}

/// The CPU points in `cfg`: every native precision × N × the configured thread counts. Quick:
/// N ∈ {20, 1000} on [`cpu_elements`] elements.
pub fn cpu_points(cfg: &StudyConfig) -> Vec<Point> {
    if !cfg.cpu {
        return Vec::new();
    }
    let mut threads: Vec<u32> = cfg.threads.iter().map(|&t| t.max(1) as u32).collect();
    threads.sort_unstable();
    threads.dedup();
    let backends: Vec<Backend> = threads
        .into_iter()
        .map(|threads| Backend::Cpu { threads })
        .collect();
    points(cfg, &sizes(cfg, &[20, 1000]), &backends)
}

/// The GPU launch configurations: grid 1 × block {1, 256, 512, 1024} (seed 000 Tables 13–15 and
/// one more), `full`, and `full`'s thread count in blocks of 256.
pub fn gpu_backends(full: (u32, u32)) -> Vec<Backend> {
    let mut v: Vec<Backend> = [1, 256, 512, 1024]
        .iter()
        .map(|&block| Backend::gpu(1, block))
        .collect();
    let threads = u64::from(full.0) * u64::from(full.1);
    let in_256 = u32::try_from(threads.div_ceil(256))
        .unwrap_or(u32::MAX)
        .max(1);
    for b in [
        Backend::gpu(full.0.max(1), full.1.max(1)),
        Backend::gpu(in_256, 256),
    ] {
        if !v.contains(&b) {
            v.push(b);
        }
    }
    v
}

/// The GPU points in `cfg` on a device whose full launch is `full`. Quick: N ∈ {1, 100, 1000,
/// 10000} (memory-bound, the largest straight-line pair kernel, the thesis's PTX size, the
/// longest), with one compile per (precision, op, N) shared by every configuration: 64 compiles
/// for the 8 default precisions, about 0.1–0.6 s each on the CI machine, except the
/// straight-line pair kernels of N = 100 at about 1 s each.
pub fn gpu_points(cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
    points(
        cfg,
        &sizes(cfg, &[1, 100, 1000, 10000]),
        &gpu_backends(full),
    )
}

// ---- The workload -------------------------------------------------------------------------------

/// The arithmetic-intensity workload (seed 000 ch. 6).
pub struct Intensity;

/// The intensity workload, as the registry lists it.
pub static INTENSITY: Intensity = Intensity;

impl Workload for Intensity {
    fn name(&self) -> &'static str {
        "intensity"
    }
    fn description(&self) -> &'static str {
        "generated kernels of 16 add or mul chains per thread, N operations (seed 000 ch. 6)"
    }
    fn record_names(&self) -> &'static [&'static str] {
        &["intensity"]
    }
    fn size_limit(&self) -> (u64, &'static str) {
        (1_000_000, "operations per thread")
    }
    fn cpu_points(&self, cfg: &StudyConfig) -> Vec<Point> {
        cpu_points(cfg)
    }
    fn gpu_points(&self, cfg: &StudyConfig, full: (u32, u32)) -> Vec<Point> {
        gpu_points(cfg, full)
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
    fn host_cost(&self, point: &Point, suite: Suite) -> Cost {
        host_cost(point, suite)
    }
    fn quantities(&self) -> &'static [(&'static str, &'static str)] {
        QUANTITIES
    }
}

/// What the records' `extra` holds (see the module doc); `ptx.` names a family of quantities.
const QUANTITIES: &[(&str, &str)] = &[
    (
        "ptx.",
        "floating-point instructions each thread executes, by <op>.<type>, from mantissa-ptx's \
         census of the generated PTX",
    ),
    (
        "fp32_ginstr_s",
        "f32 arithmetic instructions per second, in 10^9",
    ),
    (
        "fp64_ginstr_s",
        "f64 arithmetic instructions per second, in 10^9",
    ),
    (
        "fp32_of_peak",
        "the f32 instruction rate over the device's FMA instruction ceiling",
    ),
    (
        "fp64_of_peak",
        "the f64 instruction rate over the device's FMA instruction ceiling",
    ),
    (
        "saturated",
        "1 when either instruction rate is at least 0.7 of its ceiling, else 0",
    ),
    (
        "differs_from_cpu",
        "sampled threads whose GPU result differs in any bit from the CPU model (0 expected)",
    ),
    (
        "rel_err_mean",
        "mean relative error against exact arithmetic over the sampled elements",
    ),
    (
        "rel_err_max",
        "largest relative error against exact arithmetic over the sampled elements",
    ),
    ("elements", "elements of the CPU point's array"),
];

// ---- The CPU run --------------------------------------------------------------------------------

struct CpuRun<'a> {
    point: &'a Point,
    op: Op,
    pool: Option<&'a ThreadPool>,
    timing: CpuTiming<'a>,
    elements: usize,
}

impl PrecisionVisitor for CpuRun<'_> {
    type Output = Measurement;
    fn visit<T: Real>(self) -> Measurement {
        let (op, n) = (self.op, self.point.size);
        let xs: Vec<T> = inputs(op, self.elements, self.point.seed);
        let stop = self.timing.stop;
        // An element is at most 10^6 operations (a few ms): the check goes before each.
        let one = |x: &T| {
            if stop.requested() {
                T::zero()
            } else {
                model(x, op, n)
            }
        };
        let run = || -> Vec<T> {
            match self.pool {
                Some(pool) => pool.install(|| xs.par_iter().map(one).collect()),
                None => xs.iter().map(one).collect(),
            }
        };
        let (results, time) = self.timing.measure(run);
        let s = score(&xs, &results, op, n);
        let mut extra = BTreeMap::new();
        extra.insert("rel_err_mean".to_string(), s.rel_mean);
        extra.insert("rel_err_max".to_string(), s.rel_max);
        extra.insert("elements".to_string(), self.elements as f64);
        Measurement {
            status: Status::Ok,
            value: Some(s.value),
            reference: Some(s.reference),
            error: Some(s.error),
            time: Some(time),
            extra,
            note: None,
            build: None,
        }
    }
}

/// Measures one CPU point (`pool` is set when the point's backend has more than one thread).
pub fn measure_cpu(point: &Point, pool: Option<&ThreadPool>, timing: CpuTiming) -> Measurement {
    let (Some(op), StudyPrecision::Real(p)) = (Op::of_algorithm(point.algorithm), point.precision)
    else {
        unreachable!("the planner makes intensity points of add/mul in real precisions only")
    };
    // The suite is not in the point: the full suite's timing has the larger budget.
    let elements = if timing.budget >= CpuTiming::for_suite(Suite::Full).budget {
        cpu_elements(Suite::Full)
    } else {
        cpu_elements(Suite::Quick)
    };
    p.visit(CpuRun {
        point,
        op,
        pool,
        timing,
        elements,
    })
}

// ---- The GPU run --------------------------------------------------------------------------------

/// What a point costs the host: on the CPU, the suite's elements, each running 16 setup
/// operations, N on 16 independent chains and the final sum (the exact scoring of a few sampled
/// elements is negligible), the input and result arrays; on the GPU, the host copies of the
/// inputs and outputs.
pub fn host_cost(point: &Point, suite: Suite) -> Cost {
    let p = point.precision;
    let elements = match point.backend {
        Backend::Cpu { .. } => cpu_elements(suite) as f64,
        _ => point.backend.gpu_threads().unwrap_or(1) as f64,
    };
    let mut cost = Cost {
        bytes: (2.0 * value_bytes(p) as f64 * elements) as u64,
        work: vec![generation(elements)],
    };
    if let Backend::Cpu { threads } = point.backend {
        let ops = elements * (point.size as f64 + 32.0);
        cost.work
            .push(Work::new(p, ops, Pace::Independent).on(threads).timed());
    }
    cost
}

/// Device bytes a GPU point of this module allocates (checked against device memory first): one
/// input and one output value per thread (input copies rotated for timing are bounded by free
/// memory separately).
pub fn device_bytes(point: &Point) -> u64 {
    let value = match point.precision {
        StudyPrecision::Real(p) => DeviceType::of(p).map_or(0, DeviceType::bytes),
        StudyPrecision::Exact => 0,
    };
    match point.backend {
        Backend::Gpu { .. } => point.backend.gpu_threads().unwrap_or(0) * value * 2,
        _ => 0,
    }
}

/// A compiled kernel and what its PTX says.
struct Kernel {
    module: Module,
    name: String,
    /// FP instructions per thread by `<op>.<type>`.
    counts: BTreeMap<String, u64>,
}

/// Runs this module's GPU points, keeping compiled kernels between points.
pub struct GpuRunner<'g> {
    gpu: &'g Gpu,
    kernels: HashMap<(Precision, Op, u64, Option<u32>), Kernel>,
    /// `None` until first asked; then the device's ceilings if they could be had.
    ceilings: Option<Option<Ceilings>>,
}

impl<'g> GpuRunner<'g> {
    /// A runner for `gpu`; nothing is compiled until a point needs it.
    pub fn new(gpu: &'g Gpu) -> Self {
        GpuRunner {
            gpu,
            kernels: HashMap::new(),
            ceilings: None,
        }
    }

    /// The compiled kernel of (p, op, N), built on first use.
    fn kernel(
        &mut self,
        p: Precision,
        op: Op,
        n: u64,
        bound: Option<u32>,
    ) -> Result<&Kernel, GpuError> {
        let gpu = self.gpu;
        Ok(match self.kernels.entry((p, op, n, bound)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let source =
                    bounded_source(p, op, n, bound).map_err(|err| GpuError::BadArguments {
                        kernel: kernel_name(p, op, n),
                        problem: err.to_string(),
                    })?;
                let compiled = gpu.compile(&source, FLAGS)?;
                let name = kernel_name(p, op, n);
                let counts = ptx_counts(&compiled.ptx, &name, rounds(p, n));
                let module = gpu.load(&compiled)?;
                e.insert(Kernel {
                    module,
                    name,
                    counts,
                })
            }
        })
    }

    /// The device's FMA ceilings: cached by `mantissa devices`, else measured now (once).
    fn ceilings(&mut self) -> Option<&Ceilings> {
        let gpu = self.gpu;
        self.ceilings
            .get_or_insert_with(|| {
                gpu.report(&ReportOptions::default())
                    .ok()
                    .and_then(|r| r.ceilings)
            })
            .as_ref()
    }
}

impl GpuMeasure for GpuRunner<'_> {
    fn measure(&mut self, point: &Point, timing: TimingOptions) -> Result<Measurement, GpuError> {
        let (Some(op), StudyPrecision::Real(p), Some((grid, block))) = (
            Op::of_algorithm(point.algorithm),
            point.precision,
            point.backend.gpu_1d(),
        ) else {
            unreachable!("the planner makes intensity points of add/mul on grid × block launches")
        };
        let run = GpuRun {
            runner: self,
            point,
            op,
            grid,
            block,
            timing,
        };
        visit_device_type(p, run).unwrap_or_else(|| {
            Err(GpuError::BadArguments {
                kernel: kernel_name(p, op, point.size),
                problem: IntensityError::NoGpuPrecision(p).to_string(),
            })
        })
    }
}

/// What one launch gave: every thread's result and the timing, or why the configuration cannot
/// run on the device (one line).
#[derive(Debug)]
pub enum Launched<T> {
    /// `note`: set when the kernel had to be built for the block size (registers capped).
    Ran {
        /// Every thread's result.
        results: Vec<T>,
        /// The launch's timing.
        time: Timing,
        /// Set when the kernel had to be built for the block size (registers capped).
        note: Option<String>,
    },
    /// The configuration cannot run on the device: why, in one line.
    OutOfResources(String),
}

impl GpuRunner<'_> {
    /// Runs the kernel of `op` with N operations in T's precision on `grid × block` threads,
    /// thread `i` loading `xs[i]` (`xs` holds exactly one value per thread), timed as `timing`
    /// says; returns every thread's stored result.
    pub fn run_kernel<T: DeviceWords>(
        &mut self,
        op: Op,
        n: u64,
        grid: u32,
        block: u32,
        xs: &[T],
        timing: TimingOptions,
    ) -> Result<Launched<T>, GpuError> {
        let name = T::precision_name();
        let bad = |problem: String| GpuError::BadArguments {
            kernel: format!("intensity_{}_{name}_n{n}", op.name()),
            problem,
        };
        let p: Precision = name
            .parse()
            .map_err(|e: PrecisionError| bad(e.to_string()))?;
        let threads = grid as usize * block as usize;
        if xs.len() != threads {
            return Err(bad(format!(
                "{} values for {grid}×{block} = {threads} threads; give one per thread",
                xs.len()
            )));
        }
        let gpu = self.gpu;
        let info = gpu.info();
        if block > info.max_threads_per_block || grid > info.max_grid_dims.0 {
            return Ok(Launched::OutOfResources(format!(
                "{grid}×{block} exceeds the device's {} threads per block or {} blocks",
                info.max_threads_per_block, info.max_grid_dims.0
            )));
        }
        let default = {
            let k = self.kernel(p, op, n, None)?;
            k.module.resources(&k.name)?
        };
        // A block the default build's registers do not allow gets the kernel built for that
        // block size (`__launch_bounds__`): the compiler then caps the registers and spills the
        // rest to local memory, as the thesis's compiler did under Fermi's 63-register limit. The
        // arithmetic, so the results, are the same; the record's note says it.
        let (bound, note) = if block > default.max_threads_per_block {
            let k = self.kernel(p, op, n, Some(block))?;
            let res = k.module.resources(&k.name)?;
            if block > res.max_threads_per_block {
                return Ok(Launched::OutOfResources(format!(
                    "blocks of {block} threads: the kernel uses {} registers per thread even when built for that block size, which allows at most {} threads per block",
                    res.registers, res.max_threads_per_block
                )));
            }
            let note = format!(
                "built with __launch_bounds__({block}): {} registers and {} B of local memory per thread (the default build's {} registers allow {} threads per block)",
                res.registers, res.local_bytes, default.registers, default.max_threads_per_block
            );
            (Some(block), Some(note))
        } else {
            (None, None)
        };
        let kernel = self.kernel(p, op, n, bound)?;
        let mut words = Vec::with_capacity(threads * T::words());
        for x in xs {
            x.push_words(&mut words);
        }
        let data = T::Word::host(words);
        let sets = gpu.rotation_sets(data.bytes());
        let ins = gpu.upload_copies("intensity_in", &data, sets)?;
        let out = gpu.alloc_zeros("intensity_out", T::Word::DTYPE, threads * T::words())?;
        let dims = LaunchDims::new((grid, 1, 1), (block, 1, 1));
        let (module, kname) = (&kernel.module, kernel.name.as_str());
        let time = gpu.time_with(timing, sets, |i| {
            let args = [KernelArg::from(&ins[i % sets]), KernelArg::from(&out)];
            gpu.launch(module, kname, dims, &args)
        })?;
        let got = T::Word::unhost(gpu.download(&out)?).unwrap_or_default();
        if got.len() < threads * T::words() {
            return Err(GpuError::BadBuffer {
                what: "intensity output".into(),
                problem: format!(
                    "{} words read, {} expected",
                    got.len(),
                    threads * T::words()
                ),
            });
        }
        let results = got.chunks_exact(T::words()).map(T::from_words).collect();
        Ok(Launched::Ran {
            results,
            time,
            note,
        })
    }

    /// Floating-point instructions one thread of the (p, op, N) kernel executes, by
    /// `<op>.<type>` (compiling it if needed).
    pub fn counts(
        &mut self,
        p: Precision,
        op: Op,
        n: u64,
    ) -> Result<BTreeMap<String, u64>, GpuError> {
        Ok(self.kernel(p, op, n, None)?.counts.clone())
    }
}

/// Executed FP instruction counts of kernel `name` in `ptx` (empty if the PTX cannot be read).
pub fn ptx_counts(ptx: &str, name: &str, rounds: u64) -> BTreeMap<String, u64> {
    let parsed = mantissa_ptx::parse(ptx);
    let counts = parsed
        .module
        .functions()
        .find(|f| f.name == name && f.body.is_some())
        .map(|f| executed_counts(f, rounds))
        .unwrap_or_default();
    counts
}

struct GpuRun<'r, 'g> {
    runner: &'r mut GpuRunner<'g>,
    point: &'r Point,
    op: Op,
    grid: u32,
    block: u32,
    timing: TimingOptions,
}

impl DeviceTypeVisitor for GpuRun<'_, '_> {
    type Output = Result<Measurement, GpuError>;
    fn visit<T: DeviceWords>(self) -> Result<Measurement, GpuError> {
        let (op, n, grid, block) = (self.op, self.point.size, self.grid, self.block);
        let threads = grid as usize * block as usize;
        let xs: Vec<T> = inputs(op, threads, self.point.seed);
        let (results, t, build_note) =
            match self
                .runner
                .run_kernel(op, n, grid, block, &xs, self.timing)?
            {
                Launched::Ran {
                    results,
                    time,
                    note,
                } => (results, time, note),
                Launched::OutOfResources(why) => return Ok(Measurement::out_of_resources(why)),
            };
        let p = match self.point.precision {
            StudyPrecision::Real(p) => p,
            StudyPrecision::Exact => unreachable!("no exact intensity points"),
        };
        // The FP instruction counts of the default build: a bounded build differs only in
        // register allocation (spill loads and stores are not floating-point instructions).
        let kernel = self.runner.kernel(p, op, n, None)?;
        let mut mismatches = 0u32;
        for i in sample_indices(threads) {
            let want = model(&xs[i], op, n);
            if !same_bits(&want, &results[i]) {
                mismatches += 1;
            }
        }
        let s = score(&xs, &results, op, n);
        let counts = kernel.counts.clone();
        let mut extra: BTreeMap<String, f64> = counts
            .iter()
            .map(|(k, &v)| (format!("ptx.{k}"), v as f64))
            .collect();
        extra.insert("differs_from_cpu".into(), f64::from(mismatches));
        extra.insert("rel_err_mean".into(), s.rel_mean);
        extra.insert("rel_err_max".into(), s.rel_max);
        let seconds = t.median_ms * 1e-3;
        let ceilings = self.runner.ceilings().cloned();
        let mut saturated: Option<bool> = None;
        for (ty, ceiling) in [
            ("fp32", ceilings.as_ref().map(|c| c.fp32_fma_gflop_s)),
            ("fp64", ceilings.as_ref().map(|c| c.fp64_fma_gflop_s)),
        ] {
            let per_thread = arithmetic_of(&counts, if ty == "fp32" { "f32" } else { "f64" });
            if per_thread == 0 || seconds <= 0.0 {
                continue;
            }
            let rate = per_thread as f64 * threads as f64 / seconds / 1e9;
            extra.insert(format!("{ty}_ginstr_s"), rate);
            // An FMA instruction is two flops of the ceiling.
            if let Some(c) = ceiling.filter(|c| *c > 0.0) {
                let frac = rate / (c / 2.0);
                extra.insert(format!("{ty}_of_peak"), frac);
                saturated = Some(saturated.unwrap_or(false) || frac >= SATURATED);
            }
        }
        if let Some(sat) = saturated {
            extra.insert("saturated".into(), f64::from(u8::from(sat)));
        }
        let mismatch_note = (mismatches > 0).then(|| {
            format!("{mismatches} sampled threads differ from the CPU model (expected none)")
        });
        let notes: Vec<String> = [build_note, mismatch_note].into_iter().flatten().collect();
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        Ok(Measurement {
            status: Status::Ok,
            value: Some(s.value),
            reference: Some(s.reference),
            error: Some(s.error),
            time: Some(time_stats(&t)),
            extra,
            note,
            build: None,
        })
    }
}

/// Whether two values have the same words (NaNs equal whatever their payload).
pub fn same_bits<T: DeviceWords>(a: &T, b: &T) -> bool {
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    a.push_words(&mut wa);
    b.push_words(&mut wb);
    wa.iter()
        .zip(&wb)
        .all(|(x, y)| (x.is_nan() && y.is_nan()) || x.bits() == y.bits())
}

#[cfg(test)]
mod tests;
