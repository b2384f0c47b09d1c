//! ptxas, when installed: check that PTX assembles and read register use and spills (`-v`).
//!
//! ptxas is optional (it ships in the `nvidia-cuda-nvcc` wheel, not with NVRTC), so everything
//! here returns [`PtxasError::NotFound`] rather than failing when it is absent.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Names the ptxas binary explicitly; otherwise it is looked up beside nvcc ([`find`]).
pub const PTXAS_ENV: &str = "MANTISSA_PTXAS";

/// Why ptxas gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxasError {
    /// No ptxas in any place looked at: register counts are then unavailable, not an error of
    /// the analysis.
    #[error("ptxas not found beside an nvcc (searched $MANTISSA_NVCC's directory, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH and the pip wheel's nvidia/cu13/bin): set {PTXAS_ENV}, or `pip install nvidia-cuda-nvcc==13.0.88`")]
    NotFound,
    /// ptxas was found but could not be started or waited for.
    #[error("cannot run {path}: {message}")]
    Run {
        /// The ptxas binary tried.
        path: String,
        /// The operating system's reason.
        message: String,
    },
    /// ptxas refused the PTX; `log` is its full output.
    #[error("ptxas rejected the PTX: {}", .log.lines().next().unwrap_or("no message"))]
    Rejected {
        /// Everything ptxas printed.
        log: String,
    },
}

/// Register use and spills of one function, from `ptxas -v`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resources {
    /// The function's symbol name, as ptxas reports it.
    pub function: String,
    /// Registers per thread; `None` when ptxas printed no "Used N registers" line for it.
    pub registers: Option<u32>,
    /// Bytes of local memory per thread for the stack frame.
    pub stack_frame_bytes: u32,
    /// Bytes per thread spilled from registers to local memory: a sign of register pressure.
    pub spill_store_bytes: u32,
    /// Bytes per thread loaded back from spills.
    pub spill_load_bytes: u32,
}

/// Finds ptxas: `$MANTISSA_PTXAS` when set (that file only); otherwise as every CUDA tool is
/// found ([`crate::tools::cuda_tool`]): beside the nvcc `$MANTISSA_NVCC` pins, in the toolkit
/// (`$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`), on `PATH`, in the pip wheel
/// (`nvidia/cu13/bin`, where `pip install nvidia-cuda-nvcc` puts ptxas beside nvcc), last in
/// `../bin` of each `LD_LIBRARY_PATH` entry.
pub fn find() -> Option<PathBuf> {
    find_with(&|name| std::env::var_os(name), &|| {
        crate::tools::wheel_subdirs(&["bin"])
    })
}

/// [`find`] with the environment read through `env` and the wheels' `bin` directories given by
/// `wheel_bins` (asked only when nothing before them has ptxas: it runs Python).
fn find_with(
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    wheel_bins: &dyn Fn() -> Vec<PathBuf>,
) -> Option<PathBuf> {
    if let Some(p) = env(PTXAS_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    crate::tools::find_tool("ptxas", env, wheel_bins)
}

/// Assembles `ptx` for `arch` (`sm_90`) with `-v`, returning its per-function resources.
pub fn assemble(ptx: &str, arch: &str) -> Result<Vec<Resources>, PtxasError> {
    let path = find().ok_or(PtxasError::NotFound)?;
    assemble_with(&path, ptx, arch)
}

/// As [`assemble`], with an explicit ptxas.
pub fn assemble_with(ptxas: &Path, ptx: &str, arch: &str) -> Result<Vec<Resources>, PtxasError> {
    let (_, log) = cubin_with(ptxas, ptx, arch, &["-v"])?;
    Ok(parse_verbose(&log))
}

/// Assembles `ptx` for `arch` with `ptxas`, passing `extra` options (`-v`, `-lineinfo`), and
/// returns the cubin's bytes and everything ptxas printed.
pub fn cubin_with(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    extra: &[&str],
) -> Result<(Vec<u8>, String), PtxasError> {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run_err = |message: String| PtxasError::Run {
        path: ptxas.display().to_string(),
        message,
    };
    // A unique scratch directory: concurrent tests and runs must not share the input file.
    let dir = std::env::temp_dir().join(format!(
        "mantissa-ptxas-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| run_err(e.to_string()))?;
    let input = dir.join("in.ptx");
    let output = dir.join("out.cubin");
    let outcome = (|| {
        std::fs::write(&input, ptx).map_err(|e| run_err(e.to_string()))?;
        let out = Command::new(ptxas)
            .args(extra)
            .arg(format!("-arch={arch}"))
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .output()
            .map_err(|e| run_err(e.to_string()))?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            // The scratch file's name means nothing to the user; its line numbers do.
            let log = log.replace(&input.display().to_string(), "<ptx>");
            return Err(PtxasError::Rejected { log });
        }
        let cubin = std::fs::read(&output).map_err(|e| run_err(e.to_string()))?;
        Ok((cubin, log))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Reads `ptxas -v` output ("Function properties for NAME", then the stack/spill line and,
/// for entries, "Used N registers").
pub fn parse_verbose(log: &str) -> Vec<Resources> {
    let mut out: Vec<Resources> = Vec::new();
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let at = line.find(what)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            out.push(Resources {
                function: name.trim().to_string(),
                registers: None,
                stack_frame_bytes: 0,
                spill_store_bytes: 0,
                spill_load_bytes: 0,
            });
        } else if let Some(last) = out.last_mut() {
            if line.contains("bytes stack frame") {
                last.stack_frame_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
                last.spill_store_bytes = number_before(line, "bytes spill stores").unwrap_or(0);
                last.spill_load_bytes = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains(" registers") {
                last.registers = line
                    .split("Used ")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse().ok());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'calls' for 'sm_90'\n\
ptxas info    : Function properties for calls\n    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
ptxas info    : Used 28 registers, used 0 barriers\n\
ptxas info    : Compile time = 34.043 ms\n\
ptxas info    : Function properties for _Z6scaleddd\n    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        assert_eq!(
            parse_verbose(log),
            [
                Resources {
                    function: "calls".into(),
                    registers: Some(28),
                    stack_frame_bytes: 0,
                    spill_store_bytes: 8,
                    spill_load_bytes: 4
                },
                Resources {
                    function: "_Z6scaleddd".into(),
                    registers: None,
                    stack_frame_bytes: 16,
                    spill_store_bytes: 0,
                    spill_load_bytes: 0
                }
            ]
        );
    }

    /// `<tmp>/<tag>/bin` holding an `nvcc` and a `ptxas` (empty executable files: `find` only
    /// looks for them); its parent is the toolkit's root.
    fn toolkit(tag: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir()
            .join(format!("mantissa-ptxas-find-{tag}-{}", std::process::id()))
            .join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        for tool in ["nvcc", "ptxas"] {
            std::fs::write(dir.join(tool), "").unwrap();
            std::fs::set_permissions(dir.join(tool), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        dir
    }

    fn remove(bin: &Path) {
        std::fs::remove_dir_all(bin.parent().unwrap()).ok();
    }

    /// A toolkit in `/usr/local/cuda` comes before `PATH` and the wheel, as for nvcc.
    fn system_toolkit() -> bool {
        Path::new("/usr/local/cuda/bin/ptxas").is_file()
    }

    /// The reported bug: the wheel's nvcc is found and used while ptxas, beside it, was not.
    #[test]
    fn ptxas_is_found_beside_the_wheels_nvcc() {
        if system_toolkit() {
            return;
        }
        let wheel = toolkit("wheel");
        let none = |_: &str| -> Option<std::ffi::OsString> { None };
        let only_path =
            |name: &str| (name == "PATH").then(|| "/nonexistent-a:/nonexistent-b".into());
        assert_eq!(
            find_with(&only_path, &|| vec![wheel.clone()]),
            Some(wheel.join("ptxas"))
        );
        assert_eq!(
            find_with(&none, &|| vec![wheel.clone()]),
            Some(wheel.join("ptxas"))
        );
        remove(&wheel);
    }

    #[test]
    fn ptxas_follows_the_nvcc_search_order() {
        let pinned = toolkit("pinned");
        let home = toolkit("home");
        let on_path = toolkit("path");
        let wheel = toolkit("wheel2");
        let env = |name: &str| -> Option<std::ffi::OsString> {
            match name {
                "MANTISSA_NVCC" => Some(pinned.join("nvcc").into()),
                "CUDA_HOME" => Some(home.parent().unwrap().into()),
                "PATH" => Some(on_path.clone().into()),
                _ => None,
            }
        };
        let wheels = || vec![wheel.clone()];
        // $MANTISSA_NVCC's directory first, then $CUDA_HOME/bin.
        assert_eq!(find_with(&env, &wheels), Some(pinned.join("ptxas")));
        let no_pin = |name: &str| {
            if name == "MANTISSA_NVCC" {
                None
            } else {
                env(name)
            }
        };
        assert_eq!(find_with(&no_pin, &wheels), Some(home.join("ptxas")));
        // Without a toolkit, PATH before the wheel.
        let path_only = |name: &str| if name == "PATH" { env(name) } else { None };
        if !system_toolkit() {
            assert_eq!(find_with(&path_only, &wheels), Some(on_path.join("ptxas")));
        }
        // $MANTISSA_PTXAS names the file and nothing else.
        let explicit = |name: &str| -> Option<std::ffi::OsString> {
            (name == PTXAS_ENV).then(|| "/nonexistent/ptxas".into())
        };
        assert_eq!(find_with(&explicit, &wheels), None);
        for d in [pinned, home, on_path, wheel] {
            remove(&d);
        }
    }

    /// On a machine with the nvcc wheel (CI installs it), ptxas is found with no variable set.
    #[test]
    fn the_installed_wheels_ptxas_is_found() {
        let wheel_bins = || crate::tools::wheel_subdirs(&["bin"]);
        if wheel_bins().iter().any(|d| d.join("nvcc").is_file()) {
            let found = find_with(&|_| None, &wheel_bins).expect("ptxas beside the wheel's nvcc");
            assert!(
                system_toolkit() || found.ends_with("nvidia/cu13/bin/ptxas"),
                "{}",
                found.display()
            );
        }
    }
}
