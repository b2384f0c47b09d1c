//! `OUT/mathlib.jsonl`: one line per measured column, appended (and synced) as each function
//! finishes, so an interrupted run keeps what it measured and a rerun resumes: functions whose
//! records match the plan (same device, budget and sample) are read back instead of measured.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::format::Format;
use crate::functions::Function;
use crate::measure::Measurement;
use crate::MathlibError;

/// File name of the records inside the output directory.
pub const RECORDS_FILE: &str = "mathlib.jsonl";

/// The record format's version.
pub const SCHEMA: u32 = 1;

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

/// One line of `mathlib.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// [`SCHEMA`].
    pub schema: u32,
    /// mantissa's version.
    pub mantissa: String,
    /// The setting.
    pub setting: Setting,
    /// The measurement.
    pub measurement: Measurement,
}

/// The records file of an output directory.
pub fn records_path(out: &Path) -> PathBuf {
    out.join(RECORDS_FILE)
}

/// Read every record of `out` (none when the file does not exist). A truncated last line (a
/// run killed mid-write) is skipped; any other bad line is an error naming it.
pub fn read_records(out: &Path) -> Result<Vec<Record>, MathlibError> {
    let path = records_path(out);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(MathlibError::Io(format!("{}: {e}", path.display()))),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(r) => out.push(r),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
            Err(e) => {
                return Err(MathlibError::Io(format!(
                    "{}:{}: not a mathlib record: {e}",
                    path.display(),
                    i + 1
                )))
            }
        }
    }
    Ok(out)
}

/// Append records (one write per line, synced before returning).
pub fn append_records(out: &Path, records: &[Record]) -> Result<(), MathlibError> {
    let path = records_path(out);
    let io = |e: std::io::Error| MathlibError::Io(format!("{}: {e}", path.display()));
    std::fs::create_dir_all(out).map_err(io)?;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    let mut text = String::new();
    for r in records {
        text += &serde_json::to_string(r).map_err(|e| MathlibError::Io(e.to_string()))?;
        text.push('\n');
    }
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_data().map_err(io)
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
        .filter(|r| r.schema == SCHEMA && &r.setting == setting)
        .map(|r| &r.measurement)
        .filter(|m| m.function == f && m.format == format)
        .cloned()
        .collect()
}

/// Get `out/mathlib.jsonl` ready before a run. With `resume`, keep it (dropping a partial last
/// line left by a killed run, so the next append starts on a line of its own); without, move
/// an existing file aside to `mathlib-<timestamp>.jsonl` (nothing is overwritten) and return
/// where it went.
pub fn prepare(out: &Path, resume: bool) -> Result<Option<PathBuf>, MathlibError> {
    let path = records_path(out);
    let io = |e: std::io::Error| MathlibError::Io(format!("{}: {e}", path.display()));
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(None);
    };
    if bytes.is_empty() {
        return Ok(None);
    }
    if resume {
        if !bytes.ends_with(b"\n") {
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let file = OpenOptions::new().write(true).open(&path).map_err(io)?;
            file.set_len(keep as u64).map_err(io)?;
        }
        return Ok(None);
    }
    let stamp = mantissa_report::record::Record::now().replace([':', '-'], "");
    let mut aside = out.join(format!("mathlib-{stamp}.jsonl"));
    let mut k = 1;
    while aside.exists() {
        aside = out.join(format!("mathlib-{stamp}-{k}.jsonl"));
        k += 1;
    }
    std::fs::rename(&path, &aside).map_err(io)?;
    Ok(Some(aside))
}
