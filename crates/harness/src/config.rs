//! Precision configurations: which double-precision work of the program runs in single precision.
//!
//! A configuration has two halves, because a program's f64 work comes in two kinds:
//! - **math calls** (`exp`, `log`, `pow`, `erfc`, ...): inlined into PTX as long instruction
//!   sequences whose correctness rests on their f64 constants and bit manipulations, so each call
//!   is one unit, kept in f64 or replaced as a whole by the f32 function. The replacement happens
//!   at source level: the build pre-includes `mantissa_units.cuh` and lists the call lines to
//!   replace ([`mantissa_gpu::frontend`]); a call is named by its function and source line.
//! - **instructions**: every other f64 instruction, demoted by the PTX rewrite
//!   ([`mantissa_ptx::demote`]), named by a [`Site`](mantissa_ptx::site::Site) (function, file, line, ordinal among the
//!   line's instructions, inlined call sites) so that a configuration survives a rebuild of the
//!   same source. Files written before sites name instructions by a selector (`kernel`, `file`
//!   index, `line`, ordinal among the line's *eligible* instructions); they still load and mean
//!   what they meant.
//!
//! The buffers and symbols keep the types the spec declares: they are the program's interface,
//! and loads and stores stay f64, with conversions where values enter or leave the demoted set.
//! A third, optional half, **buffers**, changes that for the f64 buffers it names: they are kept
//! in f32 on the device (storage precision, [`mantissa_ptx::pass::store_f32`]): every kernel
//! that receives one loads and stores f32 there, and the harness narrows the buffer's contents
//! after every restore and widens them before outputs are compared, so comparisons with the f64
//! program still hold.
//!
//! A configuration file is JSON (`mantissa run SPEC --demote FILE`); `mantissa run SPEC
//! --write-config FILE` writes the file that names every call and instruction of the program,
//! ready to be cut down:
//!
//! ```json
//! { "name": "fast-exp",
//!   "math": [ { "function": "exp", "line": 42 } ],
//!   "instructions": [ { "function": "_Z4stepPdi", "file": "step.cu", "line": 57, "ordinal": 3 } ] }
//! ```
//!
//! `"math": "all"` and `"instructions": "all"` select everything of that kind; `"buffers":
//! ["u", "v"]` keeps those spec buffers in f32.

use mantissa_ptx::demote::{DemoteSet, Request};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A precision configuration: what is done to the program before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Configuration {
    /// The program as written: the baseline, built and loaded as the front end gives it.
    AsWritten,
    /// Some of the program's f64 work demoted to f32.
    Demote(Demotion),
}

impl Configuration {
    /// The name in tables and records (a record's `precision`).
    pub fn name(&self) -> String {
        match self {
            Configuration::AsWritten => "as-written".into(),
            Configuration::Demote(d) => d.name.clone(),
        }
    }

    /// `none` (the empty demotion, through the rewrite path), `all` ("ideal": every f64
    /// instruction and math call in f32), or a configuration file.
    pub fn parse(arg: &str) -> Result<Configuration, String> {
        match arg {
            "none" => Ok(Configuration::Demote(Demotion::none())),
            "all" => Ok(Configuration::Demote(Demotion::all())),
            path => Demotion::load(Path::new(path)).map(Configuration::Demote),
        }
    }
}

/// Everything of one kind, or a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Selection<T> {
    /// The word `"all"`.
    All(AllWord),
    /// The listed items.
    Only(Vec<T>),
}

/// The word `all`, and nothing else, in a configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllWord {
    /// Every item of the kind.
    All,
}

impl<T> Selection<T> {
    fn all() -> Self {
        Selection::All(AllWord::All)
    }

    fn none() -> Self {
        Selection::Only(Vec::new())
    }

    /// Whether this is `"all"`.
    pub fn is_all(&self) -> bool {
        matches!(self, Selection::All(_))
    }
}

/// A math-function call, by function and source line (every call of that function on that line).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MathCall {
    /// The double function as written (`exp`, `erfc`).
    pub function: String,
    /// The source line of the call.
    pub line: u32,
}

/// Which math calls and instructions run in f32.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Demotion {
    /// The name in tables and records (a file's stem when the file has none).
    #[serde(default)]
    pub name: String,
    /// Math calls replaced by their f32 functions.
    #[serde(default = "Selection::none")]
    pub math: Selection<MathCall>,
    /// Other f64 instructions demoted by the PTX rewrite, by site (or selector, in older files).
    #[serde(default = "Selection::none")]
    pub instructions: Selection<Request>,
    /// Spec buffers (f64) kept in f32 on the device: their loads and stores convert.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers: Vec<String>,
}

impl Demotion {
    /// Nothing demoted, but built and loaded through the rewrite path (marked build, PTX parsed,
    /// rewritten with the empty set, printed, JIT-compiled): its results must be bit-identical
    /// to the program as written.
    pub fn none() -> Demotion {
        Demotion {
            name: "none".into(),
            math: Selection::none(),
            instructions: Selection::none(),
            buffers: Vec::new(),
        }
    }

    /// Everything demoted ("ideal"): every math call replaced by its f32 function and every
    /// other f64 instruction in f32; buffers and symbols keep their declared types.
    pub fn all() -> Demotion {
        Demotion {
            name: "all".into(),
            math: Selection::all(),
            instructions: Selection::all(),
            buffers: Vec::new(),
        }
    }

    /// Reads a configuration file (JSON, see the module docs).
    pub fn load(path: &Path) -> Result<Demotion, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "--demote {}: {e}; accepted: none, all, or a configuration file (JSON)",
                path.display()
            )
        })?;
        let mut d: Demotion = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}:{}:{}: {}; a configuration is {{\"math\": \"all\" or [{{\"function\", \"line\"}}], \"instructions\": \"all\" or [{{\"function\", \"file\", \"line\", \"ordinal\"}}], \"buffers\": [buffer names]}}",
                path.display(),
                e.line(),
                e.column(),
                e.to_string().split(" at line ").next().unwrap_or("invalid JSON")
            )
        })?;
        if d.name.is_empty() {
            d.name = path
                .file_stem()
                .map_or("config".into(), |s| s.to_string_lossy().into_owned());
        }
        Ok(d)
    }

    /// The math-call lines to replace, given the calls the marked build has.
    pub fn math_lines(&self, available: &[MathCall]) -> Vec<u32> {
        let mut lines: Vec<u32> = match &self.math {
            Selection::All(_) => available.iter().map(|c| c.line).collect(),
            Selection::Only(calls) => calls.iter().map(|c| c.line).collect(),
        };
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    /// The PTX rewrite's instruction set.
    pub fn demote_set(&self) -> DemoteSet {
        match &self.instructions {
            Selection::All(_) => DemoteSet::all(),
            Selection::Only(s) => DemoteSet::requests(s.iter().cloned()),
        }
    }

    /// Whether nothing is demoted (and no buffer is kept in f32).
    pub fn is_empty(&self) -> bool {
        matches!(&self.math, Selection::Only(v) if v.is_empty())
            && matches!(&self.instructions, Selection::Only(v) if v.is_empty())
            && self.buffers.is_empty()
    }
}

/// `d` as a session that rewrites only the PTX it runs can take it (an application's, the PTX
/// interpreter's): its instructions, with an empty list of math calls (`"all"` math calls are
/// their f64 instructions, demoted as instructions). Buffers kept in f32 are refused (`{name}:
/// buffers kept in f32 ({list}) {buffers_why}`), and so is a list of math calls, which only a
/// spec's marked build names (`{name}: {math_why}`).
pub(crate) fn instructions_only(
    d: &Demotion,
    buffers_why: &str,
    math_why: &str,
) -> Result<Demotion, crate::TrialError> {
    if !d.buffers.is_empty() {
        return Err(crate::TrialError::Refused(format!(
            "{}: buffers kept in f32 ({}) {buffers_why}",
            d.name,
            d.buffers.join(", ")
        )));
    }
    if matches!(&d.math, Selection::Only(calls) if !calls.is_empty()) {
        return Err(crate::TrialError::Refused(format!(
            "{}: {math_why}",
            d.name
        )));
    }
    Ok(Demotion {
        math: Selection::Only(Vec::new()),
        ..d.clone()
    })
}

/// The configuration naming every math call and every eligible instruction of `ptx` (a marked
/// build), for `--write-config`: the user deletes what must stay f64.
pub fn full_configuration(ptx: &str) -> Demotion {
    let module = mantissa_ptx::parse(ptx).module;
    Demotion {
        name: "everything".into(),
        math: Selection::Only(math_calls(&module)),
        instructions: Selection::Only(
            mantissa_ptx::demote::candidates(&module)
                .into_iter()
                .filter(|c| c.selector.is_some())
                .map(|c| Request::Site(c.site))
                .collect(),
        ),
        buffers: Vec::new(),
    }
}

/// The marked math calls of a module, one per (function, line).
pub fn math_calls(module: &mantissa_ptx::Module) -> Vec<MathCall> {
    let mut calls: Vec<MathCall> = mantissa_ptx::units::units(module)
        .into_iter()
        .flat_map(|f| f.units)
        .filter(|u| u.kind == mantissa_ptx::units::UnitKind::Marked)
        .map(|u| MathCall {
            function: u.function,
            line: u.line,
        })
        .collect();
    calls.sort();
    calls.dedup();
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Demotion, String> {
        // One directory per call: tests run in parallel.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mantissa-config-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.json");
        std::fs::write(&path, text).unwrap();
        Demotion::load(&path)
    }

    #[test]
    fn words_and_files() {
        assert_eq!(Configuration::parse("none").unwrap().name(), "none");
        let Configuration::Demote(all) = Configuration::parse("all").unwrap() else {
            panic!()
        };
        assert!(all.math.is_all() && all.instructions.is_all());
        assert!(Demotion::none().is_empty());
        let d = parse(r#"{"math": "all", "instructions": [{"kernel": "k", "file": 1, "line": 3, "ordinal": 0}]}"#).unwrap();
        assert_eq!(d.name, "c");
        assert!(d.math.is_all());
        assert_eq!(d.demote_set().selectors.len(), 1);
        let d = parse(r#"{"name": "x", "math": [{"function": "exp", "line": 9}, {"function": "log", "line": 4}]}"#).unwrap();
        assert_eq!(d.name, "x");
        assert_eq!(d.math_lines(&[]), vec![4, 9]);
        assert!(!d.demote_set().all && d.demote_set().selectors.is_empty());
    }

    #[test]
    fn bad_files_say_where_and_what_is_accepted() {
        let e = parse("{\"math\": \"some\"}").unwrap_err();
        assert!(
            e.contains("c.json:1:") && e.contains("\"math\": \"all\""),
            "{e}"
        );
        let e = parse("{\"maths\": []}").unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
        let e = Configuration::parse("/nonexistent/c.json").unwrap_err();
        assert!(e.contains("accepted: none, all"), "{e}");
    }

    /// A file written by `--write-config` before sites existed (selectors: ordinals among the
    /// line's eligible instructions) loads, and demotes exactly the instructions that version
    /// demoted; a file written now names sites and demotes the same set.
    #[test]
    fn files_written_before_sites_still_demote_the_same_instructions() {
        const MARKED: &str = include_str!("../../ptx/tests/fixtures/units/units.nvrtc.marked.ptx");
        let old = parse(include_str!(
            "../../ptx/tests/fixtures/configs/units.selectors.json"
        ))
        .unwrap();
        let want: Vec<u32> = serde_json::from_str(include_str!(
            "../../ptx/tests/fixtures/configs/units.selectors.ids.json"
        ))
        .unwrap();
        let m = mantissa_ptx::parse(MARKED).module;
        let demoted = |set: &DemoteSet| -> Vec<u32> {
            let d = mantissa_ptx::demote::demote(&m, set).unwrap();
            let before: std::collections::HashMap<_, _> = m
                .functions()
                .flat_map(|f| f.instructions())
                .map(|i| (i.id, i.to_string()))
                .collect();
            let mut ids: Vec<u32> = d
                .module
                .functions()
                .flat_map(|f| f.instructions())
                .filter(|i| before.get(&i.id).is_some_and(|t| *t != i.to_string()))
                .map(|i| i.id.0)
                .collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(demoted(&old.demote_set()), want);
        // The same choice written today: sites.
        let full = full_configuration(MARKED);
        let Selection::Only(all) = &full.instructions else {
            panic!("a list")
        };
        assert!(all.iter().all(|r| matches!(r, Request::Site(_))));
        let sites = mantissa_ptx::demote::selector_sites(&m, &old.demote_set().selectors);
        let now = Demotion {
            instructions: Selection::Only(sites.into_iter().flatten().map(Request::Site).collect()),
            ..old.clone()
        };
        let text = serde_json::to_string(&now).unwrap();
        assert!(text.contains("\"function\":\"units\""), "{text}");
        assert_eq!(demoted(&parse(&text).unwrap().demote_set()), want);
    }
}
