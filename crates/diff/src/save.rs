//! The four builds saved to a directory (`mantissa diff --builds DIR`): per build `NAME.ptx`,
//! `NAME.changes.txt` (the changes per source line) and `NAME.toml`, the user's spec with its
//! source replaced by the PTX (`file = "NAME.ptx"`, `front_end = "ptx"`), runnable as
//! `mantissa run DIR/NAME.toml`.
//!
//! The spec is the user's text edited in place (comments and layout kept), by the byte spans
//! toml_edit's parser gives every value: the paths it names (`source.file`, `source.include`,
//! every `npy` and `reference`) become absolute, so that they work from DIR wherever it is; the
//! `--set` overrides are written into `[sizes]`, so that the saved spec runs what was measured;
//! `name` becomes `SPEC-NAME`, so that the builds' records are told apart in one results store.

use crate::builds::{changes_text, Build};
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::Spec;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{Item, Value};

/// Why a build could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Reading the spec or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The spec's text could not be edited.
    #[error("{0}")]
    Spec(String),
    /// A file or the directory could not be written (one line with what to do).
    #[error(transparent)]
    Write(#[from] mantissa_files::WriteError),
}

/// Writes every build of `builds` into `dir` (created if needed); returns the files written.
pub fn save(dir: &Path, spec: &Spec, builds: &[Build]) -> Result<Vec<PathBuf>, SaveError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SaveError::Io { path, source }
    };
    mantissa_files::ensure_dir(dir)?;
    let original = std::fs::read_to_string(&spec.path).map_err(io(&spec.path))?;
    let mut written = Vec::new();
    for b in builds {
        let ptx_file = format!("{}.ptx", b.name);
        let text = spec_text(
            &original,
            &spec.dir,
            &format!("{}-{}", spec.name, b.name),
            &ptx_file,
            &spec.overrides,
        )
        .map_err(|e| SaveError::Spec(format!("{}: {e}", spec.path.display())))?;
        for (file, contents) in [
            (ptx_file.clone(), b.ptx.clone()),
            (format!("{}.toml", b.name), text),
            (format!("{}.changes.txt", b.name), changes_text(b)),
        ] {
            let path = dir.join(file);
            mantissa_files::write_file(&path, contents.as_bytes())?;
            written.push(path);
        }
    }
    Ok(written)
}

/// `s` as a TOML basic string.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `written` (a path relative to `dir`, or absolute) as an absolute path.
fn absolute(dir: &Path, written: &str) -> String {
    let p = dir.join(written);
    let p = p.canonicalize().unwrap_or(p);
    p.display().to_string()
}

/// The spec text `original` (from directory `dir`) as the build's spec: named `name`, its
/// source `ptx_file` read as PTX, its paths absolute and `overrides` written into `[sizes]`.
pub fn spec_text(
    original: &str,
    dir: &Path,
    name: &str,
    ptx_file: &str,
    overrides: &[SizeOverride],
) -> Result<String, String> {
    let doc = toml_edit::Document::parse(original).map_err(|e| e.to_string())?;
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let root = doc.as_table();
    let span = |item: &Item, what: &str| {
        item.span()
            .ok_or_else(|| format!("{what} has no position in the text"))
    };
    match root.get("name") {
        Some(item) => edits.push((span(item, "name")?, quoted(name))),
        None => edits.push((0..0, format!("name = {}\n", quoted(name)))),
    }
    let source = root
        .get("source")
        .and_then(Item::as_table_like)
        .ok_or("no [source] table")?;
    let file = source.get("file").ok_or("no source.file")?;
    let file_span = span(file, "source.file")?;
    edits.push((file_span.clone(), quoted(ptx_file)));
    match source.get("front_end") {
        Some(item) => edits.push((span(item, "source.front_end")?, quoted("ptx"))),
        None => {
            let key = match root.get("source") {
                Some(Item::Value(Value::InlineTable(_))) => ", front_end = ",
                Some(Item::Table(t)) if t.is_dotted() => "\nsource.front_end = ",
                _ => "\nfront_end = ",
            };
            let end = file_span.end;
            edits.push((end..end, format!("{key}{}", quoted("ptx"))));
        }
    }
    if let Some(Item::Value(Value::Array(dirs))) = source.get("include") {
        for v in dirs.iter() {
            if let (Some(s), Some(r)) = (v.as_str(), v.span()) {
                edits.push((r, quoted(&absolute(dir, s))));
            }
        }
    }
    for (key, item) in root.iter() {
        if key != "source" {
            paths(item, dir, &mut edits);
        }
    }
    if !overrides.is_empty() {
        let sizes = root
            .get("sizes")
            .and_then(Item::as_table_like)
            .ok_or("--set given but the spec has no [sizes]")?;
        for o in overrides {
            let item = sizes
                .get(&o.name)
                .ok_or_else(|| format!("--set {}: no such size", o.name))?;
            let value = match o.text.parse::<f64>() {
                Ok(_) => o.text.clone(),
                Err(_) => quoted(&o.text),
            };
            edits.push((span(item, "a size")?, value));
        }
    }
    // Apply from the end, so that earlier spans stay valid; insertions at one point keep
    // their order.
    edits.sort_by(|a, b| b.0.start.cmp(&a.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut text = original.to_string();
    for (range, with) in edits {
        text.replace_range(range, &with);
    }
    Ok(text)
}

/// Every `npy` and `reference` string under `item`, as an edit making it absolute.
fn paths(item: &Item, dir: &Path, edits: &mut Vec<(Range<usize>, String)>) {
    match item {
        Item::Table(t) => {
            for (k, v) in t.iter() {
                path_entry(k, v, dir, edits);
            }
        }
        Item::ArrayOfTables(a) => {
            for t in a.iter() {
                for (k, v) in t.iter() {
                    path_entry(k, v, dir, edits);
                }
            }
        }
        Item::Value(v) => value_paths(v, dir, edits),
        Item::None => {}
    }
}

fn path_entry(key: &str, item: &Item, dir: &Path, edits: &mut Vec<(Range<usize>, String)>) {
    match (key, item) {
        ("npy" | "reference", Item::Value(Value::String(s))) => {
            if let Some(r) = s.span() {
                edits.push((r, quoted(&absolute(dir, s.value()))));
            }
        }
        _ => paths(item, dir, edits),
    }
}

fn value_paths(v: &Value, dir: &Path, edits: &mut Vec<(Range<usize>, String)>) {
    match v {
        Value::InlineTable(t) => {
            for (k, v) in t.iter() {
                match (k, v) {
                    ("npy" | "reference", Value::String(s)) => {
                        if let Some(r) = s.span() {
                            edits.push((r, quoted(&absolute(dir, s.value()))));
                        }
                    }
                    _ => value_paths(v, dir, edits),
                }
            }
        }
        Value::Array(a) => {
            for v in a.iter() {
                value_paths(v, dir, edits);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# the user's comment\n\
        [source]\n\
        file = \"k.cu\"   # kept\n\
        \n\
        [sizes]\n\
        n = 64\n\
        \n\
        [buffers.x]\n\
        type = \"f32\"\n\
        len = \"n\"\n\
        init = { npy = \"data/x.npy\" }\n\
        \n\
        [[outputs]]\n\
        buffer = \"x\"\n\
        reference = \"ref.npy\"\n\
        \n\
        [[outputs]]\n\
        buffer = \"y\"\n";

    #[test]
    fn the_source_becomes_the_ptx_and_paths_absolute_comments_kept() {
        let dir = Path::new("/nonexistent/spec dir");
        let set = [SizeOverride {
            name: "n".into(),
            text: "128".into(),
        }];
        let text =
            spec_text(SPEC, dir, "k-naive", "naive.ptx", &set).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            text.starts_with("name = \"k-naive\"\n# the user's comment\n"),
            "{text}"
        );
        assert!(
            text.contains("file = \"naive.ptx\"\nfront_end = \"ptx\"   # kept\n"),
            "{text}"
        );
        assert!(text.contains("n = 128\n"), "{text}");
        assert!(
            text.contains("init = { npy = \"/nonexistent/spec dir/data/x.npy\" }"),
            "{text}"
        );
        assert!(
            text.contains("reference = \"/nonexistent/spec dir/ref.npy\""),
            "{text}"
        );
        // It parses, with what was edited.
        let doc = toml_edit::Document::parse(text.as_str()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(doc["source"]["front_end"].as_str(), Some("ptx"));
        assert_eq!(doc["sizes"]["n"].as_integer(), Some(128));
    }

    #[test]
    fn an_existing_front_end_and_name_are_replaced_and_inline_sources_kept_inline() {
        let spec = "name = \"p\"\nsource = { file = \"k.cu\", front_end = \"nvrtc\" }\n";
        let text = spec_text(spec, Path::new("/d"), "p-fastest", "fastest.ptx", &[])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            "name = \"p-fastest\"\nsource = { file = \"fastest.ptx\", front_end = \"ptx\" }\n"
        );
        let spec = "source = { file = \"k.cu\" }\n";
        let text = spec_text(spec, Path::new("/d"), "k-naive", "naive.ptx", &[])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            "name = \"k-naive\"\nsource = { file = \"naive.ptx\", front_end = \"ptx\" }\n"
        );
        assert!(spec_text("[sizes]\n", Path::new("/d"), "a", "a.ptx", &[]).is_err());
        assert_eq!(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
