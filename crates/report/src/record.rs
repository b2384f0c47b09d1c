//! [`Record`]: one measurement point as one JSON line, and [`ResultsLog`], the append-only
//! `results.jsonl` that a run writes as it goes and `--resume` reads back.
//!
//! Floating-point fields may be infinite or NaN (an f32 sum that overflowed is a result, not an
//! error), which JSON cannot hold as numbers: they are written as the strings `"inf"`, `"-inf"`
//! and `"nan"` and read back as the same values. Finite values round-trip bit-exactly.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// File name of the records inside a study's output directory.
pub const RESULTS_FILE: &str = "results.jsonl";

/// One measurement point: what ran, where, how accurate and how fast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Workload name: `sum`, `dot`, `pi-leibniz`, `pi-midpoint`, ...
    pub workload: String,
    /// The algorithm within the workload: `serial`, `fma-serial`, `pairwise`, `tree`, ...
    pub algorithm: String,
    /// The input class: a named range (`range5`, `gmp-range2`), a user interval, `white-paper`, ...
    pub input: String,
    /// Problem size: elements summed, vector length, series terms or integration steps.
    pub size: u64,
    /// Seed of the input generator (0 for deterministic inputs).
    pub seed: u64,
    /// Precision name as on the command line (`f32`, `f64x2`, `mp256`, `exact`, ...).
    pub precision: String,
    pub backend: Backend,
    /// The machine: CPU model or GPU name.
    pub device: String,
    pub status: Status,
    /// The computed result, rounded to f64 (absent when the point did not run).
    #[serde(default, with = "opt_float")]
    pub value: Option<f64>,
    /// The exact (or reference) result, rounded to f64.
    #[serde(default, with = "opt_float")]
    pub reference: Option<f64>,
    #[serde(default)]
    pub error: Option<ErrorMetrics>,
    #[serde(default)]
    pub time: Option<TimeStats>,
    /// Further measured quantities of the point, by name: PTX instruction counts of the kernel
    /// (`ptx.add.f32`), mismatch counts (`mismatches`, `mismatch_pct`), GFLOP/s, ... Absent
    /// from the JSON line when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, f64>,
    /// Anything a reader needs to interpret the point (a skipped reason, a caveat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// mantissa version that produced the record.
    pub version: String,
    /// When the point completed, UTC, RFC 3339.
    pub date: String,
}

/// Where a point ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Backend {
    /// The CPU with this many threads (1 = sequential).
    Cpu { threads: u32 },
    /// The GPU with a grid of `grid` blocks of `block` threads.
    Gpu { grid: u32, block: u32 },
    /// The GPU running a tiled algorithm (Gaussian elimination, blocked LU) with `tile`×`tile`
    /// thread blocks; the grid follows from the problem size, so the tile is the configuration.
    #[serde(rename = "gpu-tiles")]
    GpuTiles { tile: u32 },
}

impl Backend {
    pub fn is_gpu(&self) -> bool {
        matches!(self, Backend::Gpu { .. } | Backend::GpuTiles { .. })
    }
}

impl fmt::Display for Backend {
    /// `cpu×4` / `gpu 64×32`: the configuration as tables print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Cpu { threads } => write!(f, "cpu×{threads}"),
            Backend::Gpu { grid, block } => write!(f, "gpu {grid}×{block}"),
            Backend::GpuTiles { tile } => write!(f, "gpu tiles {tile}×{tile}"),
        }
    }
}

/// Whether the point produced a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    /// The configuration needs more shared memory or registers than the device has.
    OutOfResources,
    /// It failed; the record's note says why.
    Failed,
}

/// Accuracy of `value` against `reference`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorMetrics {
    /// |value − reference|, computed exactly and rounded once.
    #[serde(with = "float")]
    pub abs: f64,
    /// abs / |reference|; absent when the reference is zero.
    #[serde(default, with = "opt_float")]
    pub rel: Option<f64>,
    /// Distance in units in the last place of f64 at the reference.
    #[serde(default, with = "opt_float")]
    pub ulps: Option<f64>,
    /// Correct decimal digits, −log10(rel), capped; absent when the reference is zero.
    #[serde(default, with = "opt_float")]
    pub digits: Option<f64>,
}

/// Run times of the point's repetitions, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeStats {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub reps: u32,
}

impl TimeStats {
    /// Median, min and max of `samples_ms` (which must not be empty).
    pub fn from_samples(samples_ms: &[f64]) -> Option<TimeStats> {
        if samples_ms.is_empty() {
            return None;
        }
        let mut s = samples_ms.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * (s[n / 2 - 1] + s[n / 2])
        };
        Some(TimeStats {
            median_ms: median,
            min_ms: s[0],
            max_ms: s[n - 1],
            reps: n as u32,
        })
    }
}

impl Record {
    /// What identifies the measurement point: two records with the same key measured the same
    /// thing, so `--resume` runs a point only if its key is not in the file yet.
    pub fn key(&self) -> String {
        point_key(
            &self.workload,
            &self.algorithm,
            &self.input,
            self.size,
            self.seed,
            &self.precision,
            &self.backend,
            &self.device,
        )
    }

    /// The mantissa version building this crate.
    pub fn current_version() -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    /// The current time, UTC, RFC 3339 with seconds (`2026-11-22T06:40:00Z`).
    pub fn now() -> String {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        rfc3339_utc(secs)
    }
}

/// The key of a point before it has run (see [`Record::key`]).
#[allow(clippy::too_many_arguments)]
pub fn point_key(
    workload: &str,
    algorithm: &str,
    input: &str,
    size: u64,
    seed: u64,
    precision: &str,
    backend: &Backend,
    device: &str,
) -> String {
    let b = match backend {
        Backend::Cpu { threads } => format!("cpu:{threads}"),
        Backend::Gpu { grid, block } => format!("gpu:{grid}x{block}"),
        Backend::GpuTiles { tile } => format!("gpu-tiles:{tile}"),
    };
    format!("{workload}|{algorithm}|{input}|{size}|{seed}|{precision}|{b}|{device}")
}

/// Seconds since the Unix epoch as an RFC 3339 UTC timestamp (proleptic Gregorian calendar).
fn rfc3339_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Problems reading or writing records.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    // The cause is in the message, not chained as a source, so `{:#}` does not print it twice.
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: io::Error },
    #[error("{path}:{line}: not a mantissa record: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: no such file (run `mantissa study --out DIR` first, then point at DIR)")]
    Missing { path: PathBuf },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RecordError + '_ {
    move |cause| RecordError::Io {
        path: path.to_path_buf(),
        cause,
    }
}

/// What reading a results file found besides the records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadNotes {
    /// A last line without its newline that did not parse: the run was killed while writing it.
    /// The point is simply missing (a resumed run measures it again).
    pub truncated_tail: bool,
}

/// Reads every record of a results file. A malformed line is an error naming its line number,
/// except an unterminated last line, which a killed run can leave and which is skipped.
pub fn read_records(path: &Path) -> Result<(Vec<Record>, ReadNotes), RecordError> {
    let file = File::open(path).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            RecordError::Missing {
                path: path.to_path_buf(),
            }
        } else {
            io_err(path)(e)
        }
    })?;
    let mut reader = BufReader::new(file);
    let mut records = Vec::new();
    let mut notes = ReadNotes::default();
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        number += 1;
        let terminated = line.ends_with('\n');
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(text) {
            Ok(r) => records.push(r),
            Err(_) if !terminated => notes.truncated_tail = true,
            Err(e) => {
                return Err(RecordError::Parse {
                    path: path.to_path_buf(),
                    line: number,
                    message: e.to_string(),
                })
            }
        }
    }
    Ok((records, notes))
}

/// The append-only `results.jsonl` of one output directory.
#[derive(Debug)]
pub struct ResultsLog {
    path: PathBuf,
    file: File,
    done: HashSet<String>,
    /// Where an earlier results file was moved when starting afresh.
    moved_aside: Option<PathBuf>,
    previous: usize,
}

impl ResultsLog {
    /// Opens `dir/results.jsonl`, creating `dir` if needed.
    ///
    /// With `resume`, the records already there are kept and their points count as done.
    /// Without it, an existing non-empty file is renamed to `results-<timestamp>.jsonl` (nothing
    /// is ever overwritten) and a fresh file is started.
    pub fn open(dir: &Path, resume: bool) -> Result<ResultsLog, RecordError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let path = dir.join(RESULTS_FILE);
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        let mut done = HashSet::new();
        let mut moved_aside = None;
        let mut previous = 0;
        if exists && resume {
            let (records, notes) = read_records(&path)?;
            previous = records.len();
            done.extend(records.iter().map(Record::key));
            if notes.truncated_tail {
                // Drop the partial line so the next append starts on a line of its own.
                truncate_partial_tail(&path)?;
            }
        } else if exists {
            let stamp = Record::now().replace([':', '-'], "");
            let mut aside = dir.join(format!("results-{stamp}.jsonl"));
            let mut k = 1;
            while aside.exists() {
                aside = dir.join(format!("results-{stamp}-{k}.jsonl"));
                k += 1;
            }
            std::fs::rename(&path, &aside).map_err(io_err(&path))?;
            moved_aside = Some(aside);
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok(ResultsLog {
            path,
            file,
            done,
            moved_aside,
            previous,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the previous results file went, if this log started afresh over one.
    pub fn moved_aside(&self) -> Option<&Path> {
        self.moved_aside.as_deref()
    }

    /// Records found in the file when it was opened with `resume`.
    pub fn previous_records(&self) -> usize {
        self.previous
    }

    /// Whether a point with this key is already recorded.
    pub fn contains(&self, key: &str) -> bool {
        self.done.contains(key)
    }

    /// Appends one record as one line and flushes it to disk before returning, so a crash
    /// afterwards cannot lose it.
    pub fn append(&mut self, record: &Record) -> Result<(), RecordError> {
        let mut line = serde_json::to_string(record).map_err(|e| RecordError::Io {
            path: self.path.clone(),
            cause: io::Error::other(e),
        })?;
        line.push('\n');
        // One write call per line: an interrupted run leaves whole lines (and at worst one
        // unterminated tail, which readers skip).
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(io_err(&self.path))?;
        self.done.insert(record.key());
        Ok(())
    }
}

fn truncate_partial_tail(path: &Path) -> Result<(), RecordError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io_err(path))?;
    file.set_len(keep as u64).map_err(io_err(path))?;
    file.sync_data().map_err(io_err(path))
}

/// Writes `contents` to `path` through a temporary file in the same directory and a rename, so
/// readers never see a half-written file.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), RecordError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let write = || -> io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_data()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(path)(e)
    })
}

/// f64 fields that may be non-finite: numbers when finite, else "inf", "-inf" or "nan".
mod float {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;
    use std::fmt;

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else if x.is_nan() {
            s.serialize_str("nan")
        } else if *x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    struct FloatVisitor;

    impl Visitor<'_> for FloatVisitor {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number or one of \"inf\", \"-inf\", \"nan\"")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            match v {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
            }
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(FloatVisitor)
    }
}

/// `Option<f64>` with the same encoding as [`float`]; `null` is `None`.
mod opt_float {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wrap(#[serde(with = "super::float")] f64);

    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        x.map(Wrap).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record {
        Record {
            workload: "sum".into(),
            algorithm: "serial".into(),
            input: "range5".into(),
            size: 1 << 20,
            seed: 7,
            precision: "f32".into(),
            backend: Backend::Cpu { threads: 4 },
            device: "test cpu".into(),
            status: Status::Ok,
            value: Some(f64::INFINITY),
            reference: Some(0.0),
            error: Some(ErrorMetrics {
                abs: f64::INFINITY,
                rel: None,
                ulps: Some(f64::NAN),
                digits: None,
            }),
            time: TimeStats::from_samples(&[3.0, 1.0, 2.0, 10.0]),
            extra: Default::default(),
            note: None,
            version: Record::current_version(),
            date: Record::now(),
        }
    }

    #[test]
    fn non_finite_values_round_trip_as_strings() {
        let r = sample();
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""value":"inf""#), "{line}");
        assert!(line.contains(r#""ulps":"nan""#), "{line}");
        assert!(
            line.contains(r#""backend":{"kind":"cpu","threads":4}"#),
            "{line}"
        );
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back.value, Some(f64::INFINITY));
        assert!(back.error.as_ref().unwrap().ulps.unwrap().is_nan());
        assert_eq!(back.key(), r.key());
    }

    #[test]
    fn finite_values_round_trip_bit_exactly() {
        let mut r = sample();
        for x in [0.1, -0.0, 5e-324, f64::MAX, 1.0 / 3.0] {
            r.value = Some(x);
            let back: Record = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
            assert_eq!(back.value.unwrap().to_bits(), x.to_bits());
        }
    }

    #[test]
    fn time_stats_median_of_even_count_is_the_mean_of_the_middle_pair() {
        let t = TimeStats::from_samples(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(
            (t.median_ms, t.min_ms, t.max_ms, t.reps),
            (2.5, 1.0, 10.0, 4)
        );
        assert!(TimeStats::from_samples(&[]).is_none());
    }

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_795_329_296), "2026-11-22T06:34:56Z");
    }

    #[test]
    fn resume_keeps_records_and_drops_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        let r = sample();
        log.append(&r).unwrap();
        drop(log);
        // A run killed mid-write leaves an unterminated line.
        let path = dir.path().join(RESULTS_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"workload":"sum","algo"#).unwrap();
        drop(f);

        let mut log = ResultsLog::open(dir.path(), true).unwrap();
        assert_eq!(log.previous_records(), 1);
        assert!(log.contains(&r.key()));
        let mut r2 = sample();
        r2.size = 1024;
        assert!(!log.contains(&r2.key()));
        log.append(&r2).unwrap();
        let (records, notes) = read_records(&path).unwrap();
        assert_eq!(records.len(), 2);
        assert!(!notes.truncated_tail);
    }

    #[test]
    fn a_fresh_run_moves_old_results_aside_instead_of_overwriting() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ResultsLog::open(dir.path(), false).unwrap();
        log.append(&sample()).unwrap();
        drop(log);
        let log = ResultsLog::open(dir.path(), false).unwrap();
        let aside = log.moved_aside().expect("old file moved").to_path_buf();
        assert_eq!(read_records(&aside).unwrap().0.len(), 1);
        assert_eq!(read_records(log.path()).unwrap().0.len(), 0);
    }

    #[test]
    fn a_malformed_line_in_the_middle_names_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RESULTS_FILE);
        let good = serde_json::to_string(&sample()).unwrap();
        std::fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
        let err = read_records(&path).unwrap_err().to_string();
        assert!(err.contains(":2: not a mantissa record"), "{err}");
        let missing = read_records(&dir.path().join("nope.jsonl")).unwrap_err();
        assert!(matches!(missing, RecordError::Missing { .. }));
    }

    #[test]
    fn write_atomically_replaces_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
