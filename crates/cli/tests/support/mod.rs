//! What the cli's integration tests share.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// A fresh directory under the system's temporary one, removed when dropped: named by the test
/// binary, `tag` (unique within a binary) and the process.
#[allow(dead_code)] // Each including test uses its part.
pub struct Dir(PathBuf);

#[allow(dead_code)]
impl Dir {
    pub fn new(tag: &str) -> Dir {
        let binary = std::env::current_exe()
            .ok()
            .and_then(|e| e.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let d =
            std::env::temp_dir().join(format!("mantissa-{binary}-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `mantissa ARGS`, run to completion.
#[allow(dead_code)]
pub fn mantissa(args: &[&str]) -> Output {
    Command::new(mantissa_binary()).args(args).output().unwrap()
}
