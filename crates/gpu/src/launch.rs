//! Run-time kernel arguments: typed host data, device buffers, scalars, launch dimensions, and the
//! checks that make a launch built from a description (a TOML harness spec, later) fail with a
//! message instead of reading garbage.
//!
//! A cubin or PTX image says nothing the driver checks about a kernel's parameters: a wrong
//! argument count makes `cuLaunchKernel` read past the argument array. The PTX we keep does say, in
//! each `.entry`'s `.param` list, so arguments are checked against it before every launch.

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use mantissa_ptx::entry::EntrySignature;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Element types a buffer or scalar argument may have.
///
/// Half precision is carried as the `half` crate's [`half::f16`] and [`half::bf16`], the types
/// cudarc's `f16` feature implements its device traits for: a value then uploads, downloads and
/// passes as a kernel argument with its own type, not as `u16` bits a caller must convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// IEEE binary16 (`__half`).
    F16,
    /// bfloat16 (`__nv_bfloat16`).
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned byte.
    U8,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
}

impl DType {
    /// Every element type, in the order messages list them.
    pub const ALL: [DType; 9] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U32,
        DType::U64,
    ];

    /// The name used in specs and messages (`f32`, `bf16`, `i64`...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::U64 => "u64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// The accepted names, comma separated, for messages.
    pub fn accepted_names() -> String {
        DType::ALL.map(DType::name).join(", ")
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type name that is not one of [`DType::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown element type '{0}'; accepted: {accepted}", accepted = DType::accepted_names())]
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

/// Runs `$body` with `$v` bound to the payload of any variant of `$e` (an enum with one variant
/// per [`DType`], each holding one value): the nine-arm matches over element types, written once.
macro_rules! each_dtype {
    ($e:expr, $enum:ident, $v:ident => $body:expr) => {
        match $e {
            $enum::F32($v) => $body,
            $enum::F64($v) => $body,
            $enum::F16($v) => $body,
            $enum::BF16($v) => $body,
            $enum::I32($v) => $body,
            $enum::I64($v) => $body,
            $enum::U8($v) => $body,
            $enum::U32($v) => $body,
            $enum::U64($v) => $body,
        }
    };
}
pub(crate) use each_dtype;

/// Maps each variant of `$from` to the same variant of `$to` through `$body` (a `Result`), e.g.
/// host data to device data through an upload.
macro_rules! map_dtype {
    ($e:expr, $from:ident => $to:ident, $v:ident => $body:expr) => {
        match $e {
            $from::F32($v) => $body.map($to::F32),
            $from::F64($v) => $body.map($to::F64),
            $from::F16($v) => $body.map($to::F16),
            $from::BF16($v) => $body.map($to::BF16),
            $from::I32($v) => $body.map($to::I32),
            $from::I64($v) => $body.map($to::I64),
            $from::U8($v) => $body.map($to::U8),
            $from::U32($v) => $body.map($to::U32),
            $from::U64($v) => $body.map($to::U64),
        }
    };
}
pub(crate) use map_dtype;

/// The [`DType`] of each variant of an enum with one variant per element type.
macro_rules! dtype_of {
    ($e:expr, $enum:ident) => {
        match $e {
            $enum::F32(_) => DType::F32,
            $enum::F64(_) => DType::F64,
            $enum::F16(_) => DType::F16,
            $enum::BF16(_) => DType::BF16,
            $enum::I32(_) => DType::I32,
            $enum::I64(_) => DType::I64,
            $enum::U8(_) => DType::U8,
            $enum::U32(_) => DType::U32,
            $enum::U64(_) => DType::U64,
        }
    };
}

/// Host data of one element type, for uploads and downloads.
#[derive(Debug, Clone, PartialEq)]
pub enum HostData {
    /// `f32` values.
    F32(Vec<f32>),
    /// `f64` values.
    F64(Vec<f64>),
    /// IEEE half values.
    F16(Vec<f16>),
    /// bfloat16 values.
    BF16(Vec<bf16>),
    /// `i32` values.
    I32(Vec<i32>),
    /// `i64` values.
    I64(Vec<i64>),
    /// Bytes.
    U8(Vec<u8>),
    /// `u32` values.
    U32(Vec<u32>),
    /// `u64` values.
    U64(Vec<u64>),
}

impl HostData {
    /// The element type.
    pub fn dtype(&self) -> DType {
        dtype_of!(self, HostData)
    }

    /// Elements.
    pub fn len(&self) -> usize {
        each_dtype!(self, HostData, v => v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes in all.
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
host_from!(f32 => F32, f64 => F64, f16 => F16, bf16 => BF16, i32 => I32, i64 => I64, u8 => U8, u32 => U32, u64 => U64);

/// A scalar kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// An IEEE half.
    F16(f16),
    /// A bfloat16.
    BF16(bf16),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// A byte.
    U8(u8),
    /// A `u32`.
    U32(u32),
    /// A `u64`.
    U64(u64),
}

impl Scalar {
    /// The element type.
    pub fn dtype(self) -> DType {
        dtype_of!(self, Scalar)
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
scalar_from!(f32 => F32, f64 => F64, f16 => F16, bf16 => BF16, i32 => I32, i64 => I64, u8 => U8, u32 => U32, u64 => U64);

/// Device memory of one element type, with a name for messages.
#[derive(Debug)]
pub struct DeviceBuffer {
    pub(crate) name: String,
    pub(crate) data: DeviceData,
}

/// Device memory of each element type.
#[derive(Debug)]
pub(crate) enum DeviceData {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    F16(CudaSlice<f16>),
    BF16(CudaSlice<bf16>),
    I32(CudaSlice<i32>),
    I64(CudaSlice<i64>),
    U8(CudaSlice<u8>),
    U32(CudaSlice<u32>),
    U64(CudaSlice<u64>),
}

impl DeviceBuffer {
    /// The name given at allocation, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        dtype_of!(&self.data, DeviceData)
    }

    /// Elements.
    pub fn len(&self) -> usize {
        each_dtype!(&self.data, DeviceData, s => s.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes in all.
    pub fn bytes(&self) -> u64 {
        self.len() as u64 * self.dtype().size() as u64
    }

    /// The device address of the first element, as a kernel sees the pointer (instrumented
    /// kernels' runtimes map addresses to shadow buffers with it).
    pub fn device_address(&self) -> u64 {
        use cudarc::driver::DevicePtr;
        each_dtype!(&self.data, DeviceData, s => {
            let (address, _read) = s.device_ptr(s.stream());
            address
        })
    }
}

/// One kernel argument: a device buffer (passed as its pointer), a pointer into one, a scalar,
/// or a parameter's bytes as they are.
#[derive(Debug, Clone, Copy)]
pub enum KernelArg<'a> {
    /// A device buffer, passed as its pointer.
    Buffer(&'a DeviceBuffer),
    /// A pointer `bytes` bytes into a device buffer (`u + n` in C); at most its end.
    BufferAt(&'a DeviceBuffer, u64),
    /// A scalar, passed by value.
    Scalar(Scalar),
    /// The parameter's bytes in memory order (a struct by value, or any parameter exactly):
    /// as many as the parameter has.
    Raw(&'a [u8]),
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
            KernelArg::BufferAt(b, at) => write!(
                f,
                "buffer '{}' ({} x {}) + {at} bytes",
                b.name,
                b.len(),
                b.dtype()
            ),
            KernelArg::Scalar(s) => write!(f, "{} scalar", s.dtype()),
            KernelArg::Raw(bytes) => write!(f, "{} bytes", bytes.len()),
        }
    }
}

/// Grid and block shape of a launch, and its dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchDims {
    /// Blocks along x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per block along x, y, z.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

impl LaunchDims {
    /// A launch of `grid` blocks of `block` threads, without dynamic shared memory.
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

    /// Asks for `bytes` of dynamic shared memory per block.
    pub fn with_shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        u64::from(self.block.0) * u64::from(self.block.1) * u64::from(self.block.2)
    }

    /// Blocks in the grid.
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
    /// Largest block, per dimension (the device).
    pub max_block: (u32, u32, u32),
    /// Largest grid, per dimension (the device).
    pub max_grid: (u32, u32, u32),
    /// Dynamic shared memory the kernel may ask for (the opt-in limit minus its static use).
    pub max_dynamic_shared: u32,
    /// Registers the kernel uses per thread.
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

/// Checks run-time arguments against a kernel's PTX parameters: count, size and kind.
pub fn check_args(sig: &EntrySignature, args: &[KernelArg]) -> Result<(), String> {
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
        let untyped = matches!(p.ptx_type.as_str(), "b8" | "b16" | "b32" | "b64");
        let ok = match (p.ptx_type.as_str(), a) {
            // Pointers are 64-bit integers in PTX.
            ("u64" | "s64" | "b64", KernelArg::Buffer(_)) => true,
            ("u64" | "s64" | "b64", KernelArg::BufferAt(b, at)) => *at <= b.bytes(),
            (_, KernelArg::Buffer(_) | KernelArg::BufferAt(..)) => false,
            (_, KernelArg::Raw(bytes)) => bytes.len() == p.bytes && p.bytes > 0,
            ("f32", KernelArg::Scalar(s)) => s.dtype() == DType::F32,
            ("f64", KernelArg::Scalar(s)) => s.dtype() == DType::F64,
            ("f16", KernelArg::Scalar(s)) => s.dtype() == DType::F16,
            ("bf16", KernelArg::Scalar(s)) => s.dtype() == DType::BF16,
            // NVRTC writes `.u` for signed C++ parameters too (`long long` is `.u64`).
            ("u32" | "s32", KernelArg::Scalar(s)) => matches!(s.dtype(), DType::I32 | DType::U32),
            ("u64" | "s64", KernelArg::Scalar(s)) => matches!(s.dtype(), DType::I64 | DType::U64),
            ("u8" | "s8", KernelArg::Scalar(s)) => s.dtype() == DType::U8,
            // Untyped bits, including `.b8` arrays (a `__half` by value is `.align 2 .b8 x[2]`):
            // only the size can be checked.
            (_, KernelArg::Scalar(s)) if untyped => s.dtype().size() == p.bytes,
            _ => false,
        };
        if !ok {
            let want = match p.ptx_type.as_str() {
                "f32" => "an f32 scalar".to_string(),
                "f64" => "an f64 scalar".to_string(),
                "f16" => "an f16 scalar".to_string(),
                "bf16" => "a bf16 scalar".to_string(),
                "u32" | "s32" => "an i32 or u32 scalar".to_string(),
                "u64" | "s64" => "a buffer or an i64 or u64 scalar".to_string(),
                "u8" | "s8" => "a u8 scalar".to_string(),
                "b64" => "a buffer or an 8-byte scalar".to_string(),
                _ if untyped && p.count > 1 => format!(
                    "a {}-byte scalar (it is a struct or array; run-time scalars cover structs of 1, 2, 4 or 8 bytes)",
                    p.bytes
                ),
                _ if untyped => format!("a {}-byte scalar", p.bytes),
                _ => "a type run-time arguments do not support (structs, 16-bit integers, vectors)"
                    .to_string(),
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

    use mantissa_ptx::entry::{entry_signatures_of_ptx, EntryParam};

    /// A signature of `(PTX type, elements)` parameters named `{name}_param_{i}`, as the PTX
    /// parser gives it (parsing itself is tested in mantissa-ptx).
    fn signature(name: &str, params: &[(&str, u64)]) -> EntrySignature {
        let params = params
            .iter()
            .enumerate()
            .map(|(i, &(ty, count))| EntryParam {
                name: format!("{name}_param_{i}"),
                ptx_type: ty.to_string(),
                count,
                bytes: mantissa_ptx::type_bytes(ty).unwrap_or(0) as usize * count as usize,
                align: None,
                ptr: false,
                ptr_space: None,
            })
            .collect();
        EntrySignature {
            name: name.to_string(),
            params,
        }
    }

    fn saxpy() -> EntrySignature {
        signature("saxpy", &[("u64", 1), ("f32", 1), ("u64", 1), ("u32", 1)])
    }

    #[test]
    fn arguments_are_checked_against_the_signature() {
        let sig = &saxpy();
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

        let with_struct = &signature("with_struct", &[("b8", 16), ("f64", 1)]);
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
        assert_eq!("BF16".parse::<DType>(), Ok(DType::BF16));
        assert_eq!(
            "f8".parse::<DType>().unwrap_err().to_string(),
            "unknown element type 'f8'; accepted: f32, f64, f16, bf16, i32, i64, u8, u32, u64"
        );
        assert_eq!(HostData::from(vec![1.0f64; 3]).bytes(), 24);
        assert_eq!(HostData::from(vec![1u32; 3]).dtype(), DType::U32);
        let wide = [
            (HostData::from(vec![-1i64; 3]), DType::I64, 24),
            (HostData::from(vec![7u8; 3]), DType::U8, 3),
            (HostData::from(vec![f16::from_f32(0.5); 3]), DType::F16, 6),
            (HostData::from(vec![bf16::from_f32(0.5); 3]), DType::BF16, 6),
        ];
        for (data, dtype, bytes) in wide {
            assert_eq!((data.dtype(), data.bytes(), data.len()), (dtype, bytes, 3));
            assert_eq!(data.dtype().size() * 3, bytes as usize);
        }
        assert_eq!(Scalar::from(-3i64).dtype(), DType::I64);
        assert_eq!(Scalar::from(3u8).dtype(), DType::U8);
        assert_eq!(Scalar::from(f16::ONE).dtype(), DType::F16);
        assert_eq!(Scalar::from(bf16::ONE).dtype(), DType::BF16);
        let json = serde_json::to_string(&DType::ALL).unwrap();
        assert_eq!(
            json,
            r#"["f32","f64","f16","bf16","i32","i64","u8","u32","u64"]"#
        );
    }

    #[test]
    fn nvrtc_signatures_of_compiled_kernels_accept_the_wide_types() {
        let Some(c) = crate::testing::require_nvrtc_or_skip() else {
            return;
        };
        let src = crate::nvrtc::Source::new(
            "wide.cu",
            "struct __align__(2) half_bits { unsigned short bits; };\n\
             extern \"C\" __global__ void wide(long long* l, unsigned char* b, long long ls, unsigned char bs, half_bits h) {\n\
               l[0] = l[0] * 2 + ls; b[0] = b[0] + bs + (unsigned char)h.bits;\n}\n",
        );
        let compiled = c
            .compile(
                &src,
                crate::FlagSet::DEFAULT,
                crate::Target::Ptx(crate::Arch::new(9, 0)),
            )
            .unwrap();
        let sig = &entry_signatures_of_ptx(&compiled.ptx)[0];
        // `long long` and `unsigned char` as NVRTC spells them; the struct as 2 aligned bytes.
        let types: Vec<&str> = sig.params.iter().map(|p| p.ptx_type.as_str()).collect();
        assert_eq!(types, ["u64", "u64", "u64", "u8", "b8"], "{}", compiled.ptx);
        let args = [
            KernelArg::from(1u64),
            KernelArg::from(2u64),
            KernelArg::from(-3i64),
            KernelArg::from(4u8),
            KernelArg::from(f16::from_f32(0.5)),
        ];
        assert_eq!(check_args(sig, &args), Ok(()));
    }

    #[test]
    fn wide_and_narrow_scalars_are_checked_against_their_ptx_types() {
        let sig = &signature(
            "wide",
            &[
                ("s64", 1),
                ("u8", 1),
                ("f16", 1),
                ("bf16", 1),
                ("u64", 1),
                ("b8", 2),
            ],
        );
        let args = [
            KernelArg::from(-5i64),
            KernelArg::from(200u8),
            KernelArg::from(f16::from_f32(1.5)),
            KernelArg::from(bf16::from_f32(1.5)),
            KernelArg::from(-7i64),
            // A `__half` by value: two bytes of an untyped `.b8` array.
            KernelArg::from(f16::from_f32(2.0)),
        ];
        assert_eq!(check_args(sig, &args), Ok(()));
        // `.s64`, and `.u64` (NVRTC's spelling of `long long`), take u64 as well as i64.
        let mut unsigned = args;
        unsigned[0] = KernelArg::from(5u64);
        unsigned[4] = KernelArg::from(7u64);
        assert_eq!(check_args(sig, &unsigned), Ok(()));

        let mut swapped = args;
        swapped.swap(2, 3);
        assert_eq!(
            check_args(sig, &swapped).unwrap_err(),
            "argument 3 (wide_param_2, .f16) needs an f16 scalar, got bf16 scalar"
        );
        let mut wide_byte = args;
        wide_byte[1] = KernelArg::from(200u32);
        assert_eq!(
            check_args(sig, &wide_byte).unwrap_err(),
            "argument 2 (wide_param_1, .u8) needs a u8 scalar, got u32 scalar"
        );
        let mut int_for_long = args;
        int_for_long[0] = KernelArg::from(-5i32);
        assert!(check_args(sig, &int_for_long)
            .unwrap_err()
            .contains("needs a buffer or an i64 or u64 scalar"));
        let mut float_for_half_struct = args;
        float_for_half_struct[5] = KernelArg::from(2.0f32);
        assert_eq!(
            check_args(sig, &float_for_half_struct).unwrap_err(),
            "argument 6 (wide_param_5, .b8) needs a 2-byte scalar (it is a struct or array; run-time scalars cover structs of 1, 2, 4 or 8 bytes), got f32 scalar"
        );
    }
}
