//! One function decoded once: its instructions in text order with their [`Op`]s, the registers
//! each writes and reads as [`RegId`]s, the `.loc` in force for each, and where labels point.
//! The control-flow graph ([`crate::cfg`]), the def-use graph ([`crate::graph`]), the census and
//! the passes are built from a [`Decoded`] rather than from the text, so no analysis decodes an
//! opcode or looks a register name up a second time.

use crate::model::{Function, Instruction, Loc, Operand, Statement};
use crate::op::{decode, Op, Writes};
use crate::regs::{FxMap, RegId, RegTable};
use std::collections::HashMap;

/// A function decoded (see the module docs). Instruction `k` is the `k`-th instruction of the
/// body in text order.
#[derive(Debug, Clone)]
pub struct Decoded<'f> {
    /// The function.
    pub function: &'f Function,
    /// Its instructions, in text order.
    pub insts: Vec<&'f Instruction>,
    /// Each instruction's index in the body's statement list.
    pub stmt: Vec<usize>,
    /// Each instruction's decode.
    pub ops: Vec<Op>,
    /// Each instruction's `.loc` (the last one before it), if any.
    pub locs: Vec<Option<&'f Loc>>,
    /// The registers: declared ones, then special registers read without a declaration.
    pub regs: RegTable,
    /// Label → the index of the instruction it precedes (`insts.len()` for a label at the end).
    pub labels: HashMap<&'f str, usize>,
    def_ids: Vec<RegId>,
    def_start: Vec<u32>,
    use_ids: Vec<RegId>,
    use_start: Vec<u32>,
    operand_regs: Vec<Option<RegId>>,
    operand_start: Vec<u32>,
}

impl<'f> Decoded<'f> {
    /// Decodes `f` (empty for a prototype).
    pub fn of(f: &'f Function) -> Decoded<'f> {
        let body = f.body.as_deref().unwrap_or(&[]);
        let mut regs = RegTable::of(f);
        let mut d = Decoded {
            function: f,
            insts: Vec::new(),
            stmt: Vec::new(),
            ops: Vec::new(),
            locs: Vec::new(),
            regs: RegTable::default(),
            labels: HashMap::new(),
            def_ids: Vec::new(),
            def_start: vec![0],
            use_ids: Vec::new(),
            use_start: vec![0],
            operand_regs: Vec::new(),
            operand_start: vec![0],
        };
        let mut loc = None;
        let mut seen: FxMap<&str, RegId> = FxMap::default();
        for (k, s) in body.iter().enumerate() {
            match s {
                Statement::Loc(l) => loc = Some(l),
                Statement::Label(l, _) => {
                    d.labels.insert(l.as_str(), d.insts.len());
                }
                Statement::Inst(i) => {
                    let op = decode(i);
                    let first = d.operand_regs.len();
                    d.operand_regs.resize(first + i.operands.len(), None);
                    defs_uses_into(i, &op, &mut |r, def, operand| {
                        // A name repeats (a register is written once and read a few times):
                        // resolving it once saves the range arithmetic.
                        let id = *seen.entry(r).or_insert_with(|| regs.intern(r));
                        if let Some(j) = operand {
                            d.operand_regs[first + j] = Some(id);
                        }
                        if def {
                            d.def_ids.push(id);
                        } else {
                            d.use_ids.push(id);
                        }
                    });
                    d.operand_start.push(d.operand_regs.len() as u32);
                    d.def_start.push(d.def_ids.len() as u32);
                    d.use_start.push(d.use_ids.len() as u32);
                    d.insts.push(i);
                    d.stmt.push(k);
                    d.ops.push(op);
                    d.locs.push(loc);
                }
                _ => {}
            }
        }
        d.regs = regs;
        d
    }

    /// How many instructions.
    pub fn len(&self) -> usize {
        self.insts.len()
    }

    /// Whether the function has no instructions.
    pub fn is_empty(&self) -> bool {
        self.insts.is_empty()
    }

    /// Registers instruction `k` writes.
    pub fn defs(&self, k: usize) -> &[RegId] {
        &self.def_ids[self.def_start[k] as usize..self.def_start[k + 1] as usize]
    }

    /// Registers instruction `k` reads (its guard included).
    pub fn uses(&self, k: usize) -> &[RegId] {
        &self.use_ids[self.use_start[k] as usize..self.use_start[k + 1] as usize]
    }

    /// The defs and uses of every instruction as flat arrays with start offsets (what
    /// [`Decoded::defs`] and [`Decoded::uses`] index), for structures that keep them.
    pub(crate) fn def_use_arrays(&self) -> [(&[RegId], &[u32]); 2] {
        [
            (&self.def_ids, &self.def_start),
            (&self.use_ids, &self.use_start),
        ]
    }

    /// The register of operand `j` of instruction `k`, when that operand is a register.
    pub fn operand_reg(&self, k: usize, j: usize) -> Option<RegId> {
        let at = self.operand_start[k] as usize + j;
        if at < self.operand_start[k + 1] as usize {
            self.operand_regs[at]
        } else {
            None
        }
    }

    /// The instruction a branch at `k` goes to (`bra LABEL`), if it names a label of the
    /// function.
    pub fn branch_target(&self, k: usize) -> Option<usize> {
        match self.insts[k].operands.first() {
            Some(crate::model::Operand::Symbol(l)) => self.labels.get(l.as_str()).copied(),
            _ => None,
        }
    }
}

/// The registers an instruction writes and reads, by name, as [`crate::op::decode`] says; the guard is
/// read. An address operand's base register is read even in a written position.
pub(crate) fn defs_uses<'a>(inst: &'a Instruction, op: &Op) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut defs = Vec::new();
    let mut uses = Vec::new();
    defs_uses_into(inst, op, &mut |r, def, _| {
        if def {
            defs.push(r)
        } else {
            uses.push(r)
        }
    });
    (defs, uses)
}

/// [`defs_uses`] without allocating: `f(register, is_def, operand)` for each, defs and uses in
/// operand order (the guard first); `operand` is `Some(j)` when the register is the whole
/// operand `j`.
pub(crate) fn defs_uses_into<'a>(
    inst: &'a Instruction,
    op: &Op,
    f: &mut impl FnMut(&'a str, bool, Option<usize>),
) {
    if let Some(g) = &inst.guard {
        f(g.reg.as_str(), false, None);
    }
    let has_returns = op.writes == Writes::CallReturns
        // `call (ret), f, (args)`: the first list is the return list only when the callee
        // name follows it.
        && inst.operands.len() > 1
        && matches!(inst.operands.first(), Some(Operand::List(_)))
        && !matches!(inst.operands.get(1), Some(Operand::List(_)));
    for (k, o) in inst.operands.iter().enumerate() {
        let def = match op.writes {
            Writes::CallReturns => k == 0 && has_returns,
            Writes::First => k == 0,
            Writes::Nothing => false,
        };
        match o {
            Operand::Reg(r) => f(r, def, Some(k)),
            _ => regs_into(o, def, f),
        }
    }
}

fn regs_into<'a>(o: &'a Operand, def: bool, f: &mut impl FnMut(&'a str, bool, Option<usize>)) {
    match o {
        Operand::Reg(r) => f(r, def, None),
        // An address's base register is read, even in a written position.
        Operand::Addr { base, .. } if base.starts_with('%') => f(base, false, None),
        Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|o| regs_into(o, def, f)),
        Operand::Not(o) => regs_into(o, def, f),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::fixture;

    #[test]
    fn defs_and_uses_match_the_model() {
        for (name, _) in crate::tests::FIXTURES {
            let m = fixture(name);
            for f in m.functions() {
                let d = Decoded::of(f);
                assert_eq!(d.len(), f.instructions().count());
                for (k, i) in d.insts.iter().enumerate() {
                    let names = |ids: &[RegId]| -> Vec<String> {
                        ids.iter().map(|&r| d.regs.name(r)).collect()
                    };
                    assert_eq!(names(d.defs(k)), i.defs(), "{name} {i}");
                    assert_eq!(names(d.uses(k)), i.uses(), "{name} {i}");
                }
            }
        }
    }
}
