//! The exception counting's inserted code. The sites of a function are cut into *groups*: runs
//! of about [`GROUP_SITES`] sites within one basic block, each ended before the block's
//! terminator (or after its last instruction) and before any instruction that redefines a
//! register the group's slow path reads (a site's result, operands or guard). After each site,
//! without a branch, its result is tested (`testp.normal`, `setp.eq.or` with zero: normal or
//! zero is fine; a site whose guard is false is fine) and folded into the group's predicate; at
//! the end of the group one branch goes to the group's out-of-line slow path where any site was
//! not fine. The slow path, placed after the function's last instruction, classifies every site
//! of the group as the fast path did, counts the ones that were not fine through
//! [`EXCEPTION_FUNCTION`] with their flags, and branches back. So ptxas sees far fewer block
//! boundaries than a branch per site (contraction and scheduling as written within a group),
//! and a clean execution costs a few predicate instructions per site.

use super::{dest, reg, Scratch};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::op::ValueType;
use crate::pass::shadow::instrument::{divisor, operand_type, site_type};
use crate::pass::shadow::{flags, ShadowError, EXCEPTION_FUNCTION};
use crate::regs::RegId;
use crate::rewrite::{call, instruction, int, Guarding, Rewriter};
use std::collections::HashSet;

/// A group reaching this many sites ends at the next site outside every fusible span: every
/// result and operand of a group stays live until its branch, so an unbounded group in a long
/// block (an unrolled loop) costs many registers.
const GROUP_SITES: usize = 8;

/// Scratch register numbers: the fast path's predicates, the slow path's test and flag words,
/// and the copies of operands the sites overwrite (per position in the group and operand).
const ACC: usize = 10;
const TEST: usize = 11;
const COPIES: usize = 100;

/// Where a group's branch goes: before its closing instruction, or after its block's last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    Before(usize),
    After(usize),
}

/// Sites `(instruction index in d, site index)` in text order, grouped (see the module docs).
fn groups(d: &Decoded, sites: &[(usize, u32)]) -> Vec<(Vec<(usize, u32)>, Close)> {
    let cfg = Cfg::build(d);
    // A group cut for its size is not cut between a product ptxas may fuse and its adds: a
    // block boundary there could change what ptxas fuses (seen in options_f32 under `fast`).
    let spans: Vec<(usize, usize)> = super::fusible_spans(d)
        .into_iter()
        .filter_map(|span| Some((*span.iter().min()?, *span.iter().max()?)))
        .collect();
    let inside_a_span = |k: usize| spans.iter().any(|&(a, b)| a < k && k <= b);
    let mut out = Vec::new();
    let mut s = 0;
    while s < sites.len() {
        let block = &cfg.blocks[cfg.block_of[sites[s].0]];
        let mut members = Vec::new();
        let mut watched: HashSet<RegId> = HashSet::new();
        let mut close = None;
        for k in sites[s].0..block.end {
            let is_site = s < sites.len() && sites[s].0 == k;
            if !members.is_empty() && d.defs(k).iter().any(|r| watched.contains(r)) {
                close = Some(Close::Before(k));
                break;
            }
            if d.ops[k].control().is_some_and(|c| {
                matches!(
                    c,
                    crate::op::Control::Bra
                        | crate::op::Control::Brx
                        | crate::op::Control::Ret
                        | crate::op::Control::Exit
                        | crate::op::Control::Trap
                )
            }) {
                close = Some(Close::Before(k));
                break;
            }
            if is_site && members.len() >= GROUP_SITES && !inside_a_span(k) {
                close = Some(Close::Before(k));
                break;
            }
            if is_site {
                members.push(sites[s]);
                watched.extend(d.uses(k).iter().chain(d.defs(k)).copied());
                s += 1;
            }
        }
        out.push((members, close.unwrap_or(Close::After(block.end - 1))));
    }
    out
}

/// Whether a float immediate is NaN, ±inf, ±0.
fn imm_class(imm: &Imm) -> (bool, bool, bool) {
    let x = match *imm {
        Imm::F32(b) => f64::from(f32::from_bits(b)),
        Imm::F64(b) => f64::from_bits(b),
        Imm::Int { value, .. } => value as f64,
    };
    (x.is_nan(), x.is_infinite(), x == 0.0)
}

/// A typed float zero.
fn zero(t: ValueType) -> Operand {
    Operand::Imm(match t {
        ValueType::F32 => Imm::F32(0),
        _ => Imm::F64(0),
    })
}

fn with_guard(mut s: Statement, negated: bool, pred: &str) -> Statement {
    if let Statement::Inst(i) = &mut s {
        i.guard = Some(Guard {
            negated,
            reg: pred.to_string(),
        });
    }
    s
}

/// `p = result is normal or zero`, and, for a guarded site, `p |= !guard`.
fn fine(p: &str, inst: &Instruction, t: ValueType) -> Vec<Statement> {
    let result = dest(inst);
    let mut code = vec![
        instruction("testp", &["normal", t.name()], vec![reg(p), reg(&result)]),
        instruction(
            "setp",
            &["eq", "or", t.name()],
            vec![reg(p), reg(&result), zero(t), reg(p)],
        ),
    ];
    if let Some(g) = &inst.guard {
        let not_guard = if g.negated {
            reg(&g.reg)
        } else {
            Operand::Not(Box::new(reg(&g.reg)))
        };
        code.push(instruction(
            "or",
            &["pred"],
            vec![reg(p), reg(p), not_guard],
        ));
    }
    code
}

/// Instruments the exception sites `sites` of the function of `d` (text order): the fast path
/// through `rw`; returns the slow paths, for after the function's last instruction.
pub(super) fn instrument(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    d: &Decoded,
    sites: &[(usize, u32)],
) -> Result<Vec<Statement>, ShadowError> {
    let mut slow = Vec::new();
    let acc = scratch.reg(rw, "pred", ACC)?;
    let test = scratch.reg(rw, "pred", TEST)?;
    for (members, close) in groups(d, sites) {
        let Some(&(_, first)) = members.first() else {
            continue;
        };
        let slow_label = format!("{}slow{first}", scratch.labels);
        let back = format!("{}back{first}", scratch.labels);
        let mut slow_code = vec![Statement::Label(slow_label.clone(), SrcLine(0))];
        for (position, &(j, index)) in members.iter().enumerate() {
            let inst = d.insts[j];
            let Some(t) = site_type(&d.ops[j]) else {
                continue;
            };
            let mut after = fine(if position == 0 { &acc } else { &test }, inst, t);
            if position > 0 {
                after.push(instruction(
                    "and",
                    &["pred"],
                    vec![reg(&acc), reg(&acc), reg(&test)],
                ));
            }
            rw.insert_after(inst.id, after, Guarding::Ignore)?;
            let (before, classify) = slow_path(rw, scratch, d, j, index, position)?;
            if !before.is_empty() {
                rw.insert_before(inst.id, before, Guarding::Keep)?;
            }
            slow_code.extend(classify);
        }
        slow_code.push(instruction("bra", &[], vec![Operand::Symbol(back.clone())]));
        let branch = vec![
            with_guard(
                instruction("bra", &[], vec![Operand::Symbol(slow_label)]),
                true,
                &acc,
            ),
            Statement::Label(back, SrcLine(0)),
        ];
        match close {
            Close::Before(k) => rw.insert_before(d.insts[k].id, branch, Guarding::Ignore)?,
            Close::After(k) => rw.insert_after(d.insts[k].id, branch, Guarding::Ignore)?,
        }
        slow.extend(slow_code);
    }
    Ok(slow)
}

/// The slow path of site `index` (instruction `j`, `position` in its group): the operand
/// copies to take before the instruction, and the code that skips the site where its guard was
/// false or its result is fine, and otherwise computes the flags and calls the runtime.
fn slow_path(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    d: &Decoded,
    j: usize,
    index: u32,
    position: usize,
) -> Result<(Vec<Statement>, Vec<Statement>), ShadowError> {
    let inst = d.insts[j];
    let op = &d.ops[j];
    let mut before = Vec::new();
    let mut code = Vec::new();
    let Some(t) = site_type(op) else {
        return Ok((before, code));
    };
    let result = dest(inst);
    let next = format!("{}next{index}", scratch.labels);
    let q = scratch.reg(rw, "pred", TEST)?;
    let bits = scratch.reg(rw, "b32", 0)?;
    let part = scratch.reg(rw, "b32", 1)?;
    code.extend(fine(&q, inst, t));
    code.push(with_guard(
        instruction("bra", &[], vec![Operand::Symbol(next.clone())]),
        false,
        &q,
    ));
    let mut constant = 0u32;
    let mut first = true;
    let mut set = |code: &mut Vec<Statement>, test: Statement, flag: u32| {
        code.push(test);
        let target = if first { &bits } else { &part };
        code.push(instruction(
            "selp",
            &["b32"],
            vec![reg(target), int(flag.into()), int(0), reg(&q)],
        ));
        if !first {
            code.push(instruction(
                "or",
                &["b32"],
                vec![reg(&bits), reg(&bits), reg(&part)],
            ));
        }
        first = false;
    };
    let testp = |what: &str, t: ValueType, x: &str| {
        instruction("testp", &[what, t.name()], vec![reg(&q), reg(x)])
    };
    set(&mut code, testp("notanumber", t, &result), flags::NAN);
    set(&mut code, testp("infinite", t, &result), flags::INF);
    set(&mut code, testp("subnormal", t, &result), flags::SUBNORMAL);
    for (o, operand) in inst.operands.iter().enumerate().skip(1) {
        let Some(ot) = operand_type(op, o) else {
            continue;
        };
        let x = match operand {
            Operand::Reg(r) if *r == result => {
                // The instruction overwrites this operand: read a copy taken before it, one per
                // position in the group (the slow path runs after the whole group).
                let ty = if ot == ValueType::F32 { "f32" } else { "f64" };
                let saved = scratch.reg(rw, ty, COPIES + 4 * position + o)?;
                before.push(instruction("mov", &[ot.name()], vec![reg(&saved), reg(r)]));
                saved
            }
            Operand::Reg(r) => r.clone(),
            Operand::Imm(imm) => {
                let (nan, inf, is_zero) = imm_class(imm);
                constant |= if nan { flags::OPERAND_NAN } else { 0 }
                    | if inf { flags::OPERAND_INF } else { 0 }
                    | if is_zero && divisor(op) == Some(o) {
                        flags::DIV_BY_ZERO
                    } else {
                        0
                    };
                continue;
            }
            _ => continue,
        };
        set(&mut code, testp("notanumber", ot, &x), flags::OPERAND_NAN);
        set(&mut code, testp("infinite", ot, &x), flags::OPERAND_INF);
        if divisor(op) == Some(o) {
            let eq = instruction("setp", &["eq", ot.name()], vec![reg(&q), reg(&x), zero(ot)]);
            set(&mut code, eq, flags::DIV_BY_ZERO);
        }
    }
    if constant != 0 {
        code.push(instruction(
            "or",
            &["b32"],
            vec![reg(&bits), reg(&bits), int(constant.into())],
        ));
    }
    code.extend(call(
        EXCEPTION_FUNCTION,
        &[("b32", int(index.into())), ("b32", reg(&bits))],
    ));
    code.push(Statement::Label(next, SrcLine(0)));
    Ok((before, code))
}
