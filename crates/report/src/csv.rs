//! `results.csv`: the records flattened to one row each, for spreadsheets.
//!
//! Numbers are written so that they read back exactly and every spreadsheet parses them:
//! shortest round-trip digits, in exponent form outside 1e-4..1e15 (Rust's plain `{}` would
//! spell 1e-30 with thirty zeros), and `inf`/`-inf`/`nan` as in results.jsonl.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::record::{fmt_dim3, write_atomically, Backend, Record, Status};
use crate::ReportError;

/// File name of the CSV inside the output directory.
pub const CSV_FILE: &str = "results.csv";

const HEADER: [&str; 26] = [
    "workload",
    "algorithm",
    "input",
    "size",
    "seed",
    "precision",
    "backend",
    "threads",
    "grid",
    "block",
    "device",
    "status",
    "value",
    "reference",
    "abs_error",
    "rel_error",
    "ulps",
    "digits",
    "median_ms",
    "min_ms",
    "max_ms",
    "reps",
    "note",
    "extra",
    "version",
    "date",
];

/// RFC 4180 quoting: only fields that need it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn number(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == 0.0 || (1e-4..1e15).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(number).unwrap_or_default()
}

/// The CSV text of `records`: a header row, then one row per record in file order.
pub fn csv(records: &[Record]) -> String {
    let mut out = HEADER.join(",");
    out.push('\n');
    for r in records {
        let (kind, threads, grid, block) = match r.backend {
            Backend::Cpu { threads } => ("cpu", threads.to_string(), String::new(), String::new()),
            // One number for a 1-D launch, `8×8` or `8×8×2` otherwise.
            Backend::Gpu { grid, block } => ("gpu", String::new(), fmt_dim3(grid), fmt_dim3(block)),
            // Tiled algorithms: blocks of tile × tile threads, the grid depends on the size.
            Backend::GpuTiles { tile } => (
                "gpu-tiles",
                String::new(),
                String::new(),
                (tile * tile).to_string(),
            ),
        };
        let status = match r.status {
            Status::Ok => "ok",
            Status::OutOfResources => "out-of-resources",
            Status::Failed => "failed",
        };
        let e = r.error.as_ref();
        let t = r.time.as_ref();
        let row = [
            field(&r.workload),
            field(&r.algorithm),
            field(&r.input),
            r.size.to_string(),
            r.seed.to_string(),
            field(&r.precision),
            kind.into(),
            threads,
            grid,
            block,
            field(&r.device),
            status.into(),
            opt(r.value),
            opt(r.reference),
            opt(e.map(|e| e.abs)),
            opt(e.and_then(|e| e.rel)),
            opt(e.and_then(|e| e.ulps)),
            opt(e.and_then(|e| e.digits)),
            opt(t.map(|t| t.median_ms)),
            opt(t.map(|t| t.min_ms)),
            opt(t.map(|t| t.max_ms)),
            t.map(|t| t.reps.to_string()).unwrap_or_default(),
            field(r.note.as_deref().unwrap_or("")),
            // name=value pairs separated by ';' (PTX counts, mismatch counts, ...).
            field(
                &r.extra
                    .iter()
                    .map(|(k, v)| format!("{k}={}", number(*v)))
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
            field(&r.version),
            field(&r.date),
        ];
        let _ = writeln!(out, "{}", row.join(","));
    }
    out
}

/// Writes `out_dir/results.csv` atomically and returns its path.
pub fn write_csv(out_dir: &Path, records: &[Record]) -> Result<PathBuf, ReportError> {
    let path = out_dir.join(CSV_FILE);
    write_atomically(&path, csv(records).as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{fixture, rec, G64};

    #[test]
    fn one_row_per_record_with_a_header_and_quoting() {
        let mut r = rec("f64x2", "range5", G64, 1.5e-30, 2.5);
        r.status = Status::Failed;
        r.note = Some("launch failed: \"too many resources\", retry".into());
        r.value = Some(f64::NEG_INFINITY);
        r.extra.insert("ptx.add.f64".into(), 900.0);
        r.extra.insert("mismatch_pct".into(), 4.98);
        let text = csv(&[r]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].split(',').count(), HEADER.len());
        assert_eq!(
            lines[1],
            "sum,serial,range5,1048576,1,f64x2,gpu,,64,32,Test GPU,failed,-inf,0,1.5e-30,,,,2.5,\
             2.5,2.5,1,\"launch failed: \"\"too many resources\"\", retry\",mismatch_pct=4.98;ptx.add.f64=900,0.1.0,\
             2026-11-22T06:00:00Z"
        );
    }

    #[test]
    fn numbers_read_back_exactly() {
        for x in [0.1, 1.0 / 3.0, 1e-30, 6.02e23, 5e-324, f64::MAX, 123.456] {
            let s = number(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{s}");
            assert!(s.len() < 26, "{s}");
        }
        assert_eq!(number(f64::NAN), "nan");
    }

    #[test]
    fn write_csv_writes_every_record() {
        let dir = tempfile::tempdir().unwrap();
        let records = fixture();
        let path = write_csv(dir.path(), &records).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(text.lines().count(), records.len() + 1);
        assert!(text.contains(",out-of-resources,"));
    }
}
