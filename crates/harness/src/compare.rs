//! An output against the baseline's (or the user's reference): digits of accuracy, relative and
//! absolute error, ulps in the output's own type, elements that differ, non-finite mismatches,
//! and whether the tolerance is met.
//!
//! Digits are seed 002's (§4.5): the leading decimal digits a value shares with its reference,
//! counted exactly by `mantissa_num::metrics::correct_digits` (3.1479 against 3.1415 is 3). A
//! vector's digits are the minimum over its elements: the honest answer to "how many digits can I
//! trust", since an average would hide the element that lost everything. Equal values have
//! infinitely many (`inf`). Element rules follow `mantissa_num::metrics`: NaN against NaN and an
//! infinity against the same infinity are exact; any other non-finite pair is a mismatch, counted
//! in [`Comparison::nonfinite_mismatches`] (never met by any tolerance) and left out of the mean
//! relative error so that one NaN does not hide the size of the other errors.
//!
//! A new output metric goes here and, so that the GPU's comparison stays equal to this one field
//! for field, in `cuda/compare.cuh` as well (decided with doubles, or the element handed back to
//! the host), with its CPU test against this module (`device_compare/tests.rs`).

use crate::data::to_f64;
use crate::spec::{Reduce, Tolerance, View};
use mantissa_gpu::{DType, HostData};
use mantissa_num::big;
use mantissa_num::metrics::{measure_values, ulps_in_format, Reference};

/// How one set of values compares with its reference values.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Elements compared.
    pub elements: usize,
    /// Correct decimal digits, minimum over elements (+inf when all are equal).
    pub digits: f64,
    /// Largest relative error (+inf for a non-finite mismatch or a nonzero value against 0).
    pub max_rel: f64,
    /// Mean relative error over the elements where both values are finite and the reference
    /// nonzero: their exact sum rounded once, divided by their number (no summation order is
    /// part of it, so a comparison on the GPU gives the same value).
    pub mean_rel: f64,
    /// Largest absolute error over finite pairs.
    pub max_abs: f64,
    /// Largest distance in units in the last place of the output's own type at the reference
    /// (integers: the difference); fractions when the reference is wider than the output type.
    pub max_ulps: f64,
    /// Elements whose bits differ (after conversion to f64 for a reference of another type).
    pub differing: usize,
    /// Elements where one side is NaN or infinite and the other is not the same thing.
    pub nonfinite_mismatches: usize,
    /// The first such element.
    pub first_nonfinite: Option<usize>,
    /// The element with the fewest digits (the first of them), when any differs.
    pub worst: Option<usize>,
}

impl Comparison {
    /// Whether `tol` is met: no non-finite mismatch, and digits, max relative or max absolute
    /// error within it; for [`Tolerance::Exact`], no element whose bits differ (a NaN with
    /// another payload differs too).
    pub fn meets(&self, tol: &Tolerance) -> bool {
        self.nonfinite_mismatches == 0
            && match *tol {
                Tolerance::Digits(d) => self.digits >= d,
                Tolerance::Rel(r) => self.max_rel <= r,
                Tolerance::Abs(a) => self.max_abs <= a,
                Tolerance::Exact => self.differing == 0,
            }
    }
}

/// Precision p (implicit bit included) and minimum normal exponent of a float type.
pub(crate) fn format_of(d: DType) -> Option<(u32, i32)> {
    match d {
        DType::F64 => Some((53, -1022)),
        DType::F32 => Some((24, -126)),
        DType::F16 => Some((11, -14)),
        DType::BF16 => Some((8, -126)),
        _ => None,
    }
}

/// What one element contributes to a [`Comparison`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Pair {
    /// Bits equal, or both NaN: no error. `counted`: the element counts in the mean's n.
    Same {
        /// The bits differ (two NaNs, or +0 against -0 never: those are `Finite`).
        differing: bool,
        /// Counts in the mean relative error's n (finite, reference nonzero).
        counted: bool,
    },
    /// NaN or an infinity against something else.
    NonFinite,
    /// A finite pair whose bits differ, measured exactly.
    Finite(PairMetrics),
}

/// The metrics of one finite pair whose bits differ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PairMetrics {
    /// Correct decimal digits (+inf for +0 against -0).
    pub digits: f64,
    /// Relative error (+inf against a zero reference).
    pub rel: f64,
    /// Absolute error.
    pub abs: f64,
    /// Ulps in the output's format (integers: the difference).
    pub ulps: f64,
    /// Counts in the mean relative error (reference nonzero).
    pub counted: bool,
}

/// One element of [`compare`]: `v` of type `dtype` against `r`.
pub(crate) fn pair(dtype: DType, v: f64, r: f64) -> Pair {
    if v.to_bits() == r.to_bits() || (v.is_nan() && r.is_nan()) {
        return Pair::Same {
            differing: v.to_bits() != r.to_bits(),
            counted: v.is_finite() && r != 0.0,
        };
    }
    if !(v.is_finite() && r.is_finite()) {
        return Pair::NonFinite;
    }
    let m = measure_values(&Reference::from_f64(v), &Reference::from_f64(r));
    let ulps = match format_of(dtype) {
        Some((p, emin)) => ulps_in_format(&big::exact(v), &big::exact(r), p, emin),
        None => (v - r).abs(),
    };
    Pair::Finite(PairMetrics {
        digits: m.digits,
        rel: m.rel,
        abs: m.abs,
        ulps,
        counted: r != 0.0,
    })
}

/// A comparison under way: elements pushed in index order, then [`Tally::finish`]. The mean
/// relative error is the exact sum of the counted elements' relative errors rounded once, over
/// their number: no order of summation is part of the result, so the GPU (which sums exactly in
/// limbs, `cuda/compare.cu`) gets the same mean.
pub(crate) struct Tally {
    /// The comparison so far (its mean is made by `finish`).
    pub c: Comparison,
    /// The relative errors that count in the mean, summed exactly.
    pub rels: mantissa_num::ExactSum,
    /// How many count in the mean.
    pub rel_n: usize,
}

impl Tally {
    /// An empty tally of a comparison of `elements` elements.
    pub fn new(elements: usize) -> Self {
        Tally {
            c: Comparison {
                elements,
                digits: f64::INFINITY,
                max_rel: 0.0,
                mean_rel: 0.0,
                max_abs: 0.0,
                max_ulps: 0.0,
                differing: 0,
                nonfinite_mismatches: 0,
                first_nonfinite: None,
                worst: None,
            },
            rels: mantissa_num::ExactSum::new(),
            rel_n: 0,
        }
    }

    /// Adds element `i` (indices must grow): what [`pair`] says of it, without its `differing`
    /// count when `count_differing` is false (the GPU counted it already).
    pub fn push(&mut self, i: usize, p: Pair, count_differing: bool) {
        let c = &mut self.c;
        match p {
            Pair::Same { differing, counted } => {
                c.differing += usize::from(differing && count_differing);
                self.rel_n += usize::from(counted);
            }
            Pair::NonFinite => {
                c.differing += usize::from(count_differing);
                c.nonfinite_mismatches += 1;
                c.first_nonfinite.get_or_insert(i);
                c.max_rel = f64::INFINITY;
                c.max_ulps = f64::INFINITY;
                if c.digits > 0.0 {
                    c.digits = 0.0;
                    c.worst = Some(i);
                }
            }
            Pair::Finite(m) => {
                c.differing += usize::from(count_differing);
                if m.digits < c.digits {
                    c.digits = m.digits;
                    c.worst = Some(i);
                }
                c.max_rel = c.max_rel.max(m.rel);
                c.max_abs = c.max_abs.max(m.abs);
                if m.counted {
                    self.rels.add(m.rel);
                    self.rel_n += 1;
                }
                c.max_ulps = c.max_ulps.max(m.ulps);
            }
        }
    }

    /// The comparison, its mean made from the exact sum.
    pub fn finish(self) -> Comparison {
        let mut c = self.c;
        c.mean_rel = mean(self.rels.round(), self.rel_n);
        c
    }
}

/// The mean relative error from the (rounded) exact sum and the count.
pub(crate) fn mean(sum: f64, n: usize) -> f64 {
    if n > 0 {
        sum / n as f64
    } else {
        0.0
    }
}

/// Compares `values` (of type `dtype`) with `reference` element by element; both as f64, which
/// holds every supported type exactly (integers up to 2^53).
pub fn compare(dtype: DType, values: &[f64], reference: &[f64]) -> Comparison {
    let mut t = Tally::new(values.len().min(reference.len()));
    for (i, (&v, &r)) in values.iter().zip(reference).enumerate() {
        t.push(i, pair(dtype, v, r), true);
    }
    t.finish()
}

/// The one-number summary of `values`: sums exactly (rounded once), so that the reduction adds
/// no error of its own to what is compared. NaN propagates through all of them.
pub fn reduce(r: Reduce, values: &[f64]) -> f64 {
    if values.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    match r {
        Reduce::Sum => mantissa_num::exact_sum(values),
        // The mean of nothing is undefined (and dashu would divide by zero).
        Reduce::Mean if values.is_empty() => f64::NAN,
        Reduce::Mean => {
            let s = mantissa_num::ExactSum::from_iter(values.iter().copied());
            match s.to_big() {
                // Both at 128 bits: dashu divides only at a finite precision; one rounding of
                // the 128-bit quotient to f64 follows.
                Some(b) => big::to_f64(
                    &(big::with_bits(b, 128)
                        / big::with_bits(big::exact(values.len() as f64), 128)),
                ),
                None => s.round() / values.len() as f64,
            }
        }
        Reduce::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        Reduce::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Reduce::Norm2 => {
            let mut d = mantissa_num::ExactDot::new();
            for &x in values {
                d.add_product(x, x);
            }
            d.round().sqrt()
        }
    }
}

/// An output's values as compared: the buffer's elements, or its view's (`view`), or their
/// reduction as one value.
pub fn output_values(data: &HostData, view: Option<&View>, reduce_by: Option<Reduce>) -> Vec<f64> {
    let all = to_f64(data);
    let v = match view {
        Some(view) => view.select(&all),
        None => all,
    };
    match reduce_by {
        Some(r) => vec![reduce(r, &v)],
        None => v,
    }
}

/// One output of one run, compared.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputResult {
    /// `u` or `energy.sum`.
    pub name: String,
    /// The reduced value, for reduced outputs.
    pub value: Option<f64>,
    /// Against the baseline run (default flags, as written).
    pub vs_baseline: Comparison,
    /// Against the user's reference, when the spec gives one.
    pub vs_reference: Option<Comparison>,
    /// The spec's tolerance.
    pub tolerance: Option<Tolerance>,
    /// Whether the tolerance is met: against the reference when there is one (the user's
    /// truth), else against the baseline; `None` without a tolerance.
    pub met: Option<bool>,
}

#[cfg(test)]
// 3.1415 is seed 002's example value, not an approximation of pi.
#[allow(clippy::approx_constant)]
mod tests {
    use super::*;

    #[test]
    fn seed_002_digits_example() {
        let c = compare(DType::F64, &[3.1479], &[3.1415]);
        assert_eq!(c.digits, 3.0);
        assert_eq!(c.differing, 1);
        assert!((c.max_rel - (3.1479f64 - 3.1415).abs() / 3.1415).abs() < 1e-15);
    }

    #[test]
    fn equal_arrays_have_all_digits_and_no_ulps() {
        let v = [1.0, -2.5, 0.0, 1e-300];
        let c = compare(DType::F64, &v, &v);
        assert_eq!(c.digits, f64::INFINITY);
        assert_eq!(
            (c.max_ulps, c.max_rel, c.differing, c.nonfinite_mismatches),
            (0.0, 0.0, 0, 0)
        );
        assert!(c.meets(&Tolerance::Digits(15.0)));
        assert_eq!(c.worst, None);
    }

    #[test]
    fn one_ulp_off_in_the_outputs_type() {
        let base = [1.0, 2.0, 3.0];
        let mut v = base;
        v[1] = f64::from_bits(2.0f64.to_bits() + 1);
        let c = compare(DType::F64, &v, &base);
        assert_eq!((c.differing, c.max_ulps, c.worst), (1, 1.0, Some(1)));
        // 2.000000000000000444 against 2: sixteen digits agree.
        assert_eq!(c.digits, 16.0);
        // The same in f32: one f32 ulp, counted in f32.
        let b32 = [1.5f32, 2.0];
        let v32 = [1.5f32, f32::from_bits(2.0f32.to_bits() + 1)];
        let c = compare(DType::F32, &v32.map(f64::from), &b32.map(f64::from));
        assert_eq!((c.differing, c.max_ulps), (1, 1.0));
        assert!(c.max_rel < 1.2e-7 && c.max_rel > 5e-8);
        assert!(c.meets(&Tolerance::Rel(1e-6)) && !c.meets(&Tolerance::Rel(1e-8)));
        // Integers: the difference.
        let c = compare(DType::I32, &[5.0, 7.0], &[5.0, 4.0]);
        assert_eq!((c.max_ulps, c.max_abs), (3.0, 3.0));
    }

    #[test]
    fn nans_and_infinities() {
        let c = compare(DType::F64, &[f64::NAN, 1.0], &[f64::NAN, 1.0]);
        assert_eq!((c.nonfinite_mismatches, c.digits), (0, f64::INFINITY));
        let c = compare(DType::F64, &[1.0, f64::NAN, 2.0], &[1.0, 5.0, 2.000001]);
        assert_eq!(
            (c.nonfinite_mismatches, c.first_nonfinite, c.digits),
            (1, Some(1), 0.0)
        );
        assert_eq!(c.max_rel, f64::INFINITY);
        assert!(
            c.mean_rel > 0.0 && c.mean_rel < 1e-6,
            "the finite element's error alone"
        );
        assert!(!c.meets(&Tolerance::Abs(1.0)));
        let c = compare(DType::F64, &[f64::INFINITY], &[f64::INFINITY]);
        assert_eq!(c.nonfinite_mismatches, 0);
        let c = compare(DType::F64, &[f64::INFINITY], &[f64::NEG_INFINITY]);
        assert_eq!(c.nonfinite_mismatches, 1);
        let c = compare(DType::F64, &[1.0], &[f64::NAN]);
        assert_eq!(c.nonfinite_mismatches, 1);
    }

    #[test]
    fn vector_digits_are_the_minimum() {
        let c = compare(DType::F64, &[3.1479, 1.0000001, 2.0], &[3.1415, 1.0, 2.0]);
        assert_eq!((c.digits, c.worst), (3.0, Some(0)));
        assert!(c.meets(&Tolerance::Digits(3.0)) && !c.meets(&Tolerance::Digits(4.0)));
    }

    #[test]
    fn zero_references() {
        let c = compare(DType::F64, &[0.0, 1e-20], &[0.0, 0.0]);
        assert_eq!(
            (c.digits, c.max_rel, c.max_abs),
            (0.0, f64::INFINITY, 1e-20)
        );
        assert!(c.meets(&Tolerance::Abs(1e-19)));
    }

    #[test]
    fn reductions_are_exact() {
        let v = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(reduce(Reduce::Sum, &v), 2.0);
        assert_eq!(reduce(Reduce::Mean, &v), 0.5);
        assert_eq!(reduce(Reduce::Min, &v), -1e16);
        assert_eq!(reduce(Reduce::Max, &v), 1e16);
        assert_eq!(reduce(Reduce::Norm2, &[3.0, 4.0]), 5.0);
        assert!(reduce(Reduce::Sum, &[1.0, f64::NAN]).is_nan());
        // The exact mean of the three doubles, rounded once (a float sum / 3 gives 0.20000000000000004).
        assert_eq!(reduce(Reduce::Mean, &[0.1, 0.2, 0.3]), 0.2);
        let data = HostData::F32(vec![1.0, 2.0, 3.5]);
        assert_eq!(output_values(&data, None, Some(Reduce::Sum)), vec![6.5]);
        assert_eq!(output_values(&data, None, None), vec![1.0, 2.0, 3.5]);
    }

    #[test]
    fn reductions_apply_to_the_view_only() {
        // A structure of arrays of 3 variables x 4 elements; variable 1 is elements 4..8. Its exact
        // total is 2; the other variables would change it if they leaked in.
        let data = HostData::F64(vec![
            7.0, 7.0, 7.0, 7.0, //
            1e16, 1.0, -1e16, 1.0, //
            -5.0, 1e300, 3.0, 3.0,
        ]);
        let var1 = View {
            offset: 4,
            len: 4,
            stride: 1,
        };
        assert_eq!(output_values(&data, Some(&var1), Some(Reduce::Sum)), [2.0]);
        assert_eq!(output_values(&data, Some(&var1), Some(Reduce::Mean)), [0.5]);
        assert_eq!(
            output_values(&data, Some(&var1), None),
            [1e16, 1.0, -1e16, 1.0]
        );
        // The same numbers as an array of structures: element i's variable 1 at 1 + 3i.
        let aos = HostData::F32(vec![
            9.0, 1.5, 9.0, //
            9.0, -2.0, 9.0, //
            9.0, 4.0, 9.0,
        ]);
        let strided = View {
            offset: 1,
            len: 3,
            stride: 3,
        };
        assert_eq!(output_values(&aos, Some(&strided), None), [1.5, -2.0, 4.0]);
        assert_eq!(
            output_values(&aos, Some(&strided), Some(Reduce::Min)),
            [-2.0]
        );
        assert_eq!(
            output_values(&aos, Some(&strided), Some(Reduce::Norm2)),
            [(1.5f64 * 1.5 + 4.0 + 16.0).sqrt()]
        );
    }

    #[test]
    fn exact_means_no_bit_differs() {
        let exact = Tolerance::Exact;
        let v = [1.0, -0.0, f64::NAN, f64::INFINITY];
        assert!(compare(DType::F64, &v, &v).meets(&exact));
        // One ulp anywhere fails it, although every other tolerance would pass.
        let mut w = v;
        w[0] = f64::from_bits(1.0f64.to_bits() + 1);
        let c = compare(DType::F64, &w, &v);
        assert!(!c.meets(&exact) && c.meets(&Tolerance::Digits(15.0)));
        // -0 against +0 and a NaN with another payload differ in their bits.
        let c = compare(DType::F64, &[0.0], &[-0.0]);
        assert!(!c.meets(&exact) && c.meets(&Tolerance::Abs(0.0)));
        let other_nan = f64::from_bits(f64::NAN.to_bits() | 1);
        let c = compare(DType::F64, &[other_nan], &[f64::NAN]);
        assert_eq!((c.differing, c.nonfinite_mismatches), (1, 0));
        assert!(!c.meets(&exact));
        // A NaN where a number was is a mismatch for every tolerance.
        assert!(!compare(DType::F64, &[f64::NAN], &[1.0]).meets(&exact));
    }
}
