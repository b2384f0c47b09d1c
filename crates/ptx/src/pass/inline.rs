//! Inlining of chosen device functions: every `call` of one of them is replaced by its body.
//!
//! Why: the shadow-values runtime (`mantissa_shadow_values.cuh`) is a CUDA header, so that its
//! arithmetic is `mantissa.cuh`'s twin of `crates/num`; but an instrumented kernel that calls it
//! per executed float instruction pays the ABI of every call (arguments through the parameter
//! space, caller-saved registers, no scheduling across the call). Inlining the merged runtime's
//! functions after [`crate::link::merge_runtime`] keeps one source of the arithmetic and gives
//! ptxas straight-line code it can allocate and schedule with the kernel's own.
//!
//! A call site is a braced call block as NVRTC and [`crate::rewrite::call`] write it: `.param`
//! declarations, `st.param` of the arguments, the `call`, `ld.param` of the return. The block
//! keeps its braces (so parameter names of calls inside the inlined body stay scoped) and
//! becomes:
//! - each `st.param.T [arg+o], v` a `mov.bN` into a register standing for that argument word;
//! - the callee's body, its registers renamed under a prefix the caller does not use (shared by
//!   every inlined copy of one callee in one caller: each copy defines before it reads), its
//!   labels renamed per copy, its `.loc`s dropped (the code stays on the caller's line), its
//!   `ld.param` of a parameter a `mov` from the argument register, its `st.param` of the
//!   return a `mov` into a return register, `ret` a branch to the copy's end;
//! - a guarded call's body skipped by one branch on the negated guard;
//! - each `ld.param.T %x, [ret+o]` a `mov.bN` from the return register.
//!
//! Calls inside an inlined body are inlined in the next round (a callee that reaches itself is
//! refused). A chosen function no call names any more is removed from the module. Refused, with
//! the reason: a callee without a body, with a local depot or any function-scope variable
//! (`.local`, `.shared`: one per copy would be needed), with statements or operands the parser
//! kept verbatim, with a parameter it reads other than by `ld.param`, or a call block whose
//! argument and parameter words do not match in width.

use super::{Outcome, Pass, PassError, Report};
use crate::model::*;
use crate::op::{Control, OpKind};
use crate::regs::RegTable;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Rounds of inlining at most (a body's calls are inlined in the round after it).
const MAX_DEPTH: usize = 16;

/// The pass: inline every call of `functions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inline {
    /// The device functions whose calls are replaced by their bodies.
    pub functions: Vec<String>,
}

/// What [`inline`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InlineReport {
    /// Calls inlined, per callee, in the order of [`Inline::functions`].
    pub inlined: Vec<(String, usize)>,
    /// Chosen functions removed because no call names them any more.
    pub removed: Vec<String>,
}

/// Why a call cannot be inlined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InlineError {
    /// A chosen function the module does not define.
    #[error("cannot inline {0}: the module has no body for it")]
    NoBody(String),
    /// A callee with a local depot or function-scope variables.
    #[error("cannot inline {function}: it declares the {space} variable {name} (a local depot or per-call storage)")]
    Storage {
        /// The callee.
        function: String,
        /// The variable's state space.
        space: String,
        /// The variable.
        name: String,
    },
    /// Something of the callee or call site this pass does not map.
    #[error("cannot inline {function}: {why}")]
    Unsupported {
        /// The callee.
        function: String,
        /// What.
        why: String,
    },
    /// Calls still left after `MAX_DEPTH` rounds: the callee reaches itself.
    #[error("cannot inline {0}: it calls itself, directly or not")]
    Recursive(String),
}

/// The inlined module and its report.
#[derive(Debug, Clone)]
pub struct Inlined {
    /// The module with every call of the chosen functions replaced.
    pub module: Module,
    /// What was inlined and removed.
    pub report: InlineReport,
}

impl Pass for Inline {
    fn name(&self) -> String {
        "inline".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let names: Vec<&str> = self.functions.iter().map(String::as_str).collect();
        let out = inline(module, &names).map_err(|e| PassError {
            pass: self.name(),
            message: e.to_string(),
        })?;
        let calls: usize = out.report.inlined.iter().map(|(_, n)| n).sum();
        Ok(Outcome {
            report: Report::new(
                "inline",
                format!(
                    "{calls} calls inlined, {} functions removed",
                    out.report.removed.len()
                ),
                Vec::new(),
                out.report,
            ),
            module: out.module,
        })
    }
}

/// The functions with a body that some instruction of `module` calls, each once, in the order
/// first called.
pub fn called_functions(module: &Module) -> Vec<String> {
    let defined: Vec<&str> = module
        .functions()
        .filter(|f| f.body.is_some())
        .map(|f| f.name.as_str())
        .collect();
    let mut called: Vec<String> = Vec::new();
    for i in module.functions().flat_map(|f| f.instructions()) {
        if !i.decode().is_call() {
            continue;
        }
        let callee = i.operands.iter().find_map(|o| match o {
            crate::model::Operand::Symbol(name) if defined.contains(&name.as_str()) => Some(name),
            _ => None,
        });
        if let Some(name) = callee.filter(|n| !called.contains(n)) {
            called.push(name.clone());
        }
    }
    called
}

/// `module` with every call of a function it defines inlined ([`inline`] of all of them): what
/// the PTX interpreter, which runs no calls, can run.
pub fn inline_every_call(module: &Module) -> Result<Inlined, InlineError> {
    let called = called_functions(module);
    let names: Vec<&str> = called.iter().map(String::as_str).collect();
    inline(module, &names)
}

/// Replaces every call of `functions` in `module` (left unchanged) by the callee's body.
pub fn inline(module: &Module, functions: &[&str]) -> Result<Inlined, InlineError> {
    let mut callees = HashMap::new();
    for &name in functions {
        let f = module
            .functions()
            .find(|f| f.name == name && f.body.is_some())
            .ok_or_else(|| InlineError::NoBody(name.to_string()))?;
        callees.insert(name.to_string(), Callee::of(f)?);
    }
    let mut out = module.clone();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for _ in 0..MAX_DEPTH {
        let mut changed = false;
        let mut next = out.next_inst_id;
        for f in out.functions_mut().filter(|f| f.body.is_some()) {
            if callees.contains_key(&f.name) {
                continue; // a callee's own calls are inlined into its copies
            }
            changed |= inline_into(f, &callees, &mut next, &mut counts)?;
        }
        out.next_inst_id = next;
        if !changed {
            let removed = remove_uncalled(&mut out, functions);
            return Ok(Inlined {
                module: out,
                report: InlineReport {
                    inlined: functions
                        .iter()
                        .map(|f| (f.to_string(), counts.get(*f).copied().unwrap_or(0)))
                        .collect(),
                    removed,
                },
            });
        }
    }
    let left = functions
        .iter()
        .find(|f| calls_of(&out, f) > 0)
        .unwrap_or(&"?");
    Err(InlineError::Recursive(left.to_string()))
}

/// A callee, checked once.
struct Callee {
    name: String,
    /// Parameter name → its index.
    params: HashMap<String, usize>,
    /// The return parameter's name, if any.
    ret: Option<String>,
    body: Vec<Statement>,
    /// Registers its body declares (renamed in copies).
    regs: RegTable,
}

impl Callee {
    fn of(f: &Function) -> Result<Callee, InlineError> {
        let unsupported = |why: String| InlineError::Unsupported {
            function: f.name.clone(),
            why,
        };
        let body = f.body.clone().unwrap_or_default();
        let params: HashMap<String, usize> = f
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| (p.name.clone(), k))
            .collect();
        if f.params
            .iter()
            .any(|p| p.attrs.first().map(String::as_str) != Some(".param"))
        {
            return Err(unsupported("a .reg parameter".into()));
        }
        let ret = f.returns.iter().flatten().next().map(|p| p.name.clone());
        let mut param_names: HashSet<&str> = params.keys().map(String::as_str).collect();
        param_names.extend(ret.as_deref());
        for s in &body {
            match s {
                Statement::Var(v) if v.space() != ".param" => {
                    return Err(InlineError::Storage {
                        function: f.name.clone(),
                        space: v.space().to_string(),
                        name: v.name.clone(),
                    })
                }
                Statement::Verbatim(v) => {
                    return Err(unsupported(format!(
                        "a statement kept verbatim: {}",
                        v.text
                    )))
                }
                Statement::Inst(i) => {
                    let param_access =
                        matches!(i.decode().kind, OpKind::Load(_) | OpKind::Store(_));
                    for o in &i.operands {
                        if matches!(o, Operand::Raw(_)) {
                            return Err(unsupported(format!("an operand kept verbatim in {i}")));
                        }
                        let named = match o {
                            Operand::Symbol(s) => Some(s.as_str()),
                            Operand::Addr { base, .. } if !param_access => Some(base.as_str()),
                            _ => None,
                        };
                        if named.is_some_and(|n| param_names.contains(n)) {
                            return Err(unsupported(format!("{i} takes a parameter's address")));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(Callee {
            name: f.name.clone(),
            params,
            ret,
            regs: RegTable::of(f),
            body,
        })
    }
}

/// The width in bytes of an `ld`/`st`'s type.
fn width(i: &Instruction) -> Option<u32> {
    i.types().last().and_then(|t| type_bytes(t))
}

/// The values of an `ld`/`st` data operand, one per element (a vector's in order).
fn elements(o: Option<&Operand>) -> Vec<Operand> {
    match o {
        Some(Operand::Vector(items)) => items.clone(),
        Some(o) => vec![o.clone()],
        None => Vec::new(),
    }
}

fn mov(bytes: u32, to: &str, from: Operand) -> Instruction {
    Instruction {
        id: InstId(0),
        guard: None,
        opcode: "mov".into(),
        modifiers: vec![format!("b{}", 8 * bytes)],
        operands: vec![Operand::Reg(to.to_string()), from],
        line: SrcLine(0),
    }
}

/// The names `f`'s body gives its labels and its declared registers.
fn names_in(f: &Function) -> (HashSet<String>, Vec<String>) {
    let mut labels = HashSet::new();
    let mut regs = Vec::new();
    for s in f.body.iter().flatten() {
        match s {
            Statement::Label(l, _) => {
                labels.insert(l.clone());
            }
            Statement::Reg(d) => regs.extend(d.names.iter().map(|n| match n {
                RegName::Range { prefix, .. } => prefix.clone(),
                RegName::Single(s) => s.clone(),
            })),
            _ => {}
        }
    }
    (labels, regs)
}

/// Per caller: the names given to one callee's copies.
struct Copies {
    /// Register prefix of this callee's renamed registers (`%mantissa_inl3_`).
    prefix: String,
    /// Argument and return words: (parameter index or `usize::MAX` for the return, offset) →
    /// (register, bytes).
    words: HashMap<(usize, i64), (String, u32)>,
}

/// One inlining round over `f`: whether a call was inlined.
fn inline_into(
    f: &mut Function,
    callees: &HashMap<String, Callee>,
    next: &mut u32,
    counts: &mut HashMap<String, usize>,
) -> Result<bool, InlineError> {
    let (labels, declared) = names_in(f);
    let body = f.body.take().unwrap_or_default();
    let mut out = Vec::with_capacity(body.len());
    let mut copies: HashMap<String, Copies> = HashMap::new();
    let mut copy_number = 0usize;
    let mut label_base = "$mantissa_inl".to_string();
    while labels.iter().any(|l| l.starts_with(&label_base)) {
        label_base.push('x');
    }
    let mut k = 0;
    while k < body.len() {
        let block = match &body[k] {
            Statement::BlockStart(_) => block_end(&body, k).and_then(|end| {
                let callee = body[k..end].iter().find_map(|s| match s {
                    Statement::Inst(i) => called(i)
                        .filter(|c| callees.contains_key(*c))
                        .map(|c| c.to_string()),
                    _ => None,
                })?;
                Some((end, callee))
            }),
            _ => None,
        };
        let Some((end, callee)) = block else {
            out.push(body[k].clone());
            k += 1;
            continue;
        };
        let c = &callees[&callee];
        let n_copies = copies.len();
        let names = copies.entry(callee.clone()).or_insert_with(|| {
            let base = format!("%mantissa_inl{n_copies}_");
            Copies {
                prefix: unused(&declared, base),
                words: HashMap::new(),
            }
        });
        let labels_of_copy = format!("{label_base}{copy_number}_");
        copy_number += 1;
        out.extend(expand(&body[k..=end], c, names, &labels_of_copy)?);
        *counts.entry(callee).or_default() += 1;
        k = end + 1;
    }
    // Declarations: the renamed registers of each callee, and the argument/return words.
    let mut decls = Vec::new();
    let mut by_name: Vec<(&String, &Copies)> = copies.iter().collect();
    by_name.sort_by(|a, b| a.1.prefix.cmp(&b.1.prefix));
    for (callee, names) in by_name {
        let mut depth = 0usize;
        for s in &callees[callee].body {
            match s {
                Statement::BlockStart(_) => depth += 1,
                Statement::BlockEnd(_) => depth = depth.saturating_sub(1),
                Statement::Reg(d) if depth == 0 => {
                    decls.push(Statement::Reg(renamed_decl(&names.prefix, d)))
                }
                _ => {}
            }
        }
        let mut words: Vec<&(String, u32)> = names.words.values().collect();
        words.sort();
        for (name, bytes) in words {
            decls.push(Statement::Reg(RegDecl {
                ty: format!(".b{}", 8 * bytes),
                names: vec![RegName::Single(name.clone())],
                line: SrcLine(0),
            }));
        }
    }
    let changed = copy_number > 0;
    let top = out
        .iter()
        .position(|s| !matches!(s, Statement::Reg(_) | Statement::Var(_)))
        .unwrap_or(out.len());
    out.splice(top..top, decls);
    for s in &mut out {
        if let Statement::Inst(i) = s {
            if i.id == InstId(0) {
                i.id = InstId(*next);
                *next += 1;
            }
        }
    }
    f.body = Some(out);
    Ok(changed)
}

/// `base`, with `x`s appended until no declared register name starts with it.
fn unused(declared: &[String], mut base: String) -> String {
    while declared.iter().any(|d| d.starts_with(&base)) {
        base.push('x');
    }
    base
}

/// A callee's register declaration with its names renamed under `prefix`.
fn renamed_decl(prefix: &str, d: &RegDecl) -> RegDecl {
    RegDecl {
        ty: d.ty.clone(),
        names: d
            .names
            .iter()
            .map(|n| match n {
                RegName::Range { prefix: p, count } => RegName::Range {
                    prefix: renamed(prefix, p),
                    count: *count,
                },
                RegName::Single(s) => RegName::Single(renamed(prefix, s)),
            })
            .collect(),
        line: SrcLine(0),
    }
}

/// The register `name` of a callee renamed under `prefix` (`%r5` → `%mantissa_inl0_r5`).
fn renamed(prefix: &str, name: &str) -> String {
    format!("{prefix}{}", name.trim_start_matches('%'))
}

/// The index of the `}` closing the block opened at `start`.
fn block_end(body: &[Statement], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, s) in body.iter().enumerate().skip(start) {
        match s {
            Statement::BlockStart(_) => depth += 1,
            Statement::BlockEnd(_) => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The function a direct `call` names; `None` for any other instruction.
fn called(i: &Instruction) -> Option<&str> {
    if !i.decode().is_call() {
        return None;
    }
    i.operands.iter().find_map(|o| match o {
        Operand::Symbol(s) => Some(s.as_str()),
        _ => None,
    })
}

/// The argument list and return list of a `call`: `call (ret), f, (a, b)` or `call f, (a, b)`.
fn call_lists(i: &Instruction) -> (Vec<String>, Vec<String>) {
    let list = |o: &Operand| match o {
        Operand::List(items) => items
            .iter()
            .filter_map(|x| match x {
                Operand::Symbol(s) | Operand::Reg(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let callee_at = i
        .operands
        .iter()
        .position(|o| matches!(o, Operand::Symbol(_)))
        .unwrap_or(0);
    let rets = i.operands[..callee_at]
        .first()
        .map(list)
        .unwrap_or_default();
    let args = i.operands.get(callee_at + 1).map(list).unwrap_or_default();
    (args, rets)
}

/// The call block `block` (braces included) with its call replaced by `c`'s body.
fn expand(
    block: &[Statement],
    c: &Callee,
    names: &mut Copies,
    labels: &str,
) -> Result<Vec<Statement>, InlineError> {
    let unsupported = |why: String| InlineError::Unsupported {
        function: c.name.clone(),
        why,
    };
    const RET: usize = usize::MAX;
    let call = block
        .iter()
        .find_map(|s| match s {
            Statement::Inst(i) if called(i) == Some(c.name.as_str()) => Some(i),
            _ => None,
        })
        .ok_or_else(|| unsupported("no call in its block".into()))?;
    let (args, rets) = call_lists(call);
    if args.len() != c.params.len() {
        return Err(unsupported(format!(
            "{} arguments for {} parameters",
            args.len(),
            c.params.len()
        )));
    }
    let arg_index: HashMap<&str, usize> = args
        .iter()
        .enumerate()
        .map(|(k, a)| (a.as_str(), k))
        .collect();
    let ret_name = rets.first().map(String::as_str);
    let mut word = |names: &mut Copies, param: usize, offset: i64, bytes: u32| {
        let next = names.words.len();
        let prefix = names.prefix.clone();
        let (reg, b) = names
            .words
            .entry((param, offset))
            .or_insert_with(|| (format!("{prefix}w{next}"), bytes))
            .clone();
        if b == bytes {
            Ok(reg)
        } else {
            Err(unsupported(format!(
                "a parameter word accessed as {bytes} and {b} bytes"
            )))
        }
    };
    let end_label = format!("{labels}end");
    let mut out = Vec::new();
    for s in block {
        match s {
            Statement::Var(v) if v.space() == ".param" => {}
            Statement::Inst(i) if i.decode().is_param_store() => {
                let Some(Operand::Addr { base, offset }) = i.operands.first() else {
                    out.push(s.clone());
                    continue;
                };
                let Some(&param) = arg_index.get(base.as_str()) else {
                    out.push(s.clone());
                    continue;
                };
                let bytes = width(i).ok_or_else(|| unsupported(format!("the width of {i}")))?;
                for (e, v) in elements(i.operands.get(1)).into_iter().enumerate() {
                    let at = offset + i64::from(bytes) * e as i64;
                    let reg = word(names, param, at, bytes)?;
                    let mut m = mov(bytes, &reg, v);
                    m.guard = i.guard.clone();
                    m.line = i.line;
                    out.push(Statement::Inst(m));
                }
            }
            Statement::Inst(i) if std::ptr::eq(i, call) => {
                if let Some(g) = &i.guard {
                    out.push(Statement::Inst(Instruction {
                        id: InstId(0),
                        guard: Some(Guard {
                            negated: !g.negated,
                            reg: g.reg.clone(),
                        }),
                        opcode: "bra".into(),
                        modifiers: Vec::new(),
                        operands: vec![Operand::Symbol(end_label.clone())],
                        line: i.line,
                    }));
                }
                let mut depth = 0usize;
                for b in &c.body {
                    match b {
                        Statement::BlockStart(_) => depth += 1,
                        Statement::BlockEnd(_) => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    let nested = depth > 0;
                    if let Some(s) =
                        copy_statement(b, nested, c, names, labels, &end_label, &mut word)?
                    {
                        out.extend(s);
                    }
                }
                out.push(Statement::Label(end_label.clone(), SrcLine(0)));
            }
            Statement::Inst(i)
                if i.decode().is_param_load()
                    && matches!(i.operands.get(1), Some(Operand::Addr { base, .. }) if Some(base.as_str()) == ret_name) =>
            {
                let Some(Operand::Addr { offset, .. }) = i.operands.get(1) else {
                    continue;
                };
                let bytes = width(i).ok_or_else(|| unsupported(format!("the width of {i}")))?;
                for (e, v) in elements(i.operands.first()).into_iter().enumerate() {
                    let Operand::Reg(to) = v else {
                        continue; // a `_` sink
                    };
                    let at = offset + i64::from(bytes) * e as i64;
                    let reg = word(names, RET, at, bytes)?;
                    let mut m = mov(bytes, &to, Operand::Reg(reg));
                    m.guard = i.guard.clone();
                    m.line = i.line;
                    out.push(Statement::Inst(m));
                }
            }
            other => out.push(other.clone()),
        }
    }
    Ok(out)
}

/// One statement of the callee's body as it appears in a copy (`None`: dropped).
fn copy_statement(
    s: &Statement,
    nested: bool,
    c: &Callee,
    names: &mut Copies,
    labels: &str,
    end_label: &str,
    word: &mut impl FnMut(&mut Copies, usize, i64, u32) -> Result<String, InlineError>,
) -> Result<Option<Vec<Statement>>, InlineError> {
    const RET: usize = usize::MAX;
    let unsupported = |why: String| InlineError::Unsupported {
        function: c.name.clone(),
        why,
    };
    let label = |l: &str| format!("{labels}{}", l.trim_start_matches('$'));
    let prefix = names.prefix.clone();
    let reg = |r: &str| {
        if c.regs.is_declared(r) {
            renamed(&prefix, r)
        } else {
            r.to_string()
        }
    };
    Ok(Some(match s {
        // A nested block's registers (inline assembly's) are declared in that block, renamed.
        Statement::Reg(d) if nested => vec![Statement::Reg(renamed_decl(&prefix, d))],
        Statement::Reg(_) | Statement::Loc(_) => return Ok(None),
        Statement::Label(l, line) => vec![Statement::Label(label(l), *line)],
        Statement::Inst(i) => {
            let mut i = i.clone();
            i.id = InstId(0);
            if let Some(g) = &mut i.guard {
                g.reg = reg(&g.reg);
            }
            let param_addr = |o: Option<&Operand>| match o {
                Some(Operand::Addr { base, offset }) => Some((base.clone(), *offset)),
                _ => None,
            };
            let op = i.decode();
            if op.control() == Some(Control::Ret) {
                i.opcode = "bra".into();
                i.modifiers.clear();
                i.operands = vec![Operand::Symbol(end_label.to_string())];
                return Ok(Some(vec![Statement::Inst(i)]));
            }
            if op.is_param_load() {
                if let Some((base, offset)) = param_addr(i.operands.get(1)) {
                    if let Some(&param) = c.params.get(&base) {
                        let bytes =
                            width(&i).ok_or_else(|| unsupported(format!("the width of {i}")))?;
                        let mut code = Vec::new();
                        for (e, v) in elements(i.operands.first()).into_iter().enumerate() {
                            let Operand::Reg(to) = v else { continue };
                            let from =
                                word(names, param, offset + i64::from(bytes) * e as i64, bytes)?;
                            let mut m = mov(bytes, &reg(&to), Operand::Reg(from));
                            m.guard = i.guard.clone();
                            code.push(Statement::Inst(m));
                        }
                        return Ok(Some(code));
                    }
                }
            }
            if op.is_param_store() {
                if let Some((base, offset)) = param_addr(i.operands.first()) {
                    if Some(&base) == c.ret.as_ref() {
                        let bytes =
                            width(&i).ok_or_else(|| unsupported(format!("the width of {i}")))?;
                        let mut code = Vec::new();
                        for (e, v) in elements(i.operands.get(1)).into_iter().enumerate() {
                            let to = word(names, RET, offset + i64::from(bytes) * e as i64, bytes)?;
                            let mut m = mov(bytes, &to, rename_operand(&v, &reg, &label));
                            m.guard = i.guard.clone();
                            code.push(Statement::Inst(m));
                        }
                        return Ok(Some(code));
                    }
                }
            }
            i.operands = i
                .operands
                .iter()
                .map(|o| rename_operand(o, &reg, &label))
                .collect();
            vec![Statement::Inst(i)]
        }
        other => vec![other.clone()],
    }))
}

/// `o` with the callee's registers and labels renamed.
fn rename_operand(
    o: &Operand,
    reg: &impl Fn(&str) -> String,
    label: &impl Fn(&str) -> String,
) -> Operand {
    match o {
        Operand::Reg(r) => Operand::Reg(reg(r)),
        Operand::Addr { base, offset } => Operand::Addr {
            base: reg(base),
            offset: *offset,
        },
        Operand::Vector(items) => Operand::Vector(
            items
                .iter()
                .map(|x| rename_operand(x, reg, label))
                .collect(),
        ),
        Operand::Not(x) => Operand::Not(Box::new(rename_operand(x, reg, label))),
        Operand::Symbol(s) if s.starts_with('$') => Operand::Symbol(label(s)),
        Operand::Symbol(s) => Operand::Symbol(reg(s)),
        other => other.clone(),
    }
}

/// How many `call`s in `module` name `function`.
fn calls_of(module: &Module, function: &str) -> usize {
    module
        .functions()
        .flat_map(|f| f.instructions())
        .filter(|i| called(i) == Some(function))
        .count()
}

/// Removes the chosen functions no call names any more; returns their names.
fn remove_uncalled(module: &mut Module, functions: &[&str]) -> Vec<String> {
    let mut removed = Vec::new();
    // Removing one may leave another uncalled (a callee's own calls go with it).
    loop {
        let dead = functions
            .iter()
            .find(|f| module.function(f).is_some() && calls_of(module, f) == 0);
        let Some(&dead) = dead else {
            return removed;
        };
        module
            .items
            .retain(|i| !matches!(i, Item::Function(f) if f.name == dead));
        removed.push(dead.to_string());
    }
}

#[cfg(test)]
mod tests;
