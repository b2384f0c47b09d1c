//! [`Manifest`]: what a store file is a run of, beside it as `store.json` (or
//! `store.shard-I-of-N.json`), so that `--resume` and `mantissa merge` can tell whether two
//! files hold the same work without reading a line.
//!
//! The settings are everything that decides a run's work units and their values (for the study
//! its workloads, precisions, inputs, sizes, seed, suite, backends, thread counts; for mathlib
//! its plan and setting), as text: a resumed run or a shard whose settings differ would plan
//! other units, so its unit numbers and records would not fit the file's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::record::{Record, RecordError};
use crate::shard::Shard;

/// What a store file holds: the command and settings that planned it, and who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The command that wrote the file: `study`, `mathlib`.
    pub command: String,
    /// Every setting that decides the work units and their values, by name.
    pub settings: BTreeMap<String, String>,
    /// mantissa version of the writer.
    pub version: String,
    /// git revision of the writer (see [`Record::git_revision`]).
    pub git_revision: String,
    /// The shard the file holds; absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Work units in the whole plan, where every unit writes at least one line (the study's
    /// points); absent where a unit may write none (a mathlib function without a column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<u64>,
    /// Set on the file `mantissa merge` writes: how many shards it was merged from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<u32>,
}

impl Manifest {
    /// The manifest of a run of `command` with `settings`, by this build of mantissa, whole
    /// (the store sets the shard it opens).
    pub fn new(command: &str, settings: BTreeMap<String, String>) -> Manifest {
        Manifest {
            command: command.to_string(),
            settings,
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            shard: None,
            units: None,
            merged_shards: None,
        }
    }

    /// The same, saying how many work units the whole plan has.
    pub fn with_units(mut self, units: u64) -> Manifest {
        self.units = Some(units);
        self
    }

    /// The first way `other` plans other work than `self`: `(field, self's value, other's)`,
    /// the field as `command` or `settings.NAME` (a setting one side lacks reads `(none)`).
    pub fn work_difference(&self, other: &Manifest) -> Option<(String, String, String)> {
        if self.command != other.command {
            return Some((
                "command".into(),
                self.command.clone(),
                other.command.clone(),
            ));
        }
        let none = || "(none)".to_string();
        let names = self.settings.keys().chain(other.settings.keys());
        for name in names.collect::<std::collections::BTreeSet<_>>() {
            let (a, b) = (self.settings.get(name), other.settings.get(name));
            if a != b {
                return Some((
                    format!("settings.{name}"),
                    a.cloned().unwrap_or_else(none),
                    b.cloned().unwrap_or_else(none),
                ));
            }
        }
        if self.units != other.units {
            let show = |u: Option<u64>| u.map_or_else(none, |u| u.to_string());
            return Some(("units".into(), show(self.units), show(other.units)));
        }
        None
    }

    /// The first way `other` differs from `self` as a shard of the same run: the work, then
    /// the build that did it (`version`, `git_revision`).
    pub fn difference(&self, other: &Manifest) -> Option<(String, String, String)> {
        if let Some(d) = self.work_difference(other) {
            return Some(d);
        }
        if self.version != other.version {
            return Some((
                "version".into(),
                self.version.clone(),
                other.version.clone(),
            ));
        }
        if self.git_revision != other.git_revision {
            return Some((
                "git_revision".into(),
                self.git_revision.clone(),
                other.git_revision.clone(),
            ));
        }
        None
    }

    /// Reads a manifest file; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Manifest>, RecordError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(cause) => {
                return Err(RecordError::Io {
                    path: path.to_path_buf(),
                    cause,
                })
            }
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| RecordError::Parse {
                path: path.to_path_buf(),
                line: e.line(),
                message: format!("not a store manifest: {e}"),
            })
    }

    /// Writes the manifest to `path` atomically (readers never see half of it).
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        let mut text = serde_json::to_string_pretty(self)
            .expect("strings, numbers and a map of strings always serialise");
        text.push('\n');
        crate::store::write_atomically(path, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let settings = [("sizes", "1024"), ("seed", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Manifest::new("study", settings).with_units(12)
    }

    #[test]
    fn differences_name_the_first_field_that_differs() {
        let a = manifest();
        assert_eq!(a.difference(&a.clone()), None);
        let mut b = a.clone();
        b.settings.insert("sizes".into(), "2048".into());
        assert_eq!(
            a.difference(&b),
            Some(("settings.sizes".into(), "1024".into(), "2048".into()))
        );
        let mut c = a.clone();
        c.settings.remove("seed");
        assert_eq!(
            a.work_difference(&c),
            Some(("settings.seed".into(), "1".into(), "(none)".into()))
        );
        let mut d = a.clone();
        d.git_revision = "abc".into();
        assert_eq!(a.work_difference(&d), None, "a rebuild plans the same work");
        assert_eq!(a.difference(&d).unwrap().0, "git_revision");
        let mut e = a.clone();
        e.command = "mathlib".into();
        assert_eq!(a.difference(&e).unwrap().0, "command");
        let mut f = a.clone();
        f.units = Some(13);
        assert_eq!(a.difference(&f).unwrap().0, "units");
    }

    #[test]
    fn a_manifest_round_trips_and_a_shard_is_written_only_when_there_is_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        assert_eq!(Manifest::read(&path).unwrap(), None);
        let mut m = manifest();
        m.write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("shard"), "{text}");
        assert_eq!(Manifest::read(&path).unwrap(), Some(m.clone()));
        m.shard = Some(Shard::new(1, 4).unwrap());
        m.write(&path).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains(r#""shard": "1/4""#));
        assert_eq!(Manifest::read(&path).unwrap(), Some(m));
        std::fs::write(&path, "{").unwrap();
        let e = Manifest::read(&path).unwrap_err().to_string();
        assert!(e.contains("not a store manifest"), "{e}");
    }
}
