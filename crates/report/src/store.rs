//! [`Store`]: the one results store. Every analysis that keeps records (the study's points,
//! mathlib's columns, shadow sites, tuning trials, diff causes, run outputs) writes them through
//! it, one JSON line per record, and reads them back with [`read_lines`].
//!
//! Its invariants:
//! - **one writer per file**: the writer holds an exclusive lock on the file from open to drop,
//!   and a second `mantissa` that opens the same file is refused at once;
//! - **append-only**: a line, once written (one `write` call, then fsync), is never rewritten;
//!   the only change to earlier bytes is cutting a torn last line (a killed writer's) on resume,
//!   and a fresh run moves an old file aside instead of overwriting it;
//! - **self-describing lines**: every line carries a common header (schema, mantissa version,
//!   git revision, date, and for a sharded run its shard and work unit), so a line means the
//!   same wherever it is copied;
//! - **per-shard files**: shard `I/N` writes `STEM.shard-I-of-N.jsonl`, so every shard of a job
//!   array can share one directory; `mantissa merge` ([`crate::merge`]) joins them;
//! - a [`Manifest`] per file (`store.json`, `store.shard-I-of-N.json`) says which command and
//!   settings planned it; a resumed run with other settings is refused.
//!
//! The details. A second writer fails at once with `DIR/results.jsonl is being written by another
//! mantissa process`, before anything is moved aside; `mantissa merge` takes shared locks, so it
//! refuses a shard still being written; on a file system that cannot lock at all the run goes on,
//! and `Store::unlocked` says why. A unit's lines (a mathlib function's columns) go in one `write`.
//! Device and build facts stay in each analysis's body, not in the header. Old lines (study schema
//! 1, mathlib schema 1 with `mantissa` for the version) read with the absent fields at their
//! defaults. The manifest is written atomically at open and holds the command, every setting that
//! decides the work units, the version, the git revision, the shard and the plan's unit count; the
//! commands that add to a file shared by many analyses (`shadow`, `diff`, `run`, and `tune` without
//! `--shard`) open it with none (`Store::open`), and a tuning run checks its own fingerprint
//! instead (in a shard's manifest, `settings.unit-fingerprint`).

use std::collections::HashSet;
use std::fs::{File, TryLockError};
use std::io::{self, BufRead, BufReader, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::manifest::Manifest;
use crate::record::{Record, RecordError};
use crate::shard::Shard;

/// Where a line of a sharded run belongs: its shard, and its work unit's 0-based place in the
/// whole plan (so that `mantissa merge` can put the shards' lines back in plan order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The shard that wrote the line.
    pub shard: Shard,
    /// The work unit the line is a result of.
    pub unit: u64,
}

/// A line type the store holds: a record with the common header and a key.
pub trait StoreLine: Serialize + DeserializeOwned {
    /// The data file's stem: `results` is `results.jsonl`, `results.shard-I-of-N.jsonl`.
    const STEM: &'static str;
    /// The manifest's stem: `store` is `store.json`, `store.shard-I-of-N.json`.
    const MANIFEST_STEM: &'static str;

    /// What identifies the work the line is a result of: a resumed run does not redo a key
    /// already in the file.
    fn key(&self) -> String;

    /// The line's shard and unit, for a line of a sharded run.
    fn place(&self) -> Option<Place>;

    /// Sets (or, with `None`, removes) the line's shard and unit.
    fn set_place(&mut self, place: Option<Place>);

    /// Parses one line into the current shape (a type with older schemas upgrades them here).
    fn parse(line: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(line)
    }
}

/// The data file of `L`'s store: `STEM.jsonl`, or `STEM.shard-I-of-N.jsonl` for a shard.
pub fn data_file<L: StoreLine>(shard: Option<Shard>) -> String {
    match shard {
        Some(s) => format!("{}.{}.jsonl", L::STEM, s.file_tag()),
        None => format!("{}.jsonl", L::STEM),
    }
}

/// The manifest file beside it: `store.json`, or `store.shard-I-of-N.json`.
pub fn manifest_file<L: StoreLine>(shard: Option<Shard>) -> String {
    match shard {
        Some(s) => format!("{}.{}.json", L::MANIFEST_STEM, s.file_tag()),
        None => format!("{}.json", L::MANIFEST_STEM),
    }
}

/// How to open a store.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// Keep the file's lines and count their keys as done (else an existing file is moved
    /// aside, never overwritten).
    pub resume: bool,
    /// The shard this run is, if it is one: its own file.
    pub shard: Option<Shard>,
    /// What the run is: written beside the file, and checked against the one there on resume.
    /// `None` for the commands that add to a shared file (shadow, diff, run, tune), which plan
    /// no units of their own.
    pub manifest: Option<Manifest>,
}

/// The append-only store file of one output directory (and shard), open for writing.
#[derive(Debug)]
pub struct Store<L> {
    path: PathBuf,
    file: File,
    done: HashSet<String>,
    moved_aside: Option<PathBuf>,
    previous: usize,
    shard: Option<Shard>,
    unlocked: Option<String>,
    line: PhantomData<fn(&L)>,
}

impl<L: StoreLine> Store<L> {
    /// Opens `dir`'s store file for `options` (creating `dir` if needed) and locks it.
    ///
    /// With `resume`, the lines already there are kept, their keys count as done, a torn last
    /// line is cut, and a manifest there whose command or settings differ from `options`' is a
    /// refusal naming the difference. Without it, a non-empty file (and its manifest) is renamed
    /// to `STEM-<timestamp>.jsonl` and a fresh file is started.
    pub fn open_with(dir: &Path, options: StoreOptions) -> Result<Store<L>, RecordError> {
        mantissa_files::ensure_dir(dir)?;
        let path = dir.join(data_file::<L>(options.shard));
        let manifest_path = dir.join(manifest_file::<L>(options.shard));
        let (mut file, mut unlocked) = open_locked(&path)?;
        let len = file.metadata().map_err(io_err(&path))?.len();
        let (mut done, mut previous, mut moved_aside) = (HashSet::new(), 0, None);
        if len > 0 && options.resume {
            if let Some(ours) = &options.manifest {
                check_resumable(&path, &manifest_path, ours)?;
            }
            let (lines, notes) = read_lines::<L>(&path)?;
            previous = lines.len();
            done.extend(lines.iter().map(L::key));
            if notes.truncated_tail {
                // Cut the partial line so the next append starts on a line of its own.
                truncate_partial_tail(&path, &file)?;
            }
        } else if len > 0 {
            // Moved while this process holds the old file's lock: a writer still using it would
            // have refused this open.
            moved_aside = Some(move_aside(dir, &path, &manifest_path)?);
            (file, unlocked) = open_locked(&path)?;
        }
        if let Some(mut manifest) = options.manifest {
            manifest.shard = options.shard;
            manifest.write(&manifest_path)?;
        }
        Ok(Store {
            path,
            file,
            done,
            moved_aside,
            previous,
            shard: options.shard,
            unlocked,
            line: PhantomData,
        })
    }

    /// The file being appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The shard this store is, if any.
    pub fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// Whether work unit `unit` of the plan is this store's to run: every unit for a whole run,
    /// unit k ≡ I (mod N) for shard I/N.
    pub fn owns(&self, unit: u64) -> bool {
        self.shard.is_none_or(|s| s.owns(unit))
    }

    /// Where the previous file went, if this store started afresh over one.
    pub fn moved_aside(&self) -> Option<&Path> {
        self.moved_aside.as_deref()
    }

    /// Lines found in the file when it was opened with `resume`.
    pub fn previous_records(&self) -> usize {
        self.previous
    }

    /// Why the file could not be locked, where its file system does not lock (some cluster file
    /// systems mounted without lock support): the run goes on, but a second writer would not be
    /// refused. `None` when it is locked.
    pub fn unlocked(&self) -> Option<&str> {
        self.unlocked.as_deref()
    }

    /// Whether a line with this key is already stored.
    pub fn contains(&self, key: &str) -> bool {
        self.done.contains(key)
    }

    /// Appends one line and flushes it to disk before returning, so a crash afterwards cannot
    /// lose it.
    pub fn append(&mut self, line: &L) -> Result<(), RecordError> {
        self.append_all(std::slice::from_ref(line))
    }

    /// Appends lines in one write and one flush: the lines of one unit of work (a mathlib
    /// function's columns) land together, so a resumed run never finds half of a unit.
    pub fn append_all(&mut self, lines: &[L]) -> Result<(), RecordError> {
        let mut text = String::new();
        for line in lines {
            text += &serde_json::to_string(line).map_err(|e| RecordError::Io {
                path: self.path.clone(),
                cause: io::Error::other(e),
            })?;
            text.push('\n');
        }
        // One write call: an interrupted run leaves whole lines (and at worst one unterminated
        // tail, which readers skip).
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| mantissa_files::write_error(&self.path, e))?;
        self.done.extend(lines.iter().map(L::key));
        Ok(())
    }

    /// Appends the results of work unit `unit` (see [`Store::append_all`]): a sharded store
    /// writes each line with its shard and unit in the header; a whole run's lines have neither
    /// (its file is in plan order).
    pub fn append_unit(
        &mut self,
        lines: impl IntoIterator<Item = L>,
        unit: u64,
    ) -> Result<(), RecordError> {
        let place = self.shard.map(|shard| Place { shard, unit });
        let lines: Vec<L> = lines
            .into_iter()
            .map(|mut line| {
                line.set_place(place);
                line
            })
            .collect();
        self.append_all(&lines)
    }
}

/// The study's store, `DIR/results.jsonl`, as the analyses that add to it open it.
impl Store<Record> {
    /// Opens `dir/results.jsonl` with no shard and no manifest (see [`Store::open_with`]).
    pub fn open(dir: &Path, resume: bool) -> Result<Store<Record>, RecordError> {
        Store::open_with(
            dir,
            StoreOptions {
                resume,
                ..StoreOptions::default()
            },
        )
    }
}

/// Opens (creating) `path` for appending and takes its exclusive lock; a lock held elsewhere is
/// [`RecordError::Locked`], a target that is not a regular file is refused
/// ([`mantissa_files::open_append`]). Where the file system cannot lock at all, the file is used
/// unlocked and the second value says why.
pub(crate) fn open_locked(path: &Path) -> Result<(File, Option<String>), RecordError> {
    let file = mantissa_files::open_append(path)?;
    match file.try_lock() {
        Ok(()) => Ok((file, None)),
        Err(TryLockError::WouldBlock) => Err(RecordError::Locked {
            path: path.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) if cannot_lock_here(&e) => Ok((
            file,
            Some(format!("{}: cannot be locked ({e})", path.display())),
        )),
        Err(TryLockError::Error(e)) => Err(io_err(path)(e)),
    }
}

/// Whether a lock error means "this file system does not lock" rather than a real failure.
fn cannot_lock_here(e: &io::Error) -> bool {
    // Linux's ENOLCK (no lock manager), ENOSYS and EOPNOTSUPP.
    let linux_codes = cfg!(target_os = "linux") && matches!(e.raw_os_error(), Some(37 | 38 | 95));
    e.kind() == io::ErrorKind::Unsupported || linux_codes
}

/// Refuses to resume `path` when its manifest plans other work than `ours`.
fn check_resumable(path: &Path, manifest_path: &Path, ours: &Manifest) -> Result<(), RecordError> {
    // A file written before manifests existed has none: nothing to check it against.
    let Some(theirs) = Manifest::read(manifest_path)? else {
        return Ok(());
    };
    match theirs.work_difference(ours) {
        None => Ok(()),
        Some((field, was, now)) => Err(RecordError::OtherRun {
            path: path.to_path_buf(),
            field,
            was,
            now,
        }),
    }
}

/// Renames `path` to `STEM-<timestamp>.jsonl` in `dir` (numbered if that exists), and its
/// manifest, if there is one, to `STEM-<timestamp>.manifest.json`; returns the data file's new
/// path.
pub(crate) fn move_aside(dir: &Path, path: &Path, manifest: &Path) -> Result<PathBuf, RecordError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    let stamp = Record::now().replace([':', '-'], "");
    let mut aside = dir.join(format!("{stem}-{stamp}.jsonl"));
    let mut k = 1;
    while aside.exists() {
        aside = dir.join(format!("{stem}-{stamp}-{k}.jsonl"));
        k += 1;
    }
    std::fs::rename(path, &aside).map_err(io_err(path))?;
    if manifest.exists() {
        let stem = aside.file_stem().and_then(|s| s.to_str()).unwrap_or("old");
        let old_manifest = dir.join(format!("{stem}.manifest.json"));
        std::fs::rename(manifest, &old_manifest).map_err(io_err(manifest))?;
    }
    Ok(aside)
}

fn truncate_partial_tail(path: &Path, file: &File) -> Result<(), RecordError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    // The locked append handle may shorten the file: set_len works on any writable handle.
    file.set_len(keep as u64).map_err(io_err(path))?;
    file.sync_data().map_err(io_err(path))
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RecordError + '_ {
    move |cause| RecordError::Io {
        path: path.to_path_buf(),
        cause,
    }
}

/// What reading a store file found besides the lines.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadNotes {
    /// A last line without its newline that did not parse: the run was killed while writing it.
    /// The point is simply missing (a resumed run measures it again).
    pub truncated_tail: bool,
    /// Whole lines that are not records (1-based line numbers, in order), skipped so that one
    /// damaged line (an edit, a disk error, two writers) does not cost every other record.
    pub skipped: Vec<usize>,
    /// What the parser said about the first skipped line.
    pub first_problem: Option<String>,
}

impl ReadNotes {
    /// The skipped lines as a short list for a one-line message: the first `shown` line
    /// numbers, then how many more (`2, 5, 9 and 4 more`).
    pub fn skipped_lines(&self, shown: usize) -> String {
        let list: Vec<String> = self
            .skipped
            .iter()
            .take(shown)
            .map(usize::to_string)
            .collect();
        let more = self.skipped.len().saturating_sub(shown);
        if more > 0 {
            format!("{} and {more} more", list.join(", "))
        } else {
            list.join(", ")
        }
    }
}

/// Reads every line of a store file. A line that is not a record is skipped and listed in the
/// notes ([`ReadNotes::skipped`]; an unterminated last line, which a killed run leaves, is
/// [`ReadNotes::truncated_tail`] instead), unless no line at all is a record: then the file is
/// not a store file and the error names its first bad line.
pub fn read_lines<L: StoreLine>(path: &Path) -> Result<(Vec<L>, ReadNotes), RecordError> {
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
    let mut lines = Vec::new();
    let mut notes = ReadNotes::default();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        // Bytes, not a String: a line that is not UTF-8 is one bad line, not an unreadable file.
        let n = reader.read_until(b'\n', &mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        number += 1;
        let terminated = line.ends_with(b"\n");
        let parsed = std::str::from_utf8(&line)
            .map_err(|e| format!("not UTF-8 ({e})"))
            .map(str::trim);
        if parsed.as_ref().is_ok_and(|t| t.is_empty()) {
            continue;
        }
        match parsed.and_then(|text| L::parse(text).map_err(|e| within_line(&e))) {
            Ok(r) => lines.push(r),
            Err(_) if !terminated => notes.truncated_tail = true,
            Err(message) => {
                notes.skipped.push(number);
                notes.first_problem.get_or_insert(message);
            }
        }
    }
    if lines.is_empty() {
        if let (Some(&line), Some(message)) = (notes.skipped.first(), notes.first_problem.take()) {
            return Err(RecordError::Parse {
                path: path.to_path_buf(),
                line,
                message,
            });
        }
    }
    Ok((lines, notes))
}

/// What the JSON parser said about one line, placed by column only (serde's "line 1" is the line's
/// own first line, not the file's).
fn within_line(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match full.strip_suffix(&position) {
        Some(what) if e.column() > 0 => format!("{what} at column {}", e.column()),
        Some(what) => what.to_string(),
        None => full,
    }
}

/// Writes `contents` to `path` atomically through the one writer, [`mantissa_files::write_file`]
/// (which refuses a target that is not a regular file and follows symlinks).
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), RecordError> {
    Ok(mantissa_files::write_file(path, contents)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::sample;
    use crate::record::{read_records, ResultsLog, RESULTS_FILE};
    use std::collections::BTreeMap;
    use std::fs::OpenOptions;

    fn manifest(sizes: &str) -> Manifest {
        let settings = BTreeMap::from([("sizes".to_string(), sizes.to_string())]);
        Manifest::new("study", settings)
    }

    fn sharded(shard: &str, resume: bool, m: Option<Manifest>) -> StoreOptions {
        StoreOptions {
            resume,
            shard: Some(shard.parse().unwrap()),
            manifest: m,
        }
    }

    #[test]
    fn a_shard_store_round_trips_its_lines_with_shard_and_unit() {
        let dir = tempfile::tempdir().unwrap();
        let mut store: Store<Record> =
            Store::open_with(dir.path(), sharded("1/4", false, Some(manifest("1024")))).unwrap();
        assert_eq!(store.path(), dir.path().join("results.shard-1-of-4.jsonl"));
        assert!(store.owns(5) && !store.owns(4));
        let (a, mut b) = (sample(), sample());
        b.size = 2048;
        store.append_unit([a.clone()], 1).unwrap();
        store.append_unit([b.clone()], 5).unwrap();
        assert!(store.contains(&a.key()) && store.contains(&b.key()));
        drop(store);
        let text = std::fs::read_to_string(dir.path().join("results.shard-1-of-4.jsonl")).unwrap();
        assert!(text.contains(r#""shard":"1/4","unit":5"#), "{text}");
        let (back, notes) = read_records(&dir.path().join("results.shard-1-of-4.jsonl")).unwrap();
        assert_eq!(notes, ReadNotes::default());
        let places: Vec<_> = back.iter().map(|r| r.place().unwrap().unit).collect();
        assert_eq!(places, [1, 5]);
        // Everything but the place is the line appended.
        let mut plain = back[1].clone();
        plain.set_place(None);
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        let m = Manifest::read(&dir.path().join("store.shard-1-of-4.json"))
            .unwrap()
            .unwrap();
        assert_eq!(m.shard, Some("1/4".parse().unwrap()));
        assert!(!dir.path().join(RESULTS_FILE).exists());
        assert!(!dir.path().join("store.json").exists());

        // A whole run's lines carry neither shard nor unit.
        let mut whole = ResultsLog::open(dir.path(), false).unwrap();
        whole.append_unit([sample()], 3).unwrap();
        drop(whole);
        let text = std::fs::read_to_string(dir.path().join(RESULTS_FILE)).unwrap();
        assert!(!text.contains("shard") && !text.contains("unit"), "{text}");
    }

    #[test]
    fn a_second_writer_of_the_same_file_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = ResultsLog::open(dir.path(), false).unwrap();
        first.append(&sample()).unwrap();
        let path = dir.path().join(RESULTS_FILE);
        for resume in [true, false] {
            let e = ResultsLog::open(dir.path(), resume)
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "{} is being written by another mantissa process",
                    path.display()
                )
            );
        }
        // The refused fresh open moved nothing aside.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Another shard's file is another file.
        let other: Store<Record> =
            Store::open_with(dir.path(), sharded("0/2", false, None)).unwrap();
        assert!(other.unlocked().is_none());
        drop(first);
        let again = ResultsLog::open(dir.path(), true).unwrap();
        assert_eq!(again.previous_records(), 1);
    }

    #[test]
    fn resuming_with_other_settings_is_refused_naming_the_difference() {
        let dir = tempfile::tempdir().unwrap();
        let open = |sizes: &str, resume: bool| {
            Store::<Record>::open_with(dir.path(), sharded("0/2", resume, Some(manifest(sizes))))
        };
        let mut s = open("1024", false).unwrap();
        s.append_unit([sample()], 0).unwrap();
        drop(s);
        let e = open("2048", true).unwrap_err().to_string();
        assert!(
            e.contains("results.shard-0-of-2.jsonl: it holds a run with settings.sizes = 1024, this run has settings.sizes = 2048"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        // The same settings resume.
        assert_eq!(open("1024", true).unwrap().previous_records(), 1);
        // A fresh run with other settings moves the file and its manifest aside.
        let fresh = open("2048", false).unwrap();
        let aside = fresh.moved_aside().unwrap().to_path_buf();
        assert_eq!(read_records(&aside).unwrap().0.len(), 1);
        let name = aside.file_stem().unwrap().to_string_lossy().into_owned();
        let old = Manifest::read(&dir.path().join(format!("{name}.manifest.json")))
            .unwrap()
            .unwrap();
        assert_eq!(old.settings["sizes"], "1024");
        let new = Manifest::read(&dir.path().join("store.shard-0-of-2.json"))
            .unwrap()
            .unwrap();
        assert_eq!(new.settings["sizes"], "2048");
        // A file of no manifest (written before manifests) resumes under any settings.
        drop(fresh);
        std::fs::remove_file(dir.path().join("store.shard-0-of-2.json")).unwrap();
        std::fs::copy(&aside, dir.path().join("results.shard-0-of-2.jsonl")).unwrap();
        assert_eq!(open("4096", true).unwrap().previous_records(), 1);
    }

    #[test]
    fn old_results_lines_keep_loading() {
        // A schema-1 line (docs/results/cpu-sum-full) and a schema-2 line written before the
        // store had shards (docs/results/h100-quick-gpu), checked in as they were written.
        let text = include_str!("fixtures/old-results.jsonl");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULTS_FILE), text).unwrap();
        let (records, notes) = read_records(&dir.path().join(RESULTS_FILE)).unwrap();
        assert_eq!(notes, ReadNotes::default());
        assert_eq!(records.iter().map(|r| r.schema).collect::<Vec<_>>(), [1, 2]);
        assert!(records.iter().all(|r| r.place().is_none()));
        let log = ResultsLog::open(dir.path(), true).unwrap();
        assert!(records.iter().all(|r| log.contains(&r.key())));
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

    /// Writes `bytes` as a results file in a fresh directory.
    fn results_file(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RESULTS_FILE);
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn one_bad_line_in_the_middle_costs_only_that_line() {
        // Lines 1, 2 and 4 are records of a real run; line 3 is a damaged one.
        let (_dir, path) = results_file(include_bytes!("fixtures/one-bad-line.jsonl"));
        let (records, notes) = read_records(&path).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(notes.skipped, [3]);
        assert!(!notes.truncated_tail);
        assert_eq!(
            notes.first_problem.as_deref(),
            Some("key must be a string at column 21")
        );
    }

    #[test]
    fn several_bad_lines_are_skipped_and_listed_and_the_torn_tail_stays_a_tail() {
        // Good records on lines 1, 2, 4, 6 and 9; line 3 is not JSON, 5 is half a record, 7 a
        // record without its fields, 8 not UTF-8, and line 10 is torn (no newline).
        let (_dir, path) = results_file(include_bytes!("fixtures/damaged.jsonl"));
        let (records, notes) = read_records(&path).unwrap();
        assert_eq!(records.len(), 5);
        assert_eq!(notes.skipped, [3, 5, 7, 8]);
        assert!(notes.truncated_tail);
        assert_eq!(notes.skipped_lines(3), "3, 5, 7 and 1 more");
        assert_eq!(notes.skipped_lines(4), "3, 5, 7, 8");
        // The records kept are the good lines, in order.
        let sizes: Vec<u64> = records.iter().map(|r| r.size).collect();
        let text = include_str!("../../../docs/results/cpu-sum-full/results.jsonl");
        let want: Vec<u64> = text
            .lines()
            .take(6)
            .enumerate()
            .filter(|(i, _)| *i != 3)
            .map(|(_, l)| Record::from_json_line(l).unwrap().size)
            .collect();
        assert_eq!(sizes, want);
    }

    #[test]
    fn a_file_of_no_record_names_its_first_bad_line() {
        let (_dir, path) = results_file(b"\nnot json\nneither\n");
        let err = read_records(&path).unwrap_err().to_string();
        assert!(err.contains(":2: not a mantissa record"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let missing = read_records(&path.with_file_name("nope.jsonl")).unwrap_err();
        assert!(matches!(missing, RecordError::Missing { .. }));
        // A resumed run over a damaged file keeps going, and its points count as done.
        let (dir, _path) = results_file(include_bytes!("fixtures/one-bad-line.jsonl"));
        let log = ResultsLog::open(dir.path(), true).unwrap();
        assert_eq!(log.previous_records(), 3);
    }

    #[test]
    fn a_fifo_or_device_where_a_file_goes_is_refused_in_one_line_and_kept() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("report.html");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let e = write_atomically(&fifo, b"<html>").unwrap_err().to_string();
        assert!(
            e.contains("report.html is a FIFO (named pipe), not a file"),
            "{e}"
        );
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        // The results store refuses a device in place of its file (records would vanish).
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let node = out.join(RESULTS_FILE);
        let made = std::process::Command::new("mknod")
            .arg(&node)
            .args(["c", "1", "3"])
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped the device half: mknod failed (needs root)");
            return;
        }
        let e = ResultsLog::open(&out, false).unwrap_err().to_string();
        assert!(
            e.contains("results.jsonl is a character device, not a file"),
            "{e}"
        );
        assert!(std::fs::symlink_metadata(&node)
            .unwrap()
            .file_type()
            .is_char_device());
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
