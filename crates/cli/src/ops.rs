//! `mantissa ops`: wiring for [`mantissa_study::ops`].

use clap::{Args, ValueEnum};
use mantissa_gpu::{FlagSet, Gpu, ReportOptions};
use mantissa_num::Precision;
use mantissa_study::gpu_ops::{self, GpuOpsOptions};
use mantissa_study::ops::{self, Distribution, Op, OpsConfig, Range};

use crate::progress::Bar;
use crate::table;

/// The options of `mantissa ops` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct OpsArgs {
    /// Random operand pairs per operation [default: 10^6; with --gpu, 1000 blocks × 1024 threads].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    samples: Option<u64>,
    /// Operand magnitudes LO:HI (each operand also gets a random sign).
    #[arg(
        long,
        default_value = "0:1e6",
        value_name = "LO:HI",
        value_parser = parse_range,
        allow_hyphen_values = true
    )]
    range: Range,
    /// How magnitudes are drawn from the range.
    #[arg(long, value_enum, default_value_t = Dist::Uniform)]
    distribution: Dist,
    /// Precisions, comma-separated: f32, f64, f32x2, f64x2, comp32, comp64, comp32n, comp64n,
    /// mp32 … mp1024.
    #[arg(long, default_value = "f32,f64,f32x2,f64x2,comp32,comp64", value_parser = parse_precisions)]
    precision: PrecisionList,
    /// Operations, comma-separated: add, sub, mul, div, sqrt.
    #[arg(long = "op", default_value = "add,sub,mul,div,sqrt", value_parser = parse_ops)]
    ops: OpList,
    /// Seed of the operand generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON (configuration and one object per precision and operation) instead of a table.
    #[arg(long)]
    json: bool,
    /// Run on the GPU with mantissa's CUDA twin of the arithmetic (seed 001's experiment: one
    /// operation per thread), adding element-wise time, speed-up over f64 and compute-bound
    /// throughput against the device's roofline.
    #[arg(long)]
    gpu: bool,
    /// NVRTC flag set for --gpu: default, strict, fast, nofma, ftz, approx-div, approx-sqrt. The
    /// twin's arithmetic is written with explicit rounding, so only ftz could change it (on an
    /// H200 it did not); native f32/f64 operations follow the flags.
    #[arg(long, default_value = "default", value_parser = parse_flags)]
    flags: FlagSet,
    /// Elements of the memory-bound run with --gpu (0 skips it; seed 001's 10^6 elements are
    /// launch-bound on current GPUs).
    #[arg(long, default_value_t = 1 << 26, value_parser = clap::value_parser!(u64).range(0..=4_000_000_000))]
    stream_elements: u64,
}

fn parse_flags(s: &str) -> Result<FlagSet, String> {
    s.parse()
        .map_err(|e: mantissa_gpu::UnknownFlagSet| e.to_string())
}

#[derive(Clone, Copy, ValueEnum)]
enum Dist {
    Uniform,
    LogUniform,
}

#[derive(Clone)]
struct PrecisionList(Vec<Precision>);
#[derive(Clone)]
struct OpList(Vec<Op>);

fn parse_range(s: &str) -> Result<Range, String> {
    s.parse().map_err(|e: ops::RangeError| {
        // `-1:1` reads as a signed interval: say that the range is of magnitudes.
        if s.trim_start().starts_with('-') {
            format!("{e}; LO:HI are magnitudes and each operand gets a random sign, so -A:A is 0:A")
        } else {
            e.to_string()
        }
    })
}

fn parse_precisions(s: &str) -> Result<PrecisionList, String> {
    Precision::parse_list(s)
        .map(PrecisionList)
        .map_err(|e| e.to_string())
}

fn parse_ops(s: &str) -> Result<OpList, String> {
    let ops: Result<Vec<Op>, _> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect();
    match ops {
        Ok(v) if !v.is_empty() => Ok(OpList(v)),
        Ok(_) => Err(format!(
            "no operation in {s:?}: expected add, sub, mul, div or sqrt"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs the single-operation experiment on the CPU (or with `--gpu` on the GPU) and prints
/// its tables or JSON.
pub fn run(args: OpsArgs) -> anyhow::Result<()> {
    let distribution = match args.distribution {
        Dist::Uniform => Distribution::Uniform,
        Dist::LogUniform => Distribution::LogUniform,
    };
    if let Err(e) = args.range.check(distribution) {
        // A usage error, reported like clap's: one line, exit code 2.
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    let default_samples = if args.gpu { 1000 * 1024 } else { 1_000_000 };
    let config = OpsConfig {
        samples: args.samples.map_or(default_samples, |n| n as usize),
        range: args.range,
        distribution,
        seed: args.seed,
        precisions: args.precision.0,
        ops: args.ops.0,
    };
    if args.gpu {
        return run_gpu(
            &config,
            args.flags,
            args.stream_elements as usize,
            args.json,
        );
    }
    let results = ops::run(&config, &Bar::new());
    if args.json {
        let doc = serde_json::json!({ "config": config, "unit": "f64 ulps of the exact result", "results": results });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "Error of one operation against the exact result, in f64 ulps (|computed − exact| / ulp(exact)); {} operand pairs, |x| {} in [{}, {}], seed {}.\n",
        config.samples,
        if distribution == Distribution::Uniform { "uniform" } else { "log-uniform" },
        config.range.lo,
        config.range.hi,
        config.seed
    );
    print!("{}", error_table(results.iter()));
    Ok(())
}

fn error_table<'a>(results: impl Iterator<Item = &'a ops::OpErrorStats>) -> String {
    let rows: Vec<Vec<String>> = results
        .map(|r| {
            let mut row = vec![r.precision.clone(), r.op.to_string()];
            row.extend([r.mean, r.median, r.p99, r.max, r.std].map(table::num));
            row.push(r.nonfinite.to_string());
            row
        })
        .collect();
    table::markdown(
        &[
            "precision",
            "op",
            "mean",
            "median",
            "p99",
            "max",
            "std",
            "non-finite",
        ],
        &rows,
        2,
    )
}

fn run_gpu(
    config: &OpsConfig,
    flags: FlagSet,
    stream_elements: usize,
    json: bool,
) -> anyhow::Result<()> {
    let gpu = Gpu::probe().map_err(|why| anyhow::anyhow!("--gpu needs a GPU: {why}"))?;
    let report = gpu.report(&ReportOptions::default())?;
    let opts = GpuOpsOptions {
        flags,
        stream_elements,
        ..GpuOpsOptions::default()
    };
    if config.samples > u32::MAX as usize {
        anyhow::bail!(
            "--samples {} is too large for one launch (at most {})",
            config.samples,
            u32::MAX
        );
    }
    let skipped: Vec<String> = config
        .precisions
        .iter()
        .filter(|p| matches!(p, Precision::Mp(_)))
        .map(|p| p.to_string())
        .collect();
    let rows = gpu_ops::run(&gpu, config, &opts, report.ceilings.as_ref(), &Bar::new())?;
    if json {
        let doc = serde_json::json!({
            "config": config, "gpu": opts, "device": report.info, "ceilings": report.ceilings,
            "unit": "f64 ulps of the exact result", "results": rows,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let info = &report.info;
    println!(
        "{} (compute capability {}), flag set {}, {} operand pairs ({} threads per block), seed {}.{}\n",
        info.name,
        info.compute_capability,
        flags.name(),
        config.samples,
        opts.block,
        config.seed,
        if skipped.is_empty() { String::new() } else { format!(" Not on the GPU (CPU only): {}.", skipped.join(", ")) }
    );
    println!("Error against the exact result, in f64 ulps; \"≠cpu\" counts results whose bits differ from the CPU's.\n");
    // The CPU error table with a ≠cpu column appended.
    let t: Vec<String> = error_table(rows.iter().map(|r| &r.errors))
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("{l} ≠cpu |"),
            1 => format!("{l} ----: |"),
            _ => format!("{l} {:>5} |", rows[i - 2].differs_from_cpu),
        })
        .collect();
    println!("{}\n", t.join("\n"));
    println!(
        "Time: element-wise kernel (median of {} runs, rotating inputs) and its speed-up over f64 (seed 001 Table 2); compute-bound: {} chains × {} steps per thread, {}-thread blocks, against the roofline of the FMA ceiling and the PTX instruction count.\n",
        opts.timing_reps,
        gpu_ops::CHAINS,
        opts.iters,
        gpu_ops::COMPUTE_BOUND_BLOCK.min(opts.block)
    );
    let perf: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.errors.precision.clone(),
                r.errors.op.to_string(),
                format!("{:.4}", r.elementwise_ms),
                table::num(r.speedup_vs_f64),
                table::num(r.gops),
                r.ptx_fp_instructions.to_string(),
                r.roofline_gops.map_or("-".into(), table::num),
                r.roofline_gops
                    .map_or("-".into(), |roof| format!("{:.0}%", 100.0 * r.gops / roof)),
            ]
        })
        .collect();
    let headers = [
        "precision",
        "op",
        "ms",
        "speed-up vs f64",
        "Gop/s",
        "fp instr/op",
        "roofline Gop/s",
        "of roofline",
    ];
    print!("{}", table::markdown(&headers, &perf, 2));
    if opts.stream_elements > 0 {
        println!(
            "\nMemory-bound: the element-wise kernel over {} elements (two loads and one store each, one load for sqrt; median of {} runs), and its time over f64's.\n",
            opts.stream_elements, opts.timing_reps
        );
        let stream: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.errors.precision.clone(),
                    r.errors.op.to_string(),
                    r.stream_ms
                        .map_or("did not fit".into(), |ms| format!("{ms:.3}")),
                    r.stream_gb_s.map_or("-".into(), |g| format!("{g:.0}")),
                    r.stream_vs_f64.map_or("-".into(), |x| format!("{x:.3}")),
                ]
            })
            .collect();
        print!(
            "{}",
            table::markdown(
                &["precision", "op", "ms", "GB/s", "time vs f64"],
                &stream,
                2
            )
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ops: OpsArgs,
    }

    fn range_error(args: &[&str]) -> String {
        match Cli::try_parse_from(std::iter::once("ops").chain(args.iter().copied())) {
            Ok(_) => panic!("{args:?} should be refused"),
            Err(e) => e.to_string(),
        }
    }

    /// A range starting with '-' is the option's value, not another option: it reaches the
    /// range parser, which says why a negative magnitude is refused.
    #[test]
    fn a_negative_range_is_a_value_refused_with_the_reason() {
        for args in [&["--range", "-1:1"][..], &["--range=-1:1"]] {
            let e = range_error(args);
            assert!(e.contains("invalid range \"-1:1\""), "{e}");
            assert!(e.contains("random sign"), "{e}");
        }
        let ok = Cli::try_parse_from(["ops", "--range", "1e-3:2"]).unwrap();
        assert_eq!((ok.ops.range.lo, ok.ops.range.hi), (1e-3, 2.0));
    }
}
