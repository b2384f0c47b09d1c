//! `[[outputs]]`: which buffers are the result, reduced or not, and the tolerance they must meet.

use super::buffers::BufferSpec;
use super::reader::{Ctx, Node};
use super::{Loc, SpecError};
use crate::expr::Val;
use std::fmt;
use std::path::{Path, PathBuf};

/// A one-number summary of an output buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// Sum (exact, rounded once).
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// sqrt(sum of squares), the sum exact.
    Norm2,
    /// Mean (exact sum / n).
    Mean,
}

impl Reduce {
    /// The spec's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Min => "min",
            Reduce::Max => "max",
            Reduce::Norm2 => "norm2",
            Reduce::Mean => "mean",
        }
    }
}

/// What an output must reach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// At least this many correct decimal digits (seed 002) in every element.
    Digits(f64),
    /// Relative error at most this, in every element.
    Rel(f64),
    /// Absolute error at most this, in every element.
    Abs(f64),
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Digits(d) => write!(f, "digits >= {d}"),
            Tolerance::Rel(r) => write!(f, "rel <= {r:e}"),
            Tolerance::Abs(a) => write!(f, "abs <= {a:e}"),
        }
    }
}

/// `[[outputs]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSpec {
    /// The buffer.
    pub buffer: String,
    /// A one-number summary instead of the whole buffer.
    pub reduce: Option<Reduce>,
    /// What must be reached.
    pub tolerance: Option<Tolerance>,
    /// The user's reference values (resolved path, and as written).
    pub reference: Option<(PathBuf, String)>,
    /// Where `[[outputs]]` is.
    pub loc: Loc,
    /// Where `reference` is.
    pub reference_loc: Loc,
}

impl OutputSpec {
    /// `u`, or `energy.sum` for a reduced output: the output's name in tables and records.
    pub fn name(&self) -> String {
        match self.reduce {
            Some(r) => format!("{}.{}", self.buffer, r.name()),
            None => self.buffer.clone(),
        }
    }
}

impl Ctx<'_> {
    pub(super) fn outputs(
        &self,
        node: Node,
        kl: Loc,
        buffers: &[BufferSpec],
        dir: &Path,
    ) -> Result<Vec<OutputSpec>, SpecError> {
        let l = self.node_loc(node, kl);
        let items = node
            .array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| self.err(l, "outputs", node.describe(), "[[outputs]] tables"))?;
        let list = || {
            buffers
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = Vec::new();
        for (i, it) in items.into_iter().enumerate() {
            let path = format!("outputs[{i}]");
            let f = self.fields(
                it,
                &path,
                l,
                &["buffer", "reduce", "tolerance", "reference"],
            )?;
            let (bn, bkl) = f.get("buffer").ok_or_else(|| {
                self.err(
                    f.loc,
                    f.field("buffer"),
                    "nothing",
                    format!("buffer = one of {}", list()),
                )
            })?;
            let bl = self.node_loc(bn, bkl);
            let buffer = match bn.str() {
                Some(s) if buffers.iter().any(|b| b.name == s) => s.to_string(),
                _ => {
                    return Err(self.err(
                        bl,
                        f.field("buffer"),
                        bn.describe(),
                        format!("a buffer: {}", list()),
                    ))
                }
            };
            let reduce = match f.get("reduce") {
                None => None,
                Some((n, kl)) => Some(match n.str() {
                    Some("sum") => Reduce::Sum,
                    Some("min") => Reduce::Min,
                    Some("max") => Reduce::Max,
                    Some("norm2") => Reduce::Norm2,
                    Some("mean") => Reduce::Mean,
                    _ => {
                        return Err(self.err(
                            self.node_loc(n, kl),
                            f.field("reduce"),
                            n.describe(),
                            "sum, min, max, norm2, mean",
                        ))
                    }
                }),
            };
            let tolerance = match f.get("tolerance") {
                None => None,
                Some((n, kl)) => {
                    let t = self.fields(n, &f.field("tolerance"), kl, &["digits", "rel", "abs"])?;
                    let (key, vn, vkl) = match t.entries.as_slice() {
                        [(k, kl, v)] => (*k, *v, *kl),
                        _ => {
                            return Err(self.err(
                                t.loc,
                                f.field("tolerance"),
                                format!("{} keys", t.entries.len()),
                                "exactly one of { digits = 6 }, { rel = 1e-6 }, { abs = 1e-9 }",
                            ))
                        }
                    };
                    let v = vn
                        .number()
                        .map(Val::as_f64)
                        .filter(|v| *v >= 0.0 && v.is_finite())
                        .ok_or_else(|| {
                            self.err(
                                self.node_loc(vn, vkl),
                                t.field(key),
                                vn.describe(),
                                "a non-negative number",
                            )
                        })?;
                    Some(match key {
                        "digits" => Tolerance::Digits(v),
                        "rel" => Tolerance::Rel(v),
                        _ => Tolerance::Abs(v),
                    })
                }
            };
            let (reference, reference_loc) = match self.path_field(&f, "reference", dir, true)? {
                Some((p, w, rl)) => (Some((p, w)), rl),
                None => (None, f.loc),
            };
            out.push(OutputSpec {
                buffer,
                reduce,
                tolerance,
                reference,
                loc: f.loc,
                reference_loc,
            });
        }
        Ok(out)
    }
}
