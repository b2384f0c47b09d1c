//! The one writer of the files mantissa writes for its user (configs, records, reports, plots,
//! saved builds, tuning and diff saves, `.npy` data, Slurm job files) and of its caches.
//!
//! Its promises:
//! - a file is replaced **atomically**: a temporary file in the same directory, fsync, rename, so
//!   a reader (or a crash) sees the old file or the new one, never half of one, and a failed
//!   write leaves no temporary file behind;
//! - it **never destroys what is not a regular file**: a character or block device, a FIFO, a
//!   socket or a directory at the target is refused in one line (a rename would have replaced
//!   `/dev/full` with a regular file);
//! - a **symlink** is followed: the file it names is replaced and the link stays a link. A
//!   dangling symlink is followed too: the file it names is created (as a shell's `>` does), so
//!   a link set up to point at where output should go keeps working;
//! - where a **directory** is meant ([`ensure_dir`]), an existing non-directory is refused;
//! - a full disk, a directory it may not write to and a read-only file system are each one line
//!   saying what to do ([`WriteError`]).
//!
//! Appended logs (the results store) keep their own locked append; they open through
//! [`open_append`], which refuses the same targets.

#![deny(missing_docs)]

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
mod tests;

/// Symlinks followed before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Why a file or directory could not be written: one line, what is wrong and what to give
/// instead.
#[derive(Debug)]
pub struct WriteError {
    path: PathBuf,
    problem: Problem,
}

#[derive(Debug)]
enum Problem {
    /// The target exists and is not a regular file (its kind), or not a directory where one is
    /// meant.
    NotA {
        found: &'static str,
        wanted: Wanted,
    },
    NoSpace(PathBuf),
    Denied(PathBuf),
    ReadOnly(PathBuf),
    Other(io::Error),
}

#[derive(Debug, Clone, Copy)]
enum Wanted {
    Replaced,
    Appended,
    Directory,
}

impl WriteError {
    /// The path the caller gave.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The nearest [`io::ErrorKind`], for callers that keep `io::Error`s.
    pub fn kind(&self) -> io::ErrorKind {
        match &self.problem {
            Problem::NotA { .. } => io::ErrorKind::InvalidInput,
            Problem::NoSpace(_) => io::ErrorKind::StorageFull,
            Problem::Denied(_) => io::ErrorKind::PermissionDenied,
            Problem::ReadOnly(_) => io::ErrorKind::ReadOnlyFilesystem,
            Problem::Other(e) => e.kind(),
        }
    }

    fn new(path: &Path, problem: Problem) -> WriteError {
        WriteError {
            path: path.to_path_buf(),
            problem,
        }
    }

    /// Classifies what the system said about writing in `dir`.
    fn from_io(path: &Path, dir: &Path, e: io::Error) -> WriteError {
        let dir = dir.to_path_buf();
        let problem = match e.raw_os_error() {
            // ENOSPC, EDQUOT: the disk or the user's quota is full.
            Some(28 | 122) => Problem::NoSpace(dir),
            // EACCES, EPERM.
            Some(13 | 1) => Problem::Denied(dir),
            // EROFS.
            Some(30) => Problem::ReadOnly(dir),
            _ => Problem::Other(e),
        };
        WriteError::new(path, problem)
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.problem {
            Problem::NotA { found, wanted } => {
                let instead = match wanted {
                    Wanted::Replaced => {
                        "not a file: give a path to a regular file (it is replaced atomically)"
                    }
                    Wanted::Appended => {
                        "not a file: give a path to a regular file (records are appended to it)"
                    }
                    Wanted::Directory => {
                        "not a directory: give a directory (one that does not exist is created)"
                    }
                };
                write!(f, "{path} is {found}, {instead}")
            }
            Problem::NoSpace(dir) => write!(
                f,
                "cannot write {path}: no space left on {}: free space or give another path",
                dir.display()
            ),
            Problem::Denied(dir) => write!(
                f,
                "cannot write {path}: permission denied in {}: give a path you may write to",
                dir.display()
            ),
            Problem::ReadOnly(dir) => write!(
                f,
                "cannot write {path}: {} is on a read-only file system: give a path on a writable one",
                dir.display()
            ),
            Problem::Other(e) => write!(f, "cannot write {path}: {e}"),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

/// Writes `bytes` to `path`, replacing what is there atomically (see the crate's promises).
/// The directory must exist ([`ensure_dir`] makes it). The file keeps the permissions of the one
/// it replaces.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let target = resolve(path).map_err(|e| WriteError::new(path, Problem::Other(e)))?;
    let existing = fs::metadata(&target).ok();
    if let Some(m) = &existing {
        if !m.is_file() {
            return Err(not_a(path, m, Wanted::Replaced));
        }
    }
    let dir = parent(&target);
    let tmp = temp_name(&target);
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        if let Some(m) = &existing {
            // A config the user made private stays private; failing to copy the bits is no
            // reason to lose the write.
            let _ = f.set_permissions(m.permissions());
        }
        f.write_all(bytes)?;
        // Flushed before the rename, so a crash cannot leave the final name on an empty file.
        f.sync_all()?;
        fs::rename(&tmp, &target)
    })();
    match result {
        Ok(()) => {
            // The rename itself survives a crash once the directory is flushed; a file system
            // that cannot flush a directory still has the file.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(())
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(WriteError::from_io(path, dir, e))
        }
    }
}

/// Makes sure `dir` is a directory, creating it and its parents if missing; an existing
/// non-directory at `dir` (or above it) is refused in one line.
pub fn ensure_dir(dir: &Path) -> Result<(), WriteError> {
    // The nearest existing ancestor must be a directory (a regular file given as OUT, or as a
    // parent of it).
    for a in dir.ancestors().filter(|a| !a.as_os_str().is_empty()) {
        if let Ok(m) = fs::metadata(a) {
            if m.is_dir() {
                break;
            }
            return Err(not_a(a, &m, Wanted::Directory));
        }
    }
    fs::create_dir_all(dir).map_err(|e| {
        let existing = dir
            .ancestors()
            .find(|a| a.exists())
            .unwrap_or(Path::new("."));
        WriteError::from_io(dir, existing, e)
    })
}

/// Opens `path` (following symlinks, creating a missing file) for appending, refusing an
/// existing target that is not a regular file before opening it (opening a FIFO would block, a
/// device would take the records).
pub fn open_append(path: &Path) -> Result<File, WriteError> {
    let target = resolve(path).map_err(|e| WriteError::new(path, Problem::Other(e)))?;
    if let Ok(m) = fs::metadata(&target) {
        if !m.is_file() {
            return Err(not_a(path, &m, Wanted::Appended));
        }
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&target)
        .map_err(|e| WriteError::from_io(path, parent(&target), e))
}

/// Classifies an error of writing `path` the way [`write_file`] does (for writers with their
/// own handle, such as an append): a full disk, a denied or read-only directory in one line.
pub fn write_error(path: &Path, e: io::Error) -> WriteError {
    WriteError::from_io(path, parent(path), e)
}

/// Refuses `path` for `wanted`, naming what `m` says it is.
fn not_a(path: &Path, m: &fs::Metadata, wanted: Wanted) -> WriteError {
    WriteError::new(
        path,
        Problem::NotA {
            found: kind_of(m),
            wanted,
        },
    )
}

/// What a file system object is, with its article, for a message.
fn kind_of(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Follows `path`'s symlinks (relative ones from the link's directory) to the path that is not
/// a link: an existing object, or, for a dangling link, the missing file it names.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p)?;
                p = if to.is_absolute() {
                    to
                } else {
                    parent(&p).join(to)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links in a row (a loop?)"
    )))
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A temporary name beside `target`, unique across this process's threads and other processes
/// (the time too: a killed process's leftover under a reused id is not met again).
fn temp_name(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    parent(target).join(format!(
        ".{name}.{}.{}.{nanos}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The directory mantissa caches into: `$MANTISSA_CACHE`, else `$XDG_CACHE_HOME/mantissa`, else
/// `$HOME/.cache/mantissa`; `None` when none of these is set (the cache then lives in memory only).
pub fn cache_root() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("MANTISSA_CACHE") {
        return Some(PathBuf::from(dir));
    }
    // The XDG spec says relative values are invalid and must be ignored.
    if let Some(xdg) = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Some(xdg.join("mantissa"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".cache").join("mantissa"))
}
