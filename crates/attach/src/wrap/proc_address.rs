//! `cuGetProcAddress` and `cuGetProcAddress_v2`: forward, then swap the real address of an
//! intercepted symbol for its wrapper. The table pairs the real driver's address of each
//! intercepted symbol, looked up by its exact exported name, with the wrapper of that name, so
//! whichever version or per-thread variant the driver picks for the caller's `cudaVersion` and
//! flags, the caller gets the wrapper of exactly that entry point.

use crate::ffi::{CuResult, SUCCESS};
use crate::real::{address, real, slot, wrappers, INTERCEPTED, SYMBOLS};
use crate::record::Recorder;
use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// (real address, wrapper address), sorted by real address.
fn table() -> &'static [(usize, usize)] {
    static TABLE: OnceLock<Vec<(usize, usize)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Vec<_> = wrappers()
            .into_iter()
            .filter_map(|(slot, wrapper)| Some((address(slot)?, wrapper)))
            .collect();
        t.sort_unstable();
        t
    })
}

/// The names intercepted symbols are asked for by: without `_ptds`/`_ptsz` and `_vN`.
fn intercepted_bases() -> &'static HashSet<&'static str> {
    static BASES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    BASES.get_or_init(|| {
        SYMBOLS
            .iter()
            .zip(INTERCEPTED.iter())
            .filter(|(_, &i)| i)
            .filter_map(|(name, _)| name.to_str().ok())
            .map(base_name)
            .collect()
    })
}

/// `cuMemcpyHtoD_v2_ptds` → `cuMemcpyHtoD`.
pub fn base_name(name: &str) -> &str {
    let name = name
        .strip_suffix("_ptds")
        .or_else(|| name.strip_suffix("_ptsz"))
        .unwrap_or(name);
    match name.rfind("_v") {
        Some(i) if name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && i + 2 < name.len() => {
            &name[..i]
        }
        _ => name,
    }
}

/// The wrapper to hand back for `pointer`, if it is an intercepted symbol's real address.
pub fn wrapper_for(pointer: usize) -> Option<usize> {
    let t = table();
    t.binary_search_by_key(&pointer, |&(real, _)| real)
        .ok()
        .map(|i| t[i].1)
}

/// After a successful lookup: swap the pointer, or note an intercepted name that was missed.
unsafe fn substitute(
    rec: &Recorder,
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) {
    if pfn.is_null() {
        return;
    }
    // SAFETY: the driver just wrote the pointer there.
    let pointer = unsafe { *pfn } as usize;
    if let Some(wrapper) = wrapper_for(pointer) {
        unsafe { *pfn = wrapper as *mut c_void };
        return;
    }
    if symbol.is_null() || pointer == 0 {
        return;
    }
    // SAFETY: the driver accepted it as a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(symbol) }.to_string_lossy();
    if intercepted_bases().contains(name.as_ref()) {
        rec.emit("proc_miss", |l| {
            l.str("symbol", &name)
                .num("version", version as u64)
                .num("flags", flags)
                .ptr("ptr", pointer as u64);
        });
    }
}

type GetProc = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> CuResult;
type GetProcV2 =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CuResult;

/// `cuGetProcAddress` (CUDA 11.3–11.8's form).
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CuResult {
    let r = unsafe { real::<GetProc>(slot::cuGetProcAddress)(symbol, pfn, version, flags) };
    if r == SUCCESS {
        if let Some(rec) = crate::recorder() {
            unsafe { substitute(rec, symbol, pfn, version, flags) };
        }
    }
    r
}

/// `cuGetProcAddress_v2` (CUDA 12+: with the symbol's status).
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CuResult {
    let r = unsafe {
        real::<GetProcV2>(slot::cuGetProcAddress_v2)(symbol, pfn, version, flags, status)
    };
    if r == SUCCESS {
        if let Some(rec) = crate::recorder() {
            unsafe { substitute(rec, symbol, pfn, version, flags) };
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names() {
        assert_eq!(base_name("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
        assert_eq!(base_name("cuLaunchKernel_ptsz"), "cuLaunchKernel");
        assert_eq!(base_name("cuGetProcAddress_v2"), "cuGetProcAddress");
        assert_eq!(base_name("cuMemcpy"), "cuMemcpy");
        assert_eq!(base_name("cuFoo_vx"), "cuFoo_vx");
        assert_eq!(base_name("cuFoo_v"), "cuFoo_v");
    }

    #[test]
    fn every_intercepted_symbol_has_its_wrapper() {
        let w = wrappers();
        assert_eq!(w.len(), INTERCEPTED.iter().filter(|&&i| i).count());
        assert!(w.iter().all(|&(slot, _)| INTERCEPTED[slot]));
        assert!(intercepted_bases().contains("cuMemcpyHtoD"));
    }
}
