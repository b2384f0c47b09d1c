//! Timing results and the rules behind them (the GPU side is [`crate::Gpu::time_with`]).
//!
//! Each repetition is bracketed by its own pair of CUDA events, so a sample is device time for that
//! repetition alone; warm-up runs first absorb module loading, JIT and clock ramp-up. The median is
//! the figure to report: it ignores the occasional preempted or throttled repetition that would
//! drag a mean.

use serde::{Deserialize, Serialize};

/// How many runs to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingOptions {
    /// Untimed runs before the timed ones.
    pub warmup: u32,
    /// Timed runs (at least 1).
    pub reps: u32,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            warmup: 3,
            reps: 20,
        }
    }
}

/// Device time of repeated runs, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Median of the samples.
    pub median_ms: f64,
    /// Fastest sample.
    pub min_ms: f64,
    /// Slowest sample.
    pub max_ms: f64,
    /// Every timed sample, in run order.
    pub samples_ms: Vec<f64>,
    /// Untimed runs before the samples.
    pub warmup: u32,
    /// Distinct input sets the runs cycled through (1 = no rotation).
    pub input_sets: usize,
}

impl Timing {
    /// Summarises samples; `None` when there are none.
    pub fn from_samples(samples_ms: Vec<f64>, warmup: u32, input_sets: usize) -> Option<Timing> {
        if samples_ms.is_empty() {
            return None;
        }
        let mut sorted = samples_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
        };
        Some(Timing {
            median_ms: median,
            min_ms: sorted[0],
            max_ms: sorted[n - 1],
            samples_ms,
            warmup,
            input_sets,
        })
    }
}

/// How many copies of a working set to cycle through so that timed runs read from device memory,
/// not from the L2 cache the previous run filled.
///
/// When a set comes round again, the others have streamed `(k - 1) * working_set` bytes through
/// L2 since its last use; with `k = 1 + ceil(2 * L2 / working_set)` that is at least twice the L2
/// size, which evicts it even though L2 replacement is not strict LRU. Working sets of 8 L2 sizes
/// or more need no copies (at most 1/8 of one run could still be cached). The count is capped at
/// 64 and by `memory_budget` (bytes the copies may take together; pass e.g. half the free memory).
pub fn rotation_sets(working_set: u64, l2_bytes: u64, memory_budget: u64) -> usize {
    if working_set == 0 || l2_bytes == 0 || working_set >= 8 * l2_bytes {
        return 1;
    }
    let wanted = 1 + (2 * l2_bytes).div_ceil(working_set);
    let affordable = (memory_budget / working_set).max(1);
    wanted.min(64).min(affordable) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0], 2, 1).unwrap();
        assert_eq!((t.median_ms, t.min_ms, t.max_ms), (2.0, 1.0, 3.0));
        assert_eq!(t.samples_ms, [3.0, 1.0, 2.0], "samples keep run order");
        let t = Timing::from_samples(vec![4.0, 1.0, 3.0, 2.0], 0, 1).unwrap();
        assert_eq!(t.median_ms, 2.5);
        assert!(Timing::from_samples(vec![], 0, 1).is_none());
    }

    #[test]
    fn rotation_covers_twice_l2() {
        let l2 = 50 << 20; // H100: 50 MiB
        let lots = u64::MAX;
        // 1 MiB working set: 1 + 100 copies wanted, capped at 64.
        assert_eq!(rotation_sets(1 << 20, l2, lots), 64);
        // 20 MiB: 1 + ceil(100/20) = 6 sets; the other 5 stream 100 MiB = 2 x L2 between uses.
        let ws = 20 << 20;
        let k = rotation_sets(ws, l2, lots) as u64;
        assert_eq!(k, 6);
        assert!((k - 1) * ws >= 2 * l2);
        // Large working sets need no copies.
        assert_eq!(rotation_sets(400 << 20, l2, lots), 1);
        assert_eq!(rotation_sets(0, l2, lots), 1);
        // Memory budget caps the copies.
        assert_eq!(rotation_sets(ws, l2, 3 * ws), 3);
        assert_eq!(rotation_sets(ws, l2, 0), 1);
    }
}
