//! `[[outputs]]`: which buffers are the result, reduced or not, and the tolerance they must meet.

use super::buffers::BufferSpec;
use super::reader::{Ctx, Fields, Node};
use super::{Loc, Quantity, SpecError};
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
    /// Bit-identical: no element differs (`exact = true` or `digits = "all"`).
    Exact,
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Digits(d) => write!(f, "digits >= {d}"),
            Tolerance::Rel(r) => write!(f, "rel <= {r:e}"),
            Tolerance::Abs(a) => write!(f, "abs <= {a:e}"),
            Tolerance::Exact => f.write_str("exact (all digits)"),
        }
    }
}

/// Part of a buffer compared as an output: elements `offset + k * stride` for `k < len`. One
/// variable of a structure of arrays (variable v of element i at `i + v * n`) is `offset = v * n,
/// len = n, stride = 1`; of an array of structures (`v + i * nvars`), `offset = v, len = n,
/// stride = nvars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// The first element.
    pub offset: usize,
    /// Elements in the view (at least 1).
    pub len: usize,
    /// Distance between consecutive elements of the view (at least 1).
    pub stride: usize,
}

impl View {
    /// The buffer indices of the view, in order.
    pub fn indices(&self) -> impl Iterator<Item = usize> {
        let (offset, stride) = (self.offset, self.stride);
        (0..self.len).map(move |k| offset + k * stride)
    }

    /// The view's elements of `values` (the whole buffer).
    pub fn select<T: Copy>(&self, values: &[T]) -> Vec<T> {
        self.indices().map(|i| values[i]).collect()
    }

    /// The last buffer index the view reads, or `None` when it overflows.
    pub fn last(&self) -> Option<usize> {
        self.len
            .checked_sub(1)?
            .checked_mul(self.stride)?
            .checked_add(self.offset)
    }

    /// `[offset:end]` or `[offset:end:stride]`, as a Python slice of the buffer would select it.
    pub fn slice(&self) -> String {
        let end = self.last().map_or(self.offset, |l| l + 1);
        if self.stride == 1 {
            format!("[{}:{end}]", self.offset)
        } else {
            format!("[{}:{end}:{}]", self.offset, self.stride)
        }
    }
}

/// `[[outputs]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSpec {
    /// The buffer.
    pub buffer: String,
    /// The output's name as written (`name = "energy"`), when given.
    pub given_name: Option<String>,
    /// The part of the buffer compared (`offset`, `len`, `stride`); `None`: all of it.
    pub view: Option<View>,
    /// A one-number summary instead of the elements (of the view, when there is one).
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
    /// The output's name in tables and records: `name` when given; else the buffer, its view as a
    /// slice and its reduction: `u`, `energy.sum`, `state[4096:8192].sum`.
    pub fn name(&self) -> String {
        if let Some(n) = &self.given_name {
            return n.clone();
        }
        let view = self.view.map_or(String::new(), |v| v.slice());
        match self.reduce {
            Some(r) => format!("{}{view}.{}", self.buffer, r.name()),
            None => format!("{}{view}", self.buffer),
        }
    }

    /// How many values are compared for a buffer of `buffer_len` elements: 1 for a reduced
    /// output, else the view's length or the buffer's.
    pub fn compared_len(&self, buffer_len: usize) -> usize {
        match (self.reduce, self.view) {
            (Some(_), _) => 1,
            (None, Some(v)) => v.len,
            (None, None) => buffer_len,
        }
    }
}

const TOLERANCES: &str =
    "exactly one of { digits = 6 }, { rel = 1e-6 }, { abs = 1e-9 }, { exact = true }";

impl Ctx<'_> {
    pub(super) fn outputs(
        &self,
        node: Node,
        kl: Loc,
        sizes: &[(String, Val)],
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
        let mut out: Vec<OutputSpec> = Vec::new();
        for (i, it) in items.into_iter().enumerate() {
            let path = format!("outputs[{i}]");
            let f = self.fields(
                it,
                &path,
                l,
                &[
                    "buffer",
                    "name",
                    "offset",
                    "len",
                    "stride",
                    "reduce",
                    "tolerance",
                    "reference",
                ],
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
            let Some(buf) = bn.str().and_then(|s| buffers.iter().find(|b| b.name == s)) else {
                return Err(self.err(
                    bl,
                    f.field("buffer"),
                    bn.describe(),
                    // Outputs are read back as buffers; symbols are written, never read.
                    format!("a buffer: {} (a __device__ variable cannot be an output yet: copy it into a buffer in a kernel)", list()),
                ));
            };
            let given_name = match f.get("name") {
                None => None,
                Some((n, kl)) => match n.str().map(str::trim) {
                    Some(s) if !s.is_empty() && !s.contains(char::is_whitespace) => {
                        Some(s.to_string())
                    }
                    _ => {
                        return Err(self.err(
                            self.node_loc(n, kl),
                            f.field("name"),
                            n.describe(),
                            "a non-empty name without spaces (it names the output in tables and records)",
                        ))
                    }
                },
            };
            let view = self.view(&f, sizes, buf)?;
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
                Some((n, kl)) => Some(self.tolerance(n, kl, &f.field("tolerance"))?),
            };
            let (reference, reference_loc) = match self.path_field(&f, "reference", dir, true)? {
                Some((p, w, rl)) => (Some((p, w)), rl),
                None => (None, f.loc),
            };
            let output = OutputSpec {
                buffer: buf.name.clone(),
                given_name,
                view,
                reduce,
                tolerance,
                reference,
                loc: f.loc,
                reference_loc,
            };
            // Records and tables tell outputs apart by name.
            let name = output.name();
            if let Some(k) = out.iter().position(|o| o.name() == name) {
                let at = f.get("name").map_or(f.loc, |(n, kl)| self.node_loc(n, kl));
                return Err(self.err(
                    at,
                    f.field("name"),
                    format!("the output name '{name}', which outputs[{k}] has"),
                    "a name no other output has (name = \"...\")",
                ));
            }
            out.push(output);
        }
        Ok(out)
    }

    /// `offset`, `len` and `stride` of an output: `None` when none is written; checked to lie
    /// inside the buffer.
    fn view(
        &self,
        f: &Fields,
        sizes: &[(String, Val)],
        buf: &BufferSpec,
    ) -> Result<Option<View>, SpecError> {
        let names: Vec<&str> = sizes.iter().map(|s| s.0.as_str()).collect();
        let part = |key: &str| -> Result<Option<(usize, Quantity)>, SpecError> {
            let Some((n, kl)) = f.get(key) else {
                return Ok(None);
            };
            let q = self.quantity(n, kl, &f.field(key), &names, "sizes")?;
            Ok(Some((self.count(&q, sizes)?, q)))
        };
        let (offset, len, stride) = (part("offset")?, part("len")?, part("stride")?);
        if offset.is_none() && len.is_none() && stride.is_none() {
            return Ok(None);
        }
        let at_least_1 = |p: &Option<(usize, Quantity)>| -> Result<(), SpecError> {
            match p {
                Some((0, q)) => {
                    Err(self.err(q.loc, &q.field, format!("{} = 0", q.text), "at least 1"))
                }
                _ => Ok(()),
            }
        };
        at_least_1(&len)?;
        at_least_1(&stride)?;
        let stride_v = stride.as_ref().map_or(1, |s| s.0);
        let offset_v = offset.as_ref().map_or(0, |o| o.0);
        if offset_v >= buf.len {
            let q = offset.as_ref().map(|o| &o.1);
            return Err(self.err(
                q.map_or(f.loc, |q| q.loc),
                f.field("offset"),
                format!("offset = {offset_v}"),
                format!("an element of {}: 0 to {}", buf.name, buf.len - 1),
            ));
        }
        let fits = (buf.len - offset_v).div_ceil(stride_v);
        let view = View {
            offset: offset_v,
            len: len.as_ref().map_or(fits, |n| n.0),
            stride: stride_v,
        };
        if view.len > fits {
            let q = len.as_ref().map(|n| &n.1);
            return Err(self.err(
                q.map_or(f.loc, |q| q.loc),
                f.field("len"),
                format!(
                    "len = {} (elements {} to {} in steps of {stride_v})",
                    view.len,
                    offset_v,
                    view.last()
                        .map_or("past the end of memory".into(), |l| l.to_string())
                ),
                format!(
                    "at most {fits} elements: {} has {} (0 to {})",
                    buf.name,
                    buf.len,
                    buf.len - 1
                ),
            ));
        }
        Ok(Some(view))
    }

    /// `{ digits = 6 }`, `{ rel = 1e-6 }`, `{ abs = 1e-9 }`, or bit-identical: `{ exact = true }`
    /// or `{ digits = "all" }`.
    fn tolerance(&self, n: Node, kl: Loc, field: &str) -> Result<Tolerance, SpecError> {
        let t = self.fields(n, field, kl, &["digits", "rel", "abs", "exact"])?;
        let (key, vn, vkl) = match t.entries.as_slice() {
            [(k, kl, v)] => (*k, *v, *kl),
            _ => {
                return Err(self.err(
                    t.loc,
                    field,
                    format!("{} keys", t.entries.len()),
                    TOLERANCES,
                ))
            }
        };
        let vl = self.node_loc(vn, vkl);
        match (key, vn.value()) {
            ("exact", Some(toml_edit::Value::Boolean(b))) if *b.value() => {
                return Ok(Tolerance::Exact)
            }
            ("exact", _) => {
                return Err(self.err(
                    vl,
                    t.field(key),
                    vn.describe(),
                    "exact = true (bit-identical); leave the tolerance out for none",
                ))
            }
            ("digits", Some(toml_edit::Value::String(s))) if s.value() == "all" => {
                return Ok(Tolerance::Exact)
            }
            _ => {}
        }
        let v = vn
            .number()
            .map(Val::as_f64)
            .filter(|v| *v >= 0.0 && v.is_finite())
            .ok_or_else(|| {
                self.err(
                    vl,
                    t.field(key),
                    vn.describe(),
                    if key == "digits" {
                        "a non-negative number, or \"all\" (bit-identical)"
                    } else {
                        "a non-negative number"
                    },
                )
            })?;
        Ok(match key {
            "digits" => Tolerance::Digits(v),
            "rel" => Tolerance::Rel(v),
            _ => Tolerance::Abs(v),
        })
    }
}
