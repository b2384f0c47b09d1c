//! Helpers for tests that need a GPU or NVRTC, in this crate and in the crates above it.
//!
//! A GPU test starts with `let Some(gpu) = require_gpu_or_skip() else { return };` (or
//! [`require_toolchain_or_skip`] to open several device handles). Without a GPU it
//! prints why it skipped and passes, so CI (no GPU) stays green; with `MANTISSA_REQUIRE_GPU=1` (set
//! by the GPU machine's runner) the same absence fails the test, so a broken setup cannot pass as
//! a run of skips. NVRTC tests do the same with [`require_nvrtc_or_skip`]; they are required under
//! `MANTISSA_REQUIRE_GPU=1` too (a GPU machine has NVRTC) or alone with `MANTISSA_REQUIRE_NVRTC=1`.
//! nvcc tests use [`require_nvcc_or_skip`], required with `MANTISSA_REQUIRE_NVCC=1` (set by CI,
//! which installs the nvcc wheels; not implied by `MANTISSA_REQUIRE_GPU`, since a GPU machine
//! need not have a toolkit).
//!
//! The skip line is written straight to the process's stderr, not through `eprintln!`, because the
//! test harness captures `eprintln!` output of passing tests and the reason would never be seen.

use crate::cache::CompileCache;
use crate::error::GpuUnavailable;
use crate::gpu::Gpu;
use crate::jit::JitCache;
use crate::nvcc::Nvcc;
use crate::nvrtc::Compiler;
use crate::toolchain::Toolchain;
use std::fmt::Display;
use std::io::Write;
use std::sync::{Arc, OnceLock};

/// Set to `1` where a GPU must be present: missing GPU or NVRTC then fails tests instead of skipping.
pub const REQUIRE_GPU_ENV: &str = "MANTISSA_REQUIRE_GPU";
/// Set to `1` where NVRTC must be present (a machine with NVRTC but no GPU).
pub const REQUIRE_NVRTC_ENV: &str = "MANTISSA_REQUIRE_NVRTC";
/// Set to `1` where nvcc must be present (CI installs the nvcc wheels): nvcc tests then fail
/// instead of skipping.
pub const REQUIRE_NVCC_ENV: &str = "MANTISSA_REQUIRE_NVCC";

fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// Whether GPU tests must run rather than skip.
pub fn gpu_required() -> bool {
    env_set(REQUIRE_GPU_ENV)
}

/// Whether NVRTC tests must run rather than skip.
pub fn nvrtc_required() -> bool {
    gpu_required() || env_set(REQUIRE_NVRTC_ENV)
}

/// Whether nvcc tests must run rather than skip.
pub fn nvcc_required() -> bool {
    env_set(REQUIRE_NVCC_ENV)
}

/// The name of the running test (the harness names each test's thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string()
}

/// Fails the calling test if `required`, else prints a skip line for it.
///
/// # Panics
/// When `required`: that is how the test fails.
pub fn skip_or_fail(required: bool, env: &str, reason: &dyn Display) {
    let name = test_name();
    if required {
        panic!("{name}: {env}=1 but {reason}");
    }
    let _ = writeln!(std::io::stderr(), "test {name}: skipped: {reason}");
}

/// A GPU shared by all tests of this process, or `None` after printing why the test skips.
///
/// Shared because every `Gpu` on a device uses the same primary CUDA context anyway, and probing
/// once keeps tests fast. Its compile cache is in memory only, so tests neither depend on nor
/// fill the user's cache directory.
///
/// # Panics
/// When `MANTISSA_REQUIRE_GPU=1` and no GPU is usable.
pub fn require_gpu_or_skip() -> Option<Arc<Gpu>> {
    static GPU: OnceLock<Result<Arc<Gpu>, GpuUnavailable>> = OnceLock::new();
    let probed = GPU
        .get_or_init(|| Gpu::probe_device_with_cache(0, CompileCache::in_memory()).map(Arc::new));
    match probed {
        Ok(gpu) => Some(gpu.clone()),
        Err(reason) => {
            skip_or_fail(gpu_required(), REQUIRE_GPU_ENV, reason);
            None
        }
    }
}

/// A toolchain shared by all tests of this process (compile and JIT caches in memory only), to
/// open several device handles from, or `None` after printing why the test skips.
///
/// # Panics
/// When `MANTISSA_REQUIRE_GPU=1` and no GPU is usable.
pub fn require_toolchain_or_skip() -> Option<Toolchain> {
    static TOOLCHAIN: OnceLock<Result<Toolchain, GpuUnavailable>> = OnceLock::new();
    let probed = TOOLCHAIN.get_or_init(|| {
        Toolchain::probe_with_caches(CompileCache::in_memory(), JitCache::new(None))
    });
    match probed {
        Ok(toolchain) => Some(toolchain.clone()),
        Err(reason) => {
            skip_or_fail(gpu_required(), REQUIRE_GPU_ENV, reason);
            None
        }
    }
}

/// NVRTC shared by all tests of this process (memory-only cache), or `None` after printing why.
///
/// # Panics
/// When `MANTISSA_REQUIRE_GPU=1` or `MANTISSA_REQUIRE_NVRTC=1` and NVRTC is missing.
pub fn require_nvrtc_or_skip() -> Option<Arc<Compiler>> {
    static NVRTC: OnceLock<Result<Arc<Compiler>, String>> = OnceLock::new();
    let probed = NVRTC.get_or_init(|| {
        Compiler::probe_with_cache(CompileCache::in_memory())
            .map(Arc::new)
            .map_err(|e| e.to_string())
    });
    match probed {
        Ok(c) => Some(c.clone()),
        Err(reason) => {
            let env = if gpu_required() {
                REQUIRE_GPU_ENV
            } else {
                REQUIRE_NVRTC_ENV
            };
            skip_or_fail(nvrtc_required(), env, reason);
            None
        }
    }
}

/// nvcc shared by all tests of this process (memory-only cache), or `None` after printing why.
/// Found as users find it ([`crate::nvcc`]), `MANTISSA_NVCC` included.
///
/// # Panics
/// When `MANTISSA_REQUIRE_NVCC=1` and no working nvcc is found.
pub fn require_nvcc_or_skip() -> Option<Arc<Nvcc>> {
    static NVCC: OnceLock<Result<Arc<Nvcc>, String>> = OnceLock::new();
    let probed = NVCC.get_or_init(|| {
        Nvcc::find()
            .map(|n| Arc::new(n.with_cache(CompileCache::in_memory())))
            .map_err(|e| e.to_string())
    });
    match probed {
        Ok(n) => Some(n.clone()),
        Err(reason) => {
            skip_or_fail(nvcc_required(), REQUIRE_NVCC_ENV, reason);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_returns_when_not_required() {
        skip_or_fail(false, REQUIRE_GPU_ENV, &"no GPU here");
    }

    #[test]
    #[should_panic(expected = "MANTISSA_REQUIRE_GPU=1 but no GPU here")]
    fn skipping_fails_when_required() {
        skip_or_fail(true, REQUIRE_GPU_ENV, &"no GPU here");
    }

    #[test]
    fn probing_never_panics_here() {
        // On a machine without CUDA this is the skip path; on a GPU machine it finds the GPU.
        // Either way it must return rather than panic (unless MANTISSA_REQUIRE_GPU=1 and no GPU).
        let _ = require_nvrtc_or_skip();
        let _ = require_gpu_or_skip();
        let _ = crate::toolchain::device_count();
    }
}
