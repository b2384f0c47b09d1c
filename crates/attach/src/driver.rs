//! Calls the shim makes into the real driver on its own account (never through its own
//! wrappers, so they are not recorded): the current context, globals, copies for writes and
//! reads, pointer kinds, parameter layouts, names, and events for timing.

use crate::ffi::{CuResult, DevPtr, Handle, POINTER_ATTRIBUTE_MEMORY_TYPE, SUCCESS};
use crate::real::{address, real, slot};
use std::ffi::{c_char, c_void, CStr, CString};

type Fn1<A> = unsafe extern "C" fn(A) -> CuResult;
type Fn2<A, B> = unsafe extern "C" fn(A, B) -> CuResult;
type Fn3<A, B, C> = unsafe extern "C" fn(A, B, C) -> CuResult;
type Fn4<A, B, C, D> = unsafe extern "C" fn(A, B, C, D) -> CuResult;

/// The current context (null for none).
pub fn current_ctx() -> usize {
    let mut ctx: Handle = std::ptr::null_mut();
    // SAFETY: cuCtxGetCurrent(CUcontext*).
    let r = unsafe { real::<Fn1<*mut Handle>>(slot::cuCtxGetCurrent)(&mut ctx) };
    if r == SUCCESS {
        ctx as usize
    } else {
        0
    }
}

/// Runs `f` with `ctx` current (pushed and popped around it; as is when null).
pub fn in_ctx<R>(ctx: usize, f: impl FnOnce() -> R) -> R {
    if ctx == 0 {
        return f();
    }
    // SAFETY: cuCtxPushCurrent_v2(CUcontext), cuCtxPopCurrent_v2(CUcontext*).
    let pushed = unsafe { real::<Fn1<Handle>>(slot::cuCtxPushCurrent_v2)(ctx as Handle) };
    let result = f();
    if pushed == SUCCESS {
        let mut popped: Handle = std::ptr::null_mut();
        unsafe { real::<Fn1<*mut Handle>>(slot::cuCtxPopCurrent_v2)(&mut popped) };
    }
    result
}

/// `cuCtxSynchronize`.
pub fn synchronize() -> CuResult {
    // SAFETY: cuCtxSynchronize(void).
    unsafe { real::<unsafe extern "C" fn() -> CuResult>(slot::cuCtxSynchronize)() }
}

/// `cuStreamSynchronize` (or its per-thread variant).
pub fn stream_synchronize(stream: Handle, per_thread: bool) -> CuResult {
    let s = if per_thread {
        slot::cuStreamSynchronize_ptsz
    } else {
        slot::cuStreamSynchronize
    };
    // SAFETY: cuStreamSynchronize(CUstream).
    unsafe { real::<Fn1<Handle>>(s)(stream) }
}

/// A module's (`library` false) or library's global: its address and size.
pub fn global(handle: usize, library: bool, name: &str) -> Result<(DevPtr, usize), String> {
    let c_name = CString::new(name).map_err(|_| format!("symbol {name:?} holds a NUL"))?;
    let (mut ptr, mut size) = (0u64, 0usize);
    let s = if library {
        slot::cuLibraryGetGlobal
    } else {
        slot::cuModuleGetGlobal_v2
    };
    // SAFETY: cuModuleGetGlobal_v2 and cuLibraryGetGlobal share (CUdeviceptr*, size_t*, handle,
    // const char*).
    let r = unsafe {
        real::<Fn4<*mut DevPtr, *mut usize, Handle, *const c_char>>(s)(
            &mut ptr,
            &mut size,
            handle as Handle,
            c_name.as_ptr(),
        )
    };
    if r == SUCCESS {
        Ok((ptr, size))
    } else {
        Err(format!("global {name}: CUresult {r}"))
    }
}

/// Copies `bytes` to device address `dst` (synchronously).
pub fn htod(dst: DevPtr, bytes: &[u8]) -> CuResult {
    // SAFETY: cuMemcpyHtoD_v2(CUdeviceptr, const void*, size_t); `bytes` is readable.
    unsafe {
        real::<Fn3<DevPtr, *const c_void, usize>>(slot::cuMemcpyHtoD_v2)(
            dst,
            bytes.as_ptr().cast(),
            bytes.len(),
        )
    }
}

/// Copies `len` bytes from device address `src` (synchronously).
pub fn dtoh(src: DevPtr, len: usize) -> Result<Vec<u8>, CuResult> {
    let mut bytes = vec![0u8; len];
    // SAFETY: cuMemcpyDtoH_v2(void*, CUdeviceptr, size_t); `bytes` is writable for `len`.
    let r = unsafe {
        real::<Fn3<*mut c_void, DevPtr, usize>>(slot::cuMemcpyDtoH_v2)(
            bytes.as_mut_ptr().cast(),
            src,
            len,
        )
    };
    if r == SUCCESS {
        Ok(bytes)
    } else {
        Err(r)
    }
}

/// Whether `ptr` is host memory for a copy: the driver says `CU_MEMORYTYPE_HOST`, or does not
/// know it (pageable memory it never registered).
pub fn is_host(ptr: u64) -> bool {
    let mut kind: u32 = 0;
    // SAFETY: cuPointerGetAttribute(void* data, CUpointer_attribute, CUdeviceptr); the memory
    // type is an unsigned int.
    let r = unsafe {
        real::<Fn3<*mut c_void, i32, DevPtr>>(slot::cuPointerGetAttribute)(
            (&mut kind as *mut u32).cast(),
            POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr,
        )
    };
    r != SUCCESS || kind == crate::ffi::MEMORYTYPE_HOST
}

/// Each parameter's offset and size (`cuKernelGetParamInfo` for a `CUkernel`, else
/// `cuFuncGetParamInfo`); `None` when the driver does not say (an old driver, a bad handle).
pub fn params(handle: usize, kernel: bool) -> Option<Vec<(usize, usize)>> {
    let s = if kernel {
        slot::cuKernelGetParamInfo
    } else {
        slot::cuFuncGetParamInfo
    };
    address(s)?;
    let f = unsafe { real::<Fn4<Handle, usize, *mut usize, *mut usize>>(s) };
    let mut params = Vec::new();
    // A kernel has at most 32764 bytes of parameters, so fewer parameters than that.
    for i in 0..32768 {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: (CUfunction|CUkernel, size_t index, size_t* offset, size_t* size).
        let r = unsafe { f(handle as Handle, i, &mut offset, &mut size) };
        if r != SUCCESS {
            // The index past the last parameter is refused: that is the count. A refusal of
            // index 0 is no parameter or no answer, told apart by whether the other call works.
            return (i > 0 || r == crate::ffi::ERROR_INVALID_VALUE).then_some(params);
        }
        params.push((offset, size));
    }
    Some(params)
}

/// What a function uses, as `cuFuncGetAttribute` reports it, in the order of
/// [`FUNCTION_ATTRIBUTES`]; `None` where the driver answers none of them (a `CUkernel` handle).
pub fn function_attributes(handle: usize) -> Option<[i32; 7]> {
    address(slot::cuFuncGetAttribute)?;
    let f = unsafe { real::<Fn3<*mut i32, i32, Handle>>(slot::cuFuncGetAttribute) };
    let mut out = [0i32; 7];
    for (value, (code, _)) in out.iter_mut().zip(FUNCTION_ATTRIBUTES) {
        // SAFETY: (int* value, CUfunction_attribute, CUfunction).
        if unsafe { f(value, code, handle as Handle) } != SUCCESS {
            return None;
        }
    }
    Some(out)
}

/// The `CUfunction_attribute`s recorded per function, with the names the `function` event gives
/// them (those of `mantissa_gpu::KernelResources`).
pub const FUNCTION_ATTRIBUTES: [(i32, &str); 7] = [
    (4, "registers"),
    (3, "local_bytes"),
    (1, "static_shared_bytes"),
    (2, "const_bytes"),
    (0, "max_threads_per_block"),
    (5, "ptx_version"),
    (6, "binary_version"),
];

/// A function's or kernel's name (`cuFuncGetName`, `cuKernelGetName`).
pub fn name(handle: usize, kernel: bool) -> Option<String> {
    let s = if kernel {
        slot::cuKernelGetName
    } else {
        slot::cuFuncGetName
    };
    address(s)?;
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: (const char**, CUfunction|CUkernel); the driver owns the string.
    let r = unsafe { real::<Fn2<*mut *const c_char, Handle>>(s)(&mut name, handle as Handle) };
    (r == SUCCESS && !name.is_null()).then(|| {
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
}

/// What a handle belongs to, by `cuFuncGetModule` or `cuKernelGetLibrary` (both
/// `(CUmodule*|CUlibrary*, CUfunction|CUkernel)`).
fn owner(s: usize, handle: usize) -> Option<usize> {
    address(s)?;
    let mut owner: Handle = std::ptr::null_mut();
    // SAFETY: per the two declarations above.
    let r = unsafe { real::<Fn2<*mut Handle, Handle>>(s)(&mut owner, handle as Handle) };
    (r == SUCCESS).then_some(owner as usize)
}

/// The module a function belongs to (`cuFuncGetModule`).
pub fn function_module(function: usize) -> Option<usize> {
    owner(slot::cuFuncGetModule, function)
}

/// The library a kernel belongs to (`cuKernelGetLibrary`).
pub fn kernel_library(kernel: usize) -> Option<usize> {
    owner(slot::cuKernelGetLibrary, kernel)
}

/// A new event (default flags), or `None`.
pub fn event_create() -> Option<usize> {
    let mut event: Handle = std::ptr::null_mut();
    // SAFETY: cuEventCreate(CUevent*, unsigned int flags).
    let r = unsafe { real::<Fn2<*mut Handle, u32>>(slot::cuEventCreate)(&mut event, 0) };
    (r == SUCCESS).then_some(event as usize)
}

/// Records `event` on `stream`.
pub fn event_record(event: usize, stream: Handle, per_thread: bool) -> CuResult {
    let s = if per_thread {
        slot::cuEventRecord_ptsz
    } else {
        slot::cuEventRecord
    };
    // SAFETY: cuEventRecord(CUevent, CUstream).
    unsafe { real::<Fn2<Handle, Handle>>(s)(event as Handle, stream) }
}

/// The milliseconds between two recorded events: `Err(CUDA_ERROR_NOT_READY)` while pending.
pub fn elapsed_ms(start: usize, end: usize) -> Result<f32, CuResult> {
    let s = if address(slot::cuEventElapsedTime_v2).is_some() {
        slot::cuEventElapsedTime_v2
    } else {
        slot::cuEventElapsedTime
    };
    let mut ms = 0f32;
    // SAFETY: cuEventElapsedTime(_v2)(float*, CUevent, CUevent).
    let r = unsafe {
        real::<Fn3<*mut f32, Handle, Handle>>(s)(&mut ms, start as Handle, end as Handle)
    };
    if r == SUCCESS {
        Ok(ms)
    } else {
        Err(r)
    }
}

/// Waits for `event`.
pub fn event_synchronize(event: usize) -> CuResult {
    // SAFETY: cuEventSynchronize(CUevent).
    unsafe { real::<Fn1<Handle>>(slot::cuEventSynchronize)(event as Handle) }
}

/// The primary context of `device` when it is active (retained, then released again, so its
/// count is as it was), else `None`.
pub fn active_primary_ctx(device: i32) -> Option<usize> {
    if !primary_active(device) {
        return None;
    }
    let mut ctx: Handle = std::ptr::null_mut();
    // SAFETY: cuDevicePrimaryCtxRetain(CUcontext*, CUdevice), cuDevicePrimaryCtxRelease_v2.
    let r =
        unsafe { real::<Fn2<*mut Handle, i32>>(slot::cuDevicePrimaryCtxRetain)(&mut ctx, device) };
    if r != SUCCESS {
        return None;
    }
    unsafe { real::<Fn1<i32>>(slot::cuDevicePrimaryCtxRelease_v2)(device) };
    Some(ctx as usize)
}

/// Whether `device`'s primary context is active.
pub fn primary_active(device: i32) -> bool {
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: cuDevicePrimaryCtxGetState(CUdevice, unsigned*, int*).
    let r = unsafe {
        real::<Fn3<i32, *mut u32, *mut i32>>(slot::cuDevicePrimaryCtxGetState)(
            device,
            &mut flags,
            &mut active,
        )
    };
    r == SUCCESS && active != 0
}
