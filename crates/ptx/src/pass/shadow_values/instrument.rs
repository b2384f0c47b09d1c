//! The rewrite of [`instrument`]: per instruction, the shadow code (see the parent module's
//! docs for what is propagated, re-seeded and measured).

use super::emit::{
    call_ret, copy_shadow, f64_imm, imm_value, pair_of, reg, seed, set_shadow, widen, word, Arg,
    Shadow, Shadows,
};
use super::records::{add_slot_table, Records};
use super::shared::{self, SharedMemory};
use super::{
    how, site_function, Instrumented, ReseedPoint, Treatment, ValueSite, ValuesError, ValuesReport,
    CLEAR_FUNCTION, COPIES, LOAD_FUNCTION, MAX_BUFFERS, RESEED_FUNCTION, SLOTS_GLOBAL,
    STORE_FUNCTION, TABLE_GLOBAL, VALUES_GLOBAL, WORDS_PER_RECORD,
};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::graph::Graph;
use crate::model::*;
use crate::op::{Arith, Op, OpKind, Rounding, Space, ValueType};
use crate::pass::shadow::instrument::splice::{falls_off_the_end, splice};
use crate::pass::shadow::instrument::{is_fusible_product, local_names, sites as shadow_sites};
use crate::pass::shadow::{ShadowOptions, ShadowSite};
use crate::rewrite::{self, instruction, int, Guarding, Rewriter};
use crate::site::{self, Site};
use std::collections::{HashMap, HashSet};

/// Instruments `module` (left unchanged) with shadow values; see the module docs.
pub fn instrument(module: &Module) -> Result<Instrumented, ValuesError> {
    instrument_with(module, false)
}

/// [`instrument`], with every site, load and re-seed point given a thread record when
/// `records_everywhere` (outside loops too): the interpreter, which has no warp operations,
/// runs every form of the code with it, and the GPU tests compare the two forms' statistics.
pub fn instrument_with(
    module: &Module,
    records_everywhere: bool,
) -> Result<Instrumented, ValuesError> {
    let prototypes = super::runtime_prototypes();
    let taken = |name: &str| {
        module.items.iter().any(|i| match i {
            Item::Var(v) => v.name == name,
            Item::Function(f) => f.name == name,
            _ => false,
        })
    };
    for name in [VALUES_GLOBAL, TABLE_GLOBAL, SLOTS_GLOBAL]
        .into_iter()
        .chain(prototypes.iter().map(|p| p.name.as_str()))
    {
        if taken(name) {
            return Err(ValuesError::NameTaken(name.to_string()));
        }
    }
    // The demotion/exception pass's enumeration, so that index k is the same instruction in
    // both reports; the sites it leaves unmeasured although they write one register are the
    // members of fusible mul→add pairs.
    let (shadow, _, _) = shadow_sites(module, &ShadowOptions::all());
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let mut out = module.clone();
    let mut state = State {
        sites: shadow
            .iter()
            .map(|s| ValueSite {
                index: s.index,
                site: s.site.clone(),
                inst: s.inst,
                opcode: s.opcode.clone(),
                value_type: s.value_type,
                treatment: Treatment::Skipped("not reached".into()),
            })
            .collect(),
        reseeds: Vec::new(),
        notes: Vec::new(),
    };
    // The global record of every thread-record slot, function after function.
    let mut slot_table: Vec<u32> = Vec::new();
    for f in module.functions().filter(|f| f.body.is_some()) {
        let d = Decoded::of(f);
        let addresses: Vec<Site> = site::function_sites(f, &files)
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        let mut rw = Rewriter::new(&out, &f.name)?;
        let records = Records::new(&d, &mut rw, records_everywhere)?;
        let area_name = rewrite::unique_module_name(&out, "__mantissa_sv_shared");
        let plan = shared::plan(module, f, &d, &mut rw, &area_name)?;
        state.notes.extend(plan.note);
        if let Some(area) = plan.area {
            shared::declare_area(&mut out, &f.name, area);
        }
        let mut fun = FunctionRewrite::new(&d, &shadow, &addresses, &mut rw, records);
        fun.shared = plan.memory;
        for k in 0..d.insts.len() {
            fun.instruction(k, &mut state)?;
        }
        let records = std::mem::take(&mut fun.records);
        let count = records.slots.len() as u32;
        if count == 0 && plan.init.is_empty() {
            rw.apply(&mut out)?;
            continue;
        }
        // The shadow area first: its zeroing ends in the barrier every thread must reach.
        let mut init = plan.init;
        if count == 0 {
            rw.apply(&mut out)?;
            splice(&mut out, &f.name, init, Vec::new());
            continue;
        }
        // The thread records: a `.local` array zeroed at entry, flushed before every exit.
        init.extend(records.entry(&local_names(module, f)));
        let flush = records.flush(slot_table.len() as u32);
        slot_table.extend(&records.slots);
        for (i, op) in d.insts.iter().zip(&d.ops) {
            if op.is_return() {
                rw.insert_before(i.id, flush.clone(), Guarding::Keep)?;
            }
        }
        let mut at_end = Vec::new();
        if falls_off_the_end(&d) {
            at_end.extend(flush);
            at_end.push(instruction("ret", &[], Vec::new()));
        }
        rw.apply(&mut out)?;
        splice(&mut out, &f.name, init, at_end);
    }

    let records = (state.sites.len() + state.reseeds.len()).max(1) as u64;
    let global = rewrite::add_global(
        &mut out,
        "u64",
        8,
        VALUES_GLOBAL,
        u64::from(WORDS_PER_RECORD) * u64::from(COPIES) * records,
    );
    let table = rewrite::add_global(&mut out, "u64", 8, TABLE_GLOBAL, 1 + 3 * MAX_BUFFERS as u64);
    let slots = add_slot_table(&mut out, &slot_table);
    for (got, want) in [
        (&global, VALUES_GLOBAL),
        (&table, TABLE_GLOBAL),
        (&slots, SLOTS_GLOBAL),
    ] {
        if got != want {
            // A parameter or local has the name: the runtime could not reach the array by it.
            return Err(ValuesError::NameTaken(want.to_string()));
        }
    }
    let at = rewrite::first_function(&out);
    for p in prototypes.into_iter().rev() {
        out.items.insert(at, Item::Function(p));
    }
    let fused = state
        .sites
        .iter()
        .filter(|s| matches!(s.treatment, Treatment::Fused(_)))
        .count();
    if fused > 0 {
        state.notes.push(format!(
            "{fused} sites belong to mul→add pairs ptxas may fuse into one FMA: their shadows are propagated without reading the product, and their local error is not measured"
        ));
    }
    Ok(Instrumented {
        module: out,
        report: ValuesReport {
            global,
            table,
            words_per_record: WORDS_PER_RECORD,
            sites: state.sites,
            reseeds: state.reseeds,
            notes: state.notes,
        },
    })
}

/// What the walk over the module collects.
pub(super) struct State {
    sites: Vec<ValueSite>,
    reseeds: Vec<ReseedPoint>,
    notes: Vec<String>,
}

/// The rewrite of one function.
pub(super) struct FunctionRewrite<'a, 'f> {
    records: Records,
    pub(super) d: &'a Decoded<'f>,
    addresses: &'a [Site],
    pub(super) rw: &'a mut Rewriter,
    /// How its shared memory is treated ([`shared::plan`]).
    pub(super) shared: SharedMemory,
    shadows: Shadows,
    /// Site of each instruction id of this function.
    sites: HashMap<InstId, &'a ShadowSite>,
    /// Instructions (by index) that are the `mul` of a fusible pair: their result is never read.
    products: HashSet<usize>,
    /// Instructions (by index) that read a fusible product: they read no operand value.
    pub(super) readers: HashSet<usize>,
    /// Instructions (by index) between a fusible product and the last instruction of its span,
    /// in one basic block and under the same guard: their code goes after that last one.
    deferred: HashMap<usize, usize>,
    /// Kernel (its `ld.param`s are inputs) or device function.
    is_kernel: bool,
}

impl<'a, 'f> FunctionRewrite<'a, 'f> {
    fn new(
        d: &'a Decoded<'f>,
        shadow: &'a [ShadowSite],
        addresses: &'a [Site],
        rw: &'a mut Rewriter,
        records: Records,
    ) -> Self {
        let name = &d.function.name;
        let sites: HashMap<InstId, &ShadowSite> = shadow
            .iter()
            .filter(|s| &s.site.function == name)
            .map(|s| (s.inst, s))
            .collect();
        let fusible = |k: usize| {
            let inst = d.insts[k];
            sites.get(&inst.id).is_some_and(|s| {
                !s.exceptions && matches!(inst.operands.first(), Some(Operand::Reg(_)))
            })
        };
        let products: HashSet<usize> = (0..d.insts.len())
            .filter(|&k| fusible(k) && is_fusible_product(&d.ops[k]))
            .collect();
        let mut readers = HashSet::new();
        if !products.is_empty() {
            let g = Graph::of(d, &Cfg::build(d));
            for &m in &products {
                readers.extend(g.uses_of(d.insts[m].id).filter_map(|e| g.index_of(e.user)));
            }
        }
        let deferred = deferred_to_span_ends(d);
        FunctionRewrite {
            records,
            d,
            addresses,
            rw,
            deferred,
            shadows: Shadows::default(),
            sites,
            products,
            readers,
            is_kernel: d.function.kind == FunctionKind::Entry,
            shared: SharedMemory::NotShadowed(shared::DYNAMIC.into()),
        }
    }

    /// The declared float type (f32 or f64) of register `name`.
    pub(super) fn float_type(&self, name: &str) -> Option<ValueType> {
        self.d
            .regs
            .type_of(name)
            .filter(|t| matches!(t, ValueType::F32 | ValueType::F64))
    }

    /// How instruction `k` counts into global record `record` through the runtime's
    /// `function` ([`Records::arg`]).
    pub(super) fn record_arg(
        &mut self,
        k: usize,
        record: u32,
        function: &str,
        code: &mut Vec<Statement>,
    ) -> Result<(Operand, String), ValuesError> {
        self.records.arg(self.rw, k, record, function, code)
    }

    pub(super) fn shadow(&mut self, name: &str, ty: ValueType) -> Result<Shadow, ValuesError> {
        self.shadows.of(self.rw, name, ty)
    }

    /// The float registers instruction `k` writes, with their types.
    fn float_defs(&self, k: usize) -> Vec<(String, ValueType)> {
        self.d
            .defs(k)
            .iter()
            .filter_map(|&r| {
                let t = self.d.regs.value_type(r)?;
                matches!(t, ValueType::F32 | ValueType::F64).then(|| (self.d.regs.name(r), t))
            })
            .collect()
    }

    fn instruction(&mut self, k: usize, state: &mut State) -> Result<(), ValuesError> {
        let id = self.d.insts[k].id;
        if let Some(s) = self.sites.get(&id).copied() {
            let treatment = self.site(k, s)?;
            state.sites[s.index as usize].treatment = treatment;
        } else if !self.float_defs(k).is_empty() {
            self.definition(k, state)?;
        }
        self.memory_write(k)
    }

    /// A site: propagated through the runtime, or re-seeded.
    fn site(&mut self, k: usize, s: &ShadowSite) -> Result<Treatment, ValuesError> {
        let inst = self.d.insts[k];
        let op = &self.d.ops[k];
        let Some(Operand::Reg(dest)) = inst.operands.first() else {
            return Ok(Treatment::Skipped("writes no single register".into()));
        };
        let Some(dt) = self.float_type(dest) else {
            return Ok(Treatment::Skipped(format!(
                "its result register {dest} is not declared f32 or f64 (no shadow)"
            )));
        };
        let (code, operands): (u32, &[usize]) = match &op.kind {
            OpKind::Arith(Arith::Add) => (how::ADD, &[1, 2]),
            OpKind::Arith(Arith::Sub) => (how::SUB, &[1, 2]),
            OpKind::Arith(Arith::Mul) => (how::MUL, &[1, 2]),
            OpKind::Fma => (how::FMA, &[1, 2, 3]),
            OpKind::Div => (how::DIV, &[1, 2]),
            OpKind::Rcp => (how::RCP, &[1]),
            OpKind::Sqrt => (how::SQRT, &[1]),
            OpKind::Rsqrt => (how::RSQRT, &[1]),
            OpKind::Convert { from, to }
                if matches!(from, ValueType::F32 | ValueType::F64) && !op.sat =>
            {
                match op.rounding.filter(|r| r.is_integral()) {
                    Some(r) if from == to => (how::ROUND | (mode(r) << how::MODE_SHIFT), &[1]),
                    _ => (how::CONVERT, &[1]),
                }
            }
            OpKind::Convert { .. } if op.sat => {
                return self.reseed_site(k, s.index, "cvt.sat clamps its result");
            }
            OpKind::Convert { .. } => {
                return self.reseed_site(
                    k,
                    s.index,
                    "a conversion from an integer or a narrower float",
                );
            }
            OpKind::Approx(_) => {
                return self.reseed_site(
                    k,
                    s.index,
                    "an approximate function, measured as one unit",
                );
            }
            other => {
                let why = format!("{other:?} has no shadow rule");
                return self.reseed_site(k, s.index, &why);
            }
        };
        let product = self.products.contains(&k);
        let fused = product || self.readers.contains(&k);
        let mut before = Vec::new();
        let mut args = Vec::new();
        for &o in operands {
            let arg = match inst.operands.get(o) {
                Some(Operand::Reg(r)) => {
                    let Some(t) = self.float_type(r) else {
                        let why = format!("operand {r} is not declared f32 or f64 (no shadow)");
                        return self.reseed_site(k, s.index, &why);
                    };
                    let sh = self.shadow(r, t)?;
                    if fused {
                        Arg::shadow_only(&sh)
                    } else {
                        // Taken before the instruction, which may overwrite its operand.
                        let w = widen(self.rw, r, t, &mut before)?;
                        let (hi, lo) = pair_of(&Operand::Reg(r.clone()), Some(&sh));
                        Arg {
                            value: reg(&w),
                            hi,
                            lo,
                        }
                    }
                }
                Some(Operand::Imm(imm)) => match imm_value(imm) {
                    Some(x) => Arg::constant(x),
                    None => return self.reseed_site(k, s.index, "an integer immediate"),
                },
                _ => return self.reseed_site(k, s.index, "an operand that is not a value"),
            };
            args.push(arg);
        }
        args.resize(3, Arg::none());

        let mut after = Vec::new();
        let mut how = code;
        if dt == ValueType::F32 {
            how |= how::F32;
        }
        if fused {
            how |= how::NO_LOCAL;
        }
        let result = if product {
            how |= how::NO_VALUE;
            f64_imm(0.0)
        } else {
            reg(&widen(self.rw, dest, dt, &mut after)?)
        };
        let function = site_function(code, dt == ValueType::F32);
        let (record, function) = self.record_arg(k, s.index, &function, &mut after)?;
        let mut call_args = vec![("b64", record), ("b32", word(how))];
        for a in args {
            call_args.extend([("b64", a.value), ("b64", a.hi), ("b64", a.lo)]);
        }
        call_args.push(("b64", result));
        let pair = [self.rw.reg("f64")?, self.rw.reg("f64")?];
        after.extend(call_ret(&function, &call_args, Some(&pair)));
        let to = self.shadow(dest, dt)?;
        set_shadow(&to, &pair, &mut after);
        if product {
            // The product's shadow needs only its operands' shadows, so it is computed before
            // the multiply: code (a call above all) between the multiply and its add would stop
            // ptxas from fusing them (seen in the SASS of gauss.cu and nbody.cu).
            before.extend(after);
            self.rw.insert_before(inst.id, before, Guarding::Keep)?;
        } else {
            if !before.is_empty() {
                self.rw.insert_before(inst.id, before, Guarding::Keep)?;
            }
            self.insert_after(k, after)?;
        }
        Ok(if product {
            Treatment::Fused(
                "the product of a fusible pair: its shadow comes from its operands' shadows, its value is not read (executions only)".into(),
            )
        } else if fused {
            Treatment::Fused(
                "reads a fusible product: shadow propagated, accumulated error measured, no local error".into(),
            )
        } else {
            Treatment::Propagated
        })
    }

    /// Inserts `after` after instruction `k`, or after the end of the fusible span `k` lies in
    /// ([`deferred_to_span_ends`]).
    pub(super) fn insert_after(
        &mut self,
        k: usize,
        after: Vec<Statement>,
    ) -> Result<(), ValuesError> {
        // Spans may chain (a span's end inside the next one): follow to the last end.
        let mut at = k;
        while let Some(&end) = self.deferred.get(&at) {
            at = end;
        }
        self.rw
            .insert_after(self.d.insts[at].id, after, Guarding::Keep)?;
        Ok(())
    }

    /// A site whose shadow is re-seeded from its value, counted in its own record.
    fn reseed_site(&mut self, k: usize, index: u32, why: &str) -> Result<Treatment, ValuesError> {
        self.reseed(k, index)?;
        Ok(Treatment::Reseeded(why.to_string()))
    }

    /// shadow := value for every float register instruction `k` writes, and one count into
    /// `record`, after the instruction and under its guard.
    fn reseed(&mut self, k: usize, record: u32) -> Result<(), ValuesError> {
        let mut after = Vec::new();
        for (name, t) in self.float_defs(k) {
            let to = self.shadow(&name, t)?;
            seed(&to, &reg(&name), t, &mut after);
        }
        let (record, function) = self.record_arg(k, record, RESEED_FUNCTION, &mut after)?;
        after.extend(call_ret(&function, &[("b64", record)], None));
        self.insert_after(k, after)?;
        Ok(())
    }

    /// A new re-seed point at instruction `k`; its record.
    pub(super) fn reseed_point(
        &self,
        k: usize,
        reason: &str,
        conditional: bool,
        state: &mut State,
    ) -> u32 {
        let record = (state.sites.len() + state.reseeds.len()) as u32;
        let inst = self.d.insts[k];
        state.reseeds.push(ReseedPoint {
            record,
            site: self.addresses[k].clone(),
            inst: inst.id,
            opcode: inst.full_opcode(),
            reason: reason.to_string(),
            conditional,
        });
        record
    }

    /// A definition of a float register that is not a site.
    fn definition(&mut self, k: usize, state: &mut State) -> Result<(), ValuesError> {
        let inst = self.d.insts[k];
        let op = &self.d.ops[k];
        let dest = match inst.operands.first() {
            Some(Operand::Reg(r)) => self.float_type(r).map(|t| (r.clone(), t)),
            _ => None,
        };
        let src = inst.operands.get(1);
        let mut after = Vec::new();
        match (&op.kind, &dest) {
            (OpKind::Move { reinterpret: false }, Some((d, t))) => match src {
                Some(Operand::Reg(r)) if self.float_type(r) == Some(*t) => {
                    let from = self.shadow(r, *t)?;
                    let to = self.shadow(d, *t)?;
                    copy_shadow(
                        &to,
                        pair_of(&Operand::Reg(r.clone()), Some(&from)),
                        &mut after,
                    );
                }
                Some(Operand::Imm(imm)) if imm_value(imm).is_some() => {
                    let to = self.shadow(d, *t)?;
                    seed(&to, &Operand::Imm(*imm), *t, &mut after);
                }
                _ => return self.reseed_at(k, "bits moved from a non-float register", state),
            },
            (OpKind::Arith(Arith::Neg | Arith::Abs), Some((d, t))) => {
                let Some(Operand::Reg(r)) = src.filter(|o| match o {
                    Operand::Reg(r) => self.float_type(r) == Some(*t),
                    _ => false,
                }) else {
                    return self.reseed_at(k, "neg/abs of a non-float operand", state);
                };
                let from = self.shadow(r, *t)?;
                let to = self.shadow(d, *t)?;
                let abs = op.kind == OpKind::Arith(Arith::Abs);
                self.sign(&to, &from, abs, &mut after)?;
            }
            (OpKind::Arith(Arith::Min | Arith::Max), Some((d, t))) => {
                return self.min_max(k, d, *t, state);
            }
            (OpKind::Select, Some((d, t))) => {
                let mut pairs = Vec::new();
                for o in &inst.operands[1..3] {
                    match o {
                        Operand::Reg(r) if self.float_type(r) == Some(*t) => {
                            let s = self.shadow(r, *t)?;
                            pairs.push(pair_of(o, Some(&s)));
                        }
                        Operand::Imm(imm) if imm_value(imm).is_some() => {
                            pairs.push(pair_of(o, None))
                        }
                        _ => return self.reseed_at(k, "selp of a non-float operand", state),
                    }
                }
                let Some(p) = inst.operands.get(3).cloned() else {
                    return self.reseed_at(k, "selp without a predicate", state);
                };
                let to = self.shadow(d, *t)?;
                after.push(instruction(
                    "selp",
                    &["f64"],
                    vec![
                        reg(&to.hi),
                        pairs[0].0.clone(),
                        pairs[1].0.clone(),
                        p.clone(),
                    ],
                ));
                if let Some(lo) = &to.lo {
                    after.push(instruction(
                        "selp",
                        &["f64"],
                        vec![reg(lo), pairs[0].1.clone(), pairs[1].1.clone(), p],
                    ));
                }
            }
            (OpKind::Load(Space::Param), _) if self.is_kernel => return self.input(k),
            (OpKind::Load(Space::Const), _) => return self.input(k),
            (OpKind::Load(space @ (Space::Global | Space::Generic)), _) => {
                return self.load(k, *space, state);
            }
            (OpKind::Load(Space::Shared), _) => return self.load_shared(k, state),
            (OpKind::Load(Space::Local), _) => {
                return self.reseed_at(k, "a load from local memory (not shadowed)", state);
            }
            (OpKind::Load(Space::Param), _) => {
                return self.reseed_at(k, "a device-function parameter", state);
            }
            (OpKind::Call, _) => return self.reseed_at(k, "a call result", state),
            (OpKind::Atom(_), _) => return self.reseed_at(k, "an atomic's old value", state),
            _ => {
                let why = format!("{} has no shadow rule", inst.full_opcode());
                return self.reseed_at(k, &why, state);
            }
        }
        self.insert_after(k, after)?;
        Ok(())
    }

    /// A re-seed point at `k` with its record.
    pub(super) fn reseed_at(
        &mut self,
        k: usize,
        why: &str,
        state: &mut State,
    ) -> Result<(), ValuesError> {
        let record = self.reseed_point(k, why, false, state);
        self.reseed(k, record)
    }

    /// An input (kernel parameter, constant memory): shadow := value, nothing counted.
    fn input(&mut self, k: usize) -> Result<(), ValuesError> {
        let mut after = Vec::new();
        for (name, t) in self.float_defs(k) {
            let to = self.shadow(&name, t)?;
            seed(&to, &reg(&name), t, &mut after);
        }
        self.rw
            .insert_after(self.d.insts[k].id, after, Guarding::Keep)?;
        Ok(())
    }

    /// `to := -from` or `|from|` on double-word shadows (sign flips are exact).
    fn sign(
        &mut self,
        to: &Shadow,
        from: &Shadow,
        abs: bool,
        after: &mut Vec<Statement>,
    ) -> Result<(), ValuesError> {
        if !abs {
            after.push(instruction(
                "neg",
                &["f64"],
                vec![reg(&to.hi), reg(&from.hi)],
            ));
            if let (Some(tl), Some(fl)) = (&to.lo, &from.lo) {
                after.push(instruction("neg", &["f64"], vec![reg(tl), reg(fl)]));
            }
            return Ok(());
        }
        if let (Some(tl), Some(fl)) = (&to.lo, &from.lo) {
            // |hi + lo| flips both words when hi is negative; lo first, while hi is unchanged.
            let negative = self.rw.reg("pred")?;
            let flipped = self.rw.reg("f64")?;
            after.push(instruction("neg", &["f64"], vec![reg(&flipped), reg(fl)]));
            after.push(instruction(
                "setp",
                &["lt", "f64"],
                vec![reg(&negative), reg(&from.hi), f64_imm(0.0)],
            ));
            after.push(instruction(
                "selp",
                &["f64"],
                vec![reg(tl), reg(&flipped), reg(fl), reg(&negative)],
            ));
        }
        after.push(instruction(
            "abs",
            &["f64"],
            vec![reg(&to.hi), reg(&from.hi)],
        ));
        Ok(())
    }

    /// `min`/`max`: the shadow of the operand the instruction chose (the first when the result
    /// equals it), found by comparing the result with a copy of the first operand; where the
    /// operands may be a fusible product (not to be read), chosen by comparing the shadows.
    fn min_max(
        &mut self,
        k: usize,
        dest: &str,
        t: ValueType,
        state: &mut State,
    ) -> Result<(), ValuesError> {
        let inst = self.d.insts[k];
        let mut pairs = Vec::new();
        for o in &inst.operands[1..3] {
            match o {
                Operand::Reg(r) if self.float_type(r) == Some(t) => {
                    let s = self.shadow(r, t)?;
                    pairs.push(pair_of(o, Some(&s)));
                }
                Operand::Imm(imm) if imm_value(imm).is_some() => pairs.push(pair_of(o, None)),
                _ => return self.reseed_at(k, "min/max of a non-float operand", state),
            }
        }
        let first = self.rw.reg("pred")?;
        let mut before = Vec::new();
        let mut after = Vec::new();
        if self.readers.contains(&k) {
            let cmp = if self.d.ops[k].kind == OpKind::Arith(Arith::Min) {
                "le"
            } else {
                "ge"
            };
            after.push(instruction(
                "setp",
                &[cmp, "f64"],
                vec![reg(&first), pairs[0].0.clone(), pairs[1].0.clone()],
            ));
        } else {
            let a = match &inst.operands[1] {
                Operand::Reg(r) => {
                    let copy = self.rw.reg(t.name())?;
                    before.push(instruction("mov", &[t.name()], vec![reg(&copy), reg(r)]));
                    reg(&copy)
                }
                other => other.clone(),
            };
            after.push(instruction(
                "setp",
                &["eq", t.name()],
                vec![reg(&first), reg(dest), a],
            ));
        }
        let to = self.shadow(dest, t)?;
        after.push(instruction(
            "selp",
            &["f64"],
            vec![
                reg(&to.hi),
                pairs[0].0.clone(),
                pairs[1].0.clone(),
                reg(&first),
            ],
        ));
        if let Some(lo) = &to.lo {
            after.push(instruction(
                "selp",
                &["f64"],
                vec![reg(lo), pairs[0].1.clone(), pairs[1].1.clone(), reg(&first)],
            ));
        }
        if !before.is_empty() {
            self.rw.insert_before(inst.id, before, Guarding::Keep)?;
        }
        self.insert_after(k, after)?;
        Ok(())
    }

    /// The address register `[base+offset]` names, if `base` is a 64-bit register.
    fn address_of(&self, o: Option<&Operand>) -> Option<(String, i64)> {
        match o? {
            Operand::Addr { base, offset } => matches!(
                self.d.regs.type_of(base),
                Some(ValueType::U64 | ValueType::S64 | ValueType::B64)
            )
            .then(|| (base.clone(), *offset)),
            _ => None,
        }
    }

    /// `base + offset` in a new register, computed before instruction `k` (which may
    /// overwrite `base`).
    fn address(
        &mut self,
        base: &str,
        offset: i64,
        before: &mut Vec<Statement>,
    ) -> Result<String, ValuesError> {
        let a = self.rw.reg("u64")?;
        before.push(instruction(
            "add",
            &["s64"],
            vec![reg(&a), reg(base), int(offset.into())],
        ));
        Ok(a)
    }

    /// A float load from global or generic memory: each element's shadow from the shadow
    /// buffer, through one conditional re-seed record.
    fn load(&mut self, k: usize, space: Space, state: &mut State) -> Result<(), ValuesError> {
        let inst = self.d.insts[k];
        let Some((base, offset)) = self.address_of(inst.operands.get(1)) else {
            return self.reseed_at(k, "a load from a variable (not a registered buffer)", state);
        };
        let Some(elements) = self.loaded_floats(k) else {
            return self.reseed_at(k, "a vector load of floats and non-floats", state);
        };
        let why = format!(
            "a {} load: re-seeds where the address is in no registered buffer",
            space.name()
        );
        let record = self.reseed_point(k, &why, true, state);
        let mut before = Vec::new();
        let mut after = Vec::new();
        let width = self.d.ops[k].ty.map_or(8, |t| i64::from(t.bytes()));
        for (e, r, t) in elements {
            let address = self.address(&base, offset + width * e as i64, &mut before)?;
            let value = widen(self.rw, &r, t, &mut after)?;
            let pair = [self.rw.reg("f64")?, self.rw.reg("f64")?];
            let (acc, function) = self.record_arg(k, record, LOAD_FUNCTION, &mut after)?;
            after.extend(call_ret(
                &function,
                &[
                    ("b64", acc),
                    ("b64", reg(&address)),
                    ("b64", reg(&value)),
                    ("b32", word(u32::from(t == ValueType::F32))),
                ],
                Some(&pair),
            ));
            let to = self.shadow(&r, t)?;
            set_shadow(&to, &pair, &mut after);
        }
        self.rw.insert_before(inst.id, before, Guarding::Keep)?;
        self.insert_after(k, after)?;
        Ok(())
    }

    /// The float registers load `k` writes: (element index, register, type); `None` for a
    /// vector of floats and non-floats (`_` sinks aside, a vector moves one type).
    pub(super) fn loaded_floats(&self, k: usize) -> Option<Vec<(usize, String, ValueType)>> {
        let elements: Vec<Operand> = match self.d.insts[k].operands.first() {
            Some(Operand::Vector(items)) => items.clone(),
            Some(o) => vec![o.clone()],
            None => Vec::new(),
        };
        let mut floats = Vec::new();
        let mut others = false;
        for (e, element) in elements.iter().enumerate() {
            if let Operand::Reg(r) = element {
                match self.float_type(r) {
                    Some(t) => floats.push((e, r.clone(), t)),
                    None => others = true,
                }
            }
        }
        (floats.is_empty() || !others).then_some(floats)
    }

    /// Stores and atomics to global, generic or shared memory: a float's difference written,
    /// anything else's zeroed.
    fn memory_write(&mut self, k: usize) -> Result<(), ValuesError> {
        let inst = self.d.insts[k];
        let op: &Op = &self.d.ops[k];
        let width = op.ty.map_or(8, |t| t.bytes());
        let (address, values) = match &op.kind {
            OpKind::Store(Space::Global | Space::Generic | Space::Shared) => {
                let values = match inst.operands.get(1) {
                    Some(Operand::Vector(items)) => items.clone(),
                    Some(o) => vec![o.clone()],
                    None => Vec::new(),
                };
                (inst.operands.first(), values)
            }
            OpKind::Atom(Space::Global | Space::Generic | Space::Shared)
            | OpKind::Red(Space::Global | Space::Generic | Space::Shared) => {
                let at = inst
                    .operands
                    .iter()
                    .find(|o| matches!(o, Operand::Addr { .. }));
                (at, vec![Operand::Symbol("_".into())])
            }
            _ => return Ok(()),
        };
        if matches!(
            op.kind,
            OpKind::Store(Space::Shared) | OpKind::Atom(Space::Shared) | OpKind::Red(Space::Shared)
        ) {
            return self.shared_write(k, address, &values, width);
        }
        let Some((base, offset)) = self.address_of(address) else {
            return Ok(()); // a module variable: in no registered buffer
        };
        let shadowed = !self.readers.contains(&k);
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (e, value) in values.iter().enumerate() {
            let address = self.address(&base, offset + i64::from(width) * e as i64, &mut before)?;
            match value {
                Operand::Reg(r) if shadowed && self.float_type(r).is_some() => {
                    let t = self.float_type(r).unwrap_or(ValueType::F64);
                    let s = self.shadow(r, t)?;
                    let (hi, lo) = pair_of(value, Some(&s));
                    let v = widen(self.rw, r, t, &mut after)?;
                    after.extend(call_ret(
                        STORE_FUNCTION,
                        &[
                            ("b64", reg(&address)),
                            ("b64", reg(&v)),
                            ("b64", hi),
                            ("b64", lo),
                            ("b32", word(u32::from(t == ValueType::F32))),
                        ],
                        None,
                    ));
                }
                _ => after.extend(call_ret(
                    CLEAR_FUNCTION,
                    &[("b64", reg(&address)), ("b32", word(width))],
                    None,
                )),
            }
        }
        self.rw.insert_before(inst.id, before, Guarding::Keep)?;
        self.insert_after(k, after)?;
        Ok(())
    }
}

/// The runtime's code of an integral rounding mode.
fn mode(r: Rounding) -> u32 {
    match r {
        Rounding::Rzi => 1,
        Rounding::Rmi => 2,
        Rounding::Rpi => 3,
        _ => 0,
    }
}

/// For each instruction strictly inside a fusible span (after its product, before its last
/// instruction in text order), the span's last instruction, where the instruction's code is
/// placed instead: a call between a product and its add stops ptxas from fusing them (seen in
/// the SASS of gauss.cu, where a load's shadow call sat between `mult * b[t]` and `b[i] -`).
/// Only within one basic block, and for an instruction under the same guard as the span's end
/// (its code is guarded as the anchor is); nothing in between may redefine what that code reads,
/// which holds for the PTX compilers write (registers are defined once per block) and is
/// checked: an instruction whose destination is written again before the end stays in place.
fn deferred_to_span_ends(d: &Decoded) -> HashMap<usize, usize> {
    let cfg = Cfg::build(d);
    let mut out = HashMap::new();
    for span in crate::pass::shadow::instrument::fusible_spans(d) {
        let (Some(&first), Some(&last)) = (span.first(), span.iter().max()) else {
            continue;
        };
        if cfg.block_of.get(first) != cfg.block_of.get(last) {
            continue;
        }
        for k in first + 1..last {
            let same_guard = d.insts[k].guard == d.insts[last].guard;
            let dest = match d.insts[k].operands.first() {
                Some(Operand::Reg(r)) => Some(r.as_str()),
                _ => None,
            };
            let rewritten = dest.is_some_and(|r| {
                (k + 1..=last)
                    .any(|j| matches!(d.insts[j].operands.first(), Some(Operand::Reg(w)) if w == r))
            });
            if same_guard && !rewritten {
                out.insert(k, last);
            }
        }
    }
    out
}
