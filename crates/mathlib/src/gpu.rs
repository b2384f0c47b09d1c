//! CUDA's functions measured on the GPU: evaluation at explicit inputs, the exhaustive binary32
//! sweep of a univariate function, and the screening of explicit f32 inputs.
//!
//! Each function and variant has two modules (sources in [`source`]):
//! - **eval**, compiled with the variant's flags (`-use_fast_math` for [`Variant::Fast`]), holds
//!   only the call under test (`sinf(x)`, `__fdividef(x, y)`, `x / y`): over a range of bit
//!   patterns (`eval_range`) or explicit inputs (`eval_list`), results to a buffer;
//! - **score**, always compiled with default flags so no variant's flags touch it, reads the
//!   inputs and results and computes the reference in double: CUDA's f64 function at the
//!   widened input, with a bound K·ulp64 on its error (K from the documented f64 error;
//!   lgamma between −23.5 and −2.2 by reflection, with an absolute bound). An input is *hard*
//!   when an f32 rounding boundary lies within the bound of the reference: only there can the
//!   double reference not decide the correctly rounded result, and those inputs are returned
//!   for the CPU's exact reference. Everywhere else the rounded reference is the correctly
//!   rounded value, and the error estimate |y − r| / ulp32(r) is within about 2^-26 ulps (the
//!   bound over the f32 spacing) of the exact error.
//!
//! A sweep runs in chunks of [`SWEEP_CHUNK`] inputs (eval writes the chunk's results, score
//! reads them) and reduces into [`BINS`] bins of 2^20 bit patterns: per block in registers and
//! shared memory, then a few atomics per block and bin. Errors are reduced as 64-bit keys
//! (the error as f32 bits, rounded up, above the input's bits), so each bin's maximum comes
//! with its argmax; the host then re-scores each bin's argmax to give its exact double error.
//! The per-input scoring logic is mirrored on the host in [`host`], where it is tested against
//! exact arithmetic.

pub mod host;
pub mod source;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use mantissa_gpu::{
    DType, DeviceBuffer, Gpu, GpuError, HostData, KernelArg, LaunchDims, Module, TimingOptions,
};
use serde::{Deserialize, Serialize};

use crate::format::Format;
use crate::functions::{Function, Variant};

/// Number of bins of a sweep: one per 2^20 consecutive bit patterns (input bits >> 20).
pub const BINS: usize = 4096;
/// log2 of the bit patterns per bin.
pub const BIN_SHIFT: u32 = 20;
/// The most hard inputs a sweep returns (their total is counted beyond it).
pub const HARD_CAP: usize = 1 << 22;
/// Inputs per sweep chunk: 2^28 f32 results are 1 GiB of device memory.
pub const SWEEP_CHUNK: u64 = 1 << 28;
/// Inputs per launch of the explicit-input kernels.
pub const LIST_CHUNK: usize = 1 << 24;
/// Threads per block of every kernel.
pub const BLOCK: u32 = 256;
/// Inputs per thread and tile in the sweep's scoring (a tile, BLOCK·ITEMS patterns, divides a
/// bin, so it never straddles two).
pub const ITEMS: u32 = 8;
/// Consecutive tiles each block of the sweep's scoring takes.
pub const TILES_PER_BLOCK: u64 = 8;

/// Bit patterns per scoring tile.
pub const TILE: u64 = BLOCK as u64 * ITEMS as u64;

/// The bin of an input's bit pattern.
pub fn bin_of(bits: u32) -> usize {
    (bits >> BIN_SHIFT) as usize
}

/// The device's verdict on one explicit input ([`MathGpu::score_f32`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Score {
    /// The function's result.
    pub result: f32,
    /// The error estimate in ulps (+inf for a special-value mismatch).
    pub ulps: f64,
    /// The double reference.
    pub reference: f64,
    /// A rounding boundary lies within the reference's error bound: decide it on the CPU.
    pub hard: bool,
}

/// A sweep's statistics over 2^20 consecutive bit patterns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// The largest error (+inf when any input had a special-value mismatch).
    pub max_ulps: f64,
    /// An input with the largest error (its bit pattern).
    pub argmax: u32,
    /// The sum of the finite errors.
    pub sum_ulps: f64,
    /// How many inputs had a finite error (the mean's divisor).
    pub count: u64,
    /// Decided on the device as not correctly rounded (hard inputs are not counted).
    pub not_correctly_rounded: u64,
    /// Inputs with a special-value mismatch (infinite error); `count + infinite` is the number
    /// of inputs swept in this bin.
    #[serde(default)]
    pub infinite: u64,
    /// Hard inputs (see [`Sweep::hard`]).
    #[serde(default)]
    pub hard: u64,
}

impl Bin {
    /// Inputs swept in this bin.
    pub fn inputs(&self) -> u64 {
        self.count + self.infinite
    }

    /// The mean finite error; 0 for a bin without finite errors.
    pub fn mean_ulps(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ulps / self.count as f64
        }
    }

    /// Adds another sweep's statistics of the same bin.
    pub fn merge(&mut self, other: &Bin) {
        if other.inputs() == 0 {
            return;
        }
        if self.inputs() == 0 || other.max_ulps > self.max_ulps {
            self.max_ulps = other.max_ulps;
            self.argmax = other.argmax;
        }
        self.sum_ulps += other.sum_ulps;
        self.count += other.count;
        self.not_correctly_rounded += other.not_correctly_rounded;
        self.infinite += other.infinite;
        self.hard += other.hard;
    }
}

/// The result of sweeping a range of binary32 bit patterns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// Inputs swept.
    pub inputs: u64,
    /// The largest error (device estimate; +inf when any special value mismatched).
    pub max_ulps: f64,
    /// An input with the largest error.
    pub argmax: u32,
    /// The sum of finite errors.
    pub sum_ulps: f64,
    /// How many errors were finite (`finite + infinite = inputs`).
    pub finite: u64,
    /// Decided on the device as not correctly rounded (hard inputs excluded).
    pub not_correctly_rounded: u64,
    /// Special-value mismatches (NaN against a number, an infinity against a finite value).
    pub infinite: u64,
    /// Hard inputs, sorted: the double reference lies within its error bound of an f32
    /// rounding boundary. At most [`HARD_CAP`] (which ones, when capped, is arbitrary).
    pub hard: Vec<u32>,
    /// How many hard inputs there were.
    pub hard_total: u64,
    /// [`BINS`] bins over the bit pattern.
    pub bins: Vec<Bin>,
    /// GPU time of the sweep (CUDA events around each chunk's kernels), milliseconds.
    pub device_ms: f64,
}

impl Sweep {
    /// An empty sweep (no inputs, empty bins).
    pub fn empty() -> Sweep {
        Sweep::from_bins(vec![Bin::default(); BINS], Vec::new(), 0, 0.0)
    }

    /// Totals from bins: inputs, the maximum (the first bin holding it), sums and counts.
    pub fn from_bins(bins: Vec<Bin>, mut hard: Vec<u32>, hard_total: u64, device_ms: f64) -> Sweep {
        hard.sort_unstable();
        let mut s = Sweep {
            inputs: 0,
            max_ulps: 0.0,
            argmax: 0,
            sum_ulps: 0.0,
            finite: 0,
            not_correctly_rounded: 0,
            infinite: 0,
            hard,
            hard_total,
            bins,
            device_ms,
        };
        let mut seen = false;
        for b in &s.bins {
            if b.inputs() == 0 {
                continue;
            }
            if !seen || b.max_ulps > s.max_ulps {
                s.max_ulps = b.max_ulps;
                s.argmax = b.argmax;
                seen = true;
            }
            s.inputs += b.inputs();
            s.sum_ulps += b.sum_ulps;
            s.finite += b.count;
            s.infinite += b.infinite;
            s.not_correctly_rounded += b.not_correctly_rounded;
        }
        s
    }

    /// The mean finite error.
    pub fn mean_ulps(&self) -> f64 {
        if self.finite == 0 {
            0.0
        } else {
            self.sum_ulps / self.finite as f64
        }
    }

    /// Combines sweeps of disjoint ranges (of the same function and variant).
    pub fn merge(self, other: Sweep) -> Sweep {
        let mut bins = self.bins;
        bins.resize(BINS, Bin::default());
        for (b, o) in bins.iter_mut().zip(&other.bins) {
            b.merge(o);
        }
        let mut hard = self.hard;
        hard.extend(other.hard);
        hard.truncate(HARD_CAP);
        Sweep::from_bins(
            bins,
            hard,
            self.hard_total + other.hard_total,
            self.device_ms + other.device_ms,
        )
    }
}

/// Which of a function's two modules.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Eval,
    Score,
}

type ModuleKey = (Kind, Function, Format, Variant);

/// CUDA's math functions on one GPU, with the modules built so far.
pub struct MathGpu {
    gpu: Arc<Gpu>,
    modules: Mutex<HashMap<ModuleKey, Arc<Module>>>,
    sweep_chunk: u64,
    list_chunk: usize,
}

impl std::fmt::Debug for MathGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MathGpu")
            .field("device", &self.gpu.info().name)
            .field("sweep_chunk", &self.sweep_chunk)
            .field("list_chunk", &self.list_chunk)
            .finish()
    }
}

/// A request that cannot be run (no such variant, a bivariate sweep, bad lengths).
fn bad_request(what: String, problem: impl Into<String>) -> GpuError {
    GpuError::BadBuffer {
        what,
        problem: problem.into(),
    }
}

impl MathGpu {
    /// Measures on `gpu`; nothing is compiled until first used.
    pub fn new(gpu: Gpu) -> Self {
        Self::with_shared(Arc::new(gpu))
    }

    /// Measures on a GPU shared with other users of it (e.g. the tests' shared device).
    pub fn with_shared(gpu: Arc<Gpu>) -> Self {
        MathGpu {
            gpu,
            modules: Mutex::new(HashMap::new()),
            sweep_chunk: SWEEP_CHUNK,
            list_chunk: LIST_CHUNK,
        }
    }

    /// Smaller chunks (inputs per sweep chunk, per list launch), so tests can cross chunk
    /// boundaries on small inputs. Both at least 1.
    pub fn with_chunks(mut self, sweep_chunk: u64, list_chunk: usize) -> Self {
        self.sweep_chunk = sweep_chunk.max(1);
        self.list_chunk = list_chunk.max(1);
        self
    }

    /// The device.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The module of `kind` for (f, format, variant), built on first use. The score module does
    /// not depend on the variant (nor the format: f32 only) and is shared between them.
    fn module(
        &self,
        kind: Kind,
        f: Function,
        format: Format,
        variant: Variant,
    ) -> Result<Arc<Module>, GpuError> {
        let key = match kind {
            Kind::Eval => (kind, f, format, variant),
            Kind::Score => (kind, f, Format::F32, Variant::Default),
        };
        // Held while building: two threads asking for one module build it once.
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(&key) {
            return Ok(m.clone());
        }
        let built = match kind {
            Kind::Eval => self.gpu.build(
                &source::eval_source(f, format, variant),
                source::eval_flags(variant),
            )?,
            Kind::Score => self
                .gpu
                .build(&source::score_source(f), mantissa_gpu::FlagSet::DEFAULT)?,
        };
        let m = Arc::new(built);
        modules.insert(key, m.clone());
        Ok(m)
    }

    fn check_variant(f: Function, format: Format, variant: Variant) -> Result<(), GpuError> {
        if f.has_variant(format, variant) {
            Ok(())
        } else {
            Err(bad_request(
                format!("{} ({}, {})", f.name(), format.name(), variant.name()),
                "no such variant: intrinsics exist for some f32 functions only",
            ))
        }
    }

    /// A grid-stride launch over `n` elements: enough blocks to fill the device several times,
    /// no more (each thread then loops).
    fn stride_dims(&self, n: u64) -> LaunchDims {
        let cap = u64::from(self.gpu.info().sm_count.max(1)) * 32;
        let blocks = n.div_ceil(u64::from(BLOCK)).clamp(1, cap);
        LaunchDims::new((blocks as u32, 1, 1), (BLOCK, 1, 1))
    }

    /// The function under test at explicit inputs, results widened to f64. f32 inputs come as
    /// f64 values that are exact f32 (they are narrowed); `ys` is ignored by univariate
    /// functions and must match `xs` in length for bivariate ones.
    pub fn eval(
        &self,
        f: Function,
        format: Format,
        variant: Variant,
        xs: &[f64],
        ys: &[f64],
    ) -> Result<Vec<f64>, GpuError> {
        Self::check_variant(f, format, variant)?;
        check_lengths(f, xs.len(), ys.len())?;
        let module = self.module(Kind::Eval, f, format, variant)?;
        let mut out = Vec::with_capacity(xs.len());
        for start in (0..xs.len()).step_by(self.list_chunk) {
            let end = (start + self.list_chunk).min(xs.len());
            let narrow = |v: &[f64]| match format {
                Format::F32 => HostData::F32(v.iter().map(|&x| x as f32).collect()),
                Format::F64 => HostData::F64(v.to_vec()),
            };
            let x = narrow(&xs[start..end]);
            let xb = self.gpu.upload("eval_x", &x)?;
            // Univariate functions never read y: the x buffer stands in.
            let yb = if f.arity() == 2 {
                Some(self.gpu.upload("eval_y", &narrow(&ys[start..end]))?)
            } else {
                None
            };
            let results = self.gpu.alloc_zeros("eval_out", x.dtype(), end - start)?;
            self.launch_eval_list(
                &module,
                &xb,
                yb.as_ref().unwrap_or(&xb),
                &results,
                (end - start) as u64,
            )?;
            match self.gpu.download(&results)? {
                HostData::F32(v) => out.extend(v.into_iter().map(f64::from)),
                HostData::F64(v) => out.extend(v),
                other => return Err(unexpected("eval_out", &other)),
            }
        }
        Ok(out)
    }

    fn launch_eval_list(
        &self,
        module: &Module,
        xs: &DeviceBuffer,
        ys: &DeviceBuffer,
        out: &DeviceBuffer,
        n: u64,
    ) -> Result<(), GpuError> {
        let args = [
            KernelArg::Buffer(xs),
            KernelArg::Buffer(ys),
            KernelArg::Buffer(out),
            KernelArg::from(n),
        ];
        self.gpu
            .launch(module, "eval_list", self.stride_dims(n), &args)
    }

    /// Screens explicit f32 inputs: per input the result, the error estimate, the double
    /// reference and whether the rounding is undecided (hard). `ys` as for [`MathGpu::eval`].
    pub fn score_f32(
        &self,
        f: Function,
        variant: Variant,
        xs: &[f32],
        ys: &[f32],
    ) -> Result<Vec<Score>, GpuError> {
        Self::check_variant(f, Format::F32, variant)?;
        check_lengths(f, xs.len(), ys.len())?;
        let eval = self.module(Kind::Eval, f, Format::F32, variant)?;
        let score = self.module(Kind::Score, f, Format::F32, variant)?;
        let mut out = Vec::with_capacity(xs.len());
        for start in (0..xs.len()).step_by(self.list_chunk) {
            let end = (start + self.list_chunk).min(xs.len());
            let n = (end - start) as u64;
            let xb = self
                .gpu
                .upload("score_x", &HostData::F32(xs[start..end].to_vec()))?;
            let yb = if f.arity() == 2 {
                Some(
                    self.gpu
                        .upload("score_y", &HostData::F32(ys[start..end].to_vec()))?,
                )
            } else {
                None
            };
            let yb = yb.as_ref().unwrap_or(&xb);
            let results = self
                .gpu
                .alloc_zeros("score_results", DType::F32, end - start)?;
            let ulps = self
                .gpu
                .alloc_zeros("score_ulps", DType::F64, end - start)?;
            let refs = self
                .gpu
                .alloc_zeros("score_refs", DType::F64, end - start)?;
            let flags = self
                .gpu
                .alloc_zeros("score_flags", DType::U32, end - start)?;
            self.launch_eval_list(&eval, &xb, yb, &results, n)?;
            let args = [
                KernelArg::Buffer(&xb),
                KernelArg::Buffer(yb),
                KernelArg::Buffer(&results),
                KernelArg::from(n),
                KernelArg::Buffer(&ulps),
                KernelArg::Buffer(&refs),
                KernelArg::Buffer(&flags),
            ];
            self.gpu
                .launch(&score, "score_list", self.stride_dims(n), &args)?;
            let (results, ulps, refs, flags) = (
                f32s(self.gpu.download(&results)?)?,
                f64s(self.gpu.download(&ulps)?)?,
                f64s(self.gpu.download(&refs)?)?,
                u32s(self.gpu.download(&flags)?)?,
            );
            for i in 0..results.len() {
                out.push(Score {
                    result: results[i],
                    ulps: ulps[i],
                    reference: refs[i],
                    hard: flags[i] & 1 != 0,
                });
            }
        }
        Ok(out)
    }

    /// Sweeps the binary32 bit patterns `range` (within 0..2^32) of a univariate function:
    /// `progress(done, total)` after each chunk.
    pub fn sweep_f32(
        &self,
        f: Function,
        variant: Variant,
        range: Range<u64>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Sweep, GpuError> {
        Self::check_variant(f, Format::F32, variant)?;
        let what = || format!("sweep of {} (f32, {})", f.name(), variant.name());
        if f.arity() != 1 {
            return Err(bad_request(
                what(),
                "only univariate functions are swept; screen bivariate ones with score_f32",
            ));
        }
        if range.start > range.end || range.end > 1 << 32 {
            return Err(bad_request(
                what(),
                format!("range {range:?} is not within 0..2^32"),
            ));
        }
        let total = range.end - range.start;
        if total == 0 {
            return Ok(Sweep::empty());
        }
        let eval = self.module(Kind::Eval, f, Format::F32, variant)?;
        let score = self.module(Kind::Score, f, Format::F32, variant)?;
        let gpu = &*self.gpu;
        let chunk = self.sweep_chunk.min(total);
        let results = gpu.alloc_zeros("sweep_results", DType::F32, chunk as usize)?;
        let bin_key = gpu.alloc_zeros("bin_key", DType::U64, BINS)?;
        let bin_sum = gpu.alloc_zeros("bin_sum", DType::F64, BINS)?;
        let bin_counts = gpu.alloc_zeros("bin_counts", DType::U64, 4 * BINS)?;
        let hard = gpu.alloc_zeros("hard", DType::U32, HARD_CAP)?;
        let hard_count = gpu.alloc_zeros("hard_count", DType::U64, 1)?;
        let once = TimingOptions { warmup: 0, reps: 1 };
        let mut device_ms = 0.0;
        let mut start = range.start;
        while start < range.end {
            let n = chunk.min(range.end - start);
            let (tiles, blocks) = score_grid(start, n);
            debug_assert!(tiles > 0);
            let timing = gpu.time_with(once, 1, |_| {
                let args = [
                    KernelArg::from(start),
                    KernelArg::from(n),
                    KernelArg::Buffer(&results),
                ];
                gpu.launch(&eval, "eval_range", self.stride_dims(n), &args)?;
                let args = [
                    KernelArg::from(start),
                    KernelArg::from(n),
                    KernelArg::Buffer(&results),
                    KernelArg::from(TILES_PER_BLOCK),
                    KernelArg::Buffer(&bin_key),
                    KernelArg::Buffer(&bin_sum),
                    KernelArg::Buffer(&bin_counts),
                    KernelArg::Buffer(&hard),
                    KernelArg::Buffer(&hard_count),
                    KernelArg::from(HARD_CAP as u64),
                ];
                let dims = LaunchDims::new((blocks as u32, 1, 1), (BLOCK, 1, 1));
                gpu.launch(&score, "score_range", dims, &args)
            })?;
            device_ms += timing.median_ms;
            start += n;
            progress(start - range.start, total);
        }
        let keys = u64s(gpu.download(&bin_key)?)?;
        let sums = f64s(gpu.download(&bin_sum)?)?;
        let counts = u64s(gpu.download(&bin_counts)?)?;
        let hard_total = u64s(gpu.download(&hard_count)?)?[0];
        let mut hard_inputs = u32s(gpu.download(&hard)?)?;
        hard_inputs.truncate(hard_total.min(HARD_CAP as u64) as usize);
        let mut bins = assemble_bins(&keys, &sums, &counts);
        // The keys hold each maximum to f32 precision: re-score the argmaxes for their exact
        // double estimates (the same kernels give the same results).
        let occupied: Vec<usize> = (0..BINS).filter(|&b| bins[b].inputs() > 0).collect();
        let argmaxes: Vec<f32> = occupied
            .iter()
            .map(|&b| f32::from_bits(bins[b].argmax))
            .collect();
        let rescored = self.score_f32(f, variant, &argmaxes, &[])?;
        for (&b, s) in occupied.iter().zip(&rescored) {
            bins[b].max_ulps = s.ulps;
        }
        let sweep = Sweep::from_bins(bins, hard_inputs, hard_total, device_ms);
        if sweep.inputs != total {
            return Err(bad_request(
                what(),
                format!("the bins count {} inputs, {total} were swept", sweep.inputs),
            ));
        }
        Ok(sweep)
    }
}

/// Tiles of the chunk [start, start + n) and blocks of the scoring launch (tiles are aligned to
/// multiples of [`TILE`] bit patterns, so the first and last may be partial).
pub fn score_grid(start: u64, n: u64) -> (u64, u64) {
    let first = start / TILE;
    let last = (start + n).div_ceil(TILE);
    let tiles = last - first;
    (tiles, tiles.div_ceil(TILES_PER_BLOCK))
}

/// Bins from the device's arrays: `keys` packed (error key, input), `sums`, and four counters
/// per bin (finite, infinite, not correctly rounded, hard). `max_ulps` is the key's value
/// until the argmax is re-scored.
pub fn assemble_bins(keys: &[u64], sums: &[f64], counts: &[u64]) -> Vec<Bin> {
    (0..BINS)
        .map(|b| {
            let c = &counts[4 * b..4 * b + 4];
            let (key, argmax) = host::unpack(keys[b]);
            if c[0] + c[1] == 0 {
                return Bin::default();
            }
            Bin {
                max_ulps: host::key_value(key),
                argmax,
                sum_ulps: sums[b],
                count: c[0],
                not_correctly_rounded: c[2],
                infinite: c[1],
                hard: c[3],
            }
        })
        .collect()
}

fn check_lengths(f: Function, xs: usize, ys: usize) -> Result<(), GpuError> {
    if f.arity() == 2 && xs != ys {
        return Err(bad_request(
            format!("inputs of {}", f.name()),
            format!("{xs} x values and {ys} y values: a bivariate function needs as many of each"),
        ));
    }
    Ok(())
}

fn unexpected(name: &str, got: &HostData) -> GpuError {
    bad_request(
        format!("buffer '{name}'"),
        format!("came back as {}", got.dtype()),
    )
}

fn f32s(d: HostData) -> Result<Vec<f32>, GpuError> {
    match d {
        HostData::F32(v) => Ok(v),
        other => Err(unexpected("f32 results", &other)),
    }
}

fn f64s(d: HostData) -> Result<Vec<f64>, GpuError> {
    match d {
        HostData::F64(v) => Ok(v),
        other => Err(unexpected("f64 results", &other)),
    }
}

fn u32s(d: HostData) -> Result<Vec<u32>, GpuError> {
    match d {
        HostData::U32(v) => Ok(v),
        other => Err(unexpected("u32 results", &other)),
    }
}

fn u64s(d: HostData) -> Result<Vec<u64>, GpuError> {
    match d {
        HostData::U64(v) => Ok(v),
        other => Err(unexpected("u64 results", &other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lead's runner may share one MathGpu between threads.
    #[test]
    fn math_gpu_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<MathGpu>();
        check::<Sweep>();
    }

    #[test]
    fn tiles_divide_bins_and_the_grid_covers_every_chunk() {
        assert_eq!(
            (1u64 << BIN_SHIFT) % TILE,
            0,
            "a tile never straddles two bins"
        );
        assert_eq!(BINS as u64, (1u64 << 32) >> BIN_SHIFT);
        assert_eq!(bin_of(0x3f80_0000), 0x3f8);
        assert_eq!(bin_of(u32::MAX), BINS - 1);
        for (start, n) in [
            (0u64, 1u64),
            (0, TILE),
            (1, TILE),
            (TILE - 1, 2),
            (0x3f80_0123, 3_000_001),
            (0, 1 << 28),
            ((1 << 32) - 5, 5),
            (12345, 1),
        ] {
            let (tiles, blocks) = score_grid(start, n);
            // The blocks' tile runs, as the kernel computes them, cover [start, start + n).
            let first = start / TILE;
            let last = (start + n).div_ceil(TILE);
            assert_eq!(tiles, last - first);
            let covered: u64 = (0..blocks)
                .map(|b| {
                    let lo = first + b * TILES_PER_BLOCK;
                    let hi = (lo + TILES_PER_BLOCK).min(last);
                    assert!(lo < hi, "block {b} of {blocks} has no tiles");
                    (hi * TILE).min(start + n) - (lo * TILE).max(start)
                })
                .sum();
            assert_eq!(covered, n, "start {start}, n {n}");
            assert!(blocks <= i32::MAX as u64);
        }
    }

    fn bin(max: f64, argmax: u32, sum: f64, count: u64, ncr: u64, infinite: u64, hard: u64) -> Bin {
        Bin {
            max_ulps: max,
            argmax,
            sum_ulps: sum,
            count,
            not_correctly_rounded: ncr,
            infinite,
            hard,
        }
    }

    #[test]
    fn assembled_bins_and_totals() {
        let mut keys = vec![0u64; BINS];
        let mut sums = vec![0.0; BINS];
        let mut counts = vec![0u64; 4 * BINS];
        // Bin 3: max 2.5 at 0x0030_0007; bin 0x3f8: an infinite error; bin 0: max 0 at input 0.
        keys[3] = host::pack(host::error_key(2.5), 0x0030_0007);
        sums[3] = 10.0;
        counts[12..16].copy_from_slice(&[100, 0, 7, 1]);
        keys[0x3f8] = host::pack(host::error_key(f64::INFINITY), 0x3f80_0001);
        sums[0x3f8] = 4.0;
        counts[4 * 0x3f8..4 * 0x3f8 + 4].copy_from_slice(&[50, 2, 3, 0]);
        counts[0..4].copy_from_slice(&[9, 0, 0, 0]);
        let bins = assemble_bins(&keys, &sums, &counts);
        assert_eq!(bins[3], bin(2.5, 0x0030_0007, 10.0, 100, 7, 0, 1));
        assert_eq!(bins[0x3f8].max_ulps, f64::INFINITY);
        assert_eq!(bins[0], bin(0.0, 0, 0.0, 9, 0, 0, 0));
        assert_eq!(bins[1], Bin::default());
        let s = Sweep::from_bins(bins, vec![9, 3, 5], 3, 1.5);
        assert_eq!(s.inputs, 161);
        assert_eq!(
            (s.finite, s.infinite, s.not_correctly_rounded),
            (159, 2, 10)
        );
        assert_eq!((s.max_ulps, s.argmax), (f64::INFINITY, 0x3f80_0001));
        assert_eq!(s.sum_ulps, 14.0);
        assert_eq!(s.hard, [3, 5, 9]);
        assert_eq!(s.mean_ulps(), 14.0 / 159.0);
        let e = Sweep::empty();
        assert_eq!((e.inputs, e.max_ulps, e.bins.len()), (0, 0.0, BINS));
    }

    #[test]
    fn merging_sweeps_of_disjoint_ranges() {
        let mut a = vec![Bin::default(); BINS];
        let mut b = vec![Bin::default(); BINS];
        a[1] = bin(1.5, 0x0010_0001, 3.0, 10, 1, 0, 0);
        b[1] = bin(2.5, 0x0010_0009, 4.0, 20, 2, 1, 1);
        b[2] = bin(0.0, 0x0020_0000, 0.0, 5, 0, 0, 0);
        a[7] = bin(0.75, 0x0070_0000, 0.75, 1, 0, 0, 0);
        let sa = Sweep::from_bins(a.clone(), vec![7], 1, 1.0);
        let sb = Sweep::from_bins(b, vec![2, 11], 2, 2.0);
        let m = sa.clone().merge(sb);
        assert_eq!(m.inputs, 37);
        assert_eq!(m.bins[1], bin(2.5, 0x0010_0009, 7.0, 30, 3, 1, 1));
        assert_eq!((m.max_ulps, m.argmax), (2.5, 0x0010_0009));
        assert_eq!(m.hard, [2, 7, 11]);
        assert_eq!((m.hard_total, m.device_ms), (3, 3.0));
        // Merging with an empty sweep changes nothing but the time.
        let same = sa.clone().merge(Sweep::empty());
        assert_eq!(same.bins, a);
        assert_eq!((same.inputs, same.max_ulps), (sa.inputs, sa.max_ulps));
        // A bin empty on one side takes the other's maximum even when it is 0.
        let mut z = vec![Bin::default(); BINS];
        z[4] = bin(0.0, 0x0040_0003, 0.0, 2, 0, 0, 0);
        let m = Sweep::empty().merge(Sweep::from_bins(z, vec![], 0, 0.0));
        assert_eq!(m.bins[4].argmax, 0x0040_0003);
        let json = serde_json::to_string(&m.bins[4]).unwrap();
        let back: Bin = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m.bins[4]);
    }
}
