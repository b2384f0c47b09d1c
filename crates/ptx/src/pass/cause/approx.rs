//! Approximate division, reciprocal and square roots switched to the correctly rounded forms a
//! CPU computes: `div.approx`/`div.full` → `div.rn`, `rcp.approx` → `rcp.rn`, `sqrt.approx` →
//! `sqrt.rn`, and `rsqrt.approx` (which has no `.rn` form) → `sqrt.rn` then `div.rn` of 1, as
//! `1.0f / sqrtf(x)` compiles without fast math. `.ftz` is kept (it is its own cause).

use super::{missing, outcome, Cause, Change};
use crate::model::{Imm, InstId, Module, Operand, Statement};
use crate::op::{decode, Op, OpKind};
use crate::pass::{Outcome, Pass, PassError};
use crate::rewrite::{instruction, Guarding, Rewriter};
use std::collections::BTreeSet;

/// Whether `op` (a division, reciprocal or square root) is an approximation.
pub fn is_approximate(op: &Op) -> bool {
    match op.kind {
        OpKind::Div => op.approx || op.full,
        OpKind::Rcp | OpKind::Sqrt => op.approx,
        OpKind::Rsqrt => true,
        _ => false,
    }
}

/// The pass: each instruction of the set in its `.rn` form.
#[derive(Debug, Clone, Default)]
pub struct Exact {
    insts: BTreeSet<InstId>,
}

impl Exact {
    /// Switches `insts` (approximate divisions, reciprocals, square roots) to `.rn`.
    pub fn new(insts: BTreeSet<InstId>) -> Exact {
        Exact { insts }
    }
}

impl Pass for Exact {
    fn name(&self) -> String {
        "exact-division".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let err = |message: String| PassError {
            pass: self.name(),
            message,
        };
        let mut out = module.clone();
        // rsqrt needs a new register and an instruction before it: one rewriter per function.
        let mut rsqrt_regs: Vec<(InstId, String)> = Vec::new();
        for f in module.functions().filter(|f| f.body.is_some()) {
            let targets: Vec<_> = f
                .instructions()
                .filter(|i| self.insts.contains(&i.id) && decode(i).kind == OpKind::Rsqrt)
                .collect();
            if targets.is_empty() {
                continue;
            }
            let mut rw = Rewriter::new(&out, &f.name).map_err(|e| err(e.to_string()))?;
            for i in targets {
                let ty = i.types().last().map_or("f32", |t| *t).to_string();
                let t = rw.reg(&ty).map_err(|e| err(e.to_string()))?;
                let mut mods = vec!["rn"];
                if i.has_mod("ftz") && ty == "f32" {
                    mods.push("ftz");
                }
                mods.push(&ty);
                let sqrt = instruction(
                    "sqrt",
                    &mods,
                    vec![Operand::Reg(t.clone()), i.operands[1].clone()],
                );
                rw.insert_before(i.id, vec![sqrt], Guarding::Keep)
                    .map_err(|e| err(e.to_string()))?;
                rsqrt_regs.push((i.id, t));
            }
            rw.apply(&mut out).map_err(|e| err(e.to_string()))?;
        }
        let mut changes = Vec::new();
        for f in out.functions_mut() {
            let body = f.body.iter_mut().flatten();
            let mut previous: Option<String> = None;
            for s in body {
                let Statement::Inst(i) = s else { continue };
                let printed = i.to_string();
                if !self.insts.contains(&i.id) {
                    previous = Some(printed);
                    continue;
                }
                let op = decode(i);
                if !is_approximate(&op) {
                    return Err(err(format!("{printed}: not an approximation")));
                }
                let before = match rsqrt_regs.iter().find(|(id, _)| *id == i.id) {
                    Some((_, t)) => {
                        let one = match op.ty {
                            Some(crate::op::ValueType::F64) => Imm::F64(1f64.to_bits()),
                            _ => Imm::F32(1f32.to_bits()),
                        };
                        i.opcode = "div".into();
                        i.operands = vec![
                            i.operands[0].clone(),
                            Operand::Imm(one),
                            Operand::Reg(t.clone()),
                        ];
                        if op.ty == Some(crate::op::ValueType::F64) {
                            i.modifiers.retain(|m| m != "ftz");
                        }
                        // The sqrt inserted before it is part of the change.
                        let sqrt = previous.take().unwrap_or_default();
                        i.modifiers.retain(|m| m != "approx");
                        i.modifiers.insert(0, "rn".into());
                        changes.push(Change {
                            inst: i.id,
                            before: printed.trim().to_string(),
                            after: format!("{} {}", sqrt.trim(), i.to_string().trim()),
                        });
                        previous = Some(i.to_string());
                        continue;
                    }
                    None => printed,
                };
                i.modifiers.retain(|m| m != "approx" && m != "full");
                i.modifiers.insert(0, "rn".into());
                changes.push(Change {
                    inst: i.id,
                    before: before.trim().to_string(),
                    after: i.to_string().trim().to_string(),
                });
                previous = Some(i.to_string());
            }
        }
        missing(&self.name(), &self.insts, &changes)?;
        Ok(outcome(self, Cause::Approximate, out, changes))
    }
}
