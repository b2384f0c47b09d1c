//! Device runtimes: CUDA headers (in `cuda/`) whose functions rewritten PTX calls, compiled to
//! PTX for `mantissa_ptx::link::merge_runtime`, which merges them into the user's module.
//!
//! Each header states its contract at the top (what it provides, what the rewriter must pass and
//! add to the module, its invariants). They compile with relocatable device code (`-rdc=true`):
//! NVRTC 13 otherwise drops every `__device__` function the file itself does not call, and with
//! it `extern "C"` functions keep their plain names and `extern __device__` variables become
//! `.extern` declarations for the merge to resolve. PTX only (no cubin): the PTX is merged, then
//! JIT-compiled with the user's code by `Gpu::load_ptx`. Compiles go through the compiler's
//! [`crate::CompileCache`] like any other.

use crate::error::CompileError;
use crate::flags::FlagSet;
use crate::nvrtc::{Compiler, Source, Target};
use crate::version::Arch;

/// A runtime header: its name (NVRTC's source name, which its `.file` shows) and text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeHeader {
    /// The file name under `crates/gpu/cuda/`.
    pub name: &'static str,
    /// The CUDA source.
    pub text: &'static str,
}

/// The counting pass's runtime (`mantissa_count_hit`), for `mantissa_ptx::pass::count`.
pub const COUNT: RuntimeHeader = RuntimeHeader {
    name: "mantissa_count.cuh",
    text: include_str!("../cuda/mantissa_count.cuh"),
};

/// The shadow pass's runtime (`mantissa_shadow_demotion`, `mantissa_shadow_flush`,
/// `mantissa_shadow_exception`), for
/// `mantissa_ptx::pass::shadow`.
pub const SHADOW: RuntimeHeader = RuntimeHeader {
    name: "mantissa_shadow.cuh",
    text: include_str!("../cuda/mantissa_shadow.cuh"),
};

/// The shadow-values pass's runtime (`mantissa_sv_<op>_<type>` per site, `_load`, `_store`,
/// `_clear`, `_reseed` and the `_once` forms, inlined after the merge; `_zero` and `_flush` of
/// the thread records), for `mantissa_ptx::pass::shadow_values`: `mantissa.cuh`, whose
/// double-word arithmetic it propagates shadows with, then `mantissa_shadow_values.cuh` (the
/// contract, the measurements, the thread records, memory), then
/// `mantissa_shadow_values_warp.cuh` (what combines a warp's lanes: the `_once` forms and the
/// flush).
pub const SHADOW_VALUES: RuntimeHeader = RuntimeHeader {
    name: "mantissa_shadow_values.cuh",
    text: concat!(
        include_str!("../cuda/mantissa.cuh"),
        include_str!("../cuda/mantissa_shadow_values.cuh"),
        include_str!("../cuda/mantissa_shadow_values_warp.cuh")
    ),
};

/// The NVRTC option that keeps a runtime's functions (see the module docs).
pub const RDC_OPTION: &str = "-rdc=true";

/// Compiles `header` to PTX for `arch` (the user's module's `.target`: a runtime must not be
/// newer than the code it joins). The strict flag set: runtime arithmetic is spelt with explicit
/// `_rn` intrinsics anyway, and anything else in it then stays IEEE too.
pub fn compile(
    compiler: &Compiler,
    header: &RuntimeHeader,
    arch: Arch,
) -> Result<String, CompileError> {
    let source = Source::new(header.name, header.text).with_option(RDC_OPTION);
    let compiled = compiler.compile(&source, FlagSet::STRICT, Target::Ptx(arch))?;
    Ok(compiled.ptx.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::require_nvrtc_or_skip;

    /// The count runtime keeps its function under its plain name and declares the counter array
    /// extern, which is what the counting pass and the merge rely on.
    #[test]
    fn the_count_runtime_compiles_to_what_the_merge_expects() {
        let Some(nvrtc) = require_nvrtc_or_skip() else {
            return;
        };
        let ptx = compile(&nvrtc, &COUNT, Arch::new(9, 0)).unwrap_or_else(|e| panic!("{e}"));
        let parsed = mantissa_ptx::parse(&ptx);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let m = parsed.module;
        let hit = m
            .function("mantissa_count_hit")
            .unwrap_or_else(|| panic!("no mantissa_count_hit in\n{ptx}"));
        assert!(hit.body.is_some());
        assert_eq!(hit.params.len(), 1);
        assert_eq!(hit.params[0].attrs, [".param", ".b32"]);
        assert!(
            m.items.iter().any(|i| matches!(i,
                mantissa_ptx::Item::Var(v) if v.name == "__mantissa_counts"
                    && v.attrs.iter().any(|a| a == ".extern"))),
            "{ptx}"
        );
        assert!(ptx.contains(".target sm_90"), "{ptx}");
        // One atomic add and nothing else that touches memory.
        let memory: Vec<String> = hit
            .instructions()
            .filter(|i| i.decode().space().is_some())
            .map(|i| i.full_opcode())
            .collect();
        assert_eq!(memory, ["ld.param.u32", "atom.global.add.u64"], "{ptx}");
    }

    /// The shadow runtime keeps both functions under their plain names with the parameters the
    /// shadow pass declares, declares the statistics array extern, and reads no argument memory
    /// but its parameters.
    #[test]
    fn the_shadow_runtime_compiles_to_what_the_merge_expects() {
        let Some(nvrtc) = require_nvrtc_or_skip() else {
            return;
        };
        let ptx = compile(&nvrtc, &SHADOW, Arch::new(9, 0)).unwrap_or_else(|e| panic!("{e}"));
        let parsed = mantissa_ptx::parse(&ptx);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let m = parsed.module;
        for (name, params) in [
            ("mantissa_shadow_demotion", vec![".b32", ".b64", ".b64"]),
            ("mantissa_shadow_exception", vec![".b32", ".b32"]),
            (
                "mantissa_shadow_flush",
                vec![".b32", ".b64", ".b64", ".b64"],
            ),
        ] {
            let f = m
                .function(name)
                .unwrap_or_else(|| panic!("no {name} in\n{ptx}"));
            assert!(f.body.is_some());
            let types: Vec<&str> = f.params.iter().map(|p| p.attrs[1].as_str()).collect();
            assert_eq!(types, params, "{name}");
            // Its only stores are atomics on the record.
            assert!(
                f.instructions()
                    .all(|i| !matches!(i.decode().kind, mantissa_ptx::op::OpKind::Store(_))),
                "{name} stores:\n{ptx}"
            );
        }
        assert!(
            m.items.iter().any(|i| matches!(i,
                mantissa_ptx::Item::Var(v) if v.name == "__mantissa_shadow"
                    && v.attrs.iter().any(|a| a == ".extern"))),
            "{ptx}"
        );
    }

    /// The shadow-values runtime keeps its functions under their plain names with the
    /// signatures `mantissa_ptx::pass::shadow_values` declares (the merge compares them), and
    /// declares the pass's three globals extern.
    #[test]
    fn the_shadow_values_runtime_compiles_to_what_the_merge_expects() {
        let Some(nvrtc) = require_nvrtc_or_skip() else {
            return;
        };
        let ptx =
            compile(&nvrtc, &SHADOW_VALUES, Arch::new(9, 0)).unwrap_or_else(|e| panic!("{e}"));
        let parsed = mantissa_ptx::parse(&ptx);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let m = parsed.module;
        let expected = mantissa_ptx::pass::shadow_values::runtime_prototypes();
        for proto in &expected {
            let f = m
                .function(&proto.name)
                .unwrap_or_else(|| panic!("no {} in\n{ptx}", proto.name));
            assert!(f.body.is_some());
            let types = |ps: &[mantissa_ptx::model::Param]| -> Vec<String> {
                ps.iter().map(|p| p.attrs[1..].join(" ")).collect()
            };
            assert_eq!(types(&f.params), types(&proto.params), "{}", proto.name);
            assert_eq!(
                f.returns.as_deref().map(types),
                proto.returns.as_deref().map(types),
                "{}",
                proto.name
            );
        }
        for global in [
            "__mantissa_values",
            "__mantissa_values_table",
            "__mantissa_sv_slots",
        ] {
            assert!(
                m.items.iter().any(|i| matches!(i,
                    mantissa_ptx::Item::Var(v) if v.name == global
                        && v.attrs.iter().any(|a| a == ".extern"))),
                "{global}: {ptx}"
            );
        }
    }

    /// The header's word indices and `how` codes are the ones the pass writes and decodes.
    #[test]
    fn the_shadow_values_header_and_the_pass_agree_on_the_layout() {
        use mantissa_ptx::pass::shadow_values::{
            how, site_function, Word, COPIES, MAX_BUFFERS, THREAD_RECORD_BYTES, WORDS_PER_RECORD,
        };
        let define = |name: &str| -> u64 {
            let line = SHADOW_VALUES
                .text
                .lines()
                .find(|l| l.starts_with("#define ") && l.split_whitespace().nth(1) == Some(name))
                .unwrap_or_else(|| panic!("no #define {name}"));
            let value = line.split_whitespace().nth(2).unwrap_or_default();
            value
                .trim_end_matches('u')
                .parse()
                .unwrap_or_else(|_| panic!("{line}"))
        };
        assert_eq!(define("MANTISSA_SV_WORDS"), u64::from(WORDS_PER_RECORD));
        assert_eq!(
            define("MANTISSA_SV_THREAD_BYTES"),
            u64::from(THREAD_RECORD_BYTES)
        );
        assert_eq!(define("MANTISSA_SV_MAX_BUFFERS"), MAX_BUFFERS as u64);
        assert_eq!(define("MANTISSA_SV_COPIES"), u64::from(COPIES));
        let shadow_copies = format!(
            "#define MANTISSA_SHADOW_COPIES {}",
            mantissa_ptx::pass::shadow::COPIES
        );
        assert!(SHADOW.text.contains(&shadow_copies), "no {shadow_copies}");
        // The operations, each with its code in the runtime's `how`.
        let operations = [
            ("ADD", how::ADD),
            ("SUB", how::SUB),
            ("MUL", how::MUL),
            ("FMA", how::FMA),
            ("DIV", how::DIV),
            ("RCP", how::RCP),
            ("SQRT", how::SQRT),
            ("RSQRT", how::RSQRT),
            ("CONVERT", how::CONVERT),
            ("ROUND", how::ROUND),
        ];
        // Each operation's site function (and its `_once` form) is defined with that operation:
        // an entry of the MANTISSA_SV_SITES list both are made from.
        for (op, code) in operations {
            for (f32, ty) in [(false, "false"), (true, "true")] {
                let line = format!(
                    "    X({}, MANTISSA_SV_{op}, {ty})",
                    site_function(code, f32)
                );
                assert!(SHADOW_VALUES.text.contains(&line), "no {line}");
            }
        }
        for (name, word) in [
            ("EXECUTIONS", Word::Executions),
            ("LOCAL_COUNT", Word::LocalCount),
            ("LOCAL_SUM", Word::LocalSum),
            ("LOCAL_MAX", Word::LocalMax),
            ("LOCAL_ZERO", Word::LocalZero),
            ("LOCAL_NON_FINITE", Word::LocalNonFinite),
            ("ACC_COUNT", Word::AccCount),
            ("ACC_SUM", Word::AccSum),
            ("ACC_MAX", Word::AccMax),
            ("ACC_ZERO", Word::AccZero),
            ("ACC_NON_FINITE", Word::AccNonFinite),
            ("CANCELLATIONS", Word::Cancellations),
            ("CANCEL_MAX_BITS", Word::CancelMaxBits),
            ("RESEEDED", Word::Reseeded),
        ] {
            assert_eq!(
                define(&format!("MANTISSA_SV_W_{name}")),
                word as u64,
                "{name}"
            );
        }
        for (name, code) in operations.into_iter().chain([
            ("RESEED", how::RESEED),
            ("F32", how::F32),
            ("NO_LOCAL", how::NO_LOCAL),
            ("NO_VALUE", how::NO_VALUE),
            ("MODE_SHIFT", how::MODE_SHIFT),
        ]) {
            assert_eq!(
                define(&format!("MANTISSA_SV_{name}")),
                u64::from(code),
                "{name}"
            );
        }
    }
}
