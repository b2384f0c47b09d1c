//! What `mantissa study` prints when a run ends: the summary and where the rest of the report is,
//! not every table; `--tables` prints every table as well.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh output directory, removed when dropped.
struct OutDir(PathBuf);

impl OutDir {
    fn new(tag: &str) -> OutDir {
        let d =
            std::env::temp_dir().join(format!("mantissa-cli-study-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        OutDir(d)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a small CPU study into a fresh directory and returns its stdout.
fn study(tag: &str, extra: &[&str]) -> (String, OutDir) {
    let dir = OutDir::new(tag);
    let out = Command::new(support::mantissa_binary())
        .args(["--threads", "2", "study", "sum", "--backend", "cpu"])
        .args([
            "--precision",
            "f32,f64",
            "--input",
            "range1",
            "--size",
            "1024",
        ])
        .arg("--out")
        .arg(dir.path())
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8(out.stdout).unwrap(), dir)
}

#[test]
fn study_prints_the_summary_and_where_the_rest_is() {
    let (stdout, dir) = study("summary", &[]);
    assert!(stdout.starts_with("# mantissa report"), "{stdout}");
    assert!(stdout.contains("## Summary"), "{stdout}");
    assert!(stdout.contains("### Cheapest precision per accuracy target"));
    // The zero-sum range1 arrays are judged by their absolute error, in rows of their own.
    assert!(stdout.contains("absolute (exact result 0)"), "{stdout}");
    // No workload section and none of its tables.
    assert!(!stdout.contains("## sum / serial"), "{stdout}");
    assert!(!stdout.contains("### Absolute error"), "{stdout}");
    // Where the rest is, by path, and how to see every table.
    for file in ["report.html", "results.csv", "plots", "results.jsonl"] {
        let path = dir.path().join(file).display().to_string();
        assert!(stdout.contains(&path), "{path} not named in {stdout}");
        assert!(dir.path().join(file).exists(), "{file} not written");
    }
    assert!(stdout.contains("--tables"), "{stdout}");
    assert!(
        stdout.contains(&format!("`mantissa report {}`", dir.path().display())),
        "{stdout}"
    );

    let (all, _dir) = study("tables", &["--tables"]);
    assert!(all.contains("## Summary"));
    assert!(all.contains("## sum / serial"), "{all}");
    assert!(all.contains("### Absolute error"), "{all}");
    assert!(all.lines().count() > stdout.lines().count());
    // The count the summary gave is the count --tables prints.
    let table_lines = all.split("\nThe report:\n").next().unwrap().lines().count();
    assert!(
        stdout.contains(&format!("Every table ({table_lines} lines of Markdown)")),
        "{table_lines} in {stdout}"
    );
}
