//! `mantissa merge`: wiring for [`mantissa_report::merge`] — merge the shard stores of the given
//! directories into OUT (refusing, in one line, shards that are not all the parts of one run),
//! then write the report the command writes after a single-process run. A study's and a tuning
//! run's shards share the store's file name (`results.shard-I-of-N.jsonl`); their manifests say
//! which command wrote them.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use mantissa_mathlib::records::Record as MathlibRecord;
use mantissa_report::merge::{merge, shard_files, Merged};
use mantissa_report::store::{data_file, manifest_file};
use mantissa_report::{Manifest, Record, StoreLine};

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
    let dirs = || {
        args.dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let pattern = |file: String| file.replace("shard-0-of-1", "shard-I-of-N");
    let (study, tune) = record_shards(&args.dirs)?;
    let mathlib = any_shards::<MathlibRecord>(&args.dirs)?;
    if tune && (study || mathlib) {
        bail!(
            "{} hold shards of both `mantissa tune` and `mantissa {}`: give each command's shards a directory of their own",
            dirs(),
            if study { "study" } else { "mathlib" }
        );
    }
    if tune {
        // The documents first: a refusal there leaves nothing written.
        let run = crate::tune::merge_documents(&args.dirs)?;
        let merged = merge::<Record>(&args.dirs, &out)?;
        announce(&merged);
        return crate::tune::write_merged(&out, &run);
    }
    match (study, mathlib) {
        (true, true) => bail!(
            "{} hold shards of both `mantissa study` ({}) and `mantissa mathlib` ({}): give each command's shards a directory of their own",
            dirs(),
            pattern(data_file::<Record>(Some(ONE))),
            pattern(data_file::<MathlibRecord>(Some(ONE)))
        ),
        (false, false) => bail!(
            "no shard stores ({} or {}) in {}: run `mantissa study`, `mantissa tune` or `mantissa mathlib` with --shard I/N first",
            pattern(data_file::<Record>(Some(ONE))),
            pattern(data_file::<MathlibRecord>(Some(ONE))),
            dirs()
        ),
        (true, false) => {
            let merged = merge::<Record>(&args.dirs, &out)?;
            announce(&merged);
            crate::study::write_report(&out, args.tables)
        }
        (false, true) => {
            let merged = merge::<MathlibRecord>(&args.dirs, &out)?;
            announce(&merged);
            crate::mathlib::write_report(&out, merged.lines)
        }
    }
}

/// A shard, for spelling file names as patterns.
const ONE: mantissa_report::Shard = mantissa_report::Shard::ONE;

/// Whether `dirs` hold shard stores of a study, and of a tuning run (whose manifests say
/// `tune`).
fn record_shards(dirs: &[PathBuf]) -> anyhow::Result<(bool, bool)> {
    let (mut study, mut tune) = (false, false);
    for dir in dirs {
        for (shard, _) in shard_files::<Record>(dir)? {
            let manifest = Manifest::read(&dir.join(manifest_file::<Record>(Some(shard))))?;
            if manifest.is_some_and(|m| m.command == "tune") {
                tune = true;
            } else {
                study = true;
            }
        }
    }
    Ok((study, tune))
}

/// Whether any of `dirs` holds a shard store of `L`.
fn any_shards<L: StoreLine>(dirs: &[PathBuf]) -> anyhow::Result<bool> {
    for dir in dirs {
        if !shard_files::<L>(dir)?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
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
