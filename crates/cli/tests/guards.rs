//! The guards on long work, end to end: `mantissa report` keeps every good record of a damaged
//! results file, `mantissa study` refuses a point that cannot fit in memory before allocating
//! it, and Ctrl-C stops a long point, keeps what finished and says how to resume.

mod support;

use std::path::PathBuf;
use std::process::Command;
use support::mantissa_binary;

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "mantissa-cli-guards-{tag}-{}",
        std::process::id()
    ));
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
        include_bytes!("../../report/src/fixtures/damaged.jsonl"),
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
        .filter(|l| l.contains("skipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    assert!(
        skipped[0].contains("skipped 4 lines")
            && skipped[0].contains("lines 3, 5, 7, 8;")
            && skipped[0].contains("reporting the 5 records"),
        "{stderr}"
    );
    assert!(stderr.contains("last line of results.jsonl was incomplete"), "{stderr}");
    // The CSV has a header and one row per good record.
    let csv = std::fs::read_to_string(d.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 5, "{csv}");
    std::fs::remove_dir_all(&d).ok();
}
