//! CUDA, NVRTC and PTX ISA version numbers, and the compute capability of a device.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A CUDA release as `major.minor` (driver API version or NVRTC version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CudaVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl CudaVersion {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion { major, minor }
    }

    /// Decodes `cuDriverGetVersion`'s integer (`1000 * major + 10 * minor`, e.g. 13000 for 13.0).
    pub fn from_driver_int(v: i32) -> Self {
        let v = v.max(0) as u32;
        CudaVersion::new(v / 1000, (v % 1000) / 10)
    }

    /// The newest PTX ISA this CUDA release's driver JIT accepts, where known.
    ///
    /// Only used to explain CUDA_ERROR_UNSUPPORTED_PTX_VERSION; the driver stays the judge.
    /// From the PTX ISA release notes (ISA 8.6 shipped with no public toolkit).
    pub fn max_ptx_isa(self) -> Option<PtxIsa> {
        let (major, minor) = match (self.major, self.minor) {
            (12, 0) => (8, 0),
            (12, 1) => (8, 1),
            (12, 2) => (8, 2),
            (12, 3) => (8, 3),
            (12, 4) => (8, 4),
            (12, 5) | (12, 6) => (8, 5),
            (12, 8) => (8, 7),
            (12, 9) => (8, 8),
            (13, 0) => (9, 0),
            _ => return None,
        };
        Some(PtxIsa { major, minor })
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A PTX ISA version, as written in a module's `.version` directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PtxIsa {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl PtxIsa {
    /// Reads the `.version X.Y` directive of PTX text (`mantissa_ptx::symbols::header`: the
    /// header before the first declaration, comments skipped).
    pub fn of_ptx(ptx: &str) -> Option<PtxIsa> {
        mantissa_ptx::symbols::header(ptx)
            .version
            .map(|(major, minor)| PtxIsa { major, minor })
    }
}

impl fmt::Display for PtxIsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A compute capability, e.g. 9.0 for Hopper; names the `sm_90` / `compute_90` targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Arch {
    /// Major number (9 for 9.0).
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl Arch {
    /// Compute capability `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Arch { major, minor }
    }

    /// The number NVRTC uses in target names and in `nvrtcGetSupportedArchs` (90 for 9.0).
    pub fn number(self) -> u32 {
        self.major * 10 + self.minor
    }

    /// Real architecture name, for cubin: `sm_90`.
    pub fn sm(self) -> String {
        format!("sm_{}", self.number())
    }

    /// Virtual architecture name, for PTX only: `compute_90`.
    pub fn compute(self) -> String {
        format!("compute_{}", self.number())
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Every compute capability NVIDIA has shipped (Maxwell to Blackwell): what `--arch` and a
/// spec's `arch` accept. A well-formed number outside this list (`sm_1000`) is a typo, refused
/// before any compiler sees it.
pub const KNOWN_ARCHS: [Arch; 21] = [
    Arch::new(5, 0),
    Arch::new(5, 2),
    Arch::new(5, 3),
    Arch::new(6, 0),
    Arch::new(6, 1),
    Arch::new(6, 2),
    Arch::new(7, 0),
    Arch::new(7, 2),
    Arch::new(7, 5),
    Arch::new(8, 0),
    Arch::new(8, 6),
    Arch::new(8, 7),
    Arch::new(8, 8),
    Arch::new(8, 9),
    Arch::new(9, 0),
    Arch::new(10, 0),
    Arch::new(10, 1),
    Arch::new(10, 3),
    Arch::new(11, 0),
    Arch::new(12, 0),
    Arch::new(12, 1),
];

/// The accepted names, `sm_50, sm_52, ..., sm_121`, for messages.
pub fn known_arch_names() -> String {
    KNOWN_ARCHS
        .iter()
        .map(|a| a.sm())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An architecture name that is not `sm_XY`, `compute_XY`, `XY` or `X.Y` of a known GPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GPU architecture '{0}'; accepted: {known} (also written compute_90, 90 or 9.0)", known = known_arch_names())]
pub struct BadArch(pub String);

impl FromStr for Arch {
    type Err = BadArch;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadArch(s.to_string());
        let t = s.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(t);
        let arch = if let Some((major, minor)) = digits.split_once('.') {
            let major = major.parse().map_err(|_| bad())?;
            let minor: u32 = minor.parse().map_err(|_| bad())?;
            if minor > 9 {
                return Err(bad());
            }
            Arch::new(major, minor)
        } else {
            if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let n: u32 = digits.parse().map_err(|_| bad())?;
            Arch::new(n / 10, n % 10)
        };
        if KNOWN_ARCHS.contains(&arch) {
            Ok(arch)
        } else {
            Err(bad())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_int_decodes() {
        assert_eq!(CudaVersion::from_driver_int(13000), CudaVersion::new(13, 0));
        assert_eq!(CudaVersion::from_driver_int(12090), CudaVersion::new(12, 9));
        assert_eq!(CudaVersion::new(13, 0).to_string(), "13.0");
    }

    #[test]
    fn driver_580_accepts_ptx_9_0() {
        let isa = CudaVersion::new(13, 0).max_ptx_isa();
        assert_eq!(isa, Some(PtxIsa { major: 9, minor: 0 }));
        assert_eq!(CudaVersion::new(14, 2).max_ptx_isa(), None);
    }

    #[test]
    fn ptx_version_is_read() {
        let ptx = "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0\n.target sm_90\n";
        assert_eq!(PtxIsa::of_ptx(ptx), Some(PtxIsa { major: 9, minor: 0 }));
        assert_eq!(PtxIsa::of_ptx(".target sm_90\n"), None);
    }

    #[test]
    fn arch_names_parse() {
        for s in ["sm_90", "compute_90", "90", "9.0", " sm_90 "] {
            assert_eq!(s.parse::<Arch>(), Ok(Arch::new(9, 0)), "{s}");
        }
        assert_eq!("sm_120".parse::<Arch>(), Ok(Arch::new(12, 0)));
        assert_eq!("8.6".parse::<Arch>().map(Arch::sm), Ok("sm_86".to_string()));
        for s in [
            "",
            "sm_",
            "9",
            "sm_9x",
            "9.10",
            "hopper",
            "sm_1000",
            "sm_91",
            "compute_99",
            "4.0",
        ] {
            let err = s.parse::<Arch>().unwrap_err().to_string();
            assert!(
                err.contains(&format!("'{s}'"))
                    && err.contains("accepted: sm_50, sm_52, sm_53, sm_60"),
                "{s}: {err}"
            );
            assert!(err.contains("sm_90, sm_100, sm_101, sm_103, sm_110, sm_120, sm_121 (also written compute_90, 90 or 9.0)"), "{err}");
        }
        for a in KNOWN_ARCHS {
            assert_eq!(a.sm().parse::<Arch>(), Ok(a));
            assert_eq!(a.to_string().parse::<Arch>(), Ok(a));
        }
    }
}
