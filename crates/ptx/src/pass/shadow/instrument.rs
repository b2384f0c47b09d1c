//! The rewrite of [`instrument`]: which instructions are sites, and the code inserted at each
//! (see the parent module's docs for what it measures).

use super::{
    Instrumented, ShadowError, ShadowOptions, ShadowReport, ShadowSite, COPIES, DEMOTION_FUNCTION,
    EXCEPTION_FUNCTION, FLUSH_FUNCTION, SHADOW_GLOBAL, WORDS_PER_SITE,
};
use crate::decode::Decoded;
use crate::model::*;
use crate::op::{Arith, Op, OpKind, ValueType};
use crate::pass::demote::{plan, Plan};
use crate::rewrite::{self, instruction, Guarding, Rewriter};
use crate::site;
use std::collections::HashMap;

mod demotion;

pub use demotion::ACCUMULATED_PER_FUNCTION;
mod exceptions;
pub(crate) mod quotient;
pub(crate) mod splice;

/// Names a `.local` array of function `f` must not take (it would shadow, or clash): its
/// parameters and variables, and every module-scope name.
pub(crate) fn local_names<'m>(
    module: &'m Module,
    f: &'m Function,
) -> std::collections::HashSet<&'m str> {
    f.params
        .iter()
        .map(|p| p.name.as_str())
        .chain(f.body.iter().flatten().filter_map(|s| match s {
            Statement::Var(v) => Some(v.name.as_str()),
            _ => None,
        }))
        .chain(module.items.iter().filter_map(|i| match i {
            Item::Var(v) => Some(v.name.as_str()),
            Item::Function(g) => Some(g.name.as_str()),
            _ => None,
        }))
        .collect()
}

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
/// instrumentation must leave unread: every *product* with an unrounded `add`/`sub` of its type
/// among its uses, directly or through a `neg` (ptxas folds the sign into the FMA), with those
/// `neg`s and `add`/`sub`s, and every other reader of the product. Products are unrounded `mul`s
/// and the f32 divisions and reciprocals that are not rounded (`div.approx`, `div.full`,
/// `rcp.approx`): ptxas builds those from `MUFU.RCP` and a final `FMUL`, which it fuses with the
/// add like any product (seen in SASS: `div.approx.ftz.f32` then `add.ftz.f32` is one `FFMA` in
/// nbody_f32's energy loop under the fast flag set). Broader than `inspect`'s contractible pairs
/// ([`crate::compare::contractible`], every use an add): a product with other uses may still be
/// fused into its adds, and an added read must not change what ptxas decides.
fn fusible_pairs(d: &Decoded) -> std::collections::HashSet<usize> {
    fusible_spans(d).into_iter().flatten().collect()
}

/// Whether ptxas may fold the result of `op` into an add as an FMA's product: an unrounded float
/// `mul`, or an f32 `div`/`rcp` without `.rn` (built from `MUFU.RCP` and a final multiply).
pub(crate) fn is_fusible_product(op: &Op) -> bool {
    let float = matches!(op.ty, Some(ValueType::F32 | ValueType::F64));
    let unrounded = op.rounding.is_none() && !op.sat;
    (op.kind == OpKind::Arith(Arith::Mul) && unrounded && float)
        || (matches!(op.kind, OpKind::Div | OpKind::Rcp)
            && op.ty == Some(ValueType::F32)
            && op.rounding.is_none())
}

/// Per product ptxas may fuse (see [`fusible_pairs`]): the instructions left unread with it,
/// the product first.
pub(crate) fn fusible_spans(d: &Decoded) -> Vec<Vec<usize>> {
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
    let product = |k: usize| is_fusible_product(&d.ops[k]);
    let mut out = Vec::new();
    for k in 0..d.insts.len() {
        if !product(k) {
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
            let mut span = vec![k];
            span.extend(g.uses_of(d.insts[k].id).filter_map(|e| g.index_of(e.user)));
            span.extend(fused);
            out.push(span);
        }
    }
    out
}

/// Instruments `module` (left unchanged) with the demotion error and exception counting that
/// `options` ask for; see the module docs.
pub fn instrument(module: &Module, options: &ShadowOptions) -> Result<Instrumented, ShadowError> {
    instrument_with(module, options, ACCUMULATED_PER_FUNCTION, false)
}

/// [`instrument`] with at most `registers` accumulated sites per function in registers (the
/// others in its `.local` array), and sites outside loops accumulated too when
/// `outside_loops`: tests reach every form of the code with these.
pub(crate) fn instrument_with(
    module: &Module,
    options: &ShadowOptions,
    registers: usize,
    outside_loops: bool,
) -> Result<Instrumented, ShadowError> {
    for name in [
        SHADOW_GLOBAL,
        DEMOTION_FUNCTION,
        EXCEPTION_FUNCTION,
        FLUSH_FUNCTION,
    ] {
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
    let records = u64::from(WORDS_PER_SITE) * u64::from(COPIES) * (sites.len() as u64).max(1);
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
    out.items.insert(
        at,
        Item::Function(prototype(FLUSH_FUNCTION, &[".b32", ".b64", ".b64", ".b64"])),
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
        let local_names = local_names(module, f);
        let position: HashMap<InstId, usize> =
            d.insts.iter().enumerate().map(|(j, i)| (i.id, j)).collect();
        let mut rw = Rewriter::new(&out, &function)?;
        let mut scratch = Scratch::new(f);
        let first = k;
        while k < sites.len() && sites[k].site.function == function {
            k += 1;
        }
        let here = &sites[first..k];
        let at = |s: &ShadowSite| position.get(&s.inst).copied().filter(|_| s.instrumented);
        let measured: Vec<(usize, u32)> = here
            .iter()
            .zip(&plans[first..k])
            .filter(|(s, p)| s.demotion && p.is_some())
            .filter_map(|(s, _)| Some((at(s)?, s.index)))
            .collect();
        let chosen = demotion::accumulated(&d, &measured, outside_loops);
        let accumulators =
            demotion::Accumulators::new(&mut rw, &d, &chosen, registers.min(chosen.len()), |n| {
                local_names.contains(n)
            })?;
        let mut sections = HashMap::new();
        for (s, p) in here.iter().zip(&plans[first..k]) {
            if let (Some(j), true, Some(p)) = (at(s), s.demotion, p) {
                let acc = accumulators.of(s.index);
                let section = demotion::measure(
                    &mut rw,
                    &mut scratch,
                    &d,
                    j,
                    s.index,
                    p,
                    acc,
                    &accumulators,
                )?;
                sections.insert(s.index, section);
            }
        }
        let rare = accumulators.close_groups(&mut rw, &mut scratch, &d, sections)?;
        let counted: Vec<(usize, u32)> = here
            .iter()
            .filter(|s| s.exceptions)
            .filter_map(|s| Some((at(s)?, s.index)))
            .collect();
        let mut slow = exceptions::instrument(&mut rw, &mut scratch, &d, &counted)?;
        slow.extend(rare);
        let flush = accumulators.flush(&mut rw, &mut scratch)?;
        let init = accumulators.init();
        let mut at_end = Vec::new();
        if !flush.is_empty() {
            for (i, op) in d.insts.iter().zip(&d.ops) {
                if op.is_return() {
                    rw.insert_before(i.id, flush.clone(), Guarding::Keep)?;
                }
            }
        }
        if (!flush.is_empty() || !slow.is_empty()) && splice::falls_off_the_end(&d) {
            // Control that ran off the end must still flush, and not run into the slow paths.
            at_end.extend(flush);
            at_end.push(instruction("ret", &[], Vec::new()));
        }
        at_end.extend(slow);
        rw.apply(&mut out)?;
        splice::splice(&mut out, &function, init, at_end);
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

/// `s` under `@pred` (`@!pred` where `negated`).
fn with_guard(mut s: Statement, negated: bool, pred: &str) -> Statement {
    if let Statement::Inst(i) = &mut s {
        i.guard = Some(Guard {
            negated,
            reg: pred.to_string(),
        });
    }
    s
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
