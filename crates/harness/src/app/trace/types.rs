//! Element types for an application's buffers, which the driver only knows as bytes: from the
//! C++ parameter types of the kernels they are passed to (`_Z5ratesIdEvPKT_...`: `const
//! double*`), else from the loads and stores through the parameter
//! ([`mantissa_ptx::pointees`]); buffers joined by device-to-device copies share one type (a
//! spec's copy is between buffers of one type). A buffer whose evidence is missing, or whose
//! sizes and offsets are not whole elements of the type found, is bytes (`u8`): replayed to
//! the bit all the same, compared bit for bit, but not in digits.

use super::program::{ArgOut, Op, Program};
use crate::validate::pointee_dtype;
use mantissa_gpu::DType;
use mantissa_ptx::op::ValueType;
use mantissa_ptx::pointees::agreed;
use mantissa_ptx::symbols::demangle::demangle;
use std::collections::{BTreeSet, HashMap};

/// The evidence of one kernel's parameters: the C++ pointee type, and the PTX access type.
pub(crate) struct KernelEvidence {
    pub cpp: Vec<Option<DType>>,
    pub ptx: Vec<BTreeSet<ValueType>>,
}

impl KernelEvidence {
    pub fn of(entry: &str, ptx: Vec<BTreeSet<ValueType>>) -> KernelEvidence {
        let cpp = demangle(entry)
            .filter(|d| d.params.len() == ptx.len())
            .map(|d| d.params.iter().map(pointee_dtype).collect())
            .unwrap_or_else(|| vec![None; ptx.len()]);
        KernelEvidence { cpp, ptx }
    }
}

/// The buffer element type of a PTX value type (`.b8` and other untyped bits as unsigned).
pub(crate) fn of_value_type(t: ValueType) -> Option<DType> {
    Some(match t {
        ValueType::F64 => DType::F64,
        ValueType::F32 => DType::F32,
        ValueType::F16 => DType::F16,
        ValueType::BF16 => DType::BF16,
        ValueType::S32 => DType::I32,
        ValueType::U32 | ValueType::B32 => DType::U32,
        ValueType::S64 => DType::I64,
        ValueType::U64 | ValueType::B64 => DType::U64,
        ValueType::U8 | ValueType::S8 | ValueType::B8 => DType::U8,
        _ => return None,
    })
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// One type per allocation (see the module docs).
pub(crate) fn buffer_types(p: &Program, facts: &super::ModuleFacts) -> Vec<DType> {
    let evidence = &facts.evidence;
    let n = p.allocs.len();
    let mut parent: Vec<usize> = (0..n).collect();
    for op in &p.ops {
        if let Op::DeviceCopy { from, to, .. } = op {
            let (a, b) = (find(&mut parent, from.buf), find(&mut parent, to.buf));
            parent[a] = b;
        }
    }
    // Per group: C++ evidence counts first, PTX evidence counts second.
    let mut cpp: HashMap<usize, HashMap<DType, usize>> = HashMap::new();
    let mut ptx: HashMap<usize, HashMap<DType, usize>> = HashMap::new();
    for op in &p.ops {
        let Op::Launch {
            module,
            kernel,
            args,
            ..
        } = op
        else {
            continue;
        };
        let Some(ev) = evidence.get(&(module.clone(), kernel.clone())) else {
            continue;
        };
        for (k, a) in args.iter().enumerate() {
            let ArgOut::Pointer(at) = a else { continue };
            let g = find(&mut parent, at.buf);
            if let Some(d) = ev.cpp.get(k).copied().flatten() {
                *cpp.entry(g).or_default().entry(d).or_default() += 1;
            } else if let Some(d) = ev.ptx.get(k).and_then(agreed).and_then(of_value_type) {
                *ptx.entry(g).or_default().entry(d).or_default() += 1;
            }
        }
    }
    let most = |m: Option<&HashMap<DType, usize>>| {
        m.and_then(|m| {
            m.iter()
                .max_by_key(|(d, c)| (**c, d.size()))
                .map(|(d, _)| *d)
        })
    };
    let mut group_type: HashMap<usize, DType> = HashMap::new();
    for b in 0..n {
        let g = find(&mut parent, b);
        // A variable's type is the one its module declares.
        let declared = p.allocs[b].symbol.as_ref().and_then(|v| {
            let key = (v.module.clone()?, v.name.clone());
            facts.variables.get(&key).copied()
        });
        let t = declared
            .or_else(|| most(cpp.get(&g)))
            .or_else(|| most(ptx.get(&g)))
            .unwrap_or(DType::U8);
        group_type.insert(g, t);
    }
    // Whole elements, or bytes.
    let mut bad: BTreeSet<usize> = BTreeSet::new();
    let mut check = |g: usize, bytes: u64, t: DType| {
        if bytes % t.size() as u64 != 0 {
            bad.insert(g);
        }
    };
    for b in 0..n {
        let g = find(&mut parent, b);
        check(g, p.allocs[b].bytes, group_type[&g]);
    }
    for op in &p.ops {
        let mut spans = Vec::new();
        match op {
            Op::Launch { args, .. } => {
                for a in args {
                    if let ArgOut::Pointer(at) = a {
                        spans.push((at.buf, at.offset));
                    }
                }
            }
            Op::Upload { to, data, rows, .. } => {
                spans.extend([(to.buf, to.offset), (to.buf, data.len() as u64)]);
                spans.extend(
                    rows.iter()
                        .flat_map(|r| [(to.buf, r.width), (to.buf, r.pitch)]),
                );
            }
            Op::Download {
                from, bytes, rows, ..
            } => {
                spans.extend([(from.buf, from.offset), (from.buf, *bytes)]);
                spans.extend(
                    rows.iter()
                        .flat_map(|r| [(from.buf, r.width), (from.buf, r.pitch)]),
                );
            }
            Op::DeviceCopy {
                from, to, bytes, ..
            } => spans.extend([
                (from.buf, from.offset),
                (to.buf, to.offset),
                (to.buf, *bytes),
            ]),
            Op::Memset {
                to, pattern, count, ..
            } => spans.extend([(to.buf, to.offset), (to.buf, pattern.len() as u64 * count)]),
        }
        for (b, bytes) in spans {
            let g = find(&mut parent, b);
            check(g, bytes, group_type[&g]);
        }
    }
    (0..n)
        .map(|b| {
            let g = find(&mut parent, b);
            match group_type[&g] {
                // NumPy has no bfloat16: such a buffer's data could not be written as `.npy`.
                _ if bad.contains(&g) => DType::U8,
                DType::BF16 => DType::U8,
                t => t,
            }
        })
        .collect()
}
