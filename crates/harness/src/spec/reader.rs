//! The TOML walk shared by every section: nodes, tables whose unknown keys are errors, positions,
//! and numbers and expressions read with their names checked.

use super::{lookup, BufferSpec, Loc, Quantity, SpecError};
use crate::expr::{self, Expr, Val};
use mantissa_gpu::DType;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{Item, Table, Value};

/// Element types accepted for buffers, for messages.
pub(super) fn dtype_names() -> String {
    DType::accepted_names()
}

/// A TOML node: a table-level item or a value inside an array or inline table.
#[derive(Clone, Copy)]
pub(super) enum Node<'a> {
    Item(&'a Item),
    Table(&'a Table),
    Value(&'a Value),
}

#[derive(Clone, Copy)]
pub(super) enum Tbl<'a> {
    T(&'a Table),
    I(&'a toml_edit::InlineTable),
}

impl<'a> Node<'a> {
    pub(super) fn value(self) -> Option<&'a Value> {
        match self {
            Node::Item(Item::Value(v)) | Node::Value(v) => Some(v),
            _ => None,
        }
    }

    pub(super) fn span(self) -> Option<Range<usize>> {
        match self {
            Node::Item(i) => i.span(),
            Node::Table(t) => t.span(),
            Node::Value(v) => v.span(),
        }
    }

    pub(super) fn table(self) -> Option<Tbl<'a>> {
        match self {
            Node::Item(Item::Table(t)) | Node::Table(t) => Some(Tbl::T(t)),
            Node::Item(Item::Value(Value::InlineTable(t))) | Node::Value(Value::InlineTable(t)) => {
                Some(Tbl::I(t))
            }
            _ => None,
        }
    }

    pub(super) fn array(self) -> Option<Vec<Node<'a>>> {
        match self {
            Node::Item(Item::ArrayOfTables(a)) => Some(a.iter().map(Node::Table).collect()),
            Node::Item(Item::Value(Value::Array(a))) | Node::Value(Value::Array(a)) => {
                Some(a.iter().map(Node::Value).collect())
            }
            _ => None,
        }
    }

    pub(super) fn str(self) -> Option<&'a str> {
        self.value().and_then(Value::as_str)
    }

    pub(super) fn int(self) -> Option<i64> {
        self.value().and_then(Value::as_integer)
    }

    pub(super) fn float(self) -> Option<f64> {
        self.value().and_then(Value::as_float)
    }

    pub(super) fn number(self) -> Option<Val> {
        self.int()
            .map(Val::Int)
            .or_else(|| self.float().map(Val::Float))
    }

    pub(super) fn describe(self) -> String {
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
    pub(super) fn span(self) -> Option<Range<usize>> {
        match self {
            Tbl::T(t) => t.span(),
            Tbl::I(t) => t.span(),
        }
    }

    /// Entries in file order: key, key span, value.
    pub(super) fn entries(self) -> Vec<(&'a str, Option<Range<usize>>, Node<'a>)> {
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
pub(super) struct Fields<'a> {
    pub(super) path: String,
    pub(super) loc: Loc,
    pub(super) entries: Vec<(&'a str, Loc, Node<'a>)>,
    pub(super) accepted: &'static [&'static str],
}

pub(super) struct Ctx<'t> {
    pub(super) file: String,
    pub(super) text: &'t str,
}

impl Ctx<'_> {
    pub(super) fn loc(&self, offset: usize) -> Loc {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        Loc {
            line,
            col: self.text[start..offset].chars().count() + 1,
        }
    }

    pub(super) fn span_loc(&self, span: Option<Range<usize>>, fallback: Loc) -> Loc {
        span.map_or(fallback, |s| self.loc(s.start))
    }

    pub(super) fn err(
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

    pub(super) fn node_loc(&self, node: Node, fallback: Loc) -> Loc {
        self.span_loc(node.span(), fallback)
    }

    /// Opens `node` as a table with these accepted keys; unknown keys are errors.
    pub(super) fn fields<'a>(
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

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Fields<'a> {
    pub(super) fn get(&self, key: &str) -> Option<(Node<'a>, Loc)> {
        debug_assert!(self.accepted.contains(&key));
        self.entries
            .iter()
            .find(|e| e.0 == key)
            .map(|(_, kl, n)| (*n, *kl))
    }

    pub(super) fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

pub(super) fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Ctx<'_> {
    pub(super) fn path_field(
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

    /// Reads a number or expression string, checking every name it uses is in `scope`.
    pub(super) fn quantity(
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

    pub(super) fn eval(
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
    pub(super) fn count(&self, q: &Quantity, sizes: &[(String, Val)]) -> Result<usize, SpecError> {
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

    pub(super) fn number(
        &self,
        f: &Fields,
        key: &str,
        default: Option<f64>,
    ) -> Result<f64, SpecError> {
        match f.get(key) {
            None => default.ok_or_else(|| {
                self.err(f.loc, f.field(key), "nothing", format!("{key} = a number"))
            }),
            Some((n, kl)) => n.number().map(Val::as_f64).ok_or_else(|| {
                self.err(self.node_loc(n, kl), f.field(key), n.describe(), "a number")
            }),
        }
    }
}

/// Names visible to steps: sizes and buffers.
pub(super) struct Names<'a> {
    pub(super) sizes: &'a [(String, Val)],
    pub(super) buffers: &'a [BufferSpec],
}

impl Names<'_> {
    pub(super) fn buffer(&self, name: &str) -> Option<&BufferSpec> {
        self.buffers.iter().find(|b| b.name == name)
    }

    pub(super) fn buffer_list(&self) -> String {
        if self.buffers.is_empty() {
            return "none declared".into();
        }
        self.buffers
            .iter()
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn taken(&self, name: &str) -> bool {
        self.buffer(name).is_some() || self.sizes.iter().any(|s| s.0 == name)
    }

    pub(super) fn scope<'s>(&'s self, counters: &'s [String]) -> Vec<&'s str> {
        self.sizes
            .iter()
            .map(|s| s.0.as_str())
            .chain(counters.iter().map(String::as_str))
            .collect()
    }
}
