//! How every long command (study, mathlib, tune, shadow, diff) stops on SIGINT (Ctrl-C) and
//! SIGTERM (what Slurm sends at a job's time limit), the same way for both: the first signal
//! asks the run to stop at its next check between units of work, the command keeps what it
//! finished, says how to finish the rest and exits with 128 + the signal's number (130 for
//! SIGINT, 143 for SIGTERM, as a shell reports them), so scripts and schedulers see the run
//! as incomplete; a second signal quits at once. A command that keeps nothing of an
//! unfinished run (shadow, diff) quits at the first signal, saying so.
//!
//! The handler is our own (`sigaction`), not the ctrlc crate's: ctrlc's handler is not told
//! which signal arrived, and the exit status must say. It does only what a signal handler may:
//! atomic stores, one `write(2)` of a message prepared beforehand, `_exit`.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// Set by the first signal; the runs check it between units of work.
static STOP: AtomicBool = AtomicBool::new(false);
/// The first signal's number, 0 before any.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Quit at the first signal (a command that keeps nothing partway).
static QUIT_AT_ONCE: AtomicBool = AtomicBool::new(false);
/// What the first signal prints, prepared at [`install`] (a handler must not allocate).
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

/// What a command keeps when a signal stops it.
pub enum Keeps {
    /// Every finished unit (`what`: "point") is kept and the run resumes; the unit running
    /// checks the flag itself and is dropped.
    DropsRunning(&'static str),
    /// Every finished unit (`what`: "function", "trial") is kept and the run resumes; the unit
    /// running finishes first (the flag is checked between units) and is kept too.
    FinishesRunning(&'static str),
    /// Nothing: the command quits at once with this note after the signal's name.
    Nothing(String),
}

/// The signal that stopped the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signal(i32);

impl Signal {
    /// The exit status a shell gives a process this signal ended: 128 + its number.
    pub fn exit_code(self) -> i32 {
        128 + self.0
    }

    /// Its name, `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        name(self.0)
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Installs the handler for SIGINT and SIGTERM; the flag it returns is what the command's run
/// checks between units. Where it cannot be installed, says so in one line and the signals
/// end the process as they do by default.
pub fn install(keeps: Keeps) -> &'static AtomicBool {
    let message = match keeps {
        Keeps::DropsRunning(what) => {
            QUIT_AT_ONCE.store(false, Ordering::SeqCst);
            format!("\nstopping: the {what} running is dropped, finished ones are kept (Ctrl-C or a signal again quits now)\n")
        }
        Keeps::FinishesRunning(what) => {
            QUIT_AT_ONCE.store(false, Ordering::SeqCst);
            format!("\nstopping after the {what} running: it and the finished ones are kept (Ctrl-C or a signal again quits now)\n")
        }
        Keeps::Nothing(note) => {
            QUIT_AT_ONCE.store(true, Ordering::SeqCst);
            format!("\nstopped: {note}\n")
        }
    };
    let message: &'static [u8] = Box::leak(message.into_bytes().into_boxed_slice());
    MESSAGE_LEN.store(message.len(), Ordering::SeqCst);
    MESSAGE.store(message.as_ptr().cast_mut(), Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        if let Err(e) = handle(signal) {
            eprintln!(
                "note: {} will end the run at once, without keeping its place ({e})",
                name(signal)
            );
        }
    }
    &STOP
}

/// The signal that asked the run to stop, if one did.
pub fn requested() -> Option<Signal> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        n => Some(Signal(n)),
    }
}

/// When a signal stopped the run: `said` on stderr (what was kept, how to finish), then the
/// exit with the signal's status. Nothing when no signal came.
pub fn exit_if_stopped(said: impl FnOnce(Signal) -> String) {
    if let Some(signal) = requested() {
        eprintln!("{}", said(signal));
        std::process::exit(signal.exit_code());
    }
}

fn handle(signal: i32) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is a valid value (empty mask, no flags); the handler only
    // touches atomics and calls write(2) and _exit(2), which are async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Interrupted reads and writes resume, so the run goes on to its next check.
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

extern "C" fn on_signal(signal: libc::c_int) {
    let first = SIGNAL
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        STOP.store(true, Ordering::SeqCst);
        let (ptr, len) = (
            MESSAGE.load(Ordering::SeqCst),
            MESSAGE_LEN.load(Ordering::SeqCst),
        );
        if !ptr.is_null() {
            // SAFETY: ptr and len describe the leaked message, which lives for the process.
            unsafe { libc::write(libc::STDERR_FILENO, ptr.cast(), len) };
        }
    }
    if !first || QUIT_AT_ONCE.load(Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe; nothing of the run is to be kept now.
        unsafe { libc::_exit(128 + signal) };
    }
}

/// The command line that finishes an interrupted run: this one, with `--resume` (once), each
/// word quoted for a POSIX shell where it needs it.
pub fn resume_command(args: impl Iterator<Item = String>) -> String {
    let mut words: Vec<String> = args.collect();
    if !words.iter().any(|w| w == "--resume") {
        words.push("--resume".into());
    }
    command_line(words)
}

/// This process's command line, as a POSIX shell would take it back: the program by the name
/// it was started by, each word quoted where it needs it.
pub fn command_line(mut words: Vec<String>) -> String {
    if let Some(program) = words.first_mut() {
        // The name it was started by, not a path a reader would have to retype.
        if let Some(name) = std::path::Path::new(program.as_str()).file_name() {
            *program = name.to_string_lossy().into_owned();
        }
    }
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,^+@%".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_command_is_the_command_with_resume_quoted_for_a_shell() {
        let args = |v: &[&str]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert_eq!(
            resume_command(args(&[
                "/x/target/release/mantissa",
                "study",
                "lu",
                "--size",
                "2^10"
            ])),
            "mantissa study lu --size 2^10 --resume"
        );
        assert_eq!(
            resume_command(args(&["mantissa", "study", "--out", "my dir", "--resume"])),
            "mantissa study --out 'my dir' --resume"
        );
        assert_eq!(
            resume_command(args(&["mantissa", "study", "--out", "it's"])),
            "mantissa study --out 'it'\\''s' --resume"
        );
    }

    #[test]
    fn exit_codes_are_those_a_shell_reports() {
        assert_eq!(Signal(libc::SIGINT).exit_code(), 130);
        assert_eq!(Signal(libc::SIGTERM).exit_code(), 143);
        assert_eq!(Signal(libc::SIGTERM).name(), "SIGTERM");
    }

    /// The only test in this binary that raises a signal: a second one would end the process.
    #[test]
    fn a_first_sigterm_sets_the_flag_and_records_which_signal() {
        let flag = install(Keeps::DropsRunning("unit"));
        assert!(!flag.load(Ordering::SeqCst));
        // SAFETY: raise(3) delivers SIGTERM to this thread; the handler above catches it.
        assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
        assert!(flag.load(Ordering::SeqCst));
        assert_eq!(requested().map(Signal::exit_code), Some(143));
    }
}
