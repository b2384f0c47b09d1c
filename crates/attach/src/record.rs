//! The recorder: what the environment asks for, the tables that name handles (modules,
//! libraries, functions), and the events log. One mutex guards all of it; it is never held
//! across a call into the real driver.

use crate::json::Line;
use crate::timing::Timing;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The directory the library writes to; unset: record nothing.
pub const ATTACH_DIR_ENV: &str = "MANTISSA_ATTACH_DIR";
/// What to record (comma list).
pub const RECORD_ENV: &str = "MANTISSA_ATTACH_RECORD";
/// Where replacements, writes and reads are.
pub const REPLACE_DIR_ENV: &str = "MANTISSA_REPLACE_DIR";
/// The buffered log is written out when it grows past this many bytes.
const FLUSH_AT: usize = 4 << 20;

/// A copy to the host writes the log out when the last write is this old (or there was none):
/// a loop that reads a value back every step would otherwise make a system call per step.
const COPY_FLUSH_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// What `MANTISSA_ATTACH_RECORD` asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct What {
    /// `launch` events.
    pub launches: bool,
    /// `alloc`, `free`, `copy` and `memset` events.
    pub copies: bool,
    /// The bytes of each copy to the device, under `data/`.
    pub htod_data: bool,
    /// The bytes of each copy to the host, under `data/`.
    pub dtoh_data: bool,
    /// Kernel times from CUDA events around each launch.
    pub time: bool,
}

impl What {
    /// Parses the comma list (`None`: the default, `launches,copies`); the words it did not
    /// know come back beside it.
    pub fn parse(text: Option<&str>) -> (What, Vec<String>) {
        let Some(text) = text else {
            return (
                What {
                    launches: true,
                    copies: true,
                    ..What::default()
                },
                Vec::new(),
            );
        };
        let mut what = What::default();
        let mut unknown = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "launches" => what.launches = true,
                "copies" => what.copies = true,
                "htod_data" => what.htod_data = true,
                "dtoh_data" => what.dtoh_data = true,
                "time" => what.time = true,
                other => unknown.push(other.to_string()),
            }
        }
        (what, unknown)
    }
}

/// Bytes to write to globals: (symbol, bytes) each.
pub type Writes = Arc<[(String, Vec<u8>)]>;

/// A loaded module or library, as the tables know it.
#[derive(Debug, Clone)]
pub struct Module {
    /// Its key (`modules/<key>.*`).
    pub key: Arc<str>,
    /// The context current when it was loaded (null for none).
    pub ctx: usize,
    /// A library (`CUlibrary`), not a module.
    pub library: bool,
    /// The globals to read back before it goes (`<key>.reads.json`).
    pub reads: Arc<[String]>,
    /// Writes still to apply (a library loaded with no context current).
    pub pending_writes: Option<Writes>,
}

/// A function or kernel handle, as the tables know it.
#[derive(Debug, Clone)]
pub struct Function {
    /// The key of the module it came from, when seen.
    pub module: Option<Arc<str>>,
    /// Its (mangled) name, when known.
    pub name: Option<Arc<str>>,
    /// A `CUkernel` (from `cuLibraryGetKernel`), whose parameters `cuKernelGetParamInfo` tells.
    pub kernel: bool,
    /// Each parameter's offset and size.
    pub params: Layout,
}

/// A function's parameter layout, as far as the driver was asked.
#[derive(Debug, Clone)]
pub enum Layout {
    /// Not asked yet (asked at its first launch).
    Unasked,
    /// The driver would not say.
    Unknown,
    /// Each parameter's offset and size.
    Known(Arc<[(usize, usize)]>),
}

/// Hashes a handle (an address) by one multiplication: SipHash cost a watched launch more than
/// the lookup needs, and handles are not chosen by an adversary.
#[derive(Default, Clone, Copy)]
pub struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // The table takes its control bits from the top: a multiplication spreads them.
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A table keyed by handle.
pub type Handles<V> = HashMap<usize, V, BuildHasherDefault<HandleHasher>>;

/// The events log: lines buffered in memory, written out at flushes.
pub struct Log {
    buf: Vec<u8>,
    /// When the log was last written out.
    last_write: Option<std::time::Instant>,
    file: Option<File>,
    seq: u64,
    /// `end` `exit` was written: nothing more is.
    pub ended: bool,
}

impl Log {
    /// Appends one event line; returns its `seq` (`None` after `end` `exit`).
    pub fn emit(&mut self, event: &str, fill: impl FnOnce(&mut Line)) -> Option<u64> {
        if self.ended {
            return None;
        }
        let seq = self.seq;
        self.seq += 1;
        let mut line = Line::start(&mut self.buf, event, seq);
        fill(&mut line);
        line.end();
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
        Some(seq)
    }

    /// Writes the buffered lines to `events.jsonl`. In a forked child (another pid) the lines
    /// are dropped and the file closed: only the process that was started writes.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if std::process::id() != *PID.get_or_init(std::process::id) {
            self.file = None;
        }
        if let Some(f) = self.file.as_mut() {
            if f.write_all(&self.buf).is_err() {
                // A full disk: keep the application running, stop logging.
                self.file = None;
            }
        }
        self.buf.clear();
        self.last_write = Some(std::time::Instant::now());
    }

    /// [`Log::flush`] when the last write is older than a quarter of a second, or none was made:
    /// what a copy to the host does.
    pub fn flush_if_due(&mut self) {
        if self
            .last_write
            .is_none_or(|t| t.elapsed() >= COPY_FLUSH_AFTER)
        {
            self.flush();
        }
    }
}

/// Everything the mutex guards.
pub struct State {
    /// The events log.
    pub log: Log,
    /// `CUmodule` → module.
    pub modules: Handles<Module>,
    /// `CUlibrary` → library.
    pub libraries: Handles<Module>,
    /// `CUfunction` or `CUkernel` → function.
    pub functions: Handles<Function>,
    /// Keys whose image is saved under `modules/`.
    pub saved: HashSet<Arc<str>>,
    /// Launch timing (with `time`).
    pub timing: Timing,
}

impl State {
    /// Appends one event line (see [`Log::emit`]).
    pub fn emit(&mut self, event: &str, fill: impl FnOnce(&mut Line)) -> Option<u64> {
        self.log.emit(event, fill)
    }

    /// Writes the buffered lines out (see [`Log::flush`]).
    pub fn flush(&mut self) {
        self.log.flush();
    }
}

/// The pid of the process the recorder was made in.
static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// The recorder (one per process).
pub struct Recorder {
    /// `MANTISSA_ATTACH_DIR`.
    pub dir: PathBuf,
    /// `MANTISSA_ATTACH_RECORD`.
    pub what: What,
    /// `MANTISSA_REPLACE_DIR`.
    pub replace: Option<PathBuf>,
    /// Some module has writes still to apply (checked before a launch without the lock).
    pub pending_writes: AtomicBool,
    /// `end` `exit` was written: from then on every call is only forwarded (the runtime's own
    /// exit handlers unload and release after the shim's).
    pub ended: AtomicBool,
    data_files: AtomicU64,
    state: Mutex<State>,
}

impl Recorder {
    /// The recorder the environment asks for: `None` without `MANTISSA_ATTACH_DIR`; `Err` (one
    /// line) when the directory is missing or `events.jsonl` cannot be opened.
    pub fn from_env() -> Result<Option<Recorder>, String> {
        let Some(dir) = std::env::var_os(ATTACH_DIR_ENV).filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let record = std::env::var(RECORD_ENV).ok();
        let (what, unknown) = What::parse(record.as_deref());
        let replace = std::env::var_os(REPLACE_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        let recorder = Recorder::new(PathBuf::from(dir), what, replace)?;
        if !unknown.is_empty() {
            recorder.error(&format!(
                "{RECORD_ENV}: unknown {} ignored (known: launches, copies, htod_data, dtoh_data, time)",
                unknown.join(", ")
            ));
        }
        Ok(Some(recorder))
    }

    /// A recorder writing under `dir` (which must exist).
    pub fn new(dir: PathBuf, what: What, replace: Option<PathBuf>) -> Result<Recorder, String> {
        if !dir.is_dir() {
            return Err(format!(
                "{ATTACH_DIR_ENV}={} is not a directory",
                dir.display()
            ));
        }
        let events = dir.join("events.jsonl");
        let file = mantissa_files::open_append(&events).map_err(|e| e.to_string())?;
        PID.get_or_init(std::process::id);
        Ok(Recorder {
            dir,
            what,
            replace,
            pending_writes: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            data_files: AtomicU64::new(0),
            state: Mutex::new(State {
                log: Log {
                    buf: Vec::with_capacity(64 << 10),
                    last_write: None,
                    file: Some(file),
                    seq: 0,
                    ended: false,
                },
                modules: Handles::default(),
                libraries: Handles::default(),
                functions: Handles::default(),
                saved: HashSet::new(),
                timing: Timing::default(),
            }),
        })
    }

    /// The state, locked. Never hold it across a call into the real driver.
    pub fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding it (none is expected) must not stop the application's calls.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends one event line; returns its `seq`.
    pub fn emit(&self, event: &str, fill: impl FnOnce(&mut Line)) -> Option<u64> {
        self.state().emit(event, fill)
    }

    /// Logs an `error` event: something the shim itself could not do (the application goes on).
    pub fn error(&self, message: &str) {
        let mut state = self.state();
        state.emit("error", |l| {
            l.str("message", message);
        });
        state.flush();
    }

    /// Writes the buffered lines out.
    pub fn flush(&self) {
        self.state().flush();
    }

    /// Saves `bytes` as `data/<n>.bin` and returns that relative path (or the error, one line).
    pub fn save_data(&self, bytes: &[u8]) -> Result<String, String> {
        let n = self.data_files.fetch_add(1, Ordering::Relaxed);
        let name = format!("data/{n:06}.bin");
        self.write(&name, bytes)?;
        Ok(name)
    }

    /// Writes `bytes` to `relative` under the attach directory, making its directory.
    pub fn write(&self, relative: &str, bytes: &[u8]) -> Result<(), String> {
        let path = self.dir.join(relative);
        if let Some(parent) = path.parent() {
            mantissa_files::ensure_dir(parent).map_err(|e| e.to_string())?;
        }
        mantissa_files::write_file(&path, bytes).map_err(|e| e.to_string())
    }

    /// A file of the replacement directory, `<key><suffix>`, when it exists.
    pub fn replacement_file(&self, key: &str, suffix: &str) -> Option<PathBuf> {
        let path = self.replace.as_deref()?.join(format!("{key}{suffix}"));
        path.is_file().then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_words() {
        let (what, unknown) = What::parse(None);
        assert!(what.launches && what.copies && !what.time && !what.htod_data);
        assert!(unknown.is_empty());
        let (what, unknown) = What::parse(Some("time, dtoh_data,,bogus"));
        assert!(what.time && what.dtoh_data && !what.launches && !what.copies);
        assert_eq!(unknown, vec!["bogus".to_string()]);
    }

    #[test]
    fn events_are_numbered_and_written_at_flush() {
        let dir = tempfile::tempdir().unwrap();
        let r = Recorder::new(dir.path().to_path_buf(), What::default(), None).unwrap();
        assert_eq!(
            r.emit("alloc", |l| {
                l.ptr("ptr", 16);
            }),
            Some(0)
        );
        assert_eq!(r.emit("free", |_| {}), Some(1));
        let path = dir.path().join("events.jsonl");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        r.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\"event\":\"alloc\",\"seq\":0,\"ptr\":\"0x10\"}\n{\"event\":\"free\",\"seq\":1}\n"
        );
        assert_eq!(r.save_data(b"abc").unwrap(), "data/000000.bin");
        assert_eq!(
            std::fs::read(dir.path().join("data/000000.bin")).unwrap(),
            b"abc"
        );
    }

    #[test]
    fn a_missing_directory_is_one_line() {
        let e = Recorder::new(PathBuf::from("/nonexistent/x"), What::default(), None)
            .err()
            .unwrap();
        assert!(
            e.contains("MANTISSA_ATTACH_DIR") && !e.contains('\n'),
            "{e}"
        );
    }
}
