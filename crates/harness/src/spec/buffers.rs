//! `[buffers.NAME]`: element type, length and initial contents.

use super::reader::{dtype_names, is_identifier, Ctx, Node};
use super::{Loc, SpecError};
use crate::expr::Val;
use mantissa_gpu::DType;
use std::path::{Path, PathBuf};

/// A seeded random distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Random {
    /// Uniform in [min, max) (integers: [min, max]).
    Uniform {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// Normal.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        std: f64,
    },
    /// Uniform in log between two positive bounds.
    LogUniform {
        /// Lower bound (> 0).
        min: f64,
        /// Upper bound.
        max: f64,
    },
}

/// A buffer's initial contents.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// Zeros (the default).
    Zeros,
    /// Every element the same.
    Constant(f64),
    /// Element k = start + k * step.
    Sequence {
        /// Element 0.
        start: f64,
        /// Increment.
        step: f64,
    },
    /// Seeded random values.
    Random {
        /// The distribution.
        dist: Random,
        /// The generator's seed.
        seed: u64,
    },
    /// A `.npy` file (resolved path, and the path as written).
    Npy(PathBuf, String),
}

/// `[buffers.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferSpec {
    /// The buffer's name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Elements (evaluated).
    pub len: usize,
    /// Initial contents.
    pub init: Init,
    /// Where `[buffers.NAME]` is.
    pub loc: Loc,
    /// Where `init` is (or the table when absent).
    pub init_loc: Loc,
}

impl Ctx<'_> {
    pub(super) fn buffers(
        &self,
        node: Node,
        kl: Loc,
        sizes: &[(String, Val)],
        dir: &Path,
    ) -> Result<Vec<BufferSpec>, SpecError> {
        let l = self.node_loc(node, kl);
        let t = node
            .table()
            .ok_or_else(|| self.err(l, "buffers", node.describe(), "[buffers.NAME] tables"))?;
        let size_names: Vec<&str> = sizes.iter().map(|s| s.0.as_str()).collect();
        let mut out = Vec::new();
        for (name, ks, v) in t.entries() {
            let kloc = self.span_loc(ks, l);
            let path = format!("buffers.{name}");
            if !is_identifier(name) {
                return Err(self.err(
                    kloc,
                    path,
                    format!("the name '{name}'"),
                    "names of letters, digits and _",
                ));
            }
            if size_names.contains(&name) {
                return Err(self.err(
                    kloc,
                    path,
                    format!("'{name}', which is also a size"),
                    "a name that is not a size (arguments name either)",
                ));
            }
            let f = self.fields(v, &path, kloc, &["type", "len", "init"])?;
            let dtype = match f.get("type") {
                None => {
                    return Err(self.err(
                        f.loc,
                        f.field("type"),
                        "nothing",
                        format!("type = one of {}", dtype_names()),
                    ))
                }
                Some((n, kl)) => {
                    let tl = self.node_loc(n, kl);
                    n.str()
                        .and_then(|s| s.parse::<DType>().ok())
                        .ok_or_else(|| self.err(tl, f.field("type"), n.describe(), dtype_names()))?
                }
            };
            let len = match f.get("len") {
                None => {
                    return Err(self.err(
                        f.loc,
                        f.field("len"),
                        "nothing",
                        "len = an integer or expression of sizes",
                    ))
                }
                Some((n, kl)) => {
                    let q = self.quantity(n, kl, &f.field("len"), &size_names, "sizes")?;
                    let len = self.count(&q, sizes)?;
                    if len == 0 {
                        return Err(self.err(
                            q.loc,
                            f.field("len"),
                            format!("{} = 0", q.text),
                            "at least 1 element",
                        ));
                    }
                    len
                }
            };
            let (init, init_loc) = match f.get("init") {
                None => (Init::Zeros, f.loc),
                Some((n, kl)) => {
                    let il = self.node_loc(n, kl);
                    (self.init(n, il, &f.field("init"), dtype, dir)?, il)
                }
            };
            out.push(BufferSpec {
                name: name.to_string(),
                dtype,
                len,
                init,
                loc: f.loc,
                init_loc,
            });
        }
        Ok(out)
    }

    pub(super) fn init(
        &self,
        n: Node,
        l: Loc,
        field: &str,
        dtype: DType,
        dir: &Path,
    ) -> Result<Init, SpecError> {
        const FORMS: &str = "\"zeros\", { constant = x }, { sequence = { start, step } }, { random = \"uniform\" | \"normal\" | \"log-uniform\", ... }, { npy = \"file.npy\" }";
        if let Some(s) = n.str() {
            return if s == "zeros" {
                Ok(Init::Zeros)
            } else {
                Err(self.err(l, field, n.describe(), FORMS))
            };
        }
        let t = n
            .table()
            .ok_or_else(|| self.err(l, field, n.describe(), FORMS))?;
        let form = t.entries().first().map(|e| e.0).unwrap_or("");
        let is_int = !matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
        match form {
            "constant" => {
                let f = self.fields(n, field, l, &["constant"])?;
                Ok(Init::Constant(self.number(&f, "constant", None)?))
            }
            "sequence" => {
                let f = self.fields(n, field, l, &["sequence"])?;
                let (sn, skl) = f
                    .get("sequence")
                    .ok_or_else(|| self.err(l, field, "nothing", FORMS))?;
                let s = self.fields(sn, &f.field("sequence"), skl, &["start", "step"])?;
                Ok(Init::Sequence {
                    start: self.number(&s, "start", Some(0.0))?,
                    step: self.number(&s, "step", Some(1.0))?,
                })
            }
            "random" => {
                let (rn, rkl) = t
                    .entries()
                    .first()
                    .map(|e| (e.2, self.span_loc(e.1.clone(), l)))
                    .ok_or_else(|| self.err(l, field, "nothing", FORMS))?;
                let rl = self.node_loc(rn, rkl);
                let kind = rn.str().unwrap_or("");
                let (keys, dist): (&'static [&'static str], _) = match kind {
                    "uniform" => (&["random", "min", "max", "seed"], 0),
                    "normal" => (&["random", "mean", "std", "seed"], 1),
                    "log-uniform" => (&["random", "min", "max", "seed"], 2),
                    _ => {
                        return Err(self.err(
                            rl,
                            format!("{field}.random"),
                            rn.describe(),
                            "\"uniform\", \"normal\", \"log-uniform\"",
                        ))
                    }
                };
                let f = self.fields(n, field, l, keys)?;
                let seed = match f.get("seed") {
                    None => 0,
                    Some((sn, skl)) => match sn.int() {
                        Some(s) if s >= 0 => s as u64,
                        _ => {
                            return Err(self.err(
                                self.node_loc(sn, skl),
                                f.field("seed"),
                                sn.describe(),
                                "a non-negative integer",
                            ))
                        }
                    },
                };
                let dist = match dist {
                    0 => {
                        let (min, max) = (
                            self.number(&f, "min", Some(0.0))?,
                            self.number(&f, "max", Some(1.0))?,
                        );
                        if !(min < max || (is_int && min == max)) {
                            return Err(self.err(
                                f.loc,
                                f.field("max"),
                                format!("min = {min}, max = {max}"),
                                "min < max",
                            ));
                        }
                        Random::Uniform { min, max }
                    }
                    1 => {
                        let (mean, std) = (
                            self.number(&f, "mean", Some(0.0))?,
                            self.number(&f, "std", Some(1.0))?,
                        );
                        if !(std >= 0.0 && std.is_finite()) {
                            return Err(self.err(
                                f.loc,
                                f.field("std"),
                                format!("{std}"),
                                "a finite std >= 0",
                            ));
                        }
                        Random::Normal { mean, std }
                    }
                    _ => {
                        let (min, max) =
                            (self.number(&f, "min", None)?, self.number(&f, "max", None)?);
                        if !(min > 0.0 && min < max && max.is_finite()) {
                            return Err(self.err(
                                f.loc,
                                f.field("min"),
                                format!("min = {min}, max = {max}"),
                                "0 < min < max (finite)",
                            ));
                        }
                        Random::LogUniform { min, max }
                    }
                };
                if is_int && !matches!(dist, Random::Uniform { .. }) {
                    return Err(self.err(
                        rl,
                        format!("{field}.random"),
                        format!("\"{kind}\" for a {dtype} buffer"),
                        "\"uniform\" for integer buffers (integers in [min, max])",
                    ));
                }
                Ok(Init::Random { dist, seed })
            }
            "npy" => {
                let f = self.fields(n, field, l, &["npy"])?;
                let (p, w, _) = self
                    .path_field(&f, "npy", dir, true)?
                    .ok_or_else(|| self.err(l, field, "nothing", FORMS))?;
                Ok(Init::Npy(p, w))
            }
            other => {
                let kl = t
                    .entries()
                    .first()
                    .map_or(l, |e| self.span_loc(e.1.clone(), l));
                Err(self.err(
                    kl,
                    format!("{field}.{other}"),
                    format!("unknown key '{other}'"),
                    "the keys constant, sequence, random, npy",
                ))
            }
        }
    }
}
