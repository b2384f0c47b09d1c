//! `mantissa devices`: wiring for [`mantissa_gpu::report_all`].

use clap::Args;
use mantissa_gpu::{device_count, report_all, ReportOptions};

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

/// Prints each GPU's report (or the one line saying why there is none) as text or JSON.
pub fn run(args: DevicesArgs) -> anyhow::Result<()> {
    // No GPU is an answer, not a failure: say why in one line and list nothing.
    if let Err(why) = device_count() {
        if args.json {
            println!(
                "{}",
                serde_json::json!({ "devices": [], "cpu_only": why.to_string() })
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
            serde_json::to_string_pretty(&serde_json::json!({ "devices": docs }))?
        );
    } else {
        for r in &reports {
            println!("{r}");
        }
    }
    Ok(())
}
