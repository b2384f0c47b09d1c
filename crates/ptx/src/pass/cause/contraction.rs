//! Contraction switched off per instruction. Two shapes, one cause each:
//! - an `fma` (or float `mad`) that the front end contracted from a multiply and an add becomes
//!   `mul.rn` into a new register then `add.rn` of it, the two roundings of the CPU's
//!   `a * b + c`; modifiers other than rounding (`.ftz`, `.sat`) stay on both halves as
//!   written, except `.sat`, which only the add keeps (the CPU saturates nothing, but a
//!   saturating `fma` clamps its final result, which is the add's);
//! - an unrounded `mul` whose result feeds unrounded `add`/`sub` (ptxas fuses such pairs into an
//!   FFMA under its default `--fmad=true`, though the PTX shows no `fma`) gets `.rn`, which
//!   forbids the fusion; its users are left as written, so a second product feeding the same
//!   add stays fusible and is its own candidate.

use super::{missing, outcome, Cause, Change};
use crate::model::{InstId, Module, Operand, Statement};
use crate::op::{decode, Arith, OpKind};
use crate::pass::{Outcome, Pass, PassError};
use crate::rewrite::{instruction, Guarding, Rewriter};
use std::collections::BTreeSet;

/// The pass: `fma`s split, contractible `mul`s rounded.
#[derive(Debug, Clone, Default)]
pub struct Uncontract {
    fmas: BTreeSet<InstId>,
    muls: BTreeSet<InstId>,
}

impl Uncontract {
    /// Splits the float `fma`s `fmas` and gives the unrounded `mul`s `muls` `.rn`.
    pub fn new(fmas: BTreeSet<InstId>, muls: BTreeSet<InstId>) -> Uncontract {
        Uncontract { fmas, muls }
    }
}

impl Pass for Uncontract {
    fn name(&self) -> String {
        "uncontract".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let err = |message: String| PassError {
            pass: self.name(),
            message,
        };
        let mut out = module.clone();
        let mut products: Vec<(InstId, String, String)> = Vec::new();
        for f in module.functions().filter(|f| f.body.is_some()) {
            let targets: Vec<_> = f
                .instructions()
                .filter(|i| self.fmas.contains(&i.id))
                .collect();
            if targets.is_empty() {
                continue;
            }
            let mut rw = Rewriter::new(&out, &f.name).map_err(|e| err(e.to_string()))?;
            for i in targets {
                let op = decode(i);
                let ty = op.ty.map(|t| t.name()).unwrap_or_default();
                if op.kind != OpKind::Fma || !matches!(ty, "f32" | "f64") || i.operands.len() != 4 {
                    return Err(err(format!("{}: not a float fma", i.to_string().trim())));
                }
                let t = rw.reg(ty).map_err(|e| err(e.to_string()))?;
                let mut mods = vec!["rn"];
                if op.ftz {
                    mods.push("ftz");
                }
                mods.push(ty);
                let mul = instruction(
                    "mul",
                    &mods,
                    vec![
                        Operand::Reg(t.clone()),
                        i.operands[1].clone(),
                        i.operands[2].clone(),
                    ],
                );
                let printed = match &mul {
                    Statement::Inst(m) => m.to_string(),
                    _ => String::new(),
                };
                rw.insert_before(i.id, vec![mul], Guarding::Keep)
                    .map_err(|e| err(e.to_string()))?;
                products.push((i.id, t, printed));
            }
            rw.apply(&mut out).map_err(|e| err(e.to_string()))?;
        }
        let mut changes = Vec::new();
        for f in out.functions_mut() {
            for s in f.body.iter_mut().flatten() {
                let Statement::Inst(i) = s else { continue };
                let before = i.to_string().trim().to_string();
                if let Some((_, t, mul)) = products.iter().find(|(id, _, _)| *id == i.id) {
                    i.opcode = "add".into();
                    i.modifiers.retain(|m| !is_rounding(m));
                    i.modifiers.insert(0, "rn".into());
                    let sum = i.operands[3].clone();
                    i.operands = vec![i.operands[0].clone(), Operand::Reg(t.clone()), sum];
                    let guard = i
                        .guard
                        .as_ref()
                        .map(|g| format!("@{}{} ", if g.negated { "!" } else { "" }, g.reg))
                        .unwrap_or_default();
                    let mul = format!("{guard}{}", mul.trim());
                    changes.push(Change {
                        inst: i.id,
                        before,
                        after: format!("{mul} {}", i.to_string().trim()),
                    });
                } else if self.muls.contains(&i.id) {
                    let op = decode(i);
                    if op.kind != OpKind::Arith(Arith::Mul) || op.rounding.is_some() {
                        return Err(err(format!("{before}: not an unrounded mul")));
                    }
                    i.modifiers.insert(0, "rn".into());
                    changes.push(Change {
                        inst: i.id,
                        before,
                        after: i.to_string().trim().to_string(),
                    });
                }
            }
        }
        let asked: BTreeSet<InstId> = self.fmas.union(&self.muls).copied().collect();
        missing(&self.name(), &asked, &changes)?;
        // Both kinds are one cause for a reader; the candidates say which shape each was.
        let cause = if self.fmas.is_empty() && !self.muls.is_empty() {
            Cause::Contractible
        } else {
            Cause::Contraction
        };
        Ok(outcome(self, cause, out, changes))
    }
}

fn is_rounding(m: &str) -> bool {
    matches!(m, "rn" | "rz" | "rm" | "rp")
}
