//! The CPU oracle of the shadow pass: the statistics an instrumented kernel must produce,
//! computed independently by running the *original* kernel in [`crate::interp`] and looking at
//! every executed site's operands and result ([`interp::run_observed`]).
//!
//! Independent of the instrumentation in everything but the list of sites: the f32 form is Rust
//! f32 arithmetic on the operands rounded to f32 by `as f32` (round to nearest; directed
//! roundings through the interpreter's [`crate::interp::round`]), not the demotion plan; results
//! and operands are classified from their bits by Rust's `f32`/`f64` predicates, not by `testp`.
//!
//! **Rounding of the error itself**: `e = |r32 − r64| / |r64|` in f64 with Rust's operators,
//! i.e. one rounding to nearest for the subtraction and one for the division. The instrumented
//! code divides with a refined approximate reciprocal where 2^-896 ≤ |r64| < 2^1021 (the
//! module docs of [`super`]): its `e` is this one except where the quotient lies within a
//! relative 2^-79.75 of a midpoint between doubles, where it may be the other neighbour. So per
//! execution the two agree bit for bit outside that band: a quotient spread evenly meets it
//! with probability at most 2^-25.7, but structured ones can (r64 = 1 − 2^-53 with r32 = 1),
//! and the tests comparing maxima bit for bit rely on their inputs missing it (those of
//! `tests/shadow_gpu.rs` do, by exact arithmetic in `quotient_tests`). The original
//! kernel must not execute `rcp.approx.ftz.f64` itself: the interpreter runs it by a model, not
//! the GPU's bits, so the oracle refuses it like the approximations the interpreter refuses.
//!
//! The sum is serial, in the interpreter's order (block by block, thread by thread); the GPU's
//! order differs, so sums agree within the bound of reordering `n` non-negative terms,
//! `(n − 1)·2^-53·sum` to first order.

use super::instrument::{divisor, operand_type, sites};
use super::{ErrorStats, ExceptionCounts, ShadowOptions, SiteStats};
use crate::interp::{self, round, Arg, Executed, InterpError, Launch, Memory};
use crate::model::Module;
use crate::op::{Arith, Op, OpKind, ValueType};
use std::collections::HashMap;

/// The statistics per site (in [`super::ShadowReport::sites`] order) that the instrumented
/// `module` must produce for one launch of `kernel` with `args` on `memory`, which the run
/// updates as the kernel does.
pub fn expected(
    module: &Module,
    kernel: &str,
    launch: Launch,
    args: &[Arg],
    memory: &mut Memory,
    options: &ShadowOptions,
) -> Result<Vec<SiteStats>, InterpError> {
    let (sites, _, _) = sites(module, options);
    let mut stats: Vec<SiteStats> = sites
        .iter()
        .map(|s| SiteStats {
            demotion: (s.demotion && s.instrumented).then(ErrorStats::default),
            exceptions: (s.exceptions && s.instrumented).then(ExceptionCounts::default),
        })
        .collect();
    let index: HashMap<_, _> = sites
        .iter()
        .map(|s| (s.inst, (s.index as usize, s.value_type)))
        .collect();
    let mut failure = None;
    let mut approximate = None;
    let mut observe = |e: &Executed| {
        if !e.op.is_ieee() {
            approximate = Some(e.inst);
        }
        let Some(&(k, ty)) = index.get(&e.inst) else {
            return;
        };
        if let Some(d) = stats[k].demotion.as_mut() {
            match f32_form(e.op, e.sources) {
                Some(r32) => record_error(d, f64::from_bits(e.result), f64::from(r32)),
                None => failure = Some(e.inst),
            }
        }
        if let Some(x) = stats[k].exceptions.as_mut() {
            record_exceptions(x, e, ty);
        }
    };
    interp::run_observed(
        module,
        kernel,
        launch,
        args,
        memory,
        &interp::Options::default(),
        &mut observe,
    )?;
    if let Some(id) = approximate {
        return Err(InterpError::Unsupported {
            function: kernel.to_string(),
            inst: id.to_string(),
            why: "an approximate instruction: the interpreter's is a model, not the GPU's bits"
                .into(),
        });
    }
    if let Some(id) = failure {
        return Err(InterpError::Unsupported {
            function: kernel.to_string(),
            inst: id.to_string(),
            why: "the oracle has no f32 form of this instruction".into(),
        });
    }
    Ok(stats)
}

/// The f32 form of an f64 operation on `sources` (f64 bits), or `None` for one it does not
/// evaluate (`rsqrt`, approximations: the hardware's, which the interpreter refuses anyway).
pub(super) fn f32_form(op: &Op, sources: &[u64]) -> Option<f32> {
    let x = |j: usize| sources.get(j).map(|&b| f64::from_bits(b) as f32);
    let (a, b, c) = (x(0)?, x(1).unwrap_or(0.0), x(2).unwrap_or(0.0));
    let mode = round::Mode::of(op.rounding)?;
    if mode == round::Mode::Nearest {
        return Some(match op.kind {
            OpKind::Arith(Arith::Add) => a + b,
            OpKind::Arith(Arith::Sub) => a - b,
            OpKind::Arith(Arith::Mul) => a * b,
            OpKind::Fma => a.mul_add(b, c),
            OpKind::Div => a / b,
            OpKind::Rcp => 1.0 / a,
            OpKind::Sqrt => a.sqrt(),
            _ => return None,
        });
    }
    let (a, b, c) = (f64::from(a), f64::from(b), f64::from(c));
    let exact = match op.kind {
        OpKind::Arith(Arith::Add) => round::add(a, b),
        OpKind::Arith(Arith::Sub) => round::add(a, -b),
        OpKind::Arith(Arith::Mul) => round::mul(a, b),
        // The product of two f32 is exact in f64.
        OpKind::Fma => round::add(a * b, c),
        OpKind::Div => round::div(a, b),
        OpKind::Rcp => round::div(1.0, a),
        OpKind::Sqrt => round::sqrt(a),
        _ => return None,
    };
    Some(round::to_f32(exact, mode))
}

/// One execution's demotion error into `d` (the module docs of [`super`] define the cases).
fn record_error(d: &mut ErrorStats, r64: f64, r32: f64) {
    if !r64.is_finite() || !r32.is_finite() {
        d.non_finite += 1;
    } else if r64 == 0.0 {
        d.zero_reference += 1;
    } else {
        let e = (r32 - r64).abs() / r64.abs();
        d.count += 1;
        d.sum += e;
        d.max = d.max.max(e);
    }
}

/// (NaN, ±inf, subnormal, ±0) of `bits` as a value of type `ty`.
fn class(bits: u64, ty: ValueType) -> (bool, bool, bool, bool) {
    let x = match ty {
        ValueType::F32 => {
            let v = f32::from_bits(bits as u32);
            return (v.is_nan(), v.is_infinite(), v.is_subnormal(), v == 0.0);
        }
        _ => f64::from_bits(bits),
    };
    (x.is_nan(), x.is_infinite(), x.is_subnormal(), x == 0.0)
}

/// One execution's exceptions into `x`: the result's class, and for NaN or ±inf whether an
/// operand already was one.
fn record_exceptions(x: &mut ExceptionCounts, e: &Executed, ty: ValueType) {
    let (nan, inf, subnormal, _) = class(e.result, ty);
    let mut operand_nan = false;
    let mut operand_inf = false;
    for (j, &bits) in e.sources.iter().enumerate() {
        let Some(t) = operand_type(e.op, j + 1) else {
            continue;
        };
        let (n, i, _, zero) = class(bits, t);
        operand_nan |= n;
        operand_inf |= i;
        if zero && divisor(e.op) == Some(j + 1) {
            x.div_by_zero += 1;
        }
    }
    x.nan += u64::from(nan);
    x.nan_origin += u64::from(nan && !operand_nan);
    x.inf += u64::from(inf);
    x.inf_origin += u64::from(inf && !operand_inf);
    x.subnormal += u64::from(subnormal);
}
