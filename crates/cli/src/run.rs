//! `mantissa run`: wiring for [`mantissa_harness::run_spec`] — read a kernel spec, run the user's
//! program under each flag set, print one table per output, append the records to
//! OUT/results.jsonl when `--out` is given.

use crate::inspect::{parse_flag_list, FlagList};
use crate::spec_args::parse_override;
use crate::table::{markdown, num};
use anyhow::anyhow;
use clap::Args;
use mantissa_gpu::{Builder, Gpu};
use mantissa_harness::check::{check, check_configuration, CheckError, CheckReport};
use mantissa_harness::exec::ExecOptions;
use mantissa_harness::limits::{check_launches, ArchLimits};
use mantissa_harness::memory::MemoryNeed;
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::validate::demangled_base;
use mantissa_harness::{
    run_spec, Configuration, HarnessError, RunEvent, RunRequest, RunResult, Spec,
};
use mantissa_report::ResultsLog;
use mantissa_study::guard;
use std::path::PathBuf;

/// The options of `mantissa run` (see docs/COMMANDS.md and docs/SPEC.md).
#[derive(Args)]
pub struct RunArgs {
    /// The kernel spec (TOML; the format is in docs/SPEC.md); or, instead, an application after
    /// `--` (`mantissa run --demote all -- APP ARGS`).
    #[arg(required_unless_present = "app")]
    spec: Option<PathBuf>,
    /// Flag sets to run, comma-separated (presets or '+' combinations, as for inspect);
    /// `default` always runs first: it is the baseline the others are compared with.
    #[arg(long, default_value = "default", value_parser = parse_flag_list)]
    pub(crate) flags: FlagList,
    /// Write each run's output buffers as DIR/<buffer>.npy (the baseline) and
    /// DIR/<flags>.<configuration>/<buffer>.npy (the others).
    #[arg(long, value_name = "DIR")]
    pub(crate) save: Option<PathBuf>,
    /// Append one record per output per run to DIR/results.jsonl (read by `mantissa report`).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Timed repeats of the whole step sequence (median reported); 0 skips timing.
    #[arg(long, default_value_t = 5)]
    pub(crate) repeats: u32,
    /// Precision configurations to run besides the program as written, comma-separated or
    /// repeated: `none` (nothing demoted, through the rewrite: must match bit for bit), `all`
    /// (every f64 instruction and math call in f32; buffers keep their types), or a
    /// configuration file (JSON, see docs/SPEC.md; `--write-config` writes one to start from).
    #[arg(long, value_name = "none|all|FILE", value_delimiter = ',')]
    pub(crate) demote: Vec<String>,
    /// Write the configuration that names every math call and f64 instruction of the program
    /// (default flags) to FILE, and stop: delete what must stay f64, then run it with
    /// `--demote FILE`. Needs no GPU.
    #[arg(long, value_name = "FILE")]
    pub(crate) write_config: Option<PathBuf>,
    /// Print the records as JSON instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Check the spec without running it, and without a GPU: build the program under each flag
    /// set (NVRTC or nvcc), then check kernels, arguments, symbols, inputs and references
    /// against it, as a run does before anything runs.
    #[arg(long)]
    pub(crate) check: bool,
    /// Replace a [sizes] entry, e.g. `--set n=4096` (repeatable); what depends on it follows.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    pub(crate) set: Vec<SizeOverride>,
    /// Print the compiler's whole log when a build fails (it is always written to a file, which
    /// the error names); checks the spec first.
    #[arg(long)]
    pub(crate) verbose: bool,
    /// An application to run as it is, after `--`, instead of a spec: it runs once as it is and
    /// once per `--demote` configuration (`all`, `none`) with its modules replaced at load time,
    /// and what it copied back to the host is compared.
    #[arg(last = true, value_name = "APP ARGS")]
    pub(crate) app: Vec<std::ffi::OsString>,
    /// With an application: stop a run (and what it started) after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) trial_timeout: Option<f64>,
    /// With an application: also compare a value it prints, `NAME=REGEX` (the last match; its
    /// first group, else the whole match, read as a number); repeatable.
    #[arg(long, value_name = "NAME=REGEX")]
    pub(crate) output: Vec<String>,
}

/// A spec error (one line with FILE:LINE:COL): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunUsage(pub String);

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let Some(spec_path) = crate::app_args::spec_or_app(&args.spec, &args.app)? else {
        return crate::run_app::run(&args);
    };
    if args.trial_timeout.is_some() || !args.output.is_empty() {
        return Err(RunUsage(
            "--trial-timeout and --output apply to an application (after `--`)".into(),
        )
        .into());
    }
    // The spec is read before the GPU is probed, so a wrong spec says so on any machine.
    let spec = Spec::load_with(&spec_path, &args.set).map_err(|e| RunUsage(e.to_string()))?;
    let mut configurations = vec![Configuration::AsWritten];
    for d in &args.demote {
        configurations.push(Configuration::parse(d.trim()).map_err(RunUsage)?);
    }
    if args.check {
        let report = checked(&spec, &args, None)?;
        // Configuration files were written for some build: the rewrite's own site lookup says
        // whether it is this one.
        let mut named = Vec::new();
        for (arg, c) in args.demote.iter().zip(&configurations[1..]) {
            if let (false, Configuration::Demote(d)) = (matches!(arg.trim(), "none" | "all"), c) {
                named.push(check_configuration(&spec, d).map_err(RunUsage)?);
            }
        }
        print!("{}", summary(&spec_path, &report));
        println!("  sizes: {}", sizes_used(&spec, &args.set));
        println!("  memory: {}", memory_line(&report.memory));
        for n in named {
            println!("  configuration {n}");
        }
        return Ok(());
    }
    if let Some(path) = &args.write_config {
        // A configuration of a spec that cannot run would name instructions of nothing useful.
        checked(&spec, &args, None)?;
        let config = mantissa_harness::run::full_configuration(&spec).map_err(|e| anyhow!(e))?;
        let text = serde_json::to_string_pretty(&config)? + "\n";
        mantissa_report::write_atomically(path, text.as_bytes())?;
        let calls = match &config.math {
            mantissa_harness::config::Selection::Only(v) => v.len(),
            mantissa_harness::config::Selection::All(_) => 0,
        };
        let instructions = match &config.instructions {
            mantissa_harness::config::Selection::Only(v) => v.len(),
            mantissa_harness::config::Selection::All(_) => 0,
        };
        println!(
            "{}: {calls} math calls and {instructions} f64 instructions of {}; run it with --demote {}",
            path.display(),
            spec.name,
            path.display()
        );
        return Ok(());
    }
    // Before anything is made, and before a GPU is needed: an impossible size is one line.
    let need = mantissa_harness::memory::estimate(&spec);
    if let Some(free) = guard::memory_available() {
        if let Some(why) = need.refusal("host", need.host, free, "is free", &guard::bytes) {
            return Err(anyhow!("mantissa run: the spec {why}"));
        }
    }
    let gpu = match Gpu::probe() {
        Ok(gpu) => gpu,
        Err(why) => {
            // Everything that can be checked without a GPU is, so that a wrong spec says so here.
            let checked = match checked(&spec, &args, None) {
                Ok(_) => "the spec checks (see --check)".to_string(),
                Err(e) if e.is::<NoCompiler>() => format!("the spec could not be checked: {e}"),
                Err(e) => return Err(e),
            };
            return Err(anyhow!("mantissa run needs a GPU: {why}; {checked}"));
        }
    };
    if args.verbose {
        checked(&spec, &args, Some(gpu.arch()))?;
    }
    // The open device's own limits, before anything is allocated on it.
    check_launches(&spec, &ArchLimits::of_device(gpu.info()))
        .map_err(|e| RunUsage(e.to_string()))?;
    if let Some(why) = need.refusal(
        "device",
        need.device,
        gpu.info().total_memory_bytes,
        "is on the device",
        &guard::bytes,
    ) {
        return Err(anyhow!("mantissa run: the spec {why}"));
    }
    let mut log = match &args.out {
        Some(dir) => Some(ResultsLog::open(dir, true)?),
        None => None,
    };
    let request = RunRequest {
        flag_sets: args.flags.0.clone(),
        exec: ExecOptions {
            warmup: 1,
            repeats: args.repeats,
        },
        save_dir: args.save.clone(),
        configurations,
    };
    let mut append_error = None;
    let json = args.json;
    let result = run_spec(&gpu, &spec, &request, &mut |event| match event {
        RunEvent::Building { flags } if !json => {
            eprintln!("building {} ({})", spec.name, flags.name())
        }
        RunEvent::Running {
            flags,
            configuration,
        } if !json => {
            eprintln!(
                "running {} ({}, {})",
                spec.name,
                flags.name(),
                configuration.name()
            )
        }
        RunEvent::Record(r) => {
            if let Some(log) = log.as_mut() {
                if let Err(e) = log.append(r) {
                    append_error.get_or_insert(e);
                }
            }
        }
        _ => {}
    });
    let result = match result {
        Ok(r) => r,
        Err(HarnessError::Spec(e)) => return Err(RunUsage(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    if let Some(e) = append_error {
        return Err(e.into());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&result.records)?);
    } else {
        print!("{}", tables(&gpu, &result));
        if let Some(log) = &log {
            println!("records appended to {}", log.path().display());
        }
    }
    let failed: Vec<String> = result
        .runs
        .iter()
        .filter_map(|r| {
            r.outcome
                .as_ref()
                .err()
                .map(|e| format!("{} / {}: {e}", r.flags.name(), r.configuration.name()))
        })
        .collect();
    match failed.first() {
        Some(first) => Err(anyhow!(
            "{} of {} runs failed; first: {first}",
            failed.len(),
            result.runs.len()
        )),
        None => Ok(()),
    }
}

/// No compiler to check with (no NVRTC, or no nvcc for a file that needs it): exit code 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NoCompiler(String);

/// [`check`]s the spec under the flag sets asked for, for `arch` (default: the spec's, else
/// sm_90). A spec error is a [`RunUsage`] (exit 2); a build failure prints the compiler's log
/// with `--verbose` and is a failure (exit 1).
fn checked(
    spec: &Spec,
    args: &RunArgs,
    arch: Option<mantissa_gpu::Arch>,
) -> anyhow::Result<CheckReport> {
    match check(spec, &args.flags.0, &Builder::new(), arch) {
        Ok(report) => Ok(report),
        Err(CheckError::Spec(e)) => Err(RunUsage(e.to_string()).into()),
        Err(e) if e.no_compiler() => Err(NoCompiler(e.to_string()).into()),
        Err(CheckError::Build(e)) => {
            if let (true, Some(log)) = (args.verbose, e.log()) {
                eprintln!("{}", log.trim_end_matches('\0').trim_end());
            }
            Err(e.into())
        }
    }
}

/// What `--check` prints: what was built and what was checked against it.
fn summary(path: &std::path::Path, r: &CheckReport) -> String {
    let plural = |n: usize, one: &str| match (n, one) {
        (1, _) => format!("{n} {one}"),
        (_, "launch") => format!("{n} launches"),
        _ => format!("{n} {one}s"),
    };
    let kernels: Vec<String> = r
        .kernels
        .iter()
        .map(|k| match demangled_base(k) {
            Some(d) => format!("{d} ({k})"),
            None => k.clone(),
        })
        .collect();
    let flags: Vec<String> = r.flag_sets.iter().map(|f| f.name()).collect();
    let mut out = format!(
        "{}: checked without a GPU (flag sets {}; {})\n  front end: {}\n  {} of {}: {}\n",
        path.display(),
        flags.join(", "),
        r.arch.sm(),
        r.front_end,
        plural(r.launches, "launch"),
        plural(r.kernels.len(), "kernel"),
        kernels.join(", "),
    );
    if !r.symbols.is_empty() {
        out += &format!(
            "  symbols: {}\n",
            r.symbols
                .iter()
                .map(|(n, space, bytes)| format!("{n} ({space}, {bytes} bytes)"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out += &format!(
        "  {}, {}, {} read\n",
        plural(r.buffers, "buffer"),
        plural(r.outputs, "output"),
        plural(r.references, "reference")
    );
    for note in &r.notes {
        out += &format!("  note: {note}\n");
    }
    out
}

/// `n=4096 (--set), m=64 (spec)`: every size's value and where it came from.
fn sizes_used(spec: &Spec, set: &[SizeOverride]) -> String {
    if spec.sizes.is_empty() {
        return "none".into();
    }
    spec.sizes
        .iter()
        .map(|(name, v)| {
            let from = if set.iter().any(|o| &o.name == name) {
                "--set"
            } else {
                "spec"
            };
            match v.as_integer() {
                Some(i) => format!("{name}={i} ({from})"),
                None => format!("{name}={v} ({from})"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a run would allocate, and how it compares with the host's free memory.
fn memory_line(need: &MemoryNeed) -> String {
    let mut line = format!(
        "a run needs about {} of host memory and {} of device memory",
        guard::bytes(need.host),
        guard::bytes(need.device)
    );
    if !need.buffers.is_empty() {
        line += &format!(" (largest buffers: {})", need.dominant(&guard::bytes));
    }
    if let Some(free) = guard::memory_available() {
        if need.host > free {
            line += &format!(
                "; {} of host memory is free, so `mantissa run` will refuse it",
                guard::bytes(free)
            );
        }
    }
    line
}

pub(crate) fn digits(d: f64) -> String {
    if d.is_infinite() {
        "all".into()
    } else {
        format!("{d}")
    }
}

fn tables(gpu: &Gpu, result: &RunResult) -> String {
    let mut out = format!(
        "{} on {}, built with {}\n",
        result.name,
        gpu.info().name,
        result.front_end
    );
    let Some(first) = result.runs.iter().find_map(|r| r.outcome.as_ref().ok()) else {
        return out;
    };
    let baseline_ms = result
        .runs
        .first()
        .and_then(|r| r.outcome.as_ref().ok())
        .and_then(|o| o.timing.as_ref())
        .map(|t| t.median_ms);
    for (i, o) in first.outputs.iter().enumerate() {
        out += &format!(
            "\n### {}{}\n\n",
            o.name,
            o.tolerance
                .map_or(String::new(), |t| format!(" (tolerance: {t})"))
        );
        let mut rows = Vec::new();
        for run in &result.runs {
            let mut row = vec![run.configuration.name(), run.flags.name()];
            match &run.outcome {
                Ok(outcome) => {
                    let r = &outcome.outputs[i];
                    let c = &r.vs_baseline;
                    row.extend([
                        digits(c.digits),
                        num(c.max_rel),
                        num(c.max_ulps),
                        format!(
                            "{}{}",
                            c.differing,
                            if c.nonfinite_mismatches > 0 {
                                format!(" ({} NaN/inf)", c.nonfinite_mismatches)
                            } else {
                                String::new()
                            }
                        ),
                        r.vs_reference
                            .as_ref()
                            .map_or("-".into(), |c| digits(c.digits)),
                        r.met.map_or(
                            "-".into(),
                            |m| if m { "met".into() } else { "NOT met".into() },
                        ),
                        outcome
                            .timing
                            .as_ref()
                            .map_or("-".into(), |t| num(t.median_ms)),
                        match (baseline_ms, outcome.timing.as_ref()) {
                            (Some(b), Some(t)) if t.median_ms > 0.0 => {
                                format!("{:.2}x", b / t.median_ms)
                            }
                            _ => "-".into(),
                        },
                    ]);
                }
                Err(e) => row.extend([
                    "failed".to_string(),
                    e.clone(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]),
            }
            rows.push(row);
        }
        out += &markdown(
            &[
                "configuration",
                "flags",
                "digits vs baseline",
                "max rel err",
                "max ulps",
                "differing",
                "digits vs reference",
                "tolerance",
                "time median (ms)",
                "speed-up",
            ],
            &rows,
            2,
        );
    }
    let notes: Vec<String> = result
        .runs
        .iter()
        .filter(|r| !r.notes.is_empty())
        .map(|r| {
            format!(
                "- {} / {}: {}",
                r.configuration.name(),
                r.flags.name(),
                r.notes.join("; ")
            )
        })
        .collect();
    if !notes.is_empty() {
        out += "\nconfigurations:\n";
        out += &notes.join("\n");
        out += "\n";
    }
    out
}
