//! `mantissa inspect`: wiring for [`mantissa_ptx::compare`] — build a CUDA file under each flag
//! set through a front end (NVRTC for device code, no GPU needed; nvcc for files with host code)
//! or read a PTX file, and print per source line the floating-point instructions each flag set
//! produced, with what changes results highlighted. Which front end was used, and why, is the
//! first line of the output (the `front_end` field in JSON).

use clap::Args;
use mantissa_gpu::{Arch, BuildRequest, Builder, Define, FlagSet, FrontEnd, Gpu, Source};
use mantissa_ptx::compare::{compare, KernelReport};
use mantissa_ptx::{census, parse, ptxas, Module};
use std::path::{Path, PathBuf};

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
    /// Show every line with floating-point instructions, not only those that differ or are
    /// highlighted.
    #[arg(long)]
    all: bool,
    /// Print JSON (per kernel: lines with ops and highlights per flag set, census, resources).
    #[arg(long)]
    json: bool,
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
struct Build {
    name: String,
    flags: Option<FlagSet>,
    ptx: String,
    module: Module,
    diagnostics: Vec<mantissa_ptx::Diagnostic>,
}

/// Builds or reads the file, compares the builds per source line and prints the result as
/// text or JSON; an unreadable file or unknown kernel is an [`InspectUsage`] error (exit 2).
pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| InspectUsage(format!("cannot read {}: {e}", args.file.display())))?;
    let file_name = args.file.display().to_string();
    let mut request = BuildRequest::new(&args.file).with_text(text.clone());
    request.include_dirs = args.include.clone();
    request.defines = args.define.clone();
    request.arch = Some(args.arch);
    request.front_end = args.front_end.0;
    let builder = Builder::new();
    let (front_end, _) = builder.choose(&request, &text)?;
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
    if !args.json {
        println!("front end: {choice}\n");
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
    let kernels: Vec<String> = match &args.kernel {
        None => found.clone(),
        Some(want) => {
            let hit = found
                .iter()
                .find(|k| *k == want || demangled(k) == *want)
                .cloned();
            match hit {
                Some(k) => vec![k],
                None => {
                    return Err(InspectUsage(format!(
                        "no kernel '{want}' in {file_name}; kernels found: {}",
                        if found.is_empty() {
                            "none".to_string()
                        } else {
                            found.join(", ")
                        }
                    ))
                    .into())
                }
            }
        }
    };
    let reference = builds
        .iter()
        .find(|b| b.flags == Some(FlagSet::STRICT))
        .map(|b| b.name.clone());
    let shown: Vec<&Build> = builds.iter().filter(|b| !b.name.starts_with('(')).collect();
    let pairs: Vec<(&str, &Module)> = shown.iter().map(|b| (b.name.as_str(), &b.module)).collect();
    let mut refs = pairs.clone();
    if let Some(r) = builds.iter().find(|b| b.name.starts_with('(')) {
        refs.push((r.name.as_str(), &r.module));
    }
    let resources = resources(&builds, source.as_ref(), &kernels, args.arch);
    let source_lines = SourceLines::new(&args.file, &text, &builds[0].module);
    let mut json_kernels = Vec::new();
    for k in &kernels {
        let Some(report) = compare(k, &refs, reference.as_deref()) else {
            continue;
        };
        // The hidden reference build is compared against but not shown.
        let report = KernelReport {
            lines: report
                .lines
                .into_iter()
                .map(|mut l| {
                    l.builds.retain(|b| !b.build.starts_with('('));
                    l
                })
                .collect(),
            ..report
        };
        if args.json {
            let census: serde_json::Map<String, serde_json::Value> = shown
                .iter()
                .map(|b| {
                    let c: Vec<_> = mantissa_ptx::compare::call_tree(&b.module, k)
                        .into_iter()
                        .map(census::function_census)
                        .collect();
                    Ok((b.name.clone(), serde_json::to_value(c)?))
                })
                .collect::<Result<_, serde_json::Error>>()?;
            let lines: Vec<serde_json::Value> = report
                .lines
                .iter()
                .map(|l| {
                    let mut v = serde_json::to_value(l)?;
                    v["text"] = serde_json::json!(source_lines.get(l.at.file, l.at.line));
                    Ok(v)
                })
                .collect::<Result<_, serde_json::Error>>()?;
            json_kernels.push(serde_json::json!({
                "kernel": k,
                "callees": report.callees,
                "resources": resources.iter().filter(|r| &r.kernel == k).collect::<Vec<_>>(),
                "lines": lines,
                "census": census,
            }));
        } else {
            print_kernel(&report, &shown, &resources, &source_lines, args.all);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "file": file_name,
                "front_end": choice,
                "builds": facts
                    .iter()
                    .map(|(name, f)| Ok(serde_json::json!({"name": name, "facts": serde_json::to_value(f)?})))
                    .collect::<Result<Vec<_>, serde_json::Error>>()?,
                "arch": args.arch.sm(),
                "flag_sets": shown.iter().map(|b| b.name.clone()).collect::<Vec<_>>(),
                "kernels": json_kernels,
            }))?
        );
    }
    Ok(())
}

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
fn demangled(name: &str) -> String {
    mantissa_ptx::symbols::demangled_base(name).unwrap_or_else(|| name.to_string())
}

/// Register use of one kernel in one build.
#[derive(serde::Serialize)]
struct Usage {
    kernel: String,
    build: String,
    /// `driver` (loaded on the GPU) or `ptxas`.
    from: &'static str,
    registers: Option<u32>,
    spill_store_bytes: Option<u32>,
    spill_load_bytes: Option<u32>,
    local_bytes: Option<u32>,
    note: Option<String>,
}

/// Registers and spills: from the driver when a GPU is present (the source is compiled for
/// it), else from `ptxas -v`, else a note saying why there are none.
fn resources(
    builds: &[Build],
    source: Option<&Source>,
    kernels: &[String],
    arch: Arch,
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
            Some(ptxas::assemble(&b.ptx, &arch.sm()))
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

/// Source text by `.file` index and line, for showing each line beside its instructions.
struct SourceLines {
    files: Vec<(u32, Vec<String>)>,
}

impl SourceLines {
    fn new(input: &Path, input_text: &str, m: &Module) -> SourceLines {
        let input_name = input.file_name();
        let files = m
            .files()
            .into_iter()
            .filter_map(|(index, path)| {
                let p = Path::new(path);
                // NVRTC records the name it was given (made absolute): match the input by name
                // first, then try the path itself (headers, or a PTX file's sources).
                let text =
                    if p.file_name() == input_name && !input_text.starts_with("//\n// Generated") {
                        Some(input_text.to_string())
                    } else {
                        std::fs::read_to_string(p).ok()
                    }?;
                Some((index, text.lines().map(str::to_string).collect()))
            })
            .collect();
        SourceLines { files }
    }

    fn get(&self, file: u32, line: u32) -> Option<&str> {
        let (_, lines) = self.files.iter().find(|(i, _)| *i == file)?;
        lines.get((line as usize).checked_sub(1)?).map(|s| s.trim())
    }
}

fn print_kernel(
    r: &KernelReport,
    builds: &[&Build],
    resources: &[Usage],
    src: &SourceLines,
    all: bool,
) {
    match demangled(&r.kernel) {
        plain if plain != r.kernel => println!("kernel {} ({plain})", r.kernel),
        _ => println!("kernel {}", r.kernel),
    }
    if !r.callees.is_empty() {
        println!("  calls {}", r.callees.join(", "));
    }
    let width = builds
        .iter()
        .map(|b| b.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    for u in resources.iter().filter(|u| u.kernel == r.kernel) {
        let mut parts = Vec::new();
        if let Some(n) = u.registers {
            parts.push(format!("{n} registers"));
        }
        if let (Some(s), Some(l)) = (u.spill_store_bytes, u.spill_load_bytes) {
            parts.push(format!("spills {s} B stored / {l} B loaded"));
        }
        if let Some(b) = u.local_bytes {
            parts.push(format!("{b} B local"));
        }
        if let Some(n) = &u.note {
            parts.push(n.clone());
        }
        let from = if u.registers.is_some() {
            format!(" (from {})", u.from)
        } else {
            String::new()
        };
        println!("  {:width$}  {}{from}", u.build, parts.join(", "));
    }
    print_loops(r, builds, width);
    let mut shown = 0;
    for l in &r.lines {
        if !all && !l.notable() {
            continue;
        }
        shown += 1;
        let text = src.get(l.at.file, l.at.line).unwrap_or("");
        let inl = if l.inlined_at.is_empty() {
            String::new()
        } else {
            format!(
                " (inlined at line {})",
                l.inlined_at
                    .iter()
                    .map(|s| s.line.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        println!("\n  line {}{inl}: {text}", l.at.line);
        for b in &l.builds {
            let ops: Vec<String> = b
                .ops
                .iter()
                .map(|(o, n)| {
                    if *n > 1 {
                        format!("{o}×{n}")
                    } else {
                        o.clone()
                    }
                })
                .collect();
            let ops = if ops.is_empty() {
                "-".to_string()
            } else {
                ops.join(" ")
            };
            println!("    {:width$}  {ops}", b.build);
            for h in &b.highlights {
                println!("    {:width$}    ! {}", "", h.describe("strict"));
            }
        }
    }
    if shown == 0 {
        println!(
            "\n  no differences between flag sets and nothing flagged (--all lists every line)"
        );
    }
    println!();
}

/// Static arithmetic intensity of each loop, per build: flops per off-chip byte of one pass
/// through the loop's instructions.
fn print_loops(r: &KernelReport, builds: &[&Build], width: usize) {
    let mut rows = Vec::new();
    for b in builds {
        let mut loops = Vec::new();
        for f in mantissa_ptx::compare::call_tree(&b.module, &r.kernel) {
            for l in census::function_census(f).loops {
                let lines: Vec<u32> = l.lines.iter().map(|s| s.line).filter(|&n| n > 0).collect();
                let span = match (lines.iter().min(), lines.iter().max()) {
                    (Some(a), Some(z)) if a != z => format!("lines {a}-{z}"),
                    (Some(a), _) => format!("line {a}"),
                    _ => "no line info".to_string(),
                };
                let what = match l.intensity {
                    Some(i) => format!(
                        "{} flop / {} B = {i:.2} flop/B",
                        l.counts.flops(),
                        l.counts.offchip_bytes
                    ),
                    None => format!("{} flop, nothing off chip", l.counts.flops()),
                };
                let nest = if l.depth > 1 {
                    format!(" (depth {})", l.depth)
                } else {
                    String::new()
                };
                loops.push(format!("{span}{nest}: {what}"));
            }
        }
        if !loops.is_empty() {
            rows.push((b.name.clone(), loops));
        }
    }
    if rows.is_empty() {
        return;
    }
    println!("  loops (static arithmetic intensity of one iteration):");
    for (name, loops) in rows {
        println!("    {name:width$}  {}", loops.join("; "));
    }
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
