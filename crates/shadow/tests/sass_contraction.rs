//! The instrumented program computes the bits of the program as written only if ptxas makes
//! the same floating-point instructions of the user's code: an added read of a product can stop
//! ptxas from fusing a `mul` and an `add` into one FMA (the GPU test's bit-identity failures).
//! These tests catch that on the CPU: every shipped example, under both analyses and the
//! `default`, `strict` and `fast` flag sets, is assembled for sm_90 as built and as instrumented,
//! and the FFMAs and DFMAs of the user's functions are counted per source line: a product fused
//! in the program as built and not in the instrumented one leaves fewer FMAs on its line; one
//! fused only in the instrumented program puts an FMA on a line that had none (more FMAs where
//! there were some is ptxas duplicating code: same operations, same bits). Three things that
//! change counts without changing bits are taken out first: the inserted code is moved to a line of
//! its own (`.loc` only names lines: it changes no instruction), so that its own arithmetic
//! (the f32 forms, the relative error) is not counted on the user's lines; every user loop gets
//! `.pragma "nounroll"` in both builds, since ptxas unrolls a loop by a factor that depends on
//! its size; and ptxas's shared slow-path subroutines (`$__internal_*`: division, square root),
//! whose instructions take the line of whichever caller comes first, are not counted.
//!
//! Needs nvcc, NVRTC, ptxas and nvdisasm (skipped without them unless
//! `MANTISSA_REQUIRE_NVCC`/`MANTISSA_REQUIRE_NVRTC`/`MANTISSA_REQUIRE_NVDISASM` say otherwise).

use mantissa_gpu::testing::{require_nvcc_or_skip, require_nvrtc_or_skip};
use mantissa_gpu::{runtime, Arch, BuildRequest, Builder, FlagSet};
use mantissa_harness::trial::build::build_request;
use mantissa_harness::Spec;
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::model::{InstId, Loc, Module, Operand, SrcLine, Statement};
use mantissa_ptx::op::{Control, ValueType};
use mantissa_ptx::pass::shadow::{instrument, ShadowOptions};
use mantissa_ptx::ptxas::cubin_with;
use mantissa_ptx::sass::{float_op, parse_nvdisasm, FloatOp, Sass};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

mod support;

use support::{memo, tools_or_skip};

/// The line the inserted code is moved to: past the end of every example.
const INSERTED_LINE: u32 = 999_999;

/// Whether a SASS mnemonic's number per line shows contraction: the f32 and f64 fused
/// multiply-adds (register forms).
fn shows_contraction(mnemonic: &str) -> bool {
    matches!(
        float_op(mnemonic),
        Some((FloatOp::Fma, ValueType::F32 | ValueType::F64, false))
    )
}

/// Every shipped example spec (tests run in the crate's directory).
fn example_specs() -> Vec<PathBuf> {
    let root = Path::new("../../examples/kernels");
    let mut specs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.is_dir())
        .flat_map(|dir| {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .filter_map(|f| f.ok().map(|f| f.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .collect::<Vec<_>>()
        })
        .collect();
    specs.sort();
    assert!(specs.len() >= 10, "the examples: {specs:?}");
    specs
}

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

/// `instrumented` with every run of inserted statements under `.loc F INSERTED_LINE`, and the
/// user's `.loc` restored after it.
fn inserted_code_on_its_own_line(original: &Module, instrumented: &Module) -> Module {
    let mut out = instrumented.clone();
    for f in out.functions_mut() {
        let Some(body) = f.body.as_mut() else {
            continue;
        };
        let kept: HashSet<InstId> = original
            .functions()
            .find(|o| o.name == f.name)
            .map(|o| o.instructions().map(|i| i.id).collect())
            .unwrap_or_default();
        let mut new = Vec::with_capacity(body.len());
        let mut current: Option<Loc> = None;
        let mut in_inserted = false;
        for s in std::mem::take(body) {
            match &s {
                Statement::Loc(l) => {
                    current = Some(l.clone());
                    if in_inserted {
                        // A user's `.loc` inside a run of inserted code (code inserted before
                        // an instruction follows that instruction's `.loc`): the run stays on
                        // its own line; the user's line comes back where the run ends. The
                        // user's `.loc` stays too (with no instruction under it): a later
                        // `inlined_at` may name its position, which ptxas wants seen before.
                        let mut moved = l.clone();
                        moved.line = INSERTED_LINE;
                        moved.inlined = None;
                        new.push(s.clone());
                        new.push(Statement::Loc(moved));
                        continue;
                    }
                }
                Statement::Inst(i) => {
                    let inserted = !kept.contains(&i.id);
                    if inserted != in_inserted {
                        if let Some(l) = &current {
                            let mut l = l.clone();
                            if inserted {
                                l.line = INSERTED_LINE;
                                l.inlined = None;
                            }
                            new.push(Statement::Loc(l));
                        }
                        in_inserted = inserted;
                    }
                }
                _ => {}
            }
            new.push(s);
        }
        *body = new;
    }
    out
}

/// `m` with `.pragma "nounroll"` after every label of the user's that a later branch targets
/// (the loop headers).
fn not_unrolled(m: &Module) -> Module {
    let mut out = m.clone();
    for f in out.functions_mut() {
        let Some(body) = f.body.as_mut() else {
            continue;
        };
        let mut seen = HashSet::new();
        let mut headers = HashSet::new();
        for s in body.iter() {
            match s {
                Statement::Label(l, _) => {
                    seen.insert(l.clone());
                }
                Statement::Inst(i) if i.decode().control() == Some(Control::Bra) => {
                    if let Some(Operand::Symbol(t)) = i.operands.first() {
                        if seen.contains(t) && !t.starts_with("$mantissa_shadow") {
                            headers.insert(t.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        let mut new = Vec::with_capacity(body.len() + headers.len());
        for s in std::mem::take(body) {
            let header = matches!(&s, Statement::Label(l, _) if headers.contains(l));
            new.push(s);
            if header {
                new.push(Statement::Pragma(vec!["\"nounroll\"".into()], SrcLine(0)));
            }
        }
        *body = new;
    }
    out
}

/// The SASS of `ptx` for sm_90 per line, without ptxas's `$__internal_*` subroutines.
fn sass(ptxas: &Path, nvdisasm: &Path, ptx: &str, what: &str) -> Sass {
    let (cubin, _) =
        cubin_with(ptxas, ptx, "sm_90", &["-lineinfo"]).unwrap_or_else(|e| panic!("{what}: {e}"));
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "mantissa-sass-contraction-{}-{}",
        std::process::id(),
        FILES.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let file = dir.join("in.cubin");
    std::fs::write(&file, cubin).unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(nvdisasm)
        .args(["-g", "-c"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{what}: nvdisasm failed");
    let mut kept = String::new();
    let mut internal = false;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let label = line.trim();
        if label.starts_with(".text.") {
            internal = false;
        } else if label.starts_with("$__internal") && label.ends_with(':') {
            internal = true;
        }
        if !internal {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    parse_nvdisasm(&kept)
}

/// FFMA and DFMA counts per (file, line, opcode) over the user's functions (over all of them:
/// a line inlined into several kernels is one line, whichever kernel nvdisasm files an
/// instruction under).
type Fused = BTreeMap<(String, u32, String), u32>;

fn fused(sass: &Sass, functions: &BTreeSet<String>) -> Fused {
    let mut out = BTreeMap::new();
    for l in sass
        .lines
        .iter()
        .filter(|l| functions.contains(&l.function) && l.line != INSERTED_LINE)
        // ptxas may inline the runtime's functions: their lines are not the user's.
        .filter(|l| !l.file.contains("mantissa_shadow"))
    {
        for (op, n) in l.ops.iter().filter(|(op, _)| shows_contraction(op)) {
            *out.entry((l.file.clone(), l.line, op.clone())).or_default() += n;
        }
    }
    out
}

/// The tools, with their versions (part of every memo key).
#[derive(Clone)]
struct Tools {
    ptxas: PathBuf,
    nvdisasm: PathBuf,
    versions: String,
}

/// [`fused`] of `m` (not unrolled) as ptxas and nvdisasm give it, through the memo: a fused
/// count is a function of the tools' versions, the PTX and the functions counted. The PTX names
/// its source files by absolute paths in this checkout, which differ between checkouts (and by
/// the directory of whichever crate's test built the example first, the compile cache being
/// shared): the key reads them, and the counts name them, as [`portable`] writes them.
fn fused_of(tools: &Tools, m: &Module, functions: &BTreeSet<String>, what: &str) -> Fused {
    let ptx = not_unrolled(m).to_string();
    let names = functions.iter().cloned().collect::<Vec<_>>().join("\n");
    let key_ptx = portable(&ptx);
    let key = memo::key(
        "fused",
        &[
            tools.versions.as_bytes(),
            b"-lineinfo -arch=sm_90; nvdisasm -g -c",
            names.as_bytes(),
            key_ptx.as_bytes(),
        ],
    );
    let (tools, functions, what) = (tools.clone(), functions.clone(), what.to_string());
    let size = ptx.len();
    // The memo keeps a list of pairs: JSON has no tuple keys.
    let pairs: Vec<((String, u32, String), u32)> = memo::remember(&key, size, move || {
        fused(
            &sass(&tools.ptxas, &tools.nvdisasm, &ptx, &what),
            &functions,
        )
        .into_iter()
        .map(|((file, line, op), n)| ((portable(&file), line, op), n))
        .collect()
    });
    pairs.into_iter().collect()
}

/// This crate's directory, as the PTX names files under it.
const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// `text` with this crate's directory written `<crate>`, and any crate's directory followed by
/// `../..` (`ROOT/crates/cli/../../examples`, as a test run from crates/cli names an example)
/// written as this crate's (`<crate>/../../examples`), the form the memo's keys were first made
/// in.
fn portable(text: &str) -> String {
    let crates = Path::new(CRATE_DIR)
        .parent()
        .map(|p| format!("{}/", p.display()))
        .unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&crates) {
        out.push_str(&rest[..at]);
        let after = &rest[at + crates.len()..];
        let name_len = after.find('/').unwrap_or(after.len());
        let is_name = name_len > 0
            && after[..name_len]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if is_name && after[name_len..].starts_with("/../../") {
            out.push_str("<crate>/../../");
            rest = &after[name_len + "/../../".len()..];
        } else {
            out.push_str(&crates);
            rest = after;
        }
    }
    out.push_str(rest);
    out.replace(CRATE_DIR, "<crate>")
}

#[test]
fn paths_read_the_same_from_every_checkout_and_crate() {
    let crates = Path::new(CRATE_DIR).parent().unwrap().display().to_string();
    assert_eq!(
        portable(&format!(
            "a {crates}/cli/../../examples/k.cu b {crates}/shadow/../../x.cu"
        )),
        "a <crate>/../../examples/k.cu b <crate>/../../x.cu"
    );
    assert_eq!(
        portable(&format!("{CRATE_DIR}/tests/k.cu")),
        "<crate>/tests/k.cu"
    );
    assert_eq!(
        portable(&format!("{crates}/cli/src/k.cu")),
        format!("{crates}/cli/src/k.cu")
    );
}

/// `work(i)` for every `i < n`, on as many threads as the machine has cores (ptxas runs are
/// independent and each uses one core).
fn in_parallel<T: Send>(n: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(n.max(1));
    let next = AtomicUsize::new(0);
    let results = Mutex::new((0..n).map(|_| None).collect::<Vec<Option<T>>>());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = work(i);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every unit ran"))
        .collect()
}

#[test]
fn every_shipped_example_keeps_its_floating_point_instructions_when_instrumented() {
    let (Some(_), Some(nvrtc), Some((ptxas, nvdisasm))) = (
        require_nvcc_or_skip(),
        require_nvrtc_or_skip(),
        tools_or_skip(),
    ) else {
        return;
    };
    let arch = Arch::new(9, 0);
    let rt = runtime::compile(&nvrtc, &runtime::SHADOW, arch).unwrap_or_else(|e| panic!("{e}"));
    let values_rt =
        runtime::compile(&nvrtc, &runtime::SHADOW_VALUES, arch).unwrap_or_else(|e| panic!("{e}"));
    let shadow_pass = |options: ShadowOptions| {
        move |m: &Module| {
            instrument(m, &options)
                .unwrap_or_else(|e| panic!("{e}"))
                .module
        }
    };
    let demotion = shadow_pass(ShadowOptions {
        exceptions: false,
        ..ShadowOptions::all()
    });
    let exceptions = shadow_pass(ShadowOptions {
        demotion: false,
        ..ShadowOptions::all()
    });
    let values = |m: &Module| {
        mantissa_ptx::pass::shadow_values::instrument(m)
            .unwrap_or_else(|e| panic!("{e}"))
            .module
    };
    // Each analysis's instrumented build, with its runtime.
    type Build<'a> = (&'a str, &'a dyn Fn(&Module) -> Module, &'a str);
    let analyses: [Build; 3] = [
        ("demotion", &demotion, &rt),
        ("exceptions", &exceptions, &rt),
        ("shadow", &values, &values_rt),
    ];
    let tools = Tools {
        versions: memo::tool_version(&ptxas) + &memo::tool_version(&nvdisasm),
        ptxas,
        nvdisasm,
    };
    // Every build to assemble, made first (cheap, on the CPU): per example and flag set, the
    // program as built, then each analysis's instrumented program as it runs.
    struct Case {
        what: String,
        analysis: String,
        module: Module,
        functions: BTreeSet<String>,
    }
    let mut cases = Vec::new();
    for spec in example_specs() {
        for flags in [FlagSet::DEFAULT, FlagSet::STRICT, FlagSet::FAST] {
            let original = built(&spec, flags);
            let functions: BTreeSet<String> = original
                .functions()
                .filter(|f| f.body.is_some())
                .map(|f| f.name.clone())
                .collect();
            let what = format!("{} {flags}", spec.display());
            for (analysis, pass, rt) in &analyses {
                let out = pass(&original);
                let moved = inserted_code_on_its_own_line(&original, &out);
                let mut merged = merge_runtime(&moved, rt).unwrap_or_else(|e| panic!("{e}"));
                // What runs: the runtime's per-execution functions inlined, on the inserted
                // code's own line (the inliner keeps the caller's line).
                merged = if *analysis == "shadow" {
                    mantissa_ptx::pass::shadow_values::inline_runtime(&merged)
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                } else {
                    mantissa_ptx::pass::shadow::inline_runtime(&merged)
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                };
                cases.push(Case {
                    what: what.clone(),
                    analysis: analysis.to_string(),
                    module: merged,
                    functions: functions.clone(),
                });
            }
            cases.push(Case {
                what,
                analysis: "as built".into(),
                module: original,
                functions,
            });
        }
    }
    // The largest first, so that the last ptxas run to finish is a short one.
    let sizes: Vec<usize> = cases.iter().map(|c| c.module.to_string().len()).collect();
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let counted = in_parallel(order.len(), |k| {
        let c = &cases[order[k]];
        (
            order[k],
            fused_of(
                &tools,
                &c.module,
                &c.functions,
                &format!("{} {}", c.what, c.analysis),
            ),
        )
    });
    let mut counts: Vec<Option<Fused>> = (0..cases.len()).map(|_| None).collect();
    for (i, f) in counted {
        counts[i] = Some(f);
    }
    let mut failures = Vec::new();
    // Each example and flag set: its three instrumented builds, then the build as it was.
    for (group, built_counts) in cases.chunks(4).zip(counts.chunks(4)) {
        let was = built_counts[3].as_ref().expect("counted");
        for (case, now) in group[..3].iter().zip(&built_counts[..3]) {
            let now = now.as_ref().expect("counted");
            let keys: BTreeSet<_> = was.keys().chain(now.keys()).collect();
            for key in keys {
                let (w, n) = (was.get(key).copied(), now.get(key).copied());
                // A fusion lost leaves fewer FMAs on its line; one gained puts an FMA on a
                // line that had none. More FMAs where there were some is ptxas duplicating
                // code into both sides of a branch (seen in options.cu under `strict`,
                // where nothing can be contracted): the same operations, the same bits.
                if n.unwrap_or(0) < w.unwrap_or(0) || (w.is_none() && n.is_some()) {
                    failures.push(format!(
                        "{} {}: {}:{}: {} as built {w:?}, instrumented {n:?}",
                        case.what, case.analysis, key.0, key.1, key.2,
                    ));
                }
            }
        }
    }
    memo::spot_check();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The cost of each analysis in registers and instructions, per shipped example (default flag
/// set, sm_90): `ptxas -v` registers, stack frame and spills of the user's kernels, and their
/// SASS instruction count, as built and instrumented (demotion + exceptions; shadow values with
/// the runtime called, and inlined as it runs). Prints a table; `--ignored --nocapture`.
#[test]
#[ignore = "prints the registers/SASS table of every example (a measurement, not a check)"]
fn registers_and_sass_instructions_per_example() {
    let (Some((ptxas, nvdisasm)), Some(_), Some(nvrtc)) = (
        tools_or_skip(),
        require_nvcc_or_skip(),
        require_nvrtc_or_skip(),
    ) else {
        return;
    };
    let arch = Arch::new(9, 0);
    let rt = runtime::compile(&nvrtc, &runtime::SHADOW, arch).unwrap_or_else(|e| panic!("{e}"));
    let values_rt =
        runtime::compile(&nvrtc, &runtime::SHADOW_VALUES, arch).unwrap_or_else(|e| panic!("{e}"));
    println!("| example (kernel) | build | registers | stack B | spills B | SASS instructions | LDL+STL | LD+ST (generic) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for spec in example_specs() {
        let original = built(&spec, FlagSet::DEFAULT);
        let kernels: Vec<String> = original.kernels().map(|f| f.name.clone()).collect();
        let shadow = mantissa_ptx::pass::shadow::inline_runtime(
            &merge_runtime(
                &instrument(&original, &ShadowOptions::all())
                    .unwrap_or_else(|e| panic!("{e}"))
                    .module,
                &rt,
            )
            .unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let called = merge_runtime(
            &mantissa_ptx::pass::shadow_values::instrument(&original)
                .unwrap_or_else(|e| panic!("{e}"))
                .module,
            &values_rt,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let inlined = mantissa_ptx::pass::shadow_values::inline_runtime(&called)
            .unwrap_or_else(|e| panic!("{e}"));
        let name = spec
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        for (build, m) in [
            ("as built", &original),
            ("demotion+exceptions", &shadow),
            ("values, calls", &called),
            ("values, inlined", &inlined),
        ] {
            let ptx = m.to_string();
            let (_, log) = cubin_with(&ptxas, &ptx, "sm_90", &["-v"])
                .unwrap_or_else(|e| panic!("{name} {build}: {e}"));
            let resources = mantissa_ptx::ptxas::parse_verbose(&log);
            let sass = mantissa_ptx::sass::disassemble(&ptxas, &nvdisasm, &ptx, "sm_90")
                .unwrap_or_else(|e| panic!("{name} {build}: {e}"));
            for k in &kernels {
                let r = resources.iter().find(|r| &r.function == k);
                let count: u32 = sass
                    .lines
                    .iter()
                    .filter(|l| &l.function == k)
                    .flat_map(|l| l.ops.values())
                    .sum();
                let ops = |names: &[&str]| -> u32 {
                    sass.lines
                        .iter()
                        .filter(|l| &l.function == k)
                        .flat_map(|l| names.iter().filter_map(|n| l.ops.get(*n)))
                        .sum()
                };
                let local = ops(&["LDL", "STL"]);
                let generic = ops(&["LD", "ST"]);
                let short: String = k.chars().take(28).collect();
                println!(
                    "| {name} ({short}) | {build} | {} | {} | {} | {count} | {local} | {generic} |",
                    r.and_then(|r| r.registers)
                        .map_or("?".into(), |n| n.to_string()),
                    r.map_or(0, |r| r.stack_frame_bytes),
                    r.map_or(0, |r| r.spill_store_bytes),
                );
            }
        }
    }
}
