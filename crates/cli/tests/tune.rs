//! `mantissa tune` end to end without a GPU: thresholds out of range, a bad mode or repeat
//! count are one line with exit code 2, found before the GPU is looked for; a good spec without
//! a GPU is one line (exit 1) that says tune needs one and how to check the spec without it.
//! (What it finds on a GPU is tested by crates/tune/tests/gpu_tune.rs.)

mod support;

use std::process::{Command, Output};
use support::mantissa_binary;

/// The shipped example (tests run in the crate's directory).
const EXAMPLE: &str = "../../examples/tune/relax.toml";

fn tune(args: &[&str]) -> (Option<i32>, String) {
    let Output { status, stderr, .. } = Command::new(mantissa_binary())
        .arg("tune")
        .args(args)
        .output()
        .expect("the mantissa binary runs");
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

/// Exit code 2 and exactly one line on stderr, containing `what`.
fn usage_error(args: &[&str], what: &str) {
    let (code, stderr) = tune(args);
    assert_eq!(code, Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(what), "{args:?}: {stderr}");
}

#[test]
fn thresholds_out_of_range_are_usage_errors() {
    usage_error(
        &[EXAMPLE, "--digits", "0.5"],
        "digits `0.5` is out of range (1 to 15)",
    );
    usage_error(
        &[EXAMPLE, "--digits", "3,x"],
        "digits `x` is not a number (1 to 15)",
    );
    usage_error(
        &[EXAMPLE, "--speedup", "120"],
        "speed-up `120` is out of range (0 to 100 % of the ideal)",
    );
    usage_error(
        &[EXAMPLE, "--mode", "4"],
        "mode `4` is out of range (1, 2 or 3)",
    );
    usage_error(
        &[EXAMPLE, "--repeats", "20", "--max-repeats", "10"],
        "--repeats 20 --max-repeats 10: need 1 ≤ repeats ≤ max-repeats",
    );
    usage_error(&["no/such/spec.toml"], "no/such/spec.toml");
}

#[test]
fn a_good_spec_without_a_gpu_says_tune_needs_one_and_how_to_check_it() {
    if mantissa_gpu::Gpu::probe().is_ok() {
        return; // covered by crates/tune's GPU tests
    }
    let (code, stderr) = tune(&[EXAMPLE]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: mantissa tune needs a GPU: "),
        "{stderr}"
    );
    assert!(
        stderr.trim_end().ends_with(
            "`mantissa run ../../examples/tune/relax.toml --check` checks the spec without one"
        ),
        "{stderr}"
    );
}
