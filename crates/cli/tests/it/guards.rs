//! The guards on long work, end to end: `mantissa report` keeps every good record of a damaged
//! results file, `mantissa study` refuses a point that cannot fit in memory before allocating
//! it, and Ctrl-C stops a long point, keeps what finished and says how to resume.

use crate::support;

use std::path::PathBuf;
use std::process::Command;
use support::mantissa_binary;

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mantissa-cli-guards-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

#[test]
fn report_keeps_every_good_record_and_names_the_skipped_lines() {
    let d = scratch_dir("report");
    // Five records of a real run, four damaged lines between them and a torn last line.
    std::fs::write(
        d.join("results.jsonl"),
        include_bytes!("../../../report/src/fixtures/damaged.jsonl"),
    )
    .unwrap();
    let out = Command::new(mantissa_binary())
        .args(["report", "--no-html", d.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("not a record"))
        .collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    assert!(
        skipped[0].contains("skipped 4 lines")
            && skipped[0].contains("lines 3, 5, 7, 8; line 3: expected ident at column 2)")
            && skipped[0].contains("reporting the 5 records"),
        "{stderr}"
    );
    assert!(
        stderr.contains("last line of results.jsonl was incomplete"),
        "{stderr}"
    );
    // The CSV has a header and one row per good record.
    let csv = std::fs::read_to_string(d.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 5, "{csv}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_sum_that_cannot_fit_is_refused_in_one_line_before_anything_is_written() {
    let d = scratch_dir("refuse");
    let out_dir = d.join("out");
    let out = Command::new(mantissa_binary())
        .args([
            "study",
            "sum",
            "--size",
            "2^40",
            "--backend",
            "cpu",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    // Needed (2^40 f64 values and a converted copy: tens of TiB) against free memory.
    assert!(
        stderr.contains("sum")
            && stderr.contains("TiB of memory and")
            && stderr.contains("is free"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--size") && stderr.contains("--force"),
        "{stderr}"
    );
    assert!(!out_dir.exists(), "a refused run touches no file");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_run_of_hours_needs_force() {
    let d = scratch_dir("hours");
    let out = Command::new(mantissa_binary())
        // Six pair precisions on five classes: hours on any core count, 8 GiB at most a point.
        .args(["study", "lu", "--size", "8192"])
        .args(["--precision", "f64x2,comp64n,comp64,comp32n,comp32,f32x2"])
        .args(["--backend", "cpu", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    // 8 GiB for its largest point: refused for its length unless memory is short right now.
    if !stderr.contains("is free") {
        assert!(
            stderr.contains("estimated ~") && stderr.contains(" of CPU work (lu "),
            "{stderr}"
        );
    }
    std::fs::remove_dir_all(&d).ok();
}

/// Ctrl-C (SIGINT) in the middle of a long CPU point: the run stops at the next check, keeps the
/// points that finished, does not record the interrupted one, says how to resume and exits 130.
#[cfg(unix)]
#[test]
fn ctrl_c_inside_a_long_point_keeps_what_finished_and_says_how_to_resume() {
    use std::time::{Duration, Instant};
    let d = scratch_dir("sigint");
    let out_dir = d.join("out");
    // Two short sum points, then an f64x2 LU of order 2048 (about half a minute on one core).
    let mut child = Command::new(mantissa_binary())
        .args(["--threads", "1", "study", "sum", "lu", "--size", "2048"])
        .args([
            "--precision",
            "f64x2",
            "--input",
            "range1",
            "--backend",
            "cpu",
            "--out",
        ])
        .arg(&out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let results = out_dir.join("results.jsonl");
    let lines = || std::fs::read_to_string(&results).map_or(0, |t| t.lines().count());
    let waited = Instant::now();
    while lines() < 2 && waited.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(lines(), 2, "the sum points finish first");
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill only sends a signal to the child this test started.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    let asked = Instant::now();
    let status = child.wait().unwrap();
    let stopped_after = asked.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(lines(), 2, "the interrupted LU point is not recorded");
    assert!(
        stderr.contains("To finish: mantissa --threads 1 study sum lu --size 2048"),
        "{stderr}"
    );
    assert!(stderr.trim_end().contains("--resume"), "{stderr}");
    // Not a timing assertion: the LU point alone runs for tens of seconds; it stopped at a check.
    assert!(stopped_after < Duration::from_secs(15), "{stopped_after:?}");
    std::fs::remove_dir_all(&d).ok();
}

/// `--devices` text that names no set of GPUs is refused in one line, with the usage exit code,
/// before anything is probed or written; on a machine without GPUs a named GPU is an error, while
/// the default `all` goes on CPU-only.
#[test]
fn bad_device_lists_are_refused_before_anything_runs() {
    let d = scratch_dir("devices");
    let out_dir = d.join("out");
    for (command, list, says) in [
        ("study", "0,0", "GPU 0 is listed twice; list each GPU once"),
        ("study", "0,gpu1", "\"gpu1\" is not a GPU ordinal"),
        ("mathlib", "1,", "an empty item between commas"),
        ("mathlib", "", "no GPU named"),
    ] {
        let out = Command::new(mantissa_binary())
            .args([
                command,
                "--devices",
                list,
                "--out",
                out_dir.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command} --devices {list:?}: {stderr}"
        );
        let error: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(error.len(), 1, "{stderr}");
        assert!(error[0].contains(says), "{stderr}");
        assert!(
            !out_dir.exists(),
            "{command} --devices {list:?} wrote {out_dir:?}"
        );
    }
    if mantissa_gpu::device_count().is_err() {
        let out = Command::new(mantissa_binary())
            .args([
                "study",
                "sum",
                "--devices",
                "0",
                "--size",
                "64",
                "--precision",
                "f32",
            ])
            .args(["--out", out_dir.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("--devices 0: CPU only"), "{stderr}");
        assert!(!out_dir.exists(), "nothing written");
    }
    std::fs::remove_dir_all(&d).ok();
}
