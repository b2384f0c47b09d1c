//! `mantissa trace -- APP ARGS`: runs an application as it is under the attach library, records
//! its modules, launches, copies and memsets with the bytes of every copy, and writes a spec
//! (and the PTX and data it names) that `mantissa run` replays ([`mantissa_harness::app::trace`]).

use anyhow::Context;
use clap::Args;
use mantissa_harness::app::trace::trace;
use mantissa_harness::app::{AppRequest, Attach, Exit};
use std::ffi::OsString;
use std::path::PathBuf;

/// The options of `mantissa trace` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct TraceArgs {
    /// Where to write the spec, its PTX and its data (created; must not hold a trace already).
    /// Default: trace-<program name> in the current directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The spec's name (default: the program's file name).
    #[arg(long)]
    name: Option<String>,
    /// Stop the application (and what it started) after this many seconds; what it did until
    /// then is traced.
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// The application and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "APP ARGS")]
    command: Vec<OsString>,
}

/// Runs `mantissa trace`.
pub fn run(args: TraceArgs) -> anyhow::Result<()> {
    let stem = crate::app_args::stem(&args.command[0]);
    let name = args.name.clone().unwrap_or_else(|| stem.clone());
    let timeout = crate::app_args::timeout(args.timeout, "--timeout")?;
    let out = crate::app_args::fresh_dir(args.out.as_deref(), format!("trace-{stem}"), "--out")?;
    let run_dir = out.join("run");
    let attach = Attach::locate()?;
    eprintln!(
        "running {} under the attach library, recording launches, copies and their bytes ...",
        args.command
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let request = AppRequest {
        command: args.command.clone(),
        dir: run_dir.clone(),
        record: ["launches", "copies", "htod_data", "dtoh_data"]
            .map(String::from)
            .to_vec(),
        replace: None,
        timeout,
    };
    let app = attach.run(&request)?;
    eprintln!(
        "the application ended ({}) after {:.2} s; {} events; its output is in {}",
        app.exit,
        app.wall.as_secs_f64(),
        app.events.len(),
        run_dir.join("stdout.txt").display()
    );
    if app.exit != Exit::Code(0) {
        eprintln!(
            "note: the application did not exit with status 0 ({}): what it did until then is traced",
            app.exit
        );
    }
    let arch = crate::app_args::device_arch();
    let t = trace(&run_dir, &app.events, &name, arch)
        .with_context(|| format!("tracing the run in {}", run_dir.display()))?;
    let spec = t.write(&out)?;
    println!(
        "wrote {} ({} launches of {} kernels, {} buffers, {} variables, {} outputs from {} copies to the host)",
        spec.display(),
        t.counts.launches,
        t.counts.kernels,
        t.counts.buffers,
        t.counts.symbols,
        t.counts.outputs,
        t.counts.copies_back
    );
    for n in &t.notes {
        println!("note: {n}");
    }
    println!("replay it: mantissa run {}", spec.display());
    Ok(())
}
