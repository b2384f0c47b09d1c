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

// The one search for Python's site-packages and for CUDA's command-line tools is
// `mantissa_ptx::tools` (ptx runs ptxas and nvdisasm, and this crate depends on it): NVRTC's
// and nvcc's wheels are found there, and `cuda_tool` is that crate's.
pub use mantissa_ptx::tools::cuda_tool;
pub(crate) use mantissa_ptx::tools::{is_executable, wheel_subdirs};

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
