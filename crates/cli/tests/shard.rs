//! Split runs: `--shard I/N` then `mantissa merge` gives the records a single process writes
//! (every field but times, dates and the shard header, in the same order), for a study and for
//! mathlib; a resumed shard measures exactly the units its file lacks; and merge refuses, in one
//! line with exit code 1, anything that is not every shard of one run.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use support::{mantissa, Dir};

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A small CPU study (12 points, seconds), into `out`, with `extra` options.
fn study(out: &Path, extra: &[&str]) -> Output {
    study_on("cpu", out, extra)
}

/// The same study on `backend`.
fn study_on(backend: &str, out: &Path, extra: &[&str]) -> Output {
    let out = out.to_str().unwrap();
    let mut args = vec!["--threads", "2", "study", "sum", "--backend", backend];
    args.extend([
        "--precision",
        "f32,f64",
        "--input",
        "range1",
        "--size",
        "1024,2048",
        "--out",
        out,
    ]);
    args.extend(extra);
    mantissa(&args)
}

/// The lines of a store file as JSON, with what differs between two runs of the same work
/// removed: times (a study point's `time`, a mathlib column's `seconds`), dates, and the shard
/// header.
fn comparable(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            for k in ["time", "date", "shard", "unit"] {
                o.remove(k);
            }
            if let Some(m) = o.get_mut("measurement").and_then(Value::as_object_mut) {
                assert!(m.remove("seconds").is_some());
            }
            v
        })
        .collect()
}

/// A small CPU-only mathlib run (8 units) into `out`. The budget of 1 ns ends each search after
/// its first batch of the evenly spread binary32 sample (and the random phase of binary64 before
/// it starts), so the figures do not depend on how fast the machine is.
fn mathlib(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "--threads",
        "2",
        "mathlib",
        "--cpu-only",
        "--functions",
        "sin,cos,exp,log",
        "--precision",
        "f32,f64",
        "--budget",
        "1e-9",
        "--cpu-sample",
        "256",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    mantissa(&args)
}

/// The one line a refused command printed, checked to be one line with exit code 1.
fn refused(out: Output) -> String {
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr.trim_end().to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_study_in_three_shards_merges_into_the_single_run_records() {
    let single = Dir::new("single");
    ok(study(single.path(), &[]));
    let shards = Dir::new("three");
    for i in 0..3 {
        let shard = format!("{i}/3");
        let out = ok(study(shards.path(), &["--shard", &shard]));
        // A shard writes no report and says where its records went.
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.contains(&format!("results.shard-{i}-of-3.jsonl")),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "a shard prints no report");
    }
    assert!(!shards.path().join("report.html").exists());
    assert!(!shards.path().join("results.jsonl").exists());

    let merged = ok(mantissa(&["merge", shards.path().to_str().unwrap()]));
    let stdout = String::from_utf8(merged.stdout).unwrap();
    assert!(stdout.starts_with("# mantissa report"), "{stdout}");
    for f in ["report.html", "results.csv", "plots"] {
        assert!(shards.path().join(f).exists(), "{f}");
    }
    let want = comparable(&single.path().join("results.jsonl"));
    let got = comparable(&shards.path().join("results.jsonl"));
    assert_eq!(want.len(), 12);
    assert_eq!(got, want);
    // The merged lines have no shard header at all.
    let text = std::fs::read_to_string(shards.path().join("results.jsonl")).unwrap();
    assert!(!text.contains("\"shard\"") && !text.contains("\"unit\""));

    // Refusals. A missing shard:
    let two = Dir::new("missing");
    copy_dir(shards.path(), two.path());
    std::fs::remove_file(two.path().join("results.shard-2-of-3.jsonl")).unwrap();
    let line = refused(mantissa(&["merge", two.path().to_str().unwrap()]));
    assert_eq!(
        line,
        format!("error: shard 2/3 is missing in {}", two.path().display())
    );
    // A duplicated shard (the same shard in two directories):
    let dup = Dir::new("dup");
    std::fs::copy(
        shards.path().join("results.shard-1-of-3.jsonl"),
        dup.path().join("results.shard-1-of-3.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        shards.path().join("store.shard-1-of-3.json"),
        dup.path().join("store.shard-1-of-3.json"),
    )
    .unwrap();
    let line = refused(mantissa(&[
        "merge",
        shards.path().to_str().unwrap(),
        dup.path().to_str().unwrap(),
    ]));
    assert!(
        line.starts_with("error: shard 1/3 appears twice: "),
        "{line}"
    );
    // A mix of a whole run and shards:
    let line = refused(mantissa(&[
        "merge",
        shards.path().to_str().unwrap(),
        single.path().to_str().unwrap(),
    ]));
    assert!(
        line.contains("cannot merge a mix of sharded and unsharded stores"),
        "{line}"
    );
    // Nothing to merge:
    let empty = Dir::new("empty");
    let line = refused(mantissa(&["merge", empty.path().to_str().unwrap()]));
    assert!(line.contains("no shard stores"), "{line}");
}

#[test]
fn shards_of_other_settings_are_refused_naming_the_setting() {
    let dir = Dir::new("settings");
    ok(study(dir.path(), &["--shard", "0/2"]));
    ok(study(dir.path(), &["--shard", "1/2", "--seed", "7"]));
    let line = refused(mantissa(&["merge", dir.path().to_str().unwrap()]));
    assert!(line.ends_with("differ in settings.seed: 1 vs 7"), "{line}");
    assert!(
        line.contains("shards 0/2 (") && line.contains(") and 1/2 ("),
        "{line}"
    );
}

#[test]
fn a_resumed_shard_appends_exactly_the_units_its_file_lacks() {
    let dir = Dir::new("resume");
    ok(study(dir.path(), &["--shard", "1/4"]));
    let path = dir.path().join("results.shard-1-of-4.jsonl");
    let full = std::fs::read_to_string(&path).unwrap();
    let units = |text: &str| -> Vec<u64> {
        text.lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["unit"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    // Units 1, 5 and 9 of the 12.
    assert_eq!(units(&full), [1, 5, 9]);
    // Killed after its first record, in the middle of writing the second.
    let first = full.lines().next().unwrap().len() + 1;
    let torn = format!("{}{}", &full[..first], &full[first..first + 40]);
    std::fs::write(&path, &torn).unwrap();

    let out = ok(study(dir.path(), &["--shard", "1/4", "--resume"]));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("1 points already measured"), "{stderr}");
    assert!(stderr.contains("2 points measured"), "{stderr}");
    let resumed = std::fs::read_to_string(&path).unwrap();
    assert!(
        resumed.starts_with(&full[..first]),
        "the kept line is untouched"
    );
    assert_eq!(
        units(&resumed),
        [1, 5, 9],
        "exactly the missing units, once each"
    );

    // Resuming with other settings is refused in one line naming the difference.
    let out = study(dir.path(), &["--shard", "1/4", "--resume", "--seed", "3"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert!(
        stderr.contains("settings.seed = 1, this run has settings.seed = 3"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), resumed);
}

#[test]
fn a_mathlib_run_in_three_shards_merges_into_the_single_run_records() {
    let single = Dir::new("mathlib-single");
    ok(mathlib(single.path(), &[]));
    let shards = Dir::new("mathlib-three");
    for i in 0..3 {
        let out = ok(mathlib(shards.path(), &["--shard", &format!("{i}/3")]));
        assert!(out.stdout.is_empty(), "a shard prints no tables");
    }
    assert!(!shards.path().join("mathlib.html").exists());
    let merged = ok(mantissa(&["merge", shards.path().to_str().unwrap()]));
    let stdout = String::from_utf8(merged.stdout).unwrap();
    let stderr = String::from_utf8(merged.stderr).unwrap();
    assert!(stderr.contains("of a `mantissa mathlib` run"), "{stderr}");
    // The tables a single run prints, and its page.
    let single_run = ok(mathlib(Dir::new("mathlib-again").path(), &[]));
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("## "))
            .collect::<Vec<_>>(),
        String::from_utf8(single_run.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("## "))
            .collect::<Vec<_>>()
    );
    assert!(shards.path().join("mathlib.html").exists());
    let want = comparable(&single.path().join("mathlib.jsonl"));
    let got = comparable(&shards.path().join("mathlib.jsonl"));
    // sin, cos, exp and log in f32 and f64, a std and a libm column each.
    assert_eq!(want.len(), 16);
    assert_eq!(got, want);

    // Merge refuses shards of different commands in one line.
    let study_shards = Dir::new("mathlib-and-study");
    ok(study(study_shards.path(), &["--shard", "0/1"]));
    copy_dir(shards.path(), study_shards.path());
    let line = refused(mantissa(&["merge", study_shards.path().to_str().unwrap()]));
    assert!(
        line.contains("hold shards of both `mantissa study`"),
        "{line}"
    );
}

/// On a GPU machine (skips with a printed reason elsewhere; fails under MANTISSA_REQUIRE_GPU=1):
/// the units run on from the CPU plan into the GPU plan, every shard runs its share of both, and
/// the merge equals the single run, GPU points included.
#[test]
fn a_cpu_and_gpu_study_in_two_shards_merges_into_the_single_run_records() {
    if mantissa_gpu::testing::require_gpu_or_skip().is_none() {
        return;
    }
    let gpu = |dir: &Path, extra: &[&str]| ok(study_on("all", dir, extra));
    let single = Dir::new("gpu-single");
    gpu(single.path(), &[]);
    let shards = Dir::new("gpu-two");
    for i in 0..2 {
        gpu(shards.path(), &["--shard", &format!("{i}/2")]);
    }
    // Each shard ran GPU points, numbered after every CPU point.
    let want = comparable(&single.path().join("results.jsonl"));
    let cpu_points = want
        .iter()
        .filter(|r| r["backend"]["kind"] == "cpu")
        .count() as u64;
    assert!(cpu_points > 0 && (want.len() as u64) > cpu_points + 2);
    for i in 0..2 {
        let text =
            std::fs::read_to_string(shards.path().join(format!("results.shard-{i}-of-2.jsonl")))
                .unwrap();
        let gpu_units: Vec<u64> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["backend"]["kind"] != "cpu")
            .map(|r| r["unit"].as_u64().unwrap())
            .collect();
        assert!(!gpu_units.is_empty(), "shard {i}/2 ran no GPU point");
        assert!(gpu_units.iter().all(|&u| u >= cpu_points && u % 2 == i));
    }
    ok(mantissa(&["merge", shards.path().to_str().unwrap()]));
    assert_eq!(comparable(&shards.path().join("results.jsonl")), want);
}
