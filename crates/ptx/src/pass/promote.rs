//! Promotion: a chosen set of f32 instructions computed in f64, PTX in, PTX out. The mirror
//! image of [`super::demote`], with its conventions: instructions are addressed by [`Site`]
//! (or by [`InstId`] of the module given), inserted instructions get fresh ids, `.loc`s are
//! kept, the input is never changed, and the empty set gives it back unchanged.
//!
//! **Why it gains accuracy.** A single `+ − × ÷ √` of f32 operands computed in f64 and rounded
//! once to f32 equals the IEEE f32 result: f64 carries 53 ≥ 2·24 + 2 bits, so rounding the
//! exact result first to f64 and then to f32 never lands differently from rounding it to f32
//! directly (double rounding is innocuous at that margin; subnormal f32 results have fewer bits
//! still, and f32 operands never overflow or underflow f64). Promoting one operation alone
//! therefore changes nothing; what gains accuracy is a *chain* of promoted operations, whose
//! intermediates stay in f64 and are rounded to f32 once, where the value leaves the chain.
//! `fma` is the exception: the f64 fma of f32 operands rounds the exact `a·b + c` to f64 and
//! the exit conversion rounds again, which differs from the f32 fma when the exact value lies
//! within half an f64 ulp of an f32 midpoint (then off by one f32 ulp; the tests build such a
//! case).
//!
//! **Eligible** (outside math-library code): f32 `add sub mul fma mad div rcp sqrt rsqrt neg
//! abs min max`, `setp.*.f32` (the comparison is then made in f64), `selp.f32`, `mov.f32` and
//! `cvt` with an f32 side and an integer or f64 other side (and `cvt.rni/rzi/rmi/rpi.f32.f32`,
//! rounding to an integer). Not eligible, and terminating the promoted region: loads, stores,
//! atomics, calls, parameter moves, bit reinterpretation (`mov.b32`, `testp`, `copysign`, bit
//! operations), the hardware special functions `ex2 lg2 sin cos tanh .approx.f32` (PTX has no
//! f64 form), directed roundings (`.rz .rm .rp`: the direction is the point, and the value would
//! leave the chain rounded to nearest), modifiers without an f64 form (`.NaN`, `.xorsign`, ...),
//! and math-library code: a `.func` of libdevice or CUDA's `__internal_*`, and code inlined from
//! a math function (its `.loc` says so), whose algorithms rely on f32 rounding (`expf` rounds to
//! an integer by adding 1.5·2^23). Code without line information cannot be told from the user's.
//! Known non-eligible f32 instructions other than memory, calls and bit operations are listed in
//! the report's notes, one per line and opcode.
//!
//! **The f64 forms.** The type `.f32` becomes `.f64`; `.rn` is kept; `.ftz` is dropped (f64 has
//! none: subnormal f32 values are kept, as IEEE does); `div.approx`/`div.full` become `div.rn`,
//! `rcp.approx` `rcp.rn`, `sqrt.approx` `sqrt.rn`; `rsqrt.approx` becomes `sqrt.rn.f64` then
//! `rcp.rn.f64` of it (PTX's `rsqrt.approx.f64` is not correctly rounded; two correctly rounded
//! f64 steps are within 2^-52 relative of 1/√x, far below half an f32 ulp, so the value leaves
//! the chain correctly rounded but for the rare 1/√x within 2^-52 of an f32 midpoint); `mad`
//! becomes `fma` (`.rn` added where `div`, `rcp`, `sqrt` and `fma` had no rounding). `.sat`
//! (clamp to [0, 1], NaN → 0) becomes `max.f64` with 0 then `min.f64` with 1 after the f64 form
//! (PTX's `max` returns the non-NaN operand, so NaN still gives 0; the sign of a zero result may
//! differ). `cvt.rn.f32.f64` and `cvt.f64.f32` become `mov.f64` (the f64 value is kept rather
//! than rounded; `cvt.f64.f32` reads the twin), `cvt.rn.f32.s32` `cvt.rn.f64.s32`,
//! `cvt.rzi.s32.f32` `cvt.rzi.s32.f64` (its `.sat` kept), `cvt.rmi.f32.f32` `cvt.rmi.f64.f64`.
//! f32 immediates are widened exactly; an f64 literal in an f32 instruction is first rounded
//! to f32, as the f32 instruction used it; integer immediates are left alone. The extra
//! instructions (`rcp`, `max`, `min`) carry the guard and follow the one they complete; the
//! original id stays on the first.
//!
//! **The rewrite works per register** (`pass/twins.rs`, shared with demotion): each f32
//! register a promoted instruction reads or writes gets an f64 twin (one `.reg .f64 %mpd<N>;`
//! declaration); promoted instructions read and write twins; `cvt.f64.f32` follows an f32 def
//! whose register a promoted instruction reads, `cvt.rn.f32.f64` a promoted def whose register
//! anything not promoted reads (a store, a call, an f32 instruction). `.func` bodies are
//! rewritten like kernels, under their own name; values cross calls in f32.
//!
//! **Sets**: [`PromoteSet::all`] promotes every eligible instruction; [`PromoteSet::sites`] and
//! [`PromoteSet::ids`] name some. Sites naming no instruction and requests for ineligible ones
//! are reported, not errors.

use super::twins::{self, Counts, Direction, Edited, TwinPlan};
use super::{Outcome, Pass, PassError, Report};
use crate::compare::inlined_from_library;
use crate::decode::Decoded;
use crate::model::*;
use crate::op::{Arith, OpKind, Rounding, Space, ValueType};
use crate::promotion::is_library;
use crate::site::{self, Site};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

#[cfg(test)]
mod tests;

/// The instructions to promote: all eligible ones, or those named by sites or ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromoteSet {
    /// Every eligible instruction of every function; the lists are then ignored.
    #[serde(default)]
    pub all: bool,
    /// Instructions named by site.
    #[serde(default)]
    pub sites: Vec<Site>,
    /// Instructions named by id (of the module passed to [`promote`]).
    #[serde(default)]
    pub ids: Vec<InstId>,
}

impl PromoteSet {
    /// Nothing: [`promote`] returns the module unchanged.
    pub fn empty() -> PromoteSet {
        PromoteSet::default()
    }

    /// Every eligible instruction.
    pub fn all() -> PromoteSet {
        PromoteSet {
            all: true,
            ..PromoteSet::default()
        }
    }

    /// The instructions at these sites.
    pub fn sites(sites: impl IntoIterator<Item = Site>) -> PromoteSet {
        PromoteSet {
            sites: sites.into_iter().collect(),
            ..PromoteSet::default()
        }
    }

    /// The instructions with these ids.
    pub fn ids(ids: impl IntoIterator<Item = InstId>) -> PromoteSet {
        PromoteSet {
            ids: ids.into_iter().collect(),
            ..PromoteSet::default()
        }
    }
}

/// One f32 instruction of a function, eligible or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// Its id in the module it was listed from.
    pub id: InstId,
    /// Its address.
    pub site: Site,
    /// The instruction's full opcode (`fma.rn.f32`).
    pub opcode: String,
    /// Why it is not eligible (`a load`, `math-library code`), `None` when eligible.
    pub reason: Option<String>,
}

/// What [`promote`] did to one function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FunctionReport {
    /// The kernel's or `.func`'s name.
    pub function: String,
    /// Instructions rewritten to f64.
    pub promoted: u32,
    /// `cvt.f64.f32` inserted where f32 values enter the promoted set.
    pub cvt_to_f64: u32,
    /// `cvt.rn.f32.f64` inserted where promoted values leave it.
    pub cvt_to_f32: u32,
}

/// One instruction whose code changed, at its site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where it is (function, file, line).
    pub site: Site,
    /// The instruction (its id is kept).
    pub inst: InstId,
    /// Whether it was promoted (otherwise a conversion into f64 follows it).
    pub promoted: bool,
    /// As it was.
    pub before: String,
    /// The code replacing it, in order.
    pub after: String,
}

/// A requested instruction that was not promoted, and why (the same type demote reports).
pub use super::demote::Refused;

/// What [`promote`] did, and what it could not do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PromoteReport {
    /// Per function with a body, in module order (library functions excluded).
    pub functions: Vec<FunctionReport>,
    /// Every instruction whose code changed, in module order.
    pub changes: Vec<Change>,
    /// Sites that name no instruction (a configuration from another build of the source).
    pub unmatched_sites: Vec<Site>,
    /// Requested instructions that are not eligible, with the reason.
    pub refused: Vec<Refused>,
    /// f32 instructions left in f32 that end a promoted region (special functions, directed
    /// roundings, unknown forms), math-library code left alone, unknown ids.
    pub notes: Vec<String>,
}

impl PromoteReport {
    /// Instructions promoted over all functions.
    pub fn promoted(&self) -> u32 {
        self.functions.iter().map(|f| f.promoted).sum()
    }

    /// Conversions inserted over all functions: (to f64, to f32).
    pub fn conversions(&self) -> (u32, u32) {
        self.functions
            .iter()
            .fold((0, 0), |(a, b), f| (a + f.cvt_to_f64, b + f.cvt_to_f32))
    }
}

/// The rewritten module and its report.
#[derive(Debug, Clone)]
pub struct Promoted {
    /// The module with the set promoted (the input, unchanged, for an empty set).
    pub module: Module,
    /// What was done.
    pub report: PromoteReport,
}

/// Why [`promote`] failed: a shape the rewrite relies on was not there (a bug, not bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromoteError {
    /// An instruction selected for promotion could not be rewritten.
    #[error("cannot promote {id} in {function}: {message}")]
    Malformed {
        /// The function holding it.
        function: String,
        /// The instruction.
        id: InstId,
        /// What was wrong.
        message: String,
    },
}

/// What follows an instruction's f64 form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    Nothing,
    /// `rcp.rn.f64 d, d` (completing `rsqrt` as `sqrt.rn` then `rcp.rn`).
    Reciprocal,
    /// `max.f64 d, d, 0` then `min.f64 d, d, 1` (`.sat`).
    Clamp,
}

/// How an eligible instruction is rewritten (no allocation: most instructions are planned).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The f64 form's opcode when it differs (`mad` → `fma`, `cvt` → `mov`, `rsqrt` → `sqrt`).
    opcode: Option<&'static str>,
    /// The f64 form is exactly `OPCODE.f64` (a `mov.f64`).
    only_f64: bool,
    /// A rounding modifier is required (`.rn` is added when none is written).
    needs_rn: bool,
    /// Bit k: operand k holds an f32 value.
    f32_operands: u32,
    /// Whether operand 0 is an f32 def.
    defines: bool,
    then: Then,
}

impl Plan {
    fn new(operands: &[usize], defines: bool) -> Plan {
        Plan {
            opcode: None,
            only_f64: false,
            needs_rn: false,
            f32_operands: operands.iter().fold(0, |m, &k| m | (1 << k)),
            defines,
            then: Then::Nothing,
        }
    }
}

/// Promotion's twins: f64, converted in with `cvt.f64.f32` and out with `cvt.rn.f32.f64`.
const PROMOTE: Direction = Direction {
    twin_type: ".f64",
    prefix: "%mpd",
    into_twin: &["f64", "f32"],
    from_twin: &["rn", "f32", "f64"],
};

/// An f32 value's bits widened exactly to f64.
pub fn f32_imm_to_f64(bits: u32) -> u64 {
    f64::from(f32::from_bits(bits)).to_bits()
}

fn f64_imm(x: f64) -> Operand {
    Operand::Imm(Imm::F64(x.to_bits()))
}

impl TwinPlan for Plan {
    fn twinned(&self) -> u32 {
        self.f32_operands
    }

    fn defines(&self) -> bool {
        self.defines
    }

    fn immediate(&self, imm: Imm) -> Imm {
        match imm {
            Imm::F32(bits) => Imm::F64(f32_imm_to_f64(bits)),
            // The f32 instruction used the literal rounded to f32.
            Imm::F64(bits) => Imm::F64(f32_imm_to_f64(super::demote::f64_imm_to_f32(bits))),
            other => other,
        }
    }

    fn finish(&self, i: &mut Instruction, more: &mut Vec<Instruction>) {
        if let Some(o) = self.opcode {
            i.opcode = o.into();
        }
        if self.only_f64 {
            i.modifiers = vec!["f64".into()];
        } else {
            let clamp = self.then == Then::Clamp;
            i.modifiers
                .retain(|m| !(m == "ftz" || m == "approx" || m == "full" || (clamp && m == "sat")));
            for m in i.modifiers.iter_mut().filter(|m| *m == "f32") {
                *m = "f64".into();
            }
            if self.needs_rn && !i.modifiers.iter().any(|m| m == "rn") {
                i.modifiers.insert(0, "rn".into());
            }
        }
        let Some(d) = i.operands.first().cloned() else {
            return;
        };
        let inst = |opcode: &str, mods: &[&str], b: Option<Operand>| Instruction {
            id: InstId(0),
            guard: None,
            opcode: opcode.into(),
            modifiers: mods.iter().map(|m| m.to_string()).collect(),
            operands: [d.clone(), d.clone()].into_iter().chain(b).collect(),
            line: SrcLine(0),
        };
        match self.then {
            Then::Nothing => {}
            Then::Reciprocal => more.push(inst("rcp", &["rn", "f64"], None)),
            Then::Clamp => {
                more.push(inst("max", &["f64"], Some(f64_imm(0.0))));
                more.push(inst("min", &["f64"], Some(f64_imm(1.0))));
            }
        }
    }
}

/// Modifiers an eligible instruction may carry: everything else has no f64 form here.
fn known_modifier(m: &str) -> bool {
    ValueType::parse(m).is_some()
        || matches!(
            m,
            "rn" | "rni"
                | "rzi"
                | "rmi"
                | "rpi"
                | "ftz"
                | "sat"
                | "approx"
                | "full"
                | "and"
                | "or"
                | "xor"
                | "eq"
                | "ne"
                | "lt"
                | "le"
                | "gt"
                | "ge"
                | "equ"
                | "neu"
                | "ltu"
                | "leu"
                | "gtu"
                | "geu"
                | "num"
                | "nan"
        )
}

/// The rewrite of instruction `k` of `d` (an instruction touching f32), or why it is not
/// eligible. The `bool` in `Err` says whether the reason is worth a note (the instruction ends
/// a region the user may expect to continue) rather than memory, a call or a bit operation.
pub(crate) fn plan(d: &Decoded, k: usize) -> Result<Plan, (String, bool)> {
    let inst = d.insts[k];
    let op = &d.ops[k];
    let quiet = |r: &str| Err((r.to_string(), false));
    let noted = |r: String| Err((r, true));
    let directed = matches!(
        op.rounding,
        Some(Rounding::Rz | Rounding::Rm | Rounding::Rp | Rounding::Rna)
    );
    let all = (1u32 << inst.operands.len().min(31)) - 1;
    let mut plan = match op.kind {
        OpKind::Load(Space::Param) | OpKind::Store(Space::Param) => {
            return quiet("a parameter move")
        }
        OpKind::Load(_) => return quiet("a load"),
        OpKind::Store(_) => return quiet("a store"),
        OpKind::Atom(_) | OpKind::Red(_) => return quiet("an atomic"),
        OpKind::Call => return quiet("a call"),
        OpKind::Bits(_) => return quiet("a bit operation"),
        OpKind::Move { reinterpret: true } => return quiet("bit reinterpretation"),
        OpKind::Move { .. } if !inst.has_mod("f32") => return quiet("bit reinterpretation"),
        OpKind::Approx(_) => {
            return noted(format!(
                "{}: a hardware special function, no f64 form in PTX",
                inst.full_opcode()
            ))
        }
        _ if directed => {
            return noted(format!(
                "{}: a directed rounding (the value would leave the chain rounded to nearest)",
                inst.full_opcode()
            ))
        }
        _ if inst.modifiers.iter().any(|m| !known_modifier(m)) => {
            let m = inst
                .modifiers
                .iter()
                .find(|m| !known_modifier(m))
                .map_or("", String::as_str);
            return noted(format!("{}: .{m} has no f64 form", inst.full_opcode()));
        }
        OpKind::Convert { from, to } => {
            use ValueType::{F32, F64};
            let integral = op.rounding.is_some_and(Rounding::is_integral);
            let mut p = match (to, from) {
                (F32, F64) => Plan {
                    opcode: Some("mov"),
                    only_f64: true,
                    ..Plan::new(&[0], true)
                },
                (F64, F32) => Plan {
                    opcode: Some("mov"),
                    only_f64: true,
                    ..Plan::new(&[1], false)
                },
                (F32, F32) if integral => Plan::new(&[0, 1], true),
                (F32, F32) => Plan {
                    opcode: Some("mov"),
                    only_f64: true,
                    ..Plan::new(&[0, 1], true)
                },
                (F32, t) if t.is_int() => Plan::new(&[0], true),
                // Float→integer saturates by itself: its `.sat` stays.
                (t, F32) if t.is_int() => return checked(d, k, Plan::new(&[1], false)),
                _ => {
                    return noted(format!(
                        "{}: a conversion with no f64 form here",
                        inst.full_opcode()
                    ))
                }
            };
            if op.sat {
                p.then = Then::Clamp;
            }
            return checked(d, k, p);
        }
        _ if op.ty != Some(ValueType::F32) => return quiet("not an f32 operation"),
        OpKind::Arith(
            Arith::Add
            | Arith::Sub
            | Arith::Mul
            | Arith::Neg
            | Arith::Abs
            | Arith::Min
            | Arith::Max,
        ) => Plan {
            f32_operands: all,
            ..Plan::new(&[], true)
        },
        OpKind::Fma => Plan {
            opcode: Some("fma"),
            needs_rn: true,
            f32_operands: all,
            ..Plan::new(&[], true)
        },
        OpKind::Div | OpKind::Rcp | OpKind::Sqrt => Plan {
            needs_rn: true,
            f32_operands: all,
            ..Plan::new(&[], true)
        },
        OpKind::Rsqrt => Plan {
            opcode: Some("sqrt"),
            needs_rn: true,
            f32_operands: all,
            then: Then::Reciprocal,
            ..Plan::new(&[], true)
        },
        OpKind::Compare(_) if op.is_predicate_compare() => Plan::new(&[1, 2], false),
        OpKind::Select => Plan::new(&[0, 1, 2], true),
        OpKind::Move { .. } => Plan::new(&[0, 1], true),
        _ => {
            return noted(format!(
                "{}: an f32 instruction promotion does not know",
                inst.full_opcode()
            ))
        }
    };
    if op.sat {
        plan.then = Then::Clamp;
    }
    checked(d, k, plan)
}

/// `plan` when the operands it converts have the shapes it relies on: f32 (or untyped 32-bit)
/// registers, and immediates only where nothing is written.
fn checked(d: &Decoded, k: usize, plan: Plan) -> Result<Plan, (String, bool)> {
    let inst = d.insts[k];
    for j in (0..32).filter(|j| plan.f32_operands & (1 << j) != 0) {
        match inst.operands.get(j) {
            Some(Operand::Reg(r)) => {
                let ok = d.operand_reg(k, j).is_some_and(|id| {
                    d.regs.reg_type(id).is_some_and(|t| {
                        t.vector == 1 && matches!(t.ty, Some(ValueType::F32 | ValueType::B32))
                    })
                });
                if !ok {
                    return Err((format!("operand {r} is not an .f32 register"), true));
                }
            }
            Some(Operand::Imm(_)) if j > 0 || !plan.defines => {}
            _ => {
                return Err((
                    format!("unexpected operand shape in {}", inst.full_opcode()),
                    true,
                ))
            }
        }
    }
    Ok(plan)
}

/// One instruction of a function, as [`candidates`] and [`promote`] see it.
struct Row {
    /// Whether it touches f32 (by type or by an f32 register).
    touches: bool,
    plan: Result<Plan, (String, bool)>,
}

fn analyse(d: &Decoded, names: &HashMap<String, String>) -> Vec<Row> {
    (0..d.len())
        .map(|k| {
            let inst = d.insts[k];
            let touches = inst.has_mod("f32")
                || d.uses(k)
                    .iter()
                    .chain(d.defs(k))
                    .any(|&r| d.regs.value_type(r) == Some(ValueType::F32));
            let plan = if !touches {
                Err((String::new(), false))
            } else if inlined_from_library(d.locs[k], names) {
                Err((
                    "math-library code (it relies on f32 rounding)".into(),
                    false,
                ))
            } else {
                plan(d, k)
            };
            Row { touches, plan }
        })
        .collect()
}

/// The functions promotion rewrites: those with a body, less math-library ones.
fn bodies(m: &Module) -> impl Iterator<Item = &Function> {
    m.functions()
        .filter(|f| f.body.is_some() && !is_library(&f.name))
}

/// Every f32 instruction of every function promotion rewrites, in module and text order, with
/// its site and, when it is not eligible, why.
pub fn candidates(m: &Module) -> Vec<Candidate> {
    let names = crate::units::debug_strings(m);
    let files: HashMap<u32, &str> = m.files().into_iter().collect();
    let mut out = Vec::new();
    for f in bodies(m) {
        let d = Decoded::of(f);
        let sites = site::function_sites(f, &files);
        for (k, r) in analyse(&d, &names).into_iter().enumerate() {
            if !r.touches {
                continue;
            }
            out.push(Candidate {
                id: d.insts[k].id,
                site: sites[k].1.clone(),
                opcode: d.insts[k].full_opcode(),
                reason: r.plan.err().map(|(reason, _)| reason),
            });
        }
    }
    out
}

/// Promotes `set` to f64 (see the module docs). The empty set gives the input back unchanged.
pub fn promote(module: &Module, set: &PromoteSet) -> Result<Promoted, PromoteError> {
    let names = crate::units::debug_strings(module);
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let mut report = PromoteReport::default();
    let wanted_ids: HashSet<InstId> = set.ids.iter().copied().collect();
    let mut wanted_sites: HashMap<InstId, &Site> = HashMap::new();
    if !set.sites.is_empty() {
        let sites = site::sites(module);
        for s in &set.sites {
            match sites.inst(s) {
                Some(id) => {
                    wanted_sites.insert(id, s);
                }
                None => report.unmatched_sites.push(s.clone()),
            }
        }
        if let Some(first) = report.unmatched_sites.first() {
            report.notes.push(format!(
                "{} sites name no instruction of this build (first: {first})",
                report.unmatched_sites.len()
            ));
        }
    }
    let mut seen_ids: HashSet<InstId> = HashSet::new();
    let mut new_bodies: HashMap<String, Vec<Statement>> = HashMap::new();
    let mut next_id = module.next_inst_id;
    for f in bodies(module) {
        let d = Decoded::of(f);
        let sites = site::function_sites(f, &files);
        let mut chosen: Vec<Option<Plan>> = vec![None; d.len()];
        // Notes per (line, reason), counted: a kernel may hold many special functions.
        let mut ended: BTreeMap<(u32, String), u32> = BTreeMap::new();
        let mut library = 0u32;
        for (k, r) in analyse(&d, &names).into_iter().enumerate() {
            let id = d.insts[k].id;
            let by_id = wanted_ids.contains(&id);
            if by_id {
                seen_ids.insert(id);
            }
            let by_site = wanted_sites.get(&id).copied();
            let requested = by_site
                .map(Site::to_string)
                .or_else(|| by_id.then(|| id.to_string()));
            match r.plan {
                Ok(p) => {
                    if set.all || requested.is_some() {
                        chosen[k] = Some(p);
                    }
                }
                Err((reason, noteworthy)) => {
                    if let Some(requested) = requested {
                        report.refused.push(Refused {
                            requested,
                            reason: if r.touches {
                                reason.clone()
                            } else {
                                "not an f32 instruction".into()
                            },
                        });
                    }
                    if r.touches && reason.starts_with("math-library") {
                        library += 1;
                    } else if noteworthy {
                        *ended.entry((sites[k].1.line, reason)).or_default() += 1;
                    }
                }
            }
        }
        for ((line, reason), n) in ended {
            let times = if n > 1 {
                format!(" ({n} instructions)")
            } else {
                String::new()
            };
            report.notes.push(format!(
                "{} line {line}: {reason}; left in f32{times}",
                f.name
            ));
        }
        if library > 0 {
            report.notes.push(format!(
                "{}: {library} f32 instructions of inlined math-library code left in f32",
                f.name
            ));
        }
        let mut fr = FunctionReport {
            function: f.name.clone(),
            ..FunctionReport::default()
        };
        if chosen.iter().any(Option::is_some) {
            let mut counts = Counts::default();
            let mut edited: Vec<Edited> = Vec::new();
            let body = twins::rewrite(
                &d,
                &chosen,
                &PROMOTE,
                &mut next_id,
                &mut counts,
                Some(&mut edited),
            )
            .map_err(|(id, message)| PromoteError::Malformed {
                function: f.name.clone(),
                id,
                message,
            })?;
            fr.promoted = counts.rewritten;
            fr.cvt_to_f64 = counts.into_twin;
            fr.cvt_to_f32 = counts.from_twin;
            report.changes.extend(edited.into_iter().map(|e| Change {
                site: sites[e.k].1.clone(),
                inst: d.insts[e.k].id,
                promoted: e.chosen,
                before: d.insts[e.k].to_string().trim().to_string(),
                after: e.after,
            }));
            new_bodies.insert(f.name.clone(), body);
        }
        report.functions.push(fr);
    }
    for id in &set.ids {
        if !seen_ids.contains(id) {
            report
                .notes
                .push(format!("no instruction {id} in the module"));
        }
    }
    let items = module
        .items
        .iter()
        .map(|item| match item {
            Item::Function(f) if f.body.is_some() => match new_bodies.remove(&f.name) {
                Some(body) => Item::Function(Function {
                    linkage: f.linkage.clone(),
                    kind: f.kind,
                    name: f.name.clone(),
                    returns: f.returns.clone(),
                    params: f.params.clone(),
                    directives: f.directives.clone(),
                    body: Some(body),
                    line: f.line,
                }),
                None => item.clone(),
            },
            _ => item.clone(),
        })
        .collect();
    Ok(Promoted {
        module: Module {
            items,
            next_inst_id: next_id,
        },
        report,
    })
}

/// [`promote`] as a [`Pass`], for pipelines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Promote {
    /// What to promote.
    pub set: PromoteSet,
}

impl Promote {
    /// The pass promoting `set`.
    pub fn new(set: PromoteSet) -> Promote {
        Promote { set }
    }
}

impl Pass for Promote {
    fn name(&self) -> String {
        "promote".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let p = promote(module, &self.set).map_err(|e| PassError {
            pass: self.name(),
            message: e.to_string(),
        })?;
        let (to64, to32) = p.report.conversions();
        let summary = format!(
            "promoted {} instructions; {to64} conversions to f64, {to32} to f32",
            p.report.promoted()
        );
        let mut notes = p.report.notes.clone();
        notes.extend(
            p.report
                .refused
                .iter()
                .map(|r| format!("{}: {}", r.requested, r.reason)),
        );
        Ok(Outcome {
            module: p.module,
            report: Report::new("promote", summary, notes, p.report),
        })
    }
}
