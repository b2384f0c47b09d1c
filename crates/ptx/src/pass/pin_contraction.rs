//! ptxas's contraction decisions made explicit in the PTX, so that instrumenting or switching
//! the module cannot change them.
//!
//! ptxas fuses an unrounded `mul` into an unrounded `add`/`sub` of the same type (FFMA, DFMA),
//! choosing which product when an add has two, and the choice can change when code around them
//! changes (an instrumented read of a product, a switch). This pass reads what ptxas did to the
//! module as given ([`crate::sass::per_instruction()`]: the SASS opcodes of every PTX
//! instruction) and writes it down: a fused pair becomes one `fma.rn` (`.ftz` kept) at the add,
//! with the signs ptxas folded (a `neg` between product and add, the `sub`) made explicit by
//! `neg`, which is exact; every other unrounded f32/f64 `mul`/`add`/`sub` linked to a product or
//! a sum (a product flowing into a sum, directly or through a `neg`) gets `.rn`. A lone one,
//! linked to nothing, cannot be contracted and is left as written: rounding it would forbid
//! nothing and can change ptxas's other choices. The result computes the same bits as the
//! program as built, and ptxas has no contraction left to choose.
//!
//! What the SASS says: the fused FFMA carries the add's line and the product's line keeps no
//! FMUL unless another use needs the product rounded. So an add whose copies are all FFMA was
//! fused; its product is its one unrounded `mul` operand (directly or through a `neg`), or, of
//! two, the one whose line has no FMUL.
//!
//! Anything the SASS cannot settle is left exactly as written and listed with its reason, and
//! so is every instruction that could be fused with it (the `mul`s and `add`s linked to it by
//! a product flowing into a sum: rounding one of them could change what ptxas does with the
//! other): an add whose copies disagree (some FFMA, some FADD: unrolled or duplicated code), a
//! product that cannot be told apart, an operand of the product written again before the add,
//! `.sat` arithmetic, f32 `div`/`rcp` without `.rn` (ptxas ends them with a fusible FMUL), and
//! f16/bf16 arithmetic (not pinned at all). Kept instructions keep their ids, the `fma` keeps
//! the add's; inserted `neg`s get fresh ones.

use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::graph::Graph;
use crate::model::{Imm, InstId, Module, Operand, Statement};
use crate::op::{Arith, OpKind, ValueType};
use crate::pass::{Outcome, Pass, PassError, Report};
use crate::rewrite::{instruction, Guarding, Rewriter};
use crate::sass::{float_op, FloatOp, InstSass};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The pass: pins the contraction decisions `sass` records for the module it is run on.
#[derive(Debug, Clone)]
pub struct PinContraction {
    sass: InstSass,
    eliminated: Eliminated,
}

/// What to make of a sum that has no SASS of its own while its product has none either:
/// ptxas computed the value elsewhere, as a common subexpression of an identical computation
/// (options.cu computes `x - a*b` twice; ptxas keeps one DFMA), fused or not. The SASS of the
/// pair cannot say which; the caller tries each and keeps the one whose SASS is the
/// original's (`mantissa_harness::trial::pin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Eliminated {
    /// Pinned as a fused pair (`fma.rn`).
    Fused,
    /// Given `.rn`, as an unfused pair.
    Rounded,
    /// Left as written with the rest of its group, and reported.
    Left,
}

impl PinContraction {
    /// Pins what `sass` (the per-instruction SASS of the module this will run on) shows;
    /// eliminated pairs are left as written.
    pub fn new(sass: InstSass) -> PinContraction {
        PinContraction {
            sass,
            eliminated: Eliminated::Left,
        }
    }

    /// The same, with eliminated pairs (see [`Eliminated`]) pinned as `eliminated` says.
    pub fn with_eliminated(sass: InstSass, eliminated: Eliminated) -> PinContraction {
        PinContraction { sass, eliminated }
    }
}

/// A product ptxas fused into a sum, now one `fma.rn` at the sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinnedPair {
    /// The function.
    pub function: String,
    /// The `mul` (kept, with `.rn`, for any other use).
    pub mul: InstId,
    /// The `add`/`sub`, now the `fma` (same id).
    pub add: InstId,
    /// The source line of the sum (its `.loc`), if it has one.
    pub line: Option<u32>,
    /// The fma multiplies a negated factor (a `neg` of the product, or the subtrahend).
    pub negated_product: bool,
    /// The fma adds the negated other operand (`product - x`).
    pub negated_addend: bool,
}

/// An instruction left exactly as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftAlone {
    /// The function.
    pub function: String,
    /// The instruction.
    pub inst: InstId,
    /// Its source line (its `.loc`), if it has one.
    pub line: Option<u32>,
    /// The instruction as written.
    pub instruction: String,
    /// Why (see the module docs).
    pub reason: String,
}

/// What the pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PinReport {
    /// The architecture whose SASS was read.
    pub arch: String,
    /// Fused pairs, now `fma.rn`.
    pub pairs: Vec<PinnedPair>,
    /// Unrounded `mul`/`add`/`sub` given `.rn` (the `mul`s of pairs included).
    pub rounded: usize,
    /// What was left as written.
    pub left: Vec<LeftAlone>,
}

impl PinReport {
    /// `pinned 12 contracted pairs (sm_90); 40 given .rn; 3 left as written`.
    pub fn summary(&self) -> String {
        format!(
            "pinned {} contracted pair{} ({}); {} given .rn; {} left as written",
            self.pairs.len(),
            if self.pairs.len() == 1 { "" } else { "s" },
            self.arch,
            self.rounded,
            self.left.len()
        )
    }
}

/// Which role an instruction can play in a contraction.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    /// An unrounded f32/f64 `mul` this pass may round.
    Product,
    /// An unrounded f32/f64 `add`/`sub` this pass may round or turn into an `fma`.
    Sum,
    /// A product-like or sum-like instruction to leave alone, with the reason.
    Fixed { reason: String, product: bool },
}

/// A product flowing into a sum operand, maybe through a `neg`.
#[derive(Debug, Clone, Copy)]
struct Link {
    product: usize,
    sum: usize,
    /// Operand position in the sum (1 or 2).
    position: usize,
    through_neg: bool,
    /// The only definition reaching that operand (through the `neg`, if any).
    unique: bool,
}

/// One function's decisions.
#[derive(Default)]
struct Plan {
    /// (product, sum, position, through_neg) by instruction index.
    pairs: Vec<(usize, usize, usize, bool)>,
    round: BTreeSet<usize>,
    left: Vec<(usize, String)>,
}

fn role(d: &Decoded, k: usize) -> Option<Role> {
    let op = &d.ops[k];
    let ty = op.ty?;
    let arith = match op.kind {
        OpKind::Arith(a @ (Arith::Mul | Arith::Add | Arith::Sub)) => a,
        OpKind::Div | OpKind::Rcp if ty == ValueType::F32 && op.rounding.is_none() => {
            return Some(Role::Fixed {
                reason: format!(
                    "f32 {} without .rn: ptxas ends it with a fusible FMUL",
                    d.insts[k].opcode
                ),
                product: true,
            })
        }
        _ => return None,
    };
    if op.rounding.is_some() {
        return None;
    }
    let product = arith == Arith::Mul;
    match ty {
        ValueType::F32 | ValueType::F64 if op.sat => Some(Role::Fixed {
            reason: ".sat: not pinned".into(),
            product,
        }),
        ValueType::F32 | ValueType::F64 => Some(if product { Role::Product } else { Role::Sum }),
        t if t.is_float() => Some(Role::Fixed {
            reason: format!("{}: half-precision contraction is not pinned", t.name()),
            product,
        }),
        _ => None,
    }
}

/// Copies of `op` on `ty` (f64, else f32), register and immediate forms, at instruction `id`.
fn copies(sass: &InstSass, function: &str, id: InstId, op: FloatOp, ty: ValueType) -> u32 {
    let ty = if ty == ValueType::F64 {
        ValueType::F64
    } else {
        ValueType::F32
    };
    sass.ops(function, id)
        .iter()
        .filter(|(m, _)| float_op(m).is_some_and(|(o, t, _)| o == op && t == ty))
        .map(|(_, n)| n)
        .sum()
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Products flowing into the operands of sums of the same type.
fn links(d: &Decoded, g: &Graph, roles: &[Option<Role>]) -> Vec<Link> {
    let is_product = |k: usize| match &roles[k] {
        Some(Role::Product) => true,
        Some(Role::Fixed { product, .. }) => *product,
        _ => false,
    };
    let defs = |k: usize, position: usize| -> Vec<usize> {
        let Some(reg) = d.operand_reg(k, position) else {
            return Vec::new();
        };
        g.defs_of(d.insts[k].id)
            .filter(|e| e.reg == reg)
            .filter_map(|e| g.index_of(e.def))
            .collect()
    };
    let mut out = Vec::new();
    for (sum, role) in roles.iter().enumerate() {
        let is_sum = match role {
            Some(Role::Sum) => true,
            Some(Role::Fixed { product, .. }) => !product,
            _ => false,
        };
        if !is_sum {
            continue;
        }
        for position in [1, 2] {
            let direct = defs(sum, position);
            let unique = direct.len() == 1;
            for def in direct {
                let (sources, through_neg) = if d.ops[def].kind == OpKind::Arith(Arith::Neg) {
                    (defs(def, 1), true)
                } else {
                    (vec![def], false)
                };
                let unique = unique && sources.len() == 1;
                for product in sources {
                    if is_product(product) && d.ops[product].ty == d.ops[sum].ty {
                        out.push(Link {
                            product,
                            sum,
                            position,
                            through_neg,
                            unique,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Whether a register the product `mul` reads may be written again on a path from `mul` to
/// `sum` that does not run `mul` again (the `fma` at the sum would read another value).
fn operands_rewritten(d: &Decoded, cfg: &Cfg, mul: usize, sum: usize) -> bool {
    let regs: Vec<_> = [1, 2]
        .iter()
        .filter_map(|&j| d.operand_reg(mul, j))
        .collect();
    let (bm, bs) = (cfg.block_of[mul], cfg.block_of[sum]);
    // Blocks reachable from `mul`'s block without entering it again, and those of them that
    // reach the sum's block in at least one step without entering `mul`'s block.
    let mut reach = BTreeSet::new();
    let mut stack: Vec<usize> = if bm == bs && mul < sum {
        Vec::new()
    } else {
        cfg.blocks[bm].succs.clone()
    };
    while let Some(b) = stack.pop() {
        if b != bm && reach.insert(b) {
            stack.extend(cfg.blocks[b].succs.iter().copied());
        }
    }
    let mut to_sum = BTreeSet::new();
    let mut stack: Vec<usize> = cfg.blocks[bs].preds.clone();
    while let Some(b) = stack.pop() {
        if reach.contains(&b) && to_sum.insert(b) {
            stack.extend(cfg.blocks[b].preds.iter().copied());
        }
    }
    (0..d.len()).any(|x| {
        let b = cfg.block_of[x];
        let between = if bm == bs && mul < sum {
            x > mul && x < sum
        } else {
            (b == bm && x > mul) || (b == bs && x < sum) || to_sum.contains(&b)
        };
        between && d.defs(x).iter().any(|r| regs.contains(r))
    })
}

/// Decides one function (see the module docs).
fn plan(d: &Decoded, sass: &InstSass, eliminated: Eliminated) -> Plan {
    let cfg = Cfg::build(d);
    let g = Graph::of(d, &cfg);
    let function = d.function.name.as_str();
    let roles: Vec<Option<Role>> = (0..d.len()).map(|k| role(d, k)).collect();
    let links = links(d, &g, &roles);
    let mut parent: Vec<usize> = (0..d.len()).collect();
    for l in &links {
        let (a, b) = (find(&mut parent, l.product), find(&mut parent, l.sum));
        parent[a] = b;
    }
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for k in (0..d.len()).filter(|&k| roles[k].is_some()) {
        let root = find(&mut parent, k);
        members.entry(root).or_default().push(k);
    }
    let facts = FunctionFacts {
        d,
        cfg,
        function,
        roles,
        links,
    };
    let roles = &facts.roles;
    let mut plan = Plan::default();
    for component in members.values() {
        // A lone product or sum, linked to nothing, cannot be contracted, and `.rn` on it can
        // change what else ptxas does (float_literal under `fast`: five more FMULs and fewer
        // IMADs once its lone products were rounded): it is left as written, not reported.
        if component.len() == 1 && matches!(roles[component[0]], Some(Role::Product | Role::Sum)) {
            continue;
        }
        match decide(&facts, sass, component, eliminated) {
            Ok(pairs) => {
                plan.pairs.extend(pairs);
                plan.round.extend(component.iter().copied());
            }
            Err((culprit, reason)) => {
                for &k in component {
                    let why = match &roles[k] {
                        Some(Role::Fixed { reason, .. }) => reason.clone(),
                        _ if k == culprit => reason.clone(),
                        _ => format!(
                            "may be fused with instruction {} ({}), left as written: {reason}",
                            d.insts[culprit].id,
                            d.insts[culprit].to_string().trim()
                        ),
                    };
                    plan.left.push((k, why));
                }
            }
        }
    }
    plan.left.sort_by_key(|(k, _)| *k);
    plan
}

type Pairs = Vec<(usize, usize, usize, bool)>;

/// What [`decide`] reads of one function.
struct FunctionFacts<'a> {
    d: &'a Decoded<'a>,
    cfg: Cfg,
    function: &'a str,
    roles: Vec<Option<Role>>,
    links: Vec<Link>,
}

/// The fused pairs of one component of linked products and sums, or the first instruction
/// whose SASS cannot be read, with the reason.
fn decide(
    f: &FunctionFacts,
    sass: &InstSass,
    component: &[usize],
    eliminated: Eliminated,
) -> Result<Pairs, (usize, String)> {
    let FunctionFacts {
        d,
        cfg,
        function,
        roles,
        links,
    } = f;
    let (d, function) = (*d, *function);
    for &k in component {
        if let Some(Role::Fixed { reason, .. }) = &roles[k] {
            return Err((k, reason.clone()));
        }
    }
    let count = |k: usize, op: FloatOp| {
        let ty = d.ops[k].ty.unwrap_or(ValueType::F32);
        copies(sass, function, d.insts[k].id, op, ty)
    };
    let mut pairs: Pairs = Vec::new();
    for &sum in component.iter().filter(|&&k| roles[k] == Some(Role::Sum)) {
        let into: Vec<&Link> = links.iter().filter(|l| l.sum == sum).collect();
        let (fused, plain) = (count(sum, FloatOp::Fma), count(sum, FloatOp::Add));
        let gone = fused == 0
            && plain == 0
            && !into.is_empty()
            && into.iter().all(|l| {
                count(l.product, FloatOp::Mul) == 0 && count(l.product, FloatOp::Fma) == 0
            });
        let as_fused = gone && eliminated == Eliminated::Fused;
        if gone && eliminated == Eliminated::Rounded {
            continue;
        }
        if (into.is_empty() || fused == 0) && !as_fused {
            if fused == 0 && plain == 0 && !into.is_empty() {
                return Err((sum, "no add or fma of it in the SASS".into()));
            }
            if fused > 0 {
                return Err((sum, "an fma in the SASS but no product in the PTX".into()));
            }
            continue;
        }
        if plain > 0 {
            return Err((
                sum,
                format!(
                    "its copies disagree: {fused} fused, {plain} not (unrolled or duplicated code)"
                ),
            ));
        }
        let mut candidates: Vec<&Link> = into.iter().copied().filter(|l| l.unique).collect();
        candidates.dedup_by_key(|l| l.product);
        let chosen = match candidates.as_slice() {
            [one] => *one,
            [a, b] => match (
                count(a.product, FloatOp::Mul),
                count(b.product, FloatOp::Mul),
            ) {
                (0, n) if n > 0 => *a,
                (n, 0) if n > 0 => *b,
                _ => {
                    return Err((
                        sum,
                        "fused, but which of its two products cannot be told from the SASS".into(),
                    ))
                }
            },
            _ => return Err((sum, "fused, but its product is not one instruction".into())),
        };
        if d.insts[chosen.product].guard.is_some() {
            return Err((sum, "fused with a guarded product".into()));
        }
        if operands_rewritten(d, cfg, chosen.product, sum) {
            return Err((
                sum,
                "fused, but a factor of its product is written again before it".into(),
            ));
        }
        pairs.push((chosen.product, sum, chosen.position, chosen.through_neg));
    }
    // A product with no SASS of its own is fused into every use: a use left unfused means the
    // product was computed elsewhere (ptxas merged it with another), which the pairs above
    // cannot express.
    for &mul in component
        .iter()
        .filter(|&&k| roles[k] == Some(Role::Product))
    {
        let fused_into = pairs.iter().filter(|p| p.0 == mul).count();
        let linked: BTreeSet<usize> = links
            .iter()
            .filter(|l| l.product == mul)
            .map(|l| l.sum)
            .collect();
        if count(mul, FloatOp::Mul) == 0 && fused_into > 0 && fused_into < linked.len() {
            return Err((
                mul,
                "no FMUL of it in the SASS, yet not fused into all its sums".into(),
            ));
        }
    }
    Ok(pairs)
}

/// `operand` negated: an immediate's sign bit flipped, a register through an inserted `neg`.
fn negated(
    operand: &Operand,
    ty: &str,
    rw: &mut Rewriter,
    before: InstId,
) -> Result<Operand, String> {
    Ok(match operand {
        Operand::Imm(Imm::F32(bits)) => Operand::Imm(Imm::F32(bits ^ 0x8000_0000)),
        Operand::Imm(Imm::F64(bits)) => Operand::Imm(Imm::F64(bits ^ (1 << 63))),
        Operand::Reg(_) => {
            let t = rw.reg(ty).map_err(|e| e.to_string())?;
            let neg = instruction("neg", &[ty], vec![Operand::Reg(t.clone()), operand.clone()]);
            rw.insert_before(before, vec![neg], Guarding::Keep)
                .map_err(|e| e.to_string())?;
            Operand::Reg(t)
        }
        other => return Err(format!("cannot negate operand {other:?}")),
    })
}

impl Pass for PinContraction {
    fn name(&self) -> String {
        "pin-contraction".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let err = |message: String| PassError {
            pass: self.name(),
            message,
        };
        let mut out = module.clone();
        let mut report = PinReport {
            arch: self.sass.arch.clone(),
            ..PinReport::default()
        };
        // Per function: instruction id → the fma's operands, and the ids to round.
        let mut fmas: HashMap<(String, InstId), Vec<Operand>> = HashMap::new();
        let mut round: BTreeSet<(String, InstId)> = BTreeSet::new();
        for f in module.functions().filter(|f| f.body.is_some()) {
            let d = Decoded::of(f);
            let p = plan(&d, &self.sass, self.eliminated);
            let line = |k: usize| d.locs[k].map(|l| l.line);
            let mut rw = Rewriter::new(&out, &f.name).map_err(|e| err(e.to_string()))?;
            for &(mul, sum, position, through_neg) in &p.pairs {
                let (m, s) = (d.insts[mul], d.insts[sum]);
                let ty = d.ops[sum].ty.map(ValueType::name).unwrap_or("f32");
                let subtract = d.ops[sum].kind == OpKind::Arith(Arith::Sub);
                let negate_product = through_neg ^ (subtract && position == 2);
                let negate_addend = subtract && position == 1;
                let addend = &s.operands[3 - position];
                let (a, b) = (&m.operands[1], &m.operands[2]);
                let a = if negate_product {
                    negated(a, ty, &mut rw, s.id).map_err(&err)?
                } else {
                    a.clone()
                };
                let c = if negate_addend {
                    negated(addend, ty, &mut rw, s.id).map_err(&err)?
                } else {
                    addend.clone()
                };
                fmas.insert(
                    (f.name.clone(), s.id),
                    vec![s.operands[0].clone(), a, b.clone(), c],
                );
                report.pairs.push(PinnedPair {
                    function: f.name.clone(),
                    mul: m.id,
                    add: s.id,
                    line: line(sum),
                    negated_product: negate_product,
                    negated_addend: negate_addend,
                });
            }
            rw.apply(&mut out).map_err(|e| err(e.to_string()))?;
            for &k in p
                .round
                .iter()
                .filter(|&&k| !p.pairs.iter().any(|x| x.1 == k))
            {
                round.insert((f.name.clone(), d.insts[k].id));
            }
            report.rounded += p.round.len() - p.pairs.len();
            report
                .left
                .extend(p.left.into_iter().map(|(k, reason)| LeftAlone {
                    function: f.name.clone(),
                    inst: d.insts[k].id,
                    line: line(k),
                    instruction: d.insts[k].to_string().trim().to_string(),
                    reason,
                }));
        }
        for f in out.functions_mut() {
            let name = f.name.clone();
            for s in f.body.iter_mut().flatten() {
                let Statement::Inst(i) = s else { continue };
                let key = (name.clone(), i.id);
                if let Some(operands) = fmas.remove(&key) {
                    i.opcode = "fma".into();
                    i.modifiers.insert(0, "rn".into());
                    i.operands = operands;
                } else if round.contains(&key) {
                    i.modifiers.insert(0, "rn".into());
                }
            }
        }
        let summary = report.summary();
        let notes = report
            .left
            .iter()
            .map(|l| format!("{}: {}: {}", l.function, l.instruction, l.reason))
            .collect();
        Ok(Outcome {
            module: out,
            report: Report::new(&self.name(), summary, notes, report),
        })
    }
}

#[cfg(test)]
#[path = "pin_contraction_tests.rs"]
mod tests;
