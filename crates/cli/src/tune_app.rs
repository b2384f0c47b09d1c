//! `mantissa tune -- APP ARGS`: the tuning run of [`mantissa_tune::flow`] on an application run
//! as it is. Its session ([`mantissa_harness::app::session::AppSession`]) runs the application
//! once as it is (the baseline), then once per trial with its target module (the one with the
//! most launches) demoted at load time; the trials are compared on its copies to the host (or
//! on what it prints, `--output`) and cost by its kernel time (or a figure it prints, `--fom`).
//! Everything else — the store, the resume, the table, the report page, the chosen
//! configurations (`mantissa run --demote CFG -- APP` re-runs one) — is the spec run's.

use crate::run::RunUsage;
use crate::stop::{self, Keeps};
use crate::tune::{finish, request, show_progress, TuneArgs};
use mantissa_gpu::FlagSet;
use mantissa_harness::app::session::{Figure, PrintedOutput};
use mantissa_tune::flow::{tune_session_until, Subject};
use std::path::{Path, PathBuf};

/// The options that only mean something with a spec, when given with an application.
fn spec_only(args: &TuneArgs) -> Option<&'static str> {
    if !args.set.is_empty() {
        Some("--set")
    } else if args.flags != FlagSet::DEFAULT {
        Some("--flags")
    } else if args.shard.is_some() {
        Some("--shard")
    } else if args.tolerance {
        Some("--tolerance")
    } else {
        None
    }
}

/// Where this run's application runs go: `out/runs`, or the first `out/runs-N` that holds
/// nothing when a resumed run finds earlier runs there (a run directory is never reused).
fn runs_dir(out: &Path) -> PathBuf {
    let empty = |d: &Path| std::fs::read_dir(d).map_or(true, |mut e| e.next().is_none());
    let first = out.join("runs");
    if empty(&first) {
        return first;
    }
    (2..)
        .map(|n| out.join(format!("runs-{n}")))
        .find(|d| empty(d))
        .expect("an unbounded range has a free name")
}

/// Runs `mantissa tune -- APP ARGS`.
pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    if let Some(option) = spec_only(&args) {
        return Err(RunUsage(format!("{option} applies to a spec, not to an application")).into());
    }
    let request = request(&args)?;
    let printed = crate::app_args::printed_outputs(&args.output)?;
    let figure = match &args.fom {
        Some(pattern) => Some(Figure {
            printed: PrintedOutput::parse(&format!("fom={pattern}"))
                .map_err(|e| RunUsage(e.replacen("--output fom=", "--fom ", 1)))?,
            higher: args.fom_better == "higher",
        }),
        None => None,
    };
    let timeout = crate::app_args::timeout(args.trial_timeout, "--trial-timeout")?;
    let stem = crate::app_args::stem(&args.app[0]);
    let work = runs_dir(&args.out);
    let mut session = crate::app_args::start_session(&args.app, &work, timeout, args.json)?;
    if !printed.is_empty() {
        session.compare_printed(printed)?;
    }
    if let Some(f) = figure {
        session.cost_by(f)?;
    }
    let key = crate::app_args::target_of(&session, &stem)?;
    if !args.json {
        eprintln!(
            "tuning module {key} (the one with the most launches); runs in {}",
            work.display()
        );
        for m in session.modules().iter().filter(|m| m.ptx.is_none()) {
            eprintln!(
                "note: module {} runs as it is: {}",
                m.key,
                m.why_not.as_deref().unwrap_or("no PTX")
            );
        }
    }
    let dir = std::env::current_dir().unwrap_or_default();
    let subject = Subject {
        name: &stem,
        dir: &dir,
        flags: "as built".into(),
        spec: None,
    };
    let stop = stop::install(Keeps::FinishesRunning("trial"));
    let result = tune_session_until(
        &mut session,
        &subject,
        &request,
        stop,
        &mut show_progress(&stem, "ran", args.json),
    );
    finish(&args, result)
}
