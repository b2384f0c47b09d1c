//! Per-register twins in the other float width: the rewrite [`super::demote`] (f64 → f32) and
//! [`super::promote`] (f32 → f64) share, so that both keep every use in sync the same way.
//!
//! PTX is not SSA (loops, predicated defs and join points give a register several defs), so the
//! rewrite works per register: each register R that a chosen instruction reads or writes gets a
//! twin of the other width, and chosen instructions read and write twins only. Both forms are
//! kept in sync right after every def that needs it: after a def that stays, of a register some
//! chosen instruction reads, a conversion into the twin; after a chosen def, of a register some
//! other instruction reads, a conversion back. Every use therefore reads a form written by every
//! def reaching it, and conversions sit only on the edges where values enter or leave the chosen
//! set. Registers read in the twin's width but never written in the function (a `.reg`
//! parameter) are converted once on entry. Inserted instructions carry the def's guard and
//! directly follow it (so they sit under the same `.loc`), with fresh [`InstId`]s; the twins are
//! one `.reg` declaration after the function's own (its prefix made unique against them).

use crate::decode::Decoded;
use crate::model::*;
use crate::regs::RegId;

/// Which way values cross: the twins' type and the conversions in and out of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Direction {
    /// The twins' declared type (`.f32` for demotion).
    pub(crate) twin_type: &'static str,
    /// The base of the twins' prefix (`%mdf`), made unique against the function's names.
    pub(crate) prefix: &'static str,
    /// The modifiers of the `cvt` writing a twin from its register (`rn.f32.f64`).
    pub(crate) into_twin: &'static [&'static str],
    /// The modifiers of the `cvt` writing a register from its twin (`f64.f32`).
    pub(crate) from_twin: &'static [&'static str],
}

/// How one chosen instruction is rewritten.
pub(crate) trait TwinPlan {
    /// Bit k: operand k holds a value of the converted width (a register gets a twin, an
    /// immediate is converted by [`TwinPlan::immediate`]).
    fn twinned(&self) -> u32;
    /// Whether operand 0 is a twinned def (false for `setp` and conversions out of the width).
    fn defines(&self) -> bool;
    /// An immediate at a twinned operand, in the new width.
    fn immediate(&self, imm: Imm) -> Imm;
    /// Gives `i` (its twinned operands already renamed) its new opcode and modifiers, and appends
    /// any instruction that must follow it to `more` (their ids and guards are set by the
    /// rewrite).
    fn finish(&self, i: &mut Instruction, more: &mut Vec<Instruction>);
}

/// What the rewrite of one function did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Chosen instructions rewritten.
    pub(crate) rewritten: u32,
    /// Conversions into a twin inserted (values entering the chosen set).
    pub(crate) into_twin: u32,
    /// Conversions out of a twin inserted (values leaving it).
    pub(crate) from_twin: u32,
}

/// One instruction whose code changed: its index in the function and what replaces it, printed
/// (itself rewritten or as it was, then the instructions inserted after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edited {
    /// The instruction's index among the function's instructions.
    pub(crate) k: usize,
    /// Whether it was a chosen instruction (else only conversions follow it).
    pub(crate) chosen: bool,
    /// The code replacing it, instructions separated by a space.
    pub(crate) after: String,
}

/// Per register of the function, what the rewrite needs to know.
#[derive(Debug, Clone, Copy, Default)]
struct RegUse {
    /// The twin's number (`{prefix}{twin}`), for registers a chosen instruction touches.
    twin: Option<u32>,
    /// Read by a chosen instruction (in the twin's width).
    chosen_use: bool,
    /// Read by an instruction that stays.
    plain_use: bool,
    /// Written by some instruction of the function.
    defined: bool,
}

fn cvt(
    id: InstId,
    guard: Option<Guard>,
    modifiers: &[&str],
    to: String,
    from: String,
) -> Instruction {
    Instruction {
        id,
        guard,
        opcode: "cvt".into(),
        modifiers: modifiers.iter().map(|m| m.to_string()).collect(),
        operands: vec![Operand::Reg(to), Operand::Reg(from)],
        line: SrcLine(0),
    }
}

fn operands<P: TwinPlan>(p: &P) -> impl Iterator<Item = usize> {
    let mask = p.twinned();
    (0..32).filter(move |k| mask & (1 << k) != 0)
}

/// The new body of `d`'s function with the instructions of `chosen` (by instruction index)
/// rewritten in the other width (see the module docs); inserted instructions get ids from
/// `next_id`. With `edited`, every instruction whose code changed is listed there. An error
/// names the instruction and what was wrong (a shape the plan relied on was not there).
pub(crate) fn rewrite<P: TwinPlan>(
    d: &Decoded,
    chosen: &[Option<P>],
    dir: &Direction,
    next_id: &mut u32,
    counts: &mut Counts,
    mut edited: Option<&mut Vec<Edited>>,
) -> Result<Vec<Statement>, (InstId, String)> {
    let prefix = d.regs.unused_prefix(dir.prefix);
    let mut regs = vec![RegUse::default(); d.regs.len()];
    // Twins are numbered in order of first appearance in a chosen instruction.
    let mut order: Vec<RegId> = Vec::new();
    for (k, plan) in chosen.iter().enumerate() {
        match plan {
            Some(p) => {
                for j in operands(p) {
                    let Some(Operand::Reg(r)) = d.insts[k].operands.get(j) else {
                        continue;
                    };
                    let id = d
                        .operand_reg(k, j)
                        .ok_or_else(|| (d.insts[k].id, format!("no register {r}")))?;
                    let u = &mut regs[id.0 as usize];
                    if u.twin.is_none() {
                        u.twin = Some(order.len() as u32);
                        order.push(id);
                    }
                    if j == 0 && p.defines() {
                        u.defined = true;
                    } else {
                        u.chosen_use = true;
                    }
                }
            }
            None => {
                d.uses(k)
                    .iter()
                    .for_each(|r| regs[r.0 as usize].plain_use = true);
                d.defs(k)
                    .iter()
                    .for_each(|r| regs[r.0 as usize].defined = true);
            }
        }
    }
    let twin = |r: RegId| regs[r.0 as usize].twin.map(|k| format!("{prefix}{k}"));
    let mut fresh = || {
        let id = InstId(*next_id);
        *next_id += 1;
        id
    };
    // Registers read in the twin's width but never written here: converted on entry.
    let mut entry: Vec<Statement> = Vec::new();
    for &r in &order {
        let u = regs[r.0 as usize];
        if u.chosen_use && !u.defined {
            if let Some(t) = twin(r) {
                entry.push(Statement::Inst(cvt(
                    fresh(),
                    None,
                    dir.into_twin,
                    t,
                    d.regs.name(r),
                )));
                counts.into_twin += 1;
            }
        }
    }
    let body = d.function.body.as_deref().unwrap_or(&[]);
    let first_non_decl = body
        .iter()
        .position(|s| !matches!(s, Statement::Reg(_)))
        .unwrap_or(body.len());
    let mut new_body: Vec<Statement> =
        Vec::with_capacity(body.len() + body.len() / 4 + entry.len() + 1);
    let mut entry_done = entry.is_empty();
    let mut k = 0;
    let mut more: Vec<Instruction> = Vec::new();
    for (at, s) in body.iter().enumerate() {
        if at == first_non_decl {
            // One declaration for all twins, after the compiler's own.
            new_body.push(Statement::Reg(RegDecl {
                ty: dir.twin_type.into(),
                names: vec![RegName::Range {
                    prefix: prefix.clone(),
                    count: order.len() as u32,
                }],
                line: SrcLine(0),
            }));
        }
        let Statement::Inst(original) = s else {
            new_body.push(s.clone());
            continue;
        };
        if !entry_done {
            new_body.append(&mut entry);
            entry_done = true;
        }
        let this = k;
        k += 1;
        let start = new_body.len();
        match &chosen[this] {
            Some(p) => {
                let mut i = original.clone();
                // The register the instruction defines, if its plain form is read elsewhere.
                let def_plain = match i.operands.first() {
                    Some(Operand::Reg(r)) if p.defines() => d
                        .operand_reg(this, 0)
                        .filter(|id| {
                            let u = regs[id.0 as usize];
                            u.twin.is_some() && u.plain_use
                        })
                        .map(|id| (r.clone(), id)),
                    _ => None,
                };
                for j in operands(p) {
                    let id = d.operand_reg(this, j);
                    match i.operands.get_mut(j) {
                        Some(Operand::Reg(r)) => {
                            *r = id
                                .and_then(twin)
                                .ok_or_else(|| (original.id, format!("no twin for {r}")))?;
                        }
                        Some(Operand::Imm(imm)) => *imm = p.immediate(*imm),
                        _ => return Err((original.id, "operand shape".into())),
                    }
                }
                more.clear();
                p.finish(&mut i, &mut more);
                let guard = i.guard.clone();
                new_body.push(Statement::Inst(i));
                for mut m in more.drain(..) {
                    m.id = fresh();
                    m.guard = guard.clone();
                    new_body.push(Statement::Inst(m));
                }
                counts.rewritten += 1;
                if let Some((r, id)) = def_plain {
                    let t = twin(id).ok_or_else(|| (original.id, format!("no twin for {r}")))?;
                    new_body.push(Statement::Inst(cvt(fresh(), guard, dir.from_twin, r, t)));
                    counts.from_twin += 1;
                }
            }
            None => {
                new_body.push(Statement::Inst(original.clone()));
                for &r in d.defs(this) {
                    let u = regs[r.0 as usize];
                    if !u.chosen_use {
                        continue;
                    }
                    if let Some(t) = twin(r) {
                        new_body.push(Statement::Inst(cvt(
                            fresh(),
                            original.guard.clone(),
                            dir.into_twin,
                            t,
                            d.regs.name(r),
                        )));
                        counts.into_twin += 1;
                    }
                }
            }
        }
        if let Some(list) = edited.as_deref_mut() {
            let is_chosen = chosen[this].is_some();
            if is_chosen || new_body.len() > start + 1 {
                let after: Vec<String> = new_body[start..]
                    .iter()
                    .map(|s| s.to_string().trim().to_string())
                    .collect();
                list.push(Edited {
                    k: this,
                    chosen: is_chosen,
                    after: after.join(" "),
                });
            }
        }
    }
    Ok(new_body)
}
