//! Run-time kernel arguments: typed host data, device buffers, scalars, launch dimensions, and the
//! checks that make a launch built from a description (a TOML harness spec, later) fail with a
//! message instead of reading garbage.
//!
//! A cubin or PTX image says nothing the driver checks about a kernel's parameters: a wrong
//! argument count makes `cuLaunchKernel` read past the argument array. The PTX we keep does say, in
//! each `.entry`'s `.param` list, so arguments are checked against it before every launch.

use cudarc::driver::CudaSlice;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Element types a buffer or scalar argument may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F64,
    I32,
    U32,
    U64,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::U32, DType::U64];

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::U64 => "u64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::U64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type name that is not one of [`DType::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown element type '{0}'; accepted: f32, f64, i32, u32, u64")]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        DType::ALL
            .into_iter()
            .find(|d| d.name() == t)
            .ok_or_else(|| UnknownDType(s.to_string()))
    }
}

/// Host data of one element type, for uploads and downloads.
#[derive(Debug, Clone, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl HostData {
    pub fn dtype(&self) -> DType {
        match self {
            HostData::F32(_) => DType::F32,
            HostData::F64(_) => DType::F64,
            HostData::I32(_) => DType::I32,
            HostData::U32(_) => DType::U32,
            HostData::U64(_) => DType::U64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostData::F32(v) => v.len(),
            HostData::F64(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::U32(v) => v.len(),
            HostData::U64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> u64 {
        self.len() as u64 * self.dtype().size() as u64
    }
}

macro_rules! host_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<Vec<$t>> for HostData {
            fn from(v: Vec<$t>) -> Self { HostData::$v(v) }
        }
    )*};
}
host_from!(f32 => F32, f64 => F64, i32 => I32, u32 => U32, u64 => U64);

/// A scalar kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    F32(f32),
    F64(f64),
    I32(i32),
    U32(u32),
    U64(u64),
}

impl Scalar {
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
            Scalar::I32(_) => DType::I32,
            Scalar::U32(_) => DType::U32,
            Scalar::U64(_) => DType::U64,
        }
    }
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self { Scalar::$v(v) }
        }
        impl From<$t> for KernelArg<'_> {
            fn from(v: $t) -> Self { KernelArg::Scalar(Scalar::$v(v)) }
        }
    )*};
}
scalar_from!(f32 => F32, f64 => F64, i32 => I32, u32 => U32, u64 => U64);

/// Device memory of one element type, with a name for messages.
#[derive(Debug)]
pub struct DeviceBuffer {
    pub(crate) name: String,
    pub(crate) data: DeviceData,
}

#[derive(Debug)]
pub(crate) enum DeviceData {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    I32(CudaSlice<i32>),
    U32(CudaSlice<u32>),
    U64(CudaSlice<u64>),
}

impl DeviceBuffer {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dtype(&self) -> DType {
        match &self.data {
            DeviceData::F32(_) => DType::F32,
            DeviceData::F64(_) => DType::F64,
            DeviceData::I32(_) => DType::I32,
            DeviceData::U32(_) => DType::U32,
            DeviceData::U64(_) => DType::U64,
        }
    }

    pub fn len(&self) -> usize {
        match &self.data {
            DeviceData::F32(s) => s.len(),
            DeviceData::F64(s) => s.len(),
            DeviceData::I32(s) => s.len(),
            DeviceData::U32(s) => s.len(),
            DeviceData::U64(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> u64 {
        self.len() as u64 * self.dtype().size() as u64
    }
}

/// One kernel argument: a device buffer (passed as its pointer) or a scalar.
#[derive(Debug, Clone, Copy)]
pub enum KernelArg<'a> {
    Buffer(&'a DeviceBuffer),
    Scalar(Scalar),
}

impl<'a> From<&'a DeviceBuffer> for KernelArg<'a> {
    fn from(b: &'a DeviceBuffer) -> Self {
        KernelArg::Buffer(b)
    }
}

impl fmt::Display for KernelArg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelArg::Buffer(b) => write!(f, "buffer '{}' ({} x {})", b.name, b.len(), b.dtype()),
            KernelArg::Scalar(s) => write!(f, "{} scalar", s.dtype()),
        }
    }
}

/// Grid and block shape of a launch, and its dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchDims {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

impl LaunchDims {
    pub fn new(grid: (u32, u32, u32), block: (u32, u32, u32)) -> Self {
        LaunchDims {
            grid,
            block,
            shared_bytes: 0,
        }
    }

    /// Enough `block`-thread blocks along x to cover `n` threads. A count past the grid limit is
    /// saturated and then refused by the launch check, with the numbers.
    pub fn linear(n: u64, block: u32) -> Self {
        let blocks = n.div_ceil(u64::from(block.max(1)));
        LaunchDims::new(
            (u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1),
            (block, 1, 1),
        )
    }

    pub fn with_shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }

    pub fn threads_per_block(&self) -> u64 {
        u64::from(self.block.0) * u64::from(self.block.1) * u64::from(self.block.2)
    }

    pub fn blocks(&self) -> u64 {
        u64::from(self.grid.0) * u64::from(self.grid.1) * u64::from(self.grid.2)
    }
}

impl fmt::Display for LaunchDims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (g, b) = (self.grid, self.block);
        write!(
            f,
            "grid ({}, {}, {}) x block ({}, {}, {})",
            g.0, g.1, g.2, b.0, b.1, b.2
        )?;
        if self.shared_bytes > 0 {
            write!(f, ", {} B dynamic shared", self.shared_bytes)?;
        }
        Ok(())
    }
}

/// What the device and a kernel allow; read once per kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Per kernel: depends on its register use.
    pub max_threads_per_block: u32,
    pub max_block: (u32, u32, u32),
    pub max_grid: (u32, u32, u32),
    /// Dynamic shared memory the kernel may ask for (the opt-in limit minus its static use).
    pub max_dynamic_shared: u32,
    pub registers_per_thread: u32,
}

/// Checks a launch shape against the limits, so a bad one is refused with numbers rather than
/// an opaque CUDA_ERROR_INVALID_VALUE.
pub fn check_dims(dims: &LaunchDims, lim: &LaunchLimits) -> Result<(), String> {
    let (g, b) = (dims.grid, dims.block);
    if [g.0, g.1, g.2, b.0, b.1, b.2].contains(&0) {
        return Err(format!(
            "{dims}: every grid and block dimension must be at least 1"
        ));
    }
    let threads = dims.threads_per_block();
    if threads > u64::from(lim.max_threads_per_block) {
        return Err(format!(
            "{dims}: {threads} threads per block, but this kernel allows at most {} (it uses {} registers per thread); use a smaller block",
            lim.max_threads_per_block, lim.registers_per_thread
        ));
    }
    let (mb, mg) = (lim.max_block, lim.max_grid);
    if b.0 > mb.0 || b.1 > mb.1 || b.2 > mb.2 {
        return Err(format!(
            "{dims}: block dimensions may be at most ({}, {}, {})",
            mb.0, mb.1, mb.2
        ));
    }
    if g.0 > mg.0 || g.1 > mg.1 || g.2 > mg.2 {
        return Err(format!(
            "{dims}: grid dimensions may be at most ({}, {}, {})",
            mg.0, mg.1, mg.2
        ));
    }
    if dims.shared_bytes > lim.max_dynamic_shared {
        return Err(format!(
            "{dims}: {} bytes of dynamic shared memory asked, this kernel can have at most {}",
            dims.shared_bytes, lim.max_dynamic_shared
        ));
    }
    Ok(())
}

/// One `.param` of a PTX entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelParam {
    pub name: String,
    /// The PTX type without its dot: `u64`, `f32`, `b8`...
    pub ptx_type: String,
    pub bytes: usize,
}

/// A kernel's name and parameters, read from PTX.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSignature {
    pub name: String,
    pub params: Vec<KernelParam>,
}

fn ptx_type_size(t: &str) -> Option<usize> {
    Some(match t {
        "b8" | "u8" | "s8" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        _ => return None,
    })
}

/// The `.entry` signatures in PTX text, in order.
pub fn parse_entries(ptx: &str) -> Vec<KernelSignature> {
    // Drop `//` comments so that text in them is never taken for code.
    let code: String = ptx
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(pos) = rest.find(".entry") {
        let before_ok = rest[..pos]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let after = &rest[pos + ".entry".len()..];
        rest = after;
        if !before_ok || !after.starts_with(char::is_whitespace) {
            continue;
        }
        let after = after.trim_start();
        let end = after
            .find(|c: char| c == '(' || c == '{' || c == ';' || c.is_whitespace())
            .unwrap_or(after.len());
        let name = after[..end].to_string();
        let tail = after[end..].trim_start();
        let mut params = Vec::new();
        if let Some(list) = tail.strip_prefix('(') {
            let close = list.find(')').unwrap_or(list.len());
            for p in list[..close].split(',') {
                let tokens: Vec<&str> = p.split_whitespace().collect();
                if tokens.first() != Some(&".param") {
                    continue;
                }
                let ty = tokens
                    .iter()
                    .filter_map(|t| t.strip_prefix('.'))
                    .find(|t| ptx_type_size(t).is_some());
                let (Some(ty), Some(last)) = (ty, tokens.last()) else {
                    continue;
                };
                let (pname, count) = match last.split_once('[') {
                    Some((n, c)) => (n, c.trim_end_matches(']').parse().unwrap_or(1)),
                    None => (*last, 1usize),
                };
                params.push(KernelParam {
                    name: pname.to_string(),
                    ptx_type: ty.to_string(),
                    bytes: ptx_type_size(ty).unwrap_or(0) * count,
                });
            }
        }
        out.push(KernelSignature { name, params });
    }
    out
}

/// Checks run-time arguments against a kernel's PTX parameters: count, size and kind.
pub fn check_args(sig: &KernelSignature, args: &[KernelArg]) -> Result<(), String> {
    if sig.params.len() != args.len() {
        return Err(format!(
            "takes {} parameters ({}), got {} arguments",
            sig.params.len(),
            sig.params
                .iter()
                .map(|p| format!(".{}", p.ptx_type))
                .collect::<Vec<_>>()
                .join(", "),
            args.len()
        ));
    }
    for (i, (p, a)) in sig.params.iter().zip(args).enumerate() {
        let ok = match (p.ptx_type.as_str(), a) {
            // Pointers are 64-bit integers in PTX.
            ("u64" | "s64" | "b64", KernelArg::Buffer(_)) => true,
            (_, KernelArg::Buffer(_)) => false,
            ("f32", KernelArg::Scalar(s)) => s.dtype() == DType::F32,
            ("f64", KernelArg::Scalar(s)) => s.dtype() == DType::F64,
            ("u32" | "s32", KernelArg::Scalar(s)) => matches!(s.dtype(), DType::I32 | DType::U32),
            ("u64" | "s64", KernelArg::Scalar(s)) => s.dtype() == DType::U64,
            // Untyped bits: only the size can be checked.
            ("b32" | "b64", KernelArg::Scalar(s)) => s.dtype().size() == p.bytes,
            _ => false,
        };
        if !ok {
            let want = match p.ptx_type.as_str() {
                "f32" => "an f32 scalar",
                "f64" => "an f64 scalar",
                "u32" | "s32" => "an i32 or u32 scalar",
                "u64" | "s64" | "b64" => "a buffer or a u64 scalar",
                "b32" => "a 4-byte scalar",
                _ => "a type run-time argument lists do not support (structs, 8/16-bit values)",
            };
            let got_float = matches!(a, KernelArg::Scalar(s) if s.dtype().is_float());
            let hint = if got_float && p.ptx_type.starts_with(['u', 's']) {
                " (an integer parameter given a float)"
            } else {
                ""
            };
            return Err(format!(
                "argument {} ({}, .{}) needs {want}, got {a}{hint}",
                i + 1,
                p.name,
                p.ptx_type
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
//
// Generated by NVIDIA NVVM Compiler
// .entry in_a_comment(
.version 9.0
.target sm_90
.address_size 64

	// .globl	saxpy

.visible .entry saxpy(
	.param .u64 saxpy_param_0,
	.param .f32 saxpy_param_1,
	.param .u64 .ptr .align 1 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	ret;
}
.visible .entry noargs()
{
	ret;
}
.entry with_struct(
	.param .align 8 .b8 with_struct_param_0[16],
	.param .f64 with_struct_param_1
)
.maxntid 256, 1, 1
{
	ret;
}
"#;

    #[test]
    fn entries_are_read_from_ptx() {
        let e = parse_entries(PTX);
        let names: Vec<&str> = e.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["saxpy", "noargs", "with_struct"]);
        let types: Vec<(&str, usize)> = e[0]
            .params
            .iter()
            .map(|p| (p.ptx_type.as_str(), p.bytes))
            .collect();
        assert_eq!(types, [("u64", 8), ("f32", 4), ("u64", 8), ("u32", 4)]);
        assert_eq!(e[0].params[2].name, "saxpy_param_2");
        assert!(e[1].params.is_empty());
        assert_eq!(e[2].params[0].bytes, 16);
        assert_eq!(e[2].params[0].ptx_type, "b8");
    }

    #[test]
    fn arguments_are_checked_against_the_signature() {
        let sig = &parse_entries(PTX)[0];
        // Device buffers need a GPU; the GPU tests check them. A u64 scalar fills a pointer slot.
        let scalars_only = [
            KernelArg::from(1u64),
            KernelArg::from(2.0f32),
            KernelArg::from(3u64),
            KernelArg::from(4i32),
        ];
        assert_eq!(check_args(sig, &scalars_only), Ok(()));

        let err = check_args(sig, &scalars_only[..3]).unwrap_err();
        assert_eq!(
            err,
            "takes 4 parameters (.u64, .f32, .u64, .u32), got 3 arguments"
        );

        let wrong = [
            KernelArg::from(1u64),
            KernelArg::from(2.0f64),
            KernelArg::from(3u64),
            KernelArg::from(4i32),
        ];
        let err = check_args(sig, &wrong).unwrap_err();
        assert_eq!(
            err,
            "argument 2 (saxpy_param_1, .f32) needs an f32 scalar, got f64 scalar"
        );

        let float_for_int = [
            KernelArg::from(1u64),
            KernelArg::from(2.0f32),
            KernelArg::from(3u64),
            KernelArg::from(4.0f32),
        ];
        let err = check_args(sig, &float_for_int).unwrap_err();
        assert!(
            err.ends_with("(an integer parameter given a float)"),
            "{err}"
        );

        let with_struct = &parse_entries(PTX)[2];
        let err = check_args(
            with_struct,
            &[KernelArg::from(1u64), KernelArg::from(1.0f64)],
        )
        .unwrap_err();
        assert!(err.contains("structs"), "{err}");
    }

    #[test]
    fn launch_shapes_are_checked_with_numbers() {
        let lim = LaunchLimits {
            max_threads_per_block: 512,
            max_block: (1024, 1024, 64),
            max_grid: (i32::MAX as u32, 65535, 65535),
            max_dynamic_shared: 48 * 1024,
            registers_per_thread: 128,
        };
        assert_eq!(
            check_dims(&LaunchDims::new((10, 1, 1), (256, 2, 1)), &lim),
            Ok(())
        );
        let err = check_dims(&LaunchDims::new((1, 1, 1), (1024, 1, 1)), &lim).unwrap_err();
        assert_eq!(err, "grid (1, 1, 1) x block (1024, 1, 1): 1024 threads per block, but this kernel allows at most 512 (it uses 128 registers per thread); use a smaller block");
        assert!(check_dims(&LaunchDims::new((0, 1, 1), (32, 1, 1)), &lim)
            .unwrap_err()
            .contains("at least 1"));
        assert!(
            check_dims(&LaunchDims::new((1, 70000, 1), (32, 1, 1)), &lim)
                .unwrap_err()
                .contains("grid dimensions may be at most")
        );
        assert!(check_dims(&LaunchDims::new((1, 1, 1), (1, 1, 128)), &lim)
            .unwrap_err()
            .contains("block dimensions may be at most"));
        let big_shared = LaunchDims::new((1, 1, 1), (32, 1, 1)).with_shared_bytes(64 * 1024);
        assert!(check_dims(&big_shared, &lim)
            .unwrap_err()
            .contains("65536 bytes of dynamic shared memory"));
    }

    #[test]
    fn linear_dims_cover_n() {
        assert_eq!(LaunchDims::linear(1000, 256).grid, (4, 1, 1));
        assert_eq!(LaunchDims::linear(1024, 256).grid, (4, 1, 1));
        assert_eq!(LaunchDims::linear(0, 256).grid, (0, 1, 1));
        assert_eq!(LaunchDims::linear(u64::MAX, 1).grid.0, u32::MAX);
        assert_eq!(LaunchDims::linear(10, 256).threads_per_block(), 256);
    }

    #[test]
    fn dtypes_parse_and_report_sizes() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
        }
        assert_eq!("F64".parse::<DType>(), Ok(DType::F64));
        assert_eq!(
            "f16".parse::<DType>().unwrap_err().to_string(),
            "unknown element type 'f16'; accepted: f32, f64, i32, u32, u64"
        );
        assert_eq!(HostData::from(vec![1.0f64; 3]).bytes(), 24);
        assert_eq!(HostData::from(vec![1u32; 3]).dtype(), DType::U32);
    }
}
