//! Float→integer conversions switched to what x86-64 C code computes for a cast.
//!
//! The GPU's `cvt.rzi.T.F` truncates, saturates to T's range and turns NaN into 0. A C cast on
//! x86-64 (gcc and clang, SSE2) truncates with `cvttss2si`/`cvttsd2si` and, when the truncated
//! value does not fit the instruction's destination or the operand is NaN, produces the
//! "integer indefinite" value (the destination's most negative integer); narrower types keep
//! the low bits. Per type pair, with F = f32 or f64 (x the operand, t = trunc(x)):
//!
//! | PTX destination   | the C cast             | x86-64 code                 | result                                                  |
//! |-------------------|------------------------|-----------------------------|---------------------------------------------------------|
//! | `s32`             | `(int)x`               | 32-bit `cvtt*2si`           | t if −2^31 ≤ t < 2^31, else 0x80000000                  |
//! | `s16`, `s8`       | `(short)x`, `(char)x`  | 32-bit `cvtt*2si`, low bits | low 16/8 bits of the 32-bit result                      |
//! | `u16`, `u8`       | `(unsigned short)x` …  | 32-bit `cvtt*2si`, low bits | low 16/8 bits of the 32-bit result                      |
//! | `u32`             | `(unsigned)x`          | 64-bit `cvtt*2si`, low half | low 32 bits of t if −2^63 ≤ t < 2^63, else 0            |
//! | `s64`             | `(long)x`              | 64-bit `cvtt*2si`           | t if −2^63 ≤ t < 2^63, else 0x8000000000000000          |
//! | `u64`             | `(unsigned long)x`     | compiler-dependent          | not switched: gcc branches on x ≥ 2^63, clang does not, |
//! |                   |                        |                             | and they disagree beyond 2^64 and on NaN                |
//!
//! So `(unsigned)-1.0f` is 0xFFFFFFFF on x86-64 and 0 on the GPU; `(unsigned)-0.5f` is 0 on
//! both; `(unsigned)4294967296.0f` is 0 on x86-64 (2^32's low half) and 0xFFFFFFFF on the GPU;
//! NaN is 0 for `u32` on both but 0x80000000 for `s32` on x86-64.
//!
//! The rewrite, under the instruction's guard: `cvt.rzi.s64.F %t, x` (the GPU's saturating
//! conversion, exact for |x| < 2^63), a predicate for "indefinite" (x is NaN, or t outside the
//! cast instruction's range: for the 64-bit one, t saturated at 2^63 − 1, since no float below
//! 2^63 truncates to it; below −2^63 the saturated value is the indefinite value already),
//! `selp` of the indefinite value, then the original instruction becomes `cvt.T.s64 dst, %t`
//! (integer narrowing keeps the low bits; `mov.b64` for `s64`).

use super::{missing, outcome, Cause, Change};
use crate::model::{Imm, InstId, Module, Operand, Statement};
use crate::op::{decode, OpKind, Rounding, ValueType};
use crate::pass::{Outcome, Pass, PassError};
use crate::rewrite::{instruction, Guarding, Rewriter};
use std::collections::BTreeSet;

/// Why a float→integer conversion from `from` to `to` cannot be switched, or `None` when it
/// can.
pub fn unsupported(from: ValueType, to: ValueType) -> Option<String> {
    if !matches!(from, ValueType::F32 | ValueType::F64) {
        return Some(format!("conversions from {from} are not switched"));
    }
    match to {
        ValueType::U64 => Some(
            "float→u64 casts differ between x86-64 compilers beyond 2^63 (gcc branches, clang \
             does not)"
                .into(),
        ),
        ValueType::S8
        | ValueType::S16
        | ValueType::S32
        | ValueType::U8
        | ValueType::U16
        | ValueType::U32
        | ValueType::S64 => None,
        other => Some(format!("conversions to {other} are not switched")),
    }
}

/// Whether the cast to `to` goes through the 64-bit x86 conversion (else the 32-bit one).
fn through_64_bits(to: ValueType) -> bool {
    matches!(to, ValueType::U32 | ValueType::S64)
}

fn int(value: i128) -> Operand {
    Operand::Imm(Imm::Int {
        value,
        hex: false,
        unsigned: false,
    })
}

/// The pass: each conversion of the set computes the x86-64 cast.
#[derive(Debug, Clone, Default)]
pub struct AsOnX86 {
    insts: BTreeSet<InstId>,
}

impl AsOnX86 {
    /// Switches the float→integer `cvt.rzi` instructions `insts`.
    pub fn new(insts: BTreeSet<InstId>) -> AsOnX86 {
        AsOnX86 { insts }
    }
}

impl Pass for AsOnX86 {
    fn name(&self) -> String {
        "x86-casts".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let err = |message: String| PassError {
            pass: self.name(),
            message,
        };
        let mut out = module.clone();
        let mut wide: Vec<(InstId, String, Vec<String>)> = Vec::new();
        for f in module.functions().filter(|f| f.body.is_some()) {
            let targets: Vec<_> = f
                .instructions()
                .filter(|i| self.insts.contains(&i.id))
                .collect();
            if targets.is_empty() {
                continue;
            }
            let mut rw = Rewriter::new(&out, &f.name).map_err(|e| err(e.to_string()))?;
            for i in targets {
                let op = decode(i);
                let printed = i.to_string().trim().to_string();
                let OpKind::Convert { from, to } = op.kind else {
                    return Err(err(format!("{printed}: not a conversion")));
                };
                if op.rounding != Some(Rounding::Rzi) || !from.is_float() || !to.is_int() {
                    return Err(err(format!("{printed}: not a float→integer cvt.rzi")));
                }
                if let Some(why) = unsupported(from, to) {
                    return Err(err(format!("{printed}: {why}")));
                }
                let (t, p) = (
                    rw.reg("s64").map_err(|e| err(e.to_string()))?,
                    rw.reg("pred").map_err(|e| err(e.to_string()))?,
                );
                let x = i.operands[1].clone();
                let fty = from.name();
                let mut cvt_mods = vec!["rzi"];
                if op.ftz {
                    cvt_mods.push("ftz");
                }
                cvt_mods.extend(["s64", fty]);
                let reg = |r: &str| Operand::Reg(r.to_string());
                let mut code = vec![instruction("cvt", &cvt_mods, vec![reg(&t), x.clone()])];
                let indefinite = if through_64_bits(to) {
                    code.push(instruction(
                        "setp",
                        &["eq", "s64"],
                        vec![reg(&p), reg(&t), int(i64::MAX as i128)],
                    ));
                    i64::MIN as i128
                } else {
                    code.push(instruction(
                        "setp",
                        &["lt", "s64"],
                        vec![reg(&p), reg(&t), int(i32::MIN as i128)],
                    ));
                    code.push(instruction(
                        "setp",
                        &["gt", "or", "s64"],
                        vec![reg(&p), reg(&t), int(i32::MAX as i128), reg(&p)],
                    ));
                    i32::MIN as i128
                };
                code.push(instruction(
                    "setp",
                    &["nan", "or", fty],
                    vec![reg(&p), x.clone(), x, reg(&p)],
                ));
                code.push(instruction(
                    "selp",
                    &["b64"],
                    vec![reg(&t), int(indefinite), reg(&t), reg(&p)],
                ));
                let texts = code
                    .iter()
                    .filter_map(|s| match s {
                        Statement::Inst(c) => Some(c.to_string()),
                        _ => None,
                    })
                    .collect();
                rw.insert_before(i.id, code, Guarding::Keep)
                    .map_err(|e| err(e.to_string()))?;
                wide.push((i.id, t, texts));
            }
            rw.apply(&mut out).map_err(|e| err(e.to_string()))?;
        }
        let mut changes = Vec::new();
        for f in out.functions_mut() {
            for s in f.body.iter_mut().flatten() {
                let Statement::Inst(i) = s else { continue };
                let Some((_, t, texts)) = wide.iter().find(|(id, _, _)| *id == i.id) else {
                    continue;
                };
                let before = i.to_string().trim().to_string();
                let to = match decode(i).kind {
                    OpKind::Convert { to, .. } => to,
                    _ => return Err(err(format!("{before}: not a conversion"))),
                };
                if to == ValueType::S64 {
                    i.opcode = "mov".into();
                    i.modifiers = vec!["b64".into()];
                } else {
                    i.modifiers = vec![to.name().into(), "s64".into()];
                }
                i.operands = vec![i.operands[0].clone(), Operand::Reg(t.clone())];
                let guard = i
                    .guard
                    .as_ref()
                    .map(|g| format!("@{}{} ", if g.negated { "!" } else { "" }, g.reg))
                    .unwrap_or_default();
                let mut after: Vec<String> = texts
                    .iter()
                    .map(|c| format!("{guard}{}", c.trim()))
                    .collect();
                after.push(i.to_string().trim().to_string());
                changes.push(Change {
                    inst: i.id,
                    before,
                    after: after.join(" "),
                });
            }
        }
        missing(&self.name(), &self.insts, &changes)?;
        Ok(outcome(self, Cause::FloatToInt, out, changes))
    }
}
