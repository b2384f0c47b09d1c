//! Variables at PTX level, for the delta-debugging baseline (Precimonious lowers *variables*,
//! not instructions).
//!
//! **Definition.** A variable is a *web* of f64 registers of one function: registers are joined
//! (union-find) when one is copied into another by a register-to-register `mov.f64`, or merged
//! with another by `selp.f64` (its result and both register inputs). A register is one variable
//! across all its defs: PTX reassigns registers in loops (an accumulator is written before the
//! loop and in every iteration), and those defs are one source variable. The variable's
//! [`Variable::sites`] are the instructions that [`crate::pass::demote`] may demote (the eligible
//! ones of [`crate::demote::candidates`]) and that write a register of the web, so lowering a
//! variable is a [`crate::demote::DemoteSet`] of its sites. Webs without an f64 arithmetic site
//! (only loaded, copied or converted values) are not variables worth lowering and are dropped.
//!
//! Variables are returned by function (module order), then by their first site's text position.

use crate::decode::Decoded;
use crate::fiset::eligible_ids;
use crate::model::*;
use crate::op::{OpKind, ValueType};
use crate::regs::RegId;
use crate::site::{self, Site};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One variable: a web of f64 registers of one function (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variable {
    /// The `.entry` or `.func` holding it, as the PTX spells its name.
    pub function: String,
    /// Its registers (`%fd3`), in declaration order.
    pub registers: Vec<String>,
    /// The eligible instructions writing one of its registers, in text order.
    pub sites: Vec<Site>,
    /// The source (file, line) of its sites, sorted, without repeats.
    pub lines: Vec<(String, u32)>,
}

fn root(parent: &mut [u32], mut r: u32) -> u32 {
    while parent[r as usize] != r {
        parent[r as usize] = parent[parent[r as usize] as usize];
        r = parent[r as usize];
    }
    r
}

/// The variables of every function of `m` with a body (see the module docs).
pub fn variables(m: &Module) -> Vec<Variable> {
    let eligible = eligible_ids(m);
    let files: HashMap<u32, &str> = m.files().into_iter().collect();
    let mut out = Vec::new();
    for f in m.functions().filter(|f| f.body.is_some()) {
        let d = Decoded::of(f);
        let f64_reg = |r: RegId| d.regs.value_type(r) == Some(ValueType::F64);
        let mut parent: Vec<u32> = (0..d.regs.len() as u32).collect();
        for k in 0..d.len() {
            let joined: &[usize] = match d.ops[k].kind {
                OpKind::Move { reinterpret: false } if d.insts[k].has_mod("f64") => &[0, 1],
                OpKind::Select if d.insts[k].has_mod("f64") => &[0, 1, 2],
                _ => continue,
            };
            let regs: Vec<RegId> = joined
                .iter()
                .filter_map(|&j| d.operand_reg(k, j))
                .filter(|&r| f64_reg(r))
                .collect();
            for pair in regs.windows(2) {
                let (a, b) = (root(&mut parent, pair[0].0), root(&mut parent, pair[1].0));
                parent[a as usize] = b;
            }
        }
        // Web root → (its sites by instruction index, whether one is arithmetic).
        let mut webs: BTreeMap<u32, (Vec<usize>, bool)> = BTreeMap::new();
        for k in (0..d.len()).filter(|&k| eligible.contains(&d.insts[k].id)) {
            let mut roots: Vec<u32> = d
                .defs(k)
                .iter()
                .filter(|&&r| f64_reg(r))
                .map(|&r| root(&mut parent, r.0))
                .collect();
            roots.dedup();
            for w in roots {
                let web = webs.entry(w).or_default();
                web.0.push(k);
                web.1 |= d.ops[k].is_float_arith();
            }
        }
        if webs.is_empty() {
            continue;
        }
        let function_sites = site::function_sites(f, &files);
        let mut found: Vec<(usize, Variable)> = Vec::new();
        for (w, (ks, arithmetic)) in webs {
            if !arithmetic {
                continue;
            }
            let registers = (0..d.regs.len() as u32)
                .filter(|&r| f64_reg(RegId(r)) && root(&mut parent, r) == w)
                .map(|r| d.regs.name(RegId(r)))
                .collect();
            let sites: Vec<Site> = ks.iter().map(|&k| function_sites[k].1.clone()).collect();
            let mut lines: Vec<(String, u32)> =
                sites.iter().map(|s| (s.file.clone(), s.line)).collect();
            lines.sort();
            lines.dedup();
            found.push((
                ks[0],
                Variable {
                    function: f.name.clone(),
                    registers,
                    sites,
                    lines,
                },
            ));
        }
        found.sort_by_key(|v| v.0);
        out.extend(found.into_iter().map(|v| v.1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::parse_clean;

    fn kernel(body: &str) -> Module {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.file 1 \"v.cu\"\n\
             .visible .entry k(.param .u64 k_param_0)\n{{\n.reg .pred %p<9>;\n\
             .reg .b32 %r<9>;\n.reg .b64 %rd<9>;\n.reg .f64 %fd<20>;\n{body}\n}}\n"
        );
        parse_clean("variables test", &text)
    }

    fn lines_of(v: &Variable) -> Vec<u32> {
        v.sites.iter().map(|s| s.line).collect()
    }

    #[test]
    fn an_accumulator_copied_around_a_loop_is_one_variable() {
        // acc (%fd1) starts at 0, gets %fd3 = acc + x each iteration and %fd3 is copied back:
        // {%fd1, %fd3} is one web; x (%fd2) is only loaded and is no variable; the scaled result
        // %fd4 = acc * 0.5 is a second variable.
        let m = kernel(
            "ld.param.u64 %rd1, [k_param_0];\n\
             .loc 1 10 0\n\
             mov.f64 %fd1, 0d0000000000000000;\n\
             mov.u32 %r1, 0;\n\
             $L_loop:\n\
             .loc 1 11 0\n\
             ld.global.f64 %fd2, [%rd1];\n\
             .loc 1 12 0\n\
             add.f64 %fd3, %fd1, %fd2;\n\
             mov.f64 %fd1, %fd3;\n\
             add.s32 %r1, %r1, 1;\n\
             setp.lt.s32 %p1, %r1, 8;\n\
             @%p1 bra $L_loop;\n\
             .loc 1 13 0\n\
             mul.f64 %fd4, %fd1, 0d3FE0000000000000;\n\
             st.global.f64 [%rd1], %fd4;\n\
             ret;",
        );
        let vs = variables(&m);
        assert_eq!(vs.len(), 2, "{vs:#?}");
        assert_eq!(vs[0].registers, ["%fd1", "%fd3"]);
        // mov 0, add, mov back: every def of the web.
        assert_eq!(lines_of(&vs[0]), [10, 12, 12]);
        assert_eq!(
            vs[0].lines,
            [("v.cu".to_string(), 10), ("v.cu".to_string(), 12)]
        );
        assert_eq!(vs[1].registers, ["%fd4"]);
        assert_eq!(lines_of(&vs[1]), [13]);
        // Lowering a variable is a demote set of its sites: all of them are accepted.
        let d = crate::demote::demote(&m, &crate::demote::DemoteSet::sites(vs[0].sites.clone()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(d.report.refused.is_empty(), "{:?}", d.report.refused);
        assert_eq!(d.report.demoted(), 3);
    }

    #[test]
    fn selp_merges_both_inputs_and_its_result() {
        let m = kernel(
            "ld.param.u64 %rd1, [k_param_0];\n\
             ld.global.f64 %fd1, [%rd1];\n\
             .loc 1 20 0\n\
             mul.f64 %fd2, %fd1, %fd1;\n\
             .loc 1 21 0\n\
             neg.f64 %fd3, %fd1;\n\
             setp.gt.f64 %p1, %fd1, 0d0000000000000000;\n\
             .loc 1 22 0\n\
             selp.f64 %fd4, %fd2, %fd3, %p1;\n\
             .loc 1 23 0\n\
             add.f64 %fd5, %fd1, %fd1;\n\
             st.global.f64 [%rd1], %fd4;\n\
             st.global.f64 [%rd1+8], %fd5;\n\
             ret;",
        );
        let vs = variables(&m);
        assert_eq!(vs.len(), 2, "{vs:#?}");
        assert_eq!(vs[0].registers, ["%fd2", "%fd3", "%fd4"]);
        assert_eq!(lines_of(&vs[0]), [20, 21, 22]);
        // %fd1 is only loaded: no eligible def, no variable. %fd5 stands alone.
        assert_eq!(vs[1].registers, ["%fd5"]);
    }
}
