//! mantissa's result records and the reports built from them.
//!
//! A study run appends one [`Record`] per measurement point to `OUT/results.jsonl` through a
//! [`ResultsLog`] (line by line, fsynced, resumable); everything a user reads afterwards is
//! rebuilt from that file alone, never by re-running:
//! - [`store`]: the one results store, [`Store`], that every analysis's records go through (one
//!   locked writer per file, append-only, self-describing lines, per-shard files, a
//!   [`Manifest`] per file), [`read_lines`](store::read_lines) and atomic file writes;
//! - `shard`: [`Shard`], one part `I/N` of a split run (`--shard I/N`), and [`merge`]: the
//!   shards of one run joined into the store a single process writes (`mantissa merge`);
//! - [`record`]: the [`Record`] schema (version [`SCHEMA`]: build facts, git revision, 3-D
//!   launches, descriptions of extra quantities, a key of named fields, a shard's header) and
//!   [`read_records`];
//! - `schema1`: the migration table that gives schema-1 lines (every file written before schema
//!   2) the current shape — the only place the old quantity names are known;
//! - `summary`: what a report opens with (and `mantissa study` prints, [`summary_markdown`]):
//!   what was measured, and per workload the cheapest precision reaching an error of 1e-6,
//!   1e-12 and 2^-53 with its cost against f64 (relative error; absolute where the exact result
//!   is 0);
//! - `cheapest`: how that precision is chosen: costs against f64, and ties in time where the
//!   measured spread cannot tell two precisions apart;
//! - `tables`: accuracy and time tables grouped by workload, and `markdown`: all of it as
//!   [`markdown`] for a terminal;
//! - `plots`: SVG plots of time and accuracy-versus-time on log axes (plotters' SVG backend, no
//!   fonts needed), and `heatmap`: the error of each precision per input class as a heat map,
//!   exact results as cells of their own;
//! - `html`: [`write_html`], a self-contained `report.html` — the summary, a table of contents,
//!   then those tables and plots — and each plot again under `plots/`;
//! - `glossary`: docs/GLOSSARY.md, embedded and rendered as the last section of `report.html`;
//! - `csv`: [`write_csv`], one spreadsheet row per record;
//! - `error`: [`ReportError`].
//!
//! This crate runs no experiments and prints nothing itself; [`load`] is the entry point for a
//! study's output directory.

#![deny(missing_docs)]

mod cheapest;
mod csv;
mod error;
mod glossary;
mod heatmap;
mod html;
mod labels;
mod manifest;
mod markdown;
pub mod merge;
mod plots;
mod previous;
pub mod record;
mod schema1;
mod shard;
pub mod store;
mod summary;
mod tables;

use std::path::Path;

pub use csv::{csv, write_csv, CSV_FILE};
pub use error::ReportError;
pub use html::{escape, write_html, HTML_FILE, PLOTS_DIR};
pub use manifest::Manifest;
pub use markdown::markdown;
pub use plots::ZERO_AT;
pub use previous::move_previous_output;
pub use record::{
    point_key, read_records, write_atomically, Backend, Build, ErrorMetrics, ReadNotes, Record,
    RecordError, ResultsLog, Status, TimeStats, DEFAULT_FLAGS, RESULTS_FILE, SCHEMA,
};
pub use shard::{Shard, ShardError};
pub use store::{Place, Store, StoreLine, StoreOptions};
pub use summary::summary_markdown;

/// Reads `out_dir/results.jsonl` for a report: a missing directory or file, or a file with no
/// record yet, is an error whose message says what to do.
pub fn load(out_dir: &Path) -> Result<(Vec<Record>, ReadNotes), ReportError> {
    if !out_dir.is_dir() {
        return Err(ReportError::NoDir {
            path: out_dir.to_path_buf(),
        });
    }
    let path = out_dir.join(RESULTS_FILE);
    let shards = || merge::shard_files::<Record>(out_dir).is_ok_and(|f| !f.is_empty());
    if !path.exists() && shards() {
        return Err(ReportError::Unmerged {
            dir: out_dir.to_path_buf(),
        });
    }
    let (records, notes) = read_records(&path)?;
    if records.is_empty() {
        return Err(ReportError::Empty { path });
    }
    Ok((records, notes))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn load_explains_missing_and_empty_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let e = load(&missing).unwrap_err().to_string();
        assert!(e.contains("no such directory"), "{e}");
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("results.jsonl: no such file"), "{e}");
        std::fs::write(dir.path().join(RESULTS_FILE), "").unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no records yet"), "{e}");
        // Each message is one line.
        assert!(!e.contains('\n'));
        // A directory of shards says how to get its report.
        let shards = tempfile::tempdir().unwrap();
        let options = StoreOptions {
            shard: Some(Shard::new(0, 2).unwrap()),
            ..Default::default()
        };
        drop(ResultsLog::open_with(shards.path(), options).unwrap());
        let e = load(shards.path()).unwrap_err().to_string();
        let hint = format!("run `mantissa merge {}` first", shards.path().display());
        assert!(e.ends_with(&hint), "{e}");
    }

    /// Every committed results file, embedded so the test also runs from a copied test binary.
    pub(crate) const COMMITTED: [(&str, &str); 6] = [
        (
            "cpu-sum-full",
            include_str!("../../../docs/results/cpu-sum-full/results.jsonl"),
        ),
        (
            "h200-intensity",
            include_str!("../../../docs/results/h200-intensity/results.jsonl"),
        ),
        (
            "h200-quick",
            include_str!("../../../docs/results/h200-quick/results.jsonl"),
        ),
        (
            "h200-quick-all",
            include_str!("../../../docs/results/h200-quick-all/results.jsonl"),
        ),
        (
            "h200-sum-full",
            include_str!("../../../docs/results/h200-sum-full/results.jsonl"),
        ),
        // Schema 2: the quick GPU suite after the workload restructuring (H100).
        (
            "h100-quick-gpu",
            include_str!("../../../docs/results/h100-quick-gpu/results.jsonl"),
        ),
    ];

    #[test]
    fn every_committed_results_file_loads_and_renders() {
        // Where the source tree is at hand, a results directory added later must be listed above.
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
        if let Ok(entries) = std::fs::read_dir(&docs) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().join(RESULTS_FILE).exists() {
                    assert!(
                        COMMITTED.iter().any(|(n, _)| *n == name),
                        "docs/results/{name} is not in COMMITTED"
                    );
                }
            }
        }
        for (name, text) in COMMITTED {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(RESULTS_FILE), text).unwrap();
            let (records, notes) = load(dir.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(records.len(), text.lines().count(), "{name}");
            assert!(!notes.truncated_tail, "{name}");
            assert!(notes.skipped.is_empty(), "{name}");
            let schema = records[0].schema;
            assert!(records.iter().all(|r| r.schema == schema), "{name}");
            // Every quantity is described: by the migration table in schema-1 files, by the
            // workload that measured it in schema-2 files.
            for r in &records {
                for k in r.extra.keys() {
                    assert!(
                        r.descriptions.contains_key(k),
                        "{name}: {} {k} undescribed",
                        r.workload
                    );
                }
            }
            let md = markdown(&records);
            assert!(md.starts_with("# mantissa report"), "{name}");
            write_html(dir.path(), &records).unwrap_or_else(|e| panic!("{name}: {e}"));
            let csv = write_csv(dir.path(), &records).unwrap();
            let csv = std::fs::read_to_string(csv).unwrap();
            assert_eq!(csv.lines().count(), records.len() + 1, "{name}");
        }
    }

    #[test]
    fn a_report_is_rebuilt_from_results_jsonl_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        for r in tables::tests::fixture() {
            log.append(&r).unwrap();
        }
        drop(log);
        let (records, _) = load(dir.path()).unwrap();
        assert_eq!(records, tables::tests::fixture());
        let md = markdown(&records);
        assert!(md.contains("| range5 |"), "{md}");
        write_html(dir.path(), &records).unwrap();
        write_csv(dir.path(), &records).unwrap();
        for f in [HTML_FILE, CSV_FILE, PLOTS_DIR] {
            assert!(dir.path().join(f).exists(), "{f}");
        }
    }
}
