//! The one approximate instruction the interpreter runs, `rcp.approx.ftz.f64`, by a model.
//!
//! The hardware's bits (`MUFU.RCP64H`, a high-word result) are not reproduced: the model is the
//! correctly rounded reciprocal of the operand with its low 32 bits cleared, relative error
//! below 2^-20 (the truncation loses less than one unit of fraction bit 20 less one of bit 52,
//! the rounding before it at most half of one of bit 52, and the reciprocal is at least the
//! power of two those units are relative to). It is there for code that refines the reciprocal
//! (the shadow pass's demotion error: a Newton step, then a corrected quotient), whose result
//! depends on the seed's error, not on its bits, but in the narrow band that refinement's
//! analysis leaves: such code runs here as on any seed that close. A result that used the
//! reciprocal as it is would get the model's bits, not the GPU's.

use crate::op::{Op, OpKind, ValueType};

/// `rcp.approx.ftz.f64`'s model: ±0 for ±inf, ±inf for ±0 and for a subnormal operand (flushed
/// to a zero of its sign), ±0 where the reciprocal is subnormal, NaN for NaN, and otherwise
/// `1 / a` rounded to nearest with its low 32 bits cleared (a normal result stays normal: the
/// exponent is in the high word).
pub(super) fn rcp_approx_ftz_f64(a: f64) -> f64 {
    if a.is_nan() {
        // Clearing a NaN's low word could leave an infinity's bits.
        return f64::NAN;
    }
    let a = if a.is_subnormal() {
        0.0f64.copysign(a)
    } else {
        a
    };
    let r = 1.0 / a;
    let r = if r.is_subnormal() {
        0.0f64.copysign(r)
    } else {
        r
    };
    f64::from_bits(r.to_bits() & !0xffff_ffff)
}

/// Whether `op` (of type `ty`) is the modelled instruction.
pub(super) fn is_modelled(op: &Op, ty: ValueType) -> bool {
    op.kind == OpKind::Rcp
        && ty == ValueType::F64
        && op.approx
        && op.ftz
        && !op.full
        && !op.sat
        && op.rounding.is_none()
}
