//! The attach library against a fake driver, the tests playing the CUDA runtime's part: each
//! scenario is a child process that dlopens the built shim (with `MANTISSA_REAL_LIBCUDA` at the
//! fake) and calls it; the parent checks what the fake received and what the shim wrote.

mod support;

use serde_json::{json, Value};
use std::ffi::{c_void, CString};
use std::ptr::null_mut;
use support::{key, ptx, Lib, Run, CHILD_ENV};

type P = *mut c_void;
type LoadData = unsafe extern "C" fn(*mut P, *const c_void) -> i32;
type LoadFile = unsafe extern "C" fn(*mut P, *const i8) -> i32;
type LibraryLoadData = unsafe extern "C" fn(
    *mut P,
    *const c_void,
    *mut i32,
    *mut P,
    u32,
    *mut i32,
    *mut P,
    u32,
) -> i32;
type GetByName = unsafe extern "C" fn(*mut P, P, *const i8) -> i32;
type Launch = unsafe extern "C" fn(P, u32, u32, u32, u32, u32, u32, u32, P, *mut P, *mut P) -> i32;
type LaunchEx = unsafe extern "C" fn(*const LaunchConfig, P, *mut P, *mut P) -> i32;
type GetProc = unsafe extern "C" fn(*const i8, *mut P, i32, u64, *mut i32) -> i32;
type GetProcV1 = unsafe extern "C" fn(*const i8, *mut P, i32, u64) -> i32;
type GetGlobal = unsafe extern "C" fn(*mut u64, *mut usize, P, *const i8) -> i32;
type Copy2D = unsafe extern "C" fn(*const Memcpy2D) -> i32;
type Alloc = unsafe extern "C" fn(*mut u64, usize) -> i32;
type HtoD = unsafe extern "C" fn(u64, *const c_void, usize) -> i32;
type DtoHAsync = unsafe extern "C" fn(P, u64, usize, P) -> i32;
type Memcpy = unsafe extern "C" fn(u64, u64, usize) -> i32;
type Memset32 = unsafe extern "C" fn(u64, u32, usize) -> i32;
type Handle1 = unsafe extern "C" fn(P) -> i32;
type Ptr1 = unsafe extern "C" fn(u64) -> i32;
type Int1 = unsafe extern "C" fn(u32) -> i32;
type Out1 = unsafe extern "C" fn(*mut P) -> i32;
type Count = unsafe extern "C" fn(*mut i32) -> i32;

#[repr(C)]
struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: P,
    attrs: P,
    n: u32,
}

/// The child processes' entry: runs the scenario `CHILD_ENV` names (nothing otherwise).
#[test]
fn child() {
    let Ok(scenario) = std::env::var(CHILD_ENV) else {
        return;
    };
    unsafe {
        match scenario.as_str() {
            "forward" => forward(),
            "proc" => proc_addresses(),
            "watch" => watch(),
            "replace" => replace(),
            "data_time" => data_time(),
            "fatbin" => fatbin(),
            "no_driver" => no_driver(),
            "primary" => primary_reset(),
            other => panic!("no scenario {other}"),
        }
    }
}

/// `cuGetProcAddress_v2` through the shim: the pointer handed back.
unsafe fn lookup(shim: &Lib, name: &str, flags: u64) -> P {
    let gpa: GetProc = unsafe { shim.get("cuGetProcAddress_v2") };
    let c = CString::new(name).unwrap();
    let mut p = null_mut();
    let mut status = 0;
    assert_eq!(
        unsafe { gpa(c.as_ptr(), &mut p, 13000, flags, &mut status) },
        0,
        "{name}"
    );
    p
}

/// Loads PTX text with `cuModuleLoadData` through the shim.
unsafe fn load_ptx(shim: &Lib, text: &str) -> (i32, P) {
    let load: LoadData = unsafe { shim.get("cuModuleLoadData") };
    let c = CString::new(text).unwrap();
    let mut m = null_mut();
    let r = unsafe { load(&mut m, c.as_ptr().cast()) };
    (r, m)
}

/// Loads `ptx(marker)` with `cuLibraryLoadData` through the shim (no options).
unsafe fn load_library(shim: &Lib, marker: &str) -> P {
    let load: LibraryLoadData = unsafe { shim.get("cuLibraryLoadData") };
    let text = CString::new(ptx(marker)).unwrap();
    let (mut lib, none) = (null_mut(), null_mut());
    let r = unsafe {
        load(
            &mut lib,
            text.as_ptr().cast(),
            null_mut(),
            none,
            0,
            null_mut(),
            none,
            0,
        )
    };
    assert_eq!(r, 0);
    lib
}

/// Launches `f` on one thread of one block, on the null stream, through the shim.
unsafe fn launch_one(shim: &Lib, f: P, params: &mut [P]) {
    let launch: Launch = unsafe { shim.get("cuLaunchKernel") };
    let [g, b] = [[1u32; 3]; 2];
    let (stream, extra) = (null_mut(), null_mut());
    let p = params.as_mut_ptr();
    let r = unsafe { launch(f, g[0], g[1], g[2], b[0], b[1], b[2], 0, stream, p, extra) };
    assert_eq!(r, 0);
}

/// Looks a function up and launches it with (pointer, f32, u32) arguments on `stream`.
unsafe fn launch_axpy(shim: &Lib, module: P, dev: u64, stream: P) {
    let get: GetByName = unsafe { shim.get("cuModuleGetFunction") };
    let launch: Launch = unsafe { shim.get("cuLaunchKernel") };
    let mut f = null_mut();
    assert_eq!(unsafe { get(&mut f, module, c"axpy_8_4_4".as_ptr()) }, 0);
    let (mut d, mut a, mut n) = (dev, 2.0f32, 16u32);
    let mut params = [
        (&mut d as *mut u64).cast(),
        (&mut a as *mut f32).cast(),
        (&mut n as *mut u32).cast(),
    ];
    let r = unsafe {
        launch(
            f,
            2,
            1,
            1,
            32,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(r, 0);
}

unsafe fn forward() {
    let shim = Lib::shim();
    let fake = Lib::fake();
    let count: Count = unsafe { shim.get("cuDeviceGetCount") };
    let mut n = 0;
    assert_eq!(unsafe { count(&mut n) }, 0);
    assert_eq!(n, 3, "the trampoline reached the fake");
    let graph: unsafe extern "C" fn(*mut P, u32) -> i32 = unsafe { shim.get("cuGraphCreate") };
    let mut g = null_mut();
    assert_eq!(
        unsafe { graph(&mut g, 0) },
        500,
        "a symbol the fake lacks: CUDA_ERROR_NOT_FOUND"
    );
    // Not recording: cuGetProcAddress hands back the real pointers, wrappers included.
    for name in ["cuLaunchKernel", "cuDeviceGetCount", "cuModuleLoadData"] {
        assert_eq!(
            unsafe { lookup(&shim, name, 0) },
            fake.address(name),
            "{name}"
        );
    }
    // Wrappers forward: the replacement directory is not read without MANTISSA_ATTACH_DIR.
    let (r, m) = unsafe { load_ptx(&shim, &ptx("original")) };
    assert_eq!(r, 0);
    unsafe { launch_axpy(&shim, m, 0x10, null_mut()) };
}

#[test]
fn without_an_attach_dir_everything_is_forwarded_and_nothing_written() {
    let run = Run::new();
    let original = ptx("original");
    std::fs::write(
        run.replace()
            .join(format!("{}.ptx", key(original.as_bytes()))),
        ptx("new"),
    )
    .unwrap();
    let replace = run.replace();
    run.child(
        "forward",
        false,
        &[("MANTISSA_REPLACE_DIR", replace.to_str().unwrap())],
    );
    assert_eq!(
        run.fake_load(1),
        original.as_bytes(),
        "the original module, not the replacement"
    );
    let lines = run.fake_lines();
    assert!(lines.iter().any(|l| l == "device count"), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("launch cuLaunchKernel axpy_8_4_4")),
        "{lines:?}"
    );
    for dir in [run.attach(), run.root.path().join("cwd")] {
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(files.is_empty(), "{} holds {files:?}", dir.display());
    }
    assert_eq!(std::fs::read_dir(run.replace()).unwrap().count(), 1);
}

unsafe fn proc_addresses() {
    let shim = Lib::shim();
    let fake = Lib::fake();
    let cases = [
        ("cuLaunchKernel", 0, Some("cuLaunchKernel")),
        ("cuLaunchKernel", 2, Some("cuLaunchKernel_ptsz")),
        ("cuMemcpyHtoD", 0, Some("cuMemcpyHtoD_v2")),
        ("cuModuleLoadData", 0, Some("cuModuleLoadData")),
        ("cuGetProcAddress", 0, Some("cuGetProcAddress_v2")),
        ("cuDeviceGetCount", 0, None),
        ("cuCtxGetCurrent", 0, None),
    ];
    for (name, flags, wrapper) in cases {
        let got = unsafe { lookup(&shim, name, flags) };
        let want = match wrapper {
            Some(w) => shim.address(w),
            None => fake.address(name),
        };
        assert!(!want.is_null(), "{name}");
        assert_eq!(got, want, "{name} flags {flags}: wrapper {wrapper:?}");
        assert_ne!(got, fake.address(wrapper.unwrap_or("-")), "{name}");
    }
    // The CUDA 11 entry point too; and the wrapper it hands back for itself works.
    let v1: GetProcV1 = unsafe { shim.get("cuGetProcAddress") };
    let mut p = null_mut();
    assert_eq!(
        unsafe { v1(c"cuLaunchKernel".as_ptr(), &mut p, 12000, 0) },
        0
    );
    assert_eq!(p, shim.address("cuLaunchKernel"));
    let gpa = unsafe { lookup(&shim, "cuGetProcAddress", 0) };
    let gpa: GetProc = unsafe { std::mem::transmute::<P, GetProc>(gpa) };
    let mut p = null_mut();
    assert_eq!(
        unsafe { gpa(c"cuMemcpyHtoD".as_ptr(), &mut p, 13000, 2, null_mut()) },
        0
    );
    assert_eq!(p, shim.address("cuMemcpyHtoD_v2_ptds"));
    // A library's kernel looked up behind the shim's back (as an enumeration would give it).
    let lib = unsafe { load_library(&shim, "a") };
    let get_kernel: GetByName = unsafe { fake.get("cuLibraryGetKernel") };
    let mut k = null_mut();
    assert_eq!(
        unsafe { get_kernel(&mut k, lib, c"axpy_8_4_4".as_ptr()) },
        0
    );
    let (mut d, mut a, mut n) = (8u64, 2.0f32, 16u32);
    let mut params: [P; 3] = [
        (&mut d as *mut u64).cast(),
        (&mut a as *mut f32).cast(),
        (&mut n as *mut u32).cast(),
    ];
    unsafe { launch_one(&shim, k, &mut params) };
}

#[test]
fn get_proc_address_hands_back_wrappers_for_intercepted_symbols_only() {
    let run = Run::new();
    run.child("proc", true, &[]);
    let events = without_functions(run.events());
    assert_eq!(kinds(&events), ["load", "launch", "end"], "no proc_miss");
    // A kernel the shim did not see looked up is named by the driver when launched.
    assert_eq!(events[1]["kernel"], "axpy_8_4_4");
    assert_eq!(
        events[1]["module"],
        key(ptx("a").as_bytes()),
        "through cuKernelGetLibrary"
    );
    assert_eq!(
        events[1]["args"],
        json!(["0800000000000000", "00000040", "10000000"])
    );
}

/// The library unloaded by `after_exit`, an exit handler that runs after the shim's (it is
/// registered before the shim is loaded), as the runtime's own exit handlers do.
static LATE_LIBRARY: std::sync::atomic::AtomicPtr<c_void> =
    std::sync::atomic::AtomicPtr::new(null_mut());

extern "C" fn after_exit() {
    let shim = Lib::shim();
    let unload: Handle1 = unsafe { shim.get("cuLibraryUnload") };
    let lib = LATE_LIBRARY.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(unsafe { unload(lib) }, 0);
}

unsafe fn watch() {
    unsafe { libc::atexit(after_exit) };
    let shim = Lib::shim();
    let init: Int1 = unsafe { shim.get("cuInit") };
    assert_eq!(unsafe { init(0) }, 0);
    let (r, m) = unsafe { load_ptx(&shim, &ptx("a")) };
    assert_eq!(r, 0);
    let alloc: Alloc = unsafe { shim.get("cuMemAlloc_v2") };
    let mut dev = 0u64;
    assert_eq!(unsafe { alloc(&mut dev, 64) }, 0);
    let host = [1.0f32; 16];
    let htod: HtoD = unsafe { shim.get("cuMemcpyHtoD_v2") };
    assert_eq!(unsafe { htod(dev, host.as_ptr().cast(), 64) }, 0);
    unsafe { launch_axpy(&shim, m, dev, null_mut()) };
    // The per-thread variant, reached as the runtime reaches it.
    let ptsz = unsafe { lookup(&shim, "cuLaunchKernel", 2) };
    let ptsz: Launch = unsafe { std::mem::transmute::<P, Launch>(ptsz) };
    let get: GetByName = unsafe { shim.get("cuModuleGetFunction") };
    let mut f = null_mut();
    assert_eq!(unsafe { get(&mut f, m, c"axpy_8_4_4".as_ptr()) }, 0);
    let (mut d, mut a, mut n) = (dev, 0.5f32, 3u32);
    let mut params: [P; 3] = [
        (&mut d as *mut u64).cast(),
        (&mut a as *mut f32).cast(),
        (&mut n as *mut u32).cast(),
    ];
    let stream = 5usize as P;
    assert_eq!(
        unsafe {
            ptsz(
                f,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                null_mut(),
            )
        },
        0
    );
    let memset: Memset32 = unsafe { shim.get("cuMemsetD32_v2") };
    assert_eq!(unsafe { memset(dev, 7, 16) }, 0);
    // Generic cuMemcpy to pageable host memory: a copy back by the pointers' kinds.
    let mut back = [0u32; 16];
    let memcpy: Memcpy = unsafe { shim.get("cuMemcpy") };
    assert_eq!(unsafe { memcpy(back.as_mut_ptr() as u64, dev, 64) }, 0);
    assert_eq!(back, [7; 16]);
    // A library, its kernel launched with cuLaunchKernelEx as a CUkernel.
    let lib = unsafe { load_library(&shim, "b") };
    let get_kernel: GetByName = unsafe { shim.get("cuLibraryGetKernel") };
    let mut k = null_mut();
    assert_eq!(unsafe { get_kernel(&mut k, lib, c"scale_8_8".as_ptr()) }, 0);
    let ex: LaunchEx = unsafe { shim.get("cuLaunchKernelEx") };
    let config = LaunchConfig {
        grid: [4, 1, 1],
        block: [64, 1, 1],
        shared: 128,
        stream: null_mut(),
        attrs: null_mut(),
        n: 0,
    };
    let (mut x, mut y) = (dev, 0x0102030405060708u64);
    let mut params: [P; 2] = [(&mut x as *mut u64).cast(), (&mut y as *mut u64).cast()];
    assert_eq!(
        unsafe { ex(&config, k, params.as_mut_ptr(), null_mut()) },
        0
    );
    // cudaMemcpyToSymbol's way: the variable's address looked up, then a copy to it; a
    // library's global looked up without asking its size.
    let module_global: GetGlobal = unsafe { shim.get("cuModuleGetGlobal_v2") };
    let (mut coef, mut size) = (0u64, 0usize);
    assert_eq!(
        unsafe { module_global(&mut coef, &mut size, m, c"coef".as_ptr()) },
        0
    );
    assert_eq!(unsafe { htod(coef, host.as_ptr().cast(), 8) }, 0);
    let library_global: GetGlobal = unsafe { shim.get("cuLibraryGetGlobal") };
    let mut table = 0u64;
    assert_eq!(
        unsafe { library_global(&mut table, null_mut(), lib, c"table".as_ptr()) },
        0
    );
    let free: Ptr1 = unsafe { shim.get("cuMemFree_v2") };
    assert_eq!(unsafe { free(dev) }, 0);
    let unload: Handle1 = unsafe { shim.get("cuModuleUnload") };
    assert_eq!(unsafe { unload(m) }, 0);
    LATE_LIBRARY.store(lib, std::sync::atomic::Ordering::Relaxed);
}

/// The events' kinds, in order.
/// `events` less the `function` lines (what each kernel uses, written once at its first launch),
/// which a test of other events leaves aside; those lines are checked in the watching test.
fn without_functions(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .filter(|e| e["event"] != "function")
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

#[test]
fn watching_records_loads_launches_copies_and_memsets_in_call_order() {
    let run = Run::new();
    run.child("watch", true, &[]);
    let all = run.events();
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e["seq"], i, "{e}");
    }
    // What each kernel uses, asked of the driver once, just before its first launch line.
    let functions: Vec<(usize, &Value)> = all
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == "function")
        .collect();
    assert_eq!(functions.len(), 3, "{all:#?}");
    for (i, f) in functions {
        let next = &all[i + 1];
        assert_eq!(next["event"], "launch");
        assert_eq!(
            (&f["module"], &f["kernel"]),
            (&next["module"], &next["kernel"])
        );
        let name = f["kernel"].as_str().unwrap();
        assert_eq!(f["registers"], 16 + name.len(), "{f}");
        assert_eq!(f["local_bytes"], 8);
        assert_eq!(f["max_threads_per_block"], 1024);
    }
    let events = without_functions(all);
    assert_eq!(
        kinds(&events),
        [
            "load", "alloc", "copy", "launch", "launch", "memset", "copy", "load", "launch",
            "global", "copy", "global", "free", "end"
        ]
    );
    let (a, b) = (ptx("a"), ptx("b"));
    let (key_a, key_b) = (key(a.as_bytes()), key(b.as_bytes()));
    assert_eq!(events[0]["module"], key_a);
    assert_eq!(events[0]["kind"], "ptx");
    assert_eq!(events[0]["via"], "cuModuleLoadData");
    assert_eq!(events[0]["replaced"], false);
    // The module is saved once, and reached the driver byte for byte.
    assert_eq!(
        std::fs::read(run.attach().join(format!("modules/{key_a}.ptx"))).unwrap(),
        a.as_bytes()
    );
    assert_eq!(run.fake_load(1), a.as_bytes());
    assert_eq!(run.fake_load(2), b.as_bytes());
    let dev = events[1]["ptr"].as_str().unwrap().to_string();
    assert_eq!(events[1]["bytes"], 64);
    assert_eq!(events[2]["dir"], "htod");
    assert_eq!(events[2]["dst"], dev);
    assert_eq!(events[2]["bytes"], 64);
    assert_eq!(events[2]["stream"], Value::Null);
    let dev_hex: String = u64::from_str_radix(&dev[2..], 16)
        .unwrap()
        .to_le_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let launch = &events[3];
    assert_eq!(launch["module"], key_a);
    assert_eq!(launch["kernel"], "axpy_8_4_4");
    assert_eq!(launch["grid"], json!([2, 1, 1]));
    assert_eq!(launch["block"], json!([32, 1, 1]));
    assert_eq!(launch["shared"], 0);
    assert_eq!(launch["stream"], "0x0");
    assert_eq!(launch["args"], json!([dev_hex, "00000040", "10000000"]));
    assert_eq!(launch["per_thread"], false);
    assert_eq!(events[4]["per_thread"], true);
    assert_eq!(events[4]["stream"], "0x5");
    assert_eq!(events[4]["args"], json!([dev_hex, "0000003f", "03000000"]));
    assert_eq!(events[5]["value"], 7);
    assert_eq!(events[5]["width"], 4);
    assert_eq!(events[5]["count"], 16);
    assert_eq!(
        events[6]["dir"], "dtoh",
        "cuMemcpy classified by the pointers"
    );
    assert_eq!(events[6]["src"], dev);
    assert_eq!(events[7]["via"], "cuLibraryLoadData");
    assert_eq!(events[7]["module"], key_b);
    let ex = &events[8];
    assert_eq!(ex["via"], "cuLaunchKernelEx");
    assert_eq!(ex["module"], key_b);
    assert_eq!(ex["kernel"], "scale_8_8");
    assert_eq!(ex["grid"], json!([4, 1, 1]));
    assert_eq!(ex["shared"], 128);
    assert_eq!(ex["args"], json!([dev_hex, "0807060504030201"]));
    let (global, to_global, library_global) = (&events[9], &events[10], &events[11]);
    assert_eq!(global["module"], key_a);
    assert_eq!(global["symbol"], "coef");
    assert_eq!(global["bytes"], 16, "the fake's globals are 16 bytes");
    assert_eq!(to_global["dir"], "htod");
    assert_eq!(to_global["dst"], global["ptr"]);
    assert_eq!(to_global["bytes"], 8);
    assert_eq!(library_global["module"], key_b);
    assert_eq!(library_global["symbol"], "table");
    assert_eq!(library_global["bytes"], Value::Null);
    assert_eq!(events[12]["ptr"], dev);
    assert_eq!(events[13]["how"], "exit");
    // The fake saw the same launches.
    let lines = run.fake_lines();
    assert!(lines
        .iter()
        .any(|l| l.starts_with("launch cuLaunchKernel_ptsz axpy_8_4_4 grid=1 block=1")));
    // After `end` `exit`, a call (the library's unload) is forwarded and nothing logged.
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("unload")).count(),
        2,
        "{lines:#?}"
    );
}

unsafe fn replace() {
    let shim = Lib::shim();
    // A library loaded before any context: its writes wait for its first launch.
    let lib = unsafe { load_library(&shim, "b") };
    let init: Int1 = unsafe { shim.get("cuInit") };
    assert_eq!(unsafe { init(0) }, 0);
    let get_kernel: GetByName = unsafe { shim.get("cuLibraryGetKernel") };
    let mut k = null_mut();
    assert_eq!(unsafe { get_kernel(&mut k, lib, c"scale_8_8".as_ptr()) }, 0);
    let (mut x, mut y) = (0u64, 0u64);
    let mut params: [P; 2] = [(&mut x as *mut u64).cast(), (&mut y as *mut u64).cast()];
    unsafe { launch_one(&shim, k, &mut params) };
    // A module replaced, written to and read back at its context's destruction.
    let (r, m) = unsafe { load_ptx(&shim, &ptx("a")) };
    assert_eq!(r, 0);
    unsafe { launch_axpy(&shim, m, 0, null_mut()) };
    // A replacement the driver refuses: the error goes back to the application.
    let (r, _) = unsafe { load_ptx(&shim, &ptx("c")) };
    assert_eq!(
        r, 218,
        "CUDA_ERROR_INVALID_PTX from the refused replacement"
    );
    let current: Out1 = unsafe { shim.get("cuCtxGetCurrent") };
    let mut ctx = null_mut();
    assert_eq!(unsafe { current(&mut ctx) }, 0);
    let destroy: Handle1 = unsafe { shim.get("cuCtxDestroy_v2") };
    assert_eq!(unsafe { destroy(ctx) }, 0);
}

#[test]
fn replacements_writes_and_reads() {
    let run = Run::new();
    let (a, b, c) = (ptx("a"), ptx("b"), ptx("c"));
    let (key_a, key_b, key_c) = (key(a.as_bytes()), key(b.as_bytes()), key(c.as_bytes()));
    let r = run.replace();
    let new_a = ptx("a, demoted");
    std::fs::write(r.join(format!("{key_a}.ptx")), &new_a).unwrap();
    std::fs::write(
        r.join(format!("{key_a}.writes.json")),
        r#"[{"symbol":"coef","hex":"0000803f"}]"#,
    )
    .unwrap();
    std::fs::write(r.join(format!("{key_a}.reads.json")), r#"["coef","other"]"#).unwrap();
    std::fs::write(
        r.join(format!("{key_b}.writes.json")),
        r#"[{"symbol":"flag","hex":"01"}]"#,
    )
    .unwrap();
    std::fs::write(r.join(format!("{key_c}.ptx")), ptx("refuse")).unwrap();
    run.child(
        "replace",
        true,
        &[("MANTISSA_REPLACE_DIR", r.to_str().unwrap())],
    );

    let lines = run.fake_lines();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in {lines:#?}"))
    };
    // The library's write waited for a context and came before its kernel's launch.
    assert!(at("htod n=1 bytes=01") < at("launch cuLaunchKernel scale_8_8"));
    // The replacement reached the driver through cuModuleLoadDataEx, with a JIT error log.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("load cuModuleLoadDataEx id=2")),
        "{lines:#?}"
    );
    assert_eq!(run.fake_load(2), new_a.as_bytes());
    assert!(lines.contains(&"  options 5 6".to_string()), "{lines:#?}");
    assert!(at("htod n=4 bytes=0000803f") < at("launch cuLaunchKernel axpy_8_4_4"));
    // Read back before the destruction.
    assert!(at("dtoh n=16 bytes=0000803f") < at("destroy"));

    let events = without_functions(run.events());
    assert_eq!(
        kinds(&events),
        ["load", "launch", "load", "launch", "load", "read", "read", "end", "end"]
    );
    assert_eq!(events[0]["module"], key_b);
    assert_eq!(events[0]["replaced"], false);
    assert_eq!(events[2]["module"], key_a);
    assert_eq!(events[2]["replaced"], true);
    assert_eq!(events[2]["via"], "cuModuleLoadData");
    assert!(events[2].get("write_error").is_none(), "{}", events[2]);
    assert_eq!(events[4]["module"], key_c);
    assert_eq!(events[4]["replaced"], true);
    assert_eq!(events[4]["error"], 218);
    assert!(events[4]["jit_log"]
        .as_str()
        .unwrap()
        .contains("refused by the fake"));
    assert_eq!(events[5]["symbol"], "coef");
    assert_eq!(events[5]["file"], format!("reads/{key_a}/coef.bin"));
    assert_eq!(events[6]["symbol"], "other");
    assert_eq!(events[7]["how"], "teardown");
    assert_eq!(events[8]["how"], "exit");
    let coef = std::fs::read(run.attach().join(format!("reads/{key_a}/coef.bin"))).unwrap();
    assert_eq!(coef, [&[0u8, 0, 0x80, 0x3f][..], &[0; 12]].concat());
    let other = std::fs::read(run.attach().join(format!("reads/{key_a}/other.bin"))).unwrap();
    assert_eq!(other, [0; 16]);
    // The original images are what modules/ keeps.
    assert_eq!(
        std::fs::read(run.attach().join(format!("modules/{key_a}.ptx"))).unwrap(),
        a.as_bytes()
    );
    assert_eq!(
        std::fs::read(run.attach().join(format!("modules/{key_c}.ptx"))).unwrap(),
        c.as_bytes()
    );
}

unsafe fn data_time() {
    let shim = Lib::shim();
    let init: Int1 = unsafe { shim.get("cuInit") };
    assert_eq!(unsafe { init(0) }, 0);
    let (_, m) = unsafe { load_ptx(&shim, &ptx("a")) };
    let alloc: Alloc = unsafe { shim.get("cuMemAlloc_v2") };
    let mut dev = 0u64;
    assert_eq!(unsafe { alloc(&mut dev, 8) }, 0);
    let htod: HtoD = unsafe { shim.get("cuMemcpyHtoD_v2") };
    assert_eq!(unsafe { htod(dev, b"abcdefgh".as_ptr().cast(), 8) }, 0);
    for _ in 0..3 {
        unsafe { launch_axpy(&shim, m, dev, null_mut()) };
    }
    let sync: unsafe extern "C" fn() -> i32 = unsafe { shim.get("cuCtxSynchronize") };
    assert_eq!(unsafe { sync() }, 0);
    unsafe { launch_axpy(&shim, m, dev, null_mut()) };
    let dtoh: DtoHAsync = unsafe { shim.get("cuMemcpyDtoHAsync_v2") };
    let mut back = [0u8; 8];
    assert_eq!(
        unsafe { dtoh(back.as_mut_ptr().cast(), dev, 8, 9usize as P) },
        0
    );
    // cudaMemcpy2D both ways: 3 rows of 6 bytes, from (2, 1) of a host array of pitch 10 to
    // (4, 1) of a device one of pitch 16, and back to a packed host array.
    let mut pitched = 0u64;
    assert_eq!(unsafe { alloc(&mut pitched, 64) }, 0);
    let host: Vec<u8> = (0..50).collect();
    let copy2d: Copy2D = unsafe { shim.get("cuMemcpy2D_v2") };
    let mut up = Memcpy2D::default();
    (up.sx, up.sy, up.st, up.sh, up.sp) = (2, 1, 1, host.as_ptr().cast(), 10);
    (up.dx, up.dy, up.dt, up.dd, up.dp) = (4, 1, 2, pitched, 16);
    (up.w, up.h) = (6, 3);
    assert_eq!(unsafe { copy2d(&up) }, 0);
    let mut packed = [0u8; 18];
    let mut down = Memcpy2D::default();
    (down.sx, down.sy, down.st, down.sd, down.sp) = (4, 1, 2, pitched, 16);
    (down.dt, down.dh, down.dp) = (1, packed.as_mut_ptr().cast(), 6);
    (down.w, down.h) = (6, 3);
    assert_eq!(unsafe { copy2d(&down) }, 0);
    let rows: Vec<u8> = [12u8, 22, 32].iter().flat_map(|&s| s..s + 6).collect();
    assert_eq!(&packed[..], &rows[..], "the fake copies rows");
}

/// `CUDA_MEMCPY2D`, as the driver reads it.
#[repr(C)]
struct Memcpy2D {
    sx: usize,
    sy: usize,
    st: u32,
    sh: *const c_void,
    sd: u64,
    sa: P,
    sp: usize,
    dx: usize,
    dy: usize,
    dt: u32,
    dh: *mut c_void,
    dd: u64,
    da: P,
    dp: usize,
    w: usize,
    h: usize,
}

impl Default for Memcpy2D {
    fn default() -> Memcpy2D {
        Memcpy2D {
            sx: 0,
            sy: 0,
            st: 0,
            sh: std::ptr::null(),
            sd: 0,
            sa: null_mut(),
            sp: 0,
            dx: 0,
            dy: 0,
            dt: 0,
            dh: null_mut(),
            dd: 0,
            da: null_mut(),
            dp: 0,
            w: 0,
            h: 0,
        }
    }
}

#[test]
fn copy_data_and_kernel_times() {
    let run = Run::new();
    run.child(
        "data_time",
        true,
        &[("MANTISSA_ATTACH_RECORD", "copies,htod_data,dtoh_data,time")],
    );
    let events = run.events();
    assert_eq!(
        kinds(&events),
        [
            "load",
            "alloc",
            "copy",
            "copy",
            "alloc",
            "copy",
            "copy",
            "kernel_time",
            "end"
        ],
        "no launch lines without `launches`"
    );
    // The 2D copies: each side's first byte, and the host side's rows as the data.
    let pitched = u64::from_str_radix(&events[4]["ptr"].as_str().unwrap()[2..], 16).unwrap();
    let (up, down) = (&events[5], &events[6]);
    assert_eq!((&up["dir"], &up["shape"]), (&json!("htod"), &json!("2d")));
    assert_eq!(up["dst"], format!("{:#x}", pitched + 16 + 4));
    assert_eq!(
        (&up["width"], &up["height"], &up["bytes"]),
        (&json!(6), &json!(3), &json!(18))
    );
    assert_eq!(
        (&up["src_pitch"], &up["dst_pitch"]),
        (&json!(10), &json!(16))
    );
    assert_eq!(down["dir"], "dtoh");
    assert_eq!(down["src"], format!("{:#x}", pitched + 16 + 4));
    let rows: Vec<u8> = [12u8, 22, 32].iter().flat_map(|&s| s..s + 6).collect();
    for e in [up, down] {
        let file = run.attach().join(e["data"].as_str().unwrap());
        assert_eq!(std::fs::read(file).unwrap(), rows, "{e}");
    }
    assert_eq!(events[2]["data"], "data/000000.bin");
    assert_eq!(events[3]["dir"], "dtoh");
    assert_eq!(events[3]["stream"], "0x9");
    assert_eq!(events[3]["data"], "data/000001.bin");
    for e in &events[2..4] {
        let file = run.attach().join(e["data"].as_str().unwrap());
        assert_eq!(std::fs::read(file).unwrap(), b"abcdefgh");
    }
    // The async copy back was synchronised before its data was read.
    assert!(run.fake_lines().contains(&"stream synchronize".to_string()));
    let t = &events[7];
    assert_eq!(t["kernel"], "axpy_8_4_4");
    assert_eq!(t["module"], key(ptx("a").as_bytes()));
    assert_eq!(t["launches"], 4);
    assert_eq!(t["ms"], 2.0);
}

unsafe fn fatbin() {
    let shim = Lib::shim();
    let path = std::env::var("FATBIN").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let load: LoadData = unsafe { shim.get("cuModuleLoadData") };
    let mut m = null_mut();
    assert_eq!(unsafe { load(&mut m, bytes.as_ptr().cast()) }, 0);
    // As the runtime registers it: a wrapper pointing at the fatbin.
    #[repr(C)]
    struct Wrapper {
        magic: u32,
        version: u32,
        data: *const u8,
        unused: P,
    }
    let wrapper = Wrapper {
        magic: 0x466243B1,
        version: 1,
        data: bytes.as_ptr(),
        unused: null_mut(),
    };
    let fat: LoadData = unsafe { shim.get("cuModuleLoadFatBinary") };
    assert_eq!(
        unsafe { fat(&mut m, (&wrapper as *const Wrapper).cast()) },
        0
    );
    let file: LoadFile = unsafe { shim.get("cuModuleLoad") };
    let c = CString::new(path).unwrap();
    assert_eq!(unsafe { file(&mut m, c.as_ptr()) }, 0);
}

/// Skips (or fails, with `MANTISSA_REQUIRE_NVCC=1`) without nvcc.
fn nvcc_or_skip() -> Option<std::path::PathBuf> {
    let found = mantissa_ptx::tools::cuda_tool("nvcc");
    if found.is_none() {
        let reason = "no nvcc (pip install nvidia-cuda-nvcc, or set MANTISSA_NVCC)";
        assert!(
            std::env::var("MANTISSA_REQUIRE_NVCC").as_deref() != Ok("1"),
            "MANTISSA_REQUIRE_NVCC=1 but {reason}"
        );
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "test fatbin: skipped: {reason}");
    }
    found
}

#[test]
fn a_fatbin_built_by_nvcc_is_keyed_by_its_bytes_however_it_is_loaded() {
    let Some(nvcc) = nvcc_or_skip() else { return };
    let run = Run::new();
    let dir = run.root.path();
    std::fs::write(dir.join("k.cu"), "__global__ void axpy(float *x, float a, int n) { int i = threadIdx.x; if (i < n) x[i] *= a; }\n").unwrap();
    let out = std::process::Command::new(&nvcc)
        .current_dir(dir)
        .args([
            "-fatbin",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
            "-o",
            "k.fatbin",
            "k.cu",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fatbin_path = dir.join("k.fatbin");
    let bytes = std::fs::read(&fatbin_path).unwrap();
    let k = key(&bytes);
    run.child("fatbin", true, &[("FATBIN", fatbin_path.to_str().unwrap())]);
    let events = run.events();
    assert_eq!(kinds(&events), ["load", "load", "load", "end"]);
    for (e, via) in events
        .iter()
        .zip(["cuModuleLoadData", "cuModuleLoadFatBinary", "cuModuleLoad"])
    {
        assert_eq!(e["module"], k, "{e}");
        assert_eq!(e["kind"], "fatbin");
        assert_eq!(e["via"], via);
    }
    assert_eq!(
        std::fs::read(run.attach().join(format!("modules/{k}.fatbin"))).unwrap(),
        bytes
    );
    let saved: Vec<_> = std::fs::read_dir(run.attach().join("modules"))
        .unwrap()
        .collect();
    assert_eq!(saved.len(), 1, "saved once");
    for n in 1..=3 {
        assert_eq!(
            run.fake_load(n),
            bytes,
            "load {n} reached the fake byte for byte"
        );
    }
}

unsafe fn no_driver() {
    let shim = Lib::shim();
    let count: Count = unsafe { shim.get("cuDeviceGetCount") };
    let mut n = 0;
    assert_eq!(
        unsafe { count(&mut n) },
        500,
        "every call: CUDA_ERROR_NOT_FOUND"
    );
    let (r, _) = unsafe { load_ptx(&shim, &ptx("a")) };
    assert_eq!(r, 500);
}

#[test]
fn without_a_real_driver_calls_fail_and_the_log_says_why() {
    let run = Run::new();
    let missing = run.root.path().join("no-such-libcuda.so.1");
    let env = [
        ("MANTISSA_REAL_LIBCUDA", missing.to_str().unwrap()),
        ("MANTISSA_ATTACH_RECORD", "launches,bogus"),
    ];
    let out = run.child("no_driver", true, &env);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("mantissa attach"),
        "the log says it, not stderr"
    );
    let events = run.events();
    assert_eq!(kinds(&events), ["error", "error", "load", "end"]);
    assert!(events[0]["message"].as_str().unwrap().contains("bogus"));
    let driver = events[1]["message"].as_str().unwrap();
    assert!(
        driver.contains("MANTISSA_REAL_LIBCUDA") && driver.contains("no-such-libcuda"),
        "{driver}"
    );
    assert_eq!(events[2]["error"], 500);
}

unsafe fn primary_reset() {
    let shim = Lib::shim();
    let init: Int1 = unsafe { shim.get("cuInit") };
    assert_eq!(unsafe { init(0) }, 0);
    let (r, _) = unsafe { load_ptx(&shim, &ptx("a")) };
    assert_eq!(r, 0);
    // The first version, as the runtime asks for it (cudaVersion 7000).
    let reset: Int1 = unsafe { shim.get("cuDevicePrimaryCtxReset") };
    assert_eq!(unsafe { reset(0) }, 0);
}

#[test]
fn a_primary_context_reset_reads_globals_back_first() {
    let run = Run::new();
    let key_a = key(ptx("a").as_bytes());
    std::fs::write(
        run.replace().join(format!("{key_a}.reads.json")),
        r#"["coef"]"#,
    )
    .unwrap();
    let replace = run.replace();
    run.child(
        "primary",
        true,
        &[("MANTISSA_REPLACE_DIR", replace.to_str().unwrap())],
    );
    let events = run.events();
    assert_eq!(kinds(&events), ["load", "read", "end", "end"]);
    assert_eq!(events[2]["how"], "teardown");
    let lines = run.fake_lines();
    let at = |l: &str| lines.iter().position(|x| x.starts_with(l)).unwrap();
    assert!(at("dtoh n=16") < at("reset v1"), "{lines:#?}");
}
