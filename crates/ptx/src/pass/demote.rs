//! Precision configurations as pure PTX rewrites: demote a chosen set of f64 instructions to
//! f32, PTX in, PTX out.
//!
//! **Addressing.** An instruction is named by its [`Site`] ([`crate::site`]: function, file,
//! line, ordinal among *all* instructions of the line, inlined chain); eligibility is this
//! pass's filter over sites, so a site names the same instruction for every pass. Files written
//! before sites name instructions by a [`Selector`]: the function, the `.file` index and line of
//! its `.loc`, and its ordinal among the *eligible* instructions of that function and line;
//! they keep their meaning ([`selector_sites`] converts them). [`candidates`] lists every f64
//! instruction with its site, its selector when eligible, or the reason it is not eligible.
//!
//! **Eligible**: f64 arithmetic and data movement outside units ([`crate::units`]): `add sub
//! mul fma mad div rcp sqrt rsqrt neg abs min max`, `setp.*.f64` (the comparison is then done
//! in f32), `selp.f64`, `mov.f64` and `cvt` with an f64 side and an f32 or integer other side.
//! Not eligible, and terminating the demoted region: loads, stores, atomics, calls, parameter
//! moves, bit reinterpretation (`mov.b64`, `testp`, `copysign`), anything in a unit or opaque
//! region, and f64 instructions this module does not know (listed in the report's notes).
//!
//! **`.func` bodies** are rewritten like kernels: a device function's body is shared by every
//! kernel that calls it, so its instructions are addressed by the `.func`'s own name in
//! [`Selector::kernel`], and their values cross the call boundary in f64 (`st.param`/`ld.param`
//! are never demoted). A `.func` called from inside a math unit is part of that unit.
//!
//! **The rewrite works per register** (`pass/twins.rs`, shared with [`super::promote`], its
//! mirror image), since PTX is not SSA (loops, predicated defs and join
//! points give a register several defs). Each f64 register R that a demoted instruction reads or
//! writes gets an f32 twin; demoted instructions read and write twins only. Both forms are kept
//! in sync right after every def that needs it: after a def that stays f64, of a register some
//! demoted instruction reads, `cvt.rn.f32.f64 R32, R`; after a demoted def, of a register some
//! f64 instruction reads, `cvt.f64.f32 R, R32`. Every use therefore reads a form written by every
//! def reaching it, and conversions sit only on the edges where values enter or leave the
//! demoted set. Inserted conversions carry the def's guard and directly follow it (so they sit
//! under the same `.loc`), with fresh [`InstId`]s. The twins are one `.reg .f32 %mdf<N>;`
//! declaration (its prefix made unique against the function's own).
//!
//! **The f32 forms**: the type `.f64` becomes `.f32` and every other modifier stays (`div.rn`,
//! `rcp.approx.ftz`, `rsqrt.approx`, `sqrt.rn`, `fma.rn`, `setp.ltu`); no `.ftz` is ever added.
//! `mad.rn.f64` becomes `fma.rn.f32` (`mad.f32` needs a rounding modifier on sm_20+ and then
//! is fma). `cvt.rn.f64.s32` → `cvt.rn.f32.s32` (a rounding mode is added when the f64 form had
//! none: int→f32 can round), `cvt.rzi.s32.f64` → `cvt.rzi.s32.f32`, `cvt.rzi.f64.f64` →
//! `cvt.rzi.f32.f32`, and `cvt.f64.f32` / `cvt.rn.f32.f64` become `mov.f32` (the value already
//! is f32; with `.ftz`/`.sat` they stay f64). f64 immediates are rounded to the nearest f32
//! ([`f64_imm_to_f32`]); integer immediates are left alone.
//!
//! **Sets**: [`DemoteSet::all`] ("ideal") demotes every eligible instruction; math units stay
//! f64 here because the caller replaces them at source level (`MANTISSA_DEMOTE_LINES`), using
//! [`crate::units::units`] to list their lines. The empty set gives the input back unchanged.
//! Selectors that name nothing (a configuration from an older build) and requests for
//! ineligible instructions are reported ([`DemoteReport::unmatched`], [`DemoteReport::refused`]),
//! not errors.

use super::twins::{self, Counts, Direction, TwinPlan};
use super::{Outcome, Pass, PassError, Report};
use crate::decode::Decoded;
use crate::model::*;
use crate::op::{Arith, BitOp, OpKind, Rounding, Space, ValueType};
use crate::site::{self, Site};
use crate::units::{self, Unit, UnitIndex, UnitKind};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Names one eligible instruction in a way that survives a rebuild of the same source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Selector {
    /// The mangled name of the `.entry` (or `.func`) whose body holds the instruction.
    pub kernel: String,
    /// The `.file` index of the instruction's `.loc` (0 when it has none).
    pub file: u32,
    /// The source line of the instruction's `.loc` (0 when it has none).
    pub line: u32,
    /// Index among the eligible instructions of this kernel, file and line, in text order.
    pub ordinal: u32,
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}:{} #{}",
            self.kernel, self.file, self.line, self.ordinal
        )
    }
}

/// The unit an instruction belongs to, as [`Candidate`] names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitRef {
    /// Marked call or opaque region.
    pub kind: UnitKind,
    /// The math function (`exp`) or `opaque`.
    pub function: String,
    /// The unit's source line (see [`Unit::line`]).
    pub line: u32,
}

impl UnitRef {
    fn of(u: &Unit) -> UnitRef {
        UnitRef {
            kind: u.kind,
            function: u.function.clone(),
            line: u.line,
        }
    }
}

/// One f64 instruction of a function, eligible or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// The function (kernel or `.func`) holding it.
    pub function: String,
    /// Its id in the module it was listed from.
    pub id: InstId,
    /// The instruction's full opcode (`fma.rn.f64`).
    pub opcode: String,
    /// The `.file` index of its `.loc` (0 without one).
    pub file: u32,
    /// The source line of its `.loc` (0 without one).
    pub line: u32,
    /// Its address ([`Site`]), eligible or not.
    pub site: Site,
    /// How a configuration written before sites named it: `Some` exactly when it is eligible.
    pub selector: Option<Selector>,
    /// The unit or opaque region it belongs to.
    pub unit: Option<UnitRef>,
    /// Why it is not eligible (`a load`, `in unit exp at line 42`), `None` when eligible.
    pub reason: Option<String>,
}

/// The instructions to demote: all eligible ones, or those named by selectors or ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoteSet {
    /// Every eligible instruction of every function ("ideal"); the lists are then ignored.
    #[serde(default)]
    pub all: bool,
    /// Instructions named by selector.
    #[serde(default)]
    pub selectors: Vec<Selector>,
    /// Instructions named by id (of the module passed to [`demote`]).
    #[serde(default)]
    pub ids: Vec<InstId>,
    /// Instructions named by site.
    #[serde(default)]
    pub sites: Vec<Site>,
}

/// One instruction as a configuration file names it: a [`Site`], or a [`Selector`] in a file
/// written before sites existed. Both read from JSON (untagged: a site has `function`, a
/// selector `kernel`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Request {
    /// By site.
    Site(Site),
    /// By selector (ordinal among eligible instructions).
    Selector(Selector),
}

impl DemoteSet {
    /// Nothing: [`demote`] returns the module unchanged.
    pub fn empty() -> DemoteSet {
        DemoteSet::default()
    }

    /// Every eligible instruction (units and opaque regions stay f64).
    pub fn all() -> DemoteSet {
        DemoteSet {
            all: true,
            ..DemoteSet::default()
        }
    }

    /// The instructions named by `selectors`.
    pub fn selectors(selectors: impl IntoIterator<Item = Selector>) -> DemoteSet {
        DemoteSet {
            selectors: selectors.into_iter().collect(),
            ..DemoteSet::default()
        }
    }

    /// The instructions with these ids.
    pub fn ids(ids: impl IntoIterator<Item = InstId>) -> DemoteSet {
        DemoteSet {
            ids: ids.into_iter().collect(),
            ..DemoteSet::default()
        }
    }

    /// The instructions at these sites.
    pub fn sites(sites: impl IntoIterator<Item = Site>) -> DemoteSet {
        DemoteSet {
            sites: sites.into_iter().collect(),
            ..DemoteSet::default()
        }
    }

    /// The instructions named by sites or selectors, as a configuration file lists them.
    pub fn requests(requests: impl IntoIterator<Item = Request>) -> DemoteSet {
        let mut set = DemoteSet::default();
        for r in requests {
            match r {
                Request::Site(s) => set.sites.push(s),
                Request::Selector(s) => set.selectors.push(s),
            }
        }
        set
    }
}

/// What [`demote`] did to one function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FunctionReport {
    /// The kernel's or `.func`'s name.
    pub function: String,
    /// Instructions rewritten to f32.
    pub demoted: u32,
    /// `cvt.rn.f32.f64` inserted where f64 values enter the demoted set.
    pub cvt_to_f32: u32,
    /// `cvt.f64.f32` inserted where demoted values leave it.
    pub cvt_to_f64: u32,
}

/// A requested instruction that was not rewritten (demoted or promoted), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// The site, selector or instruction id as requested (`kernel 1:42 #0`, `i17`).
    pub requested: String,
    /// Why (`in unit exp at line 42`, `a load`, `a hardware special function`).
    pub reason: String,
}

/// What [`demote`] did, and what it could not do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DemoteReport {
    /// Per function with a body, in module order.
    pub functions: Vec<FunctionReport>,
    /// Selectors that name no instruction (a configuration from an older build).
    pub unmatched: Vec<Selector>,
    /// Sites that name no instruction (a configuration from another build of the source).
    pub unmatched_sites: Vec<Site>,
    /// Requested instructions that are not eligible, with the reason.
    pub refused: Vec<Refused>,
    /// Anything else worth knowing: unknown f64 instructions left in f64, unknown ids.
    pub notes: Vec<String>,
}

impl DemoteReport {
    /// Instructions demoted over all functions.
    pub fn demoted(&self) -> u32 {
        self.functions.iter().map(|f| f.demoted).sum()
    }
}

/// The rewritten module and its report.
#[derive(Debug, Clone)]
pub struct Demoted {
    /// The module with the set demoted (the input, unchanged, for an empty set).
    pub module: Module,
    /// What was done.
    pub report: DemoteReport,
}

/// Why [`demote`] failed: a shape the rewrite relies on was not there (a bug, not bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemoteError {
    /// An instruction selected for demotion could not be rewritten.
    #[error("cannot demote {id} in {function}: {message}")]
    Malformed {
        /// The function holding it.
        function: String,
        /// The instruction.
        id: InstId,
        /// What was wrong.
        message: String,
    },
}

#[cfg(test)]
mod site_tests;
#[cfg(test)]
pub(crate) mod tests;

/// How an eligible instruction is rewritten (no allocation: most instructions of a large
/// kernel are planned).
/// Other passes that need an instruction's f32 form (the switched build, the demotion error
/// of shadow analysis) take it from here, so that every pass demotes the same way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The f32 form's opcode when it differs (`mad` → `fma`, `cvt` → `mov`).
    pub(crate) opcode: Option<&'static str>,
    /// What happens to the modifiers.
    pub(crate) modifiers: Mods,
    /// Bit k: operand k holds an f64 value (registers get twins, immediates become f32).
    pub(crate) f64_operands: u32,
    /// Whether operand 0 is an f64 def (false for setp and conversions to f32/integers).
    pub(crate) defines: bool,
}

/// The modifiers of an instruction's f32 form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mods {
    /// `f64` becomes `f32`, the rest stays.
    Retype,
    /// As [`Mods::Retype`], with `rn` first: the f32 form needs a rounding the f64 one lacked.
    RetypeAddRn,
    /// Exactly `f32` (a `mov.f32`).
    OnlyF32,
}

impl Plan {
    fn new(
        opcode: Option<&'static str>,
        modifiers: Mods,
        operands: &[usize],
        defines: bool,
    ) -> Plan {
        Plan {
            opcode,
            modifiers,
            f64_operands: operands.iter().fold(0, |m, &k| m | (1 << k)),
            defines,
        }
    }

    /// The operand indices holding f64 values, in order.
    pub(crate) fn operands(&self) -> impl Iterator<Item = usize> + '_ {
        (0..32).filter(move |k| self.f64_operands & (1 << k) != 0)
    }

    /// Rewrites `i`'s opcode and modifiers to the f32 form.
    pub(crate) fn retype(&self, i: &mut Instruction) {
        if let Some(o) = self.opcode {
            i.opcode.clear();
            i.opcode.push_str(o);
        }
        match self.modifiers {
            Mods::OnlyF32 => {
                i.modifiers.truncate(1);
                match i.modifiers.first_mut() {
                    Some(m) => {
                        m.clear();
                        m.push_str("f32");
                    }
                    None => i.modifiers.push("f32".into()),
                }
            }
            Mods::Retype | Mods::RetypeAddRn => {
                for m in i.modifiers.iter_mut().filter(|m| *m == "f64") {
                    m.clear();
                    m.push_str("f32");
                }
                if self.modifiers == Mods::RetypeAddRn {
                    i.modifiers.insert(0, "rn".into());
                }
            }
        }
    }
}

/// Demotion's twins: f32, converted in with `cvt.rn.f32.f64` and out with `cvt.f64.f32`.
const DEMOTE: Direction = Direction {
    twin_type: ".f32",
    prefix: "%mdf",
    into_twin: &["rn", "f32", "f64"],
    from_twin: &["f64", "f32"],
};

impl TwinPlan for Plan {
    fn twinned(&self) -> u32 {
        self.f64_operands
    }

    fn defines(&self) -> bool {
        self.defines
    }

    fn immediate(&self, imm: Imm) -> Imm {
        match imm {
            Imm::F64(bits) => Imm::F32(f64_imm_to_f32(bits)),
            other => other,
        }
    }

    fn finish(&self, i: &mut Instruction, _: &mut Vec<Instruction>) {
        self.retype(i);
    }
}

/// The rewrite of instruction `k` of `d` (an f64 instruction), or why it is not eligible. The
/// `bool` in `Err` says whether the instruction is unknown (worth a note) rather than a known
/// terminating node.
pub(crate) fn plan(d: &Decoded, k: usize) -> Result<Plan, (String, bool)> {
    let inst = d.insts[k];
    let op = &d.ops[k];
    let known = |r: &str| Err((r.to_string(), false));
    let directed = matches!(
        op.rounding,
        Some(Rounding::Rn | Rounding::Rz | Rounding::Rm | Rounding::Rp)
    );
    // Every operand, for arithmetic (at most 32: PTX instructions have a handful).
    let all = (1u32 << inst.operands.len().min(31)) - 1;
    let plan = match op.kind {
        OpKind::Load(Space::Param) | OpKind::Store(Space::Param) => {
            return known("a parameter move")
        }
        OpKind::Load(_) => return known("a load"),
        OpKind::Store(_) => return known("a store"),
        OpKind::Atom(_) | OpKind::Red(_) => return known("an atomic"),
        OpKind::Call => return known("a call"),
        OpKind::Bits(BitOp::Testp | BitOp::Copysign) => return known("f64 bit manipulation"),
        _ if !inst.has_mod("f64") => return known("f64 bit reinterpretation"),
        OpKind::Arith(
            Arith::Add
            | Arith::Sub
            | Arith::Mul
            | Arith::Neg
            | Arith::Abs
            | Arith::Min
            | Arith::Max,
        )
        | OpKind::Div
        | OpKind::Rcp
        | OpKind::Sqrt
        | OpKind::Rsqrt => Plan {
            f64_operands: all,
            ..Plan::new(None, Mods::Retype, &[], true)
        },
        OpKind::Fma => {
            // mad.f32 requires a rounding modifier on sm_20+ and then means fma: say fma.
            let mods = if op.rounding.is_none() {
                Mods::RetypeAddRn
            } else {
                Mods::Retype
            };
            Plan {
                f64_operands: all,
                ..Plan::new(Some("fma"), mods, &[], true)
            }
        }
        OpKind::Compare(_) => Plan::new(None, Mods::Retype, &[1, 2], false),
        OpKind::Select => Plan::new(None, Mods::Retype, &[0, 1, 2], true),
        OpKind::Move { reinterpret: false } => Plan::new(None, Mods::Retype, &[0, 1], true),
        OpKind::Convert { from: src, to: dst } => {
            // The rounding of f64→f32 is moot once the value is f32; flushing or saturating is not.
            let others = op.ftz || op.sat || inst.has_mod("relu");
            use ValueType::{F32, F64};
            match (dst, src) {
                (F64, F64) => Plan::new(None, Mods::Retype, &[0, 1], true),
                // Between f32 and f64 a demoted value is already f32: a copy.
                (F64, F32) | (F32, F64) if others => return known("a conversion with .ftz/.sat"),
                (F64, F32) => Plan::new(Some("mov"), Mods::OnlyF32, &[0], true),
                (F32, F64) => Plan::new(Some("mov"), Mods::OnlyF32, &[1], false),
                // int→f32 may round, so it needs a rounding mode even where int→f64 had none.
                (F64, t) if t.is_int() => {
                    let mods = if directed {
                        Mods::Retype
                    } else {
                        Mods::RetypeAddRn
                    };
                    Plan::new(None, mods, &[0], true)
                }
                (t, F64) if t.is_int() => Plan::new(None, Mods::Retype, &[1], false),
                _ => {
                    return Err((
                        format!("unsupported conversion {}", inst.full_opcode()),
                        true,
                    ))
                }
            }
        }
        _ => {
            return Err((
                format!("unknown f64 instruction {}", inst.full_opcode()),
                true,
            ))
        }
    };
    for j in plan.operands() {
        match inst.operands.get(j) {
            Some(Operand::Reg(r)) => {
                let f64_reg = d
                    .operand_reg(k, j)
                    .is_some_and(|id| d.regs.value_type(id) == Some(ValueType::F64));
                if !f64_reg {
                    return Err((format!("operand {r} is not an .f64 register"), true));
                }
            }
            Some(Operand::Imm(Imm::F64(_))) | Some(Operand::Imm(Imm::Int { .. }))
                if j > 0 || !plan.defines => {}
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

/// An f64 immediate rounded to the nearest f32 (overflow gives infinity, tiny values round to
/// f32 subnormals or zero, as the hardware's `cvt.rn.f32.f64` would).
pub fn f64_imm_to_f32(bits: u64) -> u32 {
    // `as` rounds to nearest-even and saturates to infinity: exactly cvt.rn.f32.f64.
    (f64::from_bits(bits) as f32).to_bits()
}

/// One instruction of a function, as [`candidates`] and [`demote`] see it.
struct Row {
    /// Its index among the function's instructions.
    k: usize,
    file: u32,
    line: u32,
    /// Whether it touches f64 at all (by type or by an f64 register).
    touches: bool,
    unit: Option<UnitRef>,
    plan: Result<Plan, (String, bool)>,
    selector: Option<Selector>,
}

fn analyse(d: &Decoded, fi: usize, idx: &UnitIndex) -> Vec<Row> {
    let f = d.function;
    let mut ordinals: HashMap<(u32, u32), u32> = HashMap::new();
    let mut rows = Vec::with_capacity(d.len());
    for k in 0..d.len() {
        let inst = d.insts[k];
        let (file, line) = d.locs[k].map_or((0, 0), |l| (l.file, l.line));
        let touches = inst.has_mod("f64")
            || d.uses(k)
                .iter()
                .chain(d.defs(k))
                .any(|&r| d.regs.value_type(r) == Some(ValueType::F64));
        let unit = idx
            .of
            .get(&inst.id)
            .filter(|(g, _)| *g == fi)
            .and_then(|_| idx.unit_of(inst.id));
        // Most instructions are not f64: no allocation for them.
        let plan = if !touches {
            Err((String::new(), false))
        } else if let Some(u) = unit {
            Err((format!("in {}", u.describe()), false))
        } else {
            plan(d, k)
        };
        let selector = plan.is_ok().then(|| {
            let n = ordinals.entry((file, line)).or_default();
            let s = Selector {
                kernel: f.name.clone(),
                file,
                line,
                ordinal: *n,
            };
            *n += 1;
            s
        });
        rows.push(Row {
            k,
            file,
            line,
            touches,
            unit: unit.map(UnitRef::of),
            plan,
            selector,
        });
    }
    rows
}

fn bodies(m: &Module) -> impl Iterator<Item = &Function> {
    m.functions().filter(|f| f.body.is_some())
}

/// Every f64 instruction of every function with a body (kernels and `.func`s), in module and
/// text order: eligible ones with their [`Selector`], the others with the reason; all with
/// their [`Site`].
pub fn candidates(m: &Module) -> Vec<Candidate> {
    let idx = units::index(m);
    let files: HashMap<u32, &str> = m.files().into_iter().collect();
    let mut out = Vec::new();
    for (fi, f) in bodies(m).enumerate() {
        let d = Decoded::of(f);
        let sites = site::function_sites(f, &files);
        for r in analyse(&d, fi, &idx).into_iter().filter(|r| r.touches) {
            let inst = d.insts[r.k];
            out.push(Candidate {
                function: f.name.clone(),
                id: inst.id,
                opcode: inst.full_opcode(),
                file: r.file,
                line: r.line,
                site: sites[r.k].1.clone(),
                selector: r.selector,
                unit: r.unit,
                reason: r.plan.err().map(|(reason, _)| reason),
            });
        }
    }
    out
}

/// The sites of the instructions `selectors` name (a configuration written before sites
/// existed), `None` for a selector that names nothing in `m`. Selectors count eligible
/// instructions, so this is where their meaning is kept: the same eligibility as [`demote`].
pub fn selector_sites(m: &Module, selectors: &[Selector]) -> Vec<Option<Site>> {
    let by_selector: HashMap<Selector, Site> = candidates(m)
        .into_iter()
        .filter_map(|c| Some((c.selector?, c.site)))
        .collect();
    selectors
        .iter()
        .map(|s| by_selector.get(s).cloned())
        .collect()
}

/// Demotes `set` to f32 (see the module docs). The empty set gives the input back unchanged.
pub fn demote(module: &Module, set: &DemoteSet) -> Result<Demoted, DemoteError> {
    let idx = units::index(module);
    let mut report = DemoteReport::default();
    let wanted_sel: HashSet<&Selector> = set.selectors.iter().collect();
    let wanted_ids: HashSet<InstId> = set.ids.iter().copied().collect();
    // Sites resolve to instructions up front; the ones naming nothing are reported.
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
    let mut matched_sel: HashSet<Selector> = HashSet::new();
    let mut seen_ids: HashSet<InstId> = HashSet::new();
    // Ineligible f64 instructions by (function, file, line), to explain unmatched selectors.
    let mut ineligible_at: HashMap<(String, u32, u32), Vec<String>> = HashMap::new();
    let mut new_bodies: Vec<Option<Vec<Statement>>> = Vec::new();
    let mut next_id = module.next_inst_id;
    for (fi, f) in bodies(module).enumerate() {
        let d = Decoded::of(f);
        let mut chosen: Vec<Option<Plan>> = vec![None; d.len()];
        let mut any = false;
        for r in analyse(&d, fi, &idx) {
            let id = d.insts[r.k].id;
            let by_id = wanted_ids.contains(&id);
            if by_id {
                seen_ids.insert(id);
            }
            let by_site = wanted_sites.get(&id).copied();
            match r.plan {
                Ok(p) => {
                    let sel = r.selector.as_ref().filter(|s| wanted_sel.contains(s));
                    if let Some(s) = sel {
                        matched_sel.insert(s.clone());
                    }
                    if set.all || by_id || sel.is_some() || by_site.is_some() {
                        chosen[r.k] = Some(p);
                        any = true;
                    }
                }
                Err((reason, unknown)) if r.touches => {
                    if unknown {
                        report.notes.push(format!(
                            "{}: {} (line {}) left in f64: {reason}",
                            f.name, id, r.line
                        ));
                    }
                    if by_id {
                        report.refused.push(Refused {
                            requested: id.to_string(),
                            reason: reason.clone(),
                        });
                    }
                    if let Some(s) = by_site {
                        report.refused.push(Refused {
                            requested: s.to_string(),
                            reason: reason.clone(),
                        });
                    }
                    ineligible_at
                        .entry((f.name.clone(), r.file, r.line))
                        .or_default()
                        .push(reason.clone());
                    if let Some(u) = &r.unit {
                        // A unit is addressed by its call line too.
                        let site = idx
                            .unit_of(id)
                            .map_or((r.file, r.line), |u| (u.call_site.0, u.call_site.1));
                        if site != (r.file, r.line) {
                            ineligible_at
                                .entry((f.name.clone(), site.0, site.1))
                                .or_default()
                                .push(format!("in {}", unit_phrase(u)));
                        }
                    }
                }
                Err(_) => {
                    let requested = by_site
                        .map(Site::to_string)
                        .or_else(|| by_id.then(|| id.to_string()));
                    if let Some(requested) = requested {
                        report.refused.push(Refused {
                            requested,
                            reason: "not an f64 instruction".into(),
                        });
                    }
                }
            }
        }
        let mut fr = FunctionReport {
            function: f.name.clone(),
            ..FunctionReport::default()
        };
        new_bodies.push(if any {
            let mut counts = Counts::default();
            let body = twins::rewrite(&d, &chosen, &DEMOTE, &mut next_id, &mut counts, None)
                .map_err(|(id, message)| DemoteError::Malformed {
                    function: f.name.clone(),
                    id,
                    message,
                })?;
            fr.demoted = counts.rewritten;
            fr.cvt_to_f32 = counts.into_twin;
            fr.cvt_to_f64 = counts.from_twin;
            Some(body)
        } else {
            None
        });
        report.functions.push(fr);
    }
    for s in &set.selectors {
        if matched_sel.contains(s) {
            continue;
        }
        match ineligible_at.get(&(s.kernel.clone(), s.file, s.line)) {
            Some(reasons) => {
                let mut rs: Vec<&String> = reasons.iter().collect();
                rs.dedup();
                report.refused.push(Refused {
                    requested: s.to_string(),
                    reason: format!(
                        "no eligible instruction #{} on that line; its f64 instructions are: {}",
                        s.ordinal,
                        rs.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                })
            }
            None => report.unmatched.push(s.clone()),
        }
    }
    for id in &set.ids {
        if !seen_ids.contains(id) {
            report
                .notes
                .push(format!("no instruction {id} in the module"));
        }
    }
    // The output: functions without a rewrite are copied, the others get their new body.
    let mut new_bodies = new_bodies.into_iter();
    let items = module
        .items
        .iter()
        .map(|item| match item {
            Item::Function(f) if f.body.is_some() => match new_bodies.next().flatten() {
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
    Ok(Demoted {
        module: Module {
            items,
            next_inst_id: next_id,
        },
        report,
    })
}

/// [`demote`] as a [`Pass`], for pipelines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Demote {
    /// What to demote.
    pub set: DemoteSet,
}

impl Demote {
    /// The pass demoting `set`.
    pub fn new(set: DemoteSet) -> Demote {
        Demote { set }
    }
}

impl Pass for Demote {
    fn name(&self) -> String {
        "demote".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let d = demote(module, &self.set).map_err(|e| PassError {
            pass: self.name(),
            message: e.to_string(),
        })?;
        let (to32, to64) = d
            .report
            .functions
            .iter()
            .fold((0, 0), |(a, b), f| (a + f.cvt_to_f32, b + f.cvt_to_f64));
        let summary = format!(
            "demoted {} instructions; {to32} conversions to f32, {to64} to f64",
            d.report.demoted()
        );
        let mut notes = d.report.notes.clone();
        notes.extend(
            d.report
                .refused
                .iter()
                .map(|r| format!("{}: {}", r.requested, r.reason)),
        );
        notes.extend(
            d.report
                .unmatched
                .iter()
                .map(|s| format!("{s}: names no instruction")),
        );
        Ok(Outcome {
            module: d.module,
            report: Report::new("demote", summary, notes, d.report),
        })
    }
}

fn unit_phrase(u: &UnitRef) -> String {
    match u.kind {
        UnitKind::Marked => format!("unit {} at line {}", u.function, u.line),
        UnitKind::Opaque => format!("opaque region (f64 bit manipulation) at line {}", u.line),
    }
}

/// Whether two modules have the same code: the same functions with the same instructions,
/// operands, labels, declarations and module variables, ignoring `.loc`, `.file`, `.section`
/// (debug info), comments (the parser drops them) and instruction ids. Module variables whose
/// name contains `__mantissa_` are ignored too: `mantissa_units.cuh`'s type traits emit unused
/// `.global` bytes (`_ZN20__mantissa_is_doubleIdE5valueE`) in a marked build.
pub fn same_code(a: &Module, b: &Module) -> bool {
    fn items(m: &Module) -> Vec<&Item> {
        m.items
            .iter()
            .filter(|i| match i {
                Item::File { .. } | Item::Section { .. } => false,
                Item::Var(v) => !v.name.contains("__mantissa_"),
                _ => true,
            })
            .collect()
    }
    fn stmts(f: &Function) -> Vec<&Statement> {
        f.body
            .iter()
            .flatten()
            .filter(|s| !matches!(s, Statement::Loc(_)))
            .collect()
    }
    fn same_stmt(x: &Statement, y: &Statement) -> bool {
        match (x, y) {
            // Equal as written: ids differ, and lines never count in an instruction's equality.
            (Statement::Inst(i), Statement::Inst(j)) => {
                let written = |i: &Instruction| Instruction {
                    id: InstId(0),
                    ..i.clone()
                };
                written(i) == written(j)
            }
            _ => x == y,
        }
    }
    let (ia, ib) = (items(a), items(b));
    ia.len() == ib.len()
        && ia.iter().zip(&ib).all(|(x, y)| match (x, y) {
            (Item::Function(f), Item::Function(g)) => {
                let (sf, sg) = (stmts(f), stmts(g));
                f.linkage == g.linkage
                    && f.kind == g.kind
                    && f.name == g.name
                    && f.returns == g.returns
                    && f.params == g.params
                    && f.directives == g.directives
                    && f.body.is_some() == g.body.is_some()
                    && sf.len() == sg.len()
                    && sf.iter().zip(&sg).all(|(s, t)| same_stmt(s, t))
            }
            _ => x == y,
        })
}
