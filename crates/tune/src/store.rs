//! The tuner's trials in the results store (`DIR/results.jsonl`, [`mantissa_report::ResultsLog`],
//! the one store every command writes): one record per measurement as it is made, so that a run
//! interrupted at any point and resumed (`--resume`) finds every finished trial and runs none of
//! them again.
//!
//! Records: `workload` the spec, `algorithm` `tune`, `input` the configuration
//! ([`config_key`]: unit indices as ranges, `0-3,7`), `precision` what was measured
//! (`accuracy`, `time`, the references `f64` and `all-f32`, and `units`, whose note is the
//! fingerprint of the unit list: indices only mean the same units in a run of the same program
//! with the same options, so a resume over another fingerprint is refused). Quantities are in
//! `extra`: `digits`, `within_tolerance` (1 or 0, absent without a tolerance), `time_ms`,
//! `noise_ms`, `reps`.
//!
//! A shard of a run (`--shard I/N`) writes `DIR/results.shard-I-of-N.jsonl` and its manifest
//! (`store.shard-I-of-N.json`: the settings that plan the run and the units' fingerprint, so
//! that `mantissa merge` joins only shards of one run and `--resume` refuses another run's
//! file). Every record of the shard carries unit I, the shard's first search: a trial belongs to
//! every search of the shard that meets it (it is run once), and the references and the
//! fingerprint to all of them, so no record has a search of its own.

use crate::noise::Time;
use crate::unit::Config;
use mantissa_report::{
    read_records, Backend, Manifest, Record, RecordError, ResultsLog, Shard, Status, StoreOptions,
    SCHEMA,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What is known of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Worst digits over the outputs against the f64 program.
    pub digits: f64,
    /// Every stated tolerance met (`None`: the spec states none).
    pub within_tolerance: Option<bool>,
    /// Its time, when timed.
    pub time: Option<Time>,
    /// The CUDA ordinal of the device that timed it (`None` when not timed): its speed-up is
    /// measured against that device's references.
    #[serde(default)]
    pub device: Option<u32>,
    /// Why it could not run.
    pub failed: Option<String>,
}

impl Measured {
    /// A configuration that could not run.
    pub fn failed(why: String) -> Measured {
        Measured {
            digits: f64::NEG_INFINITY,
            within_tolerance: None,
            time: None,
            device: None,
            failed: Some(why),
        }
    }
}

/// The runs of consecutive values of `sorted` (ascending): `0 1 2 3 7 9 10` is
/// `(0, 3), (7, 7), (9, 10)`; a repeated value joins its run.
pub fn runs(sorted: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for v in sorted {
        match out.last_mut() {
            Some((_, end)) if v <= *end + 1 => *end = (*end).max(v),
            _ => out.push((v, v)),
        }
    }
    out
}

/// `0-3,7,9-10`: the sorted unit indices as ranges.
pub fn config_key(config: &Config) -> String {
    let out: Vec<String> = runs(config.iter().map(|&u| u as u64))
        .into_iter()
        .map(|(start, end)| {
            if end == start {
                start.to_string()
            } else {
                format!("{start}-{end}")
            }
        })
        .collect();
    if out.is_empty() {
        "none".into()
    } else {
        out.join(",")
    }
}

/// The inverse of [`config_key`].
pub fn parse_config_key(key: &str) -> Option<Config> {
    if key == "none" {
        return Some(Config::new());
    }
    let mut c = Config::new();
    for part in key.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                c.extend(a..=b);
            }
            None => {
                c.insert(part.parse().ok()?);
            }
        }
    }
    Some(c)
}

/// Who measured: the fields every record of one run shares.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The spec's name.
    pub spec: String,
    /// The flag set's name.
    pub flags: String,
    /// The device's name.
    pub device: String,
    /// The first launch's shape.
    pub backend: Backend,
    /// Whether records name the device that timed them: with several devices, or one that is
    /// not GPU 0 (a record without one was timed on GPU 0).
    pub name_devices: bool,
}

/// The shard a store is of, and the settings that make two shards parts of one run
/// ([`crate::shard::settings`]).
#[derive(Debug, Clone)]
pub struct StoreShard {
    /// The shard.
    pub shard: Shard,
    /// The run's settings, for the manifest (the store adds the units' fingerprint).
    pub settings: BTreeMap<String, String>,
}

/// The manifest setting that holds the fingerprint of the unit list.
pub const FINGERPRINT_SETTING: &str = "unit-fingerprint";

/// The results store of one tuning run, and what it already held.
pub struct TrialStore {
    log: Option<ResultsLog>,
    /// The unit every record is written under: a shard's first search, 0 for a whole run.
    unit: u64,
    identity: Identity,
    known: HashMap<Config, Measured>,
    /// By (which, device ordinal).
    references: HashMap<(String, u32), (Time, f64)>,
    /// Records found in the store when it was opened.
    pub resumed: usize,
}

/// Why a store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing the file failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The store holds a tuning run of other units.
    #[error("{0}")]
    OtherRun(String),
}

const ALGORITHM: &str = "tune";

impl TrialStore {
    /// Opens `dir`'s store (none: nothing is kept) — `shard`'s own file, with its manifest, for
    /// a shard — checking on resume that it holds a run of the same units (`fingerprint`), and
    /// recording the fingerprint otherwise.
    pub fn open(
        dir: Option<&Path>,
        resume: bool,
        shard: Option<StoreShard>,
        identity: Identity,
        fingerprint: &str,
    ) -> Result<TrialStore, StoreError> {
        let mut store = TrialStore {
            log: None,
            unit: shard.as_ref().map_or(0, |s| u64::from(s.shard.index())),
            identity,
            known: HashMap::new(),
            references: HashMap::new(),
            resumed: 0,
        };
        let Some(dir) = dir else {
            return Ok(store);
        };
        let options = match shard {
            Some(StoreShard {
                shard,
                mut settings,
            }) => {
                settings.insert(FINGERPRINT_SETTING.into(), fingerprint.into());
                StoreOptions {
                    resume,
                    shard: Some(shard),
                    manifest: Some(Manifest::new(ALGORITHM, settings)),
                }
            }
            None => StoreOptions {
                resume,
                ..StoreOptions::default()
            },
        };
        let log = ResultsLog::open_with(dir, options)?;
        if resume && log.previous_records() > 0 {
            let (records, _) = read_records(log.path())?;
            store.load(&records, fingerprint, log.path())?;
        }
        store.log = Some(log);
        if store.resumed == 0 {
            store.append("units", "units", None, &[], Some(fingerprint.to_string()))?;
        }
        Ok(store)
    }

    fn load(
        &mut self,
        records: &[Record],
        fingerprint: &str,
        path: &Path,
    ) -> Result<(), StoreError> {
        let ours: Vec<&Record> = records
            .iter()
            .filter(|r| r.algorithm == ALGORITHM && r.workload == self.identity.spec)
            .collect();
        if ours.is_empty() {
            return Ok(());
        }
        let theirs = ours
            .iter()
            .find(|r| r.precision == "units")
            .and_then(|r| r.note.clone())
            .unwrap_or_default();
        if theirs != fingerprint {
            return Err(StoreError::OtherRun(format!(
                "{} holds a tuning run of other units (another build, spec or --max-fisets); give another --out or leave out --resume",
                path.display()
            )));
        }
        for r in ours {
            let get = |k: &str| r.extra.get(k).copied();
            let time = match (get("time_ms"), get("noise_ms"), get("reps")) {
                (Some(m), Some(n), Some(reps)) => Some(Time {
                    median_ms: m,
                    noise_ms: n,
                    reps: reps as usize,
                }),
                _ => None,
            };
            match r.precision.as_str() {
                "f64" | "all-f32" => {
                    if let Some(t) = time {
                        let d = get("digits").unwrap_or(f64::INFINITY);
                        let device = r.device_ordinal.unwrap_or(0);
                        self.references
                            .insert((r.precision.clone(), device), (t, d));
                    }
                }
                "accuracy" | "time" => {
                    let Some(config) = parse_config_key(&r.input) else {
                        continue;
                    };
                    let m = if r.status == Status::Failed {
                        Measured::failed(r.note.clone().unwrap_or_default())
                    } else {
                        Measured {
                            digits: get("digits").unwrap_or(f64::NEG_INFINITY),
                            within_tolerance: get("within_tolerance").map(|v| v != 0.0),
                            device: time.map(|_| r.device_ordinal.unwrap_or(0)),
                            time,
                            failed: None,
                        }
                    };
                    // A timed record supersedes the accuracy-only one of the same configuration.
                    if r.precision == "time" || !self.known.contains_key(&config) {
                        self.known.insert(config, m);
                    }
                }
                _ => {}
            }
            self.resumed += 1;
        }
        Ok(())
    }

    /// Every configuration measured in a resumed run.
    pub fn known(&self) -> &HashMap<Config, Measured> {
        &self.known
    }

    /// A reference time (`f64` or `all-f32`) of a resumed run on the device of ordinal `device`,
    /// with its digits.
    pub fn reference(&self, which: &str, device: u32) -> Option<(Time, f64)> {
        self.references.get(&(which.to_string(), device)).copied()
    }

    fn append(
        &mut self,
        input: &str,
        precision: &str,
        m: Option<&Measured>,
        more: &[(&str, f64, &str)],
        note: Option<String>,
    ) -> Result<(), StoreError> {
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        let mut q: Vec<(&str, f64, &str)> = more.to_vec();
        if let Some(m) = m {
            // +inf (every output bit-identical) is written as "inf" by the record's encoding.
            if m.failed.is_none() {
                q.push((
                    "digits",
                    m.digits,
                    "worst correct digits over the outputs, against the f64 program",
                ));
            }
            if let Some(w) = m.within_tolerance {
                q.push((
                    "within_tolerance",
                    f64::from(u8::from(w)),
                    "1: every output within the spec's tolerance",
                ));
            }
            if let Some(t) = m.time {
                q.push((
                    "time_ms",
                    t.median_ms,
                    "median time of the step sequence, ms",
                ));
                q.push(("noise_ms", t.noise_ms, "noise of that median, ms"));
                q.push(("reps", t.reps as f64, "timed repetitions"));
            }
        }
        let (extra, descriptions) = Record::quantities(&q);
        let failed = m.and_then(|m| m.failed.clone());
        let record = Record {
            schema: SCHEMA,
            workload: self.identity.spec.clone(),
            algorithm: ALGORITHM.into(),
            input: input.into(),
            size: 0,
            seed: 0,
            precision: precision.into(),
            backend: self.identity.backend,
            flags: Some(self.identity.flags.clone()),
            device: self.identity.device.clone(),
            device_ordinal: m
                .and_then(|m| m.device)
                .filter(|_| self.identity.name_devices),
            status: if failed.is_some() {
                Status::Failed
            } else {
                Status::Ok
            },
            value: m.filter(|m| m.failed.is_none()).map(|m| m.digits),
            reference: None,
            error: None,
            time: None,
            extra,
            descriptions,
            note: failed.or(note),
            build: None,
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: Record::now(),
            shard: None,
            unit: None,
        };
        log.append_unit([record], self.unit)?;
        Ok(())
    }

    /// Records an accuracy-only measurement.
    pub fn accuracy(&mut self, config: &Config, m: &Measured) -> Result<(), StoreError> {
        self.append(&config_key(config), "accuracy", Some(m), &[], None)
    }

    /// Records a timed measurement.
    pub fn timed(&mut self, config: &Config, m: &Measured) -> Result<(), StoreError> {
        self.append(&config_key(config), "time", Some(m), &[], None)
    }

    /// Records a reference time (`f64` or `all-f32`) taken on the device of ordinal `device`.
    pub fn reference_measured(
        &mut self,
        which: &str,
        device: u32,
        t: Time,
        digits: f64,
    ) -> Result<(), StoreError> {
        let m = Measured {
            digits,
            within_tolerance: None,
            time: Some(t),
            device: Some(device),
            failed: None,
        };
        self.append("reference", which, Some(&m), &[], None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_keys_are_ranges_and_read_back() {
        let c: Config = [0, 1, 2, 3, 7, 9, 10].into_iter().collect();
        assert_eq!(config_key(&c), "0-3,7,9-10");
        assert_eq!(parse_config_key("0-3,7,9-10"), Some(c));
        assert_eq!(config_key(&Config::new()), "none");
        assert_eq!(parse_config_key("none"), Some(Config::new()));
        assert_eq!(parse_config_key("3-1"), None);
        assert_eq!(parse_config_key("x"), None);
    }

    fn identity() -> Identity {
        Identity {
            spec: "axpy".into(),
            flags: "default".into(),
            device: "test".into(),
            backend: Backend::gpu(1, 1),
            name_devices: false,
        }
    }

    #[test]
    fn a_resumed_store_knows_every_trial_and_refuses_other_units() {
        let dir = std::env::temp_dir().join(format!("mantissa-tune-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a: Config = [0, 2].into_iter().collect();
        let b: Config = [1].into_iter().collect();
        let t = Time {
            median_ms: 2.0,
            noise_ms: 0.01,
            reps: 10,
        };
        {
            let mut s = TrialStore::open(Some(&dir), false, None, identity(), "fp1").unwrap();
            let m = Measured {
                digits: 5.5,
                within_tolerance: Some(true),
                time: None,
                device: None,
                failed: None,
            };
            s.accuracy(&a, &m).unwrap();
            let timed = Measured {
                time: Some(t),
                device: Some(0),
                ..m
            };
            s.timed(&a, &timed).unwrap();
            s.accuracy(&b, &Measured::failed("out of resources".into()))
                .unwrap();
            s.reference_measured("f64", 0, t, f64::INFINITY).unwrap();
            let same: Config = [4].into_iter().collect();
            let identical = Measured {
                digits: f64::INFINITY,
                within_tolerance: None,
                time: None,
                device: None,
                failed: None,
            };
            s.accuracy(&same, &identical).unwrap();
        }
        let s = TrialStore::open(Some(&dir), true, None, identity(), "fp1").unwrap();
        assert_eq!(s.known()[&a].time, Some(t));
        // One device, GPU 0: records name no device, and one without a device was GPU 0.
        assert_eq!(s.known()[&a].device, Some(0));
        assert_eq!(s.known()[&a].digits, 5.5);
        assert_eq!(s.known()[&a].within_tolerance, Some(true));
        assert_eq!(s.known()[&b].failed.as_deref(), Some("out of resources"));
        assert_eq!(s.reference("f64", 0).unwrap().0, t);
        assert_eq!(s.reference("f64", 0).unwrap().1, f64::INFINITY);
        assert_eq!(s.reference("f64", 1), None);
        let same: Config = [4].into_iter().collect();
        assert_eq!(s.known()[&same].digits, f64::INFINITY);
        // One writer per file: the store above is closed before the file is opened again.
        drop(s);
        let other = TrialStore::open(Some(&dir), true, None, identity(), "fp2");
        assert!(matches!(other, Err(StoreError::OtherRun(_))));
        // Without --resume the old file is moved aside and nothing is known.
        let fresh = TrialStore::open(Some(&dir), false, None, identity(), "fp2").unwrap();
        assert!(fresh.known().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn with_several_devices_every_time_names_its_device_and_reads_back_with_it() {
        let dir =
            std::env::temp_dir().join(format!("mantissa-tune-devices-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let several = Identity {
            name_devices: true,
            ..identity()
        };
        let t = |ms: f64| Time {
            median_ms: ms,
            noise_ms: 0.01,
            reps: 10,
        };
        let (a, b): (Config, Config) = ([0].into_iter().collect(), [1].into_iter().collect());
        {
            let mut s = TrialStore::open(Some(&dir), false, None, several.clone(), "fp").unwrap();
            for (device, ms) in [(0, 2.0), (1, 2.2)] {
                s.reference_measured("f64", device, t(ms), f64::INFINITY)
                    .unwrap();
            }
            let on = |device: u32, ms: f64| Measured {
                digits: 7.0,
                within_tolerance: None,
                time: Some(t(ms)),
                device: Some(device),
                failed: None,
            };
            s.timed(&a, &on(0, 1.5)).unwrap();
            s.timed(&b, &on(1, 1.6)).unwrap();
        }
        let text = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
        assert_eq!(text.matches(r#""device_ordinal":1"#).count(), 2, "{text}");
        assert_eq!(text.matches(r#""device_ordinal":0"#).count(), 2, "{text}");
        let s = TrialStore::open(Some(&dir), true, None, several, "fp").unwrap();
        assert_eq!(s.reference("f64", 0).unwrap().0, t(2.0));
        assert_eq!(s.reference("f64", 1).unwrap().0, t(2.2));
        assert_eq!(s.known()[&a].device, Some(0));
        assert_eq!(s.known()[&b].device, Some(1));
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_shard_keeps_its_own_file_and_manifest_and_resumes_only_its_own_run() {
        let dir =
            std::env::temp_dir().join(format!("mantissa-tune-shard-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let shard: Shard = "1/3".parse().unwrap();
        let open = |resume: bool, digits: &str, fp: &str| {
            let settings = BTreeMap::from([("errors".to_string(), digits.to_string())]);
            TrialStore::open(
                Some(&dir),
                resume,
                Some(StoreShard { shard, settings }),
                identity(),
                fp,
            )
        };
        let a: Config = [0, 2].into_iter().collect();
        let m = Measured {
            digits: 4.0,
            within_tolerance: None,
            time: None,
            device: None,
            failed: None,
        };
        open(false, "3", "fp1").unwrap().accuracy(&a, &m).unwrap();
        assert!(!dir.join(mantissa_report::RESULTS_FILE).exists());
        let (records, _) = read_records(&dir.join("results.shard-1-of-3.jsonl")).unwrap();
        assert_eq!(records.len(), 2, "the units record and the trial");
        // Every record is placed at the shard's first unit, which the shard owns.
        for r in &records {
            let place = mantissa_report::StoreLine::place(r).unwrap();
            assert_eq!((place.shard, place.unit), (shard, 1));
        }
        let manifest = Manifest::read(&dir.join("store.shard-1-of-3.json"))
            .unwrap()
            .unwrap();
        assert_eq!(manifest.command, "tune");
        assert_eq!(manifest.settings[FINGERPRINT_SETTING], "fp1");
        assert_eq!(manifest.settings["errors"], "3");
        // Resumed with the same settings it knows the trial; with others it is refused.
        assert_eq!(open(true, "3", "fp1").unwrap().known()[&a], m);
        let e = open(true, "4", "fp1").err().unwrap().to_string();
        assert!(
            e.contains("settings.errors = 3") && !e.contains('\n'),
            "{e}"
        );
        let e = open(true, "3", "fp2").err().unwrap().to_string();
        assert!(e.contains("settings.unit-fingerprint = fp1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
