//! What actually runs: the SASS that ptxas makes of a PTX build, counted per source line.
//!
//! PTX is not the last word on contraction: an unrounded `mul.f32` whose result feeds an
//! unrounded `add.f32`/`sub.f32` is fused into one `FFMA` by ptxas (its `--fmad` defaults to
//! true, and the driver's JIT uses the same default), while `.rn` forbids it. So the per-line
//! claims of [`crate::compare`] are confirmed here by assembling the PTX with `ptxas -lineinfo`
//! and disassembling the cubin with `nvdisasm -g -c`, whose `//## File "PATH", line N` comments
//! name the source line of every SASS instruction. `cuobjdump -sass` prints no line info, so it
//! cannot confirm a line; nvdisasm is the one disassembler used.
//!
//! Both tools are optional (pip wheels `nvidia-cuda-nvcc` for ptxas, `nvidia-cuda-nvdisasm` for
//! nvdisasm, or a toolkit): the caller finds them ([`crate::tools::cuda_tool`]) and
//! passes their paths; nothing here searches or prints.
//!
//! SASS mnemonics are another IR than PTX's opcodes (whose meanings are [`crate::op`]'s): they
//! stay text, counted by base mnemonic, and what mantissa asks of one — is it a fused
//! multiply-add, a plain sum or product of which type, or padding — is answered here only
//! ([`float_op`], [`float_mnemonic`], [`is_padding`]).

mod cache;
pub mod per_instruction;

pub use per_instruction::{per_instruction, relined, InstSass};

use crate::op::ValueType;
use crate::ptxas::{cubin_with, PtxasError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Why no SASS could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SassError {
    /// ptxas failed or refused the PTX.
    #[error(transparent)]
    Ptxas(#[from] PtxasError),
    /// nvdisasm could not be run, or refused the cubin.
    #[error("nvdisasm ({path}) failed: {message}")]
    Disassembler {
        /// The nvdisasm binary tried.
        path: String,
        /// The operating system's reason, or nvdisasm's first line of output.
        message: String,
    },
}

/// SASS opcode counts at one source line of one function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SassLine {
    /// The function (kernel or `.func`) the instructions belong to.
    pub function: String,
    /// The source file as the line info names it (the path of the PTX's `.file`).
    pub file: String,
    /// The source line (0 for instructions before any line comment).
    pub line: u32,
    /// Instructions by base opcode (`FFMA` for `FFMA.FTZ`), in opcode order.
    pub ops: BTreeMap<String, u32>,
}

/// The SASS of one cubin, per function and source line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sass {
    /// Every (function, file, line) with at least one instruction, in order of appearance.
    pub lines: Vec<SassLine>,
}

impl Sass {
    /// Opcode counts at `file:line` over the given functions (a kernel and its callees).
    pub fn at(&self, functions: &[&str], file: &str, line: u32) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        for l in self.lines.iter().filter(|l| {
            l.line == line && l.file == file && functions.contains(&l.function.as_str())
        }) {
            for (op, n) in &l.ops {
                *out.entry(op.clone()).or_default() += n;
            }
        }
        out
    }

    /// How many `opcode` instructions the given functions have in all.
    pub fn total(&self, functions: &[&str], opcode: &str) -> u32 {
        self.lines
            .iter()
            .filter(|l| functions.contains(&l.function.as_str()))
            .filter_map(|l| l.ops.get(opcode))
            .sum()
    }
}

/// The floating-point SASS arithmetic contraction is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatOp {
    /// A fused multiply-add (`FFMA`, `DFMA`, `HFMA2`): a product and a sum rounded once.
    Fma,
    /// A sum (`FADD`, `DADD`, `HADD2`).
    Add,
    /// A product (`FMUL`, `DMUL`, `HMUL2`).
    Mul,
}

/// Register forms of the float arithmetic by type, `[fma, add, mul]`.
const FLOAT_MNEMONICS: [(ValueType, [&str; 3]); 3] = [
    (ValueType::F32, ["FFMA", "FADD", "FMUL"]),
    (ValueType::F64, ["DFMA", "DADD", "DMUL"]),
    (ValueType::F16x2, ["HFMA2", "HADD2", "HMUL2"]),
];

/// What a base mnemonic ([`SassLine::ops`]'s keys) is when it is float arithmetic: the
/// operation, its type (f32 `F…`, f64 `D…`, packed halves `H…2`) and whether it is the form
/// with an immediate operand (`FFMA32I`, which ptxas writes for a constant operand).
pub fn float_op(mnemonic: &str) -> Option<(FloatOp, ValueType, bool)> {
    let (register, immediate) = match mnemonic.strip_suffix("32I") {
        Some(r) => (r, true),
        None => (mnemonic, false),
    };
    FLOAT_MNEMONICS.iter().find_map(|(ty, names)| {
        let k = names.iter().position(|n| *n == register)?;
        let op = [FloatOp::Fma, FloatOp::Add, FloatOp::Mul][k];
        Some((op, *ty, immediate))
    })
}

/// The register form's mnemonic of `op` on `ty` (`FFMA` for an f32 fma); `None` for a type
/// without float SASS arithmetic of its own.
pub fn float_mnemonic(op: FloatOp, ty: ValueType) -> Option<&'static str> {
    let k = match op {
        FloatOp::Fma => 0,
        FloatOp::Add => 1,
        FloatOp::Mul => 2,
    };
    FLOAT_MNEMONICS
        .iter()
        .find(|(t, _)| *t == ty)
        .map(|(_, names)| names[k])
}

/// `NOP`: alignment padding, which moves with the code's layout, so comparisons of two
/// assemblies leave it out.
pub fn is_padding(mnemonic: &str) -> bool {
    mnemonic == "NOP"
}

/// Reads `nvdisasm -g -c` output: `.section .text.NAME` starts a function, `//## File "PATH",
/// line N` sets the source line, and every `/*ADDR*/ [@P] OPCODE ...;` line is counted under
/// its base opcode (the part before the first `.`).
pub fn parse_nvdisasm(text: &str) -> Sass {
    let mut lines: Vec<SassLine> = Vec::new();
    let mut function: Option<String> = None;
    let mut at: (String, u32) = (String::new(), 0);
    for raw in text.lines() {
        let t = raw.trim();
        if let Some(rest) = t.strip_prefix(".section") {
            let name = rest.trim().split([',', ' ', '\t']).next().unwrap_or("");
            function = name.strip_prefix(".text.").map(str::to_string);
            at = (String::new(), 0);
            continue;
        }
        if let Some(rest) = t.strip_prefix("//## File \"") {
            if let Some((file, tail)) = rest.split_once('"') {
                let line = tail
                    .trim_start_matches(',')
                    .trim()
                    .strip_prefix("line ")
                    .and_then(|n| n.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                at = (file.to_string(), line);
            }
            continue;
        }
        let Some(func) = &function else { continue };
        let Some(rest) = t.strip_prefix("/*") else {
            continue;
        };
        let Some((addr, inst)) = rest.split_once("*/") else {
            continue;
        };
        if !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let mut words = inst.trim().trim_start_matches('{').split_whitespace();
        let mut mnemonic = words.next().unwrap_or("");
        if mnemonic.starts_with('@') {
            mnemonic = words.next().unwrap_or("");
        }
        let base = mnemonic
            .trim_end_matches(';')
            .split('.')
            .next()
            .unwrap_or("");
        if base.is_empty() {
            continue;
        }
        let entry = match lines
            .iter_mut()
            .rposition(|l| &l.function == func && l.file == at.0 && l.line == at.1)
        {
            Some(k) => &mut lines[k],
            None => {
                lines.push(SassLine {
                    function: func.clone(),
                    file: at.0.clone(),
                    line: at.1,
                    ops: BTreeMap::new(),
                });
                let last = lines.len() - 1;
                &mut lines[last]
            }
        };
        *entry.ops.entry(base.to_string()).or_default() += 1;
    }
    Sass { lines }
}

/// Assembles `ptx` for `arch` (`sm_90`) with `ptxas -lineinfo` and disassembles the cubin with
/// `nvdisasm -g -c`: the SASS that runs, per source line.
pub fn disassemble(
    ptxas: &Path,
    nvdisasm: &Path,
    ptx: &str,
    arch: &str,
) -> Result<Sass, SassError> {
    Ok(parse_nvdisasm(&disassembly(ptxas, nvdisasm, ptx, arch)?))
}

/// The text `nvdisasm -g -c` prints for the cubin `ptxas -lineinfo` makes of `ptx` for `arch`,
/// kept by content ([`cache`]): the same text with the same tools is assembled once.
pub fn disassembly(
    ptxas: &Path,
    nvdisasm: &Path,
    ptx: &str,
    arch: &str,
) -> Result<String, SassError> {
    cache::remembered(
        ptxas,
        nvdisasm,
        ptx,
        arch,
        "ptxas -lineinfo; nvdisasm -g -c",
        || run_tools(ptxas, nvdisasm, ptx, arch),
    )
}

/// [`disassembly`] without the cache: both tools run.
fn run_tools(ptxas: &Path, nvdisasm: &Path, ptx: &str, arch: &str) -> Result<String, SassError> {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let (cubin, _) = cubin_with(ptxas, ptx, arch, &["-lineinfo"])?;
    let fail = |message: String| SassError::Disassembler {
        path: nvdisasm.display().to_string(),
        message,
    };
    let dir = std::env::temp_dir().join(format!(
        "mantissa-sass-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| fail(e.to_string()))?;
    let file = dir.join("in.cubin");
    let out = std::fs::write(&file, &cubin)
        .map_err(|e| fail(e.to_string()))
        .and_then(|()| {
            Command::new(nvdisasm)
                .args(["-g", "-c"])
                .arg(&file)
                .output()
                .map_err(|e| fail(e.to_string()))
        });
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(fail(err.lines().next().unwrap_or("no message").to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nvdisasm -g -c` of `fan2.cu` (sm_90, ptxas 13.0 -lineinfo, nvdisasm 13.5): both `-=` lines fused.
    const FAN2: &str = include_str!("../tests/fixtures/sass/fan2.sass");

    #[test]
    fn counts_opcodes_per_function_and_line() {
        let s = parse_nvdisasm(FAN2);
        let file = "/src/fan2.cu";
        assert_eq!(s.at(&["fan2"], file, 7).get("FFMA"), Some(&1));
        assert_eq!(s.at(&["fan2"], "/other.cu", 7).get("FFMA"), None);
        assert_eq!(s.at(&["fan2"], file, 9).get("FFMA"), Some(&1));
        assert_eq!(s.total(&["fan2"], "FFMA"), 2);
        assert_eq!(s.total(&["fan2"], "FMUL"), 0);
        assert_eq!(s.total(&["other"], "FFMA"), 0);
        // Predicated and dotted opcodes count under their base: `@P0 EXIT`, `LDG.E`.
        assert_eq!(s.total(&["fan2"], "EXIT"), 3, "{s:?}");
        assert_eq!(s.total(&["fan2"], "LDG"), 6, "{s:?}");
        assert_eq!(s.total(&["fan2"], "NOP"), 14);
    }

    const CONTRACT_DEFAULT: &str = include_str!("../tests/fixtures/sass/contract.default.ptx");
    const CONTRACT_STRICT: &str = include_str!("../tests/fixtures/sass/contract.strict.ptx");

    fn line_ops(s: &Sass, kernel: &str, line: u32) -> Vec<(String, u32)> {
        let file = s
            .lines
            .iter()
            .find(|l| l.function == kernel && l.line == line)
            .map(|l| l.file.clone())
            .unwrap_or_default();
        s.at(&[kernel], &file, line)
            .into_iter()
            .filter(|(op, _)| op.starts_with('F'))
            .collect()
    }

    #[test]
    fn ptxas_fuses_what_the_ptx_leaves_contractible() {
        let Some((ptxas, nvdisasm)) = crate::test_support::sass_tools_or_skip() else {
            return;
        };
        let d = disassemble(&ptxas, &nvdisasm, CONTRACT_DEFAULT, "sm_90").unwrap();
        let ffma = |n: u32| vec![("FFMA".to_string(), n)];
        // a*b + c: fma.rn.f32 in the PTX, FFMA in the SASS.
        assert_eq!(line_ops(&d, "muladd", 6), ffma(1));
        // __fmul_rn(a, b) + c: mul.rn.f32 + add.f32, never fused.
        assert_eq!(
            line_ops(&d, "rounded", 12),
            [("FADD".to_string(), 1), ("FMUL".to_string(), 1)]
        );
        // x -= m*a: mul.f32 + sub.f32 in the PTX, one FFMA in the SASS.
        assert_eq!(line_ops(&d, "update", 18), ffma(1));
        // strict: no FFMA anywhere.
        let s = disassemble(&ptxas, &nvdisasm, CONTRACT_STRICT, "sm_90").unwrap();
        for k in ["muladd", "rounded", "update"] {
            assert_eq!(s.total(&[k], "FFMA"), 0, "{k}");
            assert_eq!(
                (s.total(&[k], "FMUL"), s.total(&[k], "FADD")),
                (1, 1),
                "{k}"
            );
        }
        // A bad architecture is ptxas's refusal, not a panic.
        assert!(matches!(
            disassemble(&ptxas, &nvdisasm, CONTRACT_DEFAULT, "sm_1"),
            Err(SassError::Ptxas(_))
        ));
    }

    #[test]
    fn float_mnemonics_are_classified_both_ways() {
        assert_eq!(
            float_op("FFMA32I"),
            Some((FloatOp::Fma, ValueType::F32, true))
        );
        assert_eq!(
            float_op("DADD"),
            Some((FloatOp::Add, ValueType::F64, false))
        );
        assert_eq!(
            float_op("HMUL2"),
            Some((FloatOp::Mul, ValueType::F16x2, false))
        );
        for m in ["IMAD", "MUFU", "NOP", "F2F", "FFMA32"] {
            assert_eq!(float_op(m), None, "{m}");
        }
        for (ty, _) in FLOAT_MNEMONICS {
            for op in [FloatOp::Fma, FloatOp::Add, FloatOp::Mul] {
                let m = float_mnemonic(op, ty).unwrap();
                assert_eq!(float_op(m), Some((op, ty, false)), "{m}");
            }
        }
        assert_eq!(float_mnemonic(FloatOp::Fma, ValueType::BF16), None);
        assert!(is_padding("NOP") && !is_padding("EXIT"));
    }

    #[test]
    fn sections_and_odd_lines() {
        let text = "\t.section\t.text.k,\"ax\",@progbits\n\
                    \t//## File \"/a b/k.cu\", line 12 inlined at \"x.cu\", line 3\n\
                    /*0000*/ @!P1 FFMA.FTZ R1, R2, R3, R4 ;\n\
                    /*0010*/ { FMUL R1, R2, R3 ;\n\
                    /*zz*/ FADD R1, R1, R1 ;\n\
                    \t.section\t.nv.constant0.k,\"a\",@progbits\n\
                    /*0000*/ FADD R1, R1, R1 ;\n";
        let s = parse_nvdisasm(text);
        assert_eq!(s.lines.len(), 1, "{s:?}");
        let l = &s.lines[0];
        assert_eq!(
            (l.function.as_str(), l.file.as_str(), l.line),
            ("k", "/a b/k.cu", 12)
        );
        assert_eq!(
            l.ops,
            [("FFMA".to_string(), 1), ("FMUL".to_string(), 1)]
                .into_iter()
                .collect()
        );
    }
}
