//! `[symbols.NAME]`: `__constant__` and `__device__` variables set before the run.

use super::reader::{dtype_names, Ctx, Node};
use super::{Loc, SpecError};
use crate::expr::Val;
use mantissa_gpu::DType;
use std::path::{Path, PathBuf};

/// The element layout of a symbol.
#[derive(Debug, Clone, PartialEq)]
pub enum SymbolLayout {
    /// Elements of one type; `lanes` > 1 for CUDA vector types (`double2`: F64 x 2).
    Elements {
        /// Element type.
        dtype: DType,
        /// Components per vector (1 for scalars).
        lanes: usize,
        /// The type as written.
        written: String,
    },
    /// A plain struct with these fields, in declaration order, C layout.
    Struct(Vec<DType>),
}

/// A symbol's value.
#[derive(Debug, Clone, PartialEq)]
pub enum SymbolValue {
    /// Literal numbers: flattened for elements, one row per struct element for structs.
    Literal(Vec<Vec<Val>>),
    /// A `.npy` file (resolved path, and the path as written).
    Npy(PathBuf, String),
}

/// `[symbols.NAME]`: a `__constant__` or `__device__` variable set before the run.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolSpec {
    /// The variable's name (C name; matched against the PTX).
    pub name: String,
    /// Its layout.
    pub layout: SymbolLayout,
    /// Its value.
    pub value: SymbolValue,
    /// Where `[symbols.NAME]` is.
    pub loc: Loc,
    /// Where `value` or `npy` is.
    pub value_loc: Loc,
}

const SYMBOL_VECTORS: [(&str, DType, usize); 9] = [
    ("double2", DType::F64, 2),
    ("double3", DType::F64, 3),
    ("double4", DType::F64, 4),
    ("float2", DType::F32, 2),
    ("float3", DType::F32, 3),
    ("float4", DType::F32, 4),
    ("int2", DType::I32, 2),
    ("int3", DType::I32, 3),
    ("int4", DType::I32, 4),
];

impl Ctx<'_> {
    pub(super) fn symbols(
        &self,
        node: Node,
        kl: Loc,
        dir: &Path,
    ) -> Result<Vec<SymbolSpec>, SpecError> {
        let l = self.node_loc(node, kl);
        let t = node
            .table()
            .ok_or_else(|| self.err(l, "symbols", node.describe(), "[symbols.NAME] tables"))?;
        let mut out = Vec::new();
        let accepted_types = || {
            format!(
                "{}, {}",
                dtype_names(),
                SYMBOL_VECTORS.map(|v| v.0).join(", ")
            )
        };
        for (name, ks, v) in t.entries() {
            let kloc = self.span_loc(ks, l);
            let path = format!("symbols.{name}");
            let f = self.fields(v, &path, kloc, &["type", "fields", "value", "npy"])?;
            let layout = match (f.get("type"), f.get("fields")) {
                (Some((n, kl)), None) => {
                    let tl = self.node_loc(n, kl);
                    let s = n.str().unwrap_or("");
                    if let Some(&(w, dtype, lanes)) = SYMBOL_VECTORS.iter().find(|v| v.0 == s) {
                        SymbolLayout::Elements {
                            dtype,
                            lanes,
                            written: w.to_string(),
                        }
                    } else if let Ok(dtype) = s.parse::<DType>() {
                        SymbolLayout::Elements {
                            dtype,
                            lanes: 1,
                            written: dtype.name().to_string(),
                        }
                    } else {
                        return Err(self.err(tl, f.field("type"), n.describe(), accepted_types()));
                    }
                }
                (None, Some((n, kl))) => {
                    let fl = self.node_loc(n, kl);
                    let items = n.array().filter(|a| !a.is_empty()).ok_or_else(|| {
                        self.err(
                            fl,
                            f.field("fields"),
                            n.describe(),
                            "a non-empty array of element types, in declaration order",
                        )
                    })?;
                    let mut fields = Vec::new();
                    for (i, it) in items.into_iter().enumerate() {
                        let il = self.node_loc(it, fl);
                        fields.push(it.str().and_then(|s| s.parse::<DType>().ok()).ok_or_else(
                            || {
                                self.err(
                                    il,
                                    format!("{}[{i}]", f.field("fields")),
                                    it.describe(),
                                    dtype_names(),
                                )
                            },
                        )?);
                    }
                    SymbolLayout::Struct(fields)
                }
                (Some(_), Some((_, kl))) => {
                    return Err(self.err(
                        kl,
                        f.field("fields"),
                        "both type and fields",
                        "type (elements) or fields (a struct), not both",
                    ))
                }
                (None, None) => {
                    return Err(self.err(
                        f.loc,
                        f.field("type"),
                        "neither type nor fields",
                        format!(
                            "type = one of {}, or fields = [...] for a struct",
                            accepted_types()
                        ),
                    ))
                }
            };
            let (value, value_loc) = match (f.get("value"), f.get("npy")) {
                (Some((n, kl)), None) => {
                    let vl = self.node_loc(n, kl);
                    (
                        SymbolValue::Literal(self.symbol_literal(
                            n,
                            vl,
                            &f.field("value"),
                            &layout,
                        )?),
                        vl,
                    )
                }
                (None, Some(_)) => {
                    if matches!(layout, SymbolLayout::Struct(_)) {
                        let (_, kl) = f.get("npy").unwrap_or((v, kloc));
                        return Err(self.err(
                            kl,
                            f.field("npy"),
                            "npy for a struct symbol",
                            "value = [[...], ...] for structs (npy holds one element type)",
                        ));
                    }
                    let (p, w, pl) = self
                        .path_field(&f, "npy", dir, true)?
                        .ok_or_else(|| self.err(f.loc, f.field("npy"), "nothing", "a path"))?;
                    (SymbolValue::Npy(p, w), pl)
                }
                (Some(_), Some((_, kl))) => {
                    return Err(self.err(
                        kl,
                        f.field("npy"),
                        "both value and npy",
                        "one of value, npy",
                    ))
                }
                (None, None) => {
                    return Err(self.err(
                        f.loc,
                        f.field("value"),
                        "no value",
                        "value = [...] or npy = \"file.npy\"",
                    ))
                }
            };
            out.push(SymbolSpec {
                name: name.to_string(),
                layout,
                value,
                loc: f.loc,
                value_loc,
            });
        }
        Ok(out)
    }

    pub(super) fn symbol_literal(
        &self,
        n: Node,
        l: Loc,
        field: &str,
        layout: &SymbolLayout,
    ) -> Result<Vec<Vec<Val>>, SpecError> {
        fn flatten<'a>(
            cx: &Ctx,
            n: Node<'a>,
            l: Loc,
            field: &str,
            out: &mut Vec<Val>,
        ) -> Result<(), SpecError> {
            if let Some(v) = n.number() {
                out.push(v);
                return Ok(());
            }
            let items = n.array().ok_or_else(|| {
                cx.err(
                    cx.node_loc(n, l),
                    field,
                    n.describe(),
                    "numbers or arrays of numbers",
                )
            })?;
            for it in items {
                flatten(cx, it, l, field, out)?;
            }
            Ok(())
        }
        match layout {
            SymbolLayout::Elements { lanes, written, .. } => {
                let mut flat = Vec::new();
                flatten(self, n, l, field, &mut flat)?;
                if flat.is_empty() || flat.len() % lanes != 0 {
                    return Err(self.err(
                        l,
                        field,
                        format!("{} numbers", flat.len()),
                        format!("a non-empty multiple of {lanes} numbers ({written})"),
                    ));
                }
                Ok(vec![flat])
            }
            SymbolLayout::Struct(fields) => {
                let rows = n.array().filter(|a| !a.is_empty()).ok_or_else(|| {
                    self.err(
                        l,
                        field,
                        n.describe(),
                        "an array of structs, each an array of its fields: [[1.0, 2.0, 3]]",
                    )
                })?;
                let mut out = Vec::new();
                for (i, r) in rows.into_iter().enumerate() {
                    let rl = self.node_loc(r, l);
                    let mut row = Vec::new();
                    let items = r.array().ok_or_else(|| {
                        self.err(
                            rl,
                            format!("{field}[{i}]"),
                            r.describe(),
                            format!("an array of {} fields", fields.len()),
                        )
                    })?;
                    for it in items {
                        row.push(it.number().ok_or_else(|| {
                            self.err(
                                self.node_loc(it, rl),
                                format!("{field}[{i}]"),
                                it.describe(),
                                "a number",
                            )
                        })?);
                    }
                    if row.len() != fields.len() {
                        return Err(self.err(
                            rl,
                            format!("{field}[{i}]"),
                            format!("{} values", row.len()),
                            format!("{} values, one per field", fields.len()),
                        ));
                    }
                    out.push(row);
                }
                Ok(out)
            }
        }
    }
}
