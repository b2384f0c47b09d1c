//! The def-use graph of a function: which instruction's result each instruction reads, through
//! virtual registers.
//!
//! Edges come from reaching definitions over the function's control-flow graph
//! ([`crate::cfg::Cfg`]), so a register written on two paths (a loop's initial value and its
//! update) has an edge from each. A guarded def (`@%p1 mov.f32 %f1, ...`) does not kill the
//! defs before it: where the guard is false the old value flows on. An edge whose definition is
//! at or after its use in text order can only arrive around a back edge: it is *loop-carried*,
//! and so is its register. NVRTC lays code out in order with loops as backward branches, which
//! is what makes text order a sound test here.
//!
//! The dataflow runs over bitsets of the def sites of registers read in some block before that
//! block writes them (the others never leave their block), plus one "not written yet" site per
//! such register at the entry: a use it reaches makes the register an input.
//!
//! Memory is not tracked: loads, stores and calls are terminating nodes ([`NodeKind::is_terminal`]).
//! A load's value has no incoming data edge from the store that wrote it, and the analyses built
//! on this graph (FISets, shadow values) stop at them.

use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::op::{Op, OpKind};
use crate::regs::{FxMap, RegId, RegTable};
use serde::Serialize;
use std::collections::BTreeSet;

/// What an instruction is to the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A register-to-register computation (arithmetic, conversion, move, compare, ...).
    Compute,
    /// A load from memory (any state space, parameters included).
    Load,
    /// A store, or an atomic/reduction to memory.
    Store,
    /// A call to another function: its effects are not followed.
    Call,
    /// Branches, returns, barriers: control, no data result.
    Control,
}

impl NodeKind {
    /// Whether dataflow analyses stop here (memory or another function is involved).
    pub fn is_terminal(self) -> bool {
        matches!(self, NodeKind::Load | NodeKind::Store | NodeKind::Call)
    }

    /// What `op` is to the graph.
    pub fn of(op: &Op) -> NodeKind {
        match op.kind {
            OpKind::Load(_) => NodeKind::Load,
            OpKind::Store(_) | OpKind::Atom(_) | OpKind::Red(_) => NodeKind::Store,
            OpKind::Call => NodeKind::Call,
            OpKind::Control(_) => NodeKind::Control,
            _ => NodeKind::Compute,
        }
    }
}

/// One instruction of the graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// The instruction's stable id.
    pub id: InstId,
    /// Position among the function's instructions.
    pub index: usize,
    /// What the instruction is to dataflow.
    pub kind: NodeKind,
}

/// A value flowing from the instruction that writes `reg` to one that reads it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Edge {
    /// The instruction that reads it.
    #[serde(rename = "use")]
    pub user: InstId,
    /// The instruction that writes the value.
    pub def: InstId,
    /// The register the value travels in.
    pub reg: RegId,
    /// The value arrives around a loop's back edge (from a previous iteration).
    pub loop_carried: bool,
}

/// The def-use graph of one function, with each node's incoming and outgoing edges indexed
/// (see the module docs).
#[derive(Debug, Clone)]
pub struct Graph {
    /// The function's symbol name.
    pub function: String,
    /// One node per instruction, in text order.
    pub nodes: Vec<Node>,
    /// Every def-use pair reaching along some path, sorted by the user's and then the def's
    /// position in the text, then register.
    pub edges: Vec<Edge>,
    /// Registers with at least one loop-carried edge (loop counters, accumulators, pointers).
    pub loop_carried: BTreeSet<RegId>,
    /// Registers read where, on some path from the function's entry, nothing wrote them:
    /// parameters are loaded, so these are special registers (`%tid.x`) or values read before
    /// written.
    pub inputs: BTreeSet<RegId>,
    /// The function's registers: names and types of the ids above.
    pub regs: RegTable,
    /// Defs and uses as flat arrays with start offsets per node.
    defs: (Vec<RegId>, Vec<u32>),
    uses: (Vec<RegId>, Vec<u32>),
    index: FxMap<InstId, usize>,
    /// `edges[in_start[k]..in_start[k + 1]]` are node k's incoming edges.
    in_start: Vec<u32>,
    /// Edge indices sorted by the def's node; `out_start` delimits each node's.
    out_order: Vec<u32>,
    out_start: Vec<u32>,
}

/// Def sites of one register reaching a point within a block.
#[derive(Debug, Clone, Default)]
struct Local {
    /// Instructions (indices) whose def of the register reaches, in text order.
    defs: Vec<u32>,
    /// An unguarded def happened in the block: nothing from before the block reaches.
    killed: bool,
}

impl Graph {
    /// Builds the graph of `f` (empty for a prototype).
    pub fn build(f: &Function) -> Graph {
        let d = Decoded::of(f);
        let cfg = Cfg::build(&d);
        Graph::of(&d, &cfg)
    }

    /// Builds the graph from a decoded function and its control-flow graph.
    pub fn of(d: &Decoded, cfg: &Cfg) -> Graph {
        let n = d.len();
        let nr = d.regs.len();
        let guarded = |k: usize| d.insts[k].guard.is_some();
        // Pass 1, per block: the defs reaching its end (for registers it defines) and the
        // registers read before the block kills them (upward-exposed: "global" registers).
        let mut global = vec![false; nr];
        let mut block_defs: Vec<Vec<(RegId, Local)>> = Vec::with_capacity(cfg.blocks.len());
        let mut slot: Vec<u32> = vec![u32::MAX; nr];
        for b in &cfg.blocks {
            let mut locals: Vec<(RegId, Local)> = Vec::new();
            for k in b.start..b.end {
                for &r in d.uses(k) {
                    let s = slot[r.0 as usize];
                    if s == u32::MAX || !locals[s as usize].1.killed {
                        global[r.0 as usize] = true;
                    }
                }
                for &r in d.defs(k) {
                    let s = &mut slot[r.0 as usize];
                    if *s == u32::MAX {
                        *s = locals.len() as u32;
                        locals.push((r, Local::default()));
                    }
                    let l = &mut locals[*s as usize].1;
                    if !guarded(k) {
                        l.defs.clear();
                        l.killed = true;
                    }
                    l.defs.push(k as u32);
                }
            }
            for (r, _) in &locals {
                slot[r.0 as usize] = u32::MAX;
            }
            block_defs.push(locals);
        }
        // The universe of the dataflow: def sites of global registers, plus one "undefined at
        // the entry" site per global register (instruction index n).
        let mut site_inst: Vec<u32> = Vec::new();
        let mut sites_of: Vec<Vec<u32>> = vec![Vec::new(); nr];
        for r in 0..nr {
            if global[r] {
                sites_of[r].push(site_inst.len() as u32);
                site_inst.push(n as u32);
            }
        }
        for k in 0..n {
            for &r in d.defs(k) {
                if global[r.0 as usize] {
                    sites_of[r.0 as usize].push(site_inst.len() as u32);
                    site_inst.push(k as u32);
                }
            }
        }
        let site_at = |r: RegId, k: u32| -> u32 {
            let list = &sites_of[r.0 as usize];
            // Sites of a register are in instruction order after the entry site.
            let i = list[1..].partition_point(|&s| site_inst[s as usize] < k);
            list[1 + i]
        };
        let words = site_inst.len().div_ceil(64);
        let nb = cfg.blocks.len();
        let mut ins: Vec<Vec<u64>> = vec![vec![0; words]; nb];
        if nb > 0 {
            for list in sites_of.iter().filter(|l| !l.is_empty()) {
                let s = list[0] as usize;
                ins[0][s / 64] |= 1 << (s % 64);
            }
        }
        // Reaching definitions to a fixed point, in reverse postorder.
        let mut out = vec![0u64; words];
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &cfg.rpo {
                out.copy_from_slice(&ins[b]);
                for (r, l) in &block_defs[b] {
                    if !global[r.0 as usize] {
                        continue;
                    }
                    if l.killed {
                        for &s in &sites_of[r.0 as usize] {
                            out[s as usize / 64] &= !(1 << (s % 64));
                        }
                    }
                    for &k in &l.defs {
                        let s = site_at(*r, k) as usize;
                        out[s / 64] |= 1 << (s % 64);
                    }
                }
                for &succ in &cfg.blocks[b].succs {
                    let target = &mut ins[succ];
                    for (t, o) in target.iter_mut().zip(&out) {
                        let v = *t | *o;
                        if v != *t {
                            *t = v;
                            changed = true;
                        }
                    }
                }
            }
        }
        // Edges: local defs first, then what reaches the block's entry.
        // (user, def, register, loop-carried), by instruction index until sorted.
        let mut found: Vec<(u32, u32, RegId, bool)> = Vec::new();
        let mut inputs = BTreeSet::new();
        let mut locals: Vec<Local> = Vec::new();
        let mut touched: Vec<RegId> = Vec::new();
        for (b, block) in cfg.blocks.iter().enumerate() {
            for k in block.start..block.end {
                for &r in d.uses(k) {
                    let s = slot[r.0 as usize];
                    let local = (s != u32::MAX).then(|| &locals[s as usize]);
                    for &def in local.map_or(&[][..], |l| &l.defs[..]) {
                        found.push((k as u32, def, r, false));
                    }
                    if local.is_some_and(|l| l.killed) || !global[r.0 as usize] {
                        continue;
                    }
                    for &site in &sites_of[r.0 as usize] {
                        if ins[b][site as usize / 64] & (1 << (site % 64)) == 0 {
                            continue;
                        }
                        let def = site_inst[site as usize] as usize;
                        if def == n {
                            inputs.insert(r);
                        } else {
                            found.push((k as u32, def as u32, r, def >= k));
                        }
                    }
                }
                for &r in d.defs(k) {
                    let s = &mut slot[r.0 as usize];
                    if *s == u32::MAX {
                        *s = locals.len() as u32;
                        locals.push(Local::default());
                        touched.push(r);
                    }
                    let l = &mut locals[*s as usize];
                    if d.insts[k].guard.is_none() {
                        l.defs.clear();
                        l.killed = true;
                    }
                    l.defs.push(k as u32);
                }
            }
            for r in touched.drain(..) {
                slot[r.0 as usize] = u32::MAX;
            }
            locals.clear();
        }
        found.sort_unstable();
        found.dedup();
        let mut in_start = vec![0u32; n + 1];
        let mut out_start = vec![0u32; n + 1];
        for &(u, def, _, _) in &found {
            in_start[u as usize + 1] += 1;
            out_start[def as usize + 1] += 1;
        }
        for k in 0..n {
            in_start[k + 1] += in_start[k];
            out_start[k + 1] += out_start[k];
        }
        let mut out_order: Vec<u32> = (0..found.len() as u32).collect();
        out_order.sort_by_key(|&e| found[e as usize].1);
        let edges: Vec<Edge> = found
            .iter()
            .map(|&(u, def, reg, loop_carried)| Edge {
                user: d.insts[u as usize].id,
                def: d.insts[def as usize].id,
                reg,
                loop_carried,
            })
            .collect();
        let index: FxMap<InstId, usize> =
            d.insts.iter().enumerate().map(|(k, i)| (i.id, k)).collect();
        let loop_carried = edges
            .iter()
            .filter(|e| e.loop_carried)
            .map(|e| e.reg)
            .collect();
        Graph {
            function: d.function.name.clone(),
            nodes: (0..n)
                .map(|k| Node {
                    id: d.insts[k].id,
                    index: k,
                    kind: NodeKind::of(&d.ops[k]),
                })
                .collect(),
            edges,
            loop_carried,
            inputs,
            regs: d.regs.clone(),
            defs: {
                let [(ids, start), _] = d.def_use_arrays();
                (ids.to_vec(), start.to_vec())
            },
            uses: {
                let [_, (ids, start)] = d.def_use_arrays();
                (ids.to_vec(), start.to_vec())
            },
            index,
            in_start,
            out_order,
            out_start,
        }
    }

    /// The node of instruction `id`.
    pub fn node(&self, id: InstId) -> Option<&Node> {
        self.index.get(&id).map(|&k| &self.nodes[k])
    }

    /// The position of instruction `id` among the function's instructions.
    pub fn index_of(&self, id: InstId) -> Option<usize> {
        self.index.get(&id).copied()
    }

    /// Registers instruction `id` writes.
    pub fn defs(&self, id: InstId) -> &[RegId] {
        let (ids, start) = &self.defs;
        self.index_of(id)
            .map_or(&[], |k| &ids[start[k] as usize..start[k + 1] as usize])
    }

    /// Registers instruction `id` reads (its guard included).
    pub fn uses(&self, id: InstId) -> &[RegId] {
        let (ids, start) = &self.uses;
        self.index_of(id)
            .map_or(&[], |k| &ids[start[k] as usize..start[k + 1] as usize])
    }

    /// Edges into `id`: the definitions it reads. Time proportional to their number.
    pub fn defs_of(&self, id: InstId) -> impl Iterator<Item = &Edge> {
        let range = self.index_of(id).map_or(0..0, |k| {
            self.in_start[k] as usize..self.in_start[k + 1] as usize
        });
        self.edges[range].iter()
    }

    /// Edges out of `id`: the instructions reading its results. Time proportional to their
    /// number.
    pub fn uses_of(&self, id: InstId) -> impl Iterator<Item = &Edge> {
        let range = self.index_of(id).map_or(0..0, |k| {
            self.out_start[k] as usize..self.out_start[k + 1] as usize
        });
        self.out_order[range]
            .iter()
            .map(move |&e| &self.edges[e as usize])
    }

    /// The name of register `r` (`%fd3`).
    pub fn name(&self, r: RegId) -> String {
        self.regs.name(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::fixture;

    fn find<'a>(f: &'a Function, text: &str) -> &'a Instruction {
        f.instructions()
            .find(|i| i.to_string().contains(text))
            .unwrap_or_else(|| panic!("no instruction like {text}"))
    }

    #[test]
    fn straight_line_def_use_of_ray_step() {
        let m = fixture("ray_step.default");
        let f = m.function("ray_step").unwrap();
        let g = Graph::build(f);
        assert!(g.loop_carried.is_empty());
        // fma.rn.f32 %f8, %f6, %f7, %f1 reads the load, the int→float cvt and a parameter load.
        let fma = find(f, "fma.rn.f32");
        let mut from: Vec<(String, NodeKind)> = g
            .defs_of(fma.id)
            .map(|e| (g.name(e.reg), g.node(e.def).unwrap().kind))
            .collect();
        from.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            from,
            [
                ("%f1".to_string(), NodeKind::Load),
                ("%f6".to_string(), NodeKind::Load),
                ("%f7".to_string(), NodeKind::Compute),
            ]
        );
        // Its result feeds exactly the mul.
        let users: Vec<InstId> = g.uses_of(fma.id).map(|e| e.user).collect();
        assert_eq!(users, [find(f, "mul.f32 \t%f9").id]);
        // The store is a terminal with no defs; special registers are inputs.
        let st = find(f, "st.global.u16");
        let node = g.node(st.id).unwrap();
        assert_eq!(node.kind, NodeKind::Store);
        assert!(node.kind.is_terminal() && g.defs(st.id).is_empty());
        let inputs: Vec<String> = g.inputs.iter().map(|&r| g.name(r)).collect();
        assert!(inputs.contains(&"%tid.x".to_string()), "{inputs:?}");
        assert!(!inputs.contains(&"%f8".to_string()));
    }

    #[test]
    fn loop_carried_registers_of_loop_sum() {
        let m = fixture("loop_sum.default");
        let f = m.function("loop_sum").unwrap();
        let g = Graph::build(f);
        // Accumulators, induction variables and pointers of the three loops.
        let expected: BTreeSet<String> = [
            "%f27", "%r20", "%f32", "%rd20", "%r22", "%r23", "%rd21", "%r24",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let carried: BTreeSet<String> = g.loop_carried.iter().map(|&r| g.name(r)).collect();
        assert_eq!(carried, expected);
        // The fma in the first loop reads %f27 from before the loop and from itself.
        let fma = find(f, "fma.rn.f32");
        let mut acc: Vec<(InstId, bool)> = g
            .defs_of(fma.id)
            .filter(|e| g.name(e.reg) == "%f27")
            .map(|e| (e.def, e.loop_carried))
            .collect();
        acc.sort();
        let inits: Vec<InstId> = f
            .instructions()
            .filter(|i| i.to_string().starts_with("mov.f32 \t%f27"))
            .map(|i| i.id)
            .collect();
        assert_eq!(inits.len(), 2);
        assert_eq!(
            acc,
            [(inits[1], false), (fma.id, true)],
            "only the mov in the loop's preheader reaches; the one before the guard is overwritten"
        );
        // After the loop, the store to shared memory sees both the skip path and the loop.
        let st = find(f, "st.shared.f32");
        let mut from: Vec<InstId> = g
            .defs_of(st.id)
            .filter(|e| g.name(e.reg) == "%f27")
            .map(|e| e.def)
            .collect();
        from.sort();
        assert_eq!(from, [inits[0], fma.id]);
    }

    #[test]
    fn calls_and_vectors() {
        let m = fixture("calls.default");
        let f = m.function("calls").unwrap();
        let g = Graph::build(f);
        let call = f.instructions().find(|i| i.decode().is_call()).unwrap();
        assert_eq!(g.node(call.id).unwrap().kind, NodeKind::Call);
        // Parameters go through st.param/ld.param, so the call itself reads no register.
        assert_eq!(g.defs_of(call.id).count(), 0);
        let m = fixture("divsqrt.default");
        let f = m.function("divsqrt").unwrap();
        let g = Graph::build(f);
        let ld = find(f, "ld.global.nc.v4.f32");
        let defs: Vec<String> = g.defs(ld.id).iter().map(|&r| g.name(r)).collect();
        assert_eq!(defs, ["%f1", "%f2", "%f3", "%f4"]);
        let div = find(f, "div.rn.f32");
        let from: BTreeSet<InstId> = g.defs_of(div.id).map(|e| e.def).collect();
        assert_eq!(from, [ld.id].into_iter().collect());
    }
}
