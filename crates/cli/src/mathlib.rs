//! `mantissa mathlib`: wiring for [`mantissa_mathlib`] — parse the lists, find the GPU (CPU
//! columns only without one), run or resume the plan into OUT/mathlib.jsonl, print the tables
//! and write OUT/mathlib.html; or `--check FUNCTION INPUT` one input everywhere.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use mantissa_gpu::{DeviceSelection, Gpu, Toolchain};
use mantissa_mathlib::cpu::CpuLibrary;
use mantissa_mathlib::hexfloat::{parse, to_decimal, to_hex};
use mantissa_mathlib::html::write_html;
use mantissa_mathlib::measure::Plan;
use mantissa_mathlib::records::{self, read_records, Record};
use mantissa_mathlib::run::{check, check_arity, check_columns, run_plan_on, setting, Event};
use mantissa_mathlib::table::{tables, ulps, Table};
use mantissa_mathlib::{Format, Function, MathGpu, MathlibError, Variant};
use mantissa_report::Shard;
use mantissa_slurm::GpuUse;

use crate::stop::{self, Keeps};
use crate::table::markdown;

/// The options of `mantissa mathlib` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct MathlibArgs {
    /// Functions, comma-separated: generic names (sin, atan2, lgamma, div, …), CUDA spellings
    /// (sinf, __expf) or `all` [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    functions: Vec<String>,
    /// Precisions, comma-separated: f32, f64 [default: both].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    precision: Vec<String>,
    /// GPU builds, comma-separated: default, fast (-use_fast_math), intrinsic (__sinf, …)
    /// [default: all three].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    variants: Vec<String>,
    /// CPU libraries, comma-separated: std (Rust std, the platform libm), libm (the libm
    /// crate), none [default: both].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    libraries: Vec<String>,
    /// Seconds of search per function and precision (binary64, bivariate functions and the CPU
    /// columns); binary32 univariate functions are swept exhaustively on the GPU regardless.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "5",
        allow_hyphen_values = true
    )]
    budget: String,
    /// Binary32 inputs sampled (evenly over all bit patterns) for the CPU columns of univariate
    /// functions.
    #[arg(long, value_name = "N", default_value_t = 1 << 16)]
    cpu_sample: u64,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// CPU columns only, even when a GPU is present.
    #[arg(long)]
    cpu_only: bool,
    /// Output directory: mathlib.jsonl and mathlib.html.
    #[arg(long, default_value = "mantissa-mathlib")]
    out: PathBuf,
    /// Keep OUT/mathlib.jsonl and measure only the functions it lacks (without --resume an
    /// existing file is moved aside, never overwritten).
    #[arg(long)]
    resume: bool,
    /// Run only shard I of N (0 ≤ I < N): unit k, the k-th (function, precision) pair
    /// (precisions outer, functions inner), is shard k mod N's. Records go to
    /// OUT/mathlib.shard-I-of-N.jsonl; `mantissa merge OUT` joins them and writes the tables.
    #[arg(long, value_name = "I/N", conflicts_with_all = ["check", "report"])]
    shard: Option<Shard>,
    /// GPUs to measure on: `all`, or ordinals like 0,2 (after CUDA_VISIBLE_DEVICES). Each GPU
    /// measures one function at a time; records are written in plan order whichever GPU
    /// measured them. The GPUs must be of one model. `--check` uses GPU 0.
    #[arg(long, value_name = "all|LIST", default_value = "all")]
    devices: DeviceSelection,
    /// Print the measurements as JSON lines instead of tables.
    #[arg(long)]
    json: bool,
    /// Rebuild the tables and OUT/mathlib.html from OUT/mathlib.jsonl alone; nothing is measured.
    #[arg(long, conflicts_with = "check")]
    report: bool,
    /// Evaluate one input on every GPU build and CPU library and print the results, the
    /// correctly rounded value and the errors: `--check sinf 0x1.8p+3`, `--check pow 2,0.5`.
    /// The f32 spelling (sinf) or --precision f32 selects binary32.
    #[arg(long, num_args = 2, value_names = ["FUNCTION", "INPUT"], allow_hyphen_values = true)]
    check: Vec<String>,
}

/// A bad option value: one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MathlibUsage(pub String);

fn usage(msg: impl Into<String>) -> anyhow::Error {
    MathlibUsage(msg.into()).into()
}

fn lift(e: MathlibError) -> anyhow::Error {
    match e {
        MathlibError::Usage(m) => usage(m),
        other => other.into(),
    }
}

fn parse_list<T: Copy + PartialEq>(
    items: &[String],
    what: &str,
    all: &[T],
    find: impl Fn(&str) -> Option<T>,
    accepted: &str,
) -> anyhow::Result<Vec<T>> {
    if items.is_empty() || items.iter().any(|s| s.trim() == "all") {
        return Ok(all.to_vec());
    }
    let mut out = Vec::new();
    for s in items {
        let t = find(s).ok_or_else(|| {
            usage(format!(
                "--{what}: unknown '{}'; accepted: {accepted}, all",
                s.trim()
            ))
        })?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// The GPU for `--check`: GPU 0, or none (CPU columns only, said in one line).
fn probe_gpu(cpu_only: bool) -> Option<MathGpu> {
    if cpu_only {
        return None;
    }
    match Gpu::probe() {
        Ok(gpu) => {
            eprintln!(
                "GPU: {} (driver CUDA {})",
                gpu.info().name,
                gpu.info().driver
            );
            Some(MathGpu::new(gpu))
        }
        Err(e) => {
            eprintln!("no GPU ({e}): CPU columns only");
            None
        }
    }
}

/// The GPUs of `selection` through one shared toolchain; without a GPU, CPU columns only (said
/// in one line). A GPU named in `--devices` that cannot be opened is an error.
fn probe_gpus(cpu_only: bool, selection: &DeviceSelection) -> anyhow::Result<Vec<MathGpu>> {
    if cpu_only {
        return Ok(Vec::new());
    }
    match Toolchain::probe().and_then(|t| selection.open(&t)) {
        Ok(gpus) => {
            if let Some(gpu) = gpus.first() {
                let on = match gpus.len() {
                    1 => String::new(),
                    n => format!(" x {n}"),
                };
                eprintln!(
                    "GPU: {}{on} (driver CUDA {})",
                    gpu.info().name,
                    gpu.info().driver
                );
            }
            Ok(gpus.into_iter().map(MathGpu::new).collect())
        }
        Err(e) if *selection == DeviceSelection::All => {
            eprintln!("no GPU ({e}): CPU columns only");
            Ok(Vec::new())
        }
        Err(e) => Err(usage(format!("--devices {selection}: {e}"))),
    }
}

pub fn run(args: MathlibArgs) -> anyhow::Result<()> {
    let precisions: Vec<Format> = parse_list(
        &args.precision,
        "precision",
        &Format::ALL,
        Format::parse,
        "f32, f64",
    )?;
    if !args.check.is_empty() {
        return run_check(&args, &precisions);
    }
    if args.report {
        return run_report(&args);
    }
    let plan = plan(&args, precisions)?;
    let gpus = probe_gpus(args.cpu_only, &args.devices)?;
    // Before the store is opened, which would move earlier records aside.
    check_columns(&plan, &gpus).map_err(lift)?;
    let run_setting = setting(&plan, gpus.first());
    let mut store =
        records::open(&args.out, args.resume, args.shard, &plan, &run_setting).map_err(lift)?;
    if let Some(old) = store.moved_aside() {
        eprintln!("earlier records moved to {}", old.display());
    }
    if let Some(why) = store.unlocked() {
        eprintln!("note: {why}: a second run writing it at the same time would not be refused");
    }
    let bar = ProgressBar::new(1000);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>28} [{bar:30}] {percent}% ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let started = std::time::Instant::now();
    let ordinals: Vec<usize> = gpus.iter().map(|g| g.gpu().ordinal()).collect();
    let mut pool_line = None;
    let stop = stop::install(Keeps::FinishesRunning("function"));
    let measurements = run_plan_on(
        &plan,
        &gpus,
        Some(&mut store),
        stop,
        &mut |event| match event {
            Event::Progress(what, p) => {
                bar.set_prefix(what.to_string());
                bar.set_position((p * 1000.0) as u64);
            }
            Event::Measured {
                measurements,
                resumed,
            } => {
                if let Some(m) = measurements.first() {
                    let line = format!(
                        "{:<8} {}: {}{}",
                        m.function.cuda_name(m.format),
                        m.format.name(),
                        measurements
                            .iter()
                            .map(|m| format!("{} {}", m.column.label(), ulps(m.stats.max_ulps)))
                            .collect::<Vec<_>>()
                            .join(", "),
                        if resumed { " (from the records)" } else { "" }
                    );
                    // Without a terminal the bar is hidden and would swallow the line: logs keep it.
                    if bar.is_hidden() {
                        eprintln!("{line}");
                    } else {
                        bar.println(line);
                    }
                }
            }
            Event::Pool(pool) => pool_line = Some(pool.describe(&ordinals)),
        },
    )
    .map_err(lift)?;
    if let Some(line) = pool_line {
        eprintln!("{line}");
    }
    bar.finish_and_clear();
    eprintln!("measured in {:.1} s", started.elapsed().as_secs_f64());
    let records_file = store.path().to_path_buf();
    drop(store);
    stop::exit_if_stopped(|signal| {
        format!(
            "stopped by {}: every finished function is in {}. To finish: {}",
            signal.name(),
            records_file.display(),
            stop::resume_command(std::env::args())
        )
    });
    if args.json {
        for m in &measurements {
            println!("{}", serde_json::to_string(m)?);
        }
    }
    if let Some(shard) = args.shard {
        // The merge prints the tables and writes the page, from every shard's records.
        eprintln!(
            "shard {shard}: records in {}; when every shard is done, `mantissa merge {}` writes the report",
            records_file.display(),
            args.out.display()
        );
        return Ok(());
    }
    if !args.json {
        for format in Format::ALL {
            for t in tables(&measurements, format) {
                print_table(&t);
            }
        }
    }
    // The page shows everything in the records, earlier functions of a resumed run included.
    let (records, _) = read_records(&args.out).map_err(lift)?;
    let all: Vec<_> = records.into_iter().map(|r| r.measurement).collect();
    let page = write_html(&args.out, &all, Some(&run_setting)).map_err(lift)?;
    eprintln!(
        "records: {}; report: {}",
        records::records_path(&args.out).display(),
        page.display()
    );
    Ok(())
}

/// The plan `args` give (functions, variants, libraries, budget, …), each list checked.
fn plan(args: &MathlibArgs, precisions: Vec<Format>) -> anyhow::Result<Plan> {
    let functions = parse_list(
        &args.functions,
        "functions",
        &Function::ALL,
        Function::parse,
        &Function::names(),
    )?;
    let variants = parse_list(
        &args.variants,
        "variants",
        &Variant::ALL,
        Variant::parse,
        "default, fast, intrinsic",
    )?;
    let libraries = if args.libraries.iter().any(|s| s.trim() == "none") {
        Vec::new()
    } else {
        parse_list(
            &args.libraries,
            "libraries",
            &CpuLibrary::ALL,
            |s| CpuLibrary::ALL.into_iter().find(|l| l.name() == s.trim()),
            "std, libm, none",
        )?
    };
    let budget: f64 = args
        .budget
        .trim()
        .parse()
        .ok()
        .filter(|b: &f64| b.is_finite() && *b > 0.0)
        .ok_or_else(|| {
            usage(format!(
                "--budget: '{}' is not a positive number of seconds",
                args.budget
            ))
        })?;
    if args.cpu_sample == 0 {
        return Err(usage("--cpu-sample: must be at least 1"));
    }
    Ok(Plan {
        functions,
        formats: precisions,
        variants,
        libraries,
        budget: Duration::from_secs_f64(budget),
        cpu_sample: args.cpu_sample,
        seed: args.seed,
    })
}

/// What `mantissa slurm` needs of mathlib's arguments: its plan, its output directory and
/// whether it uses a GPU; `--check` and `--report`, which measure no plan, are refused.
pub fn for_slurm(args: &MathlibArgs) -> anyhow::Result<(Plan, PathBuf, GpuUse)> {
    if !args.check.is_empty() || args.report {
        return Err(usage(
            "mantissa slurm: mathlib --check and --report measure no plan; there is nothing to shard",
        ));
    }
    let precisions = parse_list(
        &args.precision,
        "precision",
        &Format::ALL,
        Format::parse,
        "f32, f64",
    )?;
    let gpu = if args.cpu_only {
        GpuUse::Never
    } else {
        GpuUse::WhenPresent
    };
    Ok((plan(args, precisions)?, args.out.clone(), gpu))
}

fn run_report(args: &MathlibArgs) -> anyhow::Result<()> {
    let (records, notes) = read_records(&args.out).map_err(lift)?;
    if !notes.skipped.is_empty() {
        eprintln!(
            "note: {}: lines {} are not records and were left out",
            records::records_path(&args.out).display(),
            notes.skipped_lines(5)
        );
    }
    if records.is_empty() {
        let sharded =
            mantissa_report::merge::shard_files::<Record>(&args.out).is_ok_and(|f| !f.is_empty());
        let hint = if sharded {
            format!(
                " (it holds a split run's shards: run `mantissa merge {}` first)",
                args.out.display()
            )
        } else {
            String::new()
        };
        return Err(usage(format!(
            "--report: no records in {}{hint}",
            records::records_path(&args.out).display()
        )));
    }
    write_report(&args.out, records)
}

/// The tables of `records` on stdout and `out/mathlib.html`: what a whole run and `--report`
/// write, and `mantissa merge` after joining shards.
pub fn write_report(out: &Path, records: Vec<Record>) -> anyhow::Result<()> {
    let setting = records.last().map(|r| r.setting.clone());
    let all: Vec<_> = records.into_iter().map(|r| r.measurement).collect();
    for format in Format::ALL {
        for t in tables(&all, format) {
            print_table(&t);
        }
    }
    let page = write_html(out, &all, setting.as_ref()).map_err(lift)?;
    eprintln!("report: {}", page.display());
    Ok(())
}

fn print_table(t: &Table) {
    println!("## {}\n", t.title);
    let header: Vec<&str> = t.header.iter().map(String::as_str).collect();
    print!("{}", markdown(&header, &t.rows, t.text_columns));
    for n in &t.notes {
        println!("{n}");
    }
    println!();
}

fn run_check(args: &MathlibArgs, precisions: &[Format]) -> anyhow::Result<()> {
    let (name, input) = (&args.check[0], &args.check[1]);
    let f = Function::parse(name).ok_or_else(|| {
        usage(format!(
            "--check: unknown function '{name}'; accepted: {}",
            Function::names()
        ))
    })?;
    // An f32 spelling (sinf, __sinf) means binary32; otherwise --precision, else binary64.
    let format =
        if name.trim() == f.cuda_name(Format::F32) || f.intrinsic_name() == Some(name.trim()) {
            Format::F32
        } else if precisions.len() == 1 {
            precisions[0]
        } else {
            Format::F64
        };
    let parsed: Option<Vec<f64>> = input.split(',').map(parse).collect();
    let input_args = parsed.ok_or_else(|| usage(format!("--check: '{input}' is not a number (decimal or hex float such as 0x1.8p+3; two arguments as x,y)")))?;
    // Before the GPU is probed: a wrong count is a usage error on any machine.
    check_arity(f, input_args.len()).map_err(|e| usage(format!("--check: {e}")))?;
    let gpu = probe_gpu(args.cpu_only);
    let c = check(f, format, &input_args, gpu.as_ref()).map_err(lift)?;
    for (a, &given) in c.args.iter().zip(&input_args) {
        let note = if a.to_bits() != given.to_bits() && !given.is_nan() {
            format!("  (rounded from {input})")
        } else {
            String::new()
        };
        println!(
            "input             {}  = {}{note}",
            to_hex(*a, format),
            to_decimal(*a, format)
        );
    }
    println!(
        "correctly rounded {}  = {}",
        to_hex(c.reference.rounded, format),
        to_decimal(c.reference.rounded, format)
    );
    if let mantissa_mathlib::format::Exact::Finite(z) = &c.reference.exact {
        let r = z.repr();
        println!(
            "exact             {}",
            mantissa_num::decimal::format_scaled(r.significand(), r.exponent(), 25)
        );
    }
    let rows: Vec<Vec<String>> = c
        .columns
        .iter()
        .map(|col| {
            let name = match col.column {
                mantissa_mathlib::measure::Column::Gpu(v) => format!("GPU {}", v.name()),
                mantissa_mathlib::measure::Column::Cpu(l) => format!("CPU {}", l.name()),
            };
            vec![
                name,
                to_hex(col.result, format),
                to_decimal(col.result, format),
                ulps(col.ulps),
            ]
        })
        .collect();
    print!(
        "{}",
        markdown(
            &["column", "result (hex)", "result", "error (ulps)"],
            &rows,
            3
        )
    );
    if gpu.is_none() {
        println!("(no GPU: CPU columns only)");
    }
    Ok(())
}
