//! The math-library functions a program's kernels call, per source line, and for each one
//! `mantissa mathlib` knows an input where CUDA's result differs from the CPU's: what a diff
//! says of the differences its switchable causes leave unexplained (issue 22, item 3). No cause
//! pass can switch a math function (its code is the library's), so the report names the
//! function and gives an input that shows the two libraries disagree, re-checkable with
//! `mantissa mathlib --check`.
//!
//! **The listing** comes from a marked build ([`marked_request`]): the user's file with
//! `mantissa_units.cuh` pre-included (it marks every call of a double math function as a unit)
//! and, in front of the file's text, the same marking for the single-precision spellings
//! (`expf`, `sinf`, ...: [`float_prelude`]), which the units header leaves alone. The prelude
//! sits under its own file name and is followed by `#line 1 "FILE"`, so the user's lines keep
//! their numbers and their file. [`calls`] reads the units of the PTX
//! ([`mantissa_ptx::units`]), one entry per (function, file, line). Without the marking,
//! NVRTC gives the inlined code of `expf` no `inlined_at` of its own: it would be anonymous
//! instructions on the call's line.
//!
//! **The inputs** come from mathlib's own machinery: its search ([`mantissa_mathlib::search`])
//! over CUDA's function as built (mathlib's `default` build, or `fast` under a flag set with
//! `--use_fast_math`) and the CPU's (Rust `std`, the platform libm a CPU reference most likely
//! used), each against the correctly rounded reference; the inputs where either is worst are
//! then evaluated through the `--check` path ([`mantissa_mathlib::run::check`]), and the first
//! where the two results differ is reported with the command that re-checks it.

use mantissa_gpu::{BuildRequest, FlagSet, Gpu};
use mantissa_harness::trial::build::build_request;
use mantissa_harness::Spec;
use mantissa_mathlib::cpu::CpuLibrary;
use mantissa_mathlib::format::Format;
use mantissa_mathlib::functions::{Function, Variant};
use mantissa_mathlib::hexfloat::to_hex;
use mantissa_mathlib::measure::{Column, CpuSubject, GpuSubject};
use mantissa_mathlib::search::{search, SearchOptions};
use mantissa_mathlib::stats::same_value;
use mantissa_mathlib::{MathGpu, MathlibError};
use mantissa_ptx::op::ValueType;
use mantissa_ptx::units::UnitKind;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

/// The file name the float prelude's code carries in the line info: its own, so that the
/// units' bare `.loc`s in it are never confused with the user's lines.
pub const PRELUDE_FILE: &str = "mantissa_units_f32.cuh";

/// The double functions `mantissa_units.cuh` marks, read from the header itself so the two
/// lists cannot drift apart.
fn header_functions() -> Vec<&'static str> {
    mantissa_gpu::frontend::UNITS_HEADER
        .lines()
        .filter_map(|l| l.trim().strip_prefix("MANTISSA_UNIT(")?.strip_suffix(')'))
        .collect()
}

/// The single-precision spellings the prelude marks: the units header's functions with an `f`.
pub fn float_functions() -> Vec<String> {
    header_functions()
        .into_iter()
        .map(|f| format!("{f}f"))
        .collect()
}

/// The text put in front of the user's file: a force-inlined forwarder per single-precision
/// function (as the units header has per double one) and a macro routing each call through it
/// with its line, under [`PRELUDE_FILE`]; then `#line 1 "FILE"`.
pub fn float_prelude(file: &str) -> String {
    let mut s = format!("#line 1 \"{PRELUDE_FILE}\"\n");
    let names = float_functions();
    for f in &names {
        s.push_str(&format!(
            "template <int L, class... A> __host__ __device__ __forceinline__ auto \
             __mantissa_unit_{f}(A... a) -> decltype({f}(a...)) {{ return {f}(a...); }}\n"
        ));
    }
    for f in &names {
        s.push_str(&format!(
            "#define {f}(...) __mantissa_unit_{f}<__LINE__>(__VA_ARGS__)\n"
        ));
    }
    s.push_str("namespace std {\n");
    for f in &names {
        s.push_str(&format!("using ::__mantissa_unit_{f};\n"));
    }
    s.push_str("}\n");
    // The user's file as written, under its own name and line numbers.
    let quoted = file.replace('\\', "\\\\").replace('"', "\\\"");
    s.push_str(&format!("#line 1 \"{quoted}\"\n"));
    s
}

/// `request` as the listing's marked build: every double math call marked by the units header
/// (none replaced), every single-precision call by [`float_prelude`].
pub fn marked_request(mut request: BuildRequest) -> Result<BuildRequest, String> {
    let text = request.read_text().map_err(|e| e.to_string())?;
    request.text = Some(format!("{}{text}", float_prelude(&request.file_name())));
    request.units = Some(Vec::new());
    Ok(request)
}

/// One math-library call site.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct MathCall {
    /// The function as the source spells it (`expf`, `sin`, `pow`).
    pub function: String,
    /// The precision it computes in: `f32` (an `f` spelling, or a double spelling called on
    /// floats, e.g. `exp(x)` with a float `x`, whose code has no f64 instruction) or `f64`.
    pub format: Format,
    /// The source file of the call.
    pub file: String,
    /// Its line.
    pub line: u32,
}

/// The math calls of a marked module (see the module docs), in (file, line, function) order,
/// one per distinct call site line.
pub fn calls(module: &mantissa_ptx::Module) -> Vec<MathCall> {
    let floats: BTreeSet<String> = float_functions().into_iter().collect();
    let files: HashMap<u32, &str> = module.files().into_iter().collect();
    let types: HashMap<mantissa_ptx::InstId, Option<ValueType>> = module
        .functions()
        .flat_map(|f| f.instructions())
        .map(|i| (i.id, i.decode().ty))
        .collect();
    let mut out: BTreeSet<(String, u32, String, Format)> = BTreeSet::new();
    for unit in mantissa_ptx::units::units(module)
        .into_iter()
        .flat_map(|f| f.units)
        .filter(|u| u.kind == UnitKind::Marked)
    {
        let format = if floats.contains(&unit.function)
            || !unit
                .instructions
                .iter()
                .any(|i| types.get(i).copied().flatten() == Some(ValueType::F64))
        {
            Format::F32
        } else {
            Format::F64
        };
        let file = files
            .get(&unit.call_site.0)
            .copied()
            .unwrap_or_default()
            .to_string();
        out.insert((file, unit.line, unit.function, format));
    }
    out.into_iter()
        .map(|(file, line, function, format)| MathCall {
            function,
            format,
            file,
            line,
        })
        .collect()
}

/// An input where CUDA's and the CPU's results differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Differing {
    /// The arguments (one or two), exact in the format.
    pub args: Vec<f64>,
    /// CUDA's result, as mathlib's build of the function computes it.
    pub cuda: f64,
    /// The CPU's (Rust `std`).
    pub cpu: f64,
    /// CUDA's error in ulps of the exact value.
    pub cuda_ulps: f64,
    /// The CPU's error in ulps of the exact value.
    pub cpu_ulps: f64,
    /// How far apart the two results are, in ulps of the CPU's result.
    pub apart_ulps: f64,
    /// The command that re-checks it.
    pub check: String,
}

/// What was found for one function (in one precision) the program calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCheck {
    /// The function as the source spells it.
    pub function: String,
    /// The precision it computes in.
    pub format: Format,
    /// The source lines calling it (`file:line`).
    pub lines: Vec<String>,
    /// mathlib's name of the function, when it knows it.
    pub mathlib: Option<String>,
    /// The CUDA build evaluated: `default` or `fast` (mathlib's variants).
    pub cuda_build: Option<String>,
    /// An input where the results differ, when one was found.
    pub differing: Option<Differing>,
    /// Why there is none: no check available, or none found.
    pub why_not: Option<String>,
}

impl FunctionCheck {
    /// The line the report prints: `sinf: CUDA 0x1.8p-1 vs CPU 0x1.80002p-1 at x = 0x1.2p+3
    /// (1 ulp apart); check: mantissa mathlib --check sinf 0x1.2p+3`.
    pub fn describe(&self) -> String {
        let name = match self.format {
            Format::F32 if !self.function.ends_with('f') => {
                format!("{} (on floats)", self.function)
            }
            _ => self.function.clone(),
        };
        match (&self.differing, &self.why_not) {
            (Some(d), _) => {
                let args = match d.args.as_slice() {
                    [x] => format!("x = {}", to_hex(*x, self.format)),
                    [x, y] => format!(
                        "x = {}, y = {}",
                        to_hex(*x, self.format),
                        to_hex(*y, self.format)
                    ),
                    _ => String::new(),
                };
                format!(
                    "{name}: CUDA {} vs CPU {} at {args} ({} ulp{} apart; CUDA {} ulps from \
                     the exact value, CPU {}); check: {}",
                    to_hex(d.cuda, self.format),
                    to_hex(d.cpu, self.format),
                    short(d.apart_ulps),
                    if d.apart_ulps == 1.0 { "" } else { "s" },
                    short(d.cuda_ulps),
                    short(d.cpu_ulps),
                    d.check
                )
            }
            (None, Some(why)) => format!("{name}: {why}"),
            (None, None) => name,
        }
    }
}

/// An ulp count as people read it: `1`, `0.5`, `2.37`.
fn short(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else if x.abs() >= 1e4 {
        format!("{x:.3e}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The math functions of a diff: the calls, and per function what was found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MathFunctions {
    /// Every call, per source line.
    pub calls: Vec<MathCall>,
    /// One per (function, precision), in the calls' order; empty when nothing was checked.
    pub checks: Vec<FunctionCheck>,
    /// What the reader should know (a marked build that failed, flags mathlib has no build
    /// for).
    pub notes: Vec<String>,
}

/// mathlib's CUDA build closest to a diff's flag set: `fast` under `--use_fast_math`,
/// `default` otherwise; with a note when the flag set is neither exactly.
pub fn cuda_variant(flags: FlagSet) -> (Variant, Option<String>) {
    let variant = if flags.fast_math {
        Variant::Fast
    } else {
        Variant::Default
    };
    let exact = flags == FlagSet::DEFAULT || flags == FlagSet::FAST;
    let note = (!exact).then(|| {
        format!(
            "CUDA's math functions were evaluated as mathlib builds them ({}), not under {}: \
             the flags may change some results (ftz on subnormals, contraction inside the \
             function)",
            variant.name(),
            flags.name()
        )
    });
    (variant, note)
}

/// The `mantissa mathlib --check` command for `f` at `args` in `format` (the f32 spelling
/// selects binary32, the double spelling binary64; two arguments as `x,y`).
pub fn check_command(f: Function, format: Format, args: &[f64]) -> String {
    let input: Vec<String> = args.iter().map(|&a| to_hex(a, format)).collect();
    format!(
        "mantissa mathlib --check {} {}",
        f.cuda_name(format),
        input.join(",")
    )
}

/// `args` evaluated through `--check`'s path: the difference, when CUDA's `variant` and the
/// CPU's `std` differ there.
pub fn differing_at(
    gpu: &MathGpu,
    f: Function,
    format: Format,
    variant: Variant,
    args: &[f64],
) -> Result<Option<Differing>, MathlibError> {
    let c = mantissa_mathlib::run::check(f, format, args, Some(gpu))?;
    let column = |want: Column| c.columns.iter().find(|k| k.column == want);
    let (Some(cuda), Some(cpu)) = (
        column(Column::Gpu(variant)),
        column(Column::Cpu(CpuLibrary::Std)),
    ) else {
        return Ok(None);
    };
    if same_value(cuda.result, cpu.result) {
        return Ok(None);
    }
    Ok(Some(Differing {
        args: c.args.clone(),
        cuda: cuda.result,
        cpu: cpu.result,
        cuda_ulps: cuda.ulps,
        cpu_ulps: cpu.ulps,
        apart_ulps: (cuda.result - cpu.result).abs() / format.ulp_of_f64(cpu.result),
        check: check_command(f, format, &c.args),
    }))
}

/// Searches, for `budget`, for an input where CUDA's `f` (as `variant` builds it) and the CPU's
/// differ: mathlib's search over both against the correctly rounded reference, then each
/// one's worst input checked (see the module docs).
pub fn find_differing(
    gpu: &MathGpu,
    f: Function,
    format: Format,
    variant: Variant,
    budget: Duration,
) -> Result<Result<Differing, String>, MathlibError> {
    let cuda = GpuSubject { gpu, variant };
    let options = SearchOptions {
        budget,
        ..SearchOptions::default()
    };
    let summary = search(
        f,
        format,
        &[&cuda, &CpuSubject(CpuLibrary::Std)],
        &options,
        &mut |_| {},
    )?;
    for r in &summary.results {
        if let Some(w) = &r.stats.worst {
            if let Some(d) = differing_at(gpu, f, format, variant, &w.args)? {
                return Ok(Ok(d));
            }
        }
    }
    Ok(Err(format!(
        "CUDA and the CPU agree at the worst inputs of a {:.1} s search ({} inputs, {} where \
         they differ)",
        budget.as_secs_f64(),
        summary.results[0].stats.evaluated,
        summary.results[1].differs_from_first
    )))
}

/// Per (function, precision) of `calls`, in order of first call: the functions to check and
/// the lines calling each.
pub(crate) fn by_function(calls: &[MathCall]) -> Vec<((String, Format), Vec<String>)> {
    let mut order: Vec<(String, Format)> = Vec::new();
    let mut lines: BTreeMap<(String, Format), Vec<String>> = BTreeMap::new();
    for c in calls {
        let key = (c.function.clone(), c.format);
        if !lines.contains_key(&key) {
            order.push(key.clone());
        }
        let file = c.file.rsplit(['/', '\\']).next().unwrap_or("");
        lines
            .entry(key)
            .or_default()
            .push(format!("{file}:{}", c.line));
    }
    order
        .into_iter()
        .map(|k| {
            let l = lines.remove(&k).unwrap_or_default();
            (k, l)
        })
        .collect()
}

/// For each function `calls` name: an input where CUDA (under `flags`) and the CPU differ,
/// or why there is none. `progress` hears each function's name before its search.
pub fn check_functions(
    gpu: &MathGpu,
    calls: &[MathCall],
    flags: FlagSet,
    budget: Duration,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<FunctionCheck>, Option<String>), MathlibError> {
    let (variant, note) = cuda_variant(flags);
    let mut out = Vec::new();
    for ((function, format), lines) in by_function(calls) {
        let mut check = FunctionCheck {
            function: function.clone(),
            format,
            lines,
            mathlib: None,
            cuda_build: None,
            differing: None,
            why_not: None,
        };
        let known = Function::parse(&function).filter(|&f| f != Function::Div);
        match known {
            None => {
                check.why_not = Some("mathlib does not know it: no check available".into());
            }
            Some(f) if !CpuLibrary::Std.has(f, format) => {
                check.mathlib = Some(f.name().into());
                check.why_not = Some(format!(
                    "the CPU's std has no {}: no check available",
                    f.name()
                ));
            }
            Some(f) => {
                progress(&function);
                check.mathlib = Some(f.name().into());
                check.cuda_build = Some(variant.name().into());
                match find_differing(gpu, f, format, variant, budget)? {
                    Ok(d) => check.differing = Some(d),
                    Err(why) => check.why_not = Some(why),
                }
            }
        }
        out.push(check);
    }
    Ok((out, note))
}

/// How long mathlib's search looks for a differing input, per function.
pub const SEARCH_BUDGET: Duration = Duration::from_secs(2);

/// The marked build of `spec`'s program under `flags` for `gpu`'s architecture (unless the spec
/// names one), and its math calls; with a note when the marking changed the code (`plain_ptx`
/// is the program as written).
pub fn list_calls(
    gpu: &Gpu,
    spec: &Spec,
    flags: FlagSet,
    plain: &mantissa_ptx::Module,
) -> Result<(Vec<MathCall>, Option<String>), String> {
    let mut request = marked_request(build_request(spec, flags, None)?)?;
    request.arch.get_or_insert(gpu.arch());
    let built = gpu
        .builder()
        .build_for(&request, false)
        .map_err(|e| e.to_string())?;
    let marked = mantissa_ptx::parse(&built.ptx).module;
    let same = mantissa_ptx::demote::same_code(plain, &marked);
    let note = (!same).then(|| {
        "the build with math calls marked has other instructions than the program as \
         written: the functions and lines listed are the marked build's"
            .to_string()
    });
    Ok((calls(&marked), note))
}

/// The math functions of a diff of `spec` under `flags`: always the calls; when `unexplained`,
/// for each function an input where CUDA and the CPU differ (mathlib evaluates on the device
/// `gpu` is). A build or device that fails becomes a note: the listing never fails a diff.
pub fn math_functions(
    gpu: &Gpu,
    spec: &Spec,
    flags: FlagSet,
    plain: &mantissa_ptx::Module,
    unexplained: bool,
    progress: &mut dyn FnMut(&str),
) -> MathFunctions {
    let mut out = MathFunctions::default();
    if gpu_front_end_is_ptx(spec) {
        out.notes.push(
            "ready PTX: math calls cannot be marked, so the math functions are not named".into(),
        );
        return out;
    }
    match list_calls(gpu, spec, flags, plain) {
        Ok((calls, note)) => {
            out.calls = calls;
            out.notes.extend(note);
        }
        Err(e) => {
            out.notes.push(format!(
                "the build with math calls marked failed, so the math functions are not named: {e}"
            ));
            return out;
        }
    }
    if !unexplained || out.calls.is_empty() {
        return out;
    }
    let math_gpu = match Gpu::probe_device(gpu.info().ordinal) {
        Ok(g) => MathGpu::new(g),
        Err(e) => {
            out.notes.push(format!(
                "mathlib could not open the device ({e}): no input checked"
            ));
            return out;
        }
    };
    match check_functions(&math_gpu, &out.calls, flags, SEARCH_BUDGET, progress) {
        Ok((checks, note)) => {
            out.checks = checks;
            out.notes.extend(note);
        }
        Err(e) => out
            .notes
            .push(format!("mathlib's search failed ({e}): no input checked")),
    }
    out
}

/// Whether the spec's program is ready PTX (nothing to mark).
fn gpu_front_end_is_ptx(spec: &Spec) -> bool {
    spec.source.front_end == mantissa_harness::spec::FrontEnd::Ptx
        || spec
            .source
            .file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ptx"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A program calling sinf on lines 5 and 9 (a difference found) and j0f on line 7 (no
    /// check), as a diff with differences left unexplained reports them.
    pub(crate) fn sample() -> MathFunctions {
        let call = |function: &str, line| MathCall {
            function: function.into(),
            format: Format::F32,
            file: "/src/k.cu".into(),
            line,
        };
        let sinf = FunctionCheck {
            function: "sinf".into(),
            format: Format::F32,
            lines: vec!["k.cu:5".into(), "k.cu:9".into()],
            mathlib: Some("sin".into()),
            cuda_build: Some("default".into()),
            differing: Some(Differing {
                args: vec![9.0],
                cuda: 0.75,
                cpu: f64::from(0.75f32 + f32::EPSILON / 2.0),
                cuda_ulps: 1.0,
                cpu_ulps: 0.25,
                apart_ulps: 1.0,
                check: check_command(Function::Sin, Format::F32, &[9.0]),
            }),
            why_not: None,
        };
        let j0f = FunctionCheck {
            function: "j0f".into(),
            lines: vec!["k.cu:7".into()],
            mathlib: None,
            cuda_build: None,
            differing: None,
            why_not: Some("mathlib does not know it: no check available".into()),
            ..sinf.clone()
        };
        MathFunctions {
            calls: vec![call("sinf", 5), call("j0f", 7), call("sinf", 9)],
            checks: vec![sinf, j0f],
            notes: vec![],
        }
    }

    #[test]
    fn the_prelude_marks_the_f_spelling_of_every_function_the_units_header_marks() {
        let names = float_functions();
        assert!(names.len() >= 40, "{names:?}");
        for f in ["expf", "sinf", "powf", "erfcxf", "ldexpf"] {
            assert!(names.iter().any(|n| n == f), "{f} missing");
        }
        let p = float_prelude("dir/k.cu");
        assert!(p.starts_with(&format!("#line 1 \"{PRELUDE_FILE}\"\n")));
        assert!(p.ends_with("#line 1 \"dir/k.cu\"\n"));
        assert!(p.contains("#define expf(...) __mantissa_unit_expf<__LINE__>(__VA_ARGS__)\n"));
        // The forwarder's mangled name reads back as the function the units module names.
        assert_eq!(
            mantissa_ptx::units::parse_unit_name(
                "_Z20__mantissa_unit_expfILi4EJfEEDTcl4expfspfp_EEDpT_"
            ),
            Some(("expf".to_string(), 4))
        );
    }

    #[test]
    fn the_check_command_is_what_mathlib_check_accepts() {
        assert_eq!(
            check_command(Function::Sin, Format::F32, &[9.0]),
            "mantissa mathlib --check sinf 0x1.2p+3"
        );
        assert_eq!(
            check_command(Function::Pow, Format::F64, &[2.0, -0.5]),
            "mantissa mathlib --check pow 0x1p+1,-0x1p-1"
        );
        // What --check parses back (its parser is mathlib's).
        for s in ["0x1.2p+3", "-0x1p-1"] {
            assert!(mantissa_mathlib::hexfloat::parse(s).is_some(), "{s}");
        }
    }

    #[test]
    fn the_cuda_build_follows_fast_math_and_says_when_the_flags_are_neither() {
        assert_eq!(cuda_variant(FlagSet::DEFAULT), (Variant::Default, None));
        assert_eq!(cuda_variant(FlagSet::FAST), (Variant::Fast, None));
        let (v, note) = cuda_variant(FlagSet::STRICT);
        assert_eq!(v, Variant::Default);
        assert!(note.is_some_and(|n| n.contains("strict")));
    }

    #[test]
    fn a_difference_reads_as_one_line_with_its_check() {
        let m = sample();
        assert_eq!(
            m.checks[0].describe(),
            "sinf: CUDA 0x1.8p-1 vs CPU 0x1.800002p-1 at x = 0x1.2p+3 (1 ulp apart; CUDA 1 \
             ulps from the exact value, CPU 0.25); check: mantissa mathlib --check sinf 0x1.2p+3"
        );
        assert_eq!(
            m.checks[1].describe(),
            "j0f: mathlib does not know it: no check available"
        );
    }

    #[test]
    fn functions_are_checked_once_with_every_line_calling_them() {
        let call = |function: &str, line| MathCall {
            function: function.into(),
            format: Format::F32,
            file: "/src/k.cu".into(),
            line,
        };
        let grouped = by_function(&[call("sinf", 5), call("expf", 4), call("sinf", 9)]);
        assert_eq!(
            grouped,
            vec![
                (
                    ("sinf".to_string(), Format::F32),
                    vec!["k.cu:5".to_string(), "k.cu:9".to_string()]
                ),
                (
                    ("expf".to_string(), Format::F32),
                    vec!["k.cu:4".to_string()]
                ),
            ]
        );
    }
}
