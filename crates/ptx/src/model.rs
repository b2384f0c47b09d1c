//! The typed PTX model: a [`Module`] of [`Item`]s, [`Function`]s with [`Statement`] bodies and
//! [`Instruction`]s with typed [`Operand`]s.
//!
//! Source positions ([`SrcLine`]) are carried for diagnostics and reports but compare equal
//! whatever their value, so that `parse(print(parse(x))) == parse(x)` holds although printing
//! changes the layout.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A 1-based line of the PTX text a node was parsed from (0 for nodes made by a rewrite).
///
/// Equality ignores the value: the model's equality is structural (see the module docs).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SrcLine(pub u32);

impl PartialEq for SrcLine {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for SrcLine {}

/// A stable instruction id: assigned in text order at parse time, never reused or renumbered,
/// so that rewrites (which insert instructions with [`Module::fresh_inst_id`]) keep the ids of
/// the instructions they started from and reports can name "instruction 17" across rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InstId(pub u32);

impl fmt::Display for InstId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "i{}", self.0)
    }
}

/// A parsed PTX module.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Module {
    /// The module's directives, variables and functions, in text order (printing follows it).
    pub items: Vec<Item>,
    /// The next id [`Module::fresh_inst_id`] hands out.
    pub next_inst_id: u32,
}

/// A module-level item, in text order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// `.version 9.0`
    Version(String),
    /// `.target sm_90` (possibly with more comma-separated words, e.g. `texmode_independent`).
    Target(Vec<String>),
    /// `.address_size 64`
    AddressSize(u32),
    /// `.file 1 "name"` (with optional timestamp and size, kept as text).
    File {
        /// The number `.loc` directives refer to the file by.
        index: u32,
        /// The source file's path as the compiler wrote it.
        path: String,
        /// The optional timestamp and size after the path, as written.
        rest: String,
        /// Where the directive was.
        line: SrcLine,
    },
    /// A module-scope variable (`.global`, `.const`, `.shared`, ...).
    Var(VarDecl),
    /// A kernel or device function, defined or declared.
    Function(Function),
    /// `.section NAME { ... }` (DWARF sections): kept verbatim, PTX analyses do not read them.
    Section {
        /// The section's name (`.debug_str`, ...).
        name: String,
        /// Everything between the braces, as written.
        body: String,
        /// Where the section began.
        line: SrcLine,
    },
    /// Anything not understood, kept verbatim and reported in [`crate::Parsed::diagnostics`].
    Verbatim(Verbatim),
}

/// Text kept exactly as written because the parser did not understand it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verbatim {
    /// The statement's text, printed back unchanged.
    pub text: String,
    /// Where it was, for the diagnostic that reports it.
    pub line: SrcLine,
}

/// `.entry` (a kernel) or `.func` (a device function).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    /// `.entry`: a kernel, launched from the host.
    Entry,
    /// `.func`: a device function, called from kernels.
    Func,
}

/// An `.entry` or `.func`, with its body or as a prototype (`.extern .func ...;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// `.visible`, `.extern`, `.weak`: the directives before `.entry`/`.func`.
    pub linkage: Vec<String>,
    /// Kernel or device function.
    pub kind: FunctionKind,
    /// The (possibly mangled) symbol name, as launches and calls name it.
    pub name: String,
    /// The return parameters of a `.func` (`(.param .b64 func_retval0)`), if it has a list.
    pub returns: Option<Vec<Param>>,
    /// The parameters in order: a kernel's arguments are matched against them.
    pub params: Vec<Param>,
    /// Performance directives between the parameters and the body (`.maxntid 256, 1, 1`), as text.
    pub directives: Vec<String>,
    /// `None` for a prototype.
    pub body: Option<Vec<Statement>>,
    /// Where the function's header was.
    pub line: SrcLine,
}

/// A parameter: `.param .u64 name`, `.param .align 8 .b8 name[16]`, `.reg .f32 x`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The directives and numbers between the name and the start, e.g. `[".param", ".u64"]`.
    pub attrs: Vec<String>,
    /// The parameter's name, as the body's `ld.param` addresses it.
    pub name: String,
    /// Array dimensions (`[16]` is `Some(16)`, `[]` is `None`).
    pub dims: Vec<Option<u64>>,
}

impl Param {
    /// A new `.param` of type `ty` (e.g. `.u64`), for rewrites that add a kernel argument.
    pub fn new(ty: &str, name: &str) -> Param {
        Param {
            attrs: vec![".param".into(), ty.into()],
            name: name.into(),
            dims: Vec::new(),
        }
    }
}

/// A variable declaration: `.shared .align 4 .b8 part[1024];`, `.global .f32 g = 0f00000000;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarDecl {
    /// State space, alignment and type directives, in order (`[".shared", ".align", "4", ".b8"]`).
    pub attrs: Vec<String>,
    /// The variable's name, as addresses refer to it.
    pub name: String,
    /// Array dimensions (`[1024]` is `Some(1024)`, `[]` is `None`).
    pub dims: Vec<Option<u64>>,
    /// The initialiser's text after `=`, whitespace-normalised.
    pub init: Option<String>,
    /// Where the declaration was.
    pub line: SrcLine,
}

impl VarDecl {
    /// The state space (`.shared`, `.global`, ...): the first attribute that names one, after
    /// any linkage (`.visible .global x` is in `.global`); empty when none does.
    pub fn space(&self) -> &str {
        self.attrs
            .iter()
            .map(String::as_str)
            .find(|a| crate::parse::SPACES.contains(a))
            .unwrap_or("")
    }
}

/// `.reg .f64 %fd<7>;` or `.reg .b32 %a, %b;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegDecl {
    /// The type directive (`.f64`), with any vector prefix (`.v2 .f32` is kept as `.v2 .f32`).
    pub ty: String,
    /// The registers declared, as ranges or single names.
    pub names: Vec<RegName>,
    /// Where the declaration was.
    pub line: SrcLine,
}

/// One name of a register declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegName {
    /// `%fd<7>`: registers `%fd0` .. `%fd6`.
    Range {
        /// The name before the number (`%fd`).
        prefix: String,
        /// How many registers: `%fd0` up to `%fd{count-1}`.
        count: u32,
    },
    /// `%x`
    Single(String),
}

/// A statement of a function body. Braced blocks (NVRTC's call sequences) are flattened into
/// [`Statement::BlockStart`] / [`Statement::BlockEnd`] so that instruction order is one list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// A register declaration (`.reg .f32 %f<4>;`).
    Reg(RegDecl),
    /// A function-scope variable (`.local`, `.shared`, `.param` inside a call block).
    Var(VarDecl),
    /// A branch target (`$L__BB0_2:`), its name without the colon.
    Label(String, SrcLine),
    /// An instruction.
    Inst(Instruction),
    /// Line info: the source position of the instructions that follow.
    Loc(Loc),
    /// `.pragma "nounroll";`: the strings.
    Pragma(Vec<String>, SrcLine),
    /// `{`: a nested block opens (its statements follow in the same list).
    BlockStart(SrcLine),
    /// `}`: the innermost open block closes.
    BlockEnd(SrcLine),
    /// A statement the parser did not understand, kept as written.
    Verbatim(Verbatim),
}

/// A `.loc` line-info directive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loc {
    /// The `.file` index of the source file.
    pub file: u32,
    /// The 1-based source line the following instructions come from.
    pub line: u32,
    /// The source column.
    pub col: u32,
    /// For code inlined from another function: `function_name LABEL, inlined_at F L C`.
    pub inlined: Option<Inlined>,
    /// Where the `.loc` itself was in the PTX text.
    #[serde(skip)]
    pub src: SrcLine,
}

/// Where an inlined `.loc` was inlined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inlined {
    /// The label of the function's name string in `.debug_str`.
    pub function_name: String,
    /// The `.file` index of the call site.
    pub file: u32,
    /// The call site's source line: where a report attributes the inlined code.
    pub line: u32,
    /// The call site's source column.
    pub col: u32,
}

/// A predicate guard: `@%p1` or `@!%p1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// `@!`: the instruction runs where the predicate is false.
    pub negated: bool,
    /// The predicate register (`%p1`).
    pub reg: String,
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Stable across rewrites: how analyses and reports name this instruction.
    pub id: InstId,
    /// The predicate the instruction is conditional on, if any.
    pub guard: Option<Guard>,
    /// `fma` in `fma.rn.f32`.
    pub opcode: String,
    /// `["rn", "f32"]` in `fma.rn.f32`, without dots, in order.
    pub modifiers: Vec<String>,
    /// Destination(s) first, then sources, as written.
    pub operands: Vec<Operand>,
    /// Where the instruction was.
    pub line: SrcLine,
}

/// An instruction operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// `%f1`, `%tid.x`.
    Reg(String),
    /// A literal number.
    Imm(Imm),
    /// `[%rd8]`, `[%rd20+4]`, `[divsqrt_param_0]`, `[func_retval0+0]`.
    Addr {
        /// The register or symbol the address is based on.
        base: String,
        /// The byte offset added to it (0 when none is written).
        offset: i64,
    },
    /// `{%f1, %f2, %f3, %f4}` (`_` sinks are [`Operand::Symbol`]).
    Vector(Vec<Operand>),
    /// A label, function or variable name.
    Symbol(String),
    /// `(retval0)`, `(param0, param1)`: call argument lists.
    List(Vec<Operand>),
    /// `!%p1` as a source operand.
    Not(Box<Operand>),
    /// An operand not understood (an address expression, say), kept as written.
    Raw(String),
}

/// An immediate value. Floats keep their bits, so hex floats print back exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imm {
    /// An integer, with how it was spelt so it prints back the same.
    Int {
        /// The value (wide enough for every u64 and i64 literal).
        value: i128,
        /// Written in hexadecimal (`0xFF`).
        hex: bool,
        /// Written with the `U` suffix.
        unsigned: bool,
    },
    /// `0f3F800000`
    F32(u32),
    /// `0d3FF0000000000000` (decimal float literals are f64 in PTX and are read into this).
    F64(u64),
}

impl Instruction {
    /// `fma.rn.f32`: the opcode with its modifiers.
    pub fn full_opcode(&self) -> String {
        let mut s = self.opcode.clone();
        for m in &self.modifiers {
            s.push('.');
            s.push_str(m);
        }
        s
    }

    /// Whether `m` (without its dot) is among the modifiers.
    pub fn has_mod(&self, m: &str) -> bool {
        self.modifiers.iter().any(|x| x == m)
    }

    /// Type modifiers (`f32`, `u32`, `b64`, ...), in order; `cvt.rzi.u32.f32` gives `[u32, f32]`.
    pub fn types(&self) -> Vec<&str> {
        self.modifiers
            .iter()
            .map(String::as_str)
            .filter(|m| is_type(m))
            .collect()
    }

    /// The state space of a memory instruction (`global`, `shared`, `param`, ...), or `generic`.
    pub fn space(&self) -> &'static str {
        self.modifiers
            .iter()
            .find_map(|m| crate::op::Space::parse(m))
            .unwrap_or(crate::op::Space::Generic)
            .name()
    }

    /// The vector width (`v4` is 4), 1 for scalar accesses.
    pub fn vector_width(&self) -> u32 {
        self.decode().vector
    }

    /// What the instruction means ([`crate::op::decode`]).
    pub fn decode(&self) -> crate::op::Op {
        crate::op::decode(self)
    }

    /// Whether the first operand is written (false for stores, branches, barriers, calls, ...).
    /// Calls write their return list, which [`Instruction::defs`] handles; an instruction whose
    /// first operand is an address (`mbarrier.init [a], n`) writes no register either way.
    pub fn writes_first_operand(&self) -> bool {
        self.decode().writes == crate::op::Writes::First
    }

    /// Registers this instruction writes.
    pub fn defs(&self) -> Vec<&str> {
        crate::op::defs_uses(self, &self.decode()).0
    }

    /// Registers this instruction reads (the guard included).
    pub fn uses(&self) -> Vec<&str> {
        crate::op::defs_uses(self, &self.decode()).1
    }
}

impl Operand {
    /// The first [`Operand::Raw`] text in this operand, if any.
    pub fn first_raw(&self) -> Option<&str> {
        match self {
            Operand::Raw(r) => Some(r),
            Operand::Vector(v) | Operand::List(v) => v.iter().find_map(Operand::first_raw),
            Operand::Not(o) => o.first_raw(),
            _ => None,
        }
    }
}

/// Whether a modifier names a PTX type.
pub fn is_type(m: &str) -> bool {
    crate::op::ValueType::parse(m).is_some()
}

/// The width in bytes of a PTX scalar type modifier (`f32` is 4).
pub fn type_bytes(t: &str) -> Option<u32> {
    crate::op::ValueType::parse(t).map(crate::op::ValueType::bytes)
}

impl Module {
    /// An id no instruction of this module has, for an instruction a rewrite inserts.
    pub fn fresh_inst_id(&mut self) -> InstId {
        let id = InstId(self.next_inst_id);
        self.next_inst_id += 1;
        id
    }

    /// All functions (entries and device functions), in text order.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.items.iter().filter_map(|i| match i {
            Item::Function(f) => Some(f),
            _ => None,
        })
    }

    /// All functions, for rewrites.
    pub fn functions_mut(&mut self) -> impl Iterator<Item = &mut Function> {
        self.items.iter_mut().filter_map(|i| match i {
            Item::Function(f) => Some(f),
            _ => None,
        })
    }

    /// Kernels (`.entry` with a body), in text order.
    pub fn kernels(&self) -> impl Iterator<Item = &Function> {
        self.functions()
            .filter(|f| f.kind == FunctionKind::Entry && f.body.is_some())
    }

    /// The function (entry or device function) named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions().find(|f| f.name == name)
    }

    /// `.file` index to path.
    pub fn files(&self) -> Vec<(u32, &str)> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::File { index, path, .. } => Some((*index, path.as_str())),
                _ => None,
            })
            .collect()
    }
}

impl Function {
    /// The instructions of the body, in order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.body.iter().flatten().filter_map(|s| match s {
            Statement::Inst(i) => Some(i),
            _ => None,
        })
    }

    /// A register name not declared in this function, declared now with type `ty` (`.f32`).
    /// Fresh registers get their own `%m<ty>N` names so they can never collide with NVRTC's
    /// `%f`, `%fd`, `%r`, `%rd`, `%p` ranges.
    pub fn fresh_reg(&mut self, ty: &str) -> String {
        let base = format!("%m{}_", ty.trim_start_matches('.'));
        let body = self.body.get_or_insert_with(Vec::new);
        let mut n = 0;
        let taken = |name: &str| {
            body.iter().any(|s| match s {
                Statement::Reg(d) => d.names.iter().any(|r| match r {
                    RegName::Single(x) => x == name,
                    RegName::Range { prefix, count } => name
                        .strip_prefix(prefix.as_str())
                        .and_then(|k| k.parse::<u32>().ok())
                        .is_some_and(|k| k < *count),
                }),
                _ => false,
            })
        };
        while taken(&format!("{base}{n}")) {
            n += 1;
        }
        let name = format!("{base}{n}");
        // Declarations go before the first non-declaration so the body stays well-formed.
        let at = body
            .iter()
            .position(|s| !matches!(s, Statement::Reg(_)))
            .unwrap_or(body.len());
        body.insert(
            at,
            Statement::Reg(RegDecl {
                ty: ty.to_string(),
                names: vec![RegName::Single(name.clone())],
                line: SrcLine(0),
            }),
        );
        name
    }
}
