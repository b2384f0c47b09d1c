//! `mantissa ops`: wiring for [`mantissa_study::ops`].

use clap::{Args, ValueEnum};
use mantissa_num::Precision;
use mantissa_study::ops::{self, Distribution, Op, OpsConfig, Range};

use crate::progress::Bar;
use crate::table;

#[derive(Args)]
pub struct OpsArgs {
    /// Random operand pairs per operation.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    samples: u64,
    /// Operand magnitudes LO:HI (each operand also gets a random sign).
    #[arg(long, default_value = "0:1e6", value_name = "LO:HI", value_parser = parse_range)]
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
    s.parse().map_err(|e: ops::RangeError| e.to_string())
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
    let config = OpsConfig {
        samples: args.samples as usize,
        range: args.range,
        distribution,
        seed: args.seed,
        precisions: args.precision.0,
        ops: args.ops.0,
    };
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
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let mut row = vec![r.precision.clone(), r.op.to_string()];
            row.extend([r.mean, r.median, r.p99, r.max, r.std].map(table::num));
            if r.nonfinite > 0 {
                row.push(r.nonfinite.to_string());
            } else {
                row.push("0".into());
            }
            row
        })
        .collect();
    print!(
        "{}",
        table::markdown(
            &[
                "precision",
                "op",
                "mean",
                "median",
                "p99",
                "max",
                "std",
                "non-finite"
            ],
            &rows,
            2
        )
    );
    Ok(())
}
