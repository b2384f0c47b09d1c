//! Outputs compared on the GPU: the same [`Comparison`] that [`crate::compare::compare`] makes
//! on the host, equal field for field, with only a summary (and the rare undecided element)
//! coming back.
//!
//! `cuda/compare.cuh` decides each element with doubles alone, exactly (its header says how);
//! an element doubles cannot decide (a relative error within 2^-99 of a rounding boundary, a
//! value within 2^-96 of a decimal grid point far from 10^0) comes back as (index, value,
//! reference) and is measured here by `compare.rs` itself. `cuda/compare.cu` reduces the rest
//! with integer atomics: counts, first indices, maxima on the bits, and the relative errors'
//! exact sum in limbs (`crates/study/cuda/exact_sum.cu`), from which the mean is the exact sum
//! rounded once over n, as `compare.rs` defines it. More undecided elements than the buffer holds
//! ([`UNDECIDED_CAPACITY`]), or more than 2^30 elements (where the limbs could overflow), and the
//! comparison runs on the host instead: slower, never different.

use crate::compare::{format_of, mean, pair, Comparison, Pair, Tally};
use crate::data::to_f64;
use crate::spec::View;
use dashu_int::ops::BitTest;
use dashu_int::{IBig, UBig};
use mantissa_gpu::{
    twin, DType, DeviceBuffer, FlagSet, Gpu, GpuError, HostData, KernelArg, LaunchDims, Module,
    Scalar, Source,
};
use mantissa_num::big::round_scaled_to_f64;

/// One element of the comparison (`compare.cuh`).
pub const COMPARE_CUH: &str = include_str!("../cuda/compare.cuh");
/// The reduction kernels (`compare.cu`).
pub const COMPARE_CU: &str = include_str!("../cuda/compare.cu");
/// The exact sum's limbs, shared with the study's GPU reductions.
const EXACT_SUM_CU: &str = include_str!("../../study/cuda/exact_sum.cu");

/// The smallest and largest power of ten in the table (`MC_Q_MIN`, `MC_Q_MAX`).
pub const Q_MIN: i32 = -400;
/// See [`Q_MIN`].
pub const Q_MAX: i32 = 400;
/// Words of one summary (`MC_WORDS`): 16 fields, then the exact sum's 67 limbs.
pub const WORDS: usize = 16 + LIMBS;
const LIMBS: usize = 67;
/// Undecided elements one comparison can hand back before it falls back to the host.
pub const UNDECIDED_CAPACITY: usize = 4096;
/// The most elements the GPU compares (the limbs stay exact below 2^31 additions each).
pub const MAX_ELEMENTS: usize = 1 << 30;

// Summary words (compare.cu's MC_W_*).
const W_DIFFERING: usize = 0;
const W_NONFINITE: usize = 1;
const W_FIRST_NONFINITE: usize = 2;
const W_MAX_ABS: usize = 3;
const W_MAX_REL: usize = 4;
const W_MAX_ULPS: usize = 5;
const W_WORST: usize = 6;
const W_COUNTED: usize = 7;
const W_UNDECIDED: usize = 8;
const W_EXACT_FLAGS: usize = 9;
const W_LIMBS: usize = 16;
// exact_sum.cu's flag for an infinite term.
const EXACT_POS_INF: u64 = 2;

/// The whole module's source: the twin header, the exact sum, the element, the kernels.
pub fn source() -> Source {
    Source::new(
        "mantissa_compare.cu",
        format!(
            "{}\n{}\n{}\n{}",
            twin::HEADER,
            EXACT_SUM_CU,
            COMPARE_CUH,
            COMPARE_CU
        ),
    )
}

/// The flags the module is built with: `strict` (no FMA contraction; the code writes its FMAs).
pub const FLAGS: FlagSet = FlagSet::STRICT;

/// `compare.cuh`'s number for an element type.
pub fn dtype_code(d: DType) -> i32 {
    match d {
        DType::F64 => 0,
        DType::F32 => 1,
        DType::F16 => 2,
        DType::BF16 => 3,
        DType::I32 => 4,
        DType::I64 => 5,
        DType::U8 => 6,
        DType::U32 => 7,
        DType::U64 => 8,
    }
}

/// (p, emin) of the output's format for ulps; p = 0 for integers.
pub fn format_params(d: DType) -> (i32, i32) {
    format_of(d).map_or((0, 0), |(p, emin)| (p as i32, emin))
}

/// 10^q for q in [Q_MIN, Q_MAX] as (mh, ml, k): 10^q = (mh + ml) 2^k within 2^-106 relative,
/// mh in [1, 2], ml = 0 exactly when 10^q is a double (0 <= q <= 22). Exact integer arithmetic:
/// 10^q (or 2^(b+200) / 10^-q, truncated) is rounded to mh, and the rest to ml.
pub fn pow10_table() -> Vec<f64> {
    const EXTRA: usize = 200;
    let mut out = Vec::with_capacity(3 * (Q_MAX - Q_MIN + 1) as usize);
    for q in Q_MIN..=Q_MAX {
        let u = UBig::from(10u8).pow(q.unsigned_abs() as usize);
        let b = u.bit_len() as isize;
        let p = IBig::from(u);
        // s * 2^-scale = M in [1, 2), to at least EXTRA bits.
        let (s, k, scale) = if q >= 0 {
            (p.clone(), b - 1, b - 1)
        } else if b == 1 {
            (IBig::ONE, 0, 0)
        } else {
            (
                (IBig::ONE << (b as usize + EXTRA)) / &p,
                -b,
                b + EXTRA as isize + (-b),
            )
        };
        let mh = round_scaled_to_f64(&s, -scale);
        let mh_scaled = big_scaled(mh, scale);
        let ml = round_scaled_to_f64(&(&s - &mh_scaled), -scale);
        out.extend([mh, ml, k as f64]);
    }
    out
}

/// |x| * 2^scale as an integer, truncated (exact when x's bits lie at or above 2^-scale; every
/// finite double's do for scale 1074).
fn big_scaled(x: f64, scale: isize) -> IBig {
    let bits = x.to_bits();
    let field = ((bits >> 52) & 0x7ff) as isize;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if field == 0 {
        (frac, -1074 + scale)
    } else {
        (frac | (1 << 52), field - 1075 + scale)
    };
    let m = IBig::from(m);
    if e >= 0 {
        m << e as usize
    } else {
        m >> (-e) as usize
    }
}

/// A comparison's summary as the kernel left it, and the undecided elements it handed back.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The `WORDS` words.
    pub words: Vec<u64>,
    /// (index, value, reference) of each undecided element, any order.
    pub undecided: Vec<(usize, f64, f64)>,
}

impl Summary {
    /// Undecided elements the kernel met (more than it handed back when past the capacity).
    pub fn undecided_count(&self) -> u64 {
        self.words[W_UNDECIDED]
    }

    /// The [`Comparison`] of `elements` elements of an output of type `dtype`: the kernel's
    /// reductions, with the undecided elements measured here by `compare.rs` and merged in.
    pub fn finish(&self, dtype: DType, elements: usize) -> Comparison {
        let w = &self.words;
        let mut undecided = self.undecided.clone();
        undecided.sort_by_key(|u| u.0);
        // The undecided elements through compare.rs, in index order; the GPU counted them as
        // differing already. Their relative errors join the device's exact sum, in units of
        // 2^-1074 (every finite double is a whole number of them).
        let mut t = Tally::new(elements);
        let mut limbs = w[W_LIMBS..W_LIMBS + LIMBS]
            .iter()
            .enumerate()
            .fold(IBig::ZERO, |m, (k, &l)| {
                m + (IBig::from(l as i64) << (32 * k))
            });
        let mut infinite = w[W_EXACT_FLAGS] & EXACT_POS_INF != 0;
        for &(i, v, r) in &undecided {
            let p = pair(dtype, v, r);
            if let Pair::Finite(m) = p {
                if m.counted {
                    if m.rel.is_finite() {
                        limbs += big_scaled(m.rel, 1074);
                    } else {
                        infinite = true;
                    }
                }
            }
            t.push(i, p, false);
        }
        let sum = if infinite {
            f64::INFINITY
        } else {
            round_scaled_to_f64(&limbs, -1074)
        };
        let h = &t.c;
        let from_bits = f64::from_bits;
        let index = |x: u64| (x != u64::MAX).then_some(x as usize);
        // The worst element: fewest digits, then lowest index, across both.
        let device_worst = index(w[W_WORST]).map(|key| ((key >> 40) as f64, key & ((1 << 40) - 1)));
        let host_worst = h.worst.map(|i| (h.digits, i));
        let worst = match (device_worst, host_worst) {
            (Some(a), Some(b)) => Some(if (b.0, b.1) < (a.0, a.1) { b } else { a }),
            (a, b) => a.or(b),
        };
        Comparison {
            elements,
            digits: worst.map_or(f64::INFINITY, |w| w.0),
            max_rel: from_bits(w[W_MAX_REL]).max(h.max_rel),
            mean_rel: mean(sum, w[W_COUNTED] as usize + t.rel_n),
            max_abs: from_bits(w[W_MAX_ABS]).max(h.max_abs),
            max_ulps: from_bits(w[W_MAX_ULPS]).max(h.max_ulps),
            differing: w[W_DIFFERING] as usize,
            nonfinite_mismatches: w[W_NONFINITE] as usize,
            first_nonfinite: index(w[W_FIRST_NONFINITE]),
            worst: worst.map(|w| w.1),
        }
    }
}

/// One side of a comparison: a buffer and the part of it compared.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The buffer (any element type).
    pub buffer: &'a DeviceBuffer,
    /// Its elements compared, in order.
    pub view: View,
}

impl<'a> Side<'a> {
    /// All of `buffer`.
    pub fn whole(buffer: &'a DeviceBuffer) -> Self {
        Side {
            buffer,
            view: View {
                offset: 0,
                len: buffer.len(),
                stride: 1,
            },
        }
    }

    /// Whether the view lies inside the buffer.
    fn fits(&self) -> bool {
        let v = self.view;
        v.len == 0
            || (v.len - 1)
                .checked_mul(v.stride)
                .and_then(|x| x.checked_add(v.offset))
                .is_some_and(|last| last < self.buffer.len())
    }

    /// The viewed elements, downloaded (the host fallback).
    fn download(&self, gpu: &Gpu) -> Result<Vec<f64>, GpuError> {
        let v = self.view;
        let all = to_f64(&gpu.download(self.buffer)?);
        Ok((0..v.len).map(|k| all[v.offset + k * v.stride]).collect())
    }
}

/// One comparison: `values` (an output, of type `dtype`) against `reference` (its baseline or
/// the user's reference), element by element over equally long views.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The output compared.
    pub values: Side<'a>,
    /// What it is compared with.
    pub reference: Side<'a>,
}

/// The comparison module loaded on a GPU, its powers-of-ten table uploaded, and the summary
/// buffers, reused from call to call.
pub struct DeviceComparer {
    module: Module,
    table: DeviceBuffer,
    summaries: Option<DeviceBuffer>,
    undecided: Option<DeviceBuffer>,
    slots: usize,
    /// The words of one reduced output (`reduce.rs`).
    reduced: Option<DeviceBuffer>,
}

impl DeviceComparer {
    /// Builds (NVRTC, cached) and loads the module and uploads the table.
    pub fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let module = gpu.build(&source(), FLAGS)?;
        let table = gpu.upload("mantissa-compare#pow10", &HostData::F64(pow10_table()))?;
        Ok(DeviceComparer {
            module,
            table,
            summaries: None,
            undecided: None,
            slots: 0,
            reduced: None,
        })
    }

    fn ensure_slots(&mut self, gpu: &Gpu, n: usize) -> Result<(), GpuError> {
        if self.slots >= n {
            return Ok(());
        }
        let slots = n.max(4);
        self.summaries =
            Some(gpu.alloc_zeros("mantissa-compare#summaries", DType::U64, slots * WORDS)?);
        self.undecided = Some(gpu.alloc_zeros(
            "mantissa-compare#undecided",
            DType::F64,
            slots * 3 * UNDECIDED_CAPACITY,
        )?);
        self.slots = slots;
        Ok(())
    }

    /// Every job's [`Comparison`], equal to [`crate::compare::compare`] of the same values: the
    /// kernels are queued one after the other on the GPU's stream (after the work queued before,
    /// so an output is compared as its last step left it), then one download of the summaries
    /// waits for them all.
    pub fn compare(&mut self, gpu: &Gpu, jobs: &[Job]) -> Result<Vec<Comparison>, GpuError> {
        for (i, j) in jobs.iter().enumerate() {
            if j.values.view.len != j.reference.view.len || !j.values.fits() || !j.reference.fits()
            {
                return Err(GpuError::BadBuffer {
                    what: format!(
                        "comparison {} ('{}' against '{}')",
                        i + 1,
                        j.values.buffer.name(),
                        j.reference.buffer.name()
                    ),
                    problem: format!(
                        "views of {} and {} elements (offset {}, stride {}; offset {}, stride {}) in buffers of {} and {}: views must be as long as each other and lie inside their buffers",
                        j.values.view.len,
                        j.reference.view.len,
                        j.values.view.offset,
                        j.values.view.stride,
                        j.reference.view.offset,
                        j.reference.view.stride,
                        j.values.buffer.len(),
                        j.reference.buffer.len()
                    ),
                });
            }
        }
        self.ensure_slots(gpu, jobs.len())?;
        let (Some(summaries), Some(undecided)) = (&self.summaries, &self.undecided) else {
            return Ok(Vec::new());
        };
        let count = jobs.len() as u32;
        gpu.launch(
            &self.module,
            "mc_reset",
            LaunchDims::linear(u64::from(count) * WORDS as u64, 256),
            &[
                KernelArg::Buffer(summaries),
                KernelArg::Scalar(Scalar::U32(count)),
            ],
        )?;
        for (slot, j) in jobs.iter().enumerate() {
            let n = j.values.view.len;
            if n == 0 || n > MAX_ELEMENTS {
                continue;
            }
            let (p, emin) = format_params(j.values.buffer.dtype());
            let blocks = n.div_ceil(256).min(1024) as u32;
            let side = |s: &Side| {
                [
                    KernelArg::Scalar(Scalar::I32(dtype_code(s.buffer.dtype()))),
                    KernelArg::Scalar(Scalar::U64(s.view.offset as u64)),
                    KernelArg::Scalar(Scalar::U64(s.view.stride as u64)),
                ]
            };
            let [vt, vo, vs] = side(&j.values);
            let [rt, ro, rs] = side(&j.reference);
            gpu.launch(
                &self.module,
                "mc_compare",
                LaunchDims::new((blocks, 1, 1), (256, 1, 1)),
                &[
                    KernelArg::Buffer(j.values.buffer),
                    vt,
                    vo,
                    vs,
                    KernelArg::Buffer(j.reference.buffer),
                    rt,
                    ro,
                    rs,
                    KernelArg::Scalar(Scalar::U64(n as u64)),
                    KernelArg::Scalar(Scalar::I32(p)),
                    KernelArg::Scalar(Scalar::I32(emin)),
                    KernelArg::Buffer(&self.table),
                    KernelArg::Buffer(summaries),
                    KernelArg::Buffer(undecided),
                    KernelArg::Scalar(Scalar::U32(slot as u32)),
                    KernelArg::Scalar(Scalar::U64(UNDECIDED_CAPACITY as u64)),
                ],
            )?;
        }
        let HostData::U64(words) = gpu.download_range(summaries, 0, jobs.len() * WORDS)? else {
            return Err(GpuError::BadBuffer {
                what: "the comparison summaries".into(),
                problem: "not u64 (an internal error)".into(),
            });
        };
        let mut out = Vec::with_capacity(jobs.len());
        for (slot, j) in jobs.iter().enumerate() {
            let n = j.values.view.len;
            let dtype = j.values.buffer.dtype();
            let words = words[slot * WORDS..(slot + 1) * WORDS].to_vec();
            let found = words[W_UNDECIDED] as usize;
            if n > MAX_ELEMENTS || found > UNDECIDED_CAPACITY {
                // The host decides what the GPU could not: slower, never different.
                let values = j.values.download(gpu)?;
                let reference = j.reference.download(gpu)?;
                out.push(crate::compare::compare(dtype, &values, &reference));
                continue;
            }
            let mut summary = Summary {
                words,
                undecided: Vec::new(),
            };
            if found > 0 {
                let base = slot * 3 * UNDECIDED_CAPACITY;
                if let HostData::F64(u) = gpu.download_range(undecided, base, 3 * found)? {
                    summary.undecided = u
                        .chunks_exact(3)
                        .map(|c| (c[0] as usize, c[1], c[2]))
                        .collect();
                }
            }
            out.push(summary.finish(dtype, n));
        }
        Ok(out)
    }
}

mod reduce;

#[cfg(test)]
mod tests;
