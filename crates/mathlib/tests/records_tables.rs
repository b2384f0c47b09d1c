//! Records (append, resume after a killed run, moving aside, old lines, shards), the tables'
//! marks and the page, on made-up measurements whose figures are known.

use mantissa_mathlib::cpu::CpuLibrary;
use mantissa_mathlib::html::write_html;
use mantissa_mathlib::measure::{Column, Measurement, Method};
use std::time::Duration;

use mantissa_mathlib::measure::Plan;
use mantissa_mathlib::records::{
    open, read, read_records, recorded, records_path, Record, Setting, SCHEMA,
};
use mantissa_mathlib::run::{run_plan, setting as setting_of, Event};
use mantissa_mathlib::stats::{BinMax, Stats, Worst};
use mantissa_mathlib::table::tables;
use mantissa_mathlib::{Format, Function, Variant};
use mantissa_report::Shard;

fn measurement(f: Function, column: Column, max: f64) -> Measurement {
    Measurement {
        function: f,
        format: Format::F32,
        column,
        method: Method::Exhaustive,
        stats: Stats {
            evaluated: 100,
            max_ulps: max,
            worst: Some(Worst {
                args: vec![3.0],
                result: 0.5,
                correctly_rounded: 0.25,
                ulps: max,
            }),
            sampled: 100,
            sum_ulps: 30.0,
            finite: 99,
            not_correctly_rounded: 7,
            infinite: 1,
            bins: vec![
                BinMax {
                    bin: 0x7f,
                    ulps: max,
                },
                BinMax {
                    bin: 0x17f,
                    ulps: 0.75,
                },
            ],
        },
        hard: 3,
        undecided: 0,
        reference_disagreements: 0,
        compared_with_gpu: None,
        seconds: 1.5,
    }
}

fn setting() -> Setting {
    Setting {
        device: Some("test GPU".into()),
        driver: Some("13.0".into()),
        cpu: vec!["std".into()],
        budget_s: 5.0,
        cpu_sample: 1024,
        seed: 1,
    }
}

fn plan() -> Plan {
    Plan {
        functions: vec![Function::Sin, Function::Cos, Function::Tgamma],
        formats: vec![Format::F32],
        variants: Variant::ALL.to_vec(),
        libraries: vec![CpuLibrary::Std],
        budget: Duration::from_secs(5),
        cpu_sample: 1024,
        seed: 1,
    }
}

fn record(m: Measurement) -> Record {
    Record::new(&setting(), m)
}

#[test]
fn records_append_read_back_and_resume_after_a_partial_line() {
    let dir = tempfile_dir("records");
    let inf = measurement(
        Function::Tgamma,
        Column::Gpu(Variant::Default),
        f64::INFINITY,
    );
    let mut store = open(&dir, false, None, &plan(), &setting()).unwrap();
    let sin = Record {
        device_ordinal: Some(3),
        ..record(measurement(
            Function::Sin,
            Column::Gpu(Variant::Default),
            1.5,
        ))
    };
    store.append_all(&[sin, record(inf)]).unwrap();
    drop(store);
    let lines = std::fs::read_to_string(records_path(&dir)).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert!(lines[0].contains("\"device_ordinal\":3"), "{}", lines[0]);
    assert!(!lines[1].contains("device_ordinal"), "absent when unset");
    let back = read_records(&dir).unwrap().0;
    assert_eq!(back.len(), 2);
    assert_eq!(
        (back[0].device_ordinal, back[1].device_ordinal),
        (Some(3), None)
    );
    assert_eq!(
        back[0].measurement.stats,
        measurement(Function::Sin, Column::Gpu(Variant::Default), 1.5).stats
    );
    assert_eq!(back[0].schema, SCHEMA);
    assert_eq!(
        back[0].git_revision,
        mantissa_report::Record::current_git_revision()
    );
    assert!(
        back[1].measurement.stats.max_ulps.is_infinite(),
        "infinite maxima survive JSON"
    );
    assert_eq!(
        recorded(&back, &setting(), Function::Sin, Format::F32).len(),
        1
    );
    let other = Setting {
        budget_s: 9.0,
        ..setting()
    };
    assert!(
        recorded(&back, &other, Function::Sin, Format::F32).is_empty(),
        "another budget is not reused"
    );

    // A killed run leaves half a line: reading skips it, resuming truncates it.
    let path = records_path(&dir);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text += "{\"schema\":2,\"vers";
    std::fs::write(&path, &text).unwrap();
    let (kept, notes) = read_records(&dir).unwrap();
    assert_eq!((kept.len(), notes.truncated_tail), (2, true));
    let mut store = open(&dir, true, None, &plan(), &setting()).unwrap();
    assert_eq!(store.previous_records(), 2);
    store
        .append_all(&[record(measurement(
            Function::Cos,
            Column::Gpu(Variant::Fast),
            2.0,
        ))])
        .unwrap();
    drop(store);
    let (all, notes) = read_records(&dir).unwrap();
    assert_eq!((all.len(), notes.truncated_tail), (3, false));

    // Resuming under another setting is refused in one line naming it.
    let e = open(&dir, true, None, &plan(), &other)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("settings.budget_s = 5.0, this run has settings.budget_s = 9.0"),
        "{e}"
    );
    // So is a second writer.
    let first = open(&dir, true, None, &plan(), &setting()).unwrap();
    let e = open(&dir, true, None, &plan(), &setting())
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("mathlib.jsonl is being written by another mantissa process"),
        "{e}"
    );
    drop(first);

    // A file of no record is an error naming its first line.
    std::fs::write(&path, "garbage\n{}\n").unwrap();
    let e = read_records(&dir).unwrap_err().to_string();
    assert!(e.contains("mathlib.jsonl:1:"), "{e}");

    // Without --resume the old file is moved aside, never overwritten.
    let store = open(&dir, false, None, &plan(), &setting()).unwrap();
    let aside = store.moved_aside().expect("moved").to_path_buf();
    assert!(aside.exists() && std::fs::read_to_string(&path).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn old_mathlib_lines_keep_loading_and_are_reused_on_resume() {
    // A line `mantissa mathlib --cpu-only` wrote before the store's common header (schema 1:
    // `mantissa` for the version, no git revision, date, shard or unit), checked in as written.
    let dir = tempfile_dir("old");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        records_path(&dir),
        include_str!("fixtures/old-mathlib.jsonl"),
    )
    .unwrap();
    let (records, notes) = read_records(&dir).unwrap();
    assert!(notes.skipped.is_empty() && !notes.truncated_tail);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!((r.schema, r.version.as_str()), (1, "0.1.0"));
    assert_eq!((r.git_revision.as_str(), r.date.as_str()), ("unknown", ""));
    assert_eq!((r.shard, r.unit, r.device_ordinal), (None, None, None));
    assert_eq!(
        (r.measurement.function, r.measurement.format),
        (Function::Sin, Format::F32)
    );
    // Measured under its own setting, the old line stands in for a new measurement.
    assert_eq!(
        recorded(&records, &r.setting, Function::Sin, Format::F32).len(),
        1
    );
    // A file written before manifests resumes.
    let store = open(&dir, true, None, &plan(), &r.setting).unwrap();
    assert_eq!(store.previous_records(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sharded_plan_measures_its_own_units_and_records_them() {
    // CPU only, a budget that ends the search after the first batch of the uniform sample:
    // seconds, and the same figures every time.
    let plan = Plan {
        functions: vec![Function::Sin, Function::Cos, Function::Exp],
        formats: vec![Format::F32, Format::F64],
        variants: Vec::new(),
        libraries: vec![CpuLibrary::Std],
        budget: Duration::from_nanos(1),
        cpu_sample: 64,
        seed: 1,
    };
    let dir = tempfile_dir("shard");
    let setting = setting_of(&plan, None);
    let shard: Shard = "1/4".parse().unwrap();
    let mut store = open(&dir, false, Some(shard), &plan, &setting).unwrap();
    let ms = run_plan(&plan, None, Some(&mut store), &mut |_| {}).unwrap();
    let path = store.path().to_path_buf();
    drop(store);
    assert!(path.ends_with("mathlib.shard-1-of-4.jsonl"), "{path:?}");
    // Units: (f32: sin 0, cos 1, exp 2), (f64: sin 3, cos 4, exp 5); shard 1/4 has 1 and 5.
    let got: Vec<(Function, Format)> = ms.iter().map(|m| (m.function, m.format)).collect();
    assert_eq!(
        got,
        [(Function::Cos, Format::F32), (Function::Exp, Format::F64)]
    );
    let (records, _) = read(&path).unwrap();
    let units: Vec<(Option<u64>, Option<Shard>)> =
        records.iter().map(|r| (r.unit, r.shard)).collect();
    assert_eq!(units, [(Some(1), Some(shard)), (Some(5), Some(shard))]);
    // Resumed, nothing is measured again.
    let mut store = open(&dir, true, Some(shard), &plan, &setting).unwrap();
    let mut measured = 0;
    run_plan(&plan, None, Some(&mut store), &mut |e| {
        if let Event::Measured { resumed: false, .. } = e {
            measured += 1;
        }
    })
    .unwrap();
    assert_eq!(measured, 0);
    drop(store);
    assert_eq!(read(&path).unwrap().0.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory path for one test (removed first if a run left it).
fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mathlib-records-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn tables_mark_maxima_above_the_documented_bound_and_the_page_plots_every_function() {
    // The guide documents 2 ulps for sinf by default (against the correctly rounded result):
    // 2.4 ulps from the exact value is within it (2.4 − 0.5 ≤ 2), 2.6 is not.
    let mut ms = vec![
        measurement(Function::Sin, Column::Gpu(Variant::Default), 2.4),
        measurement(Function::Cos, Column::Gpu(Variant::Default), 2.6),
        measurement(Function::Sin, Column::Cpu(CpuLibrary::Std), 0.5),
    ];
    ms[2].compared_with_gpu = Some((1024, 17));
    let t = tables(&ms, Format::F32);
    assert_eq!(t.len(), 2);
    let summary = &t[0];
    let row = |name: &str| summary.rows.iter().find(|r| r[0] == name).unwrap().clone();
    let col = |h: &str| summary.header.iter().position(|x| x == h).unwrap();
    assert_eq!(row("sinf")[col("default max")], "2.400");
    assert_eq!(row("cosf")[col("default max")], "2.600 !");
    assert_eq!(row("sinf")[col("std max")], "0.500");
    assert_eq!(row("sinf")[col("≠ std")], "17 / 1024");
    assert_eq!(row("sinf")[col("default mean")], "0.303");
    assert_eq!(row("sinf")[col("default not CR")], "7.000%");
    assert!(tables(&ms, Format::F64).is_empty());
    // Worst inputs in hex and decimal.
    assert!(t[1]
        .rows
        .iter()
        .any(|r| r[0] == "sinf" && r[3] == "0x1.8p+1" && r[4] == "3e0"));

    let dir = std::env::temp_dir().join(format!("mathlib-page-{}", std::process::id()));
    let page = write_html(&dir, &ms, Some(&setting())).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 2, "one plot per function");
    assert!(html.contains("cosf") && html.contains("2.600 !"));
    let _ = std::fs::remove_dir_all(&dir);
}
