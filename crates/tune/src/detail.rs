//! What none of seed 002's tools reported, for each configuration a search chose: the measured
//! digits of *every* output element against the f64 program (not only the worst), and the
//! registers and local memory its kernels use.
//!
//! Digits per element are −log10 of its relative error, measured exactly
//! ([`mantissa_num::metrics::measure_values`], as the harness's comparison does, so the smallest
//! of them is the trial's digits, [`crate::gpu::relative_digits`]); bit-identical elements count
//! as identical. The per-element digits are saved beside the configuration
//! (`NAME.digits.OUTPUT.npy`, f64, identical elements as +inf) for the user's own plots.

use crate::gpu::configuration;
use crate::unit::{Config, TuneUnit};
use mantissa_gpu::HostData;
use mantissa_harness::compare::output_values;
use mantissa_harness::{Configuration, Session, Spec, TrialError, TrialTiming};
use mantissa_num::metrics::{measure_values, Reference};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The digits of one output's elements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputDigits {
    /// The output's name.
    pub output: String,
    /// Elements compared.
    pub elements: usize,
    /// Elements bit-identical to the f64 program's.
    pub identical: usize,
    /// The fewest digits of an element (+inf when all are identical).
    #[serde(with = "mantissa_report::record::float")]
    pub min: f64,
    /// The median element's digits.
    #[serde(with = "mantissa_report::record::float")]
    pub median: f64,
    /// How many elements have fewer than 1, 2, …, 16 correct digits (index k: fewer than k+1).
    pub below: Vec<usize>,
    /// The worst elements, fewest digits first: (index, value, f64 program's value, digits).
    #[serde(with = "crate::doc::worst")]
    pub worst: Vec<(usize, f64, f64, f64)>,
    /// Where every element's digits were saved.
    pub saved: Option<PathBuf>,
}

/// Registers and local memory of one kernel of the configuration's build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelUse {
    /// The kernel.
    pub kernel: String,
    /// Registers per thread.
    pub registers: u32,
    /// Local memory per thread, bytes (spills).
    pub local_bytes: u32,
}

/// The detail of one chosen configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    /// Per output (spec order).
    pub outputs: Vec<OutputDigits>,
    /// Per kernel of its build.
    pub kernels: Vec<KernelUse>,
}

/// Each element's digits of `values` against `reference` (+inf where bit-identical).
pub fn element_digits(values: &[f64], reference: &[f64]) -> Vec<f64> {
    values
        .iter()
        .zip(reference)
        .map(|(&v, &r)| {
            if v.to_bits() == r.to_bits() || (v.is_nan() && r.is_nan()) {
                f64::INFINITY
            } else {
                let rel = measure_values(&Reference::from_f64(v), &Reference::from_f64(r)).rel;
                if rel == 0.0 {
                    f64::INFINITY
                } else {
                    (-rel.log10()).max(0.0)
                }
            }
        })
        .collect()
}

/// Summarises `digits` (of `values` against `reference`) for `output`.
pub fn summarise(output: &str, values: &[f64], reference: &[f64], digits: &[f64]) -> OutputDigits {
    let mut sorted: Vec<f64> = digits.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut order: Vec<usize> = (0..digits.len()).collect();
    order.sort_by(|&a, &b| digits[a].total_cmp(&digits[b]).then(a.cmp(&b)));
    OutputDigits {
        output: output.to_string(),
        elements: digits.len(),
        identical: digits.iter().filter(|d| d.is_infinite()).count(),
        min: sorted.first().copied().unwrap_or(f64::INFINITY),
        median: sorted
            .get(sorted.len() / 2)
            .copied()
            .unwrap_or(f64::INFINITY),
        below: (1..=16)
            .map(|k| digits.iter().filter(|&&d| d < f64::from(k)).count())
            .collect(),
        worst: order
            .iter()
            .take(5)
            .filter(|&&i| digits[i].is_finite())
            .map(|&i| (i, values[i], reference[i], digits[i]))
            .collect(),
        saved: None,
    }
}

/// Each output's values: a spec's outputs as it defines them (views, reductions); without a
/// spec (an application), each output as the session names it.
fn values(spec: Option<&Spec>, outputs: &[(String, HostData)]) -> Vec<(String, Vec<f64>)> {
    let Some(spec) = spec else {
        return outputs
            .iter()
            .map(|(name, data)| (name.clone(), output_values(data, None, None)))
            .collect();
    };
    spec.outputs
        .iter()
        .filter_map(|o| {
            let data = &outputs.iter().find(|(b, _)| *b == o.buffer)?.1;
            Some((o.name(), output_values(data, o.view.as_ref(), o.reduce)))
        })
        .collect()
}

/// The program as written's outputs, for [`detail`] to compare with.
pub fn baseline_outputs(runner: &mut dyn Session) -> Result<Vec<(String, HostData)>, TrialError> {
    runner.trial(&Configuration::AsWritten, TrialTiming::AccuracyOnly)?;
    runner.outputs()
}

/// Runs `config` once more, measures every output element against `baseline` and saves the
/// digits into `dir` as `NAME.digits.OUTPUT.npy` (when given).
pub fn detail(
    runner: &mut dyn Session,
    spec: Option<&Spec>,
    units: &[TuneUnit],
    config: &Config,
    baseline: &[(String, HostData)],
    save: Option<(&Path, &str)>,
) -> Result<Detail, TrialError> {
    let c = configuration(units, config, "chosen");
    runner.trial(&c, TrialTiming::AccuracyOnly)?;
    let got = values(spec, &runner.outputs()?);
    let want = values(spec, baseline);
    let mut outputs = Vec::new();
    for ((name, v), (_, r)) in got.iter().zip(&want) {
        let d = element_digits(v, r);
        let mut s = summarise(name, v, r, &d);
        if let Some((dir, stem)) = save {
            let file: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = dir.join(format!("{stem}.digits.{file}.npy"));
            if mantissa_harness::npy::write(&path, &HostData::F64(d)).is_ok() {
                s.saved = Some(path);
            }
        }
        outputs.push(s);
    }
    let kernels = runner
        .configuration_resources(&c)?
        .into_iter()
        .map(|(kernel, r)| KernelUse {
            kernel,
            registers: r.registers,
            local_bytes: r.local_bytes,
        })
        .collect();
    Ok(Detail { outputs, kernels })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_gets_its_digits_and_the_worst_are_named() {
        let r = [1.0, 2.0, 3.0, 0.5, 10.0];
        // Element 1 off by 1e-3 relative (3 digits), element 2 by 1e-6, element 4 by 0.1.
        let v = [1.0, 2.0 * (1.0 + 1e-3), 3.0 * (1.0 + 1e-6), 0.5, 11.0];
        let d = element_digits(&v, &r);
        assert!(d[0].is_infinite() && d[3].is_infinite());
        assert!((d[1] - 3.0).abs() < 0.01, "{}", d[1]);
        assert!((d[2] - 6.0).abs() < 0.01, "{}", d[2]);
        assert!((d[4] - 1.0).abs() < 0.01, "{}", d[4]);
        let s = summarise("u", &v, &r, &d);
        assert_eq!(s.elements, 5);
        assert_eq!(s.identical, 2);
        assert_eq!(
            s.worst.iter().map(|w| w.0).collect::<Vec<_>>(),
            vec![4, 1, 2]
        );
        assert_eq!(s.min, d[4]);
        assert_eq!(s.median, d[2]);
        // Fewer than 1 digit: none (element 4 has 1.0 up to rounding); fewer than 4: 2.
        assert_eq!(s.below[3], 2);
        assert_eq!(s.below[15], 3);
    }
}
