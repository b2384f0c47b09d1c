//! The time cost of each blamed source line: the program with that line's blamed causes
//! switched off (all of them together, as a user fixing the line would), timed through the
//! trial runner as the program as written is, and compared by medians.
//!
//! **Noise.** Two timings are told apart only beyond their measured spread, by the rule the
//! results summary uses for precisions (crates/report/src/cheapest.rs): one is faster when its
//! median repetition took less time than the other's fastest. Otherwise the difference is
//! inside the noise and is printed as such, whatever the ratio of the medians says: on a
//! shared machine 0.98 or 1.02 is not a cost.

use crate::analyse::{DiffError, DiffEvent, Measuring, Values};
use mantissa_gpu::Timing;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a build's time compares with the program as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Its median beat the program's fastest repetition.
    Faster,
    /// The program's median beat its fastest repetition.
    Slower,
    /// Neither: the difference is inside the measured spread.
    Noise,
}

impl Verdict {
    /// `a` against `naive` (see the module docs).
    pub fn of(a: &Timing, naive: &Timing) -> Verdict {
        if a.median_ms < naive.min_ms {
            Verdict::Faster
        } else if naive.median_ms < a.min_ms {
            Verdict::Slower
        } else {
            Verdict::Noise
        }
    }

    /// The word the text report prints.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Noise => "within noise",
        }
    }
}

/// A time relative to the program as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relative {
    /// The timing (median, fastest, slowest, every sample).
    pub time: Timing,
    /// Its median over the program's median.
    pub ratio: f64,
    /// Whether the difference is beyond the spread.
    pub verdict: Verdict,
}

impl Relative {
    /// `time` against `naive`.
    pub fn of(time: Timing, naive: &Timing) -> Relative {
        Relative {
            ratio: time.median_ms / naive.median_ms,
            verdict: Verdict::of(&time, naive),
            time,
        }
    }

    /// `1.07× slower`, `1.10× faster` (the speed-up, never `0.91× faster`),
    /// `0.98× (within noise)` (the time ratio).
    pub fn describe(&self) -> String {
        match self.verdict {
            Verdict::Noise => format!("{:.2}× (within noise)", self.ratio),
            Verdict::Faster => format!("{:.2}× {}", 1.0 / self.ratio, Verdict::Faster.word()),
            v => format!("{:.2}× {}", self.ratio, v.word()),
        }
    }
}

/// One blamed line's cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineCost {
    /// The source file (as the PTX names it).
    pub file: String,
    /// The source line.
    pub line: u32,
    /// The blamed candidates on it (indices into the run's candidates).
    pub candidates: Vec<usize>,
    /// The program with them switched off, against the program as written.
    pub switched_off: Relative,
    /// Whether its outputs stay within the spec's tolerance of the reference (then it is one
    /// of the builds the fastest is chosen among).
    pub within_tolerance: bool,
}

/// Times the program with each blamed line's causes (of `minimal`) switched off, one trial per
/// line, against `naive`; each line's outputs come back beside it.
pub(crate) fn measure(
    session: &mut Measuring<'_, '_>,
    minimal: &[usize],
    naive: &Timing,
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<Vec<(LineCost, Values)>, DiffError> {
    let mut lines: BTreeMap<(String, u32), Vec<usize>> = BTreeMap::new();
    for &c in minimal {
        let site = &session.list[c].site;
        lines
            .entry((site.file.clone(), site.line))
            .or_default()
            .push(c);
    }
    let count = lines.len();
    let mut out = Vec::new();
    for (k, ((file, line), candidates)) in lines.into_iter().enumerate() {
        progress(DiffEvent::Cost(k + 1, count));
        let switched = session.switched(&candidates)?;
        let (values, time) = session.timed(&switched)?;
        if let Some(time) = time {
            let cost = LineCost {
                file,
                line,
                candidates,
                switched_off: Relative::of(time, naive),
                within_tolerance: session.within_tolerance(&values),
            };
            out.push((cost, values));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(samples: &[f64]) -> Timing {
        Timing::from_samples(samples.to_vec(), 2, 1).unwrap_or_else(|| panic!("samples"))
    }

    #[test]
    fn a_difference_inside_the_spread_is_noise() {
        let naive = timing(&[1.00, 1.02, 1.01, 1.05, 0.99]);
        // Median 1.00 is not below the naive fastest 0.99: noise, though the ratio is 0.99.
        let close = timing(&[1.00, 0.995, 1.03, 0.98, 1.00]);
        assert_eq!(Verdict::of(&close, &naive), Verdict::Noise);
        let r = Relative::of(close, &naive);
        assert!((r.ratio - 1.0 / 1.01).abs() < 1e-12);
        assert_eq!(r.describe(), "0.99× (within noise)");
        // Median 0.90 below the fastest 0.99: faster.
        let fast = timing(&[0.90, 0.89, 0.91]);
        assert_eq!(Verdict::of(&fast, &naive), Verdict::Faster);
        // Said as a speed-up: 1.01 / 0.90.
        assert_eq!(Relative::of(fast, &naive).describe(), "1.12× faster");
        // Fastest 1.20 above the naive median 1.01: slower.
        let slow = timing(&[1.20, 1.25, 1.22]);
        assert_eq!(Verdict::of(&slow, &naive), Verdict::Slower);
        assert_eq!(Relative::of(slow, &naive).describe(), "1.21× slower");
    }
}
