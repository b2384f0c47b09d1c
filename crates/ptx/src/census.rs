//! The floating-point census: what a function computes, per function, per source line and per
//! loop, counted statically from its PTX.
//!
//! Counts are static (one per instruction in the text, not per execution): they say *what kind*
//! of arithmetic the compiler chose and where, which is what changes results. Arithmetic
//! intensity is therefore a static estimate too: floating-point operations per byte of
//! off-chip traffic (global, local and generic loads and stores; shared, param and const
//! accesses stay on chip and are excluded) over the instructions of a loop nest, i.e. per
//! iteration of its innermost body when the loop is not nested.

use crate::cfg::Cfg;
use crate::decode::Decoded;
use crate::model::*;
use crate::op::{Arith, BitOp, Op, OpKind, Space};
use serde::Serialize;
use std::collections::BTreeMap;

/// How an instruction rounds or approximates, for the operations where that is a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accuracy {
    /// IEEE, correctly rounded (`div.rn`, `sqrt.rn`, `rcp.rn`, and add/sub/mul/fma).
    Ieee,
    /// `div.full.f32`: full-range approximation, not IEEE (seed 003 §3.2.5).
    Full,
    /// `.approx`: hardware approximation (`div.approx`, `sqrt.approx`, `rsqrt`, `sin`, `ex2`...).
    Approx,
}

/// The direction of a conversion, as far as floating point is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Conversion {
    /// Between float types (`cvt.f32.f64`): may round or widen.
    FloatToFloat,
    /// Float to a signed integer (`cvt.rzi.s32.f32`): rounds, saturates at the type's range.
    FloatToSigned,
    /// Float to an unsigned integer: undefined in C++ for negative values (seed 003 §3.2.4).
    FloatToUnsigned,
    /// Integer to float (`cvt.rn.f32.s32`): rounds when the integer has more bits than the
    /// significand.
    IntToFloat,
}

/// One floating-point instruction, classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FpOp {
    /// The full opcode as written (`div.full.f32`).
    pub name: String,
    /// `f32`, `f64`, `f16`, ...: the (destination) float type.
    pub ty: String,
    /// Floating-point operations it counts for (fma = 2, abs/neg = 0).
    pub flops: u32,
    /// IEEE, full-range approximate or hardware-approximate.
    pub accuracy: Accuracy,
    /// `.ftz`: subnormal inputs and results flushed to zero.
    pub ftz: bool,
    /// `.sat`: the result clamped to [0, 1] (NaN to 0).
    pub sat: bool,
    /// `fma`/`mad` on floats: a product and a sum rounded once.
    pub fused: bool,
    /// For `cvt`: which direction it converts in; `None` for arithmetic.
    pub conversion: Option<Conversion>,
}

/// Whether an instruction the census classifies, named by its opcode and modifiers
/// (`div.full.f32`, or `add.f64` as the study keys its counts), is floating-point arithmetic:
/// everything but sign changes (`abs`, `neg`, `copysign`) and conversions
/// ([`crate::op::Op::counts_as_arithmetic`] of its [`crate::op::decode_name`]). The one
/// definition of an "FP instruction" wherever mantissa counts them.
pub fn is_arithmetic_name(full_opcode: &str) -> bool {
    crate::op::decode_name(full_opcode).counts_as_arithmetic()
}

/// [`is_arithmetic_name`] of a classified instruction.
pub fn is_arithmetic(op: &FpOp) -> bool {
    is_arithmetic_name(&op.name)
}

/// Classifies a floating-point instruction; `None` for anything else.
pub fn classify(inst: &Instruction) -> Option<FpOp> {
    classify_op(inst, &inst.decode())
}

/// [`classify`] of an instruction already decoded.
pub fn classify_op(inst: &Instruction, op: &Op) -> Option<FpOp> {
    let mut conversion = None;
    let ty = match op.kind {
        OpKind::Convert { from, to } => {
            conversion = Some(match (to.is_float(), from.is_float()) {
                (true, true) => Conversion::FloatToFloat,
                (false, true) if to.is_unsigned() => Conversion::FloatToUnsigned,
                (false, true) => Conversion::FloatToSigned,
                (true, false) => Conversion::IntToFloat,
                (false, false) => return None,
            });
            if from.is_float() {
                from
            } else {
                to
            }
        }
        _ => op.ty.filter(|t| t.is_float())?,
    };
    let (flops, accuracy) = match op.kind {
        OpKind::Arith(Arith::Add | Arith::Sub | Arith::Mul | Arith::Min | Arith::Max) => {
            (1, Accuracy::Ieee)
        }
        OpKind::Fma => (2, Accuracy::Ieee),
        OpKind::Div if op.full => (1, Accuracy::Full),
        OpKind::Div | OpKind::Rcp | OpKind::Sqrt if op.approx => (1, Accuracy::Approx),
        OpKind::Div | OpKind::Rcp | OpKind::Sqrt => (1, Accuracy::Ieee),
        OpKind::Rsqrt | OpKind::Approx(_) => (1, Accuracy::Approx),
        OpKind::Arith(Arith::Abs | Arith::Neg) | OpKind::Bits(BitOp::Copysign) => {
            (0, Accuracy::Ieee)
        }
        OpKind::Convert { .. } => (0, Accuracy::Ieee),
        _ => return None,
    };
    Some(FpOp {
        name: inst.full_opcode(),
        ty: ty.name().to_string(),
        flops,
        accuracy,
        ftz: op.ftz,
        sat: op.sat,
        fused: op.kind == OpKind::Fma,
        conversion,
    })
}

/// A memory access: its kind, state space and bytes per thread.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Access {
    /// `ld` (including `ldu`), `st`, or `atom` (also `red`).
    pub op: String,
    /// The state space without its dot (`global`, `shared`, `local`, `param`, `generic`, ...).
    pub space: String,
    /// Bytes moved per thread (the element width times the vector width).
    pub bytes: u32,
}

/// Classifies a load, store or atomic; `None` for anything else.
pub fn access(inst: &Instruction) -> Option<Access> {
    access_op(&inst.decode())
}

/// [`access`] of a decoded instruction. Texture and surface accesses are not counted.
pub fn access_op(op: &Op) -> Option<Access> {
    let (name, space) = match op.kind {
        OpKind::Load(s) => ("ld", s),
        OpKind::Store(s) => ("st", s),
        OpKind::Atom(s) | OpKind::Red(s) => ("atom", s),
        _ => return None,
    };
    if matches!(space, Space::Tex | Space::Surf) {
        return None;
    }
    Some(Access {
        op: name.into(),
        space: space.name().into(),
        bytes: op.ty?.bytes() * op.vector,
    })
}

/// How many accesses of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessCount {
    /// The kind of access counted.
    #[serde(flatten)]
    pub access: Access,
    /// How many instructions make it.
    pub count: u32,
}

/// Counts over a set of instructions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Floating-point instructions by full opcode (`fma.rn.f32` → 3).
    pub ops: BTreeMap<String, u32>,
    /// Floating-point operations on f32 (an fma counts 2).
    pub flops_f32: u64,
    /// Floating-point operations on f64 (an fma counts 2).
    pub flops_f64: u64,
    /// Other float types (f16, bf16, ...).
    pub flops_other: u64,
    /// `fma`/`mad` on floats (contractions when the source had separate `*` and `+`).
    pub fused: u32,
    /// Division, square root and special functions not correctly rounded (`full`, `approx`).
    pub approximate: u32,
    /// Instructions with `.ftz` (subnormals flushed to zero).
    pub ftz: u32,
    /// Float-to-float conversions (`cvt.f32.f64`, ...).
    pub conversions_float_to_float: u32,
    /// Float-to-signed-integer conversions.
    pub conversions_float_to_signed: u32,
    /// Float-to-unsigned-integer conversions: undefined in C++ for negative values.
    pub conversions_float_to_unsigned: u32,
    /// Integer-to-float conversions.
    pub conversions_int_to_float: u32,
    /// Loads, stores and atomics by op, space and width, sorted.
    pub accesses: Vec<AccessCount>,
    /// Bytes per thread of off-chip accesses (global, local, generic).
    pub offchip_bytes: u64,
}

impl Counts {
    fn add_op(&mut self, inst: &Instruction, op: &Op) {
        if let Some(fp) = classify_op(inst, op) {
            *self.ops.entry(fp.name.clone()).or_default() += 1;
            let flops = u64::from(fp.flops);
            match fp.ty.as_str() {
                "f32" => self.flops_f32 += flops,
                "f64" => self.flops_f64 += flops,
                _ => self.flops_other += flops,
            }
            self.fused += u32::from(fp.fused);
            self.approximate += u32::from(fp.accuracy != Accuracy::Ieee);
            self.ftz += u32::from(fp.ftz);
            match fp.conversion {
                Some(Conversion::FloatToFloat) => self.conversions_float_to_float += 1,
                Some(Conversion::FloatToSigned) => self.conversions_float_to_signed += 1,
                Some(Conversion::FloatToUnsigned) => self.conversions_float_to_unsigned += 1,
                Some(Conversion::IntToFloat) => self.conversions_int_to_float += 1,
                None => {}
            }
        }
        if let Some(a) = access_op(op) {
            if op.space().is_some_and(Space::is_offchip) {
                self.offchip_bytes += u64::from(a.bytes);
            }
            match self.accesses.iter_mut().find(|c| c.access == a) {
                Some(c) => c.count += 1,
                None => {
                    self.accesses.push(AccessCount {
                        access: a,
                        count: 1,
                    });
                    self.accesses.sort_by(|x, y| x.access.cmp(&y.access));
                }
            }
        }
    }

    /// All floating-point operations counted.
    pub fn flops(&self) -> u64 {
        self.flops_f32 + self.flops_f64 + self.flops_other
    }

    /// Floating-point operations per off-chip byte; `None` when nothing goes off chip.
    pub fn intensity(&self) -> Option<f64> {
        (self.offchip_bytes > 0).then(|| self.flops() as f64 / self.offchip_bytes as f64)
    }

    /// Count of one full opcode (0 when absent).
    pub fn op(&self, name: &str) -> u32 {
        self.ops.get(name).copied().unwrap_or(0)
    }

    /// Count of accesses with this op, space and width.
    pub fn accesses_of(&self, op: &str, space: &str, bytes: u32) -> u32 {
        self.accesses
            .iter()
            .find(|c| c.access.op == op && c.access.space == space && c.access.bytes == bytes)
            .map_or(0, |c| c.count)
    }
}

/// Where in the source an instruction is, from the `.loc` before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SourceLine {
    /// The `.file` index (0 for instructions before any `.loc`).
    pub file: u32,
    /// 0 for instructions before any `.loc`.
    pub line: u32,
}

/// Counts for one source line, with the lines it was inlined at (if any).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineCensus {
    /// The source line counted.
    pub at: SourceLine,
    /// Call sites (file, line) this code was inlined at, when it comes from an inlined function.
    pub inlined_at: Vec<SourceLine>,
    /// Counts over this line's instructions.
    pub counts: Counts,
    /// The floating-point instructions of this line, in order.
    pub fp: Vec<(InstId, FpOp)>,
}

/// A loop found from a backward branch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopCensus {
    /// The label branched back to.
    pub header: String,
    /// 1 for an outermost loop.
    pub depth: u32,
    /// Source lines of the loop's instructions.
    pub lines: Vec<SourceLine>,
    /// Counts over the loop's instructions, nested loops included.
    pub counts: Counts,
    /// Floating-point operations per off-chip byte in one trip of the loop body (see
    /// [`Counts::intensity`]): what bounds a loop that runs long.
    pub intensity: Option<f64>,
}

/// The census of one function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCensus {
    /// The function's symbol name.
    pub name: String,
    /// Kernel or device function.
    pub kind: FunctionKind,
    /// Static counts over the body: each instruction once, however often a loop runs it.
    pub total: Counts,
    /// [`Counts::intensity`] of `total`.
    pub intensity: Option<f64>,
    /// By source line, in line order.
    pub lines: Vec<LineCensus>,
    /// The loops found, each with its nesting depth.
    pub loops: Vec<LoopCensus>,
    /// Device functions this one calls.
    pub calls: Vec<String>,
}

/// Each instruction of `f` with the `.loc` in force for it.
pub fn located(f: &Function) -> Vec<(&Instruction, Option<&Loc>)> {
    let mut loc = None;
    let mut out = Vec::new();
    for s in f.body.iter().flatten() {
        match s {
            Statement::Loc(l) => loc = Some(l),
            Statement::Inst(i) => out.push((i, loc)),
            _ => {}
        }
    }
    out
}

/// Loops of `f` as (header label, first statement index, last statement index): the natural
/// loops of its control-flow graph ([`crate::cfg`]), each spanning its header's label to the
/// last of its instructions, including blocks the compiler laid out before the header. A
/// header without a label (only the function's first block can be one) is named `entry`.
pub fn loops(f: &Function) -> Vec<(String, usize, usize)> {
    let d = Decoded::of(f);
    let cfg = Cfg::build(&d);
    loop_spans(&d, &cfg)
}

fn loop_spans(d: &Decoded, cfg: &Cfg) -> Vec<(String, usize, usize)> {
    let body = d.function.body.as_deref().unwrap_or(&[]);
    (0..cfg.loops.len())
        .map(|k| {
            let l = &cfg.loops[k];
            let label_at = l.label.as_deref().and_then(|name| {
                body.iter()
                    .position(|s| matches!(s, Statement::Label(x, _) if x == name))
            });
            let (first, last) = cfg
                .loop_instructions(k)
                .map(|i| d.stmt[i])
                .fold((usize::MAX, 0), |(a, z), s| (a.min(s), z.max(s)));
            (
                l.label.clone().unwrap_or_else(|| "entry".into()),
                label_at.map_or(first, |at| at.min(first)),
                last,
            )
        })
        .collect()
}

/// The census of every function with a body.
pub fn census(m: &Module) -> Vec<FunctionCensus> {
    m.functions()
        .filter(|f| f.body.is_some())
        .map(function_census)
        .collect()
}

/// The census of one function.
pub fn function_census(f: &Function) -> FunctionCensus {
    let d = Decoded::of(f);
    census_of(&d, &Cfg::build(&d))
}

/// The census of a decoded function with its control-flow graph.
pub fn census_of(d: &Decoded, cfg: &Cfg) -> FunctionCensus {
    let mut total = Counts::default();
    let mut lines: BTreeMap<SourceLine, LineCensus> = BTreeMap::new();
    let mut calls = Vec::new();
    for k in 0..d.len() {
        let (inst, loc, op) = (d.insts[k], d.locs[k], &d.ops[k]);
        total.add_op(inst, op);
        if op.kind == OpKind::Call {
            if let Some(Operand::Symbol(name)) = inst
                .operands
                .iter()
                .find(|o| matches!(o, Operand::Symbol(_)))
            {
                if !calls.contains(name) {
                    calls.push(name.clone());
                }
            }
        }
        let at = source_line(loc);
        let entry = lines.entry(at).or_insert_with(|| LineCensus {
            at,
            inlined_at: Vec::new(),
            counts: Counts::default(),
            fp: Vec::new(),
        });
        entry.counts.add_op(inst, op);
        if let Some(i) = loc.and_then(|l| l.inlined.as_ref()) {
            let site = SourceLine {
                file: i.file,
                line: i.line,
            };
            if !entry.inlined_at.contains(&site) {
                entry.inlined_at.push(site);
            }
        }
        if let Some(fp) = classify_op(inst, op) {
            entry.fp.push((inst.id, fp));
        }
    }
    let loops = (0..cfg.loops.len())
        .map(|k| {
            let l = &cfg.loops[k];
            let mut counts = Counts::default();
            let mut ls = Vec::new();
            for i in cfg.loop_instructions(k) {
                counts.add_op(d.insts[i], &d.ops[i]);
                let at = source_line(d.locs[i]);
                if !ls.contains(&at) {
                    ls.push(at);
                }
            }
            ls.sort();
            LoopCensus {
                header: l.label.clone().unwrap_or_else(|| "entry".into()),
                depth: l.depth,
                lines: ls,
                intensity: counts.intensity(),
                counts,
            }
        })
        .collect();
    FunctionCensus {
        name: d.function.name.clone(),
        kind: d.function.kind,
        intensity: total.intensity(),
        total,
        lines: lines.into_values().collect(),
        loops,
        calls,
    }
}

fn source_line(loc: Option<&Loc>) -> SourceLine {
    loc.map_or(SourceLine { file: 0, line: 0 }, |l| SourceLine {
        file: l.file,
        line: l.line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::fixture;

    fn kernel(m: &Module, name: &str) -> FunctionCensus {
        function_census(m.function(name).unwrap())
    }

    fn line(c: &FunctionCensus, n: u32) -> &LineCensus {
        c.lines.iter().find(|l| l.at.line == n).unwrap()
    }

    #[test]
    fn divsqrt_default_exact_counts() {
        let c = kernel(&fixture("divsqrt.default"), "divsqrt");
        let expect = [
            ("add.f32", 4),
            ("mul.f32", 2),
            ("div.rn.f32", 1),
            ("sqrt.rn.f32", 1),
            ("rcp.rn.f32", 1),
            ("rsqrt.approx.f32", 1),
            ("ex2.approx.f32", 1),
            ("cvt.rzi.u32.f32", 1),
            ("cvt.f64.f32", 1),
            ("div.rn.f64", 1),
            ("sqrt.rn.f64", 1),
            ("add.f64", 2),
            ("cvt.rzi.u32.f64", 1),
        ];
        assert_eq!(
            c.total.ops,
            expect.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        );
        assert_eq!(c.total.flops_f32, 11);
        assert_eq!(c.total.flops_f64, 4);
        assert_eq!(c.total.approximate, 2);
        assert_eq!(c.total.ftz, 0);
        assert_eq!(c.total.conversions_float_to_unsigned, 2);
        assert_eq!(c.total.conversions_float_to_float, 1);
        assert_eq!(c.total.accesses_of("ld", "global", 16), 1);
        assert_eq!(c.total.accesses_of("ld", "global", 8), 1);
        assert_eq!(c.total.accesses_of("ld", "param", 8), 5);
        assert_eq!(c.total.accesses_of("st", "global", 4), 3);
        assert_eq!(c.total.accesses_of("st", "global", 8), 1);
        // 16 + 8 loaded, 3 × 4 + 8 stored.
        assert_eq!(c.total.offchip_bytes, 44);
        assert_eq!(c.intensity, Some(15.0 / 44.0));
        // Per source line: line 8 is the f32 expression, line 10 the cast, line 13 the f64 cast.
        let l8 = line(&c, 8);
        assert_eq!(l8.counts.flops_f32, 10);
        assert_eq!(l8.counts.op("div.rn.f32"), 1);
        assert_eq!(line(&c, 10).counts.conversions_float_to_unsigned, 1);
        assert_eq!(line(&c, 13).counts.op("cvt.rzi.u32.f64"), 1);
        assert!(c.loops.is_empty());
    }

    #[test]
    fn flag_sets_change_the_census() {
        let fast = kernel(&fixture("divsqrt.fast"), "divsqrt");
        let strict = kernel(&fixture("divsqrt.strict"), "divsqrt");
        // --use_fast_math: f32 division and sqrt approximate, everything f32 flushed to zero;
        // f64 untouched.
        assert_eq!(fast.total.op("div.rn.f32"), 0);
        assert_eq!(fast.total.op("div.approx.ftz.f32"), 1);
        assert_eq!(fast.total.op("sqrt.approx.ftz.f32"), 1);
        assert_eq!(fast.total.op("div.rn.f64"), 1);
        assert_eq!(fast.total.ftz, 13, "{:?}", fast.total.ops);
        assert_eq!(strict.total.ftz, 0);
        assert_eq!(strict.total.op("div.rn.f32"), 1);
        // The ray step: default contracts the multiply-add, strict does not; fast approximates
        // the division.
        let d = kernel(&fixture("ray_step.default"), "ray_step");
        let s = kernel(&fixture("ray_step.strict"), "ray_step");
        let f = kernel(&fixture("ray_step.fast"), "ray_step");
        assert_eq!(d.total.fused, 1);
        assert_eq!(line(&d, 8).counts.op("fma.rn.f32"), 1);
        assert_eq!(s.total.fused, 0);
        assert_eq!(s.total.op("mul.rn.f32"), 4);
        assert_eq!(s.total.op("add.rn.f32"), 1);
        assert_eq!(s.total.op("sub.rn.f32"), 1);
        assert_eq!(d.total.op("div.rn.f32"), 1);
        assert_eq!(f.total.op("div.approx.ftz.f32"), 1);
        for c in [&d, &s, &f] {
            assert_eq!(
                c.total.conversions_float_to_unsigned, 1,
                "{:?}",
                c.total.ops
            );
            assert_eq!(line(c, 10).counts.conversions_float_to_unsigned, 1);
            assert_eq!(c.total.conversions_int_to_float, 1);
        }
    }

    #[test]
    fn loops_and_intensity_of_loop_sum() {
        let c = kernel(&fixture("loop_sum.default"), "loop_sum");
        let headers: Vec<(&str, u32)> = c
            .loops
            .iter()
            .map(|l| (l.header.as_str(), l.depth))
            .collect();
        assert_eq!(
            headers,
            [("$L__BB0_2", 1), ("$L__BB0_7", 1), ("$L__BB0_10", 1)]
        );
        // The strided sum of squares: one fma (2 flops) per 4-byte global load.
        let first = &c.loops[0];
        assert_eq!(first.counts.op("fma.rn.f32"), 1);
        assert_eq!(first.counts.accesses_of("ld", "global", 4), 1);
        assert_eq!(first.intensity, Some(0.5));
        assert_eq!(
            first.lines,
            [
                SourceLine { file: 1, line: 6 },
                SourceLine { file: 1, line: 7 }
            ]
        );
        // The shared-memory loop unrolled by 4: 4 adds, 4 shared loads, nothing off chip.
        let unrolled = &c.loops[1];
        assert_eq!(unrolled.counts.op("add.f32"), 4);
        assert_eq!(unrolled.counts.accesses_of("ld", "shared", 4), 4);
        assert_eq!(unrolled.intensity, None);
        assert_eq!(c.total.accesses_of("st", "shared", 4), 1);
        // The strict build has separate mul and add in the first loop.
        let s = kernel(&fixture("loop_sum.strict"), "loop_sum");
        assert_eq!(s.loops[0].counts.op("mul.rn.f32"), 1);
        assert_eq!(s.loops[0].counts.op("add.rn.f32"), 1);
        assert_eq!(s.loops[0].counts.fused, 0);
    }

    #[test]
    fn calls_and_inlined_lines() {
        let m = fixture("calls.default");
        let c = kernel(&m, "calls");
        assert_eq!(c.calls, ["_Z6scaleddd"]);
        // axpy's body (line 9) inlined at line 17: one fma there.
        let l9 = line(&c, 9);
        assert_eq!(l9.inlined_at, [SourceLine { file: 1, line: 17 }]);
        assert_eq!(l9.counts.op("fma.rn.f32"), 1);
        assert_eq!(l9.fp.len(), 1);
        let callee = kernel(&m, "_Z6scaleddd");
        assert_eq!(callee.kind, FunctionKind::Func);
        assert_eq!(callee.total.op("div.rn.f64"), 1);
        assert_eq!(callee.total.op("add.f64"), 1);
        assert_eq!(census(&m).len(), 2);
    }
}
