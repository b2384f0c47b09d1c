//! Global lookups: `cuModuleGetGlobal` and `cuLibraryGetGlobal`, through which the CUDA runtime
//! finds the address of a `__constant__` or `__device__` variable (`cudaMemcpyToSymbol`,
//! `cudaGetSymbolAddress`). Each successful lookup is one `global` event (module key, symbol,
//! address, size), so a copy or a launch argument at that address can be told to be that
//! variable. Recorded with `copies`, which it serves.

use crate::ffi::{CuResult, DevPtr, Handle, SUCCESS};
use crate::real::{real, slot};
use std::ffi::{c_char, CStr};

type GetGlobal = unsafe extern "C" fn(*mut DevPtr, *mut usize, Handle, *const c_char) -> CuResult;

/// After a lookup: the `global` event, when the lookup succeeded and copies are recorded.
/// `library` says whether `owner` is a `CUlibrary` (else a `CUmodule`).
unsafe fn looked_up(
    r: CuResult,
    ptr: *const DevPtr,
    size: *const usize,
    owner: Handle,
    name: *const c_char,
    library: bool,
) {
    let Some(rec) = crate::recorder().filter(|r| r.what.copies) else {
        return;
    };
    if r != SUCCESS || ptr.is_null() || name.is_null() {
        return;
    }
    // SAFETY: the driver wrote both on success; `size` may be NULL (the caller did not ask).
    let (address, bytes) = unsafe { (*ptr, (!size.is_null()).then(|| *size)) };
    let symbol = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let mut state = rec.state();
    let table = if library {
        &state.libraries
    } else {
        &state.modules
    };
    let key = table.get(&(owner as usize)).map(|m| m.key.clone());
    state.emit("global", |l| {
        match &key {
            Some(k) => l.str("module", k),
            None => l.raw("module", "null"),
        };
        l.str("symbol", &symbol).ptr("ptr", address);
        match bytes {
            Some(b) => l.num("bytes", b as u64),
            None => l.raw("bytes", "null"),
        };
    });
}

/// `cuModuleGetGlobal_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    ptr: *mut DevPtr,
    size: *mut usize,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    let r = unsafe { real::<GetGlobal>(slot::cuModuleGetGlobal_v2)(ptr, size, module, name) };
    unsafe { looked_up(r, ptr, size, module, name, false) };
    r
}

/// `cuLibraryGetGlobal`.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    ptr: *mut DevPtr,
    size: *mut usize,
    library: Handle,
    name: *const c_char,
) -> CuResult {
    let r = unsafe { real::<GetGlobal>(slot::cuLibraryGetGlobal)(ptr, size, library, name) };
    unsafe { looked_up(r, ptr, size, library, name, true) };
    r
}
