//! Shadow values through shared memory (see the parent module's **Memory** paragraph): per
//! kernel, whether its shared memory can be shadowed, the shadow area and the entry code that
//! locates the static variables and zeroes the area, and the rewrite of `ld.shared`/`st.shared`
//! and shared atomics.
//!
//! A kernel's static shared variables (`.shared` with a size, at module scope and used by the
//! kernel, or in its body) span `[first, end)` once ptxas has placed them: `first` is the lowest
//! start rounded down to 16 (so that an element's difference, at twice its offset, is aligned),
//! `end` the highest end, both computed at entry from `mov.u32 %r, VAR`. The shadow area (a
//! module-scope `.shared .align 16 .b8` array used by the kernel alone) holds the difference
//! of the byte at `a` at `area + 2 (a - first)`: 2 × (the variables' bytes + their alignment
//! padding + 15), rounded up to 16. It is declared right before the kernel: ptxas places a
//! kernel's function-scope shared variables first, then the module-scope ones it uses in
//! declaration order (seen in the SASS of ptxas 13 for sm_90), so the area comes after every
//! user variable. Should ptxas place other shared data between the variables all the same, so
//! that `end - first` exceeds half the area, the entry code sets `end = first` and every shared
//! load re-seeds: never a wrong shadow. Addresses outside `[first, end)` (dynamic
//! `extern .shared` memory, whose size the PTX does not give) re-seed.
//!
//! Shared memory written where the pass cannot see it would leave stale differences, so a
//! kernel is not shadowed (its shared loads re-seed, a note says why) when a device function it
//! calls writes shared memory, when it or such a function makes a generic pointer to shared
//! memory (`cvta.shared`: generic stores through it update no shadow), when an instruction the
//! pass does not model writes shared memory (`cp.async`, `mbarrier`, ...), or when its static
//! shared memory and the area together exceed the 48 KiB a kernel may declare statically.

use super::emit::{call_ret, pair_of, reg, set_shadow, widen, word};
use super::instrument::{FunctionRewrite, State};
use super::{
    ValuesError, CLEAR_SHARED_FUNCTION, LOAD_SHARED_FUNCTION, STORE_SHARED_FUNCTION,
    ZERO_SHARED_FUNCTION,
};
use crate::decode::Decoded;
use crate::interp::var_layout;
use crate::model::{Function, FunctionKind, Item, Module, Operand, SrcLine, Statement, VarDecl};
use crate::op::{OpKind, Space, ValueType};
use crate::rewrite::{call, instruction, int, Guarding, Rewriter};
use std::collections::{BTreeSet, HashSet};

/// The static shared memory a kernel may declare, in bytes.
pub(super) const STATIC_LIMIT: u64 = 48 * 1024;

/// Where a shadowed kernel's shared differences are: registers (u32) set at its entry.
#[derive(Debug, Clone)]
pub(super) struct SharedShadow {
    /// The lowest start of the static variables, rounded down to 16.
    pub first: String,
    /// Their highest end (`first` when the area could not hold them).
    pub end: String,
    /// The shadow area's shared address.
    pub area: String,
    /// The static variables' names.
    statics: HashSet<String>,
}

/// How a function's shared memory is treated.
#[derive(Debug, Clone)]
pub(super) enum SharedMemory {
    /// Shadowed in the area.
    Shadowed(SharedShadow),
    /// Not shadowed: its float loads re-seed, for this reason.
    NotShadowed(String),
}

/// What [`plan`] decided for one function.
#[derive(Debug)]
pub(super) struct Plan {
    /// The treatment of its shared memory.
    pub memory: SharedMemory,
    /// Code for the top of the kernel (`first`/`end`, the zeroing): empty when not shadowed.
    pub init: Vec<Statement>,
    /// The shadow area, to be declared right before the kernel.
    pub area: Option<VarDecl>,
    /// What the report should say, if anything.
    pub note: Option<String>,
}

/// The re-seed reason of a load from memory the pass does not shadow.
pub(super) const DYNAMIC: &str = "a load from dynamic shared memory (not shadowed)";

/// The shared-memory treatment of function `f` (`d` its decoding) of `module`, with registers
/// from `rw` and `area_name` for its shadow area (a name unused in the module).
pub(super) fn plan(
    module: &Module,
    f: &Function,
    d: &Decoded,
    rw: &mut Rewriter,
    area_name: &str,
) -> Result<Plan, ValuesError> {
    let not = |why: &str| Plan {
        memory: SharedMemory::NotShadowed(why.to_string()),
        init: Vec::new(),
        area: None,
        note: None,
    };
    if f.kind != FunctionKind::Entry {
        return Ok(not(
            "a load from shared memory in a device function (not shadowed)",
        ));
    }
    if !uses_shared_floats(d) {
        return Ok(not(DYNAMIC));
    }
    let used: HashSet<&str> = f
        .instructions()
        .flat_map(|i| i.operands.iter().flat_map(symbols))
        .collect();
    let module_vars = module.items.iter().filter_map(|i| match i {
        Item::Var(v) if used.contains(v.name.as_str()) => Some(v),
        _ => None,
    });
    let body_vars = f.body.iter().flatten().filter_map(|s| match s {
        Statement::Var(v) => Some(v),
        _ => None,
    });
    let statics: Vec<(&VarDecl, u64, u64)> = module_vars
        .chain(body_vars)
        .filter_map(|v| static_shared(v).map(|(bytes, align)| (v, bytes, align)))
        .collect();
    if statics.is_empty() {
        return Ok(not(DYNAMIC));
    }
    let kernel = &f.name;
    if let Some(why) = unseen_writer(module, f) {
        return Ok(Plan {
            note: Some(format!("shared memory not shadowed in {kernel}: {why}")),
            ..not("a load from shared memory (not shadowed in this kernel: see the notes)")
        });
    }
    let bytes: u64 = statics.iter().map(|(_, b, _)| b).sum();
    let span: u64 = statics.iter().map(|(_, b, a)| b + a - 1).sum::<u64>() + 15;
    let area_bytes = (2 * span).div_ceil(16) * 16;
    if bytes + area_bytes > STATIC_LIMIT {
        return Ok(Plan {
            note: Some(format!(
                "shared memory not shadowed in {kernel}: {bytes} + {area_bytes} bytes exceeds 48 KiB"
            )),
            ..not("a load from shared memory (not shadowed: with its shadow over 48 KiB)")
        });
    }

    let shadow = SharedShadow {
        first: rw.reg("u32")?,
        end: rw.reg("u32")?,
        area: rw.reg("u32")?,
        statics: statics.iter().map(|(v, _, _)| v.name.clone()).collect(),
    };
    let area = VarDecl {
        attrs: vec![".shared".into(), ".align".into(), "16".into(), ".b8".into()],
        name: area_name.to_string(),
        dims: vec![Some(area_bytes)],
        init: None,
        line: SrcLine(0),
    };
    let mut init = Vec::new();
    let (first, end) = (&shadow.first, &shadow.end);
    for (k, (v, b, _)) in statics.iter().enumerate() {
        let (start, stop) = if k == 0 {
            (first.clone(), end.clone())
        } else {
            (rw.reg("u32")?, rw.reg("u32")?)
        };
        init.push(instruction(
            "mov",
            &["u32"],
            vec![reg(&start), Operand::Symbol(v.name.clone())],
        ));
        init.push(instruction(
            "add",
            &["u32"],
            vec![reg(&stop), reg(&start), int((*b).into())],
        ));
        if k > 0 {
            init.push(instruction(
                "min",
                &["u32"],
                vec![reg(first), reg(first), reg(&start)],
            ));
            init.push(instruction(
                "max",
                &["u32"],
                vec![reg(end), reg(end), reg(&stop)],
            ));
        }
    }
    init.push(instruction(
        "and",
        &["b32"],
        vec![reg(first), reg(first), int(-16)],
    ));
    // Other shared data between the variables: the area cannot hold their span; shadow nothing.
    let width = rw.reg("u32")?;
    let too_wide = rw.reg("pred")?;
    init.push(instruction(
        "sub",
        &["u32"],
        vec![reg(&width), reg(end), reg(first)],
    ));
    init.push(instruction(
        "setp",
        &["gt", "u32"],
        vec![reg(&too_wide), reg(&width), int((area_bytes / 2).into())],
    ));
    init.push(instruction(
        "selp",
        &["b32"],
        vec![reg(end), reg(first), reg(end), reg(&too_wide)],
    ));
    init.push(instruction(
        "mov",
        &["u32"],
        vec![reg(&shadow.area), Operand::Symbol(area_name.to_string())],
    ));
    init.extend(call(
        ZERO_SHARED_FUNCTION,
        &[("b32", reg(&shadow.area)), ("b32", word(area_bytes as u32))],
    ));
    Ok(Plan {
        memory: SharedMemory::Shadowed(shadow),
        init,
        area: Some(area),
        note: None,
    })
}

/// Declares kernel `kernel`'s shadow area in `module` right before the kernel: after every
/// shared variable the kernel can use, where ptxas then places it (see the module docs).
pub(super) fn declare_area(module: &mut Module, kernel: &str, area: VarDecl) {
    let at = module
        .items
        .iter()
        .position(|i| matches!(i, Item::Function(g) if g.name == kernel && g.body.is_some()))
        .unwrap_or(module.items.len());
    module.items.insert(at, Item::Var(area));
}

impl SharedShadow {
    /// The shared-space address `operand` (`[base+offset]`) names, as a u32 in a new register
    /// computed by `code`; `None` for an address in dynamic shared memory or one the pass
    /// cannot follow.
    pub fn address(
        &self,
        d: &Decoded,
        rw: &mut Rewriter,
        operand: Option<&Operand>,
        element_offset: i64,
        code: &mut Vec<Statement>,
    ) -> Result<Option<String>, ValuesError> {
        let Some(Operand::Addr { base, offset }) = operand else {
            return Ok(None);
        };
        let offset = int((offset + element_offset).into());
        let a = rw.reg("u32")?;
        match d.regs.type_of(base) {
            Some(ValueType::U32 | ValueType::S32 | ValueType::B32) => {
                code.push(instruction(
                    "add",
                    &["s32"],
                    vec![reg(&a), reg(base), offset],
                ));
            }
            Some(ValueType::U64 | ValueType::S64 | ValueType::B64) => {
                code.push(instruction(
                    "cvt",
                    &["u32", "u64"],
                    vec![reg(&a), reg(base)],
                ));
                code.push(instruction("add", &["s32"], vec![reg(&a), reg(&a), offset]));
            }
            None if self.statics.contains(base) => {
                code.push(instruction(
                    "mov",
                    &["u32"],
                    vec![reg(&a), Operand::Symbol(base.clone())],
                ));
                code.push(instruction("add", &["s32"], vec![reg(&a), reg(&a), offset]));
            }
            _ => return Ok(None),
        }
        Ok(Some(a))
    }

    /// `(first, end, area)` as the runtime's shared functions take them.
    pub fn arguments(&self) -> [(&'static str, Operand); 3] {
        [
            ("b32", reg(&self.first)),
            ("b32", reg(&self.end)),
            ("b32", reg(&self.area)),
        ]
    }
}

/// The bytes and alignment of a static shared variable; `None` for anything else (another
/// space, `extern`, an unsized array).
fn static_shared(v: &VarDecl) -> Option<(u64, u64)> {
    if !v.attrs.iter().any(|a| a == ".shared") || v.attrs.iter().any(|a| a == ".extern") {
        return None;
    }
    let (ty, _, count) = var_layout(v).ok()?;
    let align = v
        .attrs
        .iter()
        .position(|a| a == ".align")
        .and_then(|i| v.attrs.get(i + 1)?.parse::<u64>().ok())
        .unwrap_or(u64::from(ty.bytes()))
        .max(1);
    Some((u64::from(ty.bytes()) * count as u64, align))
}

/// The names an operand mentions as symbols or address bases.
fn symbols(o: &Operand) -> Vec<&str> {
    match o {
        Operand::Symbol(s) => vec![s.as_str()],
        Operand::Addr { base, .. } => vec![base.as_str()],
        Operand::Vector(items) | Operand::List(items) => items.iter().flat_map(symbols).collect(),
        _ => Vec::new(),
    }
}

/// Whether some shared load or store of `d` moves a float (by its type or its register's).
fn uses_shared_floats(d: &Decoded) -> bool {
    (0..d.insts.len()).any(|k| {
        let op = &d.ops[k];
        matches!(
            op.kind,
            OpKind::Load(Space::Shared) | OpKind::Store(Space::Shared)
        ) && (matches!(op.ty, Some(ValueType::F32 | ValueType::F64))
            || d.insts[k].operands.iter().any(|o| {
                let regs: Vec<&str> = match o {
                    Operand::Reg(r) => vec![r.as_str()],
                    Operand::Vector(items) => items
                        .iter()
                        .filter_map(|e| match e {
                            Operand::Reg(r) => Some(r.as_str()),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                regs.iter()
                    .any(|r| matches!(d.regs.type_of(r), Some(ValueType::F32 | ValueType::F64)))
            }))
    })
}

/// Why shared memory of kernel `f` may be written where the pass cannot see it, if it may: a
/// device function it calls (directly or not) writing shared memory, a `cvta.shared` in it or
/// such a function, or an instruction writing shared memory that is not a store or atomic.
fn unseen_writer(module: &Module, f: &Function) -> Option<String> {
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut todo = vec![f.name.as_str()];
    while let Some(name) = todo.pop() {
        let Some(g) = module
            .functions()
            .find(|g| g.name == name && g.body.is_some())
        else {
            continue;
        };
        for i in g.instructions() {
            let shared = i.modifiers.iter().any(|m| m.starts_with("shared"));
            let op = crate::op::decode(i);
            let device = g.kind != FunctionKind::Entry;
            match &op.kind {
                OpKind::Cvta if shared && !i.modifiers.iter().any(|m| m == "to") => {
                    return Some(format!(
                        "{} makes a generic pointer to shared memory ({}), through which stores update no shadow",
                        g.name,
                        i.full_opcode()
                    ));
                }
                OpKind::Store(Space::Shared)
                | OpKind::Atom(Space::Shared)
                | OpKind::Red(Space::Shared)
                    if device =>
                {
                    return Some(format!(
                        "the device function {} writes it ({})",
                        g.name,
                        i.full_opcode()
                    ));
                }
                OpKind::Other(_) if shared && !op.reads_memory_only() => {
                    return Some(format!("{} writes it unseen ({})", g.name, i.full_opcode()));
                }
                OpKind::Call => {
                    for callee in i.operands.iter().flat_map(symbols) {
                        if reached.insert(callee) {
                            todo.push(callee);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    None
}

impl FunctionRewrite<'_, '_> {
    /// A float load from shared memory: each element's shadow from the kernel's shadow area
    /// (one conditional re-seed record: outside the static variables), or a re-seed where the
    /// kernel's shared memory is not shadowed or the address is dynamic shared memory.
    pub(super) fn load_shared(&mut self, k: usize, state: &mut State) -> Result<(), ValuesError> {
        let shadow = match &self.shared {
            SharedMemory::Shadowed(s) => s.clone(),
            SharedMemory::NotShadowed(why) => {
                let why = why.clone();
                return self.reseed_at(k, &why, state);
            }
        };
        let Some(elements) = self.loaded_floats(k) else {
            return self.reseed_at(k, "a vector load of floats and non-floats", state);
        };
        let inst = self.d.insts[k];
        let width = self.d.ops[k].ty.map_or(8, |t| i64::from(t.bytes()));
        let mut before = Vec::new();
        let mut addresses = Vec::new();
        for (e, _, _) in &elements {
            let at = inst.operands.get(1);
            match shadow.address(self.d, self.rw, at, width * *e as i64, &mut before)? {
                Some(a) => addresses.push(a),
                None => return self.reseed_at(k, DYNAMIC, state),
            }
        }
        let record = self.reseed_point(
            k,
            "a shared load: re-seeds where the address is in dynamic shared memory (not shadowed)",
            true,
            state,
        );
        let mut after = Vec::new();
        for ((_, r, t), address) in elements.into_iter().zip(addresses) {
            let value = widen(self.rw, &r, t, &mut after)?;
            let pair = [self.rw.reg("f64")?, self.rw.reg("f64")?];
            let (acc, function) = self.record_arg(k, record, LOAD_SHARED_FUNCTION, &mut after)?;
            let mut args = vec![("b64", acc), ("b32", reg(&address))];
            args.extend(shadow.arguments());
            args.extend([
                ("b64", reg(&value)),
                ("b32", word(u32::from(t == ValueType::F32))),
            ]);
            after.extend(call_ret(&function, &args, Some(&pair)));
            let to = self.shadow(&r, t)?;
            set_shadow(&to, &pair, &mut after);
        }
        self.rw.insert_before(inst.id, before, Guarding::Keep)?;
        self.insert_after(k, after)?;
        Ok(())
    }

    /// A store or atomic to shared memory (`address` its address operand, `values` what it
    /// writes, `width` bytes each): a float's difference written, anything else's zeroed;
    /// nothing where the kernel's shared memory is not shadowed.
    pub(super) fn shared_write(
        &mut self,
        k: usize,
        address: Option<&Operand>,
        values: &[Operand],
        width: u32,
    ) -> Result<(), ValuesError> {
        let SharedMemory::Shadowed(shadow) = &self.shared else {
            return Ok(());
        };
        let shadow = shadow.clone();
        // A fusible product's value is never read: its difference is zeroed.
        let shadowed = !self.readers.contains(&k);
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (e, value) in values.iter().enumerate() {
            let offset = i64::from(width) * e as i64;
            let Some(a) = shadow.address(self.d, self.rw, address, offset, &mut before)? else {
                return Ok(()); // dynamic shared memory: nothing shadowed there
            };
            let float = match value {
                Operand::Reg(r) if shadowed => self.float_type(r).map(|t| (r, t)),
                _ => None,
            };
            if let Some((r, t)) = float {
                let s = self.shadow(r, t)?;
                let (hi, lo) = pair_of(value, Some(&s));
                let v = widen(self.rw, r, t, &mut after)?;
                let mut args = vec![("b32", reg(&a))];
                args.extend(shadow.arguments());
                args.extend([
                    ("b64", reg(&v)),
                    ("b64", hi),
                    ("b64", lo),
                    ("b32", word(u32::from(t == ValueType::F32))),
                ]);
                after.extend(call_ret(STORE_SHARED_FUNCTION, &args, None));
            } else {
                let mut args = vec![("b32", reg(&a))];
                args.extend(shadow.arguments());
                args.push(("b32", word(width)));
                after.extend(call_ret(CLEAR_SHARED_FUNCTION, &args, None));
            }
        }
        let id = self.d.insts[k].id;
        self.rw.insert_before(id, before, Guarding::Keep)?;
        self.insert_after(k, after)?;
        Ok(())
    }
}
