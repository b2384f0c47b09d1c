//! Compute-bound throughput of the double-word operations on the GPU, with and without the
//! special-value rule: the kernel of `mantissa ops --gpu` (each thread runs `CHAINS` independent
//! chains `acc = op(acc, y)` in registers, `COMPUTE_BOUND_BLOCK`-thread blocks), for the twin's
//! `add`, `add_fast`, `add_sloppy`, `mul`, `mul_fast` and `mul_seed` of f64x2 and f32x2, next to
//! native f64; once with a per-thread operand `y` (loaded into registers, as `ops --gpu`), once
//! with one `y` for all threads (a kernel parameter, read from the constant bank: a scale factor,
//! say), which leaves the register file one operand fewer to read per instruction.
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
use mantissa_gpu::{DeviceWords, Word};
use mantissa_num::{f32x2, f64x2};
use mantissa_study::gpu_ops::{
    compute_bound_kernel, count_fp_instructions, elementwise_kernel, Operand, CHAINS,
    COMPUTE_BOUND_BLOCK,
};

/// One row: a precision and one of its operations.
struct Variant {
    precision: &'static str,
    op: &'static str,
    /// The checked operation whose results a rule-free variant must reproduce bit for bit.
    same_bits_as: Option<&'static str>,
}

impl Variant {
    /// The operation as a CUDA expression in `a` and `b`: the operator for f64, the twin's
    /// function otherwise.
    fn expr(&self, a: &str, b: &str) -> String {
        match (self.precision, self.op) {
            ("f64", "add") => format!("({a} + {b})"),
            ("f64", _) => format!("({a} * {b})"),
            (p, op) => format!("mantissa::{p}_{op}({a}, {b})"),
        }
    }
}

fn variants() -> Vec<Variant> {
    let rows = [
        ("f64", "add", None),
        ("f64", "mul", None),
        ("f64x2", "add", None),
        ("f64x2", "add_fast", Some("add")),
        ("f64x2", "add_sloppy", None),
        ("f64x2", "mul", None),
        ("f64x2", "mul_fast", None),
        ("f64x2", "mul_seed", None),
        ("f32x2", "add", None),
        ("f32x2", "add_fast", Some("add")),
        ("f32x2", "mul", None),
        ("f32x2", "mul_fast", None),
    ];
    rows.into_iter()
        .map(|(precision, op, same_bits_as)| Variant {
            precision,
            op,
            same_bits_as,
        })
        .collect()
}

/// Element-wise, compute-bound with a per-thread operand, compute-bound with a uniform one.
fn kernel_names(v: &Variant) -> [String; 3] {
    ["ew", "cb", "cbu"].map(|k| format!("{k}_{}_{}", v.precision, v.op))
}

/// Element-wise kernel (for the instruction count) and compute-bound kernel of one variant.
fn source_of<T: DeviceWords>(v: &Variant) -> String {
    let (ty, w) = (T::CUDA_TYPE, T::Word::CUDA);
    let [ew, cb, cbu] = kernel_names(v);
    let mut s = elementwise_kernel(&ew, ty, w, &v.expr("x", "y"));
    // The chains are folded once per thread, after the timed loop, with the checked addition.
    let fold = match T::FUNCTIONS {
        None => "(r + acc[k])".to_string(),
        Some(p) => format!("{p}add(r, acc[k])"),
    };
    let step = v.expr("acc[k]", "y");
    s += &compute_bound_kernel(&cb, ty, w, &step, &fold, Operand::PerThread);
    let init = match T::FUNCTIONS {
        None => format!("{ty} y = yh;"),
        Some(_) => format!("{ty} y; y.hi = yh; y.lo = yl;"),
    };
    s += &compute_bound_kernel(&cbu, ty, w, &step, &fold, Operand::Uniform(&init));
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
    /// Per pass: Gop/s with a per-thread operand, and with a uniform one.
    gops: Vec<(f64, f64)>,
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
    let module = gpu.build(&source, FlagSet::DEFAULT)?;
    let [ew, cb, cbu] = kernel_names(v);
    let instructions = count_fp_instructions(module.ptx().unwrap_or(""), &ew, T::Word::DTYPE);
    let x = gpu.upload("x", &T::Word::host(near_one::<T>(1, n)))?;
    let y = gpu.upload("y", &T::Word::host(near_one::<T>(2, n)))?;
    let out = gpu.alloc_zeros("out", T::Word::DTYPE, n * T::words())?;
    let dims = |kernel: &str| {
        let block = module.resources(kernel).map_or(COMPUTE_BOUND_BLOCK, |r| {
            COMPUTE_BOUND_BLOCK.min(r.max_threads_per_block)
        });
        LaunchDims::linear(n as u64, block)
    };
    let tail = [
        KernelArg::from(&out),
        KernelArg::Scalar(Scalar::U32(n as u32)),
        KernelArg::Scalar(Scalar::I32(iters as i32)),
    ];
    let args: Vec<KernelArg> = [KernelArg::from(&x), KernelArg::from(&y)]
        .into_iter()
        .chain(tail)
        .collect();
    // The uniform operand as two words (the second 0 for the native types), near 1 like the rest.
    let mut y_words = Vec::new();
    T::from_f64(1.0 + 0.25e-3).push_words(&mut y_words);
    let y_word = |i: usize| {
        let w = y_words.get(i).map_or(0, |w| w.bits());
        if T::Word::DTYPE == DType::F32 {
            Scalar::F32(f32::from_bits(w as u32))
        } else {
            Scalar::F64(f64::from_bits(w))
        }
    };
    let uniform_args: Vec<KernelArg> = [
        KernelArg::from(&x),
        KernelArg::Scalar(y_word(0)),
        KernelArg::Scalar(y_word(1)),
    ]
    .into_iter()
    .chain(tail)
    .collect();
    let timing = TimingOptions {
        warmup: 3,
        reps: 10,
    };
    let ops = (n * CHAINS) as f64 * iters as f64;
    let mut gops = Vec::new();
    let mut out_bits = Vec::new();
    for _ in 0..passes {
        let t = gpu.time_kernel(&module, &cb, dims(&cb), std::slice::from_ref(&args), timing)?;
        // The per-thread kernel's results, for the bit comparison with the checked operation.
        out_bits = T::Word::unhost(gpu.download(&out)?)
            .unwrap_or_default()
            .iter()
            .map(|w| w.bits())
            .collect();
        let tu = gpu.time_kernel(
            &module,
            &cbu,
            dims(&cbu),
            std::slice::from_ref(&uniform_args),
            timing,
        )?;
        gops.push((
            ops / (t.median_ms * 1e-3) / 1e9,
            ops / (tu.median_ms * 1e-3) / 1e9,
        ));
    }
    Ok(Measured {
        instructions,
        gops,
        out_bits,
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
        "{:<7} {:<11} {:>8} {:>8}  {:<21} {:>7}  {:<21} {:>7}  same bits as checked",
        "type",
        "op",
        "fp instr",
        "roofline",
        "per-thread y, passes",
        "of roof",
        "uniform y, passes",
        "of roof"
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
        let best = |pick: fn(&(f64, f64)) -> f64| m.gops.iter().map(pick).fold(0.0, f64::max);
        let passes = |pick: fn(&(f64, f64)) -> f64| {
            m.gops
                .iter()
                .map(|g| format!("{:.1}", pick(g)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let of_roof = |pick: fn(&(f64, f64)) -> f64| {
            roof.map_or("-".into(), |r| format!("{:.0}%", 100.0 * best(pick) / r))
        };
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
            "{:<7} {:<11} {:>8} {:>8}  {:<21} {:>7}  {:<21} {:>7}  {}",
            v.precision,
            v.op,
            m.instructions,
            roof.map_or("-".into(), |r| format!("{r:.0}")),
            passes(|g| g.0),
            of_roof(|g| g.0),
            passes(|g| g.1),
            of_roof(|g| g.1),
            same.unwrap_or("")
        );
        checked_bits.push((format!("{}/{}", v.precision, v.op), m.out_bits));
    }
    ExitCode::SUCCESS
}
