//! What ptxas and nvdisasm made of a PTX text, kept by content: in memory for the process, and on
//! disk under `<cache root>/sass` ([`mantissa_files::cache_root`]) across processes.
//!
//! Pinning contraction assembles and disassembles the same program several times (each analysis
//! of a session, each test that pins an example), and ptxas is the slow part of it: a large
//! instrumented program costs ptxas seconds. The tools are deterministic: their output is a
//! function of their versions, their options, the target and the PTX text. An entry's key is all
//! of those; the file stores the whole key (the PTX text included) and a read compares it
//! exactly, so the 64-bit file-name hash only spreads names: a collision costs a recompute, never
//! a wrong answer. A damaged or unreadable entry is a miss; a failed write is ignored (the cache
//! is an optimisation, never a reason to fail).

use crate::sass::SassError;
use mantissa_fatbin::fnv1a64;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Bump when the entry format or what a key means changes: old entries then miss.
const FORMAT: &str = "mantissa-sass-cache 1";

/// How many entries the process keeps in memory (the disk keeps everything).
const MEMORY_ENTRIES: usize = 64;

/// Everything that decides the disassembly but the PTX text.
fn header(ptxas: &Path, nvdisasm: &Path, arch: &str, options: &str) -> String {
    format!(
        "{FORMAT}\nptxas: {}\nnvdisasm: {}\narch: {arch}\noptions: {options}\n",
        version(ptxas),
        version(nvdisasm)
    )
}

/// `tool --version`'s output, asked once per tool per process (the path when it cannot be run:
/// then the tool cannot assemble either, and the entry is never read back as a hit by another
/// tool).
fn version(tool: &Path) -> String {
    static VERSIONS: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let versions = VERSIONS.get_or_init(Default::default);
    let mut known = versions.lock().unwrap_or_else(|e| e.into_inner());
    known
        .entry(tool.to_path_buf())
        .or_insert_with(|| match Command::new(tool).arg("--version").output() {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
                .trim()
                .replace('\n', " | "),
            _ => format!("unversioned {}", tool.display()),
        })
        .clone()
}

/// The entries kept in memory, oldest first.
fn memory() -> &'static Mutex<Vec<(String, String, String)>> {
    static MEMORY: OnceLock<Mutex<Vec<(String, String, String)>>> = OnceLock::new();
    MEMORY.get_or_init(Default::default)
}

/// An entry's bytes: the header, the PTX's length and text, then the disassembly.
fn entry(header: &str, ptx: &str, sass: &str) -> String {
    format!("{header}{}\n{ptx}{sass}", ptx.len())
}

/// The disassembly an entry holds, if it is the entry of exactly this header and PTX.
fn read_entry(bytes: &str, header: &str, ptx: &str) -> Option<String> {
    let rest = bytes.strip_prefix(header)?;
    let (len, rest) = rest.split_once('\n')?;
    if len.parse::<usize>().ok()? != ptx.len() {
        return None;
    }
    let sass = rest.strip_prefix(ptx)?;
    Some(sass.to_string())
}

/// The disassembly of `ptx` for `arch` under `options`, from the cache or `compute`'s (then
/// kept). Errors are not kept: a tool that failed is asked again next time.
pub(crate) fn remembered(
    ptxas: &Path,
    nvdisasm: &Path,
    ptx: &str,
    arch: &str,
    options: &str,
    compute: impl FnOnce() -> Result<String, SassError>,
) -> Result<String, SassError> {
    let header = header(ptxas, nvdisasm, arch, options);
    {
        let kept = memory().lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, sass)) = kept.iter().find(|(h, p, _)| *h == header && p == ptx) {
            return Ok(sass.clone());
        }
    }
    let file = mantissa_files::cache_root().map(|root| {
        root.join("sass").join(format!(
            "{:016x}{:016x}.sass",
            fnv1a64(header.as_bytes()),
            fnv1a64(ptx.as_bytes())
        ))
    });
    let stored = file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|bytes| read_entry(&bytes, &header, ptx));
    let sass = match stored {
        Some(sass) => sass,
        None => {
            let sass = compute()?;
            if let Some(f) = &file {
                let written = f
                    .parent()
                    .map_or(Ok(()), mantissa_files::ensure_dir)
                    .and_then(|()| {
                        mantissa_files::write_file(f, entry(&header, ptx, &sass).as_bytes())
                    });
                drop(written); // a cache that cannot be written is only slower
            }
            sass
        }
    };
    let mut kept = memory().lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= MEMORY_ENTRIES {
        kept.remove(0);
    }
    kept.push((header, ptx.to_string(), sass.clone()));
    Ok(sass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_only_for_its_own_header_and_text() {
        let e = entry("H\n", "ptx text", "SASS\nlines\n");
        assert_eq!(
            read_entry(&e, "H\n", "ptx text").as_deref(),
            Some("SASS\nlines\n")
        );
        assert_eq!(read_entry(&e, "H2\n", "ptx text"), None);
        assert_eq!(read_entry(&e, "H\n", "ptx texT"), None);
        assert_eq!(read_entry(&e, "H\n", "ptx tex"), None);
        // A text that is a prefix of another with its length is still told apart.
        assert_eq!(
            read_entry(&e[..e.len() - 3], "H\n", "ptx text").as_deref(),
            Some("SASS\nlin")
        );
        assert_eq!(read_entry("garbage", "H\n", "ptx text"), None);
    }
}
