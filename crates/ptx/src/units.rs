//! Math-function units: the instructions of one call of a double math function (`exp(x)` at
//! source line 42), which a precision configuration replaces as a whole (at source level, by
//! `mantissa_units.cuh`) and which the PTX rewriter in [`crate::demote`] must never touch.
//!
//! Two ways to find them:
//! - **Marked builds** (the user's CUDA compiled with `mantissa_units.cuh` pre-included and
//!   `-lineinfo`): each call is a force-inlined forwarder `__mantissa_unit_exp<42>(x)`, so every
//!   instruction of the inlined math function sits under a `.loc` whose `function_name` label
//!   spells the forwarder's mangled name in `.debug_str`. A unit's instructions are those whose
//!   *current* `.loc` names a forwarder. Instructions the compiler gives a bare `.loc` in the
//!   header's file (after a branch target it re-emits `.loc 2 79 1`, or `.loc 2 0 1` for code
//!   with no line) belong to the most recent unit of that forwarder line (of any forwarder for
//!   line 0), in text order. A `.func` called from inside a unit (`__internal_accurate_pow`) is
//!   part of the math function: its whole body is a unit of the same identity.
//! - **Unmarked PTX** (Numba, Triton, plain nvcc, or a refused marked build): *opaque regions*.
//!   Every instruction on a source line (file + line; a `.loc` with line 0 continues the line
//!   before it; instructions before any `.loc` form one region, so a function without line info
//!   is one region) that reinterprets f64 bits (`mov.b64` between an f64 register and integer
//!   registers, `and`/`or`/`xor`/`shl`/`shr`/`not` on a b64 holding f64 bits, `testp.*.f64`,
//!   `copysign.f64`) is one opaque unit, never demoted. This is conservative by design: a libm
//!   sequence inlined on a line almost always splits or rebuilds exponent bits, and demoting the
//!   arithmetic around such bit manipulation would break it silently, so the whole line stays
//!   f64 (and so does any user arithmetic written on the same line).
//!
//! Opaque regions are also computed in marked builds, over the instructions outside marked
//! units: math functions the header does not mark (`frexp`, `sincos`, ...) and user bit tricks
//! get the same protection.
//!
//! Grouping: one [`Unit`] per distinct (function, template line, call site). Two inlined
//! instances of one site — a helper inlined twice, so its `exp` has the same `inlined_at` (the
//! helper's line) both times — are one unit listing the instructions of both. Two calls of the
//! same function on one source line are one unit too: NVVM gives both the statement's column
//! (`exp(a) + exp(b)` at line 3 is `inlined_at 1 3 3` twice), and the header demotes by line
//! anyway (`MANTISSA_DEMOTE_LINES`), so a line is the finest grain a configuration can have.

use crate::model::*;
use crate::op::{BitOp, OpKind, ValueType};
use crate::regs::RegTable;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// How a unit was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitKind {
    /// From `mantissa_units.cuh` markers: one call of a math function.
    Marked,
    /// An opaque region of an unmarked build: a source line that reinterprets f64 bits.
    Opaque,
}

/// The instructions of one math-function call (or one opaque source line) in one function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unit {
    /// Marked call or opaque region.
    pub kind: UnitKind,
    /// The math function (`exp`), or `opaque` for an opaque region.
    pub function: String,
    /// The call's source line (the forwarder's template argument); for an opaque region, its
    /// source line (0 for instructions before any `.loc`).
    pub line: u32,
    /// `(file, line, column)` of the call site (the `.loc`'s `inlined_at`); for an opaque
    /// region `(file, line, 0)`.
    pub call_site: (u32, u32, u32),
    /// The unit's instructions in this function, in text order.
    pub instructions: Vec<InstId>,
}

impl Unit {
    /// `exp at line 42` / `opaque line 17`: how reports name the unit.
    pub fn describe(&self) -> String {
        match self.kind {
            UnitKind::Marked => format!("unit {} at line {}", self.function, self.line),
            UnitKind::Opaque => {
                format!("opaque region (f64 bit manipulation) at line {}", self.line)
            }
        }
    }
}

/// The units of one function (an `.entry` or a `.func`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionUnits {
    /// The function's symbol name.
    pub function: String,
    /// Its units: marked units first (in order of first instruction), then opaque regions.
    pub units: Vec<Unit>,
}

/// The strings of `.section .debug_str`, by label (`$L__info_string0` → `_Z19__mantissa...`).
pub fn debug_strings(m: &Module) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for item in &m.items {
        let Item::Section { name, body, .. } = item else {
            continue;
        };
        if name != ".debug_str" {
            continue;
        }
        let mut label: Option<String> = None;
        let mut bytes: Vec<u8> = Vec::new();
        // The body is `LABEL:` lines followed by `.b8 n,n,...` lines; a string ends at its 0
        // byte (or at the next label).
        for tok in body.split(|c: char| c.is_whitespace() || c == ',') {
            if tok.is_empty() || tok == ".b8" {
                continue;
            }
            if let Some(l) = tok.strip_suffix(':') {
                if let Some(prev) = label.take() {
                    out.insert(prev, String::from_utf8_lossy(&bytes).into_owned());
                }
                bytes.clear();
                label = Some(l.to_string());
            } else if let Ok(b) = tok.parse::<u8>() {
                if label.is_some() {
                    if b == 0 {
                        if let Some(prev) = label.take() {
                            out.insert(prev, String::from_utf8_lossy(&bytes).into_owned());
                        }
                        bytes.clear();
                    } else {
                        bytes.push(b);
                    }
                }
            }
        }
        if let Some(prev) = label {
            out.insert(prev, String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    out
}

/// The math function and template line of a forwarder's mangled name:
/// `_Z19__mantissa_unit_expILi3EEdd` → `("exp", 3)`. The identifier's length prefix must span
/// exactly `__mantissa_unit_<fn>`, followed by the template argument list `ILi<line>E`.
pub fn parse_unit_name(mangled: &str) -> Option<(String, u32)> {
    const MARK: &str = "__mantissa_unit_";
    let at = mangled.find(MARK)?;
    let digits_start = mangled[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map(|(k, _)| k)?;
    let len: usize = mangled[digits_start..at].parse().ok()?;
    let ident = mangled.get(at..at + len)?;
    let function = ident.strip_prefix(MARK)?;
    if function.is_empty()
        || !function
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let rest = mangled[at + len..].strip_prefix("ILi")?;
    let end = rest.find('E')?;
    let line: u32 = rest[..end].parse().ok()?;
    Some((function.to_string(), line))
}

/// Identity of a marked unit within a module.
type UnitKey = (String, u32, (u32, u32, u32));

/// Per instruction of each function: the unit it belongs to, as an index into that function's
/// [`FunctionUnits::units`]. What [`crate::demote`] consults.
#[derive(Debug, Clone, Default)]
pub struct UnitIndex {
    /// The units, per function, in module order.
    pub functions: Vec<FunctionUnits>,
    /// Instruction → (function index, unit index).
    pub of: HashMap<InstId, (usize, usize)>,
}

impl UnitIndex {
    /// The unit an instruction belongs to, if any.
    pub fn unit_of(&self, id: InstId) -> Option<&Unit> {
        let (f, u) = *self.of.get(&id)?;
        self.functions.get(f)?.units.get(u)
    }
}

/// Whether the module was built with `mantissa_units.cuh` markers (some `.loc` names a
/// forwarder).
pub fn is_marked(m: &Module) -> bool {
    let strings = debug_strings(m);
    m.functions()
        .flat_map(|f| f.body.iter().flatten())
        .any(|s| {
            matches!(s, Statement::Loc(Loc { inlined: Some(i), .. })
            if strings.get(&i.function_name).and_then(|n| parse_unit_name(n)).is_some())
        })
}

/// The units of every function with a body, in module order (see the module docs).
pub fn units(m: &Module) -> Vec<FunctionUnits> {
    index(m).functions
}

/// [`units`] with the instruction → unit lookup.
pub fn index(m: &Module) -> UnitIndex {
    let strings = debug_strings(m);
    let forwarder: HashMap<&str, (String, u32)> = strings
        .iter()
        .filter_map(|(label, name)| Some((label.as_str(), parse_unit_name(name)?)))
        .collect();
    // Files that hold forwarders: their bare `.loc`s are inside some unit.
    let mut header_files: HashSet<u32> = HashSet::new();
    for f in m.functions() {
        for s in f.body.iter().flatten() {
            if let Statement::Loc(l) = s {
                if let Some(i) = &l.inlined {
                    if forwarder.contains_key(i.function_name.as_str()) {
                        header_files.insert(l.file);
                    }
                }
            }
        }
    }
    for (index, path) in m.files() {
        if path.ends_with("mantissa_units.cuh") {
            header_files.insert(index);
        }
    }

    let funcs: Vec<&Function> = m.functions().filter(|f| f.body.is_some()).collect();
    // Marked units per function, keyed by identity, in order of first appearance.
    let mut marked: Vec<Vec<(UnitKey, Vec<InstId>)>> = Vec::with_capacity(funcs.len());
    // Calls made from inside a unit: callee → the units calling it.
    let mut called_from: BTreeMap<String, Vec<UnitKey>> = BTreeMap::new();
    for f in &funcs {
        let mut list: Vec<(UnitKey, Vec<InstId>)> = Vec::new();
        let mut pos: HashMap<UnitKey, usize> = HashMap::new();
        let mut current: Option<usize> = None;
        let mut last_any: Option<usize> = None;
        let mut last_at_line: HashMap<(u32, u32), usize> = HashMap::new();
        for s in f.body.iter().flatten() {
            match s {
                Statement::Loc(l) => {
                    let fwd = l
                        .inlined
                        .as_ref()
                        .and_then(|i| Some((i, forwarder.get(i.function_name.as_str())?)));
                    current = if let Some((i, (name, line))) = fwd {
                        let key: UnitKey = (name.clone(), *line, (i.file, i.line, i.col));
                        let k = *pos.entry(key.clone()).or_insert_with(|| {
                            list.push((key, Vec::new()));
                            list.len() - 1
                        });
                        last_any = Some(k);
                        last_at_line.insert((l.file, l.line), k);
                        Some(k)
                    } else if l.inlined.is_none() && header_files.contains(&l.file) {
                        if l.line == 0 {
                            last_any
                        } else {
                            last_at_line.get(&(l.file, l.line)).copied().or(last_any)
                        }
                    } else {
                        None
                    };
                }
                Statement::Inst(i) => {
                    if let Some(k) = current {
                        list[k].1.push(i.id);
                        if i.decode().kind == OpKind::Call {
                            for o in &i.operands {
                                if let Operand::Symbol(callee) = o {
                                    called_from
                                        .entry(callee.clone())
                                        .or_default()
                                        .push(list[k].0.clone());
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        marked.push(list);
    }
    // A device function called from a unit belongs to it, and so does what it calls in turn.
    let mut todo: Vec<(String, UnitKey)> = called_from
        .into_iter()
        .flat_map(|(c, keys)| keys.into_iter().map(move |k| (c.clone(), k)))
        .collect();
    let mut seen: HashSet<(String, UnitKey)> = HashSet::new();
    while let Some((callee, key)) = todo.pop() {
        if !seen.insert((callee.clone(), key.clone())) {
            continue;
        }
        let Some(fi) = funcs.iter().position(|f| f.name == callee) else {
            continue;
        };
        let ids: Vec<InstId> = funcs[fi].instructions().map(|i| i.id).collect();
        for i in funcs[fi]
            .instructions()
            .filter(|i| i.decode().kind == OpKind::Call)
        {
            for o in &i.operands {
                if let Operand::Symbol(c) = o {
                    todo.push((c.clone(), key.clone()));
                }
            }
        }
        let list = &mut marked[fi];
        match list.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.extend(ids),
            None => list.push((key, ids)),
        }
    }

    let mut out = UnitIndex::default();
    for (fi, (f, list)) in funcs.iter().zip(marked).enumerate() {
        let mut units: Vec<Unit> = list
            .into_iter()
            .map(|((function, line, call_site), mut instructions)| {
                instructions.sort();
                instructions.dedup();
                Unit {
                    kind: UnitKind::Marked,
                    function,
                    line,
                    call_site,
                    instructions,
                }
            })
            .collect();
        let in_marked: HashSet<InstId> = units
            .iter()
            .flat_map(|u| u.instructions.iter().copied())
            .collect();
        units.extend(opaque_regions(f, &in_marked));
        for (ui, u) in units.iter().enumerate() {
            for id in &u.instructions {
                out.of.entry(*id).or_insert((fi, ui));
            }
        }
        out.functions.push(FunctionUnits {
            function: f.name.clone(),
            units,
        });
    }
    out
}

/// Whether `inst` reinterprets f64 bits; `tainted` holds integer registers known to carry f64
/// bits and is updated with what `inst` writes.
fn reinterprets(inst: &Instruction, regs: &RegTable, tainted: &mut HashSet<String>) -> bool {
    let op = inst.decode();
    let is_f64_reg = |o: &Operand| matches!(o, Operand::Reg(r) if regs.is_f64(r));
    match op.kind {
        OpKind::Bits(BitOp::Testp | BitOp::Copysign) => op.ty == Some(ValueType::F64),
        OpKind::Move { .. } if op.ty == Some(ValueType::B64) => {
            let (Some(dst), Some(src)) = (inst.operands.first(), inst.operands.get(1)) else {
                return false;
            };
            if is_f64_reg(src) && !is_f64_reg(dst) {
                if let Operand::Reg(d) = dst {
                    tainted.insert(d.clone());
                }
                true
            } else if is_f64_reg(dst) && !is_f64_reg(src) {
                true
            } else if let Operand::Reg(s) = src {
                // A copy of f64 bits between integer registers keeps them f64 bits.
                if tainted.contains(s) {
                    if let Operand::Reg(d) = dst {
                        tainted.insert(d.clone());
                    }
                }
                false
            } else {
                false
            }
        }
        OpKind::Bits(
            BitOp::And | BitOp::Or | BitOp::Xor | BitOp::Shl | BitOp::Shr | BitOp::Not,
        ) if op.ty == Some(ValueType::B64) => {
            let (defs, uses) = crate::op::defs_uses(inst, &op);
            let hit = uses.iter().any(|r| tainted.contains(*r));
            if hit {
                for d in defs {
                    tainted.insert(d.to_string());
                }
            }
            hit
        }
        _ => false,
    }
}

/// Opaque regions of `f` over the instructions not in `skip` (see the module docs).
fn opaque_regions(f: &Function, skip: &HashSet<InstId>) -> Vec<Unit> {
    let regs = RegTable::of(f);
    let mut tainted = HashSet::new();
    // Region key: (file, line) of the current `.loc`, (0, 0) before any.
    let mut region: (u32, u32) = (0, 0);
    let mut members: BTreeMap<(u32, u32), Vec<InstId>> = BTreeMap::new();
    let mut hit: HashSet<(u32, u32)> = HashSet::new();
    for s in f.body.iter().flatten() {
        match s {
            // Line 0 is code the compiler could not place: it continues the line before it.
            Statement::Loc(l) if l.line != 0 => region = (l.file, l.line),
            Statement::Inst(i) if !skip.contains(&i.id) => {
                members.entry(region).or_default().push(i.id);
                if reinterprets(i, &regs, &mut tainted) {
                    hit.insert(region);
                }
            }
            _ => {}
        }
    }
    members
        .into_iter()
        .filter(|(k, _)| hit.contains(k))
        .map(|((file, line), instructions)| Unit {
            kind: UnitKind::Opaque,
            function: "opaque".into(),
            line,
            call_site: (file, line, 0),
            instructions,
        })
        .collect()
}
