//! Every way the GPU runtime can fail, each as one line that says what failed and what to do.
//!
//! Driver statuses are named from cudarc's enum rather than through `cuGetErrorString`, so an error
//! can be shown (and tested) when libcuda is absent or its context is already broken.

use crate::flags::FlagSet;
use crate::nvrtc::Target;
use crate::version::{Arch, CudaVersion, PtxIsa};
use cudarc::driver::sys::CUresult;
use cudarc::driver::DriverError;
use cudarc::nvrtc::sys::nvrtcResult;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The pip package that matches the GPU machines' driver 580 (CUDA 13.0). A newer NVRTC writes PTX
/// that driver refuses.
pub const NVRTC_PIP_PIN: &str = "nvidia-cuda-nvrtc==13.0.88";

/// A CUDA driver status, shown as `NAME (number)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverStatus(pub CUresult);

impl From<DriverError> for DriverStatus {
    fn from(e: DriverError) -> Self {
        DriverStatus(e.0)
    }
}

impl fmt::Display for DriverStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({})", self.0, self.code())
    }
}

impl DriverStatus {
    /// The status's number, as CUDA defines it.
    pub fn code(self) -> u32 {
        self.0 as u32
    }

    /// A launch asked for more registers or shared memory than the device gives its block size:
    /// not a fault, the same code with a smaller block (or less instrumentation) may run.
    pub fn is_out_of_resources(self) -> bool {
        self.0 == CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    }

    /// After these the CUDA context is corrupt: every later call fails the same way, so the
    /// process must restart before the GPU can be used again.
    pub fn is_sticky(self) -> bool {
        use CUresult::*;
        matches!(
            self.0,
            CUDA_ERROR_ILLEGAL_ADDRESS
                | CUDA_ERROR_HARDWARE_STACK_ERROR
                | CUDA_ERROR_ILLEGAL_INSTRUCTION
                | CUDA_ERROR_MISALIGNED_ADDRESS
                | CUDA_ERROR_INVALID_ADDRESS_SPACE
                | CUDA_ERROR_INVALID_PC
                | CUDA_ERROR_LAUNCH_FAILED
                | CUDA_ERROR_ASSERT
                | CUDA_ERROR_ECC_UNCORRECTABLE
                | CUDA_ERROR_LAUNCH_TIMEOUT
        )
    }

    /// What the status means here and what to do about it.
    pub fn hint(self) -> &'static str {
        use CUresult::*;
        match self.0 {
            CUDA_ERROR_OUT_OF_MEMORY => "out of GPU memory: use smaller buffers or stop other work on this GPU",
            CUDA_ERROR_INVALID_VALUE => "the driver rejected a value (grid, block or shared-memory size out of range?)",
            CUDA_ERROR_NOT_INITIALIZED | CUDA_ERROR_DEINITIALIZED => "the CUDA driver is not initialised or is shutting down",
            CUDA_ERROR_STUB_LIBRARY => "the libcuda.so found is the toolkit's stub, not the driver: remove the stubs directory from LD_LIBRARY_PATH",
            CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER => "the NVIDIA driver is too old for this call: update the driver (580 or newer for CUDA 13.0)",
            CUDA_ERROR_DEVICE_UNAVAILABLE => "the GPU is busy or unavailable (exclusive compute mode, or used by another process)",
            CUDA_ERROR_NO_DEVICE => "no CUDA GPU is visible: check CUDA_VISIBLE_DEVICES and that /dev/nvidia* exist",
            CUDA_ERROR_INVALID_DEVICE => "no GPU with that ordinal: check CUDA_VISIBLE_DEVICES",
            CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => "the user-space driver library does not match the kernel module: reinstall the driver or reboot",
            CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => "the forward-compatibility driver does not support this GPU",
            CUDA_ERROR_SYSTEM_NOT_READY => "the GPU system is not ready (fabric manager or persistence daemon not running?)",
            CUDA_ERROR_NO_BINARY_FOR_GPU => "the module holds no code for this GPU: compile for this device's architecture (sm_XY of its compute capability)",
            CUDA_ERROR_INVALID_IMAGE => "the module image is neither valid cubin nor valid PTX",
            CUDA_ERROR_INVALID_PTX => "the driver's PTX JIT rejected the PTX (malformed, or written for a newer architecture)",
            CUDA_ERROR_UNSUPPORTED_PTX_VERSION => "the PTX .version is newer than this driver accepts: NVRTC is newer than the driver; pin nvidia-cuda-nvrtc==13.0.88 for driver 580 (CUDA 13.0), or load the cubin NVRTC built for this GPU",
            CUDA_ERROR_JIT_COMPILER_NOT_FOUND => "the driver's PTX JIT library (libnvidia-ptxjitcompiler) is missing: reinstall the driver, or load cubin instead of PTX",
            CUDA_ERROR_JIT_COMPILATION_DISABLED => "PTX JIT compilation is disabled (CUDA_DISABLE_PTX_JIT?): load cubin instead of PTX",
            CUDA_ERROR_NOT_FOUND => "no such name in the module: declare the kernel extern \"C\" so its name is not C++-mangled",
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => "too many registers or too much shared memory for this block size: use a smaller block",
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => "more blocks than can be resident at once for a cooperative launch: use fewer blocks",
            CUDA_ERROR_ILLEGAL_ADDRESS => "the kernel accessed memory out of bounds (check indices against buffer lengths; compute-sanitizer finds the line); the CUDA context is now unusable: restart the process",
            CUDA_ERROR_MISALIGNED_ADDRESS => "the kernel made a misaligned memory access; the CUDA context is now unusable: restart the process",
            CUDA_ERROR_ILLEGAL_INSTRUCTION | CUDA_ERROR_INVALID_PC | CUDA_ERROR_HARDWARE_STACK_ERROR | CUDA_ERROR_INVALID_ADDRESS_SPACE => "the kernel faulted on the device; the CUDA context is now unusable: restart the process",
            CUDA_ERROR_LAUNCH_FAILED => "the kernel faulted while running; the CUDA context is now unusable: restart the process",
            CUDA_ERROR_ASSERT => "a device-side assert fired in the kernel; the CUDA context is now unusable: restart the process",
            CUDA_ERROR_LAUNCH_TIMEOUT => "the kernel ran past the display watchdog's limit: shorten each launch; the CUDA context is now unusable: restart the process",
            CUDA_ERROR_ECC_UNCORRECTABLE => "an uncorrectable ECC error: the GPU needs attention (nvidia-smi -q), restart the process",
            CUDA_ERROR_NOT_PERMITTED | CUDA_ERROR_NOT_SUPPORTED => "this operation is not supported or not permitted on this GPU or driver",
            CUDA_ERROR_INVALID_HANDLE | CUDA_ERROR_INVALID_CONTEXT | CUDA_ERROR_CONTEXT_IS_DESTROYED => "an internal handle was invalid (a bug in mantissa: please report it)",
            CUDA_ERROR_UNKNOWN => "unknown CUDA error: often a driver or GPU fault; check nvidia-smi and the kernel log",
            _ => "see the CUDA driver API documentation for this status",
        }
    }
}

/// Why NVRTC, the run-time CUDA compiler, cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvrtcUnavailable {
    /// No `libnvrtc` on the library path nor in the places searched after it (see
    /// [`crate::locate`]); `looked` lists those places, in order.
    #[error("NVRTC (libnvrtc.so.13) is not on the library path nor in {}: `pip install nvidia-cuda-nvrtc==13.0.88` (found there by itself), or put libnvrtc's directory on LD_LIBRARY_PATH", looked_list(.looked))]
    NotFound {
        /// The directories searched after the loader's own search.
        looked: Vec<PathBuf>,
    },
    /// A libnvrtc (or its builtins) was found but the loader refused it.
    #[error("NVRTC at {} cannot be loaded ({message}): `pip install nvidia-cuda-nvrtc==13.0.88`, or put a working libnvrtc's directory on LD_LIBRARY_PATH", .path.display())]
    NotLoadable {
        /// The file that failed to load.
        path: PathBuf,
        /// The loader's reason.
        message: String,
    },
    /// Older NVRTCs lack calls mantissa's bindings make.
    #[error("NVRTC {found} is too old (mantissa needs 12.0 or newer): `pip install nvidia-cuda-nvrtc==13.0.88` and put its nvidia/cu13/lib directory first on LD_LIBRARY_PATH")]
    TooOld {
        /// The version found.
        found: CudaVersion,
    },
    /// A call into NVRTC panicked inside cudarc (a missing symbol, say).
    #[error("NVRTC could not be used ({what} failed: {message}): `pip install nvidia-cuda-nvrtc==13.0.88` and put its nvidia/cu13/lib directory on LD_LIBRARY_PATH")]
    Broken {
        /// The NVRTC call that failed.
        what: &'static str,
        /// What cudarc said.
        message: String,
    },
}

fn looked_list(looked: &[PathBuf]) -> String {
    if looked.is_empty() {
        return "any other place".into();
    }
    looked
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a run is CPU-only. Each message is one line meant to be shown once at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuUnavailable {
    /// No libcuda: no NVIDIA driver.
    #[error("CPU only: no CUDA driver library (libcuda.so.1) on the library path; install the NVIDIA driver to use a GPU")]
    NoDriver,
    /// `cuInit` failed.
    #[error("CPU only: the CUDA driver failed to start ({status}): {}", .status.hint())]
    DriverInit {
        /// The driver status.
        status: DriverStatus,
    },
    /// The driver supports a CUDA older than the bindings need.
    #[error("CPU only: the NVIDIA driver supports CUDA {found}, mantissa's bindings need CUDA 13.0 or newer: update the driver to 580 or newer")]
    DriverTooOld {
        /// The version found.
        found: CudaVersion,
    },
    /// The driver started but sees no GPU.
    #[error("CPU only: the CUDA driver is present but sees no GPU ({detail}); check CUDA_VISIBLE_DEVICES and that /dev/nvidia* exist")]
    NoDevice {
        /// What the driver said.
        detail: String,
    },
    /// An ordinal past the GPUs the driver sees.
    #[error("CPU only: GPU {ordinal} was asked for but the driver sees {count} GPU(s) (ordinals start at 0)")]
    NoSuchDevice {
        /// The GPU ordinal asked for.
        ordinal: usize,
        /// GPUs the driver sees.
        count: usize,
    },
    /// NVRTC cannot be used.
    #[error("CPU only: {0}")]
    Nvrtc(NvrtcUnavailable),
    /// NVRTC cannot compile for this GPU.
    #[error("CPU only: NVRTC {nvrtc} cannot compile for this GPU (compute capability {arch}); it supports {supported}; use an NVRTC that supports {sm}", sm = .arch.sm())]
    ArchUnsupported {
        /// The GPU's compute capability.
        arch: Arch,
        /// NVRTC's version.
        nvrtc: CudaVersion,
        /// The architectures NVRTC supports, as `sm_XY` names.
        supported: String,
    },
    /// The CUDA context or stream could not be created.
    #[error("CPU only: cannot open GPU {ordinal} ({status}): {}", .status.hint())]
    Context {
        /// The GPU ordinal asked for.
        ordinal: usize,
        /// The driver status.
        status: DriverStatus,
    },
    /// The CUDA bindings panicked (a missing symbol, say).
    #[error("CPU only: the CUDA bindings failed during {what} ({message}); check the NVIDIA driver installation")]
    Panicked {
        /// The step that failed.
        what: &'static str,
        /// The panic message.
        message: String,
    },
}

/// A CUDA C++ source NVRTC could not compile, or NVRTC failing around the compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The source has errors. `log` is NVRTC's full log (`name(line): error: ...` lines).
    #[error("cannot compile {source_name} (flag set {flags}, {target}): {}", summarise_log(.log))]
    Source {
        /// The source's name.
        source_name: String,
        /// The flag set.
        flags: FlagSet,
        /// The target.
        target: Target,
        /// NVRTC's full log.
        log: String,
    },
    /// NVRTC itself failed (missing builtins library, bad option, out of memory...).
    #[error(
        "NVRTC failed on {source_name} (flag set {flags}, {target}) with {status:?}: {detail}"
    )]
    Nvrtc {
        /// The source's name.
        source_name: String,
        /// The flag set.
        flags: FlagSet,
        /// The target.
        target: Target,
        /// NVRTC's status.
        status: nvrtcResult,
        /// What failed, from the log where it helps.
        detail: String,
    },
    /// The flag set is the only place floating-point options may come from, so that a record's
    /// flag-set name tells the whole story.
    #[error("option '{option}' for {source_name} conflicts with flag sets: choose a flag set ({}) instead", FlagSet::accepted_names())]
    ConflictingOption {
        /// The source's name.
        source_name: String,
        /// The option refused.
        option: String,
    },
    /// A NUL byte where NVRTC reads C strings.
    #[error("{what} of {source_name} contains a NUL byte")]
    NulByte {
        /// The source's name.
        source_name: String,
        /// Which part holds it.
        what: &'static str,
    },
    /// NVRTC cannot target the architecture asked for.
    #[error("NVRTC {nvrtc} cannot compile for {target}; it supports {supported}")]
    ArchUnsupported {
        /// The target asked for.
        target: Target,
        /// NVRTC's version.
        nvrtc: CudaVersion,
        /// The architectures NVRTC supports, as `sm_XY` names.
        supported: String,
    },
}

impl CompileError {
    /// NVRTC's full log, where there is one.
    pub fn log(&self) -> Option<&str> {
        match self {
            CompileError::Source { log, .. } => Some(log),
            _ => None,
        }
    }
}

/// The first error line of an NVRTC log, and how many more there are.
fn summarise_log(log: &str) -> String {
    let errors: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("error"))
        .filter(|l| !l.contains("detected in the compilation of"))
        .collect();
    match errors.split_first() {
        None => {
            let first = log.lines().map(str::trim).find(|l| !l.is_empty());
            first.unwrap_or("NVRTC gave no log").to_string()
        }
        Some((first, [])) => first.to_string(),
        Some((first, rest)) => format!("{first} (and {} more errors in the log)", rest.len()),
    }
}

/// Why nvcc cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvccUnavailable {
    /// No executable nvcc in the places searched ([`crate::nvcc`]); `looked` lists them.
    #[error("no nvcc found (searched $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH and the pip wheel's nvidia/cu13/bin: {} places): `{}`, or install a CUDA toolkit, or set CUDA_HOME", .looked.len(), crate::nvcc::NVCC_PIP_INSTALL)]
    NotFound {
        /// The files tried, in order.
        looked: Vec<PathBuf>,
    },
    /// `$MANTISSA_NVCC` names no executable file (discovery is off while it is set).
    #[error("no nvcc at {} (set by MANTISSA_NVCC): point it at an nvcc, unset it to search, or `{}`", .path.display(), crate::nvcc::NVCC_PIP_INSTALL)]
    NotAtOverride {
        /// The path it names.
        path: PathBuf,
    },
    /// An nvcc was found but `nvcc --version` failed or said nothing readable.
    #[error("nvcc at {} does not work ({message}): `{}`, or a CUDA toolkit, or point CUDA_HOME (or MANTISSA_NVCC) at a working one", .path.display(), crate::nvcc::NVCC_PIP_INSTALL)]
    Broken {
        /// The program tried.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The command that makes PTX by hand from `file`, for messages.
pub fn nvcc_by_hand(file: &str, arch: Arch) -> String {
    let stem = file
        .strip_suffix(".cu")
        .or_else(|| file.strip_suffix(".cuh"))
        .unwrap_or(file);
    format!(
        "nvcc -ptx -lineinfo -arch={} {file} -o {stem}.ptx",
        arch.sm()
    )
}

/// A failure of a build through a front end ([`crate::frontend`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BuildError {
    /// The file cannot be read.
    #[error("cannot read {file}: {message}")]
    Read {
        /// The file.
        file: String,
        /// The reason.
        message: String,
    },
    /// The file needs nvcc (or nvcc was asked for) and there is none.
    #[error("{file} needs nvcc ({reason}), but {cause}; or make the PTX by hand (`{}`) and give mantissa the .ptx", nvcc_by_hand(.file, *.arch))]
    NeedsNvcc {
        /// The file.
        file: String,
        /// Why nvcc: the host code found, or "asked for".
        reason: String,
        /// The target, for the command shown.
        arch: Arch,
        /// Why there is no nvcc.
        cause: NvccUnavailable,
    },
    /// NVRTC failed on a header it does not have (a host or system header).
    #[error("NVRTC cannot compile {file}: it cannot open <{header}> (NVRTC has no host or system headers): use the nvcc front end (`{}`, or a CUDA toolkit, or set CUDA_HOME), or make the PTX by hand (`{}`) and give mantissa the .ptx", crate::nvcc::NVCC_PIP_INSTALL, nvcc_by_hand(.file, *.arch))]
    NvrtcMissingHeader {
        /// The file.
        file: String,
        /// The header NVRTC could not open.
        header: String,
        /// The target, for the command shown.
        arch: Arch,
        /// NVRTC's full log.
        log: String,
    },
    /// NVRTC is not usable.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcUnavailable),
    /// NVRTC refused the source or failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// nvcc failed on the file.
    #[error("nvcc failed on {file} (flag set {flags}, {}, {status}): {}", .arch.sm(), summarise_nvcc_log(.log))]
    Nvcc {
        /// The file.
        file: String,
        /// The flag set.
        flags: FlagSet,
        /// The target.
        arch: Arch,
        /// How nvcc ended (`exit 1`).
        status: String,
        /// nvcc's full stderr.
        log: String,
    },
    /// nvcc could not be run, or its output not read.
    #[error("cannot use nvcc at {}: {message}", .nvcc.display())]
    NvccRun {
        /// The program.
        nvcc: PathBuf,
        /// What failed.
        message: String,
    },
    /// A `-D` that is not `NAME` or `NAME=VALUE`.
    #[error("bad define '{given}': write NAME or NAME=VALUE, NAME a C identifier (letters, digits, '_', not starting with a digit)")]
    BadDefine {
        /// The text as given.
        given: String,
    },
    /// The front end asked for cannot read this file.
    #[error("front end {front_end} cannot build {file}: {problem}")]
    WrongFrontEnd {
        /// The file.
        file: String,
        /// The front end asked for.
        front_end: crate::frontend::FrontEnd,
        /// Why, and what to use instead.
        problem: String,
    },
    /// A compile failure whose whole log was written to a file ([`crate::build_log`]), with a
    /// hint when the log shows APIs the toolkit removed.
    #[error("{error}{}; {}", .hint.as_ref().map_or(String::new(), |h| format!("; hint: {h}")), match .log_file { Ok(p) => format!("whole log: {}", p.display()), Err(e) => format!("the log could not be written ({e})") })]
    Logged {
        /// The failure itself.
        error: Box<BuildError>,
        /// The file holding the compiler's whole log, or why it could not be written.
        log_file: Result<PathBuf, String>,
        /// What to do about it, when the log says.
        hint: Option<String>,
    },
}

impl BuildError {
    /// The compiler's full log (NVRTC's or nvcc's), where there is one.
    pub fn log(&self) -> Option<&str> {
        match self {
            BuildError::NvrtcMissingHeader { log, .. } | BuildError::Nvcc { log, .. } => Some(log),
            BuildError::Compile(e) => e.log(),
            BuildError::Logged { error, .. } => error.log(),
            _ => None,
        }
    }

    /// The file holding the compiler's whole log, when it was written.
    pub fn log_file(&self) -> Option<&std::path::Path> {
        match self {
            BuildError::Logged {
                log_file: Ok(p), ..
            } => Some(p),
            _ => None,
        }
    }

    /// The failure without its log file and hint.
    pub fn inner(&self) -> &BuildError {
        match self {
            BuildError::Logged { error, .. } => error.inner(),
            e => e,
        }
    }
}

/// The first error line of nvcc's stderr, and how many more lines there are.
fn summarise_nvcc_log(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let first = lines.iter().position(|l| l.contains("error")).unwrap_or(0);
    match lines.get(first) {
        None => "nvcc gave no message".to_string(),
        Some(l) if lines.len() == 1 => l.to_string(),
        Some(l) => format!("{l} ({} more lines in the log)", lines.len() - 1),
    }
}

/// Which image of a module the driver was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ImageKind {
    /// A cubin (ELF) built for the device.
    #[serde(rename = "cubin")]
    Cubin,
    /// PTX text, JIT-compiled by the driver.
    #[serde(rename = "ptx")]
    Ptx,
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Cubin => "cubin",
            ImageKind::Ptx => "PTX",
        })
    }
}

/// A failure while using a GPU that was found.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    /// No usable GPU.
    #[error(transparent)]
    Unavailable(#[from] GpuUnavailable),
    /// A compile failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The driver refused a module image.
    #[error("cannot load module {module} from {image} ({status}): {}{}", .status.hint(), ptx_note(*.ptx_version, *.driver))]
    ModuleLoad {
        /// The module name.
        module: String,
        /// The image the driver was given.
        image: ImageKind,
        /// The driver status.
        status: DriverStatus,
        /// The PTX's `.version`, when known.
        ptx_version: Option<PtxIsa>,
        /// The CUDA version the driver supports.
        driver: CudaVersion,
    },
    /// The driver's JIT linker refused PTX (its log says where).
    #[error("cannot JIT-compile module {module} ({status}): {}", if .log.is_empty() { "the driver gave no log" } else { .log.as_str() })]
    Jit {
        /// The module name.
        module: String,
        /// The driver status.
        status: DriverStatus,
        /// The JIT's error log (may be several lines).
        log: String,
    },
    /// An image that is not what it claims to be (not ELF, a NUL in PTX).
    #[error("cannot load module {module}: {problem}")]
    BadImage {
        /// The module name.
        module: String,
        /// What is wrong.
        problem: String,
    },
    /// A build through a front end failed.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// PTX newer than the driver accepts (found before the driver is asked).
    #[error("cannot load module {module}: its PTX is .version {ptx}, and driver CUDA {driver} accepts up to {max}: rebuild it with a compiler of CUDA {driver} (`{}`, then `nvcc -ptx -lineinfo -arch=sm_XY FILE.cu -o FILE.ptx`; or NVRTC {NVRTC_PIP_PIN}), or update the NVIDIA driver", crate::nvcc::NVCC_PIP_INSTALL)]
    PtxTooNew {
        /// The module name.
        module: String,
        /// The PTX's `.version`.
        ptx: PtxIsa,
        /// The newest `.version` the driver accepts.
        max: PtxIsa,
        /// The driver's CUDA version.
        driver: CudaVersion,
    },
    /// No module-scope variable of that name.
    #[error("symbol '{symbol}' is not in module {module} (module-scope .const/.global variables: {symbols})")]
    SymbolNotFound {
        /// The name asked for.
        symbol: String,
        /// The module name.
        module: String,
        /// The variables the module has.
        symbols: String,
    },
    /// Bytes that do not fit a variable.
    #[error("symbol '{symbol}' of module {module} is {declared} bytes, and {given} bytes were given: give exactly {declared}")]
    SymbolSize {
        /// The variable.
        symbol: String,
        /// The module name.
        module: String,
        /// Its size.
        declared: u64,
        /// The size given.
        given: u64,
    },
    /// No kernel of that name in the module.
    #[error("kernel '{kernel}' is not in module {module} (entries: {entries}); declare it extern \"C\" so its name is not C++-mangled")]
    KernelNotFound {
        /// The kernel name.
        kernel: String,
        /// The module name.
        module: String,
        /// The kernels the module has.
        entries: String,
    },
    /// Arguments that do not match the kernel's PTX parameters.
    #[error("kernel '{kernel}': {problem}")]
    BadArguments {
        /// The kernel name.
        kernel: String,
        /// What is wrong.
        problem: String,
    },
    /// A grid, block or shared-memory size past the limits.
    #[error("kernel '{kernel}': bad launch configuration: {problem}")]
    BadLaunch {
        /// The kernel name.
        kernel: String,
        /// What is wrong.
        problem: String,
    },
    /// The launch, or the kernel while running, failed.
    #[error("kernel '{kernel}' failed ({status}): {}", .status.hint())]
    Launch {
        /// The kernel name.
        kernel: String,
        /// The driver status.
        status: DriverStatus,
    },
    /// A wait for the device took longer than the timeout.
    #[error("{what} did not finish within {timeout:?} (a kernel still running: an endless loop, or far more work than expected?); raise the timeout with Gpu::set_sync_timeout, or restart the process")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// Not enough free device memory for an allocation.
    #[error("cannot allocate {bytes} bytes for {what}: out of GPU memory ({free} bytes free of {total}); use a smaller size or stop other work on this GPU")]
    OutOfMemory {
        /// What the memory was for.
        what: String,
        /// Bytes asked for.
        bytes: u64,
        /// Bytes free on the device.
        free: u64,
        /// Bytes on the device.
        total: u64,
    },
    /// Buffers that do not fit an operation (types or lengths differ).
    #[error("{what}: {problem}")]
    BadBuffer {
        /// The operation.
        what: String,
        /// What is wrong.
        problem: String,
    },
    /// Another driver call failed.
    #[error("{what} failed ({status}): {}", .status.hint())]
    Driver {
        /// What was being done.
        what: String,
        /// The driver status.
        status: DriverStatus,
    },
    /// The CUDA bindings panicked.
    #[error("{what}: {message}")]
    Panicked {
        /// What was being done.
        what: String,
        /// The panic message.
        message: String,
    },
}

fn ptx_note(ptx: Option<PtxIsa>, driver: CudaVersion) -> String {
    match (ptx, driver.max_ptx_isa()) {
        (Some(p), Some(max)) if p > max => {
            format!(" (the PTX is .version {p}; driver CUDA {driver} accepts up to {max})")
        }
        (Some(p), _) => format!(" (the PTX is .version {p}; driver CUDA {driver})"),
        (None, _) => String::new(),
    }
}

impl GpuError {
    /// Wraps a driver failure of `what` (e.g. "copy to device of buffer x").
    pub(crate) fn driver(what: impl Into<String>, e: DriverError) -> Self {
        GpuError::Driver {
            what: what.into(),
            status: e.into(),
        }
    }

    /// The driver status behind this error, if any.
    pub fn driver_status(&self) -> Option<DriverStatus> {
        match self {
            GpuError::ModuleLoad { status, .. }
            | GpuError::Jit { status, .. }
            | GpuError::Launch { status, .. }
            | GpuError::Driver { status, .. } => Some(*status),
            GpuError::Unavailable(GpuUnavailable::DriverInit { status })
            | GpuError::Unavailable(GpuUnavailable::Context { status, .. }) => Some(*status),
            _ => None,
        }
    }
}

/// Runs a cudarc call that may panic (a missing library or symbol), turning the panic into a value.
///
/// cudarc loads libraries and symbols lazily and panics when one is missing; the probe checks the
/// libraries first, and this catches what the checks cannot see (a driver missing one symbol).
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic without a message".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::Arch;

    #[test]
    fn unsupported_ptx_version_is_explained() {
        let status = DriverStatus(CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
        assert_eq!(status.code(), 222);
        assert_eq!(
            status.to_string(),
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"
        );
        assert!(status.hint().contains("NVRTC is newer than the driver"));
        assert!(status.hint().contains(NVRTC_PIP_PIN));

        let err = GpuError::ModuleLoad {
            module: "saxpy.cu".into(),
            image: ImageKind::Ptx,
            status,
            ptx_version: Some(PtxIsa { major: 9, minor: 1 }),
            driver: CudaVersion::new(13, 0),
        };
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.starts_with(
                "cannot load module saxpy.cu from PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222))"
            ),
            "{msg}"
        );
        assert!(msg.contains("pin nvidia-cuda-nvrtc==13.0.88"), "{msg}");
        assert!(
            msg.contains("the PTX is .version 9.1; driver CUDA 13.0 accepts up to 9.0"),
            "{msg}"
        );
        assert_eq!(err.driver_status(), Some(status));
    }

    #[test]
    fn sticky_statuses_say_restart() {
        for s in [
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            CUresult::CUDA_ERROR_LAUNCH_FAILED,
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
            CUresult::CUDA_ERROR_ASSERT,
        ] {
            let st = DriverStatus(s);
            assert!(st.is_sticky(), "{st}");
            assert!(st.hint().contains("restart the process"), "{st}");
        }
        assert!(!DriverStatus(CUresult::CUDA_ERROR_OUT_OF_MEMORY).is_sticky());
        assert!(!DriverStatus(CUresult::CUDA_ERROR_INVALID_VALUE).is_sticky());
    }

    #[test]
    fn every_hint_is_one_line() {
        use CUresult::*;
        let all = [
            (CUDA_ERROR_INVALID_VALUE, 1),
            (CUDA_ERROR_OUT_OF_MEMORY, 2),
            (CUDA_ERROR_NOT_INITIALIZED, 3),
            (CUDA_ERROR_STUB_LIBRARY, 34),
            (CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36),
            (CUDA_ERROR_DEVICE_UNAVAILABLE, 46),
            (CUDA_ERROR_NO_DEVICE, 100),
            (CUDA_ERROR_INVALID_DEVICE, 101),
            (CUDA_ERROR_INVALID_IMAGE, 200),
            (CUDA_ERROR_NO_BINARY_FOR_GPU, 209),
            (CUDA_ERROR_INVALID_PTX, 218),
            (CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221),
            (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222),
            (CUDA_ERROR_NOT_FOUND, 500),
            (CUDA_ERROR_ILLEGAL_ADDRESS, 700),
            (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701),
            (CUDA_ERROR_LAUNCH_FAILED, 719),
            (CUDA_ERROR_UNKNOWN, 999),
        ];
        for (s, code) in all {
            let st = DriverStatus(s);
            assert!(!st.hint().contains('\n'), "{st}");
            assert!(
                !st.hint().starts_with("see the CUDA"),
                "{st} has no specific hint"
            );
            assert_eq!(st.code(), code);
            assert!(st.to_string().ends_with(&format!("({code})")));
        }
    }

    #[test]
    fn unavailable_messages_are_single_lines_with_a_remedy() {
        let cases = [
            GpuUnavailable::NoDriver,
            GpuUnavailable::DriverInit {
                status: DriverStatus(CUresult::CUDA_ERROR_STUB_LIBRARY),
            },
            GpuUnavailable::DriverTooOld {
                found: CudaVersion::new(12, 4),
            },
            GpuUnavailable::NoDevice {
                detail: "cuInit: CUDA_ERROR_NO_DEVICE (100)".into(),
            },
            GpuUnavailable::NoSuchDevice {
                ordinal: 3,
                count: 1,
            },
            GpuUnavailable::Nvrtc(NvrtcUnavailable::NotFound { looked: Vec::new() }),
            GpuUnavailable::Nvrtc(NvrtcUnavailable::NotFound {
                looked: vec!["/usr/local/cuda/lib64".into()],
            }),
            GpuUnavailable::Nvrtc(NvrtcUnavailable::NotLoadable {
                path: "/usr/local/cuda/lib64/libnvrtc.so.13".into(),
                message: "wrong ELF class".into(),
            }),
            GpuUnavailable::ArchUnsupported {
                arch: Arch::new(7, 0),
                nvrtc: CudaVersion::new(13, 0),
                supported: "sm_75, sm_80".into(),
            },
        ];
        for c in cases {
            let msg = c.to_string();
            assert!(msg.starts_with("CPU only: "), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
        }
        let nvrtc = GpuUnavailable::Nvrtc(NvrtcUnavailable::NotFound {
            looked: vec![
                "/venv/nvidia/cu13/lib".into(),
                "/usr/local/cuda/lib64".into(),
            ],
        })
        .to_string();
        assert!(
            nvrtc.contains("pip install nvidia-cuda-nvrtc==13.0.88"),
            "{nvrtc}"
        );
        assert!(nvrtc.contains("LD_LIBRARY_PATH"), "{nvrtc}");
        assert!(
            nvrtc.contains("nor in /venv/nvidia/cu13/lib, /usr/local/cuda/lib64:"),
            "{nvrtc}"
        );
    }

    #[test]
    fn compile_error_shows_first_error_with_line_and_name() {
        let log = "saxpy.cu(3): error: identifier \"y\" is undefined\n\
                   saxpy.cu(4): error: expected a \";\"\n\
                   \n2 errors detected in the compilation of \"saxpy.cu\".\n";
        let err = CompileError::Source {
            source_name: "saxpy.cu".into(),
            flags: FlagSet::STRICT,
            target: Target::Cubin(Arch::new(9, 0)),
            log: log.into(),
        };
        assert_eq!(
            err.to_string(),
            "cannot compile saxpy.cu (flag set strict, sm_90): saxpy.cu(3): error: identifier \"y\" is undefined (and 1 more errors in the log)"
        );
        assert_eq!(err.log(), Some(log));
    }

    #[test]
    fn panics_become_values() {
        assert_eq!(catch(|| 3), Ok(3));
        // The default hook prints the panic into this test's captured output; that is all.
        let r = catch(|| -> i32 { panic!("Missing symbol cuFoo") });
        assert_eq!(r, Err("Missing symbol cuFoo".to_string()));
    }
}
