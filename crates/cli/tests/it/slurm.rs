//! `mantissa slurm` against a real Slurm, and `--shard` with `--resume` after a kill.
//!
//! The job-array test needs a controller `sinfo` can reach: `bash scripts/slurm-local.sh start`
//! brings up a one-node cluster on this machine (CI does, and sets MANTISSA_REQUIRE_SLURM=1).
//! Without one it skips with the reason printed, unless MANTISSA_REQUIRE_SLURM=1, where it
//! fails. Where SLURM_CONF is not set, the local cluster's configuration is used if present.
//!
//! The records of a sharded run are compared with a single process's by value: every field but
//! times, dates and the shard's own header fields, in the same order.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The small CPU study both tests run: 2 workloads, 2 sizes, 3 precisions, one thread (so that
/// two shards run at once on a 2-CPU node); 39 points, each a few milliseconds.
const STUDY: &[&str] = &[
    "study",
    "sum",
    "dot",
    "--backend",
    "cpu",
    "--size",
    "1024,4096",
    "--precision",
    "f32,f64,f64x2",
    "--input",
    "range1",
    "--threads",
    "1",
];

/// Record fields that differ between two runs of the same points: times, dates, and the
/// shard's own header (which shard, which unit, which host or process wrote it).
const NOT_VALUES: &[&str] = &[
    "time", "date", "seconds", "shard", "shards", "unit", "units", "host", "hostname", "pid",
    "started", "finished",
];

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("mantissa-slurm-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The Slurm configuration to use: SLURM_CONF, else scripts/slurm-local.sh's if it exists.
fn slurm_conf() -> Option<PathBuf> {
    if let Some(c) = std::env::var_os("SLURM_CONF") {
        return Some(PathBuf::from(c));
    }
    let dir = std::env::var_os("SLURM_LOCAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/mantissa-slurm"));
    Some(dir.join("slurm.conf")).filter(|c| c.is_file())
}

/// A Slurm client command, pointed at the configuration.
fn slurm(program: &str) -> Command {
    let mut c = Command::new(program);
    if let Some(conf) = slurm_conf() {
        c.env("SLURM_CONF", conf);
    }
    c
}

/// Whether a controller answers; otherwise the reason is printed (and is a failure under
/// MANTISSA_REQUIRE_SLURM=1).
fn cluster_is_up(test: &str) -> bool {
    // Without a configuration file sinfo retries for a minute before it gives up: look first.
    let conf = slurm_conf().unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"));
    let answer = if conf.is_file() {
        slurm("sinfo")
            .args(["--noheader", "--format=%T"])
            .output()
            .map_err(|e| format!("sinfo cannot run ({e}): Slurm's clients are not installed"))
    } else {
        Err(format!(
            "no Slurm configuration at {} (SLURM_CONF names one elsewhere)",
            conf.display()
        ))
    };
    let why = match answer {
        Err(why) => why,
        Ok(o) if o.status.success() && !o.stdout.is_empty() => return true,
        Ok(o) => format!(
            "sinfo cannot reach a controller: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("no answer")
        ),
    };
    if std::env::var("MANTISSA_REQUIRE_SLURM").as_deref() == Ok("1") {
        panic!("{test}: {why}, but MANTISSA_REQUIRE_SLURM=1 (start one with scripts/slurm-local.sh start)");
    }
    eprintln!("skipping {test}: {why} (scripts/slurm-local.sh start brings up a local one)");
    false
}

/// `mantissa ARGS --out OUT`.
fn mantissa(args: &[&str], out: &[&Path]) -> Output {
    Command::new(support::mantissa_binary())
        .args(args)
        .args(out.iter().flat_map(|o| [Path::new("--out"), *o]))
        .output()
        .unwrap()
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `v` without the fields of [`NOT_VALUES`], at any depth.
fn values(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.retain(|k, _| !NOT_VALUES.contains(&k.as_str()));
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// The whole JSON lines of `path` (a torn last line is not a record).
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!("{}: a line that is not JSON ({e}): {l}", path.display())
            })
        })
        .collect()
}

/// What identifies a study point's record (`--resume` skips a point by it).
fn key(r: &Value) -> String {
    [
        "workload",
        "algorithm",
        "input",
        "size",
        "seed",
        "precision",
        "backend",
        "flags",
        "device",
    ]
    .iter()
    .map(|k| r.get(*k).map_or("-".to_string(), Value::to_string))
    .collect::<Vec<_>>()
    .join(" ")
}

/// Every file of `dir/logs`, for a failure's message.
fn logs(dir: &Path) -> String {
    let mut s = String::new();
    let Ok(entries) = std::fs::read_dir(dir.join("logs")) else {
        return format!("(no {}/logs)", dir.display());
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        s += &format!(
            "----- {}\n{}\n",
            p.display(),
            std::fs::read_to_string(&p).unwrap_or_default()
        );
    }
    s
}

/// The job ids in submit.sh's output: "submitted job array J…" and "submitted merge job M…".
fn job_ids(submitted: &str) -> (String, String) {
    let after = |marker: &str| {
        submitted
            .split(marker)
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| panic!("no {marker:?} id in submit.sh's output: {submitted}"))
            .to_string()
    };
    (after("submitted job array "), after("submitted merge job "))
}

/// Waits until neither job is queued or running, then returns every task's final state;
/// cancels both and fails with the logs after `limit`.
fn wait_for(jobs: &[&str], limit: Duration, dir: &Path) -> Vec<String> {
    let started = Instant::now();
    loop {
        let q = slurm("squeue")
            .args(["--noheader", "--format=%i %T", "--jobs"])
            .arg(jobs.join(","))
            .output()
            .unwrap();
        let queued = String::from_utf8_lossy(&q.stdout).trim().to_string();
        if q.status.success() && queued.is_empty() {
            break;
        }
        // A merge whose dependency can never be met stays queued forever: give up at once.
        if queued.contains("DependencyNeverSatisfied") || started.elapsed() > limit {
            let _ = slurm("scancel").args(jobs).status();
            panic!(
                "jobs {jobs:?} not done after {:?} (squeue: {queued}):\n{}",
                started.elapsed(),
                logs(dir)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    jobs.iter()
        .flat_map(|j| {
            let o = slurm("scontrol").args(["show", "job", j]).output().unwrap();
            let text = String::from_utf8_lossy(&o.stdout).to_string();
            text.split_whitespace()
                .filter_map(|w| w.strip_prefix("JobState="))
                .map(|s| format!("{j} {s}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_study_in_four_shards_on_slurm_merges_to_the_single_process_records() {
    if !cluster_is_up("a_study_in_four_shards_on_slurm_merges_to_the_single_process_records") {
        return;
    }
    let tmp = TempDir::new("array");
    let sharded = tmp.0.join("sharded");
    let single = tmp.0.join("single");

    let mut args = vec!["slurm", "--shards", "4", "--"];
    args.extend(STUDY);
    let printed = ok(mantissa(&args, &[&sharded]), "mantissa slurm");
    let submit = sharded.join("submit.sh");
    assert!(
        printed.contains(&format!("bash '{}'", submit.display())),
        "{printed}"
    );
    let array = std::fs::read_to_string(sharded.join("mantissa-array.sbatch")).unwrap();
    assert!(array.contains("#SBATCH --array=0-3"), "{array}");
    assert!(array.contains("#SBATCH --cpus-per-task=1"), "{array}");
    assert!(
        !array.contains("#SBATCH --gpus"),
        "a CPU study asks for no GPU: {array}"
    );

    let submitted = ok(
        slurm("bash").arg(&submit).output().unwrap(),
        "bash submit.sh",
    );
    let (array_job, merge_job) = job_ids(&submitted);
    let states = wait_for(
        &[&array_job, &merge_job],
        Duration::from_secs(600),
        &sharded,
    );
    // Four array tasks and the merge, each COMPLETED (exit 0).
    assert_eq!(states.len(), 5, "{states:?}\n{}", logs(&sharded));
    assert!(
        states.iter().all(|s| s.ends_with(" COMPLETED")),
        "{states:?}\n{}",
        logs(&sharded)
    );

    ok(mantissa(STUDY, &[&single]), "the single-process study");
    let merged = records(&sharded.join(mantissa_report::RESULTS_FILE));
    let alone = records(&single.join(mantissa_report::RESULTS_FILE));
    assert_eq!(alone.len(), 39, "the configuration's points");
    assert_eq!(merged.len(), alone.len(), "{}", logs(&sharded));
    for (i, (m, a)) in merged.into_iter().zip(alone).enumerate() {
        assert_eq!(values(m), values(a), "record {i} differs");
    }
    // The merged report is there too.
    assert!(sharded.join(mantissa_report::HTML_FILE).is_file());
}

/// Runs shard 1 of 4 of [`STUDY`] into `out`, with `--resume` when asked.
fn shard(out: &Path, resume: bool) -> Command {
    let mut c = Command::new(support::mantissa_binary());
    c.args(STUDY).args(["--shard", "1/4", "--out"]).arg(out);
    if resume {
        c.arg("--resume");
    }
    c
}

const SHARD_FILE: &str = "results.shard-1-of-4.jsonl";

/// After a shard's file lost its end (a kill: whole records and maybe a torn line), `--resume`
/// completes it: the records before the loss are kept as they were (not re-run), no point is
/// recorded twice, and the points are the uninterrupted shard's, with the same values.
fn check_resumed(out: &Path, kept: &[String], full: &[Value]) {
    ok(shard(out, true).output().unwrap(), "the resumed shard");
    let text = std::fs::read_to_string(out.join(SHARD_FILE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= kept.len(), "{text}");
    assert_eq!(
        &lines[..kept.len()],
        kept,
        "the records written before the kill were rewritten"
    );
    let resumed = records(&out.join(SHARD_FILE));
    let keys: Vec<String> = resumed.iter().map(key).collect();
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        keys.len(),
        "a point was recorded twice: {keys:?}"
    );
    let mut want: Vec<(String, Value)> = full.iter().map(|r| (key(r), values(r.clone()))).collect();
    let mut got: Vec<(String, Value)> = resumed
        .iter()
        .map(|r| (key(r), values(r.clone())))
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want, "the resumed shard's points are not the shard's");
}

#[test]
fn a_killed_shard_resumes_without_repeating_finished_points() {
    let tmp = TempDir::new("kill");
    // The uninterrupted shard: what a resumed one must end as.
    let whole = tmp.0.join("whole");
    ok(shard(&whole, false).output().unwrap(), "shard 1/4");
    let full = records(&whole.join(SHARD_FILE));
    // Shard 1 of 39 points: points 1, 5, …, 37.
    assert_eq!(full.len(), 10, "shard 1/4 of the study's 39 points");
    let full_text = std::fs::read_to_string(whole.join(SHARD_FILE)).unwrap();
    let full_lines: Vec<String> = full_text.lines().map(String::from).collect();

    // A kill mid-write, made exact: two whole records and half of the third.
    let torn = tmp.0.join("torn");
    std::fs::create_dir_all(&torn).unwrap();
    let half = &full_lines[2][..full_lines[2].len() / 2];
    std::fs::write(
        torn.join(SHARD_FILE),
        format!("{}\n{}\n{half}", full_lines[0], full_lines[1]),
    )
    .unwrap();
    check_resumed(&torn, &full_lines[..2], &full);

    // A real kill (SIGKILL) once the first record is on disk.
    let killed = tmp.0.join("killed");
    let mut child = shard(&killed, false)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let file = killed.join(SHARD_FILE);
    let started = Instant::now();
    let finished_alone = loop {
        if std::fs::read_to_string(&file).is_ok_and(|t| t.contains('\n')) {
            child.kill().unwrap();
            break child.wait().unwrap().success();
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status.success();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "shard 1/4 wrote nothing"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let kept: Vec<String> = text.lines().map(String::from).collect();
    // Whole lines only: a torn last line (no newline yet) is not kept.
    let whole_lines = if text.ends_with('\n') {
        kept.len()
    } else {
        kept.len().saturating_sub(1)
    };
    if finished_alone {
        eprintln!(
            "note: shard 1/4 finished before it could be killed; the torn file above stands for it"
        );
    } else {
        eprintln!(
            "killed shard 1/4 with {whole_lines} of its {} points on disk",
            full.len()
        );
    }
    check_resumed(&killed, &kept[..whole_lines], &full);
}
