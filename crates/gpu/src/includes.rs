//! The files a source includes, found the way NVRTC finds them, so that the compile cache key and
//! the build facts' source hash cover them: a changed header must never return a stale cubin.
//!
//! Every `#include "..."` and `#include <...>` line of the source is followed, recursively, and
//! resolved in NVRTC's order: headers given in memory ([`crate::nvrtc::Source::with_header`]),
//! then, for `"..."` only, the directory of the including file (a file on disk; the top source
//! has none), then the source's `-I`/`--include-path` directories in order. Each resolved file's
//! contents are hashed. An include that resolves nowhere (NVRTC's built-in headers such as
//! `<cuda_fp16.h>`, or a macro) is listed as unresolved by name: its contents come with NVRTC,
//! whose version is in the key already.
//!
//! The scan is syntactic and errs towards covering more: it follows includes inside `#if`
//! branches that the compile may skip, and does not read macros. That can only add files to the
//! key (a needless recompile when such a file changes), never leave a used file out, except for
//! `#include MACRO`, which is recorded unresolved.

use crate::cache::fnv1a64;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where an include was found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IncludeOrigin {
    /// A header given in memory with the source.
    Memory,
    /// A file on disk.
    File(PathBuf),
    /// Nowhere mantissa can read: NVRTC's built-in headers, or a macro.
    Unresolved,
}

/// One included file: its name as written, where it was found, and its contents' hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Include {
    /// The name between the quotes or angle brackets.
    pub name: String,
    /// Where it resolved.
    pub origin: IncludeOrigin,
    /// FNV-1a/64 of the contents (0 when unresolved).
    pub hash: u64,
    /// Bytes of contents (0 when unresolved).
    pub len: usize,
}

impl Include {
    /// One line for cache keys: `"name" memory|file:"PATH"|unresolved [fnv1a64 len]`. The path
    /// matters there: `-lineinfo` writes it into the PTX's `.file` lines.
    pub fn key_line(&self) -> String {
        let origin = match &self.origin {
            IncludeOrigin::Memory => "memory".to_string(),
            IncludeOrigin::File(p) => format!("file:{}", quote(&p.to_string_lossy())),
            IncludeOrigin::Unresolved => return self.content_line(),
        };
        format!(
            "{} {origin} {:016x} {}",
            quote(&self.name),
            self.hash,
            self.len
        )
    }

    /// One line for source hashes: `"name" fnv1a64 len`, or `"name" unresolved`; the same on
    /// every machine, wherever the file lies.
    pub fn content_line(&self) -> String {
        match self.origin {
            IncludeOrigin::Unresolved => format!("{} unresolved", quote(&self.name)),
            _ => format!("{} {:016x} {}", quote(&self.name), self.hash, self.len),
        }
    }
}

/// A JSON string: unambiguous whatever names and paths contain. Cannot fail.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The include directories named by NVRTC options (`-I DIR`, `-IDIR`, `--include-path=DIR`,
/// `--include-path DIR`), in order.
pub fn include_dirs(options: &[String]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut next_is_dir = false;
    for opt in options {
        if next_is_dir {
            dirs.push(PathBuf::from(opt));
            next_is_dir = false;
        } else if opt == "-I" || opt == "--include-path" {
            next_is_dir = true;
        } else if let Some(dir) = opt.strip_prefix("--include-path=") {
            dirs.push(PathBuf::from(dir));
        } else if let Some(dir) = opt.strip_prefix("-I") {
            dirs.push(PathBuf::from(dir.trim_start_matches('=')));
        }
    }
    dirs
}

/// The files named by pre-include options (`--pre-include=NAME`, `--pre-include NAME`,
/// `-include=NAME`, `-include NAME`), in order: NVRTC and nvcc read them before the source.
pub fn pre_includes(options: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    let mut next_is_name = false;
    for opt in options {
        if next_is_name {
            names.push(opt.clone());
            next_is_name = false;
        } else if opt == "--pre-include" || opt == "-include" {
            next_is_name = true;
        } else if let Some(name) = opt
            .strip_prefix("--pre-include=")
            .or_else(|| opt.strip_prefix("-include="))
        {
            names.push(name.to_string());
        }
    }
    names
}

/// The `#include` targets of `text`, in order: the name and whether it was quoted (`"..."`).
/// A name that is neither quoted nor bracketed (a macro) is returned as written, unquoted.
fn scan(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        // `#include_next` and other words starting with "include" are not includes.
        if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = rest.trim();
        let (close, quoted) = match rest.chars().next() {
            Some('"') => ('"', true),
            Some('<') => ('>', false),
            // `#include MACRO`: recorded by what is written, and resolved nowhere.
            Some(_) => {
                let word = rest.split_whitespace().next().unwrap_or(rest);
                out.push((word.to_string(), false));
                continue;
            }
            None => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push((rest[1..1 + end].to_string(), quoted));
        }
    }
    out
}

/// Every file the source `name` with `text` includes, recursively, each once, in the order first
/// met. `headers` are the in-memory headers (name, contents); `dirs` the include paths.
///
/// NVRTC resolves the top source's quoted includes against the directory of its *name*
/// (`k.cu`: the working directory; `sub/k.cu`: `sub`), as checked with NVRTC 13.0, so that is
/// where they are looked for here too.
pub fn resolve(
    name: &str,
    text: &str,
    headers: &[(String, String)],
    dirs: &[PathBuf],
) -> Vec<Include> {
    let mut found = Vec::new();
    let mut seen: HashSet<(Option<PathBuf>, String)> = HashSet::new();
    let top_dir = match Path::new(name).parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // (text, directory of the file it came from)
    let mut pending: Vec<(String, Option<PathBuf>)> = vec![(text.to_string(), Some(top_dir))];
    while let Some((text, here)) = pending.pop() {
        // Pushed in reverse so that includes are visited in text order.
        let mut children = Vec::new();
        for (name, quoted) in scan(&text) {
            let base = if quoted { here.clone() } else { None };
            if !seen.insert((base.clone(), name.clone())) {
                continue;
            }
            let (origin, contents) = locate(&name, quoted, here.as_deref(), headers, dirs);
            let include = Include {
                hash: contents.as_deref().map_or(0, |c| fnv1a64(c.as_bytes())),
                len: contents.as_ref().map_or(0, String::len),
                name,
                origin: origin.clone(),
            };
            if found.contains(&include) {
                continue;
            }
            found.push(include);
            if let Some(contents) = contents {
                let dir = match origin {
                    IncludeOrigin::File(p) => p.parent().map(Path::to_path_buf),
                    _ => None,
                };
                children.push((contents, dir));
            }
        }
        pending.extend(children.into_iter().rev());
    }
    found
}

/// Where `name` resolves, and its contents.
fn locate(
    name: &str,
    quoted: bool,
    here: Option<&Path>,
    headers: &[(String, String)],
    dirs: &[PathBuf],
) -> (IncludeOrigin, Option<String>) {
    if let Some((_, text)) = headers.iter().find(|(n, _)| n == name) {
        return (IncludeOrigin::Memory, Some(text.clone()));
    }
    let local = here.filter(|_| quoted).map(|d| d.join(name));
    let candidates = local
        .into_iter()
        .chain(dirs.iter().map(|d| d.join(name)))
        // An absolute name is itself the place.
        .chain(Path::new(name).is_absolute().then(|| PathBuf::from(name)));
    for path in candidates {
        if let Ok(bytes) = std::fs::read(&path) {
            return (
                IncludeOrigin::File(path),
                Some(String::from_utf8_lossy(&bytes).into_owned()),
            );
        }
    }
    (IncludeOrigin::Unresolved, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::tests::scratch_dir;

    #[test]
    fn include_lines_are_read_in_order() {
        let text = "#include \"a.h\"\n  #  include <b/c.h> // why\n#include_next <d.h>\n#include MACRO_H\nint x; // #include \"in_comment.h\" is not a directive\n#define include 1\n#include \"unclosed\n";
        assert_eq!(
            scan(text),
            [
                ("a.h".to_string(), true),
                ("b/c.h".to_string(), false),
                ("MACRO_H".to_string(), false),
            ]
        );
    }

    #[test]
    fn include_paths_are_read_in_every_spelling() {
        let opts: Vec<String> = [
            "-DN=1",
            "-Ia",
            "-I",
            "b",
            "--include-path=c",
            "--include-path",
            "d",
            "-I=e",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            include_dirs(&opts),
            ["a", "b", "c", "d", "e"].map(PathBuf::from)
        );
    }

    #[test]
    fn includes_are_followed_through_files_memory_and_paths() {
        let dir = scratch_dir("includes");
        std::fs::create_dir_all(dir.join("inc/sub")).unwrap();
        std::fs::write(
            dir.join("inc/top.h"),
            "#include \"sub/leaf.h\"\n#include <mem.h>\n#include \"top.h\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("inc/sub/leaf.h"), "#include \"near.h\"\n").unwrap();
        std::fs::write(dir.join("inc/sub/near.h"), "#define NEAR 1\n").unwrap();
        let headers = vec![("mem.h".to_string(), "#include <cuda_fp16.h>\n".to_string())];
        let dirs = include_dirs(&[format!("-I{}", dir.join("inc").display())]);
        let found = resolve(
            "k.cu",
            "#include <top.h>\n#include <mem.h>\n",
            &headers,
            &dirs,
        );
        let names: Vec<(&str, &IncludeOrigin)> =
            found.iter().map(|i| (i.name.as_str(), &i.origin)).collect();
        assert_eq!(
            names,
            [
                ("top.h", &IncludeOrigin::File(dir.join("inc/top.h"))),
                ("mem.h", &IncludeOrigin::Memory),
                (
                    "sub/leaf.h",
                    &IncludeOrigin::File(dir.join("inc/sub/leaf.h"))
                ),
                ("near.h", &IncludeOrigin::File(dir.join("inc/sub/near.h"))),
                ("cuda_fp16.h", &IncludeOrigin::Unresolved),
            ],
            "{found:?}"
        );
        let near = &found[3];
        assert_eq!(near.hash, fnv1a64(b"#define NEAR 1\n"));
        assert_eq!(near.len, 15);
        assert!(found[4].key_line().ends_with("unresolved"));
        assert!(found[1].key_line().starts_with("\"mem.h\" memory "));

        // A changed header changes what is recorded.
        std::fs::write(dir.join("inc/sub/near.h"), "#define NEAR 2\n").unwrap();
        let again = resolve(
            "k.cu",
            "#include <top.h>\n#include <mem.h>\n",
            &headers,
            &dirs,
        );
        assert_ne!(again, found);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn quoted_includes_of_the_source_resolve_beside_its_name() {
        let dir = scratch_dir("includes-top");
        std::fs::write(dir.join("x.h"), "#define VAL 3\n").unwrap();
        let name = dir.join("k.cu").to_string_lossy().into_owned();
        let found = resolve(&name, "#include \"x.h\"\n#include <x.h>\n", &[], &[]);
        assert_eq!(found[0].origin, IncludeOrigin::File(dir.join("x.h")));
        // Angle brackets search only the include paths (there are none).
        assert_eq!(found[1].origin, IncludeOrigin::Unresolved);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
