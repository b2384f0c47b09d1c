//! The rewrite of [`instrument`]: which instructions are sites, and the code inserted at each
//! (see the parent module's docs for what it measures).

use super::{
    flags, Instrumented, ShadowError, ShadowOptions, ShadowReport, ShadowSite, DEMOTION_FUNCTION,
    EXCEPTION_FUNCTION, SHADOW_GLOBAL, WORDS_PER_SITE,
};
use crate::decode::Decoded;
use crate::model::*;
use crate::op::{Arith, Op, OpKind, ValueType};
use crate::pass::demote::{f64_imm_to_f32, plan, Plan};
use crate::rewrite::{self, call, instruction, int, Guarding, Rewriter};
use crate::site;
use std::collections::HashMap;

/// The result type of a site, or `None` for an instruction that is not one: f32/f64 arithmetic
/// that rounds (`add sub mul fma div rcp sqrt rsqrt`, the approximate functions) and conversions
/// to f32/f64.
pub(crate) fn site_type(op: &Op) -> Option<ValueType> {
    let float = |t: ValueType| matches!(t, ValueType::F32 | ValueType::F64).then_some(t);
    match op.kind {
        OpKind::Arith(Arith::Add | Arith::Sub | Arith::Mul)
        | OpKind::Fma
        | OpKind::Div
        | OpKind::Rcp
        | OpKind::Sqrt
        | OpKind::Rsqrt
        | OpKind::Approx(_) => op.ty.and_then(float),
        OpKind::Convert { to, .. } => float(to),
        _ => None,
    }
}

/// Whether the demotion error applies to a site of this kind: f64 arithmetic that rounds.
pub(crate) fn demotion_kind(op: &Op) -> bool {
    op.ty == Some(ValueType::F64)
        && matches!(
            op.kind,
            OpKind::Arith(Arith::Add | Arith::Sub | Arith::Mul)
                | OpKind::Fma
                | OpKind::Div
                | OpKind::Rcp
                | OpKind::Sqrt
                | OpKind::Rsqrt
        )
}

/// The type of operand `j` (from 1) of a site as a float value, or `None` when it is not a
/// float (the integer source of a conversion).
pub(crate) fn operand_type(op: &Op, j: usize) -> Option<ValueType> {
    let t = match op.kind {
        OpKind::Convert { from, .. } => from,
        _ => op.ty?,
    };
    (j >= 1 && matches!(t, ValueType::F32 | ValueType::F64)).then_some(t)
}

/// The operand index of the divisor of a `div` (2) or `rcp` (1).
pub(crate) fn divisor(op: &Op) -> Option<usize> {
    match op.kind {
        OpKind::Div => Some(2),
        OpKind::Rcp => Some(1),
        _ => None,
    }
}

/// Every site of `module`, in index order, with the demotion plan where the error is measured,
/// and notes.
pub(crate) fn sites(
    module: &Module,
    options: &ShadowOptions,
) -> (Vec<ShadowSite>, Vec<Option<Plan>>, Vec<String>) {
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let mut out = Vec::new();
    let mut plans = Vec::new();
    let mut notes = Vec::new();
    for f in module.functions().filter(|f| f.body.is_some()) {
        let d = Decoded::of(f);
        let addresses = site::function_sites(f, &files);
        let fusible = fusible_pairs(&d);
        for (k, (id, address)) in addresses.into_iter().enumerate() {
            let op = &d.ops[k];
            let Some(value_type) = site_type(op) else {
                continue;
            };
            let index = out.len() as u32;
            let instrumented = options.only.as_ref().is_none_or(|r| r.contains(&index));
            let inst = d.insts[k];
            if fusible.contains(&k) {
                // Reading the product (or adding a use of it) would stop ptxas from fusing the
                // pair into one FMA, and the instrumented program would compute other bits.
                notes.push(format!(
                    "{address}: {}: part of a mul→add pair ptxas may fuse into one FMA; not measured, so the program keeps its bits",
                    inst.full_opcode()
                ));
                out.push(ShadowSite {
                    index,
                    site: address,
                    inst: id,
                    opcode: inst.full_opcode(),
                    value_type,
                    demotion: false,
                    exceptions: false,
                    instrumented,
                });
                plans.push(None);
                continue;
            }
            if !matches!(inst.operands.first(), Some(Operand::Reg(_))) {
                notes.push(format!(
                    "{address}: {} writes no single register; not measured",
                    inst.full_opcode()
                ));
            }
            let demotion_plan = if options.demotion && demotion_kind(op) {
                match plan(&d, k) {
                    Ok(p) if p.defines => Some(p),
                    Ok(_) => None,
                    Err((why, _)) => {
                        notes.push(format!(
                            "{address}: {}: no f32 form ({why}); demotion error not measured",
                            inst.full_opcode()
                        ));
                        None
                    }
                }
            } else {
                None
            };
            let single = matches!(inst.operands.first(), Some(Operand::Reg(_)));
            out.push(ShadowSite {
                index,
                site: address,
                inst: id,
                opcode: inst.full_opcode(),
                value_type,
                demotion: demotion_plan.is_some() && single,
                exceptions: options.exceptions && single,
                instrumented,
            });
            plans.push(demotion_plan.filter(|_| single));
        }
    }
    if let Some(r) = &options.only {
        let n = out.iter().filter(|s| s.instrumented).count();
        notes.push(format!(
            "sites {}..{} of {} instrumented ({n} sites)",
            r.start,
            r.end,
            out.len()
        ));
    }
    (out, plans, notes)
}

/// The instructions of `d` (by index) that ptxas may fuse into an FMA, which the
/// instrumentation must leave unread: every unrounded `mul` with an unrounded `add`/`sub` of its
/// type among its uses, directly or through a `neg` (ptxas folds the sign into the FMA), with
/// those `neg`s and `add`/`sub`s, and every other reader of the product. Broader than `inspect`'s contractible pairs
/// ([`crate::compare::contractible`], every use an add): a `mul` with other uses may still be
/// fused into its adds, and an added read must not change what ptxas decides.
fn fusible_pairs(d: &Decoded) -> std::collections::HashSet<usize> {
    let g = crate::graph::Graph::of(d, &crate::cfg::Cfg::build(d));
    let float = |k: usize| matches!(d.ops[k].ty, Some(ValueType::F32 | ValueType::F64));
    // Unrounded (no `.rn`, `.sat`): the operations ptxas is free to contract.
    let unrounded = |k: usize, kinds: &[Arith]| {
        let op = &d.ops[k];
        matches!(op.kind, OpKind::Arith(a) if kinds.contains(&a))
            && op.rounding.is_none()
            && !op.sat
            && float(k)
    };
    let users = |k: usize| -> Vec<usize> {
        g.uses_of(d.insts[k].id)
            .filter_map(|e| g.index_of(e.user))
            .filter(|&u| d.ops[u].ty == d.ops[k].ty)
            .collect()
    };
    let mut out = std::collections::HashSet::new();
    for k in 0..d.insts.len() {
        if !unrounded(k, &[Arith::Mul]) {
            continue;
        }
        let mut fused = Vec::new();
        for u in users(k) {
            if unrounded(u, &[Arith::Add, Arith::Sub]) {
                fused.push(u);
            } else if matches!(d.ops[u].kind, OpKind::Arith(Arith::Neg)) {
                let adds: Vec<usize> = users(u)
                    .into_iter()
                    .filter(|&w| unrounded(w, &[Arith::Add, Arith::Sub]))
                    .collect();
                if !adds.is_empty() {
                    fused.push(u);
                    fused.extend(adds);
                }
            }
        }
        if !fused.is_empty() {
            // Every other reader of the product too: its instrumentation would read the
            // product again, and ptxas weighs a product's uses when it decides to fuse.
            out.insert(k);
            out.extend(g.uses_of(d.insts[k].id).filter_map(|e| g.index_of(e.user)));
            out.extend(fused);
        }
    }
    out
}

/// Instruments `module` (left unchanged) with the demotion error and exception counting that
/// `options` ask for; see the module docs.
pub fn instrument(module: &Module, options: &ShadowOptions) -> Result<Instrumented, ShadowError> {
    for name in [SHADOW_GLOBAL, DEMOTION_FUNCTION, EXCEPTION_FUNCTION] {
        if module.items.iter().any(|i| match i {
            Item::Var(v) => v.name == name,
            Item::Function(f) => f.name == name,
            _ => false,
        }) {
            return Err(ShadowError::NameTaken(name.to_string()));
        }
    }
    let (sites, plans, notes) = sites(module, options);
    let mut out = module.clone();
    let records = u64::from(WORDS_PER_SITE) * (sites.len() as u64).max(1);
    let global = rewrite::add_global(&mut out, "u64", 8, SHADOW_GLOBAL, records);
    if global != SHADOW_GLOBAL {
        // A parameter or local has the name: the runtime could not reach the array by it.
        return Err(ShadowError::NameTaken(SHADOW_GLOBAL.to_string()));
    }
    let at = rewrite::first_function(&out);
    out.items.insert(
        at,
        Item::Function(prototype(DEMOTION_FUNCTION, &[".b32", ".b64", ".b64"])),
    );
    out.items.insert(
        at,
        Item::Function(prototype(EXCEPTION_FUNCTION, &[".b32", ".b32"])),
    );

    let mut k = 0;
    while k < sites.len() {
        let function = sites[k].site.function.clone();
        let Some(f) = module
            .functions()
            .find(|f| f.name == function && f.body.is_some())
        else {
            k += 1;
            continue;
        };
        let d = Decoded::of(f);
        let position: HashMap<InstId, usize> =
            d.insts.iter().enumerate().map(|(j, i)| (i.id, j)).collect();
        let mut rw = Rewriter::new(&out, &function)?;
        let mut scratch = Scratch::new(f);
        while k < sites.len() && sites[k].site.function == function {
            let s = &sites[k];
            if let (true, Some(&j)) = (s.instrumented, position.get(&s.inst)) {
                if s.demotion {
                    if let Some(p) = &plans[k] {
                        demotion(&mut rw, &mut scratch, &d, j, s.index, p)?;
                    }
                }
                if s.exceptions {
                    exceptions(&mut rw, &mut scratch, &d, j, s.index)?;
                }
            }
            k += 1;
        }
        rw.apply(&mut out)?;
    }
    Ok(Instrumented {
        module: out,
        report: ShadowReport {
            global,
            words_per_site: WORDS_PER_SITE,
            options: options.clone(),
            sites,
            notes,
        },
    })
}

/// Registers reused by every site of a function (each site's code defines them before reading
/// them, and none lives past the site), and the function's label prefix.
struct Scratch {
    regs: HashMap<(&'static str, usize), String>,
    labels: String,
}

impl Scratch {
    fn new(f: &Function) -> Scratch {
        let mut labels = String::from("$mantissa_shadow_");
        let taken = |p: &str| {
            f.body
                .iter()
                .flatten()
                .any(|s| matches!(s, Statement::Label(l, _) if l.starts_with(p)))
        };
        while taken(&labels) {
            labels.push('x');
        }
        Scratch {
            regs: HashMap::new(),
            labels,
        }
    }

    /// The `n`-th scratch register of type `ty`.
    fn reg(
        &mut self,
        rw: &mut Rewriter,
        ty: &'static str,
        n: usize,
    ) -> Result<String, ShadowError> {
        if let Some(r) = self.regs.get(&(ty, n)) {
            return Ok(r.clone());
        }
        let r = rw.reg(ty)?;
        self.regs.insert((ty, n), r.clone());
        Ok(r)
    }
}

fn reg(name: &str) -> Operand {
    Operand::Reg(name.to_string())
}

/// The register an instruction writes (sites write one: [`sites`] checks).
fn dest(inst: &Instruction) -> String {
    match inst.operands.first() {
        Some(Operand::Reg(r)) => r.clone(),
        _ => String::new(),
    }
}

/// The first scratch register number of saved operands (the demotion error's are 0..=3).
const SAVED: usize = 4;

/// The demotion error at instruction `j` of `d`: its f64 operands rounded to f32 before it, its
/// f32 form and the call after it, all under its guard.
fn demotion(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    d: &Decoded,
    j: usize,
    index: u32,
    p: &Plan,
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
    form.operands[0] = reg(&r32);
    let mut after = vec![
        Statement::Inst(form),
        instruction("cvt", &["f64", "f32"], vec![reg(&wide), reg(&r32)]),
    ];
    after.extend(call(
        DEMOTION_FUNCTION,
        &[
            ("b32", int(index.into())),
            ("b64", reg(&dest(inst))),
            ("b64", reg(&wide)),
        ],
    ));
    rw.insert_before(inst.id, before, Guarding::Keep)?;
    rw.insert_after(inst.id, after, Guarding::Keep)?;
    Ok(())
}

/// A typed float zero.
fn zero(t: ValueType) -> Operand {
    Operand::Imm(match t {
        ValueType::F32 => Imm::F32(0),
        _ => Imm::F64(0),
    })
}

/// Whether a float immediate of type `t` is NaN, ±inf, ±0.
fn imm_class(imm: &Imm) -> (bool, bool, bool) {
    let x = match *imm {
        Imm::F32(b) => f64::from(f32::from_bits(b)),
        Imm::F64(b) => f64::from_bits(b),
        Imm::Int { value, .. } => value as f64,
    };
    (x.is_nan(), x.is_infinite(), x == 0.0)
}

/// The exception counting at instruction `j` of `d`: operands the instruction overwrites saved
/// before it; after it, where its guard held, the fast path and the slow path.
fn exceptions(
    rw: &mut Rewriter,
    scratch: &mut Scratch,
    d: &Decoded,
    j: usize,
    index: u32,
) -> Result<(), ShadowError> {
    let inst = d.insts[j];
    let op = &d.ops[j];
    let Some(t) = site_type(op) else {
        return Ok(());
    };
    let result = dest(inst);
    let ty = t.name();
    let skip = format!("{}{index}", scratch.labels);
    let fast = scratch.reg(rw, "pred", 0)?;
    let q = scratch.reg(rw, "pred", 1)?;
    let bits = scratch.reg(rw, "b32", 0)?;
    let part = scratch.reg(rw, "b32", 1)?;

    let mut before = Vec::new();
    let mut after = Vec::new();
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
    after.push(instruction(
        "testp",
        &["normal", ty],
        vec![reg(&fast), reg(&result)],
    ));
    after.push(instruction(
        "setp",
        &["eq", "or", ty],
        vec![reg(&fast), reg(&result), zero(t), reg(&fast)],
    ));
    let mut taken = instruction("bra", &[], vec![Operand::Symbol(skip.clone())]);
    if let Statement::Inst(b) = &mut taken {
        b.guard = Some(Guard {
            negated: false,
            reg: fast.clone(),
        });
    }
    after.push(taken);

    // The slow path: the flags, one predicate at a time.
    let mut constant = 0u32;
    let mut first = true;
    let mut set = |after: &mut Vec<Statement>, test: Statement, flag: u32| {
        after.push(test);
        let target = if first { &bits } else { &part };
        after.push(instruction(
            "selp",
            &["b32"],
            vec![reg(target), int(flag.into()), int(0), reg(&q)],
        ));
        if !first {
            after.push(instruction(
                "or",
                &["b32"],
                vec![reg(&bits), reg(&bits), reg(&part)],
            ));
        }
        first = false;
    };
    let testp = |what: &str, t: ValueType, x: &str| {
        instruction("testp", &[what, t.name()], vec![reg(&q), reg(x)])
    };
    set(&mut after, testp("notanumber", t, &result), flags::NAN);
    set(&mut after, testp("infinite", t, &result), flags::INF);
    set(&mut after, testp("subnormal", t, &result), flags::SUBNORMAL);
    for (o, operand) in inst.operands.iter().enumerate().skip(1) {
        let Some(ot) = operand_type(op, o) else {
            continue;
        };
        let x = match operand {
            Operand::Reg(r) if *r == result => {
                // The instruction overwrites this operand: read a copy taken before it.
                let ty = if ot == ValueType::F32 { "f32" } else { "f64" };
                // Apart from the demotion error's registers (0..=3), which live as long.
                let saved = scratch.reg(rw, ty, SAVED + o)?;
                before.push(instruction("mov", &[ot.name()], vec![reg(&saved), reg(r)]));
                saved
            }
            Operand::Reg(r) => r.clone(),
            Operand::Imm(imm) => {
                let (nan, inf, is_zero) = imm_class(imm);
                constant |= if nan { flags::OPERAND_NAN } else { 0 }
                    | if inf { flags::OPERAND_INF } else { 0 }
                    | if is_zero && divisor(op) == Some(o) {
                        flags::DIV_BY_ZERO
                    } else {
                        0
                    };
                continue;
            }
            _ => continue,
        };
        set(&mut after, testp("notanumber", ot, &x), flags::OPERAND_NAN);
        set(&mut after, testp("infinite", ot, &x), flags::OPERAND_INF);
        if divisor(op) == Some(o) {
            let eq = instruction("setp", &["eq", ot.name()], vec![reg(&q), reg(&x), zero(ot)]);
            set(&mut after, eq, flags::DIV_BY_ZERO);
        }
    }
    if constant != 0 {
        after.push(instruction(
            "or",
            &["b32"],
            vec![reg(&bits), reg(&bits), int(constant.into())],
        ));
    }
    after.extend(call(
        EXCEPTION_FUNCTION,
        &[("b32", int(index.into())), ("b32", reg(&bits))],
    ));
    after.push(Statement::Label(skip, SrcLine(0)));
    if !before.is_empty() {
        rw.insert_before(inst.id, before, Guarding::Keep)?;
    }
    rw.insert_after(inst.id, after, Guarding::Ignore)?;
    Ok(())
}

/// `.extern .func NAME(.param TY NAME_param_0, ...);`, as NVRTC declares the runtime's
/// definitions (the merge checks the two agree).
fn prototype(name: &str, types: &[&str]) -> Function {
    Function {
        linkage: vec![".extern".into()],
        kind: FunctionKind::Func,
        name: name.into(),
        returns: None,
        params: types
            .iter()
            .enumerate()
            .map(|(k, t)| Param::new(t, &format!("{name}_param_{k}")))
            .collect(),
        directives: Vec::new(),
        body: None,
        line: SrcLine(0),
    }
}
