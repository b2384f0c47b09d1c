//! What happens when standard output cannot take what a command prints, for every command in
//! one place, so that no `println!` needs its own handling.
//!
//! - **A closed pipe** (`mantissa inspect x.cu | head`): the process ends at once and quietly
//!   through SIGPIPE's default action, as `cat` or `grep` do; a shell reports it as 141, which
//!   `set -o pipefail` treats the same as for any other tool whose reader left early. Exit 0 would
//!   claim that the whole output was written. Rust ignores SIGPIPE, so its default is restored
//!   (and unblocked: a blocked signal survives `exec`, and would leave the write to fail with
//!   EPIPE instead).
//! - **Any other failed write** (`mantissa ops > /dev/full`): `print!` panics with "failed
//!   printing to stdout: …". A panic hook recognises that message, prints one line on stderr and
//!   exits with status 1, from whichever thread printed. Matching std's message is the one way to
//!   tell these panics from bugs without replacing every `print!`; `tests/it/writes.rs` runs the
//!   binary onto /dev/full, so a change of the wording in std fails a test rather than a user.

/// The prefix of std's panic when `print!` cannot write.
const STDOUT_FAILED: &str = "failed printing to stdout: ";

/// The same for `eprint!`: with stderr gone there is nowhere to say anything.
const STDERR_FAILED: &str = "failed printing to stderr: ";

/// Installs both: called first in `main`, before any thread exists.
pub fn install() {
    restore_default_sigpipe();
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload_as_str().unwrap_or_default();
        if let Some(cause) = message.strip_prefix(STDOUT_FAILED) {
            if cause.ends_with("(os error 32)") {
                // EPIPE although SIGPIPE is at its default: end as it would have.
                std::process::exit(141);
            }
            eprintln!("error: cannot write to standard output: {cause}; send it to a file or device with room");
            std::process::exit(1);
        }
        if message.starts_with(STDERR_FAILED) {
            std::process::exit(1);
        }
        default(info);
    }));
}

/// SIGPIPE back to its default action (terminate), and unblocked.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first in main, before any thread exists; SIG_DFL is a valid disposition and
    // the set is initialised by sigemptyset before use.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}
