//! Reading the source line of a promotion: the unsuffixed literal (`2.0`), the macro whose
//! value is one (`#define DAMPING 0.3`) or the double math call (`exp(`) that put the
//! expression in double, and the fix for each (`2.0f`, `0.3f`, `expf`).
//!
//! Text only, no preprocessor: a line is scanned with its comments removed; macros are read
//! from `#define NAME VALUE` lines of the files the PTX names (and `-D` options). A constant
//! that only the PTX shows (a macro defined elsewhere) is still named by its value.

use super::{Carried, Promotion, MATH_FUNCTIONS};
use crate::census::SourceLine;
use serde::Serialize;

/// What in the source put an expression in double.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Culprit {
    /// A floating literal without the `f` suffix: `2.0`, `1e-3`.
    Literal {
        /// The literal as written.
        text: String,
        /// Whether the PTX shows this value as an f64 constant of the region.
        in_ptx: bool,
        /// The float spelling: `2.0f`.
        fix: String,
        /// The lines it is on when not the reported line (a statement over several lines).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        on: Vec<SourceLine>,
    },
    /// A macro whose value is such a literal: `DAMPING` for `#define DAMPING 0.3`.
    Macro {
        /// The macro's name.
        name: String,
        /// Its value as defined.
        value: String,
        /// The float definition: `#define DAMPING 0.3f`.
        fix: String,
        /// The lines it is used on when not the reported line.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        on: Vec<SourceLine>,
    },
    /// A double math function called on the line: `exp(`.
    Call {
        /// The function (`exp`).
        function: String,
        /// Its float version: `expf`.
        fix: String,
        /// The lines it is called on when not the reported line.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        on: Vec<SourceLine>,
    },
    /// An f64 constant of the region that the line's text does not show (it comes from a macro
    /// or a header the scan did not see).
    Constant {
        /// The value.
        value: f64,
        /// What to do: write it as a float literal.
        fix: String,
    },
}

impl Culprit {
    /// `2.0 → 2.0f`: the culprit and its fix, for one line of output.
    pub fn describe(&self) -> String {
        match self {
            Culprit::Literal { text, fix, .. } => format!("{text} → {fix}"),
            Culprit::Macro {
                name, value, fix, ..
            } => format!("{name} ({value}) → {fix}"),
            Culprit::Call { function, fix, .. } => format!("{function}( → {fix}("),
            Culprit::Constant { value, .. } => {
                format!("constant {} (not in the source text)", decimal(*value))
            }
        }
    }

    /// [`Culprit::describe`] with the lines it is on, when not the reported one:
    /// `2.0 (stencil.cu:7, stencil.cu:8) → 2.0f`; `label` names a line.
    pub fn describe_at(&self, label: &dyn Fn(SourceLine) -> String) -> String {
        let d = self.describe();
        let on = self.on();
        if on.is_empty() {
            return d;
        }
        let lines: Vec<String> = on.iter().map(|l| label(*l)).collect();
        match d.split_once(" → ") {
            Some((what, fix)) => format!("{what} ({}) → {fix}", lines.join(", ")),
            None => format!("{d} ({})", lines.join(", ")),
        }
    }

    /// The lines it is on when not the reported line.
    pub fn on(&self) -> &[SourceLine] {
        match self {
            Culprit::Literal { on, .. } | Culprit::Macro { on, .. } | Culprit::Call { on, .. } => {
                on
            }
            Culprit::Constant { .. } => &[],
        }
    }

    fn on_mut(&mut self) -> Option<&mut Vec<SourceLine>> {
        match self {
            Culprit::Literal { on, .. } | Culprit::Macro { on, .. } | Culprit::Call { on, .. } => {
                Some(on)
            }
            Culprit::Constant { .. } => None,
        }
    }

    /// Whether two culprits name the same thing (the same literal, macro or function).
    fn same(&self, other: &Culprit) -> bool {
        match (self, other) {
            (Culprit::Literal { text: a, .. }, Culprit::Literal { text: b, .. }) => a == b,
            (Culprit::Macro { name: a, .. }, Culprit::Macro { name: b, .. }) => a == b,
            (Culprit::Call { function: a, .. }, Culprit::Call { function: b, .. }) => a == b,
            (Culprit::Constant { value: a, .. }, Culprit::Constant { value: b, .. }) => {
                a.to_bits() == b.to_bits()
            }
            _ => false,
        }
    }
}

/// The shortest decimal that reads back as `v` (`0.1`, `2`, `-0.30000000000000004`).
pub fn decimal(v: f64) -> String {
    format!("{v:?}").trim_end_matches(".0").to_string()
}

/// `#define NAME VALUE` lines of a file, as (name, value); function-like macros are skipped.
pub fn defines_in(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        let rest = rest.trim_start();
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, value) = rest.split_at(name_len);
        if name.is_empty() || value.starts_with('(') {
            continue;
        }
        let value = strip_comments(value).trim().to_string();
        out.push((name.to_string(), value));
    }
    out
}

/// The code of a line without `//` and `/* */` comments (string literals are rare on lines of
/// arithmetic, and a literal inside one only adds a false candidate).
pub fn strip_comments(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        let line_c = rest.find("//");
        let block = rest.find("/*");
        match (line_c, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                return out;
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                match rest[b + 2..].find("*/") {
                    Some(e) => {
                        out.push(' ');
                        rest = &rest[b + 2 + e + 2..];
                    }
                    None => return out,
                }
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Floating literals without a float suffix in `code`, as (text, value). `2.0f`, `1e3F`,
/// integers and parts of identifiers (`x2.y`) are not; hex floats (`0x1p-3`) are, with their
/// value.
pub fn double_literals(code: &str) -> Vec<(String, f64)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let c = b[k];
        let starts =
            c.is_ascii_digit() || (c == b'.' && b.get(k + 1).is_some_and(u8::is_ascii_digit));
        let after_ident =
            k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_' || b[k - 1] == b'.');
        if !starts || after_ident {
            k += 1;
            continue;
        }
        let start = k;
        let hex = c == b'0' && matches!(b.get(k + 1), Some(b'x' | b'X'));
        if hex {
            k += 2;
        }
        let mut float = false;
        while k < b.len() {
            let d = b[k];
            let exp = if hex {
                matches!(d, b'p' | b'P')
            } else {
                matches!(d, b'e' | b'E')
            };
            if exp {
                float = true;
                k += 1;
                if matches!(b.get(k), Some(b'+' | b'-')) {
                    k += 1;
                }
            } else if d == b'.' {
                float = true;
                k += 1;
            } else if d.is_ascii_digit() || (hex && d.is_ascii_hexdigit()) || d == b'\'' {
                k += 1;
            } else {
                break;
            }
        }
        let body = &code[start..k];
        let suffix_len = b[k..]
            .iter()
            .take_while(|d| d.is_ascii_alphabetic() || **d == b'_')
            .count();
        let suffix = &code[k..k + suffix_len];
        k += suffix_len;
        if !float || !suffix.is_empty() {
            continue;
        }
        let digits = body.replace('\'', "");
        let value = if hex {
            parse_hex_float(&digits)
        } else {
            digits.parse().ok()
        };
        if let Some(v) = value {
            out.push((body.to_string(), v));
        }
    }
    out
}

/// `0x1.8p3` → 12.
fn parse_hex_float(s: &str) -> Option<f64> {
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let (mant, exp) = s.split_once(['p', 'P'])?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let mut v = 0f64;
    for d in int.chars() {
        v = v * 16.0 + f64::from(d.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for d in frac.chars() {
        v += f64::from(d.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

/// Identifiers of `code` in order (each once).
fn identifiers(code: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut k = 0;
    while k < b.len() {
        if b[k].is_ascii_alphabetic() || b[k] == b'_' {
            let s = k;
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            // Not a member (`p.exp`) or a literal's suffix.
            let member = s > 0 && (b[s - 1] == b'.' || b[s - 1].is_ascii_digit());
            if !member {
                out.push((&code[s..k], k));
            }
        } else {
            k += 1;
        }
    }
    out
}

/// Double math functions called in `code`: `exp` for `exp(`, `std::pow (`; not `expf(` or
/// `__expf(`.
pub fn math_calls(code: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (id, end) in identifiers(code) {
        if MATH_FUNCTIONS.contains(&id)
            && code[end..].trim_start().starts_with('(')
            && !out.iter().any(|o| o == id)
        {
            out.push(id.to_string());
        }
    }
    out
}

/// What on `line` put `p` in double, each with its fix. `defines` are the macros known
/// (`#define` lines and `-D` options); `line` may be `None` when the source is not readable,
/// and then only the PTX's constants and math functions are named.
pub fn culprits(p: &Promotion, line: Option<&str>, defines: &[(String, String)]) -> Vec<Culprit> {
    let mut out = Vec::new();
    let code = line.map(strip_comments).unwrap_or_default();
    let in_ptx = |v: f64| p.constants.iter().any(|c| *c == v || *c == -v);
    let mut explained: Vec<f64> = Vec::new();
    for (text, v) in double_literals(&code) {
        if out
            .iter()
            .any(|c| matches!(c, Culprit::Literal { text: t, .. } if *t == text))
        {
            continue;
        }
        explained.push(v);
        out.push(Culprit::Literal {
            fix: format!("{text}f"),
            in_ptx: in_ptx(v),
            text,
            on: Vec::new(),
        });
    }
    for (id, _) in identifiers(&code) {
        let Some((name, value)) = defines.iter().rev().find(|(n, _)| n == id) else {
            continue;
        };
        let lits = double_literals(&strip_comments(value));
        if lits.is_empty()
            || out
                .iter()
                .any(|c| matches!(c, Culprit::Macro { name: n, .. } if n == name))
        {
            continue;
        }
        let mut fixed = value.clone();
        for (text, v) in &lits {
            explained.push(*v);
            fixed = fixed.replacen(text.as_str(), &format!("{text}f"), 1);
        }
        out.push(Culprit::Macro {
            name: name.clone(),
            value: value.clone(),
            fix: format!("#define {name} {fixed}"),
            on: Vec::new(),
        });
    }
    let mut calls = math_calls(&code);
    for m in &p.math {
        if !calls.contains(m) {
            calls.push(m.clone());
        }
    }
    for function in calls {
        out.push(Culprit::Call {
            fix: format!("{function}f"),
            function,
            on: Vec::new(),
        });
    }
    for &v in &p.constants {
        if !explained.iter().any(|e| *e == v || *e == -v) {
            out.push(Culprit::Constant {
                value: v,
                fix: format!("{}f", float_spelling(v)),
            });
        }
    }
    out
}

/// A literal for `v` that reads back as the f32 nearest it: `0.3`, `2.0`, `1e-30`.
fn float_spelling(v: f64) -> String {
    let s = format!("{:?}", v as f32);
    if s.contains(['.', 'e', 'i', 'N']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// The one-line fix for a promotion whose culprits are `c`: the culprits' own fixes, or, when
/// none was found, the ways to keep the expression in float.
pub fn fix(c: &[Culprit]) -> String {
    // A constant only the PTX shows is the compiler's (1/256 for a division by 256) or a macro
    // not seen: writing it into the source is not a fix anyone can follow.
    let c: Vec<&Culprit> = c
        .iter()
        .filter(|c| !matches!(c, Culprit::Constant { .. }))
        .collect();
    if c.is_empty() {
        return "keep the expression in float: float literals (2.0f), float functions (expf, powf), or __fmul_rn/__fadd_rn-style intrinsics".into();
    }
    let fixes: Vec<String> = c
        .iter()
        .map(|c| match c {
            Culprit::Literal { fix, .. } | Culprit::Macro { fix, .. } => fix.clone(),
            Culprit::Call { fix, .. } => format!("{fix}()"),
            Culprit::Constant { fix, .. } => fix.clone(),
        })
        .collect();
    format!("write {}", fixes.join(", "))
}

/// What put `p` in double across the lines of its statement: the reported line first, then
/// each other line of the region (a statement written over several lines has its `2.0*` on the
/// lines above the one where the value is rounded back), each culprit named with the lines it
/// is on. `text` gives a line's source when it can be read.
pub fn culprits_on_lines(
    p: &Promotion,
    text: &dyn Fn(SourceLine) -> Option<String>,
    defines: &[(String, String)],
) -> Vec<Culprit> {
    let own = text(p.at);
    let mut out: Vec<Culprit> = culprits(p, own.as_deref(), defines)
        .into_iter()
        .filter(|c| !matches!(c, Culprit::Constant { .. }))
        .collect();
    let bare = Promotion {
        constants: Vec::new(),
        math: Vec::new(),
        ..p.clone()
    };
    for &l in p.lines.iter().filter(|l| **l != p.at) {
        let Some(t) = text(l) else { continue };
        for mut c in culprits(&bare, Some(&t), defines) {
            match out.iter_mut().find(|o| o.same(&c)) {
                Some(o) => {
                    if let Some(on) = o.on_mut().filter(|on| !on.is_empty() && !on.contains(&l)) {
                        on.push(l);
                    }
                }
                None => {
                    if let Some(on) = c.on_mut() {
                        on.push(l);
                    }
                    out.push(c);
                }
            }
        }
    }
    // Constants no line explains come last, as before.
    let explained = |v: f64| {
        out.iter().any(|c| match c {
            Culprit::Literal { text, .. } => double_literals(text)
                .first()
                .is_some_and(|(_, x)| *x == v || *x == -v),
            Culprit::Macro { value, .. } => double_literals(&strip_comments(value))
                .iter()
                .any(|(_, x)| *x == v || *x == -v),
            _ => false,
        })
    };
    let unexplained: Vec<Culprit> = culprits(p, own.as_deref(), defines)
        .into_iter()
        .filter(|c| matches!(c, Culprit::Constant { value, .. } if !explained(*value)))
        .collect();
    out.extend(unexplained);
    out
}

/// An explicit conversion to double in `code`: `(double)x`, `static_cast<double>(x)`,
/// `double(x)`. The programmer asked for double there, so the region is not an accident.
pub fn explicit_double_cast(code: &str) -> Option<&'static str> {
    let squeezed: String = strip_comments(code)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if squeezed.contains("(double)") {
        return Some("(double)");
    }
    if squeezed.contains("static_cast<double>") {
        return Some("static_cast<double>");
    }
    let functional = identifiers(code)
        .iter()
        .any(|(id, end)| *id == "double" && code[*end..].trim_start().starts_with('('));
    functional.then_some("double(")
}

/// Marks `p` deliberate when a line of its region casts to double explicitly
/// ([`Carried::ExplicitCast`]); `text` gives a line's source when it can be read.
pub fn mark_explicit_casts(p: &mut Promotion, text: &dyn Fn(SourceLine) -> Option<String>) {
    let mut lines = vec![p.at];
    lines.extend(p.lines.iter().copied().filter(|l| *l != p.at));
    for l in lines {
        if let Some(cast) = text(l).as_deref().and_then(explicit_double_cast) {
            let c = Carried::ExplicitCast {
                cast: cast.to_string(),
            };
            if !p.carried.contains(&c) {
                p.carried.push(c);
                p.carried.sort();
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsuffixed_literals_are_found_with_their_values() {
        let got = double_literals("y = yi + a * (2.0 * xi / sqrt(yi * yi + 1.0) - 0.5f) + 1e-3 + .5 + 3 + x2.y + 7.L + 0x1.8p1");
        assert_eq!(
            got,
            [
                ("2.0".to_string(), 2.0),
                ("1.0".to_string(), 1.0),
                ("1e-3".to_string(), 1e-3),
                (".5".to_string(), 0.5),
                ("0x1.8p1".to_string(), 3.0)
            ]
        );
        assert!(double_literals("float z = 2.0f * 1.5F + 2e3f;").is_empty());
        assert_eq!(double_literals("x * 1'000.5")[0].1, 1000.5);
    }

    #[test]
    fn comments_and_defines() {
        assert_eq!(strip_comments("a = 2.0 * b; // 3.0 here"), "a = 2.0 * b; ");
        assert_eq!(strip_comments("a /* 1.0 */ = 2.0; /* open"), "a   = 2.0; ");
        let text = "#define DAMPING 0.3 // relaxation\n  #  define N (1 << 20)\n#define SQ(x) ((x)*(x))\n#define A 0.75f\n#defineX 1\n";
        assert_eq!(
            defines_in(text),
            [
                ("DAMPING".to_string(), "0.3".to_string()),
                ("N".to_string(), "(1 << 20)".to_string()),
                ("A".to_string(), "0.75f".to_string())
            ]
        );
    }

    #[test]
    fn math_calls_are_double_functions_only() {
        assert_eq!(
            math_calls(
                "y = exp(-0.1 * x) + expf(x) + __expf(x) + std::pow (x, 2) + p.sqrt(x) + sqrtf(x)"
            ),
            ["exp", "pow"]
        );
    }

    fn promotion(constants: &[f64], math: &[&str]) -> Promotion {
        Promotion {
            function: "k".into(),
            at: crate::census::SourceLine { file: 1, line: 1 },
            lines: vec![],
            promoted: vec![],
            promotions: 1,
            from_integers: 0,
            to_f32: 1,
            constants: constants.to_vec(),
            math: math.iter().map(|s| s.to_string()).collect(),
            f64_instructions: 1,
            copies: 1,
            per_execution: 1,
            carried: vec![],
        }
    }

    #[test]
    fn culprits_name_literals_macros_calls_and_unexplained_constants() {
        let defines = defines_in("#define DAMPING 0.3\n#define A 0.75f\n");
        // The macro: named with its float definition.
        let c = culprits(
            &promotion(&[0.3], &[]),
            Some("y[i] = x[i] * DAMPING * A;"),
            &defines,
        );
        assert_eq!(
            c,
            [Culprit::Macro {
                name: "DAMPING".into(),
                value: "0.3".into(),
                fix: "#define DAMPING 0.3f".into(),
                on: vec![]
            }]
        );
        assert_eq!(fix(&c), "write #define DAMPING 0.3f");
        // exp(-0.1 * x): the literal (the PTX has -0.1) and the call.
        let c = culprits(
            &promotion(&[-0.1], &[]),
            Some("y[i] = exp(-0.1 * x[i]); // 2.0"),
            &[],
        );
        assert_eq!(
            c,
            [
                Culprit::Literal {
                    text: "0.1".into(),
                    in_ptx: true,
                    fix: "0.1f".into(),
                    on: vec![]
                },
                Culprit::Call {
                    function: "exp".into(),
                    fix: "expf".into(),
                    on: vec![]
                }
            ]
        );
        assert_eq!(fix(&c), "write 0.1f, expf()");
        // A constant the text does not show, and a math function only the PTX names.
        let c = culprits(&promotion(&[0.3], &["pow"]), Some("y = f(x);"), &[]);
        assert_eq!(
            c[0],
            Culprit::Call {
                function: "pow".into(),
                fix: "powf".into(),
                on: vec![]
            }
        );
        assert_eq!(
            c[1],
            Culprit::Constant {
                value: 0.3,
                fix: "0.3f".into()
            }
        );
        assert_eq!(c[1].describe(), "constant 0.3 (not in the source text)");
        // A constant the source does not show is not written into the fix.
        assert_eq!(fix(&c), "write powf()");
        assert!(fix(&[]).starts_with("keep the expression in float"));
        assert_eq!(decimal(2.0), "2");
        assert_eq!(decimal(-0.1), "-0.1");
        assert_eq!(float_spelling(2.0), "2.0");
    }

    #[test]
    fn a_statement_over_several_lines_names_each_literal_on_its_line() {
        // `un = c + r * ((u[e] - 2.0 * c + u[w])` / `+ (u[n] - 2.0 * c` / `+ u[s]));`: rounded
        // back on the last line, the literals are on the two above it.
        let mut p = promotion(&[], &[]);
        p.at = SourceLine { file: 1, line: 9 };
        p.lines = (7..=9).map(|line| SourceLine { file: 1, line }).collect();
        let text = |l: SourceLine| {
            Some(
                match l.line {
                    7 => "un = c + r * ((u[e] - 2.0 * c + u[w])",
                    8 => "+ (u[n] - 2.0 * c",
                    _ => "+ u[s]));",
                }
                .to_string(),
            )
        };
        let c = culprits_on_lines(&p, &text, &[]);
        assert_eq!(c.len(), 1, "{c:?}");
        let label = |l: SourceLine| format!("k.cu:{}", l.line);
        assert_eq!(c[0].describe_at(&label), "2.0 (k.cu:7, k.cu:8) → 2.0f");
        assert_eq!(fix(&c), "write 2.0f");
    }

    #[test]
    fn explicit_casts_make_a_region_deliberate() {
        assert_eq!(
            explicit_double_cast("n = ceil((double) n / 256);"),
            Some("(double)")
        );
        assert_eq!(
            explicit_double_cast("y = static_cast< double >(x) * 2;"),
            Some("static_cast<double>")
        );
        assert_eq!(explicit_double_cast("y = double(x) * k;"), Some("double("));
        assert_eq!(explicit_double_cast("y = x * 2.0; // (double)"), None);
        assert_eq!(explicit_double_cast("double s = 0;"), None);
        let mut p = promotion(&[0.00390625], &["ceil"]);
        let text = |_: SourceLine| Some("int nb = (int)ceil((double)n / 256);".to_string());
        mark_explicit_casts(&mut p, &text);
        assert!(!p.accidental());
        assert_eq!(
            p.carried[0].describe(),
            "explicit (double) cast in the source"
        );
    }
}
