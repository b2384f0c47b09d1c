//! The Itanium C++ demangling a kernel's users need: the qualified name with its template
//! arguments (`_Z4axpyIfEvPT_S1_i` → `axpy<float>`) and the parameter types
//! (`float*, float*, int`), substitutions (`S_`, `S0_`) and template parameters (`T_`)
//! resolved. The subset is what NVRTC and nvcc write for `__global__` functions and
//! `__device__` variables: nested and `std` names, builtin types, pointers, references,
//! cv-qualifiers, class types and templates with type or integer arguments. Anything else
//! (function types, arrays, member pointers, expressions, local names) gives `None`, so a
//! caller checks nothing rather than something wrong.

use std::fmt;

/// A builtin C++ type, as its one-letter (or `D`-prefixed) Itanium code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `v`
    Void,
    /// `b`
    Bool,
    /// `c`
    Char,
    /// `a`
    SignedChar,
    /// `h`
    UnsignedChar,
    /// `s`
    Short,
    /// `t`
    UnsignedShort,
    /// `i`
    Int,
    /// `j`
    UnsignedInt,
    /// `l` (64 bits on the targets CUDA supports)
    Long,
    /// `m`
    UnsignedLong,
    /// `x`
    LongLong,
    /// `y`
    UnsignedLongLong,
    /// `n`
    Int128,
    /// `o`
    UnsignedInt128,
    /// `f`
    Float,
    /// `d`
    Double,
    /// `e`
    LongDouble,
    /// `Dh` (IEEE half) and `DF16_` (`_Float16`)
    Half,
    /// `Dn`
    NullPtr,
}

impl Builtin {
    fn of(code: u8) -> Option<Builtin> {
        use Builtin::*;
        Some(match code {
            b'v' => Void,
            b'b' => Bool,
            b'c' => Char,
            b'a' => SignedChar,
            b'h' => UnsignedChar,
            b's' => Short,
            b't' => UnsignedShort,
            b'i' => Int,
            b'j' => UnsignedInt,
            b'l' => Long,
            b'm' => UnsignedLong,
            b'x' => LongLong,
            b'y' => UnsignedLongLong,
            b'n' => Int128,
            b'o' => UnsignedInt128,
            b'f' => Float,
            b'd' => Double,
            b'e' => LongDouble,
            _ => return None,
        })
    }

    /// The C++ spelling.
    pub fn name(self) -> &'static str {
        use Builtin::*;
        match self {
            Void => "void",
            Bool => "bool",
            Char => "char",
            SignedChar => "signed char",
            UnsignedChar => "unsigned char",
            Short => "short",
            UnsignedShort => "unsigned short",
            Int => "int",
            UnsignedInt => "unsigned int",
            Long => "long",
            UnsignedLong => "unsigned long",
            LongLong => "long long",
            UnsignedLongLong => "unsigned long long",
            Int128 => "__int128",
            UnsignedInt128 => "unsigned __int128",
            Float => "float",
            Double => "double",
            LongDouble => "long double",
            Half => "half",
            NullPtr => "decltype(nullptr)",
        }
    }
}

/// A C++ type of a demangled signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CppType {
    /// A builtin type.
    Builtin(Builtin),
    /// A class, enum or other named type, qualified and with its template arguments
    /// (`ns::vec<float>`, `__half`).
    Named(String),
    /// `T*`
    Pointer(Box<CppType>),
    /// `T&`
    Reference(Box<CppType>),
    /// `T&&`
    RvalueReference(Box<CppType>),
    /// `const`/`volatile`/`__restrict__` `T`.
    Qualified {
        /// The qualified type.
        inner: Box<CppType>,
        /// `const`
        constant: bool,
        /// `volatile`
        volatile: bool,
        /// `__restrict__`
        restrict: bool,
    },
}

impl CppType {
    /// The type without cv-qualifiers and `__restrict__`.
    pub fn unqualified(&self) -> &CppType {
        match self {
            CppType::Qualified { inner, .. } => inner.unqualified(),
            t => t,
        }
    }

    /// What a pointer (or reference) points to, unqualified; `None` for a non-pointer.
    pub fn pointee(&self) -> Option<&CppType> {
        match self.unqualified() {
            CppType::Pointer(t) | CppType::Reference(t) | CppType::RvalueReference(t) => {
                Some(t.unqualified())
            }
            _ => None,
        }
    }
}

impl fmt::Display for CppType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CppType::Builtin(b) => f.write_str(b.name()),
            CppType::Named(n) => f.write_str(n),
            CppType::Pointer(t) => write!(f, "{t}*"),
            CppType::Reference(t) => write!(f, "{t}&"),
            CppType::RvalueReference(t) => write!(f, "{t}&&"),
            CppType::Qualified {
                inner,
                constant,
                volatile,
                restrict,
            } => {
                // `const double*` as users write it; a qualified pointer as `double* const`.
                let quals: Vec<&str> = [
                    (*constant, "const"),
                    (*volatile, "volatile"),
                    (*restrict, "__restrict__"),
                ]
                .iter()
                .filter(|q| q.0)
                .map(|q| q.1)
                .collect();
                match inner.as_ref() {
                    CppType::Pointer(_) | CppType::Reference(_) | CppType::RvalueReference(_) => {
                        write!(f, "{inner} {}", quals.join(" "))
                    }
                    _ => write!(f, "{} {inner}", quals.join(" ")),
                }
            }
        }
    }
}

/// A template argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateArg {
    /// A type (`float`).
    Type(CppType),
    /// A value (`3`, `true`).
    Value(String),
}

impl fmt::Display for TemplateArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateArg::Type(t) => t.fmt(f),
            TemplateArg::Value(v) => f.write_str(v),
        }
    }
}

/// A demangled function or variable name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demangled {
    /// The qualified name with its template arguments: `ns::axpy<float>`.
    pub name: String,
    /// The parameter types of a function (empty for `f(void)` and for variables).
    pub params: Vec<CppType>,
    /// Whether the name is a function's (it has a parameter list).
    pub function: bool,
}

impl fmt::Display for Demangled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if self.function {
            let params: Vec<String> = self.params.iter().map(|p| p.to_string()).collect();
            write!(f, "({})", params.join(", "))?;
        }
        Ok(())
    }
}

/// Demangles `mangled` (`_Z8pressurePKdPfi` → `pressure(const double*, float*, int)`), or
/// `None` for a name that is not mangled or uses what this subset does not read.
pub fn demangle(mangled: &str) -> Option<Demangled> {
    let mut p = Parser {
        s: mangled.strip_prefix("_Z")?.as_bytes(),
        pos: 0,
        subs: Vec::new(),
        template_args: Vec::new(),
    };
    let (name, templated) = p.name()?;
    if p.pos == p.s.len() {
        return Some(Demangled {
            name,
            params: Vec::new(),
            function: false,
        });
    }
    if templated {
        p.ty()?; // a function template's mangled name carries its return type first
    }
    let mut params = Vec::new();
    while p.pos < p.s.len() {
        params.push(p.ty()?);
    }
    if params == [CppType::Builtin(Builtin::Void)] {
        params.clear();
    }
    Some(Demangled {
        name,
        params,
        function: true,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    /// Substitution candidates, in the order the ABI numbers them (`S_`, `S0_`, ...).
    subs: Vec<CppType>,
    /// The function's template arguments, for `T_`, `T0_`, ...
    template_args: Vec<TemplateArg>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.pos += usize::from(hit);
        hit
    }

    /// `<seq-id>_` after `S` or `T`: `_` is 0, `0_` is 1, base-36 digits after.
    fn seq_id(&mut self) -> Option<usize> {
        if self.eat(b'_') {
            return Some(0);
        }
        let mut n = 0usize;
        while let Some(c) = self.peek().filter(|c| *c != b'_') {
            let d = (c as char).to_digit(36)? as usize;
            if c.is_ascii_lowercase() {
                return None;
            }
            n = n.checked_mul(36)?.checked_add(d)?;
            self.pos += 1;
        }
        self.eat(b'_').then_some(n + 1)
    }

    fn source_name(&mut self) -> Option<String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let n: usize = std::str::from_utf8(&self.s[start..self.pos])
            .ok()?
            .parse()
            .ok()?;
        let id = self.s.get(self.pos..self.pos + n)?;
        self.pos += n;
        String::from_utf8(id.to_vec()).ok()
    }

    fn substitution(&mut self) -> Option<CppType> {
        // After `S`.
        let special = match self.peek()? {
            b't' => Some("std"),
            b'a' => Some("std::allocator"),
            b'b' => Some("std::basic_string"),
            b's' => Some("std::string"),
            _ => None,
        };
        if let Some(n) = special {
            self.pos += 1;
            if n == "std" {
                let id = self.source_name()?;
                return Some(CppType::Named(format!("std::{id}")));
            }
            return Some(CppType::Named(n.to_string()));
        }
        let i = self.seq_id()?;
        self.subs.get(i).cloned()
    }

    /// `<name>`: the qualified name with template arguments, and whether it ends in them.
    fn name(&mut self) -> Option<(String, bool)> {
        self.eat(b'L');
        if self.eat(b'N') {
            return self.nested(true);
        }
        let (base, pushed) = if self.eat(b'S') {
            let t = self.substitution()?;
            (t.to_string(), true)
        } else {
            (self.source_name()?, false)
        };
        if self.peek() == Some(b'I') {
            if !pushed {
                self.subs.push(CppType::Named(base.clone()));
            }
            let args = self.template_args()?;
            let name = with_args(&base, &args);
            self.template_args = args;
            return Some((name, true));
        }
        Some((base, false))
    }

    /// A nested name after `N`, up to its `E`. `function`: template arguments of the last
    /// component are the function's (for `T_`).
    fn nested(&mut self, function: bool) -> Option<(String, bool)> {
        while matches!(self.peek(), Some(b'K' | b'V' | b'r' | b'R' | b'O')) {
            self.pos += 1;
        }
        let mut so_far = String::new();
        let mut templated = false;
        loop {
            match self.peek()? {
                b'E' => break,
                b'S' => {
                    self.pos += 1;
                    let std_name = self.peek() == Some(b't');
                    so_far = self.substitution()?.to_string();
                    templated = false;
                    // A substitution is not a new candidate; `St3foo` names a new one.
                    if std_name && self.peek() != Some(b'E') {
                        self.subs.push(CppType::Named(so_far.clone()));
                    }
                    continue;
                }
                b'I' => {
                    let args = self.template_args()?;
                    so_far = with_args(&so_far, &args);
                    if function {
                        self.template_args = args;
                    }
                    templated = true;
                }
                b'L' => {
                    self.pos += 1;
                    continue;
                }
                c if c.is_ascii_digit() => {
                    let id = self.source_name()?;
                    templated = false;
                    so_far = if so_far.is_empty() {
                        id
                    } else {
                        format!("{so_far}::{id}")
                    };
                }
                _ => return None,
            }
            if self.peek() != Some(b'E') {
                self.subs.push(CppType::Named(so_far.clone()));
            }
        }
        self.pos += 1;
        Some((so_far, templated))
    }

    fn template_args(&mut self) -> Option<Vec<TemplateArg>> {
        // At `I`.
        self.pos += 1;
        let mut args = Vec::new();
        while !self.eat(b'E') {
            if self.eat(b'L') {
                let t = self.ty()?;
                let start = self.pos;
                while self.peek()? != b'E' {
                    self.pos += 1;
                }
                let raw = std::str::from_utf8(&self.s[start..self.pos]).ok()?;
                self.pos += 1;
                let v = raw
                    .strip_prefix('n')
                    .map_or(raw.to_string(), |r| format!("-{r}"));
                args.push(TemplateArg::Value(match t {
                    CppType::Builtin(Builtin::Bool) => (v != "0").to_string(),
                    CppType::Builtin(Builtin::UnsignedInt) => format!("{v}u"),
                    CppType::Builtin(Builtin::Long) => format!("{v}l"),
                    CppType::Builtin(Builtin::UnsignedLong) => format!("{v}ul"),
                    CppType::Builtin(Builtin::Int) => v,
                    other => format!("({other}){v}"),
                }));
            } else {
                args.push(TemplateArg::Type(self.ty()?));
            }
        }
        Some(args)
    }

    fn ty(&mut self) -> Option<CppType> {
        let c = self.peek()?;
        if let Some(b) = Builtin::of(c) {
            self.pos += 1;
            return Some(CppType::Builtin(b));
        }
        self.pos += 1;
        let t = match c {
            b'D' => {
                let rest = &self.s[self.pos..];
                let (b, len) = if rest.starts_with(b"h") {
                    (Builtin::Half, 1)
                } else if rest.starts_with(b"n") {
                    (Builtin::NullPtr, 1)
                } else if rest.starts_with(b"F16_") {
                    (Builtin::Half, 4)
                } else {
                    return None;
                };
                self.pos += len;
                return Some(CppType::Builtin(b));
            }
            b'P' => CppType::Pointer(Box::new(self.ty()?)),
            b'R' => CppType::Reference(Box::new(self.ty()?)),
            b'O' => CppType::RvalueReference(Box::new(self.ty()?)),
            b'r' | b'V' | b'K' => {
                self.pos -= 1;
                let restrict = self.eat(b'r');
                let volatile = self.eat(b'V');
                let constant = self.eat(b'K');
                CppType::Qualified {
                    inner: Box::new(self.ty()?),
                    constant,
                    volatile,
                    restrict,
                }
            }
            b'N' => CppType::Named(self.nested(false)?.0),
            b'T' => {
                let i = self.seq_id()?;
                match self.template_args.get(i)? {
                    TemplateArg::Type(t) => t.clone(),
                    TemplateArg::Value(_) => return None,
                }
            }
            b'S' => {
                let std_name = self.peek() == Some(b't');
                let t = self.substitution()?;
                if self.peek() != Some(b'I') {
                    if std_name {
                        self.subs.push(t.clone());
                    }
                    return Some(t);
                }
                if std_name {
                    self.subs.push(t.clone());
                }
                let args = self.template_args()?;
                CppType::Named(with_args(&t.to_string(), &args))
            }
            c if c.is_ascii_digit() => {
                self.pos -= 1;
                let id = self.source_name()?;
                if self.peek() == Some(b'I') {
                    self.subs.push(CppType::Named(id.clone()));
                    let args = self.template_args()?;
                    CppType::Named(with_args(&id, &args))
                } else {
                    CppType::Named(id)
                }
            }
            _ => return None,
        };
        self.subs.push(t.clone());
        Some(t)
    }
}

fn with_args(name: &str, args: &[TemplateArg]) -> String {
    let a: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let joined = a.join(", ");
    // `vec<vec<float> >` is how older demanglers avoid `>>`; C++11 reads `>>` fine.
    format!("{name}<{joined}>")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name with what `c++filt` prints for it, in this module's spelling (`const double*`
    /// for c++filt's `double const*`).
    #[test]
    fn names_and_parameters_read_as_cxxfilt_reads_them() {
        let cases = [
            ("_Z8pressurePKdPfi", "pressure(const double*, float*, int)"),
            ("_Z4axpyIfEvPT_S1_i", "axpy<float>(float*, float*, int)"),
            ("_ZN2ns4stepEPdS_", "ns::step(double*, ns)"),
            (
                "_ZN2ns4axpyIdEEvPKT_PS1_",
                "ns::axpy<double>(const double*, double*)",
            ),
            ("_Z3fooILi3EEvPf", "foo<3>(float*)"),
            ("_Z3barI6__halfEvPT_", "bar<__half>(__half*)"),
            ("_Z1kPN2ns3vecES1_", "k(ns::vec*, ns::vec*)"),
            (
                "_Z1kN2ns3vecIfEES1_PS1_",
                "k(ns::vec<float>, ns::vec<float>, ns::vec<float>*)",
            ),
            ("_Z1kPKfS0_", "k(const float*, const float*)"),
            ("_Z5applyI3AddEvPfS1_", "apply<Add>(float*, float*)"),
            ("_Z1kPfS_", "k(float*, float*)"),
            ("_ZN1a1b1kEPfS1_", "a::b::k(float*, float*)"),
            ("_Z7stencilPdS_ii", "stencil(double*, double*, int, int)"),
            (
                "_Z8ray_stepPKfS0_Ptfffffi",
                "ray_step(const float*, const float*, unsigned short*, float, float, float, float, float, int)",
            ),
            ("_Z1kPDhPrKd", "k(half*, const __restrict__ double*)"),
            ("_Z1kv", "k()"),
            ("_ZN2ns6paramsE", "ns::params"),
            ("_ZL5tablePd", "table(double*)"),
            ("_Z3maxIdLb1EEvPT_", "max<double, true>(double*)"),
        ];
        for (mangled, want) in cases {
            let got = demangle(mangled).unwrap_or_else(|| panic!("{mangled} not read"));
            assert_eq!(got.to_string(), want, "{mangled}");
        }
        assert_eq!(demangle("saxpy"), None);
        assert_eq!(demangle("_Z1kA3_f"), None, "arrays are not read");
        assert_eq!(demangle("_Z99x"), None);
    }

    #[test]
    fn pointees_are_unqualified() {
        let d = demangle("_Z8pressurePKdPfi").unwrap();
        assert_eq!(
            d.params[0].pointee(),
            Some(&CppType::Builtin(Builtin::Double))
        );
        assert_eq!(
            d.params[1].pointee(),
            Some(&CppType::Builtin(Builtin::Float))
        );
        assert_eq!(d.params[2].pointee(), None);
    }
}
