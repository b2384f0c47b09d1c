//! Where a kernel's parameters and variables are, and the ids of the registers its
//! instructions name: what every block of one launch shares.

use crate::decode::Decoded;
use crate::regs::FxMap;
use std::collections::HashMap;

/// Where a kernel's parameters and variables are.
pub(crate) struct Layout {
    pub params: Vec<u8>,
    pub param_at: HashMap<String, u64>,
    pub shared_at: HashMap<String, u64>,
    pub local_at: HashMap<String, u64>,
    pub global_at: HashMap<String, u64>,
    pub shared_bytes: usize,
    pub local_bytes: usize,
    /// The id of every declared register the function's instructions name: one hash of the
    /// name per access, where parsing it against the declarations cost half the interpreter's
    /// time.
    pub reg_ids: FxMap<String, u32>,
    /// The same ids by where each name the instructions hold is in memory (its address and
    /// length): an operand's name is looked up without hashing or comparing its text. A name
    /// made while running is at no such address (the instructions' names live as long as the
    /// run), so it falls back to [`Layout::reg_ids`].
    pub reg_at: FxMap<(usize, usize), u32>,
}

impl Layout {
    /// [`Layout::reg_ids`] and [`Layout::reg_at`] of `d`: the registers its instructions
    /// define, use or guard with.
    pub fn reg_ids(d: &Decoded) -> (FxMap<String, u32>, FxMap<(usize, usize), u32>) {
        let mut out = FxMap::default();
        let mut at = FxMap::default();
        for (i, op) in d.insts.iter().zip(&d.ops) {
            let (defs, uses) = crate::op::defs_uses(i, op);
            let guard = i.guard.as_ref().map(|g| g.reg.as_str());
            for r in defs.into_iter().chain(uses).chain(guard) {
                let id = match out.get(r) {
                    Some(&id) => Some(id),
                    None => d
                        .regs
                        .lookup(r)
                        .filter(|&id| d.regs.reg_type(id).is_some())
                        .map(|id| id.0),
                };
                if let Some(id) = id {
                    out.entry(r.to_string()).or_insert(id);
                    at.insert((r.as_ptr() as usize, r.len()), id);
                }
            }
        }
        (out, at)
    }
}
