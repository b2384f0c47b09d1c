//! The def-use graph of a function: which instruction's result each instruction reads, through
//! virtual registers.
//!
//! Edges come from reaching definitions over the function's control-flow graph (basic blocks
//! split at labels and after branches), so a register written on two paths (a loop's initial
//! value and its update) has an edge from each. An edge whose definition is at or after its use
//! in text order can only arrive around a back edge: it is *loop-carried*, and so is its
//! register. NVRTC lays code out in order with loops as backward branches, which is what makes
//! text order a sound test here.
//!
//! Memory is not tracked: loads, stores and calls are terminating nodes ([`NodeKind::is_terminal`]).
//! A load's value has no incoming data edge from the store that wrote it, and the analyses built
//! on this graph (FISets, shadow values) stop at them.

use crate::model::*;
use crate::op::{Op, OpKind};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

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
    /// Registers the instruction writes.
    pub defs: Vec<String>,
    /// Registers the instruction reads.
    pub uses: Vec<String>,
}

/// A value flowing from the instruction that writes `reg` to one that reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The instruction that writes the value.
    pub def: InstId,
    /// The instruction that reads it.
    #[serde(rename = "use")]
    pub user: InstId,
    /// The register the value travels in.
    pub reg: String,
    /// The value arrives around a loop's back edge (from a previous iteration).
    pub loop_carried: bool,
}

/// The def-use graph of one function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Graph {
    /// The function's symbol name.
    pub function: String,
    /// One node per instruction, in text order.
    pub nodes: Vec<Node>,
    /// Every def-use pair reaching along some path.
    pub edges: Vec<Edge>,
    /// Registers with at least one loop-carried edge (loop counters, accumulators, pointers).
    pub loop_carried: BTreeSet<String>,
    /// Registers read with no definition reaching on some path into the function: parameters
    /// are loaded, so these are special registers (`%tid.x`) or values read before written.
    pub inputs: BTreeSet<String>,
}

impl Graph {
    /// Builds the graph of `f` (empty for a prototype).
    pub fn build(f: &Function) -> Graph {
        let insts: Vec<&Instruction> = f.instructions().collect();
        let n = insts.len();
        // Labels point at the next instruction.
        let mut label_at: HashMap<&str, usize> = HashMap::new();
        let mut count = 0;
        for s in f.body.iter().flatten() {
            match s {
                Statement::Label(l, _) => {
                    label_at.insert(l.as_str(), count);
                }
                Statement::Inst(_) => count += 1,
                _ => {}
            }
        }
        let target = |i: &Instruction| -> Option<usize> {
            match (i.opcode.as_str(), i.operands.first()) {
                ("bra", Some(Operand::Symbol(l))) => label_at.get(l.as_str()).copied(),
                _ => None,
            }
        };
        let ends_flow = |i: &Instruction| matches!(i.opcode.as_str(), "ret" | "exit" | "trap");
        // Basic blocks.
        let mut leader = vec![false; n + 1];
        leader[0] = true;
        for &at in label_at.values() {
            leader[at] = true;
        }
        for (k, i) in insts.iter().enumerate() {
            if i.opcode == "bra" || i.opcode == "brx" || ends_flow(i) {
                leader[k + 1] = true;
            }
        }
        let starts: Vec<usize> = (0..n).filter(|&k| leader[k]).collect();
        let mut block_of = vec![0; n];
        let blocks: Vec<(usize, usize)> = starts
            .iter()
            .enumerate()
            .map(|(b, &s)| {
                let e = starts.get(b + 1).copied().unwrap_or(n);
                block_of[s..e].iter_mut().for_each(|x| *x = b);
                (s, e)
            })
            .collect();
        let succs: Vec<Vec<usize>> = blocks
            .iter()
            .map(|&(_, e)| {
                let last = insts[e - 1];
                let mut out = Vec::new();
                let unconditional = last.guard.is_none();
                if last.opcode == "brx" {
                    // An indirect branch may go to any label of the function.
                    out.extend(label_at.values().filter(|&&t| t < n).map(|&t| block_of[t]));
                } else if let Some(t) = target(last) {
                    if t < n {
                        out.push(block_of[t]);
                    }
                }
                let falls = !(unconditional && (last.opcode == "bra" || ends_flow(last)));
                if falls && e < n {
                    out.push(block_of[e]);
                }
                out
            })
            .collect();
        // Definition sites: (instruction index, register).
        let nodes: Vec<Node> = insts
            .iter()
            .enumerate()
            .map(|(k, i)| Node {
                id: i.id,
                index: k,
                kind: NodeKind::of(&i.decode()),
                defs: i.defs().into_iter().map(str::to_string).collect(),
                uses: i.uses().into_iter().map(str::to_string).collect(),
            })
            .collect();
        let mut sites: Vec<(usize, &str)> = Vec::new();
        let mut sites_of: HashMap<&str, Vec<usize>> = HashMap::new();
        for node in &nodes {
            for r in &node.defs {
                sites_of.entry(r.as_str()).or_default().push(sites.len());
                sites.push((node.index, r.as_str()));
            }
        }
        // Reaching definitions, to a fixed point.
        let transfer = |b: usize, mut set: BTreeSet<usize>| -> BTreeSet<usize> {
            let (s, e) = blocks[b];
            for node in &nodes[s..e] {
                for r in &node.defs {
                    let all = &sites_of[r.as_str()];
                    all.iter().for_each(|d| {
                        set.remove(d);
                    });
                    if let Some(&d) = all.iter().find(|&&d| sites[d].0 == node.index) {
                        set.insert(d);
                    }
                }
            }
            set
        };
        let mut ins: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); blocks.len()];
        let mut changed = true;
        while changed {
            changed = false;
            for b in 0..blocks.len() {
                let out = transfer(b, ins[b].clone());
                for &s in &succs[b] {
                    let before = ins[s].len();
                    ins[s].extend(out.iter().copied());
                    changed |= ins[s].len() != before;
                }
            }
        }
        // Edges.
        let mut edges = Vec::new();
        let mut inputs = BTreeSet::new();
        for (b, &(s, e)) in blocks.iter().enumerate() {
            let mut reaching = ins[b].clone();
            for node in &nodes[s..e] {
                for r in &node.uses {
                    let mut found = false;
                    for &d in reaching.iter().filter(|&&d| sites[d].1 == r) {
                        found = true;
                        let def = sites[d].0;
                        edges.push(Edge {
                            def: nodes[def].id,
                            user: node.id,
                            reg: r.clone(),
                            loop_carried: def >= node.index,
                        });
                    }
                    if !found || (b == 0 && !sites_of.contains_key(r.as_str())) {
                        inputs.insert(r.clone());
                    }
                }
                for r in &node.defs {
                    for d in &sites_of[r.as_str()] {
                        reaching.remove(d);
                    }
                    if let Some(&d) = sites_of[r.as_str()]
                        .iter()
                        .find(|&&d| sites[d].0 == node.index)
                    {
                        reaching.insert(d);
                    }
                }
            }
        }
        edges.sort_by(|a, b| (a.user, a.def, &a.reg).cmp(&(b.user, b.def, &b.reg)));
        edges.dedup();
        let loop_carried = edges
            .iter()
            .filter(|e| e.loop_carried)
            .map(|e| e.reg.clone())
            .collect();
        Graph {
            function: f.name.clone(),
            nodes,
            edges,
            loop_carried,
            inputs,
        }
    }

    /// The node of instruction `id`.
    pub fn node(&self, id: InstId) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Edges into `id`: the definitions it reads.
    pub fn defs_of(&self, id: InstId) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(move |e| e.user == id)
    }

    /// Edges out of `id`: the instructions reading its results.
    pub fn uses_of(&self, id: InstId) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(move |e| e.def == id)
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
            .map(|e| (e.reg.clone(), g.node(e.def).unwrap().kind))
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
        assert!(node.kind.is_terminal() && node.defs.is_empty());
        assert!(g.inputs.contains("%tid.x"));
        assert!(!g.inputs.contains("%f8"));
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
        assert_eq!(g.loop_carried, expected);
        // The fma in the first loop reads %f27 from before the loop and from itself.
        let fma = find(f, "fma.rn.f32");
        let mut acc: Vec<(InstId, bool)> = g
            .defs_of(fma.id)
            .filter(|e| e.reg == "%f27")
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
            .filter(|e| e.reg == "%f27")
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
        let call = f.instructions().find(|i| i.opcode == "call").unwrap();
        assert_eq!(g.node(call.id).unwrap().kind, NodeKind::Call);
        // Parameters go through st.param/ld.param, so the call itself reads no register.
        assert_eq!(g.defs_of(call.id).count(), 0);
        let m = fixture("divsqrt.default");
        let f = m.function("divsqrt").unwrap();
        let g = Graph::build(f);
        let ld = find(f, "ld.global.nc.v4.f32");
        assert_eq!(g.node(ld.id).unwrap().defs, ["%f1", "%f2", "%f3", "%f4"]);
        let div = find(f, "div.rn.f32");
        let from: BTreeSet<InstId> = g.defs_of(div.id).map(|e| e.def).collect();
        assert_eq!(from, [ld.id].into_iter().collect());
    }
}
