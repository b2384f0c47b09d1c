//! scripts/screenshot-report.sh is not run by CI (it needs Chromium); this checks what can be
//! checked without a browser: the script parses, and bad usage is a one-line error with exit
//! status 2 before any browser is looked for.

use std::path::PathBuf;
use std::process::Command;

fn script() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/screenshot-report.sh");
    if path.exists() {
        Some(path)
    } else {
        // A test binary copied away from its source tree has no script beside it.
        eprintln!("skipped: {} not found", path.display());
        None
    }
}

#[test]
fn the_screenshot_script_parses_and_rejects_bad_usage() {
    let Some(path) = script() else { return };
    let syntax = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    for args in [&[][..], &["-o"][..]] {
        let out = Command::new("bash").arg(&path).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("usage: "), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
