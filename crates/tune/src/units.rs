//! The tuner's units, made from the program's PTX — FISets ([`mantissa_ptx::fiset`]) for modes
//! 1–3, variables ([`mantissa_ptx::variables`]) for the delta-debugging baseline — and given
//! the demotion error the shadow analysis measured at their instructions (seed 002's
//! FISet_error, Σ over the set).
//!
//! **Which PTX.** The sites of a unit must name instructions of the PTX the trial runner demotes:
//! the rewrite's input of the empty configuration (the marked build when the program calls
//! math functions), which the session's base `Configured(none)` is. The shadow analysis
//! instruments the plain build with ptxas's contractions pinned (`Base::Pinned`): pinning turns a fused
//! mul/add pair into one `fma.rn` that keeps the add's instruction id, so its sites are mapped
//! back through instruction ids to the plain build's, and the fma's error is the add's (its mul
//! gets none: the pair is one operation on the device). Where the plain and the marked build
//! differ (math calls), sites that do not match get no error, and [`ErrorCoverage`] says how
//! many.

use crate::strategy::Over;
use crate::unit::{TuneUnit, TuneUnitKind};
use mantissa_gpu::DType;
use mantissa_harness::spec::StepKind;
use mantissa_harness::{Base, Configuration, Demotion, Session, Spec, TrialError};
use mantissa_ptx::fiset::{fisets, FisetOptions, FisetReport};
use mantissa_ptx::site::{self, Site};
use mantissa_ptx::variables::variables;
use mantissa_ptx::Module;
use mantissa_shadow::ShadowRun;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The units of one program.
#[derive(Debug, Clone)]
pub struct ProgramUnits {
    /// The module the units' sites name (the rewrite's input).
    pub module: Module,
    /// FISets, in [`fisets`]'s order.
    pub fisets: Vec<TuneUnit>,
    /// Variables, in [`variables`]'s order.
    pub variables: Vec<TuneUnit>,
    /// The FISet analysis's per-function profile and notes.
    pub report: FisetReport,
}

impl ProgramUnits {
    /// The unit list a strategy over `over` searches.
    pub fn list(&self, over: Over) -> &[TuneUnit] {
        match over {
            Over::Fisets => &self.fisets,
            Over::Variables => &self.variables,
        }
    }
}

/// The program the runner demotes: the rewrite's input for the empty configuration.
pub fn demoted_module(runner: &mut dyn Session) -> Result<Module, TrialError> {
    let none = Configuration::Demote(Demotion::none());
    Ok(runner.base_module(&Base::Configured(none))?.module.clone())
}

fn lines_of(sites: &[Site]) -> Vec<(String, u32)> {
    let mut lines: Vec<(String, u32)> = sites.iter().map(|s| (s.file.clone(), s.line)).collect();
    lines.sort();
    lines.dedup();
    lines
}

/// `nbody.cu:70–78` / `nbody.cu:70, 74` / `a.cu:3; b.h:9`: where a unit's lines are, short.
pub fn where_(lines: &[(String, u32)]) -> String {
    let mut by_file: Vec<(String, Vec<u32>)> = Vec::new();
    // Line 0 is an instruction without a `.loc` (code the compiler made, e.g. a conversion
    // or a move between blocks): no line to show.
    for (f, l) in lines.iter().filter(|(_, l)| *l > 0) {
        let short = f.rsplit(['/', '\\']).next().unwrap_or(f).to_string();
        match by_file.last_mut() {
            Some((g, ls)) if *g == short => ls.push(*l),
            _ => by_file.push((short, vec![*l])),
        }
    }
    if by_file.is_empty() {
        return "no source line".into();
    }
    // Ranges joined by ", " so that a long list wraps on a page and stays short in a table.
    by_file
        .iter()
        .map(|(f, ls)| {
            let ranges: Vec<String> = crate::store::runs(ls.iter().map(|&l| u64::from(l)))
                .into_iter()
                .map(|(lo, hi)| match hi - lo {
                    0 => lo.to_string(),
                    _ => format!("{lo}–{hi}"),
                })
                .collect();
            format!("{f}:{}", ranges.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The FISets and variables of `module`.
pub fn program_units(module: Module, opts: &FisetOptions) -> ProgramUnits {
    let report = fisets(&module, opts);
    let fiset_units = report
        .sets
        .iter()
        .enumerate()
        .map(|(i, f)| TuneUnit {
            kind: TuneUnitKind::Fiset,
            name: format!("fiset {} ({})", i + 1, where_(&f.lines)),
            sites: f.sites.clone(),
            buffers: Vec::new(),
            math: Vec::new(),
            error: None,
            r_ac: Some(f.r_ac),
            lines: f.lines.clone(),
        })
        .collect();
    let variable_units = variables(&module)
        .into_iter()
        .map(|v| {
            let lines = lines_of(&v.sites);
            TuneUnit {
                kind: TuneUnitKind::Variable,
                name: format!("variable {} ({})", v.registers.join("/"), where_(&lines)),
                sites: v.sites,
                buffers: Vec::new(),
                math: Vec::new(),
                error: None,
                r_ac: None,
                lines,
            }
        })
        .collect();
    ProgramUnits {
        module,
        fisets: fiset_units,
        variables: variable_units,
        report,
    }
}

/// The spec's f64 buffers that can be kept in f32 on the device (storage precision), and for
/// the others why not (`store_f32`'s refusals: atomics on it, a pointer escaping, a fill…).
/// Buffers joined by copy steps (heat2d's `u_new -> u`) must share a layout, so they make one
/// unit together. Asking costs a rewrite on the CPU, no JIT.
pub fn buffer_units(runner: &mut dyn Session, spec: &Spec) -> (Vec<TuneUnit>, Vec<String>) {
    let names: Vec<&str> = spec
        .buffers
        .iter()
        .filter(|b| b.dtype == DType::F64)
        .map(|b| b.name.as_str())
        .collect();
    // Union-find over copy steps.
    let mut group: Vec<usize> = (0..names.len()).collect();
    fn root(g: &mut [usize], mut i: usize) -> usize {
        while g[i] != i {
            g[i] = g[g[i]];
            i = g[i];
        }
        i
    }
    for (step, _) in spec.walk() {
        if let StepKind::Copy { from, to, .. } = &step.kind {
            let (Some(a), Some(b)) = (
                names.iter().position(|n| n == from),
                names.iter().position(|n| n == to),
            ) else {
                continue;
            };
            let (ra, rb) = (root(&mut group, a), root(&mut group, b));
            group[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut units = Vec::new();
    let mut notes = Vec::new();
    for i in 0..names.len() {
        if root(&mut group, i) != i {
            continue;
        }
        let members: Vec<String> = (0..names.len())
            .filter(|&j| root(&mut group, j) == i)
            .map(|j| names[j].to_string())
            .collect();
        let name = format!("buffer {}", members.join("+"));
        let c = Configuration::Demote(Demotion {
            name: name.clone(),
            buffers: members.clone(),
            ..Demotion::none()
        });
        match runner.base_module(&Base::Configured(c)) {
            Ok(_) => units.push(TuneUnit {
                kind: TuneUnitKind::Buffer,
                name,
                sites: Vec::new(),
                buffers: members,
                math: Vec::new(),
                error: None,
                r_ac: None,
                lines: Vec::new(),
            }),
            Err(e) => notes.push(format!("{name} stays f64: {e}")),
        }
    }
    (units, notes)
}

/// One unit per math call of `module` (a function on a source line, as the marked build finds
/// them: [`mantissa_harness::config::math_calls`]); none in an unmarked build. Seed 002's FISets
/// stop at calls; a math-heavy program's f32 speed-up is mostly in its math functions, so both
/// searches get them as units of their own (searched after the FISets: the shadow run does not
/// measure a whole function's demotion error).
pub fn math_units(module: &Module) -> Vec<TuneUnit> {
    mantissa_harness::config::math_calls(module)
        .into_iter()
        .map(|c| TuneUnit {
            kind: TuneUnitKind::Math,
            name: format!("{} at line {}", c.function, c.line),
            sites: Vec::new(),
            buffers: Vec::new(),
            lines: Vec::new(),
            error: None,
            r_ac: None,
            math: vec![c],
        })
        .collect()
}

/// How many of the units' sites got a demotion error from the shadow run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCoverage {
    /// Sites of FISets and variables.
    pub sites: usize,
    /// Of them, those the shadow run measured.
    pub measured: usize,
}

/// The demotion error (Σ over threads and executions) per site of the plain build, from a
/// shadow run of the pinned plain build (see the module docs).
pub fn site_errors(run: &ShadowRun, plain: &Module, pinned: &Module) -> HashMap<Site, f64> {
    let pinned_index = site::sites(pinned);
    let plain_index = site::sites(plain);
    let mut out = HashMap::new();
    for s in &run.sites {
        let Some(d) = &s.demotion else { continue };
        let Some(id) = pinned_index.inst(&s.site) else {
            continue;
        };
        if let Some(plain_site) = plain_index.site(id) {
            *out.entry(plain_site.clone()).or_insert(0.0) += d.sum;
        }
    }
    out
}

/// Gives every unit the sum of its sites' errors; units none of whose sites was measured keep
/// `None` (searched last by modes 1 and 2).
pub fn attach_errors(units: &mut [TuneUnit], errors: &HashMap<Site, f64>, cov: &mut ErrorCoverage) {
    for u in units {
        let mut sum = 0.0;
        let mut any = false;
        for s in &u.sites {
            cov.sites += 1;
            if let Some(e) = errors.get(s) {
                cov.measured += 1;
                sum += e;
                any = true;
            }
        }
        u.error = any.then_some(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_named_short() {
        let l = |f: &str, n| (f.to_string(), n);
        assert_eq!(where_(&[l("/a/b/nbody.cu", 70)]), "nbody.cu:70");
        assert_eq!(
            where_(&[
                l("/a/nbody.cu", 70),
                l("/a/nbody.cu", 71),
                l("/a/nbody.cu", 72)
            ]),
            "nbody.cu:70–72"
        );
        assert_eq!(
            where_(&[l("x.cu", 3), l("x.cu", 9), l("y.h", 1)]),
            "x.cu:3, 9; y.h:1"
        );
        // A long list is written as ranges that wrap: 145–147, 151–152, 160.
        let many: Vec<_> = [145, 146, 147, 151, 152, 160]
            .into_iter()
            .map(|n| l("k.cu", n))
            .collect();
        assert_eq!(where_(&many), "k.cu:145–147, 151–152, 160");
        assert_eq!(where_(&[]), "no source line");
        assert_eq!(where_(&[l("x.cu", 0)]), "no source line");
        assert_eq!(
            where_(&[l("x.cu", 0), l("x.cu", 25), l("x.cu", 26)]),
            "x.cu:25–26"
        );
    }
}
