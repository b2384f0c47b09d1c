//! Times with their noise, and seed 002's Eq. 3 with the noise carried through, so that a search
//! never decides on a speed-up the repetitions cannot tell from zero or from its threshold.
//!
//! **The noise of a median.** A run's repetitions scatter (clocks, other work on the GPU,
//! launches queued behind each other); the median of n of them is what a configuration is
//! credited with. Its uncertainty is estimated robustly from the samples' median absolute
//! deviation (MAD): σ ≈ 1.4826 · MAD for normal scatter, and the standard error of a median is
//! about 1.2533 · σ / √n. The noise is twice that (about a 95% interval), and never less than
//! one part in 10⁴ of the median (event timers resolve about half a microsecond, and two medians
//! closer than that are the same time for any purpose here).
//!
//! **Eq. 3** (seed 002 §4.5, with times instead of a figure of merit where higher is better):
//! s = (t64 − t) / (t64 − t32) × 100, t64 the program as written, t32 the whole program demoted.
//! Its noise is 100 · √(n_t² + n_64²) / (t64 − t32): the noise of t32 only scales every s alike.
//! When t64 − t32 is not larger than the noise of both, the ideal speed-up is not measurable and
//! no percentage of it means anything: [`speedup`] says so with `None`.

use serde::{Deserialize, Serialize};

/// A configuration's time: the median of its repetitions and the noise of that median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Time {
    /// Median of the repetitions, ms.
    pub median_ms: f64,
    /// Noise of the median, ms (see the module docs).
    pub noise_ms: f64,
    /// Repetitions.
    pub reps: usize,
}

/// Relative floor of the noise (see the module docs).
const NOISE_FLOOR: f64 = 1e-4;

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

impl Time {
    /// The median and its noise; `None` without samples.
    pub fn of(samples_ms: &[f64]) -> Option<Time> {
        if samples_ms.is_empty() {
            return None;
        }
        let mut s = samples_ms.to_vec();
        s.sort_by(f64::total_cmp);
        let m = median(&s);
        let mut dev: Vec<f64> = s.iter().map(|x| (x - m).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let sigma = 1.4826 * median(&dev);
        let n = s.len() as f64;
        let noise = (2.0 * 1.2533 * sigma / n.sqrt()).max(NOISE_FLOOR * m.abs());
        Some(Time {
            median_ms: m,
            noise_ms: noise,
            reps: s.len(),
        })
    }
}

/// Seed 002's Eq. 3 for `t` between `t64` (0%) and `t32` (100%), with its noise, both in % of
/// the ideal; `None` when the ideal speed-up is not measurable (t64 − t32 within the noise).
pub fn speedup(t: &Time, t64: &Time, t32: &Time) -> Option<(f64, f64)> {
    let ideal = t64.median_ms - t32.median_ms;
    if ideal <= t64.noise_ms.hypot(t32.noise_ms) {
        return None;
    }
    let s = (t64.median_ms - t.median_ms) / ideal * 100.0;
    let noise = t.noise_ms.hypot(t64.noise_ms) / ideal * 100.0;
    Some((s, noise))
}

/// Whether `s ± noise` (in %) leaves the decision "s ≥ threshold" (or, without a threshold,
/// "s > 0") in doubt: more repetitions could change it.
pub fn undecided(s: f64, noise: f64, threshold_pct: Option<f64>) -> bool {
    let line = threshold_pct.unwrap_or(0.0);
    (s - line).abs() <= noise
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_a_robust_noise() {
        // Samples 9, 10, 10, 10, 11: median 10, deviations 1,0,0,0,1 → MAD 0,
        // so the floor (1e-3 ms of 10 ms) is the noise.
        let t = Time::of(&[10.0, 11.0, 9.0, 10.0, 10.0]).unwrap();
        assert_eq!(t.median_ms, 10.0);
        assert_eq!(t.noise_ms, 1e-3);
        // 1..=9: median 5, deviations 0,1,1,2,2,3,3,4,4 → MAD 2, σ = 2.9652,
        // noise = 2 · 1.2533 · 2.9652 / 3.
        let t = Time::of(&(1..=9).map(f64::from).collect::<Vec<_>>()).unwrap();
        let want = 2.0 * 1.2533 * 1.4826 * 2.0 / 3.0;
        assert!((t.noise_ms - want).abs() < 1e-12, "{}", t.noise_ms);
        assert_eq!(t.reps, 9);
        // One wild outlier moves neither the median nor the noise much.
        let t = Time::of(&[5.0, 5.0, 5.0, 5.0, 500.0]).unwrap();
        assert_eq!(t.median_ms, 5.0);
        assert!(t.noise_ms < 0.01);
        assert!(Time::of(&[]).is_none());
    }

    fn time(median_ms: f64, noise_ms: f64) -> Time {
        Time {
            median_ms,
            noise_ms,
            reps: 10,
        }
    }

    #[test]
    fn eq3_in_percent_of_the_ideal_with_its_noise() {
        let t64 = time(10.0, 0.03);
        let t32 = time(6.0, 0.04);
        let (s, n) = speedup(&time(8.0, 0.04), &t64, &t32).unwrap();
        assert!((s - 50.0).abs() < 1e-12);
        assert!((n - 0.05 / 4.0 * 100.0).abs() < 1e-12);
        // Slower than f64: negative.
        let (s, _) = speedup(&time(11.0, 0.0), &t64, &t32).unwrap();
        assert!((s + 25.0).abs() < 1e-12);
        // All-f32 no faster than f64 within the noise: no percentage.
        assert!(speedup(&time(8.0, 0.0), &t64, &time(9.96, 0.04)).is_none());
        assert!(speedup(&time(8.0, 0.0), &t64, &time(12.0, 0.04)).is_none());
    }

    #[test]
    fn a_decision_inside_the_noise_is_undecided() {
        assert!(undecided(9.0, 2.0, Some(10.0)));
        assert!(!undecided(13.0, 2.0, Some(10.0)));
        assert!(undecided(0.5, 1.0, None));
        assert!(!undecided(5.0, 1.0, None));
    }
}
