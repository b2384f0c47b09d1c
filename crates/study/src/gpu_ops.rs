//! `ops` on the GPU: seed 001's experiment (one operation per thread, its Tables 1 and 2) with
//! mantissa's CUDA twin of the arithmetic.
//!
//! For each precision and operation, three measurements on the same operands as the CPU run of
//! the same [`OpsConfig`]:
//! - **errors**: the element-wise kernel's results against the exact reference, in f64 ulps (the
//!   CPU table's columns), plus how many results differ in any bit from the CPU's;
//! - **memory-bound time**: the element-wise kernel (one load of each operand, one store), CUDA
//!   events, warm-up, median of repetitions over rotating input copies so L2 does not serve them;
//!   its speed-up over f64 is seed 001's Table 2;
//! - **compute-bound throughput**: each thread runs [`CHAINS`] independent chains of the operation
//!   in registers for `iters` steps, in Gop/s, next to the roofline implied by the device's FMA
//!   ceiling and the operation's floating-point instruction count in the PTX (every add, sub,
//!   mul, fma, div, rcp and sqrt of the base type counts as one issue; `div.rn` and `sqrt.rn`
//!   expand further in SASS, so their roofline is an upper bound).

use mantissa_gpu::{
    twin, Ceilings, DType, DeviceBuffer, FlagSet, Gpu, GpuError, KernelArg, LaunchDims, Scalar,
    Source, TimingOptions,
};
use mantissa_gpu::{visit_device_type, DeviceTypeVisitor, DeviceWords, Word};
use mantissa_num::metrics::ulps_f64;
use mantissa_num::precision::Precision;
use mantissa_ptx::{census, Statement};
use rayon::prelude::*;
use serde::Serialize;

use crate::ops::{operands, summarize, Op, OpErrorStats, OpsConfig};
use crate::progress::Progress;

/// Independent chains per thread in the compute-bound kernel: enough to hide the FP64 pipeline
/// latency on Hopper (see HOPPER.md) without spilling double-word state.
pub const CHAINS: usize = 8;

/// How the GPU part runs.
#[derive(Clone, Debug, Serialize)]
pub struct GpuOpsOptions {
    /// The flag set the kernels are compiled under.
    pub flags: FlagSet,
    /// Threads per block (seed 001: 1024).
    pub block: u32,
    /// Steps of each chain in the compute-bound kernel.
    pub iters: u32,
    /// Timed runs of each kernel (after one warm-up).
    pub timing_reps: u32,
    /// Elements of the large element-wise run that measures memory-bound time (far beyond L2;
    /// 0 skips it). Seed 001's 10^6 elements are launch-bound on current GPUs.
    pub stream_elements: usize,
}

impl Default for GpuOpsOptions {
    fn default() -> Self {
        GpuOpsOptions {
            flags: FlagSet::DEFAULT,
            block: 1024,
            iters: 256,
            timing_reps: 20,
            stream_elements: 1 << 26,
        }
    }
}

/// One precision and operation on the GPU.
#[derive(Clone, Debug, Serialize)]
pub struct GpuOpRow {
    /// The errors of the GPU's results, in f64 ulps of the exact result.
    pub errors: OpErrorStats,
    /// Results whose bits differ from the CPU's for the same operands (NaN matches any NaN).
    pub differs_from_cpu: usize,
    /// Element-wise kernel, median ms.
    pub elementwise_ms: f64,
    /// f64's element-wise time over this precision's (seed 001 Table 2).
    pub speedup_vs_f64: f64,
    /// Compute-bound throughput, 10^9 operations per second.
    pub gops: f64,
    /// Base-type floating-point instructions per operation in the element-wise kernel's PTX.
    pub ptx_fp_instructions: usize,
    /// The device's FMA instruction rate of the base type divided by `ptx_fp_instructions`.
    pub roofline_gops: Option<f64>,
    /// The element-wise kernel over `stream_elements` elements (median ms), and the bytes it
    /// moves (two loads and one store per element, one load for sqrt) per second, in GB/s;
    /// `None` when skipped or when the buffers did not fit.
    pub stream_ms: Option<f64>,
    /// The memory-bound throughput of that run, in GB/s.
    pub stream_gb_s: Option<f64>,
    /// This precision's memory-bound time over f64's, same operation and element count.
    pub stream_vs_f64: Option<f64>,
}

/// The CUDA expression of `op` on values `x` and `y` of type `T`.
fn expression<T: DeviceWords>(op: Op, x: &str, y: &str) -> String {
    match T::FUNCTIONS {
        None => {
            let (sqrt, abs) = if T::Word::DTYPE == DType::F32 {
                ("sqrtf", "fabsf")
            } else {
                ("sqrt", "fabs")
            };
            match op {
                Op::Add => format!("({x} + {y})"),
                Op::Sub => format!("({x} - {y})"),
                Op::Mul => format!("({x} * {y})"),
                Op::Div => format!("({x} / {y})"),
                Op::Sqrt => format!("{sqrt}({abs}({x}))"),
            }
        }
        Some(p) => match op {
            Op::Sqrt => format!("{p}sqrt({p}abs({x}))"),
            _ => format!("{p}{op}({x}, {y})"),
        },
    }
}

fn kernel_names(p: Precision, op: Op) -> (String, String) {
    (format!("ew_{p}_{op}"), format!("cb_{p}_{op}"))
}

/// CUDA source of the element-wise and compute-bound kernels of one precision, all operations.
fn kernels_source<T: DeviceWords>(p: Precision, ops: &[Op]) -> String {
    let (ty, w) = (T::CUDA_TYPE, T::Word::CUDA);
    let mut s = String::from(twin::HEADER);
    s.push('\n');
    for &op in ops {
        let (ew, cb) = kernel_names(p, op);
        let e = expression::<T>(op, "x", "y");
        let step = expression::<T>(op, "acc[k]", "y");
        let fold = expression::<T>(Op::Add, "r", "acc[k]");
        s += &elementwise_kernel(&ew, ty, w, &e);
        s += &compute_bound_kernel(&cb, ty, w, &step, &fold, Operand::PerThread);
    }
    s
}

/// An element-wise kernel `name(xs, ys, out, n)` over values of CUDA type `ty` stored as words
/// `word`: `out[i] = expr`, an expression in `x = xs[i]` and `y = ys[i]`.
pub fn elementwise_kernel(name: &str, ty: &str, word: &str, expr: &str) -> String {
    format!(
        r#"
extern "C" __global__ void {name}(const {word}* xw, const {word}* yw, {word}* outw, unsigned int n)
{{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const {ty}* xs = reinterpret_cast<const {ty}*>(xw);
    const {ty}* ys = reinterpret_cast<const {ty}*>(yw);
    {ty}* out = reinterpret_cast<{ty}*>(outw);
    {ty} x = xs[i], y = ys[i];
    out[i] = {expr};
}}
"#
    )
}

/// Threads per block of the compute-bound kernels. 128 rather than seed 001's 1024: with
/// double-word chains needing 48–56 registers, small blocks fill each multiprocessor more
/// evenly (H200, 8 chains: f64x2 add_fast 780 / 803 / 814 Gop/s at 512 / 256 / 128 threads
/// per block, mul_fast 1911 / 1964 / 1989).
pub const COMPUTE_BOUND_BLOCK: u32 = 128;

/// Blocks per multiprocessor the compute-bound kernels promise ptxas they need at least
/// (`__launch_bounds__`' second argument): 4 blocks of 128 threads leave up to 128 registers per
/// thread.
pub const COMPUTE_BOUND_MIN_BLOCKS: u32 = 4;

/// Where the compute-bound kernel's second operand comes from.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// Each thread loads its own `y` from `ys` (registers): `name(xs, ys, out, n, iters)`.
    PerThread,
    /// One `y` for all threads, passed by value as the words `yh`, `yl` (kernel parameters,
    /// which the GPU reads from its constant bank): `name(xs, yh, yl, out, n, iters)`. The
    /// string is the C++ statement that declares `y` from them.
    Uniform(&'a str),
}

/// A compute-bound kernel over values of CUDA type `ty` stored as words `word`, for blocks of
/// at most [`COMPUTE_BOUND_BLOCK`] threads: each thread runs [`CHAINS`] independent chains
/// `acc[k] = step` (an expression in `acc[k]` and the operand `y`) for `iters` steps in
/// registers, then folds them with `fold` (in `r` and `acc[k]`) and stores the result, so
/// nothing is dead code.
///
/// `__launch_bounds__` tells ptxas the block size and that [`COMPUTE_BOUND_MIN_BLOCKS`] blocks
/// per multiprocessor suffice. Without the second number ptxas still aims at a higher
/// occupancy and caps the registers lower; with it, it spends a few more on scheduling the
/// chains further apart (H200, f64x2 mul_fast, same source through nvcc: 56 → 68 registers,
/// 1 987 → 2 152 Gop/s; any minimum from 1 to 6 blocks gave the same code).
pub fn compute_bound_kernel(
    name: &str,
    ty: &str,
    word: &str,
    step: &str,
    fold: &str,
    operand: Operand,
) -> String {
    let (y_param, y_init) = match operand {
        Operand::PerThread => (
            format!("const {word}* yw"),
            format!("{ty} y = reinterpret_cast<const {ty}*>(yw)[i];"),
        ),
        Operand::Uniform(init) => (format!("{word} yh, {word} yl"), init.to_string()),
    };
    format!(
        r#"
extern "C" __global__ void __launch_bounds__({COMPUTE_BOUND_BLOCK}, {COMPUTE_BOUND_MIN_BLOCKS}) {name}(const {word}* xw, {y_param}, {word}* outw, unsigned int n, int iters)
{{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const {ty}* xs = reinterpret_cast<const {ty}*>(xw);
    {ty}* out = reinterpret_cast<{ty}*>(outw);
    {y_init}
    {ty} acc[{CHAINS}];
    #pragma unroll
    for (int k = 0; k < {CHAINS}; ++k) acc[k] = xs[(i + 4099u * k) % n];
    for (int r = 0; r < iters; ++r) {{
        #pragma unroll
        for (int k = 0; k < {CHAINS}; ++k) acc[k] = {step};
    }}
    {ty} r = acc[0];
    #pragma unroll
    for (int k = 1; k < {CHAINS}; ++k) r = {fold};
    out[i] = r;
}}
"#
    )
}

/// Base-type floating-point arithmetic instructions in one kernel of a PTX module, as
/// mantissa-ptx's census defines them ([`census::is_arithmetic`]: sign changes and conversions
/// are not arithmetic).
pub fn count_fp_instructions(ptx: &str, kernel: &str, word: DType) -> usize {
    let parsed = mantissa_ptx::parse(ptx);
    let Some(f) = parsed
        .module
        .functions()
        .find(|f| f.name == kernel && f.body.is_some())
    else {
        return 0;
    };
    f.body
        .iter()
        .flatten()
        .filter_map(|s| match s {
            Statement::Inst(inst) => census::classify(inst),
            _ => None,
        })
        .filter(|op| op.ty == word.name() && census::is_arithmetic(op))
        .count()
}

#[cfg(test)]
/// The text of `.entry kernel ( … ) { … }` in a PTX module (empty if absent).
fn kernel_body<'a>(ptx: &'a str, kernel: &str) -> &'a str {
    let Some(start) = ptx.find(&format!(".entry {kernel}(")) else {
        return "";
    };
    let rest = &ptx[start..];
    let Some(open) = rest.find('{') else {
        return "";
    };
    let mut depth = 0usize;
    for (i, c) in rest[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[open..open + i + 1];
                }
            }
            _ => {}
        }
    }
    &rest[open..]
}

/// Run the experiment on `gpu` for every precision of `config` that has a GPU twin (the mp
/// precisions are skipped: they exist on the CPU only).
pub fn run(
    gpu: &Gpu,
    config: &OpsConfig,
    opts: &GpuOpsOptions,
    ceilings: Option<&Ceilings>,
    progress: &dyn Progress,
) -> Result<Vec<GpuOpRow>, GpuError> {
    let pairs = operands(config);
    let precisions: Vec<Precision> = config
        .precisions
        .iter()
        .copied()
        .filter(|p| !matches!(p, Precision::Mp(_)))
        .collect();
    let mut rows = Vec::new();
    progress.start("gpu", (precisions.len() * config.ops.len()) as u64);
    // References once per operation, shared by every precision.
    let refs: Vec<Vec<Option<mantissa_num::big::Big>>> = config
        .ops
        .iter()
        .map(|&op| pairs.par_iter().map(|&(x, y)| op.reference(x, y)).collect())
        .collect();
    for &p in &precisions {
        let mut per = RunPrecision {
            gpu,
            config,
            opts,
            ceilings,
            pairs: &pairs,
            refs: &refs,
            precision: p,
            progress,
        }
        .dispatch()?;
        rows.append(&mut per);
    }
    progress.finish();
    // Speed-up over f64's element-wise kernel of the same operation (when f64 was measured).
    for op in &config.ops {
        let f64_row = rows
            .iter()
            .find(|r| r.errors.precision == "f64" && r.errors.op == *op);
        let f64_ms = f64_row.map(|r| r.elementwise_ms);
        let f64_stream = f64_row.and_then(|r| r.stream_ms);
        for r in rows.iter_mut().filter(|r| r.errors.op == *op) {
            r.speedup_vs_f64 = f64_ms.map_or(f64::NAN, |t| t / r.elementwise_ms);
            r.stream_vs_f64 = r.stream_ms.zip(f64_stream).map(|(t, f)| t / f);
        }
    }
    Ok(rows)
}

impl DeviceTypeVisitor for &RunPrecision<'_> {
    type Output = Result<Vec<GpuOpRow>, GpuError>;
    fn visit<T: DeviceWords>(self) -> Self::Output {
        self.run::<T>()
    }
}

struct RunPrecision<'a> {
    gpu: &'a Gpu,
    config: &'a OpsConfig,
    opts: &'a GpuOpsOptions,
    ceilings: Option<&'a Ceilings>,
    pairs: &'a [(f64, f64)],
    refs: &'a [Vec<Option<mantissa_num::big::Big>>],
    precision: Precision,
    progress: &'a dyn Progress,
}

impl RunPrecision<'_> {
    /// The precisions with a CUDA twin (not mp, which exists on the CPU only).
    fn dispatch(&self) -> Result<Vec<GpuOpRow>, GpuError> {
        visit_device_type(self.precision, self).unwrap_or_else(|| Ok(Vec::new()))
    }

    fn run<T: DeviceWords>(&self) -> Result<Vec<GpuOpRow>, GpuError> {
        let gpu = self.gpu;
        let p = self.precision;
        let n = self.pairs.len();
        let source = Source::new(
            format!("ops_{p}.cu"),
            kernels_source::<T>(p, &self.config.ops),
        );
        let module = gpu.build(&source, self.opts.flags)?;
        let ptx = module.ptx().unwrap_or("").to_string();

        let words = |f: &dyn Fn(&(f64, f64)) -> f64| {
            let mut w = Vec::with_capacity(n * T::words());
            for pair in self.pairs {
                T::from_f64(f(pair)).push_words(&mut w);
            }
            T::Word::host(w)
        };
        let (xh, yh) = (words(&|p| p.0), words(&|p| p.1));
        // The largest block up to the requested one that a kernel's registers permit.
        let dims_for = |kernel: &str, block: u32| {
            let block = module
                .resources(kernel)
                .map_or(block, |r| block.min(r.max_threads_per_block));
            LaunchDims::linear(n as u64, block)
        };
        let value_bytes = T::TYPE.bytes();
        let sets = gpu.rotation_sets(3 * n as u64 * value_bytes);
        let xs = gpu.upload_copies(&format!("x_{p}"), &xh, sets)?;
        let ys = gpu.upload_copies(&format!("y_{p}"), &yh, sets)?;
        let outs: Vec<DeviceBuffer> = (0..sets)
            .map(|i| gpu.alloc_zeros(&format!("out_{p}#{i}"), T::Word::DTYPE, n * T::words()))
            .collect::<Result<_, _>>()?;
        // Compute-bound operands: magnitudes near 1 so that products, quotients and sums stay
        // far from overflow over every chain step (the special-value paths are not what is timed).
        let near_one = |seed: u64, n: usize| {
            let mut w = Vec::with_capacity(n * T::words());
            for i in 0..n {
                let t = ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed) >> 11;
                let u = t as f64 / (1u64 << 53) as f64; // [0, 1)
                T::from_f64(1.0 + (u - 0.5) * 1e-3).push_words(&mut w);
            }
            T::Word::host(w)
        };
        let cbx = gpu.upload("cb_x", &near_one(1, n))?;
        let cby = gpu.upload("cb_y", &near_one(2, n))?;
        // Memory-bound run: large buffers, allocated once per precision; skipped (None) if they
        // do not fit.
        let big = self.opts.stream_elements;
        let stream = if big == 0 || big > u32::MAX as usize {
            None
        } else {
            let x = gpu.upload("stream_x", &near_one(3, big)).ok();
            let y = gpu.upload("stream_y", &near_one(4, big)).ok();
            let o = gpu
                .alloc_zeros("stream_out", T::Word::DTYPE, big * T::words())
                .ok();
            match (x, y, o) {
                (Some(x), Some(y), Some(o)) => Some((x, y, o)),
                _ => None,
            }
        };
        let cb_out = gpu.alloc_zeros("cb_out", T::Word::DTYPE, n * T::words())?;

        let timing = TimingOptions {
            warmup: 3,
            reps: self.opts.timing_reps,
        };
        let rate = self.ceilings.map(|c| {
            let gflop = if T::Word::DTYPE == DType::F32 {
                c.fp32_fma_gflop_s
            } else {
                c.fp64_fma_gflop_s
            };
            gflop / 2.0 // an FMA is 2 flops and one instruction issue
        });
        let mut rows = Vec::new();
        for (oi, &op) in self.config.ops.iter().enumerate() {
            let (ew, cb) = kernel_names(p, op);
            let dims = dims_for(&ew, self.opts.block);
            let cb_dims = dims_for(&cb, COMPUTE_BOUND_BLOCK.min(self.opts.block));
            let n_arg = Scalar::U32(n as u32);
            // Results (and errors) from input set 0.
            gpu.launch(
                &module,
                &ew,
                dims,
                &[
                    KernelArg::from(&xs[0]),
                    KernelArg::from(&ys[0]),
                    KernelArg::from(&outs[0]),
                    KernelArg::Scalar(n_arg),
                ],
            )?;
            let got = T::Word::unhost(gpu.download(&outs[0])?).unwrap_or_default();
            let results: Vec<T> = got.chunks(T::words()).map(T::from_words).collect();
            let (errors, differs) = self.score::<T>(op, &self.refs[oi], &results);
            let arg_sets: Vec<Vec<KernelArg>> = (0..sets)
                .map(|i| {
                    vec![
                        KernelArg::from(&xs[i]),
                        KernelArg::from(&ys[i]),
                        KernelArg::from(&outs[i]),
                        KernelArg::Scalar(n_arg),
                    ]
                })
                .collect();
            let ew_time = gpu.time_kernel(&module, &ew, dims, &arg_sets, timing)?;
            let cb_args = vec![
                KernelArg::from(&cbx),
                KernelArg::from(&cby),
                KernelArg::from(&cb_out),
                KernelArg::Scalar(n_arg),
                KernelArg::Scalar(Scalar::I32(self.opts.iters as i32)),
            ];
            // Eight double-word chains can need more registers than a large block allows
            // (f64x2 div: 92 per thread on sm_90): `cb_dims` has the largest block permitted.
            let cb_time = gpu.time_kernel(&module, &cb, cb_dims, &[cb_args], timing)?;
            let gops = n as f64 * CHAINS as f64 * self.opts.iters as f64
                / (cb_time.median_ms * 1e-3)
                / 1e9;
            let instr = count_fp_instructions(&ptx, &ew, T::Word::DTYPE);
            let stream_ms = match &stream {
                Some((x, y, o)) => {
                    let block = dims.threads_per_block() as u32;
                    let args = vec![
                        KernelArg::from(x),
                        KernelArg::from(y),
                        KernelArg::from(o),
                        KernelArg::Scalar(Scalar::U32(big as u32)),
                    ];
                    let t = gpu.time_kernel(
                        &module,
                        &ew,
                        LaunchDims::linear(big as u64, block),
                        &[args],
                        timing,
                    )?;
                    Some(t.median_ms)
                }
                None => None,
            };
            rows.push(GpuOpRow {
                errors,
                differs_from_cpu: differs,
                elementwise_ms: ew_time.median_ms,
                speedup_vs_f64: f64::NAN,
                gops,
                ptx_fp_instructions: instr,
                roofline_gops: rate.filter(|_| instr > 0).map(|r| r / instr as f64),
                stream_ms,
                // Square root reads one operand: two streams, not three.
                stream_gb_s: stream_ms.map(|ms| {
                    let streams = if op == Op::Sqrt { 2.0 } else { 3.0 };
                    streams * big as f64 * value_bytes as f64 / (ms * 1e-3) / 1e9
                }),
                stream_vs_f64: None,
            });
            self.progress.advance(1);
        }
        Ok(rows)
    }

    /// Error statistics of GPU results, and how many differ in any bit from the CPU's.
    fn score<T: DeviceWords>(
        &self,
        op: Op,
        refs: &[Option<mantissa_num::big::Big>],
        results: &[T],
    ) -> (OpErrorStats, usize) {
        let per: Vec<(Option<f64>, bool)> = self
            .pairs
            .par_iter()
            .zip(refs)
            .zip(results)
            .map(|((&(x, y), r), z)| {
                let cpu = op.apply(T::from_f64(x), T::from_f64(y));
                let (mut a, mut b) = (Vec::with_capacity(2), Vec::with_capacity(2));
                cpu.push_words(&mut a);
                z.push_words(&mut b);
                let differs = a
                    .iter()
                    .zip(&b)
                    .any(|(u, v)| u.bits() != v.bits() && !(u.is_nan() && v.is_nan()));
                let err = r
                    .as_ref()
                    .map(|r| z.to_big().map_or(f64::NAN, |zb| ulps_f64(&zb, r)));
                (err, differs)
            })
            .collect();
        let differs = per.iter().filter(|(_, d)| *d).count();
        let errors: Vec<f64> = per.into_iter().filter_map(|(e, _)| e).collect();
        (
            summarize(self.precision.to_string(), op, self.pairs.len(), errors),
            differs,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_num::{f64x2, Comp32};

    #[test]
    fn expressions_use_operators_for_native_types_and_the_twin_otherwise() {
        assert_eq!(expression::<f32>(Op::Div, "x", "y"), "(x / y)");
        assert_eq!(expression::<f64>(Op::Sqrt, "x", "y"), "sqrt(fabs(x))");
        assert_eq!(expression::<f32>(Op::Sqrt, "x", "y"), "sqrtf(fabsf(x))");
        assert_eq!(
            expression::<f64x2>(Op::Mul, "x", "y"),
            "mantissa::f64x2_mul(x, y)"
        );
        assert_eq!(
            expression::<Comp32>(Op::Sqrt, "a", "b"),
            "mantissa::comp32_sqrt(mantissa::comp32_abs(a))"
        );
    }

    #[test]
    fn words_round_trip() {
        let x = f64x2::from_sum(1.0, 1e-20);
        let mut w = Vec::new();
        x.push_words(&mut w);
        assert_eq!(f64x2::from_words(&w), x);
        let c = Comp32::new(1.5, 1e-9);
        let mut w = Vec::new();
        c.push_words(&mut w);
        assert_eq!(
            (Comp32::from_words(&w).value, Comp32::from_words(&w).error),
            (1.5, 1e-9)
        );
    }

    #[test]
    fn counts_base_type_instructions_of_one_kernel() {
        let ptx = ".visible .entry a(\n.param .u64 p\n)\n{\n\tadd.rn.f64 %fd1, %fd2, %fd3;\n\tfma.rn.f64 %fd4, %fd1, %fd1, %fd1;\n\tadd.s32 %r1, %r2, 1;\n\tmul.rn.f32 %f1, %f2, %f3;\n}\n.visible .entry b(\n)\n{\n\tsub.f64 %fd1, %fd2, %fd3;\n}\n";
        assert_eq!(count_fp_instructions(ptx, "a", DType::F64), 2);
        assert_eq!(count_fp_instructions(ptx, "a", DType::F32), 1);
        assert_eq!(count_fp_instructions(ptx, "b", DType::F64), 1);
        assert_eq!(count_fp_instructions(ptx, "c", DType::F64), 0);
    }
}

/// The generated kernels compile under every flag set and have the instruction counts their
/// algorithms imply (runs where NVRTC is available; skips with a reason elsewhere).
#[cfg(test)]
mod nvrtc_tests {
    use super::*;
    use mantissa_gpu::testing::require_nvrtc_or_skip;
    use mantissa_gpu::{Arch, Target};
    use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};

    fn ptx_of<T: DeviceWords>(p: Precision, flags: FlagSet) -> Option<String> {
        let compiler = require_nvrtc_or_skip()?;
        let source = Source::new(format!("ops_{p}.cu"), kernels_source::<T>(p, &Op::ALL));
        let compiled = compiler
            .compile(&source, flags, Target::Cubin(Arch::new(9, 0)))
            .expect("generated kernels compile");
        Some(compiled.ptx.clone())
    }

    #[test]
    fn twin_instruction_counts_do_not_depend_on_flags() {
        for flags in FlagSet::ALL {
            let Some(ptx) = ptx_of::<f64x2>(Precision::F64x2, flags) else {
                return;
            };
            // AccurateDWPlusDW is 20 flops whatever the flags: the twin cannot be contracted.
            assert_eq!(
                count_fp_instructions(&ptx, "ew_f64x2_add", DType::F64),
                20,
                "{flags:?}"
            );
            // DWTimesDW3: TwoProd (mul + fma), mul, 2 fma, add, FastTwoSum (add, sub, sub).
            assert_eq!(
                count_fp_instructions(&ptx, "ew_f64x2_mul", DType::F64),
                9,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn kernels_compile_for_every_precision() {
        if require_nvrtc_or_skip().is_some() {
            let flags = FlagSet::DEFAULT;
            for (p, ptx) in [
                (Precision::F32, ptx_of::<f32>(Precision::F32, flags)),
                (Precision::F64, ptx_of::<f64>(Precision::F64, flags)),
                (Precision::F32x2, ptx_of::<f32x2>(Precision::F32x2, flags)),
                (
                    Precision::Comp32,
                    ptx_of::<Comp32>(Precision::Comp32, flags),
                ),
                (
                    Precision::Comp64,
                    ptx_of::<Comp64>(Precision::Comp64, flags),
                ),
                (
                    Precision::Comp32n,
                    ptx_of::<CompNorm32>(Precision::Comp32n, flags),
                ),
                (
                    Precision::Comp64n,
                    ptx_of::<CompNorm64>(Precision::Comp64n, flags),
                ),
            ] {
                let ptx = ptx.expect("NVRTC present");
                for op in Op::ALL {
                    let (ew, cb) = kernel_names(p, op);
                    assert!(
                        ptx.contains(&format!(".entry {ew}("))
                            && ptx.contains(&format!(".entry {cb}(")),
                        "{p} {op}"
                    );
                }
            }
        }
    }

    #[test]
    fn native_division_follows_the_flag_set() {
        let Some(default) = ptx_of::<f32>(Precision::F32, FlagSet::DEFAULT) else {
            return;
        };
        let fast = ptx_of::<f32>(Precision::F32, FlagSet::FAST).expect("NVRTC present");
        let body = |ptx: &str| kernel_body(ptx, "ew_f32_div").to_string();
        assert!(body(&default).contains("div.rn.f32"));
        assert!(body(&fast).contains("div.approx"), "{}", body(&fast));
    }
}
