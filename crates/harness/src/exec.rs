//! Running a planned spec's steps on a GPU: launches with arguments evaluated per iteration,
//! copies (whole buffers or element ranges, on the device) and fills, nested loops with their
//! counters.
//!
//! [`Steps`] runs a step list against a set of device buffers; the trial runner
//! ([`crate::trial`]) owns the buffers, restores them between runs and times the sequence. A
//! checked run waits after every launch, so a fault is blamed on the step that caused it, with its
//! loop counters (`steps[1].steps[2] (launch stencil), iteration t=17: ...`).
//!
//! [`execute`] is the one-shot path: fresh buffers, the module loaded as given, one checked run,
//! the outputs downloaded. It is what the trial runner is tested against (the same results, bit
//! for bit), not what `mantissa run` uses.

use crate::data::{from_f64, Inputs};
use crate::expr::Val;
use crate::spec::{lookup, Arg, ArgSpec, CopyRange, CopySide, Quantity, Spec, Step, StepKind};
use crate::validate::{Plan, PlannedArg, ScalarKind};
use mantissa_gpu::{
    DeviceBuffer, Gpu, GpuError, HostData, KernelArg, LaunchDims, Mark, Module, Scalar,
};
use std::collections::HashMap;

/// How often to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecOptions {
    /// Untimed runs after the checked one.
    pub warmup: u32,
    /// Timed runs (0: no timing).
    pub repeats: u32,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            warmup: 1,
            repeats: 5,
        }
    }
}

/// What a one-shot run produced.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Each output buffer's contents after the run, by buffer name.
    pub outputs: Vec<(String, HostData)>,
    /// The first launch's shape.
    pub first_launch: Option<LaunchDims>,
}

/// A run that failed: where, and why.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// A step failed: its path and description, the loop iterations, the cause.
    #[error("{step}{iterations}: {cause}")]
    Step {
        /// `steps[1].steps[2] (launch stencil)`.
        step: String,
        /// `, iteration t=17` (empty outside loops).
        iterations: String,
        /// What went wrong.
        cause: String,
        /// The failure left the CUDA context unusable (an illegal address, a hang).
        context_lost: bool,
    },
    /// A launch the kernel's resources cannot take: its registers or shared memory allow fewer
    /// threads per block than the launch asks (the driver's "too many resources requested for
    /// launch"). Not a fault: the context survives, and the same program with less code in the
    /// kernel (an instrumentation split over several runs) or a smaller block may run.
    #[error("{step}{iterations}: {cause}")]
    OutOfResources {
        /// `steps[1].steps[2] (launch stencil)`.
        step: String,
        /// `, iteration t=17` (empty outside loops).
        iterations: String,
        /// What the driver or the launch check said.
        cause: String,
        /// The kernel's registers per thread, as the driver reports them.
        registers: Option<u32>,
    },
    /// Setting up (uploads, module load, symbols) or downloading failed.
    #[error("{what}: {source}")]
    Gpu {
        /// What was being done.
        what: String,
        /// The GPU's error (boxed: it is large, and errors are the rare path).
        source: Box<GpuError>,
    },
}

/// Whether `e` leaves the context unusable: a sticky fault, or a kernel that does not end.
pub fn context_lost(e: &GpuError) -> bool {
    matches!(e, GpuError::Timeout { .. }) || e.driver_status().is_some_and(|s| s.is_sticky())
}

impl ExecError {
    /// Whether the failure left the CUDA context unusable.
    pub fn context_lost(&self) -> bool {
        match self {
            ExecError::Step { context_lost, .. } => *context_lost,
            ExecError::OutOfResources { .. } => false,
            ExecError::Gpu { source, .. } => context_lost(source),
        }
    }
}

/// Whether a failed launch of `kernel` with `dims` failed for want of registers or shared
/// memory: the driver said so, or the launch check refused a block larger than the kernel's
/// registers allow.
fn out_of_resources(e: &GpuError, module: &Module, kernel: &str, dims: &LaunchDims) -> bool {
    match e {
        GpuError::Launch { status, .. } => status.is_out_of_resources(),
        GpuError::BadLaunch { .. } => module
            .resources(kernel)
            .is_ok_and(|r| dims.threads_per_block() > u64::from(r.max_threads_per_block)),
        _ => false,
    }
}

/// `map_err` for a GPU call made while doing `what`.
pub fn gpu_err(what: impl Into<String>) -> impl FnOnce(GpuError) -> ExecError {
    let what = what.into();
    move |source| ExecError::Gpu {
        what,
        source: Box::new(source),
    }
}

/// Loop state: each enclosing repeat's counter name (or its path) and iteration.
#[derive(Default)]
pub(crate) struct Counters {
    stack: Vec<(String, bool, i64)>,
}

impl Counters {
    pub(crate) fn values(&self) -> Vec<(String, Val)> {
        self.stack
            .iter()
            .filter(|c| c.1)
            .map(|c| (c.0.clone(), Val::Int(c.2)))
            .collect()
    }

    pub(crate) fn describe(&self) -> String {
        if self.stack.is_empty() {
            return String::new();
        }
        let parts: Vec<String> = self
            .stack
            .iter()
            .map(|(n, named, i)| {
                if *named {
                    format!("{n}={i}")
                } else {
                    format!("{n} #{i}")
                }
            })
            .collect();
        format!(", iteration {}", parts.join(", "))
    }
}

/// `q`'s value under the loop counters `c` and the spec's sizes.
pub(crate) fn eval(spec: &Spec, q: &Quantity, c: &Counters) -> Result<Val, String> {
    let counters = c.values();
    q.expr
        .eval(&|n| lookup(&counters, n).or_else(|| lookup(&spec.sizes, n)))
        .map_err(|e| {
            format!(
                "{} = \"{}\": found {}; accepted {}",
                q.field, q.text, e.found, e.accepted
            )
        })
}

/// `q` as a launch dimension or count: an integer from `min` to `u32::MAX`.
pub(crate) fn dim(spec: &Spec, q: &Quantity, c: &Counters, min: i64) -> Result<u32, String> {
    let v = eval(spec, q, c)?;
    match v.as_integer() {
        Some(i) if i >= min && i <= u32::MAX as i64 => Ok(i as u32),
        _ => {
            // `/` divides exactly in spec expressions, unlike C's integer division.
            let hint = if v.as_integer().is_none() && q.text.contains('/') {
                " (`/` divides exactly: write ceil(...) or floor(...))"
            } else {
                ""
            };
            Err(format!(
                "{} = \"{}\" is {v}; accepted an integer from {min} to {}{hint}",
                q.field,
                q.text,
                u32::MAX
            ))
        }
    }
}

/// Up to three dimensions (1 where absent).
pub(crate) fn dims3(spec: &Spec, qs: &[Quantity], c: &Counters) -> Result<(u32, u32, u32), String> {
    let mut d = [1u32; 3];
    for (i, q) in qs.iter().enumerate().take(3) {
        d[i] = dim(spec, q, c, 1)?;
    }
    Ok((d[0], d[1], d[2]))
}

/// Runs `body` `n` times with the repeat's counter (named `counter`, or the step's `path`) on
/// top of `c`, set to each iteration in turn.
pub(crate) fn repeat<E>(
    c: &mut Counters,
    counter: &Option<String>,
    path: &str,
    n: u32,
    mut body: impl FnMut(&mut Counters) -> Result<(), E>,
) -> Result<(), E> {
    c.stack.push((
        counter.clone().unwrap_or_else(|| path.to_string()),
        counter.is_some(),
        0,
    ));
    for i in 0..n {
        if let Some(top) = c.stack.last_mut() {
            top.2 = i64::from(i);
        }
        body(c)?;
    }
    c.stack.pop();
    Ok(())
}

/// What a launch argument passes, evaluated under the loop counters.
pub(crate) enum ArgValue<'s> {
    /// A scalar of the parameter's type.
    Scalar(Scalar),
    /// A buffer's pointer, `offset` elements in.
    Buffer {
        /// The buffer.
        name: &'s str,
        /// Elements from its start (0 for the buffer itself).
        offset: u64,
    },
    /// The parameter's bytes as written.
    Bytes(&'s [u8]),
}

/// The launch argument `a` as `p` planned it, under the loop counters `c`.
pub(crate) fn launch_arg<'s>(
    spec: &Spec,
    a: &'s Arg,
    p: &'s PlannedArg,
    c: &Counters,
) -> Result<ArgValue<'s>, String> {
    match (&a.spec, p) {
        (ArgSpec::BufferAt(_, q), PlannedArg::Buffer(name)) => {
            let len = spec.buffer(name).map_or(0, |b| b.len);
            let offset = crate::validate::buffer_offset(eval(spec, q, c)?, len).map_err(|e| {
                format!(
                    "{}: offset {} = {e}: beyond '{name}' ({len} elements)",
                    a.field, q.text
                )
            })?;
            Ok(ArgValue::Buffer { name, offset })
        }
        (_, PlannedArg::Buffer(name)) => Ok(ArgValue::Buffer { name, offset: 0 }),
        (ArgSpec::Bytes(b), PlannedArg::Bytes) => Ok(ArgValue::Bytes(b)),
        (ArgSpec::Value(q), PlannedArg::Scalar(kind)) => {
            let v = eval(spec, q, c)?;
            Ok(ArgValue::Scalar(
                kind.convert(v).map_err(|e| format!("{}: {e}", a.field))?,
            ))
        }
        (ArgSpec::Typed(_, q), PlannedArg::Typed(d)) => {
            let v = eval(spec, q, c)?;
            Ok(ArgValue::Scalar(
                ScalarKind::convert_typed(*d, v).map_err(|e| format!("{}: {e}", a.field))?,
            ))
        }
        _ => Err("argument plan mismatch (an internal error)".into()),
    }
}

/// Each fill step's source buffer (the fill value in every element), by step path: a fill is a
/// device-to-device copy of it.
pub fn make_fills(gpu: &Gpu, spec: &Spec) -> Result<HashMap<String, DeviceBuffer>, ExecError> {
    let mut fills = HashMap::new();
    for (step, _) in spec.walk() {
        if let StepKind::Fill { buffer, value } = &step.kind {
            let fail = |cause: String| ExecError::Step {
                step: step.describe(),
                iterations: String::new(),
                cause,
                context_lost: false,
            };
            let b = spec
                .buffer(buffer)
                .ok_or_else(|| fail("unknown buffer".into()))?;
            let data = from_f64(b.dtype, &vec![value.as_f64(); b.len]).map_err(fail)?;
            let fb = gpu
                .upload(&format!("{buffer}#fill"), &data)
                .map_err(gpu_err(format!("making the fill of '{buffer}'")))?;
            fills.insert(step.path.clone(), fb);
        }
    }
    Ok(fills)
}

/// Runs step lists of one spec on one GPU.
pub struct Steps<'a> {
    gpu: &'a Gpu,
    spec: &'a Spec,
    plan: &'a Plan,
    fills: &'a HashMap<String, DeviceBuffer>,
    /// The first launch's shape, once one ran.
    pub first_launch: Option<LaunchDims>,
    /// When set, every launch is bracketed by two marks, recorded here with its entry's name
    /// (for the time per kernel: `trial/profile.rs`).
    pub launch_marks: Option<Vec<(String, Mark, Mark)>>,
}

impl<'a> Steps<'a> {
    /// A runner of `spec`'s steps as `plan` resolved them; `fills` from [`make_fills`].
    pub fn new(
        gpu: &'a Gpu,
        spec: &'a Spec,
        plan: &'a Plan,
        fills: &'a HashMap<String, DeviceBuffer>,
    ) -> Self {
        Steps {
            gpu,
            spec,
            plan,
            fills,
            first_launch: None,
            launch_marks: None,
        }
    }

    /// Queues `steps` on `module` with `bufs`; `checked` waits after every launch so that a
    /// fault names its step and iteration.
    pub fn run(
        &mut self,
        steps: &[Step],
        bufs: &mut HashMap<String, DeviceBuffer>,
        module: &Module,
        checked: bool,
    ) -> Result<(), ExecError> {
        self.steps(steps, bufs, module, &mut Counters::default(), checked)
    }

    fn eval(&self, q: &Quantity, c: &Counters) -> Result<Val, String> {
        eval(self.spec, q, c)
    }

    fn dim(&self, q: &Quantity, c: &Counters, min: i64) -> Result<u32, String> {
        dim(self.spec, q, c, min)
    }

    fn dims3(&self, qs: &[Quantity], c: &Counters) -> Result<(u32, u32, u32), String> {
        dims3(self.spec, qs, c)
    }

    fn steps(
        &mut self,
        steps: &[Step],
        bufs: &mut HashMap<String, DeviceBuffer>,
        module: &Module,
        c: &mut Counters,
        checked: bool,
    ) -> Result<(), ExecError> {
        for s in steps {
            let fail = |c: &Counters, cause: String| ExecError::Step {
                step: s.describe(),
                iterations: c.describe(),
                cause,
                context_lost: false,
            };
            let gpu_fail = |c: &Counters, e: GpuError| ExecError::Step {
                step: s.describe(),
                iterations: c.describe(),
                cause: e.to_string(),
                context_lost: context_lost(&e),
            };
            match &s.kind {
                StepKind::Launch(l) => {
                    let Some(r) = self.plan.launches.get(&s.path) else {
                        return Err(fail(
                            c,
                            "the launch was not planned (an internal error)".into(),
                        ));
                    };
                    let grid = self.dims3(&l.grid, c).map_err(|e| fail(c, e))?;
                    let block = self.dims3(&l.block, c).map_err(|e| fail(c, e))?;
                    let shared = self.dim(&l.shared, c, 0).map_err(|e| fail(c, e))?;
                    let dims = LaunchDims::new(grid, block).with_shared_bytes(shared);
                    self.first_launch.get_or_insert(dims);
                    let mut args = Vec::with_capacity(l.args.len());
                    for (a, p) in l.args.iter().zip(&r.args) {
                        let arg = match launch_arg(self.spec, a, p, c).map_err(|e| fail(c, e))? {
                            ArgValue::Scalar(scalar) => KernelArg::Scalar(scalar),
                            ArgValue::Bytes(b) => KernelArg::Raw(b),
                            ArgValue::Buffer { name, offset } => match bufs.get(name) {
                                Some(buf) if offset == 0 => KernelArg::Buffer(buf),
                                Some(buf) => {
                                    KernelArg::BufferAt(buf, offset * buf.dtype().size() as u64)
                                }
                                None => {
                                    return Err(fail(
                                        c,
                                        format!("buffer '{name}' is missing (an internal error)"),
                                    ))
                                }
                            },
                        };
                        args.push(arg);
                    }
                    let before = match self.launch_marks {
                        Some(_) => Some(self.gpu.mark().map_err(|e| gpu_fail(c, e))?),
                        None => None,
                    };
                    let launched = self.gpu.launch(module, &r.entry, dims, &args);
                    if let (Some(before), Some(marks)) = (before, self.launch_marks.as_mut()) {
                        let after = self.gpu.mark().map_err(|e| gpu_fail(c, e))?;
                        marks.push((r.entry.clone(), before, after));
                    }
                    let launched = if checked {
                        launched.and_then(|()| self.gpu.synchronize())
                    } else {
                        launched
                    };
                    launched.map_err(|e| {
                        if out_of_resources(&e, module, &r.entry, &dims) {
                            ExecError::OutOfResources {
                                step: s.describe(),
                                iterations: c.describe(),
                                cause: e.to_string(),
                                registers: module.resources(&r.entry).ok().map(|r| r.registers),
                            }
                        } else {
                            gpu_fail(c, e)
                        }
                    })?;
                }
                StepKind::Copy {
                    from,
                    to,
                    len,
                    src_offset,
                    dst_offset,
                } => {
                    let value = |q: &Option<Quantity>| -> Result<Option<Val>, ExecError> {
                        q.as_ref()
                            .map(|q| self.eval(q, c).map_err(|e| fail(c, e)))
                            .transpose()
                    };
                    let side = |name: &str| -> Result<usize, ExecError> {
                        self.spec.buffer(name).map(|b| b.len).ok_or_else(|| {
                            fail(c, format!("buffer '{name}' is missing (an internal error)"))
                        })
                    };
                    // The spec's one rule for offsets and lengths (checked again here because
                    // expressions may depend on loop counters).
                    let range = CopyRange::resolve(
                        CopySide {
                            name: from,
                            len: side(from)?,
                        },
                        CopySide {
                            name: to,
                            len: side(to)?,
                        },
                        value(src_offset)?,
                        value(dst_offset)?,
                        value(len)?,
                    )
                    .map_err(|e| fail(c, e.to_string()))?;
                    copy(self.gpu, bufs, from, to, range).map_err(|e| match e {
                        CopyError::Gpu(e) => gpu_fail(c, e),
                        CopyError::Missing(m) => fail(c, m),
                    })?;
                }
                StepKind::Fill { buffer, .. } => {
                    let (Some(src), Some(dst)) = (self.fills.get(&s.path), bufs.get_mut(buffer))
                    else {
                        return Err(fail(c, "fill buffer missing (an internal error)".into()));
                    };
                    self.gpu.copy(src, dst).map_err(|e| gpu_fail(c, e))?;
                }
                StepKind::Repeat {
                    count,
                    counter,
                    steps,
                } => {
                    let n = self.dim(count, c, 0).map_err(|e| fail(c, e))?;
                    repeat(c, counter, &s.path, n, |c| {
                        self.steps(steps, bufs, module, c, checked)
                    })?;
                }
            }
        }
        Ok(())
    }
}

enum CopyError {
    Missing(String),
    Gpu(GpuError),
}

/// Device-to-device copy of `range` (resolved by [`CopyRange::resolve`]).
fn copy(
    gpu: &Gpu,
    bufs: &mut HashMap<String, DeviceBuffer>,
    from: &str,
    to: &str,
    range: CopyRange,
) -> Result<(), CopyError> {
    let (src, dst, n) = (range.src_offset, range.dst_offset, range.len);
    if n == 0 || (from == to && src == dst) {
        return Ok(());
    }
    if from == to {
        let Some(buf) = bufs.get_mut(to) else {
            return Err(CopyError::Missing(format!("buffer '{to}' is missing")));
        };
        return gpu.copy_within(buf, src, dst, n).map_err(CopyError::Gpu);
    }
    // Take the destination out of the map to borrow the source beside it.
    let Some(mut target) = bufs.remove(to) else {
        return Err(CopyError::Missing(format!("buffer '{to}' is missing")));
    };
    let result = match bufs.get(from) {
        Some(source) => gpu
            .copy_range(source, src, &mut target, dst, n)
            .map_err(CopyError::Gpu),
        None => Err(CopyError::Missing(format!("buffer '{from}' is missing"))),
    };
    bufs.insert(to.to_string(), target);
    result
}

/// Uploads every buffer's initial contents.
pub fn upload_all(gpu: &Gpu, inputs: &Inputs) -> Result<HashMap<String, DeviceBuffer>, ExecError> {
    inputs
        .buffers
        .iter()
        .map(|(name, data)| {
            Ok((
                name.clone(),
                gpu.upload(name, data)
                    .map_err(gpu_err(format!("uploading buffer '{name}'")))?,
            ))
        })
        .collect()
}

/// The one-shot path: `module` as given (the caller loaded it), `symbols` (PTX name, bytes)
/// written, fresh buffers, setup and steps run once, checked; every output buffer downloaded.
pub fn execute(
    gpu: &Gpu,
    module: &Module,
    symbols: &[(String, Vec<u8>)],
    spec: &Spec,
    plan: &Plan,
    inputs: &Inputs,
) -> Result<Execution, ExecError> {
    for (name, bytes) in symbols {
        gpu.write_symbol(module, name, bytes)
            .map_err(gpu_err(format!("setting symbol '{name}'")))?;
    }
    let fills = make_fills(gpu, spec)?;
    let mut steps = Steps::new(gpu, spec, plan, &fills);
    let mut bufs = upload_all(gpu, inputs)?;
    steps.run(&spec.setup, &mut bufs, module, true)?;
    steps.run(&spec.steps, &mut bufs, module, true)?;
    let mut outputs: Vec<(String, HostData)> = Vec::new();
    for o in &spec.outputs {
        if outputs.iter().any(|(n, _)| *n == o.buffer) {
            continue;
        }
        let b = bufs.get(&o.buffer).ok_or_else(|| ExecError::Step {
            step: "outputs".into(),
            iterations: String::new(),
            cause: format!("buffer '{}' is missing", o.buffer),
            context_lost: false,
        })?;
        outputs.push((
            o.buffer.clone(),
            gpu.download(b)
                .map_err(gpu_err(format!("downloading output '{}'", o.buffer)))?,
        ));
    }
    Ok(Execution {
        outputs,
        first_launch: steps.first_launch,
    })
}
