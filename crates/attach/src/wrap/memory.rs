//! Allocations, frees, copies and memsets (`copies` in `MANTISSA_ATTACH_RECORD`). Each event is
//! appended after the real call; a copy to the host also writes the buffered log out when the
//! last write is a quarter of a second old, so a reader of a killed run sees every event up to
//! a recent value the host could have acted on, and a loop reading a value back every step
//! makes no system call per step.

use crate::driver;
use crate::ffi::{
    CuResult, DevPtr, Handle, Memcpy2D, Memcpy3D, Side, MEMORYTYPE_ARRAY, MEMORYTYPE_HOST, SUCCESS,
};
use crate::real::{real, slot};
use crate::record::Recorder;
use std::ffi::{c_uint, c_void};

/// The recorder when copies are recorded.
fn copies() -> Option<&'static Recorder> {
    crate::recorder().filter(|r| r.what.copies || r.what.htod_data || r.what.dtoh_data)
}

/// A copy's direction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    HtoD,
    DtoH,
    DtoD,
    Other,
}

impl Dir {
    fn name(self) -> &'static str {
        match self {
            Dir::HtoD => "htod",
            Dir::DtoH => "dtoh",
            Dir::DtoD => "dtod",
            Dir::Other => "other",
        }
    }

    /// From whether each side is host memory.
    fn of(src_host: bool, dst_host: bool) -> Dir {
        match (src_host, dst_host) {
            (true, false) => Dir::HtoD,
            (false, true) => Dir::DtoH,
            (false, false) => Dir::DtoD,
            (true, true) => Dir::Other,
        }
    }

    /// From the memory types of a 2D or 3D copy (an array side makes it `other`).
    fn of_sides(src: Side, dst: Side) -> Dir {
        if src.memory_type == MEMORYTYPE_ARRAY || dst.memory_type == MEMORYTYPE_ARRAY {
            return Dir::Other;
        }
        Dir::of(
            src.memory_type == MEMORYTYPE_HOST,
            dst.memory_type == MEMORYTYPE_HOST,
        )
    }
}

/// A one-dimensional copy.
struct Copy1D {
    dir: Dir,
    dst: u64,
    src: u64,
    bytes: usize,
    /// `None` for a synchronous call.
    stream: Option<Handle>,
    via: &'static str,
    per_thread: bool,
}

/// The whole of a 1D copy wrapper: `dir` `None` asks the driver (generic `cuMemcpy`).
fn copy_1d(mut c: Copy1D, dir: Option<Dir>, call: impl FnOnce() -> CuResult) -> CuResult {
    let Some(rec) = copies() else { return call() };
    c.dir = dir.unwrap_or_else(|| Dir::of(driver::is_host(c.src), driver::is_host(c.dst)));
    let mut data = None;
    if c.dir == Dir::HtoD && rec.what.htod_data && c.src != 0 {
        // SAFETY: the application hands the driver `bytes` readable bytes at `src`.
        let bytes = unsafe { std::slice::from_raw_parts(c.src as *const u8, c.bytes) };
        data = Some(rec.save_data(bytes));
    }
    let r = call();
    if c.dir == Dir::DtoH && rec.what.dtoh_data && r == SUCCESS && c.dst != 0 {
        if let Some(stream) = c.stream {
            driver::stream_synchronize(stream, c.per_thread);
        }
        // SAFETY: the driver just wrote `bytes` bytes at `dst` (the stream is synchronised).
        let bytes = unsafe { std::slice::from_raw_parts(c.dst as *const u8, c.bytes) };
        data = Some(rec.save_data(bytes));
    }
    let mut state = rec.state();
    if rec.what.copies {
        state.emit("copy", |l| {
            l.str("dir", c.dir.name())
                .ptr("dst", c.dst)
                .ptr("src", c.src)
                .num("bytes", c.bytes as u64);
            match c.stream {
                Some(s) => l.ptr("stream", s as u64),
                None => l.raw("stream", "null"),
            };
            l.str("via", c.via).bool("per_thread", c.per_thread);
            match &data {
                Some(Ok(file)) => {
                    l.str("data", file);
                }
                Some(Err(e)) => {
                    l.str("data_error", e);
                }
                None => {}
            }
            if r != SUCCESS {
                l.num("error", r as u64);
            }
        });
    }
    if c.dir == Dir::DtoH {
        state.log.flush_if_due();
    }
    r
}

/// The bytes of a 2D or 3D copy's rows on host side `side`, one after another.
///
/// # Safety
/// `side` is host memory holding every row of `extent` (the application handed it to the
/// driver so).
unsafe fn host_rows(side: Side, (w, h, d): (usize, usize, usize)) -> Vec<u8> {
    let mut out = Vec::with_capacity(w.saturating_mul(h).saturating_mul(d));
    for z in 0..d {
        for y in 0..h {
            // SAFETY: the caller's promise.
            out.extend_from_slice(unsafe {
                std::slice::from_raw_parts(side.row(y, z) as *const u8, w)
            });
        }
    }
    out
}

/// A 2D or 3D copy: `extent` is (width in bytes, height, depth). Its `src` and `dst` are each
/// side's first byte copied; with `htod_data`/`dtoh_data`, the rows on the host side are saved
/// one after another.
fn copy_nd(
    sides: (Side, Side),
    extent: (usize, usize, usize),
    stream: Option<Handle>,
    via: &'static str,
    per_thread: bool,
    call: impl FnOnce() -> CuResult,
) -> CuResult {
    let Some(rec) = copies() else { return call() };
    let (src, dst) = sides;
    let dir = Dir::of_sides(src, dst);
    let mut data = None;
    if dir == Dir::HtoD && rec.what.htod_data && src.address != 0 {
        // SAFETY: the application hands the driver these rows to read.
        data = Some(rec.save_data(&unsafe { host_rows(src, extent) }));
    }
    let r = call();
    if dir == Dir::DtoH && rec.what.dtoh_data && r == SUCCESS && dst.address != 0 {
        if let Some(stream) = stream {
            driver::stream_synchronize(stream, per_thread);
        }
        // SAFETY: the driver just wrote these rows (the stream is synchronised).
        data = Some(rec.save_data(&unsafe { host_rows(dst, extent) }));
    }
    let (w, h, d) = extent;
    let first = |s: Side| {
        if s.memory_type == MEMORYTYPE_ARRAY {
            s.address
        } else {
            s.row(0, 0)
        }
    };
    let mut state = rec.state();
    if rec.what.copies {
        state.emit("copy", |l| {
            l.str("dir", dir.name())
                .ptr("dst", first(dst))
                .ptr("src", first(src))
                .num("bytes", w.saturating_mul(h).saturating_mul(d) as u64);
            match stream {
                Some(s) => l.ptr("stream", s as u64),
                None => l.raw("stream", "null"),
            };
            l.str("via", via)
                .bool("per_thread", per_thread)
                .str("shape", if via.contains("3D") { "3d" } else { "2d" })
                .num("width", w as u64)
                .num("height", h as u64)
                .num("depth", d as u64)
                .num("src_pitch", src.pitch as u64)
                .num("dst_pitch", dst.pitch as u64)
                .num("src_slice", src.slice_bytes())
                .num("dst_slice", dst.slice_bytes());
            match &data {
                Some(Ok(file)) => {
                    l.str("data", file);
                }
                Some(Err(e)) => {
                    l.str("data_error", e);
                }
                None => {}
            }
            if r != SUCCESS {
                l.num("error", r as u64);
            }
        });
    }
    if dir == Dir::DtoH {
        state.log.flush_if_due();
    }
    r
}

type Copy3Args<A, B> = unsafe extern "C" fn(A, B, usize) -> CuResult;
type Copy4Args<A, B> = unsafe extern "C" fn(A, B, usize, Handle) -> CuResult;

/// Defines a synchronous 1D copy wrapper: (dst type, src type, direction or None).
macro_rules! copy_sync {
    ($name:ident, $via:literal, $dst:ty, $src:ty, $dir:expr, $pt:expr) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: $dst, src: $src, bytes: usize) -> CuResult {
            let f = unsafe { real::<Copy3Args<$dst, $src>>(slot::$name) };
            let c = Copy1D {
                dir: Dir::Other,
                dst: dst as u64,
                src: src as u64,
                bytes,
                stream: None,
                via: $via,
                per_thread: $pt,
            };
            copy_1d(c, $dir, || unsafe { f(dst, src, bytes) })
        }
    };
}

/// Defines an asynchronous 1D copy wrapper.
macro_rules! copy_async {
    ($name:ident, $via:literal, $dst:ty, $src:ty, $dir:expr, $pt:expr) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: $dst,
            src: $src,
            bytes: usize,
            stream: Handle,
        ) -> CuResult {
            let f = unsafe { real::<Copy4Args<$dst, $src>>(slot::$name) };
            let c = Copy1D {
                dir: Dir::Other,
                dst: dst as u64,
                src: src as u64,
                bytes,
                stream: Some(stream),
                via: $via,
                per_thread: $pt,
            };
            copy_1d(c, $dir, || unsafe { f(dst, src, bytes, stream) })
        }
    };
}

type HostSrc = *const c_void;
type HostDst = *mut c_void;

copy_sync!(
    cuMemcpyHtoD_v2,
    "cuMemcpyHtoD",
    DevPtr,
    HostSrc,
    Some(Dir::HtoD),
    false
);
copy_sync!(
    cuMemcpyHtoD_v2_ptds,
    "cuMemcpyHtoD",
    DevPtr,
    HostSrc,
    Some(Dir::HtoD),
    true
);
copy_sync!(
    cuMemcpyDtoH_v2,
    "cuMemcpyDtoH",
    HostDst,
    DevPtr,
    Some(Dir::DtoH),
    false
);
copy_sync!(
    cuMemcpyDtoH_v2_ptds,
    "cuMemcpyDtoH",
    HostDst,
    DevPtr,
    Some(Dir::DtoH),
    true
);
copy_sync!(
    cuMemcpyDtoD_v2,
    "cuMemcpyDtoD",
    DevPtr,
    DevPtr,
    Some(Dir::DtoD),
    false
);
copy_sync!(
    cuMemcpyDtoD_v2_ptds,
    "cuMemcpyDtoD",
    DevPtr,
    DevPtr,
    Some(Dir::DtoD),
    true
);
copy_sync!(cuMemcpy, "cuMemcpy", DevPtr, DevPtr, None, false);
copy_sync!(cuMemcpy_ptds, "cuMemcpy", DevPtr, DevPtr, None, true);
copy_async!(
    cuMemcpyHtoDAsync_v2,
    "cuMemcpyHtoDAsync",
    DevPtr,
    HostSrc,
    Some(Dir::HtoD),
    false
);
copy_async!(
    cuMemcpyHtoDAsync_v2_ptsz,
    "cuMemcpyHtoDAsync",
    DevPtr,
    HostSrc,
    Some(Dir::HtoD),
    true
);
copy_async!(
    cuMemcpyDtoHAsync_v2,
    "cuMemcpyDtoHAsync",
    HostDst,
    DevPtr,
    Some(Dir::DtoH),
    false
);
copy_async!(
    cuMemcpyDtoHAsync_v2_ptsz,
    "cuMemcpyDtoHAsync",
    HostDst,
    DevPtr,
    Some(Dir::DtoH),
    true
);
copy_async!(
    cuMemcpyDtoDAsync_v2,
    "cuMemcpyDtoDAsync",
    DevPtr,
    DevPtr,
    Some(Dir::DtoD),
    false
);
copy_async!(
    cuMemcpyDtoDAsync_v2_ptsz,
    "cuMemcpyDtoDAsync",
    DevPtr,
    DevPtr,
    Some(Dir::DtoD),
    true
);
copy_async!(cuMemcpyAsync, "cuMemcpyAsync", DevPtr, DevPtr, None, false);
copy_async!(
    cuMemcpyAsync_ptsz,
    "cuMemcpyAsync",
    DevPtr,
    DevPtr,
    None,
    true
);

/// Defines a 2D or 3D copy wrapper: (descriptor type, synchronous or with a stream).
macro_rules! copy_nd {
    ($name:ident, $via:literal, $desc:ty, $pt:expr) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(copy: *const $desc) -> CuResult {
            let f = unsafe { real::<unsafe extern "C" fn(*const $desc) -> CuResult>(slot::$name) };
            if copy.is_null() {
                return unsafe { f(copy) };
            }
            // SAFETY: the driver reads the same descriptor.
            let d = unsafe { &*copy };
            copy_nd(d.sides(), extent_of(d), None, $via, $pt, || unsafe {
                f(copy)
            })
        }
    };
    ($name:ident, $via:literal, $desc:ty, $pt:expr, stream) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(copy: *const $desc, stream: Handle) -> CuResult {
            let f = unsafe {
                real::<unsafe extern "C" fn(*const $desc, Handle) -> CuResult>(slot::$name)
            };
            if copy.is_null() {
                return unsafe { f(copy, stream) };
            }
            // SAFETY: the driver reads the same descriptor.
            let d = unsafe { &*copy };
            copy_nd(
                d.sides(),
                extent_of(d),
                Some(stream),
                $via,
                $pt,
                || unsafe { f(copy, stream) },
            )
        }
    };
}

/// A 2D or 3D copy's (width in bytes, height, depth).
trait Extent {
    fn extent(&self) -> (usize, usize, usize);
}

impl Extent for Memcpy2D {
    fn extent(&self) -> (usize, usize, usize) {
        (self.width_in_bytes, self.height, 1)
    }
}

impl Extent for Memcpy3D {
    fn extent(&self) -> (usize, usize, usize) {
        (self.width_in_bytes, self.height, self.depth)
    }
}

fn extent_of(d: &impl Extent) -> (usize, usize, usize) {
    d.extent()
}

copy_nd!(cuMemcpy2D_v2, "cuMemcpy2D", Memcpy2D, false);
copy_nd!(cuMemcpy2D_v2_ptds, "cuMemcpy2D", Memcpy2D, true);
copy_nd!(
    cuMemcpy2DUnaligned_v2,
    "cuMemcpy2DUnaligned",
    Memcpy2D,
    false
);
copy_nd!(
    cuMemcpy2DUnaligned_v2_ptds,
    "cuMemcpy2DUnaligned",
    Memcpy2D,
    true
);
copy_nd!(
    cuMemcpy2DAsync_v2,
    "cuMemcpy2DAsync",
    Memcpy2D,
    false,
    stream
);
copy_nd!(
    cuMemcpy2DAsync_v2_ptsz,
    "cuMemcpy2DAsync",
    Memcpy2D,
    true,
    stream
);
copy_nd!(cuMemcpy3D_v2, "cuMemcpy3D", Memcpy3D, false);
copy_nd!(cuMemcpy3D_v2_ptds, "cuMemcpy3D", Memcpy3D, true);
copy_nd!(
    cuMemcpy3DAsync_v2,
    "cuMemcpy3DAsync",
    Memcpy3D,
    false,
    stream
);
copy_nd!(
    cuMemcpy3DAsync_v2_ptsz,
    "cuMemcpy3DAsync",
    Memcpy3D,
    true,
    stream
);

/// A memset: `width` bytes per element.
fn memset(
    dst: DevPtr,
    value: u32,
    width: u8,
    count: usize,
    stream: Option<Handle>,
    per_thread: bool,
    call: impl FnOnce() -> CuResult,
) -> CuResult {
    let r = call();
    if let Some(rec) = copies().filter(|r| r.what.copies) {
        rec.emit("memset", |l| {
            l.ptr("dst", dst)
                .num("value", u64::from(value))
                .num("width", u64::from(width))
                .num("count", count as u64);
            match stream {
                Some(s) => l.ptr("stream", s as u64),
                None => l.raw("stream", "null"),
            };
            l.bool("per_thread", per_thread);
            if r != SUCCESS {
                l.num("error", r as u64);
            }
        });
    }
    r
}

/// Defines a memset wrapper: (value type, width, synchronous or with a stream).
macro_rules! memset_fn {
    ($name:ident, $value:ty, $width:expr, $pt:expr) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: DevPtr, value: $value, count: usize) -> CuResult {
            let f = unsafe { real::<Copy3Args<DevPtr, $value>>(slot::$name) };
            memset(dst, u32::from(value), $width, count, None, $pt, || unsafe {
                f(dst, value, count)
            })
        }
    };
    ($name:ident, $value:ty, $width:expr, $pt:expr, stream) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: DevPtr,
            value: $value,
            count: usize,
            stream: Handle,
        ) -> CuResult {
            let f = unsafe { real::<Copy4Args<DevPtr, $value>>(slot::$name) };
            memset(
                dst,
                u32::from(value),
                $width,
                count,
                Some(stream),
                $pt,
                || unsafe { f(dst, value, count, stream) },
            )
        }
    };
}

memset_fn!(cuMemsetD8_v2, u8, 1, false);
memset_fn!(cuMemsetD8_v2_ptds, u8, 1, true);
memset_fn!(cuMemsetD16_v2, u16, 2, false);
memset_fn!(cuMemsetD16_v2_ptds, u16, 2, true);
memset_fn!(cuMemsetD32_v2, c_uint, 4, false);
memset_fn!(cuMemsetD32_v2_ptds, c_uint, 4, true);
memset_fn!(cuMemsetD8Async, u8, 1, false, stream);
memset_fn!(cuMemsetD8Async_ptsz, u8, 1, true, stream);
memset_fn!(cuMemsetD16Async, u16, 2, false, stream);
memset_fn!(cuMemsetD16Async_ptsz, u16, 2, true, stream);
memset_fn!(cuMemsetD32Async, c_uint, 4, false, stream);
memset_fn!(cuMemsetD32Async_ptsz, c_uint, 4, true, stream);

/// Logs an allocation the real call made (`out` is where it wrote the pointer).
unsafe fn allocated(r: CuResult, out: *const u64, bytes: usize, kind: &str, pitch: Option<usize>) {
    if r != SUCCESS || out.is_null() {
        return;
    }
    if let Some(rec) = copies().filter(|r| r.what.copies) {
        // SAFETY: the driver just wrote the pointer.
        let ptr = unsafe { *out };
        rec.emit("alloc", |l| {
            l.ptr("ptr", ptr)
                .num("bytes", bytes as u64)
                .str("kind", kind);
            if let Some(p) = pitch {
                l.num("pitch", p as u64);
            }
        });
    }
}

/// Logs a free the real call made.
fn freed(r: CuResult, ptr: u64, kind: &str) {
    if r != SUCCESS {
        return;
    }
    if let Some(rec) = copies().filter(|r| r.what.copies) {
        rec.emit("free", |l| {
            l.ptr("ptr", ptr).str("kind", kind);
        });
    }
}

/// `cuMemAlloc_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut DevPtr, bytes: usize) -> CuResult {
    let r = unsafe {
        real::<unsafe extern "C" fn(*mut DevPtr, usize) -> CuResult>(slot::cuMemAlloc_v2)(
            ptr, bytes,
        )
    };
    unsafe { allocated(r, ptr, bytes, "device", None) };
    r
}

/// `cuMemAllocPitch_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    ptr: *mut DevPtr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    element: c_uint,
) -> CuResult {
    type F = unsafe extern "C" fn(*mut DevPtr, *mut usize, usize, usize, c_uint) -> CuResult;
    let r = unsafe { real::<F>(slot::cuMemAllocPitch_v2)(ptr, pitch, width, height, element) };
    let p = if pitch.is_null() {
        width
    } else {
        unsafe { *pitch }
    };
    unsafe { allocated(r, ptr, p.saturating_mul(height), "pitch", Some(p)) };
    r
}

/// `cuMemAllocManaged`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocManaged(
    ptr: *mut DevPtr,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    type F = unsafe extern "C" fn(*mut DevPtr, usize, c_uint) -> CuResult;
    let r = unsafe { real::<F>(slot::cuMemAllocManaged)(ptr, bytes, flags) };
    unsafe { allocated(r, ptr, bytes, "managed", None) };
    r
}

/// Defines `cuMemAllocAsync` and its per-thread variant.
macro_rules! alloc_async {
    ($name:ident) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(ptr: *mut DevPtr, bytes: usize, stream: Handle) -> CuResult {
            type F = unsafe extern "C" fn(*mut DevPtr, usize, Handle) -> CuResult;
            let r = unsafe { real::<F>(slot::$name)(ptr, bytes, stream) };
            unsafe { allocated(r, ptr, bytes, "async", None) };
            r
        }
    };
}

alloc_async!(cuMemAllocAsync);
alloc_async!(cuMemAllocAsync_ptsz);

/// Defines `cuMemAllocFromPoolAsync` and its per-thread variant.
macro_rules! alloc_pool {
    ($name:ident) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            ptr: *mut DevPtr,
            bytes: usize,
            pool: Handle,
            stream: Handle,
        ) -> CuResult {
            type F = unsafe extern "C" fn(*mut DevPtr, usize, Handle, Handle) -> CuResult;
            let r = unsafe { real::<F>(slot::$name)(ptr, bytes, pool, stream) };
            unsafe { allocated(r, ptr, bytes, "pool", None) };
            r
        }
    };
}

alloc_pool!(cuMemAllocFromPoolAsync);
alloc_pool!(cuMemAllocFromPoolAsync_ptsz);

/// `cuMemAllocHost_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost_v2(ptr: *mut *mut c_void, bytes: usize) -> CuResult {
    type F = unsafe extern "C" fn(*mut *mut c_void, usize) -> CuResult;
    let r = unsafe { real::<F>(slot::cuMemAllocHost_v2)(ptr, bytes) };
    unsafe { allocated(r, ptr.cast(), bytes, "host", None) };
    r
}

/// `cuMemHostAlloc`.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    ptr: *mut *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    type F = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> CuResult;
    let r = unsafe { real::<F>(slot::cuMemHostAlloc)(ptr, bytes, flags) };
    unsafe { allocated(r, ptr.cast(), bytes, "host", None) };
    r
}

/// `cuMemFree_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(ptr: DevPtr) -> CuResult {
    let r = unsafe { real::<unsafe extern "C" fn(DevPtr) -> CuResult>(slot::cuMemFree_v2)(ptr) };
    freed(r, ptr, "device");
    r
}

/// Defines `cuMemFreeAsync` and its per-thread variant.
macro_rules! free_async {
    ($name:ident) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(ptr: DevPtr, stream: Handle) -> CuResult {
            type F = unsafe extern "C" fn(DevPtr, Handle) -> CuResult;
            let r = unsafe { real::<F>(slot::$name)(ptr, stream) };
            freed(r, ptr, "async");
            r
        }
    };
}

free_async!(cuMemFreeAsync);
free_async!(cuMemFreeAsync_ptsz);

/// `cuMemFreeHost`.
#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(ptr: *mut c_void) -> CuResult {
    let r =
        unsafe { real::<unsafe extern "C" fn(*mut c_void) -> CuResult>(slot::cuMemFreeHost)(ptr) };
    freed(r, ptr as u64, "host");
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{MEMORYTYPE_DEVICE, MEMORYTYPE_UNIFIED};

    #[test]
    fn directions() {
        assert_eq!(Dir::of(true, false), Dir::HtoD);
        assert_eq!(Dir::of(false, true), Dir::DtoH);
        assert_eq!(Dir::of(false, false), Dir::DtoD);
        assert_eq!(Dir::of(true, true), Dir::Other);
        let side = |memory_type| Side {
            memory_type,
            address: 0,
            pitch: 0,
            xyz: [0; 3],
            slice_rows: 0,
        };
        // Row y of slice z, from (x, y, z) of an array of 4-row slices with rows 100 bytes apart.
        let pitched = Side {
            address: 0x1000,
            pitch: 100,
            xyz: [8, 1, 2],
            slice_rows: 4,
            ..side(MEMORYTYPE_DEVICE)
        };
        assert_eq!(pitched.row(0, 0), 0x1000 + 8 + 100 + 2 * 400);
        assert_eq!(pitched.row(2, 1), 0x1000 + 8 + 3 * 100 + 3 * 400);
        assert_eq!(
            Dir::of_sides(side(MEMORYTYPE_HOST), side(MEMORYTYPE_DEVICE)),
            Dir::HtoD
        );
        assert_eq!(
            Dir::of_sides(side(MEMORYTYPE_UNIFIED), side(MEMORYTYPE_HOST)),
            Dir::DtoH
        );
        assert_eq!(
            Dir::of_sides(side(MEMORYTYPE_ARRAY), side(MEMORYTYPE_HOST)),
            Dir::Other
        );
    }

    #[test]
    fn descriptors_have_the_headers_sizes() {
        // CUDA 13.0's CUDA_MEMCPY2D is 128 bytes, CUDA_MEMCPY3D 200 (x86-64).
        assert_eq!(size_of::<Memcpy2D>(), 128);
        assert_eq!(size_of::<Memcpy3D>(), 200);
    }
}
