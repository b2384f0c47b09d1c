//! The few driver API types and constants the wrappers read, as `cuda.h` (CUDA 13.0) declares
//! them. Handles are opaque pointers; the shim never looks inside one.

use std::ffi::c_void;

/// `CUresult`.
pub type CuResult = i32;
/// `CUdeviceptr`.
pub type DevPtr = u64;
/// Any opaque handle: `CUmodule`, `CUlibrary`, `CUfunction`, `CUkernel`, `CUstream`,
/// `CUcontext`, `CUevent`, `CUmemoryPool`.
pub type Handle = *mut c_void;

/// `CUDA_SUCCESS`.
pub const SUCCESS: CuResult = 0;
/// `CUDA_ERROR_INVALID_VALUE`.
pub const ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_NOT_READY`.
pub const ERROR_NOT_READY: CuResult = 600;
/// `CUDA_ERROR_FILE_NOT_FOUND`.
pub const ERROR_FILE_NOT_FOUND: CuResult = 301;
/// `CUDA_ERROR_NOT_FOUND`: what a symbol the real driver lacks returns.
pub const ERROR_NOT_FOUND: CuResult = 500;

/// `CU_JIT_ERROR_LOG_BUFFER`.
pub const JIT_ERROR_LOG_BUFFER: i32 = 5;
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`.
pub const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: i32 = 6;

/// `CU_MEMORYTYPE_HOST`.
pub const MEMORYTYPE_HOST: u32 = 1;
/// `CU_MEMORYTYPE_DEVICE`.
pub const MEMORYTYPE_DEVICE: u32 = 2;
/// `CU_MEMORYTYPE_ARRAY`.
pub const MEMORYTYPE_ARRAY: u32 = 3;
/// `CU_MEMORYTYPE_UNIFIED`.
pub const MEMORYTYPE_UNIFIED: u32 = 4;
/// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`.
pub const POINTER_ATTRIBUTE_MEMORY_TYPE: i32 = 2;

/// `CU_LAUNCH_PARAM_END`, `CU_LAUNCH_PARAM_BUFFER_POINTER`, `CU_LAUNCH_PARAM_BUFFER_SIZE`: the
/// keys of a launch's `extra` array.
pub const LAUNCH_PARAM_END: usize = 0;
/// See [`LAUNCH_PARAM_END`].
pub const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
/// See [`LAUNCH_PARAM_END`].
pub const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfig {
    /// Grid and block dimensions, x y z each.
    pub grid: [u32; 3],
    /// See `grid`.
    pub block: [u32; 3],
    /// Dynamic shared memory per block.
    pub shared: u32,
    /// The stream.
    pub stream: Handle,
    /// Launch attributes (not read).
    pub attrs: *mut c_void,
    /// How many attributes.
    pub num_attrs: u32,
}

/// One side of a 2D or 3D copy: where and what kind of memory.
#[derive(Clone, Copy)]
pub struct Side {
    /// `CUmemorytype`.
    pub memory_type: u32,
    /// The host pointer, device pointer or array handle, whichever `memory_type` names.
    pub address: u64,
    /// The pitch (row length in bytes).
    pub pitch: usize,
    /// Where the copy starts: x (bytes), y (rows) and z (slices) from `address`.
    pub xyz: [usize; 3],
    /// Rows per slice (3D copies; 0 for 2D ones).
    pub slice_rows: usize,
}

impl Side {
    /// Bytes from one slice to the next.
    pub fn slice_bytes(&self) -> u64 {
        self.slice_rows as u64 * self.pitch as u64
    }

    /// The address of row `y` of slice `z` of the copy (the first byte copied is row 0 of slice
    /// 0); meaningless for an array.
    pub fn row(&self, y: usize, z: usize) -> u64 {
        let [x0, y0, z0] = self.xyz;
        self.address
            + x0 as u64
            + (y0 + y) as u64 * self.pitch as u64
            + (z0 + z) as u64 * self.slice_bytes()
    }
}

/// `CUDA_MEMCPY2D` (CUDA 13.0: `CUDA_MEMCPY2D_v2`).
#[repr(C)]
pub struct Memcpy2D {
    /// Source x (bytes) and y.
    pub src_x_in_bytes: usize,
    /// See `src_x_in_bytes`.
    pub src_y: usize,
    /// `CUmemorytype` of the source.
    pub src_memory_type: u32,
    /// The source as a host pointer.
    pub src_host: *const c_void,
    /// The source as a device pointer.
    pub src_device: DevPtr,
    /// The source as an array.
    pub src_array: Handle,
    /// The source's pitch.
    pub src_pitch: usize,
    /// Destination x (bytes) and y.
    pub dst_x_in_bytes: usize,
    /// See `dst_x_in_bytes`.
    pub dst_y: usize,
    /// `CUmemorytype` of the destination.
    pub dst_memory_type: u32,
    /// The destination as a host pointer.
    pub dst_host: *mut c_void,
    /// The destination as a device pointer.
    pub dst_device: DevPtr,
    /// The destination as an array.
    pub dst_array: Handle,
    /// The destination's pitch.
    pub dst_pitch: usize,
    /// Width of a row in bytes.
    pub width_in_bytes: usize,
    /// Rows.
    pub height: usize,
}

/// `CUDA_MEMCPY3D` (CUDA 13.0: `CUDA_MEMCPY3D_v2`).
#[repr(C)]
pub struct Memcpy3D {
    /// Source x (bytes), y, z, level of detail.
    pub src_xyz_lod: [usize; 4],
    /// `CUmemorytype` of the source.
    pub src_memory_type: u32,
    /// The source as a host pointer.
    pub src_host: *const c_void,
    /// The source as a device pointer.
    pub src_device: DevPtr,
    /// The source as an array.
    pub src_array: Handle,
    /// Reserved.
    pub reserved0: *mut c_void,
    /// The source's pitch.
    pub src_pitch: usize,
    /// The source's height.
    pub src_height: usize,
    /// Destination x (bytes), y, z, level of detail.
    pub dst_xyz_lod: [usize; 4],
    /// `CUmemorytype` of the destination.
    pub dst_memory_type: u32,
    /// The destination as a host pointer.
    pub dst_host: *mut c_void,
    /// The destination as a device pointer.
    pub dst_device: DevPtr,
    /// The destination as an array.
    pub dst_array: Handle,
    /// Reserved.
    pub reserved1: *mut c_void,
    /// The destination's pitch.
    pub dst_pitch: usize,
    /// The destination's height.
    pub dst_height: usize,
    /// Width of a row in bytes.
    pub width_in_bytes: usize,
    /// Rows.
    pub height: usize,
    /// Slices.
    pub depth: usize,
}

/// One side of a copy descriptor.
fn side(
    memory_type: u32,
    (host, device, array): (*const c_void, DevPtr, Handle),
    pitch: usize,
    xyz: [usize; 3],
    slice_rows: usize,
) -> Side {
    let address = match memory_type {
        MEMORYTYPE_HOST => host as u64,
        MEMORYTYPE_ARRAY => array as u64,
        _ => device,
    };
    Side {
        memory_type,
        address,
        pitch,
        xyz,
        slice_rows,
    }
}

impl Memcpy2D {
    /// The source and destination.
    pub fn sides(&self) -> (Side, Side) {
        let s = self;
        (
            side(
                s.src_memory_type,
                (s.src_host, s.src_device, s.src_array),
                s.src_pitch,
                [s.src_x_in_bytes, s.src_y, 0],
                0,
            ),
            side(
                s.dst_memory_type,
                (s.dst_host as *const c_void, s.dst_device, s.dst_array),
                s.dst_pitch,
                [s.dst_x_in_bytes, s.dst_y, 0],
                0,
            ),
        )
    }
}

impl Memcpy3D {
    /// The source and destination.
    pub fn sides(&self) -> (Side, Side) {
        let s = self;
        let [sx, sy, sz, _] = s.src_xyz_lod;
        let [dx, dy, dz, _] = s.dst_xyz_lod;
        (
            side(
                s.src_memory_type,
                (s.src_host, s.src_device, s.src_array),
                s.src_pitch,
                [sx, sy, sz],
                s.src_height,
            ),
            side(
                s.dst_memory_type,
                (s.dst_host as *const c_void, s.dst_device, s.dst_array),
                s.dst_pitch,
                [dx, dy, dz],
                s.dst_height,
            ),
        )
    }
}
