//! Reduced outputs on the GPU (`mc_reduce` in `cuda/compare.cu`): the value
//! [`crate::compare::reduce`] computes on the host, with a few words coming back instead of the
//! whole output. Sums (and the sum of squares under `norm2`) are exact in limbs and rounded once
//! here; the rare case the kernel cannot make exact (squares that overflow or underflow, more
//! elements than the limbs hold) is reduced on the host from a download: slower, never different.

use super::{dtype_code, DeviceComparer, Side, MAX_ELEMENTS};
use crate::compare::reduce;
use crate::spec::Reduce;
use mantissa_gpu::{DType, Gpu, GpuError, HostData, KernelArg, LaunchDims, Scalar};
use mantissa_num::big::{self, round_limbs, Big, EXACT_NAN};

/// `compare.cu`'s operations and words.
const MR_SUM: i32 = 0;
const MR_MINMAX: i32 = 1;
const MR_NORM2: i32 = 2;
const MR_HOST: u64 = 0x100;
const LIMBS: usize = 67;
const MR_WORDS: usize = 3 + LIMBS;

/// The double whose order key (`mr_key`) is `key`.
fn from_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

impl DeviceComparer {
    /// `side`'s elements reduced by `op`, equal to [`crate::compare::reduce`] of them (with
    /// −0.0 the minimum of ±0 and +0.0 their maximum). Queued after the work already on the
    /// stream; waits for its few words.
    pub fn reduce(&mut self, gpu: &Gpu, side: Side, op: Reduce) -> Result<f64, GpuError> {
        let n = side.view.len;
        if !side.fits() {
            return Err(GpuError::BadBuffer {
                what: format!("reduced output '{}'", side.buffer.name()),
                problem: format!(
                    "a view of {n} elements (offset {}, stride {}) outside a buffer of {}",
                    side.view.offset,
                    side.view.stride,
                    side.buffer.len()
                ),
            });
        }
        if n > MAX_ELEMENTS {
            return Ok(reduce(op, &side.download(gpu)?));
        }
        let code = match op {
            Reduce::Sum | Reduce::Mean => MR_SUM,
            Reduce::Min | Reduce::Max => MR_MINMAX,
            Reduce::Norm2 => MR_NORM2,
        };
        if self.reduced.is_none() {
            self.reduced =
                Some(gpu.alloc_zeros("mantissa-compare#reduced", DType::U64, MR_WORDS)?);
        }
        let Some(out) = &self.reduced else {
            return Ok(f64::NAN);
        };
        gpu.launch(
            &self.module,
            "mc_reduce_reset",
            LaunchDims::new((1, 1, 1), (128, 1, 1)),
            &[KernelArg::Buffer(out)],
        )?;
        if n > 0 {
            gpu.launch(
                &self.module,
                "mc_reduce",
                LaunchDims::new(((n.div_ceil(256).min(1024)) as u32, 1, 1), (256, 1, 1)),
                &[
                    KernelArg::Buffer(side.buffer),
                    KernelArg::Scalar(Scalar::I32(dtype_code(side.buffer.dtype()))),
                    KernelArg::Scalar(Scalar::U64(side.view.offset as u64)),
                    KernelArg::Scalar(Scalar::U64(side.view.stride as u64)),
                    KernelArg::Scalar(Scalar::U64(n as u64)),
                    KernelArg::Scalar(Scalar::I32(code)),
                    KernelArg::Buffer(out),
                ],
            )?;
        }
        let HostData::U64(w) = gpu.download(out)? else {
            return Err(GpuError::BadBuffer {
                what: "the reduction's words".into(),
                problem: "not u64 (an internal error)".into(),
            });
        };
        if w[0] & MR_HOST != 0 {
            return Ok(reduce(op, &side.download(gpu)?));
        }
        let flags = w[0] as u32;
        if flags & EXACT_NAN != 0 {
            return Ok(f64::NAN);
        }
        let limbs: Vec<i64> = w[3..3 + LIMBS].iter().map(|&l| l as i64).collect();
        Ok(match op {
            Reduce::Sum => round_limbs(&limbs, flags, n),
            Reduce::Norm2 => round_limbs(&limbs, flags, n).sqrt(),
            Reduce::Mean if n == 0 => f64::NAN,
            Reduce::Mean => match exact_value(&limbs, flags) {
                // As compare.rs: the exact sum and n at 128 bits, one rounding of the quotient.
                Some(s) => big::to_f64(
                    &(big::with_bits(s, 128) / big::with_bits(big::exact(n as f64), 128)),
                ),
                None => round_limbs(&limbs, flags, n) / n as f64,
            },
            Reduce::Min if w[1] == u64::MAX => f64::INFINITY,
            Reduce::Max if w[2] == 0 => f64::NEG_INFINITY,
            Reduce::Min => from_key(w[1]),
            Reduce::Max => from_key(w[2]),
        })
    }
}

/// The exact sum the limbs hold (limb k counts 2^(32k − 1074)), or `None` when an infinity
/// was seen (as `ExactSum::to_big`).
fn exact_value(limbs: &[i64], flags: u32) -> Option<Big> {
    use mantissa_num::big::{EXACT_NEG_INF, EXACT_POS_INF};
    if flags & (EXACT_POS_INF | EXACT_NEG_INF) != 0 {
        return None;
    }
    let m = limbs
        .iter()
        .enumerate()
        .fold(dashu_int::IBig::ZERO, |m, (k, &l)| {
            m + (dashu_int::IBig::from(l) << (32 * k))
        });
    Some(Big::from_parts(m, -1074))
}
