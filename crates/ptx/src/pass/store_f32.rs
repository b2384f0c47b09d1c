//! Storage precision: a kernel's f64 buffer kept in f32 on the device. Its loads read an f32 and
//! widen it, its stores narrow the value and write an f32; the arithmetic stays f64. On GPUs
//! whose FP64 rate is half the FP32 rate a memory-bound kernel gains from the halved bytes what
//! demoting its arithmetic would not give.
//!
//! **In-place half width.** The buffer keeps its allocation (n × 8 bytes) and its pointer P (the
//! kernel parameter's value, so launches do not change); element i lives as an f32 at P + 4·i,
//! in the first half. An access at a = P + off is rewritten to P + off/2 =
//! `((a − B) >> 1) + B`, with B the base register of the same *chain* as the access's address
//! (see below); an immediate offset `[a+imm]` becomes `[t+imm/2]`.
//! `ld.*.f64 d, [a]` becomes `ld.*.f32 s, [t]; cvt.f64.f32 d, s` and `st.*.f64 [a], v` becomes
//! `cvt.rn.f32.f64 s, v; st.*.f32 [t], s` (an f64 immediate is rounded to f32 here); `.v2`/`.v4`
//! accesses convert per lane. Every other modifier (`.nc`, cache hints, `.volatile`), the guard
//! and the `.loc` of the access are kept: inserted code carries the access's guard and sits
//! under its `.loc` ([`crate::rewrite`]), and the access keeps its instruction id. Pointer values
//! themselves never change; only the addresses of the buffer's accesses do.
//!
//! **Provenance.** A register is *derived from P* (a pointer into the buffer) at a use when every
//! definition reaching that use ([`crate::graph`]) is one of: `ld.param.u64`/`.b64` of P; a
//! `cvta.to.global` (chain *global*) or `cvta.global` (chain *generic*) of a derived register;
//! a `mov` of one; an integer `add` with exactly one derived operand, a `sub` of a non-derived
//! value from a derived one, an integer `mad` whose addend alone is derived (the products of
//! `mul.wide`/`mad.wide` are offsets). Its chain says which space its value lives in: generic
//! straight from the parameter, global after `cvta.to.global`. The pass loads P once more at the
//! kernel's entry (`ld.param.u64 B, [P]`, and `cvta.to.global.u64 Bg, B` when a global chain is
//! accessed) into fresh registers, and each access uses the base of its address's chain, so the
//! subtraction is exact in either space.
//!
//! **Refusals.** A request is refused as a whole, with a one-line reason, never rewritten in
//! part, when: P is not a pointer-sized `.u64`/`.b64` parameter of a kernel; P is read other
//! than by `ld.param.u64/.b64 r, [P]`; an access through a derived address is not an f64 `ld`/`st`
//! in global or generic space (atomics, `ld.u64`, byte loads, `prefetch`); an access has an odd
//! immediate offset; a derived register escapes (stored to memory, passed to a `.func`, used by
//! any instruction but the derivations above, an f64 access or a comparison); or a register
//! mixes P with another value (a select between two buffers, a join of two pointers).
//! Comparisons (`setp`) of derived registers are allowed: a predicate cannot carry an address,
//! and since pointer values are unchanged the comparison means what it meant.

use super::{Outcome, Pass, PassError, Report};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::demote::f64_imm_to_f32;
use crate::entry::EntryParam;
use crate::graph::Graph;
use crate::model::*;
use crate::op::{Arith, OpKind, Space, ValueType};
use crate::regs::RegId;
use crate::rewrite::{self, Guarding, Rewriter};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One buffer to keep in f32: a kernel and the name of its pointer parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StoreRequest {
    /// The `.entry`'s (possibly mangled) name.
    pub function: String,
    /// The PTX name of the pointer parameter (`k_param_0`).
    pub param: String,
}

impl std::fmt::Display for StoreRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.function, self.param)
    }
}

/// A request done: how many accesses were rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredBuffer {
    /// The request.
    pub request: StoreRequest,
    /// f64 loads (scalar or vector instructions) rewritten to f32 loads.
    pub loads: u32,
    /// f64 stores rewritten to f32 stores.
    pub stores: u32,
}

/// A request refused, and why (one line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreRefusal {
    /// The request.
    pub request: StoreRequest,
    /// Why (`_Z3getPKdi receives the pointer (a call)`).
    pub reason: String,
}

impl std::fmt::Display for StoreRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} parameter {}: {}",
            self.request.function, self.request.param, self.reason
        )
    }
}

/// What [`store_f32`] did: the requests done and the requests refused, in request order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StoreReport {
    /// Requests rewritten.
    pub stored: Vec<StoredBuffer>,
    /// Requests refused (left unchanged).
    pub refused: Vec<StoreRefusal>,
}

impl StoreReport {
    /// Loads rewritten over all requests.
    pub fn loads(&self) -> u32 {
        self.stored.iter().map(|s| s.loads).sum()
    }

    /// Stores rewritten over all requests.
    pub fn stores(&self) -> u32 {
        self.stored.iter().map(|s| s.stores).sum()
    }
}

/// The rewritten module and its report.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The module with the accepted requests rewritten (the input for none).
    pub module: Module,
    /// What was done and refused.
    pub report: StoreReport,
}

/// [`store_f32`] as a [`Pass`], for pipelines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreF32 {
    /// The buffers to keep in f32.
    pub requests: Vec<StoreRequest>,
}

impl Pass for StoreF32 {
    fn name(&self) -> String {
        "store_f32".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let s = store_f32(module, &self.requests)?;
        let summary = format!(
            "kept {} buffers in f32: {} loads and {} stores rewritten; {} refused",
            s.report.stored.len(),
            s.report.loads(),
            s.report.stores(),
            s.report.refused.len()
        );
        let notes = s.report.refused.iter().map(|r| r.to_string()).collect();
        Ok(Outcome {
            module: s.module,
            report: Report::new("store_f32", summary, notes, s.report),
        })
    }
}

fn pass_error(message: String) -> PassError {
    PassError {
        pass: "store_f32".into(),
        message,
    }
}

/// Keeps each requested buffer in f32 (see the module docs). Refused requests are reported and
/// leave their kernel unchanged; an `Err` means the rewrite itself failed (a bug).
pub fn store_f32(module: &Module, requests: &[StoreRequest]) -> Result<Stored, PassError> {
    let mut report = StoreReport::default();
    // Requests grouped per kernel, in first-request order, duplicates dropped.
    let mut per_function: Vec<(&str, Vec<&StoreRequest>)> = Vec::new();
    for r in requests {
        match per_function.iter_mut().find(|(f, _)| *f == r.function) {
            Some((_, list)) if list.contains(&r) => {}
            Some((_, list)) => list.push(r),
            None => per_function.push((&r.function, vec![r])),
        }
    }
    let mut out = module.clone();
    for (function, list) in per_function {
        let Some(f) = module
            .functions()
            .find(|f| f.name == function && f.body.is_some())
        else {
            for r in list {
                report.refused.push(StoreRefusal {
                    request: r.clone(),
                    reason: "no function with a body of that name in the module".into(),
                });
            }
            continue;
        };
        let d = Decoded::of(f);
        let cfg = Cfg::build(&d);
        let g = Graph::of(&d, &cfg);
        let mut plans: Vec<(&StoreRequest, Vec<Access>)> = Vec::new();
        for r in list {
            let claimed = |a: &Access| {
                plans
                    .iter()
                    .find(|(_, done)| done.iter().any(|b| b.k == a.k))
                    .map(|(other, _)| other.param.clone())
            };
            let analysed = analyse(&d, &g, &r.param).and_then(|accesses| {
                // An address computed from two requested pointers (`p + (q - r)`) would be
                // rewritten twice, once per base.
                match accesses.iter().find_map(|a| Some((a.k, claimed(a)?))) {
                    Some((k, other)) => Err(format!(
                        "`{}` addresses through {other} as well",
                        one_line(d.insts[k])
                    )),
                    None => Ok(accesses),
                }
            });
            match analysed {
                Ok(accesses) => plans.push((r, accesses)),
                Err(reason) => report.refused.push(StoreRefusal {
                    request: r.clone(),
                    reason,
                }),
            }
        }
        if plans.is_empty() {
            continue;
        }
        for (r, accesses) in &plans {
            let (loads, stores) =
                accesses.iter().fold(
                    (0, 0),
                    |(l, s), a| {
                        if a.store {
                            (l, s + 1)
                        } else {
                            (l + 1, s)
                        }
                    },
                );
            report.stored.push(StoredBuffer {
                request: (*r).clone(),
                loads,
                stores,
            });
        }
        rewrite_function(&mut out, &d, &plans)?;
    }
    Ok(Stored {
        module: out,
        report,
    })
}

/// Which space a derived register's value is an address in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    /// Straight from the parameter (or back through `cvta.global`): a generic address.
    Generic,
    /// Through `cvta.to.global`: a global address.
    Global,
}

/// What a value is, to the provenance dataflow (a lattice: `Unknown` below, `Mixed` on top).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prov {
    /// No reaching definition evaluated yet.
    Unknown,
    /// Not derived from P.
    Plain,
    /// Derived from P, in that chain.
    Ptr(Chain),
    /// P on some paths and something else on others (or two chains).
    Mixed,
}

fn join(a: Prov, b: Prov) -> Prov {
    match (a, b) {
        (Prov::Unknown, x) | (x, Prov::Unknown) => x,
        (x, y) if x == y => x,
        _ => Prov::Mixed,
    }
}

/// One access of the buffer to rewrite.
#[derive(Debug, Clone)]
struct Access {
    /// Instruction index in the function.
    k: usize,
    /// The operand holding the address.
    addr: usize,
    /// The chain of the address's base register.
    chain: Chain,
    /// A store (else a load).
    store: bool,
}

/// The provenance of every instruction's result, and of each register at each use.
struct Provenance<'a> {
    d: &'a Decoded<'a>,
    /// Per instruction: the reaching definitions of each register it reads, as (register,
    /// instruction index); `None` for a register that may be read before any write.
    incoming: Vec<Vec<(RegId, Option<usize>)>>,
    /// Per instruction: what its (single) result is.
    result: Vec<Prov>,
}

impl<'a> Provenance<'a> {
    fn of(d: &'a Decoded<'a>, g: &Graph, param: &str) -> Provenance<'a> {
        let mut incoming: Vec<Vec<(RegId, Option<usize>)>> = vec![Vec::new(); d.len()];
        for e in &g.edges {
            if let (Some(u), Some(def)) = (g.index_of(e.user), g.index_of(e.def)) {
                incoming[u].push((e.reg, Some(def)));
            }
        }
        for (k, list) in incoming.iter_mut().enumerate() {
            for &r in d.uses(k) {
                if g.inputs.contains(&r) {
                    list.push((r, None));
                }
            }
        }
        let mut p = Provenance {
            d,
            incoming,
            result: vec![Prov::Unknown; d.len()],
        };
        // To a fixed point; each result only climbs the lattice (at most three steps), so the
        // bound is never reached on a well-formed function.
        for _ in 0..3 * d.len() + 3 {
            let mut changed = false;
            for k in 0..d.len() {
                let v = p.transfer(k, param);
                if v != p.result[k] {
                    p.result[k] = v;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        p
    }

    /// What register `r` holds where instruction `k` reads it.
    fn at_use(&self, k: usize, r: RegId) -> Prov {
        self.incoming[k]
            .iter()
            .filter(|(reg, _)| *reg == r)
            .fold(Prov::Unknown, |acc, (_, def)| {
                join(acc, def.map_or(Prov::Plain, |j| self.result[j]))
            })
    }

    /// What operand `j` of instruction `k` holds (an immediate or anything but a register is
    /// not derived).
    fn operand(&self, k: usize, j: usize) -> Prov {
        self.d
            .operand_reg(k, j)
            .map_or(Prov::Plain, |r| self.at_use(k, r))
    }

    fn transfer(&self, k: usize, param: &str) -> Prov {
        let inst = self.d.insts[k];
        let op = &self.d.ops[k];
        if self.d.defs(k).len() != 1 {
            return Prov::Plain;
        }
        let o = |j| self.operand(k, j);
        match op.kind {
            OpKind::Load(Space::Param) if reads_param(inst, param) => Prov::Ptr(Chain::Generic),
            OpKind::Cvta if inst.space() == "global" => match o(1) {
                Prov::Ptr(_) if inst.has_mod("to") => Prov::Ptr(Chain::Global),
                Prov::Ptr(_) => Prov::Ptr(Chain::Generic),
                other => other,
            },
            OpKind::Move { reinterpret: false } => o(1),
            OpKind::Arith(Arith::Add) if !op.is_float() => match (o(1), o(2)) {
                (Prov::Mixed, _) | (_, Prov::Mixed) | (Prov::Ptr(_), Prov::Ptr(_)) => Prov::Mixed,
                (Prov::Unknown, _) | (_, Prov::Unknown) => Prov::Unknown,
                (Prov::Ptr(c), _) | (_, Prov::Ptr(c)) => Prov::Ptr(c),
                _ => Prov::Plain,
            },
            OpKind::Arith(Arith::Sub) if !op.is_float() => match (o(1), o(2)) {
                (Prov::Mixed, _) | (_, Prov::Mixed) => Prov::Mixed,
                (Prov::Unknown, _) | (_, Prov::Unknown) => Prov::Unknown,
                (Prov::Ptr(c), Prov::Plain) => Prov::Ptr(c),
                // P − x or a pointer difference: not an address (an escape, refused by the scan).
                _ => Prov::Plain,
            },
            OpKind::Arith(Arith::Mad) => match (o(1), o(2), o(3)) {
                (Prov::Mixed, _, _) | (_, Prov::Mixed, _) | (_, _, Prov::Mixed) => Prov::Mixed,
                (Prov::Unknown, _, _) | (_, Prov::Unknown, _) | (_, _, Prov::Unknown) => {
                    Prov::Unknown
                }
                (Prov::Plain, Prov::Plain, Prov::Ptr(c)) => Prov::Ptr(c),
                _ => Prov::Plain,
            },
            _ => Prov::Plain,
        }
    }
}

/// `ld.param.* r, [param]`.
fn reads_param(inst: &Instruction, param: &str) -> bool {
    matches!(inst.operands.get(1), Some(Operand::Addr { base, .. }) if base == param)
}

/// Where instruction `k` reads `param` by name, if it does (as an address base or a symbol).
fn names_param(inst: &Instruction, param: &str) -> bool {
    fn names(o: &Operand, param: &str) -> bool {
        match o {
            Operand::Addr { base, .. } => base == param,
            Operand::Symbol(s) => s == param,
            Operand::Vector(v) | Operand::List(v) => v.iter().any(|o| names(o, param)),
            Operand::Not(o) => names(o, param),
            Operand::Raw(r) => r.contains(param),
            _ => false,
        }
    }
    inst.operands.iter().any(|o| names(o, param))
}

/// The accesses of `param`'s buffer in the decoded kernel, or why the request is refused.
fn analyse(d: &Decoded, g: &Graph, param: &str) -> Result<Vec<Access>, String> {
    let f = d.function;
    if f.kind != FunctionKind::Entry {
        return Err("a device function (.func): only kernel parameters can be kept in f32".into());
    }
    let p = f
        .params
        .iter()
        .find(|p| p.name == param)
        .ok_or_else(|| format!("no parameter named {param}"))?;
    let e = EntryParam::of(p);
    if !matches!(e.ptx_type.as_str(), "u64" | "b64") || !p.dims.is_empty() {
        return Err(format!(
            "parameter {param} is .{}{}, not a pointer (.u64 or .b64)",
            e.ptx_type,
            if p.dims.is_empty() { "" } else { " array" }
        ));
    }
    let prov = Provenance::of(d, g, param);
    let text = |k: usize| one_line(d.insts[k]);
    let mut accesses = Vec::new();
    for k in 0..d.len() {
        let inst = d.insts[k];
        let op = &d.ops[k];
        if names_param(inst, param) {
            let as_pointer = matches!(op.kind, OpKind::Load(Space::Param))
                && matches!(op.ty, Some(ValueType::U64 | ValueType::B64))
                && op.vector == 1
                && matches!(inst.operands.get(1), Some(Operand::Addr { offset: 0, .. }))
                && matches!(inst.operands.first(), Some(Operand::Reg(_)));
            if !as_pointer {
                return Err(format!(
                    "`{}` reads {param} other than as a pointer",
                    text(k)
                ));
            }
        }
        // Every register read here that may hold P.
        let mut derived_uses: Vec<(RegId, Chain)> = Vec::new();
        for &r in d.uses(k) {
            match prov.at_use(k, r) {
                Prov::Ptr(c) => derived_uses.push((r, c)),
                Prov::Mixed => {
                    return Err(format!(
                        "{} holds {param} on some paths and another value on others (at `{}`)",
                        d.regs.name(r),
                        text(k)
                    ))
                }
                _ => {}
            }
        }
        if derived_uses.is_empty() {
            continue;
        }
        // The address operand, when its base is a derived register.
        let addr = inst.operands.iter().enumerate().find_map(|(j, o)| match o {
            Operand::Addr { base, offset } => derived_uses
                .iter()
                .find(|(r, _)| d.regs.lookup(base) == Some(*r))
                .map(|&(r, c)| (j, r, c, *offset)),
            _ => None,
        });
        // Derived registers read other than as that address's base (a pointer stored).
        let others_derived = inst.operands.iter().enumerate().any(|(j, o)| {
            addr.is_none_or(|(aj, _, _, _)| aj != j)
                && operand_regs(o).iter().any(|n| {
                    derived_uses
                        .iter()
                        .any(|(r, _)| d.regs.lookup(n) == Some(*r))
                })
        });
        if let Some((j, _, chain, offset)) = addr {
            let store = matches!(op.kind, OpKind::Store(_));
            // Texture and surface accesses have spaces of their own, so this is `ld`, `ldu`, `st`.
            let f64_access = matches!(op.kind, OpKind::Load(s) | OpKind::Store(s)
                    if matches!(s, Space::Global | Space::Generic))
                && op.ty == Some(ValueType::F64);
            if !f64_access {
                let what = match op.kind {
                    OpKind::Atom(_) | OpKind::Red(_) => "an atomic",
                    OpKind::Load(_) | OpKind::Store(_) => {
                        "not an f64 load or store of global memory"
                    }
                    _ => "not a load or store",
                };
                return Err(format!("`{}` accesses the buffer: {what}", text(k)));
            }
            if others_derived {
                return Err(format!(
                    "`{}` stores a pointer into the buffer to memory",
                    text(k)
                ));
            }
            if offset % 2 != 0 {
                return Err(format!("`{}` has an odd offset {offset}", text(k)));
            }
            accesses.push(Access {
                k,
                addr: j,
                chain,
                store,
            });
            continue;
        }
        // A derivation the dataflow followed (its result is derived) or a comparison.
        let derives = matches!(prov.result[k], Prov::Ptr(_));
        if derives || matches!(op.kind, OpKind::Compare(_)) {
            continue;
        }
        let (r, _) = derived_uses[0];
        let name = d.regs.name(r);
        return Err(match op.kind {
            OpKind::Store(Space::Param) => match callee_after(d, k) {
                Some(callee) => format!("{name} is passed to {callee} (a call)"),
                None => format!("{name} is stored to a parameter (`{}`)", text(k)),
            },
            OpKind::Store(_) | OpKind::Atom(_) | OpKind::Red(_) => {
                format!("{name} is stored to memory (`{}`)", text(k))
            }
            OpKind::Call => format!("{name} is passed to a call (`{}`)", text(k)),
            OpKind::Select => format!("`{}` selects between {name} and another value", text(k)),
            OpKind::Arith(Arith::Add) => format!("`{}` adds two pointers", text(k)),
            _ => format!("{name} escapes into `{}`", text(k)),
        });
    }
    Ok(accesses)
}

/// An instruction as a refusal quotes it: printed, its whitespace one space.
fn one_line(inst: &Instruction) -> String {
    inst.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The register names an operand reads.
fn operand_regs(o: &Operand) -> Vec<&str> {
    match o {
        Operand::Reg(r) => vec![r.as_str()],
        Operand::Addr { base, .. } => vec![base.as_str()],
        Operand::Vector(v) | Operand::List(v) => v.iter().flat_map(operand_regs).collect(),
        Operand::Not(o) => operand_regs(o),
        _ => Vec::new(),
    }
}

/// The callee of the first call at or after instruction `k` (a `st.param` stages its argument).
fn callee_after(d: &Decoded, k: usize) -> Option<String> {
    (k..d.len())
        .find(|&j| d.ops[j].kind == OpKind::Call)
        .and_then(|j| {
            d.insts[j].operands.iter().find_map(|o| match o {
                Operand::Symbol(s) => Some(s.clone()),
                _ => None,
            })
        })
}

/// Rewrites the accepted requests of one kernel in `out` (whose function still equals `d`'s).
fn rewrite_function(
    out: &mut Module,
    d: &Decoded,
    plans: &[(&StoreRequest, Vec<Access>)],
) -> Result<(), PassError> {
    let f = d.function;
    let err = |e: rewrite::RewriteError| pass_error(format!("{}: {e}", f.name));
    let mut rw = Rewriter::new(out, &f.name).map_err(err)?;
    let Some(first) = d.insts.first() else {
        return Ok(());
    };
    // New forms of the accesses, by id, applied after the insertions.
    let mut changed: HashMap<InstId, Instruction> = HashMap::new();
    // The bases of each request: generic, and global when a global chain is accessed. They run
    // unconditionally at the kernel's entry, before its first instruction (inserted first, so
    // before anything else inserted there).
    let mut entry = Vec::new();
    let mut bases = Vec::with_capacity(plans.len());
    for (r, accesses) in plans {
        let generic = rw.reg("b64").map_err(err)?;
        entry.push(rewrite::instruction(
            "ld",
            &["param", "u64"],
            vec![
                Operand::Reg(generic.clone()),
                Operand::Addr {
                    base: r.param.clone(),
                    offset: 0,
                },
            ],
        ));
        let global = if accesses.iter().any(|a| a.chain == Chain::Global) {
            let g = rw.reg("b64").map_err(err)?;
            entry.push(rewrite::instruction(
                "cvta",
                &["to", "global", "u64"],
                vec![Operand::Reg(g.clone()), Operand::Reg(generic.clone())],
            ));
            Some(g)
        } else {
            None
        };
        bases.push((generic, global));
    }
    rw.insert_before(first.id, entry, Guarding::Ignore)
        .map_err(err)?;
    for ((_, accesses), (generic, global)) in plans.iter().zip(&bases) {
        for a in accesses {
            let inst = d.insts[a.k];
            let base_reg = match (a.chain, global) {
                (Chain::Global, Some(g)) => g.clone(),
                _ => generic.clone(),
            };
            let (Some(Operand::Addr { base, offset }), true) =
                (inst.operands.get(a.addr), a.addr == usize::from(!a.store))
            else {
                return Err(pass_error(format!(
                    "{}: `{inst}` has no address where a load or store has it",
                    f.name
                )));
            };
            let t = rw.reg("b64").map_err(err)?;
            let reg = |n: &str| Operand::Reg(n.to_string());
            let mut before = vec![
                rewrite::instruction("sub", &["s64"], vec![reg(&t), reg(base), reg(&base_reg)]),
                rewrite::instruction("shr", &["s64"], vec![reg(&t), reg(&t), rewrite::int(1)]),
                rewrite::instruction("add", &["s64"], vec![reg(&t), reg(&t), reg(&base_reg)]),
            ];
            let mut after = Vec::new();
            let mut new = inst.clone();
            for m in new.modifiers.iter_mut().filter(|m| *m == "f64") {
                *m = "f32".into();
            }
            new.operands[a.addr] = Operand::Addr {
                base: t.clone(),
                offset: offset / 2,
            };
            let value = usize::from(a.store);
            let lanes = match &inst.operands[value] {
                Operand::Vector(v) => v.clone(),
                o => vec![o.clone()],
            };
            let mut narrow = Vec::with_capacity(lanes.len());
            for lane in lanes {
                narrow.push(match lane {
                    Operand::Reg(x) => {
                        let s = rw.reg("f32").map_err(err)?;
                        if a.store {
                            before.push(rewrite::instruction(
                                "cvt",
                                &["rn", "f32", "f64"],
                                vec![reg(&s), reg(&x)],
                            ));
                        } else {
                            after.push(rewrite::instruction(
                                "cvt",
                                &["f64", "f32"],
                                vec![reg(&x), reg(&s)],
                            ));
                        }
                        reg(&s)
                    }
                    Operand::Imm(Imm::F64(bits)) if a.store => {
                        Operand::Imm(Imm::F32(f64_imm_to_f32(bits)))
                    }
                    // `_`: a lane the load discards.
                    Operand::Symbol(s) if !a.store && s == "_" => Operand::Symbol(s),
                    other => {
                        return Err(pass_error(format!(
                            "{}: `{inst}`: unexpected value operand {other:?}",
                            f.name
                        )))
                    }
                });
            }
            new.operands[value] = match &inst.operands[value] {
                Operand::Vector(_) => Operand::Vector(narrow),
                _ => narrow.remove(0),
            };
            rw.insert_before(inst.id, before, Guarding::Keep)
                .map_err(err)?;
            if !after.is_empty() {
                rw.insert_after(inst.id, after, Guarding::Keep)
                    .map_err(err)?;
            }
            changed.insert(inst.id, new);
        }
    }
    rw.apply(out).map_err(err)?;
    let body = out
        .functions_mut()
        .find(|g| g.name == f.name && g.body.is_some())
        .and_then(|g| g.body.as_mut())
        .ok_or_else(|| pass_error(format!("{}: lost its body", f.name)))?;
    for s in body.iter_mut() {
        if let Statement::Inst(i) = s {
            if let Some(new) = changed.remove(&i.id) {
                *i = new;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "store_f32_tests.rs"]
mod tests;
