//! Module and library loads and unloads, and the lookups that name launches.
//!
//! A load: the image is told and keyed (`crate::image`), saved under `modules/` the first time,
//! replaced by `<key>.ptx` when the replacement directory has it (through
//! `cuModuleLoadDataEx` or `cuLibraryLoadData`, with a JIT error log), registered under its
//! handle, given its `<key>.writes.json`, and logged. An unload reads `<key>.reads.json`'s
//! globals back first.

use crate::driver;
use crate::ffi::{
    CuResult, Handle, JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES, SUCCESS,
};
use crate::image::{self, Seen};
use crate::real::{real, slot};
use crate::record::{Function, Layout, Module, Recorder};
use std::ffi::{c_char, c_uint, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The JIT error log's size for a replacement.
const JIT_LOG_BYTES: usize = 64 << 10;

/// What a load call was handed, as far as the log needs it.
struct Prepared {
    key: Option<Arc<str>>,
    kind: Option<&'static str>,
    image_error: Option<String>,
    /// `<key>.ptx`, NUL-terminated, when it replaces the image.
    replacement: Option<Vec<u8>>,
    save_error: Option<String>,
}

/// Keys the image, saves it the first time, and reads its replacement if there is one.
fn prepare(rec: &Recorder, seen: Result<Seen<'_>, String>) -> Prepared {
    let seen = match seen {
        Ok(s) => s,
        Err(e) => {
            return Prepared {
                key: None,
                kind: None,
                image_error: Some(e),
                replacement: None,
                save_error: None,
            }
        }
    };
    let first = rec.state().saved.insert(seen.key.clone());
    let mut save_error = None;
    if first {
        let name = format!("modules/{}.{}", seen.key, seen.kind);
        save_error = rec.write(&name, seen.bytes).err();
    }
    let replacement = rec
        .replacement_file(&seen.key, ".ptx")
        .and_then(|path| std::fs::read(path).ok())
        .map(|mut ptx| {
            ptx.retain(|&b| b != 0);
            ptx.push(0);
            ptx
        });
    Prepared {
        key: Some(seen.key),
        kind: Some(seen.kind),
        image_error: None,
        replacement,
        save_error,
    }
}

/// The JIT options of a replacement load: the application's, less its error log, then ours.
struct Jit {
    keys: Vec<i32>,
    values: Vec<*mut c_void>,
    /// For each application option kept, its index in the application's arrays.
    from_app: Vec<usize>,
    log: Vec<u8>,
}

impl Jit {
    /// # Safety
    /// `keys` and `values` hold `n` options each (or are null with `n` 0), as the driver reads.
    unsafe fn new(keys: *const i32, values: *const *mut c_void, n: c_uint) -> Jit {
        let mut jit = Jit {
            keys: Vec::new(),
            values: Vec::new(),
            from_app: Vec::new(),
            log: vec![0u8; JIT_LOG_BYTES],
        };
        if !keys.is_null() && !values.is_null() {
            for i in 0..n as usize {
                // SAFETY: per the contract.
                let key = unsafe { *keys.add(i) };
                if key == JIT_ERROR_LOG_BUFFER || key == JIT_ERROR_LOG_BUFFER_SIZE_BYTES {
                    continue;
                }
                jit.keys.push(key);
                jit.values.push(unsafe { *values.add(i) });
                jit.from_app.push(i);
            }
        }
        jit.keys.push(JIT_ERROR_LOG_BUFFER);
        jit.values.push(jit.log.as_mut_ptr().cast());
        jit.keys.push(JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
        jit.values.push(JIT_LOG_BYTES as *mut c_void);
        jit
    }

    /// Hands the driver's output values back to the application's array, and returns the log.
    unsafe fn finish(self, values: *mut *mut c_void) -> Option<String> {
        if !values.is_null() {
            for (j, &i) in self.from_app.iter().enumerate() {
                // SAFETY: `i` indexes the application's array (see `new`).
                unsafe { *values.add(i) = self.values[j] };
            }
        }
        let log = CStr::from_bytes_until_nul(&self.log)
            .ok()?
            .to_string_lossy();
        (!log.trim().is_empty()).then(|| log.into_owned())
    }
}

/// Options a library load passes on unchanged.
#[derive(Clone, Copy)]
struct LibraryOptions {
    keys: *mut i32,
    values: *mut *mut c_void,
    n: c_uint,
}

/// The application's JIT options of a call.
#[derive(Clone, Copy)]
struct JitArgs {
    keys: *mut i32,
    values: *mut *mut c_void,
    n: c_uint,
}

/// The option arrays of a library load: its JIT options and its library options.
fn library_args(
    jit: (*mut i32, *mut *mut c_void, c_uint),
    library: (*mut i32, *mut *mut c_void, c_uint),
) -> (JitArgs, LibraryOptions) {
    (
        JitArgs {
            keys: jit.0,
            values: jit.1,
            n: jit.2,
        },
        LibraryOptions {
            keys: library.0,
            values: library.1,
            n: library.2,
        },
    )
}

const NO_JIT: JitArgs = JitArgs {
    keys: std::ptr::null_mut(),
    values: std::ptr::null_mut(),
    n: 0,
};

type ModuleLoadDataEx = unsafe extern "C" fn(
    *mut Handle,
    *const c_void,
    c_uint,
    *mut i32,
    *mut *mut c_void,
) -> CuResult;
type LibraryLoadData = unsafe extern "C" fn(
    *mut Handle,
    *const c_void,
    *mut i32,
    *mut *mut c_void,
    c_uint,
    *mut i32,
    *mut *mut c_void,
    c_uint,
) -> CuResult;

/// Loads a replacement's PTX as a module or (with `library`) a library.
unsafe fn load_replacement(
    out: *mut Handle,
    ptx: &[u8],
    app: JitArgs,
    library: Option<LibraryOptions>,
) -> (CuResult, Option<String>) {
    let mut jit = unsafe { Jit::new(app.keys, app.values, app.n) };
    let n = jit.keys.len() as c_uint;
    let r = unsafe {
        match library {
            None => real::<ModuleLoadDataEx>(slot::cuModuleLoadDataEx)(
                out,
                ptx.as_ptr().cast(),
                n,
                jit.keys.as_mut_ptr(),
                jit.values.as_mut_ptr(),
            ),
            Some(lib) => real::<LibraryLoadData>(slot::cuLibraryLoadData)(
                out,
                ptx.as_ptr().cast(),
                jit.keys.as_mut_ptr(),
                jit.values.as_mut_ptr(),
                n,
                lib.keys,
                lib.values,
                lib.n,
            ),
        }
    };
    let log = unsafe { jit.finish(app.values) };
    (r, log)
}

/// Parses `<key>.writes.json`: `[{"symbol": NAME, "hex": BYTES}]`.
fn parse_writes(text: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let items = value.as_array().ok_or("not an array")?;
    items
        .iter()
        .map(|item| {
            let symbol = item["symbol"]
                .as_str()
                .ok_or("an item without \"symbol\"")?;
            let hex = item["hex"].as_str().ok_or("an item without \"hex\"")?;
            let bytes = crate::json::unhex(hex).ok_or(format!("{symbol}: bad hex"))?;
            Ok((symbol.to_string(), bytes))
        })
        .collect()
}

/// Parses `<key>.reads.json`: `[NAME, ...]`.
fn parse_reads(text: &[u8]) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let items = value.as_array().ok_or("not an array")?;
    items
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or("a name that is not a string".into())
        })
        .collect()
}

/// A replacement-directory JSON file of `key`, parsed (`Ok(None)` when absent).
fn recipe_file<T>(
    rec: &Recorder,
    key: &str,
    suffix: &str,
    parse: fn(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, String> {
    let Some(path) = rec.replacement_file(key, suffix) else {
        return Ok(None);
    };
    let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes each (symbol, bytes) to the module's or library's globals.
pub(crate) fn apply_writes(
    handle: usize,
    library: bool,
    writes: &[(String, Vec<u8>)],
) -> Result<(), String> {
    for (symbol, bytes) in writes {
        let (ptr, size) = driver::global(handle, library, symbol)?;
        if bytes.len() > size {
            return Err(format!(
                "{symbol}: {} bytes written to a global of {size}",
                bytes.len()
            ));
        }
        let r = driver::htod(ptr, bytes);
        if r != SUCCESS {
            return Err(format!("{symbol}: copy failed (CUresult {r})"));
        }
    }
    Ok(())
}

/// After a load call: registers the handle, applies writes, logs the `load` event.
fn finish(
    rec: &Recorder,
    prepared: Prepared,
    via: &str,
    library: bool,
    result: CuResult,
    handle: usize,
    jit_log: Option<String>,
) {
    let mut write_error = None;
    if let (SUCCESS, Some(key)) = (result, prepared.key.as_ref()) {
        let ctx = driver::current_ctx();
        let reads = recipe_file(rec, key, ".reads.json", parse_reads).unwrap_or_else(|e| {
            write_error = Some(e);
            None
        });
        let mut pending_writes = None;
        match recipe_file(rec, key, ".writes.json", parse_writes) {
            Ok(Some(writes)) if library && ctx == 0 => pending_writes = Some(writes.into()),
            Ok(Some(writes)) => {
                if let Err(e) = apply_writes(handle, library, &writes) {
                    write_error = Some(e);
                }
            }
            Ok(None) => {}
            Err(e) => write_error = Some(e),
        }
        if pending_writes.is_some() {
            rec.pending_writes.store(true, Ordering::Relaxed);
        }
        let reads = reads.unwrap_or_default();
        // Reads, and timed launches, are resolved at exit through the driver: before the
        // runtime's own exit handler shuts it down.
        if !reads.is_empty() || rec.what.time {
            crate::exit_before_runtime();
        }
        let module = Module {
            key: key.clone(),
            ctx,
            library,
            reads: reads.into(),
            pending_writes,
        };
        let mut state = rec.state();
        if library {
            state.libraries.insert(handle, module);
        } else {
            state.modules.insert(handle, module);
        }
    }
    rec.emit("load", |l| {
        l.opt_str("module", prepared.key.as_deref())
            .opt_str("kind", prepared.kind)
            .str("via", via)
            .bool("replaced", prepared.replacement.is_some())
            .ptr("handle", handle as u64);
        if result != SUCCESS {
            l.num("error", result as u64);
        }
        if let Some(log) = &jit_log {
            l.str("jit_log", log);
        }
        if let Some(e) = &prepared.image_error {
            l.str("image_error", e);
        }
        if let Some(e) = &write_error {
            l.str("write_error", e);
        }
        if let Some(e) = &prepared.save_error {
            l.str("save_error", e);
        }
    });
}

/// The handle a load call wrote (null when the pointer is null or the call failed).
unsafe fn written(out: *mut Handle, r: CuResult) -> usize {
    if r == SUCCESS && !out.is_null() {
        unsafe { *out as usize }
    } else {
        0
    }
}

/// The whole of a load call: `seen` is what it was handed; `forward` makes the original call.
unsafe fn load(
    rec: &Recorder,
    via: &str,
    seen: Result<Seen<'_>, String>,
    out: *mut Handle,
    jit: JitArgs,
    library: Option<LibraryOptions>,
    forward: impl FnOnce() -> CuResult,
) -> CuResult {
    let prepared = prepare(rec, seen);
    let (r, log) = match &prepared.replacement {
        Some(ptx) => unsafe { load_replacement(out, ptx, jit, library) },
        None => (forward(), None),
    };
    finish(
        rec,
        prepared,
        via,
        library.is_some(),
        r,
        unsafe { written(out, r) },
        log,
    );
    r
}

/// A file load: reads the file to key it (an unreadable file is logged and forwarded).
unsafe fn load_file(
    rec: &Recorder,
    via: &str,
    path: *const c_char,
    out: *mut Handle,
    jit: JitArgs,
    library: Option<LibraryOptions>,
    forward: impl FnOnce() -> CuResult,
) -> CuResult {
    let bytes = if path.is_null() {
        Err("null file name".to_string())
    } else {
        let name = unsafe { CStr::from_ptr(path) }
            .to_string_lossy()
            .into_owned();
        std::fs::read(&name).map_err(|e| format!("{name}: {e}"))
    };
    let seen = match &bytes {
        Ok(b) => image::of(b),
        Err(e) => Err(e.clone()),
    };
    unsafe { load(rec, via, seen, out, jit, library, forward) }
}

type LoadData = unsafe extern "C" fn(*mut Handle, *const c_void) -> CuResult;
type LoadFile = unsafe extern "C" fn(*mut Handle, *const c_char) -> CuResult;
type LibraryLoadFile = unsafe extern "C" fn(
    *mut Handle,
    *const c_char,
    *mut i32,
    *mut *mut c_void,
    c_uint,
    *mut i32,
    *mut *mut c_void,
    c_uint,
) -> CuResult;

/// `cuModuleLoad`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoad(module: *mut Handle, fname: *const c_char) -> CuResult {
    let f = unsafe { real::<LoadFile>(slot::cuModuleLoad) };
    let Some(rec) = crate::recorder() else {
        return unsafe { f(module, fname) };
    };
    unsafe {
        load_file(rec, "cuModuleLoad", fname, module, NO_JIT, None, || {
            f(module, fname)
        })
    }
}

/// `cuModuleLoadData`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CuResult {
    let f = unsafe { real::<LoadData>(slot::cuModuleLoadData) };
    let Some(rec) = crate::recorder() else {
        return unsafe { f(module, image) };
    };
    let seen = unsafe { image::at(image) };
    unsafe {
        load(rec, "cuModuleLoadData", seen, module, NO_JIT, None, || {
            f(module, image)
        })
    }
}

/// `cuModuleLoadDataEx`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    n: c_uint,
    keys: *mut i32,
    values: *mut *mut c_void,
) -> CuResult {
    let f = unsafe { real::<ModuleLoadDataEx>(slot::cuModuleLoadDataEx) };
    let Some(rec) = crate::recorder() else {
        return unsafe { f(module, image, n, keys, values) };
    };
    let seen = unsafe { image::at(image) };
    let jit = JitArgs { keys, values, n };
    unsafe {
        load(rec, "cuModuleLoadDataEx", seen, module, jit, None, || {
            f(module, image, n, keys, values)
        })
    }
}

/// `cuModuleLoadFatBinary`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadFatBinary(
    module: *mut Handle,
    fat_cubin: *const c_void,
) -> CuResult {
    let f = unsafe { real::<LoadData>(slot::cuModuleLoadFatBinary) };
    let Some(rec) = crate::recorder() else {
        return unsafe { f(module, fat_cubin) };
    };
    let seen = unsafe { image::at(fat_cubin) };
    unsafe {
        load(
            rec,
            "cuModuleLoadFatBinary",
            seen,
            module,
            NO_JIT,
            None,
            || f(module, fat_cubin),
        )
    }
}

/// `cuLibraryLoadData`.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut Handle,
    code: *const c_void,
    jit_keys: *mut i32,
    jit_values: *mut *mut c_void,
    jit_n: c_uint,
    lib_keys: *mut i32,
    lib_values: *mut *mut c_void,
    lib_n: c_uint,
) -> CuResult {
    let f = unsafe { real::<LibraryLoadData>(slot::cuLibraryLoadData) };
    let call = || unsafe {
        f(
            library, code, jit_keys, jit_values, jit_n, lib_keys, lib_values, lib_n,
        )
    };
    let Some(rec) = crate::recorder() else {
        return call();
    };
    let seen = unsafe { image::at(code) };
    let (jit, lib) = library_args((jit_keys, jit_values, jit_n), (lib_keys, lib_values, lib_n));
    unsafe {
        load(
            rec,
            "cuLibraryLoadData",
            seen,
            library,
            jit,
            Some(lib),
            call,
        )
    }
}

/// `cuLibraryLoadFromFile`.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    library: *mut Handle,
    file: *const c_char,
    jit_keys: *mut i32,
    jit_values: *mut *mut c_void,
    jit_n: c_uint,
    lib_keys: *mut i32,
    lib_values: *mut *mut c_void,
    lib_n: c_uint,
) -> CuResult {
    let f = unsafe { real::<LibraryLoadFile>(slot::cuLibraryLoadFromFile) };
    let call = || unsafe {
        f(
            library, file, jit_keys, jit_values, jit_n, lib_keys, lib_values, lib_n,
        )
    };
    let Some(rec) = crate::recorder() else {
        return call();
    };
    let (jit, lib) = library_args((jit_keys, jit_values, jit_n), (lib_keys, lib_values, lib_n));
    unsafe {
        load_file(
            rec,
            "cuLibraryLoadFromFile",
            file,
            library,
            jit,
            Some(lib),
            call,
        )
    }
}

/// Reads back a module's or library's globals (`reads`), in its context, into
/// `reads/<key>/<symbol>.bin`, with a `read` event each.
pub(crate) fn read_back(rec: &Recorder, handle: usize, module: &Module, ctx: usize) {
    if module.reads.is_empty() {
        return;
    }
    type Read = (String, Result<(String, usize), String>);
    let results: Vec<Read> = driver::in_ctx(ctx, || {
        driver::synchronize();
        module
            .reads
            .iter()
            .map(|symbol| {
                let read =
                    driver::global(handle, module.library, symbol).and_then(|(ptr, size)| {
                        let bytes = driver::dtoh(ptr, size)
                            .map_err(|r| format!("{symbol}: copy failed (CUresult {r})"))?;
                        let file = format!("reads/{}/{symbol}.bin", module.key);
                        rec.write(&file, &bytes)?;
                        Ok((file, bytes.len()))
                    });
                (symbol.clone(), read)
            })
            .collect()
    });
    let mut state = rec.state();
    for (symbol, read) in results {
        state.emit("read", |l| {
            l.str("module", &module.key).str("symbol", &symbol);
            match &read {
                Ok((file, bytes)) => l.str("file", file).num("bytes", *bytes as u64),
                Err(e) => l.str("error", e),
            };
        });
    }
}

/// An unload: reads back, forwards, forgets the handle.
fn unload(
    rec: &Recorder,
    handle: usize,
    library: bool,
    forward: impl FnOnce() -> CuResult,
) -> CuResult {
    let module = {
        let state = rec.state();
        let table = if library {
            &state.libraries
        } else {
            &state.modules
        };
        table.get(&handle).cloned()
    };
    if let Some(m) = &module {
        let ctx = if library {
            driver::current_ctx()
        } else {
            m.ctx
        };
        read_back(rec, handle, m, ctx);
    }
    let r = forward();
    if r == SUCCESS {
        let mut state = rec.state();
        if library {
            state.libraries.remove(&handle);
        } else {
            state.modules.remove(&handle);
        }
    }
    r
}

/// `cuModuleUnload`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(module: Handle) -> CuResult {
    let f = unsafe { real::<unsafe extern "C" fn(Handle) -> CuResult>(slot::cuModuleUnload) };
    match crate::recorder() {
        None => unsafe { f(module) },
        Some(rec) => unload(rec, module as usize, false, || unsafe { f(module) }),
    }
}

/// `cuLibraryUnload`.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryUnload(library: Handle) -> CuResult {
    let f = unsafe { real::<unsafe extern "C" fn(Handle) -> CuResult>(slot::cuLibraryUnload) };
    match crate::recorder() {
        None => unsafe { f(library) },
        Some(rec) => unload(rec, library as usize, true, || unsafe { f(library) }),
    }
}

/// Records a looked-up function or kernel under its handle.
fn name_function(
    rec: &Recorder,
    handle: usize,
    module: Option<Arc<str>>,
    name: Option<Arc<str>>,
    kernel: bool,
) {
    rec.state().functions.insert(
        handle,
        Function {
            module,
            name,
            kernel,
            params: Layout::Unasked,
        },
    );
}

/// A lookup's name argument.
unsafe fn name_of(name: *const c_char) -> Option<Arc<str>> {
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into())
}

/// After a lookup by name: the handle written at `out` is named after `name` and the key of
/// `owner`, a module (`kernel` false) or a library (`kernel` true).
unsafe fn looked_up(
    r: CuResult,
    out: *mut Handle,
    owner: Handle,
    name: *const c_char,
    kernel: bool,
) {
    let Some(rec) = crate::recorder().filter(|_| r == SUCCESS) else {
        return;
    };
    let key = {
        let state = rec.state();
        let table = if kernel {
            &state.libraries
        } else {
            &state.modules
        };
        table.get(&(owner as usize)).map(|m| m.key.clone())
    };
    let handle = unsafe { written(out, r) };
    name_function(rec, handle, key, unsafe { name_of(name) }, kernel);
}

type GetByName = unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> CuResult;
type GetByHandle = unsafe extern "C" fn(*mut Handle, Handle) -> CuResult;

/// `cuModuleGetFunction`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    function: *mut Handle,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    let r = unsafe { real::<GetByName>(slot::cuModuleGetFunction)(function, module, name) };
    unsafe { looked_up(r, function, module, name, false) };
    r
}

/// `cuLibraryGetKernel`.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut Handle,
    library: Handle,
    name: *const c_char,
) -> CuResult {
    let r = unsafe { real::<GetByName>(slot::cuLibraryGetKernel)(kernel, library, name) };
    unsafe { looked_up(r, kernel, library, name, true) };
    r
}

/// `cuLibraryGetModule`: the module gets the library's key (its reads stay the library's).
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetModule(module: *mut Handle, library: Handle) -> CuResult {
    let r = unsafe { real::<GetByHandle>(slot::cuLibraryGetModule)(module, library) };
    if let (SUCCESS, Some(rec)) = (r, crate::recorder()) {
        let handle = unsafe { written(module, r) };
        let ctx = driver::current_ctx();
        let mut state = rec.state();
        if let Some(lib) = state.libraries.get(&(library as usize)) {
            let m = Module {
                key: lib.key.clone(),
                ctx,
                library: false,
                reads: Arc::new([]),
                pending_writes: None,
            };
            state.modules.insert(handle, m);
        }
    }
    r
}

/// `cuKernelGetFunction`: the function gets the kernel's module and name.
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetFunction(function: *mut Handle, kernel: Handle) -> CuResult {
    let r = unsafe { real::<GetByHandle>(slot::cuKernelGetFunction)(function, kernel) };
    if let (SUCCESS, Some(rec)) = (r, crate::recorder()) {
        let handle = unsafe { written(function, r) };
        let known = rec.state().functions.get(&(kernel as usize)).cloned();
        let (module, name) = known.map(|k| (k.module, k.name)).unwrap_or_default();
        name_function(rec, handle, module, name, false);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipe_files_parse() {
        let w = parse_writes(br#"[{"symbol":"coef","hex":"0000803f"}]"#).unwrap();
        assert_eq!(w, vec![("coef".to_string(), vec![0, 0, 0x80, 0x3f])]);
        assert!(parse_writes(br#"[{"symbol":"coef","hex":"0g"}]"#).is_err());
        assert!(parse_writes(br#"{"symbol":"coef"}"#).is_err());
        assert_eq!(parse_reads(br#"["a","b"]"#).unwrap(), vec!["a", "b"]);
        assert!(parse_reads(br#"["a",1]"#).is_err());
    }

    #[test]
    fn jit_options_drop_the_application_log_and_add_ours() {
        let mut keys = [JIT_ERROR_LOG_BUFFER, 7, JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [
            std::ptr::null_mut(),
            3usize as *mut c_void,
            9usize as *mut c_void,
        ];
        let mut jit = unsafe { Jit::new(keys.as_mut_ptr(), values.as_mut_ptr(), 3) };
        assert_eq!(
            jit.keys,
            vec![7, JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        );
        assert_eq!(jit.values[2] as usize, JIT_LOG_BYTES);
        // The driver writes an output value and a log.
        jit.values[0] = 42usize as *mut c_void;
        jit.log[..5].copy_from_slice(b"bad\n\0");
        let log = unsafe { jit.finish(values.as_mut_ptr()) };
        assert_eq!(log.as_deref(), Some("bad\n"));
        assert_eq!(values[1] as usize, 42);
    }
}
