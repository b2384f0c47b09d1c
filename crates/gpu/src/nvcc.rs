//! nvcc, the CUDA toolkit's compiler driver, as a second front end beside NVRTC: it compiles files
//! with host code (`main`, `<<<...>>>`, `#include <stdio.h>`), which NVRTC cannot.
//!
//! Where nvcc is looked for, in order (the first executable file wins):
//!
//! 1. `$MANTISSA_NVCC` ([`NVCC_ENV`]) when set: that file and nothing else, so a test or a user
//!    can pin one nvcc, or turn discovery off by naming a file that does not exist;
//! 2. `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`;
//! 3. every directory of `PATH`;
//! 4. the pip wheel (`pip install nvidia-cuda-nvcc==13.0.88 ...`, see [`NVCC_PIP_INSTALL`]):
//!    `nvidia/cu13/bin/nvcc` under the active Python's site-packages (the same search as NVRTC's
//!    wheel, [`crate::locate`]).
//!
//! nvcc runs as a child process with its arguments as a list (no shell), in a scratch directory
//! of its own that is removed afterwards (its output file and, through `TMPDIR`, its
//! intermediates); its stderr becomes the error's log. Results go through the same
//! [`CompileCache`] as NVRTC's, keyed by the source, every file it includes, every argument and
//! nvcc's full version and path.

use crate::cache::{cache_root, CacheHit, CacheKey, CompileCache};
use crate::error::{BuildError, NvccUnavailable};
use crate::flags::FlagSet;
use crate::frontend::FrontEnd;
use crate::locate::is_executable;
use crate::nvrtc::{source_hash, Compiled, Source, Target};
use crate::version::{Arch, CudaVersion};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Names one nvcc to use and turns discovery off (see the module docs).
pub const NVCC_ENV: &str = "MANTISSA_NVCC";

/// The pip wheels that make a working nvcc for driver 580 (CUDA 13.0) without a toolkit: nvcc
/// and ptxas, the runtime headers, the CRT headers, and cicc (NVVM).
pub const NVCC_PIP_INSTALL: &str = "pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88";

/// Where an nvcc was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvccOrigin {
    /// `$MANTISSA_NVCC`.
    Override,
    /// `$CUDA_HOME`, `$CUDA_PATH` or `/usr/local/cuda`.
    Toolkit,
    /// A directory of `PATH`.
    Path,
    /// The `nvidia-cuda-nvcc` pip wheel under a Python site-packages directory.
    PipWheel,
}

impl fmt::Display for NvccOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NvccOrigin::Override => NVCC_ENV,
            NvccOrigin::Toolkit => "the CUDA toolkit",
            NvccOrigin::Path => "PATH",
            NvccOrigin::PipWheel => "the pip wheel",
        })
    }
}

/// One nvcc: its path, version and how it was found, with the cache its results go through.
#[derive(Debug)]
pub struct Nvcc {
    path: PathBuf,
    version: CudaVersion,
    release: String,
    origin: NvccOrigin,
    cache: CompileCache,
}

/// The places searched, in order, with how each was found (see the module docs). With
/// `$MANTISSA_NVCC` set, only that file.
pub fn nvcc_candidates() -> Vec<(PathBuf, NvccOrigin)> {
    candidates_with(
        &|name| std::env::var_os(name),
        &crate::locate::wheel_subdirs(&["bin"]),
    )
}

/// [`nvcc_candidates`] with the environment read through `env` and the wheels' `bin`
/// directories given (tests pass their own).
fn candidates_with(
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    wheel_bins: &[PathBuf],
) -> Vec<(PathBuf, NvccOrigin)> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(path) = var(NVCC_ENV) {
        return vec![(PathBuf::from(path), NvccOrigin::Override)];
    }
    let mut out: Vec<(PathBuf, NvccOrigin)> = Vec::new();
    let mut push = |p: PathBuf, o: NvccOrigin| {
        if !out.iter().any(|(q, _)| *q == p) {
            out.push((p, o));
        }
    };
    for root in ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(|v| var(v)) {
        push(
            PathBuf::from(root).join("bin").join("nvcc"),
            NvccOrigin::Toolkit,
        );
    }
    push(
        PathBuf::from("/usr/local/cuda/bin/nvcc"),
        NvccOrigin::Toolkit,
    );
    if let Some(path) = var("PATH") {
        for dir in std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()) {
            push(dir.join("nvcc"), NvccOrigin::Path);
        }
    }
    for dir in wheel_bins {
        push(dir.join("nvcc"), NvccOrigin::PipWheel);
    }
    out
}

/// Reads `nvcc --version`'s `release 13.0, V13.0.88` line: the version and the full release.
pub fn parse_nvcc_version(text: &str) -> Option<(CudaVersion, String)> {
    let line = text.lines().find(|l| l.contains("release "))?;
    let after = line.split("release ").nth(1)?;
    let short = after.split(',').next()?.trim();
    let (major, minor) = short.split_once('.')?;
    let version = CudaVersion::new(major.parse().ok()?, minor.parse().ok()?);
    let full = after
        .split(", V")
        .nth(1)
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| short.to_string());
    Some((version, full))
}

impl Nvcc {
    /// Finds nvcc (see the module docs), with its results cached under `<cache_root>/nvcc`.
    pub fn find() -> Result<Nvcc, NvccUnavailable> {
        let candidates = nvcc_candidates();
        let looked: Vec<PathBuf> = candidates.iter().map(|(p, _)| p.clone()).collect();
        let Some((path, origin)) = candidates.iter().find(|(p, _)| is_executable(p)).cloned()
        else {
            return Err(match candidates.as_slice() {
                [(path, NvccOrigin::Override)] => {
                    NvccUnavailable::NotAtOverride { path: path.clone() }
                }
                _ => NvccUnavailable::NotFound { looked },
            });
        };
        Nvcc::at(&path, origin)
    }

    /// The nvcc at `path`, asked for its version.
    pub fn at(path: &Path, origin: NvccOrigin) -> Result<Nvcc, NvccUnavailable> {
        let broken = |message: String| NvccUnavailable::Broken {
            path: path.to_path_buf(),
            message,
        };
        let out = Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| broken(e.to_string()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let (version, release) = parse_nvcc_version(&text).ok_or_else(|| {
            broken(format!(
                "`nvcc --version` printed no `release X.Y` line ({})",
                first_line(&text, &String::from_utf8_lossy(&out.stderr))
            ))
        })?;
        Ok(Nvcc {
            path: path.to_path_buf(),
            version,
            release,
            origin,
            cache: CompileCache::new(cache_root().map(|r| r.join("nvcc"))),
        })
    }

    /// Replaces the cache (tests use [`CompileCache::in_memory`]).
    pub fn with_cache(mut self, cache: CompileCache) -> Self {
        self.cache = cache;
        self
    }

    /// The nvcc program.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its release as `major.minor`.
    pub fn version(&self) -> CudaVersion {
        self.version
    }

    /// Its full release, e.g. `13.0.88`.
    pub fn release(&self) -> &str {
        &self.release
    }

    /// How it was found.
    pub fn origin(&self) -> NvccOrigin {
        self.origin
    }

    /// The cache its results go through.
    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// The arguments nvcc receives besides the input file and `-o OUTPUT`: `-ptx`, the target,
    /// `-lineinfo`, the flag set's switches ([`FlagSet::nvcc_options`]), then `extra` (`-I`,
    /// `-D`, `--pre-include`).
    pub fn options(flags: FlagSet, arch: Arch, extra: &[String]) -> Vec<String> {
        let mut opts = vec![
            "-ptx".to_string(),
            format!("-arch={}", arch.sm()),
            "-lineinfo".to_string(),
        ];
        opts.extend(flags.nvcc_options().iter().map(|s| s.to_string()));
        opts.extend(extra.iter().cloned());
        opts
    }

    /// Compiles the file `source.name` (whose text is `source.text`, already read) to PTX for
    /// `arch`, or returns the cached result. `source.options` are nvcc arguments (`-I DIR`,
    /// `-DNAME=VALUE`, `--pre-include FILE`); relative paths in them and the file's own name
    /// are taken from the current directory.
    pub fn compile_traced(
        &self,
        source: &Source,
        flags: FlagSet,
        arch: Arch,
    ) -> Result<(Arc<Compiled>, Option<CacheHit>), BuildError> {
        let options = Self::options(flags, arch, &source.options);
        let includes = source.includes();
        let target = Target::Ptx(arch);
        let label = format!("nvcc {} {}", self.release, self.path.display());
        let key = CacheKey::for_front_end(
            &label,
            source,
            &includes,
            flags,
            target,
            self.version,
            &options,
        );
        if let Some((compiled, hit)) = self.cache.get(&key, &source.text) {
            return Ok((compiled, Some(hit)));
        }
        let (ptx, log) = self.run(&source.name, &options, flags, arch)?;
        let compiled = Arc::new(Compiled {
            source_name: source.name.clone(),
            flags,
            target,
            options,
            front_end: FrontEnd::Nvcc,
            nvrtc: self.version,
            source_hash: source_hash(&source.text, &includes),
            lowered_names: BTreeMap::new(),
            ptx,
            cubin: None,
            log,
        });
        self.cache.put(&key, &source.text, compiled.clone());
        Ok((compiled, None))
    }

    /// Runs nvcc on `file` in a scratch directory; returns the PTX and nvcc's warnings.
    fn run(
        &self,
        file: &str,
        options: &[String],
        flags: FlagSet,
        arch: Arch,
    ) -> Result<(String, String), BuildError> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let scratch = std::env::temp_dir().join(format!(
            "mantissa-nvcc-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |what: &str, e: std::io::Error| BuildError::NvccRun {
            nvcc: self.path.clone(),
            message: format!("{what}: {e}"),
        };
        std::fs::create_dir_all(&scratch)
            .map_err(|e| io(&format!("cannot create {}", scratch.display()), e))?;
        let out_file = scratch.join("out.ptx");
        let result = Command::new(&self.path)
            .args(options)
            .arg(file)
            .arg("-o")
            .arg(&out_file)
            // Intermediates go to the scratch directory too, and leave with it.
            .env("TMPDIR", &scratch)
            .stdin(Stdio::null())
            .output();
        let outcome = match result {
            Err(e) => Err(io("cannot run it", e)),
            Ok(out) => {
                let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
                let stdout = String::from_utf8_lossy(&out.stdout);
                if !stdout.trim().is_empty() {
                    log.push_str(&stdout);
                }
                if out.status.success() {
                    std::fs::read_to_string(&out_file)
                        .map(|ptx| (ptx, log))
                        .map_err(|e| io("it succeeded but its PTX cannot be read", e))
                } else {
                    Err(BuildError::Nvcc {
                        file: file.to_string(),
                        flags,
                        arch,
                        status: out
                            .status
                            .code()
                            .map_or_else(|| "killed by a signal".into(), |c| format!("exit {c}")),
                        log,
                    })
                }
            }
        };
        // Best effort: a scratch directory left behind costs disk, not correctness.
        let _ = std::fs::remove_dir_all(&scratch);
        outcome
    }
}

impl fmt::Display for Nvcc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nvcc {} ({})", self.version, self.path.display())
    }
}

fn first_line(a: &str, b: &str) -> String {
    a.lines()
        .chain(b.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no output")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::NvccUnavailable;

    #[test]
    fn version_is_read_from_nvcc_version() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nBuilt on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(
            parse_nvcc_version(text),
            Some((CudaVersion::new(13, 0), "13.0.88".to_string()))
        );
        assert_eq!(parse_nvcc_version("gcc (GCC) 12.2"), None);
    }

    #[test]
    fn discovery_order_is_override_toolkit_path_wheel() {
        let env = |name: &str| -> Option<std::ffi::OsString> {
            match name {
                "CUDA_HOME" => Some("/opt/cuda-home".into()),
                "CUDA_PATH" => Some("".into()),
                "PATH" => Some("/usr/bin:/usr/local/cuda/bin:/opt/bin".into()),
                _ => None,
            }
        };
        let wheel = PathBuf::from("/venv/site-packages/nvidia/cu13/bin");
        let found = candidates_with(&env, std::slice::from_ref(&wheel));
        let paths: Vec<String> = found.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "/opt/cuda-home/bin/nvcc",
                "/usr/local/cuda/bin/nvcc",
                "/usr/bin/nvcc",
                "/opt/bin/nvcc",
                "/venv/site-packages/nvidia/cu13/bin/nvcc"
            ],
            "an empty CUDA_PATH is skipped, a repeated directory is searched once"
        );
        assert_eq!(found[0].1, NvccOrigin::Toolkit);
        assert_eq!(found[2].1, NvccOrigin::Path);
        assert_eq!(found[4].1, NvccOrigin::PipWheel);

        let only = |name: &str| -> Option<std::ffi::OsString> {
            (name == NVCC_ENV || name == "CUDA_HOME").then(|| "/nonexistent/nvcc".into())
        };
        assert_eq!(
            candidates_with(&only, &[wheel]),
            [(PathBuf::from("/nonexistent/nvcc"), NvccOrigin::Override)]
        );
    }

    /// A stand-in nvcc: a shell script that answers `--version` and writes `-o`'s file, or
    /// fails with a compiler-like log when the input holds `FAIL`.
    fn fake_nvcc(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("nvcc");
        std::fs::write(
            &path,
            r#"#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0
fi
out=""; last=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then shift; out="$1"; else last="$1"; fi
  shift
done
if grep -q FAIL "$last"; then
  echo "$last(2): error: identifier \"FAIL\" is undefined" >&2
  echo "$last(3): error: expected a \";\"" >&2
  echo "2 errors detected in the compilation of \"$last\"." >&2
  exit 1
fi
printf '.version 9.0\n.target sm_90\n.address_size 64\n// %s\n' "$TMPDIR" > "$out"
"#,
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_stand_in_nvcc_runs_in_a_scratch_directory_and_is_cached() {
        let dir = crate::cache::tests::scratch_dir("fake-nvcc");
        let nvcc = Nvcc::at(&fake_nvcc(&dir), NvccOrigin::Override)
            .unwrap()
            .with_cache(CompileCache::in_memory());
        assert_eq!(nvcc.version(), CudaVersion::new(13, 0));
        assert_eq!(nvcc.release(), "13.0.88");
        let file = dir.join("k.cu");
        std::fs::write(&file, "__global__ void k() {}\n").unwrap();
        let src = Source::new(file.display().to_string(), "__global__ void k() {}\n");
        let (first, hit) = nvcc
            .compile_traced(&src, FlagSet::STRICT, Arch::new(9, 0))
            .unwrap();
        assert_eq!(hit, None);
        assert_eq!(first.front_end, FrontEnd::Nvcc);
        assert!(first.ptx.starts_with(".version 9.0"), "{}", first.ptx);
        // nvcc's scratch directory (its TMPDIR) is gone afterwards.
        let scratch = first.ptx.lines().nth(3).unwrap().trim_start_matches("// ");
        assert!(scratch.contains("mantissa-nvcc-"), "{scratch}");
        assert!(!Path::new(scratch).exists(), "{scratch} was left behind");
        let (again, hit) = nvcc
            .compile_traced(&src, FlagSet::STRICT, Arch::new(9, 0))
            .unwrap();
        assert_eq!(hit, Some(CacheHit::Memory));
        assert!(Arc::ptr_eq(&first, &again));
        let (_, hit) = nvcc
            .compile_traced(&src, FlagSet::FAST, Arch::new(9, 0))
            .unwrap();
        assert_eq!(hit, None, "another flag set is another entry");

        std::fs::write(&file, "FAIL\n").unwrap();
        let bad = Source::new(file.display().to_string(), "FAIL\n");
        let err = nvcc
            .compile_traced(&bad, FlagSet::DEFAULT, Arch::new(9, 0))
            .unwrap_err();
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.starts_with(&format!(
                "nvcc failed on {} (flag set default, sm_90, exit 1): ",
                file.display()
            )),
            "{msg}"
        );
        assert!(
            msg.contains("error: identifier \"FAIL\" is undefined (2 more lines in the log)"),
            "{msg}"
        );
        assert_eq!(err.log().map(|l| l.lines().count()), Some(3));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_or_broken_nvcc_is_one_line_with_the_install() {
        let missing = Nvcc::at(Path::new("/nonexistent/nvcc"), NvccOrigin::Override).unwrap_err();
        let msg = missing.to_string();
        assert!(
            msg.starts_with("nvcc at /nonexistent/nvcc does not work"),
            "{msg}"
        );
        assert!(
            msg.contains(NVCC_PIP_INSTALL) && !msg.contains('\n'),
            "{msg}"
        );
        let none = NvccUnavailable::NotFound {
            looked: vec!["/usr/local/cuda/bin/nvcc".into(), "/usr/bin/nvcc".into()],
        }
        .to_string();
        assert!(!none.contains('\n'), "{none}");
        assert!(none.contains(NVCC_PIP_INSTALL), "{none}");
        assert!(none.contains("set CUDA_HOME"), "{none}");
        let pinned = NvccUnavailable::NotAtOverride {
            path: "/nonexistent/nvcc".into(),
        }
        .to_string();
        assert!(
            pinned.starts_with("no nvcc at /nonexistent/nvcc (set by MANTISSA_NVCC)")
                && pinned.contains(NVCC_PIP_INSTALL),
            "{pinned}"
        );
    }

    #[test]
    fn options_put_target_lineinfo_and_switches_first() {
        let opts = Nvcc::options(FlagSet::STRICT, Arch::new(9, 0), &["-DN=4".to_string()]);
        assert_eq!(
            opts,
            [
                "-ptx",
                "-arch=sm_90",
                "-lineinfo",
                "--fmad=false",
                "--prec-div=true",
                "--prec-sqrt=true",
                "--ftz=false",
                "-DN=4"
            ]
        );
    }
}
