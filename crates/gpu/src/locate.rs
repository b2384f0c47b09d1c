//! Finding libnvrtc where users have it, and loading it before cudarc does.
//!
//! cudarc opens NVRTC by name (`libnvrtc.so`, `libnvrtc.so.13`, ...) through the ordinary dynamic
//! loader search, so without help NVRTC is found only when its directory is on
//! `LD_LIBRARY_PATH` or in the system's loader cache. Users more often have it from the pip wheel
//! (`pip install nvidia-cuda-nvrtc==13.0.88`, whose library sits in `nvidia/cu13/lib` under
//! site-packages) or from a toolkit (`$CUDA_HOME/lib64`, `/usr/local/cuda/lib64`). So the search
//! is, in order:
//!
//! 1. the loader's own search (what cudarc does; `LD_LIBRARY_PATH` wins, as users expect);
//! 2. `nvidia/cu13/lib` under the active Python's site-packages (`python3`'s
//!    `site.getsitepackages()` and user site) and under `$VIRTUAL_ENV`;
//! 3. `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `$CUDA_ROOT/lib64`, `/usr/local/cuda/lib64`.
//!
//! A library found in 2 or 3 is opened by its full path with `RTLD_GLOBAL` before cudarc first
//! touches NVRTC. The dynamic loader matches later opens by name against the sonames of libraries
//! already loaded, so cudarc's own open by name (`libnvrtc.so.13`) then returns this library.
//! libnvrtc opens its builtins library (`libnvrtc-builtins.so.13.0`) by name at the first compile
//! and carries no run path, so the builtins from the same directory are opened first in the same
//! way. The search runs once per process: a loaded library stays loaded.

use crate::error::NvrtcUnavailable;
use std::ffi::c_void;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the libnvrtc in use was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvrtcOrigin {
    /// The dynamic loader's own search: `LD_LIBRARY_PATH`, the loader cache, system directories.
    LoaderPath,
    /// The `nvidia-cuda-nvrtc` pip wheel under a Python site-packages directory.
    PipWheel,
    /// A CUDA toolkit directory (`$CUDA_HOME`, `$CUDA_PATH`, `$CUDA_ROOT` or `/usr/local/cuda`).
    Toolkit,
}

impl fmt::Display for NvrtcOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NvrtcOrigin::LoaderPath => "the library path",
            NvrtcOrigin::PipWheel => "the pip wheel",
            NvrtcOrigin::Toolkit => "the CUDA toolkit",
        })
    }
}

/// The libnvrtc file this process uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrtcLibrary {
    /// The file the loader opened (as the loader names it; for the loader's own search, the path
    /// it resolved).
    pub path: PathBuf,
    /// How it was found.
    pub origin: NvrtcOrigin,
}

impl fmt::Display for NvrtcLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (from {})", self.path.display(), self.origin)
    }
}

/// Finds and loads libnvrtc once per process (see the module docs for the order); later calls
/// return the first answer.
pub fn nvrtc_library() -> Result<NvrtcLibrary, NvrtcUnavailable> {
    static FOUND: OnceLock<Result<NvrtcLibrary, NvrtcUnavailable>> = OnceLock::new();
    FOUND.get_or_init(find_and_load).clone()
}

fn find_and_load() -> Result<NvrtcLibrary, NvrtcUnavailable> {
    // SAFETY (both calls): only dlopens libnvrtc by cudarc's names, running its initialisers, as
    // any use of NVRTC does.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Ok(NvrtcLibrary {
            path: loaded_path().unwrap_or_else(|| PathBuf::from("libnvrtc (path unknown)")),
            origin: NvrtcOrigin::LoaderPath,
        });
    }
    let mut looked = Vec::new();
    let places = wheel_dirs()
        .into_iter()
        .map(|d| (d, NvrtcOrigin::PipWheel))
        .chain(
            toolkit_dirs()
                .into_iter()
                .map(|d| (d, NvrtcOrigin::Toolkit)),
        );
    for (dir, origin) in places {
        let Some(lib) = nvrtc_in(&dir) else {
            looked.push(dir);
            continue;
        };
        preload(&lib, &dir)?;
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(NvrtcUnavailable::NotLoadable {
                path: lib,
                message: "cudarc does not find it by name after loading it (its soname is not one cudarc opens)".into(),
            });
        }
        return Ok(NvrtcLibrary {
            path: loaded_path().unwrap_or(lib),
            origin,
        });
    }
    Err(NvrtcUnavailable::NotFound { looked })
}

/// Opens `lib` and the builtins library beside it, by full path, globally and for good.
fn preload(lib: &Path, dir: &Path) -> Result<(), NvrtcUnavailable> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    static KEPT: OnceLock<Vec<Library>> = OnceLock::new();
    let open = |path: &Path| {
        // SAFETY: opening NVRTC's own libraries runs their initialisers, as using NVRTC does.
        unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| {
            NvrtcUnavailable::NotLoadable {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        })
    };
    // Builtins first: libnvrtc looks for them by name only when it compiles, but a directory
    // whose builtins cannot be loaded is better refused now, with the file named.
    let mut kept = Vec::new();
    if let Some(builtins) = builtins_in(dir) {
        kept.push(open(&builtins)?);
    }
    kept.push(open(lib)?);
    // Never unloaded: cudarc keeps function pointers into libnvrtc for the life of the process.
    // Only the first caller reaches here (the search runs once), so the set is always taken.
    let _ = KEPT.set(kept);
    Ok(())
}

/// The path of the libnvrtc that cudarc has loaded, as the dynamic loader reports it.
fn loaded_path() -> Option<PathBuf> {
    // SAFETY: cudarc's library is present (checked by the callers); `dladdr` only reads the
    // loader's tables for an address inside it.
    unsafe {
        let lib = cudarc::nvrtc::sys::culib();
        let sym: libloading::Symbol<*const c_void> = lib.get(b"nvrtcVersion\0").ok()?;
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(*sym, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_fname);
        Some(PathBuf::from(name.to_string_lossy().into_owned()))
    }
}

/// The libnvrtc file in `dir` under one of the names cudarc opens, if any.
fn nvrtc_in(dir: &Path) -> Option<PathBuf> {
    cudarc::get_lib_name_candidates("nvrtc")
        .into_iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// The builtins library in `dir`: the shortest `libnvrtc-builtins.so.*` name, which is the one
/// libnvrtc asks for (`.so.13.0`; longer names are the same file or the `.alt` variant).
fn builtins_in(dir: &Path) -> Option<PathBuf> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libnvrtc-builtins.so."))
        .collect();
    names.sort_by_key(|n| (n.len(), n.clone()));
    names.first().map(|n| dir.join(n))
}

/// `nvidia/cu13/lib` under every site-packages directory of the active Python and the active
/// virtual environment, in that order, without repeats.
fn wheel_dirs() -> Vec<PathBuf> {
    wheel_subdirs(&["lib"])
}

/// `nvidia/cu13/<sub...>` under every site-packages directory of the active Python and of the
/// active virtual environment ([`site_packages`]), in that order, without repeats: where the
/// CUDA 13 pip wheels put their files (`lib` for NVRTC, `bin` for nvcc).
pub(crate) fn wheel_subdirs(sub: &[&str]) -> Vec<PathBuf> {
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
/// in that order: the one search for Python's directories in this crate (NVRTC and nvcc both use
/// it). Python is asked once per process; its answer does not change while we run.
pub(crate) fn site_packages() -> Vec<PathBuf> {
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
/// fails, gives none: the toolkit places are still searched.
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

/// A CUDA command-line tool (`ptxas`, `nvdisasm`, `cuobjdump`) by name: `$CUDA_HOME/bin`,
/// `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, each directory of `PATH`, then the pip wheels'
/// `nvidia/cu13/bin` (where `nvidia-cuda-nvcc`, `nvidia-cuda-nvdisasm` and
/// `nvidia-cuda-cuobjdump` put them). The same places, in the same order, as nvcc is looked for.
pub fn cuda_tool(name: &str) -> Option<PathBuf> {
    tool_candidates(name, &|var| std::env::var_os(var), &wheel_subdirs(&["bin"]))
        .into_iter()
        .find(|p| is_executable(p))
}

/// Where [`cuda_tool`] looks for `name`, in order (the environment read through `env`).
fn tool_candidates(
    name: &str,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    wheel_bins: &[PathBuf],
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| env(v))
        .filter(|v| !v.is_empty())
        .map(|root| PathBuf::from(root).join("bin"))
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    if let Some(path) = env("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()));
    }
    dirs.extend(wheel_bins.iter().cloned());
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let p = d.join(name);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A file this process may run.
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The toolkit library directories, in search order.
fn toolkit_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .map(|root| PathBuf::from(root).join("lib64"))
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.dedup();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::tests::scratch_dir;

    #[test]
    fn libraries_are_recognised_by_the_names_cudarc_opens() {
        let dir = scratch_dir("locate");
        assert_eq!(nvrtc_in(&dir), None);
        assert_eq!(builtins_in(&dir), None);
        for name in [
            "libnvrtc.alt.so.13",
            "libnvrtc-builtins.alt.so.13.0",
            "libnvrtc-builtins.so.13.0.88",
            "libnvrtc-builtins.so.13.0",
        ] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        assert_eq!(
            nvrtc_in(&dir),
            None,
            "the .alt variant is not what cudarc opens"
        );
        assert_eq!(
            builtins_in(&dir),
            Some(dir.join("libnvrtc-builtins.so.13.0"))
        );
        std::fs::write(dir.join("libnvrtc.so.13"), b"").unwrap();
        assert_eq!(nvrtc_in(&dir), Some(dir.join("libnvrtc.so.13")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn virtual_environments_are_searched_under_lib_python() {
        let venv = scratch_dir("venv");
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
        let dir = scratch_dir("tool");
        let tool = dir.join("nvdisasm");
        std::fs::write(&tool, b"#!/bin/sh\n").unwrap();
        assert!(!is_executable(&tool), "not executable yet");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(is_executable(&tool));
        assert!(!is_executable(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn toolkit_places_end_with_usr_local_cuda() {
        let dirs = toolkit_dirs();
        assert_eq!(dirs.last(), Some(&PathBuf::from("/usr/local/cuda/lib64")));
        assert!(dirs.iter().all(|d| d.ends_with("lib64")));
    }

    #[test]
    fn nvrtc_compiler_names_the_library_it_loaded() {
        let Some(c) = crate::testing::require_nvrtc_or_skip() else {
            return;
        };
        let lib = c.library();
        let name = lib.path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("libnvrtc.so"), "{lib}");
        assert!(lib.path.is_file(), "{lib}");
        assert_eq!(nvrtc_library().as_ref(), Ok(lib), "searched once");
    }
}
