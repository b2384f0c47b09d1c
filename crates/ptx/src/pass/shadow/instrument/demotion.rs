//! The demotion error's inserted code: the f32 form of a site on its operands rounded to f32,
//! then either per-thread accumulation in registers of the function, flushed to the global at
//! every exit ([`FLUSH_FUNCTION`]), or, for sites past the per-function cap, a call of
//! [`DEMOTION_FUNCTION`] per execution (inlined after the merge).

use super::quotient;
use super::{dest, reg, Scratch};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::pass::demote::{f64_imm_to_f32, Plan};
use crate::pass::shadow::{
    ShadowError, Word, COPIES, DEMOTION_FUNCTION, FLUSH_FUNCTION, SHADOW_GLOBAL, WORDS_PER_SITE,
};
use crate::rewrite::{call, instruction, int, Guarding, Rewriter};

/// At most this many demotion sites of one function accumulate in registers (six 32-bit
/// registers each: the count, the sum and the maximum), the deepest in loops first; the
/// function's other sites inside loops accumulate in a per-thread `.local` array (three loads
/// and three stores per execution, still no call).
pub const ACCUMULATED_PER_FUNCTION: usize = 16;

/// Where one accumulated site keeps its count (u64), sum (f64) and maximum (f64; 0 before any)
/// for the whole function.
#[derive(Debug, Clone)]
enum Storage {
    /// Three registers of their own.
    Registers {
        count: String,
        sum: String,
        max: String,
    },
    /// 24 bytes at `offset` of the function's `.local` array `array`; updated through
    /// scratch registers.
    Local { array: String, offset: i64 },
}

/// One accumulated site.
#[derive(Debug, Clone)]
pub(super) struct Accumulator {
    /// The site's index (its record in the global).
    pub index: u32,
    storage: Storage,
}

/// The accumulators of one function's sites.
pub(super) struct Accumulators {
    /// By site, in site order.
    pub sites: Vec<Accumulator>,
    /// The `.local` array's declaration, when some site keeps its totals there.
    array: Option<VarDecl>,
}

impl Accumulators {
    /// Accumulators for `chosen` (site indices, register ones first): the first `in_registers`
    /// get registers, the others 24 bytes each of a `.local` array named after `taken`.
    pub(super) fn new(
        rw: &mut Rewriter,
        chosen: &[u32],
        in_registers: usize,
        taken: impl Fn(&str) -> bool,
    ) -> Result<Accumulators, ShadowError> {
        let array_name = crate::rewrite::unique_name("__mantissa_shadow_totals", |n| taken(n));
        let mut sites = Vec::new();
        let mut local = 0i64;
        for (k, &index) in chosen.iter().enumerate() {
            let storage = if k < in_registers {
                Storage::Registers {
                    count: rw.reg("u64")?,
                    sum: rw.reg("f64")?,
                    max: rw.reg("f64")?,
                }
            } else {
                local += 1;
                Storage::Local {
                    array: array_name.clone(),
                    offset: 24 * (local - 1),
                }
            };
            sites.push(Accumulator { index, storage });
        }
        sites.sort_by_key(|a| a.index);
        let array = (local > 0).then(|| VarDecl {
            attrs: vec![".local".into(), ".align".into(), "8".into(), ".b8".into()],
            name: array_name,
            dims: vec![Some(24 * local as u64)],
            init: None,
            line: SrcLine(0),
        });
        Ok(Accumulators { sites, array })
    }

    /// The accumulator of site `index`, if it accumulates.
    pub(super) fn of(&self, index: u32) -> Option<&Accumulator> {
        self.sites.iter().find(|a| a.index == index)
    }

    /// The array's declaration and every total zeroed: placed once at the top of the function,
    /// before any label.
    pub(super) fn init(&self) -> Vec<Statement> {
        let mut code: Vec<Statement> = self.array.iter().cloned().map(Statement::Var).collect();
        for a in &self.sites {
            match &a.storage {
                Storage::Registers { count, sum, max } => code.extend([
                    instruction("mov", &["u64"], vec![reg(count), int(0)]),
                    instruction("mov", &["f64"], vec![reg(sum), f64_imm(0.0)]),
                    instruction("mov", &["f64"], vec![reg(max), f64_imm(0.0)]),
                ]),
                Storage::Local { array, offset } => {
                    for k in 0..3 {
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
    /// before every `ret`/`exit`, under its guard.
    pub(super) fn flush(
        &self,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<Vec<Statement>, ShadowError> {
        let mut code = Vec::new();
        for a in &self.sites {
            let (loads, [count, sum, max]) = a.totals(rw, scratch)?;
            code.extend(loads);
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
}

impl Accumulator {
    /// The loads that bring the totals into registers (none for register storage), and those
    /// registers.
    fn totals(
        &self,
        rw: &mut Rewriter,
        scratch: &mut Scratch,
    ) -> Result<(Vec<Statement>, [String; 3]), ShadowError> {
        match &self.storage {
            Storage::Registers { count, sum, max } => {
                Ok((Vec::new(), [count.clone(), sum.clone(), max.clone()]))
            }
            Storage::Local { array, offset } => {
                let regs = [
                    scratch.reg(rw, "u64", 0)?,
                    scratch.reg(rw, "f64", 4)?,
                    scratch.reg(rw, "f64", 5)?,
                ];
                let loads = ["u64", "f64", "f64"]
                    .iter()
                    .zip(&regs)
                    .enumerate()
                    .map(|(k, (ty, r))| {
                        instruction(
                            "ld",
                            &["local", ty],
                            vec![reg(r), local_word(array, offset + 8 * k as i64)],
                        )
                    })
                    .collect();
                Ok((loads, regs))
            }
        }
    }

    /// The stores that put the totals back (none for register storage).
    fn store(&self, regs: &[String; 3]) -> Vec<Statement> {
        match &self.storage {
            Storage::Registers { .. } => Vec::new(),
            Storage::Local { array, offset } => ["u64", "f64", "f64"]
                .iter()
                .zip(regs)
                .enumerate()
                .map(|(k, (ty, r))| {
                    instruction(
                        "st",
                        &["local", ty],
                        vec![local_word(array, offset + 8 * k as i64), reg(r)],
                    )
                })
                .collect(),
        }
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
) -> Vec<u32> {
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
    chosen.into_iter().map(|(_, _, index)| index).collect()
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

fn guarded_by(s: Statement, pred: &str) -> Statement {
    with_guard(s, false, pred)
}

/// `s` under `@!pred`.
fn unless(s: Statement, pred: &str) -> Statement {
    with_guard(s, true, pred)
}

fn with_guard(mut s: Statement, negated: bool, pred: &str) -> Statement {
    if let Statement::Inst(i) = &mut s {
        i.guard = Some(Guard {
            negated,
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
    // guard is false) and the jump over the quotient's division, taken wherever |r64| is in its
    // range (quotient::code says why not a predicated division).
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
    let diff = scratch.reg(rw, "f64", 2)?;
    let e = scratch.reg(rw, "f64", 3)?;
    let skip_pred = scratch.reg(rw, "pred", 2)?;
    let zero_reference = scratch.reg(rw, "pred", 3)?;
    let non_finite = scratch.reg(rw, "pred", 4)?;
    let low = scratch.reg(rw, "b32", 30)?;
    let high = scratch.reg(rw, "b32", 31)?;
    let narrow_bits = scratch.reg(rw, "b32", 32)?;
    let word = scratch.reg(rw, "b32", 33)?;
    let b32 = |op: &str, mods: &[&str], operands: Vec<Operand>| instruction(op, mods, operands);
    // The classes from the results' bits, on the integer pipe (the f64 pipe is what an f64
    // program is bound by): r64 NaN or ±inf (exponent all ones), r32 NaN or ±inf, r64 = ±0.
    after.extend([
        Statement::Inst(form),
        instruction("cvt", &["f64", "f32"], vec![reg(&wide), reg(&r32)]),
        instruction(
            "mov",
            &["b64"],
            vec![Operand::Vector(vec![reg(&low), reg(&high)]), reg(&r64)],
        ),
        instruction("mov", &["b32"], vec![reg(&narrow_bits), reg(&r32)]),
        b32(
            "and",
            &["b32"],
            vec![reg(&high), reg(&high), int(0x7fff_ffff)],
        ),
        b32(
            "and",
            &["b32"],
            vec![reg(&narrow_bits), reg(&narrow_bits), int(0x7fff_ffff)],
        ),
        // non_finite = r64 or r32 NaN or ±inf.
        b32(
            "setp",
            &["ge", "u32"],
            vec![reg(&non_finite), reg(&high), int(0x7ff0_0000)],
        ),
        b32(
            "setp",
            &["ge", "or", "u32"],
            vec![
                reg(&non_finite),
                reg(&narrow_bits),
                int(0x7f80_0000),
                reg(&non_finite),
            ],
        ),
        // zero_reference = r64 = ±0 and r32 finite.
        b32("or", &["b32"], vec![reg(&word), reg(&high), reg(&low)]),
        b32(
            "setp",
            &["eq", "u32"],
            vec![reg(&zero_reference), reg(&word), int(0)],
        ),
        b32(
            "setp",
            &["lt", "and", "u32"],
            vec![
                reg(&zero_reference),
                reg(&narrow_bits),
                int(0x7f80_0000),
                reg(&zero_reference),
            ],
        ),
        // Not measured: either of the two.
        instruction(
            "or",
            &["pred"],
            vec![reg(&skip_pred), reg(&non_finite), reg(&zero_reference)],
        ),
        // Rare: one atomic per thread and execution instead of a call.
        guarded_by(count_in_global(index, Word::NonFinite), &non_finite),
        guarded_by(count_in_global(index, Word::ZeroReference), &zero_reference),
        // e = |r32 - r64| / |r64|, as the runtime computes it (quotient's module docs).
        instruction("abs", &["f64"], vec![reg(&a64), reg(&r64)]),
        instruction(
            "sub",
            &["rn", "f64"],
            vec![reg(&diff), reg(&wide), reg(&r64)],
        ),
        instruction("abs", &["f64"], vec![reg(&diff), reg(&diff)]),
    ]);
    after.extend(quotient::code(&quotient::Registers {
        d: &diff,
        a: &a64,
        high: &high,
        skip: &skip_pred,
        e: &e,
        y: &scratch.reg(rw, "f64", 6)?,
        t: &scratch.reg(rw, "f64", 7)?,
        q: &scratch.reg(rw, "f64", 8)?,
        minus_a: &scratch.reg(rw, "f64", 9)?,
        offset: &scratch.reg(rw, "b32", 34)?,
        slow: &scratch.reg(rw, "pred", 5)?,
        past_division: &format!("{}q{index}", scratch.labels),
    }));
    let (loads, [count, sum, max]) = acc.totals(rw, scratch)?;
    after.extend(loads);
    after.extend([
        unless(
            instruction("add", &["u64"], vec![reg(&count), reg(&count), int(1)]),
            &skip_pred,
        ),
        unless(
            instruction("add", &["rn", "f64"], vec![reg(&sum), reg(&sum), reg(&e)]),
            &skip_pred,
        ),
        unless(
            instruction("max", &["f64"], vec![reg(&max), reg(&max), reg(&e)]),
            &skip_pred,
        ),
    ]);
    after.extend(acc.store(&[count, sum, max]));
    if inst.guard.is_some() {
        after.push(Statement::Label(skip, SrcLine(0)));
    }
    rw.insert_after(inst.id, after, Guarding::Ignore)?;
    Ok(())
}
