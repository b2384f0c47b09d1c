//! Comparing builds of one kernel (flag sets) source line by source line, and flagging what
//! changes results: FMA contraction, approximate division/square root/reciprocal and special
//! functions, flush-to-zero, and float→unsigned conversions of values that may be negative
//! (seed 003 §3.2.4–3.2.6). This is the analysis behind `mantissa inspect`; it prints nothing.

use crate::census::{classify_op, Accuracy, Conversion, SourceLine};
use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::graph::Graph;
use crate::model::*;
use crate::op::{Arith, MathFn, Op, OpKind, Rounding, ValueType};
use crate::promotion::{is_library, math_function};
use serde::Serialize;
use std::collections::BTreeMap;

/// Something on a line that makes results differ from a strict IEEE, operation-by-operation
/// evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Highlight {
    /// More fused multiply-adds than the reference build on this line (`reference` is `None`
    /// when there is no reference: then an explicit `fma()` cannot be told from a contraction).
    Contraction {
        /// Fused multiply-adds in this build on this line.
        fused: u32,
        /// Fused multiply-adds in the reference build on this line.
        reference: Option<u32>,
    },
    /// Unrounded `mul` whose result feeds only unrounded `add`/`sub` of the same type: ptxas
    /// fuses each such pair into one FFMA/DFMA (its `--fmad` defaults to true), so the line
    /// contracts although its PTX shows no `fma`. `.rn` on either forbids it.
    Contractible {
        /// How many mul→add/sub pairs.
        pairs: u32,
    },
    /// `div.full` or `div.approx` (or an approximate `rcp` standing for a division).
    ApproxDiv {
        /// The instruction as written (`div.approx.ftz.f32`).
        op: String,
    },
    /// An approximate square root (`sqrt.approx`), not IEEE.
    ApproxSqrt {
        /// The instruction as written.
        op: String,
    },
    /// More approximate special-function instructions (`sin.approx`, `ex2.approx`, `rsqrt`)
    /// than the reference build.
    ApproxFunction {
        /// The approximate instructions of this build on this line.
        ops: Vec<String>,
    },
    /// Instructions with `.ftz`: subnormal inputs and results become zero.
    Ftz {
        /// How many instructions of the line flush.
        count: u32,
    },
    /// `cvt` from a float to an unsigned integer. `may_be_negative` is false only when the
    /// def-use graph shows the value comes from `abs`, `sqrt`, `ex2`, `max(x, c ≥ 0)`, `x*x` or
    /// an unsigned integer.
    FloatToUnsigned {
        /// The conversion as written (`cvt.rzi.u32.f32`).
        op: String,
        /// Whether the converted value can be negative as far as the def-use graph shows.
        may_be_negative: bool,
    },
}

impl Highlight {
    /// A short phrase for terminal output; `reference` names the reference build.
    pub fn describe(&self, reference: &str) -> String {
        match self {
            Highlight::Contraction { fused, reference: Some(r) } => format!(
                "FMA contraction: {fused} fma where {reference} has {r} (separate mul and add round twice)"
            ),
            Highlight::Contraction { fused, reference: None } => {
                format!("{fused} fused multiply-add (a contraction unless the source calls fma)")
            }
            Highlight::Contractible { pairs: 1 } => {
                "contractible: an unrounded mul feeds an add/sub, which ptxas fuses into an FMA".into()
            }
            Highlight::Contractible { pairs } => format!(
                "contractible: {pairs} unrounded mul→add/sub pairs, which ptxas fuses into FMAs"
            ),
            Highlight::ApproxDiv { op } => format!("approximate division ({op}, not IEEE)"),
            Highlight::ApproxSqrt { op } => format!("approximate square root ({op}, not IEEE)"),
            Highlight::ApproxFunction { ops } => {
                format!("approximate functions ({})", ops.join(", "))
            }
            Highlight::Ftz { count: 1 } => "flush-to-zero (ftz)".to_string(),
            Highlight::Ftz { count } => format!("flush-to-zero on {count} instructions"),
            Highlight::FloatToUnsigned {
                op,
                may_be_negative: true,
            } => format!(
                "float→unsigned {op} of a value that may be negative: undefined in C++ (GPU gives 0, a CPU may wrap); use __float2uint_rn or clamp"
            ),
            Highlight::FloatToUnsigned {
                op,
                may_be_negative: false,
            } => format!("float→unsigned {op} (value is non-negative)"),
        }
    }
}

/// One build's instructions on one source line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineBuild {
    /// The build's name (a flag set, or `ptx` for a file read as is).
    pub build: String,
    /// Floating-point ops in order of first appearance, with counts.
    pub ops: Vec<(String, u32)>,
    /// What in this build makes the line's results differ from strict IEEE evaluation.
    pub highlights: Vec<Highlight>,
    /// The SASS ptxas made of this line (base opcode → count; see [`attach_sass`]), when a
    /// disassembler was available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sass: Option<BTreeMap<String, u32>>,
}

/// One source line across builds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineReport {
    /// The source line.
    pub at: SourceLine,
    /// Call sites this line's code was inlined at.
    pub inlined_at: Vec<SourceLine>,
    /// Each build's instructions on the line, in the order the builds were given.
    pub builds: Vec<LineBuild>,
}

impl LineReport {
    /// Whether the builds differ on this line (different ops) or any build is highlighted.
    pub fn notable(&self) -> bool {
        self.builds.iter().any(|b| !b.highlights.is_empty())
            || self.builds.windows(2).any(|w| w[0].ops != w[1].ops)
    }

    /// Whether the line matters beyond `.ftz` and `.rn`: a highlight other than flush-to-zero
    /// in some build, or builds whose ops differ once `.ftz` and `.rn` are ignored.
    pub fn significant(&self) -> bool {
        self.builds.iter().any(|b| {
            b.highlights
                .iter()
                .any(|h| !matches!(h, Highlight::Ftz { .. }))
        }) || self
            .builds
            .windows(2)
            .any(|w| without_ftz_and_rn(&w[0].ops) != without_ftz_and_rn(&w[1].ops))
    }
}

/// Ops with the `.ftz` and `.rn` modifiers removed and counts merged: what is left when a line
/// differs between builds only by flushing (`fast`) or by strict's explicit rounding.
pub fn without_ftz_and_rn(ops: &[(String, u32)]) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for (op, n) in ops {
        let key: Vec<&str> = op
            .split('.')
            .filter(|m| *m != "ftz" && *m != "rn")
            .collect();
        *out.entry(key.join(".")).or_default() += n;
    }
    out
}

/// Attaches the SASS of `build` to each line of `report` (`sass` is the disassembly of that
/// build's PTX, `files` the PTX's `.file` table, so that line-info paths map to indices).
pub fn attach_sass(
    report: &mut KernelReport,
    build: &str,
    sass: &crate::sass::Sass,
    files: &[(u32, &str)],
) {
    let mut functions: Vec<&str> = vec![report.kernel.as_str()];
    functions.extend(report.callees.iter().map(String::as_str));
    for line in &mut report.lines {
        let Some((_, path)) = files.iter().find(|(i, _)| *i == line.at.file) else {
            continue;
        };
        let ops = sass.at(&functions, path, line.at.line);
        for b in line.builds.iter_mut().filter(|b| b.build == build) {
            b.sass = Some(ops.clone());
        }
    }
}

/// A kernel compared across builds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelReport {
    /// The kernel's symbol name.
    pub kernel: String,
    /// Device functions the kernel reaches through calls, in any build.
    pub callees: Vec<String>,
    /// Source lines with floating-point instructions in some build, in line order.
    pub lines: Vec<LineReport>,
}

/// What one flag set does on every line it applies to (approximate division, square root or
/// functions, flush-to-zero), folded out of the lines into one entry per kernel by
/// [`fold_flag_set_effects`]: the flag set decided it, not the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlagSetEffect {
    /// The build (flag set).
    pub build: String,
    /// What it does: `approximate division`, `approximate square root`, `approximate
    /// functions`, `flush-to-zero`.
    pub what: &'static str,
    /// The lines it does it on.
    pub lines: Vec<SourceLine>,
    /// Whether it does it everywhere it can: no IEEE division (or square root) is left in the
    /// build's kernel.
    pub everywhere: bool,
}

/// Takes the highlights a flag set earns on every line alike (approximate division, square
/// root and functions, flush-to-zero beyond the reference's) out of `r`'s lines and returns
/// them as one [`FlagSetEffect`] per build and kind, so that what the source decides
/// (contraction, casts, accidental double) stays per line. Only a report with a reference
/// build has such highlights: they are measured against it.
pub fn fold_flag_set_effects(r: &mut KernelReport) -> Vec<FlagSetEffect> {
    let mut out: Vec<FlagSetEffect> = Vec::new();
    for l in &mut r.lines {
        let at = l.at;
        for b in &mut l.builds {
            let build = b.build.clone();
            b.highlights.retain(|h| {
                let what = match h {
                    Highlight::ApproxDiv { .. } => "approximate division",
                    Highlight::ApproxSqrt { .. } => "approximate square root",
                    Highlight::ApproxFunction { .. } => "approximate functions",
                    Highlight::Ftz { .. } => "flush-to-zero",
                    _ => return true,
                };
                match out.iter_mut().find(|e| e.build == build && e.what == what) {
                    Some(e) if !e.lines.contains(&at) => e.lines.push(at),
                    Some(_) => {}
                    None => out.push(FlagSetEffect {
                        build: build.clone(),
                        what,
                        lines: vec![at],
                        everywhere: false,
                    }),
                }
                false
            });
        }
    }
    for e in &mut out {
        let ieee: &[&str] = match e.what {
            "approximate division" => &["div.rn.", "rcp.rn."],
            "approximate square root" => &["sqrt.rn."],
            _ => continue,
        };
        e.everywhere = !r.lines.iter().any(|l| {
            l.builds.iter().filter(|b| b.build == e.build).any(|b| {
                b.ops
                    .iter()
                    .any(|(o, _)| ieee.iter().any(|p| o.starts_with(p)))
            })
        });
    }
    out
}

/// Per-line facts of one build (the kernel and its callees together).
struct BuildLines {
    ops: BTreeMap<SourceLine, Vec<(String, u32)>>,
    inlined: BTreeMap<SourceLine, Vec<SourceLine>>,
    fused: BTreeMap<SourceLine, u32>,
    special: BTreeMap<SourceLine, Vec<String>>,
    other: BTreeMap<SourceLine, Vec<Highlight>>,
    ftz: BTreeMap<SourceLine, u32>,
    contractible: BTreeMap<SourceLine, u32>,
}

/// The kernel and every device function it reaches through calls.
pub fn call_tree<'m>(m: &'m Module, kernel: &str) -> Vec<&'m Function> {
    let mut out: Vec<&Function> = Vec::new();
    let mut todo = vec![kernel.to_string()];
    while let Some(name) = todo.pop() {
        // A `.func` may be declared (prototype) before it is defined: take the definition.
        let Some(f) = m.functions().find(|f| f.name == name && f.body.is_some()) else {
            continue;
        };
        if out.iter().any(|g| g.name == f.name) {
            continue;
        }
        for i in f.instructions().filter(|i| i.decode().kind == OpKind::Call) {
            for o in &i.operands {
                if let Operand::Symbol(s) = o {
                    todo.push(s.clone());
                }
            }
        }
        out.push(f);
    }
    out
}

fn build_lines(m: &Module, kernel: &str) -> BuildLines {
    let mut b = BuildLines {
        ops: BTreeMap::new(),
        inlined: BTreeMap::new(),
        fused: BTreeMap::new(),
        special: BTreeMap::new(),
        other: BTreeMap::new(),
        ftz: BTreeMap::new(),
        contractible: BTreeMap::new(),
    };
    let names = crate::units::debug_strings(m);
    for f in call_tree(m, kernel) {
        let d = Decoded::of(f);
        let graph = Graph::of(&d, &Cfg::build(&d));
        let in_library = is_library(&f.name);
        for k in 0..d.len() {
            let (inst, loc, op) = (d.insts[k], d.locs[k], &d.ops[k]);
            let Some(fp) = classify_op(inst, op) else {
                continue;
            };
            let at = loc.map_or(SourceLine { file: 0, line: 0 }, |l| SourceLine {
                file: l.file,
                line: l.line,
            });
            if let Some(i) = loc.and_then(|l| l.inlined.as_ref()) {
                let site = SourceLine {
                    file: i.file,
                    line: i.line,
                };
                let v = b.inlined.entry(at).or_default();
                if !v.contains(&site) {
                    v.push(site);
                }
            }
            let ops = b.ops.entry(at).or_default();
            match ops.iter_mut().find(|(n, _)| *n == fp.name) {
                Some((_, c)) => *c += 1,
                None => ops.push((fp.name.clone(), 1)),
            }
            *b.fused.entry(at).or_default() += u32::from(fp.fused);
            if contractible(&d, &graph, inst) {
                *b.contractible.entry(at).or_default() += 1;
            }
            let other = b.other.entry(at).or_default();
            // Approximations inside a math library's code (libdevice's `log` seeds its division
            // with `rcp.approx.ftz.f64`) are the library's, refined there: not the user's.
            let library = in_library
                || inlined_from_library(loc, &names)
                || (op.kind == OpKind::Rcp && fp.ty == "f64" && fp.accuracy == Accuracy::Approx);
            // A library routine's `.ftz` (expf's `ex2.approx.ftz`) is its own choice, made
            // under every flag set: not the user's, not the flag set's.
            if !library {
                *b.ftz.entry(at).or_default() += u32::from(fp.ftz);
            }
            match (&op.kind, fp.accuracy) {
                _ if library => {}
                (OpKind::Div | OpKind::Rcp, Accuracy::Full | Accuracy::Approx) => {
                    other.push(Highlight::ApproxDiv {
                        op: fp.name.clone(),
                    })
                }
                (OpKind::Sqrt, Accuracy::Approx) => other.push(Highlight::ApproxSqrt {
                    op: fp.name.clone(),
                }),
                (_, Accuracy::Approx) => b.special.entry(at).or_default().push(fp.name.clone()),
                _ => {}
            }
            if fp.conversion == Some(Conversion::FloatToUnsigned) {
                other.push(Highlight::FloatToUnsigned {
                    op: fp.name.clone(),
                    may_be_negative: may_be_negative(&d, &graph, inst),
                });
            }
        }
    }
    b
}

/// Whether the code under `loc` was inlined from a math library routine (libdevice, CUDA's
/// `__internal_*`, a math function's wrapper); `names` is [`crate::units::debug_strings`].
pub(crate) fn inlined_from_library(
    loc: Option<&Loc>,
    names: &std::collections::HashMap<String, String>,
) -> bool {
    loc.and_then(|l| l.inlined.as_ref())
        .and_then(|i| names.get(&i.function_name))
        .is_some_and(|n| is_library(n) || math_function(n).is_some())
}

/// Whether two highlights are of the same kind (approximate division, square root, ...).
fn same_kind(a: &Highlight, b: &Highlight) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Whether `inst` is an unrounded float `mul` whose every use is an unrounded `add`/`sub` of
/// the same type (see [`Highlight::Contractible`]).
pub(crate) fn contractible(d: &Decoded, g: &Graph, inst: &Instruction) -> bool {
    let unrounded = |op: &Op, arith: &[Arith]| {
        matches!(op.kind, OpKind::Arith(a) if arith.contains(&a))
            && op.rounding != Some(Rounding::Rn)
            && !op.sat
            && matches!(op.ty, Some(ValueType::F32 | ValueType::F64))
    };
    let op = inst.decode();
    if !unrounded(&op, &[Arith::Mul]) {
        return false;
    }
    let mut users = g.uses_of(inst.id).peekable();
    if users.peek().is_none() {
        return false;
    }
    users.all(|e| {
        g.index_of(e.user).is_some_and(|k| {
            unrounded(&d.ops[k], &[Arith::Add, Arith::Sub]) && d.ops[k].ty == op.ty
        })
    })
}

/// Whether the converted value may be negative, from its definitions (see
/// [`Highlight::FloatToUnsigned`]).
pub(crate) fn may_be_negative(d: &Decoded, g: &Graph, cvt: &Instruction) -> bool {
    let Some(Operand::Reg(src)) = cvt.operands.get(1) else {
        return true;
    };
    let src = g.regs.lookup(src);
    let defs: Vec<(&Instruction, &Op)> = g
        .defs_of(cvt.id)
        .filter(|e| Some(e.reg) == src)
        .filter_map(|e| g.index_of(e.def))
        .map(|k| (d.insts[k], &d.ops[k]))
        .collect();
    if defs.is_empty() {
        return true;
    }
    !defs.iter().all(|(d, op)| match op.kind {
        OpKind::Arith(Arith::Abs) | OpKind::Sqrt | OpKind::Rsqrt => true,
        OpKind::Approx(MathFn::Ex2) => true,
        OpKind::Convert { from, .. } => from.is_unsigned(),
        OpKind::Arith(Arith::Mul) => {
            d.operands.get(1).is_some() && d.operands.get(1) == d.operands.get(2)
        }
        OpKind::Arith(Arith::Max) => d.operands[1..].iter().any(|o| match o {
            Operand::Imm(Imm::F32(bits)) => f32::from_bits(*bits) >= 0.0,
            Operand::Imm(Imm::F64(bits)) => f64::from_bits(*bits) >= 0.0,
            _ => false,
        }),
        _ => false,
    })
}

/// Compares `kernel` across `builds` (name, module). `reference` names the build that
/// contraction and approximate functions are measured against (normally `strict`). `None` when
/// no build has the kernel.
pub fn compare(
    kernel: &str,
    builds: &[(&str, &Module)],
    reference: Option<&str>,
) -> Option<KernelReport> {
    if !builds.iter().any(|(_, m)| m.function(kernel).is_some()) {
        return None;
    }
    let per: Vec<(&str, BuildLines)> = builds
        .iter()
        .map(|(n, m)| (*n, build_lines(m, kernel)))
        .collect();
    let reference = reference.and_then(|r| per.iter().find(|(n, _)| *n == r));
    let mut callees = Vec::new();
    for (_, m) in builds {
        for f in call_tree(m, kernel).into_iter().skip(1) {
            if !callees.contains(&f.name) {
                callees.push(f.name.clone());
            }
        }
    }
    let mut all_lines: Vec<SourceLine> = per
        .iter()
        .flat_map(|(_, b)| b.ops.keys().copied())
        .collect();
    all_lines.sort();
    all_lines.dedup();
    let lines = all_lines
        .into_iter()
        .map(|at| {
            let mut inlined_at = Vec::new();
            let builds = per
                .iter()
                .map(|(name, b)| {
                    for s in b.inlined.get(&at).into_iter().flatten() {
                        if !inlined_at.contains(s) {
                            inlined_at.push(*s);
                        }
                    }
                    let mut highlights = Vec::new();
                    let fused = b.fused.get(&at).copied().unwrap_or(0);
                    let ref_fused = reference.map(|(_, r)| r.fused.get(&at).copied().unwrap_or(0));
                    if fused > ref_fused.unwrap_or(0) {
                        highlights.push(Highlight::Contraction {
                            fused,
                            reference: ref_fused,
                        });
                    }
                    if let Some(&pairs) = b.contractible.get(&at).filter(|&&n| n > 0) {
                        highlights.push(Highlight::Contractible { pairs });
                    }
                    let others = b.other.get(&at).map(Vec::as_slice).unwrap_or_default();
                    let ref_others = reference
                        .map(|(_, r)| r.other.get(&at).map(Vec::as_slice).unwrap_or_default());
                    for h in others {
                        // An approximation the reference has as often on this line is not the
                        // flag set's doing: library code (expf's rcp.approx) or an intrinsic.
                        let same = |v: &[Highlight]| v.iter().filter(|x| same_kind(x, h)).count();
                        let ieee = |ops: Option<&Vec<(String, u32)>>| -> u32 {
                            let prefixes: &[&str] = match h {
                                Highlight::ApproxSqrt { .. } => &["sqrt.rn."],
                                _ => &["div.rn.", "rcp.rn."],
                            };
                            ops.into_iter()
                                .flatten()
                                .filter(|(o, _)| prefixes.iter().any(|p| o.starts_with(p)))
                                .map(|(_, n)| n)
                                .sum()
                        };
                        let approx = matches!(
                            h,
                            Highlight::ApproxDiv { .. } | Highlight::ApproxSqrt { .. }
                        );
                        let as_in_reference = reference.is_some_and(|(_, r)| {
                            ref_others.is_some_and(|ro| same(ro) >= same(others))
                                && ieee(r.ops.get(&at)) <= ieee(b.ops.get(&at))
                        });
                        if approx && as_in_reference {
                            continue;
                        }
                        // One finding per kind of instruction and line, however often unrolled.
                        if !highlights.contains(h) {
                            highlights.push(h.clone());
                        }
                    }
                    let special = b.special.get(&at).cloned().unwrap_or_default();
                    let ref_special = reference
                        .map(|(_, r)| r.special.get(&at).map_or(0, Vec::len))
                        .unwrap_or(0);
                    if special.len() > ref_special {
                        highlights.push(Highlight::ApproxFunction { ops: special });
                    }
                    // Instructions that flush in the reference too (built without ftz) are
                    // written into the code: CUDA's own expf uses `ex2.approx.ftz` whatever the
                    // flags. Only the flushes beyond the reference's are the flag set's doing.
                    let ref_ftz = reference
                        .map(|(_, r)| r.ftz.get(&at).copied().unwrap_or(0))
                        .unwrap_or(0);
                    let ftz = b.ftz.get(&at).copied().unwrap_or(0).saturating_sub(ref_ftz);
                    if ftz > 0 {
                        highlights.push(Highlight::Ftz { count: ftz });
                    }
                    LineBuild {
                        build: name.to_string(),
                        ops: b.ops.get(&at).cloned().unwrap_or_default(),
                        highlights,
                        sass: None,
                    }
                })
                .collect();
            LineReport {
                at,
                inlined_at,
                builds,
            }
        })
        .collect();
    Some(KernelReport {
        kernel: kernel.to_string(),
        callees,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::fixture;

    fn line(r: &KernelReport, n: u32) -> &LineReport {
        r.lines.iter().find(|l| l.at.line == n).unwrap()
    }

    #[test]
    fn ray_step_highlights_per_flag_set() {
        let (d, s, f) = (
            fixture("ray_step.default"),
            fixture("ray_step.strict"),
            fixture("ray_step.fast"),
        );
        let builds = [("default", &d), ("strict", &s), ("fast", &f)];
        let r = compare("ray_step", &builds, Some("strict")).unwrap();
        let l8 = line(&r, 8);
        // `img_shift_x - (...) * reci_pix_d` is mul.f32 + sub.f32: contractible by ptxas.
        assert_eq!(
            l8.builds[0].highlights,
            [
                Highlight::Contraction {
                    fused: 1,
                    reference: Some(0)
                },
                Highlight::Contractible { pairs: 1 }
            ]
        );
        assert!(l8.builds[1].highlights.is_empty());
        assert_eq!(
            l8.builds[1].ops,
            [
                ("cvt.rn.f32.s32".to_string(), 1),
                ("mul.rn.f32".to_string(), 2),
                ("add.rn.f32".to_string(), 1),
                ("sub.rn.f32".to_string(), 1)
            ]
        );
        assert!(l8.notable());
        // The division: IEEE in default and strict, approximate with fast math.
        let l9 = line(&r, 9);
        assert!(l9.builds[0].highlights.is_empty());
        assert_eq!(
            l9.builds[2].highlights,
            [
                Highlight::ApproxDiv {
                    op: "div.approx.ftz.f32".into()
                },
                Highlight::Ftz { count: 1 }
            ]
        );
        // The cast of a product that may be negative, in every build.
        let l10 = line(&r, 10);
        for b in &l10.builds {
            assert!(
                b.highlights.iter().any(|h| matches!(
                    h,
                    Highlight::FloatToUnsigned {
                        may_be_negative: true,
                        ..
                    }
                )),
                "{b:?}"
            );
        }
    }

    #[test]
    fn inlined_lines_and_callees() {
        let (d, s) = (fixture("calls.default"), fixture("calls.strict"));
        let r = compare("calls", &[("default", &d), ("strict", &s)], Some("strict")).unwrap();
        assert_eq!(r.callees, ["_Z6scaleddd"]);
        // The callee's line 4 (a / b + 1.0) is part of the kernel's report.
        assert_eq!(line(&r, 4).builds[0].ops[0], ("div.rn.f64".to_string(), 1));
        // axpy (line 9) inlined at 17: fma in default, mul + add in strict.
        let l9 = line(&r, 9);
        assert_eq!(l9.inlined_at, [SourceLine { file: 1, line: 17 }]);
        assert!(matches!(
            l9.builds[0].highlights[..],
            [Highlight::Contraction { .. }]
        ));
        assert!(compare("nope", &[("default", &d)], None).is_none());
    }

    #[test]
    fn fast_math_special_functions_are_flagged_against_strict() {
        let (s, f) = (fixture("divsqrt.strict"), fixture("divsqrt.fast"));
        let r = compare("divsqrt", &[("strict", &s), ("fast", &f)], Some("strict")).unwrap();
        let l8 = line(&r, 8);
        // rsqrt and ex2 are approximate in both builds: not a difference on their own.
        assert!(!l8.builds[0]
            .highlights
            .iter()
            .any(|h| matches!(h, Highlight::ApproxFunction { .. })));
        let fast: Vec<&str> = l8.builds[1]
            .highlights
            .iter()
            .map(|h| match h {
                Highlight::ApproxDiv { .. } => "div",
                Highlight::ApproxSqrt { .. } => "sqrt",
                Highlight::ApproxFunction { .. } => "fn",
                Highlight::Ftz { .. } => "ftz",
                Highlight::Contraction { .. } => "fma",
                Highlight::Contractible { .. } => "mul+add",
                Highlight::FloatToUnsigned { .. } => "cvt",
            })
            .collect();
        // div.approx and rcp.approx (1/x) are divisions; sqrt.approx; ftz. rsqrtf and __expf
        // are approximate under strict too, so they are not flagged as a difference.
        assert_eq!(fast, ["div", "sqrt", "div", "ftz"]);
        assert_eq!(l8.builds[1].highlights[3], Highlight::Ftz { count: 10 });
    }

    #[test]
    fn contractible_pairs_and_attached_sass() {
        let d = crate::parse(include_str!("../tests/fixtures/sass/contract.default.ptx")).module;
        let s = crate::parse(include_str!("../tests/fixtures/sass/contract.strict.ptx")).module;
        let builds = [("default", &d), ("strict", &s)];
        let kinds = |k: &str, n: u32| -> Vec<Vec<Highlight>> {
            let r = compare(k, &builds, Some("strict")).unwrap();
            line(&r, n)
                .builds
                .iter()
                .map(|b| b.highlights.clone())
                .collect()
        };
        // x -= m*a: mul.f32 feeding sub.f32 in default; mul.rn/sub.rn in strict.
        assert_eq!(
            kinds("update", 18),
            [vec![Highlight::Contractible { pairs: 1 }], vec![]]
        );
        // __fmul_rn: the mul is rounded, so nothing is contractible.
        assert_eq!(kinds("rounded", 12), [vec![], vec![]]);
        assert_eq!(
            kinds("muladd", 6),
            [
                vec![Highlight::Contraction {
                    fused: 1,
                    reference: Some(0)
                }],
                vec![]
            ]
        );
        // SASS is attached by path: the fixture's line 18 has one FFMA.
        let mut r = compare("update", &builds, Some("strict")).unwrap();
        let path = d.files()[0].1.to_string();
        let sass = crate::sass::Sass {
            lines: vec![crate::sass::SassLine {
                function: "update".into(),
                file: path,
                line: 18,
                ops: [("FFMA".to_string(), 1)].into_iter().collect(),
            }],
        };
        attach_sass(&mut r, "default", &sass, &d.files());
        let l18 = line(&r, 18);
        assert_eq!(
            l18.builds[0].sass.as_ref().and_then(|o| o.get("FFMA")),
            Some(&1)
        );
        assert_eq!(l18.builds[1].sass, None);
    }

    #[test]
    fn gaussian_elimination_fan2_is_contractible_though_its_ptx_has_no_fma() {
        // The case: Fan2 reported "no contraction" while its SASS has FFMA (fan2.sass).
        let m = crate::parse(include_str!("../tests/fixtures/sass/fan2.nvcc.ptx")).module;
        let r = compare("fan2", &[("default", &m)], None).unwrap();
        let flagged: Vec<(u32, Vec<Highlight>)> = r
            .lines
            .iter()
            .filter(|l| !l.builds[0].highlights.is_empty())
            .map(|l| (l.at.line, l.builds[0].highlights.clone()))
            .collect();
        assert_eq!(
            flagged,
            [
                (7, vec![Highlight::Contractible { pairs: 1 }]),
                (9, vec![Highlight::Contractible { pairs: 1 }])
            ]
        );
        let sass = crate::sass::parse_nvdisasm(include_str!("../tests/fixtures/sass/fan2.sass"));
        let mut r = r;
        let files = m.files();
        attach_sass(&mut r, "default", &sass, &files);
        for n in [7, 9] {
            assert_eq!(
                line(&r, n).builds[0]
                    .sass
                    .as_ref()
                    .and_then(|o| o.get("FFMA")),
                Some(&1)
            );
        }
    }

    #[test]
    fn ftz_and_rn_only_lines_are_not_significant() {
        let (d, s, f) = (
            fixture("loop_sum.default"),
            fixture("loop_sum.strict"),
            fixture("loop_sum.fast"),
        );
        let r = compare(
            "loop_sum",
            &[("default", &d), ("strict", &s), ("fast", &f)],
            Some("strict"),
        )
        .unwrap();
        let significant: Vec<u32> = r
            .lines
            .iter()
            .filter(|l| l.significant())
            .map(|l| l.at.line)
            .collect();
        let minor: Vec<u32> = r
            .lines
            .iter()
            .filter(|l| l.notable() && !l.significant())
            .map(|l| l.at.line)
            .collect();
        // Line 7 contracts (fma vs mul.rn + add.rn); the shared-memory adds differ by .rn/.ftz only.
        assert!(significant.contains(&7), "{significant:?}");
        assert!(
            !minor.is_empty() && minor.iter().all(|n| !significant.contains(n)),
            "{minor:?}"
        );
        assert_eq!(
            without_ftz_and_rn(&[
                ("add.rn.ftz.f32".into(), 2),
                ("add.f32".into(), 1),
                ("div.rn.f32".into(), 1)
            ]),
            [("add.f32".to_string(), 3), ("div.f32".to_string(), 1)]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn approximations_inside_libdevice_are_not_the_users() {
        // nvcc's promotion.cu: pow's __internal_accurate_pow seeds with rcp.approx.ftz.f64.
        let m = crate::parse(include_str!(
            "../tests/fixtures/promotion/promotion.nvcc.ptx"
        ))
        .module;
        assert!(m
            .functions()
            .flat_map(|f| f.instructions())
            .map(Instruction::decode)
            .any(|o| o.kind == OpKind::Rcp && o.approx && o.ftz && o.ty == Some(ValueType::F64)));
        let r = compare("power", &[("default", &m)], None).unwrap();
        let approx: Vec<&Highlight> = r
            .lines
            .iter()
            .flat_map(|l| &l.builds[0].highlights)
            .filter(|h| matches!(h, Highlight::ApproxDiv { .. }))
            .collect();
        assert!(approx.is_empty(), "{approx:?}");
    }

    #[test]
    fn clamped_casts_are_not_flagged_as_maybe_negative() {
        let m = fixture("hand_written");
        let r = compare("extra", &[("ptx", &m)], None).unwrap();
        let casts: Vec<&Highlight> = r
            .lines
            .iter()
            .flat_map(|l| &l.builds[0].highlights)
            .filter(|h| matches!(h, Highlight::FloatToUnsigned { .. }))
            .collect();
        // cvt.rni.sat.u32.f32 of max(x, 0): non-negative.
        assert_eq!(
            casts,
            [&Highlight::FloatToUnsigned {
                op: "cvt.rni.sat.u32.f32".into(),
                may_be_negative: false
            }]
        );
    }

    /// One kernel with `body` under a `.loc 1 5 1`, as a build's module.
    fn one_line(body: &str) -> Module {
        let ptx = format!(
            ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .f32 %f<4>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\n.loc 1 5 1\nld.global.f32 %f1, [%rd1];\n{body}\nst.global.f32 [%rd1], %f3;\nret;\n}}\n.file 1 \"k.cu\"\n"
        );
        crate::parse(&ptx).module
    }

    #[test]
    fn a_flush_the_reference_has_too_is_not_the_flag_sets() {
        // expf's range-reduced `ex2.approx.ftz` is in the strict build too (built without ftz).
        let d = one_line("mul.f32 %f2, %f1, 0f3FB8AA3B;\nex2.approx.ftz.f32 %f3, %f2;");
        let s = one_line("mul.rn.f32 %f2, %f1, 0f3FB8AA3B;\nex2.approx.ftz.f32 %f3, %f2;");
        let f = one_line("mul.ftz.f32 %f2, %f1, 0f3FB8AA3B;\nex2.approx.ftz.f32 %f3, %f2;");
        let r = compare(
            "k",
            &[("default", &d), ("strict", &s), ("fast", &f)],
            Some("strict"),
        )
        .unwrap();
        let hl: Vec<&Vec<Highlight>> = r.lines[0].builds.iter().map(|b| &b.highlights).collect();
        assert!(hl[0].is_empty() && hl[1].is_empty(), "{hl:?}");
        // fast flushes the multiply as well: that one is its doing.
        assert_eq!(hl[2], &vec![Highlight::Ftz { count: 1 }]);
    }

    #[test]
    fn what_a_flag_set_does_everywhere_is_folded_into_one_entry() {
        let (d, s, f) = (
            fixture("ray_step.default"),
            fixture("ray_step.strict"),
            fixture("ray_step.fast"),
        );
        let mut r = compare(
            "ray_step",
            &[("default", &d), ("strict", &s), ("fast", &f)],
            Some("strict"),
        )
        .unwrap();
        let effects = fold_flag_set_effects(&mut r);
        let div = effects
            .iter()
            .find(|e| e.build == "fast" && e.what == "approximate division")
            .unwrap();
        assert_eq!(div.lines, [SourceLine { file: 1, line: 9 }], "{effects:?}");
        assert!(div.everywhere, "{effects:?}");
        assert!(effects.iter().all(|e| e.build == "fast"), "{effects:?}");
        // What the source decides stays on its line: the contraction, the unsigned cast.
        let fast8 = &line(&r, 8).builds[2].highlights;
        assert!(
            fast8.iter().all(|h| matches!(
                h,
                Highlight::Contraction { .. }
                    | Highlight::Contractible { .. }
                    | Highlight::FloatToUnsigned { .. }
            )),
            "{fast8:?}"
        );
        assert!(fast8
            .iter()
            .any(|h| matches!(h, Highlight::Contraction { .. })));
    }
}
