//! The PTX parser: [`parse`] turns text into a [`Module`] plus [`Diagnostic`]s.
//!
//! It never fails. It groups tokens into statements first (a `;`, a line end for line
//! directives such as `.loc`, a brace), then reads each statement; a statement it cannot read
//! becomes [`Verbatim`] text, which the printer writes back unchanged, and a diagnostic naming
//! its line. So a malformed line spoils only itself and the rest of the module is still
//! analysed.

use crate::lex::{lex, Kind, Token};
use crate::model::*;

/// Something the parser did not understand, kept verbatim in the model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// 1-based line of the PTX text.
    pub line: u32,
    /// What was not understood.
    pub message: String,
    /// The statement's text, as written.
    pub text: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.message, self.text)
    }
}

/// A parsed module and what could not be understood in it.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The model, complete: what was not understood is in it as verbatim text.
    pub module: Module,
    /// One per statement kept verbatim or operand kept raw, in text order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses PTX text. Never fails; see the module docs.
pub fn parse(src: &str) -> Parsed {
    let toks = lex(src);
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        next_id: 0,
        diags: Vec::new(),
        semi_end: None,
        spare: Vec::new(),
    };
    let mut items = Vec::new();
    while let Some(item) = p.item() {
        items.push(item);
    }
    Parsed {
        module: Module {
            items,
            next_inst_id: p.next_id,
        },
        diagnostics: p.diags,
    }
}

/// Directives that end at the end of their line rather than at a `;`.
const LINE_DIRECTIVES: [&str; 6] = [
    ".version",
    ".target",
    ".address_size",
    ".loc",
    ".file",
    ".section",
];
const LINKAGE: [&str; 4] = [".visible", ".extern", ".weak", ".common"];
pub(crate) const SPACES: [&str; 8] = [
    ".global", ".const", ".shared", ".local", ".param", ".tex", ".surfref", ".texref",
];

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    next_id: u32,
    diags: Vec<Diagnostic>,
    /// Where the `;` that ended the last [`Parser::statement`] ends, for verbatim copies.
    semi_end: Option<usize>,
    /// A token buffer to reuse ([`Parser::recycle`]).
    spare: Vec<Token>,
}

type R<T> = Result<T, String>;

impl<'a> Parser<'a> {
    fn text(&self, t: &Token) -> &'a str {
        t.text(self.src)
    }

    fn skip_newlines(&mut self) {
        while self
            .toks
            .get(self.pos)
            .is_some_and(|t| t.kind == Kind::Newline)
        {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    /// The source text spanned by `toks` (first start to last end), as written.
    fn span_text(&self, toks: &[Token]) -> String {
        match (toks.first(), toks.last()) {
            (Some(a), Some(b)) => self.src[a.start..b.end].to_string(),
            _ => String::new(),
        }
    }

    /// Tokens to the end of the line (newline consumed, not returned).
    fn rest_of_line(&mut self) -> Vec<Token> {
        self.semi_end = None;
        let mut out = Vec::new();
        while let Some(t) = self.peek() {
            self.pos += 1;
            if t.kind == Kind::Newline {
                break;
            }
            out.push(t);
        }
        out
    }

    /// Tokens of a `;`-terminated statement, newlines dropped, the `;` consumed but not
    /// returned. Stops early, without consuming, at an unbalanced closing brace or at a line
    /// directive starting a line, so a missing `;` does not swallow the function's end.
    fn statement(&mut self) -> Vec<Token> {
        self.semi_end = None;
        // The previous statement's buffer, handed back by `recycle`: no allocation per statement.
        let mut out: Vec<Token> = std::mem::take(&mut self.spare);
        out.clear();
        let mut depth = 0i32;
        let mut at_line_start = false;
        while let Some(t) = self.peek() {
            match t.kind {
                Kind::Newline => {
                    self.pos += 1;
                    at_line_start = true;
                    continue;
                }
                Kind::Punct(';') if depth <= 0 => {
                    self.pos += 1;
                    self.semi_end = Some(t.end);
                    return out;
                }
                Kind::Punct('(' | '[' | '{') => depth += 1,
                Kind::Punct(')' | ']' | '}') => {
                    depth -= 1;
                    if depth < 0 {
                        return out;
                    }
                }
                Kind::Directive
                    if at_line_start && !out.is_empty() && self.is_line_directive(&t) =>
                {
                    return out;
                }
                _ => {}
            }
            at_line_start = false;
            out.push(t);
            self.pos += 1;
        }
        out
    }

    /// Hands a statement's token buffer back for the next [`Parser::statement`].
    fn recycle(&mut self, toks: Vec<Token>) {
        self.spare = toks;
    }

    fn is_line_directive(&self, t: &Token) -> bool {
        LINE_DIRECTIVES.contains(&self.text(t))
    }

    fn diag(&mut self, toks: &[Token], message: impl Into<String>) -> Verbatim {
        let line = toks.first().map_or(0, |t| t.line);
        let mut text = self.span_text(toks);
        // Statements are read without their `;`; the verbatim copy must keep it to print back.
        if let (Some(first), Some(last), Some(end)) = (toks.first(), toks.last(), self.semi_end) {
            if end > last.end {
                text = self.src[first.start..end].to_string();
            }
        }
        self.diags.push(Diagnostic {
            line,
            message: message.into(),
            text: text.clone(),
        });
        Verbatim {
            text,
            line: SrcLine(line),
        }
    }

    fn item(&mut self) -> Option<Item> {
        self.skip_newlines();
        let t = self.peek()?;
        let word = self.text(&t);
        let line = SrcLine(t.line);
        match (t.kind, word) {
            (Kind::Directive, ".version") => {
                self.pos += 1;
                let rest = self.rest_of_line();
                Some(match rest.as_slice() {
                    [v] => Item::Version(self.text(v).to_string()),
                    _ => Item::Verbatim(self.diag_with(t, rest, "bad .version")),
                })
            }
            (Kind::Directive, ".target") => {
                self.pos += 1;
                let rest = self.rest_of_line();
                let words: Vec<String> = rest
                    .iter()
                    .filter(|t| t.kind != Kind::Punct(','))
                    .map(|t| self.text(t).to_string())
                    .collect();
                Some(Item::Target(words))
            }
            (Kind::Directive, ".address_size") => {
                self.pos += 1;
                let rest = self.rest_of_line();
                match rest.as_slice() {
                    [n] if self.text(n).parse::<u32>().is_ok() => {
                        Some(Item::AddressSize(self.text(n).parse().unwrap_or(64)))
                    }
                    _ => Some(Item::Verbatim(self.diag_with(t, rest, "bad .address_size"))),
                }
            }
            (Kind::Directive, ".file") => {
                self.pos += 1;
                let rest = self.rest_of_line();
                match rest.as_slice() {
                    [n, s, more @ ..]
                        if n.kind == Kind::Number
                            && s.kind == Kind::Str
                            && self.text(n).parse::<u32>().is_ok() =>
                    {
                        let path = self.text(s);
                        Some(Item::File {
                            index: self.text(n).parse().unwrap_or(0),
                            path: path
                                .strip_prefix('"')
                                .map(|p| p.strip_suffix('"').unwrap_or(p))
                                .unwrap_or(path)
                                .to_string(),
                            rest: self.span_text(more),
                            line,
                        })
                    }
                    _ => Some(Item::Verbatim(self.diag_with(t, rest, "bad .file"))),
                }
            }
            (Kind::Directive, ".section") => Some(self.section(t)),
            (Kind::Directive, w) if LINKAGE.contains(&w) || w == ".entry" || w == ".func" => {
                if self.function_ahead() {
                    Some(self.function())
                } else {
                    Some(self.module_var())
                }
            }
            (Kind::Directive, w) if SPACES.contains(&w) => Some(self.module_var()),
            _ => {
                let toks = self.statement_or_line();
                Some(Item::Verbatim(
                    self.diag(&toks, "unknown module-level statement"),
                ))
            }
        }
    }

    fn diag_with(&mut self, first: Token, rest: Vec<Token>, msg: &str) -> Verbatim {
        let mut all = vec![first];
        all.extend(rest);
        self.diag(&all, msg)
    }

    /// Up to a `;` or the end of the line, whichever comes first; never empty (makes progress).
    fn statement_or_line(&mut self) -> Vec<Token> {
        self.semi_end = None;
        let mut out = Vec::new();
        while let Some(t) = self.peek() {
            self.pos += 1;
            match t.kind {
                Kind::Newline if !out.is_empty() => break,
                Kind::Newline => continue,
                Kind::Punct(';') => {
                    out.push(t);
                    break;
                }
                _ => out.push(t),
            }
        }
        out
    }

    /// Whether the linkage directives here introduce `.entry`/`.func` (rather than a variable).
    fn function_ahead(&self) -> bool {
        for t in &self.toks[self.pos..] {
            match (t.kind, self.text(t)) {
                (Kind::Directive, ".entry" | ".func") => return true,
                (Kind::Directive, w) if LINKAGE.contains(&w) => continue,
                (Kind::Newline, _) => continue,
                _ => return false,
            }
        }
        false
    }

    fn section(&mut self, start: Token) -> Item {
        self.semi_end = None;
        self.pos += 1;
        let name_tok = self.peek();
        let name = name_tok
            .map(|t| self.text(&t).to_string())
            .unwrap_or_default();
        self.pos += 1;
        self.skip_newlines();
        if self.peek().map(|t| t.kind) != Some(Kind::Punct('{')) {
            let rest = self.rest_of_line();
            return Item::Verbatim(self.diag_with(start, rest, ".section without a { body }"));
        }
        let open = self.toks[self.pos];
        self.pos += 1;
        let mut depth = 1;
        while let Some(t) = self.peek() {
            self.pos += 1;
            match t.kind {
                Kind::Punct('{') => depth += 1,
                Kind::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        return Item::Section {
                            name,
                            body: self.src[open.end..t.start].to_string(),
                            line: SrcLine(start.line),
                        };
                    }
                }
                _ => {}
            }
        }
        let all: Vec<Token> = vec![start, open];
        Item::Verbatim(self.diag(&all, ".section body is not closed"))
    }

    fn module_var(&mut self) -> Item {
        let toks = self.statement();
        match self.var_decl(&toks) {
            Ok(v) => Item::Var(v),
            Err(e) => Item::Verbatim(self.diag(&toks, e)),
        }
    }

    fn var_decl(&self, toks: &[Token]) -> R<VarDecl> {
        let mut attrs = Vec::new();
        let mut i = 0;
        while let Some(t) = toks.get(i) {
            match t.kind {
                Kind::Directive | Kind::Number => attrs.push(self.text(t).to_string()),
                Kind::Punct('<') | Kind::Punct('>') => attrs.push(self.text(t).to_string()),
                _ => break,
            }
            i += 1;
        }
        let name = match toks.get(i) {
            Some(t) if t.kind == Kind::Ident => self.text(t).to_string(),
            _ => return Err("variable declaration without a name".into()),
        };
        i += 1;
        let (dims, used) = self.dims(&toks[i..])?;
        i += used;
        let init = match toks.get(i) {
            None => None,
            Some(t) if t.kind == Kind::Punct('=') => Some(
                toks[i + 1..]
                    .iter()
                    .map(|t| self.text(t))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Some(_) => return Err("unexpected text after the variable name".into()),
        };
        Ok(VarDecl {
            attrs,
            name,
            dims,
            init,
            line: SrcLine(toks.first().map_or(0, |t| t.line)),
        })
    }

    /// `[16][]...`: returns the dimensions and how many tokens they took.
    fn dims(&self, toks: &[Token]) -> R<(Vec<Option<u64>>, usize)> {
        let mut dims = Vec::new();
        let mut i = 0;
        while toks.get(i).map(|t| t.kind) == Some(Kind::Punct('[')) {
            match (toks.get(i + 1), toks.get(i + 2)) {
                (Some(c), _) if c.kind == Kind::Punct(']') => {
                    dims.push(None);
                    i += 2;
                }
                (Some(n), Some(c)) if n.kind == Kind::Number && c.kind == Kind::Punct(']') => {
                    let v = self
                        .text(n)
                        .parse::<u64>()
                        .map_err(|_| format!("bad array size {}", self.text(n)))?;
                    dims.push(Some(v));
                    i += 3;
                }
                _ => return Err("bad array dimension".into()),
            }
        }
        Ok((dims, i))
    }

    fn function(&mut self) -> Item {
        let start = self.pos;
        let reported = self.diags.len();
        match self.function_inner() {
            Ok(f) => Item::Function(f),
            Err(e) => {
                // The whole function becomes one verbatim item: what its body reported is moot.
                self.diags.truncate(reported);
                self.semi_end = None;
                // Keep the header up to its `{` or `;`, then skip a body if there is one.
                self.pos = start;
                let mut toks = Vec::new();
                let mut depth = 0;
                while let Some(t) = self.peek() {
                    self.pos += 1;
                    if t.kind != Kind::Newline {
                        toks.push(t);
                    }
                    match t.kind {
                        Kind::Punct('{') => depth += 1,
                        Kind::Punct('}') => {
                            depth -= 1;
                            if depth <= 0 {
                                break;
                            }
                        }
                        Kind::Punct(';') if depth == 0 => break,
                        _ => {}
                    }
                }
                Item::Verbatim(self.diag(&toks, e))
            }
        }
    }

    fn expect_punct(&mut self, c: char) -> R<()> {
        self.skip_newlines();
        match self.peek() {
            Some(t) if t.kind == Kind::Punct(c) => {
                self.pos += 1;
                Ok(())
            }
            Some(t) => Err(format!("expected '{c}', found '{}'", self.text(&t))),
            None => Err(format!("expected '{c}', found the end")),
        }
    }

    fn function_inner(&mut self) -> R<Function> {
        let line = SrcLine(self.peek().map_or(0, |t| t.line));
        let mut linkage = Vec::new();
        let kind = loop {
            self.skip_newlines();
            let t = self.peek().ok_or("function header ends early")?;
            self.pos += 1;
            match self.text(&t) {
                ".entry" => break FunctionKind::Entry,
                ".func" => break FunctionKind::Func,
                w => linkage.push(w.to_string()),
            }
        };
        self.skip_newlines();
        let mut returns = None;
        if kind == FunctionKind::Func && self.peek().map(|t| t.kind) == Some(Kind::Punct('(')) {
            returns = Some(self.param_list()?);
        }
        self.skip_newlines();
        let name = match self.peek() {
            Some(t) if t.kind == Kind::Ident => self.text(&t).to_string(),
            _ => return Err("function without a name".into()),
        };
        self.pos += 1;
        self.skip_newlines();
        let params = if self.peek().map(|t| t.kind) == Some(Kind::Punct('(')) {
            self.param_list()?
        } else {
            Vec::new()
        };
        // Performance directives up to the body or the prototype's `;`.
        let mut directives: Vec<Vec<Token>> = Vec::new();
        loop {
            let t = self.peek().ok_or("function header ends early")?;
            match t.kind {
                Kind::Newline => self.pos += 1,
                Kind::Punct('{') | Kind::Punct(';') => break,
                Kind::Directive => {
                    directives.push(vec![t]);
                    self.pos += 1;
                }
                _ => {
                    directives
                        .last_mut()
                        .ok_or_else(|| {
                            format!("unexpected '{}' in function header", self.text(&t))
                        })?
                        .push(t);
                    self.pos += 1;
                }
            }
        }
        let directives = directives
            .iter()
            .map(|d| {
                self.span_text(d)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let body = if self.peek().map(|t| t.kind) == Some(Kind::Punct(';')) {
            self.pos += 1;
            None
        } else {
            self.pos += 1;
            Some(self.body()?)
        };
        Ok(Function {
            linkage,
            kind,
            name,
            returns,
            params,
            directives,
            body,
            line,
        })
    }

    fn param_list(&mut self) -> R<Vec<Param>> {
        self.expect_punct('(')?;
        let mut groups: Vec<Vec<Token>> = vec![Vec::new()];
        loop {
            let t = self.peek().ok_or("parameter list is not closed")?;
            self.pos += 1;
            match t.kind {
                Kind::Punct(')') => break,
                Kind::Punct(',') => groups.push(Vec::new()),
                Kind::Newline => {}
                Kind::Punct('{') | Kind::Punct('}') | Kind::Punct(';') => {
                    return Err("parameter list is not closed".into())
                }
                _ => groups.last_mut().map(|g| g.push(t)).unwrap_or(()),
            }
        }
        groups
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let v = self.var_decl(&g)?;
                if v.init.is_some() {
                    return Err("parameter with an initialiser".into());
                }
                Ok(Param {
                    attrs: v.attrs,
                    name: v.name,
                    dims: v.dims,
                })
            })
            .collect()
    }

    fn body(&mut self) -> R<Vec<Statement>> {
        let mut out = Vec::new();
        let mut depth = 0;
        loop {
            self.skip_newlines();
            let t = self.peek().ok_or("function body is not closed")?;
            let line = SrcLine(t.line);
            match (t.kind, self.text(&t)) {
                (Kind::Punct('{'), _) => {
                    self.pos += 1;
                    depth += 1;
                    out.push(Statement::BlockStart(line));
                }
                (Kind::Punct('}'), _) => {
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(out);
                    }
                    depth -= 1;
                    out.push(Statement::BlockEnd(line));
                }
                (Kind::Directive, ".loc") => {
                    self.pos += 1;
                    let rest = self.rest_of_line();
                    out.push(match self.loc(&rest, line) {
                        Ok(l) => Statement::Loc(l),
                        Err(e) => Statement::Verbatim(self.diag_with(t, rest, &e)),
                    });
                }
                (Kind::Directive, ".reg") => {
                    let toks = self.statement();
                    out.push(match self.reg_decl(&toks[1..], line) {
                        Ok(d) => Statement::Reg(d),
                        Err(e) => Statement::Verbatim(self.diag(&toks, e)),
                    });
                }
                (Kind::Directive, ".pragma") => {
                    let toks = self.statement();
                    let strings: Vec<String> = toks[1..]
                        .iter()
                        .filter(|t| t.kind == Kind::Str)
                        .map(|t| self.text(t).to_string())
                        .collect();
                    if strings.is_empty() || strings.len() + 1 != toks.len() {
                        out.push(Statement::Verbatim(self.diag(&toks, "bad .pragma")));
                    } else {
                        out.push(Statement::Pragma(strings, line));
                    }
                }
                (Kind::Directive, w) if SPACES.contains(&w) || LINKAGE.contains(&w) => {
                    let toks = self.statement();
                    out.push(match self.var_decl(&toks) {
                        Ok(v) => Statement::Var(v),
                        Err(e) => Statement::Verbatim(self.diag(&toks, e)),
                    });
                }
                (Kind::Ident, _)
                    if self.toks.get(self.pos + 1).map(|t| t.kind) == Some(Kind::Punct(':')) =>
                {
                    self.pos += 2;
                    out.push(Statement::Label(self.text(&t).to_string(), line));
                }
                (Kind::Ident, _) | (Kind::Punct('@'), _) => {
                    let toks = self.statement();
                    out.push(match self.instruction(&toks) {
                        Ok(i) => Statement::Inst(i),
                        Err(e) => Statement::Verbatim(self.diag(&toks, e)),
                    });
                    self.recycle(toks);
                }
                _ => {
                    let toks = self.statement_or_line();
                    out.push(Statement::Verbatim(self.diag(&toks, "unknown statement")));
                }
            }
        }
    }

    fn num<T: std::str::FromStr>(&self, t: Option<&Token>) -> R<T> {
        t.and_then(|t| self.text(t).parse().ok())
            .ok_or_else(|| "expected a number".to_string())
    }

    fn loc(&self, rest: &[Token], src: SrcLine) -> R<Loc> {
        let file = self.num(rest.first())?;
        let line = self.num(rest.get(1))?;
        let col = self.num(rest.get(2))?;
        let inlined = match &rest[3.min(rest.len())..] {
            [] => None,
            [c1, f, label, c2, at, fi, li, co]
                if c1.kind == Kind::Punct(',')
                    && c2.kind == Kind::Punct(',')
                    && self.text(f) == "function_name"
                    && self.text(at) == "inlined_at" =>
            {
                Some(Inlined {
                    function_name: self.text(label).to_string(),
                    file: self.num(Some(fi))?,
                    line: self.num(Some(li))?,
                    col: self.num(Some(co))?,
                })
            }
            _ => return Err("unknown .loc form".into()),
        };
        Ok(Loc {
            file,
            line,
            col,
            inlined,
            src,
        })
    }

    fn reg_decl(&self, toks: &[Token], line: SrcLine) -> R<RegDecl> {
        let mut i = 0;
        let mut ty = Vec::new();
        while let Some(t) = toks.get(i).filter(|t| t.kind == Kind::Directive) {
            ty.push(self.text(t));
            i += 1;
        }
        if ty.is_empty() {
            return Err(".reg without a type".into());
        }
        let mut names = Vec::new();
        for group in toks[i..].split(|t| t.kind == Kind::Punct(',')) {
            match group {
                // NVRTC's call sequences declare `temp_param_reg`, without a `%`.
                [r] if matches!(r.kind, Kind::Reg | Kind::Ident) => {
                    names.push(RegName::Single(self.text(r).into()))
                }
                [r, lt, n, gt]
                    if r.kind == Kind::Reg
                        && lt.kind == Kind::Punct('<')
                        && gt.kind == Kind::Punct('>') =>
                {
                    names.push(RegName::Range {
                        prefix: self.text(r).into(),
                        count: self.num(Some(n))?,
                    })
                }
                _ => return Err("bad register name in .reg".into()),
            }
        }
        if names.is_empty() {
            return Err(".reg without names".into());
        }
        Ok(RegDecl {
            ty: ty.join(" "),
            names,
            line,
        })
    }

    fn instruction(&mut self, toks: &[Token]) -> R<Instruction> {
        let mut i = 0;
        let guard = if toks.first().map(|t| t.kind) == Some(Kind::Punct('@')) {
            let negated = toks.get(1).map(|t| t.kind) == Some(Kind::Punct('!'));
            i = 1 + usize::from(negated);
            match toks.get(i) {
                Some(r) if r.kind == Kind::Reg => {
                    i += 1;
                    Some(Guard {
                        negated,
                        reg: self.text(r).into(),
                    })
                }
                _ => return Err("predicate guard without a register".into()),
            }
        } else {
            None
        };
        let op = match toks.get(i) {
            Some(t) if t.kind == Kind::Ident => self.text(t),
            _ => return Err("expected an opcode".into()),
        };
        i += 1;
        let mut parts = op.split('.');
        let opcode = parts.next().unwrap_or("").to_string();
        let modifiers: Vec<String> = parts.map(str::to_string).collect();
        if modifiers.iter().any(String::is_empty) {
            return Err(format!("empty modifier in '{op}'"));
        }
        let operands = self
            .split_commas(&toks[i..])
            .into_iter()
            .map(|g| self.operand(g))
            .collect::<R<Vec<_>>>()?;
        // Kept as written, but reported: a raw operand is something analyses cannot see into.
        for o in &operands {
            if let Some(raw) = o.first_raw() {
                self.diags.push(Diagnostic {
                    line: toks.first().map_or(0, |t| t.line),
                    message: format!("operand '{raw}' not understood (kept as written)"),
                    text: self.span_text(toks),
                });
            }
        }
        let id = InstId(self.next_id);
        self.next_id += 1;
        Ok(Instruction {
            id,
            guard,
            opcode,
            modifiers,
            operands,
            line: SrcLine(toks.first().map_or(0, |t| t.line)),
        })
    }

    /// Splits at commas outside brackets; an empty list gives no groups.
    fn split_commas<'t>(&self, toks: &'t [Token]) -> Vec<&'t [Token]> {
        if toks.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut depth = 0i32;
        let mut from = 0;
        for (k, t) in toks.iter().enumerate() {
            match t.kind {
                Kind::Punct('(' | '[' | '{') => depth += 1,
                Kind::Punct(')' | ']' | '}') => depth -= 1,
                Kind::Punct(',') if depth == 0 => {
                    out.push(&toks[from..k]);
                    from = k + 1;
                }
                _ => {}
            }
        }
        out.push(&toks[from..]);
        out
    }

    fn operand(&self, g: &[Token]) -> R<Operand> {
        let raw = || Ok(Operand::Raw(self.span_text(g)));
        let is = |t: &Token, k: Kind| t.kind == k;
        match g {
            [] => Err("empty operand".into()),
            [r] if is(r, Kind::Reg) => Ok(Operand::Reg(self.text(r).into())),
            [s] if is(s, Kind::Ident) => Ok(Operand::Symbol(self.text(s).into())),
            [n, r] if is(n, Kind::Punct('!')) && is(r, Kind::Reg) => {
                Ok(Operand::Not(Box::new(Operand::Reg(self.text(r).into()))))
            }
            [n] if is(n, Kind::Number) => match parse_number(self.text(n), false) {
                Some(imm) => Ok(Operand::Imm(imm)),
                None => raw(),
            },
            [m, n] if is(m, Kind::Punct('-')) && is(n, Kind::Number) => {
                match parse_number(self.text(n), true) {
                    Some(imm) => Ok(Operand::Imm(imm)),
                    None => raw(),
                }
            }
            [o, inner @ .., c] if is(o, Kind::Punct('[')) && is(c, Kind::Punct(']')) => {
                let base_ok = |t: &Token| matches!(t.kind, Kind::Reg | Kind::Ident);
                let off = |neg: bool, t: &Token| -> Option<i64> {
                    let v: i64 = self.text(t).parse().ok()?;
                    Some(if neg { -v } else { v })
                };
                let number = |t: &Token| is(t, Kind::Number);
                let parsed = match inner {
                    [b] if base_ok(b) => Some(0),
                    [b, p, n] if base_ok(b) && is(p, Kind::Punct('+')) && number(n) => {
                        off(false, n)
                    }
                    [b, m, n] if base_ok(b) && is(m, Kind::Punct('-')) && number(n) => off(true, n),
                    [b, p, m, n]
                        if base_ok(b)
                            && is(p, Kind::Punct('+'))
                            && is(m, Kind::Punct('-'))
                            && number(n) =>
                    {
                        off(true, n)
                    }
                    _ => None,
                };
                match (parsed, inner.first()) {
                    (Some(offset), Some(b)) => Ok(Operand::Addr {
                        base: self.text(b).into(),
                        offset,
                    }),
                    _ => raw(),
                }
            }
            [o, inner @ .., c] if is(o, Kind::Punct('{')) && is(c, Kind::Punct('}')) => {
                Ok(Operand::Vector(
                    self.split_commas(inner)
                        .into_iter()
                        .map(|e| self.operand(e))
                        .collect::<R<_>>()?,
                ))
            }
            [o, inner @ .., c] if is(o, Kind::Punct('(')) && is(c, Kind::Punct(')')) => {
                Ok(Operand::List(
                    self.split_commas(inner)
                        .into_iter()
                        .map(|e| self.operand(e))
                        .collect::<R<_>>()?,
                ))
            }
            _ => raw(),
        }
    }
}

/// Reads a PTX number: `0fXXXXXXXX`, `0dXXXXXXXXXXXXXXXX`, `0x..`, decimal integers (with an
/// optional `U`), decimal floats. `None` for forms kept raw (octal, binary).
pub fn parse_number(t: &str, negative: bool) -> Option<Imm> {
    let lower = t.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0f").filter(|h| h.len() == 8) {
        let bits = u32::from_str_radix(h, 16).ok()?;
        return Some(Imm::F32(if negative { bits ^ 0x8000_0000 } else { bits }));
    }
    if let Some(h) = lower.strip_prefix("0d").filter(|h| h.len() == 16) {
        let bits = u64::from_str_radix(h, 16).ok()?;
        return Some(Imm::F64(if negative { bits ^ (1 << 63) } else { bits }));
    }
    let (body, unsigned) = match lower.strip_suffix('u') {
        Some(b) => (b, true),
        None => (lower.as_str(), false),
    };
    let sign = |v: i128| if negative { -v } else { v };
    if let Some(h) = body.strip_prefix("0x") {
        let value = i128::from_str_radix(h, 16).ok()?;
        return Some(Imm::Int {
            value: sign(value),
            hex: true,
            unsigned,
        });
    }
    if body.bytes().all(|c| c.is_ascii_digit()) {
        if body.len() > 1 && body.starts_with('0') {
            return None; // octal
        }
        return Some(Imm::Int {
            value: sign(body.parse().ok()?),
            hex: false,
            unsigned,
        });
    }
    if unsigned {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    Some(Imm::F64(if negative { -v } else { v }.to_bits()))
}
