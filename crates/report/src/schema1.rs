//! Reading schema-1 records (every `results.jsonl` written before schema 2) in the current shape.
//!
//! Schema 1 had no `schema` field, 1-D GPU launches (read as `[n, 1, 1]` by the backend's
//! deserialiser), no flag set, no build facts, no git revision and no descriptions of its `extra`
//! quantities. This module is the one place that knows the old quantity names and what the study
//! meant by them when it wrote schema 1 (thresholds included: LU's 1e-4, intensity's 70%), so that
//! an old file reads like a new one and the report itself hard-codes no study knowledge.
//! Schema-2 records describe their quantities themselves and never pass through here.

use crate::record::{Backend, Record, DEFAULT_FLAGS};

/// What schema-1 records' `extra` quantities meant: (workload or `*` for any, name, description).
/// A name ending in `.` is a prefix (`ptx.` covers `ptx.add.f64`); the first match wins, so
/// workload-specific rows come before `*` rows.
const DESCRIPTIONS: &[(&str, &str, &str)] = &[
    (
        "lu",
        "mismatches",
        "Entries with |L·U − A| > 1e-4 (seed 000 Table 17)",
    ),
    (
        "lu",
        "mismatch_pct",
        "% of entries with |L·U − A| > 1e-4 (seed 000 Table 17)",
    ),
    (
        "*",
        "gflops",
        "GFLOP/s: 2/3·n³ operations per median time, in 10^9 per second",
    ),
    (
        "intensity",
        "saturated",
        "Saturated (1 = above 70% of the device's FP ceiling)",
    ),
    (
        "intensity",
        "differs_from_cpu",
        "Sampled GPU results whose bits differ from the CPU model",
    ),
    ("intensity", "elements", "Elements computed per point"),
    (
        "intensity",
        "fp32_ginstr_s",
        "f32 arithmetic instructions per second (10^9), all threads",
    ),
    (
        "intensity",
        "fp64_ginstr_s",
        "f64 arithmetic instructions per second (10^9), all threads",
    ),
    (
        "intensity",
        "fp32_of_peak",
        "f32 instruction rate over the device's f32 FMA instruction ceiling",
    ),
    (
        "intensity",
        "fp64_of_peak",
        "f64 instruction rate over the device's f64 FMA instruction ceiling",
    ),
    (
        "intensity",
        "rel_err_mean",
        "Mean relative error against exact arithmetic over 16 sampled elements",
    ),
    (
        "intensity",
        "rel_err_max",
        "Largest relative error against exact arithmetic over 16 sampled elements",
    ),
    (
        "intensity",
        "ptx.",
        "PTX floating-point instructions each thread executes",
    ),
    (
        "*",
        "gmul_per_s",
        "Multiplications per second over all threads, in 10^9",
    ),
    (
        "*",
        "gsteps_per_s",
        "Do/undo steps per second over all threads, in 10^9",
    ),
    (
        "*",
        "threads",
        "Threads of the launch, each running a chain",
    ),
    (
        "*",
        "threads_scored",
        "Threads whose relative error was measured (up to 4096, evenly spaced)",
    ),
    (
        "*",
        "threads_nonfinite",
        "Scored threads whose result is not finite",
    ),
    (
        "*",
        "rel_mean_threads",
        "Mean relative error over the scored threads with finite results",
    ),
    (
        "*",
        "rel_max_threads",
        "Largest relative error over the scored threads with finite results",
    ),
    (
        "*",
        "ptx.",
        "PTX floating-point instructions in the kernel (static count)",
    ),
];

/// The description of a schema-1 `extra` quantity of `workload`, if the table knows it.
fn description(workload: &str, name: &str) -> Option<&'static str> {
    DESCRIPTIONS
        .iter()
        .find(|(w, n, _)| {
            (*w == "*" || *w == workload)
                && if n.ends_with('.') {
                    name.starts_with(n)
                } else {
                    name == *n
                }
        })
        .map(|(_, _, d)| *d)
}

/// The flag set a schema-1 GPU record's kernels were built with: every schema-1 GPU workload
/// compiled with the NVRTC defaults except do/undo's `div-full` mode, which needs
/// `--prec-div=false` (flag set `approx-div`).
fn flags(r: &Record) -> Option<&'static str> {
    match r.backend {
        Backend::Cpu { .. } => None,
        _ if r.workload == "doundo" && r.algorithm == "div-full" => Some("approx-div"),
        _ => Some(DEFAULT_FLAGS),
    }
}

/// Gives a schema-1 record the fields of the current schema: descriptions of its known `extra`
/// quantities, the flag set of GPU points, and `unknown` for the revision it did not record. The
/// record keeps `schema: 1`.
pub(crate) fn migrate(r: &mut Record) {
    for name in r.extra.keys() {
        if r.descriptions.contains_key(name) {
            continue;
        }
        if let Some(d) = description(&r.workload, name) {
            r.descriptions.insert(name.clone(), d.to_string());
        }
    }
    if r.flags.is_none() {
        r.flags = flags(r).map(String::from);
    }
    if r.git_revision.is_empty() {
        r.git_revision = "unknown".into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{point_key, ResultsLog, RESULTS_FILE, SCHEMA};

    /// A line of docs/results/h200-quick-all as schema 1 wrote it (an intensity GPU point).
    const INTENSITY: &str = r#"{"workload":"intensity","algorithm":"add","input":"intensity","size":1000,"seed":1,"precision":"f32","backend":{"kind":"gpu","grid":1,"block":256},"device":"NVIDIA H200","status":"ok","value":1.5,"reference":1.5,"error":{"abs":0.0,"rel":0.0,"ulps":0.0,"digits":99.0},"time":{"median_ms":0.01,"min_ms":0.01,"max_ms":0.02,"reps":5},"extra":{"ptx.add.f32":1000.0,"saturated":0.0,"mystery":2.0},"version":"0.1.0","date":"2026-11-22T20:12:29Z"}"#;

    fn with(line: &str, workload: &str, algorithm: &str) -> String {
        line.replace(
            "\"intensity\",\"algorithm\":\"add\"",
            &format!("\"{workload}\",\"algorithm\":\"{algorithm}\""),
        )
    }

    #[test]
    fn a_schema_1_line_gets_the_v2_shape() {
        let r = Record::from_json_line(INTENSITY).unwrap();
        assert_eq!(r.schema, 1);
        assert_eq!(r.backend, Backend::gpu(1, 256));
        assert_eq!(r.flags.as_deref(), Some("default"));
        assert_eq!(r.git_revision, "unknown");
        assert_eq!(r.build, None);
        // The thresholds the report used to hard-code come from the migration table now.
        assert!(r.descriptions["saturated"].contains("70%"), "{r:?}");
        assert!(r.descriptions["ptx.add.f32"].contains("each thread executes"));
        // A name the table does not know stays undescribed rather than guessed.
        assert!(!r.descriptions.contains_key("mystery"));
        // Written again, it has every field a schema-2 line has (build aside: it has none).
        let line = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        for field in ["schema", "flags", "descriptions", "git_revision", "version"] {
            assert!(v.get(field).is_some(), "{field} missing in {line}");
        }
        assert_eq!(v["backend"]["grid"], serde_json::json!([1, 1, 1]));
        assert_eq!(v["backend"]["block"], serde_json::json!([256, 1, 1]));
        // And reads back as the same record.
        assert_eq!(Record::from_json_line(&line).unwrap(), r);

        let lu = Record::from_json_line(
            &with(INTENSITY, "lu", "blocked").replace("\"saturated\"", "\"mismatches\""),
        )
        .unwrap();
        assert!(lu.descriptions["mismatches"].contains("1e-4"));
        assert!(lu.descriptions["ptx.add.f32"].contains("static count"));
        let full = Record::from_json_line(&with(INTENSITY, "doundo", "div-full")).unwrap();
        assert_eq!(full.flags.as_deref(), Some("approx-div"));
        let cpu = Record::from_json_line(&INTENSITY.replace(
            r#"{"kind":"gpu","grid":1,"block":256}"#,
            r#"{"kind":"cpu","threads":4}"#,
        ))
        .unwrap();
        assert_eq!(cpu.flags, None);
    }

    #[test]
    fn schema_2_lines_are_not_migrated() {
        let mut r = Record::from_json_line(INTENSITY).unwrap();
        r.schema = SCHEMA;
        r.descriptions.clear();
        r.flags = None;
        r.git_revision = "0123456789ab".into();
        let back = Record::from_json_line(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn resume_over_a_schema_1_file_recognises_its_points() {
        let dir = tempfile::tempdir().unwrap();
        let cpu = INTENSITY.replace(
            r#"{"kind":"gpu","grid":1,"block":256}"#,
            r#"{"kind":"cpu","threads":4}"#,
        );
        let full = with(INTENSITY, "doundo", "div-full");
        std::fs::write(
            dir.path().join(RESULTS_FILE),
            format!("{INTENSITY}\n{cpu}\n{full}\n"),
        )
        .unwrap();
        let log = ResultsLog::open(dir.path(), true).unwrap();
        assert_eq!(log.previous_records(), 3);
        let key = |w: &str, a: &str, b: Backend, flags: Option<&str>| {
            point_key(w, a, "intensity", 1000, 1, "f32", &b, "NVIDIA H200", flags)
        };
        let gpu = Backend::gpu(1, 256);
        // The runner may name the default flag set or none: the same point either way.
        assert!(log.contains(&key("intensity", "add", gpu, None)));
        assert!(log.contains(&key("intensity", "add", gpu, Some("default"))));
        assert!(log.contains(&key("intensity", "add", Backend::Cpu { threads: 4 }, None)));
        assert!(log.contains(&key("doundo", "div-full", gpu, Some("approx-div"))));
        // Other points are not done.
        assert!(!log.contains(&key("doundo", "div-full", gpu, None)));
        assert!(!log.contains(&key("intensity", "add", Backend::gpu(2, 256), None)));
    }
}
