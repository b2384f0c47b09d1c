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
    /// The kernel spec (TOML; the format is in docs/SPEC.md).
    spec: PathBuf,
    /// Analyses, comma-separated: `demotion` (the relative error of each f64 instruction's f32
    /// form), `shadow` (higher-precision shadow values: each instruction's own rounding error,
    /// its result's accumulated error, cancellations, digits right per output element),
    /// `exceptions` (NaN, inf, division by zero, subnormal results; where they start).
    #[arg(long, default_value = "demotion,shadow,exceptions", value_parser = parse_analyses)]
    analysis: Analyses,
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
}

fn parse_analyses(s: &str) -> Result<Analyses, String> {
    s.parse()
        .map_err(|e: mantissa_shadow::analyses::AnalysesError| e.to_string())
}

pub fn run(args: ShadowArgs) -> anyhow::Result<()> {
    // The spec is read before the GPU is probed, so a wrong spec says so on any machine.
    let spec = Spec::load_with(&args.spec, &args.set).map_err(|e| RunUsage(e.to_string()))?;
    let gpu = gpu_for("shadow", &args.spec)?;
    let request = ShadowRequest {
        flags: args.flags,
        analyses: args.analysis,
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
    if let Some(dir) = &args.out {
        let mut log = ResultsLog::open(dir, true)?;
        for r in mantissa_shadow::records::records(&run) {
            log.append(&r)?;
        }
        let page = mantissa_shadow::page::write(dir, &run, &spec.dir)
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
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else if run.sites.is_empty() {
        println!("{}", text::nothing_to_measure(&run));
    } else {
        let shown = if args.all {
            Shown::All
        } else {
            Shown::Top(args.top)
        };
        print!("{}", text::render(&run, shown));
        for note in &run.notes {
            eprintln!("note: {note}");
        }
    }
    Ok(())
}
