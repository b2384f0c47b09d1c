//! `mantissa shadow`: wiring for [`mantissa_shadow::analyse`] — read a kernel spec, run the
//! user's program once as written and once instrumented, print per kernel and source line where
//! it loses precision (demotion error) and where NaN, inf and subnormals start (exceptions), or
//! the JSON document; with `--out DIR`, append one record per site to DIR/results.jsonl and
//! write DIR/shadow.html (the source beside what each line measured).

use crate::run::RunUsage;
use crate::spec_args::{gpu_for, parse_flags, parse_override};
use crate::stop::{self, Keeps};
use anyhow::anyhow;
use clap::Args;
use mantissa_gpu::FlagSet;
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::Spec;
use mantissa_report::ResultsLog;
use mantissa_shadow::text::{self, Shown};
use mantissa_shadow::{analyse, Analyses, ShadowEvent, ShadowRequest};
use std::path::PathBuf;

/// The options of `mantissa shadow` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct ShadowArgs {
    /// The kernel spec (TOML; the format is in docs/SPEC.md); or, instead, an application after
    /// `--` (`mantissa shadow -- APP ARGS`).
    #[arg(required_unless_present = "app")]
    spec: Option<PathBuf>,
    /// Analyses, comma-separated: `demotion` (the relative error of each f64 instruction's f32
    /// form), `shadow` (higher-precision shadow values: each instruction's own rounding error,
    /// its result's accumulated error, cancellations, digits right per output element),
    /// `exceptions` (NaN, inf, division by zero, subnormal results; where they start).
    /// Default: all three for a spec; `demotion,exceptions` for an application.
    #[arg(long, value_parser = parse_analyses)]
    analysis: Option<Analyses>,
    /// The flag set to build the program with (a preset or a '+' combination, as for run).
    #[arg(long, default_value = "default", value_parser = parse_flags)]
    flags: FlagSet,
    /// Replace a [sizes] entry, e.g. `--set n=4096` (repeatable); what depends on it follows.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    set: Vec<SizeOverride>,
    /// Print one JSON document (every site, every line) instead of tables.
    #[arg(long)]
    json: bool,
    /// Source lines shown per kernel, worst first.
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    /// Show every source line (overrides --top).
    #[arg(long)]
    all: bool,
    /// Also time the program as written and instrumented (median of 5 runs) and print the
    /// overhead.
    #[arg(long)]
    time: bool,
    /// Append one record per site to DIR/results.jsonl and write the report page
    /// DIR/shadow.html.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// An application to analyse as it is, after `--`, instead of a spec: its module with the
    /// most launches is instrumented at load time, and the statistics are read when it ends.
    #[arg(last = true, value_name = "APP ARGS")]
    app: Vec<std::ffi::OsString>,
    /// With an application: where its runs are kept (default mantissa-shadow-APP; must be empty).
    #[arg(long, value_name = "DIR")]
    runs: Option<PathBuf>,
    /// With an application: a run still going after this long is killed with what it started.
    #[arg(long, value_name = "SECONDS")]
    trial_timeout: Option<f64>,
}

fn parse_analyses(s: &str) -> Result<Analyses, String> {
    s.parse()
        .map_err(|e: mantissa_shadow::analyses::AnalysesError| e.to_string())
}

pub fn run(args: ShadowArgs) -> anyhow::Result<()> {
    let Some(spec_path) = crate::app_args::spec_or_app(&args.spec, &args.app)? else {
        return run_app(args);
    };
    if args.runs.is_some() || args.trial_timeout.is_some() {
        return Err(RunUsage(
            "--runs and --trial-timeout apply to an application (after `--`)".into(),
        )
        .into());
    }
    // The spec is read before the GPU is probed, so a wrong spec says so on any machine.
    let spec = Spec::load_with(&spec_path, &args.set).map_err(|e| RunUsage(e.to_string()))?;
    let gpu = gpu_for("shadow", &spec_path)?;
    let request = ShadowRequest {
        flags: args.flags,
        analyses: args.analysis.unwrap_or(Analyses {
            demotion: true,
            shadow: true,
            exceptions: true,
        }),
        time: args.time,
    };
    let json = args.json;
    let name = spec.name.clone();
    // Nothing of an unfinished run is written: a signal ends it at once, saying so.
    stop::install(Keeps::Nothing(format!(
        "a shadow run keeps nothing until it finishes; to measure, run it again: {}",
        stop::command_line(std::env::args().collect())
    )));
    let result = analyse(&gpu, &spec, &request, &mut |event| {
        if json {
            return;
        }
        match event {
            ShadowEvent::Baseline => {
                eprintln!(
                    "building and running {name} ({}) as written",
                    args.flags.name()
                )
            }
            ShadowEvent::Instrumented { sites, functions } if sites > 0 => {
                eprintln!("instrumented {sites} sites in {functions} functions")
            }
            ShadowEvent::Running { sites } => {
                eprintln!("running sites {}..{} instrumented", sites.start, sites.end)
            }
            ShadowEvent::Values => eprintln!("running with shadow values"),
            ShadowEvent::Split { sites, why } => eprintln!(
                "sites {}..{} exceed resources together ({why}): splitting",
                sites.start, sites.end
            ),
            _ => {}
        }
    });
    let run = match result {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(RunUsage(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    show(&args, &run, &spec.dir)
}

/// Prints (or writes) a finished run: tables or JSON, and with `--out` the records and page.
fn show(
    args: &ShadowArgs,
    run: &mantissa_shadow::ShadowRun,
    source_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let json = args.json;
    if let Some(dir) = &args.out {
        let mut log = ResultsLog::open(dir, true)?;
        for r in mantissa_shadow::records::records(run) {
            log.append(&r)?;
        }
        let page = mantissa_shadow::page::write(dir, run, source_dir)
            .map_err(|e| anyhow!("writing the report page in {}: {e}", dir.display()))?;
        if !json {
            eprintln!(
                "{} records appended to {}; report page {}",
                run.sites.len(),
                log.path().display(),
                page.display()
            );
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(run)?);
    } else if run.sites.is_empty() {
        println!("{}", text::nothing_to_measure(run));
    } else {
        let shown = if args.all {
            Shown::All
        } else {
            Shown::Top(args.top)
        };
        print!("{}", text::render(run, shown));
        for note in &run.notes {
            eprintln!("note: {note}");
        }
    }
    Ok(())
}

/// `mantissa shadow -- APP ARGS`: the application's baseline, then its target module
/// instrumented at load time ([`mantissa_harness::app::session::AppSession`] as the session).
fn run_app(args: ShadowArgs) -> anyhow::Result<()> {
    if !args.set.is_empty() || args.flags != FlagSet::DEFAULT {
        return Err(RunUsage(
            "--set and --flags apply to a spec; an application runs as its build made it".into(),
        )
        .into());
    }
    let analyses = args.analysis.unwrap_or(Analyses {
        demotion: true,
        shadow: false,
        exceptions: true,
    });
    if analyses.shadow {
        return Err(RunUsage("--analysis shadow (shadow values) is not built for applications yet: use demotion,exceptions".into()).into());
    }
    let timeout = crate::app_args::timeout(args.trial_timeout, "--trial-timeout")?;
    let stem = crate::app_args::stem(&args.app[0]);
    let work = crate::app_args::fresh_dir(
        args.runs.as_deref(),
        format!("mantissa-shadow-{stem}"),
        "--runs",
    )?;
    let mut session = crate::app_args::start_session(&args.app, &work, timeout, false)?;
    let key = crate::app_args::target_of(&session, &stem)?;
    eprintln!("instrumenting module {key} (the one with the most launches)");
    for m in session.modules().iter().filter(|m| m.ptx.is_none()) {
        eprintln!(
            "note: module {} runs as it is: {}",
            m.key,
            m.why_not.as_deref().unwrap_or("no PTX")
        );
    }
    if !mantissa_harness::Session::as_built_ptx(&session).contains(".loc") {
        eprintln!("note: the module has no line info, so every site is on line :0 of its kernel: build with -lineinfo to see source lines");
    }
    let request = ShadowRequest {
        flags: FlagSet::DEFAULT,
        analyses,
        time: args.time,
    };
    let source_dir = std::env::current_dir().unwrap_or_default();
    let json = args.json;
    let result =
        mantissa_shadow::analyse_on(&mut session, &stem, &source_dir, &request, &mut |event| {
            if json {
                return;
            }
            match event {
                ShadowEvent::Instrumented { sites, functions } if sites > 0 => {
                    eprintln!("instrumented {sites} sites in {functions} functions")
                }
                ShadowEvent::Running { sites } => {
                    eprintln!(
                        "running {stem} with sites {}..{} instrumented",
                        sites.start, sites.end
                    )
                }
                _ => {}
            }
        });
    let run = match result {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(RunUsage(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    show(&args, &run, &source_dir)?;
    eprintln!("runs are in {}", work.display());
    Ok(())
}
