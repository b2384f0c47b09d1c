//! Where the SASS confirms a contraction: ptxas fuses an unrounded `mul`/`add` pair into an
//! FFMA although the PTX shows none, so a contraction blamed from the PTX is checked against
//! the code that runs. The program's PTX is assembled with `ptxas -lineinfo` and disassembled
//! with `nvdisasm -g -c` ([`mantissa_ptx::sass::disassemble`], the tools found as
//! `mantissa inspect` finds them); a contraction's line is *confirmed* when its SASS has a
//! fused multiply-add (FFMA, DFMA, HFMA2). Without the tools the contraction is *inferred*
//! from the PTX alone, and the report says so.

use mantissa_ptx::pass::cause::{Candidate, Cause};
use mantissa_ptx::sass::{float_op, FloatOp};
use serde::Serialize;

/// What the SASS says of a blamed cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SassCheck {
    /// Not a contraction: nothing to check.
    NotApplicable,
    /// The line's SASS has a fused multiply-add.
    Confirmed,
    /// The line's SASS has no fused multiply-add (the JIT may still differ from this ptxas).
    NotFound,
    /// No assembler or disassembler, or they failed: inferred from the PTX.
    Inferred,
}

impl SassCheck {
    /// The word the text report prints.
    pub fn word(self) -> &'static str {
        match self {
            SassCheck::NotApplicable => "-",
            SassCheck::Confirmed => "FMA",
            SassCheck::NotFound => "none",
            SassCheck::Inferred => "inferred",
        }
    }
}

/// Whether a cause is a contraction the SASS can confirm.
fn is_contraction(c: &Candidate) -> bool {
    matches!(c.cause, Cause::Contraction | Cause::Contractible)
}

/// The check of each of `blamed` (candidates of `ptx`), and a note when the tools are missing.
pub fn check(ptx: &str, blamed: &[&Candidate]) -> (Vec<SassCheck>, Option<String>) {
    if !blamed.iter().any(|c| is_contraction(c)) {
        return (vec![SassCheck::NotApplicable; blamed.len()], None);
    }
    let tools = (
        mantissa_ptx::ptxas::find().or_else(|| mantissa_gpu::cuda_tool("ptxas")),
        mantissa_gpu::cuda_tool("nvdisasm"),
    );
    let arch = mantissa_ptx::symbols::header(ptx)
        .sm()
        .map(|n| format!("sm_{n}"));
    let sass = match (tools, arch) {
        ((Some(ptxas), Some(nvdisasm)), Some(arch)) => {
            mantissa_ptx::sass::disassemble(&ptxas, &nvdisasm, ptx, &arch)
                .map_err(|e| e.to_string())
        }
        ((None, _), _) | ((_, None), _) => Err("no ptxas or nvdisasm found".into()),
        (_, None) => Err("the PTX names no sm_ target".into()),
    };
    let sass = match sass {
        Ok(s) => s,
        Err(why) => {
            let checks = blamed
                .iter()
                .map(|c| {
                    if is_contraction(c) {
                        SassCheck::Inferred
                    } else {
                        SassCheck::NotApplicable
                    }
                })
                .collect();
            return (
                checks,
                Some(format!(
                    "contractions are inferred from the PTX, not confirmed in the SASS: {why}"
                )),
            );
        }
    };
    let checks = blamed
        .iter()
        .map(|c| {
            if !is_contraction(c) {
                return SassCheck::NotApplicable;
            }
            let ops = sass.at(&[c.site.function.as_str()], &c.site.file, c.site.line);
            // The register forms, as ptxas writes a fused pair of registers.
            if ops
                .keys()
                .any(|m| matches!(float_op(m), Some((FloatOp::Fma, _, false))))
            {
                SassCheck::Confirmed
            } else {
                SassCheck::NotFound
            }
        })
        .collect();
    (checks, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_ptx::pass::cause::candidates;

    #[test]
    fn the_contractible_pair_of_the_contract_fixture_is_confirmed_in_its_sass() {
        let ptx = include_str!("../../ptx/tests/fixtures/sass/contract.default.ptx");
        let m = mantissa_ptx::parse(ptx).module;
        let list = candidates(&m, None);
        let blamed: Vec<&Candidate> = list.iter().collect();
        let (checks, note) = check(ptx, &blamed);
        if let Some(note) = note {
            // Without the tools every contraction is inferred; CI installs them.
            assert!(
                !mantissa_gpu::testing::nvcc_required(),
                "{note} under {}",
                mantissa_gpu::testing::REQUIRE_NVCC_ENV
            );
            assert!(note.contains("inferred"), "{note}");
            assert!(checks.iter().all(|c| *c != SassCheck::Confirmed));
            return;
        }
        for (c, check) in list.iter().zip(&checks) {
            let want = if is_contraction(c) {
                SassCheck::Confirmed
            } else {
                SassCheck::NotApplicable
            };
            assert_eq!(*check, want, "{} {}", c.site, c.cause);
        }
        assert!(
            list.iter().any(|c| c.cause == Cause::Contractible),
            "{list:#?}"
        );
    }
}
