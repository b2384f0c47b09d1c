//! SIGTERM (what Slurm sends at a job's time limit) and SIGINT (Ctrl-C) stop a long command the
//! same way: the finished records are kept whole, the command that finishes the run is printed,
//! and the exit status is 128 + the signal (143, 130). Run on the CPU: `study --backend cpu` and
//! mathlib's CPU columns, each signalled once its first record is written.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{mantissa_binary, Dir};

/// The lines of `file` (none while it does not exist).
fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Starts `mantissa ARGS`, waits until `records` holds a line, sends `signal`, and returns the
/// exit code, stderr and the lines the records held when the signal was sent.
fn signalled(args: &[&str], records: &Path, signal: i32) -> (Option<i32>, String, usize) {
    let mut child: Child = Command::new(mantissa_binary())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let seen = loop {
        let n = lines(records).len();
        if n > 0 {
            break n;
        }
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} ended ({}) before writing a record: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{args:?}: no record after 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: kill(2) on the child this test started and has not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        seen,
    )
}

/// Every line of `records` is a whole JSON object, and there are at least `seen` of them.
fn kept_whole(records: &Path, seen: usize) -> usize {
    let kept = lines(records);
    assert!(
        kept.len() >= seen,
        "{} lines, {seen} before the signal",
        kept.len()
    );
    for l in &kept {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(v.is_object(), "{l}");
    }
    kept.len()
}

fn study(signal: i32, code: i32, name: &str) {
    let dir = Dir::new(&format!("study-{name}"));
    let out = dir.path().to_str().unwrap();
    // Small f64 points first (records within a second), then an mp256 sum that takes minutes.
    let args = [
        "study",
        "sum",
        "--backend",
        "cpu",
        "--precision",
        "f64,mp256",
        "--size",
        "2^16,2^23",
        "--out",
        out,
    ];
    let records = dir.path().join("results.jsonl");
    let (status, stderr, seen) = signalled(&args, &records, signal);
    assert_eq!(status, Some(code), "{stderr}");
    assert!(stderr.contains(&format!("stopped by {name}")), "{stderr}");
    assert!(
        stderr.contains("stopping: the point running is dropped, finished ones are kept"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("To finish: mantissa study sum --backend cpu --precision f64,mp256 --size 2^16,2^23 --out {out} --resume")),
        "{stderr}"
    );
    kept_whole(&records, seen);
    // The report covers what was measured.
    assert!(dir.path().join("report.html").exists());
}

#[test]
fn study_on_sigterm_keeps_its_points_and_says_how_to_finish() {
    study(libc::SIGTERM, 143, "SIGTERM");
}

#[test]
fn study_on_sigint_keeps_its_points_and_says_how_to_finish() {
    study(libc::SIGINT, 130, "SIGINT");
}

fn mathlib(signal: i32, code: i32, name: &str) {
    let dir = Dir::new(&format!("mathlib-{name}"));
    let out = dir.path().to_str().unwrap();
    // Six functions of a second's search each: the signal comes after the first.
    let args = [
        "mathlib",
        "--functions",
        "sqrt,exp,log,sin,cos,tan",
        "--precision",
        "f64",
        "--budget",
        "1",
        "--cpu-only",
        "--out",
        out,
    ];
    let records = dir.path().join("mathlib.jsonl");
    let (status, stderr, seen) = signalled(&args, &records, signal);
    assert_eq!(status, Some(code), "{stderr}");
    assert!(stderr.contains(&format!("stopped by {name}")), "{stderr}");
    assert!(
        stderr.contains("stopping after the function running: it and the finished ones are kept"),
        "{stderr}"
    );
    let resume = format!("To finish: mantissa mathlib --functions sqrt,exp,log,sin,cos,tan --precision f64 --budget 1 --cpu-only --out {out} --resume");
    assert!(stderr.contains(&resume), "{stderr}");
    let kept = kept_whole(&records, seen);
    assert!(
        kept < 12,
        "2 libraries × 6 functions: the run was stopped early ({kept})"
    );
    // The printed command finishes the run, reading the kept functions back.
    let finish = Command::new(mantissa_binary())
        .args(args)
        .arg("--resume")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&finish.stderr);
    assert_eq!(finish.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("(from the records)"), "{stderr}");
    assert_eq!(lines(&records).len(), 12);
}

#[test]
fn mathlib_on_sigterm_keeps_its_functions_and_says_how_to_finish() {
    mathlib(libc::SIGTERM, 143, "SIGTERM");
}

#[test]
fn mathlib_on_sigint_keeps_its_functions_and_says_how_to_finish() {
    mathlib(libc::SIGINT, 130, "SIGINT");
}
