//! The demotion error's inserted code: the f32 form of a site on its operands rounded to f32,
//! then either per-thread accumulation of the function's loop sites (their sums and maxima in
//! registers or a `.local` array, their executions in counters shared by the unguarded sites
//! of a basic block), flushed to the global at every exit ([`FLUSH_FUNCTION`]), or, for sites
//! outside loops, a call of [`DEMOTION_FUNCTION`] per execution (inlined after the merge).
//!
//! An accumulated site's code has no branch but its guard's: its *rare* executions (r64 = ±0,
//! r64 or r32 not finite, |r64| outside the refined reciprocal's range, `quotient`) add
//! nothing to the totals and set the group's predicate; the sites are grouped as the
//! exceptions' are (`exceptions::groups`), and at its close a group branches once, where some
//! execution was rare, to its out-of-line rare path, which tests each site again from its r64
//! and r32 (kept unchanged until the close), counts a zero reference or a non-finite execution
//! by one atomic, or divides and accumulates, and comes back. So the common execution is the
//! f32 form, the reciprocal sequence and two predicated adds, and the sites of a group are one
//! straight run that ptxas schedules together (the reciprocals of one group interleave).

use super::exceptions::{self, Close};
use super::quotient;
use super::{dest, reg, with_guard, Scratch};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::pass::demote::{f64_imm_to_f32, Plan};
use crate::pass::shadow::{
    ShadowError, Word, COPIES, DEMOTION_FUNCTION, FLUSH_FUNCTION, SHADOW_GLOBAL, WORDS_PER_SITE,
};
use crate::rewrite::{call, instruction, int, Guarding, Rewriter};
use std::collections::HashMap;

/// At most this many demotion sites of one function accumulate in registers (four 32-bit
/// registers each: the sum and the maximum), the deepest in loops first; the function's
/// other sites inside loops accumulate in a per-thread `.local` array (one 16-byte load and
/// one store per execution, still no call). Execution counters: as many in registers, the
/// others in the array.
pub const ACCUMULATED_PER_FUNCTION: usize = 16;

/// Where a total lives for the whole function.
#[derive(Debug, Clone)]
enum Storage {
    /// Registers of their own: a site's sum and maximum (f64), or a counter (u64).
    Registers(Vec<String>),
    /// At `offset` of the function's `.local` array `array`: a site's sum and maximum
    /// (16 bytes, 16-aligned, one `v2.f64` access) or a counter (8 bytes).
    Local { array: String, offset: i64 },
}

/// One accumulated site.
#[derive(Debug, Clone)]
pub(super) struct Accumulator {
    /// The site's index (its record in the global).
    pub index: u32,
    /// Its sum and maximum.
    storage: Storage,
    /// Its execution counter (an index into [`Accumulators::counters`]).
    counter: usize,
    /// Whether this site's code adds one to the counter: the first site of its group in the
    /// function's order (the others execute exactly as often).
    counts: bool,
}

/// The accumulators of one function's sites.
pub(super) struct Accumulators {
    /// By site, in site order.
    pub sites: Vec<Accumulator>,
    /// The execution counters (u64): one per basic block for its unguarded sites, one per
    /// guarded site.
    counters: Vec<Storage>,
    /// The `.local` array's declaration, when some total lives there.
    array: Option<VarDecl>,
    /// The sites cut into groups as the exceptions' are (`exceptions::groups`: a run within a
    /// basic block that no instruction redefining a site's result or guard interrupts): a
    /// group tests its rare executions with one branch, at its close.
    groups: Vec<(Vec<(usize, u32)>, Close)>,
    /// By site index: its group and position in it.
    place: HashMap<u32, (usize, usize)>,
}

/// What shares an execution counter: the unguarded sites of one basic block, or one guarded
/// site (its guard may change between two sites of a block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    Block(usize),
    Guarded(u32),
}

impl Accumulators {
    /// Accumulators for `chosen` ((instruction in `d`, site index), register ones first): the
    /// first `in_registers` sites and counters get registers, the others room in a `.local`
    /// array named after `taken`.
    pub(super) fn new(
        rw: &mut Rewriter,
        d: &Decoded,
        chosen: &[(usize, u32)],
        in_registers: usize,
        taken: impl Fn(&str) -> bool,
    ) -> Result<Accumulators, ShadowError> {
        let array_name = crate::rewrite::unique_name("__mantissa_shadow_totals", |n| taken(n));
        let cfg = Cfg::build(d);
        let group_of = |j: usize, index: u32| match d.insts[j].guard {
            Some(_) => Group::Guarded(index),
            None => Group::Block(cfg.block_of[j]),
        };
        // The first site of each group in the function's order counts its executions.
        let mut first: HashMap<Group, usize> = HashMap::new();
        for &(j, index) in chosen {
            let g = group_of(j, index);
            first.entry(g).and_modify(|f| *f = (*f).min(j)).or_insert(j);
        }
        let mut local = 0i64;
        let mut place = |rw: &mut Rewriter,
                         k: usize,
                         types: &[&str],
                         bytes: i64|
         -> Result<Storage, ShadowError> {
            if k < in_registers {
                let regs = types.iter().map(|t| rw.reg(t)).collect::<Result<_, _>>()?;
                return Ok(Storage::Registers(regs));
            }
            let offset = local;
            local += bytes;
            Ok(Storage::Local {
                array: array_name.clone(),
                offset,
            })
        };
        // Sites first (16 bytes each, so every pair stays 16-aligned), then the counters.
        let mut sites = Vec::new();
        for (k, &(j, index)) in chosen.iter().enumerate() {
            let storage = place(rw, k, &["f64", "f64"], 16)?;
            sites.push((j, index, storage));
        }
        let mut counter_of: HashMap<Group, usize> = HashMap::new();
        let mut counters = Vec::new();
        for &(j, index) in chosen {
            if let std::collections::hash_map::Entry::Vacant(slot) =
                counter_of.entry(group_of(j, index))
            {
                slot.insert(counters.len());
                let k = counters.len();
                counters.push(place(rw, k, &["u64"], 8)?);
            }
        }
        let mut sites: Vec<Accumulator> = sites
            .into_iter()
            .map(|(j, index, storage)| {
                let g = group_of(j, index);
                Accumulator {
                    index,
                    storage,
                    counter: counter_of[&g],
                    counts: first[&g] == j,
                }
            })
            .collect();
        sites.sort_by_key(|a| a.index);
        let mut in_text_order = chosen.to_vec();
        in_text_order.sort_unstable();
        let groups = exceptions::groups(d, &in_text_order, GROUP_SITES);
        let place = groups
            .iter()
            .enumerate()
            .flat_map(|(g, (members, _))| {
                members
                    .iter()
                    .enumerate()
                    .map(move |(k, &(_, index))| (index, (g, k)))
            })
            .collect();
        let array = (local > 0).then(|| VarDecl {
            attrs: vec![".local".into(), ".align".into(), "16".into(), ".b8".into()],
            name: array_name,
            dims: vec![Some(local as u64)],
            init: None,
            line: SrcLine(0),
        });
        Ok(Accumulators {
            sites,
            counters,
            array,
            groups,
            place,
        })
    }

    /// The accumulator of site `index`, if it accumulates.
    pub(super) fn of(&self, index: u32) -> Option<&Accumulator> {
        self.sites.iter().find(|a| a.index == index)
    }

    /// The array's declaration and every total zeroed: placed once at the top of the function,
    /// before any label.
    pub(super) fn init(&self) -> Vec<Statement> {
        let mut code: Vec<Statement> = self.array.iter().cloned().map(Statement::Var).collect();
        let storages = self
            .sites
            .iter()
            .map(|a| (&a.storage, 2))
            .chain(self.counters.iter().map(|c| (c, 1)));
        for (storage, words) in storages {
            match storage {
                Storage::Registers(regs) => code.extend(regs.iter().map(|r| {
                    let ty = if words == 1 { "u64" } else { "f64" };
                    let zero = if words == 1 { int(0) } else { f64_imm(0.0) };
                    instruction("mov", &[ty], vec![reg(r), zero])
                })),
                Storage::Local { array, offset } => {
                    for k in 0..words {
                        code.push(instruction(
                            "st",
                            &["local", "u64"],
                            vec![local_word(array, offset + 8 * k), int(0)],
                        ));
                    }
                }
            }
        }
        code
    }

    /// Every site's totals added to the global (the runtime aggregates over the warp): placed
    /// before every `ret`/`exit`.
    pub(super) fn flush(
        &self,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<Vec<Statement>, ShadowError> {
        let mut code = Vec::new();
        for a in &self.sites {
            let (loads, [sum, max]) = a.totals(rw, scratch)?;
            code.extend(loads);
            let (load, count) = self.counter(a, rw, scratch)?;
            code.extend(load);
            code.extend(call(
                FLUSH_FUNCTION,
                &[
                    ("b32", int(a.index.into())),
                    ("b64", reg(&count)),
                    ("b64", reg(&sum)),
                    ("b64", reg(&max)),
                ],
            ));
        }
        Ok(code)
    }

    /// Every group's close (`@any bra` to its rare path, and the label it comes back to), and
    /// the groups' rare paths, for the end of the function, from each site's part of it
    /// (`sections`, by site index: what [`measure`] returned).
    pub(super) fn close_groups(
        &self,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
        d: &Decoded,
        mut sections: HashMap<u32, Vec<Statement>>,
    ) -> Result<Vec<Statement>, ShadowError> {
        let any = scratch.reg(rw, "pred", ANY)?;
        let mut rare = Vec::new();
        for (members, close) in &self.groups {
            let Some(&(first_j, first)) = members.first() else {
                continue;
            };
            let label = format!("{}r{first}", scratch.labels);
            let back = format!("{}b{first}", scratch.labels);
            rw.insert_before(
                d.insts[first_j].id,
                vec![instruction("mov", &["pred"], vec![reg(&any), int(0)])],
                Guarding::Ignore,
            )?;
            let branch = vec![
                with_guard(
                    instruction("bra", &[], vec![Operand::Symbol(label.clone())]),
                    false,
                    &any,
                ),
                Statement::Label(back.clone(), SrcLine(0)),
            ];
            close.insert(rw, d, branch)?;
            rare.push(Statement::Label(label, SrcLine(0)));
            for &(_, index) in members {
                rare.extend(sections.remove(&index).unwrap_or_default());
            }
            rare.push(instruction("bra", &[], vec![Operand::Symbol(back)]));
        }
        Ok(rare)
    }

    /// One more execution on `a`'s counter, if `a` is the site that counts its group.
    fn count(
        &self,
        a: &Accumulator,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<Vec<Statement>, ShadowError> {
        if !a.counts {
            return Ok(Vec::new());
        }
        let (mut code, r) = self.counter(a, rw, scratch)?;
        code.push(instruction("add", &["u64"], vec![reg(&r), reg(&r), int(1)]));
        if let Storage::Local { array, offset } = &self.counters[a.counter] {
            code.push(instruction(
                "st",
                &["local", "u64"],
                vec![local_word(array, *offset), reg(&r)],
            ));
        }
        Ok(code)
    }

    /// The load that brings `a`'s execution counter into a register (none for a register
    /// counter), and that register.
    fn counter(
        &self,
        a: &Accumulator,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<(Vec<Statement>, String), ShadowError> {
        Ok(match &self.counters[a.counter] {
            Storage::Registers(regs) => (Vec::new(), regs[0].clone()),
            Storage::Local { array, offset } => {
                let r = scratch.reg(rw, "u64", 0)?;
                let load = instruction(
                    "ld",
                    &["local", "u64"],
                    vec![reg(&r), local_word(array, *offset)],
                );
                (vec![load], r)
            }
        })
    }
}

impl Accumulator {
    /// The load that brings the sum and maximum into registers (none for register storage),
    /// and those registers.
    fn totals(
        &self,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<(Vec<Statement>, [String; 2]), ShadowError> {
        match &self.storage {
            Storage::Registers(regs) => Ok((Vec::new(), [regs[0].clone(), regs[1].clone()])),
            Storage::Local { array, offset } => {
                let regs = [scratch.reg(rw, "f64", 4)?, scratch.reg(rw, "f64", 5)?];
                let load = instruction(
                    "ld",
                    &["local", "v2", "f64"],
                    vec![
                        Operand::Vector(vec![reg(&regs[0]), reg(&regs[1])]),
                        local_word(array, *offset),
                    ],
                );
                Ok((vec![load], regs))
            }
        }
    }

    /// The store that puts the sum and maximum back (none for register storage).
    fn store(&self, regs: &[String; 2]) -> Vec<Statement> {
        match &self.storage {
            Storage::Registers(_) => Vec::new(),
            Storage::Local { array, offset } => vec![instruction(
                "st",
                &["local", "v2", "f64"],
                vec![
                    local_word(array, *offset),
                    Operand::Vector(vec![reg(&regs[0]), reg(&regs[1])]),
                ],
            )],
        }
    }

    /// `e` added to the sum and the maximum, through a load and store for local storage. The
    /// maximum by a comparison and a select: e and the maximum are non-negative numbers, where
    /// `max.f64`'s NaN and signed-zero rules cost ptxas five more instructions (sm_90).
    fn add(
        &self,
        e: &str,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<Vec<Statement>, ShadowError> {
        let (mut code, [sum, max]) = self.totals(rw, scratch)?;
        let larger = scratch.reg(rw, "pred", 6)?;
        code.extend([
            instruction("add", &["rn", "f64"], vec![reg(&sum), reg(&sum), reg(e)]),
            instruction(
                "setp",
                &["gt", "f64"],
                vec![reg(&larger), reg(e), reg(&max)],
            ),
            instruction(
                "selp",
                &["f64"],
                vec![reg(&max), reg(e), reg(&max), reg(&larger)],
            ),
        ]);
        code.extend(self.store(&[sum, max]));
        Ok(code)
    }
}

/// Which of the demotion sites `candidates` (instruction index in `d`, site index) accumulate:
/// those inside loops, deepest first, then in text order (a site outside every loop runs once
/// per call of its function: accumulating and flushing it costs as much as a call per
/// execution; `outside_loops` takes them too, for tests). The first
/// [`ACCUMULATED_PER_FUNCTION`] get registers.
pub(super) fn accumulated(
    d: &Decoded,
    candidates: &[(usize, u32)],
    outside_loops: bool,
) -> Vec<(usize, u32)> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let cfg = Cfg::build(d);
    let depth = |j: usize| cfg.innermost_loop(j).map_or(0, |l| cfg.loops[l].depth + 1);
    let mut chosen: Vec<(u32, usize, u32)> = candidates
        .iter()
        .map(|&(j, index)| (depth(j), j, index))
        .filter(|&(depth, _, _)| outside_loops || depth > 0)
        .collect();
    chosen.sort_by_key(|&(depth, j, _)| (std::cmp::Reverse(depth), j));
    chosen.into_iter().map(|(_, j, index)| (j, index)).collect()
}

/// `[array+offset]`.
fn local_word(array: &str, offset: i64) -> Operand {
    Operand::Addr {
        base: array.to_string(),
        offset,
    }
}

/// An f64 immediate.
fn f64_imm(x: f64) -> Operand {
    Operand::Imm(Imm::F64(x.to_bits()))
}

/// `red.global.add.u64 [__mantissa_shadow + word w of site index], 1`.
fn count_in_global(index: u32, w: Word) -> Statement {
    // Copy 0 of the site's record (the runtime's warps add into the copy of their SM).
    let offset = 8 * (i64::from(WORDS_PER_SITE) * i64::from(COPIES) * i64::from(index) + w as i64);
    instruction(
        "red",
        &["global", "add", "u64"],
        vec![
            Operand::Addr {
                base: SHADOW_GLOBAL.to_string(),
                offset,
            },
            int(1),
        ],
    )
}

/// The demotion error at instruction `j` of `d` (site `index`, f32 form from `p`): its f64
/// operands rounded to f32 before it (under its guard), its f32 form after it, and then the
/// accumulation into `acc` (of `accs`), or the runtime call without one. Returns the site's
/// part of its group's rare path ([`Accumulators::close_groups`]; empty without `acc`).
#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    d: &Decoded,
    j: usize,
    index: u32,
    p: &Plan,
    acc: Option<&Accumulator>,
    accs: &Accumulators,
) -> Result<Vec<Statement>, ShadowError> {
    let inst = d.insts[j];
    let mut form = inst.clone();
    form.guard = None;
    p.retype(&mut form);
    let mut before = Vec::new();
    for o in p.operands().filter(|&o| o >= 1) {
        match &inst.operands[o] {
            Operand::Reg(r) => {
                let narrow = scratch.reg(rw, "f32", o)?;
                before.push(instruction(
                    "cvt",
                    &["rn", "f32", "f64"],
                    vec![reg(&narrow), reg(r)],
                ));
                form.operands[o] = reg(&narrow);
            }
            Operand::Imm(Imm::F64(bits)) => {
                form.operands[o] = Operand::Imm(Imm::F32(f64_imm_to_f32(*bits)));
            }
            _ => {}
        }
    }
    let r32 = scratch.reg(rw, "f32", 0)?;
    let wide = scratch.reg(rw, "f64", 0)?;
    let r64 = dest(inst);
    form.operands[0] = reg(&r32);
    rw.insert_before(inst.id, before, Guarding::Keep)?;
    let Some(acc) = acc else {
        let mut after = vec![
            Statement::Inst(form),
            instruction("cvt", &["f64", "f32"], vec![reg(&wide), reg(&r32)]),
        ];
        after.extend(call(
            DEMOTION_FUNCTION,
            &[
                ("b32", int(index.into())),
                ("b64", reg(&r64)),
                ("b64", reg(&wide)),
            ],
        ));
        rw.insert_after(inst.id, after, Guarding::Keep)?;
        return Ok(Vec::new());
    };

    // Accumulated: a guarded site jumps over its code where the guard is false. Its r32 has a
    // register of its own for its position in its group: the group's rare path reads it.
    let (_, position) = accs.place[&index];
    let r32 = scratch.reg(rw, "f32", R32 + position)?;
    form.operands[0] = reg(&r32);
    let mut after = Vec::new();
    let skip = format!("{}d{index}", scratch.labels);
    if let Some(g) = &inst.guard {
        after.push(unless_guard(
            instruction("bra", &[], vec![Operand::Symbol(skip.clone())]),
            g,
        ));
    }
    let at = Measured::registers(rw, scratch, &r64, &r32)?;
    let any = scratch.reg(rw, "pred", ANY)?;
    let larger = scratch.reg(rw, "pred", 6)?;
    after.push(Statement::Inst(form));
    after.push(instruction(
        "cvt",
        &["f64", "f32"],
        vec![reg(&wide), reg(&r32)],
    ));
    after.extend(accs.count(acc, rw, scratch)?);
    after.extend(at.classes());
    after.extend([
        instruction("abs", &["f64"], vec![reg(&at.a), reg(&r64)]),
        instruction(
            "sub",
            &["rn", "f64"],
            vec![reg(&at.d), reg(&wide), reg(&r64)],
        ),
        instruction("abs", &["f64"], vec![reg(&at.d), reg(&at.d)]),
    ]);
    after.extend(quotient::code(&quotient::Registers {
        d: &at.d,
        a: &at.a,
        high: &at.high,
        r32_finite: &at.r32_finite,
        e: &at.e,
        y: &scratch.reg(rw, "f64", 6)?,
        t: &scratch.reg(rw, "f64", 7)?,
        q: &scratch.reg(rw, "f64", 8)?,
        minus_a: &scratch.reg(rw, "f64", 9)?,
        offset: &scratch.reg(rw, "b32", 34)?,
        rare: &at.rare,
    }));
    // Where not rare: e into the totals; either way the group learns of a rare execution.
    let (loads, [sum, max]) = acc.totals(rw, scratch)?;
    after.extend(loads);
    after.extend([
        with_guard(
            instruction(
                "add",
                &["rn", "f64"],
                vec![reg(&sum), reg(&sum), reg(&at.e)],
            ),
            true,
            &at.rare,
        ),
        instruction(
            "setp",
            &["gt", "and", "f64"],
            vec![
                reg(&larger),
                reg(&at.e),
                reg(&max),
                Operand::Not(Box::new(reg(&at.rare))),
            ],
        ),
        instruction(
            "selp",
            &["f64"],
            vec![reg(&max), reg(&at.e), reg(&max), reg(&larger)],
        ),
    ]);
    after.extend(acc.store(&[sum, max]));
    after.push(instruction(
        "or",
        &["pred"],
        vec![reg(&any), reg(&any), reg(&at.rare)],
    ));
    if inst.guard.is_some() {
        after.push(Statement::Label(skip, SrcLine(0)));
    }
    rw.insert_after(inst.id, after, Guarding::Ignore)?;

    // The site's part of its group's rare path: the same tests again from r64 and r32 (both
    // unchanged until the group's close), then a zero reference or a non-finite execution
    // counted by one atomic, or the division and the totals.
    let next = format!("{}n{index}", scratch.labels);
    let to_next = || instruction("bra", &[], vec![Operand::Symbol(next.clone())]);
    let mut rare = Vec::new();
    if let Some(g) = &inst.guard {
        rare.push(unless_guard(to_next(), g));
    }
    let offset = scratch.reg(rw, "b32", 34)?;
    rare.extend(at.classes());
    rare.extend(quotient::rare_test(
        &offset,
        &at.high,
        &at.r32_finite,
        &at.rare,
    ));
    rare.extend([
        with_guard(to_next(), true, &at.rare),
        // non_finite = r64 NaN or ±inf (exponent all ones), or r32 not finite.
        instruction(
            "setp",
            &["ge", "or", "u32"],
            vec![
                reg(&at.non_finite),
                reg(&at.high),
                int(0x7ff0_0000),
                Operand::Not(Box::new(reg(&at.r32_finite))),
            ],
        ),
        // zero_reference = r64 = ±0 and r32 finite.
        instruction(
            "or",
            &["b32"],
            vec![reg(&at.word), reg(&at.high), reg(&at.low)],
        ),
        instruction(
            "setp",
            &["eq", "and", "u32"],
            vec![
                reg(&at.zero_reference),
                reg(&at.word),
                int(0),
                reg(&at.r32_finite),
            ],
        ),
        with_guard(
            count_in_global(index, Word::NonFinite),
            false,
            &at.non_finite,
        ),
        with_guard(
            count_in_global(index, Word::ZeroReference),
            false,
            &at.zero_reference,
        ),
        with_guard(to_next(), false, &at.non_finite),
        with_guard(to_next(), false, &at.zero_reference),
        // Measured, with |r64| outside the range: the correctly rounded quotient.
        instruction("cvt", &["f64", "f32"], vec![reg(&wide), reg(&r32)]),
        instruction("abs", &["f64"], vec![reg(&at.a), reg(&r64)]),
        instruction(
            "sub",
            &["rn", "f64"],
            vec![reg(&at.d), reg(&wide), reg(&r64)],
        ),
        instruction("abs", &["f64"], vec![reg(&at.d), reg(&at.d)]),
        quotient::division(&at.e, &at.d, &at.a),
    ]);
    rare.extend(acc.add(&at.e, rw, scratch)?);
    rare.push(Statement::Label(next, SrcLine(0)));
    Ok(rare)
}

/// Sites per group at most (then the next site outside a fusible span ends it): each keeps its
/// r32 live until the close, and ptxas interleaves a group's sites, so a group holds more
/// registers the longer it is; 8 (the exceptions' size) cost float_literal's loop kernel 19
/// registers and half its occupancy on the H200 (112 → 131 registers, 7.3× → 10.2×).
const GROUP_SITES: usize = 4;

/// Scratch numbers: the group's "some execution was rare" predicate, and the first of the f32
/// registers that keep each position's r32 until its group's close.
const ANY: usize = 7;
const R32: usize = 200;

/// The registers of one accumulated site's measurement: a = |r64|, d = |r32 − r64|, the
/// quotient e, r64's words (the high one without its sign), and the predicates: r32 finite,
/// the common path gave up (`rare`: |r64| outside the reciprocal's range, which takes in
/// r64 = ±0 and r64 not finite, or r32 not finite), r64 or r32 not finite, r64 = ±0.
struct Measured {
    a: String,
    d: String,
    e: String,
    low: String,
    high: String,
    word: String,
    r32_finite: String,
    rare: String,
    non_finite: String,
    zero_reference: String,
    r64: String,
    r32: String,
}

impl Measured {
    fn registers(
        rw: &mut Rewriter,
        scratch: &mut Scratch,
        r64: &str,
        r32: &str,
    ) -> Result<Measured, ShadowError> {
        Ok(Measured {
            a: scratch.reg(rw, "f64", 1)?,
            d: scratch.reg(rw, "f64", 2)?,
            e: scratch.reg(rw, "f64", 3)?,
            low: scratch.reg(rw, "b32", 30)?,
            high: scratch.reg(rw, "b32", 31)?,
            word: scratch.reg(rw, "b32", 33)?,
            r32_finite: scratch.reg(rw, "pred", 2)?,
            rare: scratch.reg(rw, "pred", 3)?,
            non_finite: scratch.reg(rw, "pred", 4)?,
            zero_reference: scratch.reg(rw, "pred", 5)?,
            r64: r64.to_string(),
            r32: r32.to_string(),
        })
    }

    /// r64's words (the high one without its sign) and whether r32 is finite.
    fn classes(&self) -> Vec<Statement> {
        vec![
            instruction(
                "mov",
                &["b64"],
                vec![
                    Operand::Vector(vec![reg(&self.low), reg(&self.high)]),
                    reg(&self.r64),
                ],
            ),
            instruction(
                "and",
                &["b32"],
                vec![reg(&self.high), reg(&self.high), int(0x7fff_ffff)],
            ),
            instruction(
                "testp",
                &["finite", "f32"],
                vec![reg(&self.r32_finite), reg(&self.r32)],
            ),
        ]
    }
}

/// `s` where guard `g` is false.
fn unless_guard(s: Statement, g: &Guard) -> Statement {
    with_guard(s, !g.negated, &g.reg)
}
