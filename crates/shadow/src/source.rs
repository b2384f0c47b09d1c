//! The text of the source lines a report names, read from the files the PTX's `.file`
//! directives name (absolute, or relative to the spec's directory or the working directory).
//! A file that cannot be read leaves its lines without text; a report never fails for it.

use crate::lines::FunctionSummary;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Fills each line's `source` with its text (trimmed), where its file can be read.
pub fn attach(functions: &mut [FunctionSummary], spec_dir: &Path) {
    let mut files: HashMap<String, Option<Vec<String>>> = HashMap::new();
    for l in functions.iter_mut().flat_map(|f| f.lines.iter_mut()) {
        if l.line == 0 {
            continue;
        }
        let text = files
            .entry(l.file.clone())
            .or_insert_with(|| read_lines(&l.file, spec_dir));
        l.source = text
            .as_ref()
            .and_then(|t| t.get(l.line as usize - 1))
            .map(|s| s.trim().to_string());
    }
}

/// The candidates for a `.file` path: as written, then under the spec's directory.
fn candidates(file: &str, spec_dir: &Path) -> Vec<PathBuf> {
    let p = PathBuf::from(file);
    if p.is_absolute() {
        vec![p]
    } else {
        vec![spec_dir.join(&p), p]
    }
}

/// The lines of `file` (as a `.file` names it), or `None` when it cannot be read.
pub fn read_lines(file: &str, spec_dir: &Path) -> Option<Vec<String>> {
    if file.is_empty() {
        return None;
    }
    candidates(file, spec_dir)
        .into_iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.lines().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::LineSummary;

    fn line(file: &str, line: u32) -> LineSummary {
        LineSummary {
            function: "k".into(),
            file: file.into(),
            line,
            source: None,
            sites: vec![0],
            opcodes: vec![],
            inlined: 0,
            demotion: None,
            exceptions: None,
            values: None,
        }
    }

    #[test]
    fn lines_get_their_text_from_absolute_or_spec_relative_paths() {
        let dir = std::env::temp_dir().join(format!("mantissa-shadow-src-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("k.cu"), "first\n    second = a - b;  \nthird\n").unwrap();
        let absolute = dir.join("k.cu").to_string_lossy().into_owned();
        let mut f = vec![FunctionSummary {
            function: "k".into(),
            lines: vec![
                line("k.cu", 2),
                line(&absolute, 3),
                line("k.cu", 9),
                line("missing.cu", 1),
                line("", 0),
            ],
            demotion: None,
            exceptions: None,
            values: None,
        }];
        attach(&mut f, &dir);
        let texts: Vec<Option<&str>> = f[0].lines.iter().map(|l| l.source.as_deref()).collect();
        assert_eq!(
            texts,
            [Some("second = a - b;"), Some("third"), None, None, None]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
