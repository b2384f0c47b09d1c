//! The demotion error's inserted code: the f32 form of a site on its operands rounded to f32,
//! then either per-thread accumulation in registers of the function, flushed to the global at
//! every exit ([`FLUSH_FUNCTION`]), or, for sites past the per-function cap, a call of
//! [`DEMOTION_FUNCTION`] per execution.

use super::{dest, reg, Scratch};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::pass::demote::{f64_imm_to_f32, Plan};
use crate::pass::shadow::{
    ShadowError, Word, DEMOTION_FUNCTION, FLUSH_FUNCTION, SHADOW_GLOBAL, WORDS_PER_SITE,
};
use crate::rewrite::{call, instruction, int, Guarding, Rewriter};

/// At most this many demotion sites of one function accumulate in registers (six 32-bit
/// registers each: the count, the sum and the maximum); the others call the runtime per
/// execution. Sites in the deepest loops are chosen first.
pub const ACCUMULATED_PER_FUNCTION: usize = 16;

/// The registers one accumulated site keeps for the whole function.
#[derive(Debug, Clone)]
pub(super) struct Accumulator {
    /// The site's index (its record in the global).
    pub index: u32,
    /// Executions with a finite relative error (u64).
    count: String,
    /// Their relative errors summed (f64).
    sum: String,
    /// Their maximum (f64; 0 before any).
    max: String,
}

impl Accumulator {
    pub(super) fn new(rw: &mut Rewriter, index: u32) -> Result<Accumulator, ShadowError> {
        Ok(Accumulator {
            index,
            count: rw.reg("u64")?,
            sum: rw.reg("f64")?,
            max: rw.reg("f64")?,
        })
    }

    /// Zeroes the registers: placed once at the top of the function, before any label.
    pub(super) fn init(&self) -> Vec<Statement> {
        vec![
            instruction("mov", &["u64"], vec![reg(&self.count), int(0)]),
            instruction("mov", &["f64"], vec![reg(&self.sum), f64_imm(0.0)]),
            instruction("mov", &["f64"], vec![reg(&self.max), f64_imm(0.0)]),
        ]
    }

    /// Adds the thread's totals to the global (the runtime aggregates over the warp): placed
    /// before every `ret`/`exit`, under its guard.
    pub(super) fn flush(&self) -> Vec<Statement> {
        call(
            FLUSH_FUNCTION,
            &[
                ("b32", int(self.index.into())),
                ("b64", reg(&self.count)),
                ("b64", reg(&self.sum)),
                ("b64", reg(&self.max)),
            ],
        )
    }
}

/// Which of the demotion sites `candidates` (instruction index in `d`, site index) accumulate in
/// registers: in a kernel, up to [`ACCUMULATED_PER_FUNCTION`] of them, deepest loop first, then
/// in text order; in a device function only sites inside one of its loops (a function called
/// once per execution of a caller's loop would flush once per call, no cheaper than a call per
/// execution).
pub(super) fn accumulated(d: &Decoded, candidates: &[(usize, u32)]) -> Vec<u32> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let cfg = Cfg::build(d);
    let kernel = d.function.kind == FunctionKind::Entry;
    let depth = |j: usize| cfg.innermost_loop(j).map_or(0, |l| cfg.loops[l].depth + 1);
    let mut chosen: Vec<(u32, usize, u32)> = candidates
        .iter()
        .map(|&(j, index)| (depth(j), j, index))
        .filter(|&(depth, _, _)| kernel || depth > 0)
        .collect();
    chosen.sort_by_key(|&(depth, j, _)| (std::cmp::Reverse(depth), j));
    chosen.truncate(ACCUMULATED_PER_FUNCTION);
    chosen.into_iter().map(|(_, _, index)| index).collect()
}

/// An f64 immediate.
fn f64_imm(x: f64) -> Operand {
    Operand::Imm(Imm::F64(x.to_bits()))
}

/// `red.global.add.u64 [__mantissa_shadow + word w of site index], 1`.
fn count_in_global(index: u32, w: Word) -> Statement {
    let offset = 8 * (i64::from(WORDS_PER_SITE) * i64::from(index) + w as i64);
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

fn guarded_by(mut s: Statement, pred: &str) -> Statement {
    if let Statement::Inst(i) = &mut s {
        i.guard = Some(Guard {
            negated: false,
            reg: pred.to_string(),
        });
    }
    s
}

/// The demotion error at instruction `j` of `d` (site `index`, f32 form from `p`): its f64
/// operands rounded to f32 before it (under its guard), its f32 form after it, and then the
/// accumulation into `acc`, or the runtime call without one.
pub(super) fn measure(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    d: &Decoded,
    j: usize,
    index: u32,
    p: &Plan,
    acc: Option<&Accumulator>,
) -> Result<(), ShadowError> {
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
        return Ok(());
    };

    // Accumulated: branch-free but for a guard (a guarded site jumps over its code where the
    // guard is false; unguarded f64 arithmetic, the common case, has no branch at all).
    let mut after = Vec::new();
    let skip = format!("{}d{index}", scratch.labels);
    if let Some(g) = &inst.guard {
        let mut branch = instruction("bra", &[], vec![Operand::Symbol(skip.clone())]);
        if let Statement::Inst(b) = &mut branch {
            b.guard = Some(Guard {
                negated: !g.negated,
                reg: g.reg.clone(),
            });
        }
        after.push(branch);
    }
    let a64 = scratch.reg(rw, "f64", 1)?;
    let a32 = scratch.reg(rw, "f64", 2)?;
    let e = scratch.reg(rw, "f64", 3)?;
    let measured = scratch.reg(rw, "pred", 2)?;
    let zero_reference = scratch.reg(rw, "pred", 3)?;
    let non_finite = scratch.reg(rw, "pred", 4)?;
    let inf = f64_imm(f64::INFINITY);
    let zero = f64_imm(0.0);
    let setp = |cmp: &str, combine: Option<&str>, p: &str, x: &str, y: &Operand| {
        let mut mods = vec![cmp];
        let mut operands = vec![reg(p), reg(x), y.clone()];
        if let Some(c) = combine {
            mods.push(c);
            operands.push(reg(p));
        }
        mods.push("f64");
        instruction("setp", &mods, operands)
    };
    after.extend([
        Statement::Inst(form),
        instruction("cvt", &["f64", "f32"], vec![reg(&wide), reg(&r32)]),
        instruction("abs", &["f64"], vec![reg(&a64), reg(&r64)]),
        instruction("abs", &["f64"], vec![reg(&a32), reg(&wide)]),
        // Ordered comparisons are false on NaN: `measured` is r64 finite and non-zero, r32
        // finite; the unordered `geu` makes `non_finite` true on NaN.
        setp("lt", None, &measured, &a64, &inf),
        setp("lt", Some("and"), &measured, &a32, &inf),
        setp("gt", Some("and"), &measured, &a64, &zero),
        setp("geu", None, &non_finite, &a64, &inf),
        setp("geu", Some("or"), &non_finite, &a32, &inf),
        setp("eq", None, &zero_reference, &a64, &zero),
        setp("lt", Some("and"), &zero_reference, &a32, &inf),
        // Rare: one atomic per thread and execution instead of a call.
        guarded_by(count_in_global(index, Word::NonFinite), &non_finite),
        guarded_by(count_in_global(index, Word::ZeroReference), &zero_reference),
        // e = |r32 - r64| / |r64|, two roundings, as the runtime computes it.
        instruction("sub", &["rn", "f64"], vec![reg(&e), reg(&wide), reg(&r64)]),
        instruction("abs", &["f64"], vec![reg(&e), reg(&e)]),
        guarded_by(
            instruction("div", &["rn", "f64"], vec![reg(&e), reg(&e), reg(&a64)]),
            &measured,
        ),
        guarded_by(
            instruction(
                "add",
                &["u64"],
                vec![reg(&acc.count), reg(&acc.count), int(1)],
            ),
            &measured,
        ),
        guarded_by(
            instruction(
                "add",
                &["rn", "f64"],
                vec![reg(&acc.sum), reg(&acc.sum), reg(&e)],
            ),
            &measured,
        ),
        guarded_by(
            instruction("max", &["f64"], vec![reg(&acc.max), reg(&acc.max), reg(&e)]),
            &measured,
        ),
    ]);
    if inst.guard.is_some() {
        after.push(Statement::Label(skip, SrcLine(0)));
    }
    rw.insert_after(inst.id, after, Guarding::Ignore)?;
    Ok(())
}
