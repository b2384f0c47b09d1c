//! Each build's error against a higher-precision reference: its outputs' digits against the
//! shadow values of that same build ([`mantissa_shadow::values::output_digits_of`], the
//! analysis `mantissa shadow` runs), through the diff's one runner. The build's recipe gains
//! the shadow-values pass and runtime; it is made, run, and must reproduce the build's own outputs; per floating-point output,
//! the minimum and median digits over its buffer's elements come back.
//!
//! When the shadow run is impossible — the instrumented build exceeds the launch's resources,
//! it changes the build's outputs, the pass refuses the PTX — the build carries the reason in
//! one line and nothing else fails; only a lost CUDA context (nothing else could run) stops
//! the diff.

use crate::analyse::{DiffError, Downloaded, Measuring};
use crate::builds::{OutputError, ShadowDigits};
use mantissa_harness::{Recipe, Spec};
use mantissa_shadow::values::{output_digits_of, OutputDigits};
use mantissa_shadow::ShadowError;

/// The digits of the outputs of the program `build` makes against its shadow, given `outputs`, the build's own output
/// buffers; or, when the shadow run is impossible, why (the error's first line).
pub(crate) fn of_build(
    session: &mut Measuring<'_, '_>,
    build: Recipe,
    outputs: &Downloaded,
) -> Result<Result<Vec<OutputDigits>, String>, DiffError> {
    match output_digits_of(session.runner, build, outputs) {
        Ok(d) => Ok(Ok(d)),
        Err(ShadowError::Trial(e)) if e.is_fatal() => Err(DiffError::Trial(e)),
        Err(e) => {
            let why = e.to_string();
            Ok(Err(why.lines().next().unwrap_or_default().to_string()))
        }
    }
}

/// Each output of `errors` (in `spec`'s order) given its buffer's digits against the shadow.
pub(crate) fn attach(spec: &Spec, errors: &mut [OutputError], digits: &[OutputDigits]) {
    for (o, e) in spec.outputs.iter().zip(errors) {
        e.shadow = digits
            .iter()
            .find(|d| d.buffer == o.buffer)
            .map(|d| ShadowDigits {
                min: d.min_digits,
                median: d.median_digits,
                finite: d.finite,
                elements: d.elements,
            });
    }
}

/// The fewest digits any output's minimum and median reach against the shadow, for a summary
/// (`None` when no output has digits).
pub fn worst(errors: &[OutputError]) -> (Option<f64>, Option<f64>) {
    let fold = |f: fn(&ShadowDigits) -> Option<f64>| {
        errors
            .iter()
            .filter_map(|e| e.shadow.as_ref().and_then(f))
            .reduce(f64::min)
    };
    (fold(|s| s.min), fold(|s| s.median))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(name: &str, shadow: Option<ShadowDigits>) -> OutputError {
        OutputError {
            name: name.into(),
            within_tolerance: true,
            differing: 0,
            max_ulps: 0.0,
            max_rel: 0.0,
            digits: f64::INFINITY,
            shadow,
        }
    }

    #[test]
    fn the_worst_digits_are_the_fewest_over_outputs_with_a_shadow() {
        let d = |min: f64, median: f64| ShadowDigits {
            min: Some(min),
            median: Some(median),
            finite: 10,
            elements: 10,
        };
        let errors = [
            error("a", Some(d(6.5, 7.5))),
            error("n", None),
            error("b", Some(d(5.25, 8.0))),
        ];
        assert_eq!(worst(&errors), (Some(5.25), Some(7.5)));
        assert_eq!(worst(&errors[1..2]), (None, None));
    }
}
