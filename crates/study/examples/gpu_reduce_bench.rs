//! Times the GPU reductions of `mantissa_study::gpu_reduce` on large f64 data.
//!
//! Usage: `gpu_reduce_bench [LOG2_N=27] [REPS=30] [SHAPE...]`, shapes as `GRIDxBLOCK` or `full`
//! (default: `full` and a sweep of multiprocessor multiples). Prints one line per reduction and
//! shape: median ms over REPS timed runs after 5 warm-up runs, GB/s of input read, the ratio to
//! CUB's f64 sum on an H200 (0.254 ms for 2^27 doubles, scaled by n), and whether the result is
//! right (the exact sum against the CPU's `ExactSum`, the others against their CPU models).

use std::process::ExitCode;

use mantissa_gpu::{Gpu, GpuError, TimingOptions};
use mantissa_num::exact::ExactSum;
use mantissa_num::{f64x2, Comp64};
use mantissa_study::gpu_reduce::{sum_f64_in_model, sum_model, GpuReducer, Shape};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// CUB's f64 sum of 2^27 doubles measured on an H200 (the target these kernels are held to).
const CUB_MS_2_27: f64 = 0.254;

fn parse_shape(s: &str, gpu: &Gpu) -> Option<Shape> {
    if s == "full" {
        return Some(Shape::full_device(gpu));
    }
    let (g, b) = s.split_once(['x', '×'])?;
    Some(Shape::new(g.parse().ok()?, b.parse().ok()?))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let log2n: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(27);
    let reps: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let gpu = match Gpu::probe() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return ExitCode::FAILURE;
        }
    };
    let sms = gpu.info().sm_count;
    let mut shapes: Vec<Shape> = args
        .iter()
        .skip(2)
        .filter_map(|a| parse_shape(a, &gpu))
        .collect();
    if shapes.is_empty() {
        shapes.push(Shape::full_device(&gpu));
        for (k, b) in [(2, 256), (4, 256), (8, 256), (2, 512), (4, 512), (1, 1024)] {
            shapes.push(Shape::new(sms * k, b));
        }
    }
    let n = 1usize << log2n;
    println!(
        "{} ({} SMs), n = 2^{log2n} f64 ({:.2} GiB), {reps} reps after 5 warm-ups, median",
        gpu.info().name,
        sms,
        (n * 8) as f64 / (1u64 << 30) as f64
    );
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2027);
    let xs: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.25).collect();
    let exact = xs.iter().copied().collect::<ExactSum>().round();
    let timing = TimingOptions { warmup: 5, reps };
    let cub_ms = CUB_MS_2_27 * n as f64 / (1u64 << 27) as f64;
    let bytes = (n * 8) as f64;
    let mut r = GpuReducer::new(&gpu);
    println!(
        "{:<22} {:>10} {:>10} {:>8} {:>8}  result",
        "reduction", "shape", "median ms", "GB/s", "/CUB"
    );
    let mut failed = false;
    for &shape in &shapes {
        // Prints one row: (value, right?, median ms) or the error.
        let mut report = |name: &str, res: Result<(f64, bool, f64), GpuError>| match res {
            Ok((value, ok, ms)) => {
                failed |= !ok;
                println!(
                    "{name:<22} {:>10} {ms:>10.4} {:>8.0} {:>8.3}  {value:.17e} {}",
                    shape.to_string(),
                    bytes / (ms * 1e-3) / 1e9,
                    ms / cub_ms,
                    if ok { "ok" } else { "WRONG" }
                );
            }
            Err(e) => {
                failed = true;
                println!("{name:<22} {:>10} error: {e}", shape.to_string());
            }
        };
        report(
            "f64 sum",
            r.sum::<f64>(&xs, shape, timing).map(|(s, t)| {
                (
                    s,
                    s.to_bits() == sum_model(&xs, shape).to_bits(),
                    t.median_ms,
                )
            }),
        );
        report(
            "f64x2 sum (f64 in)",
            r.sum_f64_in::<f64x2>(&xs, shape, timing).map(|(s, t)| {
                let m = sum_f64_in_model::<f64x2>(&xs, shape);
                (s.to_f64(), (s.hi, s.lo) == (m.hi, m.lo), t.median_ms)
            }),
        );
        report(
            "comp64 sum (f64 in)",
            r.sum_f64_in::<Comp64>(&xs, shape, timing).map(|(s, t)| {
                let m = sum_f64_in_model::<Comp64>(&xs, shape);
                let same = (s.value, s.error) == (m.value, m.error);
                (s.to_f64(), same, t.median_ms)
            }),
        );
        report(
            "exact sum",
            r.exact_sum(&xs, shape, timing)
                .map(|(s, t)| (s, s.to_bits() == exact.to_bits(), t.median_ms)),
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
