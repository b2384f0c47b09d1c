//! An application run as it is, under the attach library (`crates/attach`, a `libcuda.so.1`
//! that forwards every driver call and records what the application loads, launches and
//! copies): the way a session of a whole application runs its trials (issue 39).
//!
//! A run gets its own attach directory, which must be empty: the library appends to
//! `events.jsonl` and numbers its lines from 0 in every process. The directory holds `lib/`
//! (`libcuda.so.1`, a link to the library, first on `LD_LIBRARY_PATH`), the library's own
//! files (`events.jsonl`, `modules/`, `data/`, `reads/`), and the application's `stdout.txt`
//! and `stderr.txt`. The application runs in its own process group, so a timeout ends it and
//! whatever it started.
//!
//! Where things are found:
//! - the library: `$MANTISSA_ATTACH_LIB`, else `libmantissa_attach.so` beside the running
//!   executable or one directory up (cargo puts it in `target/<profile>/`, test binaries in
//!   `target/<profile>/deps/`);
//! - the real driver: the library finds it itself (`$MANTISSA_REAL_LIBCUDA`, else the library
//!   path and the usual system paths, never its own directory); one not found is an `error`
//!   event of the run.

mod analysed;
pub mod events;
pub mod session;
pub mod trace;

use events::Event;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The library's file name, as cargo builds it.
pub const LIBRARY: &str = "libmantissa_attach.so";

/// Why an application could not be run under the library.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The attach library was not found.
    #[error(
        "the attach library ({LIBRARY}) is not beside {exe}: build it with `cargo build --release \
         --workspace` (it is built with the mantissa binary), or name it with MANTISSA_ATTACH_LIB"
    )]
    NoLibrary {
        /// Where it was looked for.
        exe: String,
    },
    /// The attach directory is not usable.
    #[error("{path}: {message}")]
    Directory {
        /// The directory.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The application could not be started.
    #[error("could not start '{program}': {message}")]
    Start {
        /// The program.
        program: String,
        /// The system's message.
        message: String,
    },
    /// The events log could not be read.
    #[error(transparent)]
    Events(#[from] events::EventsError),
}

/// How the application ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past the timeout and was killed with its process group.
    TimedOut,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit status {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
            Exit::TimedOut => write!(f, "timed out"),
        }
    }
}

/// One run of an application.
#[derive(Debug, Clone)]
pub struct AppRun {
    /// Its attach directory.
    pub dir: PathBuf,
    /// How it ended.
    pub exit: Exit,
    /// Wall time, start to end.
    pub wall: Duration,
    /// What the library recorded, in call order.
    pub events: Vec<Event>,
}

impl AppRun {
    /// What the application printed on its standard output.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.join("stdout.txt")).unwrap_or_default()
    }

    /// What it printed on its standard error.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.txt")).unwrap_or_default()
    }
}

/// What to run and what to record.
#[derive(Debug, Clone)]
pub struct AppRequest {
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// The attach directory (created if missing; must be empty).
    pub dir: PathBuf,
    /// `MANTISSA_ATTACH_RECORD`'s words (`launches`, `copies`, `htod_data`, `dtoh_data`,
    /// `time`); empty: the library's default.
    pub record: Vec<String>,
    /// A replacement directory (`<key>.ptx`, `<key>.writes.json`, `<key>.reads.json`).
    pub replace: Option<PathBuf>,
    /// Killed (with what it started) after this long.
    pub timeout: Option<Duration>,
}

/// The attach library, and the real driver it forwards to when not its own choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    /// The library.
    pub library: PathBuf,
    /// The real `libcuda.so.1` (`MANTISSA_REAL_LIBCUDA`); `None`: the library's own search.
    pub driver: Option<PathBuf>,
}

impl Attach {
    /// The library found as the module docs say; the driver left to it.
    pub fn locate() -> Result<Attach, AppError> {
        Ok(Attach {
            library: library()?,
            driver: None,
        })
    }

    /// Runs `request`'s command under the library and reads what it recorded.
    pub fn run(&self, request: &AppRequest) -> Result<AppRun, AppError> {
        let dir = &request.dir;
        let bad = |message: String| AppError::Directory {
            path: dir.display().to_string(),
            message,
        };
        mantissa_files::ensure_dir(dir).map_err(|e| bad(e.to_string()))?;
        if std::fs::read_dir(dir)
            .map_err(|e| bad(e.to_string()))?
            .next()
            .is_some()
        {
            return Err(bad(
                "not empty: each run of an application needs its own directory".into(),
            ));
        }
        let lib = dir.join("lib");
        std::fs::create_dir(&lib).map_err(|e| bad(e.to_string()))?;
        std::os::unix::fs::symlink(&self.library, lib.join("libcuda.so.1"))
            .map_err(|e| bad(e.to_string()))?;
        let Some((program, args)) = request.command.split_first() else {
            return Err(AppError::Start {
                program: String::new(),
                message: "no command given".into(),
            });
        };
        let output = |name: &str| {
            File::create(dir.join(name))
                .map(Stdio::from)
                .map_err(|e| bad(e.to_string()))
        };
        let library_path = match std::env::var_os("LD_LIBRARY_PATH") {
            Some(p) if !p.is_empty() => {
                let mut v = lib.clone().into_os_string();
                v.push(":");
                v.push(p);
                v
            }
            _ => lib.clone().into_os_string(),
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .env("LD_LIBRARY_PATH", library_path)
            .env("MANTISSA_ATTACH_DIR", dir)
            .stdin(Stdio::null())
            .stdout(output("stdout.txt")?)
            .stderr(output("stderr.txt")?);
        if let Some(driver) = &self.driver {
            command.env("MANTISSA_REAL_LIBCUDA", driver);
        }
        if !request.record.is_empty() {
            command.env("MANTISSA_ATTACH_RECORD", request.record.join(","));
        }
        match &request.replace {
            Some(r) => command.env("MANTISSA_REPLACE_DIR", r),
            None => command.env_remove("MANTISSA_REPLACE_DIR"),
        };
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let start = Instant::now();
        let mut child = command.spawn().map_err(|e| AppError::Start {
            program: program.to_string_lossy().into_owned(),
            message: e.to_string(),
        })?;
        let exit = wait(&mut child, request.timeout, start);
        let wall = start.elapsed();
        let events = events::read(&dir.join("events.jsonl"))?;
        Ok(AppRun {
            dir: dir.clone(),
            exit,
            wall,
            events,
        })
    }
}

/// Waits for `child`, killing its process group past `timeout`.
fn wait(child: &mut std::process::Child, timeout: Option<Duration>, start: Instant) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    let status_of = |s: std::process::ExitStatus| match (s.code(), s.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(-1),
    };
    let Some(limit) = timeout else {
        return child.wait().map_or(Exit::Code(-1), status_of);
    };
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return status_of(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                // The whole group (a shell script's children too), by the system call: the
                // `kill` program reads a negative process id as an option.
                if let Ok(group) = libc::pid_t::try_from(child.id()) {
                    if group > 1 {
                        // SAFETY: kill(2) takes plain integers; a negative id names the process
                        // group the child leads (it was spawned with process_group(0)).
                        unsafe {
                            libc::kill(-group, libc::SIGKILL);
                        }
                    }
                }
                let _ = child.kill();
                let _ = child.wait();
                return Exit::TimedOut;
            }
            Err(_) => return Exit::Code(-1),
        }
    }
}

/// The attach library (see the module docs).
fn library() -> Result<PathBuf, AppError> {
    if let Some(p) = std::env::var_os("MANTISSA_ATTACH_LIB").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let here = exe.parent().unwrap_or(Path::new("."));
    let found = [Some(here), here.parent()]
        .into_iter()
        .flatten()
        .map(|d| d.join(LIBRARY))
        .find(|p| p.is_file());
    found.ok_or_else(|| AppError::NoLibrary {
        exe: exe.display().to_string(),
    })
}
