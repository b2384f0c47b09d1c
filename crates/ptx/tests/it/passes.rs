//! Pass tests as data: for every case under `tests/passes/<pass>/`, the input PTX is parsed
//! (`mantissa_ptx::parse`), the pass named by the directory runs with the options the case
//! states, and the printed module (`module.to_string()`) and the report (each [`Report`]'s
//! `pass: summary` line and its notes) are compared with the expected files. The files show what
//! each pass does without reading Rust.
//!
//! # Layout
//!
//! ```text
//! tests/passes/<pass>/<case>.ptx            the input (a case name has no dot)
//! tests/passes/<pass>/<case>.expected.ptx   the module the pass returned, as printed
//! tests/passes/<pass>/<case>.expected.txt   its report: `pass: summary`, then `  note: ...`
//!                                           per note (one block per pass of a pipeline)
//! tests/passes/<pass>/<case>.runtime.ptx    runtime only: the runtime's PTX to merge
//! tests/passes/<pass>/<case>.sass           pin_contraction only: `nvdisasm -g -c` of the
//!                                           relined input (see below)
//! ```
//!
//! `<pass>` is the module name under `src/pass/` (`demote`, `store_f32`, ...); every `pub mod`
//! of `src/pass/mod.rs` must have a directory (a test below checks it), and every cause pass of
//! `src/pass/cause.rs` a case in `cause/`.
//!
//! # Options
//!
//! The input's first line is `// options: WORD WORD ...` (possibly no word). A word is a flag
//! (`all`) or `key=value` (`param=k_param_0`, repeatable). An instruction is *marked* by a
//! comment `// <-` at the end of its line (the parser drops comments, so the mark changes
//! nothing but the selection). Unknown words are an error. Per pass:
//!
//! - `demote`: `all` (`DemoteSet::all`) or `marked` (`DemoteSet::sites` of the marked ones).
//! - `promote`, `switch`: the same (`PromoteSet`; `SwitchPass` of a `DemoteSet`).
//! - `store_f32`: `param=NAME`, repeatable: the buffer of the kernel that declares `NAME`.
//! - `cause`: `ftz`, `approx`, `contraction` or `convert` runs that pass struct on the marked
//!   instructions (`contraction`: marked `mul`s as contractible products, the others as
//!   contractions); `switch` lists `cause::candidates(m, None)` in the report (`candidate K: SITE
//!   ID CAUSE OPCODE`, then `(chosen)` or `(listed only: WHY)`) and runs `cause::switch` of the
//!   switchable candidates at marked instructions (one report per cause pass).
//! - `shadow`: `demotion` and/or `exceptions`, and `only=A..B` (site indices).
//! - `shadow_values`: no word.
//! - `inline`: `func=NAME`, repeatable: the functions whose calls are inlined.
//! - `runtime`: `func=NAME`, repeatable: `MergeRuntime` of `<case>.runtime.ptx` (its name in
//!   the report), inlining those functions.
//! - `count`: `every` or `fp`, and `call` or `atomic` (`pass::count::count`, which has no
//!   `Report`: the lines are written here from its `CountReport`, one summary and one
//!   `  site K: FUNCTION ID OPCODE` per site).
//! - `pin_contraction`: `eliminated=fused`, `=rounded` or `=left` (the default):
//!   `PinContraction::with_eliminated` of the SASS in `<case>.sass`, for the input's `.target`.
//!
//! For `pin_contraction`, `<case>.sass` is what `ptxas -lineinfo` and `nvdisasm -g -c` make of
//! `sass::relined(input)` (line k: the k-th instruction). It is written when missing and
//! blessing with both tools found (delete it to make it again); the test itself needs no tool.
//!
//! # Blessing
//!
//! `MANTISSA_BLESS=1 cargo test -p mantissa-ptx --test it passes::` writes the expected files
//! instead of comparing them (only the ones that changed). Read what it wrote before committing
//! it: a blessed file is a claim about what the pass does. Without it, a missing expected file
//! is a failure, and a difference is shown as a diff of the lines that differ.
//!
//! Every input must parse without diagnostics, and so must every output.

use mantissa_ptx::pass::cause::{self, approx, contraction, convert, ftz};
use mantissa_ptx::pass::count::{self, CountOptions, Counter, Which};
use mantissa_ptx::pass::demote::{Demote, DemoteSet};
use mantissa_ptx::pass::inline::Inline;
use mantissa_ptx::pass::pin_contraction::{Eliminated, PinContraction};
use mantissa_ptx::pass::promote::{Promote, PromoteSet};
use mantissa_ptx::pass::runtime::MergeRuntime;
use mantissa_ptx::pass::shadow::{Shadow, ShadowOptions};
use mantissa_ptx::pass::shadow_values::ShadowValues;
use mantissa_ptx::pass::store_f32::{StoreF32, StoreRequest};
use mantissa_ptx::pass::switch::SwitchPass;
use mantissa_ptx::pass::{Pass, Report};
use mantissa_ptx::sass::{self, InstSass};
use mantissa_ptx::site::{self, Site};
use mantissa_ptx::{parse, InstId, Item, Module};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Passes under `src/pass/` that have no case directory, each with why (a pass that needs an
/// external tool at test time, say). Empty: `pin_contraction` reads a fixture SASS.
const EXEMPT: &[(&str, &str)] = &[];

const MARK: &str = "// <-";
const BLESS_COMMAND: &str = "MANTISSA_BLESS=1 cargo test -p mantissa-ptx --test it passes::";

/// The crate's directory in a checkout: `CARGO_MANIFEST_DIR` at run time (set by `cargo test`),
/// the working directory (where `scripts/gpu-tests.sh` runs a staged binary), else as it was at
/// build time; `None` where none holds the cases (this binary copied alone to another machine).
fn crate_dir() -> Option<PathBuf> {
    [
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ]
    .into_iter()
    .flatten()
    .find(|d| d.join("tests/passes").is_dir() && d.join("src/pass/mod.rs").is_file())
}

/// The crate's directory, or `None` after saying why the test is skipped.
fn checkout() -> Option<PathBuf> {
    let dir = crate_dir();
    if dir.is_none() {
        eprintln!("skipped: no checkout of crates/ptx with tests/passes/ here");
    }
    dir
}

fn cases_dir(crate_dir: &Path) -> PathBuf {
    crate_dir.join("tests/passes")
}

fn blessing() -> bool {
    std::env::var("MANTISSA_BLESS").as_deref() == Ok("1")
}

/// One case: its input and where its files are.
struct Case {
    /// The directory's name: the pass.
    pass: String,
    /// `<pass>/<case>`, for messages.
    label: String,
    /// The input's path without `.ptx`.
    stem: PathBuf,
    /// The input's text.
    text: String,
}

impl Case {
    fn companion(&self, suffix: &str) -> PathBuf {
        let mut p = self.stem.clone().into_os_string();
        p.push(suffix);
        PathBuf::from(p)
    }

    fn name(&self) -> String {
        self.stem
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path()
        })
        .collect();
    out.sort();
    out
}

/// The pass directories, sorted.
fn pass_dirs(crate_dir: &Path) -> Vec<PathBuf> {
    sorted_entries(&cases_dir(crate_dir))
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

/// The cases of one pass directory: `NAME.ptx` with no dot in NAME.
fn cases_in(dir: &Path) -> Vec<Case> {
    let pass = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    sorted_entries(dir)
        .into_iter()
        .filter_map(|p| {
            let file = p.file_name()?.to_str()?.to_string();
            let name = file.strip_suffix(".ptx")?;
            if name.contains('.') {
                return None;
            }
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            Some(Case {
                label: format!("{pass}/{name}"),
                pass: pass.clone(),
                stem: p.with_extension(""),
                text,
            })
        })
        .collect()
}

/// The words of a case's first line, `// options: ...`, and which were used.
struct Options {
    words: Vec<String>,
    used: Vec<bool>,
}

impl Options {
    fn of(text: &str) -> Result<Options, String> {
        let first = text.lines().next().unwrap_or("");
        let rest = first.trim().strip_prefix("// options:").ok_or_else(|| {
            format!("the first line must be `// options: ...` (see passes.rs), not {first:?}")
        })?;
        let words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        Ok(Options {
            used: vec![false; words.len()],
            words,
        })
    }

    /// Whether the flag `word` is given.
    fn flag(&mut self, word: &str) -> bool {
        let mut found = false;
        for (w, used) in self.words.iter().zip(&mut self.used) {
            if w == word {
                *used = true;
                found = true;
            }
        }
        found
    }

    /// Which one of `choices` is given (exactly one).
    fn one_of<'a>(&mut self, choices: &[&'a str]) -> Result<&'a str, String> {
        let given: Vec<&str> = choices.iter().copied().filter(|c| self.flag(c)).collect();
        match given[..] {
            [one] => Ok(one),
            _ => Err(format!("give exactly one of {}", choices.join(", "))),
        }
    }

    /// The values of every `key=value`, in order.
    fn values(&mut self, key: &str) -> Vec<String> {
        let prefix = format!("{key}=");
        let mut out = Vec::new();
        for (w, used) in self.words.iter().zip(&mut self.used) {
            if let Some(v) = w.strip_prefix(&prefix) {
                *used = true;
                out.push(v.to_string());
            }
        }
        out
    }

    /// At most one value of `key`.
    fn value(&mut self, key: &str) -> Result<Option<String>, String> {
        let mut v = self.values(key);
        match v.len() {
            0 | 1 => Ok(v.pop()),
            _ => Err(format!("{key}= given more than once")),
        }
    }

    /// Fails naming any word no pass option read.
    fn finish(&self) -> Result<(), String> {
        let unknown: Vec<&str> = self
            .words
            .iter()
            .zip(&self.used)
            .filter(|(_, u)| !**u)
            .map(|(w, _)| w.as_str())
            .collect();
        match unknown.is_empty() {
            true => Ok(()),
            false => Err(format!("unknown option words: {}", unknown.join(" "))),
        }
    }
}

/// The instructions on lines ending in the mark, in text order.
fn marked(text: &str, m: &Module) -> Result<Vec<InstId>, String> {
    let lines: BTreeSet<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(MARK))
        .map(|(k, _)| k as u32 + 1)
        .collect();
    let found: Vec<(u32, InstId)> = m
        .functions()
        .flat_map(|f| f.instructions())
        .filter(|i| lines.contains(&i.line.0))
        .map(|i| (i.line.0, i.id))
        .collect();
    let hit: BTreeSet<u32> = found.iter().map(|(l, _)| *l).collect();
    if let Some(l) = lines.difference(&hit).next() {
        return Err(format!("line {l} is marked but holds no instruction"));
    }
    Ok(found.into_iter().map(|(_, id)| id).collect())
}

fn marked_sites(text: &str, m: &Module) -> Result<Vec<Site>, String> {
    let index = site::sites(m);
    marked(text, m)?
        .into_iter()
        .map(|id| {
            index
                .site(id)
                .cloned()
                .ok_or_else(|| format!("no site for {id}"))
        })
        .collect()
}

fn need_marks<T>(v: Vec<T>) -> Result<Vec<T>, String> {
    match v.is_empty() {
        true => Err(format!("no instruction is marked `{MARK}`")),
        false => Ok(v),
    }
}

/// `pass: summary`, then one `  note: ...` per note.
fn report_lines(r: &Report) -> Vec<String> {
    std::iter::once(r.to_string())
        .chain(r.notes.iter().map(|n| format!("  note: {n}")))
        .collect()
}

/// What a case produced: the module and the report's lines.
struct Output {
    module: Module,
    report: Vec<String>,
}

fn run_pass(pass: &dyn Pass, m: &Module) -> Result<Output, String> {
    let out = pass.run(m).map_err(|e| e.to_string())?;
    Ok(Output {
        report: report_lines(&out.report),
        module: out.module,
    })
}

/// Runs `case` on its parsed input `m`.
fn run_case(case: &Case, m: &Module) -> Result<Output, String> {
    let mut o = Options::of(&case.text)?;
    let text = &case.text;
    let out = match case.pass.as_str() {
        "demote" => {
            let set = match o.one_of(&["all", "marked"])? {
                "all" => DemoteSet::all(),
                _ => DemoteSet::sites(need_marks(marked_sites(text, m)?)?),
            };
            run_pass(&Demote::new(set), m)
        }
        "promote" => {
            let set = match o.one_of(&["all", "marked"])? {
                "all" => PromoteSet::all(),
                _ => PromoteSet::sites(need_marks(marked_sites(text, m)?)?),
            };
            run_pass(&Promote::new(set), m)
        }
        "switch" => {
            let set = match o.one_of(&["all", "marked"])? {
                "all" => DemoteSet::all(),
                _ => DemoteSet::sites(need_marks(marked_sites(text, m)?)?),
            };
            run_pass(&SwitchPass { set }, m)
        }
        "store_f32" => {
            let mut requests = Vec::new();
            for param in o.values("param") {
                let kernel = m
                    .functions()
                    .find(|f| f.params.iter().any(|p| p.name == param))
                    .ok_or_else(|| format!("no function has a parameter {param}"))?;
                requests.push(StoreRequest {
                    function: kernel.name.clone(),
                    param,
                });
            }
            run_pass(&StoreF32 { requests }, m)
        }
        "cause" => run_cause(&mut o, text, m),
        "shadow" => {
            let only = match o.value("only")? {
                None => None,
                Some(v) => {
                    let (a, b) = v
                        .split_once("..")
                        .ok_or_else(|| format!("only={v}: write A..B"))?;
                    let n = |s: &str| s.parse::<u32>().map_err(|e| format!("only={v}: {e}"));
                    Some(n(a)?..n(b)?)
                }
            };
            let options = ShadowOptions {
                demotion: o.flag("demotion"),
                exceptions: o.flag("exceptions"),
                only,
            };
            run_pass(&Shadow::new(options), m)
        }
        "shadow_values" => run_pass(&ShadowValues, m),
        "inline" => run_pass(
            &Inline {
                functions: o.values("func"),
            },
            m,
        ),
        "runtime" => {
            let path = case.companion(".runtime.ptx");
            let ptx =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let pass = MergeRuntime {
                name: format!("{}.runtime.ptx", case.name()),
                ptx,
                inline: o.values("func"),
            };
            run_pass(&pass, m)
        }
        "count" => {
            let which = match o.one_of(&["every", "fp"])? {
                "every" => Which::Every,
                _ => Which::FloatingPoint,
            };
            let counter = match o.one_of(&["call", "atomic"])? {
                "call" => Counter::RuntimeCall,
                _ => Counter::InlineAtomic,
            };
            let c = count::count(m, CountOptions { which, counter }).map_err(|e| e.to_string())?;
            let r = &c.report;
            let mut report = vec![format!(
                "count: {} sites counted into {}[{}]",
                r.sites.len(),
                r.global,
                r.slots
            )];
            report.extend(r.sites.iter().map(|s| {
                format!(
                    "  site {}: {} {} {}{}",
                    s.index,
                    s.function,
                    s.inst,
                    s.opcode,
                    if s.guarded { " (guarded)" } else { "" }
                )
            }));
            Ok(Output {
                module: c.module,
                report,
            })
        }
        "pin_contraction" => {
            let eliminated = match o.value("eliminated")?.as_deref() {
                None | Some("left") => Eliminated::Left,
                Some("fused") => Eliminated::Fused,
                Some("rounded") => Eliminated::Rounded,
                Some(other) => return Err(format!("eliminated={other}: fused, rounded or left")),
            };
            let arch = target(m).ok_or("the input has no .target")?;
            let path = case.companion(".sass");
            let (_, lines) = sass::relined(m);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(_) if blessing() => make_sass(m, &arch, &path)?,
                Err(e) => {
                    return Err(format!(
                    "{}: {e}; bless with ptxas and nvdisasm found to write it ({BLESS_COMMAND})",
                    path.display()
                ))
                }
            };
            let inst = InstSass::from_lines(&sass::parse_nvdisasm(&text), &lines, &arch);
            run_pass(&PinContraction::with_eliminated(inst, eliminated), m)
        }
        other => Err(format!(
            "no pass is named {other} (a directory of tests/passes/ names a pass)"
        )),
    }?;
    o.finish()?;
    Ok(out)
}

/// The first word of the module's `.target` (`sm_90`).
fn target(m: &Module) -> Option<String> {
    m.items.iter().find_map(|i| match i {
        Item::Target(words) => words.first().cloned(),
        _ => None,
    })
}

/// Writes `path` with the SASS of `m` relined, through ptxas and nvdisasm, and returns it.
fn make_sass(m: &Module, arch: &str, path: &Path) -> Result<String, String> {
    let (Some(ptxas), Some(nvdisasm)) = (
        mantissa_gpu::cuda_tool("ptxas"),
        mantissa_gpu::cuda_tool("nvdisasm"),
    ) else {
        return Err(format!(
            "{} is missing and ptxas or nvdisasm is not found to make it",
            path.display()
        ));
    };
    let (relined, _) = sass::relined(m);
    let text = sass::disassembly(&ptxas, &nvdisasm, &relined.to_string(), arch)
        .map_err(|e| e.to_string())?;
    std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(text)
}

/// The cause cases: one cause pass on the marked instructions, or the candidate list and
/// `cause::switch` of the marked ones.
fn run_cause(o: &mut Options, text: &str, m: &Module) -> Result<Output, String> {
    let which = o.one_of(&["ftz", "approx", "contraction", "convert", "switch"])?;
    let ids = need_marks(marked(text, m)?)?;
    let set: BTreeSet<InstId> = ids.iter().copied().collect();
    match which {
        "ftz" => run_pass(&ftz::Ftz::new(set), m),
        "approx" => run_pass(&approx::Exact::new(set), m),
        "convert" => run_pass(&convert::AsOnX86::new(set), m),
        "contraction" => {
            let opcode = |id: InstId| {
                m.functions()
                    .flat_map(|f| f.instructions())
                    .find(|i| i.id == id)
                    .map(|i| i.opcode.clone())
                    .unwrap_or_default()
            };
            let (fmas, muls): (BTreeSet<InstId>, BTreeSet<InstId>) =
                set.iter().partition(|&&id| opcode(id) != "mul");
            run_pass(&contraction::Uncontract::new(fmas, muls), m)
        }
        _ => {
            let list = cause::candidates(m, None);
            let chosen: Vec<usize> = (0..list.len())
                .filter(|&k| set.contains(&list[k].inst) && list[k].switchable())
                .collect();
            let mut report: Vec<String> = list
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let state = match (&c.not_switchable, chosen.contains(&k)) {
                        (Some(why), _) => format!(" (listed only: {why})"),
                        (None, true) => " (chosen)".to_string(),
                        (None, false) => String::new(),
                    };
                    format!(
                        "candidate {k}: {} {} {} {}{state}",
                        c.site, c.inst, c.cause, c.op
                    )
                })
                .collect();
            let run = cause::switch(m, &list, &chosen).map_err(|e| e.to_string())?;
            report.extend(run.reports.iter().flat_map(report_lines));
            Ok(Output {
                module: run.module,
                report,
            })
        }
    }
}

/// A diff of the lines between the first and the last that differ, with context: enough to see
/// what changed without two walls of text.
fn diff(expected: &str, actual: &str) -> String {
    const CONTEXT: usize = 3;
    const MAX: usize = 40;
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    if e == a {
        return "  (the texts differ only in their final newline)\n".into();
    }
    let prefix = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let suffix = e[prefix..]
        .iter()
        .rev()
        .zip(a[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (e_mid, a_mid) = (&e[prefix..e.len() - suffix], &a[prefix..a.len() - suffix]);
    let mut out = format!(
        "@@ -{},{} +{},{} @@ (- expected, + actual)\n",
        prefix + 1,
        e_mid.len(),
        prefix + 1,
        a_mid.len()
    );
    for l in &e[prefix.saturating_sub(CONTEXT)..prefix] {
        out += &format!(" {l}\n");
    }
    for (sign, mid) in [('-', e_mid), ('+', a_mid)] {
        for l in mid.iter().take(MAX) {
            out += &format!("{sign}{l}\n");
        }
        if mid.len() > MAX {
            out += &format!("{sign}... {} more lines\n", mid.len() - MAX);
        }
    }
    for l in e[e.len() - suffix..].iter().take(CONTEXT) {
        out += &format!(" {l}\n");
    }
    out
}

/// Compares `actual` with the file at `path`, or writes it when blessing. `None` when they
/// agree (or it was written), else the failure.
fn check(case: &Case, path: &Path, actual: &str) -> Option<String> {
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    let expected = std::fs::read_to_string(path).ok();
    if blessing() {
        if expected.as_deref() != Some(actual) {
            if let Err(e) = std::fs::write(path, actual) {
                return Some(format!("{}: cannot write {file}: {e}", case.label));
            }
            eprintln!("blessed {} (read it before committing)", path.display());
        }
        return None;
    }
    match expected {
        None => Some(format!(
            "{}: {file} is missing; write it with `{BLESS_COMMAND}` and read it",
            case.label
        )),
        Some(e) if e == actual => None,
        Some(e) => Some(format!(
            "{}: {file} differs (if the change is intended: `{BLESS_COMMAND}`)\n{}",
            case.label,
            diff(&e, actual)
        )),
    }
}

/// Parses, runs and checks one case; the failures.
fn check_case(case: &Case) -> Vec<String> {
    let parsed = parse(&case.text);
    if let Some(d) = parsed.diagnostics.first() {
        return vec![format!(
            "{}: the input does not parse cleanly: {d}",
            case.label
        )];
    }
    let out = match run_case(case, &parsed.module) {
        Ok(out) => out,
        Err(e) => return vec![format!("{}: {e}", case.label)],
    };
    let printed = out.module.to_string();
    let mut failures = Vec::new();
    if let Some(d) = parse(&printed).diagnostics.first() {
        failures.push(format!(
            "{}: the output does not parse cleanly: {d}",
            case.label
        ));
    }
    let report = out.report.join("\n") + "\n";
    failures.extend(check(case, &case.companion(".expected.ptx"), &printed));
    failures.extend(check(case, &case.companion(".expected.txt"), &report));
    failures
}

#[test]
fn every_case_gives_its_expected_module_and_report() {
    let Some(root) = checkout() else { return };
    let mut failures = Vec::new();
    let mut cases = 0;
    for dir in pass_dirs(&root) {
        for case in cases_in(&dir) {
            cases += 1;
            failures.extend(check_case(&case));
        }
    }
    assert!(cases > 0, "no case under {}", cases_dir(&root).display());
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The `pub mod NAME;` lines of a Rust file.
fn pub_mods(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| {
            let name = l.trim().strip_prefix("pub mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

#[test]
fn every_pass_has_a_case_directory() {
    let Some(root) = checkout() else { return };
    let passes = pub_mods(&root.join("src/pass/mod.rs"));
    assert!(passes.len() > 5, "pub mods of pass/mod.rs: {passes:?}");
    let mut missing = Vec::new();
    for p in &passes {
        let exempt = EXEMPT.iter().any(|(name, _)| name == p);
        let dir = cases_dir(&root).join(p);
        let has_case = dir.is_dir() && !cases_in(&dir).is_empty();
        if !has_case && !exempt {
            missing.push(p.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "passes without a case under tests/passes/ (add tests/passes/PASS/CASE.ptx, see \
         passes.rs, or list the pass in EXEMPT with the reason): {missing:?}"
    );
    let unknown: Vec<String> = pass_dirs(&root)
        .iter()
        .filter_map(|d| Some(d.file_name()?.to_string_lossy().into_owned()))
        .filter(|d| !passes.contains(d))
        .collect();
    assert!(
        unknown.is_empty(),
        "directories of tests/passes/ that name no pass: {unknown:?}"
    );
}

#[test]
fn every_cause_pass_has_a_case() {
    let Some(root) = checkout() else { return };
    let passes = pub_mods(&root.join("src/pass/cause.rs"));
    assert!(!passes.is_empty());
    let used: Vec<String> = cases_in(&cases_dir(&root).join("cause"))
        .iter()
        .filter_map(|c| Options::of(&c.text).ok())
        .flat_map(|o| o.words)
        .collect();
    let missing: Vec<&String> = passes.iter().filter(|p| !used.contains(p)).collect();
    assert!(
        missing.is_empty(),
        "cause passes no case of tests/passes/cause/ runs (`// options: NAME`): {missing:?}"
    );
}

#[test]
fn the_diff_shows_the_lines_that_differ_with_context() {
    let e = "a\nb\nc\nd\ne\nf\ng\n";
    let a = "a\nb\nc\nD\ne\nf\ng\n";
    assert_eq!(
        diff(e, a),
        "@@ -4,1 +4,1 @@ (- expected, + actual)\n a\n b\n c\n-d\n+D\n e\n f\n g\n"
    );
    assert_eq!(
        diff("x\ny\n", "x\n"),
        "@@ -2,1 +2,0 @@ (- expected, + actual)\n x\n-y\n"
    );
    assert!(diff("x", "x\n").contains("final newline"));
}
