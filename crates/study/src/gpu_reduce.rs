//! Reductions on the GPU for the precision study: sums, dot products and two π quadratures
//! reduced **entirely in the precision under test** on the device, down to the final value (no
//! partial sums combined in f64 on the host), plus an exact f64 sum.
//!
//! Order. Every reduction runs the same two levels (`cuda/reduce.cu` says it in CUDA terms):
//! thread `t` of the `grid × block` threads walks the 2-element vectors `t, t + T, t + 2T, …`
//! (`T` threads in all) and accumulates their elements serially from zero; each block folds its
//! threads' values by a fixed shared-memory tree (halving strides over the block size rounded up
//! to a power of two); a second launch of one block ([`combine_shape`]) folds the block values the
//! same way (skipped when the first launch has one block). [`sum_model`], [`dot_model`],
//! [`pi_midpoint_model`], [`pi_leibniz_model`] and [`sum_f64_in_model`] replay exactly that order
//! on the CPU with the Rust arithmetic, so a GPU result equals its model bit for bit (the GPU
//! tests check this for every precision and many shapes); the gap between a model and an exact
//! reference is then the precision's own error, not the GPU's.
//!
//! Arithmetic. f32/f64 use explicit round-to-nearest intrinsics (`__fadd_rn`, `__fma_rn`, …), the
//! pair types the twin's functions (`mantissa.cuh`), so no flag set changes a result; the kernels
//! are compiled with [`FlagSet::DEFAULT`]. The operations are those of [`Real`]: `+` (for f64x2
//! AccurateDWPlusDW, for the composites Table 4's addition), `*`, `/`, `mul_add` (one FMA for
//! f32/f64, the type's product then its sum otherwise), `from_i64` and `from_f64`.
//!
//! Exact sum. [`GpuReducer::exact_sum`] returns the correctly rounded f64 of the exact sum of any
//! f64 input (`cuda/exact_sum.cu`): per thread a three-double TwoSum expansion whose rare nonzero
//! residuals go into a block superaccumulator of 67 integer limbs in shared memory, then one
//! atomic add per nonzero limb per block into global limbs. The host reads the 67 limbs and the
//! special-value flags and rounds the exact integer once ([`round_limbs`]): exact integer
//! arithmetic, not a floating-point combination.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;

use mantissa_gpu::{
    twin, DType, DeviceBuffer, FlagSet, Gpu, GpuError, HostData, KernelArg, LaunchDims, Module,
    Scalar, Source, Timing, TimingOptions,
};
use mantissa_gpu::{words_of, DeviceWords, Word};
use mantissa_num::big::round_limbs;
use mantissa_num::Real;

/// The reduction kernels (templates over the precision), compiled after the twin header.
/// The flag set of every reduction kernel: the twin's intrinsics make the arithmetic the same
/// under any flags.
pub const FLAGS: FlagSet = FlagSet::DEFAULT;

const REDUCE_CU: &str = include_str!("../cuda/reduce.cu");
/// The exact-sum kernels.
const EXACT_CU: &str = include_str!("../cuda/exact_sum.cu");

/// Limbs of the exact accumulator: 32-bit digits from 2^-1074 up past 2^1024 (67 · 32 = 2144 bits
/// cover the 2098 bits of the largest double plus carries).
pub const EXACT_LIMBS: usize = 67;
/// Elements per thread vector: every reduction walks its input in pairs (16-byte loads for f64).
const VECTOR: usize = 2;
/// Largest block of the second launch.
const COMBINE_BLOCK: u32 = 256;
/// The exact kernels' limbs stay exact below 2^31 additions each; see `cuda/exact_sum.cu`.
const EXACT_MAX_ADDITIONS: u64 = 1 << 31;

/// A launch configuration: `grid` blocks of `block` threads (displayed `64×32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Shape {
    /// Blocks (1 to the device's grid limit).
    pub grid: u32,
    /// Threads per block (1 to 1024; any count, not only powers of two).
    pub block: u32,
}

impl Shape {
    /// `grid` blocks of `block` threads.
    pub const fn new(grid: u32, block: u32) -> Shape {
        Shape { grid, block }
    }

    /// A grid that fills the device: 2 blocks of 1024 threads per multiprocessor (2048 resident
    /// threads, each with four 16-byte loads in flight). On an H200 (2^27 doubles, 2026-11-22,
    /// docs/BENCHMARKS.md) this was the fastest or within noise of it for the f64 sum (0.239 ms),
    /// the f64x2 sum of f64 data (0.243 ms) and the exact sum (0.259 ms); 4 × 256 per SM was as
    /// fast for f64 but 5% slower for f64x2, half the threads up to 1.45× slower.
    pub fn full_device(gpu: &Gpu) -> Shape {
        Shape::for_sms(gpu.info().sm_count)
    }

    /// The [`Shape::full_device`] grid of a device with `sm_count` multiprocessors, for planning
    /// without the device at hand (`mantissa slurm` on a login node).
    pub fn for_sms(sm_count: u32) -> Shape {
        Shape::new(sm_count.max(1) * 2, 1024)
    }

    /// Threads in all.
    pub fn threads(self) -> u64 {
        u64::from(self.grid) * u64::from(self.block)
    }

    fn dims(self, value_bytes: usize) -> LaunchDims {
        LaunchDims::new((self.grid, 1, 1), (self.block, 1, 1))
            .with_shared_bytes(self.block.saturating_mul(value_bytes as u32))
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}×{}", self.grid, self.block)
    }
}

/// The one-block shape of the second launch that folds `blocks` block values.
pub fn combine_shape(blocks: u32) -> Shape {
    Shape::new(1, blocks.max(1).next_power_of_two().min(COMBINE_BLOCK))
}

// ---- CPU models ---------------------------------------------------------------------------------

/// One block level: for each block, its threads' serial accumulations (`step(acc, i)` adds element
/// `i`) folded by the shared-memory tree. Returns one value per block.
fn stage_model<T: Real>(
    n: usize,
    shape: Shape,
    vector: usize,
    step: &dyn Fn(T, usize) -> T,
) -> Vec<T> {
    let threads = shape.threads() as usize;
    let vectors = n.div_ceil(vector);
    let block = shape.block as usize;
    (0..shape.grid as usize)
        .map(|b| {
            let mut vals: Vec<T> = (0..block)
                .map(|tid| {
                    let mut acc = T::zero();
                    let mut v = b * block + tid;
                    while v < vectors {
                        for i in v * vector..((v + 1) * vector).min(n) {
                            acc = step(acc, i);
                        }
                        v += threads;
                    }
                    acc
                })
                .collect();
            let mut s = block.next_power_of_two() / 2;
            while s > 0 {
                for tid in 0..s.min(block.saturating_sub(s)) {
                    vals[tid] = vals[tid].clone() + vals[tid + s].clone();
                }
                s /= 2;
            }
            vals.swap_remove(0)
        })
        .collect()
}

/// The second level: the block values folded by one block of [`combine_shape`].
fn combine_model<T: Real>(mut partials: Vec<T>) -> T {
    if partials.len() == 1 {
        return partials.swap_remove(0);
    }
    let shape = combine_shape(partials.len() as u32);
    let step = |acc: T, i: usize| acc + partials[i].clone();
    stage_model(partials.len(), shape, VECTOR, &step).swap_remove(0)
}

fn reduce_model<T: Real>(n: usize, shape: Shape, vector: usize, step: &dyn Fn(T, usize) -> T) -> T {
    combine_model(stage_model(n, shape, vector, step))
}

/// Σ xs in T, in exactly the order [`GpuReducer::sum`] adds (see the module doc).
pub fn sum_model<T: Real>(xs: &[T], shape: Shape) -> T {
    reduce_model(xs.len(), shape, VECTOR, &|acc: T, i| acc + xs[i].clone())
}

/// Σ xs of f64 data accumulated in T with [`DeviceWords::add_f64`], as [`GpuReducer::sum_f64_in`].
pub fn sum_f64_in_model<T: DeviceWords>(xs: &[f64], shape: Shape) -> T {
    reduce_model(xs.len(), shape, VECTOR, &|acc: T, i| acc.add_f64(xs[i]))
}

/// Σ a_i·b_i in T as [`GpuReducer::dot`]: `mul_add(a_i, b_i, acc)` when `fused`, else
/// `acc + a_i·b_i`. Uses the shorter length of `a` and `b`.
pub fn dot_model<T: Real>(a: &[T], b: &[T], fused: bool, shape: Shape) -> T {
    let n = a.len().min(b.len());
    let step = |acc: T, i: usize| {
        if fused {
            a[i].mul_add(&b[i], &acc)
        } else {
            acc + a[i].clone() * b[i].clone()
        }
    };
    reduce_model(n, shape, VECTOR, &step)
}

/// The constants of the midpoint rule in T: h = 1/n, 1/2, 4, 1.
fn midpoint_constants<T: Real>(steps: u64) -> [T; 4] {
    let n = i64::try_from(steps).unwrap_or(i64::MAX);
    [
        T::one() / T::from_i64(n),
        T::from_f64(0.5),
        T::from_f64(4.0),
        T::one(),
    ]
}

/// The midpoint rule for ∫₀¹ 4/(1+x²) dx as [`GpuReducer::pi_midpoint`]: h = 1/n,
/// x_i = (from_i64(i) + 1/2)·h, f_i = 4/(1 + x_i·x_i), result h·Σf_i, all in T.
pub fn pi_midpoint_model<T: Real>(steps: u64, shape: Shape) -> T {
    let [h, half, four, one] = midpoint_constants::<T>(steps);
    let step = |acc: T, i: usize| {
        let x = (T::from_i64(i as i64) + half.clone()) * h.clone();
        acc + four.clone() / (one.clone() + x.clone() * x)
    };
    // Midpoint terms are generated, not loaded: one index per step of the walk.
    let sum = reduce_model(steps as usize, shape, 1, &step);
    h * sum
}

/// The constants of the Leibniz series in T: 1, −1, 4.
fn leibniz_constants<T: Real>() -> [T; 3] {
    [T::one(), T::from_f64(-1.0), T::from_f64(4.0)]
}

/// The Leibniz series as [`GpuReducer::pi_leibniz`]: 4·Σ_{k<terms} (±1)/from_i64(2k+1), serial.
pub fn pi_leibniz_model<T: Real>(terms: u64) -> T {
    let [one, minus_one, four] = leibniz_constants::<T>();
    let mut acc = T::zero();
    for k in 0..terms {
        let sign = if k & 1 == 1 { &minus_one } else { &one };
        acc = acc + sign.clone() / T::from_i64((2 * k + 1) as i64);
    }
    four * acc
}

// ---- The GPU side -------------------------------------------------------------------------------

/// Runs the reductions on one GPU. Modules are built on first use, one per precision (and one for
/// the exact sum), and kept for later calls.
pub struct GpuReducer<'g> {
    gpu: &'g Gpu,
    modules: HashMap<String, Module>,
    exact: Option<Module>,
}

/// Bytes of one value of T.
fn value_bytes<T: DeviceWords>() -> usize {
    T::words() * T::Word::DTYPE.size()
}

/// A kernel to run: its name and arguments for each input set.
struct Work<'a> {
    kernel: String,
    arg_sets: Vec<Vec<KernelArg<'a>>>,
}

impl<'g> GpuReducer<'g> {
    /// A reducer on `gpu`; nothing is compiled until a reduction of a precision first runs.
    pub fn new(gpu: &'g Gpu) -> Self {
        GpuReducer {
            gpu,
            modules: HashMap::new(),
            exact: None,
        }
    }

    /// The module of precision T, built on first use.
    fn module<T: DeviceWords>(&mut self) -> Result<&Module, GpuError> {
        Ok(match self.modules.entry(T::precision_name()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(self.gpu.build(&reduce_source::<T>(), FLAGS)?),
        })
    }

    /// Σ xs in precision T: each thread accumulates its vectors serially in T, a tree in T inside
    /// each block, then one block combines the block values in T (see the module doc).
    pub fn sum<T: DeviceWords>(
        &mut self,
        xs: &[T],
        shape: Shape,
        timing: TimingOptions,
    ) -> Result<(T, Timing), GpuError> {
        let data = words_of(xs);
        let sets = self.gpu.rotation_sets(data.bytes());
        let inputs = self.gpu.upload_copies("sum_x", &data, sets)?;
        let n = Scalar::U64(xs.len() as u64);
        let work = Work {
            kernel: format!("sum_{}", T::precision_name()),
            arg_sets: inputs
                .iter()
                .map(|x| vec![KernelArg::from(x), KernelArg::Scalar(n)])
                .collect(),
        };
        self.reduce::<T>(work, shape, timing)
    }

    /// Σ xs of f64 data accumulated in T by [`DeviceWords::add_f64`] per element (f64x2: DWPlusFP,
    /// `f64x2_add_base`), then reduced in T as [`GpuReducer::sum`].
    pub fn sum_f64_in<T: DeviceWords>(
        &mut self,
        xs: &[f64],
        shape: Shape,
        timing: TimingOptions,
    ) -> Result<(T, Timing), GpuError> {
        let data = HostData::F64(if xs.is_empty() {
            vec![0.0]
        } else {
            xs.to_vec()
        });
        let sets = self.gpu.rotation_sets(data.bytes());
        let inputs = self.gpu.upload_copies("sum_f64_x", &data, sets)?;
        let n = Scalar::U64(xs.len() as u64);
        let work = Work {
            kernel: format!("sum_f64_in_{}", T::precision_name()),
            arg_sets: inputs
                .iter()
                .map(|x| vec![KernelArg::from(x), KernelArg::Scalar(n)])
                .collect(),
        };
        self.reduce::<T>(work, shape, timing)
    }

    /// Σ a_i·b_i in T. `fused`: acc = mul_add(a_i, b_i, acc) (one FMA for f32/f64, the type's
    /// product then its sum for the pair types); otherwise acc = acc + a_i·b_i. Slices of
    /// different lengths are refused.
    pub fn dot<T: DeviceWords>(
        &mut self,
        a: &[T],
        b: &[T],
        fused: bool,
        shape: Shape,
        timing: TimingOptions,
    ) -> Result<(T, Timing), GpuError> {
        let kernel = format!(
            "dot{}_{}",
            if fused { "_fused" } else { "" },
            T::precision_name()
        );
        if a.len() != b.len() {
            return Err(GpuError::BadArguments {
                kernel,
                problem: format!(
                    "operands of lengths {} and {}; they must match",
                    a.len(),
                    b.len()
                ),
            });
        }
        let (da, db) = (words_of(a), words_of(b));
        let sets = self.gpu.rotation_sets(da.bytes() + db.bytes());
        let xa = self.gpu.upload_copies("dot_a", &da, sets)?;
        let xb = self.gpu.upload_copies("dot_b", &db, sets)?;
        let n = Scalar::U64(a.len() as u64);
        let work = Work {
            kernel,
            arg_sets: xa
                .iter()
                .zip(&xb)
                .map(|(x, y)| vec![KernelArg::from(x), KernelArg::from(y), KernelArg::Scalar(n)])
                .collect(),
        };
        self.reduce::<T>(work, shape, timing)
    }

    /// The midpoint rule for ∫₀¹ 4/(1+x²) dx with `steps` steps, every operation in T (see
    /// [`pi_midpoint_model`]); indices are 64-bit, so up to 10^9 steps and beyond work.
    pub fn pi_midpoint<T: DeviceWords>(
        &mut self,
        steps: u64,
        shape: Shape,
        timing: TimingOptions,
    ) -> Result<(T, Timing), GpuError> {
        let consts = self
            .gpu
            .upload("pi_consts", &words_of(&midpoint_constants::<T>(steps)))?;
        let work = Work {
            kernel: format!("pi_midpoint_{}", T::precision_name()),
            arg_sets: vec![vec![
                KernelArg::Scalar(Scalar::U64(steps)),
                KernelArg::from(&consts),
            ]],
        };
        let p = T::precision_name();
        let scale = format!("scale_{p}");
        self.reduce_then::<T>(work, shape, timing, Some((&scale, &consts)))
    }

    /// The Leibniz series 4·Σ_{k<terms} (±1)/from_i64(2k+1) on one GPU thread, serially in T.
    pub fn pi_leibniz<T: DeviceWords>(
        &mut self,
        terms: u64,
        timing: TimingOptions,
    ) -> Result<(T, Timing), GpuError> {
        let gpu = self.gpu;
        let consts = gpu.upload("leibniz_consts", &words_of(&leibniz_constants::<T>()))?;
        let out = gpu.alloc_zeros("leibniz_out", T::Word::DTYPE, T::words())?;
        let module = self.module::<T>()?;
        let kernel = format!("pi_leibniz_{}", T::precision_name());
        let args = [
            KernelArg::Scalar(Scalar::U64(terms)),
            KernelArg::from(&consts),
            KernelArg::from(&out),
        ];
        let t = gpu.time_with(timing, 1, |_| {
            gpu.launch(
                module,
                &kernel,
                LaunchDims::new((1, 1, 1), (1, 1, 1)),
                &args,
            )
        })?;
        Ok((read_value::<T>(gpu, &out)?, t))
    }

    /// Runs `work` (the first level, one launch per timed run) then the second level, and reads
    /// the result.
    fn reduce<T: DeviceWords>(
        &mut self,
        work: Work<'_>,
        shape: Shape,
        timing: TimingOptions,
    ) -> Result<(T, Timing), GpuError> {
        self.reduce_then::<T>(work, shape, timing, None)
    }

    /// [`Self::reduce`], with an optional last kernel `(name, constants)` applied to the result
    /// (the midpoint rule's h·Σ).
    fn reduce_then<T: DeviceWords>(
        &mut self,
        work: Work<'_>,
        shape: Shape,
        timing: TimingOptions,
        last: Option<(&str, &DeviceBuffer)>,
    ) -> Result<(T, Timing), GpuError> {
        let gpu = self.gpu;
        let p = T::precision_name();
        let module = self.module::<T>()?;
        let bytes = value_bytes::<T>();
        let words = T::words();
        let partials = gpu.alloc_zeros(
            "partials",
            T::Word::DTYPE,
            shape.grid.max(1) as usize * words,
        )?;
        let out = gpu.alloc_zeros("out", T::Word::DTYPE, words)?;
        let combine = combine_shape(shape.grid);
        let sum_kernel = format!("sum_{p}");
        let two_levels = shape.grid > 1;
        let first_out = if two_levels { &partials } else { &out };
        let arg_sets: Vec<Vec<KernelArg>> = work
            .arg_sets
            .into_iter()
            .map(|mut args| {
                args.push(KernelArg::from(first_out));
                args
            })
            .collect();
        let combine_args = [
            KernelArg::from(&partials),
            KernelArg::Scalar(Scalar::U64(u64::from(shape.grid))),
            KernelArg::from(&out),
        ];
        let sets = arg_sets.len().max(1);
        let t = gpu.time_with(timing, sets, |i| {
            gpu.launch(module, &work.kernel, shape.dims(bytes), &arg_sets[i % sets])?;
            if two_levels {
                gpu.launch(module, &sum_kernel, combine.dims(bytes), &combine_args)?;
            }
            if let Some((kernel, consts)) = last {
                let args = [KernelArg::from(&out), KernelArg::from(consts)];
                gpu.launch(module, kernel, LaunchDims::new((1, 1, 1), (1, 1, 1)), &args)?;
            }
            Ok(())
        })?;
        // Every timed run recomputed `out` from the inputs (the scale kernel too, since each run
        // rewrites out first), so it holds one run's result.
        Ok((read_value::<T>(gpu, &out)?, t))
    }

    /// The correctly rounded f64 of the exact sum of `xs` (any values: subnormals, near
    /// `f64::MAX`, ±inf and NaN following [`round_limbs`]), accumulated exactly on the device;
    /// the host only rounds the final 67 integer limbs. Timed work: zeroing the limbs and the
    /// accumulation (the limbs' download and rounding are not timed). At most 2^30 elements.
    pub fn exact_sum(
        &mut self,
        xs: &[f64],
        shape: Shape,
        timing: TimingOptions,
    ) -> Result<(f64, Timing), GpuError> {
        let gpu = self.gpu;
        if xs.len() as u64 + 3 * shape.threads() >= EXACT_MAX_ADDITIONS {
            return Err(GpuError::BadArguments {
                kernel: "exact_sum".into(),
                problem: format!(
                    "{} elements on {} threads: the limbs stay exact for fewer than 2^31 additions (elements + 3 × threads); split the input",
                    xs.len(),
                    shape.threads()
                ),
            });
        }
        let module = match self.exact {
            Some(ref m) => m,
            None => self.exact.insert(gpu.build(&exact_source(), FLAGS)?),
        };
        let data = HostData::F64(if xs.is_empty() {
            vec![0.0]
        } else {
            xs.to_vec()
        });
        let sets = gpu.rotation_sets(data.bytes());
        let inputs = gpu.upload_copies("exact_x", &data, sets)?;
        let limbs = gpu.alloc_zeros("exact_limbs", DType::U64, EXACT_LIMBS)?;
        let flags = gpu.alloc_zeros("exact_flags", DType::U32, 1)?;
        let n = Scalar::U64(xs.len() as u64);
        let zero_args = [KernelArg::from(&limbs), KernelArg::from(&flags)];
        let t = gpu.time_with(timing, sets, |i| {
            gpu.launch(
                module,
                "exact_zero",
                LaunchDims::new((1, 1, 1), (128, 1, 1)),
                &zero_args,
            )?;
            let args = [
                KernelArg::from(&inputs[i % sets]),
                KernelArg::Scalar(n),
                KernelArg::from(&limbs),
                KernelArg::from(&flags),
            ];
            gpu.launch(module, "exact_sum", shape.dims(0), &args)
        })?;
        let limbs = match gpu.download(&limbs)? {
            HostData::U64(v) => v.into_iter().map(|l| l as i64).collect::<Vec<i64>>(),
            _ => Vec::new(),
        };
        let flags = match gpu.download(&flags)? {
            HostData::U32(v) => v.first().copied().unwrap_or(0),
            _ => 0,
        };
        Ok((round_limbs(&limbs, flags, xs.len()), t))
    }
}

/// Downloads the one value of T in `out`.
fn read_value<T: DeviceWords>(gpu: &Gpu, out: &DeviceBuffer) -> Result<T, GpuError> {
    let words = T::Word::unhost(gpu.download(out)?).unwrap_or_default();
    if words.len() < T::words() {
        return Err(GpuError::BadBuffer {
            what: format!("result buffer '{}'", out.name()),
            problem: format!("{} words read, {} expected", words.len(), T::words()),
        });
    }
    Ok(T::from_words(&words))
}

/// The CUDA source of the exact-sum kernels.
fn exact_source() -> Source {
    Source::new("reduce_exact.cu", format!("{}\n{}", twin::HEADER, EXACT_CU))
}

/// The CUDA source of precision T's reduction kernels.
fn reduce_source<T: DeviceWords>() -> Source {
    let p = T::precision_name();
    Source::new(
        format!("reduce_{p}.cu"),
        format!(
            "{}\n{}\nMANTISSA_REDUCE_KERNELS({p}, {}, {})\n",
            twin::HEADER,
            REDUCE_CU,
            T::CUDA_TYPE,
            T::Word::CUDA
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_num::big::{EXACT_NAN, EXACT_NEG_INF, EXACT_NOT_ALL_NEG_ZERO, EXACT_POS_INF};
    use mantissa_num::exact::ExactSum;
    use mantissa_num::{f32x2, f64x2, Comp32, Comp64};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    const SHAPES: [Shape; 8] = [
        Shape::new(1, 1),
        Shape::new(1, 32),
        Shape::new(1, 48),
        Shape::new(3, 5),
        Shape::new(16, 32),
        Shape::new(64, 32),
        Shape::new(128, 32),
        Shape::new(528, 256),
    ];

    #[test]
    fn shape_displays_grid_times_block() {
        assert_eq!(Shape::new(64, 32).to_string(), "64×32");
        assert_eq!(combine_shape(1), Shape::new(1, 1));
        assert_eq!(combine_shape(3), Shape::new(1, 4));
        assert_eq!(combine_shape(528), Shape::new(1, 256));
    }

    /// Distinct powers of two sum exactly in f64 (53 bits): the model adds every element exactly
    /// once, whatever the shape and however n relates to the thread count.
    #[test]
    fn model_adds_every_element_once() {
        for n in [0usize, 1, 2, 3, 7, 31, 33, 50] {
            let xs: Vec<f64> = (0..n).map(|i| (1u64 << i) as f64).collect();
            let want = ((1u128 << n) - 1) as f64;
            for shape in SHAPES {
                assert_eq!(sum_model(&xs, shape), want, "n={n} {shape}");
                let ones = vec![1.0; n];
                assert_eq!(dot_model(&xs, &ones, true, shape), want, "n={n} {shape}");
                assert_eq!(dot_model(&xs, &ones, false, shape), want, "n={n} {shape}");
                assert_eq!(sum_f64_in_model::<f64x2>(&xs, shape).to_f64(), want);
            }
        }
    }

    /// Small integers sum exactly in every precision, so every shape's order gives the same value.
    #[test]
    fn exact_inputs_give_the_same_sum_in_every_order() {
        let xs: Vec<f64> = (0..1001).map(|i| ((i * 37) % 101) as f64 - 50.0).collect();
        let want: f64 = xs.iter().sum();
        for shape in SHAPES {
            assert_eq!(sum_model(&xs, shape), want);
            let f: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
            assert_eq!(sum_model(&f, shape), want as f32);
            let d: Vec<f64x2> = xs.iter().map(|&x| f64x2::from_f64(x)).collect();
            assert_eq!(sum_model(&d, shape).to_f64(), want);
            let c: Vec<Comp32> = xs.iter().map(|&x| Comp32::from_f64(x)).collect();
            assert_eq!(sum_model(&c, shape).to_f64(), want);
        }
    }

    /// One thread: the model is the plain left fold from zero.
    #[test]
    fn one_thread_is_the_serial_sum() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let xs: Vec<f64> = (0..999).map(|_| rng.random::<f64>() - 0.3).collect();
        let serial = xs.iter().fold(0.0, |a, &x| a + x);
        assert_eq!(sum_model(&xs, Shape::new(1, 1)).to_bits(), serial.to_bits());
        let a: Vec<f64> = xs.iter().map(|x| x * 3.0).collect();
        let fused = xs
            .iter()
            .zip(&a)
            .fold(0.0f64, |acc, (x, y)| f64::mul_add(*x, *y, acc));
        assert_eq!(
            dot_model(&xs, &a, true, Shape::new(1, 1)).to_bits(),
            fused.to_bits()
        );
        let d = xs.iter().fold(f64x2::ZERO, |acc, &x| acc.add_base(x));
        let m = sum_f64_in_model::<f64x2>(&xs, Shape::new(1, 1));
        assert_eq!((m.hi, m.lo), (d.hi, d.lo));
    }

    #[test]
    fn pi_models_converge() {
        for shape in [Shape::new(1, 1), Shape::new(16, 32)] {
            let p: f64 = pi_midpoint_model(10_000, shape);
            assert!((p - std::f64::consts::PI).abs() < 1e-8, "{p}");
            let p: f64x2 = pi_midpoint_model(10_000, shape);
            assert!((p.to_f64() - std::f64::consts::PI).abs() < 1e-8);
            let c: Comp64 = pi_midpoint_model(1000, shape);
            assert!((c.to_f64() - std::f64::consts::PI).abs() < 1e-6);
        }
        let l: f64 = pi_leibniz_model(100_000);
        assert!((l - std::f64::consts::PI).abs() < 2e-5);
        let l: f32x2 = pi_leibniz_model(1000);
        assert!((l.to_f64() - std::f64::consts::PI).abs() < 2e-3);
        assert_eq!(pi_leibniz_model::<f64>(1), 4.0);
    }

    /// The CPU twin of the kernel's `deposit`: the finite `y` as 32-bit digits added to limbs.
    fn deposit(limbs: &mut [i64], y: f64) {
        let b = y.to_bits();
        let mut e = ((b >> 52) & 0x7ff) as u32;
        let mut m = b & ((1 << 52) - 1);
        if e != 0 {
            m |= 1 << 52;
        } else {
            e = 1;
        }
        let p = e - 1;
        let (k, s) = ((p / 32) as usize, p % 32);
        let v = (m as u128) << s;
        for (j, d) in [v & 0xffff_ffff, (v >> 32) & 0xffff_ffff, v >> 64]
            .into_iter()
            .enumerate()
        {
            let d = d as i64;
            limbs[k + j] += if b >> 63 == 1 { -d } else { d };
        }
    }

    /// What the exact kernels leave for `xs`: limbs and flags (the expansion only regroups the
    /// same exact value, so depositing every element directly gives the same limbs' value).
    fn limbs_of(xs: &[f64]) -> (Vec<i64>, u32) {
        let mut limbs = vec![0i64; EXACT_LIMBS];
        let mut flags = 0;
        for &x in xs {
            if x.is_nan() {
                flags |= EXACT_NAN;
            } else if x == f64::INFINITY {
                flags |= EXACT_POS_INF;
            } else if x == f64::NEG_INFINITY {
                flags |= EXACT_NEG_INF;
            } else {
                if x.to_bits() != (-0.0f64).to_bits() {
                    flags |= EXACT_NOT_ALL_NEG_ZERO;
                }
                deposit(&mut limbs, x);
            }
        }
        (limbs, flags)
    }

    // The adversarial sets, shared with the GPU tests (tests/gpu_reduce.rs).
    include!("../tests/support/exact_sets.rs");

    #[test]
    fn limbs_round_like_exact_sum() {
        for (name, xs) in adversarial() {
            let (limbs, flags) = limbs_of(&xs);
            let got = round_limbs(&limbs, flags, xs.len());
            let want = xs.iter().copied().collect::<ExactSum>().round();
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{name}: {got:e} vs {want:e}"
            );
        }
    }
}

/// The kernel sources compile for every precision (where NVRTC is available; skips elsewhere).
#[cfg(test)]
mod nvrtc_tests {
    use super::*;
    use mantissa_gpu::testing::require_nvrtc_or_skip;
    use mantissa_gpu::{Arch, Target};
    use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};

    fn compile(source: &Source) -> Option<String> {
        let compiler = require_nvrtc_or_skip()?;
        let compiled = compiler
            .compile(source, FlagSet::DEFAULT, Target::Cubin(Arch::new(9, 0)))
            .unwrap_or_else(|e| panic!("{}: {e}", source.name));
        Some(compiled.ptx.clone())
    }

    fn check<T: DeviceWords>() {
        let Some(ptx) = compile(&reduce_source::<T>()) else {
            return;
        };
        let p = T::precision_name();
        for k in [
            "sum",
            "sum_f64_in",
            "dot",
            "dot_fused",
            "pi_midpoint",
            "scale",
            "pi_leibniz",
        ] {
            assert!(ptx.contains(&format!(".entry {k}_{p}(")), "{k}_{p}");
        }
    }

    #[test]
    fn reduce_kernels_compile_for_every_precision() {
        check::<f32>();
        check::<f64>();
        check::<f32x2>();
        check::<f64x2>();
        check::<Comp32>();
        check::<Comp64>();
        check::<CompNorm32>();
        check::<CompNorm64>();
    }

    #[test]
    fn exact_kernels_compile() {
        if let Some(ptx) = compile(&exact_source()) {
            assert!(ptx.contains(".entry exact_sum(") && ptx.contains(".entry exact_zero("));
        }
    }

    /// The f64 sum's loads are 16 bytes wide (the kernel is memory-bound).
    #[test]
    fn f64_sum_loads_are_vectorized() {
        if let Some(ptx) = compile(&reduce_source::<f64>()) {
            assert!(ptx.contains("ld.global.nc.v2.f64"), "no 16-byte loads");
        }
    }
}
