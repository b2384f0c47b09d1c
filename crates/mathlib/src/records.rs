//! `OUT/mathlib.jsonl`: one line per measured column, appended (and synced) as each function
//! finishes through the one results store ([`mantissa_report::Store`]: the writer's lock,
//! move-aside, torn-line recovery, per-shard files `mathlib.shard-I-of-N.jsonl`), so an
//! interrupted run keeps what it measured and a rerun resumes: functions whose records match the
//! plan (same device, budget and sample) are read back instead of measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mantissa_report::store::{data_file, read_lines, ReadNotes};
use mantissa_report::{Manifest, Place, RecordError, Shard, Store, StoreLine, StoreOptions};
use serde::{Deserialize, Serialize};

use crate::format::Format;
use crate::functions::Function;
use crate::measure::{Column, Measurement, Plan};
use crate::MathlibError;

/// File name of the records inside the output directory (a whole run's; a shard's is
/// `mathlib.shard-I-of-N.jsonl`).
pub const RECORDS_FILE: &str = "mathlib.jsonl";

/// The record format's version. Schema 1 lacked the store's common header (git revision,
/// date, shard, unit) and named the version `mantissa`; its lines read with those absent.
pub const SCHEMA: u32 = 2;

/// Where and how a measurement was taken: what decides whether an old record can stand in
/// for a new measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// The GPU's name, None when measured without one.
    pub device: Option<String>,
    /// The driver's CUDA version (e.g. "13.0"), when there is a GPU.
    pub driver: Option<String>,
    /// The CPU libraries as described by `CpuLibrary::describe`.
    pub cpu: Vec<String>,
    /// The search budget per function and format, seconds.
    pub budget_s: f64,
    /// The binary32 CPU sample size.
    pub cpu_sample: u64,
    /// The random seed.
    pub seed: u64,
}

/// One line of `mathlib.jsonl`: the store's common header, then the setting and the column.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// [`SCHEMA`] (1 for a line written before the common header).
    pub schema: u32,
    /// mantissa's version (`mantissa` in schema-1 lines).
    #[serde(alias = "mantissa")]
    pub version: String,
    /// mantissa's git revision (see `mantissa_report::Record::git_revision`); `unknown` in
    /// schema-1 lines.
    #[serde(default = "unknown")]
    pub git_revision: String,
    /// When the function finished, UTC, RFC 3339; empty in schema-1 lines.
    #[serde(default)]
    pub date: String,
    /// The shard of a sharded run (`--shard I/N`) that measured it; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Its work unit, the (function, format) pair's place in the plan (formats outer, functions
    /// inner), written by a sharded run so that `mantissa merge` restores plan order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<u64>,
    /// The CUDA ordinal of the GPU that measured it, when the run used several GPUs or one
    /// other than GPU 0; absent otherwise and in older lines. Not part of the setting: a
    /// resumed run may measure on any GPU of the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ordinal: Option<u32>,
    /// The setting.
    pub setting: Setting,
    /// The measurement.
    pub measurement: Measurement,
}

fn unknown() -> String {
    "unknown".into()
}

impl Record {
    /// A record of `measurement` under `setting`, by this build, now.
    pub fn new(setting: &Setting, measurement: Measurement) -> Record {
        Record {
            schema: SCHEMA,
            version: mantissa_report::Record::current_version(),
            git_revision: mantissa_report::Record::current_git_revision(),
            date: mantissa_report::Record::now(),
            shard: None,
            unit: None,
            device_ordinal: None,
            setting: setting.clone(),
            measurement,
        }
    }
}

/// What identifies a line: the column of a function in a format.
#[derive(Serialize)]
struct Key<'a> {
    function: Function,
    format: Format,
    column: &'a Column,
}

impl StoreLine for Record {
    const STEM: &'static str = "mathlib";
    const MANIFEST_STEM: &'static str = "mathlib.store";

    fn key(&self) -> String {
        let m = &self.measurement;
        let key = Key {
            function: m.function,
            format: m.format,
            column: &m.column,
        };
        serde_json::to_string(&key).expect("plain enums always serialise")
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
}

/// The records file of an output directory (a whole run's).
pub fn records_path(out: &Path) -> PathBuf {
    out.join(RECORDS_FILE)
}

/// The store of `plan` run under `setting` in `out` (shard `shard`, if given): with `resume`
/// its records are kept (and a file of another plan or setting is refused), without it an
/// existing file is moved aside. Its manifest holds the plan and the setting.
pub fn open(
    out: &Path,
    resume: bool,
    shard: Option<Shard>,
    plan: &Plan,
    setting: &Setting,
) -> Result<Store<Record>, MathlibError> {
    let options = StoreOptions {
        resume,
        shard,
        manifest: Some(Manifest::new("mathlib", settings(plan, setting))),
    };
    Ok(Store::open_with(out, options)?)
}

/// What decides a mathlib run's units and their values, for its store's manifest: the plan's
/// lists and the setting, each as text.
pub fn settings(plan: &Plan, setting: &Setting) -> BTreeMap<String, String> {
    let list = |names: Vec<&str>| names.join(",");
    let mut map = BTreeMap::from([
        (
            "functions".to_string(),
            list(plan.functions.iter().map(|f| f.name()).collect()),
        ),
        (
            "precisions".to_string(),
            list(plan.formats.iter().map(|f| f.name()).collect()),
        ),
        (
            "variants".to_string(),
            list(plan.variants.iter().map(|v| v.name()).collect()),
        ),
    ]);
    let serde_json::Value::Object(fields) =
        serde_json::to_value(setting).expect("a setting always serialises")
    else {
        unreachable!("a struct serialises as an object")
    };
    for (name, value) in fields {
        let text = match value {
            serde_json::Value::String(s) => s,
            serde_json::Value::Null => "none".into(),
            other => other.to_string(),
        };
        map.insert(name, text);
    }
    map
}

/// Every record of the store file `path` (none when it does not exist), with what reading
/// found: a truncated last line (a run killed mid-write) or damaged lines are skipped and
/// noted; a file of no record at all is an error naming its first line.
pub fn read(path: &Path) -> Result<(Vec<Record>, ReadNotes), MathlibError> {
    match read_lines(path) {
        Err(RecordError::Missing { .. }) => Ok((Vec::new(), ReadNotes::default())),
        other => Ok(other?),
    }
}

/// Every record of `out`'s whole-run file, `OUT/mathlib.jsonl` (see [`read`]).
pub fn read_records(out: &Path) -> Result<(Vec<Record>, ReadNotes), MathlibError> {
    read(&out.join(data_file::<Record>(None)))
}

/// The measurements of (`f`, `format`) already recorded under `setting`, if any.
pub fn recorded(
    records: &[Record],
    setting: &Setting,
    f: Function,
    format: Format,
) -> Vec<Measurement> {
    records
        .iter()
        // Schema 1 holds the same measurement, only a shorter header.
        .filter(|r| r.schema <= SCHEMA && &r.setting == setting)
        .map(|r| &r.measurement)
        .filter(|m| m.function == f && m.format == format)
        .cloned()
        .collect()
}
