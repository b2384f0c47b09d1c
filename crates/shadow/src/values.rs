//! Analysis 2, higher-precision shadow values: its own instrumented run of the ORIGINAL PTX
//! (never the demotion/exception pass's rewrite, so the two passes never instrument each other)
//! by [`mantissa_ptx::pass::shadow_values`], with the runtime
//! [`mantissa_gpu::runtime::SHADOW_VALUES`] merged, a zero-filled shadow buffer of twice the
//! bytes of every floating-point buffer of the spec, and the buffer table written after the
//! restore. The run is never timed: the shadow buffers are read right after the checked run.
//!
//! Results per site (merged into the per-line report by site index), per re-seed point, and per
//! output buffer: the digits each element gets right against its shadow (value + difference),
//! `−log10(|shadow − value| / |shadow|)`, their minimum and median, and the five worst elements.
//!
//! A launch the instrumented kernel cannot take is an error naming its registers: the sites
//! cannot be split over several runs, since shadows must flow through the whole program.
//!
//! **Another build of the program** ([`output_digits_of`], what `mantissa diff` measures each of
//! its four builds with): its PTX is instrumented and run through the same runner, and its
//! outputs are checked against that build's own outputs rather than the runner's baseline (a
//! build that computes differently from the program as written is what is measured, not an
//! instrumentation fault); only the per-output digits are returned.

use crate::analyse::ShadowError;
use crate::lines::Demotion;
use mantissa_gpu::{DType, HostData};
use mantissa_harness::compare::{compare, output_values};
use mantissa_harness::{pipelines, Recipe, Session, TrialError, TrialOutcome, TrialTiming};
use mantissa_ptx::pass::shadow_values::{digits, Treatment, ValueStats, ValuesReport};
use mantissa_ptx::site::Site;
use serde::Serialize;

/// What the shadow values measured at one site, or on one line (combined).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Values {
    /// Executions.
    pub executions: u64,
    /// The instruction's own rounding: `|x − r| / |x|`, x the exact operation on its operand
    /// values (`zero_reference`: x = 0).
    pub local: Demotion,
    /// The result against its shadow: `|r − s| / |s|` (`zero_reference`: s = 0).
    pub accumulated: Demotion,
    /// Correct digits of the worst result: −log10 of the largest accumulated error.
    pub digits: Option<f64>,
    /// Additions that lost ≥ 10 bits while an operand carried error.
    pub cancellations: u64,
    /// The most bits one of them lost.
    pub cancel_max_bits: u64,
    /// Executions whose shadow was re-seeded from the value.
    pub reseeded: u64,
    /// How the shadow is obtained (`propagated`, `fused: ...`, `reseeded: ...`); for a line,
    /// its first site's.
    pub treatment: String,
}

impl Values {
    /// A site's statistics.
    pub fn new(stats: &ValueStats, treatment: &Treatment) -> Values {
        Values {
            executions: stats.executions,
            local: Demotion::from(&stats.local),
            accumulated: Demotion::from(&stats.accumulated),
            digits: stats.worst_digits(),
            cancellations: stats.cancellations,
            cancel_max_bits: stats.cancel_max_bits,
            reseeded: stats.reseeded,
            treatment: match treatment {
                Treatment::Propagated => "propagated".into(),
                Treatment::Fused(why) => format!("fused: {why}"),
                Treatment::Reseeded(why) => format!("reseeded: {why}"),
                Treatment::Skipped(why) => format!("skipped: {why}"),
            },
        }
    }

    /// Both together (counts add, maxima the larger, means over all samples).
    pub fn merge(&self, o: &Values) -> Values {
        let accumulated = self.accumulated.merge(&o.accumulated);
        Values {
            executions: self.executions + o.executions,
            local: self.local.merge(&o.local),
            digits: (accumulated.count > 0).then(|| digits(accumulated.max)),
            accumulated,
            cancellations: self.cancellations + o.cancellations,
            cancel_max_bits: self.cancel_max_bits.max(o.cancel_max_bits),
            reseeded: self.reseeded + o.reseeded,
            treatment: self.treatment.clone(),
        }
    }
}

/// A definition of a float register that re-seeds its shadow, with its counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reseed {
    /// Its address.
    pub site: Site,
    /// Its opcode.
    pub opcode: String,
    /// Why it cannot propagate.
    pub reason: String,
    /// Executions.
    pub executions: u64,
    /// Re-seeds (fewer than executions for a load that found its buffer).
    pub reseeded: u64,
}

/// One element of an output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Element {
    /// Its index in the buffer.
    pub index: usize,
    /// What the program computed.
    pub value: f64,
    /// Its shadow (value + difference, rounded to a double).
    pub shadow: f64,
    /// Correct digits of the value against the shadow.
    pub digits: f64,
}

/// The digits an output buffer's elements get right against their shadows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputDigits {
    /// The spec's buffer name.
    pub buffer: String,
    /// Its element type.
    pub dtype: String,
    /// Elements.
    pub elements: usize,
    /// Elements with a finite value and shadow (the rest are not in the digits).
    pub finite: usize,
    /// The fewest digits of any element (`None`: no finite element).
    pub min_digits: Option<f64>,
    /// The median.
    pub median_digits: Option<f64>,
    /// The five worst elements, worst first.
    pub worst: Vec<Element>,
    /// Every element's value (not in the JSON: for callers that check elements).
    #[serde(skip)]
    pub values: Vec<f64>,
    /// Every element's difference shadow − value as (hi, lo) (not in the JSON).
    #[serde(skip)]
    pub differences: Vec<(f64, f64)>,
}

/// How many worst elements an output lists.
pub const WORST: usize = 5;

/// The digits of `values` against `values + differences` (per element, the difference's two
/// words `hi`, `lo`; `lo` all zero for an f32 buffer).
pub fn output_digits(
    buffer: &str,
    dtype: DType,
    values: &[f64],
    hi: &[f64],
    lo: &[f64],
) -> OutputDigits {
    let mut measured: Vec<Element> = Vec::new();
    for (index, &value) in values.iter().enumerate() {
        let (h, l) = (
            hi.get(index).copied().unwrap_or(0.0),
            lo.get(index).copied().unwrap_or(0.0),
        );
        let difference = h + l;
        let shadow = value + difference;
        if !value.is_finite() || !shadow.is_finite() {
            continue;
        }
        let digits = if difference == 0.0 {
            17.0
        } else if shadow == 0.0 {
            0.0
        } else {
            digits((difference / shadow).abs())
        };
        measured.push(Element {
            index,
            value,
            shadow,
            digits,
        });
    }
    let mut sorted: Vec<f64> = measured.iter().map(|e| e.digits).collect();
    sorted.sort_by(f64::total_cmp);
    measured.sort_by(|a, b| a.digits.total_cmp(&b.digits).then(a.index.cmp(&b.index)));
    OutputDigits {
        buffer: buffer.to_string(),
        dtype: dtype.to_string(),
        elements: values.len(),
        finite: measured.len(),
        min_digits: sorted.first().copied(),
        median_digits: (!sorted.is_empty()).then(|| sorted[(sorted.len() - 1) / 2]),
        worst: measured.into_iter().take(WORST).collect(),
        values: values.to_vec(),
        differences: (0..values.len())
            .map(|k| {
                (
                    hi.get(k).copied().unwrap_or(0.0),
                    lo.get(k).copied().unwrap_or(0.0),
                )
            })
            .collect(),
    }
}

/// What the values run found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ValuesRun {
    /// Per site index, what was measured (sites the pass skipped are absent).
    pub sites: Vec<(u32, Values)>,
    /// Re-seed points that are not sites, with their counts.
    pub reseeds: Vec<Reseed>,
    /// Per floating-point output buffer, the digits right.
    pub outputs: Vec<OutputDigits>,
    /// The pass's notes.
    pub notes: Vec<String>,
    /// Median time of the instrumented step sequence, when timed.
    pub time_ms: Option<f64>,
    /// The instrumented kernels' registers and local memory.
    pub resources: Vec<crate::analyse::KernelCost>,
}

/// The outputs of an instrumented trial that differ from the baseline, as one phrase each.
pub(crate) fn changed_outputs(outcome: &TrialOutcome) -> Vec<String> {
    outcome
        .outputs
        .iter()
        .filter(|o| o.vs_baseline.differing > 0 || o.vs_baseline.nonfinite_mismatches > 0)
        .map(|o| {
            format!(
                "{}: {} of {} elements differ",
                o.name, o.vs_baseline.differing, o.vs_baseline.elements
            )
        })
        .collect()
}

fn floats(data: &HostData) -> Option<Vec<f64>> {
    match data {
        HostData::F32(v) => Some(v.iter().map(|&x| f64::from(x)).collect()),
        HostData::F64(v) => Some(v.clone()),
        _ => None,
    }
}

/// What the instrumented run's outputs must equal.
#[derive(Clone, Copy)]
enum Expected<'a> {
    /// The runner's baseline (the program as written), as the trial compares them on the GPU.
    Baseline,
    /// These buffers (another build's own outputs), compared after the run.
    Outputs(&'a [(String, HostData)]),
}

/// The outputs of `downloaded` that differ from `expected` (same buffer name) in some element's
/// bits (NaN payloads included) or are missing, as one phrase each.
fn differing_outputs(
    downloaded: &[(String, HostData)],
    expected: &[(String, HostData)],
) -> Vec<String> {
    expected
        .iter()
        .filter_map(|(name, want)| {
            let Some((_, got)) = downloaded.iter().find(|(n, _)| n == name) else {
                return Some(format!("{name}: not downloaded"));
            };
            let (got, want) = (
                output_values(got, None, None),
                output_values(want, None, None),
            );
            let c = compare(DType::F64, &got, &want);
            let n = c.differing.max(c.nonfinite_mismatches) + got.len().abs_diff(want.len());
            (n > 0).then(|| format!("{name}: {n} of {} elements differ", want.len()))
        })
        .collect()
}

/// The digits of every floating-point output of `ptx` against its higher-precision shadow:
/// the values analysis run on the program `build` makes (a build of the runner's program, any
/// flag set or rewrite, launched with the same steps and buffers) through `runner`, whose
/// outputs must equal `expected`, that build's own outputs as it computes them uninstrumented
/// (the buffers of a trial of it). Errors as [`crate::analyse()`]'s: among them the instrumented build
/// exceeding the launch's resources ([`ShadowError::ValuesResources`]) and outputs it changes
/// ([`ShadowError::ChangedOutputs`]).
pub fn output_digits_of(
    session: &mut dyn Session,
    build: Recipe,
    expected: &[(String, HostData)],
) -> Result<Vec<OutputDigits>, ShadowError> {
    let run = run_against(
        session,
        build,
        TrialTiming::AccuracyOnly,
        Expected::Outputs(expected),
    )?;
    Ok(run.outputs)
}

/// Runs the values analysis of the pinned program (the program as written) in `session`;
/// with `timing` timed, it is timed afterwards in a second trial of the same build (the
/// measurement's trial is never timed: its repeats would restore the buffers but not their
/// shadows, and the output shadows are read after the trial).
pub(crate) fn run(
    session: &mut dyn Session,
    timing: TrialTiming,
) -> Result<ValuesRun, ShadowError> {
    run_against(session, pipelines::pinned(), timing, Expected::Baseline)
}

/// [`run`] of what `build` makes, the instrumented outputs checked against `expected`.
fn run_against(
    session: &mut dyn Session,
    build: Recipe,
    timing: TrialTiming,
    expected: Expected<'_>,
) -> Result<ValuesRun, ShadowError> {
    session.target_arch().ok_or(ShadowError::NoTarget)?;
    let made = session.make(pipelines::shadow_values(build))?;
    let report = made.report::<ValuesReport>().cloned().ok_or_else(|| {
        ShadowError::Decode(format!(
            "the {} build has no shadow-values report",
            made.name
        ))
    })?;
    let report = &report;
    let shadowed = match session.run_shadowed(&made) {
        Ok(x) => x,
        Err(TrialError::OutOfResources {
            message, registers, ..
        }) => {
            return Err(ShadowError::ValuesResources {
                why: message,
                registers,
            })
        }
        Err(e) => return Err(e.into()),
    };
    let changed = match expected {
        Expected::Baseline => changed_outputs(&shadowed.outcome),
        Expected::Outputs(want) => differing_outputs(&shadowed.outputs, want),
    };
    if !changed.is_empty() {
        return Err(ShadowError::ChangedOutputs(format!(
            "the shadow-values build: {}",
            changed.join(", ")
        )));
    }
    let global = report.global.as_str();
    let bytes = shadowed
        .globals
        .iter()
        .find(|(name, _)| name == global)
        .map(|(_, b)| b.as_slice())
        .unwrap_or_default();
    let stats = report
        .decode(bytes)
        .map_err(|e| ShadowError::Decode(e.to_string()))?;

    let mut run = ValuesRun {
        notes: report.notes.clone(),
        ..ValuesRun::default()
    };
    for (s, st) in report.sites.iter().zip(&stats.sites) {
        if !matches!(s.treatment, Treatment::Skipped(_)) {
            run.sites.push((s.index, Values::new(st, &s.treatment)));
        }
    }
    for (r, st) in report.reseeds.iter().zip(&stats.reseeds) {
        run.reseeds.push(Reseed {
            site: r.site.clone(),
            opcode: r.opcode.clone(),
            reason: r.reason.clone(),
            executions: st.executions,
            reseeded: st.reseeded,
        });
    }
    for (name, data) in &shadowed.outputs {
        let Some(values) = floats(data) else {
            continue;
        };
        let Some(shadow) = shadowed.shadows.iter().find(|s| &s.name == name) else {
            continue;
        };
        run.outputs.push(output_digits(
            name,
            shadow.dtype,
            &values,
            &shadow.hi,
            &shadow.lo,
        ));
    }
    // Another build's digits are all that is asked for: no ptxas run for its resources.
    if let Expected::Baseline = expected {
        run.resources = crate::analyse::costs("shadow", session.variant_resources(&made)?);
    }
    if matches!(timing, TrialTiming::Timed { .. }) {
        let (timed, _) = session.run_variant(&made, timing)?;
        run.time_ms = timed.timing.map(|t| t.median_ms);
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_per_element_against_value_plus_difference() {
        // Element 0 exact, 1 off by 1e-10 relative, 2 by 1e-3, 3 a value 0 whose shadow is not,
        // 4 non-finite, 5 off by 1e-20 in the low word only.
        let values = [1.0, 2.0, 4.0, 0.0, f64::NAN, 1.0];
        let hi = [0.0, 2e-10, 4e-3, 1e-300, 0.0, 0.0];
        let lo = [0.0, 0.0, 0.0, 0.0, 0.0, 1e-20];
        let d = output_digits("y", DType::F64, &values, &hi, &lo);
        assert_eq!((d.elements, d.finite), (6, 5));
        let by_index = |i: usize| d.worst.iter().find(|e| e.index == i).map(|e| e.digits);
        assert_eq!(by_index(3), Some(0.0));
        assert!((by_index(2).unwrap() - 3.0).abs() < 1e-3, "{d:?}");
        assert!((by_index(1).unwrap() - 10.0).abs() < 1e-3, "{d:?}");
        assert!((by_index(5).unwrap() - 17.0).abs() < 1e-9 || by_index(5).unwrap() > 16.9);
        assert_eq!(d.worst[0].index, 3);
        assert_eq!(d.worst[1].index, 2);
        assert_eq!(d.min_digits, Some(0.0));
        // Sorted digits: 0, 3, 10, 17, 17 -> the median is 10.
        assert!((d.median_digits.unwrap() - 10.0).abs() < 1e-3);
        assert_eq!(d.worst.len(), WORST);
        assert_eq!(d.worst[2].shadow, 2.0 + 2e-10);
    }

    #[test]
    fn values_merge_adds_counts_keeps_maxima_and_takes_the_worst_digits() {
        use mantissa_ptx::pass::shadow::ErrorStats;
        let stats = |max: f64, bits: u64| ValueStats {
            executions: 10,
            local: ErrorStats {
                count: 10,
                sum: 10.0 * max / 2.0,
                max,
                zero_reference: 1,
                non_finite: 0,
            },
            accumulated: ErrorStats {
                count: 8,
                sum: 8.0 * max,
                max: 10.0 * max,
                zero_reference: 0,
                non_finite: 2,
            },
            cancellations: bits / 10,
            cancel_max_bits: bits,
            reseeded: 3,
        };
        let a = Values::new(&stats(1e-16, 20), &Treatment::Propagated);
        let b = Values::new(&stats(1e-10, 40), &Treatment::Reseeded("why".into()));
        assert_eq!(a.treatment, "propagated");
        assert_eq!(b.treatment, "reseeded: why");
        assert!((a.digits.unwrap() - 15.0).abs() < 1e-9);
        let m = a.merge(&b);
        assert_eq!(
            (m.executions, m.local.count, m.local.zero_reference),
            (20, 20, 2)
        );
        assert_eq!((m.accumulated.count, m.accumulated.non_finite), (16, 4));
        assert_eq!(m.accumulated.max, 1e-9);
        assert!((m.digits.unwrap() - 9.0).abs() < 1e-9);
        assert_eq!((m.cancellations, m.cancel_max_bits, m.reseeded), (6, 40, 6));
        assert_eq!(m.treatment, "propagated");
    }

    #[test]
    fn another_builds_outputs_are_compared_bit_for_bit_by_name() {
        let f = |v: Vec<f32>| HostData::F32(v);
        let want = vec![
            ("y".to_string(), f(vec![1.0, f32::NAN, 3.0])),
            ("n".to_string(), HostData::U32(vec![7, 8])),
        ];
        let same = vec![
            ("n".to_string(), HostData::U32(vec![7, 8])),
            ("y".to_string(), f(vec![1.0, f32::NAN, 3.0])),
        ];
        assert!(differing_outputs(&same, &want).is_empty());
        let off = vec![
            ("y".to_string(), f(vec![1.0, f32::NAN, 3.0000002])),
            ("n".to_string(), HostData::U32(vec![7, 9])),
        ];
        assert_eq!(
            differing_outputs(&off, &want),
            ["y: 1 of 3 elements differ", "n: 1 of 2 elements differ"]
        );
        let missing = vec![("y".to_string(), f(vec![1.0, 2.0]))];
        assert_eq!(
            differing_outputs(&missing, &want),
            ["y: 2 of 3 elements differ", "n: not downloaded"]
        );
    }

    #[test]
    fn a_buffer_without_finite_elements_has_no_digits() {
        let d = output_digits("y", DType::F32, &[f64::INFINITY], &[0.0], &[]);
        assert_eq!((d.finite, d.min_digits, d.median_digits), (0, None, None));
        assert!(d.worst.is_empty());
    }
}
