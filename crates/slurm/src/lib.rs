#![deny(missing_docs)]
//! `mantissa slurm`: a sharded command (`study`, `mathlib`, `tune`) as a Slurm job array plus a merge
//! job that waits for it, written as scripts the user submits.
//!
//! The crate writes files and never runs Slurm: `mantissa slurm` leaves three files in a
//! directory ([`job::Job::write`]) and prints the one command that submits them
//! (`bash DIR/submit.sh`). Its invariants:
//!
//! - every shard runs the same command line but `--shard ${SLURM_ARRAY_TASK_ID}/N`, with the
//!   output directory, `--resume` (a requeued or re-submitted shard continues where it
//!   stopped) and the thread count fixed in the script, so that every shard plans the same units
//!   ([`words`]);
//! - every word is quoted for a POSIX shell and every path is absolute ([`script`]);
//! - time and memory come from the command's own cost model, the study's
//!   (`mantissa_study::guard`) or mathlib's (`mantissa_mathlib::estimate`), for the largest
//!   shard, with a stated safety margin ([`estimate`]); a tuning run has no cost model (its
//!   trials are found by running it), so its `--time` must be given and its memory is a stated
//!   fixed figure;
//! - bad input is one line ([`Usage`]) and nothing is written.

pub mod estimate;
pub mod job;
pub mod limits;
pub mod script;
pub mod words;

pub use estimate::{Estimate, JobResources, ShardLoad};
pub use job::{Job, JobSpec, Written};
pub use words::{GpuUse, Sharded};

/// A bad `mantissa slurm` request: one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

impl Usage {
    /// The error of `msg`.
    pub fn new(msg: impl Into<String>) -> Usage {
        Usage(msg.into())
    }
}

/// What can go wrong writing the scripts.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// A bad request (one line, exit code 2).
    #[error(transparent)]
    Usage(#[from] Usage),
    /// A file or directory could not be written, said by the one writer (not a regular file, a
    /// full or read-only disk).
    #[error(transparent)]
    Write(#[from] mantissa_files::WriteError),
    /// A file or directory could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}
