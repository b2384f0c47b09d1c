//! `[[steps]]`: launches, copies, fills and loops, with their names checked against the sizes,
//! buffers and enclosing loop counters.

use super::copy::{CopyRange, CopySide};
use super::reader::{is_identifier, Ctx, Fields, Names, Node};
use super::{Loc, Quantity, SpecError};
use crate::expr::{Expr, Val};
use mantissa_gpu::DType;

/// A kernel argument as written.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    /// A buffer name: its device pointer.
    Buffer(String),
    /// A number or expression, converted to the parameter's type.
    Value(Quantity),
    /// An explicitly typed scalar (`{ f32 = 0.25 }`).
    Typed(DType, Quantity),
    /// A pointer into a buffer (`{ buffer = "u", offset = "n" }`: `u + n` in C), the offset in
    /// elements of the buffer's type.
    BufferAt(String, Quantity),
    /// The parameter's bytes as they are (`{ bytes = "0000803f" }`, memory order): a struct by
    /// value, or any parameter to the bit.
    Bytes(Vec<u8>),
}

/// An argument and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    /// The argument.
    pub spec: ArgSpec,
    /// Where it is.
    pub loc: Loc,
    /// Its field path (`steps[0].args[2]`).
    pub field: String,
}

/// A launch step.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// The kernel as written.
    pub kernel: String,
    /// Where the kernel name is.
    pub kernel_loc: Loc,
    /// Grid: 1 to 3 values.
    pub grid: Vec<Quantity>,
    /// Block: 1 to 3 values.
    pub block: Vec<Quantity>,
    /// Dynamic shared memory, bytes.
    pub shared: Quantity,
    /// Arguments, in parameter order.
    pub args: Vec<Arg>,
}

/// One step of the program.
#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    /// Launch a kernel.
    Launch(Launch),
    /// Device-to-device copy.
    Copy {
        /// Source buffer.
        from: String,
        /// Destination buffer.
        to: String,
        /// Elements, when not what fits in both buffers from their offsets.
        len: Option<Quantity>,
        /// First element read from `from` (elements; 0 when absent).
        src_offset: Option<Quantity>,
        /// First element written in `to` (elements; 0 when absent).
        dst_offset: Option<Quantity>,
    },
    /// Set every element of a buffer.
    Fill {
        /// The buffer.
        buffer: String,
        /// The value (sizes only: it is made once, before the run).
        value: Val,
    },
    /// A loop.
    Repeat {
        /// Iterations.
        count: Quantity,
        /// The counter's name (0 .. count-1), if any.
        counter: Option<String>,
        /// The body.
        steps: Vec<Step>,
    },
}

/// A step with its path (`steps[1].steps[2]`) and position.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What it does.
    pub kind: StepKind,
    /// Its path in the spec, for messages.
    pub path: String,
    /// Where it is.
    pub loc: Loc,
}

impl Step {
    /// `steps[1].steps[2] (launch stencil)`: the path and what the step does.
    pub fn describe(&self) -> String {
        let what = match &self.kind {
            StepKind::Launch(l) => format!("launch {}", l.kernel),
            StepKind::Copy { from, to, .. } => format!("copy {from} -> {to}"),
            StepKind::Fill { buffer, .. } => format!("fill {buffer}"),
            StepKind::Repeat { .. } => "repeat".to_string(),
        };
        format!("{} ({what})", self.path)
    }
}

impl Ctx<'_> {
    pub(super) fn steps(
        &self,
        node: Node,
        kl: Loc,
        path: &str,
        names: &Names,
        counters: &mut Vec<String>,
    ) -> Result<Vec<Step>, SpecError> {
        let l = self.node_loc(node, kl);
        let items = node.array().filter(|a| !a.is_empty()).ok_or_else(|| {
            self.err(
                l,
                path,
                node.describe(),
                "a non-empty array of steps ([[steps]] tables or inline tables)",
            )
        })?;
        let mut out = Vec::new();
        for (i, it) in items.into_iter().enumerate() {
            out.push(self.step(it, l, &format!("{path}[{i}]"), names, counters)?);
        }
        Ok(out)
    }

    pub(super) fn step(
        &self,
        node: Node,
        fallback: Loc,
        path: &str,
        names: &Names,
        counters: &mut Vec<String>,
    ) -> Result<Step, SpecError> {
        let l = self.node_loc(node, fallback);
        let t = node
            .table()
            .ok_or_else(|| self.err(l, path, node.describe(), "a step table"))?;
        let kinds: Vec<&str> = t
            .entries()
            .iter()
            .map(|e| e.0)
            .filter(|k| ["launch", "copy", "fill", "repeat"].contains(k))
            .collect();
        let l = self.span_loc(t.span(), l);
        let kind = match kinds.as_slice() {
            ["launch"] => StepKind::Launch(self.launch(node, l, path, names, counters)?),
            ["repeat"] => {
                let f = self.fields(node, path, l, &["repeat", "counter", "steps"])?;
                let scope = names.scope(counters);
                let (cn, ckl) = f
                    .get("repeat")
                    .ok_or_else(|| self.err(l, path, "nothing", "repeat"))?;
                let count = self.quantity(
                    cn,
                    ckl,
                    &f.field("repeat"),
                    &scope,
                    "sizes and loop counters",
                )?;
                if let Some(c) = count.constant(names.sizes) {
                    if c.as_integer().is_none_or(|c| c < 0) {
                        return Err(self.err(
                            count.loc,
                            f.field("repeat"),
                            format!("{} = {c}", count.text),
                            "a non-negative integer",
                        ));
                    }
                }
                let counter = match f.get("counter") {
                    None => None,
                    Some((n, kl)) => {
                        let cl = self.node_loc(n, kl);
                        match n.str() {
                            Some(c)
                                if is_identifier(c)
                                    && !names.taken(c)
                                    && !counters.iter().any(|x| x == c) =>
                            {
                                Some(c.to_string())
                            }
                            _ => {
                                return Err(self.err(
                                    cl,
                                    f.field("counter"),
                                    n.describe(),
                                    "a new name (not a size, buffer or enclosing counter)",
                                ))
                            }
                        }
                    }
                };
                let (sn, skl) = f.get("steps").ok_or_else(|| {
                    self.err(
                        f.loc,
                        f.field("steps"),
                        "no steps",
                        "steps = [ ... ] (the loop body)",
                    )
                })?;
                counters.extend(counter.clone());
                let body = self.steps(sn, skl, &f.field("steps"), names, counters);
                if counter.is_some() {
                    counters.pop();
                }
                StepKind::Repeat {
                    count,
                    counter,
                    steps: body?,
                }
            }
            ["copy"] => {
                let f = self.fields(node, path, l, &["copy"])?;
                let (cn, ckl) = f
                    .get("copy")
                    .ok_or_else(|| self.err(l, path, "nothing", "copy"))?;
                let c = self.fields(
                    cn,
                    &f.field("copy"),
                    ckl,
                    &["from", "to", "len", "src_offset", "dst_offset"],
                )?;
                let from = self.buffer_name(&c, "from", names)?;
                let to = self.buffer_name(&c, "to", names)?;
                let (fb, tb) = (names.buffer(&from), names.buffer(&to));
                if let (Some(fb), Some(tb)) = (fb, tb) {
                    if fb.dtype != tb.dtype {
                        return Err(self.err(
                            c.loc,
                            c.field("to"),
                            format!("a copy from {from} ({}) to {to} ({})", fb.dtype, tb.dtype),
                            "buffers of the same type",
                        ));
                    }
                }
                let scope = names.scope(counters);
                let part = |key: &str| -> Result<Option<Quantity>, SpecError> {
                    c.get(key)
                        .map(|(n, kl)| {
                            self.quantity(n, kl, &c.field(key), &scope, "sizes and loop counters")
                        })
                        .transpose()
                };
                let (len, src_offset, dst_offset) =
                    (part("len")?, part("src_offset")?, part("dst_offset")?);
                // A copy whose numbers are all constant is checked now; one that uses a loop
                // counter is checked by the same rule at each iteration.
                let constant = |q: &Option<Quantity>| match q {
                    None => Some(None),
                    Some(q) => q.constant(names.sizes).map(Some),
                };
                if let (Some(fb), Some(tb), Some(so), Some(d), Some(n)) = (
                    fb,
                    tb,
                    constant(&src_offset),
                    constant(&dst_offset),
                    constant(&len),
                ) {
                    let (src, dst) = (
                        CopySide {
                            name: &fb.name,
                            len: fb.len,
                        },
                        CopySide {
                            name: &tb.name,
                            len: tb.len,
                        },
                    );
                    CopyRange::resolve(src, dst, so, d, n).map_err(|e| {
                        let at = match e.key {
                            "len" => &len,
                            "src_offset" => &src_offset,
                            _ => &dst_offset,
                        };
                        self.err(
                            at.as_ref().map_or(c.loc, |q| q.loc),
                            c.field(e.key),
                            e.found,
                            e.accepted,
                        )
                    })?;
                }
                StepKind::Copy {
                    from,
                    to,
                    len,
                    src_offset,
                    dst_offset,
                }
            }
            ["fill"] => {
                let f = self.fields(node, path, l, &["fill"])?;
                let (fnode, fkl) = f
                    .get("fill")
                    .ok_or_else(|| self.err(l, path, "nothing", "fill"))?;
                let c = self.fields(fnode, &f.field("fill"), fkl, &["buffer", "value"])?;
                let buffer = self.buffer_name(&c, "buffer", names)?;
                let (vn, vkl) = c.get("value").ok_or_else(|| {
                    self.err(c.loc, c.field("value"), "nothing", "value = a number")
                })?;
                let sizes: Vec<&str> = names.sizes.iter().map(|s| s.0.as_str()).collect();
                let q = self.quantity(vn, vkl, &c.field("value"), &sizes, "sizes (a fill value is made once, before the run, so loop counters are not in scope)")?;
                let value = self.eval(&q, names.sizes, &[])?;
                StepKind::Fill { buffer, value }
            }
            [] => {
                let first = t
                    .entries()
                    .first()
                    .map(|e| (e.0, self.span_loc(e.1.clone(), l)));
                let (found, at) = match first {
                    Some((k, kl)) => (format!("unknown key '{k}'"), kl),
                    None => ("an empty step".to_string(), l),
                };
                return Err(self.err(
                    at,
                    path,
                    found,
                    "a step with one of launch, copy, fill, repeat",
                ));
            }
            many => {
                return Err(self.err(
                    l,
                    path,
                    format!("a step with {}", many.join(" and ")),
                    "exactly one of launch, copy, fill, repeat per step",
                ))
            }
        };
        Ok(Step {
            kind,
            path: path.to_string(),
            loc: l,
        })
    }

    pub(super) fn buffer_name(
        &self,
        f: &Fields,
        key: &str,
        names: &Names,
    ) -> Result<String, SpecError> {
        let (n, kl) = f.get(key).ok_or_else(|| {
            self.err(
                f.loc,
                f.field(key),
                "nothing",
                format!("{key} = a buffer name"),
            )
        })?;
        let l = self.node_loc(n, kl);
        match n.str() {
            Some(s) if names.buffer(s).is_some() => Ok(s.to_string()),
            _ => Err(self.err(
                l,
                f.field(key),
                n.describe(),
                format!("a buffer: {}", names.buffer_list()),
            )),
        }
    }

    pub(super) fn dims(
        &self,
        f: &Fields,
        key: &str,
        scope: &[&str],
        default: Option<i64>,
    ) -> Result<Vec<Quantity>, SpecError> {
        let field = f.field(key);
        let Some((n, kl)) = f.get(key) else {
            return match default {
                Some(d) => Ok(vec![Quantity {
                    text: d.to_string(),
                    expr: Expr::Int(d),
                    loc: f.loc,
                    inner: None,
                    field,
                }]),
                None => Err(self.err(
                    f.loc,
                    field,
                    "nothing",
                    format!("{key} = an integer, expression, or a list of 1 to 3 of them"),
                )),
            };
        };
        let l = self.node_loc(n, kl);
        match n.array() {
            Some(items) if (1..=3).contains(&items.len()) => items
                .into_iter()
                .enumerate()
                .map(|(i, it)| {
                    self.quantity(
                        it,
                        l,
                        &format!("{field}[{i}]"),
                        scope,
                        "sizes and loop counters",
                    )
                })
                .collect(),
            Some(items) => Err(self.err(
                l,
                field,
                format!("{} values", items.len()),
                "1 to 3 values (x, y, z)",
            )),
            None => Ok(vec![self.quantity(
                n,
                kl,
                &field,
                scope,
                "sizes and loop counters",
            )?]),
        }
    }

    pub(super) fn launch(
        &self,
        node: Node,
        l: Loc,
        path: &str,
        names: &Names,
        counters: &[String],
    ) -> Result<Launch, SpecError> {
        let f = self.fields(
            node,
            path,
            l,
            &["launch", "grid", "block", "shared", "args"],
        )?;
        let (kn, kkl) = f
            .get("launch")
            .ok_or_else(|| self.err(l, path, "nothing", "launch"))?;
        let kernel_loc = self.node_loc(kn, kkl);
        let kernel =
            match kn.str() {
                Some(s) if !s.trim().is_empty() => s.trim().to_string(),
                _ => return Err(self.err(
                    kernel_loc,
                    f.field("launch"),
                    kn.describe(),
                    "a kernel name (C name, extern \"C\" name, mangled name or name expression)",
                )),
            };
        let scope = names.scope(counters);
        let grid = self.dims(&f, "grid", &scope, None)?;
        let block = self.dims(&f, "block", &scope, None)?;
        let shared = self.dims(&f, "shared", &scope, Some(0))?.remove(0);
        let mut args = Vec::new();
        if let Some((an, akl)) = f.get("args") {
            let al = self.node_loc(an, akl);
            let items = an.array().ok_or_else(|| {
                self.err(al, f.field("args"), an.describe(), "an array of arguments")
            })?;
            for (i, it) in items.into_iter().enumerate() {
                let field = format!("{}[{i}]", f.field("args"));
                let il = self.node_loc(it, al);
                let spec = if let Some(s) = it.str().filter(|s| names.buffer(s.trim()).is_some()) {
                    ArgSpec::Buffer(s.trim().to_string())
                } else if let Some(t) = it.table() {
                    let entries = t.entries();
                    match entries.as_slice() {
                        [(k, ks, v)] if k.parse::<DType>().is_ok() && !matches!(*k, "f16" | "bf16" | "u8") => {
                            let dtype = k.parse::<DType>().unwrap_or(DType::F64);
                            let q = self.quantity(*v, self.span_loc(ks.clone(), il), &format!("{field}.{k}"), &scope, "sizes and loop counters")?;
                            ArgSpec::Typed(dtype, q)
                        }
                        [("bytes", ks, v)] => {
                            let bl = self.span_loc(ks.clone(), il);
                            match v.str().and_then(crate::hex::decode) {
                                Some(b) if !b.is_empty() => ArgSpec::Bytes(b),
                                _ => return Err(self.err(bl, format!("{field}.bytes"), v.describe(), "the parameter's bytes as an even number of hex digits, in memory order (\"0000803f\" is the f32 1.0)")),
                            }
                        }
                        _ if entries.iter().any(|e| e.0 == "buffer") => {
                            for (k, ks, _) in &entries {
                                if !matches!(*k, "buffer" | "offset") {
                                    return Err(self.err(self.span_loc(ks.clone(), il), format!("{field}.{k}"), format!("key '{k}'"), "buffer, offset"));
                                }
                            }
                            let (_, bks, b) = entries.iter().find(|e| e.0 == "buffer").cloned().unwrap_or(("buffer", None, it));
                            let bl = self.span_loc(bks.clone(), il);
                            let name = match b.str() {
                                Some(n) if names.buffer(n.trim()).is_some() => n.trim().to_string(),
                                _ => return Err(self.err(bl, format!("{field}.buffer"), b.describe(), format!("a buffer name: {}", names.buffer_list()))),
                            };
                            match entries.iter().find(|e| e.0 == "offset") {
                                Some((_, oks, o)) => {
                                    let q = self.quantity(*o, self.span_loc(oks.clone(), il), &format!("{field}.offset"), &scope, "sizes and loop counters")?;
                                    ArgSpec::BufferAt(name, q)
                                }
                                None => ArgSpec::Buffer(name),
                            }
                        }
                        [("struct", ks, _)] => return Err(self.err(self.span_loc(ks.clone(), il), format!("{field}.struct"), "a by-value struct argument", "{ bytes = \"HEX\" }: the struct's bytes in memory order")),
                        _ => return Err(self.err(il, field, it.describe(), "{ TYPE = value } with one TYPE of f32, f64, i32, u32, i64, u64; { buffer = NAME, offset = ELEMENTS }; or { bytes = \"HEX\" }")),
                    }
                } else {
                    ArgSpec::Value(
                        self.quantity(it, il, &field, &scope, "buffers, sizes and loop counters")
                            .map_err(|mut e| {
                                if e.accepted.starts_with("buffers, sizes") {
                                    e.accepted =
                                        format!("{}; buffers: {}", e.accepted, names.buffer_list());
                                }
                                e
                            })?,
                    )
                };
                args.push(Arg {
                    spec,
                    loc: il,
                    field,
                });
            }
        }
        Ok(Launch {
            kernel,
            kernel_loc,
            grid,
            block,
            shared,
            args,
        })
    }
}
