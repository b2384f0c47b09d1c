//! Merging a device runtime into an instrumented module, as a pass: the runtime's PTX (a CUDA
//! header compiled for the module's target by the caller, who has the compiler) is merged
//! ([`crate::link::merge_runtime`]) and the runtime functions it names are inlined where the
//! module calls them ([`crate::pass::inline`]), so that an instrumented kernel pays no call ABI
//! per recorded instruction.
//!
//! A named function the module never calls is left as the runtime defines it (neither inlined
//! nor removed): an analysis that instruments for exceptions only never calls the demotion
//! function, and the module must stay the one it was.

use super::inline::{called_functions, inline, InlineReport};
use super::{Outcome, Pass, PassError, Report};
use crate::link::merge_runtime;
use crate::model::Module;

/// The pass: merge `ptx` (a runtime's PTX) and inline the functions of `inline` that are called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRuntime {
    /// The runtime's name in reports (`mantissa_shadow.cuh`).
    pub name: String,
    /// The runtime's PTX, compiled for the module's target (or an older one).
    pub ptx: String,
    /// Runtime functions to inline where the module calls them.
    pub inline: Vec<String>,
}

impl Pass for MergeRuntime {
    fn name(&self) -> String {
        "runtime".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let error = |message: String| PassError {
            pass: self.name(),
            message,
        };
        let merged = merge_runtime(module, &self.ptx)
            .map_err(|e| error(format!("merging {}: {e}", self.name)))?;
        let called = called_functions(&merged);
        let chosen: Vec<&str> = self
            .inline
            .iter()
            .map(String::as_str)
            .filter(|f| called.iter().any(|c| c == f))
            .collect();
        let (module, report) = match chosen.is_empty() {
            true => (merged, InlineReport::default()),
            false => {
                let out = inline(&merged, &chosen)
                    .map_err(|e| error(format!("inlining {}: {e}", self.name)))?;
                (out.module, out.report)
            }
        };
        let summary = format!(
            "merged {}; inlined {}",
            self.name,
            match report.inlined.is_empty() {
                true => "nothing".to_string(),
                false => report
                    .inlined
                    .iter()
                    .map(|(f, n)| format!("{f} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        );
        Ok(Outcome {
            module,
            report: Report::new("runtime", summary, Vec::new(), report),
        })
    }
}
