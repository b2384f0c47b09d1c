//! The source files a build's line info names: their text by `.file` index and line (shown
//! beside each line's instructions), the short names every line is labelled with
//! (`float_literal.cu:51`, `params.h:12`), and the macros they define (to name a `#define`d
//! double constant).

use mantissa_gpu::Define;
use mantissa_ptx::census::SourceLine;
use mantissa_ptx::promotion::source::defines_in;
use mantissa_ptx::Module;
use std::path::Path;

/// One file of the `.file` table.
struct SourceFile {
    index: u32,
    /// The name lines are labelled with: the file name, or the path when two files share it.
    label: String,
    /// Its lines, when the file could be read.
    lines: Option<Vec<String>>,
}

/// Source text and names by `.file` index.
pub(crate) struct SourceLines {
    files: Vec<SourceFile>,
    defines: Vec<(String, String)>,
}

impl SourceLines {
    /// The files `m` names. The input file itself (`input`, already read as `input_text`) is
    /// matched by name: NVRTC records the name it was given, made absolute. Other files
    /// (headers, a PTX file's sources) are read from their paths, non-UTF-8 bytes replaced; the
    /// `#include "..."` files the input reaches (beside it or in `include_dirs`) give macros.
    /// `cli_defines` (`-D`) come after the files' own `#define`s, so they win.
    pub(crate) fn new(
        input: &Path,
        input_text: &str,
        m: &Module,
        cli_defines: &[Define],
        include_dirs: &[std::path::PathBuf],
    ) -> SourceLines {
        let input_name = input.file_name();
        let is_ptx = input_text.starts_with("//\n// Generated");
        let table = m.files();
        let mut files = Vec::new();
        let mut defines = Vec::new();
        if !is_ptx {
            // Headers the file includes come first (a `#define` in the file itself wins): a
            // header holding only macros has no code, so the `.file` table never names it.
            for inc in mantissa_gpu::includes::resolve(
                &input.display().to_string(),
                input_text,
                &[],
                include_dirs,
            ) {
                if let mantissa_gpu::includes::IncludeOrigin::File(p) = &inc.origin {
                    if let Ok(t) = mantissa_gpu::read_source(p) {
                        defines.extend(defines_in(&t));
                    }
                }
            }
            defines.extend(defines_in(input_text));
        }
        for (index, path) in &table {
            let p = Path::new(path);
            let text = if p.file_name() == input_name && !is_ptx {
                Some(input_text.to_string())
            } else {
                mantissa_gpu::read_source(p).ok()
            };
            if let Some(t) = &text {
                if p.file_name() != input_name {
                    defines.extend(defines_in(t));
                }
            }
            let name = p
                .file_name()
                .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
            let shared = table
                .iter()
                .filter(|(_, q)| Path::new(q).file_name() == p.file_name())
                .count()
                > 1;
            files.push(SourceFile {
                index: *index,
                label: if shared { path.to_string() } else { name },
                lines: text.map(|t| t.lines().map(str::to_string).collect()),
            });
        }
        for d in cli_defines {
            if let Some(v) = &d.value {
                defines.push((d.name.clone(), v.clone()));
            }
        }
        SourceLines { files, defines }
    }

    /// The trimmed text of `file:line`, when the file could be read.
    pub(crate) fn text(&self, at: SourceLine) -> Option<&str> {
        let f = self.files.iter().find(|f| f.index == at.file)?;
        let lines = f.lines.as_ref()?;
        lines
            .get((at.line as usize).checked_sub(1)?)
            .map(|s| s.trim())
    }

    /// `float_literal.cu:51`; `no line info` for instructions before any `.loc`.
    pub(crate) fn label(&self, at: SourceLine) -> String {
        if at.line == 0 {
            return "no line info".into();
        }
        match self.files.iter().find(|f| f.index == at.file) {
            Some(f) => format!("{}:{}", f.label, at.line),
            None => format!("file {}:{}", at.file, at.line),
        }
    }

    /// The file's label alone (`float_literal.cu`).
    pub(crate) fn file_label(&self, file: u32) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.index == file)
            .map(|f| f.label.as_str())
    }

    /// The macros seen: `#define NAME VALUE` in the files, then `-D` options.
    pub(crate) fn defines(&self) -> &[(String, String)] {
        &self.defines
    }
}
