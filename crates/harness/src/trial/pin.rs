//! The program's PTX with ptxas's contraction decisions pinned
//! ([`mantissa_ptx::pass::pin_contraction`]), for the analyses that rewrite it (shadow, diff):
//! the rewrite of a pinned module cannot change which products ptxas fuses, so it computes the
//! bits of the program as built. Needs ptxas and nvdisasm (found by
//! [`mantissa_gpu::cuda_tool`]) and an `sm_` target; without them the module is used as it is
//! and the note says why.

use super::TrialRunner;
use mantissa_gpu::Arch;
use mantissa_ptx::model::Module;
use mantissa_ptx::pass::pin_contraction::{Eliminated, PinContraction, PinReport};
use mantissa_ptx::pass::Pass;
use mantissa_ptx::sass::{disassemble, is_padding, per_instruction};
use std::collections::BTreeMap;
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

/// [`pin_contraction`] with explicit tools. The pinned module is checked, not trusted: it is
/// assembled again and must give every function the SASS opcodes the module as given has
/// (NOPs aside, alignment padding), or it is refused. Eliminated pairs (common subexpressions
/// ptxas computed once elsewhere, [`Eliminated`]) are pinned as fused first, then as unfused,
/// then left as written: the first whose SASS is the original's is kept.
pub fn pin_contraction_with(
    ptxas: &Path,
    nvdisasm: &Path,
    module: &Module,
    arch: Arch,
) -> Result<(Module, PinReport), String> {
    let sm = arch.sm();
    let sass = per_instruction(ptxas, nvdisasm, module, &sm).map_err(|e| e.to_string())?;
    let want = opcodes(ptxas, nvdisasm, &module.to_string(), &sm)?;
    let mut tried = String::new();
    for eliminated in [Eliminated::Fused, Eliminated::Rounded, Eliminated::Left] {
        let out = PinContraction::with_eliminated(sass.clone(), eliminated)
            .run(module)
            .map_err(|e| e.to_string())?;
        let text = out.module.to_string();
        if text == tried {
            continue; // no eliminated pair: every choice is the same module
        }
        let got = opcodes(ptxas, nvdisasm, &text, &sm)?;
        if let Some(diff) = first_difference(&want, &got) {
            tried = text;
            if eliminated == Eliminated::Left {
                return Err(format!("the pinned PTX assembles to other SASS ({diff})"));
            }
            continue;
        }
        let report = out
            .report
            .details::<PinReport>()
            .cloned()
            .ok_or_else(|| "the pass gave no PinReport".to_string())?;
        return Ok((out.module, report));
    }
    Err("the pinned PTX assembles to other SASS".into())
}

/// Per (function, opcode), how many SASS instructions `ptx` assembles to; NOPs are left out
/// (padding, which moves with the code's layout).
fn opcodes(
    ptxas: &Path,
    nvdisasm: &Path,
    ptx: &str,
    sm: &str,
) -> Result<BTreeMap<(String, String), u32>, String> {
    let sass = disassemble(ptxas, nvdisasm, ptx, sm).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    for l in sass.lines {
        for (op, n) in l.ops.into_iter().filter(|(op, _)| !is_padding(op)) {
            *out.entry((l.function.clone(), op)).or_default() += n;
        }
    }
    Ok(out)
}

/// The first (function, opcode) whose count differs, as `f: FFMA 3 -> 4`.
fn first_difference(
    want: &BTreeMap<(String, String), u32>,
    got: &BTreeMap<(String, String), u32>,
) -> Option<String> {
    want.keys().chain(got.keys()).find_map(|k| {
        let (w, g) = (
            want.get(k).copied().unwrap_or(0),
            got.get(k).copied().unwrap_or(0),
        );
        (w != g).then(|| format!("{}: {} {w} -> {g}", k.0, k.1))
    })
}

impl TrialRunner<'_> {
    /// `module` (a parse of this runner's PTX) with its contractions pinned for the PTX's
    /// target ([`TrialRunner::target_arch`]).
    pub(crate) fn pinned(&self, module: &Module) -> Pinned {
        pin_contraction(module, self.target_arch())
    }
}
