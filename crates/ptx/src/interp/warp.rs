//! Warp-collective instructions in the interpreter: `activemask`, `vote.sync`, `shfl.sync`,
//! `redux.sync`, `bar.warp.sync` and `match.any.sync` ([`crate::op::Warp`]).
//!
//! **The model.** A block's threads run one at a time ([`super::exec`]); a thread that reaches a
//! warp-collective instruction whose guard holds stops there instead of running it. When every
//! thread of the block has stopped (at such an instruction, at a barrier, or at its end), the
//! lanes of one warp (32 consecutive threads in `%tid` order, x fastest: `%laneid` is the
//! linear index mod 32) that wait at the same instruction with the same member mask run it
//! together, if every lane of the mask that has not exited is among them. Per round, each warp
//! runs its waiting group of lowest address first, and then the released lanes run on to their
//! next stop before any other group of the warp runs: lanes that meet at one instruction are
//! taken as converged, as the hardware reconverges them, so `activemask` returns the lanes
//! waiting there. That is one schedule the hardware may choose, not the only one: code that is
//! right only for some active masks can pass here and fail there (and the other way round).
//!
//! **Undefined results are visible.** A `shfl.sync` whose source lane does not run the
//! instruction (outside the group or the block) reads [`UNDEFINED`], a quiet NaN's high word:
//! a result that depends on it shows. A lane that runs an instruction outside its own member
//! mask, lanes at one instruction with overlapping but different masks, and lanes that wait for
//! a lane that never comes are errors ([`InterpError::Fault`], naming the instruction).

use super::exec::{Ctx, Thread};
use super::{InterpError, Options, Run};
use crate::model::Operand;
use crate::op::{OpKind, Reduce, Shuffle, ValueType, Vote, Warp};

/// Lanes per warp.
pub(super) const WARP: usize = 32;

/// What a `shfl.sync` reads from a lane that does not run it (a quiet NaN's high word).
pub(super) const UNDEFINED: u64 = 0x7ff4_dead;

fn fault(why: String) -> InterpError {
    super::fault(why)
}

/// The warp operation of instruction `k`, if it is one.
pub(super) fn warp_op(ctx: &Ctx, k: usize) -> Option<Warp> {
    match ctx.d.ops[k].kind {
        OpKind::Warp(w) => Some(w),
        _ => None,
    }
}

/// Runs, in each warp of `threads` (a block's, in linear order), the first group of lanes
/// that can run the warp instruction they wait at. Whether any group ran.
pub(super) fn step(
    ctx: &mut Ctx,
    threads: &mut [Thread],
    options: &Options,
    out: &mut Run,
) -> Result<bool, InterpError> {
    let mut ran = false;
    for base in (0..threads.len()).step_by(WARP) {
        let end = (base + WARP).min(threads.len());
        let mut pcs: Vec<usize> = threads[base..end]
            .iter()
            .filter(|t| t.at_warp)
            .map(|t| t.pc)
            .collect();
        pcs.sort_unstable();
        pcs.dedup();
        'pcs: for k in pcs {
            let located = |e| super::exec::locate(e, ctx.d, k);
            for lanes in groups(ctx, threads, base, end, k).map_err(located)? {
                if ready(ctx, threads, base, end, k, &lanes).map_err(located)? {
                    run(ctx, threads, base, k, &lanes, options, out).map_err(located)?;
                    ran = true;
                    break 'pcs;
                }
            }
        }
    }
    Ok(ran)
}

/// The error when lanes wait at warp instructions that can never run.
pub(super) fn deadlock(ctx: &Ctx, threads: &[Thread]) -> InterpError {
    let Some((i, t)) = threads.iter().enumerate().find(|(_, t)| t.at_warp) else {
        return fault("the block's threads wait for each other".into());
    };
    super::exec::locate(
        fault(format!(
            "lane {} of warp {} waits here for lanes of its member mask that never run it \
             (they wait at a barrier or at another warp instruction)",
            i % WARP,
            i / WARP
        )),
        ctx.d,
        t.pc,
    )
}

/// The lanes (indices into `threads`) of warp `base..end` waiting at instruction `k`, split by
/// their member mask (one group for `activemask`, which has none).
fn groups(
    ctx: &Ctx,
    threads: &[Thread],
    base: usize,
    end: usize,
    k: usize,
) -> Result<Vec<Vec<usize>>, InterpError> {
    let waiting: Vec<usize> = (base..end)
        .filter(|&i| threads[i].at_warp && threads[i].pc == k)
        .collect();
    if warp_op(ctx, k) == Some(Warp::ActiveMask) {
        return Ok(vec![waiting]);
    }
    let mut by_mask: Vec<(u32, Vec<usize>)> = Vec::new();
    for i in waiting {
        let m = member_mask(ctx, &threads[i], k)?;
        match by_mask.iter_mut().find(|(mask, _)| *mask == m) {
            Some((_, lanes)) => lanes.push(i),
            None => by_mask.push((m, vec![i])),
        }
    }
    Ok(by_mask.into_iter().map(|(_, lanes)| lanes).collect())
}

/// The member mask lane `t` gives instruction `k` (its last operand).
fn member_mask(ctx: &Ctx, t: &Thread, k: usize) -> Result<u32, InterpError> {
    let ops = &ctx.d.insts[k].operands;
    let last = ops
        .last()
        .ok_or_else(|| fault("a warp instruction without operands".into()))?;
    Ok(t.val(ctx, last, ValueType::U32)? as u32)
}

/// Whether `lanes`, waiting at `k` with one member mask, can run it: every lane of the mask
/// that has not exited is among them.
fn ready(
    ctx: &Ctx,
    threads: &[Thread],
    base: usize,
    end: usize,
    k: usize,
    lanes: &[usize],
) -> Result<bool, InterpError> {
    if warp_op(ctx, k) == Some(Warp::ActiveMask) {
        return Ok(true);
    }
    let mask = member_mask(ctx, &threads[lanes[0]], k)?;
    for &i in lanes {
        if mask & (1 << (i - base)) == 0 {
            return Err(fault(format!(
                "lane {} runs it outside its member mask {mask:#010x}",
                i - base
            )));
        }
    }
    for lane in (0..WARP).filter(|l| mask & (1 << l) != 0) {
        let i = base + lane;
        if i >= end || threads[i].done || lanes.contains(&i) {
            continue;
        }
        if threads[i].at_warp && threads[i].pc == k {
            return Err(fault(format!(
                "lanes of one warp run it with different member masks ({mask:#010x} and \
                 another that shares lane {lane})"
            )));
        }
        return Ok(false);
    }
    Ok(true)
}

/// Runs warp instruction `k` for `lanes` of the warp starting at `base`.
fn run(
    ctx: &mut Ctx,
    threads: &mut [Thread],
    base: usize,
    k: usize,
    lanes: &[usize],
    options: &Options,
    out: &mut Run,
) -> Result<(), InterpError> {
    let d = ctx.d;
    let inst = d.insts[k];
    let op = &d.ops[k];
    let ops = &inst.operands;
    let arg = |j: usize| {
        ops.get(j)
            .ok_or_else(|| fault(format!("operand {j} is missing")))
    };
    let ty = op.ty.unwrap_or(ValueType::B32);
    let Some(w) = warp_op(ctx, k) else {
        return Err(fault("not a warp instruction".into()));
    };
    let lane = |i: usize| i - base;
    let group: u32 = lanes.iter().fold(0, |m, &i| m | 1 << lane(i));
    // Every lane's sources first, then every lane's result: lanes read each other's operands.
    let source = |j: usize, t: ValueType| -> Result<Vec<u64>, InterpError> {
        lanes
            .iter()
            .map(|&i| threads[i].val(ctx, arg(j)?, t))
            .collect()
    };
    let results: Option<Vec<u64>> = match w {
        Warp::ActiveMask => Some(vec![u64::from(group); lanes.len()]),
        Warp::Sync => None,
        Warp::Vote(v) => {
            let p = source(1, ValueType::Pred)?;
            let ballot = lanes
                .iter()
                .zip(&p)
                .filter(|(_, &p)| p & 1 == 1)
                .fold(0u32, |m, (&i, _)| m | 1 << lane(i));
            let r = match v {
                Vote::Ballot => u64::from(ballot),
                Vote::All => u64::from(ballot == group),
                Vote::Any => u64::from(ballot != 0),
                Vote::Uni => u64::from(ballot == 0 || ballot == group),
            };
            Some(vec![r; lanes.len()])
        }
        Warp::Reduce(r) => {
            let a = source(1, ty)?;
            let signed = ty == ValueType::S32;
            let key = |x: u64| {
                if signed {
                    x as u32 as i32 as i64
                } else {
                    x as i64
                }
            };
            let folded = a.iter().copied().reduce(|x, y| match r {
                Reduce::Add => (x as u32).wrapping_add(y as u32) as u64,
                Reduce::Min if key(y) < key(x) => y,
                Reduce::Max if key(y) > key(x) => y,
                Reduce::Min | Reduce::Max => x,
                Reduce::And => x & y,
                Reduce::Or => x | y,
                Reduce::Xor => x ^ y,
            });
            Some(vec![folded.unwrap_or(0) & 0xffff_ffff; lanes.len()])
        }
        Warp::Shuffle(mode) => {
            let a = source(1, ValueType::B32)?;
            let b = source(2, ValueType::U32)?;
            let c = source(3, ValueType::U32)?;
            let mut r = Vec::with_capacity(lanes.len());
            for (n, &i) in lanes.iter().enumerate() {
                let src = shuffle_source(mode, lane(i) as u32, b[n] as u32, c[n] as u32);
                let from = lanes.iter().position(|&l| lane(l) as u32 == src);
                r.push(from.map_or(UNDEFINED, |f| a[f]));
            }
            Some(r)
        }
        Warp::Match { all: false } => {
            let a = source(1, ty)?;
            let r = a
                .iter()
                .map(|x| {
                    lanes
                        .iter()
                        .zip(&a)
                        .filter(|(_, y)| *y == x)
                        .fold(0u32, |m, (&i, _)| m | 1 << lane(i))
                })
                .map(u64::from)
                .collect();
            Some(r)
        }
        Warp::Match { all: true } => {
            return Err(super::exec::unsupported(
                "match.all (its predicate destination)",
            ))
        }
    };
    for (n, &i) in lanes.iter().enumerate() {
        let t = &mut threads[i];
        t.steps += 1;
        if t.steps > options.steps {
            return Err(InterpError::StepLimit {
                function: d.function.name.clone(),
                limit: options.steps,
            });
        }
        out.steps += 1;
        *out.counts.entry(inst.id).or_default() += 1;
        if let Some(r) = &results {
            let dst: &Operand = arg(0)?;
            t.write(ctx, dst, r[n])?;
        }
        t.pc = k + 1;
        t.at_warp = false;
    }
    Ok(())
}

/// The lane `shfl.sync` reads for `lane`: PTX's rule, with `c` packing the clamp (bits 0–4)
/// and the segment mask (bits 8–12); out of range, the lane's own.
fn shuffle_source(mode: Shuffle, lane: u32, b: u32, c: u32) -> u32 {
    let b = b & 0x1f;
    let clamp = c & 0x1f;
    let segment = (c >> 8) & 0x1f;
    let max_lane = (lane & segment) | (clamp & !segment);
    let min_lane = lane & segment;
    let (j, in_range) = match mode {
        Shuffle::Up => {
            let j = lane as i64 - i64::from(b);
            (j, j >= i64::from(max_lane))
        }
        Shuffle::Down => {
            let j = i64::from(lane) + i64::from(b);
            (j, j <= i64::from(max_lane))
        }
        Shuffle::Bfly => {
            let j = i64::from(lane ^ b);
            (j, j <= i64::from(max_lane))
        }
        Shuffle::Idx => {
            let j = i64::from(min_lane | (b & 0x1f & !segment));
            (j, j <= i64::from(max_lane))
        }
    };
    if in_range {
        j as u32
    } else {
        lane
    }
}
