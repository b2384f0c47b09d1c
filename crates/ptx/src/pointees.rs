//! What a kernel's pointer parameters point to, as its own loads and stores show it: for each
//! parameter, the element types of the global (or generic) accesses whose address derives from
//! the parameter's value. `extern "C"` kernels carry no parameter types in their names; this is
//! the evidence left (`mantissa trace` types an application's buffers by it).
//!
//! **Derivation.** A register derives from parameter `k` when it is loaded from `k`'s `.param`
//! slot, or written by `mov`, `cvta` or an integer `add`/`sub` with a source that derives from
//! `k` (`base + i * 8` is how addresses are made). Registers are followed across the whole body
//! until nothing changes, since PTX reuses registers in loops. An access's element type is the
//! decoded operation's type (`ld.global.f64` → f64, `st.global.v2.f32` → f32, `atom.global.add.f64`
//! → f64); untyped `.b` accesses are kept as written (`b32`), so the caller can prefer a typed one.
//!
//! Never: a guess from names, or a type for a parameter with no access (an empty set says so).

use crate::model::{Function, Operand};
use crate::op::{decode, Arith, OpKind, Space, ValueType};
use std::collections::{BTreeSet, HashMap};

/// Per parameter of `f`, in order: the element types its accesses use (empty when the body
/// never accesses memory through it, or it is not a pointer).
pub fn pointee_types(f: &Function) -> Vec<BTreeSet<ValueType>> {
    let index: HashMap<&str, usize> = f
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| (p.name.as_str(), k))
        .collect();
    let mut types = vec![BTreeSet::new(); f.params.len()];
    // register -> the parameters it derives from
    let mut from: HashMap<&str, BTreeSet<usize>> = HashMap::new();
    let ops: Vec<_> = f.instructions().map(|i| (i, decode(i))).collect();
    loop {
        let mut changed = false;
        for (inst, op) in &ops {
            let dst = match inst.operands.first() {
                Some(Operand::Reg(r)) => Some(r.as_str()),
                _ => None,
            };
            let sources = || inst.operands.iter().skip(1);
            let derived: BTreeSet<usize> = match &op.kind {
                OpKind::Load(Space::Param) => sources()
                    .filter_map(|o| match o {
                        Operand::Addr { base, .. } => index.get(base.as_str()).copied(),
                        _ => None,
                    })
                    .collect(),
                OpKind::Move { .. } | OpKind::Cvta | OpKind::Arith(Arith::Add | Arith::Sub)
                    if op.ty.is_none_or(|t| !t.is_float()) =>
                {
                    sources()
                        .filter_map(|o| match o {
                            Operand::Reg(r) => from.get(r.as_str()),
                            _ => None,
                        })
                        .flatten()
                        .copied()
                        .collect()
                }
                _ => BTreeSet::new(),
            };
            if let (Some(d), false) = (dst, derived.is_empty()) {
                let set = from.entry(d).or_default();
                let before = set.len();
                set.extend(derived);
                changed |= set.len() != before;
            }
        }
        if !changed {
            break;
        }
    }
    for (inst, op) in &ops {
        let space = match op.kind {
            OpKind::Load(s) | OpKind::Store(s) | OpKind::Atom(s) | OpKind::Red(s) => s,
            _ => continue,
        };
        if !matches!(space, Space::Global | Space::Generic) {
            continue;
        }
        let Some(ty) = op.ty else { continue };
        for o in &inst.operands {
            if let Operand::Addr { base, .. } = o {
                for &k in from.get(base.as_str()).into_iter().flatten() {
                    types[k].insert(ty);
                }
            }
        }
    }
    types
}

/// The one element type `types` agree on: the typed one when there is exactly one typed
/// (float or integer) type, else the one untyped width; `None` when they disagree or are empty.
pub fn agreed(types: &BTreeSet<ValueType>) -> Option<ValueType> {
    let typed: Vec<_> = types.iter().filter(|t| !t.is_bits()).collect();
    match typed.as_slice() {
        [one] => Some(**one),
        [] if types.len() == 1 => types.iter().next().copied(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u32 k_param_2, .param .u64 k_param_3)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<12>;
    .reg .f64 %fd<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u64 %rd2, [k_param_1];
    ld.param.u32 %r1, [k_param_2];
    ld.param.u64 %rd9, [k_param_3];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r2, %tid.x;
    mul.wide.s32 %rd5, %r2, 8;
    add.s64 %rd6, %rd3, %rd5;
$L__loop:
    ld.global.f64 %fd1, [%rd6];
    add.s64 %rd6, %rd6, 8;
    mul.wide.s32 %rd7, %r2, 4;
    add.s64 %rd8, %rd4, %rd7;
    st.global.b32 [%rd8], %r1;
    st.global.u32 [%rd8+4], %r1;
    setp.lt.s32 %p1, %r2, %r1;
    @%p1 bra $L__loop;
    ret;
}
"#;

    #[test]
    fn accesses_through_each_parameter_are_typed() {
        let m = parse(PTX).module;
        let f = m.functions().next().unwrap();
        let t = pointee_types(f);
        assert_eq!(t[0], BTreeSet::from([ValueType::F64]));
        assert_eq!(t[1], BTreeSet::from([ValueType::B32, ValueType::U32]));
        assert!(t[2].is_empty(), "a scalar: {:?}", t[2]);
        assert!(t[3].is_empty(), "a pointer never used: {:?}", t[3]);
        assert_eq!(agreed(&t[0]), Some(ValueType::F64));
        assert_eq!(agreed(&t[1]), Some(ValueType::U32));
        assert_eq!(agreed(&t[3]), None);
        let mixed = BTreeSet::from([ValueType::F32, ValueType::S32]);
        assert_eq!(agreed(&mixed), None);
    }
}
