//! The rewrite of one function for [`super::demote`]: f32 twins per register, the chosen
//! instructions in their f32 forms, and conversions after the defs where values enter or leave
//! the demoted set (the module docs of [`super`] say why this keeps every use in sync).

use super::{DemoteError, FunctionReport, Plan};
use crate::decode::Decoded;
use crate::model::*;
use crate::regs::RegId;

/// Per register of the function, what the rewrite needs to know.
#[derive(Debug, Clone, Copy, Default)]
struct RegUse {
    /// The twin's number (`%mdf{twin}`), for registers a demoted instruction touches.
    twin: Option<u32>,
    /// Read by a demoted instruction (in f32).
    demoted_use: bool,
    /// Read by an instruction that stays (in f64).
    plain_use: bool,
    /// Written by some instruction of the function.
    defined: bool,
}

fn cvt(id: InstId, guard: Option<Guard>, to32: bool, reg: String, twin: String) -> Statement {
    Statement::Inst(Instruction {
        id,
        guard,
        opcode: "cvt".into(),
        modifiers: if to32 {
            vec!["rn".into(), "f32".into(), "f64".into()]
        } else {
            vec!["f64".into(), "f32".into()]
        },
        operands: if to32 {
            vec![Operand::Reg(twin), Operand::Reg(reg)]
        } else {
            vec![Operand::Reg(reg), Operand::Reg(twin)]
        },
        line: SrcLine(0),
    })
}

/// The new body of `d`'s function with the instructions of `chosen` (by instruction index)
/// demoted; inserted conversions get ids from `next_id`.
pub(super) fn rewrite(
    d: &Decoded,
    chosen: &[Option<Plan>],
    next_id: &mut u32,
    fr: &mut FunctionReport,
) -> Result<Vec<Statement>, DemoteError> {
    let name = &d.function.name;
    let malformed = |id: InstId, message: String| DemoteError::Malformed {
        function: name.clone(),
        id,
        message,
    };
    let prefix = d.regs.unused_prefix("%mdf");
    let mut regs = vec![RegUse::default(); d.regs.len()];
    // Twins are numbered in order of first appearance in a demoted instruction.
    let mut order: Vec<RegId> = Vec::new();
    for (k, plan) in chosen.iter().enumerate() {
        match plan {
            Some(p) => {
                for j in p.operands() {
                    let Some(Operand::Reg(r)) = d.insts[k].operands.get(j) else {
                        continue;
                    };
                    let id = d
                        .operand_reg(k, j)
                        .ok_or_else(|| malformed(d.insts[k].id, format!("no register {r}")))?;
                    let u = &mut regs[id.0 as usize];
                    if u.twin.is_none() {
                        u.twin = Some(order.len() as u32);
                        order.push(id);
                    }
                    if j == 0 && p.defines {
                        u.defined = true;
                    } else {
                        u.demoted_use = true;
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
    // Registers read in f32 but never written here (a `.reg` parameter): converted on entry.
    let mut entry: Vec<Statement> = Vec::new();
    for &r in &order {
        let u = regs[r.0 as usize];
        if u.demoted_use && !u.defined {
            if let Some(t) = twin(r) {
                entry.push(cvt(fresh(), None, true, d.regs.name(r), t));
                fr.cvt_to_f32 += 1;
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
    for (at, s) in body.iter().enumerate() {
        if at == first_non_decl {
            // One declaration for all twins, after the compiler's own.
            new_body.push(Statement::Reg(RegDecl {
                ty: ".f32".into(),
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
        match &chosen[this] {
            Some(p) => {
                let mut i = original.clone();
                // The f64 register the instruction defines, if its f64 form is read elsewhere.
                let def64 = match i.operands.first() {
                    Some(Operand::Reg(r)) if p.defines => d
                        .operand_reg(this, 0)
                        .filter(|id| {
                            let u = regs[id.0 as usize];
                            u.twin.is_some() && u.plain_use
                        })
                        .map(|id| (r.clone(), id)),
                    _ => None,
                };
                for j in p.operands() {
                    let id = d.operand_reg(this, j);
                    match i.operands.get_mut(j) {
                        Some(Operand::Reg(r)) => {
                            *r = id
                                .and_then(twin)
                                .ok_or_else(|| malformed(i.id, format!("no twin for {r}")))?;
                        }
                        Some(Operand::Imm(imm)) => {
                            if let Imm::F64(bits) = *imm {
                                *imm = Imm::F32(super::f64_imm_to_f32(bits));
                            }
                        }
                        _ => return Err(malformed(i.id, "operand shape".into())),
                    }
                }
                p.retype(&mut i);
                let guard = i.guard.clone();
                new_body.push(Statement::Inst(i));
                fr.demoted += 1;
                if let Some((r, id)) = def64 {
                    let t =
                        twin(id).ok_or_else(|| malformed(InstId(0), format!("no twin for {r}")))?;
                    new_body.push(cvt(fresh(), guard, false, r, t));
                    fr.cvt_to_f64 += 1;
                }
            }
            None => {
                new_body.push(Statement::Inst(original.clone()));
                for &r in d.defs(this) {
                    let u = regs[r.0 as usize];
                    if !u.demoted_use {
                        continue;
                    }
                    if let Some(t) = twin(r) {
                        new_body.push(cvt(
                            fresh(),
                            original.guard.clone(),
                            true,
                            d.regs.name(r),
                            t,
                        ));
                        fr.cvt_to_f32 += 1;
                    }
                }
            }
        }
    }
    Ok(new_body)
}
