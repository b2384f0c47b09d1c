//! Passes: module-to-module rewrites, one file each, chained in one visible [`Pipeline`].
//!
//! A pass is a value holding its options (what to demote, what to count) that implements
//! [`Pass`]: it reads a [`Module`] and returns a new one with a [`Report`] of what it did. It
//! never changes its input, so a caller can run several configurations from one parsed module,
//! and a pipeline can hand each pass's output to the next and keep every report (and, for
//! debugging, every intermediate module: [`Pipeline::run_with`]).
//!
//! What a pass may touch: the module it is given, through the model, the decode
//! ([`crate::op`], [`crate::decode`]), registers ([`crate::regs`]), the graphs
//! ([`crate::cfg`], [`crate::graph`]) and sites ([`crate::site`]). It keeps instruction ids of
//! the instructions it keeps, gives the ones it inserts fresh ids
//! ([`Module::fresh_inst_id`]), and never prints, compiles or touches a device. Which
//! instructions a pass may change is its own filter over sites ([`crate::site::Site`]).
//!
//! The passes: [`demote`] (f64 → f32 per instruction), [`promote`] (f32 → f64 per
//! instruction, its mirror image; both rewrite through per-register twins, `twins.rs`),
//! [`switch`] (each f64 instruction f64 or
//! f32 by a byte of a module global, chosen at run time), [`count`] (executions per
//! instruction into a module global, through a merged device runtime), [`shadow`] (the
//! demotion error and the exceptions per instruction, through a merged device runtime),
//! [`shadow_values`] (higher-precision shadow values: local and accumulated error per
//! instruction, cancellations, shadows through memory),
//! [`inline`] (calls of chosen device functions replaced by their bodies: the merged
//! shadow-values runtime, inlined into the instrumented kernels), [`runtime`] (a device
//! runtime merged into an instrumented module and its called functions inlined),
//! [`pin_contraction`] (ptxas's FMA contractions, read from its SASS, written into the PTX
//! as `fma.rn` and `.rn`), [`store_f32`] (storage precision: a kernel's f64 buffer kept in f32
//! on the device, its loads and stores converting), and [`cause`] (the causes of CPU/GPU differences listed per site,
//! each switchable per site: one
//! pass per cause).
//!
//! A new pass has its own report type, returned through [`Report::new`], and names there what it
//! refused and why. Its tests run the original and the rewritten module through [`crate::interp`]
//! on the same inputs, and assemble the output with ptxas when it is installed.

pub mod cause;
pub mod count;
pub mod demote;
pub mod inline;
pub mod pin_contraction;
pub mod promote;
pub mod runtime;
pub mod shadow;
pub mod shadow_values;
pub mod store_f32;
pub mod switch;
mod twins;

use crate::model::Module;
use std::any::Any;
use std::fmt;

/// What a pass did: a one-line summary for logs and pipelines, notes worth showing a user, and
/// the pass's own typed report ([`Report::details`]).
#[derive(Debug)]
pub struct Report {
    /// The pass's name.
    pub pass: String,
    /// One line: what changed (`demoted 120 instructions, 14 conversions`).
    pub summary: String,
    /// Anything a user should know (instructions left alone and why).
    pub notes: Vec<String>,
    details: Box<dyn Any + Send + Sync>,
}

impl Report {
    /// A report of `pass` carrying the pass's own report type.
    pub fn new<T: Any + Send + Sync>(
        pass: &str,
        summary: String,
        notes: Vec<String>,
        details: T,
    ) -> Report {
        Report {
            pass: pass.to_string(),
            summary,
            notes,
            details: Box::new(details),
        }
    }

    /// The pass's own report, if it is a `T` (`report.details::<DemoteReport>()`).
    pub fn details<T: Any>(&self) -> Option<&T> {
        self.details.downcast_ref()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pass, self.summary)
    }
}

/// The module a pass returns, with its report.
#[derive(Debug)]
pub struct Outcome {
    /// The rewritten module.
    pub module: Module,
    /// What was done.
    pub report: Report,
}

/// Why a pass failed: its input did not have a shape it relies on (a bug to report, not a
/// configuration to skip).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pass {pass}: {message}")]
pub struct PassError {
    /// The pass that failed.
    pub pass: String,
    /// What was wrong, naming the function and instruction.
    pub message: String,
}

/// A module-to-module rewrite (see the module docs).
pub trait Pass {
    /// The name pipelines and reports show (`demote`).
    fn name(&self) -> String;

    /// Rewrites `module` (left unchanged) into a new module.
    fn run(&self, module: &Module) -> Result<Outcome, PassError>;
}

/// Passes run in order, each on the previous one's output.
#[derive(Default)]
pub struct Pipeline {
    passes: Vec<Box<dyn Pass>>,
}

/// A pipeline's result: the last module and every pass's report, in order.
#[derive(Debug)]
pub struct PipelineRun {
    /// The module after the last pass (the input for an empty pipeline).
    pub module: Module,
    /// One report per pass, in order.
    pub reports: Vec<Report>,
}

impl Pipeline {
    /// An empty pipeline.
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    /// This pipeline with `pass` appended.
    pub fn then(mut self, pass: impl Pass + 'static) -> Pipeline {
        self.passes.push(Box::new(pass));
        self
    }

    /// The passes' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Runs every pass in order.
    pub fn run(&self, module: &Module) -> Result<PipelineRun, PassError> {
        self.run_with(module, |_, _| {})
    }

    /// Runs every pass in order, calling `after` with each report and the module that pass
    /// produced (to dump or check intermediate modules).
    pub fn run_with(
        &self,
        module: &Module,
        mut after: impl FnMut(&Report, &Module),
    ) -> Result<PipelineRun, PassError> {
        let mut reports = Vec::with_capacity(self.passes.len());
        let mut current: Option<Module> = None;
        for p in &self.passes {
            let out = p.run(current.as_ref().unwrap_or(module))?;
            after(&out.report, &out.module);
            reports.push(out.report);
            current = Some(out.module);
        }
        Ok(PipelineRun {
            module: current.unwrap_or_else(|| module.clone()),
            reports,
        })
    }
}

impl fmt::Display for Pipeline {
    /// `demote → count`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passes.is_empty() {
            return f.write_str("(no passes)");
        }
        f.write_str(&self.names().join(" → "))
    }
}

#[cfg(test)]
mod tests {
    use super::demote::{Demote, DemoteReport, DemoteSet};
    use super::*;
    use crate::parse;

    /// A pass that renames nothing and counts instructions: enough to see the pipeline chain.
    struct Count;
    impl Pass for Count {
        fn name(&self) -> String {
            "count".into()
        }
        fn run(&self, module: &Module) -> Result<Outcome, PassError> {
            let n: usize = module.functions().map(|f| f.instructions().count()).sum();
            Ok(Outcome {
                module: module.clone(),
                report: Report::new("count", format!("{n} instructions"), Vec::new(), n),
            })
        }
    }

    #[test]
    fn a_pipeline_chains_passes_and_keeps_every_report() {
        let m = parse(include_str!(
            "../../tests/fixtures/units/straight.nvrtc.ptx"
        ))
        .module;
        let p = Pipeline::new()
            .then(Count)
            .then(Demote::new(DemoteSet::all()))
            .then(Count);
        assert_eq!(p.to_string(), "count → demote → count");
        let mut seen = Vec::new();
        let run = p
            .run_with(&m, |r, m| seen.push((r.pass.clone(), m.to_string())))
            .unwrap_or_else(|e| panic!("{e}"));
        let counts: Vec<usize> = run
            .reports
            .iter()
            .filter_map(|r| r.details::<usize>().copied())
            .collect();
        let demoted = run.reports[1]
            .details::<DemoteReport>()
            .map(DemoteReport::demoted);
        // 13 demoted, 5 conversions inserted (see the demotion tests).
        assert_eq!(demoted, Some(13));
        assert_eq!(counts[1], counts[0] + 5);
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[2].1, run.module.to_string());
        assert_eq!(
            run.reports[1].summary,
            "demoted 13 instructions; 2 conversions to f32, 3 to f64"
        );
        assert_eq!(Pipeline::new().run(&m).map(|r| r.module).ok(), Some(m));
    }
}
