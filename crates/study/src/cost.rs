//! What a point costs the host before it runs: its peak memory and its arithmetic, each workload's
//! own model ([`crate::workload::Workload::host_cost`]) turned into seconds by one table of
//! per-operation times ([`ns_per_op`]). The guard ([`crate::guard`]) refuses what cannot fit and
//! warns before what takes long; nothing here measures or allocates.
//!
//! The model counts operations in the precision under test, as the workloads' loops do them
//! (LU: n³/3 multiply–subtract pairs; a serial sum: n − 1 additions), plus the work around them
//! (input generation, exact references, the f64x2 residual). It is meant to be right within a
//! small factor: enough to tell seconds from minutes from hours, not to predict a time.

use mantissa_num::precision::{Precision, PrecisionVisitor};
use mantissa_num::Real;

use crate::study::{CpuTiming, StudyPrecision};

/// How a loop's operations depend on each other, which decides their rate: a running sum waits
/// for each addition (latency), an LU row update does not (throughput, vectorized for f32/f64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Each operation needs the previous result (serial sums, chains, do/undo, π).
    Dependent,
    /// Operations on independent values (row updates of GE and LU, intensity's 16 chains).
    Independent,
}

/// One block of arithmetic of a point.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    /// The precision the operations are in.
    pub precision: StudyPrecision,
    /// How many operations (additions, multiplications, divisions alike).
    pub ops: f64,
    /// Whether they wait on each other.
    pub pace: Pace,
    /// Threads sharing them evenly.
    pub threads: u32,
    /// Whether this is the timed part, which the CPU timing repeats ([`CpuTiming`]).
    pub timed: bool,
}

impl Work {
    /// `ops` operations in `precision` on one thread, untimed.
    pub fn new(precision: StudyPrecision, ops: f64, pace: Pace) -> Work {
        Work {
            precision,
            ops,
            pace,
            threads: 1,
            timed: false,
        }
    }

    /// The same work shared by `threads` threads.
    pub fn on(mut self, threads: u32) -> Work {
        self.threads = threads.max(1);
        self
    }

    /// The same work, as the timed part of the point.
    pub fn timed(mut self) -> Work {
        self.timed = true;
        self
    }

    /// Seconds it takes once.
    pub fn seconds(&self) -> f64 {
        self.ops * ns_per_op(self.precision, self.pace) * 1e-9 / f64::from(self.threads)
    }
}

/// What one point costs the host: the most memory it holds at once and the arithmetic it does.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cost {
    /// Peak bytes of host memory (the inputs, their converted copies, results and references).
    pub bytes: u64,
    /// The arithmetic, block by block.
    pub work: Vec<Work>,
}

impl Cost {
    /// Seconds the point takes under `timing`: the untimed work once, the timed work as often as
    /// [`CpuTiming::measure`] repeats it.
    pub fn seconds(&self, timing: &CpuTiming) -> f64 {
        let once: f64 = self
            .work
            .iter()
            .filter(|w| !w.timed)
            .map(Work::seconds)
            .sum();
        let timed: f64 = self
            .work
            .iter()
            .filter(|w| w.timed)
            .map(Work::seconds)
            .sum();
        once + timing.total_seconds(timed)
    }
}

/// The time of one operation in nanoseconds, on one core of the development VM (2 cores of an
/// AMD EPYC, release build, x86-64-v3), measured by `mantissa --threads 1 study … --backend cpu
/// --input range5` on 2026-11-25 and divided by the operation counts of this module:
///
/// - dependent: serial sums of 65,536 values (additions) and chains of 65,536 factors
///   (multiplications), the larger of the two rounded up: f32/f64 0.81 ns, f32x2/f64x2 10.3 (sum)
///   and 4.9 (chain), comp32/comp64 1.6 and 0.8, comp32n/comp64n 6.8 and 2.0, exact 0.98 per value;
/// - independent: LU at n = 512 (f32 0.088, f64 0.149, f64x2 2.76, comp64 1.28) and n = 256
///   (f32x2 0.65, comp32 0.79, comp32n 0.88, comp64n 1.74), 2n³/3 operations;
/// - mp (both paces): sums, chains and LU at n = 64 gave 250–530 ns for mp32…mp1024, growing
///   with the width: 300 + bits/2 ns.
///
/// Divisions cost more than additions (do/undo's f64 steps ran at 2.2 ns per operation, π's f64x2
/// midpoint steps at 10 ns), which the dependent rates' rounding up partly covers.
pub fn ns_per_op(precision: StudyPrecision, pace: Pace) -> f64 {
    let p = match precision {
        StudyPrecision::Exact => return 1.0,
        StudyPrecision::Real(p) => p,
    };
    match (p, pace) {
        (Precision::Mp(bits), _) => 300.0 + f64::from(bits) / 2.0,
        (Precision::F32 | Precision::F64, Pace::Dependent) => 0.81,
        (Precision::F32, Pace::Independent) => 0.09,
        (Precision::F64, Pace::Independent) => 0.15,
        (Precision::F32x2 | Precision::F64x2, Pace::Dependent) => 10.3,
        (Precision::F32x2, Pace::Independent) => 0.65,
        (Precision::F64x2, Pace::Independent) => 2.8,
        (Precision::Comp32 | Precision::Comp64, Pace::Dependent) => 1.6,
        (Precision::Comp32, Pace::Independent) => 0.8,
        (Precision::Comp64, Pace::Independent) => 1.3,
        (Precision::Comp32n | Precision::Comp64n, Pace::Dependent) => 6.8,
        (Precision::Comp32n, Pace::Independent) => 0.9,
        (Precision::Comp64n, Pace::Independent) => 1.8,
    }
}

/// Bytes one value of `precision` takes in a `Vec`: its size, plus for mp wider than two words
/// the digits dashu keeps on the heap and the allocator's header.
pub fn value_bytes(precision: StudyPrecision) -> u64 {
    struct Size;
    impl PrecisionVisitor for Size {
        type Output = u64;
        fn visit<T: Real>(self) -> u64 {
            std::mem::size_of::<T>() as u64
        }
    }
    match precision {
        StudyPrecision::Exact => 8,
        StudyPrecision::Real(p) => {
            let heap = match p {
                Precision::Mp(bits) if bits > 128 => u64::from(bits.div_ceil(64)) * 8 + 16,
                _ => 0,
            };
            p.visit(Size) + heap
        }
    }
}

/// The significand bits of `precision` (53 for exact, which rounds once to f64).
pub fn significand_bits(precision: StudyPrecision) -> u32 {
    struct Bits;
    impl PrecisionVisitor for Bits {
        type Output = u32;
        fn visit<T: Real>(self) -> u32 {
            T::significand_bits()
        }
    }
    match precision {
        StudyPrecision::Exact => 53,
        StudyPrecision::Real(p) => p.visit(Bits),
    }
}

/// Shorthand for an f64 precision in cost models (the inputs, references and residuals).
pub const F64: StudyPrecision = StudyPrecision::Real(Precision::F64);
/// Shorthand for f64x2 in cost models (LU's residual and reference).
pub const F64X2: StudyPrecision = StudyPrecision::Real(Precision::F64x2);

/// Generating `n` input values (a seeded draw each, and a shuffle for the sums' arrays): about
/// 10 ns a value, counted as f64 operations.
pub fn generation(n: f64) -> Work {
    Work::new(F64, 12.0 * n, Pace::Dependent)
}

/// The CPU's hardware threads (the pools that references and residuals run on).
pub fn all_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn real(p: Precision) -> StudyPrecision {
        StudyPrecision::Real(p)
    }

    #[test]
    fn rates_are_ordered_as_the_arithmetic_is() {
        for pace in [Pace::Dependent, Pace::Independent] {
            let ns = |p| ns_per_op(real(p), pace);
            assert!(ns(Precision::F64) < ns(Precision::F64x2));
            assert!(ns(Precision::F64x2) < ns(Precision::Mp(32)));
            assert!(ns(Precision::Mp(256)) < ns(Precision::Mp(1024)));
        }
        // Throughput is never slower than latency.
        for p in Precision::ALL {
            assert!(ns_per_op(real(p), Pace::Independent) <= ns_per_op(real(p), Pace::Dependent));
        }
    }

    #[test]
    fn value_bytes_are_the_types_sizes() {
        assert_eq!(value_bytes(real(Precision::F32)), 4);
        assert_eq!(value_bytes(real(Precision::F64)), 8);
        assert_eq!(value_bytes(real(Precision::F64x2)), 16);
        assert_eq!(value_bytes(real(Precision::Comp32)), 8);
        let mp256 = value_bytes(real(Precision::Mp(256)));
        assert!(mp256 >= 32 + 16 && mp256 > value_bytes(real(Precision::Mp(64))));
    }

    #[test]
    fn timed_work_is_repeated_as_the_timing_repeats_it() {
        let timing = CpuTiming {
            budget: Duration::from_millis(100),
            min_reps: 3,
            max_reps: 10,
            stop: Default::default(),
        };
        // 1e9 f64 dependent additions: 0.81 s once, past the budget, so timed once more only
        // as the single sample (the first run is the measurement).
        let add = Work::new(F64, 1e9, Pace::Dependent);
        let cost = Cost {
            bytes: 0,
            work: vec![add.clone(), add.clone().timed()],
        };
        assert!((cost.seconds(&timing) - 2.0 * 0.81).abs() < 1e-9);
        // 1e6 of them, 0.81 ms: the first run, then 10 repetitions (budget/0.81 ms capped at 10).
        let small = Cost {
            bytes: 0,
            work: vec![Work::new(F64, 1e6, Pace::Dependent).timed()],
        };
        assert!((small.seconds(&timing) - 11.0 * 0.81e-3).abs() < 1e-12);
        // Shared by 2 threads: half the time.
        assert!((add.clone().on(2).seconds() - 0.405).abs() < 1e-12);
    }
}
