//! Compute-bound throughput of the double-word operations on the GPU, with and without the
//! special-value rule: the kernel of `mantissa ops --gpu` (each thread runs `CHAINS` independent
//! chains `acc = op(acc, y)` in registers, 256-thread blocks), for the twin's `add`, `add_fast`,
//! `add_sloppy`, `mul`, `mul_fast` and `mul_seed` of f64x2 and f32x2, next to native f64.
//!
//! Usage: `dw_throughput [PASSES=2] [ITERS=256] [THREADS=1024000]`. Prints, per operation, the
//! base-type floating-point instructions of one operation (PTX of the element-wise kernel), the
//! roofline they imply at the measured FMA ceiling, and Gop/s per pass (median of 10 timed
//! launches after 3 warm-ups, CUDA events), so the spread between passes shows the noise. Each
//! `*_fast` row also says whether its chains ended bit-identical to the checked operation's
//! (they must for add, whose fast form only drops the rule; mul_fast is another algorithm).

use std::process::ExitCode;

use mantissa_gpu::{
    twin, DType, FlagSet, Gpu, GpuError, KernelArg, LaunchDims, ReportOptions, Scalar, Source,
    TimingOptions,
};
use mantissa_num::{f32x2, f64x2};
use mantissa_study::gpu_ops::{
    compute_bound_kernel, count_fp_instructions, DeviceWords, Word, CHAINS, COMPUTE_BOUND_BLOCK,
};

/// One row: a precision and one of its operations, as a CUDA expression in `a` and `b`.
struct Variant {
    precision: &'static str,
    op: &'static str,
    expr: fn(&str, &str) -> String,
    /// The checked operation whose results a rule-free variant must reproduce bit for bit.
    same_bits_as: Option<&'static str>,
}

fn variants() -> Vec<Variant> {
    let v = |precision, op, expr: fn(&str, &str) -> String, same_bits_as| Variant {
        precision,
        op,
        expr,
        same_bits_as,
    };
    vec![
        v("f64", "add", |a, b| format!("({a} + {b})"), None),
        v("f64", "mul", |a, b| format!("({a} * {b})"), None),
        v(
            "f64x2",
            "add",
            |a, b| format!("mantissa::f64x2_add({a}, {b})"),
            None,
        ),
        v(
            "f64x2",
            "add_fast",
            |a, b| format!("mantissa::f64x2_add_fast({a}, {b})"),
            Some("add"),
        ),
        v(
            "f64x2",
            "add_sloppy",
            |a, b| format!("mantissa::f64x2_add_sloppy({a}, {b})"),
            None,
        ),
        v(
            "f64x2",
            "mul",
            |a, b| format!("mantissa::f64x2_mul({a}, {b})"),
            None,
        ),
        v(
            "f64x2",
            "mul_fast",
            |a, b| format!("mantissa::f64x2_mul_fast({a}, {b})"),
            None,
        ),
        v(
            "f64x2",
            "mul_seed",
            |a, b| format!("mantissa::f64x2_mul_seed({a}, {b})"),
            None,
        ),
        v(
            "f32x2",
            "add",
            |a, b| format!("mantissa::f32x2_add({a}, {b})"),
            None,
        ),
        v(
            "f32x2",
            "add_fast",
            |a, b| format!("mantissa::f32x2_add_fast({a}, {b})"),
            Some("add"),
        ),
        v(
            "f32x2",
            "mul",
            |a, b| format!("mantissa::f32x2_mul({a}, {b})"),
            None,
        ),
        v(
            "f32x2",
            "mul_fast",
            |a, b| format!("mantissa::f32x2_mul_fast({a}, {b})"),
            None,
        ),
    ]
}

fn kernel_names(v: &Variant) -> (String, String) {
    (
        format!("ew_{}_{}", v.precision, v.op),
        format!("cb_{}_{}", v.precision, v.op),
    )
}

/// Element-wise kernel (for the instruction count) and compute-bound kernel of one variant.
fn source_of<T: DeviceWords>(v: &Variant) -> String {
    let (ty, w) = (T::CUDA_TYPE, T::Word::CUDA);
    let (ew, cb) = kernel_names(v);
    let e = (v.expr)("x", "y");
    let mut s = format!(
        r#"
extern "C" __global__ void {ew}(const {w}* xw, const {w}* yw, {w}* outw, unsigned int n)
{{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const {ty}* xs = reinterpret_cast<const {ty}*>(xw);
    const {ty}* ys = reinterpret_cast<const {ty}*>(yw);
    {ty}* out = reinterpret_cast<{ty}*>(outw);
    {ty} x = xs[i], y = ys[i];
    out[i] = {e};
}}
"#
    );
    // Folding with the plain operator keeps the fold out of the timed comparison's semantics.
    let fold = match T::FUNCTIONS {
        None => "(r + acc[k])".to_string(),
        Some(p) => format!("{p}add(r, acc[k])"),
    };
    s += &compute_bound_kernel(&cb, ty, w, &(v.expr)("acc[k]", "y"), &fold);
    s
}

/// Operands near 1, so that no chain step over- or underflows (the special-value paths are not
/// what is timed), as `ops --gpu` does.
fn near_one<T: DeviceWords>(seed: u64, n: usize) -> Vec<T::Word> {
    let mut w = Vec::with_capacity(n * T::words());
    for i in 0..n {
        let t = ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed) >> 11;
        let u = t as f64 / (1u64 << 53) as f64;
        // A full low word: 1 + u·1e-3 is not a double-word with lo = 0 after the first step.
        T::from_f64(1.0 + (u - 0.5) * 1e-3).push_words(&mut w);
    }
    w
}

struct Measured {
    instructions: usize,
    gops: Vec<f64>,
    out_bits: Vec<u64>,
}

fn measure<T: DeviceWords>(
    gpu: &Gpu,
    v: &Variant,
    passes: usize,
    iters: u32,
    n: usize,
) -> Result<Measured, GpuError> {
    let source = Source::new(
        format!("dw_throughput_{}_{}.cu", v.precision, v.op),
        format!("{}\n{}", twin::HEADER, source_of::<T>(v)),
    );
    let module = gpu.build(&source, FlagSet::Default)?;
    let (ew, cb) = kernel_names(v);
    let instructions = count_fp_instructions(module.ptx().unwrap_or(""), &ew, T::Word::DTYPE);
    let x = gpu.upload("x", &T::Word::host(near_one::<T>(1, n)))?;
    let y = gpu.upload("y", &T::Word::host(near_one::<T>(2, n)))?;
    let out = gpu.alloc_zeros("out", T::Word::DTYPE, n * T::words())?;
    let block = module.resources(&cb).map_or(COMPUTE_BOUND_BLOCK, |r| {
        COMPUTE_BOUND_BLOCK.min(r.max_threads_per_block)
    });
    let args = vec![
        KernelArg::from(&x),
        KernelArg::from(&y),
        KernelArg::from(&out),
        KernelArg::Scalar(Scalar::U32(n as u32)),
        KernelArg::Scalar(Scalar::I32(iters as i32)),
    ];
    let timing = TimingOptions {
        warmup: 3,
        reps: 10,
    };
    let mut gops = Vec::new();
    for _ in 0..passes {
        let t = gpu.time_kernel(
            &module,
            &cb,
            LaunchDims::linear(n as u64, block),
            std::slice::from_ref(&args),
            timing,
        )?;
        gops.push((n * CHAINS) as f64 * iters as f64 / (t.median_ms * 1e-3) / 1e9);
    }
    let words = T::Word::unhost(gpu.download(&out)?).unwrap_or_default();
    Ok(Measured {
        instructions,
        gops,
        out_bits: words.iter().map(|w| w.bits()).collect(),
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| -> u64 {
        args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
    };
    let (passes, iters, n) = (
        arg(0, 2) as usize,
        arg(1, 256) as u32,
        arg(2, 1_024_000) as usize,
    );
    let gpu = match Gpu::probe() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("dw_throughput needs a GPU: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ceilings = match gpu.report(&ReportOptions::default()) {
        Ok(r) => r.ceilings,
        Err(e) => {
            eprintln!("could not measure the device's ceilings: {e}");
            None
        }
    };
    println!(
        "{}: {n} threads, {CHAINS} chains × {iters} steps each, {COMPUTE_BOUND_BLOCK}-thread blocks, flag set default; Gop/s = median of 10 launches per pass",
        gpu.info().name
    );
    println!(
        "{:<7} {:<11} {:>9} {:>9}  {:<23} {:>8}  same bits as checked",
        "type", "op", "fp instr", "roofline", "Gop/s per pass", "of roof"
    );
    let mut checked_bits: Vec<(String, Vec<u64>)> = Vec::new();
    for v in variants() {
        let result = match v.precision {
            "f64" => measure::<f64>(&gpu, &v, passes, iters, n),
            "f64x2" => measure::<f64x2>(&gpu, &v, passes, iters, n),
            _ => measure::<f32x2>(&gpu, &v, passes, iters, n),
        };
        let m = match result {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{} {}: {e}", v.precision, v.op);
                return ExitCode::FAILURE;
            }
        };
        let word = if v.precision == "f32x2" {
            DType::F32
        } else {
            DType::F64
        };
        let rate = ceilings.as_ref().map(|c| {
            let gflop = if word == DType::F32 {
                c.fp32_fma_gflop_s
            } else {
                c.fp64_fma_gflop_s
            };
            gflop / 2.0
        });
        let roof = rate
            .filter(|_| m.instructions > 0)
            .map(|r| r / m.instructions as f64);
        let best = m.gops.iter().cloned().fold(0.0, f64::max);
        let same = v.same_bits_as.map(|of| {
            let key = format!("{}/{of}", v.precision);
            checked_bits
                .iter()
                .find(|(k, _)| *k == key)
                .map_or("no checked run", |(_, bits)| {
                    if *bits == m.out_bits {
                        "yes"
                    } else {
                        "NO"
                    }
                })
        });
        println!(
            "{:<7} {:<11} {:>9} {:>9}  {:<23} {:>8}  {}",
            v.precision,
            v.op,
            m.instructions,
            roof.map_or("-".into(), |r| format!("{r:.0}")),
            m.gops
                .iter()
                .map(|g| format!("{g:.1}"))
                .collect::<Vec<_>>()
                .join(" "),
            roof.map_or("-".into(), |r| format!("{:.0}%", 100.0 * best / r)),
            same.unwrap_or("")
        );
        checked_bits.push((format!("{}/{}", v.precision, v.op), m.out_bits));
    }
    ExitCode::SUCCESS
}
