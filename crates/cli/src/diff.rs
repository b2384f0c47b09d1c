//! `mantissa diff`: wiring for [`mantissa_diff::diff`] — read a kernel spec, run the user's
//! program as written, compare its outputs with the spec's references (or another flag set's
//! outputs), find the causes that explain the difference per source line, and print them, or
//! the JSON document; append the records to OUT/results.jsonl when `--out` is given.

use crate::run::RunUsage;
use crate::spec_args::{gpu_for, parse_flags, parse_override};
use crate::stop::{self, Keeps};
use anyhow::bail;
use clap::Args;
use mantissa_diff::{diff, Against, DiffEvent, DiffRequest};
use mantissa_gpu::FlagSet;
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::Spec;
use mantissa_report::ResultsLog;
use std::path::PathBuf;

/// The options of `mantissa diff` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct DiffArgs {
    /// The kernel spec (TOML; the format is in docs/SPEC.md); every output needs a
    /// `reference` unless --against names a flag set. Or, instead, an application after `--`
    /// (`mantissa diff -- APP ARGS`), explained against itself with every cause switched.
    #[arg(required_unless_present = "app")]
    spec: Option<PathBuf>,
    /// Compare with the outputs of the program built under this flag set (`strict`, `fast`,
    /// any preset or '+' combination) instead of the spec's references.
    #[arg(long, value_parser = parse_flags)]
    against: Option<FlagSet>,
    /// The flag set of the build whose differences are explained.
    #[arg(long, default_value = "default", value_parser = parse_flags)]
    flags: FlagSet,
    /// Replace a [sizes] entry, e.g. `--set n=4096` (repeatable); what depends on it follows.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    set: Vec<SizeOverride>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Append one record per blamed cause and a summary to DIR/results.jsonl.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Make seed 003's four builds (naive, cpu-matching, fastest, most-accurate), measure
    /// them, and save each in DIR as NAME.ptx, NAME.toml (runnable with `mantissa run`) and
    /// NAME.changes.txt.
    #[arg(long, value_name = "DIR")]
    builds: Option<PathBuf>,
    /// Timed repetitions of each timed build (0: no timing, no time cost, no builds).
    #[arg(long, default_value_t = DiffRequest::DEFAULT_REPEATS)]
    repeats: u32,
    /// With an application: where its runs are kept (default mantissa-diff-APP; must be empty).
    #[arg(long, value_name = "DIR")]
    runs: Option<PathBuf>,
    /// With an application: a run still going after this long is killed with what it started.
    #[arg(long, value_name = "SECONDS")]
    trial_timeout: Option<f64>,
    /// With an application: compare on a value it prints, NAME=REGEX (repeatable), instead of
    /// its copies to the host.
    #[arg(long, value_name = "NAME=REGEX")]
    output: Vec<String>,
    /// An application to explain as it is, after `--`, instead of a spec.
    #[arg(last = true, value_name = "APP ARGS")]
    app: Vec<std::ffi::OsString>,
}

pub fn run(args: DiffArgs) -> anyhow::Result<()> {
    let Some(spec_path) = crate::app_args::spec_or_app(&args.spec, &args.app)? else {
        return run_app(args);
    };
    if args.runs.is_some() || args.trial_timeout.is_some() || !args.output.is_empty() {
        return Err(RunUsage(
            "--runs, --trial-timeout and --output apply to an application (after `--`)".into(),
        )
        .into());
    }
    // The spec is read before the GPU is probed, so a wrong spec says so on any machine.
    let spec = Spec::load_with(&spec_path, &args.set).map_err(|e| RunUsage(e.to_string()))?;
    let request = DiffRequest {
        flags: args.flags,
        against: args.against.map_or(Against::Reference, Against::Flags),
        repeats: args.repeats,
        builds: args.builds.is_some(),
    };
    if args.builds.is_some() && args.repeats == 0 {
        return Err(RunUsage("--builds needs timing: --repeats must be at least 1".into()).into());
    }
    // A missing or ill-fitting reference is a usage error on any machine, GPU or not.
    if request.against == Against::Reference {
        mantissa_diff::check_references(&spec).map_err(|e| RunUsage(e.to_string()))?;
    }
    let gpu = gpu_for("diff", &spec_path)?;
    let json = args.json;
    let name = spec.name.clone();
    // Nothing of an unfinished run is written: a signal ends it at once, saying so.
    stop::install(Keeps::Nothing(format!(
        "a diff run keeps nothing until it finishes; to measure, run it again: {}",
        stop::command_line(std::env::args().collect())
    )));
    let doing = format!("building and running {name} ({})", args.flags.name());
    let result = diff(
        &gpu,
        &spec,
        &request,
        &mut show_progress(&doing, &name, json),
    );
    finish(&args, result, Some(&spec))
}

/// Progress on stderr (nothing when `quiet`): `doing` says what the baseline stage does.
fn show_progress<'a>(doing: &'a str, name: &'a str, quiet: bool) -> impl FnMut(DiffEvent) + 'a {
    move |event| {
        if quiet {
            return;
        }
        match event {
            DiffEvent::Baseline => eprintln!("{doing} as written, twice"),
            DiffEvent::Other(flags) => eprintln!("running {name} ({flags})"),
            DiffEvent::Candidates {
                differing,
                switchable,
                listed,
            } => eprintln!(
                "{differing} elements differ; {switchable} candidate causes to switch, {listed} listed only"
            ),
            DiffEvent::Trial {
                number,
                switched,
                differing,
            } => eprintln!("trial {number}: {switched} switched, {differing} elements differ"),
            DiffEvent::Effects(n) => eprintln!("measuring each of {n} causes alone"),
            DiffEvent::Cost(k, n) => eprintln!("timing blamed line {k} of {n} switched off"),
            DiffEvent::Build(name) => eprintln!("making and timing the {name} build"),
            DiffEvent::MathFunction(f) => eprintln!(
                "searching for an input where CUDA's and the CPU's {f} differ (mathlib)"
            ),
            DiffEvent::Shadow(name) => eprintln!(
                "running the {name} build with shadow values (digits against higher precision)"
            ),
        }
    }
}

/// What a finished diff leaves: its records (`--out`), its builds (`--builds`, a spec's), and
/// the table or the JSON document.
fn finish(
    args: &DiffArgs,
    result: Result<mantissa_diff::DiffRun, mantissa_diff::DiffError>,
    spec: Option<&Spec>,
) -> anyhow::Result<()> {
    let json = args.json;
    let run = match result {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(RunUsage(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    if let Some(dir) = &args.out {
        let mut log = ResultsLog::open(dir, true)?;
        let records = mantissa_diff::records::records(&run);
        for r in &records {
            log.append(r)?;
        }
        if !json {
            eprintln!(
                "{} records appended to {}",
                records.len(),
                log.path().display()
            );
        }
    }
    if let Some(dir) = &args.builds {
        let Some(spec) = spec else {
            bail!("--builds needs a spec")
        };
        let files = mantissa_diff::save::save(dir, spec, &run.builds)?;
        if !json {
            eprintln!(
                "{} builds saved in {} ({} files; run one with `mantissa run {}`)",
                run.builds.len(),
                dir.display(),
                files.len(),
                dir.join("naive.toml").display()
            );
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        print!("{}", mantissa_diff::text::render(&run));
    }
    Ok(())
}

/// `mantissa diff -- APP ARGS`: the application's baseline, then the search through its
/// session ([`mantissa_diff::session`]).
fn run_app(args: DiffArgs) -> anyhow::Result<()> {
    let spec_only = [
        (!args.set.is_empty(), "--set"),
        (args.flags != FlagSet::DEFAULT, "--flags"),
        (args.against.is_some(), "--against"),
        (args.builds.is_some(), "--builds"),
    ];
    if let Some((_, option)) = spec_only.iter().find(|(given, _)| *given) {
        return Err(RunUsage(format!("{option} applies to a spec, not to an application")).into());
    }
    let printed = crate::app_args::printed_outputs(&args.output)?;
    let timeout = crate::app_args::timeout(args.trial_timeout, "--trial-timeout")?;
    let stem = crate::app_args::stem(&args.app[0]);
    let work = crate::app_args::fresh_dir(
        args.runs.as_deref(),
        format!("mantissa-diff-{stem}"),
        "--runs",
    )?;
    let mut session = crate::app_args::start_session(&args.app, &work, timeout, args.json)?;
    if !printed.is_empty() {
        session.compare_printed(printed)?;
    }
    crate::app_args::target_of(&session, &stem)?;
    stop::install(Keeps::Nothing(format!(
        "a diff run keeps nothing until it finishes; to measure, run it again: {}",
        stop::command_line(std::env::args().collect())
    )));
    let doing = format!("running {stem}");
    let result = mantissa_diff::session::diff_session(
        &mut session,
        &stem,
        &mut show_progress(&doing, &stem, args.json),
    );
    let done = finish(&args, result, None);
    if !args.json {
        eprintln!("runs are in {}", work.display());
    }
    done
}
