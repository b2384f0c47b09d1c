//! [`Record`]: one measurement point as one JSON line, and [`ResultsLog`], the append-only
//! `results.jsonl` that a run writes as it goes and `--resume` reads back.
//!
//! Floating-point fields may be infinite or NaN (an f32 sum that overflowed is a result, not an
//! error), which JSON cannot hold as numbers: they are written as the strings `"inf"`, `"-inf"`
//! and `"nan"` and read back as the same values. Finite values round-trip bit-exactly.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::shard::Shard;
use crate::store::{read_lines, Place, Store, StoreLine};
pub use crate::store::{write_atomically, ReadNotes};

/// File name of the records inside a study's output directory.
pub const RESULTS_FILE: &str = "results.jsonl";

/// The schema of the records this crate writes. Schema 1 (no `schema` field) had no build facts,
/// 1-D GPU launches and no descriptions; [`read_records`] gives its lines the current shape.
pub const SCHEMA: u32 = 2;

/// One measurement point: what ran, where, how accurate and how fast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Schema of the line this record was read from or will be written as ([`SCHEMA`]); a line
    /// without the field is schema 1. A schema-1 record keeps 1 after [`read_records`] gives it
    /// the current shape, so a report can say which facts were filled in rather than measured.
    #[serde(default = "schema_1")]
    pub schema: u32,
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
    /// Where the point ran: CPU threads or a GPU launch.
    pub backend: Backend,
    /// The flag-set name a GPU point's kernel was compiled with (`default`, `approx-div`,
    /// `nofma+ftz`, ...); absent for CPU points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
    /// The machine: CPU model or GPU name.
    pub device: String,
    /// The CUDA ordinal of the GPU that ran the point, when the run used more than one GPU or
    /// one other than GPU 0; absent otherwise, and in records written before runs on several
    /// GPUs existed. Not part of the point's key: a resumed run may measure a point on any
    /// device of the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ordinal: Option<u32>,
    /// Whether the point produced a result.
    pub status: Status,
    /// The computed result, rounded to f64 (absent when the point did not run).
    #[serde(default, with = "opt_float")]
    pub value: Option<f64>,
    /// The exact (or reference) result, rounded to f64.
    #[serde(default, with = "opt_float")]
    pub reference: Option<f64>,
    /// Accuracy of `value` against `reference` (absent when the point did not run).
    #[serde(default)]
    pub error: Option<ErrorMetrics>,
    /// Run times (absent when the point did not run).
    #[serde(default)]
    pub time: Option<TimeStats>,
    /// Further measured quantities of the point, by name: PTX instruction counts of the kernel
    /// (`ptx.add.f32`), mismatch counts (`mismatches`, `mismatch_pct`), GFLOP/s, ... Absent
    /// from the JSON line when empty.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        with = "float_map"
    )]
    pub extra: BTreeMap<String, f64>,
    /// What each `extra` quantity is, by the same name, as the workload that measured it says
    /// (thresholds included: "entries with |L·U − A| > 1e-4"). Absent from the JSON line when
    /// empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub descriptions: BTreeMap<String, String>,
    /// Anything a reader needs to interpret the point (a skipped reason, a caveat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How a GPU point's kernel was built (front end, options, architecture, source hash);
    /// absent for CPU points and where the runner did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// mantissa version that produced the record.
    pub version: String,
    /// The mantissa git revision that produced the record (`git rev-parse --short=12 HEAD`, with
    /// `-dirty` when the tree had changes), or `unknown` (built outside a git checkout, or a
    /// schema-1 record, which did not say).
    #[serde(default)]
    pub git_revision: String,
    /// When the point completed, UTC, RFC 3339.
    pub date: String,
    /// The shard of a sharded run (`--shard I/N`) that measured the point; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The point's work unit: its 0-based place in the whole run's plan (CPU points, then GPU
    /// points), written by a sharded run so that `mantissa merge` restores plan order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<u64>,
}

fn schema_1() -> u32 {
    1
}

/// How a GPU kernel was built: the facts that decide its code, so that two records with the same
/// build ran the same machine code. Filled by the study from the GPU crate's compiled module.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Build {
    /// The compiler front end: `nvrtc`, `nvcc`, or `ptx` for ready PTX.
    pub front_end: String,
    /// Its version, e.g. `13.0`.
    pub front_end_version: String,
    /// The flag-set name (`default`, `strict`, `nofma+ftz`, ...).
    pub flags: String,
    /// Every option passed to the front end, in order.
    pub options: Vec<String>,
    /// The target architecture, e.g. `sm_90`.
    pub arch: String,
    /// Hex hash of the source and every file it includes.
    pub source_hash: String,
}

/// Where a point ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Backend {
    /// The CPU with this many threads (1 = sequential).
    Cpu {
        /// Worker threads (1 = sequential).
        threads: u32,
    },
    /// The GPU with a grid of `grid` blocks of `block` threads, each as (x, y, z). Schema-1
    /// lines hold one number per field, which reads as (n, 1, 1).
    Gpu {
        /// Blocks per grid dimension.
        #[serde(deserialize_with = "dim3::deserialize")]
        grid: [u32; 3],
        /// Threads per block dimension.
        #[serde(deserialize_with = "dim3::deserialize")]
        block: [u32; 3],
    },
    /// The GPU running a tiled algorithm (Gaussian elimination, blocked LU) with `tile`×`tile`
    /// thread blocks; the grid follows from the problem size, so the tile is the configuration.
    #[serde(rename = "gpu-tiles")]
    GpuTiles {
        /// Tile edge: blocks of `tile`×`tile` threads.
        tile: u32,
    },
}

impl Backend {
    /// A 1-D GPU launch: `grid` blocks of `block` threads.
    pub const fn gpu(grid: u32, block: u32) -> Backend {
        Backend::Gpu {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
        }
    }

    /// The (grid, block) of a 1-D GPU launch; `None` for other backends and 2-D/3-D launches.
    pub fn gpu_1d(&self) -> Option<(u32, u32)> {
        match *self {
            Backend::Gpu {
                grid: [grid, 1, 1],
                block: [block, 1, 1],
            } => Some((grid, block)),
            _ => None,
        }
    }

    /// GPU threads a grid × block launch starts (every dimension multiplied); `None` for CPU and
    /// tiled backends, whose thread count is not a launch's.
    pub fn gpu_threads(&self) -> Option<u64> {
        match *self {
            Backend::Gpu { grid, block } => {
                Some(grid.into_iter().chain(block).map(u64::from).product())
            }
            _ => None,
        }
    }

    /// Whether the point ran on a GPU.
    pub fn is_gpu(&self) -> bool {
        matches!(self, Backend::Gpu { .. } | Backend::GpuTiles { .. })
    }
}

/// A launch dimension as tables print it: `64` when only x is used, else `8×8` or `8×8×2`.
pub(crate) fn fmt_dim3(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("{x}×{y}"),
        [x, y, z] => format!("{x}×{y}×{z}"),
    }
}

impl fmt::Display for Backend {
    /// `cpu×4` / `gpu 64×32` / `gpu (8×8)×(16×16)`: the configuration as tables print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A multi-dimensional grid or block is parenthesised so its × does not read as grid × block.
        let part = |d: [u32; 3]| {
            let s = fmt_dim3(d);
            if s.contains('×') {
                format!("({s})")
            } else {
                s
            }
        };
        match self {
            Backend::Cpu { threads } => write!(f, "cpu×{threads}"),
            Backend::Gpu { grid, block } => write!(f, "gpu {}×{}", part(*grid), part(*block)),
            Backend::GpuTiles { tile } => write!(f, "gpu tiles {tile}×{tile}"),
        }
    }
}

/// A launch dimension: `[x, y, z]`, or a schema-1 number `n` meaning `[n, 1, 1]`.
mod dim3 {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Dim {
        One(u32),
        Three([u32; 3]),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u32; 3], D::Error> {
        Ok(match Dim::deserialize(d)? {
            Dim::One(x) => [x, 1, 1],
            Dim::Three(v) => v,
        })
    }
}

/// Whether the point produced a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// It ran and the record holds its result.
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
    /// Median of the timed repetitions.
    pub median_ms: f64,
    /// Fastest repetition.
    pub min_ms: f64,
    /// Slowest repetition.
    pub max_ms: f64,
    /// Timed repetitions (warm-ups not counted).
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
            self.flags.as_deref(),
        )
    }

    /// Parses one line of a results file into the current shape: a schema-1 line gets the
    /// fields schema 1 lacked from the report crate's migration table of old quantity names.
    pub fn from_json_line(line: &str) -> Result<Record, serde_json::Error> {
        let mut r: Record = serde_json::from_str(line)?;
        if r.schema < 2 {
            crate::schema1::migrate(&mut r);
        }
        Ok(r)
    }

    /// `extra` and `descriptions` from named quantities `(name, value, what it means)`, as the
    /// analyses (`mantissa shadow`, `mantissa diff`) record them.
    pub fn quantities(
        q: &[(&str, f64, &str)],
    ) -> (BTreeMap<String, f64>, BTreeMap<String, String>) {
        let extra = q.iter().map(|(k, v, _)| (k.to_string(), *v)).collect();
        let descriptions = q
            .iter()
            .map(|(k, _, d)| (k.to_string(), d.to_string()))
            .collect();
        (extra, descriptions)
    }

    /// The mantissa version building this crate.
    pub fn current_version() -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    /// The mantissa git revision this crate was built from (see [`Record::git_revision`]),
    /// found by the crate's build script.
    pub fn current_git_revision() -> String {
        env!("MANTISSA_GIT_REVISION").to_string()
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

/// The fields of a point key, by name (serialised as a JSON object, which escapes every value,
/// so no device or input name can make two different points share a key).
#[derive(Serialize)]
struct PointKey<'a> {
    workload: &'a str,
    algorithm: &'a str,
    input: &'a str,
    size: u64,
    seed: u64,
    precision: &'a str,
    backend: &'a Backend,
    device: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    flags: Option<&'a str>,
}

/// The flag set a kernel compiled without naming one gets: a point with these flags has the
/// same key as one that names none (schema-1 GPU records named none and were built with it).
pub const DEFAULT_FLAGS: &str = "default";

/// The key of a point before it has run (see [`Record::key`]): a JSON object of its named
/// fields, e.g. `{"workload":"sum",...,"backend":{"kind":"cpu","threads":4},"device":"..."}`.
/// `flags` appears only when it is not [`DEFAULT_FLAGS`].
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
    flags: Option<&str>,
) -> String {
    let key = PointKey {
        workload,
        algorithm,
        input,
        size,
        seed,
        precision,
        backend,
        device,
        flags: flags.filter(|f| *f != DEFAULT_FLAGS),
    };
    serde_json::to_string(&key).expect("strings, integers and a plain enum always serialise")
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
    /// Reading or writing `path` failed.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        cause: io::Error,
    },
    /// A line of `path` is not a record.
    #[error("{path}:{line}: not a mantissa record: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Its 1-based line number.
        line: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// There is no results file at `path`.
    #[error("{path}: no such file (run `mantissa study --out DIR` first, then point at DIR)")]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Writing a file or making a directory failed in a way with its own advice (not a regular
    /// file, a full disk, a read-only or forbidden directory): see [`mantissa_files`].
    #[error(transparent)]
    Write(#[from] mantissa_files::WriteError),
    /// Another process holds the store file's lock: two writers would interleave their lines.
    #[error("{path} is being written by another mantissa process")]
    Locked {
        /// The store file.
        path: PathBuf,
    },
    /// `--resume` of a file whose manifest plans other work.
    #[error("cannot resume {path}: it holds a run with {field} = {was}, this run has {field} = {now} (give the same options, or leave out --resume to start afresh)")]
    OtherRun {
        /// The store file.
        path: PathBuf,
        /// The first field that differs: `command` or `settings.NAME`.
        field: String,
        /// Its value in the file's manifest.
        was: String,
        /// Its value in this run.
        now: String,
    },
}

/// The study's store: `DIR/results.jsonl`, written through the one [`Store`] implementation.
pub type ResultsLog = Store<Record>;

/// Records are the study's lines: `results.jsonl` beside `store.json`.
impl StoreLine for Record {
    const STEM: &'static str = "results";
    const MANIFEST_STEM: &'static str = "store";

    fn key(&self) -> String {
        Record::key(self)
    }

    fn place(&self) -> Option<Place> {
        Some(Place {
            shard: self.shard?,
            unit: self.unit?,
        })
    }

    fn set_place(&mut self, place: Option<Place>) {
        self.shard = place.map(|p| p.shard);
        self.unit = place.map(|p| p.unit);
    }

    fn parse(line: &str) -> Result<Record, serde_json::Error> {
        Record::from_json_line(line)
    }
}

/// Reads every record of a results file (see [`read_lines`]): schema-1 lines in the current
/// shape, damaged lines skipped and listed, a torn tail noted.
pub fn read_records(path: &Path) -> Result<(Vec<Record>, ReadNotes), RecordError> {
    read_lines(path)
}

/// f64 fields that may be non-finite: numbers when finite, else "inf", "-inf" or "nan" (for
/// `#[serde(with = "mantissa_report::record::float")]`).
pub mod float {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;
    use std::fmt;

    /// Writes a finite value as a number, a non-finite one as a string.
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

    /// Reads a number, or "inf", "-inf" or "nan".
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(FloatVisitor)
    }
}

/// Named quantities (`Record::extra`) with the encoding of [`float`]: serde_json writes a bare
/// non-finite f64 as `null`, which does not read back as a number, so a record holding an
/// infinite quantity (a relative error against 0) would become an unreadable line. A `null`
/// written that way before reads back as NaN: its value is lost, the record is kept.
mod float_map {
    use serde::de::Deserializer;
    use serde::ser::{SerializeMap, Serializer};
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    struct Out<'a>(#[serde(with = "super::float")] &'a f64);

    #[derive(Deserialize)]
    struct In(#[serde(deserialize_with = "nullable")] f64);

    fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(with = "super::float")] f64);
        Ok(Option::<Wrap>::deserialize(d)?.map_or(f64::NAN, |w| w.0))
    }

    pub fn serialize<S: Serializer>(m: &BTreeMap<String, f64>, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(m.len()))?;
        for (k, v) in m {
            map.serialize_entry(k, &Out(v))?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
        let m = BTreeMap::<String, In>::deserialize(d)?;
        Ok(m.into_iter().map(|(k, v)| (k, v.0)).collect())
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
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> Record {
        Record {
            schema: SCHEMA,
            workload: "sum".into(),
            algorithm: "serial".into(),
            input: "range5".into(),
            size: 1 << 20,
            seed: 7,
            precision: "f32".into(),
            backend: Backend::Cpu { threads: 4 },
            device: "test cpu".into(),
            device_ordinal: None,
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
            flags: None,
            extra: Default::default(),
            descriptions: Default::default(),
            note: None,
            build: None,
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: Record::now(),
            shard: None,
            unit: None,
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
    fn non_finite_quantities_round_trip_and_old_nulls_read_as_nan() {
        let mut r = sample();
        r.extra.insert("baseline.max_rel".into(), f64::INFINITY);
        r.extra.insert("low".into(), f64::NEG_INFINITY);
        r.extra.insert("nan".into(), f64::NAN);
        r.extra.insert("x".into(), 0.5);
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""baseline.max_rel":"inf""#), "{line}");
        let back = Record::from_json_line(&line).unwrap();
        assert_eq!(back.extra["baseline.max_rel"], f64::INFINITY);
        assert_eq!(back.extra["low"], f64::NEG_INFINITY);
        assert!(back.extra["nan"].is_nan());
        assert_eq!(back.extra["x"], 0.5);
        // What serde_json wrote for an infinite quantity before: null.
        let old = line.replace(r#""baseline.max_rel":"inf""#, r#""baseline.max_rel":null"#);
        let back = Record::from_json_line(&old).unwrap();
        assert!(back.extra["baseline.max_rel"].is_nan());
    }

    #[test]
    fn a_v2_record_round_trips_with_build_flags_descriptions_and_a_3d_launch() {
        let mut r = sample();
        r.backend = Backend::Gpu {
            grid: [8, 4, 2],
            block: [16, 16, 1],
        };
        r.flags = Some("nofma+ftz".into());
        r.extra.insert("gflops".into(), 12.5);
        r.descriptions
            .insert("gflops".into(), "2/3·n³ operations per second".into());
        r.build = Some(Build {
            front_end: "nvrtc".into(),
            front_end_version: "13.0".into(),
            flags: "nofma+ftz".into(),
            options: vec!["--fmad=false".into(), "--ftz=true".into()],
            arch: "sm_90".into(),
            source_hash: "0123abcd".into(),
        });
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.starts_with(r#"{"schema":2,"#), "{line}");
        assert!(
            line.contains(r#""backend":{"kind":"gpu","grid":[8,4,2],"block":[16,16,1]}"#),
            "{line}"
        );
        let back = Record::from_json_line(&line).unwrap();
        // NaN fields compare unequal: compare the line written from the copy instead.
        assert_eq!(serde_json::to_string(&back).unwrap(), line);
        assert_eq!(back.build, r.build);
        assert_eq!(back.descriptions, r.descriptions);
        assert_eq!(back.key(), r.key());
        assert_eq!(r.backend.to_string(), "gpu (8×4×2)×(16×16)");
        assert_eq!(Backend::gpu(64, 32).to_string(), "gpu 64×32");
    }

    #[test]
    fn the_device_ordinal_is_written_when_known_and_not_part_of_the_key() {
        let plain = sample();
        let line = serde_json::to_string(&plain).unwrap();
        assert!(!line.contains("device_ordinal"), "{line}");
        assert_eq!(Record::from_json_line(&line).unwrap().device_ordinal, None);
        let mut on_two = plain.clone();
        on_two.device_ordinal = Some(2);
        let line = serde_json::to_string(&on_two).unwrap();
        assert!(line.contains(r#""device_ordinal":2"#), "{line}");
        assert_eq!(
            Record::from_json_line(&line).unwrap().device_ordinal,
            Some(2)
        );
        assert_eq!(
            on_two.key(),
            plain.key(),
            "a resumed run may use another GPU"
        );
    }

    #[test]
    fn point_keys_name_their_fields_and_ignore_only_the_default_flags() {
        let r = sample();
        let key: serde_json::Value = serde_json::from_str(&r.key()).unwrap();
        assert_eq!(key["workload"], "sum");
        assert_eq!(key["size"], 1 << 20);
        assert_eq!(key["backend"]["threads"], 4);
        assert!(key.get("flags").is_none());
        let mut f = r.clone();
        f.flags = Some(DEFAULT_FLAGS.into());
        assert_eq!(f.key(), r.key());
        f.flags = Some("strict".into());
        assert_ne!(f.key(), r.key());
        // Separators inside values cannot make two points collide.
        let mut a = r.clone();
        a.input = "x|1".into();
        a.device = "d".into();
        let mut b = r.clone();
        b.input = "x".into();
        b.device = "1|d".into();
        assert_ne!(a.key(), b.key());
        assert!(!Record::current_git_revision().is_empty());
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
}
