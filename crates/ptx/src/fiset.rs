//! FISets (seed 002, "Fast Imprecise Sets", §4.2–4.4 and Algorithm 1): groups of f64
//! instructions that are worth demoting together, because values enter and leave the group in
//! f64 only at a few places while much arithmetic happens inside. This is a static analysis:
//! it rewrites nothing, and every set it returns can be handed to [`crate::pass::demote`] as a
//! [`crate::demote::DemoteSet`] of its [`Fiset::sites`].
//!
//! **Members.** An instruction can be in a FISet when [`demote::candidates`] lists it as
//! eligible (with a selector): f64 arithmetic, compares, selects, moves and conversions outside
//! math units and opaque regions. Everything else (loads, stores, atomics, calls, parameter
//! moves, bit reinterpretation, unit code) is a *terminating node*: never a member, and the
//! search never walks through it, so a value stored and loaded again starts a new region.
//!
//! **Arithmetic (O).** Members that compute ([`crate::op::Op::is_float_arith`]: f64 `add sub
//! mul fma mad div rcp sqrt rsqrt neg abs min max`). Joiners (`setp`, `selp`, `mov`, `cvt` with
//! an f64 side) may be members, as in the seed's §4.2 (they join groups of arithmetic), but count
//! in no O.
//!
//! **Casts (C)** are counted exactly as [`crate::pass::demote`] inserts conversions for the set,
//! because that is the code that will run. The rewrite works per register (PTX is not SSA), so
//! the count does too: for each f64 register R, one `cvt.rn.f32.f64` after every def of R by a
//! non-member when some member reads R (one at entry when nothing in the function writes R),
//! and one `cvt.f64.f32` after every member def of R when some non-member reads R. This is the
//! seed's in/out-edge count of Algorithm 1 with the edge into the set subtracted and constants
//! excluded (immediates are rounded in place, not converted), done on registers: a register
//! read by three members costs one conversion per def, not three.
//!
//! **Growth (Algorithm 1).** From each arithmetic member, in text order, a breadth-first walk
//! over the def-use edges of [`crate::graph`] (into and out of each member, through any
//! register) adds neighbouring members one at a time; O and C are updated incrementally per
//! register. After each addition with O/C > 1 the set so far is a candidate, and each start
//! keeps its best candidate (highest `r_ac`, ties to the larger set). Candidates that share an
//! instruction are then united (§4.4, "Multiple FISets"), O and C are recomputed for each union,
//! and unions with `r_ac` ≤ 1 are dropped.
//!
//! **Loops (§4.4).** The position of a conversion is the def it follows (function entry for the
//! entry conversions, outside every loop). When a conversion of a set sits in a loop deeper than
//! the set's shallowest arithmetic, conversions may run more often than the arithmetic: the set
//! is kept only if, in the innermost loop holding that conversion, the set has at least as many
//! arithmetic members as conversions; otherwise it is discarded
//! ([`FunctionProfile::discarded_by_loops`]). Conversions shallower than the arithmetic run at
//! most as often as it does and need nothing.
//!
//! **φ.** At most [`FisetOptions::max_sets`] sets are returned over the module, the highest
//! `r_ac` first (ties: larger, then earlier); [`FisetReport::notes`] says how many were dropped.
//! The profiles describe the sets before φ. Sets are returned by function (module order), then by
//! their first member's text position.

use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::demote::{self, Plan};
use crate::graph::Graph;
use crate::model::*;
use crate::regs::RegId;
use crate::site::{self, Site};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::{HashMap, HashSet};

/// How the search is bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FisetOptions {
    /// φ: the most sets returned over the whole module (the highest `r_ac` are kept).
    pub max_sets: usize,
}

impl Default for FisetOptions {
    /// φ = 200.
    fn default() -> FisetOptions {
        FisetOptions { max_sets: 200 }
    }
}

/// One FISet: instructions of one function to demote together (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fiset {
    /// The `.entry` or `.func` holding it, as the PTX spells its name.
    pub function: String,
    /// Its instructions' sites, in text order: a [`crate::demote::DemoteSet::sites`] as is.
    pub sites: Vec<Site>,
    /// O: its f64 arithmetic members.
    pub arithmetic: usize,
    /// C: the conversions [`crate::pass::demote`] inserts when demoting exactly this set.
    pub casts: usize,
    /// O / C (`inf`, written as the string `"inf"`, when C is 0).
    #[serde(serialize_with = "finite_or_string")]
    pub r_ac: f64,
    /// The source (file, line) of its members, sorted, without repeats.
    pub lines: Vec<(String, u32)>,
}

/// What the search found in one function (kernel or `.func` with a body).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionProfile {
    /// The function's name as the PTX spells it.
    pub function: String,
    /// Sets kept after the union and the loop heuristic (before φ).
    pub fisets: usize,
    /// The mean `r_ac` of those sets with a finite one, `None` when there is none.
    pub mean_r_ac: Option<f64>,
    /// Unions dropped by the §4.4 loop heuristic.
    pub discarded_by_loops: usize,
    /// The function's eligible f64 arithmetic instructions (the most a set could hold as O).
    pub f64_arithmetic: usize,
}

/// The FISets of a module, a profile per function, and what the caller should know.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FisetReport {
    /// The sets, by function (module order) and first member's position.
    pub sets: Vec<Fiset>,
    /// One per function with a body, in module order.
    pub profiles: Vec<FunctionProfile>,
    /// How many sets φ dropped, if any.
    pub notes: Vec<String>,
}

fn finite_or_string<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else if x.is_nan() {
        s.serialize_str("nan")
    } else if *x > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

/// O / C as the seed defines it, infinite when nothing needs converting.
fn ratio(arithmetic: usize, casts: usize) -> f64 {
    if casts == 0 {
        f64::INFINITY
    } else {
        arithmetic as f64 / casts as f64
    }
}

/// One function made ready for the search: who may be a member, how demote would rewrite it,
/// who its neighbouring members are, and per register the counts that C is made of.
pub(crate) struct Prepared<'f> {
    pub(crate) d: Decoded<'f>,
    cfg: Cfg,
    /// Per instruction: demote's rewrite when it is eligible (a possible member).
    plans: Vec<Option<Plan>>,
    /// Per instruction: an eligible f64 arithmetic instruction.
    pub(crate) arith: Vec<bool>,
    /// Per member: the members it shares a def-use edge with (either way), text order.
    neighbours: Vec<Vec<u32>>,
    /// Per register: the instructions writing it, once per occurrence (as demote converts).
    reg_defs: Vec<Vec<u32>>,
    /// Per register: how many instructions read it.
    users: Vec<u32>,
}

impl<'f> Prepared<'f> {
    /// Prepares `f`; `eligible` holds the ids [`demote::candidates`] lists with a selector.
    pub(crate) fn of(f: &'f Function, eligible: &HashSet<InstId>) -> Prepared<'f> {
        let d = Decoded::of(f);
        let cfg = Cfg::build(&d);
        let n = d.len();
        let plans: Vec<Option<Plan>> = (0..n)
            .map(|k| {
                eligible
                    .contains(&d.insts[k].id)
                    .then(|| demote::plan(&d, k).ok())
                    .flatten()
            })
            .collect();
        let arith = (0..n)
            .map(|k| plans[k].is_some() && d.ops[k].is_float_arith())
            .collect();
        let mut neighbours = vec![Vec::new(); n];
        if plans.iter().any(Option::is_some) {
            let g = Graph::of(&d, &cfg);
            for k in (0..n).filter(|&k| plans[k].is_some()) {
                let id = d.insts[k].id;
                let ends = g
                    .defs_of(id)
                    .map(|e| e.def)
                    .chain(g.uses_of(id).map(|e| e.user));
                let mut near: Vec<u32> = ends
                    .filter_map(|i| g.index_of(i))
                    .filter(|&j| j != k && plans[j].is_some())
                    .map(|j| j as u32)
                    .collect();
                near.sort_unstable();
                near.dedup();
                neighbours[k] = near;
            }
        }
        let mut reg_defs = vec![Vec::new(); d.regs.len()];
        let mut users = vec![0u32; d.regs.len()];
        let mut seen: Vec<RegId> = Vec::new();
        for k in 0..n {
            for &r in d.defs(k) {
                reg_defs[r.0 as usize].push(k as u32);
            }
            seen.clear();
            for &r in d.uses(k) {
                if !seen.contains(&r) {
                    seen.push(r);
                    users[r.0 as usize] += 1;
                }
            }
        }
        Prepared {
            d,
            cfg,
            plans,
            arith,
            neighbours,
            reg_defs,
            users,
        }
    }

    /// The f64 register member `k` writes in its f32 form (its operand 0), if it writes one.
    fn member_def(&self, k: usize) -> Option<RegId> {
        let p = self.plans[k]?;
        p.defines.then(|| self.d.operand_reg(k, 0)).flatten()
    }

    /// The depth of the innermost loop holding instruction `k` (0 outside loops).
    fn depth(&self, k: usize) -> u32 {
        self.cfg
            .innermost_loop(k)
            .map_or(0, |l| self.cfg.loops[l].depth)
    }

    fn in_loop(&self, l: usize, k: usize) -> bool {
        let b = self.cfg.block_of[k];
        self.cfg.loops[l].blocks.binary_search(&b).is_ok()
    }
}

/// A set being grown, with O and C kept up to date per register: adding a member touches only
/// the registers it reads and writes, so a step costs its operands, not the set's size.
pub(crate) struct Cost<'p, 'f> {
    p: &'p Prepared<'f>,
    /// Per register: members reading it in their f32 form.
    member_reads: Vec<u32>,
    /// Per register: members writing it in their f32 form.
    member_defs: Vec<u32>,
    /// Per register: occurrences among members' defs (subtracted from all defs: non-member defs).
    member_def_occurrences: Vec<u32>,
    /// Per register: members among its readers (subtracted from all readers: non-member reads).
    member_users: Vec<u32>,
    /// Registers with a nonzero count above, to reset cheaply.
    touched: Vec<RegId>,
    in_set: Vec<bool>,
    /// The members in the order they were added.
    pub(crate) members: Vec<usize>,
    pub(crate) arithmetic: usize,
    pub(crate) casts: usize,
}

impl<'p, 'f> Cost<'p, 'f> {
    pub(crate) fn new(p: &'p Prepared<'f>) -> Cost<'p, 'f> {
        let nr = p.d.regs.len();
        Cost {
            p,
            member_reads: vec![0; nr],
            member_defs: vec![0; nr],
            member_def_occurrences: vec![0; nr],
            member_users: vec![0; nr],
            touched: Vec::new(),
            in_set: vec![false; p.d.len()],
            members: Vec::new(),
            arithmetic: 0,
            casts: 0,
        }
    }

    /// Empties the set.
    fn clear(&mut self) {
        for &r in &self.touched {
            let r = r.0 as usize;
            self.member_reads[r] = 0;
            self.member_defs[r] = 0;
            self.member_def_occurrences[r] = 0;
            self.member_users[r] = 0;
        }
        self.touched.clear();
        for &k in &self.members {
            self.in_set[k] = false;
        }
        self.members.clear();
        self.arithmetic = 0;
        self.casts = 0;
    }

    /// The conversions register `r` costs: demote's rule (module docs).
    fn register_casts(&self, r: RegId) -> usize {
        let i = r.0 as usize;
        let all_defs = self.p.reg_defs[i].len();
        let mut c = 0;
        if self.member_reads[i] > 0 {
            let outside = all_defs - self.member_def_occurrences[i] as usize;
            c += outside + usize::from(all_defs == 0);
        }
        if self.p.users[i] > self.member_users[i] {
            c += self.member_defs[i] as usize;
        }
        c
    }

    /// Adds member `k` (an eligible instruction not in the set yet).
    pub(crate) fn add(&mut self, k: usize) {
        let Some(plan) = self.p.plans[k] else {
            return;
        };
        if self.in_set[k] {
            return;
        }
        let d = &self.p.d;
        let mut regs: Vec<RegId> = Vec::with_capacity(8);
        let operand_regs = plan.operands().filter_map(|j| d.operand_reg(k, j));
        for r in operand_regs.chain(d.defs(k).iter().copied()) {
            if !regs.contains(&r) {
                regs.push(r);
            }
        }
        for &r in d.uses(k) {
            if !regs.contains(&r) {
                regs.push(r);
            }
        }
        let before: usize = regs.iter().map(|&r| self.register_casts(r)).sum();
        for j in plan.operands() {
            let Some(r) = d.operand_reg(k, j) else {
                continue;
            };
            if j == 0 && plan.defines {
                self.member_defs[r.0 as usize] += 1;
            } else {
                self.member_reads[r.0 as usize] += 1;
            }
        }
        for &r in d.defs(k) {
            self.member_def_occurrences[r.0 as usize] += 1;
        }
        let mut read: Vec<RegId> = Vec::with_capacity(4);
        for &r in d.uses(k) {
            if !read.contains(&r) {
                read.push(r);
                self.member_users[r.0 as usize] += 1;
            }
        }
        self.touched.extend_from_slice(&regs);
        let after: usize = regs.iter().map(|&r| self.register_casts(r)).sum();
        self.casts = self.casts + after - before;
        self.in_set[k] = true;
        self.members.push(k);
        self.arithmetic += usize::from(self.p.arith[k]);
    }

    pub(crate) fn r_ac(&self) -> f64 {
        ratio(self.arithmetic, self.casts)
    }

    /// Where each conversion of the set goes: after instruction `Some(k)`, or at entry (`None`).
    pub(crate) fn conversions(&self) -> Vec<Option<usize>> {
        let mut regs = self.touched.clone();
        regs.sort_unstable();
        regs.dedup();
        let mut out = Vec::new();
        for r in regs {
            let i = r.0 as usize;
            let defs = &self.p.reg_defs[i];
            if self.member_reads[i] > 0 {
                if defs.is_empty() {
                    out.push(None);
                }
                out.extend(
                    defs.iter()
                        .map(|&k| k as usize)
                        .filter(|&k| !self.in_set[k])
                        .map(Some),
                );
            }
            if self.p.users[i] > self.member_users[i] {
                let mut member_defs: Vec<usize> = defs
                    .iter()
                    .map(|&k| k as usize)
                    .filter(|&k| self.in_set[k] && self.p.member_def(k) == Some(r))
                    .collect();
                member_defs.dedup();
                out.extend(member_defs.into_iter().map(Some));
            }
        }
        out
    }
}

/// One walk of Algorithm 1 from `start`: the members in the order they were added, O and C
/// after each addition, and the length of the best candidate prefix (if any had O/C > 1).
pub(crate) struct Growth {
    pub(crate) order: Vec<usize>,
    /// Read by the tests that check each step by hand; a few bytes per step otherwise.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) steps: Vec<(usize, usize)>,
    pub(crate) best: Option<usize>,
}

/// Grows a set from arithmetic member `start` (Algorithm 1, see the module docs). `mark` is
/// scratch space of the function's length (any contents).
fn grow(cost: &mut Cost, start: usize, mark: &mut [u32], stamp: u32) -> Growth {
    cost.clear();
    let p = cost.p;
    let mut order = vec![start];
    let mut steps = Vec::new();
    let mut best: Option<(f64, usize)> = None;
    mark[start] = stamp;
    // `order` is the queue too: members are added in the order the walk reaches them.
    let mut next = 0;
    let mut added = 0;
    loop {
        // Add what the walk reached since the last check, one member at a time.
        while added < order.len() {
            cost.add(order[added]);
            added += 1;
            steps.push((cost.arithmetic, cost.casts));
            let r = cost.r_ac();
            // `>=`: on a tie the later prefix is the larger set.
            if r > 1.0 && best.is_none_or(|(b, _)| r >= b) {
                best = Some((r, added));
            }
        }
        let Some(&t) = order.get(next) else { break };
        next += 1;
        for &m in &p.neighbours[t] {
            let m = m as usize;
            if mark[m] != stamp {
                mark[m] = stamp;
                order.push(m);
            }
        }
    }
    Growth {
        order,
        steps,
        best: best.map(|(_, n)| n),
    }
}

/// The growth from `start` in function `f` of `m`, for tests that check each step by hand.
#[cfg(test)]
pub(crate) fn growth_from(m: &Module, f: &Function, start: InstId) -> Growth {
    let eligible = eligible_ids(m);
    let p = Prepared::of(f, &eligible);
    let k =
        p.d.insts
            .iter()
            .position(|i| i.id == start)
            .unwrap_or_else(|| panic!("no {start}"));
    let mut cost = Cost::new(&p);
    let mut mark = vec![0; p.d.len()];
    grow(&mut cost, k, &mut mark, 1)
}

/// The ids of the instructions `demote` may demote: the possible members.
pub(crate) fn eligible_ids(m: &Module) -> HashSet<InstId> {
    demote::candidates(m)
        .into_iter()
        .filter(|c| c.selector.is_some())
        .map(|c| c.id)
        .collect()
}

/// The union-find root of `k` (path halving).
fn root(parent: &mut [usize], mut k: usize) -> usize {
    while parent[k] != k {
        parent[k] = parent[parent[k]];
        k = parent[k];
    }
    k
}

/// A set found in one function, before φ.
struct Found {
    members: Vec<usize>,
    arithmetic: usize,
    casts: usize,
    r_ac: f64,
}

/// The best candidates of every start, united where they overlap, recomputed, and filtered by
/// `r_ac` > 1 and the loop heuristic. Returns the kept sets and how many the loops discarded.
fn search(p: &Prepared) -> (Vec<Found>, usize) {
    let n = p.d.len();
    let mut cost = Cost::new(p);
    let mut mark = vec![0u32; n];
    let mut parent: Vec<usize> = (0..n).collect();
    let mut in_candidate = vec![false; n];
    let mut stamp = 0;
    for start in (0..n).filter(|&k| p.arith[k]) {
        stamp += 1;
        let g = grow(&mut cost, start, &mut mark, stamp);
        let Some(len) = g.best else { continue };
        let first = g.order[0];
        for &k in &g.order[..len] {
            in_candidate[k] = true;
            let (a, b) = (root(&mut parent, first), root(&mut parent, k));
            parent[a] = b;
        }
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for k in (0..n).filter(|&k| in_candidate[k]) {
        let r = root(&mut parent, k);
        groups.entry(r).or_default().push(k);
    }
    let mut unions: Vec<Vec<usize>> = groups.into_values().collect();
    unions.sort_by_key(|u| u[0]);
    let mut kept = Vec::new();
    let mut discarded = 0;
    for members in unions {
        cost.clear();
        for &k in &members {
            cost.add(k);
        }
        let r_ac = cost.r_ac();
        if r_ac <= 1.0 {
            continue;
        }
        if !loops_allow(p, &members, &cost.conversions()) {
            discarded += 1;
            continue;
        }
        kept.push(Found {
            arithmetic: cost.arithmetic,
            casts: cost.casts,
            r_ac,
            members,
        });
    }
    (kept, discarded)
}

/// The §4.4 loop heuristic (module docs): false when a conversion sits in a loop deeper than the
/// set's shallowest arithmetic and that loop holds fewer of the set's arithmetic members than
/// of its conversions.
fn loops_allow(p: &Prepared, members: &[usize], conversions: &[Option<usize>]) -> bool {
    let arithmetic: Vec<usize> = members.iter().copied().filter(|&k| p.arith[k]).collect();
    let Some(shallowest) = arithmetic.iter().map(|&k| p.depth(k)).min() else {
        return true;
    };
    let mut checked: HashSet<usize> = HashSet::new();
    for &k in conversions.iter().flatten() {
        let Some(l) = p.cfg.innermost_loop(k) else {
            continue;
        };
        if p.cfg.loops[l].depth <= shallowest || !checked.insert(l) {
            continue;
        }
        let arith_in = arithmetic.iter().filter(|&&a| p.in_loop(l, a)).count();
        let conv_in = conversions
            .iter()
            .flatten()
            .filter(|&&c| p.in_loop(l, c))
            .count();
        if arith_in < conv_in {
            return false;
        }
    }
    true
}

/// The FISets of every function of `m` with a body (see the module docs).
pub fn fisets(m: &Module, opts: &FisetOptions) -> FisetReport {
    let eligible = eligible_ids(m);
    let files: HashMap<u32, &str> = m.files().into_iter().collect();
    let mut sets: Vec<(usize, usize, Fiset)> = Vec::new();
    let mut profiles = Vec::new();
    for (fi, f) in m.functions().filter(|f| f.body.is_some()).enumerate() {
        let p = Prepared::of(f, &eligible);
        let (found, discarded_by_loops) = search(&p);
        let finite: Vec<f64> = found
            .iter()
            .map(|s| s.r_ac)
            .filter(|r| r.is_finite())
            .collect();
        profiles.push(FunctionProfile {
            function: f.name.clone(),
            fisets: found.len(),
            mean_r_ac: (!finite.is_empty())
                .then(|| finite.iter().sum::<f64>() / finite.len() as f64),
            discarded_by_loops,
            f64_arithmetic: p.arith.iter().filter(|&&a| a).count(),
        });
        if found.is_empty() {
            continue;
        }
        let function_sites = site::function_sites(f, &files);
        for s in found {
            let sites: Vec<Site> = s
                .members
                .iter()
                .map(|&k| function_sites[k].1.clone())
                .collect();
            let mut lines: Vec<(String, u32)> =
                sites.iter().map(|s| (s.file.clone(), s.line)).collect();
            lines.sort();
            lines.dedup();
            sets.push((
                fi,
                s.members[0],
                Fiset {
                    function: f.name.clone(),
                    sites,
                    arithmetic: s.arithmetic,
                    casts: s.casts,
                    r_ac: s.r_ac,
                    lines,
                },
            ));
        }
    }
    let mut notes = Vec::new();
    if sets.len() > opts.max_sets {
        let total = sets.len();
        sets.sort_by(|a, b| {
            b.2.r_ac
                .total_cmp(&a.2.r_ac)
                .then(b.2.sites.len().cmp(&a.2.sites.len()))
                .then((a.0, a.1).cmp(&(b.0, b.1)))
        });
        sets.truncate(opts.max_sets);
        notes.push(format!(
            "φ = {}: kept the {} FISets with the highest r_ac of {total}; {} dropped",
            opts.max_sets,
            opts.max_sets,
            total - opts.max_sets
        ));
    }
    sets.sort_by_key(|s| (s.0, s.1));
    FisetReport {
        sets: sets.into_iter().map(|s| s.2).collect(),
        profiles,
        notes,
    }
}

/// O, C and where the conversions go for an arbitrary set of instructions of `f` (ineligible ones
/// are ignored), for tests comparing the count with what demote inserts.
#[cfg(test)]
pub(crate) fn cost_of(m: &Module, f: &Function, ids: &[InstId]) -> (usize, usize) {
    let eligible = eligible_ids(m);
    let p = Prepared::of(f, &eligible);
    let mut cost = Cost::new(&p);
    for (k, i) in p.d.insts.iter().enumerate() {
        if ids.contains(&i.id) {
            cost.add(k);
        }
    }
    assert_eq!(cost.conversions().len(), cost.casts, "positions and count");
    (cost.arithmetic, cost.casts)
}

#[cfg(test)]
#[path = "fiset_tests.rs"]
mod tests;
