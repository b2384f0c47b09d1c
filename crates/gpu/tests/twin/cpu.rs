//! The CPU side: each twin operation as a call into mantissa-num, generic over the base format so
//! that the same table runs over `f32`, `f64` and the flush-to-zero models [`Ftz32`].

use crate::ftz::Ftz32;
use mantissa_gpu::twin::{TwinOp, TwinType};
use mantissa_num::base::Base;
use mantissa_num::comp::{Comp, CompNorm};
use mantissa_num::eft;
use mantissa_num::{DoubleWord, Real};

/// A word type of the GPU buffers (`f32`, `f64`) and the base formats that model it on the CPU.
pub trait Word: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const BITS: u32;
    fn to_bits_u64(self) -> u64;
    fn from_bits_u64(b: u64) -> Self;
    fn is_nan_word(self) -> bool;
    fn dtype() -> mantissa_gpu::DType;
    fn to_host(v: Vec<Self>) -> mantissa_gpu::HostData;
    fn from_host(h: mantissa_gpu::HostData) -> Option<Vec<Self>>;
}

impl Word for f32 {
    const BITS: u32 = 32;
    fn to_bits_u64(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_bits_u64(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    fn is_nan_word(self) -> bool {
        f32::is_nan(self)
    }
    fn dtype() -> mantissa_gpu::DType {
        mantissa_gpu::DType::F32
    }
    fn to_host(v: Vec<Self>) -> mantissa_gpu::HostData {
        mantissa_gpu::HostData::F32(v)
    }
    fn from_host(h: mantissa_gpu::HostData) -> Option<Vec<Self>> {
        match h {
            mantissa_gpu::HostData::F32(v) => Some(v),
            _ => None,
        }
    }
}

impl Word for f64 {
    const BITS: u32 = 64;
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    fn from_bits_u64(b: u64) -> Self {
        f64::from_bits(b)
    }
    fn is_nan_word(self) -> bool {
        f64::is_nan(self)
    }
    fn dtype() -> mantissa_gpu::DType {
        mantissa_gpu::DType::F64
    }
    fn to_host(v: Vec<Self>) -> mantissa_gpu::HostData {
        mantissa_gpu::HostData::F64(v)
    }
    fn from_host(h: mantissa_gpu::HostData) -> Option<Vec<Self>> {
        match h {
            mantissa_gpu::HostData::F64(v) => Some(v),
            _ => None,
        }
    }
}

/// A base format that computes on words of type `W`, bit for bit.
pub trait Model<W: Word>: Base {
    fn wrap(w: W) -> Self;
    fn unwrap(self) -> W;
}

impl Model<f32> for f32 {
    fn wrap(w: f32) -> Self {
        w
    }
    fn unwrap(self) -> f32 {
        self
    }
}

impl Model<f64> for f64 {
    fn wrap(w: f64) -> Self {
        w
    }
    fn unwrap(self) -> f64 {
        self
    }
}

impl<const B: bool> Model<f32> for Ftz32<B> {
    fn wrap(w: f32) -> Self {
        Ftz32(w)
    }
    fn unwrap(self) -> f32 {
        self.0
    }
}

/// One element: the pair `a`, the pair `b` (or its first word), the integer `k` -> two words.
/// Arguments and results follow the kernels' [`mantissa_gpu::twin::Shape`].
pub type CpuFn<F> = fn([F; 2], [F; 2], i32) -> [F; 2];

fn dw<F: Base>(p: [F; 2]) -> DoubleWord<F> {
    DoubleWord::from_parts(p[0], p[1])
}
fn of_dw<F: Base>(d: DoubleWord<F>) -> [F; 2] {
    [d.hi, d.lo]
}
fn comp<F: Base>(p: [F; 2]) -> Comp<F> {
    Comp::new(p[0], p[1])
}
fn of_comp<F: Base>(c: Comp<F>) -> [F; 2] {
    [c.value, c.error]
}
fn compn<F: Base>(p: [F; 2]) -> CompNorm<F> {
    CompNorm::new(p[0], p[1])
}
fn of_compn<F: Base>(c: CompNorm<F>) -> [F; 2] {
    [c.value, c.error]
}

/// The mantissa-num function a twin kernel must match, or `None` if the table lacks it.
pub fn cpu_fn<F: Base>(op: &TwinOp) -> Option<CpuFn<F>> {
    use TwinType::*;
    let f: CpuFn<F> = match (op.ty, op.name) {
        (F32 | F64, "two_sum") => |a, b, _| eft::two_sum(a[0], b[0]).into(),
        (F32 | F64, "fast_two_sum") => |a, b, _| eft::fast_two_sum(a[0], b[0]).into(),
        (F32 | F64, "two_diff") => |a, b, _| eft::two_diff(a[0], b[0]).into(),
        (F32 | F64, "two_prod") => |a, b, _| eft::two_prod(a[0], b[0]).into(),
        (F32 | F64, "two_prod_dekker") => |a, b, _| eft::two_prod_dekker(a[0], b[0]).into(),
        (F32 | F64, "split") => |a, _, _| eft::split(a[0]).into(),

        (F32x2 | F64x2, "from_sum") => |a, b, _| of_dw(DoubleWord::from_sum(a[0], b[0])),
        (F32x2 | F64x2, "from_product") => |a, b, _| of_dw(DoubleWord::from_product(a[0], b[0])),
        (F32x2 | F64x2, "add") => |a, b, _| of_dw(dw(a).add(dw(b))),
        (F32x2 | F64x2, "sub") => |a, b, _| of_dw(dw(a).sub(dw(b))),
        (F32x2 | F64x2, "add_sloppy") => |a, b, _| of_dw(dw(a).add_sloppy(dw(b))),
        (F32x2 | F64x2, "add_fast") => |a, b, _| of_dw(dw(a).add_fast(dw(b))),
        (F32x2 | F64x2, "add_base") => |a, b, _| of_dw(dw(a).add_base(b[0])),
        (F32x2 | F64x2, "sub_base") => |a, b, _| of_dw(dw(a).sub_base(b[0])),
        (F32x2 | F64x2, "mul") => |a, b, _| of_dw(dw(a).mul(dw(b))),
        (F32x2 | F64x2, "mul_seed") => |a, b, _| of_dw(dw(a).mul_seed(dw(b))),
        (F32x2 | F64x2, "mul_fast") => |a, b, _| of_dw(dw(a).mul_fast(dw(b))),
        (F32x2 | F64x2, "mul_base") => |a, b, _| of_dw(dw(a).mul_base(b[0])),
        (F32x2 | F64x2, "div") => |a, b, _| of_dw(dw(a).div(dw(b))),
        (F32x2 | F64x2, "div_dw2") => |a, b, _| of_dw(dw(a).div_dw2(dw(b))),
        (F32x2 | F64x2, "div_seed") => |a, b, _| of_dw(dw(a).div_seed(dw(b))),
        (F32x2 | F64x2, "div_base") => |a, b, _| of_dw(dw(a).div_base(b[0])),
        (F32x2 | F64x2, "sqrt") => |a, _, _| of_dw(dw(a).sqrt()),
        (F32x2 | F64x2, "neg") => |a, _, _| of_dw(-dw(a)),
        (F32x2 | F64x2, "abs") => |a, _, _| of_dw(dw(a).abs()),
        (F32x2 | F64x2, "scale2") => |a, _, k| of_dw(dw(a).scale2(k)),

        (Comp32 | Comp64, "add") => |a, b, _| of_comp(comp(a) + comp(b)),
        (Comp32 | Comp64, "sub") => |a, b, _| of_comp(comp(a) - comp(b)),
        (Comp32 | Comp64, "mul") => |a, b, _| of_comp(comp(a) * comp(b)),
        (Comp32 | Comp64, "div") => |a, b, _| of_comp(comp(a) / comp(b)),
        (Comp32 | Comp64, "sqrt") => |a, _, _| of_comp(comp(a).sqrt()),
        (Comp32 | Comp64, "abs") => |a, _, _| of_comp(comp(a).abs()),
        (Comp32 | Comp64, "neg") => |a, _, _| of_comp(-comp(a)),
        (Comp32 | Comp64, "normalized") => |a, _, _| of_comp(comp(a).normalized()),
        (Comp32 | Comp64, "collapse") => |a, _, _| [comp(a).collapse(), F::ZERO],

        (Comp32n | Comp64n, "add") => |a, b, _| of_compn(compn(a) + compn(b)),
        (Comp32n | Comp64n, "sub") => |a, b, _| of_compn(compn(a) - compn(b)),
        (Comp32n | Comp64n, "mul") => |a, b, _| of_compn(compn(a) * compn(b)),
        (Comp32n | Comp64n, "div") => |a, b, _| of_compn(compn(a) / compn(b)),
        (Comp32n | Comp64n, "sqrt") => |a, _, _| of_compn(Real::sqrt(&compn(a))),
        (Comp32n | Comp64n, "abs") => |a, _, _| of_compn(Real::abs(&compn(a))),
        (Comp32n | Comp64n, "neg") => |a, _, _| of_compn(-compn(a)),
        _ => return None,
    };
    Some(f)
}

/// Runs `f` over every element, on all cores. Also says for each element whether the [`Ftz32`]
/// model flushed anything while computing it (never, for `f32` and `f64`).
pub fn eval<W: Word, F: Model<W>>(f: CpuFn<F>, a: &[W], b: &[W], k: &[i32]) -> (Vec<W>, Vec<bool>) {
    let n = k.len();
    let mut out = vec![a[0]; 2 * n];
    let mut flushed = vec![false; n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let chunks = out.chunks_mut(2 * chunk).zip(flushed.chunks_mut(chunk));
        for (c, (out, flushed)) in chunks.enumerate() {
            s.spawn(move || {
                let _ = crate::ftz::take_flushes();
                for (j, fl) in flushed.iter_mut().enumerate() {
                    let i = c * chunk + j;
                    let x = [F::wrap(a[2 * i]), F::wrap(a[2 * i + 1])];
                    let y = [F::wrap(b[2 * i]), F::wrap(b[2 * i + 1])];
                    let r = f(x, y, k[i]);
                    out[2 * j] = r[0].unwrap();
                    out[2 * j + 1] = r[1].unwrap();
                    *fl = crate::ftz::take_flushes() > 0;
                }
            });
        }
    });
    (out, flushed)
}
