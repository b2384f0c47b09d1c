//! `[source]` and `[sizes]`.

use super::reader::{is_identifier, Ctx, Node};
use super::{lookup, Loc, SpecError};
use crate::expr::{self, Val};
use std::path::{Path, PathBuf};
use toml_edit::Value;

/// Which compiler reads the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    /// `.ptx` files as PTX, anything else through NVRTC (nvcc once it is wired in).
    Auto,
    /// NVRTC.
    Nvrtc,
    /// nvcc (`-ptx -lineinfo`).
    Nvcc,
    /// Ready PTX.
    Ptx,
}

impl FrontEnd {
    /// The spec's spelling.
    pub fn name(self) -> &'static str {
        match self {
            FrontEnd::Auto => "auto",
            FrontEnd::Nvrtc => "nvrtc",
            FrontEnd::Nvcc => "nvcc",
            FrontEnd::Ptx => "ptx",
        }
    }
}

/// `--set NAME=VALUE`: a `[sizes]` entry replaced from the command line. The value is read as
/// the file's would be (a number or an expression of the sizes above it), and every size,
/// length, count and argument that depends on it follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeOverride {
    /// The size's name.
    pub name: String,
    /// The value as given (a number or an expression).
    pub text: String,
}

impl std::str::FromStr for SizeOverride {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once('=') {
            Some((name, text)) if is_identifier(name.trim()) && !text.trim().is_empty() => {
                Ok(SizeOverride {
                    name: name.trim().to_string(),
                    text: text.trim().to_string(),
                })
            }
            _ => Err(format!(
                "--set {s}: found no NAME=VALUE; accepted a size's name, '=', and a number or expression (n=4096)"
            )),
        }
    }
}

/// `[source]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceSpec {
    /// The source file, resolved against the spec's directory.
    pub file: PathBuf,
    /// The front end asked for.
    pub front_end: FrontEnd,
    /// `-I` directories, resolved.
    pub include: Vec<PathBuf>,
    /// `-D` definitions in order: name and value (`None` for a bare `-D NAME`).
    pub define: Vec<(String, Option<String>)>,
    /// The target architecture, when not the GPU's own.
    pub arch: Option<String>,
    /// Where `[source]` is.
    pub loc: Loc,
}

impl SourceSpec {
    /// The `-I`/`-D` options, in the order NVRTC and nvcc take them.
    pub fn options(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .include
            .iter()
            .map(|d| format!("-I{}", d.display()))
            .collect();
        out.extend(self.define.iter().map(|(n, v)| match v {
            Some(v) => format!("-D{n}={v}"),
            None => format!("-D{n}"),
        }));
        out
    }
}

impl Ctx<'_> {
    pub(super) fn source(&self, node: Node, kl: Loc, dir: &Path) -> Result<SourceSpec, SpecError> {
        let f = self.fields(
            node,
            "source",
            kl,
            &["file", "front_end", "include", "define", "arch"],
        )?;
        let Some((file, written, file_loc)) = self.path_field(&f, "file", dir, true)? else {
            return Err(self.err(
                f.loc,
                "source.file",
                "no file",
                "file = \"kernel.cu\" (.cu CUDA C++ or .ptx)",
            ));
        };
        let front_end = match f.get("front_end") {
            None => FrontEnd::Auto,
            Some((n, kl)) => {
                let l = self.node_loc(n, kl);
                match n.str() {
                    Some("auto") => FrontEnd::Auto,
                    Some("nvrtc") => FrontEnd::Nvrtc,
                    Some("nvcc") => FrontEnd::Nvcc,
                    Some("ptx") => FrontEnd::Ptx,
                    _ => {
                        return Err(self.err(
                            l,
                            "source.front_end",
                            n.describe(),
                            "auto, nvrtc, nvcc, ptx",
                        ))
                    }
                }
            }
        };
        let is_ptx = written.ends_with(".ptx");
        if (front_end == FrontEnd::Ptx) != is_ptx && front_end != FrontEnd::Auto {
            return Err(self.err(
                file_loc,
                "source.file",
                format!("\"{written}\" with front_end = \"{}\"", front_end.name()),
                "a .ptx file with front_end ptx (or auto), CUDA C++ with nvrtc, nvcc or auto",
            ));
        }
        let mut include = Vec::new();
        if let Some((n, kl)) = f.get("include") {
            let l = self.node_loc(n, kl);
            let items = n.array().ok_or_else(|| {
                self.err(l, "source.include", n.describe(), "an array of directories")
            })?;
            for (i, it) in items.into_iter().enumerate() {
                let il = self.node_loc(it, l);
                let field = format!("source.include[{i}]");
                let s = it
                    .str()
                    .ok_or_else(|| self.err(il, &field, it.describe(), "a directory (a string)"))?;
                let p = dir.join(s);
                if !p.is_dir() {
                    return Err(self.err(
                        il,
                        field,
                        format!("\"{s}\", which is not a directory ({})", p.display()),
                        "an existing directory, relative to the spec's directory",
                    ));
                }
                include.push(p);
            }
        }
        let mut define = Vec::new();
        if let Some((n, kl)) = f.get("define") {
            let l = self.node_loc(n, kl);
            let t = n.table().ok_or_else(|| {
                self.err(l, "source.define", n.describe(), "a table NAME = value")
            })?;
            for (k, ks, v) in t.entries() {
                let vl = self.span_loc(v.span(), self.span_loc(ks, l));
                let field = format!("source.define.{k}");
                let value = match v.value() {
                    Some(Value::String(s)) => Some(s.value().clone()),
                    Some(Value::Integer(i)) => Some(i.value().to_string()),
                    Some(Value::Float(x)) => Some(format!("{:?}", x.value())),
                    Some(Value::Boolean(b)) if *b.value() => None,
                    // false: not defined at all, which is what `#ifdef` tests expect.
                    Some(Value::Boolean(_)) => continue,
                    _ => {
                        return Err(self.err(
                            vl,
                            field,
                            v.describe(),
                            "a string, number or boolean (true: -D NAME)",
                        ))
                    }
                };
                define.push((k.to_string(), value));
            }
        }
        let arch = match f.get("arch") {
            None => None,
            Some((n, kl)) => {
                let l = self.node_loc(n, kl);
                match n.str().map(|s| (s, s.parse::<mantissa_gpu::Arch>())) {
                    Some((s, Ok(_))) => Some(s.to_string()),
                    _ => {
                        return Err(self.err(
                            l,
                            "source.arch",
                            n.describe(),
                            "an architecture such as \"sm_90\"",
                        ))
                    }
                }
            }
        };
        Ok(SourceSpec {
            file,
            front_end,
            include,
            define,
            arch,
            loc: f.loc,
        })
    }

    /// `[sizes]`, in file order, with `--set` overrides replacing the values written (the sizes
    /// below an overridden one are evaluated with its new value). `node` is `None` when the spec
    /// has no `[sizes]`; an override naming no size is then an error too.
    pub(super) fn sizes(
        &self,
        node: Option<(Node, Loc)>,
        overrides: &[SizeOverride],
    ) -> Result<Vec<(String, Val)>, SpecError> {
        let mut sizes: Vec<(String, Val)> = Vec::new();
        let mut table_loc = Loc { line: 1, col: 1 };
        if let Some((node, kl)) = node {
            let l = self.node_loc(node, kl);
            table_loc = l;
            let t = node.table().ok_or_else(|| {
                self.err(
                    l,
                    "sizes",
                    node.describe(),
                    "a table of NAME = number or expression",
                )
            })?;
            for (k, ks, v) in t.entries() {
                let kloc = self.span_loc(ks, l);
                let field = format!("sizes.{k}");
                if !is_identifier(k) {
                    return Err(self.err(
                        kloc,
                        field,
                        format!("the name '{k}'"),
                        "names of letters, digits and _ (not starting with a digit)",
                    ));
                }
                let known: Vec<&str> = sizes.iter().map(|s| s.0.as_str()).collect();
                let val = match overrides.iter().rev().find(|o| o.name == k) {
                    Some(o) => self.overridden(o, kloc, &known, &sizes)?,
                    None => {
                        let q = self.quantity(v, kloc, &field, &known, "sizes defined above it")?;
                        self.eval(&q, &sizes, &[])?
                    }
                };
                sizes.push((k.to_string(), val));
            }
        }
        if let Some(o) = overrides
            .iter()
            .find(|o| !sizes.iter().any(|s| s.0 == o.name))
        {
            let names: Vec<&str> = sizes.iter().map(|s| s.0.as_str()).collect();
            return Err(self.err(
                table_loc,
                format!("--set {}", o.name),
                format!("unknown size '{}'", o.name),
                if names.is_empty() {
                    "a size of [sizes]; the spec has none".to_string()
                } else {
                    format!("a size of [sizes]: {}", names.join(", "))
                },
            ));
        }
        Ok(sizes)
    }

    /// The value `--set NAME=TEXT` gives the size `NAME` written at `at`: an expression of the
    /// sizes above it, as in the file.
    fn overridden(
        &self,
        o: &SizeOverride,
        at: Loc,
        known: &[&str],
        sizes: &[(String, Val)],
    ) -> Result<Val, SpecError> {
        let field = format!("sizes.{} (--set {}={})", o.name, o.name, o.text);
        let expr = expr::parse(&o.text).map_err(|e| self.err(at, &field, e.found, e.accepted))?;
        if let Some((name, _)) = expr.unknown_name(&|n| known.contains(&n)) {
            return Err(self.err(
                at,
                &field,
                format!("unknown name '{name}'"),
                format!(
                    "sizes defined above it: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        expr.eval(&|n| lookup(sizes, n))
            .map_err(|e| self.err(at, &field, e.found, e.accepted))
    }
}
