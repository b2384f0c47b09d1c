//! `mantissa mathlib` end to end on the CPU columns (no GPU needed): bad input is one line and
//! exit code 2; `--check` prints the correctly rounded value; a short run writes its records
//! and page, and `--resume` reads them back instead of measuring again.

use crate::support;

use std::process::Command;
use support::mantissa_binary;

fn mathlib(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(mantissa_binary())
        .arg("mathlib")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--functions", "sine"], "accepted: sin, cos"),
        (
            &["--variants", "slow"],
            "accepted: default, fast, intrinsic",
        ),
        (&["--precision", "f16"], "accepted: f32, f64"),
        (&["--libraries", "glibc"], "accepted: std, libm, none"),
        (&["--budget", "0"], "not a positive number"),
        (&["--budget", "-3"], "not a positive number"),
        (&["--budget", "soon"], "not a positive number"),
        (&["--check", "sinf", "abc"], "is not a number"),
        (&["--check", "sine", "1"], "unknown function 'sine'"),
        (
            &["--check", "pow", "2"],
            "pow takes 2 argument(s) (x or x,y), got 1",
        ),
    ];
    for (args, expected) in cases {
        let (code, _, stderr) = mathlib(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn check_prints_the_correctly_rounded_value_and_every_cpu_column() {
    // sqrt(2) in binary64 is 0x1.6a09e667f3bcdp+0, and both libraries return it.
    let (code, stdout, stderr) = mathlib(&["--check", "sqrt", "2", "--cpu-only"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("correctly rounded 0x1.6a09e667f3bcdp+0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("exact             1.414213562373095048801689"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| CPU std  | 0x1.6a09e667f3bcdp+0"),
        "{stdout}"
    );
    // The f32 spelling selects binary32; 0.1 is rounded to f32 first, and said so
    // (e^0x1.99999ap-4 = 1.10517091972…, which rounds to 0x1.1aec7cp+0).
    let (code, stdout, _) = mathlib(&["--check", "expf", "0.1", "--cpu-only"]);
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("input             0x1.99999ap-4"),
        "{stdout}"
    );
    assert!(stdout.contains("(rounded from 0.1)"), "{stdout}");
    assert!(
        stdout.contains("correctly rounded 0x1.1aec7cp+0"),
        "{stdout}"
    );
}

#[test]
fn a_short_cpu_run_writes_records_and_page_and_resumes() {
    let dir = std::env::temp_dir().join(format!("mantissa-cli-mathlib-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let args = [
        "--functions",
        "sqrt,exp",
        "--precision",
        "f64",
        "--budget",
        "0.5",
        "--cpu-only",
        "--out",
        dir.to_str().unwrap(),
    ];
    let (code, stdout, stderr) = mathlib(&args);
    assert_eq!(code, Some(0), "{stderr}");
    // sqrt is correctly rounded in both libraries: 0.5 ulps at most.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| sqrt "))
        .expect(&stdout);
    assert!(row.contains("|   0.500 |"), "{row}");
    let records = std::fs::read_to_string(dir.join("mathlib.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 4, "2 functions × 2 libraries");
    assert!(dir.join("mathlib.html").exists());
    // Resuming measures nothing new and says where the rows came from.
    let mut resumed = args.to_vec();
    resumed.push("--resume");
    let (code, stdout2, stderr) = mathlib(&resumed);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("(from the records)"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("mathlib.jsonl")).unwrap(),
        records
    );
    assert_eq!(
        stdout2.lines().find(|l| l.starts_with("| sqrt ")),
        Some(row)
    );
    // --report rebuilds the same tables from the records alone.
    let (code, stdout3, _) = mathlib(&["--report", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout3.lines().find(|l| l.starts_with("| sqrt ")),
        Some(row)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// No CPU library and no GPU column (`--cpu-only`, or no GPU here) leaves nothing to measure:
/// one line that says what to give, exit code 2, and earlier records left where they are.
#[test]
fn no_library_and_no_gpu_is_nothing_to_measure() {
    let dir = support::Dir::new("nothing");
    let records = dir.path().join("mathlib.jsonl");
    std::fs::write(&records, "earlier\n").unwrap();
    let out = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = mathlib(&["--libraries", "none", "--cpu-only", "--out", out]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nothing to measure"), "{stderr}");
    assert!(stderr.contains("--libraries std"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), "earlier\n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
