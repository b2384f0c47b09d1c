//! The interpreter's execution: threads of one block in turns between barriers, and one
//! instruction at a time ([`Thread::step`]).

use super::approx;
use super::bits::{bit_field_insert, testp};
use super::layout::Layout;
use super::round::{self, Mode};
use super::warp;
use super::{Executed, InterpError, Launch, Memory, Options, Run, LOCAL_BASE, SHARED_BASE};
use crate::decode::Decoded;
use crate::model::{Imm, Operand};
use crate::op::{Arith, AtomicOp, BitOp, BoolOp, Cmp, Control, Op, OpKind, Part, Space, ValueType};
use crate::regs::RegId;

/// The SMs the interpreter's blocks are placed on (`%smid`, `%nsmid`): an H100's or H200's 132.
const SMS: u32 = 132;

const F32_NAN: u32 = 0x7fff_ffff;
const F64_NAN: u64 = 0x7fff_ffff_ffff_ffff;

/// The bits of an immediate as a value of type `ty` (float literals converted to f32 by
/// rounding to nearest, integers truncated to the width).
pub(super) fn imm_bits(imm: &Imm, ty: ValueType) -> u64 {
    match (*imm, ty) {
        (Imm::F32(b), ValueType::F64) => f64::from(f32::from_bits(b)).to_bits(),
        (Imm::F32(b), _) => u64::from(b),
        (Imm::F64(b), ValueType::F32) => u64::from((f64::from_bits(b) as f32).to_bits()),
        (Imm::F64(b), _) => b,
        (Imm::Int { value, .. }, _) => mask(value as u64, ty),
    }
}

fn mask(v: u64, ty: ValueType) -> u64 {
    match ty.bits() {
        64 | 128 => v,
        b => v & ((1u64 << b) - 1),
    }
}

fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

pub(super) fn f32v(b: u64) -> f32 {
    f32::from_bits(b as u32)
}

pub(super) fn f64v(b: u64) -> f64 {
    f64::from_bits(b)
}

fn f32b(x: f32) -> u64 {
    u64::from(if x.is_nan() { F32_NAN } else { x.to_bits() })
}

fn f64b(x: f64) -> u64 {
    if x.is_nan() {
        F64_NAN
    } else {
        x.to_bits()
    }
}

fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

enum Flow {
    Next,
    Jump(usize),
    Barrier,
    Exit,
}

/// One thread's state.
pub(super) struct Thread {
    regs: Vec<u64>,
    written: Vec<bool>,
    pub pc: usize,
    tid: [u32; 3],
    local: Vec<u8>,
    pub done: bool,
    at_barrier: bool,
    /// Stopped before a warp instruction whose guard holds, until its lanes run it together
    /// ([`super::warp`]).
    pub at_warp: bool,
    pub steps: u64,
    /// The instruction being run is evaluated in f32 ([`Options::in_f32`]).
    narrow: bool,
}

/// What an instruction may touch besides its thread.
pub(super) struct Ctx<'a, 'f> {
    pub d: &'a Decoded<'f>,
    layout: &'a Layout,
    launch: Launch,
    ctaid: [u32; 3],
    mem: &'a mut Memory,
    shared: &'a mut Vec<u8>,
    observe: &'a mut dyn FnMut(&Executed),
    /// [`Options::undefined_reads`].
    undefined_reads: Option<u64>,
}

/// Runs every thread of block `ctaid` of `launch` to its end, telling `observe` what each
/// arithmetic instruction and conversion computed.
pub(super) fn run_block(
    d: &Decoded,
    layout: &Layout,
    (launch, ctaid): (Launch, [u32; 3]),
    mem: &mut Memory,
    options: &Options,
    out: &mut Run,
    observe: &mut dyn FnMut(&Executed),
) -> Result<(), InterpError> {
    let mut shared = vec![0u8; layout.shared_bytes];
    let nr = d.regs.len();
    let mut threads: Vec<Thread> = Vec::new();
    for z in 0..launch.block[2] {
        for y in 0..launch.block[1] {
            for x in 0..launch.block[0] {
                threads.push(Thread {
                    regs: vec![0; nr],
                    written: vec![false; nr],
                    pc: 0,
                    tid: [x, y, z],
                    local: vec![0u8; layout.local_bytes],
                    done: false,
                    at_barrier: false,
                    at_warp: false,
                    steps: 0,
                    narrow: false,
                });
            }
        }
    }
    let mut ctx = Ctx {
        d,
        layout,
        launch,
        ctaid,
        mem,
        shared: &mut shared,
        observe,
        undefined_reads: options.undefined_reads,
    };
    // Counted per instruction index and folded into `out.counts` once the block ends: a hash
    // map entry per executed instruction was a fifth of the interpreter's time.
    let mut counts = vec![0u64; d.len()];
    let in_f32: Vec<bool> = if options.in_f32.is_empty() {
        Vec::new()
    } else {
        d.insts
            .iter()
            .map(|i| options.in_f32.contains(&i.id))
            .collect()
    };
    let result = run_threads(&mut ctx, &mut threads, options, out, &mut counts, &in_f32);
    for (k, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
        *out.counts.entry(d.insts[k].id).or_default() += n;
    }
    result
}

/// Runs `threads` to their end (the loop of [`run_block`]).
fn run_threads(
    ctx: &mut Ctx,
    threads: &mut [Thread],
    options: &Options,
    out: &mut Run,
    counts: &mut [u64],
    in_f32: &[bool],
) -> Result<(), InterpError> {
    let d = ctx.d;
    loop {
        for t in threads
            .iter_mut()
            .filter(|t| !t.done && !t.at_barrier && !t.at_warp)
        {
            while !t.done && !t.at_barrier {
                if t.pc >= d.len() {
                    t.done = true;
                    break;
                }
                if warp::warp_op(ctx, t.pc).is_some() && t.guard_holds(ctx, t.pc)? {
                    t.at_warp = true;
                    break;
                }
                t.steps += 1;
                if t.steps > options.steps {
                    return Err(InterpError::StepLimit {
                        function: d.function.name.clone(),
                        limit: options.steps,
                    });
                }
                let k = t.pc;
                out.steps += 1;
                counts[k] += 1;
                let narrowed = in_f32
                    .get(k)
                    .copied()
                    .unwrap_or(false)
                    .then(|| narrow_op(&d.ops[k]));
                t.narrow = narrowed.is_some();
                let flow = t
                    .step(ctx, k, narrowed.as_ref())
                    .map_err(|e| locate(e, d, k))?;
                match flow {
                    Flow::Next => t.pc = k + 1,
                    Flow::Jump(to) => t.pc = to,
                    Flow::Barrier => {
                        t.pc = k + 1;
                        t.at_barrier = true;
                    }
                    Flow::Exit => t.done = true,
                }
            }
        }
        if warp::step(ctx, threads, options, out)? {
            continue;
        }
        if threads.iter().all(|t| t.done) {
            return Ok(());
        }
        if threads.iter().all(|t| t.done || t.at_barrier) {
            threads.iter_mut().for_each(|t| t.at_barrier = false);
            continue;
        }
        return Err(warp::deadlock(ctx, threads));
    }
}

/// Names the function and instruction in an error raised below.
pub(super) fn locate(e: InterpError, d: &Decoded, k: usize) -> InterpError {
    let function = d.function.name.clone();
    let inst = d.insts[k].to_string().trim().to_string();
    match e {
        InterpError::Fault { why, .. } => InterpError::Fault {
            function,
            inst,
            why,
        },
        InterpError::Unsupported { why, .. } => InterpError::Unsupported {
            function,
            inst,
            why,
        },
        e => e,
    }
}

pub(super) fn unsupported(why: &str) -> InterpError {
    InterpError::Unsupported {
        function: String::new(),
        inst: String::new(),
        why: why.to_string(),
    }
}

fn fault(why: String) -> InterpError {
    super::fault(why)
}

impl Thread {
    /// Whether instruction `k`'s guard (if any) lets it run.
    fn guard_holds(&self, ctx: &Ctx, k: usize) -> Result<bool, InterpError> {
        match &ctx.d.insts[k].guard {
            Some(g) => {
                Ok((self.reg(ctx, &g.reg).map_err(|e| locate(e, ctx.d, k))? & 1 == 1) != g.negated)
            }
            None => Ok(true),
        }
    }

    fn reg(&self, ctx: &Ctx, r: &str) -> Result<u64, InterpError> {
        // Declared registers are in `reg_at` by address, then in `reg_ids` by name (typed), but
        // for names built while running.
        let id = match ctx.layout.reg_at.get(&(r.as_ptr() as usize, r.len())) {
            Some(&k) => Some(RegId(k)),
            None => match ctx.layout.reg_ids.get(r) {
                Some(&k) => Some(RegId(k)),
                None => ctx
                    .d
                    .regs
                    .lookup(r)
                    .filter(|&id| ctx.d.regs.reg_type(id).is_some()),
            },
        };
        if let Some(id) = id {
            let k = id.0 as usize;
            if !self.written[k] {
                return ctx
                    .undefined_reads
                    .ok_or_else(|| fault(format!("{r} is read before any instruction writes it")));
            }
            return Ok(self.regs[k]);
        }
        // Block b runs on SM b mod SMS (any SM is a valid placement).
        let block =
            ctx.ctaid[0] + ctx.launch.grid[0] * (ctx.ctaid[1] + ctx.launch.grid[1] * ctx.ctaid[2]);
        match r {
            "%smid" => return Ok(u64::from(block % SMS)),
            "%nsmid" => return Ok(u64::from(SMS)),
            _ => {}
        }
        let (name, dim) = r
            .rsplit_once('.')
            .ok_or_else(|| unsupported(&format!("special register {r}")))?;
        let i = match dim {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            _ => return Err(unsupported(&format!("special register {r}"))),
        };
        Ok(u64::from(match name {
            "%tid" => self.tid[i],
            "%ntid" => ctx.launch.block[i],
            "%ctaid" => ctx.ctaid[i],
            "%nctaid" => ctx.launch.grid[i],
            _ => return Err(unsupported(&format!("special register {r}"))),
        }))
    }

    fn set(&mut self, ctx: &Ctx, r: &str, v: u64) -> Result<(), InterpError> {
        let by_name = || ctx.layout.reg_ids.get(r).copied();
        let id: RegId = match ctx
            .layout
            .reg_at
            .get(&(r.as_ptr() as usize, r.len()))
            .copied()
            .or_else(by_name)
        {
            Some(k) => RegId(k),
            None => ctx
                .d
                .regs
                .lookup(r)
                .filter(|&id| ctx.d.regs.reg_type(id).is_some())
                .ok_or_else(|| fault(format!("{r} is not a declared register")))?,
        };
        self.regs[id.0 as usize] = v;
        self.written[id.0 as usize] = true;
        Ok(())
    }

    /// The value of a source operand as a `ty`.
    pub(super) fn val(&self, ctx: &Ctx, o: &Operand, ty: ValueType) -> Result<u64, InterpError> {
        match o {
            Operand::Reg(r) if r == "%laneid" => {
                let b = ctx.launch.block;
                let linear = self.tid[0] + b[0] * (self.tid[1] + b[1] * self.tid[2]);
                Ok(u64::from(linear % 32))
            }
            Operand::Reg(r) if self.narrow && ty == ValueType::F32 && ctx.d.regs.is_f64(r) => {
                Ok(f32b(f64v(self.reg(ctx, r)?) as f32))
            }
            Operand::Reg(r) => Ok(mask(self.reg(ctx, r)?, ty)),
            Operand::Imm(imm) => Ok(imm_bits(imm, ty)),
            Operand::Not(inner) => Ok(u64::from(self.val(ctx, inner, ty)? == 0)),
            Operand::Symbol(s) => self.symbol(ctx, s),
            _ => Err(unsupported("an operand of this shape")),
        }
    }

    /// The address a variable's name stands for, in its own space.
    fn symbol(&self, ctx: &Ctx, s: &str) -> Result<u64, InterpError> {
        let l = ctx.layout;
        l.global_at
            .get(s)
            .or_else(|| l.shared_at.get(s))
            .or_else(|| l.local_at.get(s))
            .or_else(|| l.param_at.get(s))
            .copied()
            .ok_or_else(|| fault(format!("no variable {s}")))
    }

    fn address(&self, ctx: &Ctx, o: &Operand) -> Result<u64, InterpError> {
        match o {
            Operand::Addr { base, offset } => {
                let b = if base.starts_with('%') {
                    self.reg(ctx, base)?
                } else {
                    self.symbol(ctx, base)?
                };
                Ok(b.wrapping_add(*offset as u64))
            }
            _ => Err(unsupported("an address of this shape")),
        }
    }

    /// The bytes `len` long at `addr` in `space`.
    fn bytes<'b>(
        &'b mut self,
        ctx: &'b mut Ctx,
        space: Space,
        addr: u64,
        len: usize,
    ) -> Result<&'b mut [u8], InterpError> {
        let (space, off) = match space {
            Space::Generic if addr >= LOCAL_BASE => (Space::Local, addr - LOCAL_BASE),
            Space::Generic if addr >= SHARED_BASE => (Space::Shared, addr - SHARED_BASE),
            Space::Generic => (Space::Global, addr),
            s => (s, addr),
        };
        let slice: &mut [u8] = match space {
            Space::Global | Space::Const => {
                let r = ctx.mem.range(off, len)?;
                return Ok(&mut ctx.mem.bytes[r]);
            }
            Space::Shared => ctx.shared,
            Space::Local => &mut self.local,
            Space::Param => return Err(unsupported("a store to parameter space")),
            _ => return Err(unsupported("texture and surface memory")),
        };
        let off = off as usize;
        slice.get_mut(off..off + len).ok_or_else(|| {
            fault(format!(
                "{space:?} address {addr:#x} (+{len}) is out of range"
            ))
        })
    }

    fn load(
        &mut self,
        ctx: &mut Ctx,
        space: Space,
        addr: u64,
        ty: ValueType,
    ) -> Result<u64, InterpError> {
        let w = ty.bytes() as usize;
        let mut b = [0u8; 8];
        if space == Space::Param {
            let p = &ctx.layout.params;
            let src = p
                .get(addr as usize..addr as usize + w)
                .ok_or_else(|| fault(format!("parameter offset {addr} is out of range")))?;
            b[..w].copy_from_slice(src);
        } else {
            b[..w].copy_from_slice(self.bytes(ctx, space, addr, w)?);
        }
        let v = u64::from_le_bytes(b);
        Ok(if ty.is_signed() {
            sext(v, ty.bits()) as u64
        } else {
            v
        })
    }

    fn store(
        &mut self,
        ctx: &mut Ctx,
        space: Space,
        addr: u64,
        ty: ValueType,
        v: u64,
    ) -> Result<(), InterpError> {
        let w = ty.bytes() as usize;
        self.bytes(ctx, space, addr, w)?
            .copy_from_slice(&v.to_le_bytes()[..w]);
        Ok(())
    }

    /// Writes `v` to the destination operand (a register or a vector of them).
    pub(super) fn write(&mut self, ctx: &Ctx, o: &Operand, v: u64) -> Result<(), InterpError> {
        match o {
            Operand::Reg(r) if self.narrow && ctx.d.regs.is_f64(r) => {
                self.set(ctx, r, f64::from(f32v(v)).to_bits())
            }
            Operand::Reg(r) => self.set(ctx, r, v),
            Operand::Symbol(s) if s == "_" => Ok(()),
            _ => Err(unsupported("a destination of this shape")),
        }
    }

    fn step(
        &mut self,
        ctx: &mut Ctx,
        k: usize,
        narrowed: Option<&Op>,
    ) -> Result<Flow, InterpError> {
        let d = ctx.d;
        let inst = d.insts[k];
        let op = narrowed.unwrap_or(&d.ops[k]);
        if let Some(g) = &inst.guard {
            let p = self.reg(ctx, &g.reg)? & 1 == 1;
            if p == g.negated {
                return Ok(Flow::Next);
            }
        }
        let ops = &inst.operands;
        let arg = |j: usize| {
            ops.get(j)
                .ok_or_else(|| fault(format!("operand {j} is missing")))
        };
        let ty = op.ty.unwrap_or(ValueType::B64);
        match &op.kind {
            OpKind::Control(c) => {
                return Ok(match c {
                    Control::Bra => {
                        let to = ctx
                            .d
                            .branch_target(k)
                            .ok_or_else(|| fault("a branch to no label".into()))?;
                        Flow::Jump(to)
                    }
                    Control::Ret | Control::Exit => Flow::Exit,
                    Control::Barrier => Flow::Barrier,
                    Control::Fence => Flow::Next,
                    Control::Brx => return Err(unsupported("indirect branches")),
                    Control::Trap => return Err(fault("trap".into())),
                })
            }
            OpKind::Load(space) => {
                let addr = self.address(ctx, arg(1)?)?;
                let w = u64::from(ty.bytes());
                match arg(0)? {
                    Operand::Vector(regs) => {
                        for (j, r) in regs.iter().enumerate() {
                            let v = self.load(ctx, *space, addr + w * j as u64, ty)?;
                            self.write(ctx, r, v)?;
                        }
                    }
                    dst => {
                        let v = self.load(ctx, *space, addr, ty)?;
                        self.write(ctx, dst, v)?;
                    }
                }
            }
            OpKind::Store(space) => {
                let addr = self.address(ctx, arg(0)?)?;
                let w = u64::from(ty.bytes());
                match arg(1)? {
                    Operand::Vector(vals) => {
                        for (j, o) in vals.iter().enumerate() {
                            let v = self.val(ctx, o, ty)?;
                            self.store(ctx, *space, addr + w * j as u64, ty, v)?;
                        }
                    }
                    o => {
                        let v = self.val(ctx, o, ty)?;
                        self.store(ctx, *space, addr, ty, v)?;
                    }
                }
            }
            OpKind::Atom(space) | OpKind::Red(space) => {
                let is_atom = matches!(op.kind, OpKind::Atom(_));
                let at = usize::from(is_atom);
                let addr = self.address(ctx, arg(at)?)?;
                let old = self.load(ctx, *space, addr, ty)?;
                let b = self.val(ctx, arg(at + 1)?, ty)?;
                let a = op
                    .atomic
                    .ok_or_else(|| unsupported("an atomic without an operation"))?;
                let new = match a {
                    AtomicOp::Cas => {
                        let c = self.val(ctx, arg(at + 2)?, ty)?;
                        if mask(old, ty) == b {
                            c
                        } else {
                            old
                        }
                    }
                    AtomicOp::Exch => b,
                    AtomicOp::Add if ty == ValueType::F32 => f32b(f32v(old) + f32v(b)),
                    AtomicOp::Add if ty == ValueType::F64 => f64b(f64v(old) + f64v(b)),
                    AtomicOp::Inc => {
                        if mask(old, ty) >= b {
                            0
                        } else {
                            old + 1
                        }
                    }
                    AtomicOp::Dec => {
                        if mask(old, ty) == 0 || mask(old, ty) > b {
                            b
                        } else {
                            old - 1
                        }
                    }
                    AtomicOp::Add => int_arith(Arith::Add, old, b, ty),
                    AtomicOp::Min => int_arith(Arith::Min, old, b, ty),
                    AtomicOp::Max => int_arith(Arith::Max, old, b, ty),
                    AtomicOp::And => old & b,
                    AtomicOp::Or => old | b,
                    AtomicOp::Xor => old ^ b,
                };
                self.store(ctx, *space, addr, ty, mask(new, ty))?;
                if is_atom {
                    self.write(ctx, arg(0)?, mask(old, ty))?;
                }
            }
            OpKind::Move { .. } => {
                let v = match (arg(0)?, arg(1)?) {
                    (Operand::Vector(dst), src) => {
                        // Unpack: the low part goes to the first register.
                        let v = self.val(ctx, src, ty)?;
                        let w = ty.bits() / dst.len() as u32;
                        for (j, d) in dst.iter().enumerate() {
                            let part = (v >> (w * j as u32)) & ((1u64 << w) - 1);
                            self.write(ctx, d, part)?;
                        }
                        return Ok(Flow::Next);
                    }
                    (_, Operand::Vector(src)) => {
                        let w = ty.bits() / src.len() as u32;
                        let mut v = 0u64;
                        for (j, s) in src.iter().enumerate() {
                            v |= (self.val(ctx, s, ValueType::B64)? & ((1u64 << w) - 1))
                                << (w * j as u32);
                        }
                        v
                    }
                    (_, src) => self.val(ctx, src, ty)?,
                };
                self.write(ctx, arg(0)?, v)?;
            }
            OpKind::Cvta => {
                let a = self.val(ctx, arg(1)?, ValueType::U64)?;
                let to = inst.has_mod("to");
                let base = match inst.modifiers.iter().find_map(|m| Space::parse(m)) {
                    Some(Space::Shared) => SHARED_BASE,
                    Some(Space::Local) => LOCAL_BASE,
                    Some(Space::Global) | Some(Space::Const) | Some(Space::Param) => 0,
                    _ => return Err(unsupported("cvta of this space")),
                };
                let v = if to { a.wrapping_sub(base) } else { a + base };
                self.write(ctx, arg(0)?, v)?;
            }
            OpKind::Compare(c) => {
                let a = self.val(ctx, arg(1)?, ty)?;
                let b = self.val(ctx, arg(2)?, ty)?;
                let mut p = compare(*c, a, b, ty)?;
                if let Some(comb) = op.combine {
                    let q = self.val(ctx, arg(3)?, ValueType::Pred)? & 1 == 1;
                    p = match comb {
                        BoolOp::And => p && q,
                        BoolOp::Or => p || q,
                        BoolOp::Xor => p ^ q,
                    };
                }
                if !op.is_predicate_compare() {
                    return Err(unsupported("set (a comparison writing a value)"));
                }
                self.write(ctx, arg(0)?, u64::from(p))?;
            }
            OpKind::Select => {
                let p = self.val(ctx, arg(3)?, ValueType::Pred)? & 1 == 1;
                let v = self.val(ctx, arg(if p { 1 } else { 2 })?, ty)?;
                self.write(ctx, arg(0)?, v)?;
            }
            OpKind::Convert { from, to } => {
                let a = self.val(ctx, arg(1)?, *from)?;
                let v = convert(op, a, *from, *to)?;
                self.write(ctx, arg(0)?, v)?;
                (ctx.observe)(&Executed {
                    inst: inst.id,
                    op,
                    sources: &[a],
                    result: v,
                });
            }
            OpKind::Bits(BitOp::Testp) => {
                let x = self.val(ctx, arg(1)?, ty)?;
                let p = testp(inst, x, ty)?;
                self.write(ctx, arg(0)?, u64::from(p))?;
            }
            OpKind::Bits(BitOp::Bfi) => {
                let a = self.val(ctx, arg(1)?, ty)?;
                let b = self.val(ctx, arg(2)?, ty)?;
                let pos = self.val(ctx, arg(3)?, ValueType::U32)? & 0xff;
                let len = self.val(ctx, arg(4)?, ValueType::U32)? & 0xff;
                let v = bit_field_insert(a, b, pos, len, ty.bits());
                self.write(ctx, arg(0)?, v)?;
            }
            OpKind::Call => return Err(unsupported("calls")),
            // Run for a warp's lanes together (`super::warp`), never one lane alone.
            OpKind::Warp(_) => return Err(fault("a warp instruction run by one lane".into())),
            OpKind::Other(_) => {
                return Err(unsupported("an instruction this crate does not decode"))
            }
            _ => {
                let mut srcs = [0u64; 3];
                for (j, s) in srcs
                    .iter_mut()
                    .enumerate()
                    .take(ops.len().saturating_sub(1))
                {
                    // The addend of a wide multiply-add is as wide as the product.
                    let t = if j == 2 && op.part == Some(Part::Wide) {
                        ValueType::B64
                    } else {
                        ty
                    };
                    *s = self.val(ctx, &ops[j + 1], t)?;
                }
                let v = compute(op, srcs, ty)?;
                self.write(ctx, arg(0)?, v)?;
                (ctx.observe)(&Executed {
                    inst: inst.id,
                    op,
                    sources: &srcs[..ops.len().saturating_sub(1).min(3)],
                    result: v,
                });
            }
        }
        Ok(Flow::Next)
    }
}

/// The f32 form of an f64 operation (types f64 → f32).
fn narrow_op(op: &Op) -> Op {
    let n = |t: ValueType| {
        if t == ValueType::F64 {
            ValueType::F32
        } else {
            t
        }
    };
    let mut o = op.clone();
    o.ty = o.ty.map(n);
    if let OpKind::Convert { from, to } = o.kind {
        o.kind = OpKind::Convert {
            from: n(from),
            to: n(to),
        };
    }
    o
}

fn int_arith(a: Arith, x: u64, y: u64, ty: ValueType) -> u64 {
    let bits = ty.bits();
    let (sx, sy) = (sext(x, bits), sext(y, bits));
    let r = match a {
        Arith::Add => x.wrapping_add(y),
        Arith::Sub => x.wrapping_sub(y),
        Arith::Min if ty.is_signed() => sx.min(sy) as u64,
        Arith::Max if ty.is_signed() => sx.max(sy) as u64,
        Arith::Min => mask(x, ty).min(mask(y, ty)),
        Arith::Max => mask(x, ty).max(mask(y, ty)),
        _ => 0,
    };
    mask(r, ty)
}

/// Arithmetic and bit operations with up to three sources.
fn compute(op: &Op, s: [u64; 3], ty: ValueType) -> Result<u64, InterpError> {
    if op.is_float() {
        return float_op(op, s, ty);
    }
    let bits = ty.bits();
    let signed = ty.is_signed();
    let (a, b, c) = (s[0], s[1], s[2]);
    let wide = |x: u64, y: u64| -> i128 {
        if signed {
            i128::from(sext(x, bits)) * i128::from(sext(y, bits))
        } else {
            i128::from(mask(x, ty)) * i128::from(mask(y, ty))
        }
    };
    let product = |x: u64, y: u64| -> u64 {
        let p = wide(x, y);
        match op.part {
            Some(Part::Hi) => (p >> bits) as u64,
            Some(Part::Wide) => p as u64,
            _ => p as u64,
        }
    };
    let out_ty = match op.part {
        Some(Part::Wide) => match bits {
            16 => ValueType::B32,
            _ => ValueType::B64,
        },
        _ => ty,
    };
    let r = match &op.kind {
        OpKind::Arith(Arith::Add | Arith::Sub) if op.sat && signed => {
            let (x, y) = (i64::from(sext(a, 32) as i32), i64::from(sext(b, 32) as i32));
            let v = if op.kind == OpKind::Arith(Arith::Add) {
                x + y
            } else {
                x - y
            };
            v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u64
        }
        OpKind::Arith(x @ (Arith::Add | Arith::Sub | Arith::Min | Arith::Max)) => {
            int_arith(*x, a, b, ty)
        }
        OpKind::Arith(Arith::Mul) => product(a, b),
        OpKind::Arith(Arith::Mad) => product(a, b).wrapping_add(c),
        OpKind::Arith(Arith::Neg) => (sext(a, bits).wrapping_neg()) as u64,
        OpKind::Arith(Arith::Abs) => sext(a, bits).unsigned_abs(),
        OpKind::Arith(Arith::IntDiv | Arith::Rem) => {
            if mask(b, ty) == 0 {
                return Err(fault("integer division by zero (undefined in PTX)".into()));
            }
            let div = op.kind == OpKind::Arith(Arith::IntDiv);
            if signed {
                let (x, y) = (sext(a, bits), sext(b, bits));
                (if div {
                    x.wrapping_div(y)
                } else {
                    x.wrapping_rem(y)
                }) as u64
            } else {
                let (x, y) = (mask(a, ty), mask(b, ty));
                if div {
                    x / y
                } else {
                    x % y
                }
            }
        }
        OpKind::Bits(bop) => {
            let shift = (b & 0xffff_ffff).min(u64::from(bits));
            match bop {
                BitOp::And => a & b,
                BitOp::Or => a | b,
                BitOp::Xor => a ^ b,
                BitOp::Not if ty == ValueType::Pred => u64::from(a & 1 == 0),
                BitOp::Not => !a,
                BitOp::Cnot => u64::from(mask(a, ty) == 0),
                BitOp::Shl if shift >= u64::from(bits) => 0,
                BitOp::Shl => a << shift,
                BitOp::Shr if signed => (sext(a, bits) >> shift.min(u64::from(bits) - 1)) as u64,
                BitOp::Shr if shift >= u64::from(bits) => 0,
                BitOp::Shr => mask(a, ty) >> shift,
                BitOp::Popc => u64::from(mask(a, ty).count_ones()),
                BitOp::Clz => u64::from(mask(a, ty).leading_zeros() - (64 - bits)),
                BitOp::Brev => mask(a, ty).reverse_bits() >> (64 - bits),
                // The most significant bit that differs from the sign (signed) or is set;
                // all ones when there is none.
                BitOp::Bfind | BitOp::BfindShiftAmount => {
                    let v = if signed && sext(a, bits) < 0 { !a } else { a };
                    match mask(v, ty) {
                        0 => u64::from(u32::MAX),
                        v if *bop == BitOp::Bfind => u64::from(63 - v.leading_zeros()),
                        v => u64::from(v.leading_zeros() - (64 - bits)),
                    }
                }
                _ => return Err(unsupported("this bit operation")),
            }
        }
        _ => return Err(unsupported("this operation on integers")),
    };
    Ok(mask(r, out_ty))
}

/// Float arithmetic, correctly rounded.
fn float_op(op: &Op, s: [u64; 3], ty: ValueType) -> Result<u64, InterpError> {
    if approx::is_modelled(op, ty) {
        return Ok(f64b(approx::rcp_approx_ftz_f64(f64v(s[0]))));
    }
    if !op.is_ieee() {
        return Err(unsupported(
            "approximate arithmetic: its result is the hardware's, not an IEEE rounding",
        ));
    }
    let mode = Mode::of(op.rounding).ok_or_else(|| unsupported("this rounding modifier"))?;
    match ty {
        ValueType::F64 => {
            let (a, b, c) = (f64v(s[0]), f64v(s[1]), f64v(s[2]));
            let finite = [a, b, c].iter().all(|x| x.is_finite());
            let r = match &op.kind {
                OpKind::Arith(Arith::Add) => round::add(a, b),
                OpKind::Arith(Arith::Sub) => round::add(a, -b),
                OpKind::Arith(Arith::Mul) => round::mul(a, b),
                OpKind::Fma => round::fma(a, b, c),
                OpKind::Div => round::div(a, b),
                OpKind::Rcp => round::div(1.0, a),
                OpKind::Sqrt => round::sqrt(a),
                OpKind::Arith(Arith::Neg) => return Ok((-a).to_bits()),
                OpKind::Arith(Arith::Abs) => return Ok(a.abs().to_bits()),
                OpKind::Arith(Arith::Min) => return Ok(f64b(a.min(b))),
                OpKind::Arith(Arith::Max) => return Ok(f64b(a.max(b))),
                OpKind::Bits(BitOp::Copysign) => return Ok(b.copysign(a).to_bits()),
                OpKind::Bits(BitOp::Testp) => return Err(unsupported("testp")),
                _ => return Err(unsupported("this f64 operation")),
            };
            Ok(f64b(round::to_f64(r, mode, finite)))
        }
        ValueType::F32 => {
            let ftz = |x: f32| if op.ftz { flush(x) } else { x };
            let (a, b, c) = (ftz(f32v(s[0])), ftz(f32v(s[1])), ftz(f32v(s[2])));
            let (x, y, z) = (f64::from(a), f64::from(b), f64::from(c));
            let r = match &op.kind {
                OpKind::Arith(Arith::Add) => round::add(x, y),
                OpKind::Arith(Arith::Sub) => round::add(x, -y),
                OpKind::Arith(Arith::Mul) => round::mul(x, y),
                // The product of two f32 is exact in f64; the sum then carries an exact error.
                OpKind::Fma => round::add(x * y, z),
                OpKind::Div => round::div(x, y),
                OpKind::Rcp => round::div(1.0, x),
                OpKind::Sqrt => round::sqrt(x),
                OpKind::Arith(Arith::Neg) => return Ok(u64::from((-a).to_bits())),
                OpKind::Arith(Arith::Abs) => return Ok(u64::from(a.abs().to_bits())),
                OpKind::Arith(Arith::Min) => return Ok(f32b(a.min(b))),
                OpKind::Arith(Arith::Max) => return Ok(f32b(a.max(b))),
                OpKind::Bits(BitOp::Copysign) => return Ok(u64::from(b.copysign(a).to_bits())),
                _ => return Err(unsupported("this f32 operation")),
            };
            let mut v = round::to_f32(r, mode);
            if op.ftz {
                v = flush(v);
            }
            if op.sat {
                v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
            }
            Ok(f32b(v))
        }
        _ => Err(unsupported("arithmetic on this float type")),
    }
}

fn compare(c: Cmp, a: u64, b: u64, ty: ValueType) -> Result<bool, InterpError> {
    use std::cmp::Ordering::*;
    if ty.is_float() {
        let (x, y) = match ty {
            ValueType::F32 => (f64::from(f32v(a)), f64::from(f32v(b))),
            ValueType::F64 => (f64v(a), f64v(b)),
            _ => return Err(unsupported("comparisons of this float type")),
        };
        let unordered = x.is_nan() || y.is_nan();
        let ord = x.partial_cmp(&y);
        return Ok(match c {
            Cmp::Eq => ord == Some(Equal),
            Cmp::Ne => !unordered && ord != Some(Equal),
            Cmp::Lt => ord == Some(Less),
            Cmp::Le => matches!(ord, Some(Less | Equal)),
            Cmp::Gt => ord == Some(Greater),
            Cmp::Ge => matches!(ord, Some(Greater | Equal)),
            Cmp::Equ => unordered || ord == Some(Equal),
            Cmp::Neu => unordered || ord != Some(Equal),
            Cmp::Ltu => unordered || ord == Some(Less),
            Cmp::Leu => unordered || matches!(ord, Some(Less | Equal)),
            Cmp::Gtu => unordered || ord == Some(Greater),
            Cmp::Geu => unordered || matches!(ord, Some(Greater | Equal)),
            Cmp::Num => !unordered,
            Cmp::Nan => unordered,
            _ => return Err(unsupported("an unsigned comparison of floats")),
        });
    }
    let bits = ty.bits();
    let ord = if ty.is_signed() {
        sext(a, bits).cmp(&sext(b, bits))
    } else {
        mask(a, ty).cmp(&mask(b, ty))
    };
    let (ua, ub) = (mask(a, ty), mask(b, ty));
    Ok(match c {
        Cmp::Eq => ord == Equal,
        Cmp::Ne => ord != Equal,
        Cmp::Lt => ord == Less,
        Cmp::Le => ord != Greater,
        Cmp::Gt => ord == Greater,
        Cmp::Ge => ord != Less,
        Cmp::Lo => ua < ub,
        Cmp::Ls => ua <= ub,
        Cmp::Hi => ua > ub,
        Cmp::Hs => ua >= ub,
        _ => return Err(unsupported("a float comparison of integers")),
    })
}

/// `cvt`: between integer widths, between floats, and across.
fn convert(op: &Op, a: u64, from: ValueType, to: ValueType) -> Result<u64, InterpError> {
    let float = |t: ValueType| matches!(t, ValueType::F32 | ValueType::F64);
    if (from.is_float() && !float(from)) || (to.is_float() && !float(to)) {
        return Err(unsupported("conversions of f16, bf16, tf32 and fp8"));
    }
    let as_f64 = |t: ValueType, v: u64| -> f64 {
        match t {
            ValueType::F32 => {
                let x = f32v(v);
                f64::from(if op.ftz { flush(x) } else { x })
            }
            _ => f64v(v),
        }
    };
    let finish32 = |x: f32| -> u64 {
        let mut x = if op.ftz { flush(x) } else { x };
        if op.sat {
            x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
        }
        f32b(x)
    };
    let finish64 = |x: f64| -> u64 {
        let x = if op.sat {
            if x.is_nan() {
                0.0
            } else {
                x.clamp(0.0, 1.0)
            }
        } else {
            x
        };
        f64b(x)
    };
    match (float(from), float(to)) {
        (true, true) => {
            let x = as_f64(from, a);
            match op.rounding {
                Some(r) if r.is_integral() => {
                    let y = round_integral(x, r);
                    Ok(if to == ValueType::F32 {
                        finish32(y as f32)
                    } else {
                        finish64(y)
                    })
                }
                r => {
                    if to == ValueType::F32 {
                        let mode = Mode::of(r).ok_or_else(|| unsupported("this rounding"))?;
                        Ok(finish32(round::to_f32(round::exact(x), mode)))
                    } else {
                        Ok(finish64(x))
                    }
                }
            }
        }
        (true, false) => {
            // Float to integer: round to an integer, saturate to the type's range, NaN → 0.
            let x = as_f64(from, a);
            let r = op.rounding.unwrap_or(crate::op::Rounding::Rzi);
            if !r.is_integral() {
                return Err(unsupported(
                    "a float-to-integer cvt without .rni/.rzi/.rmi/.rpi",
                ));
            }
            let y = round_integral(x, r);
            let bits = to.bits();
            let v = if y.is_nan() {
                0
            } else if to.is_signed() {
                let lo = -(2f64.powi(bits as i32 - 1));
                let hi = 2f64.powi(bits as i32 - 1) - 1.0;
                (y.clamp(lo, hi) as i64) as u64
            } else {
                let hi = 2f64.powi(bits as i32) - 1.0;
                y.clamp(0.0, hi) as u64
            };
            Ok(mask(v, to))
        }
        (false, true) => {
            let mode = Mode::of(op.rounding).ok_or_else(|| unsupported("this rounding"))?;
            let bits = from.bits();
            // Integers beyond 2^53 are split into an exact high part and a remainder.
            let (hi, lo) = if from.is_signed() {
                let v = sext(a, bits);
                ((v >> 11 << 11) as f64, (v & 0x7ff) as f64)
            } else {
                let v = mask(a, from);
                ((v >> 11 << 11) as f64, (v & 0x7ff) as f64)
            };
            let r = round::add(hi, lo);
            Ok(if to == ValueType::F32 {
                finish32(round::to_f32(r, mode))
            } else {
                finish64(round::to_f64(r, mode, true))
            })
        }
        (false, false) => {
            let v = if from.is_signed() {
                sext(a, from.bits()) as u64
            } else {
                mask(a, from)
            };
            if op.sat {
                return Err(unsupported("saturating integer conversions"));
            }
            Ok(mask(v, to))
        }
    }
}

fn round_integral(x: f64, r: crate::op::Rounding) -> f64 {
    use crate::op::Rounding::*;
    match r {
        Rni => x.round_ties_even(),
        Rzi => x.trunc(),
        Rmi => x.floor(),
        _ => x.ceil(),
    }
}
