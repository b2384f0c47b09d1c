//! [`Toolchain`]: what every device of a host shares — the driver (checked once), NVRTC with its
//! compile cache, and the cache of cubins the driver's JIT makes — so that a run on several GPUs
//! probes once and compiles once per architecture, not once per device.
//!
//! Sharing the caches is safe across threads: both key entries by content (source, options and
//! target; PTX, device and driver), keep their memory maps under a mutex, and write disk entries
//! through a temporary file and a rename ([`crate::cache`]), so two devices compiling the same
//! source at once cost at worst one redundant compile, never a torn entry.
//!
//! [`DeviceSelection`] is the `--devices all|0,2,…` of the commands: parsed without a driver,
//! checked against [`Toolchain::device_count`] when opened.

use crate::cache::CompileCache;
use crate::error::{catch, GpuUnavailable};
use crate::gpu::{Gpu, MIN_DRIVER};
use crate::jit::JitCache;
use crate::nvrtc::Compiler;
use crate::version::CudaVersion;
use cudarc::driver::result::DriverError;
use cudarc::driver::sys::CUresult;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Checks that the driver library is there, starts, and is new enough; returns its CUDA version.
pub(crate) fn open_driver() -> Result<CudaVersion, GpuUnavailable> {
    // cudarc panics on first use of a missing library: look first.
    // SAFETY: only dlopens libcuda (running its initialisers), as any CUDA use does.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(GpuUnavailable::NoDriver);
    }
    let panicked = |what| move |message| GpuUnavailable::Panicked { what, message };
    match catch(cudarc::driver::result::init).map_err(panicked("cuInit"))? {
        Ok(()) => {}
        Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE)) => {
            return Err(GpuUnavailable::NoDevice {
                detail: "cuInit: CUDA_ERROR_NO_DEVICE (100)".into(),
            })
        }
        Err(e) => return Err(GpuUnavailable::DriverInit { status: e.into() }),
    }
    let version = catch(|| {
        let mut v = 0;
        // SAFETY: plain out-parameter.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
            .result()
            .map(|()| v)
    })
    .map_err(panicked("cuDriverGetVersion"))?
    .map_err(|e| GpuUnavailable::DriverInit { status: e.into() })?;
    let version = CudaVersion::from_driver_int(version);
    if version < MIN_DRIVER {
        return Err(GpuUnavailable::DriverTooOld { found: version });
    }
    Ok(version)
}

/// How many GPUs the driver sees (after the same checks as [`Gpu::probe`] makes of the driver).
pub fn device_count() -> Result<usize, GpuUnavailable> {
    open_driver()?;
    count_devices()
}

pub(crate) fn count_devices() -> Result<usize, GpuUnavailable> {
    let count = catch(cudarc::driver::result::device::get_count)
        .map_err(|message| GpuUnavailable::Panicked {
            what: "cuDeviceGetCount",
            message,
        })?
        .map_err(|e| GpuUnavailable::DriverInit { status: e.into() })?;
    Ok(count.max(0) as usize)
}

/// The driver, NVRTC and the caches, probed once and shared by every [`Gpu`] opened from it.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct Toolchain {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    driver: CudaVersion,
    device_count: usize,
    compiler: Arc<Compiler>,
    jit: Arc<JitCache>,
}

impl Toolchain {
    /// The driver and NVRTC with the default compile and JIT caches (under `$MANTISSA_CACHE`).
    pub fn probe() -> Result<Toolchain, GpuUnavailable> {
        Self::probe_with_cache(CompileCache::default_location())
    }

    /// The driver and NVRTC compiling through `cache`; the JIT cache is the default one.
    pub fn probe_with_cache(cache: CompileCache) -> Result<Toolchain, GpuUnavailable> {
        Self::probe_with_caches(cache, JitCache::default_location())
    }

    /// The driver and NVRTC compiling through `cache`, JIT-compiling through `jit`.
    pub fn probe_with_caches(
        cache: CompileCache,
        jit: JitCache,
    ) -> Result<Toolchain, GpuUnavailable> {
        let driver = open_driver()?;
        let device_count = count_devices()?;
        if device_count == 0 {
            return Err(GpuUnavailable::NoDevice {
                detail: "cuDeviceGetCount reports 0 devices".into(),
            });
        }
        let compiler = Compiler::probe_with_cache(cache).map_err(GpuUnavailable::Nvrtc)?;
        Ok(Toolchain {
            inner: Arc::new(Shared {
                driver,
                device_count,
                compiler: Arc::new(compiler),
                jit: Arc::new(jit),
            }),
        })
    }

    /// The CUDA version the driver supports.
    pub fn driver(&self) -> CudaVersion {
        self.inner.driver
    }

    /// How many GPUs the driver sees (after `CUDA_VISIBLE_DEVICES`).
    pub fn device_count(&self) -> usize {
        self.inner.device_count
    }

    /// NVRTC, with its compile cache ([`Compiler::cache`]).
    pub fn compiler(&self) -> &Arc<Compiler> {
        &self.inner.compiler
    }

    /// The cubins the driver's JIT made, shared by every device opened from this toolchain.
    pub fn jit(&self) -> &Arc<JitCache> {
        &self.inner.jit
    }

    /// GPU `ordinal`: see [`Gpu::open`].
    pub fn open(&self, ordinal: usize) -> Result<Gpu, GpuUnavailable> {
        Gpu::open(self, ordinal)
    }
}

/// Which GPUs a command uses: `all` of them, or a list of ordinals (`0,2`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSelection {
    /// Every GPU the driver sees.
    #[default]
    All,
    /// These ordinals, in this order, each once.
    Ordinals(Vec<usize>),
}

/// `--devices` text that names no set of GPUs; one line (the command line's parser names the
/// option).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadDeviceSelection {
    /// Empty text, an empty item or something not a whole number.
    #[error(
        "{text:?} names no GPUs: {problem}; write `all` or GPU ordinals separated by commas, like 0,2"
    )]
    Syntax {
        /// The text given.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An ordinal given twice: one device runs one unit at a time, so a second worker on it
    /// would share it and spoil its timings.
    #[error("GPU {ordinal} is listed twice; list each GPU once")]
    Duplicate {
        /// The repeated ordinal.
        ordinal: usize,
    },
}

impl FromStr for DeviceSelection {
    type Err = BadDeviceSelection;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let syntax = |problem: String| BadDeviceSelection::Syntax {
            text: text.to_string(),
            problem,
        };
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(DeviceSelection::All);
        }
        if trimmed.is_empty() {
            return Err(syntax("no GPU named".into()));
        }
        let mut ordinals = Vec::new();
        for item in trimmed.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(syntax("an empty item between commas".into()));
            }
            if !item.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax(format!("{item:?} is not a GPU ordinal")));
            }
            let ordinal: usize = item
                .parse()
                .map_err(|_| syntax(format!("{item:?} is too large to be a GPU ordinal")))?;
            if ordinals.contains(&ordinal) {
                return Err(BadDeviceSelection::Duplicate { ordinal });
            }
            ordinals.push(ordinal);
        }
        Ok(DeviceSelection::Ordinals(ordinals))
    }
}

impl fmt::Display for DeviceSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelection::All => f.write_str("all"),
            DeviceSelection::Ordinals(o) => {
                let list: Vec<String> = o.iter().map(usize::to_string).collect();
                f.write_str(&list.join(","))
            }
        }
    }
}

impl DeviceSelection {
    /// The ordinals selected on a host of `count` GPUs; an ordinal beyond them is refused with
    /// the count.
    pub fn ordinals(&self, count: usize) -> Result<Vec<usize>, GpuUnavailable> {
        match self {
            DeviceSelection::All => Ok((0..count).collect()),
            DeviceSelection::Ordinals(list) => match list.iter().find(|&&o| o >= count) {
                Some(&ordinal) => Err(GpuUnavailable::NoSuchDevice { ordinal, count }),
                None => Ok(list.clone()),
            },
        }
    }

    /// Opens every selected GPU through `toolchain`, in the selection's order.
    pub fn open(&self, toolchain: &Toolchain) -> Result<Vec<Gpu>, GpuUnavailable> {
        self.ordinals(toolchain.device_count())?
            .into_iter()
            .map(|o| Gpu::open(toolchain, o))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<DeviceSelection, BadDeviceSelection> {
        s.parse()
    }

    #[test]
    fn all_and_lists_parse() {
        assert_eq!(parse("all").unwrap(), DeviceSelection::All);
        assert_eq!(parse(" ALL ").unwrap(), DeviceSelection::All);
        assert_eq!(parse("0").unwrap(), DeviceSelection::Ordinals(vec![0]));
        assert_eq!(
            parse("2, 0,7").unwrap(),
            DeviceSelection::Ordinals(vec![2, 0, 7])
        );
        assert_eq!(parse("2, 0,7").unwrap().to_string(), "2,0,7");
        assert_eq!(DeviceSelection::default().to_string(), "all");
    }

    #[test]
    fn bad_text_is_refused_in_one_line() {
        for (text, says) in [
            ("", "no GPU named"),
            ("  ", "no GPU named"),
            ("0,,1", "an empty item"),
            ("0,", "an empty item"),
            ("-1", "\"-1\" is not a GPU ordinal"),
            ("gpu0", "\"gpu0\" is not a GPU ordinal"),
            ("1.5", "\"1.5\" is not a GPU ordinal"),
            ("all,0", "\"all\" is not a GPU ordinal"),
            ("+1", "\"+1\" is not a GPU ordinal"),
            ("99999999999999999999999", "too large"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(e.contains("like 0,2"), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn duplicates_are_refused() {
        let e = parse("0,1,0").unwrap_err();
        assert_eq!(e, BadDeviceSelection::Duplicate { ordinal: 0 });
        assert_eq!(e.to_string(), "GPU 0 is listed twice; list each GPU once");
        assert!(parse("3, 3").is_err());
    }

    #[test]
    fn ordinals_are_checked_against_the_host() {
        assert_eq!(DeviceSelection::All.ordinals(3).unwrap(), vec![0, 1, 2]);
        assert_eq!(
            DeviceSelection::All.ordinals(0).unwrap(),
            Vec::<usize>::new()
        );
        let two = parse("1,0").unwrap();
        assert_eq!(two.ordinals(2).unwrap(), vec![1, 0]);
        let e = parse("0,2").unwrap().ordinals(2).unwrap_err();
        assert_eq!(
            e,
            GpuUnavailable::NoSuchDevice {
                ordinal: 2,
                count: 2
            }
        );
        assert!(e
            .to_string()
            .contains("GPU 2 was asked for but the driver sees 2"));
    }

    #[test]
    fn a_toolchain_is_shared_across_threads() {
        fn check<T: Send + Sync + Clone>() {}
        check::<Toolchain>();
    }
}
