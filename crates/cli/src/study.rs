//! `mantissa study`: wiring for [`mantissa_study::runner`] — parse, plan, run each backend into
//! OUT/results.jsonl, then write the report from that file and print its summary (every table
//! with `--tables`) and where the rest is.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use mantissa_gpu::Gpu;
use mantissa_report::{Record, ResultsLog};
use mantissa_study::inputs::InputClass;
use mantissa_study::registry;
use mantissa_study::runner;
use mantissa_study::study::{Plan, RunSummary, StudyConfig, StudyError, StudyPrecision, Suite};
use mantissa_study::workload::Workload;

use crate::progress::Bar;

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
    /// Print every table at the end, not only the summary (`mantissa report OUT` prints them too).
    #[arg(long)]
    tables: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    Cpu,
    Gpu,
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

/// Largest size accepted: 2^31 elements (16 GiB of f64 data per vector).
const MAX_SIZE: u64 = 1 << 31;

fn parse_sizes(s: &str) -> Result<Sizes, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let bad = || {
            format!("size {item:?}: expected a whole number from 1 to 2^31, like 1048576 or 2^20")
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
    let suite = if args.full { Suite::Full } else { Suite::Quick };
    let mut threads = StudyConfig::default_threads();
    if let Some(cap) = max_threads {
        threads.retain(|&t| t <= cap);
        if !threads.contains(&cap) {
            threads.push(cap);
        }
    }
    let cfg = StudyConfig {
        workloads: if args.workloads.is_empty() {
            registry::WORKLOADS.to_vec()
        } else {
            args.workloads.clone()
        },
        suite,
        cpu: args.backend != BackendChoice::Gpu,
        precisions: args
            .precision
            .map(|p| p.0)
            .unwrap_or_else(StudyPrecision::defaults),
        classes: (!args.inputs.is_empty()).then(|| args.inputs.clone()),
        sizes: args.size.map(|s| s.0),
        threads,
        seed: args.seed,
    };

    cfg.check_sizes()?;

    let stop = Arc::new(AtomicBool::new(false));
    install_interrupt_handler(stop.clone());

    // The GPU: probed once; without one, `all` says why in one line and runs CPU-only.
    let gpu = match args.backend {
        BackendChoice::Cpu => None,
        BackendChoice::Gpu => {
            Some(Gpu::probe().map_err(|why| anyhow::anyhow!("--backend gpu needs a GPU: {why}"))?)
        }
        BackendChoice::All => match Gpu::probe() {
            Ok(gpu) => Some(gpu),
            Err(why) => {
                eprintln!("{why}");
                None
            }
        },
    };
    let gpu_plan = gpu
        .as_ref()
        .map(|g| Plan::gpu(&cfg, runner::full_device(g)));
    if let (Some(g), Some(plan)) = (&gpu, &gpu_plan) {
        // Before anything runs, is allocated or moved.
        runner::check_fits(plan, g)?;
        eprintln!(
            "gpu: {} ({} SMs), {} points",
            g.info().name,
            g.info().sm_count,
            plan.points.len()
        );
    }

    let cpu_plan = Plan::cpu(&cfg);
    if cpu_plan.points.is_empty() && gpu_plan.as_ref().is_none_or(|p| p.points.is_empty()) {
        let names = |v: Vec<String>| v.join(", ");
        return Err(StudyError::Usage(format!(
            "nothing to measure: no point of {} runs in {} on the chosen backends (exact applies to sum and dot only; mp runs on the CPU only)",
            names(cfg.workloads.iter().map(|w| w.to_string()).collect()),
            names(cfg.precisions.iter().map(|p| p.to_string()).collect()),
        ))
        .into());
    }

    let mut log = ResultsLog::open(&args.out, args.resume)
        .with_context(|| format!("cannot use output directory {}", args.out.display()))?;
    if let Some(old) = log.moved_aside() {
        eprintln!(
            "note: the previous results were moved to {} (use --resume to continue them)",
            old.display()
        );
    }
    if args.resume {
        eprintln!(
            "resuming {}: {} points already measured",
            log.path().display(),
            log.previous_records()
        );
    }

    let bar = Bar::new();
    let cpu = runner::run_cpu(&cpu_plan, suite, &mut log, &bar, &stop)?;
    summarize("cpu", &cpu, &log);
    if let (Some(g), Some(plan)) = (&gpu, &gpu_plan) {
        if !stop.load(Ordering::Relaxed) {
            let summary = runner::run_gpu(plan, g, suite, &mut log, &bar, &stop)?;
            summarize("gpu", &summary, &log);
        }
    }
    drop(log);
    write_report(&args.out, args.tables)?;
    if stop.load(Ordering::Relaxed) {
        // Interrupted: the report covers what was measured, and the exit status says the run is
        // incomplete (130, as a shell reports SIGINT), so scripts do not mistake it for done.
        std::process::exit(130);
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
fn write_report(out: &Path, tables: bool) -> anyhow::Result<()> {
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

/// First Ctrl-C: finish the current point, then stop (results.jsonl stays whole). Second:
/// leave at once.
fn install_interrupt_handler(stop: Arc<AtomicBool>) {
    let result = ctrlc::set_handler(move || {
        if stop.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\nstopping after the current point (Ctrl-C again to quit now)");
    });
    if let Err(e) = result {
        eprintln!("note: Ctrl-C will stop the run immediately ({e})");
    }
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
        for bad in ["0", "-1", "2^40", "x", "1.5", ","] {
            assert!(parse_sizes(bad).is_err(), "{bad}");
        }
        assert!(parse_sizes("0").unwrap_err().contains("\"0\""));
    }
}
