//! The PTX the shadow-values pass inserts, piece by piece: the shadow registers of a function,
//! operands as (value, shadow) triples for the runtime, calls that return a shadow pair, and
//! the inline shadow moves.

use super::ValuesError;
use crate::model::SrcLine;
use crate::model::{Imm, Operand, Statement, VarDecl};
use crate::op::ValueType;
use crate::rewrite::{instruction, int, Rewriter};
use std::collections::HashMap;

/// A register's shadow: `hi` (the f64 shadow of an f32) and, for an f64, `lo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shadow {
    pub hi: String,
    pub lo: Option<String>,
}

/// The shadow registers of one function, made on first use.
#[derive(Debug, Default)]
pub(super) struct Shadows {
    regs: HashMap<String, Shadow>,
}

impl Shadows {
    /// The shadow of float register `name` of type `ty`.
    pub fn of(
        &mut self,
        rw: &mut Rewriter,
        name: &str,
        ty: ValueType,
    ) -> Result<Shadow, ValuesError> {
        if let Some(s) = self.regs.get(name) {
            return Ok(s.clone());
        }
        let hi = rw.reg("f64")?;
        let lo = match ty {
            ValueType::F64 => Some(rw.reg("f64")?),
            _ => None,
        };
        let s = Shadow { hi, lo };
        self.regs.insert(name.to_string(), s.clone());
        Ok(s)
    }
}

pub(super) fn reg(name: &str) -> Operand {
    Operand::Reg(name.to_string())
}

/// An f64 immediate.
pub(super) fn f64_imm(x: f64) -> Operand {
    Operand::Imm(Imm::F64(x.to_bits()))
}

/// A float immediate's value as an f64 (exact for an f32), `None` for an integer one.
pub(super) fn imm_value(imm: &Imm) -> Option<f64> {
    match *imm {
        Imm::F32(b) => Some(f64::from(f32::from_bits(b))),
        Imm::F64(b) => Some(f64::from_bits(b)),
        Imm::Int { .. } => None,
    }
}

/// One operand as the runtime takes it: its value as an f64 and its shadow (hi, lo).
#[derive(Debug, Clone)]
pub(super) struct Arg {
    pub value: Operand,
    pub hi: Operand,
    pub lo: Operand,
}

impl Arg {
    /// An unused operand (zeros).
    pub fn none() -> Arg {
        Arg {
            value: f64_imm(0.0),
            hi: f64_imm(0.0),
            lo: f64_imm(0.0),
        }
    }

    /// A constant: its own shadow.
    pub fn constant(x: f64) -> Arg {
        Arg {
            value: f64_imm(x),
            hi: f64_imm(x),
            lo: f64_imm(0.0),
        }
    }

    /// The shadow `s` alone, the value not read (0).
    pub fn shadow_only(s: &Shadow) -> Arg {
        Arg {
            value: f64_imm(0.0),
            hi: reg(&s.hi),
            lo: s.lo.as_deref().map_or(f64_imm(0.0), reg),
        }
    }
}

/// `value` as an f64 in a new register (`cvt.f64.f32` for an f32, `mov` for an f64), to be
/// inserted where `value` holds what the runtime must see.
pub(super) fn widen(
    rw: &mut Rewriter,
    value: &str,
    ty: ValueType,
    code: &mut Vec<Statement>,
) -> Result<String, ValuesError> {
    let w = rw.reg("f64")?;
    code.push(match ty {
        ValueType::F32 => instruction("cvt", &["f64", "f32"], vec![reg(&w), reg(value)]),
        _ => instruction("mov", &["f64"], vec![reg(&w), reg(value)]),
    });
    Ok(w)
}

/// A call of `function` with `args` (PTX type without the dot, value) and, when `returns` is
/// given, a 16-byte return (a shadow pair) loaded into those one or two f64 registers, in the
/// block form NVRTC writes. The loads of the return are not guarded by
/// [`crate::rewrite::Guarding::Keep`] (call staging never is), so callers load into scratch
/// registers and move from there.
pub(super) fn call_ret(
    function: &str,
    args: &[(&str, Operand)],
    returns: Option<&[String]>,
) -> Vec<Statement> {
    let mut code = vec![Statement::BlockStart(SrcLine(0))];
    let decl = |attrs: &[&str], name: &str, dims: Vec<Option<u64>>| {
        Statement::Var(VarDecl {
            attrs: attrs.iter().map(|a| a.to_string()).collect(),
            name: name.to_string(),
            dims,
            init: None,
            line: SrcLine(0),
        })
    };
    let names: Vec<String> = (0..args.len()).map(|k| format!("mantissa_sv{k}")).collect();
    for ((ty, _), name) in args.iter().zip(&names) {
        code.push(decl(&[".param", &format!(".{ty}")], name, Vec::new()));
    }
    let ret = "mantissa_sv_ret";
    if returns.is_some() {
        code.push(decl(&[".param", ".align", "8", ".b8"], ret, vec![Some(16)]));
    }
    for ((ty, value), name) in args.iter().zip(&names) {
        code.push(instruction(
            "st",
            &["param", ty],
            vec![
                Operand::Addr {
                    base: name.clone(),
                    offset: 0,
                },
                value.clone(),
            ],
        ));
    }
    let arguments = Operand::List(names.into_iter().map(Operand::Symbol).collect());
    let callee = Operand::Symbol(function.to_string());
    code.push(match returns {
        Some(_) => instruction(
            "call",
            &[],
            vec![
                Operand::List(vec![Operand::Symbol(ret.into())]),
                callee,
                arguments,
            ],
        ),
        None => instruction("call", &[], vec![callee, arguments]),
    });
    for (k, r) in returns.into_iter().flatten().enumerate() {
        code.push(instruction(
            "ld",
            &["param", "f64"],
            vec![
                reg(r),
                Operand::Addr {
                    base: ret.into(),
                    offset: 8 * k as i64,
                },
            ],
        ));
    }
    code.push(Statement::BlockEnd(SrcLine(0)));
    code
}

/// `mov` of the returned `pair` (scratch registers) into shadow `to`.
pub(super) fn set_shadow(to: &Shadow, pair: &[String], code: &mut Vec<Statement>) {
    code.push(instruction(
        "mov",
        &["f64"],
        vec![reg(&to.hi), reg(&pair[0])],
    ));
    if let (Some(lo), Some(p)) = (&to.lo, pair.get(1)) {
        code.push(instruction("mov", &["f64"], vec![reg(lo), reg(p)]));
    }
}

/// shadow := value (`value` a register of type `ty`, or an immediate).
pub(super) fn seed(to: &Shadow, value: &Operand, ty: ValueType, code: &mut Vec<Statement>) {
    match value {
        Operand::Imm(imm) => {
            let x = imm_value(imm).unwrap_or(0.0);
            code.push(instruction("mov", &["f64"], vec![reg(&to.hi), f64_imm(x)]));
        }
        _ if ty == ValueType::F32 => {
            code.push(instruction(
                "cvt",
                &["f64", "f32"],
                vec![reg(&to.hi), value.clone()],
            ));
        }
        _ => code.push(instruction(
            "mov",
            &["f64"],
            vec![reg(&to.hi), value.clone()],
        )),
    }
    if let Some(lo) = &to.lo {
        code.push(instruction("mov", &["f64"], vec![reg(lo), f64_imm(0.0)]));
    }
}

/// The shadow pair of operand `o` of an instruction (a register's shadow, or a constant's).
pub(super) fn pair_of(o: &Operand, shadow: Option<&Shadow>) -> (Operand, Operand) {
    match (o, shadow) {
        (_, Some(s)) => (reg(&s.hi), s.lo.as_deref().map_or(f64_imm(0.0), reg)),
        (Operand::Imm(imm), None) => (f64_imm(imm_value(imm).unwrap_or(0.0)), f64_imm(0.0)),
        _ => (f64_imm(0.0), f64_imm(0.0)),
    }
}

/// `dst := src` on shadows (`src` a shadow pair; a missing lo reads as 0).
pub(super) fn copy_shadow(to: &Shadow, from: (Operand, Operand), code: &mut Vec<Statement>) {
    code.push(instruction("mov", &["f64"], vec![reg(&to.hi), from.0]));
    if let Some(lo) = &to.lo {
        code.push(instruction("mov", &["f64"], vec![reg(lo), from.1]));
    }
}

/// A `u32` immediate for the runtime.
pub(super) fn word(x: u32) -> Operand {
    int(x.into())
}
