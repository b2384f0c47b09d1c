//! NVRTC-only evidence that the header cannot be contracted or approximated: it compiles for
//! sm_90 under every flag set, and in the PTX of every twin kernel
//! - no instruction is approximate (`div.approx`, `div.full`, `sqrt.approx`, `rcp.approx`,
//!   `rsqrt`, `ex2`, `lg2`, `sin`, `cos`, `tanh`) and none is a `mad`;
//! - every f32/f64 `add`, `sub`, `mul`, `fma`, `div`, `sqrt`, `rcp` carries the explicit rounding
//!   modifier `.rn`, which by the PTX ISA keeps ptxas from fusing or re-associating it;
//! - the number of `fma` instructions is the same under every flag set (contraction under
//!   `default` would add some) and equals the number of `mul_add` calls of the Rust code
//!   (per inlined copy): zero for every operation without one, e.g. `f32x2_add`;
//! - apart from `.ftz`, the instruction census is the same under every flag set;
//! - negation and absolute value are bit operations (no `neg.f32`, `abs.f32`), so they never
//!   flush; under `fast` and `ftz` every f32 arithmetic instruction and comparison carries `.ftz`
//!   (the model the GPU test compares `fast` against), and under the other sets none does.
//!
//! Everything is inlined (the header's functions are `__forceinline__`), so each kernel's
//! instructions are its whole computation; a `call` would make the counts incomplete and fails.

use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::twin::{self, TwinOp, TwinType};
use mantissa_gpu::{Arch, Compiled, FlagSet, Target};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::show;

/// One kernel's instructions: the full mnemonic (`add.rn.ftz.f32`) of each, in order.
struct Kernel {
    name: String,
    instructions: Vec<String>,
}

/// The `.entry` bodies of a PTX module.
fn kernels(ptx: &str) -> Vec<Kernel> {
    let mut out = Vec::new();
    let mut current: Option<Kernel> = None;
    let mut depth = 0usize;
    for line in ptx.lines() {
        let code = line.split("//").next().unwrap_or("").trim();
        if let Some(rest) = code
            .strip_prefix(".visible .entry ")
            .or(code.strip_prefix(".entry "))
        {
            let name = rest.split('(').next().unwrap_or("").trim().to_string();
            current = Some(Kernel {
                name,
                instructions: Vec::new(),
            });
            depth = 0;
            continue;
        }
        let Some(k) = current.as_mut() else { continue };
        depth += code.matches('{').count();
        let closes = code.matches('}').count();
        let instr = code.trim_matches(|c| c == '{' || c == '}').trim();
        // Predicates (`@%p1 bra ...`) are not part of the mnemonic.
        let instr = match instr.strip_prefix('@') {
            Some(rest) => rest
                .split_once(char::is_whitespace)
                .map_or("", |(_, i)| i.trim()),
            None => instr,
        };
        if !instr.is_empty()
            && !instr.starts_with('.')
            && !instr.starts_with('$')
            && !instr.starts_with(')')
        {
            if let Some(m) = instr.split_whitespace().next() {
                k.instructions.push(m.trim_end_matches(';').to_string());
            }
        }
        if closes > 0 {
            depth = depth.saturating_sub(closes);
            if depth == 0 {
                out.extend(current.take());
            }
        }
    }
    out
}

/// The parts of a mnemonic: `fma.rn.ftz.f32` -> ["fma", "rn", "ftz", "f32"].
fn parts(m: &str) -> Vec<&str> {
    m.split('.').collect()
}

fn is_float_type(p: &str) -> bool {
    p == "f32" || p == "f64"
}

/// Floating-point arithmetic that must carry `.rn`.
const ROUNDED: [&str; 7] = ["add", "sub", "mul", "fma", "div", "sqrt", "rcp"];
/// Floating-point instructions that are approximate or fused behind the source's back (any
/// instruction with `.approx` or `.full` is refused too).
const FORBIDDEN: [&str; 7] = ["mad", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"];

/// The number of FMAs each kernel must contain: the Rust code's `mul_add` calls, times the
/// number of copies the header inlines (DWDivDW3 appears twice in `div`, once unscaled and once
/// in the cold rescaling path; SQRTDWtoDW's body twice in `sqrt`, for the scaled and unscaled
/// input).
fn expected_fmas(op: &TwinOp) -> usize {
    let dw = matches!(op.ty, TwinType::F32x2 | TwinType::F64x2);
    match (op.name, dw) {
        // TwoProd: one FMA.
        ("two_prod", false) | ("from_product", true) => 1,
        // TwoProd + 2 FMAs.
        ("mul", true) => 3,
        // TwoProd + 3 FMAs.
        ("mul_seed", true) => 4,
        // TwoProd + 2 FMAs.
        ("mul_fast", true) => 3,
        // TwoProd + 1 FMA.
        ("mul_base", true) => 2,
        // Per copy: 1 FMA (residual 1 - y.hi th) + DWTimesFP3 (2) + DWTimesDW3 (3) = 6.
        ("div", true) => 2 * 6,
        // DWTimesFP1's TwoProd.
        ("div_dw2", true) => 1,
        // TwoProd + the FMA of the residual.
        ("div_seed", true) => 2,
        // TwoProd.
        ("div_base", true) => 1,
        // Per copy: the residual FMA.
        ("sqrt", true) => 2,
        // Comp's square root (mantissa's addition): TwoProd(s, s).
        ("sqrt", false) => 1,
        _ => 0,
    }
}

/// Per flag set: instruction counts over all twin kernels, for the report.
type Census = BTreeMap<String, usize>;

fn compile_all(flags: FlagSet) -> Option<Arc<Compiled>> {
    let c = require_nvrtc_or_skip()?;
    let src = twin::elementwise(&TwinOp::all());
    Some(
        c.compile(&src, flags, Target::Cubin(Arch::new(9, 0)))
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

#[test]
fn nvrtc_header_alone_compiles_under_every_flag_set() {
    let Some(c) = require_nvrtc_or_skip() else {
        return;
    };
    // The bare header (no kernels) plus a kernel using the operators, as a user would write it.
    let user = format!(
        "{}\nextern \"C\" __global__ void user(mantissa::f64x2* x, const mantissa::f32x2* y, \
         mantissa::comp64n* z) {{\n    using namespace mantissa;\n    \
         x[0] = (x[1] + x[2]) * x[3] / x[4] - x[5] * 2.0 + 1.0;\n    \
         f32x2 s = f32x2_sqrt(-y[0]) / 3.0f;\n    x[6] = f64x2_from_sum((double)s.hi, (double)s.lo);\n    \
         z[0] = -(z[1] * z[2] - z[3] / z[4]);\n}}\n",
        twin::HEADER
    );
    for flags in FlagSet::ALL {
        for (name, text) in [("mantissa.cuh", twin::HEADER), ("user.cu", user.as_str())] {
            let src = mantissa_gpu::Source::new(name, text);
            let out = c
                .compile(&src, flags, Target::Cubin(Arch::new(9, 0)))
                .unwrap_or_else(|e| panic!("{flags}: {e}"));
            assert!(out.cubin.is_some());
            assert!(
                out.log.trim().is_empty(),
                "{flags} {name}: warnings: {}",
                out.log
            );
        }
    }
}

#[test]
fn nvrtc_twin_kernels_cannot_be_contracted_or_approximated() {
    let ops = TwinOp::all();
    let mut fmas: BTreeMap<String, Vec<(FlagSet, usize)>> = BTreeMap::new();
    let mut census: Vec<(FlagSet, Census)> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    for flags in FlagSet::ALL {
        let Some(compiled) = compile_all(flags) else {
            return;
        };
        let ftz = matches!(flags, FlagSet::FAST | FlagSet::FTZ);
        let ks = kernels(&compiled.ptx);
        assert_eq!(ks.len(), ops.len(), "{flags}: one kernel per operation");
        let mut counts = Census::new();
        for k in &ks {
            let Some(op) = ops.iter().find(|o| o.kernel_name() == k.name) else {
                panic!("{flags}: unexpected kernel {}", k.name);
            };
            let mut n_fma = 0;
            for m in &k.instructions {
                let p = parts(m);
                let float = p.iter().any(|t| is_float_type(t));
                if p[0] == "call" {
                    problems.push(format!("{flags} {}: {m}: not inlined", k.name));
                }
                if p.contains(&"approx")
                    || p.contains(&"full")
                    || (float && FORBIDDEN.contains(&p[0]))
                {
                    problems.push(format!("{flags} {}: {m}", k.name));
                }
                if !float {
                    continue;
                }
                *counts.entry(m.clone()).or_default() += 1;
                if ROUNDED.contains(&p[0]) && !p.contains(&"rn") {
                    problems.push(format!("{flags} {}: {m} has no explicit rounding", k.name));
                }
                if (p[0] == "neg" || p[0] == "abs") && p.contains(&"f32") {
                    problems.push(format!(
                        "{flags} {}: {m} (negation must be on bits)",
                        k.name
                    ));
                }
                let flushes = p.contains(&"ftz");
                let f32_math = p.contains(&"f32")
                    && (ROUNDED.contains(&p[0])
                        || p[0] == "setp"
                        || p[0] == "min"
                        || p[0] == "max");
                if f32_math && flushes != ftz {
                    problems.push(format!(
                        "{flags} {}: {m}: .ftz expected {}",
                        k.name,
                        if ftz {
                            "on every f32 instruction"
                        } else {
                            "on none"
                        }
                    ));
                }
                if p[0] == "fma" {
                    n_fma += 1;
                }
            }
            if n_fma != expected_fmas(op) {
                problems.push(format!(
                    "{flags} {}: {n_fma} fma, the Rust code has {}",
                    k.name,
                    expected_fmas(op)
                ));
            }
            fmas.entry(k.name.clone()).or_default().push((flags, n_fma));
        }
        census.push((flags, counts));
    }
    show("PTX census of the twin kernels (all 80, sm_90), per flag set:");
    for (flags, counts) in &census {
        let line: Vec<String> = counts.iter().map(|(m, n)| format!("{m} {n}")).collect();
        show(format!("  {flags}: {}", line.join(", ")));
    }
    let with_fma: Vec<String> = fmas
        .iter()
        .filter(|(_, v)| v.iter().any(|&(_, n)| n > 0))
        .map(|(k, v)| format!("{k} {}", v[0].1))
        .collect();
    show(format!(
        "fma per kernel (same under every flag set; all other kernels 0): {}",
        with_fma.join(", ")
    ));
    // The strongest form: apart from the `.ftz` marker, every flag set yields the same
    // instructions, so no flag changed what the header computes.
    let plain = |c: &Census| -> Census {
        let mut out = Census::new();
        for (m, n) in c {
            *out.entry(m.replace(".ftz", "")).or_default() += n;
        }
        out
    };
    for (flags, counts) in &census[1..] {
        if plain(counts) != plain(&census[0].1) {
            problems.push(format!(
                "{flags}: the instruction census differs from {}'s beyond .ftz",
                census[0].0
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn parser_reads_entries_and_mnemonics() {
    let ptx = "\
.visible .entry twin_a(\n\t.param .u64 p\n)\n{\n\t.reg .f32 %f<4>;\n\tld.param.u64 %rd1, [p];\n\
\tsetp.neu.ftz.f32 %p1, %f1, 0f00000000;\n\t@%p1 bra $L__BB0_2;\n\tfma.rn.f32 %f3, %f1, %f2, %f1; // x\n\
$L__BB0_2:\n\tret;\n\n}\n.visible .entry twin_b()\n{\n\tret;\n}\n";
    let ks = kernels(ptx);
    assert_eq!(ks.len(), 2);
    assert_eq!(ks[0].name, "twin_a");
    assert_eq!(
        ks[0].instructions,
        [
            "ld.param.u64",
            "setp.neu.ftz.f32",
            "bra",
            "fma.rn.f32",
            "ret"
        ]
    );
    assert_eq!(ks[1].instructions, ["ret"]);
}
