//! Where each execution of a site, load or re-seed point counts: inside a loop, into the thread's
//! record in its function's `.local` array (zeroed at entry, flushed at every exit, its slot
//! mapped to the global record by [`SLOTS_GLOBAL`]); outside loops, straight into the global
//! record through the runtime's [`once`] forms (see the parent module's docs).

use super::emit::{reg, word};
use super::{once, ValuesError, FLUSH_FUNCTION, SLOTS_GLOBAL, THREAD_RECORD_BYTES, ZERO_FUNCTION};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::{Item, Module, Operand, SrcLine, Statement, VarDecl};
use crate::rewrite::{self, call, instruction, int, Rewriter};
use std::collections::HashSet;

/// A function's thread records: the register holding the local-space address of its `.local`
/// array, which instructions count into a thread record (those inside loops) rather than into
/// the global record at once, and the global record of each slot, in slot order.
#[derive(Debug, Clone, Default)]
pub(super) struct Records {
    base: String,
    in_record: Vec<bool>,
    /// The global record of each slot.
    pub slots: Vec<u32>,
}

impl Records {
    /// The records of the function `d` decodes: slots for its loop instructions, or for every
    /// instruction when `everywhere`.
    pub fn new(d: &Decoded, rw: &mut Rewriter, everywhere: bool) -> Result<Self, ValuesError> {
        let cfg = Cfg::build(d);
        Ok(Records {
            base: rw.reg("u64")?,
            in_record: (0..d.insts.len())
                .map(|k| everywhere || cfg.innermost_loop(k).is_some())
                .collect(),
            slots: Vec::new(),
        })
    }

    /// How instruction `k` counts into global record `record` through the runtime's
    /// `function`: inside a loop, the function itself with the local-space address of the
    /// record's thread slot (computed into a new register by `code`); outside loops, its `_once`
    /// form ([`once`]) with the record's index, added to the global at once.
    pub fn arg(
        &mut self,
        rw: &mut Rewriter,
        k: usize,
        record: u32,
        function: &str,
        code: &mut Vec<Statement>,
    ) -> Result<(Operand, String), ValuesError> {
        if !self.in_record[k] {
            return Ok((int(i128::from(record)), once(function)));
        }
        let slot = match self.slots.iter().position(|&r| r == record) {
            Some(slot) => slot,
            None => {
                self.slots.push(record);
                self.slots.len() - 1
            }
        };
        let a = rw.reg("u64")?;
        code.push(instruction(
            "add",
            &["s64"],
            vec![
                reg(&a),
                reg(&self.base),
                int(i128::from(THREAD_RECORD_BYTES) * slot as i128),
            ],
        ));
        Ok((reg(&a), function.to_string()))
    }

    /// The code at the function's entry: the `.local` array (a name not in `taken`), its
    /// local-space address, the zeroing of every slot.
    pub fn entry(&self, taken: &HashSet<&str>) -> Vec<Statement> {
        let array = rewrite::unique_name("__mantissa_sv_records", |n| taken.contains(n));
        let count = self.slots.len() as u32;
        vec![
            Statement::Var(VarDecl {
                // 16-aligned: the runtime reads a record's hot part with vector loads.
                attrs: vec![".local".into(), ".align".into(), "16".into(), ".b8".into()],
                name: array.clone(),
                dims: vec![Some(u64::from(THREAD_RECORD_BYTES) * u64::from(count))],
                init: None,
                line: SrcLine(0),
            }),
            // The local-space address: the runtime reads it with ld.local/st.local.
            instruction(
                "mov",
                &["u64"],
                vec![reg(&self.base), Operand::Symbol(array)],
            ),
        ]
        .into_iter()
        .chain(call(
            ZERO_FUNCTION,
            &[("b64", reg(&self.base)), ("b32", word(count))],
        ))
        .collect()
    }

    /// The flush before an exit, the function's slots being entries `first..` of the table.
    pub fn flush(&self, first: u32) -> Vec<Statement> {
        call(
            FLUSH_FUNCTION,
            &[
                ("b64", reg(&self.base)),
                ("b32", word(first)),
                ("b32", word(self.slots.len() as u32)),
            ],
        )
    }
}

/// [`SLOTS_GLOBAL`] with `slots` as its initialiser (one 0 entry when empty: PTX has no empty
/// arrays); its name, as [`rewrite::add_global`] gives it.
pub(super) fn add_slot_table(out: &mut Module, slots: &[u32]) -> String {
    let entries: Vec<u32> = if slots.is_empty() {
        vec![0]
    } else {
        slots.to_vec()
    };
    let name = rewrite::add_global(out, "u32", 4, SLOTS_GLOBAL, entries.len() as u64);
    // Spelt as the parser normalises an initialiser: its tokens separated by one space.
    let init = entries
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" , ");
    for item in &mut out.items {
        if let Item::Var(v) = item {
            if v.name == name {
                v.init = Some(format!("{{ {init} }}"));
            }
        }
    }
    name
}
