//! PTX compiled for the device by the driver's JIT linker (`cuLink*`), kept as cubins in memory
//! and on disk, keyed by the hash of the PTX and of the device and driver that compiled it.
//!
//! Why the linker and not `cuModuleLoadData` on the PTX: loading PTX JIT-compiles it and keeps
//! nothing, so every load of a rewritten program pays the JIT again (about 1 s for a 5,000
//! instruction kernel). `cuLinkComplete` hands back the cubin the same JIT makes (the driver's
//! default options, the context's device), which loads in milliseconds and can be stored. The
//! link runs on any thread with the context bound, so independent PTX compile on several CPU
//! threads at once ([`Gpu::jit_many`]).
//!
//! A disk entry stores its full key and its PTX, and a read checks both, so a hash collision or a
//! damaged file costs a recompile, never a wrong binary.

use crate::cache::{atomic_write, cache_root, fnv1a64};
use crate::error::{catch, DriverStatus, GpuError};
use crate::gpu::Gpu;
use crate::gpu::Module;
use crate::lock;
use cudarc::driver::sys::{CUjitInputType, CUjit_option, CUlinkState, CUresult};
use cudarc::driver::CudaContext;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Cubins kept in memory (least recently used out).
pub const JIT_MEMORY_CAPACITY: usize = 64;

const MAGIC: &str = "mantissa-jit 1";

/// Cubins by key, and the keys from least to most recently used.
type Memory = (HashMap<String, Arc<Vec<u8>>>, VecDeque<String>);

/// Compiled PTX by key, in memory (bounded) and optionally under a directory.
#[derive(Debug)]
pub struct JitCache {
    memory: Mutex<Memory>,
    dir: Option<PathBuf>,
}

impl JitCache {
    /// A cache under `dir` (`None`: memory only).
    pub fn new(dir: Option<PathBuf>) -> Self {
        JitCache {
            memory: Mutex::new((HashMap::new(), VecDeque::new())),
            dir,
        }
    }

    /// The cache under `$MANTISSA_CACHE/jit` (see [`cache_root`]).
    pub fn default_location() -> Self {
        Self::new(cache_root().map(|r| r.join("jit")))
    }

    /// The key of `ptx` compiled for `target` (device and driver, in words).
    pub fn key(target: &str, ptx: &str) -> String {
        format!(
            "{:016x}-{:016x}",
            fnv1a64(target.as_bytes()),
            fnv1a64(ptx.as_bytes())
        )
    }

    fn file(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{key}.cubin")))
    }

    /// The cubin of `ptx` for `target`, from memory, disk, or `compile` (whose result is kept).
    pub fn get_or_compile(
        &self,
        target: &str,
        ptx: &str,
        compile: impl FnOnce() -> Result<Vec<u8>, GpuError>,
    ) -> Result<Arc<Vec<u8>>, GpuError> {
        let key = Self::key(target, ptx);
        if let Some(hit) = self.memory_get(&key) {
            return Ok(hit);
        }
        if let Some(cubin) = self.file(&key).and_then(|f| read_entry(&f, target, ptx)) {
            let cubin = Arc::new(cubin);
            self.memory_put(&key, cubin.clone());
            return Ok(cubin);
        }
        let cubin = Arc::new(compile()?);
        self.memory_put(&key, cubin.clone());
        if let Some(f) = self.file(&key) {
            // A cache that cannot be written is a slower cache, not an error.
            let _ = atomic_write(&f, &entry_bytes(target, ptx, &cubin));
        }
        Ok(cubin)
    }

    /// Whether `ptx` for `target` is in memory or on disk, without compiling.
    pub fn contains(&self, target: &str, ptx: &str) -> bool {
        let key = Self::key(target, ptx);
        self.memory_get(&key).is_some() || self.file(&key).is_some_and(|f| f.exists())
    }

    fn memory_get(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        let mut m = lock(&self.memory);
        let hit = m.0.get(key).cloned()?;
        m.1.retain(|k| k != key);
        m.1.push_back(key.to_string());
        Some(hit)
    }

    fn memory_put(&self, key: &str, cubin: Arc<Vec<u8>>) {
        let mut m = lock(&self.memory);
        if m.0.insert(key.to_string(), cubin).is_none() {
            m.1.push_back(key.to_string());
        }
        while m.1.len() > JIT_MEMORY_CAPACITY {
            if let Some(old) = m.1.pop_front() {
                m.0.remove(&old);
            }
        }
    }
}

/// A disk entry: magic, target, PTX length and PTX, then the cubin.
fn entry_bytes(target: &str, ptx: &str, cubin: &[u8]) -> Vec<u8> {
    let mut out = format!("{MAGIC}\n{target}\n{}\n", ptx.len()).into_bytes();
    out.extend_from_slice(ptx.as_bytes());
    out.extend_from_slice(cubin);
    out
}

/// The cubin of a disk entry when it is for `target` and `ptx` exactly.
fn read_entry(path: &Path, target: &str, ptx: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let header = format!("{MAGIC}\n{target}\n{}\n", ptx.len());
    let rest = bytes.strip_prefix(header.as_bytes())?;
    let cubin = rest.strip_prefix(ptx.as_bytes())?;
    cubin.starts_with(b"\x7fELF").then(|| cubin.to_vec())
}

/// Runs the driver's JIT linker on `ptx` with the context bound to this thread.
fn link_ptx(ctx: &CudaContext, name: &str, ptx: &str) -> Result<Vec<u8>, GpuError> {
    let fail = |status: CUresult, log: &[u8]| {
        let log = String::from_utf8_lossy(log.split(|&b| b == 0).next().unwrap_or(&[]))
            .trim()
            .to_string();
        GpuError::Jit {
            module: name.to_string(),
            status: DriverStatus(status),
            log,
        }
    };
    ctx.bind_to_thread()
        .map_err(|e| GpuError::driver("binding the context to a JIT thread", e))?;
    let linked = catch(|| {
        let mut log = vec![0u8; 1 << 16];
        let mut options = [
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut std::ffi::c_void; 2] =
            [log.as_mut_ptr().cast(), log.len() as *mut std::ffi::c_void];
        let mut state: CUlinkState = std::ptr::null_mut();
        let mut image = ptx.as_bytes().to_vec();
        image.push(0);
        // SAFETY: the option arrays and the log buffer outlive the link state (destroyed below);
        // the image is NUL-terminated PTX; the cubin is copied out before cuLinkDestroy frees it.
        unsafe {
            let r = cudarc::driver::sys::cuLinkCreate_v2(
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            );
            if r != CUresult::CUDA_SUCCESS {
                return Err(fail(r, &log));
            }
            let r = cudarc::driver::sys::cuLinkAddData_v2(
                state,
                CUjitInputType::CU_JIT_INPUT_PTX,
                image.as_mut_ptr().cast(),
                image.len(),
                c"mantissa.ptx".as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            let mut cubin: *mut std::ffi::c_void = std::ptr::null_mut();
            let mut size = 0usize;
            let r = if r == CUresult::CUDA_SUCCESS {
                cudarc::driver::sys::cuLinkComplete(state, &mut cubin, &mut size)
            } else {
                r
            };
            let out = if r == CUresult::CUDA_SUCCESS && !cubin.is_null() {
                Ok(std::slice::from_raw_parts(cubin as *const u8, size).to_vec())
            } else {
                Err(fail(r, &log))
            };
            cudarc::driver::sys::cuLinkDestroy(state);
            out
        }
    });
    linked.map_err(|message| GpuError::Panicked {
        what: format!("JIT-linking module {name}"),
        message,
    })?
}

impl Gpu {
    /// What a cubin of this device's JIT depends on besides the PTX: device and driver.
    fn jit_target(&self) -> String {
        format!(
            "{} {} driver {}",
            self.info().name,
            self.arch(),
            self.info().driver
        )
    }

    /// The cubin of `ptx` for this device: from the JIT cache, or JIT-compiled now.
    pub fn jit(&self, name: &str, ptx: &str) -> Result<Arc<Vec<u8>>, GpuError> {
        self.check_ptx(name, ptx)?;
        self.jit
            .get_or_compile(&self.jit_target(), ptx, || link_ptx(&self.ctx, name, ptx))
    }

    /// [`Gpu::jit`] of several PTX texts, compiled on up to `threads` CPU threads at once (each
    /// with the context bound); results in the order given. Texts already cached are not
    /// compiled again, and equal texts are compiled once.
    pub fn jit_many(
        &self,
        items: &[(&str, &str)],
        threads: usize,
    ) -> Vec<Result<Arc<Vec<u8>>, GpuError>> {
        let target = self.jit_target();
        let todo: Vec<usize> = {
            let mut seen = std::collections::HashSet::new();
            (0..items.len())
                .filter(|&i| !self.jit.contains(&target, items[i].1) && seen.insert(items[i].1))
                .collect()
        };
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads.max(1).min(todo.len()) {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = todo.get(k) else { break };
                    // Errors come back in the ordered pass below, which compiles again and
                    // reports them; a success here is cached.
                    let _ = self.jit(items[i].0, items[i].1);
                });
            }
        });
        items
            .iter()
            .map(|(name, ptx)| self.jit(name, ptx))
            .collect()
    }

    /// Loads `ptx` through the JIT cache: a cubin (compiled once per PTX text, device and
    /// driver), with the PTX kept for argument and symbol checks.
    pub fn load_jitted(&self, name: &str, ptx: &str) -> Result<Module, GpuError> {
        let cubin = self.jit(name, ptx)?;
        self.load_cubin(name, &cubin, Some(ptx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn elf(tag: u8) -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        v.push(tag);
        v
    }

    #[test]
    fn compiles_once_per_text_and_target_and_reads_back_from_disk() {
        let dir = std::env::temp_dir().join(format!("mantissa-jit-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let calls = Cell::new(0);
        let compile = |tag| {
            calls.set(calls.get() + 1);
            Ok(elf(tag))
        };
        let cache = JitCache::new(Some(dir.clone()));
        let a = cache
            .get_or_compile("sm_90 driver 13.0", ".entry a", || compile(1))
            .unwrap();
        let again = cache
            .get_or_compile("sm_90 driver 13.0", ".entry a", || compile(9))
            .unwrap();
        assert_eq!(
            (a.as_slice(), again.as_slice(), calls.get()),
            (&elf(1)[..], &elf(1)[..], 1)
        );
        // Another target or another text is another entry.
        cache
            .get_or_compile("sm_80 driver 13.0", ".entry a", || compile(2))
            .unwrap();
        cache
            .get_or_compile("sm_90 driver 13.0", ".entry b", || compile(3))
            .unwrap();
        assert_eq!(calls.get(), 3);
        // A fresh cache (a new process) reads the disk entries.
        let fresh = JitCache::new(Some(dir.clone()));
        assert!(fresh.contains("sm_90 driver 13.0", ".entry b"));
        let b = fresh
            .get_or_compile("sm_90 driver 13.0", ".entry b", || compile(7))
            .unwrap();
        assert_eq!((b.as_slice(), calls.get()), (&elf(3)[..], 3));
        // A damaged file, or one whose PTX differs (a hash collision), is a miss.
        let file = fresh
            .file(&JitCache::key("sm_90 driver 13.0", ".entry a"))
            .unwrap();
        std::fs::write(&file, b"garbage").unwrap();
        let fresh = JitCache::new(Some(dir.clone()));
        let a2 = fresh
            .get_or_compile("sm_90 driver 13.0", ".entry a", || compile(4))
            .unwrap();
        assert_eq!((a2.as_slice(), calls.get()), (&elf(4)[..], 4));
        let wrong = entry_bytes("sm_90 driver 13.0", ".entry z", &elf(5));
        std::fs::write(&file, wrong).unwrap();
        assert_eq!(read_entry(&file, "sm_90 driver 13.0", ".entry a"), None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn errors_are_not_cached_and_memory_is_bounded() {
        let cache = JitCache::new(None);
        let err = cache.get_or_compile("t", "p", || {
            Err(GpuError::BadImage {
                module: "m".into(),
                problem: "no".into(),
            })
        });
        assert!(err.is_err());
        assert!(!cache.contains("t", "p"));
        for i in 0..JIT_MEMORY_CAPACITY + 5 {
            cache
                .get_or_compile("t", &format!("p{i}"), || Ok(elf(0)))
                .unwrap();
        }
        assert!(
            !cache.contains("t", "p0"),
            "the least recently used went out"
        );
        assert!(cache.contains("t", &format!("p{}", JIT_MEMORY_CAPACITY + 4)));
    }
}

#[cfg(test)]
mod gpu_tests {
    use crate::testing::require_gpu_or_skip;
    use crate::{FlagSet, HostData, KernelArg, LaunchDims, Source};
    use std::sync::Arc;

    #[test]
    fn a_jitted_module_is_cached_and_computes_what_the_ptx_load_does() {
        let Some(gpu) = require_gpu_or_skip() else {
            return;
        };
        let src = Source::new(
            "jit_test.cu",
            r#"extern "C" __global__ void k(double* x) { x[threadIdx.x] = x[threadIdx.x] * 1.1 + 0.3; }"#,
        );
        let ptx = gpu.compile(&src, FlagSet::DEFAULT).unwrap().ptx.clone();
        // Unique per run so that the disk cache cannot answer the first call.
        let ptx = format!("{ptx}\n// {}\n", std::process::id());
        let first = gpu.jit("jit_test", &ptx).unwrap();
        let second = gpu.jit("jit_test", &ptx).unwrap();
        assert!(
            Arc::ptr_eq(&first, &second),
            "the second JIT is a memory hit"
        );
        let both = gpu.jit_many(&[("a", &ptx), ("b", &ptx)], 4);
        assert!(both
            .iter()
            .all(|r| r.as_ref().is_ok_and(|c| Arc::ptr_eq(c, &first))));
        let run = |m: &crate::Module| {
            let x = gpu
                .upload("x", &HostData::F64((0..64).map(f64::from).collect()))
                .unwrap();
            gpu.launch_sync(
                m,
                "k",
                LaunchDims::new((1, 1, 1), (64, 1, 1)),
                &[KernelArg::Buffer(&x)],
            )
            .unwrap();
            gpu.download(&x).unwrap()
        };
        let jitted = gpu.load_jitted("jit_test", &ptx).unwrap();
        let loaded = gpu.load_ptx("jit_test", &ptx).unwrap();
        assert_eq!(run(&jitted), run(&loaded));
        let bad = gpu.jit(
            "bad",
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry e() { nonsense; }\n",
        );
        assert!(matches!(bad, Err(crate::GpuError::Jit { .. })), "{bad:?}");
    }
}
