//! `mantissa merge`: wiring for [`mantissa_report::merge`] — merge the shard stores of the given
//! directories into OUT (refusing, in one line, shards that are not all the parts of one run),
//! then write the report the command writes after a single-process run.

use std::path::PathBuf;

use clap::Args;
use mantissa_report::merge::{merge, Merged};
use mantissa_report::Record;

/// The options of `mantissa merge` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct MergeArgs {
    /// Directories holding the shards' stores: the --out of every `--shard I/N` run.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Where the merged store and the report go [default: the first DIR].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print every table at the end, not only the summary (study), as `mantissa study --tables`.
    #[arg(long)]
    tables: bool,
}

pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(|| args.dirs[0].clone());
    let merged = merge::<Record>(&args.dirs, &out)?;
    announce(&merged);
    crate::study::write_report(&out, args.tables)
}

/// What the merge did, on stderr: what it noticed, then where the merged store is.
fn announce<L>(merged: &Merged<L>) {
    for note in &merged.notes {
        eprintln!("note: {note}");
    }
    if let Some(old) = &merged.moved_aside {
        eprintln!(
            "note: the previous unsharded store was moved to {}",
            old.display()
        );
    }
    eprintln!(
        "merged {} records of {} shards of a `mantissa {}` run into {}",
        merged.lines.len(),
        merged.shards.len(),
        merged.manifest.command,
        merged.path.display()
    );
}
