//! Where CUDA's command-line tools and pip wheels are: the one search for `ptxas`, `nvdisasm`
//! and `cuobjdump` ([`cuda_tool`]), and for the site-packages directories the CUDA 13 pip wheels
//! install into ([`wheel_subdirs`]).
//!
//! It lives here, the lowest crate that runs the tools (ptxas in [`crate::ptxas`], nvdisasm in
//! [`crate::sass`]), and `mantissa-gpu`, which depends on this crate, uses it for NVRTC's and
//! nvcc's wheels too (`mantissa_gpu::cuda_tool` is this function).
//!
//! A tool is looked for, in order (the first executable file wins):
//!
//! 1. the directory of `$MANTISSA_NVCC`: the tools of the toolkit whose nvcc is pinned;
//! 2. `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`;
//! 3. every directory of `PATH`;
//! 4. the pip wheels' `nvidia/cu13/bin` under the active Python's site-packages and
//!    `$VIRTUAL_ENV` (`nvidia-cuda-nvcc` puts ptxas beside nvcc there, `nvidia-cuda-nvdisasm`
//!    and `nvidia-cuda-cuobjdump` their tools); Python is asked only when 1–3 have nothing;
//! 5. `../bin` of each `LD_LIBRARY_PATH` entry (the wheel's `nvidia/cu13/lib` holding
//!    libnvrtc, when Python is not the one that installed it).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A CUDA command-line tool (`ptxas`, `nvdisasm`, `cuobjdump`) by name, searched as the module
/// docs say; `None` when no place has an executable file of that name.
pub fn cuda_tool(name: &str) -> Option<PathBuf> {
    find_tool(name, &|var| std::env::var_os(var), &|| {
        wheel_subdirs(&["bin"])
    })
}

/// [`cuda_tool`] with the environment read through `env` and the wheels' `bin` directories
/// given by `wheel_bins` (asked only when the places before them have no `name`: it runs
/// Python).
pub(crate) fn find_tool(
    name: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
    wheel_bins: &dyn Fn() -> Vec<PathBuf>,
) -> Option<PathBuf> {
    let (before, after) = tool_dirs(env);
    let found = |dirs: &[PathBuf]| dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p));
    found(&before)
        .or_else(|| found(&wheel_bins()))
        .or_else(|| found(&after))
}

/// Every place [`find_tool`] looks for `name`, in order and without repeats, the wheels' `bin`
/// directories given: the order the tests check (both read [`tool_dirs`]).
#[cfg(test)]
fn tool_candidates(
    name: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
    wheel_bins: &[PathBuf],
) -> Vec<PathBuf> {
    let (before, after) = tool_dirs(env);
    let mut out: Vec<PathBuf> = Vec::new();
    for d in before.iter().chain(wheel_bins).chain(&after) {
        let p = d.join(name);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The directories searched before the wheels (1–3 of the module docs) and after them (5).
fn tool_dirs(env: &dyn Fn(&str) -> Option<OsString>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let mut before: Vec<PathBuf> = Vec::new();
    if let Some(nvcc) = var("MANTISSA_NVCC") {
        before.extend(Path::new(&nvcc).parent().map(Path::to_path_buf));
    }
    for root in ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(|v| var(v)) {
        before.push(PathBuf::from(root).join("bin"));
    }
    before.push(PathBuf::from("/usr/local/cuda/bin"));
    if let Some(path) = var("PATH") {
        // An empty entry means the working directory to a shell; a tool is not taken from there.
        before.extend(std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()));
    }
    let after: Vec<PathBuf> = var("LD_LIBRARY_PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| d.join("../bin"))
                .collect()
        })
        .unwrap_or_default();
    (before, after)
}

/// A file this process may run.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `nvidia/cu13/<sub...>` under every site-packages directory of the active Python and of the
/// active virtual environment ([`site_packages`]), in that order, without repeats: where the
/// CUDA 13 pip wheels put their files (`lib` for NVRTC, `bin` for nvcc, ptxas and nvdisasm).
pub fn wheel_subdirs(sub: &[&str]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for site in site_packages() {
        let mut dir = site.join("nvidia").join("cu13");
        for part in sub {
            dir = dir.join(part);
        }
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The site-packages directories of the active Python (system and user) and of `$VIRTUAL_ENV`,
/// in that order: the one search for Python's directories in mantissa. Python is asked once per
/// process; its answer does not change while we run.
pub fn site_packages() -> Vec<PathBuf> {
    static SITES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    SITES
        .get_or_init(|| {
            let mut sites = python_site_dirs();
            if let Some(venv) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
                sites.extend(venv_site_dirs(Path::new(&venv)));
            }
            sites
        })
        .clone()
}

/// Asks `python3` for its site-packages directories (system and user). No Python, or one that
/// fails, gives none: the other places are still searched.
fn python_site_dirs() -> Vec<PathBuf> {
    const SCRIPT: &str =
        "import site\nfor d in site.getsitepackages() + [site.getusersitepackages()]: print(d)";
    let out = std::process::Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// `lib/python3.*/site-packages` of a virtual environment.
fn venv_site_dirs(venv: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
                .map(|e| e.path().join("site-packages"))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh scratch directory of this process.
    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mantissa-tools-{tag}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn virtual_environments_are_searched_under_lib_python() {
        let venv = scratch("venv");
        std::fs::create_dir_all(venv.join("lib/python3.11/site-packages")).unwrap();
        std::fs::create_dir_all(venv.join("lib/other")).unwrap();
        assert_eq!(
            venv_site_dirs(&venv),
            [venv.join("lib/python3.11/site-packages")]
        );
        std::fs::remove_dir_all(&venv).unwrap();
    }

    #[test]
    fn tools_are_looked_for_in_the_toolkit_then_path_then_the_wheels() {
        let env = |var: &str| match var {
            "CUDA_HOME" => Some("/opt/cuda".into()),
            "PATH" => Some("/usr/bin::/opt/cuda/bin".into()),
            _ => None,
        };
        let wheels = [PathBuf::from("/site/nvidia/cu13/bin")];
        assert_eq!(
            tool_candidates("nvdisasm", &env, &wheels),
            [
                "/opt/cuda/bin/nvdisasm",
                "/usr/local/cuda/bin/nvdisasm",
                "/usr/bin/nvdisasm",
                "/site/nvidia/cu13/bin/nvdisasm"
            ]
            .map(PathBuf::from)
        );
        // A pinned nvcc's directory first; the library path's `../bin` last.
        let pinned = |var: &str| match var {
            "MANTISSA_NVCC" => Some("/pinned/bin/nvcc".into()),
            "LD_LIBRARY_PATH" => Some("/site/nvidia/cu13/lib".into()),
            _ => env(var),
        };
        let all = tool_candidates("ptxas", &pinned, &wheels);
        assert_eq!(all.first(), Some(&PathBuf::from("/pinned/bin/ptxas")));
        assert_eq!(
            all.last(),
            Some(&PathBuf::from("/site/nvidia/cu13/lib/../bin/ptxas"))
        );
        let dir = scratch("tool");
        let tool = dir.join("nvdisasm");
        std::fs::write(&tool, b"#!/bin/sh\n").unwrap();
        assert!(!is_executable(&tool), "not executable yet");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(is_executable(&tool));
        assert!(!is_executable(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
