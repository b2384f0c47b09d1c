//! Running a planned spec on a GPU: buffers uploaded, symbols set, steps executed in order with
//! nested loops and their counters, outputs downloaded, and the whole step sequence timed.
//!
//! The first run is checked: it waits after every launch, so a fault is blamed on the step that
//! caused it, with its loop counters (`steps[1].steps[2] (launch stencil), iteration t=17:
//! ...`); its outputs are the result. Then, for each warm-up and timed repeat, every buffer is
//! uploaded afresh from its initial contents and every `.global` variable restored to what it held
//! before the first run, so that each repeat computes the same thing;
//! only the steps are between the CUDA events ([`Gpu::time_with`] with one repetition per call,
//! so the uploads stay outside), and the time is the median over repeats.

use crate::data::{from_f64, Inputs};
use crate::expr::Val;
use crate::spec::{lookup, ArgSpec, CopyRange, CopySide, Quantity, Spec, Step, StepKind};
use crate::validate::{Plan, PlannedArg, ScalarKind};
use mantissa_gpu::{
    DeviceBuffer, Gpu, GpuError, HostData, KernelArg, LaunchDims, Module, Timing, TimingOptions,
};
use std::cell::RefCell;
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

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Each output buffer's contents after the checked run, by buffer name.
    pub outputs: Vec<(String, HostData)>,
    /// Device time of the step sequence (absent with 0 repeats).
    pub timing: Option<Timing>,
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
    },
    /// Setting up (uploads, module load) or downloading failed.
    #[error("{what}: {source}")]
    Gpu {
        /// What was being done.
        what: String,
        /// The GPU's error (boxed: it is large, and errors are the rare path).
        source: Box<GpuError>,
    },
}

fn gpu_err(what: impl Into<String>) -> impl FnOnce(GpuError) -> ExecError {
    let what = what.into();
    move |source| ExecError::Gpu {
        what,
        source: Box::new(source),
    }
}

/// Loop state: each enclosing repeat's counter name (or its path) and iteration.
#[derive(Default)]
struct Counters {
    stack: Vec<(String, bool, i64)>,
}

impl Counters {
    fn values(&self) -> Vec<(String, Val)> {
        self.stack
            .iter()
            .filter(|c| c.1)
            .map(|c| (c.0.clone(), Val::Int(c.2)))
            .collect()
    }

    fn describe(&self) -> String {
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

struct Runner<'a> {
    gpu: &'a Gpu,
    spec: &'a Spec,
    plan: &'a Plan,
    /// Fill sources, by step path: a buffer holding the fill value, copied over the target.
    fills: HashMap<String, DeviceBuffer>,
    first_launch: Option<LaunchDims>,
}

impl Runner<'_> {
    fn eval(&self, q: &Quantity, c: &Counters) -> Result<Val, String> {
        let counters = c.values();
        q.expr
            .eval(&|n| lookup(&counters, n).or_else(|| lookup(&self.spec.sizes, n)))
            .map_err(|e| {
                format!(
                    "{} = \"{}\": found {}; accepted {}",
                    q.field, q.text, e.found, e.accepted
                )
            })
    }

    fn dim(&self, q: &Quantity, c: &Counters, min: i64) -> Result<u32, String> {
        let v = self.eval(q, c)?;
        match v.as_integer() {
            Some(i) if i >= min && i <= u32::MAX as i64 => Ok(i as u32),
            _ => Err(format!(
                "{} = \"{}\" is {v}; accepted an integer from {min} to {}",
                q.field,
                q.text,
                u32::MAX
            )),
        }
    }

    fn dims3(&self, qs: &[Quantity], c: &Counters) -> Result<(u32, u32, u32), String> {
        let mut d = [1u32; 3];
        for (i, q) in qs.iter().enumerate().take(3) {
            d[i] = self.dim(q, c, 1)?;
        }
        Ok((d[0], d[1], d[2]))
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
                        let arg = match (&a.spec, p) {
                            (_, PlannedArg::Buffer(b)) => match bufs.get(b) {
                                Some(buf) => KernelArg::Buffer(buf),
                                None => {
                                    return Err(fail(
                                        c,
                                        format!("buffer '{b}' is missing (an internal error)"),
                                    ))
                                }
                            },
                            (ArgSpec::Value(q), PlannedArg::Scalar(kind)) => {
                                let v = self.eval(q, c).map_err(|e| fail(c, e))?;
                                KernelArg::Scalar(
                                    kind.convert(v)
                                        .map_err(|e| fail(c, format!("{}: {e}", a.field)))?,
                                )
                            }
                            (ArgSpec::Typed(_, q), PlannedArg::Typed(d)) => {
                                let v = self.eval(q, c).map_err(|e| fail(c, e))?;
                                KernelArg::Scalar(
                                    ScalarKind::convert_typed(*d, v)
                                        .map_err(|e| fail(c, format!("{}: {e}", a.field)))?,
                                )
                            }
                            _ => {
                                return Err(fail(
                                    c,
                                    "argument plan mismatch (an internal error)".into(),
                                ))
                            }
                        };
                        args.push(arg);
                    }
                    let launched = self.gpu.launch(module, &r.entry, dims, &args);
                    let launched = if checked {
                        launched.and_then(|()| self.gpu.synchronize())
                    } else {
                        launched
                    };
                    launched.map_err(|e| fail(c, e.to_string()))?;
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
                    copy(self.gpu, bufs, from, to, range).map_err(|e| fail(c, e))?;
                }
                StepKind::Fill { buffer, .. } => {
                    let (Some(src), Some(mut dst)) = (self.fills.get(&s.path), bufs.remove(buffer))
                    else {
                        return Err(fail(c, "fill buffer missing (an internal error)".into()));
                    };
                    let r = self.gpu.copy(src, &mut dst);
                    bufs.insert(buffer.clone(), dst);
                    r.map_err(|e| fail(c, e.to_string()))?;
                }
                StepKind::Repeat {
                    count,
                    counter,
                    steps,
                } => {
                    let n = self.dim(count, c, 0).map_err(|e| fail(c, e))?;
                    c.stack.push((
                        counter.clone().unwrap_or_else(|| s.path.clone()),
                        counter.is_some(),
                        0,
                    ));
                    for i in 0..n {
                        if let Some(top) = c.stack.last_mut() {
                            top.2 = i64::from(i);
                        }
                        self.steps(steps, bufs, module, c, checked)?;
                    }
                    c.stack.pop();
                }
            }
        }
        Ok(())
    }
}

/// Device-to-device copy of `range`.
///
/// STAND-IN: `mantissa-gpu` copies whole buffers of equal length only ([`Gpu::copy`]); a copy of
/// part of a buffer goes through the host (download both, splice, upload) until gpu has a
/// sub-range copy. It is correct but slow, and inside the timed region.
fn copy(
    gpu: &Gpu,
    bufs: &mut HashMap<String, DeviceBuffer>,
    from: &str,
    to: &str,
    range: CopyRange,
) -> Result<(), String> {
    if range.len == 0 || (from == to && range.src_offset == range.dst_offset) {
        return Ok(());
    }
    let mut dst = bufs
        .remove(to)
        .ok_or_else(|| format!("buffer '{to}' is missing"))?;
    let result = (|| {
        let src = match bufs.get(from) {
            Some(src) if range.len == src.len() && range.len == dst.len() => {
                return gpu.copy(src, &mut dst).map_err(|e| e.to_string());
            }
            Some(src) => Some(crate::data::to_f64(
                &gpu.download(src).map_err(|e| e.to_string())?,
            )),
            None if from == to => None,
            None => return Err(format!("buffer '{from}' is missing")),
        };
        let mut d = crate::data::to_f64(&gpu.download(&dst).map_err(|e| e.to_string())?);
        match src {
            Some(s) => range.apply(&s, &mut d),
            None => range.apply_within(&mut d),
        }
        let data = from_f64(dst.dtype(), &d)?;
        dst = gpu.upload(to, &data).map_err(|e| e.to_string())?;
        Ok(())
    })();
    bufs.insert(to.to_string(), dst);
    result
}

fn upload_all(gpu: &Gpu, inputs: &Inputs) -> Result<HashMap<String, DeviceBuffer>, ExecError> {
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

/// Runs the spec's steps on `gpu`. `load` loads the module; `symbols` (PTX name, bytes) are
/// written into it before the first run.
///
/// Every repeat must compute the same thing, so before each timed repeat the buffers are
/// uploaded again and every `.global` variable of the module (the spec's and the program's own
/// `__device__` state, which kernels may change) is restored to what it held before the first
/// run; `__constant__` memory cannot change while kernels run.
pub fn execute(
    gpu: &Gpu,
    load: &dyn Fn() -> Result<Module, GpuError>,
    symbols: &[(String, Vec<u8>)],
    spec: &Spec,
    plan: &Plan,
    inputs: &Inputs,
    opts: ExecOptions,
) -> Result<Execution, ExecError> {
    let module = load().map_err(gpu_err("loading the module"))?;
    for (name, bytes) in symbols {
        gpu.write_symbol(&module, name, bytes)
            .map_err(gpu_err(format!("setting symbol '{name}'")))?;
    }
    let globals: Vec<(String, Vec<u8>)> = module
        .symbols()
        .iter()
        .filter(|s| s.space == "global" && s.bytes.is_some_and(|b| b > 0))
        .map(|s| {
            gpu.read_symbol(&module, &s.name)
                .map(|bytes| (s.name.clone(), bytes))
                .map_err(gpu_err(format!("reading symbol '{}'", s.name)))
        })
        .collect::<Result<_, _>>()?;
    let mut fills = HashMap::new();
    for (step, _) in spec.walk() {
        if let StepKind::Fill { buffer, value } = &step.kind {
            let b = spec.buffer(buffer).ok_or_else(|| ExecError::Step {
                step: step.describe(),
                iterations: String::new(),
                cause: "unknown buffer".into(),
            })?;
            let data = from_f64(b.dtype, &vec![value.as_f64(); b.len]).map_err(|cause| {
                ExecError::Step {
                    step: step.describe(),
                    iterations: String::new(),
                    cause,
                }
            })?;
            let fb = gpu
                .upload(&format!("{buffer}#fill"), &data)
                .map_err(gpu_err(format!("making the fill of '{buffer}'")))?;
            fills.insert(step.path.clone(), fb);
        }
    }
    let mut runner = Runner {
        gpu,
        spec,
        plan,
        fills,
        first_launch: None,
    };
    let mut bufs = upload_all(gpu, inputs)?;
    // STAND-IN for the trial runner's restore point: setup steps run before every run, untimed,
    // after the inputs are uploaded and the `.global` variables restored.
    runner.steps(
        &spec.setup,
        &mut bufs,
        &module,
        &mut Counters::default(),
        true,
    )?;
    runner.steps(
        &spec.steps,
        &mut bufs,
        &module,
        &mut Counters::default(),
        true,
    )?;
    let mut outputs = Vec::new();
    for o in &spec.outputs {
        if outputs
            .iter()
            .any(|(n, _): &(String, HostData)| *n == o.buffer)
        {
            continue;
        }
        let b = bufs.get(&o.buffer).ok_or_else(|| ExecError::Step {
            step: "outputs".into(),
            iterations: String::new(),
            cause: format!("buffer '{}' is missing", o.buffer),
        })?;
        outputs.push((
            o.buffer.clone(),
            gpu.download(b)
                .map_err(gpu_err(format!("downloading output '{}'", o.buffer)))?,
        ));
    }
    let first_launch = runner.first_launch;
    let mut samples = Vec::new();
    for r in 0..opts.warmup + opts.repeats {
        drop(bufs);
        bufs = upload_all(gpu, inputs)?;
        for (name, bytes) in &globals {
            gpu.write_symbol(&module, name, bytes)
                .map_err(gpu_err(format!("restoring symbol '{name}'")))?;
        }
        runner.steps(
            &spec.setup,
            &mut bufs,
            &module,
            &mut Counters::default(),
            false,
        )?;
        let failure: RefCell<Option<ExecError>> = RefCell::new(None);
        let timed = gpu.time_with(TimingOptions { warmup: 0, reps: 1 }, 1, |_| {
            runner
                .steps(
                    &spec.steps,
                    &mut bufs,
                    &module,
                    &mut Counters::default(),
                    false,
                )
                .map_err(|e| {
                    let problem = e.to_string();
                    *failure.borrow_mut() = Some(e);
                    GpuError::BadLaunch {
                        kernel: "(spec steps)".into(),
                        problem,
                    }
                })
        });
        if let Some(e) = failure.into_inner() {
            return Err(e);
        }
        let t = timed.map_err(gpu_err(format!("timed run {}", r + 1)))?;
        if r >= opts.warmup {
            samples.extend(t.samples_ms);
        }
    }
    let timing = Timing::from_samples(samples, opts.warmup, 1);
    Ok(Execution {
        outputs,
        timing,
        first_launch,
    })
}
