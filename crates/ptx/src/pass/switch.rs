//! The switched build: one module in which each switchable f64 instruction runs either as
//! written or demoted to f32, chosen at run time by one byte per *switch* in the module global
//! `__mantissa_switch[n]` (0: as written, anything else: f32). An accuracy-only trial of a
//! demotion configuration is then a write of that global ([`SwitchReport::mask`]) and a run, no
//! new JIT.
//!
//! **Semantics.** A switch that is on computes exactly what the static [`demote::demote`] of
//! the same instructions computes: every f64 operand rounded to f32 (`cvt.rn.f32.f64`, f64
//! immediates by [`demote::f64_imm_to_f32`]), the f32 form of the instruction as
//! `demote::plan` gives it (the one table of f32 forms), and an f64 result that is the exact
//! widening (`cvt.f64.f32`). A switch that is off runs the instruction as written: the
//! instruction itself stays in the module unchanged (same id, same text), and its result is
//! chosen afterwards: `selp dst, f32path, dst, %switch` (for a predicate result, `and`/`not`/
//! `or.pred`). The f32 path runs before the instruction, into fresh registers, so an
//! instruction whose destination is also a source reads its operands before anything is
//! written. Everything inserted carries the instruction's guard ([`Guarding::Keep`]) and sits
//! under its `.loc`.
//!
//! **The switch** is `ld.global.u8` of the switch's byte and `setp.ne.u16`, right before the
//! instruction: one load per switched instruction (an L1 hit: every thread reads one address).
//!
//! **Contraction.** ptxas fuses an unrounded `mul` whose result feeds an unrounded `add`/`sub`
//! of the same type into one FMA. A `selp` between the two would stop that, so the switched
//! build with every switch off would no longer be the program as written. Such a pair — an
//! unrounded `mul.f64` whose only use is an unrounded `add`/`sub.f64` that reads it from that
//! `mul` alone (an `add` may have two such `mul`s) — is one switch: with the switch off the
//! `mul` and `add` run as written, the `mul`'s result read by the `add` only; with it on,
//! `mul.f32` (computed where the `mul` is) and `add.f32` (where the `add` is), unrounded as
//! the static demotion prints them, so ptxas may fuse them the same way; one `selp` on the
//! `add`'s result. A configuration that demotes part of such a group is not representable
//! ([`NotRepresentable::PartOfAGroup`]): the caller builds it statically. An unrounded `mul`
//! with an `add`/`sub` use that is not such a pair (other uses too, or the `add` also reads a
//! value from elsewhere in that register, or a member outside the switchable set) is refused
//! with the `add`s it feeds, and stays as written.
//!
//! **Refused** (reported with the reason, and left exactly as written): math-function units
//! ([`crate::units`]: several instructions demoted as one call: static builds only), f64
//! instructions that are not eligible for demotion at all, `setp` with two predicate results or
//! a combining operation, an instruction that writes its own guard predicate, and the
//! contraction cases above.

use super::demote::{self, Candidate, DemoteSet, Plan, Selector};
use super::{Outcome, Pass, PassError, Report};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::graph::Graph;
use crate::model::*;
use crate::op::{Arith, OpKind, ValueType};
use crate::rewrite::{self, instruction, int, Guarding, RewriteError, Rewriter};
use crate::site::Site;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The switch array's name (a name the module already has gets a suffix; see
/// [`SwitchReport::global`]).
pub const SWITCH_GLOBAL: &str = "__mantissa_switch";

/// One instruction of a switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// Its id in the input module (kept in the switched one).
    pub inst: InstId,
    /// Its address.
    pub site: Site,
    /// Its selector (how configurations written before sites name it).
    pub selector: Option<Selector>,
    /// Its full opcode (`mul.f64`), for reading reports.
    pub opcode: String,
}

/// One switch: the instructions that go to f32 together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Switch {
    /// Its byte in the switch array.
    pub index: u32,
    /// The function holding its instructions.
    pub function: String,
    /// One instruction, or a contractible `mul`→`add` group (the `mul`s first), in text order.
    pub members: Vec<Member>,
}

/// An instruction asked for that does not switch, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedSite {
    /// Its id in the input module.
    pub inst: InstId,
    /// Its address.
    pub site: Site,
    /// Its selector, when it is eligible for (static) demotion.
    pub selector: Option<Selector>,
    /// Whether the static demotion would demote it (so a configuration naming it, or `all`,
    /// needs a static build).
    pub eligible: bool,
    /// Why it does not switch.
    pub reason: String,
}

/// What [`switch`] built: the switch array and what each byte switches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchReport {
    /// The switch array's name in the module (`__mantissa_switch` unless that was taken).
    pub global: String,
    /// Switch `k` is byte `k` of the array.
    pub switches: Vec<Switch>,
    /// Instructions asked for that do not switch.
    pub refused: Vec<RefusedSite>,
    /// Requests that name no f64 instruction of the module.
    pub unmatched: Vec<String>,
    /// Whether the build was asked for every instruction the static demotion can demote (so
    /// that a configuration demoting "all" can be represented).
    pub complete: bool,
}

/// Why a configuration cannot run on the switched build (the caller builds it statically).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRepresentable {
    /// The configuration names an instruction that has no switch and was not refused: not an
    /// f64 instruction of this module, or outside the set the build was made for.
    #[error("{requested}: not a switchable instruction of this build")]
    NotACandidate {
        /// The site, selector or id as requested.
        requested: String,
    },
    /// The configuration names (or `all` includes) an instruction that was refused.
    #[error("{requested}: {reason}")]
    Refused {
        /// The site, selector or id.
        requested: String,
        /// Why it has no switch.
        reason: String,
    },
    /// The configuration demotes one member of a contractible group and not another.
    #[error("{requested} is demoted but {missing} is not: ptxas fuses the two into one FMA, so they switch together")]
    PartOfAGroup {
        /// The member the configuration demotes.
        requested: String,
        /// A member of the same switch it leaves in f64.
        missing: String,
    },
}

/// The switched module and its report.
#[derive(Debug, Clone)]
pub struct Switched {
    /// The module with every switch off by default (the array is zero-initialised).
    pub module: Module,
    /// What each switch byte switches.
    pub report: SwitchReport,
}

/// Why [`switch`] failed: an edit the rewriter refused (a bug of this pass, not bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// An edit failed.
    #[error(transparent)]
    Rewrite(#[from] RewriteError),
}

impl SwitchReport {
    /// The switch array's bytes for a configuration demoting `set` (of the module the build was
    /// made from): 1 for each switch the set demotes whole, 0 elsewhere. Its length is the
    /// array's (at least 1: PTX has no empty arrays).
    pub fn mask(&self, set: &DemoteSet) -> Result<Vec<u8>, NotRepresentable> {
        let mut mask = vec![0u8; self.slots()];
        if set.all {
            if !self.complete {
                return Err(NotRepresentable::NotACandidate {
                    requested: "all: the build switches only some of the eligible instructions"
                        .into(),
                });
            }
            if let Some(r) = self.refused.iter().find(|r| r.eligible) {
                return Err(NotRepresentable::Refused {
                    requested: r.site.to_string(),
                    reason: r.reason.clone(),
                });
            }
            for s in &self.switches {
                mask[s.index as usize] = 1;
            }
            return Ok(mask);
        }
        // (switch, member) of every switched instruction, by each way a configuration names it.
        let mut by_id: HashMap<InstId, (usize, usize)> = HashMap::new();
        let mut by_site: HashMap<&Site, (usize, usize)> = HashMap::new();
        let mut by_selector: HashMap<&Selector, (usize, usize)> = HashMap::new();
        for (k, s) in self.switches.iter().enumerate() {
            for (j, m) in s.members.iter().enumerate() {
                by_id.insert(m.inst, (k, j));
                by_site.insert(&m.site, (k, j));
                if let Some(sel) = &m.selector {
                    by_selector.insert(sel, (k, j));
                }
            }
        }
        let refused = |found: Option<&RefusedSite>, requested: String| match found {
            Some(r) => NotRepresentable::Refused {
                requested,
                reason: r.reason.clone(),
            },
            None => NotRepresentable::NotACandidate { requested },
        };
        let mut chosen: BTreeMap<usize, HashSet<usize>> = BTreeMap::new();
        for id in &set.ids {
            let at = by_id.get(id).ok_or_else(|| {
                refused(self.refused.iter().find(|r| r.inst == *id), id.to_string())
            })?;
            chosen.entry(at.0).or_default().insert(at.1);
        }
        for site in &set.sites {
            let at = by_site.get(site).ok_or_else(|| {
                refused(
                    self.refused.iter().find(|r| r.site == *site),
                    site.to_string(),
                )
            })?;
            chosen.entry(at.0).or_default().insert(at.1);
        }
        for sel in &set.selectors {
            let at = by_selector.get(sel).ok_or_else(|| {
                refused(
                    self.refused
                        .iter()
                        .find(|r| r.selector.as_ref() == Some(sel)),
                    sel.to_string(),
                )
            })?;
            chosen.entry(at.0).or_default().insert(at.1);
        }
        for (k, members) in chosen {
            let s = &self.switches[k];
            if let Some(missing) = (0..s.members.len()).find(|j| !members.contains(j)) {
                let requested = members.iter().next().map_or(0, |&j| j);
                return Err(NotRepresentable::PartOfAGroup {
                    requested: s.members[requested].site.to_string(),
                    missing: s.members[missing].site.to_string(),
                });
            }
            mask[s.index as usize] = 1;
        }
        Ok(mask)
    }

    /// The array's length in bytes: one per switch, at least 1.
    pub fn slots(&self) -> usize {
        self.switches.len().max(1)
    }
}

/// The reason every math-function unit member is refused with.
const UNIT_REASON: &str = "a math-function unit: static builds only";

/// Builds the switched module: every instruction of `set` (of `module`) that can switch gets a
/// switch; see the module docs.
pub fn switch(module: &Module, set: &DemoteSet) -> Result<Switched, SwitchError> {
    let (wanted, unmatched, complete) = requested(module, set);
    let mut out = module.clone();
    let mut plans: Vec<(String, Vec<Group>)> = Vec::new();
    let mut refused = Vec::new();
    for f in module.functions().filter(|f| f.body.is_some()) {
        let asked: Vec<&Candidate> = wanted.iter().filter(|c| c.function == f.name).collect();
        if asked.is_empty() {
            continue;
        }
        let d = Decoded::of(f);
        let g = Graph::of(&d, &Cfg::build(&d));
        let groups = group(&d, &g, &asked, &mut refused);
        plans.push((f.name.clone(), groups));
    }
    let slots = plans.iter().map(|(_, g)| g.len()).sum::<usize>().max(1);
    let global = rewrite::add_global(&mut out, "u8", 1, SWITCH_GLOBAL, slots as u64);
    let mut switches = Vec::new();
    for (function, groups) in plans {
        let mut rw = Rewriter::new(&out, &function)?;
        for grp in groups {
            let index = switches.len() as u32;
            emit(&mut rw, &grp, &global, index)?;
            switches.push(Switch {
                index,
                function: function.clone(),
                members: grp.members.into_iter().map(|m| m.member).collect(),
            });
        }
        rw.apply(&mut out)?;
    }
    Ok(Switched {
        module: out,
        report: SwitchReport {
            global,
            switches,
            refused,
            unmatched,
            complete,
        },
    })
}

/// The f64 instructions `set` names (eligible or not), the requests naming none, and whether
/// every eligible instruction is named.
fn requested(module: &Module, set: &DemoteSet) -> (Vec<Candidate>, Vec<String>, bool) {
    let all = demote::candidates(module);
    let eligible = all.iter().filter(|c| c.selector.is_some()).count();
    let ids: HashSet<InstId> = set.ids.iter().copied().collect();
    let sites: HashSet<&Site> = set.sites.iter().collect();
    let selectors: HashSet<&Selector> = set.selectors.iter().collect();
    let known_ids: HashSet<InstId> = all.iter().map(|c| c.id).collect();
    let known_sites: HashSet<&Site> = all.iter().map(|c| &c.site).collect();
    let known_selectors: HashSet<&Selector> =
        all.iter().filter_map(|c| c.selector.as_ref()).collect();
    let unmatched: Vec<String> = (set.ids.iter())
        .filter(|id| !known_ids.contains(*id))
        .map(InstId::to_string)
        .chain(
            (set.sites.iter())
                .filter(|s| !known_sites.contains(s))
                .map(Site::to_string),
        )
        .chain(
            (set.selectors.iter())
                .filter(|s| !known_selectors.contains(s))
                .map(Selector::to_string),
        )
        .collect();
    let wanted = all
        .into_iter()
        .filter(|c| {
            // `all` asks for what the static demotion demotes, and units (to say why not).
            (set.all && (c.selector.is_some() || c.unit.is_some()))
                || ids.contains(&c.id)
                || sites.contains(&c.site)
                || c.selector.as_ref().is_some_and(|s| selectors.contains(s))
        })
        .collect::<Vec<Candidate>>();
    let complete = wanted.iter().filter(|c| c.selector.is_some()).count() == eligible;
    (wanted, unmatched, complete)
}

/// One instruction of a group, with what emitting it needs.
struct Planned {
    k: usize,
    plan: Plan,
    member: Member,
    /// The instruction as written.
    inst: Instruction,
    /// The type of its result register.
    result: ValueType,
}

/// The instructions of one switch, in text order; the last one's result is selected.
struct Group {
    members: Vec<Planned>,
    /// The register holding the last member's result, and its type.
    dst: (String, ValueType),
}

fn is_unrounded(d: &Decoded, k: usize, arith: &[Arith]) -> bool {
    let op = &d.ops[k];
    matches!(op.kind, OpKind::Arith(a) if arith.contains(&a))
        && op.rounding.is_none()
        && !op.sat
        && op.ty == Some(ValueType::F64)
}

/// Sorts the asked-for instructions of one function into switches, refusing the rest.
fn group(
    d: &Decoded,
    g: &Graph,
    asked: &[&Candidate],
    refused: &mut Vec<RefusedSite>,
) -> Vec<Group> {
    let planned = |k: usize, (plan, c, dst): &(Plan, &Candidate, (String, ValueType))| Planned {
        k,
        plan: *plan,
        member: Member {
            inst: c.id,
            site: c.site.clone(),
            selector: c.selector.clone(),
            opcode: c.opcode.clone(),
        },
        inst: d.insts[k].clone(),
        result: dst.1,
    };
    let refuse = |refused: &mut Vec<RefusedSite>, c: &Candidate, reason: &str| {
        refused.push(RefusedSite {
            inst: c.id,
            site: c.site.clone(),
            selector: c.selector.clone(),
            eligible: c.selector.is_some(),
            reason: reason.to_string(),
        })
    };
    // The switchable instructions by position, with their plan and result register.
    let mut ok: BTreeMap<usize, (Plan, &Candidate, (String, ValueType))> = BTreeMap::new();
    for &c in asked {
        if c.unit.is_some() {
            refuse(refused, c, UNIT_REASON);
            continue;
        }
        if let Some(reason) = &c.reason {
            refuse(refused, c, reason);
            continue;
        }
        let Some(k) = g.index_of(c.id) else { continue };
        match switchable(d, k) {
            Ok((plan, dst)) => {
                ok.insert(k, (plan, c, dst));
            }
            Err(reason) => refuse(refused, c, &reason),
        }
    }
    // Contraction groups: every unrounded mul.f64 with an unrounded add/sub.f64 use, whether
    // asked for or not (an add that switches alone would change what ptxas may fuse).
    let mut parent: HashMap<usize, usize> = HashMap::new();
    fn root(parent: &HashMap<usize, usize>, mut k: usize) -> usize {
        while let Some(&p) = parent.get(&k).filter(|&&p| p != k) {
            k = p;
        }
        k
    }
    let users = |k: usize| -> Vec<usize> {
        let mut u: Vec<usize> = g
            .uses_of(d.insts[k].id)
            .filter_map(|e| g.index_of(e.user))
            .collect();
        u.sort_unstable();
        u.dedup();
        u
    };
    for k in 0..d.len() {
        if !is_unrounded(d, k, &[Arith::Mul]) {
            continue;
        }
        for u in users(k) {
            if is_unrounded(d, u, &[Arith::Add, Arith::Sub]) {
                let (a, b) = (root(&parent, k), root(&parent, u));
                parent.entry(a).or_insert(a);
                parent.insert(b, a);
            }
        }
    }
    let mut components: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &k in parent.keys() {
        components.entry(root(&parent, k)).or_default().push(k);
    }
    let mut in_group: HashSet<usize> = HashSet::new();
    let mut groups: Vec<Group> = Vec::new();
    for (_, mut ks) in components {
        ks.sort_unstable();
        in_group.extend(ks.iter().copied());
        let adds: Vec<usize> = ks
            .iter()
            .copied()
            .filter(|&k| is_unrounded(d, k, &[Arith::Add, Arith::Sub]))
            .collect();
        let why = if adds.len() != 1 {
            Some("an unrounded mul that feeds several add/sub ptxas may fuse it into: static builds only")
        } else if ks
            .iter()
            .any(|&k| k != adds[0] && !mul_feeds_only(d, g, k, adds[0]))
        {
            Some("an unrounded mul→add/sub pair ptxas may fuse into an FMA, where the mul has other uses or the add reads that register from elsewhere too: static builds only")
        } else if ks.iter().any(|k| !ok.contains_key(k)) {
            Some("an unrounded mul→add/sub pair ptxas may fuse into an FMA, with a member that cannot switch: static builds only")
        } else {
            None
        };
        match why {
            Some(reason) => {
                for k in ks {
                    if let Some((_, c, _)) = ok.get(&k) {
                        refuse(refused, c, reason);
                    }
                }
            }
            None => {
                let last = adds[0];
                let mut members: Vec<usize> = ks.iter().copied().filter(|&k| k != last).collect();
                members.push(last);
                let dst = ok[&last].2.clone();
                groups.push(Group {
                    members: members.into_iter().map(|k| planned(k, &ok[&k])).collect(),
                    dst,
                });
            }
        }
    }
    for (k, entry) in &ok {
        if !in_group.contains(k) {
            groups.push(Group {
                members: vec![planned(*k, entry)],
                dst: entry.2.clone(),
            });
        }
    }
    // Switches in text order of the instruction whose result they select.
    groups.sort_by_key(|grp| grp.members.last().map_or(0, |m| m.k));
    groups
}

/// Whether `mul`'s only use is `add`, and `add` reads that register from `mul` alone.
fn mul_feeds_only(d: &Decoded, g: &Graph, mul: usize, add: usize) -> bool {
    let id = d.insts[mul].id;
    let Some(&reg) = d.defs(mul).first() else {
        return false;
    };
    let uses_only_add = g.uses_of(id).all(|e| g.index_of(e.user) == Some(add));
    let mut add_defs: Vec<InstId> = g
        .defs_of(d.insts[add].id)
        .filter(|e| e.reg == reg)
        .map(|e| e.def)
        .collect();
    add_defs.dedup();
    uses_only_add && d.defs(mul).len() == 1 && add_defs == [id]
}

/// The f32 plan of instruction `k` and its result register with its type, or why it cannot
/// switch (it is eligible for demotion: [`demote::plan`] accepts it).
fn switchable(d: &Decoded, k: usize) -> Result<(Plan, (String, ValueType)), String> {
    let inst = d.insts[k];
    let plan = demote::plan(d, k).map_err(|(reason, _)| reason)?;
    if d.ops[k].combine.is_some() {
        return Err("setp with a combining predicate operation: static builds only".into());
    }
    if d.defs(k).len() != 1 {
        return Err("two results (setp p|q): static builds only".into());
    }
    if inst
        .guard
        .as_ref()
        .is_some_and(|gd| inst.defs().contains(&gd.reg.as_str()))
    {
        return Err("writes its own guard predicate: static builds only".into());
    }
    let (Some(Operand::Reg(dst)), Some(ty)) =
        (inst.operands.first(), d.regs.value_type(d.defs(k)[0]))
    else {
        return Err("its result is not a register of a known type".into());
    };
    Ok((plan, (dst.clone(), ty)))
}

/// Inserts the f32 path and the selection of one switch.
fn emit(rw: &mut Rewriter, grp: &Group, global: &str, index: u32) -> Result<(), RewriteError> {
    let Some((last, muls)) = grp.members.split_last() else {
        return Ok(());
    };
    // The f32 results of the group's muls, by the f64 register they stand for: the add reads
    // them as they are, as in the static demotion, so that ptxas may fuse the two.
    let mut twins: HashMap<String, String> = HashMap::new();
    for m in muls {
        let (code, y) = f32_path(rw, m, &twins)?;
        rw.insert_before(m.member.inst, code, Guarding::Keep)?;
        if let Some(Operand::Reg(r)) = m.inst.operands.first() {
            twins.insert(r.clone(), y);
        }
    }
    let (mut code, y) = f32_path(rw, last, &twins)?;
    let (dst, ty) = (&grp.dst.0, grp.dst.1);
    let reg = |r: &str| Operand::Reg(r.to_string());
    let chosen = if last.plan.defines {
        let z = rw.reg("f64")?;
        code.push(instruction("cvt", &["f64", "f32"], vec![reg(&z), reg(&y)]));
        z
    } else {
        y
    };
    let byte = rw.reg("u16")?;
    let on = rw.reg("pred")?;
    code.push(instruction(
        "ld",
        &["global", "u8"],
        vec![
            reg(&byte),
            Operand::Addr {
                base: global.to_string(),
                offset: i64::from(index),
            },
        ],
    ));
    code.push(instruction(
        "setp",
        &["ne", "u16"],
        vec![reg(&on), reg(&byte), int(0)],
    ));
    rw.insert_before(last.member.inst, code, Guarding::Keep)?;
    let after = if ty == ValueType::Pred {
        let (a, off, b) = (rw.reg("pred")?, rw.reg("pred")?, rw.reg("pred")?);
        vec![
            instruction("and", &["pred"], vec![reg(&a), reg(&chosen), reg(&on)]),
            instruction("not", &["pred"], vec![reg(&off), reg(&on)]),
            instruction("and", &["pred"], vec![reg(&b), reg(dst), reg(&off)]),
            instruction("or", &["pred"], vec![reg(dst), reg(&a), reg(&b)]),
        ]
    } else {
        vec![instruction(
            "selp",
            &[ty.name()],
            vec![reg(dst), reg(&chosen), reg(dst), reg(&on)],
        )]
    };
    rw.insert_after(last.member.inst, after, Guarding::Keep)
}

/// The f32 form of one instruction on rounded copies of its f64 operands (or on `twins`, the
/// f32 results standing for f64 registers), into a fresh register; returns the code and that
/// register (f32, or the result's own type where the f64 form's result is not f64).
fn f32_path(
    rw: &mut Rewriter,
    p: &Planned,
    twins: &HashMap<String, String>,
) -> Result<(Vec<Statement>, String), RewriteError> {
    let mut code = Vec::new();
    let mut f = p.inst.clone();
    f.guard = None;
    p.plan.retype(&mut f);
    for j in p.plan.operands().filter(|&j| j > 0 || !p.plan.defines) {
        match p.inst.operands.get(j) {
            Some(Operand::Reg(r)) => {
                let x = match twins.get(r) {
                    Some(t) => t.clone(),
                    None => {
                        let x = rw.reg("f32")?;
                        code.push(instruction(
                            "cvt",
                            &["rn", "f32", "f64"],
                            vec![Operand::Reg(x.clone()), Operand::Reg(r.clone())],
                        ));
                        x
                    }
                };
                f.operands[j] = Operand::Reg(x);
            }
            Some(Operand::Imm(Imm::F64(bits))) => {
                f.operands[j] = Operand::Imm(Imm::F32(demote::f64_imm_to_f32(*bits)));
            }
            _ => {}
        }
    }
    let y = rw.reg(if p.plan.defines {
        "f32"
    } else {
        p.result.name()
    })?;
    f.operands[0] = Operand::Reg(y.clone());
    code.push(Statement::Inst(f));
    Ok((code, y))
}

/// [`switch`] as a [`Pass`], for pipelines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SwitchPass {
    /// The instructions that may switch.
    pub set: DemoteSet,
}

impl Pass for SwitchPass {
    fn name(&self) -> String {
        "switch".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let s = switch(module, &self.set).map_err(|e| PassError {
            pass: self.name(),
            message: e.to_string(),
        })?;
        let r = &s.report;
        let members: usize = r.switches.iter().map(|s| s.members.len()).sum();
        let summary = format!(
            "{} switches over {members} instructions in {}; {} refused",
            r.switches.len(),
            r.global,
            r.refused.len()
        );
        let mut notes: Vec<String> = r
            .refused
            .iter()
            .map(|x| format!("{}: {}", x.site, x.reason))
            .collect();
        notes.extend(
            r.unmatched
                .iter()
                .map(|u| format!("{u}: names no f64 instruction")),
        );
        Ok(Outcome {
            module: s.module,
            report: Report::new("switch", summary, notes, s.report),
        })
    }
}

#[cfg(test)]
#[path = "switch_tests.rs"]
mod tests;
