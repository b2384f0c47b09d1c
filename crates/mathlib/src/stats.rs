//! What one measurement keeps: the largest error and where it occurs, the mean and the share of
//! results not correctly rounded, and per input bin the largest error (the plots).

use mantissa_report::record::float;
use serde::{Deserialize, Serialize};

use crate::format::{ulp_error, Format};
use crate::reference::Reference;
use crate::regions::bin_of;

/// The input with the largest error, re-checkable with `mantissa mathlib --check`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    /// The arguments (one or two).
    pub args: Vec<f64>,
    /// What the library returned.
    #[serde(with = "float")]
    pub result: f64,
    /// The correctly rounded value.
    #[serde(with = "float")]
    pub correctly_rounded: f64,
    /// The error in ulps of the exact value.
    #[serde(with = "float")]
    pub ulps: f64,
}

/// Error statistics of one library function over the inputs it was measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Inputs whose error was measured, all phases together.
    pub evaluated: u64,
    /// The largest error found (ulps); infinite for a special-value mismatch.
    #[serde(with = "float")]
    pub max_ulps: f64,
    /// Where it occurs.
    pub worst: Option<Worst>,
    /// Inputs of the unbiased part (exhaustive, or uniform/random samples): the mean and the
    /// share not correctly rounded are over these.
    pub sampled: u64,
    /// Sum of the finite errors over the unbiased part.
    pub sum_ulps: f64,
    /// Finite errors counted in `sum_ulps`.
    pub finite: u64,
    /// Results of the unbiased part that are not the correctly rounded value.
    pub not_correctly_rounded: u64,
    /// Special-value mismatches (NaN against a number, infinity against a finite value).
    pub infinite: u64,
    /// Largest error per input bin (see [`crate::regions::bin_of`]), only bins with an error.
    pub bins: Vec<BinMax>,
}

/// The largest error among the inputs of one bin.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinMax {
    /// The bin ([`crate::regions::bin_of`]).
    pub bin: u32,
    /// Its largest error in ulps (stored to 4 significant digits: it is for plots, and 4,096
    /// bins per column at full precision made records of tens of megabytes).
    #[serde(
        serialize_with = "four_digits",
        deserialize_with = "float::deserialize"
    )]
    pub ulps: f64,
}

/// A finite value rounded to 4 significant digits, through the non-finite-aware writer.
fn four_digits<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    let rounded = if x.is_finite() && *x != 0.0 {
        format!("{x:.3e}").parse::<f64>().unwrap_or(*x)
    } else {
        *x
    };
    float::serialize(&rounded, s)
}

impl Stats {
    /// The mean error over the unbiased part.
    pub fn mean_ulps(&self) -> f64 {
        if self.finite == 0 {
            0.0
        } else {
            self.sum_ulps / self.finite as f64
        }
    }

    /// The share of the unbiased part not correctly rounded.
    pub fn not_correctly_rounded_share(&self) -> f64 {
        if self.sampled == 0 {
            0.0
        } else {
            self.not_correctly_rounded as f64 / self.sampled as f64
        }
    }

    /// Count one result against its reference; `unbiased` says whether it belongs to the
    /// sample the mean is taken over. Returns the error.
    pub fn add(
        &mut self,
        format: Format,
        args: &[f64],
        result: f64,
        r: &Reference,
        unbiased: bool,
    ) -> f64 {
        let e = ulp_error(format, result, &r.exact);
        self.evaluated += 1;
        if unbiased {
            self.sampled += 1;
            if e.is_finite() {
                self.sum_ulps += e;
                self.finite += 1;
            } else {
                self.infinite += 1;
            }
            if !same_value(result, r.rounded) {
                self.not_correctly_rounded += 1;
            }
        }
        self.note_max(format, args, result, r.rounded, e);
        e
    }

    /// Keep `e` as the maximum (and its bin maximum) if it is larger.
    pub fn note_max(&mut self, format: Format, args: &[f64], result: f64, rounded: f64, e: f64) {
        if e > self.max_ulps || (self.worst.is_none() && e > 0.0) {
            self.max_ulps = e;
            self.worst = Some(Worst {
                args: args.to_vec(),
                result,
                correctly_rounded: rounded,
                ulps: e,
            });
        }
        if e > 0.0 {
            let bin = bin_of(args[0], format) as u32;
            match self.bins.binary_search_by_key(&bin, |b| b.bin) {
                Ok(i) => self.bins[i].ulps = self.bins[i].ulps.max(e),
                Err(i) => self.bins.insert(i, BinMax { bin, ulps: e }),
            }
        }
    }
}

/// Equal as results: bitwise, except that all NaNs are alike and −0 equals +0.
pub fn same_value(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}
