//! A small PTX interpreter: runs a kernel on the CPU, one thread at a time (a small grid runs
//! thread by thread, a block's threads in turns between barriers and warp instructions), so
//! that any pass can be tested without a GPU: run the original and the rewritten kernel on the
//! same inputs and compare what they write, instruction by instruction if need be.
//!
//! What it models: registers (as declared, special registers `%tid`, `%ntid`, `%ctaid`,
//! `%nctaid`, `%laneid`, and `%smid`/`%nsmid`: block b on SM b mod 132), kernel parameters, global memory (a byte array the caller fills
//! through [`Memory`]; module `.global`/`.const` variables live there too, with their numeric
//! initialisers), shared memory per block and local memory per thread, generic addresses
//! (`cvta`); integer arithmetic at its width (`.lo`/`.hi`/`.wide`, `.sat`), bit operations,
//! shifts, f32/f64 arithmetic correctly rounded in every rounding mode ([`round`]; `fma` rounds
//! once), `.ftz` and `.sat` on f32, `min`/`max`/`abs`/`neg`/`copysign`/`testp`, `setp` with
//! every comparison and a combining predicate, `selp`, `cvt` between integer and float types
//! with every rounding and saturation, `mov` (vector packing included), loads, stores and
//! atomics in every space, branches, `ret`/`exit`, barriers, and the warp-collective
//! instructions (`activemask`, `vote.sync`, `shfl.sync`, `redux.sync`, `bar.warp.sync`,
//! `match.any.sync`): the lanes of a warp that meet at one run it together (`interp/warp.rs`
//! says how, and which schedule of the hardware's that is).
//!
//! One approximate instruction, `rcp.approx.ftz.f64`, runs by a **model** within the
//! instruction's error, not the hardware's bits (`interp/approx.rs`): the correctly rounded
//! reciprocal with its low 32 bits cleared (`.ftz`: a subnormal operand or result is a zero of
//! its sign), an error below 2^-20 (the H200's own reaches 2^-19.94, measured:
//! docs/BENCHMARKS.md). It is kept because code that refines the reciprocal (the shadow pass's demotion error: a Newton
//! step and a corrected quotient) gets the same result from any seed that close, but in the
//! narrow band its error analysis leaves ([`crate::pass::shadow`]); a kernel that used the seed
//! as it is would see the model's bits.
//!
//! What it refuses, with [`InterpError::Unsupported`] naming the instruction rather than
//! computing something the GPU would not: every other approximate instruction (`.approx`,
//! `.full`, `rsqrt`, `sin`, `ex2`, ...: their results are the hardware's), f16/bf16 arithmetic,
//! calls, texture and surface accesses, `match.all` (its predicate destination), and anything
//! [`crate::op`] decodes as [`OpKind::Other`](crate::op::OpKind::Other). A register read before
//! any write, an out-of-range access, or integer division by zero is an error too. NaN results
//! are the GPU's canonical NaN (all significand bits set).
//!
//! [`run_observed`] calls a hook after every executed arithmetic instruction and conversion with
//! its source operands' and result's bits ([`Executed`]): CPU oracles of instrumentation (the
//! shadow pass's) compute what the instrumented kernel must report from it.

mod approx;
mod bits;
mod exec;
mod layout;
pub mod round;
#[cfg(test)]
mod tests;
mod warp;
#[cfg(test)]
mod warp_tests;

use crate::decode::Decoded;
use crate::model::{FunctionKind, InstId, Item, Module, Statement, VarDecl};
use crate::op::{Op, ValueType};
use std::collections::{HashMap, HashSet};

/// Generic addresses of global memory start here (so that 0 is never a valid address).
pub const GLOBAL_BASE: u64 = 1 << 32;
/// Generic addresses of a block's shared memory start here.
pub const SHARED_BASE: u64 = 1 << 44;
/// Generic addresses of a thread's local memory start here.
pub const LOCAL_BASE: u64 = 1 << 45;

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// The kernel is not in the module.
    #[error("no kernel {0} in the module")]
    NoKernel(String),
    /// Wrong argument count or sizes.
    #[error("{kernel}: {message}")]
    Arguments {
        /// The kernel.
        kernel: String,
        /// What did not match.
        message: String,
    },
    /// An instruction the interpreter does not model.
    #[error("{function}: `{inst}`: not modelled by the interpreter ({why})")]
    Unsupported {
        /// The function.
        function: String,
        /// The instruction as printed.
        inst: String,
        /// Why.
        why: String,
    },
    /// An instruction failed: a register read before written, an access out of range, a
    /// division by zero.
    #[error("{function}: `{inst}`: {why}")]
    Fault {
        /// The function.
        function: String,
        /// The instruction as printed.
        inst: String,
        /// What went wrong.
        why: String,
    },
    /// A thread ran more instructions than the limit ([`Options::steps`]).
    #[error("{function}: a thread ran more than {limit} instructions (an endless loop?)")]
    StepLimit {
        /// The function.
        function: String,
        /// The limit.
        limit: u64,
    },
}

/// A kernel argument: the bytes of its `.param`, little-endian.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg(pub Vec<u8>);

impl Arg {
    /// A pointer or any 64-bit integer.
    pub fn u64(v: u64) -> Arg {
        Arg(v.to_le_bytes().to_vec())
    }
    /// A 32-bit integer.
    pub fn i32(v: i32) -> Arg {
        Arg(v.to_le_bytes().to_vec())
    }
    /// A float.
    pub fn f32(v: f32) -> Arg {
        Arg(v.to_le_bytes().to_vec())
    }
    /// A double.
    pub fn f64(v: f64) -> Arg {
        Arg(v.to_le_bytes().to_vec())
    }
}

/// Grid and block sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}

impl Launch {
    /// One block of one thread.
    pub fn single() -> Launch {
        Launch {
            grid: [1, 1, 1],
            block: [1, 1, 1],
        }
    }

    /// `blocks` blocks of `threads` threads, in x.
    pub fn linear(blocks: u32, threads: u32) -> Launch {
        Launch {
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
        }
    }
}

/// How to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Instructions one thread may execute.
    pub steps: u64,
    /// f64 instructions to evaluate as their f32 forms, without rewriting the module: f64
    /// sources rounded to f32 (to nearest), the operation in f32, an f64 destination given the
    /// exact widening of the f32 result. What per-instruction demotion means, for checking a
    /// rewrite against it or for trying a configuration without one.
    pub in_f32: HashSet<InstId>,
    /// What a register read before any instruction wrote it gives: `None` (the default), an
    /// error ([`InterpError::Fault`]), which catches a pass that forgot a definition; `Some(v)`,
    /// the bits `v`. NVVM's own code reads such registers where the value is discarded on that
    /// path (an LLVM `undef`, say a result masked by a predicate that is false there), so a
    /// module with NVRTC-compiled functions merged in runs with a value that shows if it leaks.
    pub undefined_reads: Option<u64>,
}

/// A value for [`Options::undefined_reads`] that shows where it leaks: a quiet NaN's bits with
/// a recognisable payload.
pub const UNDEFINED_BITS: u64 = 0x7ff4_dead_dead_dead;

impl Default for Options {
    fn default() -> Options {
        Options {
            steps: 10_000_000,
            in_f32: HashSet::new(),
            undefined_reads: None,
        }
    }
}

/// Global memory (and the module variables placed in it).
#[derive(Debug, Clone, Default)]
pub struct Memory {
    bytes: Vec<u8>,
    symbols: HashMap<String, u64>,
}

fn fault(why: String) -> InterpError {
    InterpError::Fault {
        function: String::new(),
        inst: String::new(),
        why,
    }
}

impl Memory {
    /// Empty global memory.
    pub fn new() -> Memory {
        Memory::default()
    }

    /// `bytes` zeroed bytes, 256-byte aligned; returns their generic (= global) address.
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        let start = self.bytes.len().div_ceil(256) * 256;
        self.bytes.resize(start + bytes, 0);
        GLOBAL_BASE + start as u64
    }

    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, InterpError> {
        let off = addr
            .checked_sub(GLOBAL_BASE)
            .filter(|o| o + len as u64 <= self.bytes.len() as u64)
            .ok_or_else(|| {
                fault(format!(
                    "global address {addr:#x} (+{len}) is not allocated"
                ))
            })?;
        Ok(off as usize..off as usize + len)
    }

    /// The bytes at `addr`.
    pub fn read(&self, addr: u64, len: usize) -> Result<&[u8], InterpError> {
        Ok(&self.bytes[self.range(addr, len)?])
    }

    /// The address of module variable `name`, if a run (or [`Memory::symbol`]) placed it.
    pub fn placed(&self, name: &str) -> Option<u64> {
        self.symbols.get(name).copied()
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), InterpError> {
        let r = self.range(addr, data.len())?;
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }

    /// A new allocation holding `values`.
    pub fn f64s(&mut self, values: &[f64]) -> u64 {
        let a = self.alloc(values.len() * 8);
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let r = (a - GLOBAL_BASE) as usize;
        self.bytes[r..r + bytes.len()].copy_from_slice(&bytes);
        a
    }

    /// A new allocation holding `values`.
    pub fn f32s(&mut self, values: &[f32]) -> u64 {
        let a = self.alloc(values.len() * 4);
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let r = (a - GLOBAL_BASE) as usize;
        self.bytes[r..r + bytes.len()].copy_from_slice(&bytes);
        a
    }

    /// `n` doubles at `addr`.
    pub fn read_f64s(&self, addr: u64, n: usize) -> Result<Vec<f64>, InterpError> {
        Ok(self
            .read(addr, n * 8)?
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect())
    }

    /// `n` floats at `addr`.
    pub fn read_f32s(&self, addr: u64, n: usize) -> Result<Vec<f32>, InterpError> {
        Ok(self
            .read(addr, n * 4)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
            .collect())
    }

    /// The address of module variable `name` (`.global`/`.const`), placing it (with its
    /// initialiser) on first use.
    pub fn symbol(&mut self, module: &Module, name: &str) -> Result<u64, InterpError> {
        if let Some(&a) = self.symbols.get(name) {
            return Ok(a);
        }
        let v = module
            .items
            .iter()
            .find_map(|i| match i {
                Item::Var(v) if v.name == name => Some(v),
                _ => None,
            })
            .ok_or_else(|| fault(format!("no module variable {name}")))?;
        let bytes = initial_bytes(v)?;
        let a = self.alloc(bytes.len().max(1));
        self.write(a, &bytes)?;
        self.symbols.insert(name.to_string(), a);
        Ok(a)
    }
}

/// The element type and count of a variable declaration.
pub(crate) fn var_layout(v: &VarDecl) -> Result<(ValueType, u32, usize), InterpError> {
    let mut ty = None;
    let mut vector = 1;
    for a in &v.attrs {
        let w = a.trim_start_matches('.');
        if let Some(t) = ValueType::parse(w) {
            ty = Some(t);
        } else if let Some(n) = w.strip_prefix('v').and_then(|n| n.parse().ok()) {
            vector = n;
        }
    }
    let ty = ty.ok_or_else(|| fault(format!("{}: no element type", v.name)))?;
    let count = v
        .dims
        .iter()
        .try_fold(1usize, |n, d| d.map(|d| n * d as usize));
    let count = count.ok_or_else(|| fault(format!("{}: an unsized array", v.name)))?;
    Ok((ty, vector, count * vector as usize))
}

/// The bytes of a variable: its numeric initialiser (`= 0d3FF0...`, `= {1, 2, 3}`), or zeros.
/// An error for an initialiser that is not numbers (addresses: `= {generic(x)}`) or a variable
/// without a size.
pub fn initial_bytes(v: &VarDecl) -> Result<Vec<u8>, InterpError> {
    let (ty, _, count) = var_layout(v)?;
    let width = ty.bytes() as usize;
    let mut out = vec![0u8; width * count];
    let Some(init) = &v.init else {
        return Ok(out);
    };
    let items: Vec<&str> = init
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.len() > count {
        return Err(fault(format!(
            "{}: initialiser longer than the variable",
            v.name
        )));
    }
    for (k, item) in items.iter().enumerate() {
        // The declaration's text is whitespace-normalised token by token: `-126` reads `- 126`.
        let (neg, t) = match item.strip_prefix('-') {
            Some(t) => (true, t.trim_start()),
            None => (false, *item),
        };
        let imm = crate::parse::parse_number(t, neg)
            .ok_or_else(|| fault(format!("{}: initialiser {item} is not a number", v.name)))?;
        let bits = exec::imm_bits(&imm, ty);
        out[k * width..(k + 1) * width].copy_from_slice(&bits.to_le_bytes()[..width]);
    }
    Ok(out)
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    /// Instructions executed, over all threads.
    pub steps: u64,
    /// How often each instruction ran (guarded-off instructions included), over all threads.
    pub counts: HashMap<InstId, u64>,
}

/// One executed arithmetic instruction or conversion (what a [`run_observed`] observer sees,
/// right after the instruction wrote its result; instructions whose guard is false are not
/// executed).
#[derive(Debug, Clone, Copy)]
pub struct Executed<'a> {
    /// The instruction.
    pub inst: InstId,
    /// Its decode as executed (its f32 form for an instruction of [`Options::in_f32`]).
    pub op: &'a Op,
    /// The bits of its source operands (operand 1 on), each as a value of the operation's type
    /// (a conversion's: its source type), immediates included.
    pub sources: &'a [u64],
    /// The bits of the value it wrote.
    pub result: u64,
}

/// Runs `kernel` of `module` on `launch` with `args`, reading and writing `mem`.
pub fn run(
    module: &Module,
    kernel: &str,
    launch: Launch,
    args: &[Arg],
    mem: &mut Memory,
) -> Result<Run, InterpError> {
    run_with(module, kernel, launch, args, mem, &Options::default())
}

/// [`run`] with explicit options.
pub fn run_with(
    module: &Module,
    kernel: &str,
    launch: Launch,
    args: &[Arg],
    mem: &mut Memory,
    options: &Options,
) -> Result<Run, InterpError> {
    run_observed(module, kernel, launch, args, mem, options, &mut |_| {})
}

/// [`run_with`], calling `observe` after every executed arithmetic instruction and conversion
/// with its operands' and result's values (the per-instruction hook of CPU oracles).
pub fn run_observed(
    module: &Module,
    kernel: &str,
    launch: Launch,
    args: &[Arg],
    mem: &mut Memory,
    options: &Options,
    observe: &mut dyn FnMut(&Executed),
) -> Result<Run, InterpError> {
    let f = module
        .functions()
        .find(|f| f.name == kernel && f.kind == FunctionKind::Entry && f.body.is_some())
        .ok_or_else(|| InterpError::NoKernel(kernel.to_string()))?;
    let arg_err = |message: String| InterpError::Arguments {
        kernel: kernel.to_string(),
        message,
    };
    if args.len() != f.params.len() {
        return Err(arg_err(format!(
            "{} arguments for {} parameters",
            args.len(),
            f.params.len()
        )));
    }
    // Parameters, laid out in one byte array by name.
    let mut params: Vec<u8> = Vec::new();
    let mut param_at: HashMap<String, u64> = HashMap::new();
    for (p, a) in f.params.iter().zip(args) {
        let entry = crate::entry::EntryParam::of(p);
        if entry.bytes != a.0.len() {
            return Err(arg_err(format!(
                "parameter {} takes {} bytes, the argument has {}",
                p.name,
                entry.bytes,
                a.0.len()
            )));
        }
        let align = entry.align.unwrap_or(8).max(1) as usize;
        let at = params.len().div_ceil(align) * align;
        params.resize(at, 0);
        params.extend_from_slice(&a.0);
        param_at.insert(p.name.clone(), at as u64);
    }
    let d = Decoded::of(f);
    // Module variables and the function's own `.shared`/`.local` variables.
    let mut shared_at: HashMap<String, u64> = HashMap::new();
    let mut local_at: HashMap<String, u64> = HashMap::new();
    let mut shared_bytes = 0usize;
    let mut local_bytes = 0usize;
    let mut global_at: HashMap<String, u64> = HashMap::new();
    let place = |v: &VarDecl, at: &mut HashMap<String, u64>, size: &mut usize| {
        let (ty, _, count) = var_layout(v)?;
        let align = v
            .attrs
            .iter()
            .position(|a| a == ".align")
            .and_then(|i| v.attrs.get(i + 1)?.parse::<usize>().ok())
            .unwrap_or(ty.bytes() as usize)
            .max(1);
        let start = size.div_ceil(align) * align;
        *size = start + count * ty.bytes() as usize;
        at.insert(v.name.clone(), start as u64);
        Ok::<(), InterpError>(())
    };
    for item in &module.items {
        if let Item::Var(v) = item {
            match v.space() {
                ".shared" => place(v, &mut shared_at, &mut shared_bytes)?,
                ".global" | ".const" => {
                    global_at.insert(v.name.clone(), mem.symbol(module, &v.name)?);
                }
                _ => {}
            }
        }
    }
    for s in f.body.iter().flatten() {
        if let Statement::Var(v) = s {
            match v.space() {
                ".shared" => place(v, &mut shared_at, &mut shared_bytes)?,
                ".local" => place(v, &mut local_at, &mut local_bytes)?,
                _ => {}
            }
        }
    }
    let (reg_ids, reg_at) = layout::Layout::reg_ids(&d);
    let layout = layout::Layout {
        params,
        param_at,
        shared_at,
        local_at,
        global_at,
        shared_bytes,
        local_bytes,
        reg_ids,
        reg_at,
    };
    let mut out = Run::default();
    for bz in 0..launch.grid[2] {
        for by in 0..launch.grid[1] {
            for bx in 0..launch.grid[0] {
                exec::run_block(
                    &d,
                    &layout,
                    (launch, [bx, by, bz]),
                    mem,
                    options,
                    &mut out,
                    observe,
                )?;
            }
        }
    }
    Ok(out)
}
