use super::*;
use crate::markdown::markdown;
use crate::record::{ErrorMetrics, TimeStats};

/// A record of the summation study; tests change what they need.
pub fn rec(precision: &str, input: &str, backend: Backend, abs: f64, ms: f64) -> Record {
    Record {
        schema: crate::SCHEMA,
        workload: "sum".into(),
        algorithm: "serial".into(),
        input: input.into(),
        size: 1 << 20,
        seed: 1,
        precision: precision.into(),
        backend,
        device: if backend.is_gpu() {
            "Test GPU"
        } else {
            "Test CPU"
        }
        .into(),
        device_ordinal: None,
        status: Status::Ok,
        value: Some(abs),
        reference: Some(0.0),
        error: Some(ErrorMetrics {
            abs,
            rel: None,
            ulps: None,
            digits: None,
        }),
        time: TimeStats::from_samples(&[ms]),
        flags: None,
        extra: Default::default(),
        descriptions: Default::default(),
        note: None,
        build: None,
        version: "0.1.0".into(),
        git_revision: "0123456789ab".into(),
        date: "2026-11-22T06:00:00Z".into(),
        shard: None,
        unit: None,
    }
}

pub const CPU1: Backend = Backend::Cpu { threads: 1 };
pub const CPU2: Backend = Backend::Cpu { threads: 2 };
pub const G1: Backend = Backend::gpu(1, 32);
pub const G64: Backend = Backend::gpu(64, 32);

/// Seed 000, Table 11/12 in miniature: two ranges, CPU and two GPU shapes, an overflow, an
/// exact zero, an out-of-resources launch and a point with three seeds.
pub fn fixture() -> Vec<Record> {
    let mut v = Vec::new();
    for (input, scale) in [("range1", 1.0), ("range5", 1e4)] {
        for b in [CPU1, CPU2, G1, G64] {
            let speed = match b {
                Backend::Cpu { threads } => 100.0 / f64::from(threads),
                Backend::Gpu { grid, .. } => 50.0 / f64::from(grid[0]),
                Backend::GpuTiles { tile } => 10.0 / f64::from(tile),
            };
            // CPU threads sum in the same order here, so their tables merge.
            let gpu = if b.is_gpu() { 0.5 } else { 1.0 };
            v.push(rec("f32", input, b, 1.38e-1 * scale * gpu, speed));
            v.push(rec("f64", input, b, 3.18e-10 * scale * gpu, speed * 1.13));
            v.push(rec("f32x2", input, b, 1.17e-5 * scale * gpu, speed * 1.63));
            v.push(rec("f64x2", input, b, 0.0, speed * 1.94));
        }
    }
    // f32 on range5 overflows on the serial CPU run.
    for r in v.iter_mut() {
        if r.precision == "f32" && r.input == "range5" && r.backend == CPU1 {
            r.value = Some(f64::INFINITY);
            r.error.as_mut().unwrap().abs = f64::INFINITY;
        }
        if r.precision == "f32" && r.input == "range5" && r.backend == CPU2 {
            r.value = Some(f64::INFINITY);
            r.error.as_mut().unwrap().abs = f64::INFINITY;
        }
    }
    // mp256 only on the CPU, three seeds.
    for (seed, e) in [(1, 3e-30), (2, 1e-30), (3, 2e-30)] {
        for b in [CPU1, CPU2] {
            let mut r = rec("mp256", "range1", b, e, 400.0);
            r.seed = seed;
            v.push(r);
        }
    }
    // f64x2 runs out of registers at 64 blocks on range5.
    for r in v.iter_mut() {
        if r.precision == "f64x2" && r.input == "range5" && r.backend == G64 {
            r.status = Status::OutOfResources;
            r.value = None;
            r.error = None;
            r.time = None;
        }
    }
    v
}

fn row<'t>(t: &'t Table, first: &str) -> &'t [String] {
    t.rows
        .iter()
        .find(|r| r[0] == first)
        .unwrap_or_else(|| panic!("no row {first} in {t:?}"))
}

fn col(t: &Table, header: &str) -> usize {
    t.headers
        .iter()
        .position(|h| h == header)
        .unwrap_or_else(|| panic!("no column {header} in {:?}", t.headers))
}

#[test]
fn precisions_order_narrow_to_wide_then_mp_by_bits_then_exact() {
    let mut p = vec![
        "exact", "mp1024", "mp64", "f64x2", "zz", "f32", "mp256", "comp32n", "f64", "comp32",
        "f32x2", "comp64",
    ];
    p.sort_by(|a, b| cmp_precision(a, b));
    assert_eq!(
        p,
        [
            "f32", "comp32", "comp32n", "f32x2", "f64", "comp64", "f64x2", "mp64", "mp256",
            "mp1024", "exact", "zz"
        ]
    );
}

#[test]
fn natural_order_puts_range10_after_range9() {
    let mut v = vec!["range10", "range9", "range1", "gmp-range2"];
    v.sort_by(|a, b| natural_cmp(a, b));
    assert_eq!(v, ["gmp-range2", "range1", "range9", "range10"]);
}

#[test]
fn numbers_format_for_tables() {
    assert_eq!(fmt_err(0.0), "0");
    assert_eq!(fmt_err(1.2345e-4), "1.23e-4");
    assert_eq!(fmt_err(1210.0), "1.21e3");
    assert_eq!(fmt_err(f64::INFINITY), "inf");
    assert_eq!(fmt_err(f64::NAN), "nan");
    assert_eq!(fmt_ms(2.6152), "2.615");
    assert_eq!(fmt_ms(1518.6588), "1519");
    assert_eq!(fmt_ms(2.5e6), "2.500e6");
    assert_eq!(fmt_size(1 << 20), "2^20");
    assert_eq!(fmt_size(8_000_000), "8e6");
    assert_eq!(fmt_size(1000), "1000");
    assert_eq!(fmt_size(12_345), "12345");
    assert_eq!(median(&[3.0, f64::NAN, 1.0]), Some(3.0));
    assert_eq!(median(&[]), None);
}

#[test]
fn accuracy_tables_merge_equal_backends_and_split_different_ones() {
    let records = fixture();
    let gs = groups(&records);
    assert_eq!(gs.len(), 1);
    let naming = Naming::of(&records);
    let titles: Vec<String> = gs[0]
        .accuracy
        .iter()
        .map(|a| a.table(&naming).title)
        .collect();
    assert_eq!(
        titles,
        [
            "Absolute error — cpu×1, cpu×2 (n = 2^20)",
            "Absolute error — gpu 1×32 (n = 2^20)",
            "Absolute error — gpu 64×32 (n = 2^20)"
        ]
    );
    let cpu = gs[0].accuracy[0].table(&naming);
    assert_eq!(
        cpu.headers,
        ["input", "f32", "f32x2", "f64", "f64x2", "mp256"]
    );
    assert_eq!(
        row(&cpu, "range1")[1..],
        ["1.38e-1", "1.17e-5", "3.18e-10", "0", "2.00e-30*"]
    );
    // Non-finite errors print as such; a precision not run for a row is a dash.
    assert_eq!(row(&cpu, "range5")[col(&cpu, "f32")], "inf");
    assert_eq!(row(&cpu, "range5")[col(&cpu, "mp256")], "-");
    assert!(
        cpu.notes[0].contains("median of up to 3 records")
            && cpu.notes[0].contains("seeds 1, 2, 3"),
        "{:?}",
        cpu.notes
    );
    // The GPU tables have no mp256 column, and an out-of-resources launch says so.
    let g64 = gs[0].accuracy[2].table(&naming);
    assert_eq!(g64.headers, ["input", "f32", "f32x2", "f64", "f64x2"]);
    assert_eq!(row(&g64, "range5")[col(&g64, "f64x2")], "oor");
    assert_eq!(row(&g64, "range1")[col(&g64, "f32")], "6.90e-2");
    assert!(g64.notes.is_empty(), "{:?}", g64.notes);
}

#[test]
fn time_table_has_configs_as_rows_and_slowdowns_vs_f32() {
    let records = fixture();
    let naming = Naming::of(&records);
    let t = groups(&records)[0].timing[0].table(&naming);
    assert_eq!(
        t.headers,
        [
            "backend",
            "f32",
            "f32x2",
            "f64",
            "f64x2",
            "mp256",
            "(f64−f32)/f32",
            "(f32x2−f32)/f32",
            "(f64x2−f32)/f32"
        ]
    );
    let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["cpu×1", "cpu×2", "gpu 1×32", "gpu 64×32"]);
    // Two input classes per cell: the median, marked and explained.
    // Cells are medians over the two input classes, except where one of them did not run.
    assert_eq!(row(&t, "cpu×1")[1], "100.0*");
    assert_eq!(row(&t, "cpu×1")[6..], ["0.13", "0.63", "0.94"]);
    assert!(
        t.notes[0].contains("inputs range1, range5"),
        "{:?}",
        t.notes
    );
    // One input ran out of resources, the other ran: the cell shows the one that ran.
    assert_eq!(row(&t, "gpu 64×32")[col(&t, "f64x2")], "1.516");
    assert_eq!(row(&t, "gpu 64×32")[col(&t, "mp256")], "-");
}

#[test]
fn cells_that_never_ran_show_their_status_and_failures_are_explained() {
    let mut r = rec("f64", "range1", G1, 0.0, 1.0);
    r.status = Status::Failed;
    r.note = Some("launch timed out".into());
    r.error = None;
    r.time = None;
    let mut o = rec("f32", "range1", G1, 0.0, 1.0);
    o.status = Status::OutOfResources;
    let mut nm = rec("f32x2", "range1", G1, 0.0, 1.0);
    nm.error = None;
    let records = vec![r, o, nm];
    let naming = Naming::of(&records);
    let g = &groups(&records)[0];
    let a = g.accuracy[0].table(&naming);
    assert_eq!(a.rows[0][1..], ["oor", "n/a", "failed"]);
    assert_eq!(
        a.notes,
        ["failed: f64 range1 n=2^20 gpu 1×32: launch timed out"]
    );
    let t = g.timing[0].table(&naming);
    // f32 → oor; no slowdown can be computed from it.
    assert_eq!(t.rows[0][1..4], ["oor", "1.000", "failed"]);
    assert_eq!(
        t.headers.last().map(String::as_str),
        Some("(f32x2−f32)/f32")
    );
    assert_eq!(t.rows[0].last().map(String::as_str), Some("-"));
}

#[test]
fn when_every_cell_is_a_median_no_cell_is_marked() {
    let mut records = Vec::new();
    for seed in [1, 2] {
        for p in ["f32", "f64"] {
            let mut r = rec(p, "range1", CPU1, 1e-3 * seed as f64, 2.0 * seed as f64);
            r.seed = seed;
            records.push(r);
        }
    }
    let naming = Naming::of(&records);
    let g = &groups(&records)[0];
    let a = g.accuracy[0].table(&naming);
    assert_eq!(a.rows[0][1..], ["1.50e-3", "1.50e-3"]);
    assert_eq!(
        a.notes,
        ["Each error is the median of up to 2 records per cell (seeds 1, 2)."]
    );
    assert_eq!(g.timing[0].table(&naming).rows[0][1..3], ["3.000", "3.000"]);
}

#[test]
fn several_sizes_get_a_size_column_and_one_time_table_each() {
    let mut records = Vec::new();
    for size in [1024u64, 8_000_000] {
        let mut r = rec("f64", "range1", CPU1, 1e-10, 1.0);
        r.size = size;
        records.push(r);
    }
    let naming = Naming::of(&records);
    let g = &groups(&records)[0];
    let a = g.accuracy[0].table(&naming);
    assert_eq!(a.headers, ["input", "n", "f64"]);
    assert_eq!(
        a.rows,
        [
            ["range1", "2^10", "1.00e-10"],
            ["range1", "8e6", "1.00e-10"]
        ]
    );
    assert_eq!(g.timing.len(), 2);
}

#[test]
fn devices_appear_in_labels_only_when_a_backend_ran_on_several() {
    let mut a = rec("f64", "range1", G1, 0.0, 1.0);
    let mut b = a.clone();
    a.device = "H100".into();
    b.device = "H200".into();
    let records = vec![a, b, rec("f64", "range1", CPU1, 0.0, 1.0)];
    let naming = Naming::of(&records);
    let t = groups(&records)[0].timing[0].table(&naming);
    let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["cpu×1", "gpu 1×32 (H100)", "gpu 1×32 (H200)"]);
}

#[test]
fn extra_quantities_get_their_own_tables() {
    let tiles = |tile| Backend::GpuTiles { tile };
    let mut v = Vec::new();
    for (p, adds) in [("f64", 1000.0), ("f64x2", 8000.0)] {
        for (tile, pct) in [(8, 4.98), (16, 5.5)] {
            let mut r = rec(p, "range1", tiles(tile), 1e-9, 2.0);
            r.workload = "lu".into();
            r.algorithm = "blocked".into();
            r.extra.insert("ptx.add.f64".into(), adds);
            r.extra.insert("ptx.mul.f64".into(), 16.0);
            r.extra.insert("mismatch_pct".into(), pct);
            // Schema 2: the workload describes its quantities, thresholds included.
            r.descriptions.insert(
                "mismatch_pct".into(),
                "% of entries with |L·U − A| > 1e-4 (seed 000 Table 17)".into(),
            );
            v.push(r);
        }
    }
    let md = markdown(&v);
    assert!(
        md.contains("PTX floating-point instructions per kernel"),
        "{md}"
    );
    // One count set per kernel, largest first, shared by both tile sizes.
    assert!(md.contains("add.f64 8000, mul.f64 16"), "{md}");
    let ptx_row = md.lines().find(|l| l.contains("add.f64 1000")).unwrap();
    assert!(
        !ptx_row.contains(" / "),
        "launches of one kernel share its counts: {md}"
    );
    assert!(md.contains("% of entries with |L·U − A| > 1e-4"), "{md}");
    assert!(md.contains("gpu tiles 16×16"), "{md}");
    assert!(md.contains("| 4.980 ") && md.contains("| 5.500 "), "{md}");
    // Records without extras add no such tables.
    assert!(!markdown(&fixture()).contains("PTX floating-point"));
}
