//! Pinning ptxas's contractions (`mantissa_ptx::pass::pin_contraction`) on every shipped
//! example (`examples/kernels/*/*.toml`, f64 and f32 programs, `examples/shadow`,
//! `examples/diff/projector`) under the `default` and `fast` flag sets, for sm_90, on the CPU:
//! - the method's premise: line info changes no code, so the PTX relined one `.loc` per
//!   instruction, as built, and with no `.loc` at all assemble to the same SASS text (comments
//!   aside);
//! - the claim: per function, the pinned module's SASS has exactly the original's multiset of
//!   opcodes (FFMA, FMUL, FADD, DFMA, DMUL, DADD and all others), and the pinned module has no
//!   unrounded f32/f64 `mul`/`add`/`sub` left but the ones the report lists.
//!
//! Needs nvcc, NVRTC, ptxas and nvdisasm (skipped without them unless
//! `MANTISSA_REQUIRE_NVCC`/`MANTISSA_REQUIRE_NVRTC`/`MANTISSA_REQUIRE_NVDISASM` say otherwise).

use mantissa_gpu::testing::{require_nvcc_or_skip, require_nvrtc_or_skip};
use mantissa_gpu::{Arch, BuildRequest, Builder, FlagSet};
use mantissa_harness::trial::build::build_request;
use mantissa_harness::trial::pin::pin_contraction_with;
use mantissa_harness::Spec;
use mantissa_ptx::model::{Item, Module, Statement};
use mantissa_ptx::op::{Arith, OpKind, ValueType};
use mantissa_ptx::sass::{disassembly, is_padding, parse_nvdisasm, relined};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod support;

use support::{example_specs, tools_or_skip};

const ARCH: &str = "sm_90";

/// The example built for sm_90 under `flags`, as `mantissa shadow` builds it.
fn built(spec_path: &Path, flags: FlagSet) -> Module {
    let spec = Spec::load(spec_path).unwrap_or_else(|e| panic!("{e}"));
    let mut request: BuildRequest =
        build_request(&spec, flags, None).unwrap_or_else(|e| panic!("{e}"));
    request.arch = Some(Arch::new(9, 0));
    let built = Builder::new()
        .build(&request)
        .unwrap_or_else(|e| panic!("{}: {e}", spec_path.display()));
    mantissa_ptx::parse(&built.ptx).module
}

/// `m` without any line info.
fn unlined(m: &Module) -> Module {
    let mut out = m.clone();
    out.items.retain(|i| !matches!(i, Item::File { .. }));
    for f in out.functions_mut() {
        if let Some(body) = f.body.as_mut() {
            body.retain(|s| !matches!(s, Statement::Loc(_)));
        }
    }
    out
}

/// nvdisasm's text without its comments (the line info) and blank lines.
fn code_only(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or("").trim_end().to_string())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

fn builds() -> Option<(PathBuf, PathBuf)> {
    let (Some(_), Some(_), Some(tools)) = (
        require_nvcc_or_skip(),
        require_nvrtc_or_skip(),
        tools_or_skip(),
    ) else {
        return None;
    };
    Some(tools)
}

#[test]
fn line_info_changes_no_sass_of_any_example() {
    let Some((ptxas, nvdisasm)) = builds() else {
        return;
    };
    let mut failures = Vec::new();
    for spec in example_specs() {
        for flags in [FlagSet::DEFAULT, FlagSet::FAST] {
            let m = built(&spec, flags);
            let what = format!("{} {flags}", spec.display());
            let text = |m: &Module| {
                code_only(
                    &disassembly(&ptxas, &nvdisasm, &m.to_string(), ARCH)
                        .unwrap_or_else(|e| panic!("{what}: {e}")),
                )
            };
            let as_built = text(&m);
            assert!(as_built.len() > 10, "{what}: {as_built:?}");
            for (name, other) in [("relined", relined(&m).0), ("unlined", unlined(&m))] {
                let t = text(&other);
                if t != as_built {
                    let at = t.iter().zip(&as_built).position(|(a, b)| a != b);
                    failures.push(format!(
                        "{what}: {name} differs from as built (first at line {at:?} of {} and {})",
                        t.len(),
                        as_built.len()
                    ));
                }
            }
            println!(
                "{what}: {} SASS lines, identical relined and unlined",
                as_built.len()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// SASS opcodes per (function, opcode).
fn opcodes(
    ptxas: &Path,
    nvdisasm: &Path,
    m: &Module,
    what: &str,
) -> BTreeMap<(String, String), u32> {
    let text = disassembly(ptxas, nvdisasm, &m.to_string(), ARCH)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut out = BTreeMap::new();
    for l in parse_nvdisasm(&text).lines {
        // NOPs are alignment padding: they move with the code's layout.
        for (op, n) in l.ops.into_iter().filter(|(op, _)| !is_padding(op)) {
            *out.entry((l.function.clone(), op)).or_default() += n;
        }
    }
    out
}

/// An unrounded f32/f64 `mul`, `add` or `sub`: what ptxas may contract.
fn unrounded(op: &mantissa_ptx::op::Op) -> bool {
    matches!(op.kind, OpKind::Arith(Arith::Mul | Arith::Add | Arith::Sub))
        && matches!(op.ty, Some(ValueType::F32 | ValueType::F64))
        && op.rounding.is_none()
}

/// The unrounded muls whose register is read by an unrounded add/sub (directly or through a
/// `neg`), and those adds/subs, matched by register *name*: an over-approximation of the pass's
/// def-use links (a reassigned name links more), so the check below is the stricter for it.
fn linked_by_name(
    insts: &[&mantissa_ptx::model::Instruction],
) -> BTreeSet<mantissa_ptx::model::InstId> {
    let products: BTreeMap<&str, mantissa_ptx::model::InstId> = insts
        .iter()
        .filter(|i| {
            let op = i.decode();
            unrounded(&op) && op.kind == OpKind::Arith(Arith::Mul)
        })
        .flat_map(|i| i.defs().into_iter().map(move |d| (d, i.id)))
        .collect();
    let negs: BTreeMap<&str, mantissa_ptx::model::InstId> = insts
        .iter()
        .filter(|i| i.decode().kind == OpKind::Arith(Arith::Neg))
        .filter_map(|i| Some((*i.defs().first()?, *products.get(i.uses().first()?)?)))
        .collect();
    let mut out = BTreeSet::new();
    for i in insts.iter().filter(|i| {
        let op = i.decode();
        unrounded(&op) && op.kind != OpKind::Arith(Arith::Mul)
    }) {
        for u in i.uses() {
            if let Some(&p) = products.get(u).or_else(|| negs.get(u)) {
                out.insert(p);
                out.insert(i.id);
            }
        }
    }
    out
}

#[test]
fn every_pinned_example_assembles_to_the_same_sass_opcodes() {
    let Some((ptxas, nvdisasm)) = builds() else {
        return;
    };
    let mut failures = Vec::new();
    let mut pairs = 0;
    for spec in example_specs() {
        for flags in [FlagSet::DEFAULT, FlagSet::FAST] {
            let m = built(&spec, flags);
            let what = format!("{} {flags}", spec.display());
            let (pinned, report) = pin_contraction_with(&ptxas, &nvdisasm, &m, Arch::new(9, 0))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            pairs += report.pairs.len();
            println!("{what}: {}", report.summary());
            for l in &report.left {
                println!(
                    "  left: {} {:?}: {}: {}",
                    l.function, l.line, l.instruction, l.reason
                );
            }
            let (was, now) = (
                opcodes(&ptxas, &nvdisasm, &m, &what),
                opcodes(&ptxas, &nvdisasm, &pinned, &what),
            );
            let keys: BTreeSet<_> = was.keys().chain(now.keys()).collect();
            for k in keys {
                let (w, n) = (was.get(k), now.get(k));
                if w != n {
                    failures.push(format!(
                        "{what}: {} {}: as built {w:?}, pinned {n:?}",
                        k.0, k.1
                    ));
                }
            }
            let left: BTreeSet<_> = report
                .left
                .iter()
                .map(|l| (l.function.as_str(), l.inst))
                .collect();
            for f in pinned.functions() {
                let linked = linked_by_name(&f.instructions().collect::<Vec<_>>());
                for i in f.instructions() {
                    if unrounded(&i.decode())
                        && linked.contains(&i.id)
                        && !left.contains(&(f.name.as_str(), i.id))
                    {
                        failures.push(format!("{what}: {} unrounded, not reported: {i}", f.name));
                    }
                }
            }
        }
    }
    assert!(pairs > 0, "no example has a pair to pin");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
