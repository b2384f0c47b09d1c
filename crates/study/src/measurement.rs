//! [`Measurement`]: what one point of the kernel-style workloads (arithmetic intensity,
//! Gaussian elimination, LU, multiplication chains, do/undo) produced, and its [`Record`].
//!
//! Every workload's runner fills a `Measurement` (sums, dot products and π one scalar scored
//! against one exact value; the kernel-style workloads more — a mean error over a solution
//! vector, mismatch counts, PTX instruction counts, an "out of resources" verdict), and this
//! module turns it into the record. [`error_metrics`] is the one conversion of an error into a
//! record's metrics.
//!
//! The study's records leave `build` empty; the kernel harness fills it (one `Build` per run of a
//! user's program).

use std::collections::BTreeMap;

use mantissa_gpu::Timing;
use mantissa_num::metrics::{measure_values, Reference};
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
    /// The error of `value` against `reference` (or, for vector results, the workload's summary of its errors).
    pub error: Option<ErrorMetrics>,
    /// How long the measured part took.
    pub time: Option<TimeStats>,
    /// Further measured quantities by name (see [`Record::extra`]).
    pub extra: BTreeMap<String, f64>,
    /// What a reader should know about this point (one line), e.g. why it is out of resources.
    pub note: Option<String>,
    /// How the point's kernel was built (GPU points whose runner compiled one).
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

    /// A point that could not be measured, with the reason (one line): a device error, or a
    /// point its runner cannot run.
    pub fn failed(why: impl Into<String>) -> Measurement {
        Measurement {
            status: Status::Failed,
            ..Measurement::out_of_resources(why)
        }
    }

    /// The record of `point` on `device`; `descriptions` says what each of `extra`'s
    /// quantities is (the workload's, see [`crate::workload::descriptions`]).
    pub fn record(
        &self,
        point: &Point,
        device: &str,
        descriptions: BTreeMap<String, String>,
    ) -> Record {
        Record {
            schema: SCHEMA,
            workload: point.workload.to_string(),
            algorithm: point.algorithm.to_string(),
            input: point.data.name(),
            size: point.size,
            seed: point.seed,
            precision: point.precision.to_string(),
            backend: point.backend,
            flags: point.flags.map(mantissa_gpu::FlagSet::name),
            device: device.to_string(),
            device_ordinal: None,
            status: self.status.clone(),
            value: self.value,
            reference: self.reference,
            error: self.error.clone(),
            time: self.time.clone(),
            extra: self.extra.clone(),
            descriptions,
            note: self.note.clone(),
            build: self.build.clone(),
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: Record::now(),
            shard: None,
            unit: None,
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

/// A reference as the f64 a record holds (nearest, or ±∞, or NaN).
pub fn reference_f64(r: &Reference) -> f64 {
    match r {
        Reference::Finite(b) => mantissa_num::big::to_f64(b),
        Reference::Infinite { negative: true } => f64::NEG_INFINITY,
        Reference::Infinite { negative: false } => f64::INFINITY,
        Reference::NaN => f64::NAN,
    }
}

/// The record's error metrics of `computed` against `reference`.
pub fn error_metrics(computed: &Reference, reference: &Reference) -> ErrorMetrics {
    record_metrics(&measure_values(computed, reference), reference)
}

/// Already measured metrics as a record's: relative error, ulps and digits are undefined
/// against an exact zero (absent), and digits are capped at 99 (an exact result has infinitely
/// many).
pub fn record_metrics(
    m: &mantissa_num::metrics::ErrorMetrics,
    reference: &Reference,
) -> ErrorMetrics {
    let zero = matches!(reference, Reference::Finite(b) if b.repr().is_zero());
    ErrorMetrics {
        abs: m.abs,
        rel: (!zero).then_some(m.rel),
        ulps: (!zero).then_some(m.ulps_f64),
        digits: (!zero).then_some(m.digits.min(99.0)),
    }
}
