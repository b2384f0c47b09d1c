//! Bit operations of the interpreter that need more than one expression: `bfi` and `testp`.

use super::exec::{f32v, f64v, unsupported};
use super::InterpError;
use crate::model::Instruction;
use crate::op::ValueType;

/// `bfi.bN`: `b` with its bits `pos..pos + len` (those below `bits`) taken from the low bits
/// of `a`, as the PTX ISA defines it (`pos` and `len` already taken mod 256).
pub(super) fn bit_field_insert(a: u64, b: u64, pos: u64, len: u64, bits: u32) -> u64 {
    let bits = u64::from(bits);
    if pos >= bits || len == 0 {
        return b & (u64::MAX >> (64 - bits));
    }
    let len = len.min(bits - pos);
    let field = if len == 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    } << pos;
    ((b & !field) | ((a << pos) & field)) & (u64::MAX >> (64 - bits))
}

/// `testp.CLASS.T`: whether float bits `x` of type `ty` are of the class the modifier names.
pub(super) fn testp(inst: &Instruction, x: u64, ty: ValueType) -> Result<bool, InterpError> {
    let v = match ty {
        ValueType::F64 => f64v(x),
        ValueType::F32 => f64::from(f32v(x)),
        _ => return Err(unsupported("testp of a non-float type")),
    };
    let subnormal = match ty {
        ValueType::F64 => v.is_subnormal(),
        _ => f32v(x).is_subnormal(),
    };
    let class = inst
        .modifiers
        .iter()
        .find(|m| !matches!(m.as_str(), "f32" | "f64"))
        .map(String::as_str);
    Ok(match class {
        Some("finite") => v.is_finite(),
        Some("infinite") => v.is_infinite(),
        Some("number") => !v.is_nan(),
        Some("notanumber") => v.is_nan(),
        Some("normal") => v.is_finite() && v != 0.0 && !subnormal,
        Some("subnormal") => subnormal,
        _ => return Err(unsupported("this testp class")),
    })
}
