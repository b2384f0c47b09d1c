//! The exception counting's inserted code. The sites of a function are cut into *groups*: runs
//! of about [`GROUP_SITES`] sites within one basic block, each ended before the block's
//! terminator (or after its last instruction) and before any instruction that redefines a
//! register the group's slow path reads (a site's result, operands or guard). After each site,
//! without a branch, the exponent field of its result is folded into the group's minimum (see
//! [`fold`]: two SASS instructions per f64 site, `LEA` and a three-input `VIMNMX3` shared by
//! two sites, two more per f32 site to let ±0 pass); at the end of the group one comparison and
//! one branch go to the group's out-of-line slow path when some result had the exponent field
//! of a NaN, an infinity, a subnormal or (f64) a zero. The slow path, placed after the function's last instruction, tests every site of the
//! group exactly (`testp.normal`, `setp.eq.or` with zero: normal or zero is fine; a site whose
//! guard was false is fine), counts the ones that were not fine through [`EXCEPTION_FUNCTION`]
//! with their flags, and branches back. So ptxas sees far fewer block boundaries than a branch
//! per site (contraction and scheduling as written within a group), a clean execution costs
//! two to four integer instructions per site, and a group whose f64 results include an exact
//! zero takes the slow path to find that it was fine (zero shares its exponent field with the
//! subnormals; telling them apart needs the low word too, which costs more than it saves when
//! zeros are rare; f32 zeros, common where f32 underflows, are told apart in the fast path).

use super::{dest, reg, with_guard, Scratch};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::op::ValueType;
use crate::pass::shadow::instrument::{divisor, operand_type, site_type};
use crate::pass::shadow::{flags, ShadowError, EXCEPTION_FUNCTION};
use crate::regs::RegId;
use crate::rewrite::{call, instruction, int, Guarding, Rewriter};
use std::collections::HashSet;

/// A group reaching this many sites (the `size` of [`groups`]) ends at the next site outside
/// every fusible span: every
/// result and operand of a group stays live until its branch, so an unbounded group in a long
/// block (an unrolled loop) costs many registers.
const GROUP_SITES: usize = 8;

/// Scratch register numbers: the fast path's predicates, the slow path's test and flag words,
/// and the copies of operands the sites overwrite (per position in the group and operand).
const ACC: usize = 10;
const TEST: usize = 11;
const COPIES: usize = 100;
/// b32 scratch numbers of the fast path: the group's minimum per type, a result's words, the
/// folded word.
const MIN_F64: usize = 20;
const MIN_F32: usize = 21;
const LOW_WORD: usize = 22;
const HIGH_WORD: usize = 23;
const FOLDED: usize = 24;
/// The predicate scratch number of the fast path's f32 zero test.
const ZERO: usize = 25;

/// Where a group's branch goes: before its closing instruction, or after its block's last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Close {
    Before(usize),
    After(usize),
}

impl Close {
    /// `code` (a group's branch) where the group closes.
    pub(super) fn insert(
        self,
        rw: &mut Rewriter,
        d: &Decoded,
        code: Vec<Statement>,
    ) -> Result<(), ShadowError> {
        match self {
            Close::Before(k) => rw.insert_before(d.insts[k].id, code, Guarding::Ignore)?,
            Close::After(k) => rw.insert_after(d.insts[k].id, code, Guarding::Ignore)?,
        }
        Ok(())
    }
}

/// Sites `(instruction index in d, site index)` in text order, grouped (see the module docs;
/// the demotion error's loop sites are grouped the same way, for their rare path).
pub(super) fn groups(
    d: &Decoded,
    sites: &[(usize, u32)],
    size: usize,
) -> Vec<(Vec<(usize, u32)>, Close)> {
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
            if is_site && members.len() >= size && !inside_a_span(k) {
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

/// The fast path's test of one type: a result whose high word `h` (f64) or whole word (f32)
/// has exponent field `E` folds `2·h + 2^k` (k = 21 for f64, 24 for f32: one added to the
/// exponent field, which the shift has moved to the top bits, so that the all-ones field of NaN
/// and ±inf wraps to 0) into the group's unsigned minimum; the group needs its slow path when the
/// minimum's top field is 0 or 1, i.e. some result had `E` all ones (NaN, ±inf) or 0 (a
/// subnormal or ±0), i.e. the minimum is below `2^(k+1)`.
struct Fold {
    /// The added constant, `2^k`.
    one: i128,
    /// The bound below which the slow path runs, `2^(k+1)`.
    bound: i128,
    /// Which scratch holds the group's minimum.
    min: usize,
}

fn fold_of(t: ValueType) -> Fold {
    match t {
        ValueType::F32 => Fold {
            one: 1 << 24,
            bound: 1 << 25,
            min: MIN_F32,
        },
        _ => Fold {
            one: 1 << 21,
            bound: 1 << 22,
            min: MIN_F64,
        },
    }
}

/// The fast path after site `inst` of result type `t`: its result's top word folded into the
/// group's minimum, under the site's guard (a site that did not run is fine).
fn fold(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    inst: &Instruction,
    t: ValueType,
) -> Result<Vec<Statement>, ShadowError> {
    let result = dest(inst);
    let f = fold_of(t);
    let min = scratch.reg(rw, "b32", f.min)?;
    let high = scratch.reg(rw, "b32", HIGH_WORD)?;
    let folded = scratch.reg(rw, "b32", FOLDED)?;
    let mut code = Vec::new();
    if t == ValueType::F32 {
        code.push(instruction("mov", &["b32"], vec![reg(&high), reg(&result)]));
    } else {
        let low = scratch.reg(rw, "b32", LOW_WORD)?;
        code.push(instruction(
            "mov",
            &["b64"],
            vec![Operand::Vector(vec![reg(&low), reg(&high)]), reg(&result)],
        ));
    }
    code.push(instruction(
        "mad",
        &["lo", "u32"],
        vec![reg(&folded), reg(&high), int(2), int(f.one)],
    ));
    if t == ValueType::F32 {
        // An f32 ±0 folds exactly 2^24; it is fine, so it folds all ones instead (two more
        // instructions: f32 results underflow to zero often, and each zero would take the slow
        // path; f64 zeros are rarer and take it).
        let zero = scratch.reg(rw, "pred", ZERO)?;
        code.push(instruction(
            "setp",
            &["eq", "u32"],
            vec![reg(&zero), reg(&folded), int(f.one)],
        ));
        code.push(instruction(
            "selp",
            &["b32"],
            vec![reg(&folded), int(-1), reg(&folded), reg(&zero)],
        ));
    }
    let mut min_of = instruction("min", &["u32"], vec![reg(&min), reg(&min), reg(&folded)]);
    if let (Some(g), Statement::Inst(i)) = (&inst.guard, &mut min_of) {
        i.guard = Some(g.clone());
    }
    code.push(min_of);
    Ok(code)
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
    for (members, close) in groups(d, sites, GROUP_SITES) {
        let Some(&(first_j, first)) = members.first() else {
            continue;
        };
        let slow_label = format!("{}slow{first}", scratch.labels);
        let back = format!("{}back{first}", scratch.labels);
        let mut slow_code = vec![Statement::Label(slow_label.clone(), SrcLine(0))];
        let mut types: Vec<ValueType> = Vec::new();
        for (position, &(j, index)) in members.iter().enumerate() {
            let inst = d.insts[j];
            let Some(t) = site_type(&d.ops[j]) else {
                continue;
            };
            let t = if t == ValueType::F32 {
                t
            } else {
                ValueType::F64
            };
            if !types.contains(&t) {
                types.push(t);
            }
            let after = fold(rw, scratch, inst, t)?;
            rw.insert_after(inst.id, after, Guarding::Ignore)?;
            let (before, classify) = slow_path(rw, scratch, d, j, index, position)?;
            if !before.is_empty() {
                rw.insert_before(inst.id, before, Guarding::Keep)?;
            }
            slow_code.extend(classify);
        }
        // Every minimum starts above any folded word.
        let mut start = Vec::new();
        let mut test = Vec::new();
        for &t in &types {
            let f = fold_of(t);
            let min = scratch.reg(rw, "b32", f.min)?;
            start.push(instruction("mov", &["b32"], vec![reg(&min), int(-1)]));
            let mut mods = vec!["lt"];
            let mut operands = vec![reg(&acc), reg(&min), int(f.bound)];
            if !test.is_empty() {
                mods.push("or");
                operands.push(reg(&acc));
            }
            mods.push("u32");
            test.push(instruction("setp", &mods, operands));
        }
        if types.is_empty() {
            continue;
        }
        rw.insert_before(d.insts[first_j].id, start, Guarding::Ignore)?;
        slow_code.push(instruction("bra", &[], vec![Operand::Symbol(back.clone())]));
        let mut branch = test;
        branch.extend([
            with_guard(
                instruction("bra", &[], vec![Operand::Symbol(slow_label)]),
                false,
                &acc,
            ),
            Statement::Label(back, SrcLine(0)),
        ]);
        close.insert(rw, d, branch)?;
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
