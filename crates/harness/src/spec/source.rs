//! `[source]` and `[sizes]`.

use super::reader::{is_identifier, Ctx, Node};
use super::{Loc, SpecError};
use crate::expr::Val;
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

    pub(super) fn sizes(&self, node: Node, kl: Loc) -> Result<Vec<(String, Val)>, SpecError> {
        let l = self.node_loc(node, kl);
        let t = node.table().ok_or_else(|| {
            self.err(
                l,
                "sizes",
                node.describe(),
                "a table of NAME = number or expression",
            )
        })?;
        let mut sizes: Vec<(String, Val)> = Vec::new();
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
            let known: Vec<String> = sizes.iter().map(|s| s.0.clone()).collect();
            let q = self.quantity(
                v,
                kloc,
                &field,
                &known.iter().map(String::as_str).collect::<Vec<_>>(),
                "sizes defined above it",
            )?;
            let val = self.eval(&q, &sizes, &[])?;
            sizes.push((k.to_string(), val));
        }
        Ok(sizes)
    }
}
