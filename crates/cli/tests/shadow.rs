//! `mantissa shadow` end to end without a GPU: bad options and spec errors are one line with
//! exit code 2, found before the GPU is looked for; a good spec without a GPU is one line (exit
//! 1) that says shadow needs one and how to check the spec without it.

mod support;

use std::process::{Command, Output};
use support::mantissa_binary;

/// The shipped example (tests run in the crate's directory).
const EXAMPLE: &str = "../../examples/shadow/shadow.toml";

fn shadow(args: &[&str]) -> (Option<i32>, String) {
    let Output { status, stderr, .. } = Command::new(mantissa_binary())
        .arg("shadow")
        .args(args)
        .output()
        .expect("the mantissa binary runs");
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

/// Exit code 2 and exactly one line on stderr, ending with `tail`.
fn usage_error(args: &[&str], tail: &str) {
    let (code, stderr) = shadow(args);
    assert_eq!(code, Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.trim_end().ends_with(tail), "{args:?}: {stderr}");
}

#[test]
fn bad_analyses_name_the_word_and_what_exists() {
    usage_error(
        &[EXAMPLE, "--analysis", "demotion,speed"],
        "--analysis: found 'speed'; accepted: demotion, shadow, exceptions (comma-separated)",
    );
    // `shadow` is an analysis: the word after it is the one named.
    usage_error(
        &[EXAMPLE, "--analysis", "shadow,fast"],
        "--analysis: found 'fast'; accepted: demotion, shadow, exceptions (comma-separated)",
    );
    usage_error(
        &[EXAMPLE, "--analysis", ""],
        "--analysis: found an empty list; accepted: demotion, shadow, exceptions (comma-separated)",
    );
}

#[test]
fn bad_flags_sizes_and_counts_are_usage_errors() {
    let (code, stderr) = shadow(&[EXAMPLE, "--flags", "bogus"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown flag set 'bogus'; accepted: default"),
        "{stderr}"
    );
    usage_error(
        &[EXAMPLE, "--set", "m=3"],
        "shadow.toml:11:1: --set m: found unknown size 'm'; accepted a size of [sizes]: n, block",
    );
    let (code, stderr) = shadow(&[EXAMPLE, "--top", "-1"]);
    assert_eq!(code, Some(2), "{stderr}");
    let (code, stderr) = shadow(&["../../examples/shadow/missing.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("missing.toml:1:1: (file): found an unreadable file"),
        "{stderr}"
    );
}

#[test]
fn a_good_spec_without_a_gpu_says_shadow_needs_one_and_how_to_check_it() {
    if mantissa_gpu::Gpu::probe().is_ok() {
        return; // covered by crates/shadow's GPU tests
    }
    let (code, stderr) = shadow(&[EXAMPLE, "--json"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: mantissa shadow needs a GPU: "),
        "{stderr}"
    );
    assert!(
        stderr.trim_end().ends_with(
            "`mantissa run ../../examples/shadow/shadow.toml --check` checks the spec without one"
        ),
        "{stderr}"
    );
}
