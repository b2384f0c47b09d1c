//! Loading a spec file into a typed [`Spec`], keeping the file position of everything, so that
//! every error reads `FILE:LINE:COL: FIELD: found X; accepted Y` ([`SpecError`]).
//!
//! The TOML is read with `toml_edit`'s span-keeping document and walked by hand rather than
//! deserialised with serde: the walk knows, for each key, which keys were accepted there, and
//! every value keeps its position. Sizes are evaluated here (they depend on nothing else);
//! lengths, counts and grids are parsed and their names checked, and evaluated where they need
//! no loop counter. What needs the program (kernel signatures, symbol sizes) is checked in
//! [`crate::validate`]; buffer contents are made in [`crate::data`].

mod buffers;
mod copy;
mod outputs;
mod reader;
mod source;
mod steps;
mod symbols;

pub use buffers::{BufferSpec, Init, Random};
pub use copy::{CopyRange, CopyRangeError, CopySide};
pub use outputs::{OutputSpec, Reduce, Tolerance, View};
pub use source::{FrontEnd, SizeOverride, SourceSpec};
pub use steps::{Arg, ArgSpec, Launch, Step, StepKind};
pub use symbols::{SymbolLayout, SymbolSpec, SymbolValue};

use crate::expr::{Expr, Val};
use reader::{Ctx, Names, Node};
use std::path::{Path, PathBuf};
use toml_edit::Table;

/// A position in the spec file, 1-based; column in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loc {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub col: usize,
}

/// A spec error: where, which field, what was found and what would be accepted. Displays as one
/// line, `FILE:LINE:COL: FIELD: found X; accepted Y`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{}:{}: {field}: found {found}; accepted {accepted}", loc.line, loc.col)]
pub struct SpecError {
    /// The spec file as the user named it.
    pub file: String,
    /// Where in it.
    pub loc: Loc,
    /// The field's path (`buffers.u.len`, `steps[1].steps[2].args[3]`).
    pub field: String,
    /// What was found.
    pub found: String,
    /// What would be accepted.
    pub accepted: String,
}

/// Where an expression was written: its own position, and, when the string is written on one
/// line without escapes, the position of its first character, so that errors can point at the
/// bad token inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    /// The expression as written (a literal number prints as itself).
    pub text: String,
    /// The parsed expression.
    pub expr: Expr,
    /// Where the value is in the file.
    pub loc: Loc,
    /// The position of the string's first character, when offsets map onto columns.
    pub inner: Option<Loc>,
    /// The field path, for messages.
    pub field: String,
}

impl Quantity {
    /// The file position of byte `offset` of the expression text.
    pub fn loc_at(&self, offset: usize) -> Loc {
        match self.inner {
            Some(l) => Loc {
                line: l.line,
                col: l.col + self.text[..offset.min(self.text.len())].chars().count(),
            },
            None => self.loc,
        }
    }

    /// The constant value (an integer, a float, or an expression of sizes only).
    pub fn constant(&self, sizes: &[(String, Val)]) -> Option<Val> {
        self.expr.eval(&|n| lookup(sizes, n)).ok()
    }
}

/// The value of a size.
pub fn lookup(sizes: &[(String, Val)], name: &str) -> Option<Val> {
    sizes.iter().rev().find(|s| s.0 == name).map(|s| s.1)
}

/// A parsed spec: everything in the file, typed, with positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The spec file as named.
    pub path: PathBuf,
    /// Its directory, which relative paths are relative to.
    pub dir: PathBuf,
    /// `name`, default the file stem.
    pub name: String,
    /// `[source]`.
    pub source: SourceSpec,
    /// Sizes, evaluated, in order.
    pub sizes: Vec<(String, Val)>,
    /// Buffers, in file order.
    pub buffers: Vec<BufferSpec>,
    /// Symbols, in file order.
    pub symbols: Vec<SymbolSpec>,
    /// Steps run once before the program (`[[setup]]`), untimed: launches that initialise state.
    /// Each timed repeat starts from the state they leave.
    pub setup: Vec<Step>,
    /// The program: the timed step sequence.
    pub steps: Vec<Step>,
    /// Outputs.
    pub outputs: Vec<OutputSpec>,
    /// The `--set` overrides the sizes were evaluated with.
    pub overrides: Vec<SizeOverride>,
}

impl Spec {
    /// Reads and parses a spec file.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        Spec::load_with(path, &[])
    }

    /// Reads and parses a spec file with `[sizes]` entries replaced (`--set n=4096`).
    pub fn load_with(path: &Path, overrides: &[SizeOverride]) -> Result<Spec, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            file: path.display().to_string(),
            loc: Loc { line: 1, col: 1 },
            field: "(file)".into(),
            found: format!("an unreadable file ({e})"),
            accepted: "a readable UTF-8 TOML file".into(),
        })?;
        Spec::parse_with(&text, path, overrides)
    }

    /// Parses spec text as if read from `path` (relative paths resolve against its directory).
    pub fn parse(text: &str, path: &Path) -> Result<Spec, SpecError> {
        Spec::parse_with(text, path, &[])
    }

    /// [`Spec::parse`] with `[sizes]` entries replaced.
    pub fn parse_with(
        text: &str,
        path: &Path,
        overrides: &[SizeOverride],
    ) -> Result<Spec, SpecError> {
        let cx = Ctx {
            file: path.display().to_string(),
            text,
        };
        let doc = toml_edit::Document::parse(text).map_err(|e| {
            let msg = e.message().lines().next().unwrap_or("").trim().to_string();
            cx.err(
                cx.loc(e.span().map_or(0, |s| s.start)),
                "(toml)",
                format!("a TOML syntax error ({msg})"),
                "TOML (https://toml.io)",
            )
        })?;
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        cx.spec(doc.as_table(), path, dir, overrides)
    }

    /// The buffer called `name`.
    pub fn buffer(&self, name: &str) -> Option<&BufferSpec> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// Every seed the spec's generators use, by buffer, in file order.
    pub fn seeds(&self) -> Vec<(String, u64)> {
        self.buffers
            .iter()
            .filter_map(|b| match b.init {
                Init::Random { seed, .. } => Some((b.name.clone(), seed)),
                _ => None,
            })
            .collect()
    }

    /// An error at `loc` of this spec's file.
    pub fn error(
        &self,
        loc: Loc,
        field: impl Into<String>,
        found: impl Into<String>,
        accepted: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: self.path.display().to_string(),
            loc,
            field: field.into(),
            found: found.into(),
            accepted: accepted.into(),
        }
    }

    /// Every step, setup first, then the program, depth first, with the loop counters in scope
    /// at it.
    pub fn walk(&self) -> Vec<(&Step, Vec<String>)> {
        fn go<'a>(
            steps: &'a [Step],
            counters: &mut Vec<String>,
            out: &mut Vec<(&'a Step, Vec<String>)>,
        ) {
            for s in steps {
                out.push((s, counters.clone()));
                if let StepKind::Repeat { counter, steps, .. } = &s.kind {
                    let pushed = counter.is_some();
                    if let Some(c) = counter {
                        counters.push(c.clone());
                    }
                    go(steps, counters, out);
                    if pushed {
                        counters.pop();
                    }
                }
            }
        }
        let mut out = Vec::new();
        go(&self.setup, &mut Vec::new(), &mut out);
        go(&self.steps, &mut Vec::new(), &mut out);
        out
    }
}

impl Ctx<'_> {
    fn spec(
        &self,
        root: &Table,
        path: &Path,
        dir: PathBuf,
        overrides: &[SizeOverride],
    ) -> Result<Spec, SpecError> {
        let start = Loc { line: 1, col: 1 };
        let top = self.fields(
            Node::Table(root),
            "",
            start,
            &[
                "name", "source", "sizes", "buffers", "symbols", "setup", "steps", "outputs",
            ],
        )?;
        let name = match top.get("name") {
            Some((n, kl)) => {
                let l = self.node_loc(n, kl);
                match n.str() {
                    Some(s) if !s.trim().is_empty() => s.to_string(),
                    _ => return Err(self.err(l, "name", n.describe(), "a non-empty string")),
                }
            }
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "spec".into()),
        };
        let Some((src, src_kl)) = top.get("source") else {
            return Err(self.err(
                start,
                "source",
                "no [source] table",
                "[source] with file = \"kernel.cu\"",
            ));
        };
        let source = self.source(src, src_kl, &dir)?;
        let sizes = self.sizes(top.get("sizes"), overrides)?;
        let buffers = match top.get("buffers") {
            Some((n, kl)) => self.buffers(n, kl, &sizes, &dir)?,
            None => Vec::new(),
        };
        let symbols = match top.get("symbols") {
            Some((n, kl)) => self.symbols(n, kl, &dir)?,
            None => Vec::new(),
        };
        let names = Names {
            sizes: &sizes,
            buffers: &buffers,
        };
        let Some((st, st_kl)) = top.get("steps") else {
            return Err(self.err(start, "steps", "no steps", "[[steps]] tables, run in order"));
        };
        let setup = match top.get("setup") {
            Some((n, kl)) => self.steps(n, kl, "setup", &names, &mut Vec::new())?,
            None => Vec::new(),
        };
        let steps = self.steps(st, st_kl, "steps", &names, &mut Vec::new())?;
        let Some((out, out_kl)) = top.get("outputs") else {
            return Err(self.err(
                start,
                "outputs",
                "no outputs",
                "[[outputs]] tables naming the buffers that are the program's result",
            ));
        };
        let outputs = self.outputs(out, out_kl, &sizes, &buffers, &dir)?;
        Ok(Spec {
            path: path.to_path_buf(),
            dir,
            name,
            source,
            sizes,
            buffers,
            symbols,
            setup,
            steps,
            outputs,
            overrides: overrides.to_vec(),
        })
    }
}
