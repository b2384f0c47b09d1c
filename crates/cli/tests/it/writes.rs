//! Writes never destroy what they replace, end to end: a FIFO or device given as a file stays
//! what it was, a file given as OUT stays a file, a fresh study moves the whole earlier output
//! aside; and standard output that is closed or full ends the run cleanly.

use crate::support;

use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{mantissa, mantissa_binary, Dir};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One line on stderr, no panic.
fn assert_one_line(out: &Output) -> String {
    let e = stderr(out);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(!e.contains("panicked"), "{e}");
    // Said once: an error chain must not repeat its cause.
    let said = e.trim_end().rsplit(": give ").next().unwrap_or_default();
    assert_eq!(e.matches(said).count(), 1, "{e}");
    e
}

#[test]
fn write_config_onto_a_fifo_or_a_device_refuses_and_leaves_the_node() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let d = Dir::new("write-config");
    std::fs::write(
        d.path().join("k.cu"),
        "extern \"C\" __global__ void k(double* u, int n) { if (n > 0) u[0] = 1.0; }\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        "[source]\nfile = \"k.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = 1\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\", 1]\n[[outputs]]\nbuffer = \"u\"\n",
    )
    .unwrap();
    let fifo = d.path().join("cfg.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut nodes = vec![(fifo, "a FIFO (named pipe)")];
    let device = d.path().join("full");
    let made = Command::new("mknod")
        .arg(&device)
        .args(["c", "1", "7"])
        .status();
    if made.is_ok_and(|s| s.success()) {
        nodes.push((device, "a character device"));
    } else {
        eprintln!("device half skipped: mknod failed (needs root)");
    }
    let spec = d.path().join("s.toml");
    for (node, what) in nodes {
        let out = mantissa(&[
            "run",
            spec.to_str().unwrap(),
            "--write-config",
            node.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let e = assert_one_line(&out);
        assert!(
            e.contains(&format!(
                "{} is {what}, not a file: give a path to a regular file",
                node.display()
            )),
            "{e}"
        );
        let t = std::fs::symlink_metadata(&node).unwrap().file_type();
        assert!(
            t.is_fifo() || t.is_char_device(),
            "{node:?} is no longer a node"
        );
    }
}

/// A small CPU study into `out`.
fn study(out: &Path, precisions: &str) -> Output {
    Command::new(mantissa_binary())
        .args([
            "--threads",
            "2",
            "study",
            "sum",
            "--backend",
            "cpu",
            "--input",
            "range1",
        ])
        .args(["--size", "1024", "--precision", precisions, "--out"])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn study_into_a_regular_file_is_refused_in_one_line_and_the_file_kept() {
    let d = Dir::new("out-file");
    let file = d.path().join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    let out = study(&file, "f32");
    assert!(!out.status.success());
    let e = assert_one_line(&out);
    assert!(
        e.contains(&format!(
            "{} is a regular file, not a directory: give a directory",
            file.display()
        )),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn a_fresh_study_moves_the_whole_previous_output_aside() {
    let d = Dir::new("aside");
    let out = d.path().join("out");
    let first = study(&out, "f32,f64");
    assert!(first.status.success(), "{}", stderr(&first));
    // A plot the next run does not draw, as an earlier run with more workloads leaves.
    std::fs::write(out.join("plots/stale.svg"), "<svg/>").unwrap();
    let read = |name: &str| std::fs::read(out.join(name)).unwrap();
    let (records, html, csv) = (
        read("results.jsonl"),
        read("report.html"),
        read("results.csv"),
    );
    std::fs::write(out.join("mine.txt"), "keep").unwrap();

    let second = study(&out, "f32");
    assert!(second.status.success(), "{}", stderr(&second));
    let asides: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("previous-")
        })
        .collect();
    assert_eq!(asides.len(), 1, "{asides:?}");
    let aside = &asides[0];
    assert!(
        stderr(&second).contains(&format!(
            "the previous output (records, report, CSV, plots) was moved to {}",
            aside.display()
        )),
        "{}",
        stderr(&second)
    );
    // Nothing old beside the new output; all of it, intact, aside.
    assert!(!out.join("plots/stale.svg").exists());
    assert!(aside.join("plots/stale.svg").exists());
    assert_eq!(std::fs::read(aside.join("results.jsonl")).unwrap(), records);
    assert_eq!(std::fs::read(aside.join("report.html")).unwrap(), html);
    assert_eq!(std::fs::read(aside.join("results.csv")).unwrap(), csv);
    assert_ne!(read("results.jsonl"), records);
    assert!(out.join("report.html").exists() && out.join("plots").is_dir());
    // The user's own file stays where it was.
    assert_eq!(
        std::fs::read_to_string(out.join("mine.txt")).unwrap(),
        "keep"
    );
}

#[test]
fn a_full_stdout_is_one_line_and_exit_1() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(mantissa_binary())
        .args(["ops", "--samples", "1000"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = assert_one_line(&out);
    assert!(
        e.starts_with("error: cannot write to standard output: No space left on device"),
        "{e}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_like_a_shell_tool() {
    // Run with SIGPIPE blocked, as some launchers leave it (a blocked signal survives exec): the
    // write then fails with EPIPE instead of killing the process.
    let mut cmd = Command::new(mantissa_binary());
    cmd.args(["ops", "--samples", "100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // The reader goes away before anything is printed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let e = stderr(&out);
    assert!(e.is_empty(), "{e}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}
