//! Flush-to-zero switched off per instruction: `.ftz` removed, so subnormal inputs and results
//! are kept as an x86-64 CPU (without DAZ/FTZ set) keeps them.

use super::{edit_each, outcome, Cause};
use crate::model::{InstId, Module};
use crate::pass::{Outcome, Pass, PassError};
use std::collections::BTreeSet;

/// The pass: `.ftz` removed from each instruction of the set.
#[derive(Debug, Clone, Default)]
pub struct Ftz {
    insts: BTreeSet<InstId>,
}

impl Ftz {
    /// Removes `.ftz` from `insts` (each must have it).
    pub fn new(insts: BTreeSet<InstId>) -> Ftz {
        Ftz { insts }
    }
}

impl Pass for Ftz {
    fn name(&self) -> String {
        "no-ftz".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let (m, changes) = edit_each(&self.name(), module, &self.insts, |i| {
            let before = i.modifiers.len();
            i.modifiers.retain(|m| m != "ftz");
            if i.modifiers.len() == before {
                return Err("has no .ftz".into());
            }
            Ok(())
        })?;
        Ok(outcome(self, Cause::FlushToZero, m, changes))
    }
}
