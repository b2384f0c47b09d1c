//! Front ends: how a user's file becomes PTX. NVRTC (no toolkit needed, device code only), nvcc
//! (files with host code: `main`, `<<<...>>>`, `#include <stdio.h>`), or ready PTX read as is.
//!
//! A [`BuildRequest`] names the file, `-I` directories, `-D` defines, the target architecture, the
//! [`FlagSet`], an optional math-unit marking and the front end (or `None` for the automatic
//! choice). [`Builder::build`] returns a [`Built`]: the PTX, the [`BuildFacts`] of the record
//! (front end, its version and program, every option) and the [`FrontEndChoice`], whose
//! `Display` says which front end was used and why, e.g.
//! `nvcc 13.0 (/usr/local/cuda/bin/nvcc): the file has host code (main at line 88)`.
//!
//! # The automatic choice
//!
//! - A `.ptx` file is read as is. Flag sets cannot change ready PTX: the facts say so in a note
//!   (and their flag set is `unknown`) rather than failing, since a flag list given to compare
//!   builds applies to the `.cu` files among the inputs and changes nothing here.
//! - Any other file is scanned, with the local files it includes (`#include "..."` found beside
//!   it or in the `-I` directories), comments and string literals removed first: host code
//!   (`main`, a `<<<` launch, `cudaMalloc`/`cudaMemcpy`/`cudaFree`/... calls) or a header NVRTC
//!   cannot open (a host header such as `<stdio.h>`, `<vector>`, `<cuda_runtime.h>`, or any
//!   `<...>` header not in the `-I` directories: NVRTC has no system include path, checked with
//!   NVRTC 13.0) makes it nvcc's; otherwise NVRTC's.
//!
//! nvcc missing when needed is one line saying what to install and how to make the PTX by hand
//! ([`BuildError::NeedsNvcc`]); NVRTC failing on a header it cannot open says the same
//! ([`BuildError::NvrtcMissingHeader`]).
//!
//! # Math-unit marking
//!
//! With [`BuildRequest::units`] set, the build pre-includes a generated header
//! (`#define MANTISSA_DEMOTE_LINES 4,7`) and then `cuda/mantissa_units.cuh` ([`UNITS_HEADER`]),
//! which marks each double math-function call as one unit. NVRTC gets both as headers in memory;
//! nvcc as files written under the temporary directory, at a path named by their contents, so
//! that the options (and the cache key) are the same on every run.

use crate::cache::{atomic_write, fnv1a64, CacheHit};
use crate::error::{BuildError, NvccUnavailable, NvrtcUnavailable};
use crate::flags::FlagSet;
use crate::includes::{self, IncludeOrigin};
use crate::nvcc::Nvcc;
use crate::nvrtc::{source_hash, BuildFacts, Compiled, Compiler, Source, Target};
use crate::version::{Arch, PtxIsa};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

/// The header that marks math-function calls as units (`cuda/mantissa_units.cuh`).
pub const UNITS_HEADER: &str = include_str!("../cuda/mantissa_units.cuh");
/// The name the units header is pre-included under.
pub const UNITS_HEADER_NAME: &str = "mantissa_units.cuh";
/// The name of the generated header holding `MANTISSA_DEMOTE_LINES`.
pub const DEMOTE_LINES_HEADER_NAME: &str = "mantissa_demote_lines.h";

/// The architecture built for when neither the request nor a device names one.
pub const DEFAULT_ARCH: Arch = Arch::new(9, 0);

/// A way from a file to PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FrontEnd {
    /// NVRTC, the run-time compiler: device code only, no toolkit needed.
    #[default]
    Nvrtc,
    /// nvcc, the toolkit's compiler driver: host code too.
    Nvcc,
    /// Ready PTX, read as is.
    Ptx,
}

impl FrontEnd {
    /// Every front end, in the order `--front-end` lists them.
    pub const ALL: [FrontEnd; 3] = [FrontEnd::Nvrtc, FrontEnd::Nvcc, FrontEnd::Ptx];

    /// The name on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            FrontEnd::Nvrtc => "nvrtc",
            FrontEnd::Nvcc => "nvcc",
            FrontEnd::Ptx => "ptx",
        }
    }
}

impl fmt::Display for FrontEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A front-end name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown front end '{0}'; accepted: auto, nvrtc, nvcc, ptx")]
pub struct UnknownFrontEnd(pub String);

impl FromStr for FrontEnd {
    type Err = UnknownFrontEnd;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FrontEnd::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownFrontEnd(s.to_string()))
    }
}

/// A `-D`: `NAME` or `NAME=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Define {
    /// The macro's name.
    pub name: String,
    /// Its value; `None` defines it as `1`, as compilers do.
    pub value: Option<String>,
}

impl Define {
    /// The compiler option: `-DNAME=VALUE` or `-DNAME`.
    pub fn option(&self) -> String {
        match &self.value {
            Some(v) => format!("-D{}={v}", self.name),
            None => format!("-D{}", self.name),
        }
    }
}

impl FromStr for Define {
    type Err = BuildError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, value) = match s.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (s, None),
        };
        let ident = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident || value.as_deref().is_some_and(|v| v.contains('\0')) {
            return Err(BuildError::BadDefine {
                given: s.to_string(),
            });
        }
        Ok(Define {
            name: name.to_string(),
            value,
        })
    }
}

/// What to build and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequest {
    /// The file: its name is used in messages and line info; quoted includes resolve beside it.
    pub file: PathBuf,
    /// The file's text, when already read (`None`: read `file`).
    pub text: Option<String>,
    /// `-I` directories, in order.
    pub include_dirs: Vec<PathBuf>,
    /// `-D` defines, in order.
    pub defines: Vec<Define>,
    /// The target; `None`: the device's ([`crate::Gpu::build_file`]), or [`DEFAULT_ARCH`].
    pub arch: Option<Arch>,
    /// The floating-point flag set.
    pub flags: FlagSet,
    /// Math-unit marking: `None` for an ordinary build; `Some(lines)` pre-includes the units
    /// header with these call lines demoted to single precision (empty: marked, none demoted).
    pub units: Option<Vec<u32>>,
    /// The front end; `None` chooses (see the module docs).
    pub front_end: Option<FrontEnd>,
    /// NVRTC name expressions (`axpy<double>`), so that templated kernels are instantiated and
    /// their lowered names known; nvcc instantiates what the file's host code launches.
    pub name_expressions: Vec<String>,
}

impl BuildRequest {
    /// A request for `file` with the defaults: no `-I`/`-D`, default flag set, automatic choice.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        BuildRequest {
            file: file.into(),
            text: None,
            include_dirs: Vec::new(),
            defines: Vec::new(),
            arch: None,
            flags: FlagSet::DEFAULT,
            units: None,
            front_end: None,
            name_expressions: Vec::new(),
        }
    }

    /// The same request with the text given (no file is read).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// The file's name as messages and line info show it.
    pub fn file_name(&self) -> String {
        self.file.display().to_string()
    }

    /// The text: given, or read from the file.
    pub fn read_text(&self) -> Result<String, BuildError> {
        match &self.text {
            Some(t) => Ok(t.clone()),
            None => read_source(&self.file).map_err(|e| BuildError::Read {
                file: self.file_name(),
                message: e.to_string(),
            }),
        }
    }

    fn is_ptx_file(&self) -> bool {
        self.file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ptx"))
    }

    /// The `-I` and `-D` options, as both compilers take them.
    fn user_options(&self) -> Vec<String> {
        let mut opts: Vec<String> = self
            .include_dirs
            .iter()
            .map(|d| format!("-I{}", d.display()))
            .collect();
        opts.extend(self.defines.iter().map(Define::option));
        opts
    }

    /// The NVRTC [`Source`] of this request (text, `-I`, `-D`, and the units headers in memory).
    pub fn nvrtc_source(&self, text: &str) -> Source {
        let mut src = Source::new(self.file_name(), text);
        src.options = self.user_options();
        for e in &self.name_expressions {
            src = src.with_name_expression(e.clone());
        }
        if let Some(lines) = &self.units {
            src = src
                .with_header(DEMOTE_LINES_HEADER_NAME, demote_lines_header(lines))
                .with_header(UNITS_HEADER_NAME, UNITS_HEADER)
                .with_option(format!("--pre-include={DEMOTE_LINES_HEADER_NAME}"))
                .with_option(format!("--pre-include={UNITS_HEADER_NAME}"));
        }
        src
    }

    /// The nvcc [`Source`] of this request: options are nvcc arguments; the units headers are
    /// written to files first.
    fn nvcc_source(&self, text: &str) -> Result<Source, BuildError> {
        let mut src = Source::new(self.file_name(), text);
        src.options = self.user_options();
        if let Some(lines) = &self.units {
            for path in units_files(lines)? {
                src.options.push("--pre-include".into());
                src.options.push(path.display().to_string());
            }
        }
        Ok(src)
    }
}

/// Reads a source file as text. Bytes that are not UTF-8 (a Latin-1 `é` in a comment, which
/// nvcc accepts) become U+FFFD instead of failing the read: no newline is added or removed, so
/// line numbers stay those of the file. nvcc compiles the file itself and sees its bytes; NVRTC
/// and the analyses see this text.
pub fn read_source(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The generated header naming the demoted call lines. One `#define` in a header rather than a
/// `-D`, because nvcc splits `-D` values at commas.
pub fn demote_lines_header(lines: &[u32]) -> String {
    let list: Vec<String> = lines.iter().map(u32::to_string).collect();
    format!(
        "// Generated by mantissa: the math-function call lines demoted to single precision.\n#pragma once\n#define MANTISSA_DEMOTE_LINES {}\n",
        list.join(",")
    )
}

/// Writes the two units headers for nvcc under the temporary directory, at a path named by their
/// contents (stable across runs), and returns them in pre-include order.
fn units_files(lines: &[u32]) -> Result<[PathBuf; 2], BuildError> {
    let demote = demote_lines_header(lines);
    let tag = fnv1a64(format!("{demote}\n{UNITS_HEADER}").as_bytes());
    let dir = std::env::temp_dir().join(format!("mantissa-units-{tag:016x}"));
    let fail = |e: std::io::Error| BuildError::Read {
        file: dir.display().to_string(),
        message: format!("cannot write the units headers there: {e}"),
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let files = [
        (dir.join(DEMOTE_LINES_HEADER_NAME), demote),
        (dir.join(UNITS_HEADER_NAME), UNITS_HEADER.to_string()),
    ];
    for (path, text) in &files {
        if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            atomic_write(path, text.as_bytes()).map_err(fail)?;
        }
    }
    let [(a, _), (b, _)] = files;
    Ok([a, b])
}

/// Host code (or a header NVRTC cannot open) found in a file: what, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCode {
    /// What was found: `main`, `<<<`, `cudaMalloc`, `<stdio.h>`...
    pub what: String,
    /// Whether it is a header (`#include <...>`) rather than code.
    pub header: bool,
    /// The file it is in, when it is an included file rather than the file built.
    pub file: Option<String>,
    /// Its line, from 1.
    pub line: u32,
}

impl fmt::Display for HostCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match &self.file {
            Some(file) => format!("line {} of {file}", self.line),
            None => format!("line {}", self.line),
        };
        if self.header {
            write!(f, "the file includes {} at {place}", self.what)
        } else {
            write!(f, "the file has host code ({} at {place})", self.what)
        }
    }
}

/// Headers only a host compiler has: seeing one means nvcc. (Any other `<...>` header that is not
/// in the `-I` directories means nvcc too, since NVRTC has no system include path; these are
/// named so that the reason reads as "host header".)
const HOST_HEADERS: &[&str] = &[
    "stdio.h",
    "stdlib.h",
    "string.h",
    "assert.h",
    "time.h",
    "cstdio",
    "cstdlib",
    "cstring",
    "cassert",
    "ctime",
    "iostream",
    "fstream",
    "sstream",
    "iomanip",
    "vector",
    "string",
    "map",
    "unordered_map",
    "set",
    "algorithm",
    "memory",
    "chrono",
    "random",
    "thread",
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda.h",
];

/// Calls only host code makes (the runtime API's memory and synchronisation calls).
const HOST_CALLS: &[&str] = &[
    "cudaMalloc",
    "cudaMemcpy",
    "cudaMemset",
    "cudaFree",
    "cudaDeviceSynchronize",
    "cudaStreamCreate",
    "cudaEventCreate",
    "cudaLaunchKernel",
];

/// `text` with comments replaced by spaces (newlines kept, so line numbers stay), string and
/// character literals kept.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str("  ");
                let mut prev = ' ';
                for n in chars.by_ref() {
                    out.push(if n == '\n' { '\n' } else { ' ' });
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            '"' | '\'' => {
                out.push(c);
                let mut escaped = false;
                for n in chars.by_ref() {
                    out.push(n);
                    if n == '\n' || (n == c && !escaped) {
                        break;
                    }
                    escaped = n == '\\' && !escaped;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// `line` with the contents of string and character literals blanked.
fn blank_literals(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in line.chars() {
        match quote {
            Some(q) => {
                if c == q && !escaped {
                    quote = None;
                    out.push(c);
                } else {
                    out.push(' ');
                }
                escaped = c == '\\' && !escaped;
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                    escaped = false;
                }
                out.push(c);
            }
        }
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `word` occurs in `line` as a whole identifier (or, with `prefix`, as the start of one).
fn find_word(line: &str, word: &str, prefix: bool) -> bool {
    let mut from = 0;
    while let Some(at) = line[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let before_ok = !line[..start].ends_with(is_ident_char);
        let after_ok = prefix || !line[end..].starts_with(is_ident_char);
        if before_ok && after_ok {
            return true;
        }
        from = end;
    }
    false
}

/// `int main(` (or `int main (`), the word `main` called or defined after `int`.
fn has_main(line: &str) -> bool {
    let mut from = 0;
    while let Some(at) = line[from..].find("main") {
        let start = from + at;
        let end = start + 4;
        let before = &line[..start];
        if !before.ends_with(is_ident_char)
            && line[end..].trim_start().starts_with('(')
            && before.trim_end().ends_with("int")
        {
            return true;
        }
        from = end;
    }
    false
}

/// The first host code in one file's text (see the module docs); `angle_ok` says whether a
/// `<...>` header resolves in the `-I` directories.
fn host_code_in(text: &str, angle_ok: &dyn Fn(&str) -> bool) -> Option<(String, bool, u32)> {
    let stripped = strip_comments(text);
    for (i, line) in stripped.lines().enumerate() {
        let n = i as u32 + 1;
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('#') {
            let rest = rest.trim_start();
            if let Some(name) = rest.strip_prefix("include") {
                let name = name.trim();
                if let Some(inner) = name.strip_prefix('<').and_then(|x| x.split('>').next()) {
                    if HOST_HEADERS.contains(&inner) || !angle_ok(inner) {
                        return Some((format!("<{inner}>"), true, n));
                    }
                }
            }
            continue;
        }
        let code = blank_literals(line);
        if code.contains("<<<") {
            return Some(("a <<<...>>> launch".into(), false, n));
        }
        if has_main(&code) {
            return Some(("main".into(), false, n));
        }
        if let Some(call) = HOST_CALLS.iter().find(|c| find_word(&code, c, true)) {
            return Some((call.to_string(), false, n));
        }
    }
    None
}

/// The first host code in the file `name` with `text` or in a local file it includes (quoted,
/// found beside it or in `dirs`), comments and literals ignored.
pub fn find_host_code(name: &str, text: &str, dirs: &[PathBuf]) -> Option<HostCode> {
    let angle_ok = |h: &str| dirs.iter().any(|d| d.join(h).is_file());
    if let Some((what, header, line)) = host_code_in(text, &angle_ok) {
        return Some(HostCode {
            what,
            header,
            file: None,
            line,
        });
    }
    for inc in includes::resolve(name, text, &[], dirs) {
        let IncludeOrigin::File(path) = &inc.origin else {
            continue;
        };
        let Ok(inc_text) = read_source(path) else {
            continue;
        };
        if let Some((what, header, line)) = host_code_in(&inc_text, &angle_ok) {
            return Some(HostCode {
                what,
                header,
                file: Some(inc.name.clone()),
                line,
            });
        }
    }
    None
}

/// Why a front end was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The request named it.
    Asked,
    /// The file ends in `.ptx`.
    PtxFile,
    /// Host code or a header NVRTC cannot open.
    HostCode(HostCode),
    /// Device code only.
    DeviceOnly,
    /// The automatic choice was NVRTC, which refused host code the scan did not see (a host
    /// function or variable without host headers): NVRTC's first error.
    NvrtcRefusedHost(String),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Asked => f.write_str("asked for"),
            Reason::PtxFile => f.write_str("the file is PTX, read as is"),
            Reason::HostCode(h) => write!(f, "{h}"),
            Reason::DeviceOnly => f.write_str("device code only"),
            Reason::NvrtcRefusedHost(e) => write!(
                f,
                "NVRTC refused host code ({e}), so nvcc, which compiles host code, built it"
            ),
        }
    }
}

/// The front end a build used, its program and version, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontEndChoice {
    /// The front end.
    pub front_end: FrontEnd,
    /// Its version (`13.0`; for ready PTX, the file's `.version`), when known.
    pub version: Option<String>,
    /// Its program or library, when known.
    pub program: Option<String>,
    /// Why it was used.
    pub reason: Reason,
}

impl fmt::Display for FrontEndChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.front_end {
            FrontEnd::Nvrtc => "NVRTC",
            FrontEnd::Nvcc => "nvcc",
            FrontEnd::Ptx => "ready PTX",
        };
        f.write_str(name)?;
        if let Some(v) = &self.version {
            match self.front_end {
                FrontEnd::Ptx => write!(f, " .version {v}")?,
                _ => write!(f, " {v}")?,
            }
        }
        if let Some(p) = &self.program {
            write!(f, " ({p})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// A finished build.
#[derive(Debug, Clone)]
pub struct Built {
    /// The PTX text.
    pub ptx: String,
    /// The compilation (absent for ready PTX); NVRTC's has a cubin when one was asked for.
    pub compiled: Option<Arc<Compiled>>,
    /// Which front end and why.
    pub choice: FrontEndChoice,
    /// The record's build facts.
    pub facts: BuildFacts,
    /// Whether the result came from the compile cache.
    pub cache_hit: Option<CacheHit>,
}

impl Built {
    /// The result of a compiler front end (NVRTC or nvcc): its facts completed with the compiler
    /// that ran and why it was chosen.
    #[allow(clippy::too_many_arguments)]
    fn compiled(
        compiled: Arc<Compiled>,
        cache_hit: Option<CacheHit>,
        mut facts: BuildFacts,
        front_end: FrontEnd,
        reason: Reason,
        version: String,
        program: String,
    ) -> Built {
        facts.compiler = Some(program.clone());
        facts.reason = Some(reason.to_string());
        Built {
            ptx: compiled.ptx.clone(),
            choice: FrontEndChoice {
                front_end,
                version: Some(version),
                program: Some(program),
                reason,
            },
            compiled: Some(compiled),
            facts,
            cache_hit,
        }
    }
}

/// The front ends, found when first needed, and the architecture used when a request names none.
#[derive(Debug)]
pub struct Builder {
    nvrtc: OnceLock<Result<Arc<Compiler>, NvrtcUnavailable>>,
    nvcc: OnceLock<Result<Arc<Nvcc>, NvccUnavailable>>,
    default_arch: Arch,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Front ends probed on first use (NVRTC with [`Compiler::probe`], nvcc with
    /// [`Nvcc::find`]), default target [`DEFAULT_ARCH`].
    pub fn new() -> Self {
        Builder {
            nvrtc: OnceLock::new(),
            nvcc: OnceLock::new(),
            default_arch: DEFAULT_ARCH,
        }
    }

    /// Uses this NVRTC (or this reason for its absence) instead of probing.
    pub fn with_nvrtc(self, nvrtc: Result<Arc<Compiler>, NvrtcUnavailable>) -> Self {
        let _ = self.nvrtc.set(nvrtc);
        self
    }

    /// Uses this nvcc (or this reason for its absence) instead of searching.
    pub fn with_nvcc(self, nvcc: Result<Nvcc, NvccUnavailable>) -> Self {
        let _ = self.nvcc.set(nvcc.map(Arc::new));
        self
    }

    /// Builds for `arch` when a request names none.
    pub fn with_default_arch(mut self, arch: Arch) -> Self {
        self.default_arch = arch;
        self
    }

    /// NVRTC, probed on first use.
    pub fn nvrtc(&self) -> Result<&Arc<Compiler>, NvrtcUnavailable> {
        self.nvrtc
            .get_or_init(|| Compiler::probe().map(Arc::new))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// nvcc, searched on first use.
    pub fn nvcc(&self) -> Result<&Arc<Nvcc>, NvccUnavailable> {
        self.nvcc
            .get_or_init(|| Nvcc::find().map(Arc::new))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The architecture `request` builds for.
    pub fn arch_of(&self, request: &BuildRequest) -> Arch {
        request.arch.unwrap_or(self.default_arch)
    }

    /// The front end for `request` with `text`, and why (see the module docs); refuses a front
    /// end that cannot read the file.
    pub fn choose(
        &self,
        request: &BuildRequest,
        text: &str,
    ) -> Result<(FrontEnd, Reason), BuildError> {
        let wrong = |front_end, problem: &str| BuildError::WrongFrontEnd {
            file: request.file_name(),
            front_end,
            problem: problem.to_string(),
        };
        match request.front_end {
            Some(FrontEnd::Ptx) if PtxIsa::of_ptx(text).is_none() => Err(wrong(
                FrontEnd::Ptx,
                "it has no .version directive, so it is not PTX: use --front-end auto, nvrtc or nvcc",
            )),
            Some(f @ (FrontEnd::Nvrtc | FrontEnd::Nvcc)) if request.is_ptx_file() => Err(wrong(
                f,
                "it is PTX, which is read as is: use --front-end auto or ptx",
            )),
            Some(FrontEnd::Ptx) if request.units.is_some() => Err(wrong(
                FrontEnd::Ptx,
                "math-unit marking needs a compile, and ready PTX is not compiled: give mantissa the .cu file",
            )),
            Some(f) => Ok((f, Reason::Asked)),
            None if request.is_ptx_file() => {
                if request.units.is_some() {
                    return Err(wrong(
                        FrontEnd::Ptx,
                        "math-unit marking needs a compile, and ready PTX is not compiled: give mantissa the .cu file",
                    ));
                }
                Ok((FrontEnd::Ptx, Reason::PtxFile))
            }
            None => Ok(
                match find_host_code(&request.file_name(), text, &request.include_dirs) {
                    Some(h) => (FrontEnd::Nvcc, Reason::HostCode(h)),
                    None => (FrontEnd::Nvrtc, Reason::DeviceOnly),
                },
            ),
        }
    }

    /// Builds `request` to PTX (NVRTC: for `compute_XY`).
    pub fn build(&self, request: &BuildRequest) -> Result<Built, BuildError> {
        self.build_for(request, false)
    }

    /// Builds `request`; with `cubin`, NVRTC builds for `sm_XY` and keeps the cubin too (nvcc
    /// and ready PTX give PTX only, which the driver JIT-compiles).
    pub fn build_for(&self, request: &BuildRequest, cubin: bool) -> Result<Built, BuildError> {
        self.build_unlogged(request, cubin)
            .map_err(|e| crate::build_log::logged(e, &request.file_name()))
    }

    /// [`Builder::build_for`] without the log written to a file.
    fn build_unlogged(&self, request: &BuildRequest, cubin: bool) -> Result<Built, BuildError> {
        let text = request.read_text()?;
        let (front_end, reason) = self.choose(request, &text)?;
        let arch = self.arch_of(request);
        let file = request.file_name();
        match front_end {
            FrontEnd::Ptx => {
                let version = PtxIsa::of_ptx(&text).map(|v| v.to_string());
                let mut notes = vec![
                    "ready PTX, read as is: flag sets, -D and -I cannot change it".to_string(),
                ];
                if request.flags != FlagSet::DEFAULT {
                    notes.push(format!(
                        "flag set {} was asked for and not applied",
                        request.flags
                    ));
                }
                let facts = BuildFacts {
                    front_end: "ptx".into(),
                    front_end_version: version.clone().unwrap_or_default(),
                    flags: "unknown".into(),
                    options: Vec::new(),
                    arch: ptx_target(&text).unwrap_or_default(),
                    source_hash: source_hash(&text, &[]),
                    compiler: None,
                    reason: Some(reason.to_string()),
                    notes,
                };
                Ok(Built {
                    ptx: text,
                    compiled: None,
                    choice: FrontEndChoice {
                        front_end,
                        version,
                        program: None,
                        reason,
                    },
                    facts,
                    cache_hit: None,
                })
            }
            FrontEnd::Nvrtc => {
                let compiler = self.nvrtc()?;
                let source = request.nvrtc_source(&text);
                let target = if cubin {
                    Target::Cubin(arch)
                } else {
                    Target::Ptx(arch)
                };
                let compiled = compiler.compile_traced(&source, request.flags, target);
                if let Err(e) = &compiled {
                    // NVRTC's advice for a host function or variable it was not told about is
                    // its own `-default-device`, which mantissa does not offer: nvcc compiles
                    // host code, so an automatic choice moves there.
                    let log = e.log().unwrap_or("");
                    if request.front_end.is_none() && log.contains("-default-device") {
                        let reason = Reason::NvrtcRefusedHost(first_error(log));
                        return self.build_nvcc(request, &text, reason, arch);
                    }
                }
                let (compiled, hit) =
                    compiled.map_err(|e| match missing_header(e.log().unwrap_or(""), &text) {
                        Some(header) => BuildError::NvrtcMissingHeader {
                            file: file.clone(),
                            header,
                            arch,
                            log: e.log().unwrap_or("").to_string(),
                        },
                        None => BuildError::Compile(e),
                    })?;
                let facts = compiled.build_facts();
                Ok(Built::compiled(
                    compiled,
                    hit,
                    facts,
                    front_end,
                    reason,
                    compiler.version().to_string(),
                    compiler.library().path.display().to_string(),
                ))
            }
            FrontEnd::Nvcc => self.build_nvcc(request, &text, reason, arch),
        }
    }

    /// Builds `request` (whose source is `text`) with nvcc, chosen for `reason`.
    fn build_nvcc(
        &self,
        request: &BuildRequest,
        text: &str,
        reason: Reason,
        arch: Arch,
    ) -> Result<Built, BuildError> {
        let nvcc = self.nvcc().map_err(|cause| BuildError::NeedsNvcc {
            file: request.file_name(),
            reason: reason.to_string(),
            arch,
            cause,
        })?;
        let source = request.nvcc_source(text)?;
        let (compiled, hit) = nvcc.compile_traced(&source, request.flags, arch)?;
        let mut facts = compiled.build_facts();
        facts.front_end_version = nvcc.release().to_string();
        facts.arch = arch.sm();
        Ok(Built::compiled(
            compiled,
            hit,
            facts,
            FrontEnd::Nvcc,
            reason,
            nvcc.version().to_string(),
            nvcc.path().display().to_string(),
        ))
    }
}

/// The first `error:` line of a compiler log, without its advice (`A function without
/// execution space annotations (...) is considered a host function`), for a one-line reason.
fn first_error(log: &str) -> String {
    let line = log
        .lines()
        .find_map(|l| l.split_once("error: ").map(|(_, e)| e))
        .unwrap_or("host code");
    let line = line.split(", and host").next().unwrap_or(line);
    line.trim().trim_end_matches('.').to_string()
}

/// The `.target` of PTX text (`sm_90`), when it has one.
fn ptx_target(ptx: &str) -> Option<String> {
    ptx.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(".target")?;
        rest.split(',').next().map(|t| t.trim().to_string())
    })
}

/// The `<...>` header NVRTC could not open, from its log (`could not open source file
/// "stdio.h"`), when `text` includes it with angle brackets: a system or host header, which
/// nvcc has. A missing `"local.h"` is left to NVRTC's own message (a missing `-I`, not a missing
/// compiler).
fn missing_header(log: &str, text: &str) -> Option<String> {
    let at = log.find("could not open source file \"")?;
    let rest = &log[at + "could not open source file \"".len()..];
    let name = rest.split('"').next()?;
    let angle = strip_comments(text).lines().any(|l| {
        let t = l.trim_start();
        t.strip_prefix('#')
            .map(|r| r.trim_start())
            .and_then(|r| r.strip_prefix("include"))
            .is_some_and(|r| r.trim_start().starts_with(&format!("<{name}>")))
    });
    angle.then(|| name.to_string())
}

#[cfg(test)]
mod tests;
