//! A tuning run split into shards, without a GPU: the shards' stores and documents are written
//! with the tune crate's own store and document code (as `mantissa tune --shard I/N` writes
//! them), then `mantissa merge` joins them into OUT/results.jsonl (where a resumed run finds
//! every trial), OUT/tune.json, the table and the report page — or refuses, in one line with exit
//! code 1, what is not every shard of one run. And `mantissa slurm -- tune …` writes the job
//! array, refusing without `--time` or with more shards than searches.
//! (The searches themselves need a GPU: crates/tune/tests/gpu_tune.rs.)

use crate::support;

use std::path::Path;
use std::process::Output;

use mantissa_gpu::FlagSet;
use mantissa_harness::Spec;
use mantissa_ptx::fiset::FisetOptions;
use mantissa_report::{Backend, Record, Shard, Store, StoreOptions};
use mantissa_tune::evaluate::ErrorThreshold;
use mantissa_tune::flow::{SearchEntry, TuneRequest, TuneRun};
use mantissa_tune::gpu::{References, TimingPolicy};
use mantissa_tune::noise::Time;
use mantissa_tune::store::{Identity, Measured, StoreShard, TrialStore};
use mantissa_tune::strategy::Search;
use mantissa_tune::units::ErrorCoverage;
use mantissa_tune::{Config, TuneUnit, TuneUnitKind};

/// The shipped example (tests run in the crate's directory).
const EXAMPLE: &str = "../../examples/tune/relax.toml";

use support::{mantissa, Dir};

/// The one line a refused command printed, checked to be one line with exit code `code`.
fn refused(out: Output, code: i32) -> String {
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr.trim_end().to_string()
}

/// 3 digits, 10% of the ideal, modes 1 and 2, the baseline: 3 searches.
fn request(digits: f64, shard: Option<Shard>) -> TuneRequest {
    TuneRequest {
        flags: FlagSet::DEFAULT,
        errors: vec![ErrorThreshold::Digits(digits)],
        speedups: vec![10.0],
        modes: vec![1, 2],
        baseline: true,
        exhaustive: false,
        fiset: FisetOptions::default(),
        policy: TimingPolicy::default(),
        out: None,
        resume: false,
        shard,
    }
}

fn identity() -> Identity {
    Identity {
        spec: "relax".into(),
        flags: "default".into(),
        device: "test".into(),
        backend: Backend::gpu(1, 1),
        name_devices: false,
    }
}

fn unit(name: &str) -> TuneUnit {
    TuneUnit {
        kind: TuneUnitKind::Fiset,
        name: name.into(),
        sites: Vec::new(),
        buffers: Vec::new(),
        math: Vec::new(),
        error: None,
        r_ac: Some(f64::INFINITY),
        lines: Vec::new(),
    }
}

fn config(units: &[usize]) -> Config {
    units.iter().copied().collect()
}

/// What a shard's run leaves in `dir`, as `mantissa tune --shard` writes it: its store (the units
/// record, its references, one trial of configuration {I}) and its document (its searches, each
/// having chosen {I}).
fn run_shard(dir: &Path, shard: &str, digits: f64, fingerprint: &str) {
    let shard: Shard = shard.parse().unwrap();
    let request = request(digits, Some(shard));
    let spec = Spec::load(Path::new(EXAMPLE)).unwrap();
    let settings = mantissa_tune::shard::settings(&spec, &request);
    let mut store = TrialStore::open(
        Some(dir),
        false,
        Some(StoreShard { shard, settings }),
        identity(),
        fingerprint,
    )
    .unwrap();
    let time = |ms: f64| Time {
        median_ms: ms,
        noise_ms: 0.01,
        reps: 10,
    };
    let i = shard.index() as usize;
    let t64 = time(2.0 + i as f64);
    store
        .reference_measured("f64", 0, t64, f64::INFINITY)
        .unwrap();
    store
        .reference_measured("all-f32", 0, time(1.0), 6.0)
        .unwrap();
    let m = Measured {
        digits: 5.0 + i as f64,
        within_tolerance: None,
        time: None,
        device: None,
        failed: None,
    };
    store.accuracy(&config(&[i]), &m).unwrap();
    drop(store);
    let trial = mantissa_tune::Trial {
        digits: f64::INFINITY,
        within_tolerance: None,
        speedup_pct: Some(40.0),
        noise_pct: Some(1.0),
        time_ms: Some(1.5),
        failed: None,
    };
    let searches = mantissa_tune::plan::plans(&request)
        .into_iter()
        .map(|p| SearchEntry {
            label: p.label(),
            unit: p.unit,
            units: p.strategy.over(),
            search: Search {
                strategy: p.strategy.name().to_string(),
                thresholds: p.thresholds,
                chosen: Some(config(&[i])),
                chosen_trial: Some(trial.clone()),
                trials: 1,
                log: vec![(config(&[i]), trial.clone())],
                first_met_at: Some(1),
                unused_ahead: 0,
            },
            saved: None,
            detail: None,
        })
        .collect();
    let run = TuneRun {
        spec: "relax".into(),
        device: "test".into(),
        flags: "default".into(),
        fisets: vec![unit("fiset 1 (relax.cu:3)"), unit("fiset 2 (relax.cu:9)")],
        variables: vec![unit("variable %fd1")],
        shared: 0,
        math: 0,
        buffers: 0,
        coverage: ErrorCoverage::default(),
        profile: Vec::new(),
        references: References {
            t64,
            t32: time(1.0),
            digits32: 6.0,
        },
        devices: Vec::new(),
        searches,
        device_trials: 1,
        resumed: 0,
        notes: vec![format!("shard {shard}'s note")],
        shard: Some(shard),
    };
    let text = serde_json::to_string_pretty(&run).unwrap();
    std::fs::write(dir.join(mantissa_tune::shard::document_file(shard)), text).unwrap();
}

#[test]
fn tune_shards_merge_into_the_whole_run_and_its_store() {
    let dir = Dir::new("merge");
    run_shard(dir.path(), "1/2", 3.0, "fp");
    run_shard(dir.path(), "0/2", 3.0, "fp");
    let out = mantissa(&["merge", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("of 2 shards of a `mantissa tune` run"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("mode 2, 3 digits, 10%"), "{stdout}");
    assert!(dir.path().join("tune.html").exists());
    let text = std::fs::read_to_string(dir.path().join("tune.json")).unwrap();
    let run: TuneRun = serde_json::from_str(&text).unwrap();
    assert_eq!(run.shard, None);
    let units: Vec<usize> = run.searches.iter().map(|s| s.unit).collect();
    assert_eq!(units, [0, 1, 2]);
    // Search k is shard k mod 2's, which chose {k mod 2}.
    let chosen: Vec<Config> = run
        .searches
        .iter()
        .map(|s| s.search.chosen.clone().unwrap())
        .collect();
    assert_eq!(chosen, [config(&[0]), config(&[1]), config(&[0])]);
    assert_eq!(run.searches[0].search.log[0].1.digits, f64::INFINITY);
    assert_eq!(run.device_trials, 2);
    assert_eq!(run.notes[..2], ["shard 0/2's note", "shard 1/2's note"]);
    assert!(
        run.notes[2]
            .contains("shard 0/2 f64 2.0000 ms, all-f32 1.0000 ms; shard 1/2 f64 3.0000 ms"),
        "{:?}",
        run.notes
    );
    // A resumed whole run finds every shard's trials in the merged store.
    let store = TrialStore::open(Some(dir.path()), true, None, identity(), "fp").unwrap();
    assert_eq!(store.known()[&config(&[0])].digits, 5.0);
    assert_eq!(store.known()[&config(&[1])].digits, 6.0);
    assert!(store.reference("f64", 0).is_some());
}

#[test]
fn merge_refuses_what_is_not_every_tune_shard_of_one_run_in_one_line() {
    let path = |d: &Dir| d.path().to_str().unwrap().to_string();
    // Another error threshold: the manifests differ.
    let d = Dir::new("settings");
    run_shard(d.path(), "0/2", 3.0, "fp");
    run_shard(d.path(), "1/2", 4.0, "fp");
    let e = refused(mantissa(&["merge", &path(&d)]), 1);
    assert!(e.contains("differ in settings.errors: 3 vs 4"), "{e}");
    // Other units: the fingerprints differ.
    let d = Dir::new("units");
    run_shard(d.path(), "0/2", 3.0, "fp");
    run_shard(d.path(), "1/2", 3.0, "other");
    let e = refused(mantissa(&["merge", &path(&d)]), 1);
    assert!(
        e.contains("differ in settings.unit-fingerprint: fp vs other"),
        "{e}"
    );
    // A missing shard, a duplicated one.
    let d = Dir::new("missing");
    run_shard(d.path(), "0/2", 3.0, "fp");
    let e = refused(mantissa(&["merge", &path(&d)]), 1);
    assert!(e.contains("shard 1/2 is missing"), "{e}");
    let twice = Dir::new("twice");
    run_shard(twice.path(), "0/2", 3.0, "fp");
    run_shard(twice.path(), "1/2", 3.0, "fp");
    let e = refused(mantissa(&["merge", &path(&d), &path(&twice)]), 1);
    assert!(e.contains("shard 0/2 appears twice"), "{e}");
    // A shard whose run did not finish: its store but no document.
    let d = Dir::new("unfinished");
    run_shard(d.path(), "0/2", 3.0, "fp");
    run_shard(d.path(), "1/2", 3.0, "fp");
    std::fs::remove_file(d.path().join("tune.shard-1-of-2.json")).unwrap();
    let e = refused(mantissa(&["merge", &path(&d)]), 1);
    assert!(
        e.contains("tune.shard-1-of-2.json is missing: shard 1/2's tuning run did not finish"),
        "{e}"
    );
    assert!(!d.path().join("results.jsonl").exists(), "nothing merged");
    // A document that is not its shard's: shard 0's searches in shard 1's.
    std::fs::copy(
        d.path().join("tune.shard-0-of-2.json"),
        d.path().join("tune.shard-1-of-2.json"),
    )
    .unwrap();
    let e = refused(mantissa(&["merge", &path(&d)]), 1);
    assert!(e.contains("shard 0/2 appears twice"), "{e}");
    let text = std::fs::read_to_string(d.path().join("tune.shard-0-of-2.json")).unwrap();
    let mut run: TuneRun = serde_json::from_str(&text).unwrap();
    run.shard = Some("1/2".parse().unwrap());
    std::fs::write(
        d.path().join("tune.shard-1-of-2.json"),
        serde_json::to_string(&run).unwrap(),
    )
    .unwrap();
    let e = refused(mantissa(&["merge", &path(&d)]), 1);
    assert!(
        e.contains("the document of shard 1/2 holds search 0 (mode 1, 3 digits) where its plan has 1 (mode 2, 3 digits, 10%)"),
        "{e}"
    );
    // Tune shards beside a study's.
    let study = Dir::new("study");
    let options = StoreOptions {
        resume: false,
        shard: Some("0/1".parse().unwrap()),
        manifest: Some(mantissa_report::Manifest::new("study", Default::default())),
    };
    drop(Store::<Record>::open_with(study.path(), options).unwrap());
    let e = refused(mantissa(&["merge", &path(&twice), &path(&study)]), 1);
    assert!(
        e.contains("hold shards of both `mantissa tune` and `mantissa study`"),
        "{e}"
    );
}

#[test]
fn slurm_writes_a_tune_job_array_given_its_time() {
    let d = Dir::new("slurm");
    let out = d.path().join("out");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["slurm", "--shards", "3", "--mantissa", "/opt/mantissa"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(
            [
                "--",
                "tune",
                EXAMPLE,
                "--digits",
                "3",
                "--speedup",
                "10",
                "--mode",
                "1,2",
                "--baseline",
                "--out",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        a.push(out.to_str().unwrap().to_string());
        a
    };
    let run = |a: Vec<String>| mantissa(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let e = refused(run(args(&[])), 2);
    assert!(e.contains("tune needs --time"), "{e}");
    assert!(!out.exists(), "nothing written");
    let done = run(args(&["--time", "2:00:00"]));
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let script = std::fs::read_to_string(out.join("mantissa-array.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-2\n"), "{script}");
    assert!(script.contains("#SBATCH --time=0-02:00:00\n"), "{script}");
    assert!(script.contains("#SBATCH --gpus=1\n"), "{script}");
    assert!(script.contains("#SBATCH --mem=4G\n"), "{script}");
    assert!(script.contains("'/opt/mantissa' 'tune'"), "{script}");
    assert!(
        script.contains("'--shard' \"${SLURM_ARRAY_TASK_ID}/3\""),
        "{script}"
    );
    let merge = std::fs::read_to_string(out.join("mantissa-merge.sbatch")).unwrap();
    assert!(merge.contains("'merge'"), "{merge}");
    // Four shards of three searches: one would have nothing to do.
    let mut four = args(&["--time", "2:00:00"]);
    four[2] = "4".into();
    let e = refused(run(four), 2);
    assert!(e.contains("this tuning run has 3 searches"), "{e}");
}
