//! Context teardown (`cuCtxDestroy`, `cuDevicePrimaryCtxRelease`/`Reset`), synchronisations,
//! and process exit: where globals are read back, kernel times resolved and the log written.

use crate::driver;
use crate::ffi::{CuResult, Handle, SUCCESS};
use crate::real::{real, slot};
use crate::record::{Module, Recorder};
use crate::wrap::launch::resolve_times;
use crate::wrap::loads::read_back;

/// Writes one `kernel_time` line per kernel (totals so far).
fn emit_times(rec: &Recorder) {
    if !rec.what.time {
        return;
    }
    let mut state = rec.state();
    let totals: Vec<_> = state
        .timing
        .totals
        .iter()
        .map(|(k, &v)| (k.clone(), v))
        .collect();
    for ((module, kernel), (ms, launches)) in totals {
        state.emit("kernel_time", |l| {
            l.opt_str("module", module.as_deref())
                .opt_str("kernel", kernel.as_deref())
                .float("ms", ms)
                .num("launches", launches);
        });
    }
}

/// The modules of `ctx` and every library (whose globals live in each context), with handles.
fn alive_in(rec: &Recorder, ctx: usize) -> Vec<(usize, Module)> {
    let state = rec.state();
    let modules = state.modules.iter().filter(|(_, m)| m.ctx == ctx);
    modules
        .chain(state.libraries.iter())
        .map(|(&h, m)| (h, m.clone()))
        .collect()
}

/// Before `ctx` goes: read back its modules' and the libraries' globals, resolve its timed
/// launches (waiting), write the times.
fn before_teardown(rec: &Recorder, ctx: usize) {
    for (handle, module) in alive_in(rec, ctx) {
        read_back(rec, handle, &module, ctx);
    }
    if rec.what.time {
        driver::in_ctx(ctx, || resolve_times(rec, Some(ctx), true));
        emit_times(rec);
    }
}

/// After `ctx` went: forget its modules and idle events, write `end` `teardown` and the log.
fn after_teardown(rec: &Recorder, ctx: usize) {
    let mut state = rec.state();
    state.modules.retain(|_, m| m.ctx != ctx);
    state.timing.drop_ctx(ctx);
    state.emit("end", |l| {
        l.str("how", "teardown");
    });
    state.flush();
}

/// Defines a `cuCtxDestroy` wrapper (both versions: the same signature).
macro_rules! ctx_destroy {
    ($name:ident) => {
        /// The driver function of this name: globals read back first.
        #[no_mangle]
        pub unsafe extern "C" fn $name(ctx: Handle) -> CuResult {
            let f = unsafe { real::<unsafe extern "C" fn(Handle) -> CuResult>(slot::$name) };
            let Some(rec) = crate::recorder() else {
                return unsafe { f(ctx) };
            };
            before_teardown(rec, ctx as usize);
            let r = unsafe { f(ctx) };
            if r == SUCCESS {
                after_teardown(rec, ctx as usize);
            }
            r
        }
    };
}

ctx_destroy!(cuCtxDestroy);
ctx_destroy!(cuCtxDestroy_v2);

/// A primary context's release or reset: `destroys` says whether it always goes (reset) or only
/// when this was its last reference (release; then the state after the call tells).
fn primary(device: i32, destroys: bool, forward: impl FnOnce() -> CuResult) -> CuResult {
    let Some(rec) = crate::recorder() else {
        return forward();
    };
    let Some(ctx) = driver::active_primary_ctx(device) else {
        return forward();
    };
    before_teardown(rec, ctx);
    let r = forward();
    if r == SUCCESS && (destroys || !driver::primary_active(device)) {
        after_teardown(rec, ctx);
    }
    r
}

/// Defines a primary context release (`destroys` false) or reset (true) wrapper.
macro_rules! primary_ctx {
    ($name:ident, $destroys:expr) => {
        /// The driver function of this name: globals read back first.
        #[no_mangle]
        pub unsafe extern "C" fn $name(device: i32) -> CuResult {
            let f = unsafe { real::<unsafe extern "C" fn(i32) -> CuResult>(slot::$name) };
            primary(device, $destroys, || unsafe { f(device) })
        }
    };
}

primary_ctx!(cuDevicePrimaryCtxRelease, false);
primary_ctx!(cuDevicePrimaryCtxRelease_v2, false);
primary_ctx!(cuDevicePrimaryCtxReset, true);
primary_ctx!(cuDevicePrimaryCtxReset_v2, true);

/// After a synchronisation of a context (`ctx` asked only when timing): resolve its finished
/// timed launches.
fn synchronised(r: CuResult, ctx: impl FnOnce() -> usize) -> CuResult {
    if let Some(rec) = crate::recorder().filter(|r| r.what.time) {
        resolve_times(rec, Some(ctx()), false);
    }
    r
}

/// `cuCtxSynchronize`.
#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize() -> CuResult {
    let r = unsafe { real::<unsafe extern "C" fn() -> CuResult>(slot::cuCtxSynchronize)() };
    synchronised(r, driver::current_ctx)
}

/// `cuCtxSynchronize_v2` (CUDA 13: the context named).
#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize_v2(ctx: Handle) -> CuResult {
    let f = unsafe { real::<unsafe extern "C" fn(Handle) -> CuResult>(slot::cuCtxSynchronize_v2) };
    let r = unsafe { f(ctx) };
    synchronised(r, || match ctx as usize {
        0 => driver::current_ctx(),
        ctx => ctx,
    })
}

/// Defines a `cuStreamSynchronize` wrapper.
macro_rules! stream_synchronize {
    ($name:ident) => {
        /// The driver function of this name: timed launches resolved after it.
        #[no_mangle]
        pub unsafe extern "C" fn $name(stream: Handle) -> CuResult {
            let f = unsafe { real::<unsafe extern "C" fn(Handle) -> CuResult>(slot::$name) };
            synchronised(unsafe { f(stream) }, driver::current_ctx)
        }
    };
}

stream_synchronize!(cuStreamSynchronize);
stream_synchronize!(cuStreamSynchronize_ptsz);

/// At process exit (`atexit`): read back what is still loaded (each in its context), resolve
/// every timed launch, write the times, `end` `exit`, and the log. Nothing is written after.
pub fn at_exit(rec: &Recorder) {
    if rec.state().log.ended {
        return;
    }
    let alive: Vec<(usize, Module)> = {
        let state = rec.state();
        state
            .modules
            .iter()
            .chain(state.libraries.iter())
            .map(|(&h, m)| (h, m.clone()))
            .collect()
    };
    for (handle, module) in alive {
        read_back(rec, handle, &module, module.ctx);
    }
    if rec.what.time {
        resolve_times(rec, None, true);
        emit_times(rec);
    }
    let mut state = rec.state();
    state.emit("end", |l| {
        l.str("how", "exit");
    });
    state.log.ended = true;
    state.flush();
}
