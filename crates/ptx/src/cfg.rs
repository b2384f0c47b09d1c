//! The control-flow graph of one function: basic blocks, successors and predecessors,
//! dominators, back edges and natural loops with their nesting. Built once from a [`Decoded`]
//! function; the def-use graph (reaching definitions) and the census (loops) both read it.
//!
//! Blocks start at the first instruction, at every label that something can branch to, and after
//! every branch, `ret`, `exit` and `trap`. An unguarded `bra` does not fall through; `brx` may go
//! to any label of the function. A loop is found from each edge `t → h` that goes back to a
//! block `h` dominating `t` (a natural loop: `h` and every block reaching `t` without passing
//! `h`); several back edges to one header make one loop. A retreating edge whose target does not
//! dominate its source (irreducible flow, which NVRTC does not emit) still makes a loop headed
//! by its target, computed the same way, so no cycle goes unnoticed.

use crate::decode::Decoded;
use crate::op::Control;

/// A basic block: instructions `start..end` of the function (text order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The first instruction.
    pub start: usize,
    /// One past the last instruction.
    pub end: usize,
    /// Blocks control can go to next.
    pub succs: Vec<usize>,
    /// Blocks control can come from.
    pub preds: Vec<usize>,
}

/// A natural loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    /// The header block (the target of the back edges).
    pub header: usize,
    /// The label at the header, if it has one (it does when a branch goes back to it).
    pub label: Option<String>,
    /// The loop's blocks, in text order, the header included.
    pub blocks: Vec<usize>,
    /// The edges `(from, header)` that close the loop.
    pub back_edges: Vec<(usize, usize)>,
    /// The innermost loop containing this one.
    pub parent: Option<usize>,
    /// 1 for an outermost loop.
    pub depth: u32,
}

/// The control-flow graph of a function (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cfg {
    /// Blocks in text order; block 0 is the entry.
    pub blocks: Vec<Block>,
    /// The block of each instruction.
    pub block_of: Vec<usize>,
    /// The immediate dominator of each block (`None` for the entry and unreachable blocks).
    pub idom: Vec<Option<usize>>,
    /// Blocks reachable from the entry, in reverse postorder.
    pub rpo: Vec<usize>,
    /// The loops, by header position in the text.
    pub loops: Vec<Loop>,
}

impl Cfg {
    /// The control-flow graph of `d`.
    pub fn build(d: &Decoded) -> Cfg {
        let n = d.len();
        if n == 0 {
            return Cfg::default();
        }
        let mut leader = vec![false; n + 1];
        leader[0] = true;
        // Every label starts a block: a branch may target it (or a `brx` table does).
        for &at in d.labels.values() {
            leader[at] = true;
        }
        for (k, op) in d.ops.iter().enumerate() {
            if op.is_branch() || op.control().is_some_and(Control::ends_flow) {
                leader[k + 1] = true;
            }
        }
        let starts: Vec<usize> = (0..n).filter(|&k| leader[k]).collect();
        let mut block_of = vec![0; n];
        let mut blocks: Vec<Block> = starts
            .iter()
            .enumerate()
            .map(|(b, &s)| {
                let e = starts.get(b + 1).copied().unwrap_or(n);
                block_of[s..e].iter_mut().for_each(|x| *x = b);
                Block {
                    start: s,
                    end: e,
                    succs: Vec::new(),
                    preds: Vec::new(),
                }
            })
            .collect();
        let mut label_blocks: Vec<usize> = d
            .labels
            .values()
            .filter(|&&t| t < n)
            .map(|&t| block_of[t])
            .collect();
        label_blocks.sort_unstable();
        label_blocks.dedup();
        let n_blocks = blocks.len();
        for (b, block) in blocks.iter_mut().enumerate() {
            let last = block.end - 1;
            let op = &d.ops[last];
            let mut out = Vec::new();
            match op.control() {
                Some(Control::Brx) => out.extend(label_blocks.iter().copied()),
                Some(Control::Bra) => {
                    if let Some(t) = d.branch_target(last).filter(|&t| t < n) {
                        out.push(block_of[t]);
                    }
                }
                _ => {}
            }
            let unconditional = d.insts[last].guard.is_none();
            let stops = matches!(op.control(), Some(Control::Bra | Control::Brx))
                || op.control().is_some_and(Control::ends_flow);
            if !(unconditional && stops) && block.end < n && b + 1 < n_blocks {
                out.push(b + 1);
            }
            out.sort_unstable();
            out.dedup();
            block.succs = out;
        }
        for b in 0..blocks.len() {
            for s in blocks[b].succs.clone() {
                blocks[s].preds.push(b);
            }
        }
        let mut cfg = Cfg {
            blocks,
            block_of,
            idom: Vec::new(),
            rpo: Vec::new(),
            loops: Vec::new(),
        };
        let retreating = cfg.order();
        cfg.dominators();
        cfg.find_loops(d, &retreating);
        cfg
    }

    /// Reverse postorder by depth-first search from the entry; returns the retreating edges
    /// (to a block still on the search's stack).
    fn order(&mut self) -> Vec<(usize, usize)> {
        let nb = self.blocks.len();
        let mut state = vec![0u8; nb]; // 0 new, 1 on stack, 2 done
        let mut post = Vec::with_capacity(nb);
        let mut retreating = Vec::new();
        let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
        state[0] = 1;
        while let Some(&mut (b, ref mut next)) = stack.last_mut() {
            if let Some(&s) = self.blocks[b].succs.get(*next) {
                *next += 1;
                match state[s] {
                    0 => {
                        state[s] = 1;
                        stack.push((s, 0));
                    }
                    1 => retreating.push((b, s)),
                    _ => {}
                }
            } else {
                state[b] = 2;
                post.push(b);
                stack.pop();
            }
        }
        post.reverse();
        self.rpo = post;
        retreating
    }

    /// Immediate dominators (Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm").
    fn dominators(&mut self) {
        let nb = self.blocks.len();
        let mut rpo_index = vec![usize::MAX; nb];
        for (k, &b) in self.rpo.iter().enumerate() {
            rpo_index[b] = k;
        }
        let mut idom: Vec<Option<usize>> = vec![None; nb];
        idom[0] = Some(0);
        let mut changed = true;
        while changed {
            changed = false;
            for &b in self.rpo.iter().skip(1) {
                let mut new: Option<usize> = None;
                for &p in &self.blocks[b].preds {
                    if idom[p].is_none() {
                        continue;
                    }
                    new = Some(match new {
                        None => p,
                        Some(mut x) => {
                            let mut y = p;
                            while x != y {
                                while rpo_index[x] > rpo_index[y] {
                                    x = idom[x].unwrap_or(0);
                                }
                                while rpo_index[y] > rpo_index[x] {
                                    y = idom[y].unwrap_or(0);
                                }
                            }
                            x
                        }
                    });
                }
                if new.is_some() && idom[b] != new {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        idom[0] = None;
        self.idom = idom;
    }

    /// Whether block `a` dominates block `b` (every path from the entry to `b` passes `a`).
    pub fn dominates(&self, a: usize, b: usize) -> bool {
        let mut x = b;
        loop {
            if x == a {
                return true;
            }
            match self.idom.get(x).copied().flatten() {
                Some(p) => x = p,
                None => return false,
            }
        }
    }

    fn find_loops(&mut self, d: &Decoded, retreating: &[(usize, usize)]) {
        let mut edges: Vec<(usize, usize)> = Vec::new();
        for &b in &self.rpo {
            for &s in &self.blocks[b].succs {
                if self.dominates(s, b) {
                    edges.push((b, s));
                }
            }
        }
        edges.extend(retreating.iter().copied());
        edges.sort_unstable_by_key(|&(t, h)| (h, t));
        edges.dedup();
        let nb = self.blocks.len();
        let mut loops: Vec<Loop> = Vec::new();
        for (t, h) in edges {
            let k = match loops.iter().position(|l| l.header == h) {
                Some(k) => k,
                None => {
                    loops.push(Loop {
                        header: h,
                        label: None,
                        blocks: vec![h],
                        back_edges: Vec::new(),
                        parent: None,
                        depth: 0,
                    });
                    loops.len() - 1
                }
            };
            let l = &mut loops[k];
            l.back_edges.push((t, h));
            // Blocks reachable from the header: all of a natural loop's are; for an irreducible
            // cycle this keeps its other entry paths out.
            let mut from_header = vec![false; nb];
            let mut todo = vec![h];
            while let Some(b) = todo.pop() {
                if !from_header[b] {
                    from_header[b] = true;
                    todo.extend(self.blocks[b].succs.iter().copied());
                }
            }
            let mut inside = vec![false; nb];
            l.blocks.iter().for_each(|&b| inside[b] = true);
            let mut todo = vec![t];
            while let Some(b) = todo.pop() {
                if inside[b] || !from_header[b] {
                    continue;
                }
                inside[b] = true;
                l.blocks.push(b);
                todo.extend(self.blocks[b].preds.iter().copied());
            }
            l.blocks.sort_unstable();
        }
        // The header's label: the one pointing at its first instruction.
        for l in &mut loops {
            let at = self.blocks[l.header].start;
            let mut names: Vec<&str> = d
                .labels
                .iter()
                .filter(|(_, &k)| k == at)
                .map(|(n, _)| *n)
                .collect();
            names.sort_unstable();
            l.label = names.first().map(|s| s.to_string());
        }
        loops.sort_by_key(|l| self.blocks[l.header].start);
        // Nesting: the parent is the smallest other loop holding the header.
        for k in 0..loops.len() {
            let h = loops[k].header;
            loops[k].parent = (0..loops.len())
                .filter(|&j| j != k && loops[j].blocks.binary_search(&h).is_ok())
                .filter(|&j| loops[j].blocks.len() > loops[k].blocks.len())
                .min_by_key(|&j| loops[j].blocks.len());
        }
        for k in 0..loops.len() {
            let mut depth = 1;
            let mut p = loops[k].parent;
            while let Some(j) = p {
                depth += 1;
                p = loops[j].parent;
                if depth as usize > loops.len() {
                    break;
                }
            }
            loops[k].depth = depth;
        }
        self.loops = loops;
    }

    /// The instructions of loop `k`, in text order.
    pub fn loop_instructions(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.loops[k]
            .blocks
            .iter()
            .flat_map(|&b| self.blocks[b].start..self.blocks[b].end)
    }

    /// The innermost loop holding instruction `k`, if any.
    pub fn innermost_loop(&self, k: usize) -> Option<usize> {
        let b = *self.block_of.get(k)?;
        (0..self.loops.len())
            .filter(|&j| self.loops[j].blocks.binary_search(&b).is_ok())
            .max_by_key(|&j| self.loops[j].depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;
    use crate::tests::fixture;

    fn cfg_of(body: &str) -> (Cfg, Vec<String>) {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .pred %p<9>;\n.reg .b32 %r<9>;\n{body}\n}}\n"
        );
        let p = parse(&text);
        assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
        let f = p
            .module
            .kernels()
            .next()
            .cloned()
            .unwrap_or_else(|| panic!("no kernel"));
        let d = Decoded::of(&f);
        let names = d.insts.iter().map(|i| i.to_string()).collect();
        (Cfg::build(&d), names)
    }

    #[test]
    fn nested_loops_with_dominators() {
        // entry; outer header A; inner header B; inner latch; outer latch; exit.
        let (c, _) = cfg_of(
            "mov.u32 %r1, 0;\n\
             $A:\n\
             mov.u32 %r2, 0;\n\
             $B:\n\
             add.s32 %r2, %r2, 1;\n\
             setp.lt.s32 %p1, %r2, 4;\n\
             @%p1 bra $B;\n\
             add.s32 %r1, %r1, 1;\n\
             setp.lt.s32 %p2, %r1, 4;\n\
             @%p2 bra $A;\n\
             ret;",
        );
        // Blocks: [0] mov; [1] A; [2] B..bra; [3] add..bra; [4] ret.
        let starts: Vec<usize> = c.blocks.iter().map(|b| b.start).collect();
        assert_eq!(starts, [0, 1, 2, 5, 8]);
        assert_eq!(c.blocks[2].succs, [2, 3]);
        assert_eq!(c.blocks[3].succs, [1, 4]);
        assert_eq!(c.idom, [None, Some(0), Some(1), Some(2), Some(3)]);
        assert!(c.dominates(1, 4) && !c.dominates(2, 1));
        type Shape<'a> = (Option<&'a str>, Vec<usize>, u32, Option<usize>);
        let got: Vec<Shape> = c
            .loops
            .iter()
            .map(|l| (l.label.as_deref(), l.blocks.clone(), l.depth, l.parent))
            .collect();
        assert_eq!(
            got,
            [
                (Some("$A"), vec![1, 2, 3], 1, None),
                (Some("$B"), vec![2], 2, Some(0)),
            ]
        );
        assert_eq!(c.innermost_loop(3), Some(1));
        assert_eq!(c.innermost_loop(6), Some(0));
        assert_eq!(c.innermost_loop(8), None);
    }

    #[test]
    fn a_block_laid_out_before_its_header_is_in_the_loop() {
        // The header H is entered from the top; its body continues in block X placed *before*
        // H in the text, which jumps back to H with a forward branch. Text-order scans miss X;
        // the natural loop has it.
        let (c, _) = cfg_of(
            "bra $H;\n\
             $X:\n\
             add.s32 %r1, %r1, 1;\n\
             bra $H;\n\
             $H:\n\
             setp.lt.s32 %p1, %r1, 4;\n\
             @%p1 bra $X;\n\
             ret;",
        );
        assert_eq!(c.loops.len(), 1);
        let l = &c.loops[0];
        assert_eq!(l.label.as_deref(), Some("$H"));
        let xs = c.block_of[1];
        assert!(l.blocks.contains(&xs), "{l:?}");
        assert_eq!(l.back_edges, [(xs, c.block_of[3])]);
    }

    #[test]
    fn irreducible_cycles_still_make_loops() {
        // Two entries into the cycle {P, Q}: neither dominates the other.
        let (c, _) = cfg_of(
            "@%p1 bra $Q;\n\
             $P:\n\
             add.s32 %r1, %r1, 1;\n\
             $Q:\n\
             add.s32 %r1, %r1, 2;\n\
             @%p2 bra $P;\n\
             ret;",
        );
        assert_eq!(c.loops.len(), 1, "{:?}", c.loops);
        // P and Q, not the entry block.
        assert_eq!(c.loops[0].blocks, [1, 2]);
    }

    #[test]
    fn loop_sum_has_three_loops_at_depth_one() {
        let m = fixture("loop_sum.default");
        let f = m
            .function("loop_sum")
            .unwrap_or_else(|| panic!("no loop_sum"));
        let d = Decoded::of(f);
        let c = Cfg::build(&d);
        let got: Vec<(Option<&str>, u32)> = c
            .loops
            .iter()
            .map(|l| (l.label.as_deref(), l.depth))
            .collect();
        assert_eq!(
            got,
            [
                (Some("$L__BB0_2"), 1),
                (Some("$L__BB0_7"), 1),
                (Some("$L__BB0_10"), 1)
            ]
        );
        // Every block but the entry has an immediate dominator that dominates it.
        for &b in c.rpo.iter().skip(1) {
            let i = c.idom[b].unwrap_or_else(|| panic!("block {b} without idom"));
            assert!(c.dominates(i, b));
            // Independent check: removing the dominator disconnects b from the entry.
            let mut seen = vec![false; c.blocks.len()];
            let mut todo = vec![0];
            while let Some(x) = todo.pop() {
                if x == i || seen[x] {
                    continue;
                }
                seen[x] = true;
                todo.extend(c.blocks[x].succs.iter().copied());
            }
            assert!(!seen[b] || i == 0 && b == 0, "block {b}, idom {i}");
        }
    }
}
