//! Causes of CPU/GPU differences (`mantissa diff`): where a GPU build computes something a
//! CPU's operation-by-operation IEEE evaluation does not, listed per site, and the passes that
//! switch each cause off per site (the instruction computes what the CPU would).
//!
//! [`candidates`] lists every cause of a module with its [`Site`]; [`switch`] takes a set of
//! them (indices into that list) and returns the module with exactly those switched, by a
//! [`Pipeline`] of the per-cause passes in a fixed order: [`ftz`] (`.ftz` removed), [`approx`]
//! (approximate division, reciprocal and square roots to their `.rn` forms), [`contraction`]
//! (an `fma` split into `mul.rn` + `add.rn`, an unrounded `mul` ptxas would fuse given `.rn`),
//! [`convert`] (a saturating float→integer `cvt` made to compute what x86-64 C code computes).
//! Each pass addresses instructions by [`InstId`] of the module the candidates were listed
//! from: a pass keeps the ids of the instructions it keeps, so a later pass still finds its
//! instructions after an earlier one inserted code (which renumbers ordinals of a [`Site`]).
//!
//! Math-library code (calls, code inlined from libdevice or CUDA's math functions, the
//! `.approx` special functions) and accidental double precision are listed, not switched.

pub mod approx;
pub mod contraction;
pub mod convert;
pub mod ftz;
#[cfg(test)]
mod tests;

use crate::cfg::Cfg;
use crate::compare::{contractible, inlined_from_library, may_be_negative};
use crate::decode::Decoded;
use crate::graph::Graph;
use crate::model::{InstId, Instruction, Module, Statement};
use crate::op::{OpKind, Rounding, ValueType};
use crate::pass::{Pass, PassError, Pipeline, PipelineRun};
use crate::promotion::{is_library, math_function, promotions};
use crate::site::{function_sites, Site};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// A kind of cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// An `fma` on a line where the strict build has fewer (the front end contracted a multiply
    /// and an add). Switched: `mul.rn` then `add.rn`.
    Contraction,
    /// An unrounded `mul` whose every use is an unrounded `add`/`sub`: ptxas fuses the pair
    /// into one FFMA although the PTX shows none. Switched: the `mul` gets `.rn`.
    Contractible,
    /// `div.approx`, `div.full`, `rcp.approx`, `sqrt.approx`, `rsqrt.approx`. Switched: the
    /// `.rn` form (`rsqrt` as `sqrt.rn` then `div.rn` of 1).
    Approximate,
    /// `.ftz`: subnormal inputs and results flushed to zero. Switched: without.
    FlushToZero,
    /// A float→integer `cvt.rzi`: the GPU saturates (NaN → 0), x86-64 C code gives the
    /// "integer indefinite" value or wraps. Switched: the x86-64 result ([`convert`]).
    FloatToInt,
    /// Math-library code or a hardware special function: listed, not switched.
    MathFunction,
    /// Double precision in float code that no double input or output carries: listed, not
    /// switched.
    AccidentalDouble,
}

impl Cause {
    /// The name reports and records use (`contraction`).
    pub fn name(self) -> &'static str {
        match self {
            Cause::Contraction => "contraction",
            Cause::Contractible => "contractible",
            Cause::Approximate => "approximate",
            Cause::FlushToZero => "flush_to_zero",
            Cause::FloatToInt => "float_to_int",
            Cause::MathFunction => "math_function",
            Cause::AccidentalDouble => "accidental_double",
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One cause at one instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// Where it is.
    pub site: Site,
    /// The instruction in the module it was listed from (what the passes address).
    pub inst: InstId,
    /// What kind of cause.
    pub cause: Cause,
    /// The instruction's opcode with modifiers (`div.full.ftz.f32`).
    pub op: String,
    /// What makes it a candidate, in words.
    pub detail: String,
    /// Why it cannot be switched, when it cannot.
    pub not_switchable: Option<String>,
}

impl Candidate {
    /// Whether [`switch`] can switch it.
    pub fn switchable(&self) -> bool {
        self.not_switchable.is_none()
    }
}

/// One instruction a pass changed: its text before and the code after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The instruction (its id is kept by the rewrite).
    pub inst: InstId,
    /// As it was.
    pub before: String,
    /// What replaces it (the instructions in order, each ending in `;`).
    pub after: String,
}

/// What a cause pass did, per instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CauseReport {
    /// The cause the pass switches.
    pub cause: Cause,
    /// Every instruction changed, in module order.
    pub changes: Vec<Change>,
}

/// Lists every cause of `module`'s kernels and device functions (library functions excluded:
/// their code is the library's). `strict` is the same source built strictly
/// (`--fmad=false`): an `fma` is a contraction where the strict build has fewer on its line;
/// without it every `fma` outside library code is one (an explicit `fma()` cannot be told from
/// a contraction then, and the detail says so).
pub fn candidates(module: &Module, strict: Option<&Module>) -> Vec<Candidate> {
    let strict_fmas = strict.map(fmas_per_line);
    let base_fmas = fmas_per_line(module);
    let names = crate::units::debug_strings(module);
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let mut out = Vec::new();
    for f in module.functions().filter(|f| f.body.is_some()) {
        if is_library(&f.name) {
            continue;
        }
        let d = Decoded::of(f);
        let graph = Graph::of(&d, &Cfg::build(&d));
        let sites = function_sites(f, &files);
        let mut library_runs: BTreeSet<(String, u32, String)> = BTreeSet::new();
        for (k, (id, site)) in sites.into_iter().enumerate() {
            let (inst, op, loc) = (d.insts[k], &d.ops[k], d.locs[k]);
            let mut push = |cause: Cause, detail: String, not_switchable: Option<String>| {
                out.push(Candidate {
                    site: site.clone(),
                    inst: id,
                    cause,
                    op: inst.full_opcode(),
                    detail,
                    not_switchable,
                })
            };
            if inlined_from_library(loc, &names) {
                let callee = loc
                    .and_then(|l| l.inlined.as_ref())
                    .and_then(|i| names.get(&i.function_name))
                    .map_or_else(String::new, |n| {
                        math_function(n).map_or_else(|| n.clone(), str::to_string)
                    });
                // One entry per inlined math call per line, at its first instruction.
                if library_runs.insert((site.file.clone(), site.line, callee.clone())) {
                    push(
                        Cause::MathFunction,
                        format!("code inlined from {callee}"),
                        Some("math-library code is listed, not switched".into()),
                    );
                }
                continue;
            }
            let float = matches!(op.ty, Some(ValueType::F32 | ValueType::F64));
            if op.ftz && op.ty == Some(ValueType::F32) {
                push(
                    Cause::FlushToZero,
                    "subnormal inputs and results flushed to zero".into(),
                    None,
                );
            }
            match op.kind {
                OpKind::Fma if float => {
                    let key = line_key(&site);
                    let here = base_fmas.get(&key).copied().unwrap_or(0);
                    let detail = match &strict_fmas {
                        Some(s) => {
                            let there = s.get(&key).copied().unwrap_or(0);
                            (here > there).then(|| {
                                format!("{here} fma on this line, {there} in the strict build")
                            })
                        }
                        None => Some(
                            "fma (without the strict build an explicit fma() cannot be told \
                             from a contraction)"
                                .into(),
                        ),
                    };
                    if let Some(detail) = detail {
                        push(Cause::Contraction, detail, None);
                    }
                }
                OpKind::Arith(crate::op::Arith::Mul) if float && contractible(&d, &graph, inst) => {
                    push(
                        Cause::Contractible,
                        "an unrounded mul feeding only unrounded add/sub: ptxas fuses them".into(),
                        None,
                    )
                }
                OpKind::Div | OpKind::Rcp | OpKind::Sqrt | OpKind::Rsqrt
                    if float && approx::is_approximate(op) =>
                {
                    push(
                        Cause::Approximate,
                        format!("{} is not correctly rounded", inst.full_opcode()),
                        None,
                    )
                }
                OpKind::Approx(_) => push(
                    Cause::MathFunction,
                    format!("{}: the hardware's approximation", inst.full_opcode()),
                    Some("hardware special functions are listed, not switched".into()),
                ),
                OpKind::Call => {
                    if let Some(callee) = called(inst).filter(|c| is_library(c)) {
                        let name = math_function(callee).unwrap_or(callee);
                        push(
                            Cause::MathFunction,
                            format!("a call of {name}"),
                            Some("math-library calls are listed, not switched".into()),
                        );
                    }
                }
                OpKind::Convert { from, to }
                    if from.is_float() && to.is_int() && op.rounding == Some(Rounding::Rzi) =>
                {
                    let negative = to.is_unsigned() && may_be_negative(&d, &graph, inst);
                    let detail = format!(
                        "{}: the GPU saturates{}",
                        inst.full_opcode(),
                        if negative {
                            "; the operand may be negative"
                        } else {
                            ""
                        }
                    );
                    push(Cause::FloatToInt, detail, convert::unsupported(from, to));
                }
                _ => {}
            }
        }
    }
    out.extend(accidental_doubles(module));
    out
}

/// One candidate per accidental double-precision region, at the first instruction of its line.
fn accidental_doubles(module: &Module) -> Vec<Candidate> {
    let index = crate::site::sites(module);
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let kernels: Vec<&str> = module
        .functions()
        .filter(|f| f.kind == crate::model::FunctionKind::Entry && f.body.is_some())
        .map(|f| f.name.as_str())
        .collect();
    let mut out = Vec::new();
    for kernel in kernels {
        for p in promotions(module, kernel)
            .into_iter()
            .filter(|p| p.accidental())
        {
            let file = files.get(&p.at.file).copied().unwrap_or_default();
            let found = index
                .iter()
                .find(|(_, s)| s.function == p.function && s.file == file && s.line == p.at.line);
            let Some((id, site)) = found else { continue };
            let op = module
                .functions()
                .flat_map(|f| f.instructions())
                .find(|i| i.id == *id)
                .map(Instruction::full_opcode)
                .unwrap_or_default();
            out.push(Candidate {
                site: site.clone(),
                inst: *id,
                cause: Cause::AccidentalDouble,
                op,
                detail: format!(
                    "{} f64 operations from {}",
                    p.promotions,
                    p.promoted.join(", ")
                ),
                not_switchable: Some("accidental double precision is listed, not switched".into()),
            });
        }
    }
    out
}

/// The function a `call` names.
fn called(inst: &Instruction) -> Option<&str> {
    inst.operands.iter().find_map(|o| match o {
        crate::model::Operand::Symbol(s) => Some(s.as_str()),
        _ => None,
    })
}

/// A source line as sites name it, without the ordinal.
type LineKey = (String, String, u32, Vec<(String, u32)>);

fn line_key(site: &Site) -> LineKey {
    (
        site.function.clone(),
        site.file.clone(),
        site.line,
        site.inlined.clone(),
    )
}

/// Float `fma`s outside library code per source line.
fn fmas_per_line(module: &Module) -> HashMap<LineKey, u32> {
    let names = crate::units::debug_strings(module);
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let mut out = HashMap::new();
    for f in module.functions().filter(|f| f.body.is_some()) {
        if is_library(&f.name) {
            continue;
        }
        let d = Decoded::of(f);
        for (k, (_, site)) in function_sites(f, &files).into_iter().enumerate() {
            let op = &d.ops[k];
            if op.kind == OpKind::Fma
                && matches!(op.ty, Some(ValueType::F32 | ValueType::F64))
                && !inlined_from_library(d.locs[k], &names)
            {
                *out.entry(line_key(&site)).or_default() += 1;
            }
        }
    }
    out
}

/// Why [`switch`] cannot switch a set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// An index past the candidate list.
    #[error("candidate {index} does not exist ({count} candidates)")]
    NoCandidate {
        /// The index asked for.
        index: usize,
        /// How many candidates there are.
        count: usize,
    },
    /// A candidate that is listed only.
    #[error("{site}: {cause} cannot be switched: {reason}")]
    NotSwitchable {
        /// Where.
        site: Site,
        /// What.
        cause: Cause,
        /// Why not.
        reason: String,
    },
    /// A pass failed (a bug: the candidate list does not belong to the module).
    #[error(transparent)]
    Pass(#[from] PassError),
}

/// `module` with the candidates `chosen` (indices into `list`, which [`candidates`] made from
/// `module`) switched off, with each pass's report ([`CauseReport`] details) in pipeline order.
pub fn switch(
    module: &Module,
    list: &[Candidate],
    chosen: &[usize],
) -> Result<PipelineRun, SwitchError> {
    Ok(pipeline(list, chosen)?.run(module)?)
}

/// The passes that switch off the candidates `chosen` (indices into `list`): one pass per
/// cause, each over its own instructions, in the order [`switch`] runs them.
pub fn pipeline(list: &[Candidate], chosen: &[usize]) -> Result<Pipeline, SwitchError> {
    let mut sets: HashMap<Cause, BTreeSet<InstId>> = HashMap::new();
    for &index in chosen {
        let c = list.get(index).ok_or(SwitchError::NoCandidate {
            index,
            count: list.len(),
        })?;
        if let Some(reason) = &c.not_switchable {
            return Err(SwitchError::NotSwitchable {
                site: c.site.clone(),
                cause: c.cause,
                reason: reason.clone(),
            });
        }
        sets.entry(c.cause).or_default().insert(c.inst);
    }
    let mut take = |cause| sets.remove(&cause).unwrap_or_default();
    Ok(Pipeline::new()
        .then(ftz::Ftz::new(take(Cause::FlushToZero)))
        .then(approx::Exact::new(take(Cause::Approximate)))
        .then(contraction::Uncontract::new(
            take(Cause::Contraction),
            take(Cause::Contractible),
        ))
        .then(convert::AsOnX86::new(take(Cause::FloatToInt))))
}

/// Edits every instruction of `insts` in a copy of `module` with `edit` (which returns what
/// the instruction became, or why it cannot be changed); fails naming any instruction not
/// found. Shared by the passes that change an instruction where it stands.
pub(crate) fn edit_each(
    pass: &str,
    module: &Module,
    insts: &BTreeSet<InstId>,
    mut edit: impl FnMut(&mut Instruction) -> Result<(), String>,
) -> Result<(Module, Vec<Change>), PassError> {
    let mut out = module.clone();
    let mut changes = Vec::new();
    for f in out.functions_mut() {
        for s in f.body.iter_mut().flatten() {
            let Statement::Inst(i) = s else { continue };
            if !insts.contains(&i.id) {
                continue;
            }
            let before = i.to_string();
            edit(i).map_err(|message| PassError {
                pass: pass.to_string(),
                message: format!("{}: {message}", before.trim()),
            })?;
            changes.push(Change {
                inst: i.id,
                before: before.trim().to_string(),
                after: i.to_string().trim().to_string(),
            });
        }
    }
    missing(pass, insts, &changes)?;
    Ok((out, changes))
}

/// Fails naming the first instruction of `insts` that no change covers.
pub(crate) fn missing(
    pass: &str,
    insts: &BTreeSet<InstId>,
    changes: &[Change],
) -> Result<(), PassError> {
    let done: BTreeSet<InstId> = changes.iter().map(|c| c.inst).collect();
    match insts.difference(&done).next() {
        Some(id) => Err(PassError {
            pass: pass.to_string(),
            message: format!("instruction {id} is not in the module"),
        }),
        None => Ok(()),
    }
}

/// A pass's [`crate::pass::Outcome`] from its module and changes.
pub(crate) fn outcome(
    pass: &impl Pass,
    cause: Cause,
    module: Module,
    changes: Vec<Change>,
) -> crate::pass::Outcome {
    let summary = format!("switched {} instructions", changes.len());
    crate::pass::Outcome {
        module,
        report: crate::pass::Report::new(
            &pass.name(),
            summary,
            Vec::new(),
            CauseReport { cause, changes },
        ),
    }
}
