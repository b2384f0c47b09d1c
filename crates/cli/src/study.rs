//! `mantissa study`: wiring for [`mantissa_study::runner`] — parse, plan, run each backend into
//! OUT/results.jsonl, then write the report from that file and print its summary (every table
//! with `--tables`) and where the rest is.
//!
//! The order is what keeps a bad request from touching anything. First every bad value is refused:
//! by the argument parsers, by `StudyConfig::check_sizes` (a size a workload cannot take) and by
//! the "nothing to measure" check. The toolchain is probed once and the GPUs of `--devices`
//! (default all) opened from it; without one, the run says in one line why it is CPU-only.
//! `runner::check_devices` refuses a GPU given twice and GPUs of two models (the GPU plan's
//! full-device launches and the records' `device` are per model), and `runner::check_fits` a point
//! whose data does not fit a device. Then the guard (`mantissa_study::guard`, from each workload's
//! host cost) refuses a point that needs more memory than `MemAvailable`, announces a run over 10
//! minutes with its estimate per workload, and starts one over 4 hours only with `--force`. A
//! resumed log is opened before the guard, so that its points are not counted; a fresh one after
//! it, so that a refused run moves no earlier results aside.
//!
//! When the runs end, or are stopped, the report is rebuilt from `results.jsonl` alone
//! (`mantissa_report::load`, `write_html`, `write_csv`): the report never re-runs anything, which
//! is why `mantissa report` can rebuild it at any time. The terminal gets the summary
//! (`summary_markdown`) and the paths of the rest, or every table (`markdown`) with `--tables`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::{Args, ValueEnum};
use mantissa_gpu::{DeviceSelection, Gpu, Toolchain};
use mantissa_report::{Manifest, Record, ResultsLog, Shard, StoreOptions};
use mantissa_slurm::GpuUse;
use mantissa_study::guard::{self, Length};
use mantissa_study::inputs::InputClass;
use mantissa_study::registry;
use mantissa_study::runner;
use mantissa_study::study::{
    cpu_name, Plan, Point, RunSummary, StudyConfig, StudyError, StudyPrecision, Suite,
};
use mantissa_study::workload::Workload;

use crate::progress::Bar;
use crate::stop::{self, Keeps};

/// The options of `mantissa study` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct StudyArgs {
    /// Workloads to run: sum, dot, pi, intensity, ge, lu, chain, doundo [default: all].
    #[arg(value_parser = parse_workload)]
    workloads: Vec<&'static dyn Workload>,
    /// The quick suite (the default): small sizes, about half a minute on a 2-core CPU without a GPU.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The thesis's sizes (2^23 elements on the CPU, 10^8 π steps; much longer).
    #[arg(long)]
    full: bool,
    /// Backends: cpu, gpu, or all available.
    #[arg(long, value_enum, default_value_t = BackendChoice::All)]
    backend: BackendChoice,
    /// Precisions, comma-separated: f32, f64, f32x2, f64x2, comp32, comp64, comp32n, comp64n,
    /// mp32 … mp1024, exact, or all [default: the native types, mp32…mp256 and exact].
    #[arg(long, value_name = "LIST", value_parser = parse_precisions)]
    precision: Option<Precisions>,
    /// Input class, repeatable: range1…range5 (seed 000 Table 11), gmp-range1…gmp-range5
    /// (Table 7), chain-6, chain-10 (Figs 22–23), du-small, du-large, du-xsmall-ylarge,
    /// du-xlarge-ysmall (Table 20), or two intervals SMALL_LO:SMALL_HI,LARGE_LO:LARGE_HI. Used by
    /// sum, ge, lu, chain and doundo in place of each workload's own default classes.
    #[arg(long = "input", value_name = "CLASS", value_parser = parse_class)]
    inputs: Vec<InputClass>,
    /// Problem sizes, comma-separated (`1024,2^20`), in each workload's unit: elements (sum,
    /// dot), iterations (intensity), matrix order (ge, lu), factors (chain), steps (doundo), π
    /// steps are fixed [default: the suite's].
    #[arg(long, value_name = "LIST", value_parser = parse_sizes)]
    size: Option<Sizes>,
    /// Seed of every generated input.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory: results.jsonl, report.html, results.csv, plots/.
    #[arg(long, default_value = "mantissa-report")]
    out: PathBuf,
    /// Keep OUT/results.jsonl and measure only the points it lacks (without --resume an existing
    /// file is moved aside, never overwritten).
    #[arg(long)]
    resume: bool,
    /// Start even when a point needs more memory than is free, or the run is estimated at more
    /// than 4 hours of CPU time.
    #[arg(long)]
    force: bool,
    /// Print every table at the end, not only the summary (`mantissa report OUT` prints them too).
    #[arg(long)]
    tables: bool,
    /// Run only shard I of N (0 ≤ I < N) of the plan: unit k (CPU points, then GPU points) is
    /// shard k mod N's. Records go to OUT/results.shard-I-of-N.jsonl, so every shard can share
    /// one OUT; `mantissa merge OUT` joins them and writes the report.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// GPUs to run the GPU points on: `all`, or ordinals like 0,2 (after CUDA_VISIBLE_DEVICES).
    /// Each GPU measures one point at a time; records are written in plan order whichever GPU
    /// measured them. The GPUs must be of one model.
    #[arg(long, value_name = "all|LIST", default_value = "all")]
    devices: DeviceSelection,
}

/// `--backend`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    /// The CPU only.
    Cpu,
    /// The GPUs only.
    Gpu,
    /// The CPU, and the GPUs when there are any.
    All,
}

#[derive(Clone, Debug)]
struct Precisions(Vec<StudyPrecision>);
#[derive(Clone, Debug)]
struct Sizes(Vec<u64>);

fn parse_workload(s: &str) -> Result<&'static dyn Workload, String> {
    registry::find(s).map_err(|e| e.to_string())
}

fn parse_precisions(s: &str) -> Result<Precisions, String> {
    StudyPrecision::parse_list(s)
        .map(Precisions)
        .map_err(|e| e.to_string())
}

fn parse_class(s: &str) -> Result<InputClass, String> {
    s.parse()
        .map_err(|e: mantissa_study::inputs::InputError| e.to_string())
}

/// Largest size the parser accepts: 2^40. Each workload has its own limit
/// (`StudyConfig::check_sizes`), and the memory guard refuses a point that does not fit.
const MAX_SIZE: u64 = 1 << 40;

fn parse_sizes(s: &str) -> Result<Sizes, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let bad = || {
            format!("size {item:?}: expected a whole number from 1 to 2^40, like 1048576 or 2^20")
        };
        let n = match item.split_once('^') {
            Some((b, e)) => {
                let (b, e): (u64, u32) = (
                    b.trim().parse().map_err(|_| bad())?,
                    e.trim().parse().map_err(|_| bad())?,
                );
                b.checked_pow(e).ok_or_else(bad)?
            }
            None => item.replace('_', "").parse().map_err(|_| bad())?,
        };
        if n == 0 || n > MAX_SIZE {
            return Err(bad());
        }
        out.push(n);
    }
    if out.is_empty() {
        return Err(format!("size list {s:?} is empty: give at least one size"));
    }
    Ok(Sizes(out))
}

/// Plans the study, runs the CPU and then the GPU points into `OUT/results.jsonl`, and writes
/// the report; `max_threads` (the global `--threads`) caps the CPU pools.
pub fn run(args: StudyArgs, max_threads: Option<usize>) -> anyhow::Result<()> {
    let mut threads = StudyConfig::default_threads();
    if let Some(cap) = max_threads {
        threads.retain(|&t| t <= cap);
        if !threads.contains(&cap) {
            threads.push(cap);
        }
    }
    let cfg = config(&args, threads);
    let suite = cfg.suite;

    cfg.check_sizes()?;

    let stop = stop::install(Keeps::DropsRunning("point"));

    let gpus = open_gpus(args.backend, &args.devices)?;
    let gpu = gpus.first();
    let cpu_plan = Plan::cpu(&cfg);
    let gpu_launch = gpu.map(runner::full_device);
    let gpu_plan = gpu_launch.map(|full| Plan::gpu(&cfg, full, cpu_plan.points.len() as u64));
    if let (Some(g), Some(plan)) = (gpu, &gpu_plan) {
        // Before anything runs, is allocated or moved.
        runner::check_devices(&gpus)?;
        for device in &gpus {
            runner::check_fits(plan, device)?;
        }
        let on = match gpus.len() {
            1 => String::new(),
            n => format!(" x {n} (GPUs {})", ordinals(&gpus)),
        };
        eprintln!(
            "gpu: {} ({} SMs){on}, {} points",
            g.info().name,
            g.info().sm_count,
            plan.points.len()
        );
    }

    if cpu_plan.points.is_empty() && gpu_plan.as_ref().is_none_or(|p| p.points.is_empty()) {
        let names = |v: Vec<String>| v.join(", ");
        return Err(StudyError::Usage(format!(
            "nothing to measure: no point of {} runs in {} on the chosen backends (exact applies to sum and dot only; mp runs on the CPU only)",
            names(cfg.workloads.iter().map(|w| w.to_string()).collect()),
            names(cfg.precisions.iter().map(|p| p.to_string()).collect()),
        ))
        .into());
    }
    let units = cpu_plan.points.len() + gpu_plan.as_ref().map_or(0, |p| p.points.len());
    let manifest =
        Manifest::new("study", settings(&cfg, args.backend, gpu_launch)).with_units(units as u64);
    // The points of other shards count as done: the estimate and the guard see only this
    // shard's share. They are known by address, since the guard walks these same plans.
    let not_ours: HashSet<*const Point> = match args.shard {
        Some(shard) => std::iter::once(&cpu_plan)
            .chain(&gpu_plan)
            .flat_map(Plan::units)
            .filter(|(unit, _)| !shard.owns(*unit))
            .map(|(_, p)| p as *const Point)
            .collect(),
        None => HashSet::new(),
    };

    // A resumed log is opened before the guard, which counts only the points it lacks; a fresh
    // one after it, so that a refused run moves no earlier results aside.
    let open_log = || {
        let options = StoreOptions {
            resume: args.resume,
            shard: args.shard,
            manifest: Some(manifest.clone()),
        };
        ResultsLog::open_with(&args.out, options)
            .with_context(|| format!("cannot use output directory {}", args.out.display()))
    };
    let resumed = if args.resume { Some(open_log()?) } else { None };
    let (cpu_device, gpu_device) = (cpu_name(), gpu.map(|g| g.info().name.clone()));
    check_before_running(
        &cfg,
        &cpu_plan,
        gpu_plan.as_ref(),
        &|p: &Point| {
            let device = if p.backend.is_gpu() {
                gpu_device.as_deref().unwrap_or_default()
            } else {
                &cpu_device
            };
            not_ours.contains(&(p as *const Point))
                || resumed
                    .as_ref()
                    .is_some_and(|log| log.contains(&p.key(device)))
        },
        args.force,
    )?;
    let mut log = match resumed {
        Some(log) => log,
        None => {
            // A whole run's earlier output (records, report, CSV, plots) moves aside together, so
            // that no old plot sits beside the new ones; a shard moves only its own store file
            // (every shard shares the directory).
            let aside = match args.shard {
                None => mantissa_report::move_previous_output(&args.out).with_context(|| {
                    format!("cannot use output directory {}", args.out.display())
                })?,
                Some(_) => None,
            };
            if let Some(old) = aside {
                eprintln!(
                    "note: the previous output (records, report, CSV, plots) was moved to {}; to continue a run instead of starting afresh, give --resume",
                    old.display()
                );
            }
            open_log()?
        }
    };
    if let Some(old) = log.moved_aside() {
        eprintln!(
            "note: the previous results were moved to {} (use --resume to continue them)",
            old.display()
        );
    }
    if let Some(why) = log.unlocked() {
        eprintln!("note: {why}: a second run writing it at the same time would not be refused");
    }
    if args.resume {
        eprintln!(
            "resuming {}: {} points already measured",
            log.path().display(),
            log.previous_records()
        );
    }

    let bar = Bar::new();
    let cpu = runner::run_cpu(&cpu_plan, suite, &mut log, &bar, stop)?;
    summarize("cpu", &cpu, &log);
    if let Some(plan) = &gpu_plan {
        if !stop.load(Ordering::Relaxed) {
            let summary = runner::run_gpus(plan, &gpus, suite, &mut log, &bar, stop)?;
            summarize("gpu", &summary, &log);
            if let (Some(pool), true) = (&summary.pool, gpus.len() > 1) {
                let ordinals: Vec<usize> = gpus.iter().map(Gpu::ordinal).collect();
                eprintln!("{}", pool.describe(&ordinals));
            }
        }
    }
    let records_path = log.path().to_path_buf();
    drop(log);
    match args.shard {
        // The merge writes the report, from every shard's records.
        Some(shard) => eprintln!(
            "shard {shard}: records in {}; when every shard is done, `mantissa merge {}` writes the report",
            records_path.display(),
            args.out.display()
        ),
        None => write_report(&args.out, args.tables)?,
    }
    // Interrupted: the report covers what was measured, and the exit status says the run is
    // incomplete (130 or 143), so scripts and schedulers do not mistake it for done.
    stop::exit_if_stopped(|signal| {
        format!(
            "stopped by {}: every finished point is in {}; the point running was not recorded. To finish: {}",
            signal.name(),
            records_path.display(),
            stop::resume_command(std::env::args())
        )
    });
    Ok(())
}

/// The GPUs of `selection`, probed once through one shared toolchain; none for `--backend cpu`.
/// Without a GPU, `--backend all` says why in one line and runs CPU-only; a GPU named in
/// `--devices` that cannot be opened is an error either way.
fn open_gpus(backend: BackendChoice, selection: &DeviceSelection) -> anyhow::Result<Vec<Gpu>> {
    let opened = Toolchain::probe().and_then(|t| selection.open(&t));
    match (backend, opened) {
        (BackendChoice::Cpu, _) => Ok(Vec::new()),
        (_, Ok(gpus)) => Ok(gpus),
        (BackendChoice::Gpu, Err(why)) => Err(anyhow::anyhow!("--backend gpu needs a GPU: {why}")),
        (BackendChoice::All, Err(why)) if *selection == DeviceSelection::All => {
            eprintln!("{why}");
            Ok(Vec::new())
        }
        (BackendChoice::All, Err(why)) => Err(anyhow::anyhow!("--devices {selection}: {why}")),
    }
}

/// `0,1,3`: the ordinals of `gpus`.
fn ordinals(gpus: &[Gpu]) -> String {
    let list: Vec<String> = gpus.iter().map(|g| g.ordinal().to_string()).collect();
    list.join(",")
}

/// The configuration `args` give, with CPU thread counts `threads`.
fn config(args: &StudyArgs, threads: Vec<usize>) -> StudyConfig {
    StudyConfig {
        workloads: if args.workloads.is_empty() {
            registry::WORKLOADS.to_vec()
        } else {
            args.workloads.clone()
        },
        suite: if args.full { Suite::Full } else { Suite::Quick },
        cpu: args.backend != BackendChoice::Gpu,
        precisions: args
            .precision
            .clone()
            .map(|p| p.0)
            .unwrap_or_else(StudyPrecision::defaults),
        classes: (!args.inputs.is_empty()).then(|| args.inputs.clone()),
        sizes: args.size.clone().map(|s| s.0),
        threads,
        seed: args.seed,
    }
}

/// What `mantissa slurm` needs of a study's arguments: the configuration a shard on `threads`
/// CPUs plans (checked as `run` checks it), the output directory, and whether it uses a GPU.
pub fn for_slurm(
    args: &StudyArgs,
    threads: usize,
) -> anyhow::Result<(StudyConfig, PathBuf, GpuUse)> {
    let cfg = config(args, StudyConfig::threads_up_to(threads));
    cfg.check_sizes()?;
    let gpu = match args.backend {
        BackendChoice::Cpu => GpuUse::Never,
        BackendChoice::All => GpuUse::WhenPresent,
        BackendChoice::Gpu => GpuUse::Required,
    };
    Ok((cfg, args.out.clone(), gpu))
}

/// What decides the study's work units and their values, for its store's manifest: a resumed
/// run or a shard with other settings would plan other units.
fn settings(
    cfg: &StudyConfig,
    backend: BackendChoice,
    gpu_launch: Option<(u32, u32)>,
) -> BTreeMap<String, String> {
    let list = |items: Vec<String>| items.join(",");
    let backend = match backend {
        BackendChoice::Cpu => "cpu",
        BackendChoice::Gpu => "gpu",
        BackendChoice::All => "all",
    };
    let suite = match cfg.suite {
        Suite::Quick => "quick",
        Suite::Full => "full",
    };
    let inputs = cfg.classes.as_ref().map_or("default".into(), |classes| {
        list(
            classes
                .iter()
                .map(|c| format!("{}={}|{}", c.name, c.small, c.large))
                .collect(),
        )
    });
    let sizes = cfg.sizes.as_ref().map_or("default".into(), |sizes| {
        list(sizes.iter().map(u64::to_string).collect())
    });
    [
        (
            "workloads",
            list(cfg.workloads.iter().map(|w| w.to_string()).collect()),
        ),
        ("suite", suite.into()),
        ("backend", backend.into()),
        (
            "precisions",
            list(cfg.precisions.iter().map(|p| p.to_string()).collect()),
        ),
        ("inputs", inputs),
        ("sizes", sizes),
        ("seed", cfg.seed.to_string()),
        // CPU thread counts follow the machine's cores (and --threads): they are CPU points.
        (
            "threads",
            list(cfg.threads.iter().map(usize::to_string).collect()),
        ),
        // The launch that fills the GPU decides the GPU points; "none" without a GPU plan.
        (
            "gpu_launch",
            gpu_launch.map_or("none".into(), |(grid, block)| format!("{grid}x{block}")),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The estimate and the refusals before a run (`mantissa_study::guard`): a point that needs
/// more memory than is free is refused, a run over the warning threshold is announced with its
/// estimate per workload, and one over the `--force` threshold is refused unless forced.
fn check_before_running(
    cfg: &StudyConfig,
    cpu_plan: &Plan,
    gpu_plan: Option<&Plan>,
    done: &dyn Fn(&Point) -> bool,
    force: bool,
) -> anyhow::Result<()> {
    let plans: Vec<&Plan> = std::iter::once(cpu_plan).chain(gpu_plan).collect();
    let estimate = guard::estimate(&plans, cfg.suite, done);
    if let Some(free) = guard::memory_available() {
        if let Err(refusal) = guard::check_memory(&estimate, cfg.suite, free) {
            if !force {
                return Err(refusal.into());
            }
            eprintln!("warning (--force): {refusal}");
        }
    }
    let seconds = estimate.seconds();
    let said = format!(
        "estimated ~{} of CPU work ({})",
        guard::duration(seconds),
        estimate.summary()
    );
    match estimate.length() {
        Length::Short => {}
        Length::Long => eprintln!("note: {said}; Ctrl-C stops it and --resume goes on later"),
        Length::TooLong if force => eprintln!("warning (--force): {said}"),
        Length::TooLong => {
            return Err(StudyError::Usage(format!(
                "{said}, over the {} that starts only with --force: choose a smaller --size or fewer --precision, or add --force",
                guard::duration(guard::FORCE_SECONDS)
            ))
            .into())
        }
    }
    Ok(())
}

fn summarize(backend: &str, s: &RunSummary, log: &ResultsLog) {
    let mut parts = vec![format!("{} points measured", s.measured)];
    if s.skipped_done > 0 {
        parts.push(format!("{} already done", s.skipped_done));
    }
    if s.failed > 0 {
        parts.push(format!(
            "{} failed (see their notes in the report)",
            s.failed
        ));
    }
    eprintln!(
        "{backend}: {}{} → {}",
        parts.join(", "),
        if s.interrupted {
            " (interrupted: run again with --resume to finish)"
        } else {
            ""
        },
        log.path().display()
    );
}

/// The report files, rebuilt from results.jsonl alone (so a resumed or interrupted run reports
/// everything measured so far), then on stdout the summary, or every table with `tables`, and
/// where the rest is.
pub fn write_report(out: &Path, tables: bool) -> anyhow::Result<()> {
    let (records, _) = mantissa_report::load(out)?;
    mantissa_report::write_html(out, &records)?;
    mantissa_report::write_csv(out, &records)?;
    print!("{}", printed_report(&records, out, tables));
    Ok(())
}

/// What the terminal shows when a run ends: a summary a screen or two long rather than the
/// hundreds of lines of every table, and the files that hold the rest.
fn printed_report(records: &[Record], out: &Path, tables: bool) -> String {
    let all = mantissa_report::markdown(records);
    let mut text = if tables {
        all.clone()
    } else {
        mantissa_report::summary_markdown(records)
    };
    let file = |name: &str| out.join(name).display().to_string();
    let rows = [
        (
            file(mantissa_report::HTML_FILE),
            "every table and plot, and a glossary of the terms",
        ),
        (file(mantissa_report::CSV_FILE), "one row per point"),
        (
            format!("{}/", file(mantissa_report::PLOTS_DIR)),
            "the plots as SVG files",
        ),
        (
            file(mantissa_report::RESULTS_FILE),
            "the records everything else is rebuilt from",
        ),
    ];
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    text += "\nThe report:\n";
    for (path, what) in &rows {
        let pad = " ".repeat(width - path.chars().count());
        text += &format!("  {path}{pad}  {what}\n");
    }
    if !tables {
        text += &format!(
            "Every table ({} lines of Markdown): `mantissa report {}` prints them without \
             re-running anything (or pass --tables to study).\n",
            all.lines().count(),
            out.display()
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_powers_and_reject_zero_and_junk() {
        assert_eq!(
            parse_sizes("1024, 2^20,1_000").unwrap().0,
            vec![1024, 1 << 20, 1000]
        );
        for bad in ["0", "-1", "2^41", "x", "1.5", ","] {
            assert!(parse_sizes(bad).is_err(), "{bad}");
        }
        assert!(parse_sizes("0").unwrap_err().contains("\"0\""));
    }
}
