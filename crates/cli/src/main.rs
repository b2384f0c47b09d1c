//! `mantissa`: what floating-point precision costs and buys on your hardware.
//!
//! This crate only parses arguments and wires the library crates together; every computation
//! lives below it (docs/ARCHITECTURE.md). What each command does, with every option, is in
//! docs/COMMANDS.md, and `crates/cli/tests/it/doc_links.rs` keeps that file naming every option.
//!
//! `missing_docs` applies to a binary crate's root only (nothing here is public to another
//! crate), so the lint below keeps that paragraph; the `pub` items of the modules carry their
//! doc comments by convention.

#![deny(missing_docs)]

mod app_args;
mod devices;
mod diff;
mod inspect;
mod mathlib;
mod merge;
mod ops;
mod progress;
mod report;
mod run;
mod run_app;
mod shadow;
mod slurm;
mod spec_args;
mod stdout;
mod stop;
mod study;
mod table;
mod trace;
mod tune;
mod tune_app;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mantissa",
    version,
    about = "What floating-point precision costs and buys on your hardware"
)]
struct Cli {
    /// Worker threads for CPU work (default: all cores).
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Error distribution of single operations (+ − × ÷ √) in each precision, in f64 ulps of
    /// the exact result (seed 001, Table 1).
    Ops(ops::OpsArgs),
    /// GPUs with their facts and measured ceilings: copy bandwidth, FP32/FP64 FMA throughput and
    /// their ratio (the "slug factor" of seed 001). Ceilings are cached per device and driver.
    Devices(devices::DevicesArgs),
    /// The precision study (mantissa's main job): global summation, dot products, π, arithmetic
    /// intensity, Gaussian elimination, LU, multiplication chains and do/undo division in every
    /// precision, on the CPU (sequential and threaded) and the GPU (launch grids and tiles),
    /// written to OUT/results.jsonl as it goes, then OUT/report.html and a printed summary.
    Study(study::StudyArgs),
    /// Rebuild the tables (printed as Markdown), report.html, results.csv and plots/ of a study's
    /// output directory from its results.jsonl alone; nothing is re-run.
    Report(report::ReportArgs),
    /// Compile a CUDA kernel under flag sets (NVRTC, no GPU needed) or read its PTX, and show per
    /// source line the floating-point instructions each produced, flagging what changes results:
    /// FMA contraction, approximate division/sqrt, flush-to-zero, float→unsigned casts.
    Inspect(inspect::InspectArgs),
    /// Run your own CUDA program from a kernel spec (docs/SPEC.md) under flag sets, and compare
    /// each output with the baseline build and your reference: digits, errors, ulps, time.
    Run(run::RunArgs),
    /// Where your CUDA program loses precision, per kernel and source line, on its own inputs:
    /// the error of each f64 instruction run in f32 (demotion error), and where NaN, inf and
    /// subnormal results start and spread (exceptions). Instruments the PTX; needs a GPU.
    Shadow(shadow::ShadowArgs),
    /// Why your CUDA program's outputs differ from your CPU program's (a reference .npy) or
    /// from another build: the causes per source line (contraction, approximate division,
    /// flush-to-zero, float→integer casts), each proved by switching it off in the PTX and
    /// rerunning. Needs a GPU.
    Diff(diff::DiffArgs),
    /// Tune your CUDA program's precision for speed (seed 002, GPUMixer): find the FISets (f64
    /// arithmetic that can run in f32 with few conversions), measure their demotion error, and
    /// search for the configuration meeting your digits and speed-up thresholds (modes 1-3),
    /// beside the delta-debugging baseline (--baseline). Needs a GPU.
    Tune(tune::TuneArgs),
    /// Measure the accuracy of CUDA's math functions (default, -use_fast_math, intrinsics) and
    /// the CPU's (Rust std, the libm crate) against correctly rounded references: binary32
    /// univariate functions exhaustively on the GPU, the rest by search; or --check one input.
    Mathlib(mathlib::MathlibArgs),
    /// Write a Slurm job array that runs `study`, `mathlib` or `tune` in N shards (`--shard
    /// I/N`), its time and memory estimated from the work (tune: --time given), and a merge job that starts when every shard has
    /// succeeded: `mantissa slurm --shards 4 -- study … --out DIR`, then `bash DIR/submit.sh`.
    /// Submits nothing itself.
    Slurm(slurm::SlurmArgs),
    /// Merge the shard stores of a split run (`study`, `mathlib` or `tune` with `--shard I/N`) into the
    /// store a single process writes, in plan order, and write its report; shards of different
    /// settings, versions or revisions, and missing or duplicated shards, are refused.
    Merge(merge::MergeArgs),
    /// Run an application as it is (`mantissa trace -- APP ARGS`) under the attach library,
    /// record what it loads, launches and copies, and write a spec of it (with its PTX and the
    /// bytes it copied) that `mantissa run` replays; says where the host used device results.
    /// Needs a GPU.
    Trace(trace::TraceArgs),
}

fn main() -> ExitCode {
    stdout::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if let Some(n) = cli.threads {
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(n as usize)
            .build_global()
        {
            eprintln!("error: cannot start {n} worker threads: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match cli.command {
        Command::Ops(args) => ops::run(args),
        Command::Devices(args) => devices::run(args),
        Command::Study(args) => study::run(args, cli.threads.map(usize::from)),
        Command::Report(args) => report::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Run(args) => run::run(args),
        Command::Shadow(args) => shadow::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Mathlib(args) => mathlib::run(args),
        Command::Slurm(args) => slurm::run(args, cli.threads.map(usize::from)),
        Command::Merge(args) => merge::run(args),
        Command::Trace(args) => trace::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            // A bad value found after parsing (e.g. a size the GPU cannot hold) is still a usage
            // error.
            match e.downcast_ref::<mantissa_study::study::StudyError>() {
                Some(mantissa_study::study::StudyError::Usage(_)) => ExitCode::from(2),
                _ if e.is::<inspect::InspectUsage>() => ExitCode::from(2),
                _ if e.is::<run::RunUsage>() => ExitCode::from(2),
                _ if e.is::<mathlib::MathlibUsage>() => ExitCode::from(2),
                _ if e.is::<mantissa_slurm::Usage>() => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// Help and version go to stdout in full; real usage errors are one line on stderr, exit code 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let line = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("error: invalid arguments");
            eprintln!("{line}");
            ExitCode::from(2)
        }
    }
}
