//! [`ReportError`]: everything that can stop a report from being written.

use std::path::PathBuf;

use crate::record::RecordError;

/// Problems building or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading `results.jsonl` or writing an output file failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The results file exists but holds no record yet.
    #[error("{path}: no records yet (the study has not completed a point; nothing to report)")]
    Empty {
        /// The results file.
        path: PathBuf,
    },
    /// The directory holds a split run's shard stores but no merged `results.jsonl`.
    #[error("{dir} holds the shard stores of a split run (--shard) and no results.jsonl yet: run `mantissa merge {dir}` first")]
    Unmerged {
        /// The directory.
        dir: PathBuf,
    },
    /// The output directory is missing or not a directory.
    #[error("{path}: no such directory (give the --out DIR of a `mantissa study` run)")]
    NoDir {
        /// The path given.
        path: PathBuf,
    },
    /// plotters could not draw a plot (a bug rather than a user error: the data is sanitised
    /// before drawing).
    #[error("plot {name}: {message}")]
    Plot {
        /// The workload section the plot belongs to.
        name: String,
        /// What plotters said.
        message: String,
    },
}
