//! Accidental double precision: float code that computes in f64 because of a `2.0` literal, a
//! `0.3` macro, `1.0/(1.0+d)`, `pow(f, 2)` or `exp(-0.1*f)`. C++ promotes the float operand
//! (`cvt.f64.f32`), the arithmetic runs in f64 (1/2 to 1/64 of the f32 rate) and the result is
//! rounded back (`cvt.rn.f32.f64`) when it is assigned to a float.
//!
//! **Regions.** In each function of a kernel's call tree, the instructions that read or write
//! an f64 register are linked by the def-use edges that carry f64 registers ([`Graph`]); a
//! call's `st.param` arguments and `ld.param` results are linked through the call. Each
//! connected set is one region: where f64 values live from their birth to their last use.
//!
//! **The rule that tells an accident from deliberate double.** A region is *carried*, hence
//! intentional, when an f64 value in it outlives the expression: a loop-carried f64 register (a
//! `double` accumulator), an f64 load or store to memory, an f64 parameter of the function, or
//! an f64 return value. A region that enters from f32 (or from an integer) and leaves to f32
//! with nothing carried lives and dies within one expression: it is the accident. Only regions
//! that touch f32 (or integers) at one end are reported; pure f64 code is not a promotion.
//!
//! Library code is no one's accident: `.func`s named `__internal_*` or `__nv_*` (libdevice)
//! are not analysed on their own; their f64 instructions count at the call site.
//!
//! [`source`] reads the source line to name the literal, macro or call responsible and the fix.

pub mod source;

use crate::census::{classify, located, SourceLine};
use crate::graph::Graph;
use crate::model::*;
use crate::op::{OpKind, Space, ValueType};
use crate::regs::RegTable;
use crate::units::debug_strings;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Why a region's double precision looks deliberate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Carried {
    /// An f64 register carried around a loop (a `double` accumulator).
    LoopCarried {
        /// The register.
        register: String,
    },
    /// An f64 value loaded from memory (a `double` array).
    Loaded,
    /// An f64 value stored to memory.
    Stored,
    /// An f64 parameter of the function.
    Parameter {
        /// The parameter's name.
        name: String,
    },
    /// The function returns an f64.
    Returned,
    /// The source converts to double explicitly on a line of the region (`(double)x`).
    ExplicitCast {
        /// The cast as written: `(double)`, `static_cast<double>`, `double(`.
        cast: String,
    },
}

impl Carried {
    /// A short phrase: `f64 %fd23 carried across loop iterations`.
    pub fn describe(&self) -> String {
        match self {
            Carried::LoopCarried { register } => {
                format!("f64 {register} carried across loop iterations")
            }
            Carried::Loaded => "f64 loaded from memory".into(),
            Carried::Stored => "f64 stored to memory".into(),
            Carried::Parameter { name } => format!("f64 parameter {name}"),
            Carried::Returned => "f64 return value".into(),
            Carried::ExplicitCast { cast } => format!("explicit {cast} cast in the source"),
        }
    }
}

/// One f64 region entered from f32 or integers, or left to f32.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Promotion {
    /// The function whose body holds the region.
    pub function: String,
    /// The source line the region is reported at: where it returns to f32 (the assignment),
    /// else where most of it is. Code inlined from a user's function counts at its own line
    /// (in its header); code inlined from a math library at the user line that calls it.
    pub at: SourceLine,
    /// Every source line with instructions of the region (as [`Promotion::at`] counts them).
    pub lines: Vec<SourceLine>,
    /// The f32 registers promoted to f64 (`cvt.f64.f32`), without repeats.
    pub promoted: Vec<String>,
    /// How many `cvt.f64.f32` the region has.
    pub promotions: u32,
    /// How many integer→f64 conversions the region has (`(double)i`, or `i * 0.5`).
    pub from_integers: u32,
    /// How many conversions back to f32 (`cvt.rn.f32.f64`).
    pub to_f32: u32,
    /// f64 immediates read directly by the promoted values' first operations, as numbers
    /// (`0d4000000000000000` is 2.0), without repeats: the constants that caused the promotion.
    pub constants: Vec<f64>,
    /// Double math functions in the region (`pow`, `exp`): from inlined `.loc` function names
    /// and calls.
    pub math: Vec<String>,
    /// f64 arithmetic instructions of the region (conversions not included), static count,
    /// callees' included.
    pub f64_instructions: u32,
    /// Copies of the region's code at `at` (an unrolled loop repeats it): conversions back to
    /// f32 there, at least 1.
    pub copies: u32,
    /// f64 arithmetic instructions per execution of the line `at`: those at `at` (with calls
    /// made there) divided by `copies`, rounded up.
    pub per_execution: u32,
    /// Why the double precision looks deliberate; empty for an accident.
    pub carried: Vec<Carried>,
}

impl Promotion {
    /// Whether the region is the accident (nothing carried), not deliberate double.
    pub fn accidental(&self) -> bool {
        self.carried.is_empty()
    }
}

/// Whether `name` is a library routine (libdevice `__nv_*`, CUDA's `__internal_*`), whose f64
/// code is counted where it is called and whose approximations are not the user's.
pub fn is_library(name: &str) -> bool {
    name.starts_with("__nv_") || name.starts_with("__internal_")
}

/// Double-precision math functions whose float versions end in `f` (`exp` → `expf`).
pub const MATH_FUNCTIONS: &[&str] = &[
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "cospi",
    "erf",
    "erfc",
    "erfcinv",
    "erfinv",
    "exp",
    "exp10",
    "exp2",
    "expm1",
    "fabs",
    "fdim",
    "floor",
    "fma",
    "fmax",
    "fmin",
    "fmod",
    "hypot",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "logb",
    "norm3d",
    "pow",
    "rcbrt",
    "remainder",
    "rhypot",
    "rint",
    "round",
    "rsqrt",
    "sin",
    "sincos",
    "sinh",
    "sinpi",
    "sqrt",
    "tan",
    "tanh",
    "tgamma",
    "trunc",
];

/// The math function a symbol stands for: `pow` for `_ZSt3powIfiEN9__gnu_cxx...`, `exp` for
/// `__nv_exp`, `pow` for `__internal_accurate_pow`; `None` for anything else.
pub fn math_function(symbol: &str) -> Option<&'static str> {
    let known = |s: &str| MATH_FUNCTIONS.iter().copied().find(|m| *m == s);
    if let Some(rest) = symbol.strip_prefix("__nv_") {
        return known(rest);
    }
    if let Some(rest) = symbol.strip_prefix("__internal_") {
        return rest.split('_').rev().find_map(known);
    }
    if let Some(mut rest) = symbol.strip_prefix("_Z") {
        // `_ZSt3pow...` (std::), `_ZN...E` (nested): the first plain name.
        rest = rest.trim_start_matches('N').trim_start_matches("St");
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = rest[..digits].parse().ok()?;
        return known(rest.get(digits..digits + n)?);
    }
    known(symbol)
}

/// Union-find over instruction indices.
struct Sets(Vec<usize>);

impl Sets {
    fn find(&mut self, mut a: usize) -> usize {
        while self.0[a] != a {
            self.0[a] = self.0[self.0[a]];
            a = self.0[a];
        }
        a
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra] = rb;
        }
    }
}

/// The f64 regions of `kernel` and of the functions it calls (library routines excepted),
/// accidental or carried, in function then text order.
pub fn promotions(m: &Module, kernel: &str) -> Vec<Promotion> {
    let names = debug_strings(m);
    let tree = crate::compare::call_tree(m, kernel);
    // Static f64 arithmetic of each function's own call tree, counted where it is called.
    let callee_cost = |name: &str| -> u32 {
        crate::compare::call_tree(m, name)
            .into_iter()
            .flat_map(|f| f.instructions())
            .filter(|i| is_f64_arithmetic(i))
            .count() as u32
    };
    let mut out = Vec::new();
    for f in tree.into_iter().filter(|f| !is_library(&f.name)) {
        out.extend(merged_copies(function_promotions(f, &names, &callee_cost)));
    }
    out
}

/// One promotion per function, line and verdict: an unrolled loop repeats a line's region once
/// per copy (five regions for `#pragma unroll 5`), which is one finding whose code appears
/// that many times, not five findings.
fn merged_copies(found: Vec<Promotion>) -> Vec<Promotion> {
    let mut out: Vec<Promotion> = Vec::new();
    for p in found {
        // Code without line info has no line to be repeated on.
        let same = out.iter_mut().find(|q| {
            p.at.line != 0
                && q.function == p.function
                && q.at == p.at
                && q.accidental() == p.accidental()
        });
        let Some(q) = same else {
            out.push(p);
            continue;
        };
        for r in p.promoted {
            push_new(&mut q.promoted, r);
        }
        for c in p.constants {
            if !q.constants.iter().any(|d| d.to_bits() == c.to_bits()) {
                q.constants.push(c);
            }
        }
        for m in p.math {
            push_new(&mut q.math, m);
        }
        for l in p.lines {
            push_new(&mut q.lines, l);
        }
        for c in p.carried {
            push_new(&mut q.carried, c);
        }
        q.lines.sort();
        q.carried.sort();
        q.promotions += p.promotions;
        q.from_integers += p.from_integers;
        q.to_f32 += p.to_f32;
        q.f64_instructions += p.f64_instructions;
        // Each copy executes once per execution of the line's source: the costs do not add.
        q.per_execution = q.per_execution.max(p.per_execution);
        q.copies += p.copies;
    }
    out
}

fn is_f64_arithmetic(i: &Instruction) -> bool {
    classify(i).is_some_and(|fp| fp.ty == "f64" && fp.conversion.is_none())
}

/// The source line each of `insts` is reported at: its own `.loc`'s file and line, so code a
/// user's `__device__` function contributes is filed where the culprit is written (the callee's
/// line in its header), not at the call site. Code inlined from a math library routine
/// (libdevice, CUDA's `__internal_*`, `std::pow`) is the library's, not the user's: it is
/// followed out through its call sites to the first user line.
fn reported_sites(
    insts: &[(&Instruction, Option<&Loc>)],
    names: &HashMap<String, String>,
) -> Vec<SourceLine> {
    // The most recent `.loc` at each (file, line, column): NVVM emits a call site's own `.loc`
    // just before entering the inlined code, so an `inlined_at` position's `.loc` is its parent.
    let mut last_at: HashMap<(u32, u32, u32), &Loc> = HashMap::new();
    let mut out = Vec::with_capacity(insts.len());
    for (_, loc) in insts {
        let Some(l) = loc else {
            out.push(SourceLine { file: 0, line: 0 });
            continue;
        };
        last_at.insert((l.file, l.line, l.col), l);
        let mut here: &Loc = l;
        let mut at = SourceLine {
            file: l.file,
            line: l.line,
        };
        // Bounded: a malformed chain must not loop.
        for _ in 0..16 {
            if !crate::compare::inlined_from_library(Some(here), names) {
                break;
            }
            let Some(i) = here.inlined.as_ref() else {
                break;
            };
            at = SourceLine {
                file: i.file,
                line: i.line,
            };
            match last_at.get(&(i.file, i.line, i.col)) {
                Some(parent) if !std::ptr::eq(*parent, here) => here = parent,
                _ => break,
            }
        }
        out.push(at);
    }
    out
}

fn function_promotions(
    f: &Function,
    names: &HashMap<String, String>,
    callee_cost: &dyn Fn(&str) -> u32,
) -> Vec<Promotion> {
    let regs = RegTable::of(f);
    let graph = Graph::build(f);
    let insts = located(f);
    let sites = reported_sites(&insts, names);
    let index: HashMap<InstId, usize> = insts
        .iter()
        .enumerate()
        .map(|(k, (i, _))| (i.id, k))
        .collect();
    let touches = |i: &Instruction| {
        i.has_mod("f64")
            || i.defs()
                .iter()
                .chain(i.uses().iter())
                .any(|r| regs.is_f64(r))
    };
    let member: Vec<bool> = insts.iter().map(|(i, _)| touches(i)).collect();
    let mut sets = Sets((0..insts.len()).collect());
    for e in graph
        .edges
        .iter()
        .filter(|e| regs.is_f64(&graph.name(e.reg)))
    {
        if let (Some(&a), Some(&b)) = (index.get(&e.def), index.get(&e.user)) {
            if member[a] && member[b] {
                sets.union(a, b);
            }
        }
    }
    // A call links its f64 arguments and results; what the callee does is counted at the call.
    let mut call_of: HashMap<usize, String> = HashMap::new();
    for (k, (i, _)) in insts.iter().enumerate() {
        if !i.decode().is_call() {
            continue;
        }
        let Some(target) = i.operands.iter().find_map(|o| match o {
            Operand::Symbol(s) => Some(s.clone()),
            _ => None,
        }) else {
            continue;
        };
        let mut group = vec![k];
        let mut j = k;
        while j > 0 && insts[j - 1].0.decode().is_param_store() {
            j -= 1;
            group.push(j);
        }
        let mut j = k + 1;
        while j < insts.len() && insts[j].0.decode().is_param_load() {
            group.push(j);
            j += 1;
        }
        let f64_members: Vec<usize> = group.into_iter().filter(|&g| member[g]).collect();
        if f64_members.is_empty() {
            continue;
        }
        for w in f64_members.windows(2) {
            sets.union(w[0], w[1]);
        }
        call_of.insert(f64_members[0], target);
    }
    let mut regions: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for k in (0..insts.len()).filter(|&k| member[k]) {
        regions.entry(sets.find(k)).or_default().push(k);
    }
    let ctx = Context {
        f,
        regs: &regs,
        graph: &graph,
        insts: &insts,
        sites: &sites,
        index: &index,
        names,
        callee_cost,
        call_of: &call_of,
    };
    let mut out = Vec::new();
    // In text order of each region's first instruction.
    let mut regions: Vec<Vec<usize>> = regions.into_values().collect();
    regions.sort_by_key(|ks| ks[0]);
    for ks in regions {
        out.extend(ctx.region(&ks));
    }
    out
}

/// What summarising a region of one function needs.
struct Context<'a> {
    f: &'a Function,
    regs: &'a RegTable,
    graph: &'a Graph,
    insts: &'a [(&'a Instruction, Option<&'a Loc>)],
    /// Where each instruction is reported ([`reported_sites`]).
    sites: &'a [SourceLine],
    index: &'a HashMap<InstId, usize>,
    names: &'a HashMap<String, String>,
    callee_cost: &'a dyn Fn(&str) -> u32,
    call_of: &'a HashMap<usize, String>,
}

impl Context<'_> {
    /// The promotions of one region: one per source line where it returns to f32 (code on
    /// other lines, hoisted out of a loop say, is shared by each), or one at its busiest line
    /// when it never returns to f32. None when it touches neither f32 nor integers.
    fn region(&self, ks: &[usize]) -> Vec<Promotion> {
        let carried = self.carried(ks);
        let exit_sites: Vec<SourceLine> = {
            let mut v: Vec<SourceLine> = ks
                .iter()
                .filter(|&&k| is_to_f32(self.insts[k].0))
                .map(|&k| self.sites[k])
                .collect();
            v.sort();
            v.dedup();
            v
        };
        if exit_sites.is_empty() {
            return self.summary(ks, None, carried).into_iter().collect();
        }
        exit_sites
            .iter()
            .filter_map(|at| {
                let part: Vec<usize> = ks
                    .iter()
                    .copied()
                    .filter(|&k| {
                        let s = self.sites[k];
                        s == *at || !exit_sites.contains(&s)
                    })
                    .collect();
                self.summary(&part, Some(*at), carried.clone())
            })
            .collect()
    }

    /// Why the region's double precision looks deliberate (see the module docs).
    fn carried(&self, ks: &[usize]) -> Vec<Carried> {
        let own_params: Vec<&str> = self.f.params.iter().map(|p| p.name.as_str()).collect();
        let returns: Vec<&str> = self
            .f
            .returns
            .iter()
            .flatten()
            .map(|p| p.name.as_str())
            .collect();
        let mut carried = Vec::new();
        for &k in ks {
            let i = self.insts[k].0;
            let base = i
                .operands
                .iter()
                .find_map(|o| match o {
                    Operand::Addr { base, .. } => Some(base.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            match i.decode().kind {
                OpKind::Load(s) if s != Space::Param => push_new(&mut carried, Carried::Loaded),
                OpKind::Load(_) if own_params.contains(&base.as_str()) => {
                    push_new(&mut carried, Carried::Parameter { name: base })
                }
                OpKind::Store(s) | OpKind::Atom(s) | OpKind::Red(s) if s != Space::Param => {
                    push_new(&mut carried, Carried::Stored)
                }
                OpKind::Store(_) if returns.contains(&base.as_str()) => {
                    push_new(&mut carried, Carried::Returned)
                }
                _ => {}
            }
            for r in i.defs().iter().chain(i.uses().iter()) {
                if self.regs.is_f64(r)
                    && self
                        .graph
                        .regs
                        .lookup(r)
                        .is_some_and(|id| self.graph.loop_carried.contains(&id))
                {
                    push_new(
                        &mut carried,
                        Carried::LoopCarried {
                            register: r.to_string(),
                        },
                    );
                }
            }
        }
        carried.sort();
        carried
    }

    /// The promotion made of instructions `ks`, reported at `at` (or its busiest line).
    fn summary(
        &self,
        ks: &[usize],
        at: Option<SourceLine>,
        carried: Vec<Carried>,
    ) -> Option<Promotion> {
        let mut p = Promotion {
            function: self.f.name.clone(),
            at: SourceLine { file: 0, line: 0 },
            lines: Vec::new(),
            promoted: Vec::new(),
            promotions: 0,
            from_integers: 0,
            to_f32: 0,
            constants: Vec::new(),
            math: Vec::new(),
            f64_instructions: 0,
            copies: 1,
            per_execution: 0,
            carried,
        };
        let mut cost_at: BTreeMap<SourceLine, u32> = BTreeMap::new();
        let mut exits_at: BTreeMap<SourceLine, u32> = BTreeMap::new();
        let mut entries: Vec<usize> = Vec::new();
        for &k in ks {
            let (i, loc) = self.insts[k];
            let here = self.sites[k];
            if here.line != 0 && !p.lines.contains(&here) {
                p.lines.push(here);
            }
            if let Some(name) = loc
                .and_then(|l| l.inlined.as_ref())
                .and_then(|inl| self.names.get(&inl.function_name))
                .and_then(|n| math_function(n))
            {
                push_new(&mut p.math, name.to_string());
            }
            if let Some(target) = self.call_of.get(&k) {
                if let Some(name) = math_function(target) {
                    push_new(&mut p.math, name.to_string());
                }
                let cost = (self.callee_cost)(target);
                p.f64_instructions += cost;
                *cost_at.entry(here).or_default() += cost;
            }
            if let OpKind::Convert {
                from,
                to: ValueType::F64,
            } = i.decode().kind
            {
                if from == ValueType::F32 {
                    p.promotions += 1;
                    entries.push(k);
                    if let Some(Operand::Reg(r)) = i.operands.get(1) {
                        push_new(&mut p.promoted, r.clone());
                    }
                } else if from.is_int() {
                    p.from_integers += 1;
                    entries.push(k);
                }
            }
            if is_to_f32(i) {
                p.to_f32 += 1;
                *exits_at.entry(here).or_default() += 1;
            }
            if is_f64_arithmetic(i) {
                p.f64_instructions += 1;
                *cost_at.entry(here).or_default() += 1;
            }
        }
        if p.promotions + p.from_integers + p.to_f32 == 0 {
            return None;
        }
        // The constants the promoted values meet first.
        for &e in &entries {
            for edge in self.graph.uses_of(self.insts[e].0.id) {
                let Some(&u) = self.index.get(&edge.user) else {
                    continue;
                };
                for o in &self.insts[u].0.operands {
                    if let Operand::Imm(Imm::F64(bits)) = o {
                        let v = f64::from_bits(*bits);
                        if !p.constants.iter().any(|c| c.to_bits() == v.to_bits()) {
                            p.constants.push(v);
                        }
                    }
                }
            }
        }
        let busiest = cost_at
            .iter()
            .filter(|(l, _)| l.line != 0)
            .max_by_key(|(l, n)| (**n, std::cmp::Reverse(**l)))
            .map(|(l, _)| *l);
        p.at = at.or(busiest).or(p.lines.first().copied()).unwrap_or(p.at);
        p.copies = exits_at.get(&p.at).copied().unwrap_or(1).max(1);
        p.per_execution = cost_at.get(&p.at).copied().unwrap_or(0).div_ceil(p.copies);
        p.lines.sort();
        Some(p)
    }
}

/// `cvt.*.f32.f64`: an f64 value rounded back to f32.
fn is_to_f32(i: &Instruction) -> bool {
    matches!(
        i.decode().kind,
        OpKind::Convert {
            from: ValueType::F64,
            to: ValueType::F32
        }
    )
}

fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

#[cfg(test)]
mod tests;
