//! The CUDA runtime of mantissa, over cudarc: find a GPU without panicking, compile CUDA C++ with
//! NVRTC or nvcc under named floating-point flag sets, cache compilations, launch kernels by name with
//! arguments built at run time, time them with CUDA events, and report a device's facts and
//! measured ceilings.
//!
//! It is not the arithmetic (that is `mantissa-num`; its CUDA twin, `cuda/mantissa.cuh`, ships
//! here as [`twin::HEADER`]), nor a PTX model (`mantissa-ptx`), nor a command-line tool: nothing
//! here prints, and absence of a GPU is an ordinary value ([`GpuUnavailable`], one line saying why
//! a run is CPU-only), never a panic. CUDA's libraries are loaded at run time, so this crate builds
//! and its CPU tests run on machines without CUDA: the driver from the library path, NVRTC from the
//! library path, the pip wheel or a toolkit ([`locate`]).
//!
//! Where the main types are:
//! - [`Toolchain`] (in `toolchain.rs`): the driver, NVRTC and the compile and JIT caches, probed
//!   once and shared by every device of a host; [`Gpu::open`] opens one device from it, and
//!   [`DeviceSelection`] is the commands' `--devices all|0,2`.
//! - [`run_pool`] (in `pool.rs`): independent work units over several workers (one thread per
//!   device), results handed back in unit order whichever worker ran them.
//! - [`Gpu`] (in `gpu.rs`): probe a device, compile for it, load [`Module`]s from cubin or PTX
//!   text, allocate [`DeviceBuffer`]s of any [`DType`], [`Gpu::launch`] a kernel by name (or
//!   name expression) with [`KernelArg`]s checked against its PTX [`EntrySignature`],
//!   [`Gpu::time_kernel`] / [`Gpu::time_with`] it into a [`Timing`].
//! - [`Compiler`] and [`FlagSet`] (in `nvrtc.rs`, `flags.rs`): NVRTC under floating-point
//!   switches with the presets `default`, `strict`, `fast`, `nofma`, `ftz`, `approx-div`,
//!   `approx-sqrt` and `+` combinations (`nofma+ftz`); usable without a GPU for PTX inspection.
//!   A [`Source`] carries its own options (`-D`, `-I`), headers in memory and name expressions
//!   for templated kernels. Every [`Compiled`] keeps its PTX, the lowered names and its
//!   [`BuildFacts`]. [`CompileCache`] (in `cache.rs`) keeps results in a bounded memory cache and
//!   under `$MANTISSA_CACHE` (default `~/.cache/mantissa`), keyed by the source and every file it
//!   includes ([`includes`]).
//! - [`Builder`] and [`BuildRequest`] (in `frontend.rs`; nvcc in `nvcc.rs`): front ends. A file
//!   with `-I`/`-D`, a target, a flag set and an optional math-unit marking becomes PTX through
//!   NVRTC (device code), nvcc (host code: `main`, `<<<...>>>`, `<stdio.h>`; found in the
//!   toolkit, `PATH` or the pip wheel) or is read as ready PTX; the automatic choice and its
//!   reason are a [`FrontEndChoice`], the record's facts a [`BuildFacts`]. [`Gpu::build_file`]
//!   builds and loads in one step.
//! - [`JitCache`] (in `jit.rs`): PTX JIT-compiled by the driver's linker into cubins, cached by
//!   the PTX's hash in memory and on disk; [`Gpu::load_jitted`], [`Gpu::jit_many`] (several CPU
//!   threads at once). [`Gpu::copy_range`], [`Gpu::copy_within`] and [`Gpu::download_range`]
//!   (in `ranges.rs`): parts of buffers, on the device.
//! - [`Module::symbols`], [`Gpu::write_symbol`], [`Gpu::read_symbol`]: `__constant__` and
//!   `__device__` variables, sized from the PTX and checked before every copy.
//! - [`DeviceReport`] (in `device.rs`): [`DeviceInfo`] plus [`Ceilings`] (copy bandwidth, FP32 and
//!   FP64 FMA throughput, slug factor), as a table (`Display`) or JSON.
//! - Errors (in `error.rs`): [`GpuUnavailable`], [`NvrtcUnavailable`], [`NvccUnavailable`],
//!   [`CompileError`], [`BuildError`], [`GpuError`]; each displays as one line naming what failed
//!   and what to do.
//! - [`DeviceType`] (in `device_types.rs`): the one table of how each precision exists on the
//!   device (words, bytes, CUDA type, the twin header's names), [`DeviceWords`] for its Rust type
//!   and [`visit_device_type`] to run generic code with it.
//! - [`twin`]: the CUDA twin of `mantissa-num` (header text, the list of its operations, and a
//!   generator of element-wise kernels for them), bit-identical to the Rust code.
//! - [`runtime`]: device runtimes, CUDA headers whose functions rewritten PTX calls
//!   (`cuda/mantissa_count.cuh`), compiled to PTX with relocatable device code for
//!   `mantissa_ptx::link::merge_runtime`.
//! - [`testing`]: `require_gpu_or_skip()`, `require_nvrtc_or_skip()` and `require_nvcc_or_skip()`
//!   for tests here and in the crates above (skip with a printed reason; fail under
//!   `MANTISSA_REQUIRE_GPU=1`, `MANTISSA_REQUIRE_NVRTC=1`, `MANTISSA_REQUIRE_NVCC=1`).
//!
//! Versions: the bindings are CUDA 13.0's, for the GPU machines' driver 580. NVRTC newer than the
//! driver writes PTX the driver refuses (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), which is why modules
//! load from the cubin NVRTC builds for the device, and why the NVRTC to install is the matching
//! `pip install nvidia-cuda-nvrtc==13.0.88`; [`locate`] finds it in the active Python's
//! site-packages without `LD_LIBRARY_PATH` (which, when set, still comes first).

#![deny(missing_docs)]

pub mod build_log;
pub mod cache;
pub mod device;
pub mod device_types;
pub mod error;
pub mod flags;
pub mod frontend;
pub mod gpu;
pub mod includes;
pub mod jit;
pub mod launch;
pub mod locate;
pub mod marks;
pub mod nvcc;
pub mod nvrtc;
pub mod pool;
mod ranges;
pub mod runtime;
pub mod symbol;
pub mod testing;
pub mod timing;
pub mod toolchain;
// The study helper rewrites twin.rs into the precision registry (issue 12); it documents it there.
#[allow(missing_docs)]
pub mod twin;
pub mod version;

pub use cache::{cache_root, CacheKey, CacheStats, CompileCache, DEFAULT_MEMORY_CAPACITY};
pub use device::{report_all, Ceilings, DeviceInfo, DeviceReport, ReportOptions};
pub use device_types::{
    values_of, visit_device_type, words_of, DeviceType, DeviceTypeVisitor, DeviceWords, Word,
};
pub use error::{
    BuildError, CompileError, DriverStatus, GpuError, GpuUnavailable, ImageKind, NvccUnavailable,
    NvrtcUnavailable,
};
pub use flags::{FlagSet, UnknownFlagSet};
pub use frontend::{
    read_source, BuildRequest, Builder, Built, Define, FrontEnd, FrontEndChoice, HostCode, Reason,
    UnknownFrontEnd,
};
pub use gpu::{Gpu, KernelResources, Module};
pub use jit::JitCache;
pub use launch::{DType, DeviceBuffer, HostData, KernelArg, LaunchDims, Scalar};
pub use locate::{cuda_tool, nvrtc_library, NvrtcLibrary, NvrtcOrigin};
pub use mantissa_ptx::entry::{EntryParam, EntrySignature};
pub use marks::Mark;
pub use nvcc::{Nvcc, NvccOrigin, NVCC_ENV, NVCC_PIP_INSTALL};
pub use nvrtc::{source_hash, BuildFacts, Compiled, Compiler, Source, Target};
pub use pool::{run_pool, PoolError, PoolSummary, WorkerSummary};
pub use symbol::{symbols_of_ptx, Symbol};
pub use timing::{Timing, TimingOptions};
pub use toolchain::{device_count, BadDeviceSelection, DeviceSelection, Toolchain};
pub use version::{Arch, CudaVersion, PtxIsa};

/// Locks a mutex, ignoring poisoning: the guarded values here (counters, maps of finished
/// entries, a timeout, a kernel name) stay valid if another thread panicked while holding them,
/// so carrying on is better than spreading the panic.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
