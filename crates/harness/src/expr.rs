//! The expression language of specs: integers and floats, `+ - * / %`, parentheses, unary minus,
//! names (sizes and loop counters) and the functions `ceil floor min max sqrt log2 pow`.
//!
//! Values are [`Val::Int`] (i64) or [`Val::Float`] (f64). Integer `+ - * %` stay integers
//! (overflow is an error, not a wrap); `/` between two integers is exact division as a real
//! number, so `ceil(n / 256)` rounds up: an integer when the division is exact, else the f64
//! nearest the quotient (ceil and floor of it are exact for |numerator| < 2^53). Errors carry the
//! byte offset of the bad token inside the expression text, which the spec parser maps back to
//! a file position.

use std::fmt;

/// A value of an expression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

impl Val {
    /// The value as f64 (integers beyond 2^53 round).
    pub fn as_f64(self) -> f64 {
        match self {
            Val::Int(i) => i as f64,
            Val::Float(f) => f,
        }
    }

    /// The value as an integer when it is one mathematically (an integral float counts).
    pub fn as_integer(self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(i),
            Val::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 => {
                Some(f as i64)
            }
            Val::Float(_) => None,
        }
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Int(i) => write!(f, "{i}"),
            // `{:?}` keeps a ".0" on integral floats, so 512.0 does not read as an integer.
            Val::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

/// A function of the language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `ceil(x)`
    Ceil,
    /// `floor(x)`
    Floor,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `sqrt(x)`
    Sqrt,
    /// `log2(x)`
    Log2,
    /// `pow(a, b)`
    Pow,
}

const FUNCS: [(&str, Func, usize); 7] = [
    ("ceil", Func::Ceil, 1),
    ("floor", Func::Floor, 1),
    ("min", Func::Min, 2),
    ("max", Func::Max, 2),
    ("sqrt", Func::Sqrt, 1),
    ("log2", Func::Log2, 1),
    ("pow", Func::Pow, 2),
];

/// The accepted function names, for messages.
pub const FUNCTION_NAMES: &str =
    "ceil(x), floor(x), min(a, b), max(a, b), sqrt(x), log2(x), pow(a, b)";

/// A parsed expression; names and calls keep the byte offset where they were written.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A size or counter name, and its offset.
    Name(String, usize),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation, with the operator's offset.
    Bin(Op, Box<Expr>, Box<Expr>, usize),
    /// A function call, with the function name's offset.
    Call(Func, Vec<Expr>, usize),
}

/// Something wrong in an expression: where (byte offset in its text), what was found and what
/// would be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    /// Byte offset of the bad token in the expression text.
    pub offset: usize,
    /// What was found.
    pub found: String,
    /// What would have been accepted.
    pub accepted: String,
}

impl ExprError {
    fn new(offset: usize, found: impl Into<String>, accepted: impl Into<String>) -> Self {
        ExprError {
            offset,
            found: found.into(),
            accepted: accepted.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Ident(String),
    Op(char),
    Open,
    Close,
    Comma,
    End,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(i) => format!("'{i}'"),
        Tok::Float(f) => format!("'{f}'"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Op(c) => format!("'{c}'"),
        Tok::Open => "'('".into(),
        Tok::Close => "')'".into(),
        Tok::Comma => "','".into(),
        Tok::End => "the end of the expression".into(),
    }
}

fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut float = false;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'_') {
                float |= b[i] == b'.';
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    float = true;
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s = text[start..i].replace('_', "");
            let tok = if float {
                s.parse::<f64>().ok().map(Tok::Float)
            } else {
                s.parse::<i64>().ok().map(Tok::Int)
            };
            let tok = tok.ok_or_else(|| {
                ExprError::new(
                    start,
                    format!("'{}'", &text[start..i]),
                    "a number (integers up to 2^63 - 1)",
                )
            })?;
            out.push((tok, start));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(text[start..i].to_string()), start));
            continue;
        }
        let tok = match c {
            b'+' | b'-' | b'*' | b'/' | b'%' => Tok::Op(c as char),
            b'(' => Tok::Open,
            b')' => Tok::Close,
            b',' => Tok::Comma,
            _ => {
                let ch = text[start..].chars().next().unwrap_or('?');
                return Err(ExprError::new(
                    start,
                    format!("'{ch}'"),
                    "numbers, names, + - * / %, parentheses and function calls",
                ));
            }
        };
        out.push((tok, start));
        i += 1;
    }
    out.push((Tok::End, text.len()));
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &(Tok, usize) {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> (Tok, usize) {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    /// Precedence climbing: `+ -` bind at 1, `* / %` at 2; all left-associative.
    fn expr(&mut self, min_prec: u8) -> Result<Expr, ExprError> {
        let mut lhs = self.unary()?;
        loop {
            let (op, prec, at) = match self.peek() {
                (Tok::Op('+'), at) => (Op::Add, 1, *at),
                (Tok::Op('-'), at) => (Op::Sub, 1, *at),
                (Tok::Op('*'), at) => (Op::Mul, 2, *at),
                (Tok::Op('/'), at) => (Op::Div, 2, *at),
                (Tok::Op('%'), at) => (Op::Rem, 2, *at),
                _ => return Ok(lhs),
            };
            if prec < min_prec {
                return Ok(lhs);
            }
            self.pos += 1;
            let rhs = self.expr(prec + 1)?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs), at);
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        match self.next() {
            (Tok::Op('-'), _) => Ok(Expr::Neg(Box::new(self.unary()?))),
            (Tok::Op('+'), _) => self.unary(),
            (Tok::Int(i), _) => Ok(Expr::Int(i)),
            (Tok::Float(f), _) => Ok(Expr::Float(f)),
            (Tok::Open, _) => {
                let e = self.expr(1)?;
                self.expect_close()?;
                Ok(e)
            }
            (Tok::Ident(name), at) => {
                if self.peek().0 != Tok::Open {
                    return Ok(Expr::Name(name, at));
                }
                let Some(&(_, func, arity)) = FUNCS.iter().find(|f| f.0 == name) else {
                    return Err(ExprError::new(
                        at,
                        format!("function '{name}'"),
                        FUNCTION_NAMES,
                    ));
                };
                self.pos += 1;
                let mut args = Vec::new();
                if self.peek().0 != Tok::Close {
                    loop {
                        args.push(self.expr(1)?);
                        if self.peek().0 == Tok::Comma {
                            self.pos += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.expect_close()?;
                if args.len() != arity {
                    return Err(ExprError::new(
                        at,
                        format!("{name}() with {} arguments", args.len()),
                        format!("{name}() with {arity}"),
                    ));
                }
                Ok(Expr::Call(func, args, at))
            }
            (t, at) => Err(ExprError::new(
                at,
                describe(&t),
                "a number, a name, '(' or '-'",
            )),
        }
    }

    fn expect_close(&mut self) -> Result<(), ExprError> {
        match self.next() {
            (Tok::Close, _) => Ok(()),
            (t, at) => Err(ExprError::new(at, describe(&t), "')'")),
        }
    }
}

/// Parses an expression.
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    let mut p = Parser {
        toks: tokenize(text)?,
        pos: 0,
    };
    let e = p.expr(1)?;
    match p.next() {
        (Tok::End, _) => Ok(e),
        (t, at) => Err(ExprError::new(
            at,
            describe(&t),
            "an operator (+ - * / %) or the end of the expression",
        )),
    }
}

impl Expr {
    /// The first name (with its offset) for which `known` is false.
    pub fn unknown_name(&self, known: &dyn Fn(&str) -> bool) -> Option<(&str, usize)> {
        match self {
            Expr::Int(_) | Expr::Float(_) => None,
            Expr::Name(n, at) => (!known(n)).then_some((n.as_str(), *at)),
            Expr::Neg(e) => e.unknown_name(known),
            Expr::Bin(_, a, b, _) => a.unknown_name(known).or_else(|| b.unknown_name(known)),
            Expr::Call(_, args, _) => args.iter().find_map(|a| a.unknown_name(known)),
        }
    }

    /// Whether the expression names any of `names`.
    pub fn mentions(&self, names: &[&str]) -> bool {
        self.unknown_name(&|n| !names.contains(&n)).is_some()
    }

    /// Evaluates with `lookup` giving the value of each name.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<Val>) -> Result<Val, ExprError> {
        match self {
            Expr::Int(i) => Ok(Val::Int(*i)),
            Expr::Float(f) => Ok(Val::Float(*f)),
            Expr::Name(n, at) => lookup(n).ok_or_else(|| {
                ExprError::new(*at, format!("unknown name '{n}'"), "a size or loop counter")
            }),
            Expr::Neg(e) => match e.eval(lookup)? {
                Val::Int(i) => i
                    .checked_neg()
                    .map(Val::Int)
                    .ok_or_else(|| ExprError::new(0, "an integer overflow", "values within i64")),
                Val::Float(f) => Ok(Val::Float(-f)),
            },
            Expr::Bin(op, a, b, at) => binary(*op, a.eval(lookup)?, b.eval(lookup)?, *at),
            Expr::Call(func, args, at) => {
                let vals = args
                    .iter()
                    .map(|a| a.eval(lookup))
                    .collect::<Result<Vec<_>, _>>()?;
                call(*func, &vals, *at)
            }
        }
    }
}

fn binary(op: Op, a: Val, b: Val, at: usize) -> Result<Val, ExprError> {
    let overflow = || {
        ExprError::new(
            at,
            format!("an integer overflow in {a} and {b}"),
            "values within i64",
        )
    };
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => match op {
            Op::Add => x.checked_add(y).map(Val::Int).ok_or_else(overflow),
            Op::Sub => x.checked_sub(y).map(Val::Int).ok_or_else(overflow),
            Op::Mul => x.checked_mul(y).map(Val::Int).ok_or_else(overflow),
            Op::Div | Op::Rem if y == 0 => Err(ExprError::new(
                at,
                format!("{x} {} 0", if op == Op::Div { '/' } else { '%' }),
                "a nonzero divisor",
            )),
            // Exact division as real numbers: an integer when it divides, else the quotient.
            Op::Div if x % y == 0 => Ok(Val::Int(x / y)),
            Op::Div => Ok(Val::Float(x as f64 / y as f64)),
            Op::Rem => Ok(Val::Int(x % y)),
        },
        _ => {
            let (x, y) = (a.as_f64(), b.as_f64());
            Ok(Val::Float(match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => x / y,
                Op::Rem => x % y,
            }))
        }
    }
}

fn call(func: Func, v: &[Val], at: usize) -> Result<Val, ExprError> {
    let to_int = |f: f64| {
        if f.is_finite() && f.abs() < 9.2e18 {
            Ok(Val::Int(f as i64))
        } else {
            Err(ExprError::new(at, format!("{f:?}"), "a finite value"))
        }
    };
    match (func, v) {
        (Func::Ceil, [Val::Int(i)]) | (Func::Floor, [Val::Int(i)]) => Ok(Val::Int(*i)),
        (Func::Ceil, [x]) => to_int(x.as_f64().ceil()),
        (Func::Floor, [x]) => to_int(x.as_f64().floor()),
        (Func::Min, [Val::Int(a), Val::Int(b)]) => Ok(Val::Int(*a.min(b))),
        (Func::Max, [Val::Int(a), Val::Int(b)]) => Ok(Val::Int(*a.max(b))),
        (Func::Min, [a, b]) => Ok(Val::Float(a.as_f64().min(b.as_f64()))),
        (Func::Max, [a, b]) => Ok(Val::Float(a.as_f64().max(b.as_f64()))),
        (Func::Sqrt, [x]) => Ok(Val::Float(x.as_f64().sqrt())),
        (Func::Log2, [x]) => Ok(Val::Float(x.as_f64().log2())),
        (Func::Pow, [Val::Int(a), Val::Int(b)]) if *b >= 0 => u32::try_from(*b)
            .ok()
            .and_then(|b| a.checked_pow(b))
            .map(Val::Int)
            .ok_or_else(|| {
                ExprError::new(at, format!("pow({a}, {b}) overflows"), "values within i64")
            }),
        (Func::Pow, [a, b]) => Ok(Val::Float(a.as_f64().powf(b.as_f64()))),
        _ => Err(ExprError::new(
            at,
            "a wrong argument count",
            "see the function list",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(text: &str) -> Result<Val, ExprError> {
        let vars = [
            ("n", Val::Int(1000)),
            ("dt", Val::Float(0.1)),
            ("t", Val::Int(3)),
        ];
        parse(text)?.eval(&|name| vars.iter().find(|v| v.0 == name).map(|v| v.1))
    }

    #[test]
    fn precedence_and_types() {
        assert_eq!(ev("1 + 2 * 3"), Ok(Val::Int(7)));
        assert_eq!(ev("(1 + 2) * 3"), Ok(Val::Int(9)));
        assert_eq!(ev("10 - 4 - 3"), Ok(Val::Int(3)));
        assert_eq!(ev("-2 * -3"), Ok(Val::Int(6)));
        assert_eq!(ev("7 % 4 + 1"), Ok(Val::Int(4)));
        assert_eq!(ev("n / 8"), Ok(Val::Int(125)));
        assert_eq!(ev("7 / 2"), Ok(Val::Float(3.5)));
        assert_eq!(ev("ceil(n / 256)"), Ok(Val::Int(4)));
        assert_eq!(ev("floor(n / 256)"), Ok(Val::Int(3)));
        assert_eq!(
            ev("dt / (0.01 * 0.01)"),
            Ok(Val::Float(0.1 / (0.01 * 0.01)))
        );
        assert_eq!(ev("min(n, 5)"), Ok(Val::Int(5)));
        assert_eq!(ev("max(dt, 1)"), Ok(Val::Float(1.0)));
        assert_eq!(ev("pow(2, 10)"), Ok(Val::Int(1024)));
        assert_eq!(ev("pow(2, 0.5)"), Ok(Val::Float(2f64.sqrt())));
        assert_eq!(ev("sqrt(16)"), Ok(Val::Float(4.0)));
        assert_eq!(ev("log2(1024)"), Ok(Val::Float(10.0)));
        assert_eq!(ev("t + 1"), Ok(Val::Int(4)));
        assert_eq!(ev("1e3"), Ok(Val::Float(1000.0)));
        assert_eq!(ev("1_000"), Ok(Val::Int(1000)));
    }

    #[test]
    fn errors_point_at_the_bad_token() {
        let e = ev("n * (2 + ").unwrap_err();
        assert_eq!(
            (e.offset, e.found.as_str()),
            (9, "the end of the expression")
        );
        let e = ev("n $ 2").unwrap_err();
        assert_eq!((e.offset, e.found.as_str()), (2, "'$'"));
        let e = ev("nx * 2").unwrap_err();
        assert_eq!((e.offset, e.found.as_str()), (0, "unknown name 'nx'"));
        let e = ev("2 * cbrt(n)").unwrap_err();
        assert_eq!((e.offset, e.found.as_str()), (4, "function 'cbrt'"));
        let e = ev("min(n)").unwrap_err();
        assert_eq!((e.offset, e.found.as_str()), (0, "min() with 1 arguments"));
        let e = ev("n 2").unwrap_err();
        assert_eq!(e.offset, 2);
        let e = ev("n % 0").unwrap_err();
        assert_eq!((e.offset, e.found.as_str()), (2, "1000 % 0"));
        let e = ev("9223372036854775807 + 1").unwrap_err();
        assert!(e.found.contains("overflow"), "{e:?}");
    }

    #[test]
    fn unknown_names_are_found_statically() {
        let e = parse("a + b * c").unwrap();
        assert_eq!(e.unknown_name(&|n| n != "c"), Some(("c", 8)));
        assert_eq!(e.unknown_name(&|_| true), None);
        assert!(e.mentions(&["b"]));
        assert!(!e.mentions(&["t"]));
    }

    #[test]
    fn integral_floats_count_as_integers() {
        assert_eq!(Val::Float(512.0).as_integer(), Some(512));
        assert_eq!(Val::Float(3.5).as_integer(), None);
        assert_eq!(Val::Float(f64::NAN).as_integer(), None);
        assert_eq!(Val::Float(512.0).to_string(), "512.0");
    }
}
