//! What the cli's integration tests share.

use std::path::PathBuf;

/// The binary Cargo built for this test, or, where the test executable was copied to another
/// machine (the GPU runs: tests in `.gpu/tests/`, binaries in `.gpu/bin/`), the one beside it.
pub fn mantissa_binary() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_mantissa"));
    if built.exists() {
        return built;
    }
    let exe = std::env::current_exe().expect("the test knows its own path");
    let dir = exe.parent().expect("the test executable is in a directory");
    [dir.join("../bin/mantissa"), dir.join("../mantissa")]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or(built)
}
