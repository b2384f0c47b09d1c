//! `mantissa merge`: the shard stores of one run (`STEM.shard-I-of-N.jsonl`, from `--shard I/N`)
//! joined into the store a single process would have written (`STEM.jsonl`), in plan order.
//!
//! Shards are merged only when they are provably parts of one run: every shard `0/N` … `N-1/N`
//! present exactly once, no whole-run store among them, and manifests that agree on the command,
//! every setting, the version and the git revision. Anything else is refused in one line naming
//! the shards and the field, because a report joined from two different runs would look whole
//! and be wrong.
//!
//! The merged lines lose their `shard` and `unit` header fields: the merged file is then the
//! same as a single-process run's (same shape, same order), so every reader, `--resume` and the
//! comparisons of the two treat it as one; which shards it came from is in its manifest
//! (`merged_shards`).

use std::collections::BTreeSet;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::manifest::Manifest;
use crate::record::RecordError;
use crate::shard::Shard;
use crate::store::{
    data_file, io_err, manifest_file, move_aside, open_locked, read_lines, write_atomically,
    StoreLine,
};

/// Why shards were not merged; every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A file could not be read or written, or is being written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The stores are not the shards of one run.
    #[error("{0}")]
    Refused(String),
}

/// One shard's store file as found in a directory.
#[derive(Debug, Clone)]
pub struct ShardFile {
    /// The shard.
    pub shard: Shard,
    /// Its data file.
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

/// What a merge wrote.
#[derive(Debug)]
pub struct Merged<L> {
    /// The merged lines, in plan order, without shard and unit.
    pub lines: Vec<L>,
    /// The merged store file (`OUT/STEM.jsonl`).
    pub path: PathBuf,
    /// Its manifest: the shards' without a shard, with `merged_shards`.
    pub manifest: Manifest,
    /// The shards merged, in shard order.
    pub shards: Vec<ShardFile>,
    /// Where an earlier whole-run store in OUT was moved, if there was one.
    pub moved_aside: Option<PathBuf>,
    /// What a reader should know: torn or skipped lines, units without a record.
    pub notes: Vec<String>,
}

/// The shard data files of `L`'s store in `dir`, by file name (`STEM.shard-I-of-N.jsonl`).
pub fn shard_files<L: StoreLine>(dir: &Path) -> Result<Vec<(Shard, PathBuf)>, MergeError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            MergeError::Refused(format!("{}: no such directory", dir.display()))
        } else {
            io_err(dir)(e).into()
        }
    })?;
    let prefix = format!("{}.", L::STEM);
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let tag = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".jsonl"));
        if let Some(shard) = tag.and_then(Shard::from_file_tag) {
            found.push((shard, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// Merges the shard stores of `L` in `dirs` into `out/STEM.jsonl` (see the module's doc).
pub fn merge<L: StoreLine>(dirs: &[PathBuf], out: &Path) -> Result<Merged<L>, MergeError> {
    let dirs = distinct(dirs);
    let mut found = Vec::new();
    for dir in &dirs {
        found.extend(shard_files::<L>(dir)?.into_iter().map(|f| (dir, f)));
    }
    let places = || list(dirs.iter().map(|d| d.display().to_string()));
    if found.is_empty() {
        return Err(MergeError::Refused(format!(
            "no shard stores ({}) in {}: run the command with --shard I/N first",
            data_file::<L>(Some(Shard::ONE)).replace("shard-0-of-1", "shard-I-of-N"),
            places()
        )));
    }
    for dir in &dirs {
        refuse_a_whole_run::<L>(dir)?;
    }
    // Shared locks until the merge is written: a shard still being written is refused, and
    // none can start while its lines are read.
    let mut shards = Vec::new();
    let mut locks = Vec::new();
    for (dir, (shard, path)) in found {
        locks.push(lock_shared(&path)?);
        let manifest_path = dir.join(manifest_file::<L>(Some(shard)));
        let manifest = Manifest::read(&manifest_path)?.ok_or_else(|| {
            MergeError::Refused(format!(
                "{} has no manifest {}: it was not written by a --shard run of this version, so it cannot be checked against the other shards",
                path.display(),
                manifest_path.display()
            ))
        })?;
        if manifest.shard != Some(shard) {
            return Err(MergeError::Refused(format!(
                "{} says it is shard {}, but its file name says {shard}",
                manifest_path.display(),
                manifest.shard.map_or("none".into(), |s| s.to_string())
            )));
        }
        shards.push(ShardFile {
            shard,
            path,
            manifest,
        });
    }
    // Shard order (stable: a shard found twice keeps the order of the directories given).
    shards.sort_by_key(|s| s.shard);
    check_one_run(&shards, &places())?;
    let (lines, notes) = read_in_plan_order::<L>(&shards)?;
    let (path, manifest, moved_aside) = write_merged(&lines, &shards, out)?;
    drop(locks);
    Ok(Merged {
        lines,
        path,
        manifest,
        shards,
        moved_aside,
        notes,
    })
}

/// `dirs` without repeats (the same directory given twice is one directory, not two copies of
/// every shard), in the order given.
fn distinct(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut seen = BTreeSet::new();
    dirs.iter()
        .filter(|d| seen.insert(d.canonicalize().unwrap_or_else(|_| d.to_path_buf())))
        .cloned()
        .collect()
}

/// `a`, `a and b`, `a, b and c`.
fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.join(""),
    }
}

/// Refuses a directory that holds a whole run's store beside shards: the two would be joined
/// into a report that counts some work twice. A store an earlier merge wrote is not a run.
fn refuse_a_whole_run<L: StoreLine>(dir: &Path) -> Result<(), MergeError> {
    let whole = dir.join(data_file::<L>(None));
    if whole.metadata().map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    let manifest = Manifest::read(&dir.join(manifest_file::<L>(None)))?;
    if manifest.is_some_and(|m| m.merged_shards.is_some()) {
        return Ok(());
    }
    Err(MergeError::Refused(format!(
        "cannot merge a mix of sharded and unsharded stores: {} is a whole run's store; move it away or give only the shards' directories",
        whole.display()
    )))
}

/// A shared lock on a shard's file for reading it; a writer's lock is a refusal.
fn lock_shared(path: &Path) -> Result<File, MergeError> {
    let file = File::open(path).map_err(io_err(path))?;
    match file.try_lock_shared() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(RecordError::Locked {
            path: path.to_path_buf(),
        }
        .into()),
        // A file system without locks: nothing to be refused by.
        Err(TryLockError::Error(_)) => Ok(file),
    }
}

/// Every shard of one split, once each, with manifests that agree.
fn check_one_run(shards: &[ShardFile], places: &str) -> Result<(), MergeError> {
    let first = &shards[0];
    let name = |s: &ShardFile| format!("{} ({})", s.shard, s.path.display());
    for s in &shards[1..] {
        if s.shard.count() != first.shard.count() {
            return Err(MergeError::Refused(format!(
                "shards {} and {} split the run differently: {} shards vs {}",
                name(first),
                name(s),
                first.shard.count(),
                s.shard.count()
            )));
        }
    }
    for pair in shards.windows(2) {
        if pair[0].shard == pair[1].shard {
            return Err(MergeError::Refused(format!(
                "shard {} appears twice: {} and {}",
                pair[0].shard,
                pair[0].path.display(),
                pair[1].path.display()
            )));
        }
    }
    for s in &shards[1..] {
        if let Some((field, a, b)) = first.manifest.difference(&s.manifest) {
            return Err(MergeError::Refused(format!(
                "shards {} and {} differ in {field}: {a} vs {b}",
                name(first),
                name(s)
            )));
        }
    }
    let n = first.shard.count();
    let missing: Vec<String> = (0..n)
        .filter(|&i| !shards.iter().any(|s| s.shard.index() == i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    match missing.len() {
        0 => Ok(()),
        1 => Err(MergeError::Refused(format!(
            "shard {} is missing in {places}",
            missing[0]
        ))),
        _ => Err(MergeError::Refused(format!(
            "shards {} are missing in {places}",
            list(missing.into_iter())
        ))),
    }
}

/// Every shard's lines, checked to be its own, in plan (unit) order without shard and unit,
/// and what a reader should know about them.
fn read_in_plan_order<L: StoreLine>(
    shards: &[ShardFile],
) -> Result<(Vec<L>, Vec<String>), MergeError> {
    let mut units = Vec::new();
    let mut notes = Vec::new();
    for s in shards {
        let (lines, read) = read_lines::<L>(&s.path)?;
        if read.truncated_tail {
            notes.push(format!(
                "{}: its last line is torn (the shard was killed while writing it); run the shard again with --resume, then merge again",
                s.path.display()
            ));
        }
        if !read.skipped.is_empty() {
            notes.push(format!(
                "{}: lines {} are not records and were left out",
                s.path.display(),
                read.skipped_lines(5)
            ));
        }
        for mut line in lines {
            let place = line.place();
            match place {
                Some(p) if p.shard == s.shard && s.shard.owns(p.unit) => {}
                _ => {
                    let what = place.map_or("no shard and unit".into(), |p| {
                        format!("shard {} unit {}", p.shard, p.unit)
                    });
                    return Err(MergeError::Refused(format!(
                        "{} holds a line with {what}, which is not shard {}'s: the file was edited or copied; run the shard again",
                        s.path.display(),
                        s.shard
                    )));
                }
            }
            let unit = place.map_or(0, |p| p.unit);
            line.set_place(None);
            units.push((unit, line));
        }
    }
    // Stable: the lines of one unit (a mathlib function's columns) keep their order.
    units.sort_by_key(|(unit, _)| *unit);
    if let Some(total) = shards[0].manifest.units {
        let have: BTreeSet<u64> = units.iter().map(|(u, _)| *u).collect();
        let lacking: Vec<String> = shards
            .iter()
            .filter(|s| (0..total).any(|u| s.shard.owns(u) && !have.contains(&u)))
            .map(|s| s.shard.to_string())
            .collect();
        if !lacking.is_empty() {
            notes.push(format!(
                "{} of the run's {total} units have no record (shards {} did not finish): run them again with --resume, then merge again",
                total - have.len() as u64,
                lacking.join(", ")
            ));
        }
    }
    Ok((units.into_iter().map(|(_, l)| l).collect(), notes))
}

/// Writes the merged lines to `out/STEM.jsonl` (atomically) and its manifest; an earlier
/// whole-run store there is moved aside, an earlier merge's replaced.
fn write_merged<L: StoreLine>(
    lines: &[L],
    shards: &[ShardFile],
    out: &Path,
) -> Result<(PathBuf, Manifest, Option<PathBuf>), MergeError> {
    mantissa_files::ensure_dir(out).map_err(RecordError::from)?;
    let path = out.join(data_file::<L>(None));
    let manifest_path = out.join(manifest_file::<L>(None));
    let mut moved_aside = None;
    // The writer's lock on the old file, held until it is replaced: a run still writing it is
    // refused.
    let (old, _) = open_locked(&path)?;
    let old_len = old.metadata().map_err(io_err(&path))?.len();
    let old_was_merge = Manifest::read(&manifest_path)?.is_some_and(|m| m.merged_shards.is_some());
    if old_len > 0 && !old_was_merge {
        moved_aside = Some(move_aside(out, &path, &manifest_path)?);
    }
    let mut text = String::new();
    for line in lines {
        text += &serde_json::to_string(line).map_err(|e| RecordError::Io {
            path: path.clone(),
            cause: std::io::Error::other(e),
        })?;
        text.push('\n');
    }
    write_atomically(&path, text.as_bytes())?;
    let mut manifest = shards[0].manifest.clone();
    manifest.shard = None;
    manifest.merged_shards = Some(shards[0].shard.count());
    manifest.write(&manifest_path)?;
    drop(old);
    Ok((path, manifest, moved_aside))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::sample;
    use crate::record::{read_records, Record, ResultsLog};
    use crate::store::{Store, StoreOptions};
    use std::collections::BTreeMap;

    const UNITS: u64 = 10;

    fn manifest() -> Manifest {
        let settings = BTreeMap::from([("sizes".to_string(), "1024".to_string())]);
        Manifest::new("study", settings).with_units(UNITS)
    }

    /// Runs shards `shards` (each `I/N`) of a made-up plan of `UNITS` points into `dir`: unit u
    /// is a point of size u.
    fn run_shards(dir: &Path, shards: &[&str], m: &Manifest) {
        for s in shards {
            let shard: Shard = s.parse().unwrap();
            let options = StoreOptions {
                resume: false,
                shard: Some(shard),
                manifest: Some(m.clone()),
            };
            let mut store: Store<Record> = Store::open_with(dir, options).unwrap();
            for unit in (0..UNITS).filter(|&u| shard.owns(u)) {
                let mut r = sample();
                r.size = unit;
                store.append_unit([r], unit).unwrap();
            }
        }
    }

    fn refusal(dirs: &[&Path]) -> String {
        let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
        let e = merge::<Record>(&dirs, &dirs[0]).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn shards_merge_into_one_store_in_plan_order_without_their_place() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // Shards in two directories, found in any order.
        run_shards(a.path(), &["2/3", "0/3"], &manifest());
        run_shards(b.path(), &["1/3"], &manifest());
        let out = tempfile::tempdir().unwrap();
        let dirs = [a.path().to_path_buf(), b.path().to_path_buf()];
        let merged = merge::<Record>(&dirs, out.path()).unwrap();
        assert_eq!(merged.path, out.path().join("results.jsonl"));
        assert!(merged.notes.is_empty(), "{:?}", merged.notes);
        let (records, _) = read_records(&merged.path).unwrap();
        let sizes: Vec<u64> = records.iter().map(|r| r.size).collect();
        assert_eq!(sizes, (0..UNITS).collect::<Vec<_>>());
        assert!(records
            .iter()
            .all(|r| r.shard.is_none() && r.unit.is_none()));
        let text = std::fs::read_to_string(&merged.path).unwrap();
        assert!(!text.contains("\"shard\"") && !text.contains("\"unit\""));
        let m = Manifest::read(&out.path().join("store.json"))
            .unwrap()
            .unwrap();
        assert_eq!((m.shard, m.merged_shards), (None, Some(3)));
        assert_eq!(m.settings, manifest().settings);
        let order: Vec<String> = merged.shards.iter().map(|s| s.shard.to_string()).collect();
        assert_eq!(order, ["0/3", "1/3", "2/3"]);

        // Merging again into the shards' own directory: the merged store there is not a run.
        let again = merge::<Record>(&[a.path().into(), b.path().into()], a.path()).unwrap();
        assert!(again.moved_aside.is_none());
        let again = merge::<Record>(&[a.path().into(), b.path().into()], a.path()).unwrap();
        assert!(again.moved_aside.is_none(), "an earlier merge is replaced");
        assert_eq!(read_records(&again.path).unwrap().0.len(), UNITS as usize);
        // A whole run's store in OUT is moved aside, not overwritten.
        let out2 = tempfile::tempdir().unwrap();
        let mut whole = ResultsLog::open(out2.path(), false).unwrap();
        whole.append(&sample()).unwrap();
        drop(whole);
        let m = merge::<Record>(&[a.path().into(), b.path().into()], out2.path()).unwrap();
        let aside = m.moved_aside.expect("moved aside");
        assert_eq!(read_records(&aside).unwrap().0.len(), 1);
    }

    #[test]
    fn a_missing_a_duplicated_or_a_differently_split_shard_is_refused() {
        let a = tempfile::tempdir().unwrap();
        run_shards(a.path(), &["0/4", "1/4", "3/4"], &manifest());
        let e = refusal(&[a.path()]);
        assert_eq!(e, format!("shard 2/4 is missing in {}", a.path().display()));
        std::fs::remove_file(a.path().join("results.shard-3-of-4.jsonl")).unwrap();
        assert!(refusal(&[a.path()]).starts_with("shards 2/4 and 3/4 are missing in"));

        let b = tempfile::tempdir().unwrap();
        run_shards(b.path(), &["1/4", "2/4", "3/4"], &manifest());
        let e = refusal(&[a.path(), b.path()]);
        assert!(e.starts_with("shard 1/4 appears twice: "), "{e}");
        // The same directory twice is one directory.
        assert!(merge::<Record>(&[b.path().into(), b.path().into()], b.path()).is_err());
        let e = refusal(&[b.path(), b.path()]);
        assert!(e.starts_with("shard 0/4 is missing"), "{e}");

        let c = tempfile::tempdir().unwrap();
        run_shards(c.path(), &["0/4", "1/3"], &manifest());
        let e = refusal(&[c.path()]);
        assert!(
            e.contains("split the run differently: 4 shards vs 3"),
            "{e}"
        );
    }

    #[test]
    fn shards_of_other_settings_versions_or_revisions_are_refused_naming_the_field() {
        type Change = fn(&mut Manifest);
        let cases: [(&str, Change); 4] = [
            ("settings.sizes: 1024 vs 2048", |m| {
                m.settings.insert("sizes".into(), "2048".into());
            }),
            ("command: study vs mathlib", |m| {
                m.command = "mathlib".into()
            }),
            ("version: 0.1.0 vs 9.9.9", |m| m.version = "9.9.9".into()),
            ("git_revision: ", |m| m.git_revision = "other".into()),
        ];
        for (says, change) in cases {
            let dir = tempfile::tempdir().unwrap();
            let mut other = manifest();
            change(&mut other);
            run_shards(dir.path(), &["0/2"], &manifest());
            run_shards(dir.path(), &["1/2"], &other);
            let e = refusal(&[dir.path()]);
            let names = format!(
                "shards 0/2 ({}) and 1/2 ({}) differ in ",
                dir.path().join("results.shard-0-of-2.jsonl").display(),
                dir.path().join("results.shard-1-of-2.jsonl").display()
            );
            assert!(e.starts_with(&names), "{e}");
            let field = says.replace("0.1.0", &Record::current_version());
            assert!(e.contains(&field), "{e} lacks {field}");
        }
    }

    #[test]
    fn a_mix_a_shard_being_written_or_a_shard_without_manifest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            refusal(&[dir.path()]).starts_with("no shard stores (results.shard-I-of-N.jsonl) in")
        );
        run_shards(dir.path(), &["0/2", "1/2"], &manifest());
        // A whole run beside the shards.
        let mut whole = ResultsLog::open(dir.path(), false).unwrap();
        whole.append(&sample()).unwrap();
        drop(whole);
        let e = refusal(&[dir.path()]);
        assert!(
            e.starts_with("cannot merge a mix of sharded and unsharded stores: "),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("results.jsonl")).unwrap();
        // A shard still running.
        let options = StoreOptions {
            resume: true,
            shard: Some("1/2".parse().unwrap()),
            manifest: Some(manifest()),
        };
        let writing: Store<Record> = Store::open_with(dir.path(), options).unwrap();
        let e = refusal(&[dir.path()]);
        assert!(
            e.ends_with("results.shard-1-of-2.jsonl is being written by another mantissa process"),
            "{e}"
        );
        drop(writing);
        assert!(merge::<Record>(&[dir.path().into()], dir.path()).is_ok());
        // A shard file without its manifest.
        std::fs::remove_file(dir.path().join("store.shard-0-of-2.json")).unwrap();
        assert!(refusal(&[dir.path()]).contains("has no manifest"));
        let e = refusal(&[&dir.path().join("nope")]);
        assert!(e.ends_with("nope: no such directory"), "{e}");
    }

    #[test]
    fn an_unfinished_shard_and_a_torn_line_are_noted() {
        let dir = tempfile::tempdir().unwrap();
        run_shards(dir.path(), &["0/2", "1/2"], &manifest());
        let path = dir.path().join("results.shard-1-of-2.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        // Keep two whole lines and half of the third: the shard was killed.
        let cut: usize = text.lines().take(2).map(|l| l.len() + 1).sum::<usize>() + 20;
        std::fs::write(&path, &text[..cut]).unwrap();
        let merged = merge::<Record>(&[dir.path().into()], dir.path()).unwrap();
        assert_eq!(merged.lines.len(), 7);
        assert_eq!(merged.notes.len(), 2, "{:?}", merged.notes);
        assert!(merged.notes[0].contains("torn"), "{:?}", merged.notes);
        assert!(
            merged.notes[1]
                .starts_with("3 of the run's 10 units have no record (shards 1/2 did not finish)"),
            "{:?}",
            merged.notes
        );
        // A line of another shard in a shard's file.
        let other = std::fs::read_to_string(dir.path().join("results.shard-0-of-2.jsonl")).unwrap();
        std::fs::write(&path, other).unwrap();
        let e = refusal(&[dir.path()]);
        assert!(
            e.contains("holds a line with shard 0/2 unit 0, which is not shard 1/2's"),
            "{e}"
        );
    }
}
