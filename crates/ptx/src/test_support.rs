//! Helpers shared by the unit tests of the rewriting toolkit, the linker and the passes.

use crate::{parse, Module};
use std::path::PathBuf;

/// Parses PTX that must parse completely.
pub(crate) fn parse_clean(what: &str, ptx: &str) -> Module {
    let parsed = parse(ptx);
    assert!(
        parsed.diagnostics.is_empty(),
        "{what}: {:?}",
        parsed.diagnostics
    );
    parsed.module
}

/// ptxas: the crate's own lookup ([`crate::ptxas::find`]), else the one beside nvcc as
/// `mantissa-gpu` finds it (the pip wheel puts both in `nvidia/cu13/bin`). `None` after a skip
/// line when neither is there; a failure under `MANTISSA_REQUIRE_NVCC=1`.
pub(crate) fn ptxas_or_skip() -> Option<PathBuf> {
    if let Some(p) = crate::ptxas::find() {
        return Some(p);
    }
    let nvcc = mantissa_gpu::testing::require_nvcc_or_skip()?;
    let beside = nvcc.path().with_file_name("ptxas");
    if beside.is_file() {
        return Some(beside);
    }
    mantissa_gpu::testing::skip_or_fail(
        mantissa_gpu::testing::nvcc_required(),
        mantissa_gpu::testing::REQUIRE_NVCC_ENV,
        &format!("no ptxas beside {}", nvcc.path().display()),
    );
    None
}

/// Asserts that `module` prints to PTX that parses back to a module printing the same (the
/// model compares instruction ids, which a reparse renumbers in text order) and, where ptxas is
/// found, assembles for sm_90 (the fixtures' target). Returns the printed text.
pub(crate) fn assert_sound(what: &str, module: &Module) -> String {
    let printed = module.to_string();
    let back = parse_clean(what, &printed).to_string();
    assert_eq!(
        back, printed,
        "{what}: the printed module parses to a module that prints differently"
    );
    if let Some(ptxas) = ptxas_or_skip() {
        if let Err(e) = crate::ptxas::assemble_with(&ptxas, &printed, "sm_90") {
            let log = match &e {
                crate::ptxas::PtxasError::Rejected { log } => log.clone(),
                other => other.to_string(),
            };
            panic!("{what}: ptxas refused it: {log}\n{printed}");
        }
    }
    printed
}
