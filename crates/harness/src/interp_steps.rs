//! A spec's steps on the CPU: the walk of [`crate::exec::Steps`] (setup, then steps; launches,
//! copies, fills and repeats, every shape, count and argument evaluated by the same functions)
//! over buffers in the PTX interpreter's memory ([`mantissa_ptx::interp`]), each launch run by
//! the caller's function. What checks an instrumentation of a whole program without a GPU
//! runs on (the original and the instrumented module through the same steps, a CPU oracle
//! beside them), at sizes the interpreter can afford (`--set`).
//!
//! Never: a GPU call, or a launch this walk runs itself (the caller decides how: as written,
//! instrumented, observed). Dynamic shared memory is refused (the interpreter models the
//! declared `.shared` variables only).

use crate::data::{from_f64, Inputs};
use crate::exec::{dim, dims3, eval, launch_arg, repeat, ArgValue, Counters};
use crate::spec::{CopyRange, CopySide, Spec, Step, StepKind};
use crate::validate::Plan;
use mantissa_gpu::{DType, HostData, Scalar};
use mantissa_ptx::interp::{self, Memory};
use mantissa_ptx::Module;
use std::collections::HashMap;

/// Runs one launch: the entry's name, the shape, the arguments (buffers as addresses in the
/// memory), the memory.
pub type LaunchFn<'a> =
    dyn FnMut(&str, interp::Launch, &[interp::Arg], &mut Memory) -> Result<(), String> + 'a;

/// The memory after a walk, and where each buffer is in it.
pub struct InterpRun {
    /// The interpreter's global memory.
    pub memory: Memory,
    buffers: HashMap<String, (u64, DType, usize)>,
}

impl InterpRun {
    /// The bytes of buffer `name` (little-endian elements), if the spec has it.
    pub fn buffer_bytes(&self, name: &str) -> Option<Vec<u8>> {
        let &(at, dtype, len) = self.buffers.get(name)?;
        let bytes = self.memory.read(at, len * dtype.size()).ok()?;
        Some(bytes.to_vec())
    }
}

/// Runs `spec`'s setup and steps as `plan` resolved them against `module` (whose module
/// variables get the `inputs`' symbol bytes), with every buffer made from `inputs`, each
/// launch through `launch`. Errors name the step and iteration.
pub fn run_steps(
    spec: &Spec,
    plan: &Plan,
    inputs: &Inputs,
    module: &Module,
    launch: &mut LaunchFn,
) -> Result<InterpRun, String> {
    let mut run = InterpRun {
        memory: Memory::new(),
        buffers: HashMap::new(),
    };
    for (name, data) in &inputs.buffers {
        let bytes = host_bytes(data);
        let at = run.memory.alloc(bytes.len().max(1));
        run.memory
            .write(at, &bytes)
            .map_err(|e| format!("buffer '{name}': {e}"))?;
        run.buffers
            .insert(name.clone(), (at, data.dtype(), data.len()));
    }
    for (name, bytes) in &inputs.symbols {
        let ptx_name = plan
            .symbols
            .iter()
            .find(|s| &s.name == name)
            .map_or(name.as_str(), |s| s.ptx_name.as_str());
        let at = run
            .memory
            .symbol(module, ptx_name)
            .map_err(|e| format!("symbol '{name}': {e}"))?;
        run.memory
            .write(at, bytes)
            .map_err(|e| format!("symbol '{name}': {e}"))?;
    }
    let mut walk = Walk {
        spec,
        plan,
        run: &mut run,
        launch,
    };
    walk.steps(&spec.setup, &mut Counters::default())?;
    walk.steps(&spec.steps, &mut Counters::default())?;
    Ok(run)
}

struct Walk<'w, 'l> {
    spec: &'w Spec,
    plan: &'w Plan,
    run: &'w mut InterpRun,
    launch: &'w mut LaunchFn<'l>,
}

impl Walk<'_, '_> {
    fn steps(&mut self, steps: &[Step], c: &mut Counters) -> Result<(), String> {
        for s in steps {
            let fail =
                |c: &Counters, cause: String| format!("{}{}: {cause}", s.describe(), c.describe());
            match &s.kind {
                StepKind::Launch(l) => {
                    let r = self
                        .plan
                        .launches
                        .get(&s.path)
                        .ok_or_else(|| fail(c, "the launch was not planned".into()))?;
                    let grid = dims3(self.spec, &l.grid, c).map_err(|e| fail(c, e))?;
                    let block = dims3(self.spec, &l.block, c).map_err(|e| fail(c, e))?;
                    if dim(self.spec, &l.shared, c, 0).map_err(|e| fail(c, e))? > 0 {
                        return Err(fail(
                            c,
                            "dynamic shared memory: the interpreter does not model it".into(),
                        ));
                    }
                    let mut args = Vec::with_capacity(l.args.len());
                    for (a, p) in l.args.iter().zip(&r.args) {
                        args.push(
                            match launch_arg(self.spec, a, p, c).map_err(|e| fail(c, e))? {
                                ArgValue::Scalar(scalar) => interp::Arg(scalar_bytes(scalar)),
                                ArgValue::Bytes(b) => interp::Arg(b.to_vec()),
                                ArgValue::Buffer { name, offset } => {
                                    let &(at, dtype, _) =
                                        self.run.buffers.get(name).ok_or_else(|| {
                                            fail(c, format!("no buffer '{name}'"))
                                        })?;
                                    interp::Arg::u64(at + offset * dtype.size() as u64)
                                }
                            },
                        );
                    }
                    let shape = interp::Launch {
                        grid: [grid.0, grid.1, grid.2],
                        block: [block.0, block.1, block.2],
                    };
                    (self.launch)(&r.entry, shape, &args, &mut self.run.memory)
                        .map_err(|e| fail(c, e))?;
                }
                StepKind::Copy {
                    from,
                    to,
                    len,
                    src_offset,
                    dst_offset,
                } => {
                    let value = |q: &Option<_>| {
                        q.as_ref()
                            .map(|q| eval(self.spec, q, c).map_err(|e| fail(c, e)))
                            .transpose()
                    };
                    let side = |name: &str| {
                        self.run
                            .buffers
                            .get(name)
                            .copied()
                            .ok_or_else(|| fail(c, format!("no buffer '{name}'")))
                    };
                    let ((src_at, dtype, src_len), (dst_at, _, dst_len)) = (side(from)?, side(to)?);
                    let range = CopyRange::resolve(
                        CopySide {
                            name: from,
                            len: src_len,
                        },
                        CopySide {
                            name: to,
                            len: dst_len,
                        },
                        value(src_offset)?,
                        value(dst_offset)?,
                        value(len)?,
                    )
                    .map_err(|e| fail(c, e.to_string()))?;
                    let size = dtype.size() as u64;
                    let bytes = self
                        .run
                        .memory
                        .read(
                            src_at + size * range.src_offset as u64,
                            size as usize * range.len,
                        )
                        .map_err(|e| fail(c, e.to_string()))?
                        .to_vec();
                    self.run
                        .memory
                        .write(dst_at + size * range.dst_offset as u64, &bytes)
                        .map_err(|e| fail(c, e.to_string()))?;
                }
                StepKind::Fill { buffer, value } => {
                    let &(at, dtype, len) = self
                        .run
                        .buffers
                        .get(buffer)
                        .ok_or_else(|| fail(c, format!("no buffer '{buffer}'")))?;
                    let data =
                        from_f64(dtype, &vec![value.as_f64(); len]).map_err(|e| fail(c, e))?;
                    self.run
                        .memory
                        .write(at, &host_bytes(&data))
                        .map_err(|e| fail(c, e.to_string()))?;
                }
                StepKind::Repeat {
                    count,
                    counter,
                    steps,
                } => {
                    let n = dim(self.spec, count, c, 0).map_err(|e| fail(c, e))?;
                    repeat(c, counter, &s.path, n, |c| self.steps(steps, c))?;
                }
            }
        }
        Ok(())
    }
}

/// A scalar argument's bytes, little-endian.
fn scalar_bytes(s: Scalar) -> Vec<u8> {
    match s {
        Scalar::F32(v) => v.to_le_bytes().to_vec(),
        Scalar::F64(v) => v.to_le_bytes().to_vec(),
        Scalar::F16(v) => v.to_le_bytes().to_vec(),
        Scalar::BF16(v) => v.to_le_bytes().to_vec(),
        Scalar::I32(v) => v.to_le_bytes().to_vec(),
        Scalar::I64(v) => v.to_le_bytes().to_vec(),
        Scalar::U8(v) => vec![v],
        Scalar::U32(v) => v.to_le_bytes().to_vec(),
        Scalar::U64(v) => v.to_le_bytes().to_vec(),
    }
}

/// A host array's bytes, little-endian elements.
fn host_bytes(d: &HostData) -> Vec<u8> {
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|x| f(*x)).collect()
    }
    match d {
        HostData::F32(v) => le(v, f32::to_le_bytes),
        HostData::F64(v) => le(v, f64::to_le_bytes),
        HostData::F16(v) => le(v, |x| x.to_le_bytes()),
        HostData::BF16(v) => le(v, |x| x.to_le_bytes()),
        HostData::I32(v) => le(v, i32::to_le_bytes),
        HostData::I64(v) => le(v, i64::to_le_bytes),
        HostData::U8(v) => v.clone(),
        HostData::U32(v) => le(v, u32::to_le_bytes),
        HostData::U64(v) => le(v, u64::to_le_bytes),
    }
}
