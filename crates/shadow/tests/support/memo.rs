//! Results of the CUDA tools, kept by content in `tests/memo/` (committed), so that a fresh
//! clone does not spend a quarter of an hour in ptxas to recompute what the tools gave for the
//! very same input.
//!
//! ptxas and nvdisasm are deterministic: their output is a function of their versions, their
//! arguments and the PTX text. A memo entry is keyed by a SHA-256 of all of those (and of
//! whatever else the caller says the result depends on), so any change to a pass, a runtime, an
//! example, NVRTC, nvcc or the tools gives a new key, and the tools run again. A hit therefore
//! checks exactly what a run of the tools would: what it skips is recomputing a known function
//! value. A run that computes an entry writes it (atomically) for the next run; commit the new
//! files under `tests/memo/` with the change that made them.
//!
//! - `MANTISSA_TOOL_MEMO=off` computes everything and writes nothing (the slow, plain way);
//! - `MANTISSA_TOOL_MEMO=verify` computes everything and fails on an entry that disagrees;
//! - otherwise hits are read and misses computed and written.
//!
//! Every run also recomputes the entry with the smallest input among those it read, and fails
//! if it disagrees, so a stale or damaged memo cannot pass unnoticed for long.
#![allow(dead_code)] // each test file uses its own part

use serde::{de::DeserializeOwned, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// What the environment asks of the memo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Use,
    Off,
    Verify,
}

fn mode() -> Mode {
    match std::env::var("MANTISSA_TOOL_MEMO").as_deref() {
        Ok("off") => Mode::Off,
        Ok("verify") => Mode::Verify,
        _ => Mode::Use,
    }
}

/// The memo directory (tests run in the crate's directory).
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/memo")
}

/// `tool --version`'s whole output: the version is part of every key.
pub fn tool_version(tool: &Path) -> String {
    let out = Command::new(tool)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    assert!(out.status.success(), "{} --version failed", tool.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The key of `parts`: each part's length, then its bytes, so no two lists of parts collide by
/// concatenation.
pub fn key(kind: &str, parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_bytes());
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let digest = h.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{kind}-{}", &hex[..32])
}

/// The smallest input whose entry was read, and how to recompute it (for the spot check).
type Recheck = (
    usize,
    String,
    Box<dyn FnOnce() -> Result<(), String> + Send>,
);

fn smallest_hit() -> &'static Mutex<Option<Recheck>> {
    static SMALLEST: OnceLock<Mutex<Option<Recheck>>> = OnceLock::new();
    SMALLEST.get_or_init(|| Mutex::new(None))
}

/// The memo's value for `key`, or `compute()`'s (written to the memo). `size` is the size of the
/// input (bytes of PTX), which chooses the entry [`spot_check`] recomputes.
pub fn remember<T>(key: &str, size: usize, compute: impl Fn() -> T + Send + 'static) -> T
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Send + 'static,
{
    let file = dir().join(format!("{key}.json"));
    let mode = mode();
    let stored: Option<T> = match mode {
        Mode::Off => None,
        _ => std::fs::read(&file).ok().map(|b| {
            serde_json::from_slice(&b).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        }),
    };
    match (mode, stored) {
        (Mode::Use, Some(value)) => {
            let mut smallest = smallest_hit().lock().unwrap_or_else(|e| e.into_inner());
            if smallest.as_ref().is_none_or(|(s, _, _)| size < *s) {
                let expected = serde_json::to_string(&value).unwrap_or_default();
                let check = move || {
                    let now = serde_json::to_string(&compute()).unwrap_or_default();
                    if now == expected {
                        Ok(())
                    } else {
                        Err(format!("stored {expected}\ncomputed {now}"))
                    }
                };
                *smallest = Some((size, key.to_string(), Box::new(check)));
            }
            value
        }
        (Mode::Verify, Some(value)) => {
            let now = compute();
            assert_eq!(
                value,
                now,
                "memo entry {} disagrees with the tools",
                file.display()
            );
            now
        }
        (_, _) => {
            let value = compute();
            if mode != Mode::Off {
                write(&file, &value);
            }
            value
        }
    }
}

/// Recomputes the entry with the smallest input among those read, and panics if the memo
/// disagrees with the tools (call once, at the end of a test that used the memo).
pub fn spot_check() {
    let taken = smallest_hit()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some((size, key, check)) = taken {
        if let Err(e) = check() {
            panic!("memo entry {key} ({size} bytes of input) disagrees with the tools:\n{e}");
        }
        println!("memo: recomputed {key} ({size} bytes of input): agrees");
    }
}

fn write<T: Serialize>(file: &Path, value: &T) {
    let text = serde_json::to_string(value).unwrap_or_else(|e| panic!("{e}"));
    let dir = dir();
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text + "\n").unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    std::fs::rename(&tmp, file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    println!("memo: wrote {} (commit it)", file.display());
}
