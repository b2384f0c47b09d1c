//! [`Gpu`]: one device, found without panicking, with its compiler, one stream, buffers, modules,
//! launches by kernel name and event timing. Devices of one host share a
//! [`Toolchain`](crate::toolchain::Toolchain) (driver, NVRTC, caches); each `Gpu` is one device
//! opened from it, usable from whichever thread owns it.
//!
//! All work goes to one stream of the device, in order. That is why cudarc's per-buffer event
//! tracking (made for several streams) is switched off: stream order already guarantees that a
//! buffer is written before it is read and freed after its last use, and the extra event records
//! per buffer per launch would only add host overhead between timed launches.
//!
//! Waits poll an event against a timeout instead of blocking in the driver, so a kernel that never
//! ends turns into [`GpuError::Timeout`] rather than a hung process.

use crate::cache::CompileCache;
use crate::device::DeviceInfo;
use crate::error::{catch, DriverStatus, GpuError, GpuUnavailable, ImageKind};
use crate::flags::FlagSet;
use crate::frontend::{BuildRequest, Builder, Built};
use crate::launch::{
    check_args, check_dims, each_dtype, map_dtype, DType, DeviceBuffer, DeviceData, HostData,
    KernelArg, LaunchDims, LaunchLimits, Scalar,
};
use crate::lock;
use crate::nvrtc::{Compiled, Compiler, Source, Target};
use crate::symbol::{symbols_of_ptx, Symbol};
use crate::timing::{rotation_sets, Timing, TimingOptions};
use crate::toolchain::Toolchain;
use crate::version::{Arch, CudaVersion, PtxIsa};
use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute_enum, CUresult};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    DriverError, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use mantissa_ptx::entry::{entry_signatures_of_ptx, EntrySignature};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The oldest driver the bindings (CUDA 13.0 headers) and NVRTC 13 cubins work with: driver 580.
pub const MIN_DRIVER: CudaVersion = CudaVersion::new(13, 0);

/// How long a wait for the device may take before it is reported as a hang.
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// One CUDA device, ready to compile for, load modules on and launch kernels.
#[derive(Debug)]
pub struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    info: DeviceInfo,
    compiler: Arc<Compiler>,
    /// The front ends for [`Gpu::build_file`]: this NVRTC, nvcc found on first use.
    builder: Builder,
    notes: Vec<String>,
    sync_timeout: Mutex<Duration>,
    /// The kernel an asynchronous failure is blamed on.
    last_kernel: Mutex<Option<String>>,
    /// Cubins the driver's JIT made from PTX (see [`crate::jit`]), shared with every device of
    /// the toolchain.
    pub(crate) jit: Arc<crate::jit::JitCache>,
}

impl Gpu {
    /// GPU 0 with NVRTC and the default compile cache; the error says in one line why the run is
    /// CPU-only.
    pub fn probe() -> Result<Gpu, GpuUnavailable> {
        Self::probe_device(0)
    }

    /// GPU `ordinal` (as numbered after CUDA_VISIBLE_DEVICES).
    pub fn probe_device(ordinal: usize) -> Result<Gpu, GpuUnavailable> {
        Self::probe_device_with_cache(ordinal, CompileCache::default_location())
    }

    /// GPU `ordinal`, compiling through `cache`: a [`Toolchain`] of its own, then
    /// [`Gpu::open`]. Several devices should share one toolchain instead.
    pub fn probe_device_with_cache(
        ordinal: usize,
        cache: CompileCache,
    ) -> Result<Gpu, GpuUnavailable> {
        Gpu::open(&Toolchain::probe_with_cache(cache)?, ordinal)
    }

    /// GPU `ordinal` (after CUDA_VISIBLE_DEVICES), compiling and JIT-compiling through
    /// `toolchain`'s caches, which it shares with every other device opened from it: devices of
    /// one architecture compile each source once. Its own context (the device's primary
    /// context), stream, facts and default build architecture. A handle can be moved to another
    /// thread and used there: every method binds the context to the calling thread first.
    pub fn open(toolchain: &Toolchain, ordinal: usize) -> Result<Gpu, GpuUnavailable> {
        let count = toolchain.device_count();
        if ordinal >= count {
            return Err(GpuUnavailable::NoSuchDevice { ordinal, count });
        }
        let driver = toolchain.driver();
        let compiler = toolchain.compiler().clone();
        let context_err = |status: DriverStatus| GpuUnavailable::Context { ordinal, status };
        let ctx = catch(|| CudaContext::new(ordinal))
            .map_err(|message| GpuUnavailable::Panicked {
                what: "opening the CUDA context",
                message,
            })?
            .map_err(|e| context_err(e.into()))?;
        // SAFETY: every buffer and launch of this Gpu uses its one stream (see the module doc),
        // and this runs before any buffer exists. A second handle on the same device shares the
        // primary context; each handle's buffers still stay on its own stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(|e| context_err(e.into()))?;
        let info =
            DeviceInfo::query(&ctx, ordinal, driver, compiler.version()).map_err(context_err)?;
        let arch = info.arch();
        if !compiler.supports(arch) {
            return Err(GpuUnavailable::ArchUnsupported {
                arch,
                nvrtc: compiler.version(),
                supported: compiler.supported_list(),
            });
        }
        let mut notes = Vec::new();
        if compiler.version() > driver {
            notes.push(format!(
                "NVRTC {} is newer than the driver (CUDA {driver}): modules load from cubin, but PTX it writes will be refused; pin {} to match",
                compiler.version(),
                crate::error::NVRTC_PIP_PIN
            ));
        }
        let builder = Builder::new()
            .with_nvrtc(Ok(compiler.clone()))
            .with_default_arch(arch);
        Ok(Gpu {
            ctx,
            stream,
            info,
            compiler,
            builder,
            notes,
            sync_timeout: Mutex::new(DEFAULT_SYNC_TIMEOUT),
            last_kernel: Mutex::new(None),
            jit: toolchain.jit().clone(),
        })
    }

    /// Makes this device's context current on the calling thread. Methods of [`Gpu`] and
    /// [`Module`] call it (or cudarc does) before every driver call that needs it, so a handle
    /// moved to a worker thread just works; code calling the driver directly calls it first.
    pub fn bind_to_thread(&self) -> Result<(), GpuError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| GpuError::driver("making the CUDA context current", e))
    }

    /// The CUDA ordinal of this device (after CUDA_VISIBLE_DEVICES), as records name it.
    pub fn ordinal(&self) -> usize {
        self.info.ordinal
    }

    /// What the driver reports about the device (no measurements; see [`Gpu::report`]).
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's architecture (its compute capability).
    pub fn arch(&self) -> Arch {
        self.info.arch()
    }

    /// The NVRTC compiler this device compiles with.
    pub fn compiler(&self) -> &Compiler {
        &self.compiler
    }

    /// Warnings worth showing once (e.g. NVRTC newer than the driver).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// How long a wait for the device may take before it is reported as a timeout.
    pub fn sync_timeout(&self) -> Duration {
        *lock(&self.sync_timeout)
    }

    /// How long waits for the device may take before [`GpuError::Timeout`].
    pub fn set_sync_timeout(&self, timeout: Duration) {
        *lock(&self.sync_timeout) = timeout;
    }

    // ---- Compiling and loading

    /// Compiles for this device (cubin + PTX), through the cache.
    pub fn compile(&self, source: &Source, flags: FlagSet) -> Result<Arc<Compiled>, GpuError> {
        Ok(self
            .compiler
            .compile(source, flags, Target::Cubin(self.arch()))?)
    }

    /// Compiles and loads in one step.
    pub fn build(&self, source: &Source, flags: FlagSet) -> Result<Module, GpuError> {
        let compiled = self.compile(source, flags)?;
        self.load(&compiled)
    }

    /// The front ends [`Gpu::build_file`] uses (this device's NVRTC; nvcc found on first use).
    pub fn builder(&self) -> &Builder {
        &self.builder
    }

    /// Builds a file through a front end ([`crate::frontend`]; the device's architecture unless
    /// the request names one) and loads it: NVRTC's cubin, or the PTX of nvcc and of ready PTX
    /// (JIT-compiled by the driver, refused up front when its `.version` is newer than the
    /// driver accepts).
    pub fn build_file(&self, request: &BuildRequest) -> Result<(Module, Built), GpuError> {
        let built = self.builder.build_for(request, true)?;
        let module = match &built.compiled {
            Some(c) if c.cubin.is_some() => self.load(c)?,
            _ => self.load_ptx(&request.file_name(), &built.ptx)?,
        };
        Ok((module, built))
    }

    /// Loads a compilation: its cubin when there is one (any PTX ISA version loads that way),
    /// falling back to its PTX if the driver refuses the cubin (built for another GPU, say).
    /// Its kernels can be launched by the source's name expressions (`my_kernel<double>`) too.
    pub fn load(&self, compiled: &Compiled) -> Result<Module, GpuError> {
        let name = &compiled.source_name;
        let mut module = match &compiled.cubin {
            Some(cubin) => match self.load_cubin(name, cubin, Some(&compiled.ptx)) {
                Ok(m) => m,
                Err(cubin_err) => self.load_ptx(name, &compiled.ptx).map_err(|_| cubin_err)?,
            },
            None => self.load_ptx(name, &compiled.ptx)?,
        };
        module.lowered_names = compiled.lowered_names.clone();
        Ok(module)
    }

    /// Refuses PTX the driver cannot take before the driver is asked: a NUL byte, or a
    /// `.version` newer than the driver accepts.
    pub(crate) fn check_ptx(&self, name: &str, ptx: &str) -> Result<(), GpuError> {
        if ptx.contains('\0') {
            return Err(GpuError::BadImage {
                module: name.to_string(),
                problem: "the PTX text contains a NUL byte".into(),
            });
        }
        // Said before the driver is asked: its CUDA_ERROR_UNSUPPORTED_PTX_VERSION cannot tell
        // which compiler is too new, and ready PTX (nvcc's, a user's) is not NVRTC's.
        if let (Some(p), Some(max)) = (PtxIsa::of_ptx(ptx), self.info.driver.max_ptx_isa()) {
            if p > max {
                return Err(GpuError::PtxTooNew {
                    module: name.to_string(),
                    ptx: p,
                    max,
                    driver: self.info.driver,
                });
            }
        }
        Ok(())
    }

    /// Loads PTX text (e.g. PTX we rewrote); the driver JIT-compiles it for this device.
    pub fn load_ptx(&self, name: &str, ptx: &str) -> Result<Module, GpuError> {
        self.check_ptx(name, ptx)?;
        // The driver reads PTX up to a NUL; passing bytes avoids cudarc's CString unwrap.
        let mut image = ptx.as_bytes().to_vec();
        image.push(0);
        let module = self.load_image(name, ImageKind::Ptx, image, PtxIsa::of_ptx(ptx))?;
        Ok(self.module(name, ImageKind::Ptx, module, Some(ptx.to_string())))
    }

    /// Loads a cubin; `ptx` (its source PTX, if known) lets launches check arguments.
    pub fn load_cubin(
        &self,
        name: &str,
        cubin: &[u8],
        ptx: Option<&str>,
    ) -> Result<Module, GpuError> {
        if !cubin.starts_with(b"\x7fELF") {
            return Err(GpuError::BadImage {
                module: name.to_string(),
                problem: "the cubin is not an ELF image".into(),
            });
        }
        let module = self.load_image(name, ImageKind::Cubin, cubin.to_vec(), None)?;
        Ok(self.module(name, ImageKind::Cubin, module, ptx.map(str::to_string)))
    }

    fn load_image(
        &self,
        name: &str,
        image: ImageKind,
        bytes: Vec<u8>,
        ptx_version: Option<PtxIsa>,
    ) -> Result<Arc<CudaModule>, GpuError> {
        let loaded = catch(|| self.ctx.load_module(Ptx::from_binary(bytes)));
        let fail = |status| GpuError::ModuleLoad {
            module: name.to_string(),
            image,
            status,
            ptx_version,
            driver: self.info.driver,
        };
        match loaded {
            Ok(Ok(m)) => Ok(m),
            Ok(Err(e)) => Err(fail(e.into())),
            Err(message) => Err(GpuError::Panicked {
                what: format!("loading module {name}"),
                message,
            }),
        }
    }

    fn module(
        &self,
        name: &str,
        image: ImageKind,
        cu: Arc<CudaModule>,
        ptx: Option<String>,
    ) -> Module {
        Module {
            name: name.to_string(),
            image,
            entries: ptx.as_deref().map(entry_signatures_of_ptx),
            symbols: OnceLock::new(),
            ptx,
            lowered_names: BTreeMap::new(),
            cu,
            ctx: self.ctx.clone(),
            device: self.info.clone(),
            kernels: Mutex::new(HashMap::new()),
        }
    }

    // ---- Buffers

    fn check_alloc(&self, name: &str, dtype: DType, len: usize) -> Result<(), GpuError> {
        let bad = |problem: String| GpuError::BadBuffer {
            what: format!("buffer '{name}'"),
            problem,
        };
        if len == 0 {
            return Err(bad(
                "length 0; device buffers need at least one element".into()
            ));
        }
        let bytes = len.checked_mul(dtype.size()).ok_or_else(|| {
            bad(format!(
                "{len} elements of {dtype} overflow the address space"
            ))
        })?;
        if bytes as u64 > self.info.total_memory_bytes {
            return Err(self.out_of_memory(name, bytes as u64));
        }
        Ok(())
    }

    fn out_of_memory(&self, name: &str, bytes: u64) -> GpuError {
        let (free, total) = self.ctx.mem_get_info().unwrap_or((0, 0));
        GpuError::OutOfMemory {
            what: format!("buffer '{name}'"),
            bytes,
            free: free as u64,
            total: if total > 0 {
                total as u64
            } else {
                self.info.total_memory_bytes
            },
        }
    }

    fn alloc_error(&self, name: &str, bytes: u64, e: DriverError) -> GpuError {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            self.out_of_memory(name, bytes)
        } else {
            GpuError::driver(format!("allocating buffer '{name}'"), e)
        }
    }

    /// A zero-filled buffer of `len` elements.
    pub fn alloc_zeros(
        &self,
        name: &str,
        dtype: DType,
        len: usize,
    ) -> Result<DeviceBuffer, GpuError> {
        self.check_alloc(name, dtype, len)?;
        fn zeros<T: DeviceRepr + ValidAsZeroBits>(
            s: &Arc<CudaStream>,
            n: usize,
        ) -> Result<CudaSlice<T>, DriverError> {
            s.alloc_zeros(n)
        }
        let s = &self.stream;
        let data = match dtype {
            DType::F32 => zeros(s, len).map(DeviceData::F32),
            DType::F64 => zeros(s, len).map(DeviceData::F64),
            DType::F16 => zeros(s, len).map(DeviceData::F16),
            DType::BF16 => zeros(s, len).map(DeviceData::BF16),
            DType::I32 => zeros(s, len).map(DeviceData::I32),
            DType::I64 => zeros(s, len).map(DeviceData::I64),
            DType::U8 => zeros(s, len).map(DeviceData::U8),
            DType::U32 => zeros(s, len).map(DeviceData::U32),
            DType::U64 => zeros(s, len).map(DeviceData::U64),
        }
        .map_err(|e| self.alloc_error(name, (len * dtype.size()) as u64, e))?;
        Ok(DeviceBuffer {
            name: name.to_string(),
            data,
        })
    }

    /// A buffer holding a copy of `data`.
    pub fn upload(&self, name: &str, data: &HostData) -> Result<DeviceBuffer, GpuError> {
        self.check_alloc(name, data.dtype(), data.len())?;
        let s = &self.stream;
        let data = map_dtype!(data, HostData => DeviceData, v => s.clone_htod(v))
            .map_err(|e| self.alloc_error(name, data.bytes(), e))?;
        Ok(DeviceBuffer {
            name: name.to_string(),
            data,
        })
    }

    /// `copies` separate uploads of `data`, named `name#0`, `name#1`... for rotating inputs.
    pub fn upload_copies(
        &self,
        name: &str,
        data: &HostData,
        copies: usize,
    ) -> Result<Vec<DeviceBuffer>, GpuError> {
        (0..copies.max(1))
            .map(|i| self.upload(&format!("{name}#{i}"), data))
            .collect()
    }

    /// Waits for the device (with the timeout), then copies a buffer back.
    pub fn download(&self, buf: &DeviceBuffer) -> Result<HostData, GpuError> {
        self.synchronize()?;
        let s = &self.stream;
        let out = map_dtype!(&buf.data, DeviceData => HostData, d => s.clone_dtoh(d));
        out.map_err(|e| self.async_error(e, &format!("copying buffer '{}' to the host", buf.name)))
    }

    /// Device-to-device copy of all of `src` into `dst` (same type and length), queued.
    pub fn copy(&self, src: &DeviceBuffer, dst: &mut DeviceBuffer) -> Result<(), GpuError> {
        if src.dtype() != dst.dtype() || src.len() != dst.len() {
            return Err(GpuError::BadBuffer {
                what: format!("copy from '{}' to '{}'", src.name, dst.name),
                problem: format!(
                    "{} x {} into {} x {}: types and lengths must match",
                    src.len(),
                    src.dtype(),
                    dst.len(),
                    dst.dtype()
                ),
            });
        }
        let s = &self.stream;
        let r = match (&src.data, &mut dst.data) {
            (DeviceData::F32(a), DeviceData::F32(b)) => s.memcpy_dtod(a, b),
            (DeviceData::F64(a), DeviceData::F64(b)) => s.memcpy_dtod(a, b),
            (DeviceData::F16(a), DeviceData::F16(b)) => s.memcpy_dtod(a, b),
            (DeviceData::BF16(a), DeviceData::BF16(b)) => s.memcpy_dtod(a, b),
            (DeviceData::I32(a), DeviceData::I32(b)) => s.memcpy_dtod(a, b),
            (DeviceData::I64(a), DeviceData::I64(b)) => s.memcpy_dtod(a, b),
            (DeviceData::U8(a), DeviceData::U8(b)) => s.memcpy_dtod(a, b),
            (DeviceData::U32(a), DeviceData::U32(b)) => s.memcpy_dtod(a, b),
            (DeviceData::U64(a), DeviceData::U64(b)) => s.memcpy_dtod(a, b),
            // Types were checked equal above.
            _ => Ok(()),
        };
        r.map_err(|e| GpuError::driver(format!("copying '{}' to '{}'", src.name, dst.name), e))
    }

    // ---- Module-scope variables

    /// The driver's view of `module`'s variable `name`, checked against the PTX's declaration
    /// (when the PTX is known) and, for writes, against `given` bytes.
    fn symbol_view<'a>(
        &'a self,
        module: &'a Module,
        name: &str,
        given: Option<usize>,
    ) -> Result<cudarc::driver::CudaViewMut<'a, u8>, GpuError> {
        let not_found = || GpuError::SymbolNotFound {
            symbol: name.to_string(),
            module: module.name.clone(),
            symbols: module.symbol_list(),
        };
        let size_error = |declared: u64, given: usize| GpuError::SymbolSize {
            symbol: name.to_string(),
            module: module.name.clone(),
            declared,
            given: given as u64,
        };
        let declared = match module.ptx {
            Some(_) => Some(module.symbol(name).ok_or_else(not_found)?.bytes),
            None => None,
        };
        if let (Some(Some(d)), Some(g)) = (declared, given) {
            if d != g as u64 {
                return Err(size_error(d, g));
            }
        }
        if name.contains('\0') {
            return Err(not_found());
        }
        self.bind_to_thread()?;
        let view = module
            .cu
            .get_global(name, &self.stream)
            .map_err(|e| match e.0 {
                CUresult::CUDA_ERROR_NOT_FOUND => not_found(),
                _ => GpuError::driver(format!("looking up symbol '{name}'"), e),
            })?;
        // The driver's size is the last word (the PTX may declare `[]`).
        if let Some(g) = given {
            if view.len() != g {
                return Err(size_error(view.len() as u64, g));
            }
        }
        Ok(view)
    }

    /// Copies `bytes` into `module`'s `.const` or `.global` variable `name` (a `__constant__`
    /// table, a `__device__` struct), after checking that `bytes` is exactly its size. Waits
    /// for the copy, so that launches queued after it see the new value.
    pub fn write_symbol(&self, module: &Module, name: &str, bytes: &[u8]) -> Result<(), GpuError> {
        let mut view = self.symbol_view(module, name, Some(bytes.len()))?;
        self.stream
            .memcpy_htod(bytes, &mut view)
            .map_err(|e| self.async_error(e, &format!("writing symbol '{name}'")))?;
        self.synchronize()
    }

    /// The bytes of `module`'s `.const` or `.global` variable `name`, after the work queued
    /// before (kernels may write `__device__` variables).
    pub fn read_symbol(&self, module: &Module, name: &str) -> Result<Vec<u8>, GpuError> {
        self.synchronize()?;
        let view = self.symbol_view(module, name, None)?;
        let bytes = self
            .stream
            .clone_dtoh(&view)
            .map_err(|e| self.async_error(e, &format!("reading symbol '{name}'")))?;
        self.synchronize()?;
        Ok(bytes)
    }

    // ---- Launching and waiting

    /// Queues `kernel` of `module` with arguments built at run time. Arguments are checked
    /// against the kernel's PTX parameters and the shape against the device's and kernel's limits
    /// first. Faults while the kernel runs surface at the next wait ([`Gpu::synchronize`]).
    pub fn launch(
        &self,
        module: &Module,
        kernel: &str,
        dims: LaunchDims,
        args: &[KernelArg],
    ) -> Result<(), GpuError> {
        let k = module.kernel(kernel)?;
        check_dims(&dims, &k.limits).map_err(|problem| GpuError::BadLaunch {
            kernel: kernel.to_string(),
            problem,
        })?;
        if let Some(sig) = &k.signature {
            check_args(sig, args).map_err(|problem| GpuError::BadArguments {
                kernel: kernel.to_string(),
                problem,
            })?;
        }
        // Over 48 KiB of dynamic shared memory must be opted into per kernel.
        if dims.shared_bytes > 48 * 1024 {
            self.bind_to_thread()?;
            k.func
                .set_attribute(
                    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dims.shared_bytes as i32,
                )
                .map_err(|e| GpuError::Launch {
                    kernel: kernel.to_string(),
                    status: e.into(),
                })?;
        }
        // Pointers into buffers are passed as 64-bit values, made first: the builder keeps a
        // reference to each argument until the launch.
        let interior: Vec<u64> = args
            .iter()
            .map(|a| match a {
                KernelArg::BufferAt(b, at) => b.device_address() + at,
                _ => 0,
            })
            .collect();
        let mut builder = self.stream.launch_builder(&k.func);
        for (arg, address) in args.iter().zip(&interior) {
            match arg {
                KernelArg::Buffer(b) => each_dtype!(&b.data, DeviceData, s => builder.arg(s)),
                KernelArg::BufferAt(..) => builder.arg(address),
                KernelArg::Scalar(scalar) => each_dtype!(scalar, Scalar, v => builder.arg(v)),
                // The driver reads as many bytes as the parameter has from the first one's
                // address (check_args made them equal).
                KernelArg::Raw(bytes) => builder.arg(bytes.first().unwrap_or(&0)),
            };
        }
        *lock(&self.last_kernel) = Some(kernel.to_string());
        let cfg = LaunchConfig {
            grid_dim: dims.grid,
            block_dim: dims.block,
            shared_mem_bytes: dims.shared_bytes,
        };
        // SAFETY: the argument list matches the kernel's PTX parameters in count, size and kind
        // where the PTX is known (always for modules we compiled); buffers outlive the launch
        // because frees are queued on the same stream after it.
        unsafe { builder.launch(cfg) }.map_err(|e| GpuError::Launch {
            kernel: kernel.to_string(),
            status: e.into(),
        })?;
        Ok(())
    }

    /// [`Gpu::launch`], then waits for it.
    pub fn launch_sync(
        &self,
        module: &Module,
        kernel: &str,
        dims: LaunchDims,
        args: &[KernelArg],
    ) -> Result<(), GpuError> {
        self.launch(module, kernel, dims, args)?;
        self.synchronize()
    }

    /// Waits for all queued work, at most [`Gpu::sync_timeout`].
    pub fn synchronize(&self) -> Result<(), GpuError> {
        let event = self
            .stream
            .record_event(None)
            .map_err(|e| self.async_error(e, "recording an event"))?;
        self.wait_event(&event, "waiting for the GPU")
    }

    /// Polls `event` until done, failed, or the timeout.
    fn wait_event(&self, event: &CudaEvent, what: &str) -> Result<(), GpuError> {
        self.bind_to_thread()?;
        let timeout = self.sync_timeout();
        let start = Instant::now();
        let mut nap = Duration::from_micros(10);
        loop {
            match event.try_is_complete() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => return Err(self.async_error(e, what)),
            }
            if start.elapsed() >= timeout {
                let running = lock(&self.last_kernel).clone();
                return Err(GpuError::Timeout {
                    what: match running {
                        Some(k) => format!("{what} (last kernel '{k}')"),
                        None => what.to_string(),
                    },
                    timeout,
                });
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(1));
        }
    }

    /// An error reported by a wait belongs to the work before it: blame the last kernel if the
    /// status is a kernel fault.
    pub(crate) fn async_error(&self, e: DriverError, what: &str) -> GpuError {
        let status = DriverStatus::from(e);
        match lock(&self.last_kernel).clone() {
            Some(kernel) if status.is_sticky() => GpuError::Launch { kernel, status },
            _ => GpuError::Driver {
                what: what.to_string(),
                status,
            },
        }
    }

    // ---- Timing

    /// Times `run` with CUDA events: `opts.warmup` untimed calls, then `opts.reps` calls each
    /// between its own pair of events. `run(i)` queues the work of call `i` (warm-up calls
    /// included), so it can pick input set `i % input_sets` to rotate buffers.
    pub fn time_with(
        &self,
        opts: TimingOptions,
        input_sets: usize,
        mut run: impl FnMut(usize) -> Result<(), GpuError>,
    ) -> Result<Timing, GpuError> {
        let reps = opts.reps.max(1) as usize;
        let warmup = opts.warmup as usize;
        for i in 0..warmup {
            run(i)?;
        }
        self.synchronize()?;
        let event = || {
            self.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| GpuError::driver("creating a timing event", e))
        };
        // Created up front so the timed loop only queues work.
        let pairs = (0..reps)
            .map(|_| Ok((event()?, event()?)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        for (r, (start, end)) in pairs.iter().enumerate() {
            start
                .record(&self.stream)
                .map_err(|e| self.async_error(e, "recording a timing event"))?;
            run(warmup + r)?;
            end.record(&self.stream)
                .map_err(|e| self.async_error(e, "recording a timing event"))?;
        }
        if let Some((_, last)) = pairs.last() {
            self.wait_event(last, "waiting for timed runs")?;
        }
        let samples = pairs
            .iter()
            .map(|(s, e)| {
                s.elapsed_ms(e)
                    .map(f64::from)
                    .map_err(|err| self.async_error(err, "reading a timing event"))
            })
            .collect::<Result<Vec<f64>, GpuError>>()?;
        Timing::from_samples(samples, opts.warmup, input_sets.max(1)).ok_or_else(|| {
            GpuError::BadLaunch {
                kernel: "(timing)".into(),
                problem: "no timed runs".into(),
            }
        })
    }

    /// Times launches of `kernel`, cycling through `arg_sets` (one set per input copy; see
    /// [`Gpu::rotation_sets`]). Every set is checked before anything runs.
    pub fn time_kernel(
        &self,
        module: &Module,
        kernel: &str,
        dims: LaunchDims,
        arg_sets: &[Vec<KernelArg>],
        opts: TimingOptions,
    ) -> Result<Timing, GpuError> {
        if arg_sets.is_empty() {
            return Err(GpuError::BadArguments {
                kernel: kernel.to_string(),
                problem: "no argument sets to time".into(),
            });
        }
        let k = module.kernel(kernel)?;
        if let Some(sig) = &k.signature {
            for (i, set) in arg_sets.iter().enumerate() {
                check_args(sig, set).map_err(|problem| GpuError::BadArguments {
                    kernel: kernel.to_string(),
                    problem: format!("argument set {}: {problem}", i + 1),
                })?;
            }
        }
        let n = arg_sets.len();
        self.time_with(opts, n, |i| {
            self.launch(module, kernel, dims, &arg_sets[i % n])
        })
    }

    /// How many copies of a `working_set_bytes` input to rotate through so timings do not measure
    /// L2 (see [`crate::timing::rotation_sets`]); copies may take half the free memory.
    pub fn rotation_sets(&self, working_set_bytes: u64) -> usize {
        let free = self.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
        rotation_sets(working_set_bytes, self.info.l2_bytes, free / 2)
    }
}

/// A loaded module: its image, the PTX it came from (when known) and its kernels' signatures.
#[derive(Debug)]
pub struct Module {
    name: String,
    image: ImageKind,
    ptx: Option<String>,
    entries: Option<Vec<EntrySignature>>,
    /// Module-scope variables, read from the PTX on first use.
    symbols: OnceLock<Vec<Symbol>>,
    /// Name expressions of the source mapped to their kernels' lowered names.
    lowered_names: BTreeMap<String, String>,
    cu: Arc<CudaModule>,
    /// Its device's context, made current before the driver is asked about the module.
    ctx: Arc<CudaContext>,
    device: DeviceInfo,
    kernels: Mutex<HashMap<String, Arc<Kernel>>>,
}

#[derive(Debug)]
struct Kernel {
    func: CudaFunction,
    limits: LaunchLimits,
    resources: KernelResources,
    signature: Option<EntrySignature>,
}

/// What a kernel uses per thread and per block, as the driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers: u32,
    /// Local memory per thread (spills and run-time-indexed arrays).
    pub local_bytes: u32,
    /// Static shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// Constant memory, bytes.
    pub const_bytes: u32,
    /// Threads per block this kernel allows at most (its register use decides).
    pub max_threads_per_block: u32,
    /// As major * 10 + minor (90 for 9.0).
    pub ptx_version: u32,
    /// The binary (SASS) architecture, as major * 10 + minor.
    pub binary_version: u32,
}

impl Module {
    /// The module name (the source name it was compiled from).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the driver was given cubin or PTX.
    pub fn image(&self) -> ImageKind {
        self.image
    }

    /// The PTX the module came from, when known.
    pub fn ptx(&self) -> Option<&str> {
        self.ptx.as_deref()
    }

    /// Kernel signatures read from the PTX; `None` for a cubin loaded without it.
    pub fn entries(&self) -> Option<&[EntrySignature]> {
        self.entries.as_deref()
    }

    fn entry_list(&self) -> String {
        match &self.entries {
            Some(e) if e.is_empty() => "none".into(),
            Some(e) => e
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            None => "unknown: cubin loaded without its PTX".into(),
        }
    }

    /// The module-scope `.const` and `.global` variables of its PTX (`__constant__` and
    /// `__device__` variables), in text order; empty for a cubin loaded without its PTX.
    pub fn symbols(&self) -> &[Symbol] {
        self.symbols.get_or_init(|| match &self.ptx {
            Some(ptx) => symbols_of_ptx(ptx),
            None => Vec::new(),
        })
    }

    /// The variable `name`, if the PTX declares it.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols().iter().find(|s| s.name == name)
    }

    fn symbol_list(&self) -> String {
        match (&self.ptx, self.symbols()) {
            (None, _) => "unknown: cubin loaded without its PTX".into(),
            (_, []) => "none".into(),
            (_, syms) => syms
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The lowered (mangled) name of a name expression the module's source was compiled with.
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.lowered_names.get(expression).map(String::as_str)
    }

    /// The kernel `name`: an entry's name, or a name expression of the source.
    fn kernel(&self, name: &str) -> Result<Arc<Kernel>, GpuError> {
        let name = self.lowered_name(name).unwrap_or(name);
        if let Some(k) = lock(&self.kernels).get(name) {
            return Ok(k.clone());
        }
        let not_found = || GpuError::KernelNotFound {
            kernel: name.to_string(),
            module: self.name.clone(),
            entries: self.entry_list(),
        };
        let signature = match &self.entries {
            Some(entries) => Some(
                entries
                    .iter()
                    .find(|s| s.name == name)
                    .cloned()
                    .ok_or_else(not_found)?,
            ),
            None => None,
        };
        if name.contains('\0') {
            return Err(not_found());
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| GpuError::driver("making the CUDA context current", e))?;
        let func = self.cu.load_function(name).map_err(|e| match e.0 {
            CUresult::CUDA_ERROR_NOT_FOUND => not_found(),
            _ => GpuError::driver(format!("looking up kernel '{name}'"), e),
        })?;
        let attr = |a: CUfunction_attribute_enum| {
            func.get_attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(|e| GpuError::driver(format!("reading attributes of kernel '{name}'"), e))
        };
        use CUfunction_attribute_enum::*;
        let resources = KernelResources {
            registers: attr(CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_shared_bytes: attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_bytes: attr(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            max_threads_per_block: attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            ptx_version: attr(CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: attr(CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        };
        let d = &self.device;
        let limits = LaunchLimits {
            max_threads_per_block: resources.max_threads_per_block,
            max_block: d.max_block_dims,
            max_grid: d.max_grid_dims,
            max_dynamic_shared: d
                .max_shared_per_block_optin
                .saturating_sub(resources.static_shared_bytes),
            registers_per_thread: resources.registers,
        };
        let k = Arc::new(Kernel {
            func,
            limits,
            resources,
            signature,
        });
        lock(&self.kernels).insert(name.to_string(), k.clone());
        Ok(k)
    }

    /// Registers, local and shared memory of `kernel`, as the driver reports them.
    pub fn resources(&self, kernel: &str) -> Result<KernelResources, GpuError> {
        Ok(self.kernel(kernel)?.resources)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_newer_than_the_driver_says_what_to_do() {
        let err = GpuError::PtxTooNew {
            module: "app.ptx".into(),
            ptx: PtxIsa { major: 9, minor: 1 },
            max: PtxIsa { major: 9, minor: 0 },
            driver: CudaVersion::new(13, 0),
        };
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.starts_with("cannot load module app.ptx: its PTX is .version 9.1, and driver CUDA 13.0 accepts up to 9.0: rebuild it with a compiler of CUDA 13.0"),
            "{msg}"
        );
        assert!(msg.contains(crate::nvcc::NVCC_PIP_INSTALL), "{msg}");
        let size = GpuError::SymbolSize {
            symbol: "coef".into(),
            module: "k.cu".into(),
            declared: 32,
            given: 24,
        };
        assert_eq!(
            size.to_string(),
            "symbol 'coef' of module k.cu is 32 bytes, and 24 bytes were given: give exactly 32"
        );
    }

    /// Later crates share these across threads (rayon workers, a progress thread).
    #[test]
    fn runtime_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::Gpu>();
        check::<super::Module>();
        check::<crate::DeviceBuffer>();
        check::<crate::Compiler>();
    }
}
