//! `mantissa devices`: wiring for [`mantissa_gpu::report_all`], after a line saying which NVRTC
//! (the file and where it was found) compiles for the devices, or why there is none.

use clap::Args;
use mantissa_gpu::{device_count, report_all, CompileCache, Compiler, ReportOptions};

/// The options of `mantissa devices` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct DevicesArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Report driver facts only; skip the measured ceilings.
    #[arg(long)]
    no_ceilings: bool,
    /// Measure the ceilings again even when cached.
    #[arg(long)]
    remeasure: bool,
}

/// NVRTC's version and library file, or why it cannot be used; as one line and as JSON.
fn nvrtc_facts() -> (String, serde_json::Value) {
    // A memory-only cache: this only asks NVRTC who it is, it compiles nothing.
    match Compiler::probe_with_cache(CompileCache::in_memory()) {
        Ok(c) => (
            format!("NVRTC {}: {}", c.version(), c.library()),
            serde_json::json!({
                "version": c.version().to_string(),
                "library": c.library().path,
                "found_in": c.library().origin.to_string(),
            }),
        ),
        Err(why) => (
            format!("NVRTC: {why}"),
            serde_json::json!({ "unavailable": why.to_string() }),
        ),
    }
}

/// Prints which NVRTC compiles, then each GPU's report (or the one line saying why there is none),
/// as text or JSON.
pub fn run(args: DevicesArgs) -> anyhow::Result<()> {
    let (nvrtc_line, nvrtc_json) = nvrtc_facts();
    if !args.json {
        println!("{nvrtc_line}");
    }
    // No GPU is an answer, not a failure: say why in one line and list nothing.
    if let Err(why) = device_count() {
        if args.json {
            println!(
                "{}",
                serde_json::json!({ "devices": [], "cpu_only": why.to_string(), "nvrtc": nvrtc_json })
            );
        } else {
            println!("{why}");
        }
        return Ok(());
    }
    let opts = ReportOptions {
        ceilings: !args.no_ceilings,
        refresh: args.remeasure,
        ..ReportOptions::default()
    };
    let reports = report_all(&opts)?;
    if args.json {
        let docs: Vec<serde_json::Value> = reports
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?;
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "devices": docs, "nvrtc": nvrtc_json })
            )?
        );
    } else {
        for r in &reports {
            println!("{r}");
        }
    }
    Ok(())
}
