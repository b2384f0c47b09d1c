//! [`Measurement`]: what one point of the kernel-style workloads (arithmetic intensity,
//! Gaussian elimination, LU, multiplication chains, do/undo) produced, and its [`Record`].
//!
//! The part-1 workloads (sums, dot products, π) reduce to one scalar scored against one exact
//! value, which [`crate::study::Outcome`] holds. These workloads report more — a mean error over a
//! solution vector, mismatch counts, PTX instruction counts, an "out of resources" verdict — so
//! each of their modules fills a `Measurement` and this module turns it into the record.

use std::collections::BTreeMap;

use mantissa_gpu::Timing;
use mantissa_report::{Build, ErrorMetrics, Record, Status, TimeStats, SCHEMA};

use crate::study::Point;

/// The result of one point of a kernel-style workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// `Ok`, or `OutOfResources` when the configuration needs more shared memory, registers or
    /// threads than the device has (then `time` and `error` are absent and `note` says what).
    pub status: Status,
    /// The computed result summarised as one number (a solution's first component, a chain's
    /// final product, ...), rounded to f64.
    pub value: Option<f64>,
    /// The reference for `value`, rounded to f64.
    pub reference: Option<f64>,
    pub error: Option<ErrorMetrics>,
    pub time: Option<TimeStats>,
    /// Further measured quantities by name (see [`Record::extra`]).
    pub extra: BTreeMap<String, f64>,
    pub note: Option<String>,
    /// How the point's kernel was built (GPU points; `None` until the runner says).
    pub build: Option<Build>,
}

impl Measurement {
    /// A configuration the device cannot run, with the reason (one line).
    pub fn out_of_resources(why: impl Into<String>) -> Measurement {
        Measurement {
            status: Status::OutOfResources,
            value: None,
            reference: None,
            error: None,
            time: None,
            extra: BTreeMap::new(),
            note: Some(why.into()),
            build: None,
        }
    }

    /// The record of `point` on `device`.
    pub fn record(&self, point: &Point, device: &str) -> Record {
        Record {
            schema: SCHEMA,
            workload: point.workload.to_string(),
            algorithm: point.algorithm.to_string(),
            input: point.data.name(),
            size: point.size,
            seed: point.seed,
            precision: point.precision.to_string(),
            backend: point.backend,
            flags: None,
            device: device.to_string(),
            status: self.status.clone(),
            value: self.value,
            reference: self.reference,
            error: self.error.clone(),
            time: self.time.clone(),
            extra: self.extra.clone(),
            descriptions: BTreeMap::new(),
            note: self.note.clone(),
            build: self.build.clone(),
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: Record::now(),
        }
    }
}

/// A GPU timing as a record's time statistics (milliseconds).
pub fn time_stats(t: &Timing) -> TimeStats {
    TimeStats {
        median_ms: t.median_ms,
        min_ms: t.min_ms,
        max_ms: t.max_ms,
        reps: t.samples_ms.len() as u32,
    }
}
