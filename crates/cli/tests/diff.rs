//! `mantissa diff` end to end without a GPU: bad options and specs whose outputs have no
//! reference are one line with exit code 2, found before the GPU is looked for; a good request
//! without a GPU is one line (exit 1) that says diff needs one.

mod support;

use std::process::{Command, Output};
use support::mantissa_binary;

/// A shipped spec whose outputs have no reference (tests run in the crate's directory).
const NO_REFERENCE: &str = "../../examples/shadow/shadow.toml";

fn diff(args: &[&str]) -> (Option<i32>, String) {
    let Output { status, stderr, .. } = Command::new(mantissa_binary())
        .arg("diff")
        .args(args)
        .output()
        .expect("the mantissa binary runs");
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

#[test]
fn an_output_without_a_reference_is_a_usage_error_naming_it() {
    let (code, stderr) = diff(&[NO_REFERENCE]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("output 'y' has no reference: give it `reference = \"FILE.npy\"` in the spec, or use --against FLAGS"),
        "{stderr}"
    );
}

#[test]
fn a_bad_flag_set_is_a_usage_error() {
    let (code, stderr) = diff(&[NO_REFERENCE, "--against", "bogus"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown flag set 'bogus'"), "{stderr}");
}

#[test]
fn a_good_request_without_a_gpu_says_diff_needs_one() {
    if mantissa_gpu::Gpu::probe().is_ok() {
        return; // covered by crates/diff's GPU tests
    }
    let (code, stderr) = diff(&[NO_REFERENCE, "--against", "strict"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: mantissa diff needs a GPU: "),
        "{stderr}"
    );
}
