//! mantissa's result records and the reports built from them.
//!
//! A study run appends one [`Record`] per measurement point to `OUT/results.jsonl` through a
//! [`ResultsLog`] (line by line, fsynced, resumable); everything a user reads afterwards — the
//! Markdown tables and `report.html` — is rebuilt from that file alone, never by re-running.
//! This crate runs no experiments and prints nothing itself.

pub mod record;

pub use record::{
    point_key, read_records, write_atomically, Backend, ErrorMetrics, ReadNotes, Record,
    RecordError, ResultsLog, Status, TimeStats, RESULTS_FILE,
};
