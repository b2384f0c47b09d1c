//! NVRTC, the run-time CUDA C++ compiler: compile a source under a [`FlagSet`] for a target and keep
//! both PTX and cubin.
//!
//! This calls NVRTC through cudarc's `result`/`sys` layers rather than its `safe` `compile_ptx`,
//! which returns PTX only (no cubin, which we prefer to load: see [`Target`]) and unwraps in places
//! a user's input reaches (a NUL in the source, a failed log fetch).
//!
//! One compilation for `sm_XY` yields both the cubin and the PTX it was assembled from (checked with
//! NVRTC 13.0.88), so nothing is compiled twice.

use crate::cache::{CacheHit, CacheKey, CompileCache};
use crate::error::{catch, CompileError, NvrtcUnavailable};
use crate::flags::FlagSet;
use crate::locate::NvrtcLibrary;
use crate::version::{Arch, CudaVersion};
use cudarc::nvrtc::result as nvrtc_result;
use cudarc::nvrtc::sys::{self as nvrtc_sys, nvrtcResult};
use serde::{Deserialize, Serialize};
use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;
use std::sync::Arc;

/// What NVRTC is asked to produce.
///
/// Cubin for the device's own architecture is what we load: the driver takes it whatever PTX ISA
/// version the NVRTC writes, whereas PTX newer than the driver is refused
/// (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). PTX-only targets exist for inspection without a GPU and for
/// PTX we rewrite and load ourselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "arch", rename_all = "lowercase")]
pub enum Target {
    /// `--gpu-architecture=sm_XY`: cubin and PTX.
    Cubin(Arch),
    /// `--gpu-architecture=compute_XY`: PTX only.
    Ptx(Arch),
}

impl Target {
    pub fn arch(self) -> Arch {
        match self {
            Target::Cubin(a) | Target::Ptx(a) => a,
        }
    }

    /// The NVRTC option naming this target.
    pub fn option(self) -> String {
        format!("--gpu-architecture={self}")
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Cubin(a) => f.write_str(&a.sm()),
            Target::Ptx(a) => f.write_str(&a.compute()),
        }
    }
}

/// A CUDA C++ translation unit: its name (used in NVRTC's messages and in the PTX's `.file`
/// line info), its text and any extra NVRTC options (`-DNAME=VALUE`, `--include-path=...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub text: String,
    pub options: Vec<String>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source {
            name: name.into(),
            text: text.into(),
            options: Vec::new(),
        }
    }

    /// Adds an extra option, e.g. `-DTILE=16`. Floating-point options are refused at compile time:
    /// they belong to the flag set.
    pub fn with_option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }
}

/// The result of one compilation. The PTX is always kept: later stages read and rewrite it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub source_name: String,
    pub flags: FlagSet,
    pub target: Target,
    /// Every option NVRTC received, in order.
    pub options: Vec<String>,
    pub nvrtc: CudaVersion,
    pub ptx: String,
    /// Present for [`Target::Cubin`].
    pub cubin: Option<Vec<u8>>,
    /// NVRTC's log (warnings); empty when there were none.
    pub log: String,
}

/// Option prefixes that would change floating-point behaviour behind the flag set's back, or
/// contradict the target and line info the compiler adds itself.
const RESERVED_OPTIONS: &[&str] = &[
    "--fmad",
    "-fmad",
    "--ftz",
    "-ftz",
    "--prec-div",
    "-prec-div",
    "--prec-sqrt",
    "-prec-sqrt",
    "--use_fast_math",
    "-use_fast_math",
    "--gpu-architecture",
    "-arch",
    "--generate-line-info",
    "-lineinfo",
];

/// The run-time compiler, with its cache. Cheap to share behind an `Arc`; compiles may run from
/// several threads at once (each uses its own NVRTC program).
#[derive(Debug)]
pub struct Compiler {
    version: CudaVersion,
    archs: Vec<u32>,
    library: NvrtcLibrary,
    cache: CompileCache,
}

impl Compiler {
    /// Finds NVRTC without panicking, with the cache in its default location.
    pub fn probe() -> Result<Compiler, NvrtcUnavailable> {
        Self::probe_with_cache(CompileCache::default_location())
    }

    /// Finds NVRTC, using `cache`.
    pub fn probe_with_cache(cache: CompileCache) -> Result<Compiler, NvrtcUnavailable> {
        // cudarc panics on first use if the library is missing, so find (and load) it first.
        let library = crate::locate::nvrtc_library()?;
        let version = catch(nvrtc_version)
            .map_err(|message| NvrtcUnavailable::Broken {
                what: "nvrtcVersion",
                message,
            })?
            .ok_or(NvrtcUnavailable::Broken {
                what: "nvrtcVersion",
                message: "it returned an error".into(),
            })?;
        // Older NVRTCs lack calls the CUDA 13.0 bindings may make.
        if version.major < 12 {
            return Err(NvrtcUnavailable::TooOld { found: version });
        }
        let archs = catch(supported_archs).map_err(|message| NvrtcUnavailable::Broken {
            what: "nvrtcGetSupportedArchs",
            message,
        })?;
        Ok(Compiler {
            version,
            archs,
            library,
            cache,
        })
    }

    /// Replaces the cache (tests use [`CompileCache::in_memory`] or a scratch directory).
    pub fn with_cache(mut self, cache: CompileCache) -> Self {
        self.cache = cache;
        self
    }

    pub fn version(&self) -> CudaVersion {
        self.version
    }

    /// The libnvrtc file in use and how it was found.
    pub fn library(&self) -> &NvrtcLibrary {
        &self.library
    }

    /// Architecture numbers NVRTC can target (90 for sm_90).
    pub fn supported_archs(&self) -> &[u32] {
        &self.archs
    }

    pub fn supports(&self, arch: Arch) -> bool {
        // An empty list means NVRTC would not say; let the compile decide.
        self.archs.is_empty() || self.archs.contains(&arch.number())
    }

    /// `sm_75, sm_80, ...` for messages.
    pub fn supported_list(&self) -> String {
        self.archs
            .iter()
            .map(|a| format!("sm_{a}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// The exact options NVRTC receives: the flag set's, the target, `-lineinfo` (so PTX keeps
    /// `.loc` source lines for later analyses), then the source's extras.
    pub fn options(flags: FlagSet, target: Target, extra: &[String]) -> Vec<String> {
        let mut opts: Vec<String> = flags.options().iter().map(|s| s.to_string()).collect();
        opts.push(target.option());
        opts.push("-lineinfo".to_string());
        opts.extend(extra.iter().cloned());
        opts
    }

    /// Compiles `source` (or returns the cached result).
    pub fn compile(
        &self,
        source: &Source,
        flags: FlagSet,
        target: Target,
    ) -> Result<Arc<Compiled>, CompileError> {
        self.compile_traced(source, flags, target).map(|(c, _)| c)
    }

    /// As [`Compiler::compile`], also saying whether the result came from a cache.
    pub fn compile_traced(
        &self,
        source: &Source,
        flags: FlagSet,
        target: Target,
    ) -> Result<(Arc<Compiled>, Option<CacheHit>), CompileError> {
        check_extra_options(source)?;
        if !self.supports(target.arch()) {
            return Err(CompileError::ArchUnsupported {
                target,
                nvrtc: self.version,
                supported: self.supported_list(),
            });
        }
        let options = Self::options(flags, target, &source.options);
        let key = CacheKey::new(
            &source.name,
            &source.text,
            flags,
            target,
            self.version,
            &options,
        );
        if let Some((compiled, hit)) = self.cache.get(&key, &source.text) {
            return Ok((compiled, Some(hit)));
        }
        let compiled = Arc::new(self.run_nvrtc(source, flags, target, options)?);
        self.cache.put(&key, &source.text, compiled.clone());
        Ok((compiled, None))
    }

    fn run_nvrtc(
        &self,
        source: &Source,
        flags: FlagSet,
        target: Target,
        options: Vec<String>,
    ) -> Result<Compiled, CompileError> {
        let nul = |what| CompileError::NulByte {
            source_name: source.name.clone(),
            what,
        };
        let text = CString::new(source.text.as_str()).map_err(|_| nul("the text"))?;
        let name = CString::new(source.name.as_str()).map_err(|_| nul("the name"))?;
        if options.iter().any(|o| o.contains('\0')) {
            return Err(nul("an option"));
        }
        let fail = |status: nvrtcResult, detail: String| CompileError::Nvrtc {
            source_name: source.name.clone(),
            flags,
            target,
            status,
            detail,
        };
        let outcome = catch(|| -> Result<Compiled, CompileError> {
            let prog = Program::create(&text, &name)
                .map_err(|s| fail(s, "cannot create the NVRTC program".into()))?;
            // SAFETY: `prog` is live until dropped; options are NUL-free (checked above).
            let compiled = unsafe { nvrtc_result::compile_program(prog.0, &options) };
            let log = prog.log();
            match compiled {
                Ok(()) => {}
                Err(e) if e.0 == nvrtcResult::NVRTC_ERROR_COMPILATION => {
                    return Err(CompileError::Source {
                        source_name: source.name.clone(),
                        flags,
                        target,
                        log,
                    });
                }
                Err(e) => return Err(fail(e.0, nvrtc_failure_detail(e.0, &log))),
            }
            let ptx = prog
                .ptx()
                .map_err(|s| fail(s, "cannot read the PTX".into()))?;
            let cubin = match target {
                Target::Cubin(_) => Some(
                    prog.cubin()
                        .map_err(|s| fail(s, "cannot read the cubin".into()))?,
                ),
                Target::Ptx(_) => None,
            };
            Ok(Compiled {
                source_name: source.name.clone(),
                flags,
                target,
                options: options.clone(),
                nvrtc: self.version,
                ptx,
                cubin,
                log,
            })
        });
        outcome.unwrap_or_else(|message| {
            Err(fail(
                nvrtcResult::NVRTC_ERROR_INTERNAL_ERROR,
                format!("the NVRTC bindings panicked: {message}"),
            ))
        })
    }
}

fn check_extra_options(source: &Source) -> Result<(), CompileError> {
    for opt in &source.options {
        let head = opt.split(['=', ' ']).next().unwrap_or("");
        if RESERVED_OPTIONS.contains(&head) {
            return Err(CompileError::ConflictingOption {
                source_name: source.name.clone(),
                option: opt.clone(),
            });
        }
    }
    Ok(())
}

/// Explains NVRTC failures other than source errors, using the log's first line where it helps.
fn nvrtc_failure_detail(status: nvrtcResult, log: &str) -> String {
    let first = log.lines().map(str::trim).find(|l| !l.is_empty());
    match status {
        nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE => format!(
            "NVRTC cannot load its builtins library (libnvrtc-builtins.so.13.0); put the directory holding it (beside libnvrtc) on LD_LIBRARY_PATH{}",
            first.map(|l| format!(" [{l}]")).unwrap_or_default()
        ),
        nvrtcResult::NVRTC_ERROR_INVALID_OPTION => format!(
            "NVRTC rejected an option: {}",
            first.unwrap_or("no detail in the log")
        ),
        nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY => "NVRTC ran out of host memory".to_string(),
        _ => first.unwrap_or("no detail in the log").to_string(),
    }
}

/// An NVRTC program, destroyed on drop (errors there are ignored: nothing useful can be done).
struct Program(nvrtc_sys::nvrtcProgram);

impl Program {
    fn create(text: &CStr, name: &CStr) -> Result<Program, nvrtcResult> {
        nvrtc_result::create_program(text, Some(name))
            .map(Program)
            .map_err(|e| e.0)
    }

    fn log(&self) -> String {
        // SAFETY: the program is live.
        match unsafe { nvrtc_result::get_program_log(self.0) } {
            Ok(raw) => c_chars_to_string(&raw),
            Err(e) => format!("(NVRTC log unavailable: {:?})", e.0),
        }
    }

    fn ptx(&self) -> Result<String, nvrtcResult> {
        // SAFETY: the program is live and compiled.
        let raw = unsafe { nvrtc_result::get_ptx(self.0) }.map_err(|e| e.0)?;
        Ok(c_chars_to_string(&raw))
    }

    fn cubin(&self) -> Result<Vec<u8>, nvrtcResult> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; the buffer has the size NVRTC reported.
        unsafe {
            nvrtc_sys::nvrtcGetCUBINSize(self.0, &mut size)
                .result()
                .map_err(|e| e.0)?;
            let mut buf = vec![0u8; size];
            if size > 0 {
                nvrtc_sys::nvrtcGetCUBIN(self.0, buf.as_mut_ptr() as *mut c_char)
                    .result()
                    .map_err(|e| e.0)?;
            }
            Ok(buf)
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed only here.
        let _ = unsafe { nvrtc_result::destroy_program(self.0) };
    }
}

/// NVRTC returns NUL-terminated text; stop at the first NUL.
fn c_chars_to_string(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn nvrtc_version() -> Option<CudaVersion> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: plain out-parameters.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .ok()?;
    Some(CudaVersion::new(major.max(0) as u32, minor.max(0) as u32))
}

fn supported_archs() -> Vec<u32> {
    let mut n: c_int = 0;
    // SAFETY: out-parameter, then a buffer of the reported length.
    unsafe {
        if nvrtc_sys::nvrtcGetNumSupportedArchs(&mut n)
            .result()
            .is_err()
            || n <= 0
        {
            return Vec::new();
        }
        let mut archs = vec![0 as c_int; n as usize];
        if nvrtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
            .result()
            .is_err()
        {
            return Vec::new();
        }
        archs.into_iter().map(|a| a.max(0) as u32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::require_nvrtc_or_skip;

    #[test]
    fn options_per_flag_set_and_target() {
        let t = Target::Cubin(Arch::new(9, 0));
        assert_eq!(
            Compiler::options(FlagSet::DEFAULT, t, &[]),
            ["--gpu-architecture=sm_90", "-lineinfo"]
        );
        assert_eq!(
            Compiler::options(FlagSet::STRICT, t, &["-DN=4".to_string()]),
            [
                "--fmad=false",
                "--prec-div=true",
                "--prec-sqrt=true",
                "--ftz=false",
                "--gpu-architecture=sm_90",
                "-lineinfo",
                "-DN=4"
            ]
        );
        assert_eq!(
            Compiler::options(FlagSet::FAST, Target::Ptx(Arch::new(8, 6)), &[]),
            [
                "--use_fast_math",
                "--gpu-architecture=compute_86",
                "-lineinfo"
            ]
        );
        for set in FlagSet::ALL {
            let opts = Compiler::options(set, t, &[]);
            assert!(opts.iter().any(|o| o == "-lineinfo"), "{set}");
            assert_eq!(
                opts.iter()
                    .filter(|o| o.starts_with("--gpu-architecture="))
                    .count(),
                1
            );
        }
    }

    #[test]
    fn target_names_and_serde() {
        assert_eq!(Target::Cubin(Arch::new(9, 0)).to_string(), "sm_90");
        assert_eq!(Target::Ptx(Arch::new(9, 0)).to_string(), "compute_90");
        let json = serde_json::to_string(&Target::Cubin(Arch::new(9, 0))).unwrap();
        assert_eq!(json, r#"{"kind":"cubin","arch":{"major":9,"minor":0}}"#);
        assert_eq!(
            serde_json::from_str::<Target>(&json).unwrap(),
            Target::Cubin(Arch::new(9, 0))
        );
    }

    #[test]
    fn floating_point_options_outside_flag_sets_are_refused() {
        for bad in [
            "--fmad=false",
            "-use_fast_math",
            "--gpu-architecture=sm_80",
            "-arch=sm_80",
            "--ftz=true",
        ] {
            let src = Source::new("k.cu", "").with_option(bad);
            let err = check_extra_options(&src).unwrap_err().to_string();
            assert!(
                err.contains(bad) && err.contains("choose a flag set"),
                "{err}"
            );
            assert!(!err.contains('\n'));
        }
        let ok = Source::new("k.cu", "")
            .with_option("-DN=4")
            .with_option("--std=c++17");
        assert!(check_extra_options(&ok).is_ok());
    }

    #[test]
    fn builtins_failure_says_what_to_do() {
        let d = nvrtc_failure_detail(
            nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE,
            "nvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n  Make sure that libnvrtc-builtins.so.13.0 is installed correctly.",
        );
        assert!(
            d.contains("LD_LIBRARY_PATH") && d.contains("failed to open"),
            "{d}"
        );
        assert!(!d.contains('\n'));
    }

    // ---- The tests below need libnvrtc; they skip (with a printed reason) where it is absent.

    /// Exercises contraction, division and square root, each on its own line.
    const ARITH: &str = r#"extern "C" __global__ void arith(float* out, const float* a, const float* b, const float* c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[3 * i + 0] = a[i] * b[i] + c[i];
    out[3 * i + 1] = a[i] / b[i];
    out[3 * i + 2] = sqrtf(c[i]);
}
"#;

    fn compile_ptx(c: &Compiler, flags: FlagSet) -> String {
        let src = Source::new("arith.cu", ARITH);
        c.compile(&src, flags, Target::Cubin(Arch::new(9, 0)))
            .unwrap_or_else(|e| panic!("{e}"))
            .ptx
            .clone()
    }

    fn has(ptx: &str, needle: &str) -> bool {
        ptx.lines().any(|l| l.trim_start().starts_with(needle))
    }

    #[test]
    fn nvrtc_flag_sets_change_the_ptx_as_documented() {
        let Some(c) = require_nvrtc_or_skip() else {
            return;
        };
        let default = compile_ptx(&c, FlagSet::DEFAULT);
        assert!(has(&default, "fma.rn.f32"), "{default}");
        assert!(has(&default, "div.rn.f32"));
        assert!(has(&default, "sqrt.rn.f32"));

        for set in [FlagSet::STRICT, FlagSet::NOFMA] {
            let ptx = compile_ptx(&c, set);
            assert!(!has(&ptx, "fma."), "{set}: {ptx}");
            assert!(has(&ptx, "mul.rn.f32") && has(&ptx, "add.rn.f32"), "{set}");
            assert!(has(&ptx, "div.rn.f32"), "{set}");
        }

        let fast = compile_ptx(&c, FlagSet::FAST);
        assert!(has(&fast, "div.approx") || has(&fast, "div.full"), "{fast}");
        assert!(has(&fast, "sqrt.approx"), "{fast}");
        assert!(fast.contains(".ftz.f32"), "{fast}");

        let ftz = compile_ptx(&c, FlagSet::FTZ);
        assert!(
            has(&ftz, "fma.rn.ftz.f32") && has(&ftz, "div.rn.ftz.f32"),
            "{ftz}"
        );

        let approx_div = compile_ptx(&c, FlagSet::APPROX_DIV);
        assert!(
            has(&approx_div, "div.full.f32") || has(&approx_div, "div.approx.f32"),
            "{approx_div}"
        );
        assert!(has(&approx_div, "sqrt.rn.f32"));

        let approx_sqrt = compile_ptx(&c, FlagSet::APPROX_SQRT);
        assert!(has(&approx_sqrt, "sqrt.approx.f32"), "{approx_sqrt}");
        assert!(has(&approx_sqrt, "div.rn.f32"));
    }

    #[test]
    fn nvrtc_cubin_and_ptx_from_one_compile() {
        let Some(c) = require_nvrtc_or_skip() else {
            return;
        };
        let src = Source::new("arith.cu", ARITH);
        let cubin = c
            .compile(&src, FlagSet::DEFAULT, Target::Cubin(Arch::new(9, 0)))
            .unwrap();
        let bin = cubin.cubin.as_ref().expect("cubin for an sm_ target");
        assert_eq!(&bin[..4], b"\x7fELF", "cubin is an ELF image");
        assert!(cubin.ptx.contains(".target sm_90"));
        assert!(cubin.ptx.contains(".loc"), "-lineinfo keeps source lines");
        assert!(
            cubin.ptx.contains("arith.cu"),
            "the source name is in the line info"
        );

        let ptx_only = c
            .compile(&src, FlagSet::DEFAULT, Target::Ptx(Arch::new(9, 0)))
            .unwrap();
        assert_eq!(ptx_only.cubin, None);
        assert!(ptx_only.ptx.contains(".entry arith("));
        assert!(crate::version::PtxIsa::of_ptx(&ptx_only.ptx).is_some());
    }

    #[test]
    fn nvrtc_compile_error_names_source_and_line() {
        let Some(c) = require_nvrtc_or_skip() else {
            return;
        };
        let src = Source::new(
            "broken.cu",
            "extern \"C\" __global__ void k(float* x) {\n  x[0] = y;\n}\n",
        );
        let err = c
            .compile(&src, FlagSet::STRICT, Target::Cubin(Arch::new(9, 0)))
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "cannot compile broken.cu (flag set strict, sm_90): broken.cu(2): error"
            ),
            "{msg}"
        );
        assert!(msg.contains("\"y\""), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert!(err.log().unwrap().contains("broken.cu(2)"));
    }

    #[test]
    fn nvrtc_unsupported_arch_is_refused_before_compiling() {
        let Some(c) = require_nvrtc_or_skip() else {
            return;
        };
        let err = c
            .compile(
                &Source::new("k.cu", ARITH),
                FlagSet::DEFAULT,
                Target::Cubin(Arch::new(9, 9)),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot compile for sm_99") && err.contains("sm_90"),
            "{err}"
        );
    }

    #[test]
    fn nvrtc_results_are_cached_in_memory_and_on_disk() {
        let Some(c) = require_nvrtc_or_skip() else {
            return;
        };
        let dir = crate::cache::tests::scratch_dir("nvrtc-cache");
        let version = c.version();
        let archs = c.supported_archs().to_vec();
        let mk = || Compiler {
            version,
            archs: archs.clone(),
            library: c.library().clone(),
            cache: CompileCache::new(Some(dir.clone())),
        };
        let src = Source::new("arith.cu", ARITH);
        let t = Target::Cubin(Arch::new(9, 0));
        let first = mk();
        let (a, hit) = first.compile_traced(&src, FlagSet::STRICT, t).unwrap();
        assert_eq!(hit, None);
        let (b, hit) = first.compile_traced(&src, FlagSet::STRICT, t).unwrap();
        assert_eq!(hit, Some(CacheHit::Memory));
        assert!(Arc::ptr_eq(&a, &b));
        let (c2, hit) = mk().compile_traced(&src, FlagSet::STRICT, t).unwrap();
        assert_eq!(hit, Some(CacheHit::Disk));
        assert_eq!(*c2, *a);
        // Another flag set is another entry.
        let (_, hit) = first.compile_traced(&src, FlagSet::FAST, t).unwrap();
        assert_eq!(hit, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
