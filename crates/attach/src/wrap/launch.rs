//! Launches: `cuLaunchKernel`, `cuLaunchKernelEx`, `cuLaunchCooperativeKernel` and their
//! per-thread (`_ptsz`) variants. The real call comes first; the `launch` line is appended
//! after it (the function's name and parameter layout from the tables, asked of the driver once
//! per function). With `time`, CUDA events are recorded around the call.

use crate::driver;
use crate::ffi::{
    CuResult, Handle, LaunchConfig, ERROR_NOT_READY, LAUNCH_PARAM_BUFFER_POINTER,
    LAUNCH_PARAM_BUFFER_SIZE, LAUNCH_PARAM_END, SUCCESS,
};
use crate::real::{real, slot};
use crate::record::{Function, Layout, Recorder, State};
use crate::timing::{Pending, RESOLVE_AT};
use std::ffi::{c_uint, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A launch as the wrappers see it.
struct Launch {
    function: Handle,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    via: &'static str,
    per_thread: bool,
}

/// Completes the function's entry in the tables (name, module, parameters) from the driver, the
/// first time it is launched. The lock is not held while asking the driver.
fn function_info(rec: &Recorder, handle: usize) {
    let known = rec.state().functions.get(&handle).cloned();
    let mut f = known.unwrap_or_else(|| {
        // Not seen looked up (enumerated, or from a load the shim did not see): ask. A handle
        // may be a function (of a module) or a kernel (of a library).
        let from_module = driver::function_module(handle)
            .and_then(|m| rec.state().modules.get(&m).map(|m| m.key.clone()));
        let module = from_module.or_else(|| {
            driver::kernel_library(handle)
                .and_then(|l| rec.state().libraries.get(&l).map(|l| l.key.clone()))
        });
        let name = driver::name(handle, false).or_else(|| driver::name(handle, true));
        Function {
            module,
            name: name.map(Arc::from),
            kernel: false,
            params: Layout::Unasked,
        }
    });
    // A `CUkernel` launched as a `CUfunction` (the runtime does) answers one of the two.
    f.params = match driver::params(handle, f.kernel).or_else(|| driver::params(handle, !f.kernel))
    {
        Some(layout) => Layout::Known(layout.into()),
        None => Layout::Unknown,
    };
    let attributes = driver::function_attributes(handle);
    let mut state = rec.state();
    if let (true, Some(values)) = (rec.what.launches, attributes) {
        // Once per function: what it uses (registers, local memory), for the analyses' reports.
        state.log.emit("function", |l| {
            l.opt_str("module", f.module.as_deref())
                .opt_str("kernel", f.name.as_deref());
            for ((_, name), v) in driver::FUNCTION_ATTRIBUTES.iter().zip(values) {
                l.num(name, v.max(0) as u64);
            }
        });
    }
    state.functions.insert(handle, f);
}

/// The kernel's parameter block of `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER` and `_SIZE`).
///
/// # Safety
/// `extra` is null or a `CU_LAUNCH_PARAM_END`-terminated key/value array, as the driver reads.
unsafe fn extra_buffer<'a>(extra: *mut *mut c_void) -> Option<&'a [u8]> {
    if extra.is_null() {
        return None;
    }
    let (mut pointer, mut size) = (None, None);
    let mut i = 0;
    loop {
        // SAFETY: per the contract, keys up to the terminator are readable, each with a value.
        let key = unsafe { *extra.add(i) } as usize;
        if key == LAUNCH_PARAM_END {
            break;
        }
        let value = unsafe { *extra.add(i + 1) };
        match key {
            LAUNCH_PARAM_BUFFER_POINTER => pointer = Some(value as *const u8),
            // The size's value points at a size_t.
            LAUNCH_PARAM_BUFFER_SIZE if !value.is_null() => {
                size = Some(unsafe { *(value as *const usize) })
            }
            _ => {}
        }
        i += 2;
    }
    let pointer = pointer.filter(|p| !p.is_null())?;
    Some(unsafe { std::slice::from_raw_parts(pointer, size?) })
}

/// Each parameter's bytes.
///
/// # Safety
/// `launch.params` or `launch.extra` are as the driver just read them.
unsafe fn args<'a>(launch: &Launch, layout: &'a [(usize, usize)]) -> Option<Vec<&'a [u8]>> {
    if !launch.params.is_null() {
        let bytes = layout
            .iter()
            .enumerate()
            .map(|(i, &(_, size))| {
                // SAFETY: the i-th pointer points at the i-th parameter's `size` bytes.
                let p = unsafe { *launch.params.add(i) } as *const u8;
                if p.is_null() {
                    &[][..]
                } else {
                    unsafe { std::slice::from_raw_parts(p, size) }
                }
            })
            .collect();
        return Some(bytes);
    }
    let buffer = unsafe { extra_buffer(launch.extra) }?;
    let bytes = layout
        .iter()
        .map(|&(offset, size)| {
            // Bounds the driver would refuse are no reason to panic here.
            let end = offset.saturating_add(size);
            buffer.get(offset..end).unwrap_or_default()
        })
        .collect();
    Some(bytes)
}

/// Events recorded before a timed launch.
struct Timed {
    ctx: usize,
    events: (usize, usize),
}

/// Records a start event on the launch's stream (events from the context's pool).
fn time_start(rec: &Recorder, launch: &Launch) -> Option<Timed> {
    let ctx = driver::current_ctx();
    let pooled = rec.state().timing.take_pair(ctx);
    let events = match pooled {
        Some(pair) => pair,
        None => (driver::event_create()?, driver::event_create()?),
    };
    driver::event_record(events.0, launch.stream, launch.per_thread);
    Some(Timed { ctx, events })
}

/// Resolves the timed launches of `ctx` (all with `None`) that have finished, waiting for each
/// with `wait`; returns their events to the pool.
pub(crate) fn resolve_times(rec: &Recorder, ctx: Option<usize>, wait: bool) {
    let pending = rec.state().timing.take_pending(ctx);
    if pending.is_empty() {
        return;
    }
    let mut done = Vec::new();
    let mut kept = Vec::new();
    let mut lost = 0;
    for p in pending {
        if wait {
            driver::event_synchronize(p.events.1);
        }
        match driver::elapsed_ms(p.events.0, p.events.1) {
            Ok(ms) => done.push((p, ms)),
            Err(ERROR_NOT_READY) => kept.push(p),
            Err(_) => {
                lost += 1;
                done.push((p, f32::NAN));
            }
        }
    }
    let mut state = rec.state();
    let timing = &mut state.timing;
    timing.lost += lost;
    for (p, ms) in done {
        if !ms.is_nan() {
            timing.add(p.kernel, f64::from(ms));
        }
        timing.pool.push((p.ctx, p.events.0));
        timing.pool.push((p.ctx, p.events.1));
    }
    timing.pending.extend(kept);
}

/// Applies writes still pending for the launched function's library (one with no context at
/// load): before the launch, so that the kernel sees them.
fn apply_pending(rec: &Recorder, function: usize) {
    let key = rec
        .state()
        .functions
        .get(&function)
        .and_then(|f| f.module.clone());
    let Some(key) = key else { return };
    let pending: Vec<_> = {
        let mut state = rec.state();
        let libraries = state.libraries.iter_mut().filter(|(_, m)| m.key == key);
        libraries
            .filter_map(|(&h, m)| m.pending_writes.take().map(|w| (h, w)))
            .collect()
    };
    for (handle, writes) in pending {
        if let Err(e) = super::loads::apply_writes(handle, true, &writes) {
            rec.emit("load", |l| {
                l.str("module", &key).str("write_error", &e);
            });
        }
    }
    let state = rec.state();
    let any = state.libraries.values().any(|m| m.pending_writes.is_some());
    rec.pending_writes.store(any, Ordering::Relaxed);
}

/// The whole of a launch wrapper: `call` makes the real launch.
unsafe fn launch(launch: Launch, call: impl FnOnce() -> CuResult) -> CuResult {
    let Some(rec) = crate::recorder() else {
        return call();
    };
    if rec.pending_writes.load(Ordering::Relaxed) {
        apply_pending(rec, launch.function as usize);
    }
    let timed = if rec.what.time {
        time_start(rec, &launch)
    } else {
        None
    };
    let r = call();
    if let Some(t) = &timed {
        driver::event_record(t.events.1, launch.stream, launch.per_thread);
    }
    if !rec.what.launches && timed.is_none() {
        return r;
    }
    let handle = launch.function as usize;
    let mut state = rec.state();
    let asked = |s: &State| {
        s.functions
            .get(&handle)
            .is_some_and(|f| !matches!(f.params, Layout::Unasked))
    };
    if !asked(&state) {
        // The first launch of this function: ask the driver, without the lock.
        drop(state);
        function_info(rec, handle);
        state = rec.state();
    }
    let State {
        log,
        functions,
        timing,
        ..
    } = &mut *state;
    let unknown = Function {
        module: None,
        name: None,
        kernel: false,
        params: Layout::Unknown,
    };
    let f = functions.get(&handle).unwrap_or(&unknown);
    if rec.what.launches {
        let args = match &f.params {
            Layout::Known(layout) => unsafe { args(&launch, layout) },
            _ => None,
        };
        log.emit("launch", |l| {
            l.opt_str("module", f.module.as_deref())
                .opt_str("kernel", f.name.as_deref())
                .dim3("grid", launch.grid)
                .dim3("block", launch.block)
                .num("shared", u64::from(launch.shared))
                .ptr("stream", launch.stream as u64)
                .hex_list("args", args.as_ref().map(|a| a.iter().copied()))
                .str("via", launch.via)
                .bool("per_thread", launch.per_thread);
            if r != SUCCESS {
                l.num("error", r as u64);
            }
        });
    }
    if let Some(t) = timed {
        timing.pending.push(Pending {
            ctx: t.ctx,
            events: t.events,
            kernel: (f.module.clone(), f.name.clone()),
        });
        let many = timing.pending.len() >= RESOLVE_AT;
        drop(state);
        if many {
            resolve_times(rec, Some(t.ctx), false);
        }
    }
    r
}

type LaunchKernel = unsafe extern "C" fn(
    Handle,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Handle,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;
type LaunchKernelEx = unsafe extern "C" fn(
    *const LaunchConfig,
    Handle,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;
type LaunchCooperative = unsafe extern "C" fn(
    Handle,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Handle,
    *mut *mut c_void,
) -> CuResult;

/// Defines a wrapper of the `cuLaunchKernel` shape (`extra` named) or the
/// `cuLaunchCooperativeKernel` shape (without it).
macro_rules! launch_grid {
    ($name:ident, $via:literal, $per_thread:expr, $ty:ty $(, $extra:ident)?) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            f: Handle,
            gx: c_uint,
            gy: c_uint,
            gz: c_uint,
            bx: c_uint,
            by: c_uint,
            bz: c_uint,
            shared: c_uint,
            stream: Handle,
            params: *mut *mut c_void,
            $($extra: *mut *mut c_void,)?
        ) -> CuResult {
            let real_fn = unsafe { real::<$ty>(slot::$name) };
            #[allow(unused_mut, unused_assignments)]
            let mut extra = std::ptr::null_mut();
            $(extra = $extra;)?
            let l = Launch {
                function: f,
                grid: [gx, gy, gz],
                block: [bx, by, bz],
                shared,
                stream,
                params,
                extra,
                via: $via,
                per_thread: $per_thread,
            };
            unsafe {
                launch(l, || {
                    real_fn(f, gx, gy, gz, bx, by, bz, shared, stream, params $(, $extra)?)
                })
            }
        }
    };
}

launch_grid!(
    cuLaunchKernel,
    "cuLaunchKernel",
    false,
    LaunchKernel,
    extra_args
);
launch_grid!(
    cuLaunchKernel_ptsz,
    "cuLaunchKernel",
    true,
    LaunchKernel,
    extra_args
);
launch_grid!(
    cuLaunchCooperativeKernel,
    "cuLaunchCooperativeKernel",
    false,
    LaunchCooperative
);
launch_grid!(
    cuLaunchCooperativeKernel_ptsz,
    "cuLaunchCooperativeKernel",
    true,
    LaunchCooperative
);

/// Defines a `cuLaunchKernelEx`-shaped wrapper.
macro_rules! launch_kernel_ex {
    ($name:ident, $per_thread:expr) => {
        /// The driver function of this name, recorded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            config: *const LaunchConfig,
            f: Handle,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> CuResult {
            let real_fn = unsafe { real::<LaunchKernelEx>(slot::$name) };
            if config.is_null() {
                return unsafe { real_fn(config, f, params, extra) };
            }
            // SAFETY: the driver reads the same configuration.
            let c = unsafe { &*config };
            let l = Launch {
                function: f,
                grid: c.grid,
                block: c.block,
                shared: c.shared,
                stream: c.stream,
                params,
                extra,
                via: "cuLaunchKernelEx",
                per_thread: $per_thread,
            };
            unsafe { launch(l, || real_fn(config, f, params, extra)) }
        }
    };
}

launch_kernel_ex!(cuLaunchKernelEx, false);
launch_kernel_ex!(cuLaunchKernelEx_ptsz, true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_buffers_are_sliced_by_the_layout() {
        let block = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let mut size = block.len();
        let mut extra = [
            LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
            block.as_ptr() as *mut c_void,
            LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
            (&mut size as *mut usize).cast(),
            LAUNCH_PARAM_END as *mut c_void,
        ];
        let l = Launch {
            function: std::ptr::null_mut(),
            grid: [1; 3],
            block: [1; 3],
            shared: 0,
            stream: std::ptr::null_mut(),
            params: std::ptr::null_mut(),
            extra: extra.as_mut_ptr(),
            via: "cuLaunchKernel",
            per_thread: false,
        };
        let layout = [(0, 4), (8, 4), (10, 8)];
        let a = unsafe { args(&l, &layout) }.unwrap();
        assert_eq!(a, vec![&[1u8, 2, 3, 4][..], &[9, 10, 11, 12][..], &[][..]]);
    }
}
