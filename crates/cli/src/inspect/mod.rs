//! `mantissa inspect`: wiring for [`mantissa_ptx::compare`] — build a CUDA file under each flag
//! set through a front end (NVRTC for device code, no GPU needed; nvcc for files with host code)
//! or read a PTX file, and print per source line the floating-point instructions each flag set
//! produced, with what changes results highlighted. Which front end was used, and why, is the
//! first line of the output (the `front_end` field in JSON).
//!
//! Per kernel it adds what the PTX alone does not say: accidental double precision
//! ([`mantissa_ptx::promotion`], with the literal or call responsible read from the source),
//! and, where ptxas and nvdisasm are installed, the SASS of each line
//! ([`mantissa_ptx::sass`]), which confirms contraction. Lines are ranked by what changes
//! results or costs time ([`Rank`]); lines that differ only by `.ftz` or `.rn` fold into one
//! summary line per kernel unless `--all`. Printing is in `text.rs` and `json.rs`.

mod json;
mod source;
mod text;

use clap::Args;
use mantissa_gpu::{Arch, BuildRequest, Builder, Define, FlagSet, FrontEnd, Gpu, Source};
use mantissa_ptx::compare::{attach_sass, compare, Highlight, KernelReport, LineReport};
use mantissa_ptx::compare::{fold_flag_set_effects, FlagSetEffect};
use mantissa_ptx::promotion::source::{culprits_on_lines, fix, mark_explicit_casts, Culprit};
use mantissa_ptx::promotion::{promotions, Promotion};
use mantissa_ptx::sass::{disassemble, Sass};
use mantissa_ptx::{census::SourceLine, parse, ptxas, Module};
use source::SourceLines;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The options of `mantissa inspect` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct InspectArgs {
    /// A CUDA C++ file (built under each flag set: with NVRTC, or with nvcc when it has host
    /// code) or a PTX file (read as is).
    file: PathBuf,
    /// Add DIR to the include path (repeatable), for NVRTC and nvcc alike.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Define a macro, NAME or NAME=VALUE (repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME[=VALUE]", value_parser = parse_define)]
    define: Vec<Define>,
    /// How the file becomes PTX: auto (PTX files as is; nvcc when the file has host code or
    /// host headers; NVRTC otherwise), nvrtc, nvcc or ptx.
    #[arg(long = "front-end", default_value = "auto", value_parser = parse_front_end)]
    front_end: FrontEndArg,
    /// Only this kernel (default: every kernel in the file). C++ names match their mangled
    /// form too.
    #[arg(long)]
    kernel: Option<String>,
    /// Flag sets, comma-separated; each a preset (default, strict, fast, nofma, ftz,
    /// approx-div, approx-sqrt) or switches and presets joined by '+' (nofma+ftz,
    /// strict+ftz=true, fmad=false+use_fast_math). `strict` is the reference for contraction
    /// and approximate functions.
    #[arg(long, default_value = "default,strict,fast", value_parser = parse_flag_list)]
    flags: FlagList,
    /// Target architecture of the compile (NVRTC or nvcc) and of ptxas.
    #[arg(long, default_value = "sm_90", value_parser = parse_arch)]
    arch: Arch,
    /// Show every line with floating-point instructions in source order, not only the ranked
    /// findings (lines differing only by .ftz or .rn, intentional double, no-line-info code).
    #[arg(long)]
    all: bool,
    /// Print JSON (per kernel: lines with ops and highlights per flag set, census, resources).
    #[arg(long)]
    json: bool,
    /// Compile host code that calls APIs CUDA 13 removed (cudaThreadSynchronize,
    /// cudaDeviceProp::clockRate) as written, without the -D stand-ins inspect applies itself.
    #[arg(long)]
    no_workarounds: bool,
}

#[derive(Clone)]
pub(crate) struct FlagList(pub(crate) Vec<FlagSet>);

/// `--front-end`: `None` is auto.
#[derive(Clone)]
pub(crate) struct FrontEndArg(pub(crate) Option<FrontEnd>);

pub(crate) fn parse_front_end(s: &str) -> Result<FrontEndArg, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(FrontEndArg(None));
    }
    s.parse()
        .map(|f| FrontEndArg(Some(f)))
        .map_err(|e: mantissa_gpu::UnknownFrontEnd| e.to_string())
}

pub(crate) fn parse_define(s: &str) -> Result<Define, String> {
    s.parse()
        .map_err(|e: mantissa_gpu::BuildError| e.to_string())
}

pub(crate) fn parse_flag_list(s: &str) -> Result<FlagList, String> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let f: FlagSet = part
            .parse()
            .map_err(|e: mantissa_gpu::UnknownFlagSet| e.to_string())?;
        if !v.contains(&f) {
            v.push(f);
        }
    }
    if v.is_empty() {
        return Err(format!(
            "no flag set in {s:?}; accepted: {}",
            FlagSet::accepted_names()
        ));
    }
    Ok(FlagList(v))
}

fn parse_arch(s: &str) -> Result<Arch, String> {
    s.parse()
        .map_err(|e: mantissa_gpu::version::BadArch| e.to_string())
}

/// A usage error found after argument parsing (missing file, unknown kernel): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InspectUsage(pub String);

/// One build to compare: its name (a flag set, or `ptx` for a PTX file), its PTX and model.
pub(crate) struct Build {
    pub(crate) name: String,
    pub(crate) flags: Option<FlagSet>,
    pub(crate) ptx: String,
    pub(crate) module: Module,
    pub(crate) diagnostics: Vec<mantissa_ptx::Diagnostic>,
}

/// Builds or reads the file, compares the builds per source line and prints the result as
/// text or JSON; an unreadable file or unknown kernel is an [`InspectUsage`] error (exit 2).
pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let text = mantissa_gpu::read_source(&args.file)
        .map_err(|e| InspectUsage(format!("cannot read {}: {e}", args.file.display())))?;
    let file_name = args.file.display().to_string();
    let mut request = BuildRequest::new(&args.file).with_text(text.clone());
    request.include_dirs = args.include.clone();
    request.defines = args.define.clone();
    request.arch = Some(args.arch);
    request.front_end = args.front_end.0;
    let builder = Builder::new();
    let (front_end, _) = builder.choose(&request, &text)?;
    let workaround = if front_end == FrontEnd::Ptx || args.no_workarounds {
        None
    } else {
        workarounds(&args.file, &text, &mut request)
    };
    let mut builds = Vec::new();
    let mut source = None;
    let mut facts = Vec::new();
    let choice;
    if front_end == FrontEnd::Ptx {
        let built = builder.build(&request)?;
        choice = built.choice.to_string();
        facts.push(("ptx".to_string(), built.facts));
        builds.push(read_build("ptx", None, text.clone()));
    } else {
        // strict is the reference for contraction; compile it even when not asked to show it.
        let mut sets = args.flags.0.clone();
        let shown = sets.len();
        if !sets.contains(&FlagSet::STRICT) {
            sets.push(FlagSet::STRICT);
        }
        let mut chosen = None;
        for (k, flags) in sets.into_iter().enumerate() {
            request.flags = flags;
            let built = match builder.build(&request) {
                Ok(b) => b,
                Err(e) => {
                    if let Some(log) = e.log() {
                        eprint!("{}", log.trim_end_matches('\0'));
                        eprintln!();
                    }
                    return Err(e.into());
                }
            };
            chosen.get_or_insert_with(|| built.choice.to_string());
            let mut b = read_build(&flags.name(), Some(flags), built.ptx.clone());
            if k >= shown {
                b.name = format!("({})", flags.name());
            }
            facts.push((b.name.clone(), built.facts));
            builds.push(b);
        }
        choice = chosen.unwrap_or_default();
        // The GPU rebuilds NVRTC sources for itself; other front ends' PTX is loaded as is.
        if front_end == FrontEnd::Nvrtc {
            source = Some(request.nvrtc_source(&text));
        }
    }
    // PTX the parser did not understand is kept and analysed around; say where it is.
    for b in &builds {
        for d in &b.diagnostics {
            match b.flags {
                Some(f) => eprintln!("warning: PTX of flag set {f}: {d}"),
                None => eprintln!("warning: {file_name}: {d}"),
            }
        }
    }
    // Kernels: from the first build (every flag set compiles the same kernels).
    let found: Vec<String> = builds[0].module.kernels().map(|k| k.name.clone()).collect();
    if found.is_empty() {
        // A result about the file, not a bad command line: exit 1.
        anyhow::bail!(
            "no kernels in {file_name}: {}",
            if front_end == FrontEnd::Ptx {
                "the PTX has no .entry".to_string()
            } else {
                "nothing marked __global__ was compiled (is each kernel declared __global__? a template kernel exists only once instantiated, by a launch or `template __global__ void k<float>(...)`)".to_string()
            }
        );
    }
    let kernels: Vec<String> = match &args.kernel {
        None => found.clone(),
        // The same names `run` accepts: `axpy<float>`, `ns::stencil`, the mangled name.
        // A base name that several instances share (`axpy`) shows each of them.
        Some(want) => {
            match mantissa_ptx::symbols::resolve_kernel_name(want, &found, &BTreeMap::new()) {
                Ok(k) => vec![found[k].clone()],
                Err(_) => {
                    let all: Vec<String> = found
                        .iter()
                        .filter(|k| demangled(k) == want.trim())
                        .cloned()
                        .collect();
                    if all.is_empty() {
                        let names: Vec<String> = found
                            .iter()
                            .map(|k| mantissa_ptx::symbols::kernel_display_name(k))
                            .collect();
                        return Err(InspectUsage(format!(
                            "no kernel '{want}' in {file_name}; kernels found: {}",
                            names.join(", ")
                        ))
                        .into());
                    }
                    all
                }
            }
        }
    };
    let reference = builds
        .iter()
        .find(|b| b.flags == Some(FlagSet::STRICT))
        .map(|b| b.name.clone());
    let shown: Vec<&Build> = builds.iter().filter(|b| !b.name.starts_with('(')).collect();
    let mut refs: Vec<(&str, &Module)> =
        shown.iter().map(|b| (b.name.as_str(), &b.module)).collect();
    if let Some(r) = builds.iter().find(|b| b.name.starts_with('(')) {
        refs.push((r.name.as_str(), &r.module));
    }
    let tools = Tools::find();
    let resources = resources(&builds, source.as_ref(), &kernels, args.arch, &tools);
    // Every build's SASS, the hidden reference's too: a line's FFMA count means something
    // only beside strict's (a double division or square root is itself a DFMA sequence).
    let all: Vec<&Build> = builds.iter().collect();
    let sass = sass_of(&all, &tools, args.arch);
    let source_lines = SourceLines::new(
        &args.file,
        &text,
        &builds[0].module,
        &request.defines,
        &args.include,
    );
    let line_text = |l: SourceLine| source_lines.text(l).map(str::to_string);
    let mut views = Vec::new();
    for k in &kernels {
        let Some(mut report) = compare(k, &refs, reference.as_deref()) else {
            continue;
        };
        for (b, s) in all.iter().zip(&sass) {
            if let Ok(s) = s {
                attach_sass(&mut report, &b.name, s, &b.module.files());
            }
        }
        let reference_sass = report
            .lines
            .iter()
            .filter_map(|l| {
                let r = l
                    .builds
                    .iter()
                    .find(|b| Some(&b.build) == reference.as_ref())?;
                Some((l.at, r.sass.clone()?))
            })
            .collect();
        // The hidden reference build is compared against but not shown.
        for l in &mut report.lines {
            l.builds.retain(|b| !b.build.starts_with('('));
        }
        let promotions = promotions(&shown[0].module, k)
            .into_iter()
            .map(|mut p| {
                mark_explicit_casts(&mut p, &line_text);
                let c = culprits_on_lines(&p, &line_text, source_lines.defines());
                let fix = fix(&c);
                Found {
                    promotion: p,
                    culprits: c,
                    fix,
                }
            })
            .collect();
        // What a flag set does on every line is one line per kernel, unless every line is asked
        // for (--all) or the JSON (which keeps each line's highlights).
        let effects = if args.all || args.json {
            Vec::new()
        } else {
            fold_flag_set_effects(&mut report)
        };
        views.push(KernelView {
            report,
            effects,
            promotions,
            promotion_build: shown[0].name.clone(),
            reference_sass,
        });
    }
    let sass_note = sass_note(&tools, &sass);
    if args.json {
        json::print(&json::Inputs {
            file_name: &file_name,
            choice: &choice,
            facts: &facts,
            arch: args.arch,
            shown: &shown,
            views: &views,
            resources: &resources,
            source: &source_lines,
            sass_note: sass_note.as_deref(),
        })
    } else {
        println!("front end: {choice}");
        if let Some(n) = &workaround {
            println!("note: {n}");
        }
        if let Some(n) = &sass_note {
            println!("SASS: {n}");
        }
        println!();
        for v in &views {
            text::print_kernel(v, &shown, &resources, &source_lines, args.all);
        }
        Ok(())
    }
}

/// One accidental (or intentional) double region with what the source says about it.
pub(crate) struct Found {
    pub(crate) promotion: Promotion,
    pub(crate) culprits: Vec<Culprit>,
    pub(crate) fix: String,
}

/// Everything shown about one kernel.
pub(crate) struct KernelView {
    pub(crate) report: KernelReport,
    /// What each flag set does on every line alike, folded out of the lines.
    pub(crate) effects: Vec<FlagSetEffect>,
    /// Promotions of the first shown build.
    pub(crate) promotions: Vec<Found>,
    /// The build the promotions were found in.
    pub(crate) promotion_build: String,
    /// The reference build's (strict's) SASS per line, shown or not.
    pub(crate) reference_sass: BTreeMap<SourceLine, BTreeMap<String, u32>>,
}

impl KernelView {
    /// The accidental promotions reported at `at`.
    pub(crate) fn accidents_at(&self, at: SourceLine) -> impl Iterator<Item = &Found> {
        self.promotions
            .iter()
            .filter(move |f| f.promotion.accidental() && f.promotion.at == at)
    }

    /// Where a line ranks among the kernel's findings; `None` for a line that is not one (no
    /// difference beyond `.ftz`/`.rn`, nothing flagged but flush-to-zero).
    pub(crate) fn rank(&self, l: &LineReport) -> Option<Rank> {
        if l.at.line != 0 && self.accidents_at(l.at).next().is_some() {
            return Some(Rank::AccidentalDouble);
        }
        let any =
            |f: &dyn Fn(&Highlight) -> bool| l.builds.iter().any(|b| b.highlights.iter().any(f));
        if any(&|h| {
            matches!(
                h,
                Highlight::Contraction { .. } | Highlight::Contractible { .. }
            )
        }) {
            Some(Rank::Contraction)
        } else if any(&|h| {
            matches!(
                h,
                Highlight::ApproxDiv { .. }
                    | Highlight::ApproxSqrt { .. }
                    | Highlight::ApproxFunction { .. }
            )
        }) {
            Some(Rank::Approximate)
        } else if any(&|h| {
            matches!(
                h,
                Highlight::FloatToUnsigned {
                    may_be_negative: true,
                    ..
                }
            )
        }) {
            Some(Rank::FloatToUnsigned)
        } else if l.significant() && !self.effects.iter().any(|e| e.lines.contains(&l.at)) {
            // A difference the folded effects explain (div.approx against div.rn) is the flag
            // set's, said once per kernel.
            Some(Rank::Other)
        } else {
            None
        }
    }
}

/// What a line's finding is, most consequential first: the order lines are printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Rank {
    /// Float code computing in double: slower (1/2 to 1/64 of the f32 rate) and different.
    AccidentalDouble,
    /// An FMA where strict has mul and add (or a pair ptxas will fuse): different results.
    Contraction,
    /// Approximate division, square root or special function: different results.
    Approximate,
    /// A cast to unsigned of a value that may be negative: undefined behaviour.
    FloatToUnsigned,
    /// Builds differ otherwise (beyond `.ftz` and `.rn`), or an unsafe-looking cast.
    Other,
}

/// ptxas and nvdisasm, where installed.
pub(crate) struct Tools {
    ptxas: Option<PathBuf>,
    nvdisasm: Option<PathBuf>,
}

impl Tools {
    fn find() -> Tools {
        Tools {
            ptxas: ptxas::find().or_else(|| mantissa_gpu::cuda_tool("ptxas")),
            nvdisasm: mantissa_gpu::cuda_tool("nvdisasm"),
        }
    }
}

/// Each shown build's SASS per line, or why there is none.
fn sass_of(shown: &[&Build], tools: &Tools, arch: Arch) -> Vec<Result<Sass, String>> {
    shown
        .iter()
        .map(|b| match (&tools.ptxas, &tools.nvdisasm) {
            (Some(p), Some(d)) => disassemble(p, d, &b.ptx, &arch.sm()).map_err(|e| e.to_string()),
            (None, _) => Err("no ptxas".into()),
            (_, None) => Err("no nvdisasm".into()),
        })
        .collect()
}

/// One line about the SASS check when it could not be made (`None` when it was).
fn sass_note(tools: &Tools, sass: &[Result<Sass, String>]) -> Option<String> {
    if tools.ptxas.is_none() || tools.nvdisasm.is_none() {
        let missing = match (&tools.ptxas, &tools.nvdisasm) {
            (None, None) => "ptxas and nvdisasm",
            (None, _) => "ptxas",
            _ => "nvdisasm",
        };
        return Some(format!(
            "not checked: no {missing} (pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-nvdisasm=={}, or a CUDA toolkit); contractible pairs are judged on the PTX alone",
            NVDISASM_VERSION
        ));
    }
    sass.iter()
        .find_map(|s| s.as_ref().err())
        .map(|e| format!("not checked: {e}"))
}

/// Adds to `request` the `-D` stand-ins for the host APIs CUDA 13 removed that `text` (and the
/// files it includes) uses, unless the user defined the name; the note that says so.
fn workarounds(file: &std::path::Path, text: &str, request: &mut BuildRequest) -> Option<String> {
    let mut all = text.to_string();
    for inc in mantissa_gpu::includes::resolve(
        &file.display().to_string(),
        text,
        &[],
        &request.include_dirs,
    ) {
        if let mantissa_gpu::includes::IncludeOrigin::File(p) = &inc.origin {
            if let Ok(t) = mantissa_gpu::read_source(p) {
                all.push('\n');
                all.push_str(&t);
            }
        }
    }
    let added: Vec<Define> = mantissa_gpu::build_log::removed_api_workarounds(&all)
        .into_iter()
        .filter(|d| !request.defines.iter().any(|u| u.name == d.name))
        .collect();
    if added.is_empty() {
        return None;
    }
    let names: Vec<&str> = added.iter().map(|d| d.name.as_str()).collect();
    let options: Vec<String> = added.iter().map(Define::option).collect();
    let note = format!(
        "CUDA 13 removed {} from the runtime; compiled with {} (inspect never runs host code, so a stand-in's value does not matter; --no-workarounds compiles the file as written)",
        names.join(", "),
        options.join(" ")
    );
    request.defines.extend(added);
    Some(note)
}

/// The nvdisasm wheel CI installs (`.ci/run`).
const NVDISASM_VERSION: &str = "13.5.37";

fn read_build(name: &str, flags: Option<FlagSet>, ptx: String) -> Build {
    let parsed = parse(&ptx);
    Build {
        name: name.to_string(),
        flags,
        ptx,
        module: parsed.module,
        diagnostics: parsed.diagnostics,
    }
}

/// `ray_step` for `_Z8ray_stepPKfS0_Ptfffffi` ([`mantissa_ptx::symbols::demangled_base`]);
/// other names unchanged.
pub(crate) fn demangled(name: &str) -> String {
    mantissa_ptx::symbols::demangled_base(name).unwrap_or_else(|| name.to_string())
}

/// Register use of one kernel in one build.
#[derive(serde::Serialize)]
pub(crate) struct Usage {
    pub(crate) kernel: String,
    pub(crate) build: String,
    /// `driver` (loaded on the GPU) or `ptxas`.
    pub(crate) from: &'static str,
    pub(crate) registers: Option<u32>,
    pub(crate) spill_store_bytes: Option<u32>,
    pub(crate) spill_load_bytes: Option<u32>,
    pub(crate) local_bytes: Option<u32>,
    pub(crate) note: Option<String>,
}

/// Registers and spills: from the driver when a GPU is present (the source is compiled for
/// it), else from `ptxas -v`, else a note saying why there are none.
fn resources(
    builds: &[Build],
    source: Option<&Source>,
    kernels: &[String],
    arch: Arch,
    tools: &Tools,
) -> Vec<Usage> {
    let mut out = Vec::new();
    let gpu = match mantissa_gpu::device_count() {
        Ok(n) if n > 0 => Gpu::probe().ok(),
        _ => None,
    };
    for b in builds.iter().filter(|b| !b.name.starts_with('(')) {
        let driver = gpu.as_ref().and_then(|g| {
            let module = match (source, b.flags) {
                (Some(src), Some(flags)) => g.build(src, flags).ok()?,
                _ => g.load_ptx(&b.name, &b.ptx).ok()?,
            };
            Some((g.arch(), module))
        });
        let assembled = if driver.is_none() {
            Some(match &tools.ptxas {
                Some(p) => ptxas::assemble_with(p, &b.ptx, &arch.sm()),
                None => Err(ptxas::PtxasError::NotFound),
            })
        } else {
            None
        };
        for k in kernels {
            let mut u = Usage {
                kernel: k.clone(),
                build: b.name.clone(),
                from: "ptxas",
                registers: None,
                spill_store_bytes: None,
                spill_load_bytes: None,
                local_bytes: None,
                note: None,
            };
            if let Some((garch, module)) = &driver {
                u.from = "driver";
                match module.resources(k) {
                    Ok(r) => {
                        u.registers = Some(r.registers);
                        u.local_bytes = Some(r.local_bytes);
                        u.note = Some(format!("on the GPU ({})", garch.sm()));
                    }
                    Err(e) => u.note = Some(e.to_string()),
                }
            } else {
                match &assembled {
                    Some(Ok(rs)) => {
                        if let Some(r) = rs.iter().find(|r| &r.function == k) {
                            u.registers = r.registers;
                            u.spill_store_bytes = Some(r.spill_store_bytes);
                            u.spill_load_bytes = Some(r.spill_load_bytes);
                            u.local_bytes = Some(r.stack_frame_bytes);
                        }
                    }
                    Some(Err(e)) => u.note = Some(e.to_string()),
                    None => {}
                }
            }
            out.push(u);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_kernel_names() {
        assert_eq!(demangled("_Z8ray_stepPKfS0_Ptfffffi"), "ray_step");
        assert_eq!(demangled("ray_step"), "ray_step");
        assert_eq!(demangled("_Z99x"), "_Z99x");
    }

    #[test]
    fn flag_lists() {
        assert_eq!(
            parse_flag_list("default,strict,default").map(|l| l.0).ok(),
            Some(vec![FlagSet::DEFAULT, FlagSet::STRICT])
        );
        assert_eq!(
            parse_flag_list("strict, nofma+ftz ,ftz+nofma")
                .map(|l| l.0)
                .ok(),
            Some(vec![
                FlagSet::STRICT,
                FlagSet {
                    fmad: Some(false),
                    ftz: Some(true),
                    ..FlagSet::DEFAULT
                }
            ])
        );
        assert!(parse_flag_list(",").is_err());
        assert!(parse_flag_list("default,fastest")
            .err()
            .is_some_and(|e| e.contains("fastest")));
    }
}
