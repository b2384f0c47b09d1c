//! NVRTC, the run-time CUDA C++ compiler: compile a source under a [`FlagSet`] for a target and keep
//! both PTX and cubin.
//!
//! This calls NVRTC through cudarc's `result`/`sys` layers rather than its `safe` `compile_ptx`,
//! which returns PTX only (no cubin, which we prefer to load: see [`Target`]) and unwraps in places
//! a user's input reaches (a NUL in the source, a failed log fetch).
//!
//! One compilation for `sm_XY` yields both the cubin and the PTX it was assembled from (checked with
//! NVRTC 13.0.88), so nothing is compiled twice.

use crate::cache::fnv1a64;
use crate::cache::{CacheHit, CacheKey, CompileCache};
use crate::error::{catch, CompileError, NvrtcUnavailable};
use crate::flags::FlagSet;
use crate::frontend::FrontEnd;
use crate::includes::{self, Include};
use crate::locate::NvrtcLibrary;
use crate::version::{Arch, CudaVersion};
use cudarc::nvrtc::result as nvrtc_result;
use cudarc::nvrtc::sys::{self as nvrtc_sys, nvrtcResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    /// The architecture targeted.
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
/// line info), its text, extra NVRTC options, headers given in memory, and the name expressions
/// (templated kernels) whose lowered names the compile should report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The name NVRTC reports in messages and line info; quoted includes of the source resolve
    /// against its directory.
    pub name: String,
    /// The CUDA C++ text.
    pub text: String,
    /// Options besides the flag set, target and line info: `-DNAME=VALUE`, `-IDIR`,
    /// `--include-path=DIR`, `--std=c++17`...
    pub options: Vec<String>,
    /// Headers given in memory, as (include name, contents); they win over files on disk.
    pub headers: Vec<(String, String)>,
    /// Name expressions such as `my_kernel<double>`; see [`Compiled::lowered_names`].
    pub name_expressions: Vec<String>,
}

impl Source {
    /// A source with no options, headers or name expressions.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source {
            name: name.into(),
            text: text.into(),
            options: Vec::new(),
            headers: Vec::new(),
            name_expressions: Vec::new(),
        }
    }

    /// Adds an extra option: `-DTILE=16`, `-Iinclude` or `--include-path=include` (whose headers
    /// the cache key then covers), `--std=c++17`... Floating-point options are refused at compile
    /// time: they belong to the flag set.
    pub fn with_option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// Adds a header in memory: `#include "name"` or `<name>` then reads `contents`.
    pub fn with_header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.headers.push((name.into(), contents.into()));
        self
    }

    /// Asks for the lowered (mangled) name of a C++ name expression, e.g. `my_kernel<double>`:
    /// the compile instantiates it and [`Compiled::lowered_names`] maps it to the kernel's name,
    /// which launching by the expression then uses.
    pub fn with_name_expression(mut self, expression: impl Into<String>) -> Self {
        self.name_expressions.push(expression.into());
        self
    }

    /// The files this source includes, resolved as NVRTC resolves them (see [`crate::includes`]).
    ///
    /// Files named by `--pre-include=NAME` / `-include=NAME` options are covered too, as if the
    /// text began by including them: the math-unit marking pre-includes headers whose contents
    /// (the demoted lines) must be part of the cache key.
    pub fn includes(&self) -> Vec<Include> {
        let pre: String = includes::pre_includes(&self.options)
            .iter()
            .map(|name| format!("#include \"{name}\"\n"))
            .collect();
        let text = if pre.is_empty() {
            std::borrow::Cow::Borrowed(self.text.as_str())
        } else {
            std::borrow::Cow::Owned(pre + &self.text)
        };
        includes::resolve(
            &self.name,
            &text,
            &self.headers,
            &includes::include_dirs(&self.options),
        )
    }
}

/// The hash of a source's text and of every file it includes (contents and include names, not
/// where the files lie, so that one source hashes alike on every machine), as 16 hex digits.
pub fn source_hash(text: &str, includes: &[Include]) -> String {
    let mut material = format!("{:016x} {}\n", fnv1a64(text.as_bytes()), text.len());
    for inc in includes {
        material.push_str(&inc.content_line());
        material.push('\n');
    }
    format!("{:016x}", fnv1a64(material.as_bytes()))
}

/// How a compilation was built, as plain data: what a record's build facts hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildFacts {
    /// The compiler front end: `nvrtc`, `nvcc`, or `ptx` for ready PTX read as is.
    pub front_end: String,
    /// Its version, e.g. `13.0`.
    pub front_end_version: String,
    /// The flag set's name (a preset or a `+` combination).
    pub flags: String,
    /// Every option the front end received, in order.
    pub options: Vec<String>,
    /// The target: `sm_90` (cubin and PTX) or `compute_90` (PTX only).
    pub arch: String,
    /// [`source_hash`] of the source and every file it includes.
    pub source_hash: String,
    /// The front end's program or library (nvcc's path, libnvrtc's path), when known. Absent in
    /// facts written before front ends were chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// Why this front end was used, e.g. `the file has host code (main at line 88)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What a reader of the record should know: e.g. that flag sets cannot change ready PTX.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The result of one compilation. The PTX is always kept: later stages read and rewrite it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// The source's name.
    pub source_name: String,
    /// The flag set it was compiled under.
    pub flags: FlagSet,
    /// What NVRTC was asked to produce (nvcc: always [`Target::Ptx`]).
    pub target: Target,
    /// Every option the front end received, in order (nvcc: its arguments but the input and
    /// output files).
    pub options: Vec<String>,
    /// Which compiler built it: NVRTC, or nvcc (see [`crate::frontend`]).
    pub front_end: FrontEnd,
    /// The front end's version (NVRTC's, or nvcc's release).
    pub nvrtc: CudaVersion,
    /// [`source_hash`] of the source and every file it includes.
    pub source_hash: String,
    /// Each name expression of the source mapped to its lowered (mangled) name.
    pub lowered_names: BTreeMap<String, String>,
    /// The PTX text.
    pub ptx: String,
    /// Present for [`Target::Cubin`].
    pub cubin: Option<Vec<u8>>,
    /// NVRTC's log (warnings); empty when there were none.
    pub log: String,
}

impl Compiled {
    /// The lowered (mangled) name of a name expression given with the source.
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.lowered_names.get(expression).map(String::as_str)
    }

    /// How this was built: front end and version, flag set, options, target, source hash.
    pub fn build_facts(&self) -> BuildFacts {
        BuildFacts {
            front_end: self.front_end.to_string(),
            front_end_version: self.nvrtc.to_string(),
            flags: self.flags.name(),
            options: self.options.clone(),
            arch: self.target.to_string(),
            source_hash: self.source_hash.clone(),
            compiler: None,
            reason: None,
            notes: Vec::new(),
        }
    }
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

    /// NVRTC's version.
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

    /// Whether NVRTC can target `arch`.
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

    /// The compile cache.
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
        // Read once: the key and the source hash describe the same contents.
        let includes = source.includes();
        let key = CacheKey::new(source, &includes, flags, target, self.version, &options);
        if let Some((compiled, hit)) = self.cache.get(&key, &source.text) {
            return Ok((compiled, Some(hit)));
        }
        let hash = source_hash(&source.text, &includes);
        let compiled = Arc::new(self.run_nvrtc(source, flags, target, options, hash)?);
        self.cache.put(&key, &source.text, compiled.clone());
        Ok((compiled, None))
    }

    fn run_nvrtc(
        &self,
        source: &Source,
        flags: FlagSet,
        target: Target,
        options: Vec<String>,
        source_hash: String,
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
        let c_strings = |items: Vec<&str>, what| {
            items
                .into_iter()
                .map(|t| CString::new(t).map_err(|_| nul(what)))
                .collect::<Result<Vec<CString>, _>>()
        };
        let header_names = c_strings(
            source.headers.iter().map(|h| h.0.as_str()).collect(),
            "a header name",
        )?;
        let header_texts = c_strings(
            source.headers.iter().map(|h| h.1.as_str()).collect(),
            "a header",
        )?;
        let expressions = c_strings(
            source.name_expressions.iter().map(String::as_str).collect(),
            "a name expression",
        )?;
        let fail = |status: nvrtcResult, detail: String| CompileError::Nvrtc {
            source_name: source.name.clone(),
            flags,
            target,
            status,
            detail,
        };
        let outcome = catch(|| -> Result<Compiled, CompileError> {
            let prog = Program::create(&text, &name, &header_texts, &header_names)
                .map_err(|s| fail(s, "cannot create the NVRTC program".into()))?;
            for e in &expressions {
                prog.add_name_expression(e)
                    .map_err(|s| fail(s, format!("cannot add the name expression {e:?}")))?;
            }
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
            let mut lowered_names = BTreeMap::new();
            for (expression, c_expression) in source.name_expressions.iter().zip(&expressions) {
                let lowered = prog.lowered_name(c_expression).map_err(|s| {
                    fail(s, format!("cannot read the lowered name of {expression:?}"))
                })?;
                lowered_names.insert(expression.clone(), lowered);
            }
            Ok(Compiled {
                source_name: source.name.clone(),
                flags,
                target,
                options: options.clone(),
                front_end: FrontEnd::Nvrtc,
                nvrtc: self.version,
                source_hash: source_hash.clone(),
                lowered_names,
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
    /// A program over `text` named `name`, with headers in memory (`texts[i]` is included as
    /// `names[i]`; the two have one length).
    fn create(
        text: &CStr,
        name: &CStr,
        texts: &[CString],
        names: &[CString],
    ) -> Result<Program, nvrtcResult> {
        let texts: Vec<*const c_char> = texts.iter().map(|t| t.as_ptr()).collect();
        let names: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let count = c_int::try_from(texts.len().min(names.len()))
            .map_err(|_| nvrtcResult::NVRTC_ERROR_INVALID_INPUT)?;
        let mut prog = std::ptr::null_mut();
        // SAFETY: every pointer is to a NUL-terminated string alive for the call (NVRTC copies
        // them); the arrays hold `count` entries each.
        unsafe {
            nvrtc_sys::nvrtcCreateProgram(
                &mut prog,
                text.as_ptr(),
                name.as_ptr(),
                count,
                texts.as_ptr(),
                names.as_ptr(),
            )
            .result()
            .map_err(|e| e.0)?;
        }
        Ok(Program(prog))
    }

    fn add_name_expression(&self, expression: &CStr) -> Result<(), nvrtcResult> {
        // SAFETY: the program is live and not compiled yet; NVRTC copies the string.
        unsafe { nvrtc_sys::nvrtcAddNameExpression(self.0, expression.as_ptr()) }
            .result()
            .map_err(|e| e.0)
    }

    /// The lowered name of an expression added before compiling.
    fn lowered_name(&self, expression: &CStr) -> Result<String, nvrtcResult> {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: the program is live and compiled; NVRTC owns the returned string, which lives
        // as long as the program, and it is copied here before the program is dropped.
        unsafe {
            nvrtc_sys::nvrtcGetLoweredName(self.0, expression.as_ptr(), &mut lowered)
                .result()
                .map_err(|e| e.0)?;
            if lowered.is_null() {
                return Err(nvrtcResult::NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID);
            }
            Ok(CStr::from_ptr(lowered).to_string_lossy().into_owned())
        }
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
mod tests;
