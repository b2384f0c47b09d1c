//! The device report: what the driver says about a GPU ([`DeviceInfo`]) and two measured ceilings
//! ([`Ceilings`]): device-to-device copy bandwidth and FP32/FP64 FMA throughput, whose ratio is the
//! "slug factor" (how many times faster FP32 is than FP64: 2 on data-centre GPUs, 32 or 64 on
//! GeForce; the dissertation in shared/seeds, Table 2).
//!
//! Datasheet figures are leads; measured ceilings are what timings are compared with, so they are
//! measured once per device and driver and cached as JSON beside the compile cache.

use crate::cache::{atomic_write, cache_root, fnv1a64};
use crate::error::{DriverStatus, GpuError};
use crate::flags::FlagSet;
use crate::gpu::Gpu;
use crate::launch::{DType, KernelArg, LaunchDims};
use crate::nvrtc::Source;
use crate::timing::TimingOptions;
use crate::toolchain::device_count;
use crate::version::{Arch, CudaVersion};
use cudarc::driver::sys::CUdevice_attribute_enum as Attr;
use cudarc::driver::CudaContext;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Names the measuring method; bump when the kernels or sizes change so cached ceilings re-measure.
pub const CEILINGS_METHOD: &str = "ceilings/1: dtod copy min(1 GiB, free/4), median of 20; FMA 8 chains x 16 unrolled, 256-thread blocks, 4 full waves, ~20 ms, median of 10";

/// What the driver reports about a device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The CUDA ordinal (after CUDA_VISIBLE_DEVICES).
    pub ordinal: usize,
    /// The device name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability (9.0 for Hopper).
    pub compute_capability: Arch,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Global memory, bytes.
    pub total_memory_bytes: u64,
    /// L2 cache, bytes.
    pub l2_bytes: u64,
    /// Peak SM clock; `None` where the driver no longer reports it.
    pub sm_clock_mhz: Option<u32>,
    /// Peak memory clock; `None` where the driver no longer reports it.
    pub memory_clock_mhz: Option<u32>,
    /// Memory bus width in bits, where reported.
    pub memory_bus_bits: Option<u32>,
    /// Whether ECC is on, where reported.
    pub ecc_enabled: Option<bool>,
    /// Threads per warp.
    pub warp_size: u32,
    /// Threads a block may have at most (kernels may allow fewer).
    pub max_threads_per_block: u32,
    /// Resident threads per SM at most.
    pub max_threads_per_sm: u32,
    /// Largest block, per dimension.
    pub max_block_dims: (u32, u32, u32),
    /// Largest grid, per dimension.
    pub max_grid_dims: (u32, u32, u32),
    /// Shared memory a block may have after opting in (above the default 48 KiB).
    pub max_shared_per_block_optin: u32,
    /// The CUDA version the driver supports.
    pub driver: CudaVersion,
    /// The NVRTC version compiling for this device.
    pub nvrtc: CudaVersion,
}

impl DeviceInfo {
    /// The compute capability as an architecture (the same value, named for targets).
    pub fn arch(&self) -> Arch {
        self.compute_capability
    }

    /// Peak memory bandwidth from clock and bus width (double data rate), in GB/s: a datasheet
    /// figure to set the measured copy bandwidth against.
    pub fn peak_bandwidth_gb_s(&self) -> Option<f64> {
        let (clk, bus) = (self.memory_clock_mhz?, self.memory_bus_bits?);
        Some(2.0 * f64::from(clk) * 1e6 * f64::from(bus) / 8.0 / 1e9)
    }

    pub(crate) fn query(
        ctx: &Arc<CudaContext>,
        ordinal: usize,
        driver: CudaVersion,
        nvrtc: CudaVersion,
    ) -> Result<DeviceInfo, DriverStatus> {
        let get = |a: Attr| ctx.attribute(a).map_err(DriverStatus::from);
        let pos = |a: Attr| get(a).map(|v| v.max(0) as u32);
        // Attributes a newer driver may drop (clock rates are deprecated in CUDA 13) are optional.
        let opt = |a: Attr| get(a).ok().filter(|&v| v > 0).map(|v| v as u32);
        Ok(DeviceInfo {
            ordinal,
            name: ctx.name().map_err(DriverStatus::from)?,
            compute_capability: Arch::new(
                pos(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                pos(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: pos(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory_bytes: ctx.total_mem().map_err(DriverStatus::from)? as u64,
            l2_bytes: u64::from(pos(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?),
            sm_clock_mhz: opt(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|khz| khz / 1000),
            memory_clock_mhz: opt(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
                .map(|khz| khz / 1000),
            memory_bus_bits: opt(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
            ecc_enabled: get(Attr::CU_DEVICE_ATTRIBUTE_ECC_ENABLED)
                .ok()
                .map(|v| v != 0),
            warp_size: pos(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_threads_per_block: pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_sm: pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_block_dims: (
                pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ),
            max_grid_dims: (
                pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                pos(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ),
            max_shared_per_block_optin: pos(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            driver,
            nvrtc,
        })
    }
}

/// Measured limits of a device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Device-to-device copy, counting bytes read plus bytes written, GB/s (10^9 B/s).
    pub copy_gb_s: f64,
    /// Bytes in each of the two copy buffers.
    pub copy_bytes: u64,
    /// FP32 FMA throughput, GFLOP/s (an FMA counts two).
    pub fp32_fma_gflop_s: f64,
    /// FP64 FMA throughput, GFLOP/s (an FMA counts two).
    pub fp64_fma_gflop_s: f64,
    /// FP32 over FP64 FMA throughput.
    pub slug_factor: f64,
    /// [`CEILINGS_METHOD`] when measured.
    pub method: String,
    /// Seconds since 1970-01-01 UTC.
    pub measured_unix_s: u64,
}

/// A device's driver facts and (optionally) its measured ceilings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    /// What the driver reports.
    pub info: DeviceInfo,
    /// The measured ceilings, when asked for.
    pub ceilings: Option<Ceilings>,
    /// Whether the ceilings were read from the cache rather than measured now.
    pub ceilings_from_cache: bool,
    /// Warnings: NVRTC newer than the driver, an unwritable cache...
    pub notes: Vec<String>,
}

/// What [`Gpu::report`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// Include ceilings (cached or measured); `false` reports driver facts only.
    pub ceilings: bool,
    /// Measure even when cached ceilings exist.
    pub refresh: bool,
    /// Where ceilings are cached; `None` disables the cache. Default: `<cache_root>/devices`.
    pub cache_dir: Option<PathBuf>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            ceilings: true,
            refresh: false,
            cache_dir: cache_root().map(|r| r.join("devices")),
        }
    }
}

/// The cache file for a device's ceilings: keyed by name and driver, since both change them.
pub fn ceilings_cache_file(dir: &Path, info: &DeviceInfo) -> PathBuf {
    let slug: String = info
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    // The hash keeps names that slug alike apart ("A100 80GB" vs "A100-80GB").
    let key = format!("{}\n{}", info.name, info.driver);
    dir.join(format!(
        "{slug}-cuda{}-{:08x}.json",
        info.driver,
        fnv1a64(key.as_bytes()) as u32
    ))
}

#[derive(Debug, Serialize, Deserialize)]
struct CachedCeilings {
    device: String,
    driver: CudaVersion,
    ceilings: Ceilings,
}

/// Cached ceilings for this device, if present, readable, and from the current method.
fn read_cached(path: &Path, info: &DeviceInfo) -> Option<Ceilings> {
    let text = std::fs::read_to_string(path).ok()?;
    let cached: CachedCeilings = serde_json::from_str(&text).ok()?;
    (cached.device == info.name
        && cached.driver == info.driver
        && cached.ceilings.method == CEILINGS_METHOD)
        .then_some(cached.ceilings)
}

fn write_cached(path: &Path, info: &DeviceInfo, ceilings: &Ceilings) -> std::io::Result<()> {
    let cached = CachedCeilings {
        device: info.name.clone(),
        driver: info.driver,
        ceilings: ceilings.clone(),
    };
    let json = serde_json::to_string_pretty(&cached).map_err(std::io::Error::other)?;
    atomic_write(path, json.as_bytes())
}

/// FMA chains per thread: independent, so each thread keeps several FMAs in flight and the
/// pipeline, not latency, sets the rate. Fixed point of x = a x + b is b / (1 - a) = 1, so values
/// stay normal (no denormal slow paths) and finite.
const FMA_SOURCE: &str = r#"
#define CHAINS 8
#define UNROLL 16
__device__ __forceinline__ float fma_(float x, float a, float b) { return fmaf(x, a, b); }
__device__ __forceinline__ double fma_(double x, double a, double b) { return fma(x, a, b); }
template <typename T>
__device__ void chains(T* out, T a, T b, int iters) {
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    T x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = (T)gid * (T)1e-7 + (T)c;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int c = 0; c < CHAINS; ++c) x[c] = fma_(x[c], a, b);
        }
    }
    T s = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    // Stored so the compiler cannot drop the chains.
    out[gid] = s;
}
extern "C" __global__ void fma_f32(float* out, float a, float b, int iters) { chains<float>(out, a, b, iters); }
extern "C" __global__ void fma_f64(double* out, double a, double b, int iters) { chains<double>(out, a, b, iters); }
"#;
const FMA_PER_ITER: f64 = 8.0 * 16.0;

impl Gpu {
    /// The device report: driver facts, plus ceilings from the cache or measured now.
    pub fn report(&self, opts: &ReportOptions) -> Result<DeviceReport, GpuError> {
        let info = self.info().clone();
        let mut notes = self.notes().to_vec();
        if !opts.ceilings {
            return Ok(DeviceReport {
                info,
                ceilings: None,
                ceilings_from_cache: false,
                notes,
            });
        }
        let path = opts
            .cache_dir
            .as_deref()
            .map(|d| ceilings_cache_file(d, &info));
        if !opts.refresh {
            if let Some(c) = path.as_deref().and_then(|p| read_cached(p, &info)) {
                return Ok(DeviceReport {
                    info,
                    ceilings: Some(c),
                    ceilings_from_cache: true,
                    notes,
                });
            }
        }
        let ceilings = self.measure_ceilings()?;
        if let Some(p) = &path {
            if let Err(e) = write_cached(p, &info, &ceilings) {
                notes.push(format!(
                    "could not cache the ceilings in {}: {e}",
                    p.display()
                ));
            }
        }
        Ok(DeviceReport {
            info,
            ceilings: Some(ceilings),
            ceilings_from_cache: false,
            notes,
        })
    }

    /// Measures copy bandwidth and FMA throughput now (about a second on an H100).
    pub fn measure_ceilings(&self) -> Result<Ceilings, GpuError> {
        let (copy_gb_s, copy_bytes) = self.measure_copy_bandwidth()?;
        let fp32 = self.measure_fma_gflops(DType::F32)?;
        let fp64 = self.measure_fma_gflops(DType::F64)?;
        Ok(Ceilings {
            copy_gb_s,
            copy_bytes,
            fp32_fma_gflop_s: fp32,
            fp64_fma_gflop_s: fp64,
            slug_factor: fp32 / fp64,
            method: CEILINGS_METHOD.to_string(),
            measured_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        })
    }

    /// Device-to-device copy rate in GB/s (bytes read + written), and the buffer size used.
    pub fn measure_copy_bandwidth(&self) -> Result<(f64, u64), GpuError> {
        let free = self
            .ctx
            .mem_get_info()
            .map_err(|e| GpuError::driver("reading free GPU memory", e))?
            .0 as u64;
        // Large enough to dwarf L2 many times over; a quarter of free memory at most, since two
        // buffers are needed and other work may share the GPU.
        let bytes = (1u64 << 30).min(free / 4) & !0xfff;
        let len = (bytes / 4).max(1) as usize;
        let src = self.alloc_zeros("copy source", DType::U32, len)?;
        let mut dst = self.alloc_zeros("copy destination", DType::U32, len)?;
        let t = self.time_with(
            TimingOptions {
                warmup: 3,
                reps: 20,
            },
            1,
            |_| self.copy(&src, &mut dst),
        )?;
        let moved = 2.0 * (len * 4) as f64;
        Ok((moved / (t.median_ms * 1e-3) / 1e9, (len * 4) as u64))
    }

    /// FMA throughput in GFLOP/s (an FMA counts 2 flops) for `F32` or `F64`.
    pub fn measure_fma_gflops(&self, dtype: DType) -> Result<f64, GpuError> {
        let (kernel, a, b) = match dtype {
            DType::F32 => (
                "fma_f32",
                KernelArg::from(0.999f32),
                KernelArg::from(0.001f32),
            ),
            DType::F64 => (
                "fma_f64",
                KernelArg::from(0.999f64),
                KernelArg::from(0.001f64),
            ),
            other => {
                return Err(GpuError::BadArguments {
                    kernel: "fma ceiling".into(),
                    problem: format!("measures f32 or f64, not {other}"),
                })
            }
        };
        let module = self.build(
            &Source::new("mantissa_ceilings.cu", FMA_SOURCE),
            FlagSet::DEFAULT,
        )?;
        let block = 256u32;
        let info = self.info();
        let blocks_per_wave = info.sm_count * (info.max_threads_per_sm / block).max(1);
        let dims = LaunchDims::new((4 * blocks_per_wave, 1, 1), (block, 1, 1));
        let out = self.alloc_zeros(
            "fma output",
            dtype,
            (dims.blocks() * u64::from(block)) as usize,
        )?;
        let time = |iters: i32, reps: u32| {
            let args = vec![KernelArg::from(&out), a, b, KernelArg::from(iters)];
            self.time_kernel(
                &module,
                kernel,
                dims,
                &[args],
                TimingOptions { warmup: 1, reps },
            )
        };
        // Calibrate the loop count to about 20 ms a launch: long enough that launch overhead and
        // the last wave's tail are noise, short enough to finish quickly on slow-FP64 GPUs.
        let probe_iters = 64;
        let probe = time(probe_iters, 3)?.median_ms.max(1e-3);
        let iters = (f64::from(probe_iters) * 20.0 / probe).clamp(64.0, f64::from(1 << 20)) as i32;
        let t = time(iters, 10)?;
        let flops = 2.0 * FMA_PER_ITER * f64::from(iters) * dims.blocks() as f64 * f64::from(block);
        Ok(flops / (t.median_ms * 1e-3) / 1e9)
    }
}

/// Reports for every visible GPU (each probed in turn).
pub fn report_all(opts: &ReportOptions) -> Result<Vec<DeviceReport>, GpuError> {
    let n = device_count()?;
    (0..n)
        .map(|i| Gpu::probe_device(i).map_err(GpuError::from)?.report(opts))
        .collect()
}

impl DeviceReport {
    /// Pretty JSON, for `mantissa devices --json` and records.
    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and options: serialisation cannot fail (non-finite floats
        // become null).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// `YYYY-MM-DD` (UTC) from Unix seconds (Howard Hinnant's civil-from-days).
fn date(unix_s: u64) -> String {
    let z = (unix_s / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

impl fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.info;
        let row = |f: &mut fmt::Formatter<'_>, k: &str, v: String| writeln!(f, "  {k:<20} {v}");
        writeln!(f, "GPU {}: {}", i.ordinal, i.name)?;
        row(
            f,
            "compute capability",
            format!("{} ({})", i.compute_capability, i.compute_capability.sm()),
        )?;
        row(f, "multiprocessors", i.sm_count.to_string())?;
        let mut mem = gib(i.total_memory_bytes);
        if let (Some(bus), Some(clk)) = (i.memory_bus_bits, i.memory_clock_mhz) {
            mem += &format!(", {bus}-bit bus at {clk} MHz");
        }
        if let Some(peak) = i.peak_bandwidth_gb_s() {
            mem += &format!(" (peak {peak:.0} GB/s)");
        }
        if let Some(ecc) = i.ecc_enabled {
            mem += if ecc { ", ECC on" } else { ", ECC off" };
        }
        row(f, "memory", mem)?;
        row(f, "L2 cache", mib(i.l2_bytes))?;
        row(
            f,
            "SM clock",
            i.sm_clock_mhz
                .map_or("not reported".into(), |c| format!("{c} MHz")),
        )?;
        row(
            f,
            "driver / NVRTC",
            format!("CUDA {} / NVRTC {}", i.driver, i.nvrtc),
        )?;
        match &self.ceilings {
            Some(c) => {
                row(
                    f,
                    "copy bandwidth",
                    format!("{:.0} GB/s (device to device, read + write)", c.copy_gb_s),
                )?;
                row(f, "FP32 FMA", format!("{:.0} GFLOP/s", c.fp32_fma_gflop_s))?;
                row(f, "FP64 FMA", format!("{:.0} GFLOP/s", c.fp64_fma_gflop_s))?;
                row(
                    f,
                    "slug factor",
                    format!("{:.1} (FP32 / FP64 FMA throughput)", c.slug_factor),
                )?;
                let when = date(c.measured_unix_s);
                row(
                    f,
                    "ceilings",
                    if self.ceilings_from_cache {
                        format!("measured {when}, from the cache (refresh to re-measure)")
                    } else {
                        format!("measured now ({when})")
                    },
                )?;
            }
            None => row(f, "ceilings", "not measured".into())?,
        }
        for n in &self.notes {
            writeln!(f, "  note: {n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn h100() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: Arch::new(9, 0),
            sm_count: 132,
            total_memory_bytes: 85_520_809_984,
            l2_bytes: 52_428_800,
            sm_clock_mhz: Some(1980),
            memory_clock_mhz: Some(2619),
            memory_bus_bits: Some(5120),
            ecc_enabled: Some(true),
            warp_size: 32,
            max_threads_per_block: 1024,
            max_threads_per_sm: 2048,
            max_block_dims: (1024, 1024, 64),
            max_grid_dims: (2_147_483_647, 65535, 65535),
            max_shared_per_block_optin: 232_448,
            driver: CudaVersion::new(13, 0),
            nvrtc: CudaVersion::new(13, 0),
        }
    }

    fn ceilings() -> Ceilings {
        Ceilings {
            copy_gb_s: 3012.4,
            copy_bytes: 1 << 30,
            fp32_fma_gflop_s: 51234.0,
            fp64_fma_gflop_s: 25617.0,
            slug_factor: 2.0,
            method: CEILINGS_METHOD.into(),
            measured_unix_s: 1_763_596_800, // 2025-11-20
        }
    }

    #[test]
    fn report_table_and_json() {
        let r = DeviceReport {
            info: h100(),
            ceilings: Some(ceilings()),
            ceilings_from_cache: true,
            notes: vec!["a note".into()],
        };
        let table = r.to_string();
        for needle in [
            "GPU 0: NVIDIA H100 80GB HBM3",
            "compute capability   9.0 (sm_90)",
            "multiprocessors      132",
            "5120-bit bus at 2619 MHz (peak 3352 GB/s), ECC on",
            "L2 cache             50.0 MiB",
            "CUDA 13.0 / NVRTC 13.0",
            "copy bandwidth       3012 GB/s",
            "slug factor          2.0",
            "measured 2025-11-20, from the cache",
            "note: a note",
        ] {
            assert!(table.contains(needle), "missing {needle:?} in\n{table}");
        }
        let json = r.to_json();
        let back: DeviceReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert!(json.contains("\"slug_factor\": 2.0"));
    }

    #[test]
    fn ceilings_cache_is_keyed_by_device_driver_and_method() {
        let dir = crate::cache::tests::scratch_dir("ceilings");
        let info = h100();
        let path = ceilings_cache_file(&dir, &info);
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("nvidia-h100-80gb-hbm3-cuda13.0-"));
        assert_eq!(read_cached(&path, &info), None);
        write_cached(&path, &info, &ceilings()).unwrap();
        assert_eq!(read_cached(&path, &info), Some(ceilings()));

        let mut newer_driver = info.clone();
        newer_driver.driver = CudaVersion::new(13, 1);
        assert_ne!(ceilings_cache_file(&dir, &newer_driver), path);
        assert_eq!(
            read_cached(&path, &newer_driver),
            None,
            "another driver re-measures"
        );

        let mut old = ceilings();
        old.method = "ceilings/0".into();
        write_cached(&path, &info, &old).unwrap();
        assert_eq!(
            read_cached(&path, &info),
            None,
            "another method re-measures"
        );

        // Measured values read back bit-exactly (serde_json's default float parser was off by
        // one ulp on this value, measured on an H200).
        let mut measured = ceilings();
        measured.fp32_fma_gflop_s = 65316.910307650964;
        write_cached(&path, &info, &measured).unwrap();
        assert_eq!(read_cached(&path, &info), Some(measured));

        std::fs::write(&path, "{ torn").unwrap();
        assert_eq!(read_cached(&path, &info), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date(1_763_596_800), "2025-11-20");
    }

    /// Needs NVRTC only: the ceiling kernels are what they claim, 8 x 16 FMAs of the right
    /// precision per loop trip, kept in registers (no local memory).
    #[test]
    fn nvrtc_ceiling_kernels_are_pure_fma_loops() {
        let Some(c) = crate::testing::require_nvrtc_or_skip() else {
            return;
        };
        let src = Source::new("mantissa_ceilings.cu", FMA_SOURCE);
        let ptx = c
            .compile(
                &src,
                FlagSet::DEFAULT,
                crate::Target::Cubin(Arch::new(9, 0)),
            )
            .unwrap_or_else(|e| panic!("{e}"))
            .ptx
            .clone();
        let entries = mantissa_ptx::entry::entry_signatures_of_ptx(&ptx);
        for (kernel, fma) in [("fma_f32", "fma.rn.f32"), ("fma_f64", "fma.rn.f64")] {
            let body = ptx
                .split(".entry ")
                .find(|b| b.starts_with(kernel))
                .unwrap_or_else(|| panic!("{kernel} missing"));
            let body = body.split(".entry ").next().unwrap_or(body);
            let count = body
                .lines()
                .filter(|l| l.trim_start().starts_with(fma))
                .count();
            assert!(count >= FMA_PER_ITER as usize, "{kernel}: {count} {fma}");
            assert!(!body.contains(".local"), "{kernel} spills to local memory");
            let sig = entries.iter().find(|e| e.name == kernel).unwrap();
            assert_eq!(sig.params.len(), 4);
        }
    }

    #[test]
    fn peak_bandwidth_formula() {
        let p = h100().peak_bandwidth_gb_s().unwrap();
        assert!((p - 3352.3).abs() < 0.1, "{p}");
    }
}
