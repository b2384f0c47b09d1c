//! Loading a spec file into a typed [`Spec`], keeping the file position of everything, so that
//! every error reads `FILE:LINE:COL: FIELD: found X; accepted Y` ([`SpecError`]).
//!
//! The TOML is read with `toml_edit`'s span-keeping document and walked by hand rather than
//! deserialised with serde: the walk knows, for each key, which keys were accepted there, and
//! every value keeps its position. Sizes are evaluated here (they depend on nothing else);
//! lengths, counts and grids are parsed and their names checked, and evaluated where they need
//! no loop counter. What needs the program (kernel signatures, symbol sizes) is checked in
//! [`crate::validate`]; buffer contents are made in [`crate::data`].

use crate::expr::{self, Expr, Val};
use mantissa_gpu::DType;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{Item, Table, Value};

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

/// A kernel argument as written.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    /// A buffer name: its device pointer.
    Buffer(String),
    /// A number or expression, converted to the parameter's type.
    Value(Quantity),
    /// An explicitly typed scalar (`{ f32 = 0.25 }`).
    Typed(DType, Quantity),
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
        /// Elements, when not the shorter buffer's length (from the offsets on).
        len: Option<Quantity>,
        /// First element read from `from` (default 0).
        src_offset: Option<Quantity>,
        /// First element written in `to` (default 0).
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
    /// The part of the buffer that is the output (default: all of it).
    pub view: Option<View>,
}

/// Part of a buffer: elements `offset + k*stride` for `k < len` (one variable of a structure of
/// arrays, say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// The first element.
    pub offset: usize,
    /// How many elements.
    pub len: usize,
    /// Elements from one to the next.
    pub stride: usize,
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
    /// Steps run once per run before the timed `steps`; each repeat starts from the state they
    /// leave.
    pub setup: Vec<Step>,
    /// The program.
    pub steps: Vec<Step>,
    /// Outputs.
    pub outputs: Vec<OutputSpec>,
}

impl Spec {
    /// Reads and parses a spec file.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            file: path.display().to_string(),
            loc: Loc { line: 1, col: 1 },
            field: "(file)".into(),
            found: format!("an unreadable file ({e})"),
            accepted: "a readable UTF-8 TOML file".into(),
        })?;
        Spec::parse(&text, path)
    }

    /// Parses spec text as if read from `path` (relative paths resolve against its directory).
    pub fn parse(text: &str, path: &Path) -> Result<Spec, SpecError> {
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
        cx.spec(doc.as_table(), path, dir)
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

    /// Every step (setup first), depth first, with the loop counters in scope at it.
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

/// Element types accepted for buffers, for messages.
fn dtype_names() -> String {
    DType::accepted_names()
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

/// A TOML node: a table-level item or a value inside an array or inline table.
#[derive(Clone, Copy)]
enum Node<'a> {
    Item(&'a Item),
    Table(&'a Table),
    Value(&'a Value),
}

#[derive(Clone, Copy)]
enum Tbl<'a> {
    T(&'a Table),
    I(&'a toml_edit::InlineTable),
}

impl<'a> Node<'a> {
    fn value(self) -> Option<&'a Value> {
        match self {
            Node::Item(Item::Value(v)) | Node::Value(v) => Some(v),
            _ => None,
        }
    }

    fn span(self) -> Option<Range<usize>> {
        match self {
            Node::Item(i) => i.span(),
            Node::Table(t) => t.span(),
            Node::Value(v) => v.span(),
        }
    }

    fn table(self) -> Option<Tbl<'a>> {
        match self {
            Node::Item(Item::Table(t)) | Node::Table(t) => Some(Tbl::T(t)),
            Node::Item(Item::Value(Value::InlineTable(t))) | Node::Value(Value::InlineTable(t)) => {
                Some(Tbl::I(t))
            }
            _ => None,
        }
    }

    fn array(self) -> Option<Vec<Node<'a>>> {
        match self {
            Node::Item(Item::ArrayOfTables(a)) => Some(a.iter().map(Node::Table).collect()),
            Node::Item(Item::Value(Value::Array(a))) | Node::Value(Value::Array(a)) => {
                Some(a.iter().map(Node::Value).collect())
            }
            _ => None,
        }
    }

    fn str(self) -> Option<&'a str> {
        self.value().and_then(Value::as_str)
    }

    fn int(self) -> Option<i64> {
        self.value().and_then(Value::as_integer)
    }

    fn float(self) -> Option<f64> {
        self.value().and_then(Value::as_float)
    }

    fn number(self) -> Option<Val> {
        self.int()
            .map(Val::Int)
            .or_else(|| self.float().map(Val::Float))
    }

    fn describe(self) -> String {
        match self {
            Node::Item(Item::None) => "nothing".into(),
            Node::Item(Item::Table(_)) | Node::Table(_) => "a table".into(),
            Node::Item(Item::ArrayOfTables(_)) => "an array of tables".into(),
            Node::Item(Item::Value(v)) | Node::Value(v) => match v {
                Value::String(s) => format!("the string \"{}\"", s.value()),
                Value::Integer(i) => format!("the integer {}", i.value()),
                Value::Float(f) => format!("the float {:?}", f.value()),
                Value::Boolean(b) => format!("the boolean {}", b.value()),
                Value::Datetime(d) => format!("the date-time {}", d.value()),
                Value::Array(_) => "an array".into(),
                Value::InlineTable(_) => "a table".into(),
            },
        }
    }
}

impl<'a> Tbl<'a> {
    fn span(self) -> Option<Range<usize>> {
        match self {
            Tbl::T(t) => t.span(),
            Tbl::I(t) => t.span(),
        }
    }

    /// Entries in file order: key, key span, value.
    fn entries(self) -> Vec<(&'a str, Option<Range<usize>>, Node<'a>)> {
        match self {
            Tbl::T(t) => t
                .iter()
                .filter_map(|(k, _)| t.get_key_value(k))
                .map(|(k, v)| (k.get(), k.span(), Node::Item(v)))
                .collect(),
            Tbl::I(t) => t
                .iter()
                .filter_map(|(k, _)| t.get_key_value(k))
                .map(|(k, v)| (k.get(), k.span(), Node::Item(v)))
                .collect(),
        }
    }
}

/// A table being read: its field path, position, and entries; keys are taken out as they are
/// read, so that what is left over is an unknown key.
struct Fields<'a> {
    path: String,
    loc: Loc,
    entries: Vec<(&'a str, Loc, Node<'a>)>,
    accepted: &'static [&'static str],
}

struct Ctx<'t> {
    file: String,
    text: &'t str,
}

impl Ctx<'_> {
    fn loc(&self, offset: usize) -> Loc {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        Loc {
            line,
            col: self.text[start..offset].chars().count() + 1,
        }
    }

    fn span_loc(&self, span: Option<Range<usize>>, fallback: Loc) -> Loc {
        span.map_or(fallback, |s| self.loc(s.start))
    }

    fn err(
        &self,
        loc: Loc,
        field: impl Into<String>,
        found: impl Into<String>,
        accepted: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: self.file.clone(),
            loc,
            field: field.into(),
            found: found.into(),
            accepted: accepted.into(),
        }
    }

    fn node_loc(&self, node: Node, fallback: Loc) -> Loc {
        self.span_loc(node.span(), fallback)
    }

    /// Opens `node` as a table with these accepted keys; unknown keys are errors.
    fn fields<'a>(
        &self,
        node: Node<'a>,
        path: &str,
        fallback: Loc,
        accepted: &'static [&'static str],
    ) -> Result<Fields<'a>, SpecError> {
        let loc = self.node_loc(node, fallback);
        let Some(t) = node.table() else {
            return Err(self.err(loc, path, node.describe(), "a table"));
        };
        let loc = self.span_loc(t.span(), loc);
        let entries: Vec<_> = t
            .entries()
            .into_iter()
            .map(|(k, ks, v)| (k, self.span_loc(ks, loc), v))
            .collect();
        for (k, kl, _) in &entries {
            if !accepted.contains(k) {
                return Err(self.err(
                    *kl,
                    join(path, k),
                    format!("unknown key '{k}'"),
                    format!("the keys {}", accepted.join(", ")),
                ));
            }
        }
        Ok(Fields {
            path: path.to_string(),
            loc,
            entries,
            accepted,
        })
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Option<(Node<'a>, Loc)> {
        debug_assert!(self.accepted.contains(&key));
        self.entries
            .iter()
            .find(|e| e.0 == key)
            .map(|(_, kl, n)| (*n, *kl))
    }

    fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Ctx<'_> {
    fn spec(&self, root: &Table, path: &Path, dir: PathBuf) -> Result<Spec, SpecError> {
        let start = Loc { line: 1, col: 1 };
        let top = self.fields(
            Node::Table(root),
            "",
            start,
            &[
                "name", "source", "sizes", "buffers", "symbols", "steps", "outputs",
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
        let sizes = match top.get("sizes") {
            Some((n, kl)) => self.sizes(n, kl)?,
            None => Vec::new(),
        };
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
        let steps = self.steps(st, st_kl, "steps", &names, &mut Vec::new())?;
        let Some((out, out_kl)) = top.get("outputs") else {
            return Err(self.err(
                start,
                "outputs",
                "no outputs",
                "[[outputs]] tables naming the buffers that are the program's result",
            ));
        };
        let outputs = self.outputs(out, out_kl, &buffers, &dir)?;
        Ok(Spec {
            path: path.to_path_buf(),
            dir,
            name,
            source,
            sizes,
            buffers,
            symbols,
            setup: Vec::new(),
            steps,
            outputs,
        })
    }

    fn path_field(
        &self,
        f: &Fields,
        key: &str,
        dir: &Path,
        must_exist: bool,
    ) -> Result<Option<(PathBuf, String, Loc)>, SpecError> {
        let Some((n, kl)) = f.get(key) else {
            return Ok(None);
        };
        let l = self.node_loc(n, kl);
        let Some(s) = n.str() else {
            return Err(self.err(l, f.field(key), n.describe(), "a path (a string)"));
        };
        let p = dir.join(s);
        if must_exist && !p.exists() {
            return Err(self.err(
                l,
                f.field(key),
                format!("\"{s}\", which does not exist ({})", p.display()),
                "an existing path, relative to the spec's directory",
            ));
        }
        Ok(Some((p, s.to_string(), l)))
    }

    fn source(&self, node: Node, kl: Loc, dir: &Path) -> Result<SourceSpec, SpecError> {
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

    fn sizes(&self, node: Node, kl: Loc) -> Result<Vec<(String, Val)>, SpecError> {
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

    /// Reads a number or expression string, checking every name it uses is in `scope`.
    fn quantity(
        &self,
        node: Node,
        fallback: Loc,
        field: &str,
        scope: &[&str],
        scope_says: &str,
    ) -> Result<Quantity, SpecError> {
        let loc = self.node_loc(node, fallback);
        let (text, expr, inner) = match node.value() {
            Some(Value::Integer(i)) => (i.value().to_string(), Expr::Int(*i.value()), None),
            Some(Value::Float(x)) => (format!("{:?}", x.value()), Expr::Float(*x.value()), None),
            Some(Value::String(s)) => {
                let text = s.value().clone();
                // Offsets map onto columns only when the raw string is the value between quotes.
                let inner = node.span().and_then(|sp| {
                    let raw = self.text.get(sp.clone())?;
                    let body = raw.get(1..raw.len().checked_sub(1)?)?;
                    (body == text && !text.contains('\n')).then(|| Loc {
                        line: loc.line,
                        col: loc.col + 1,
                    })
                });
                let q = Quantity {
                    text: text.clone(),
                    expr: Expr::Int(0),
                    loc,
                    inner,
                    field: field.to_string(),
                };
                let expr = expr::parse(&text)
                    .map_err(|e| self.err(q.loc_at(e.offset), field, e.found, e.accepted))?;
                (text, expr, inner)
            }
            _ => {
                return Err(self.err(
                    loc,
                    field,
                    node.describe(),
                    "an integer, a float, or an expression string",
                ))
            }
        };
        let q = Quantity {
            text,
            expr,
            loc,
            inner,
            field: field.to_string(),
        };
        if let Some((name, at)) = q.expr.unknown_name(&|n| scope.contains(&n)) {
            let known = if scope.is_empty() {
                "none".to_string()
            } else {
                scope.join(", ")
            };
            return Err(self.err(
                q.loc_at(at),
                field,
                format!("unknown name '{name}'"),
                format!("{scope_says}: {known}"),
            ));
        }
        Ok(q)
    }

    fn eval(
        &self,
        q: &Quantity,
        sizes: &[(String, Val)],
        counters: &[(String, Val)],
    ) -> Result<Val, SpecError> {
        q.expr
            .eval(&|n| lookup(counters, n).or_else(|| lookup(sizes, n)))
            .map_err(|e| self.err(q.loc_at(e.offset), &q.field, e.found, e.accepted))
    }

    /// A non-negative integer (a length or count), constant.
    fn count(&self, q: &Quantity, sizes: &[(String, Val)]) -> Result<usize, SpecError> {
        let v = self.eval(q, sizes, &[])?;
        match v.as_integer() {
            Some(i) if i >= 0 => usize::try_from(i).map_err(|_| {
                self.err(
                    q.loc,
                    &q.field,
                    v.to_string(),
                    "a length this machine can address",
                )
            }),
            _ => Err(self.err(
                q.loc,
                &q.field,
                format!("{} = {v}", q.text),
                "a non-negative integer",
            )),
        }
    }

    fn number(&self, f: &Fields, key: &str, default: Option<f64>) -> Result<f64, SpecError> {
        match f.get(key) {
            None => default.ok_or_else(|| {
                self.err(f.loc, f.field(key), "nothing", format!("{key} = a number"))
            }),
            Some((n, kl)) => n.number().map(Val::as_f64).ok_or_else(|| {
                self.err(self.node_loc(n, kl), f.field(key), n.describe(), "a number")
            }),
        }
    }

    fn buffers(
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

    fn init(
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

    fn symbols(&self, node: Node, kl: Loc, dir: &Path) -> Result<Vec<SymbolSpec>, SpecError> {
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

    fn symbol_literal(
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

    fn steps(
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

    fn step(
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
                let c = self.fields(cn, &f.field("copy"), ckl, &["from", "to", "len"])?;
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
                let len = match c.get("len") {
                    None => None,
                    Some((n, kl)) => {
                        let q = self.quantity(
                            n,
                            kl,
                            &c.field("len"),
                            &names.scope(counters),
                            "sizes and loop counters",
                        )?;
                        if let (Some(v), Some(fb), Some(tb)) = (q.constant(names.sizes), fb, tb) {
                            let max = fb.len.min(tb.len);
                            if !v.as_integer().is_some_and(|v| v >= 0 && v as usize <= max) {
                                return Err(self.err(
                                    q.loc,
                                    c.field("len"),
                                    format!("{} = {v}", q.text),
                                    format!("an integer from 0 to {max} (the shorter buffer)"),
                                ));
                            }
                        }
                        Some(q)
                    }
                };
                StepKind::Copy {
                    from,
                    to,
                    len,
                    src_offset: None,
                    dst_offset: None,
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

    fn buffer_name(&self, f: &Fields, key: &str, names: &Names) -> Result<String, SpecError> {
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

    fn dims(
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

    fn launch(
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
                        [("struct", ks, _)] => return Err(self.err(self.span_loc(ks.clone(), il), format!("{field}.struct"), "a by-value struct argument", "buffers and scalars (by-value struct parameters are not supported yet)")),
                        _ => return Err(self.err(il, field, it.describe(), "{ TYPE = value } with one TYPE of f32, f64, i32, u32, i64, u64")),
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

    fn outputs(
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
                view: None,
            });
        }
        Ok(out)
    }
}

/// Names visible to steps: sizes and buffers.
struct Names<'a> {
    sizes: &'a [(String, Val)],
    buffers: &'a [BufferSpec],
}

impl Names<'_> {
    fn buffer(&self, name: &str) -> Option<&BufferSpec> {
        self.buffers.iter().find(|b| b.name == name)
    }

    fn buffer_list(&self) -> String {
        if self.buffers.is_empty() {
            return "none declared".into();
        }
        self.buffers
            .iter()
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn taken(&self, name: &str) -> bool {
        self.buffer(name).is_some() || self.sizes.iter().any(|s| s.0 == name)
    }

    fn scope<'s>(&'s self, counters: &'s [String]) -> Vec<&'s str> {
        self.sizes
            .iter()
            .map(|s| s.0.as_str())
            .chain(counters.iter().map(String::as_str))
            .collect()
    }
}
