//! The program's PTX with ptxas's contraction decisions pinned
//! ([`mantissa_ptx::pass::pin_contraction`]), for the analyses that rewrite it (shadow, diff):
//! the rewrite of a pinned module cannot change which products ptxas fuses, so it computes the
//! bits of the program as built. Needs ptxas and nvdisasm (found by
//! [`mantissa_gpu::cuda_tool`]) and an `sm_` target; without them the module is used as it is
//! and the note says why.

use super::TrialRunner;
use mantissa_gpu::Arch;
use mantissa_ptx::model::Module;
use mantissa_ptx::pass::pin_contraction::{PinContraction, PinReport};
use mantissa_ptx::pass::Pass;
use mantissa_ptx::sass::per_instruction;
use std::path::Path;

/// A module to rewrite: pinned when it could be, with what the pinning did.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// The pinned module, or the input unchanged when pinning was not possible.
    pub module: Module,
    /// What was pinned and what was left as written; `None` when nothing was pinned.
    pub report: Option<PinReport>,
    /// Why contraction is not pinned (`contraction not pinned: no nvdisasm found`), if it is not.
    pub note: Option<String>,
}

/// `module` with its contractions for `arch` pinned, through the ptxas and nvdisasm found on
/// this machine; the module unchanged, with a note, when a tool, the target or a step is
/// missing or fails.
pub fn pin_contraction(module: &Module, arch: Option<Arch>) -> Pinned {
    let tools = (
        mantissa_gpu::cuda_tool("ptxas"),
        mantissa_gpu::cuda_tool("nvdisasm"),
    );
    let outcome = match (tools, arch) {
        ((Some(ptxas), Some(nvdisasm)), Some(arch)) => {
            pin_contraction_with(&ptxas, &nvdisasm, module, arch)
        }
        ((None, _), _) => Err("no ptxas found".to_string()),
        ((_, None), _) => Err("no nvdisasm found (pip install nvidia-cuda-nvdisasm)".to_string()),
        (_, None) => Err("the PTX names no sm_ target".to_string()),
    };
    match outcome {
        Ok((module, report)) => Pinned {
            module,
            report: Some(report),
            note: None,
        },
        Err(why) => Pinned {
            module: module.clone(),
            report: None,
            note: Some(format!("contraction not pinned: {why}")),
        },
    }
}

/// [`pin_contraction`] with explicit tools.
pub fn pin_contraction_with(
    ptxas: &Path,
    nvdisasm: &Path,
    module: &Module,
    arch: Arch,
) -> Result<(Module, PinReport), String> {
    let sass = per_instruction(ptxas, nvdisasm, module, &arch.sm()).map_err(|e| e.to_string())?;
    let out = PinContraction::new(sass)
        .run(module)
        .map_err(|e| e.to_string())?;
    let report = out
        .report
        .details::<PinReport>()
        .cloned()
        .ok_or_else(|| "the pass gave no PinReport".to_string())?;
    Ok((out.module, report))
}

impl TrialRunner<'_> {
    /// `module` (a parse of this runner's PTX) with its contractions pinned for the PTX's
    /// target ([`TrialRunner::target_arch`]).
    pub fn pinned(&self, module: &Module) -> Pinned {
        pin_contraction(module, self.target_arch())
    }
}
