//! `mantissa study`'s framework: the precision experiments of seeds 000 ch. 5–8, 001, 003 §3.1.1
//! and 004 ch. 3 as one plan of measurement points, run point by point into a results log.
//!
//! The flow is the design's: a [`StudyConfig`] (naming its workloads, each a
//! [`crate::workload::Workload`]) becomes a [`Plan`] (a list of [`Point`]s), each point runs on
//! its backend ([`crate::runner`]) and becomes one record, appended to `results.jsonl` as soon as
//! it completes. Points already in the log are skipped (`--resume`); a stop request (Ctrl-C) is
//! checked inside the CPU points' loops ([`CpuTiming::stop`]) and the interrupted point is
//! dropped, so the file always holds whole records of finished points.
//!
//! This module imports no workload: the workloads import it, and [`crate::registry`] lists them.

use std::fmt;
use std::time::{Duration, Instant};

use mantissa_gpu::FlagSet;
use mantissa_num::precision::Precision;
use mantissa_report::{point_key, Backend, RecordError, TimeStats};

use crate::inputs::InputClass;
use crate::stop::Stop;
use crate::workload::Workload;

/// A precision of the study: one of the arithmetic types, or the exact (superaccumulator)
/// computation, which only sums and dot products have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StudyPrecision {
    /// One of the arithmetic types.
    Real(Precision),
    /// The exact (superaccumulator) computation, rounded once to f64.
    Exact,
}

impl fmt::Display for StudyPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StudyPrecision::Real(p) => write!(f, "{p}"),
            StudyPrecision::Exact => f.write_str("exact"),
        }
    }
}

impl StudyPrecision {
    /// The study's default precisions: f32, f64, f32x2, f64x2, comp32, comp64 and their
    /// normalized variants, mp32…mp256 (seed 000's GMP widths) and exact.
    pub fn defaults() -> Vec<StudyPrecision> {
        let mut v: Vec<StudyPrecision> = Precision::NATIVE
            .iter()
            .map(|&p| StudyPrecision::Real(p))
            .collect();
        v.extend([32, 64, 128, 256].map(|b| StudyPrecision::Real(Precision::Mp(b))));
        v.push(StudyPrecision::Exact);
        v
    }

    /// Parses a comma-separated list (`f32,f64x2,mp256,exact`, or `all`).
    pub fn parse_list(s: &str) -> Result<Vec<StudyPrecision>, StudyError> {
        if s.trim().eq_ignore_ascii_case("all") {
            let mut v: Vec<_> = Precision::ALL
                .iter()
                .map(|&p| StudyPrecision::Real(p))
                .collect();
            v.push(StudyPrecision::Exact);
            return Ok(v);
        }
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let p = if item.eq_ignore_ascii_case("exact") {
                StudyPrecision::Exact
            } else {
                StudyPrecision::Real(item.parse().map_err(|_| {
                    StudyError::Usage(format!(
                        "unknown precision {item:?}: expected a list of f32, f64, f32x2, f64x2, comp32, comp64, comp32n, comp64n, mp32, mp64, mp128, mp256, mp512, mp1024, exact (or all)"
                    ))
                })?)
            };
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            return Err(StudyError::Usage(format!(
                "empty precision list {s:?}: name at least one precision"
            )));
        }
        Ok(out)
    }

    /// Whether it is an arbitrary-precision (mp) type.
    pub fn is_mp(self) -> bool {
        matches!(self, StudyPrecision::Real(Precision::Mp(_)))
    }
}

/// How much to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// Small sizes: about half a minute on a 2-core CPU (docs/BENCHMARKS.md).
    Quick,
    /// The thesis's sizes (up to 2^27 elements, 10^9 π steps where the backend allows).
    Full,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct StudyConfig {
    /// The workloads, in the order they run (from [`crate::registry`]).
    pub workloads: Vec<&'static dyn Workload>,
    /// How much to run.
    pub suite: Suite,
    /// Whether the CPU runs (the plan has no CPU points otherwise).
    pub cpu: bool,
    /// The precisions to measure; each workload keeps those it has.
    pub precisions: Vec<StudyPrecision>,
    /// Input classes for the sums; `None` means the thesis's named ranges.
    pub classes: Option<Vec<InputClass>>,
    /// Sizes for sums and dot products; `None` means the suite's.
    pub sizes: Option<Vec<u64>>,
    /// CPU thread counts for the parallel variants (besides sequential runs).
    pub threads: Vec<usize>,
    /// Seed of every generated input.
    pub seed: u64,
}

impl StudyConfig {
    /// The default CPU thread counts: 1, 2, 4, … up to all cores (and all cores itself).
    pub fn default_threads() -> Vec<usize> {
        Self::threads_up_to(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The thread counts of a machine of `all` cores: 1, 2, 4, … below `all`, then `all` (what
    /// [`StudyConfig::default_threads`] gives there, and what `mantissa --threads all` plans on a
    /// machine of `all` or more cores).
    pub fn threads_up_to(all: usize) -> Vec<usize> {
        let all = all.max(1);
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
            .take_while(|&t| t < all)
            .collect();
        v.push(all);
        v
    }
}

impl StudyConfig {
    /// The configuration the unit tests plan from: `workloads` in `suite`, CPU on, the default
    /// precisions, the thesis's inputs and sizes, 1 and 2 threads, seed 1.
    #[cfg(test)]
    pub(crate) fn for_tests(workloads: Vec<&'static dyn Workload>, suite: Suite) -> StudyConfig {
        StudyConfig {
            workloads,
            suite,
            cpu: true,
            precisions: StudyPrecision::defaults(),
            classes: None,
            sizes: None,
            threads: vec![1, 2],
            seed: 1,
        }
    }

    /// Refuses user sizes beyond a chosen workload's limit, in one line naming both.
    pub fn check_sizes(&self) -> Result<(), StudyError> {
        let Some(sizes) = &self.sizes else {
            return Ok(());
        };
        for &w in &self.workloads {
            let (limit, unit) = w.size_limit();
            if let Some(&n) = sizes.iter().find(|&&n| n > limit) {
                return Err(StudyError::Usage(format!(
                    "size {n} is too large for {w}: its size is the {unit}, at most {limit} \
                     (run workloads with different size ranges separately)"
                )));
            }
        }
        Ok(())
    }
}

/// Problems of a study run.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A bad value from the user (one line, exit code 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    /// The results log could not be read or written.
    Record(#[from] RecordError),
    /// The GPU failed in a way the run cannot continue from.
    #[error("{0}")]
    Gpu(String),
}

/// The data a point runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// A zero-sum array from the class's two intervals.
    ZeroSum(InputClass),
    /// A general array (non-zero exact sum) from the class's intervals.
    General(InputClass),
    /// Two vectors uniform in (lo, hi).
    Uniform {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
    },
    /// Seed 004's 4-element f32 vectors.
    WhitePaper,
    /// Values drawn from the class's two intervals (matrix entries, chain factors, do/undo
    /// operands); the workload says how many and how they are used.
    Intervals(InputClass),
    /// No input (π).
    Nothing,
}

impl Data {
    /// The input class name in records.
    pub fn name(&self) -> String {
        match self {
            Data::ZeroSum(c) => c.name.clone(),
            Data::General(c) => format!("general-{}", c.name),
            Data::Uniform { lo, hi } => format!("uniform({lo},{hi})"),
            Data::WhitePaper => "white-paper".into(),
            Data::Intervals(c) => c.name.clone(),
            Data::Nothing => "-".into(),
        }
    }
}

/// One measurement point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// `sum`, `dot`, `pi-leibniz`, `pi-midpoint`.
    pub workload: &'static str,
    /// `serial`, `chunked`, `pairwise`, `fma-serial`, `tree`.
    pub algorithm: &'static str,
    /// The data it runs on.
    pub data: Data,
    /// The problem size, in its workload's unit.
    pub size: u64,
    /// Seed of the generated data.
    pub seed: u64,
    /// The precision under test.
    pub precision: StudyPrecision,
    /// Where it runs: CPU threads, or a GPU launch.
    pub backend: Backend,
    /// The flag set a GPU point's kernels are compiled with (`None` on the CPU). Do/undo's
    /// division modes differ in it (`div-full` is `/` under approximate division).
    pub flags: Option<FlagSet>,
}

impl Point {
    /// The key that identifies the point's record on `device` (for `--resume`).
    pub fn key(&self, device: &str) -> String {
        point_key(
            self.workload,
            self.algorithm,
            &self.data.name(),
            self.size,
            self.seed,
            &self.precision.to_string(),
            &self.backend,
            device,
            self.flags.map(FlagSet::name).as_deref(),
        )
    }
}

/// The ordered list of points of a run.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The points, in the order they run.
    pub points: Vec<Point>,
    /// The work unit of the first point: a run's units are its CPU plan's points then its GPU
    /// plan's, numbered from 0, so the GPU plan starts at the CPU plan's length. A sharded run
    /// (`--shard I/N`) runs the units k ≡ I (mod N) and records each point's unit.
    pub first_unit: u64,
}

impl Plan {
    /// The CPU points of `cfg` (none when `cfg.cpu` is off), workload by workload in `cfg`'s order.
    pub fn cpu(cfg: &StudyConfig) -> Plan {
        if !cfg.cpu {
            return Plan::default();
        }
        Plan {
            points: cfg
                .workloads
                .iter()
                .flat_map(|w| w.cpu_points(cfg))
                .collect(),
            first_unit: 0,
        }
    }

    /// The GPU points of `cfg` on a device whose full-occupancy launch is `full` (grid, block),
    /// workload by workload in `cfg`'s order; its units follow the CPU plan's (`cpu_units` of
    /// them).
    pub fn gpu(cfg: &StudyConfig, full: (u32, u32), cpu_units: u64) -> Plan {
        Plan {
            points: cfg
                .workloads
                .iter()
                .flat_map(|w| w.gpu_points(cfg, full))
                .collect(),
            first_unit: cpu_units,
        }
    }

    /// Each point with its work unit, in plan order.
    pub fn units(&self) -> impl Iterator<Item = (u64, &Point)> {
        (self.first_unit..).zip(&self.points)
    }
}

/// How long CPU points repeat: enough repetitions for a median, bounded in time, and the stop
/// request their loops check.
#[derive(Debug, Clone, Copy)]
pub struct CpuTiming<'a> {
    /// Target total time of the timed repetitions.
    pub budget: Duration,
    /// Fewest timed repetitions.
    pub min_reps: u32,
    /// Most timed repetitions.
    pub max_reps: u32,
    /// The run's stop request: no repetition starts once it is set, and the workloads' loops
    /// check it every block of work.
    pub stop: Stop<'a>,
}

impl CpuTiming<'static> {
    /// The timing of `suite`: a longer budget for the full suite. It never stops; the runner
    /// gives it the run's request with [`CpuTiming::stopping_on`].
    pub fn for_suite(suite: Suite) -> CpuTiming<'static> {
        match suite {
            Suite::Quick => CpuTiming {
                budget: Duration::from_millis(60),
                min_reps: 3,
                max_reps: 15,
                stop: Stop::NEVER,
            },
            Suite::Full => CpuTiming {
                budget: Duration::from_millis(500),
                min_reps: 5,
                max_reps: 51,
                stop: Stop::NEVER,
            },
        }
    }
}

impl<'a> CpuTiming<'a> {
    /// The same timing, stopping when `stop` is set.
    pub fn stopping_on<'b>(self, stop: Stop<'b>) -> CpuTiming<'b> {
        CpuTiming {
            budget: self.budget,
            min_reps: self.min_reps,
            max_reps: self.max_reps,
            stop,
        }
    }

    /// The repetitions after a first run of `first` seconds (see [`CpuTiming::measure`]).
    fn reps_after(&self, first: f64) -> u32 {
        let reps = (self.budget.as_secs_f64() / first.max(1e-9)) as u32;
        reps.clamp(self.min_reps, self.max_reps)
    }

    /// The seconds [`CpuTiming::measure`] spends on a closure that takes `once` seconds: the
    /// first run, and the repetitions when it was shorter than the budget (the cost model's
    /// count of the timed work).
    pub fn total_seconds(&self, once: f64) -> f64 {
        if once >= self.budget.as_secs_f64() {
            once
        } else {
            once * f64::from(1 + self.reps_after(once))
        }
    }

    /// Runs `f` once to warm up and size the repetitions, then times it. A first run longer
    /// than the budget is the only sample (rerunning a multi-second point buys little). No
    /// repetition starts after a stop request (the point is dropped anyway).
    pub fn measure<R>(&self, mut f: impl FnMut() -> R) -> (R, TimeStats) {
        let start = Instant::now();
        let first = f();
        let t1 = start.elapsed();
        let first_ms = [t1.as_secs_f64() * 1e3];
        if t1 >= self.budget {
            return (
                first,
                TimeStats::from_samples(&first_ms).expect("one sample"),
            );
        }
        let reps = self.reps_after(t1.as_secs_f64());
        let mut samples = Vec::with_capacity(reps as usize);
        for _ in 0..reps {
            if self.stop.requested() {
                break;
            }
            let s = Instant::now();
            // The closure is passed through black_box each time: a pure, fully inlined `f` (an
            // f64x2 quadrature of a fixed step count) would otherwise be hoisted out of the loop
            // and every repetition would time nothing (28 ns for 10^5 steps was recorded).
            std::hint::black_box(std::hint::black_box(&mut f)());
            samples.push(s.elapsed().as_secs_f64() * 1e3);
        }
        let samples = if samples.is_empty() {
            &first_ms[..]
        } else {
            &samples[..]
        };
        (
            first,
            TimeStats::from_samples(samples).expect("at least one sample"),
        )
    }
}

/// The CPU as records name it: its model and hardware thread count.
pub fn cpu_name() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({threads} threads)")
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct RunSummary {
    /// Points measured in this run.
    pub measured: usize,
    /// Points skipped because the log already had them.
    pub skipped_done: usize,
    /// Points that failed (recorded with the reason).
    pub failed: usize,
    /// The run stopped early on request; the remaining points were not measured.
    pub interrupted: bool,
    /// Where the GPU part's time went, per device (absent for the CPU part).
    pub pool: Option<mantissa_gpu::PoolSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_lists_parse_and_reject_clearly() {
        let v = StudyPrecision::parse_list("f32, f64x2,mp256,exact,f32").unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[3], StudyPrecision::Exact);
        assert_eq!(StudyPrecision::parse_list("all").unwrap().len(), 15);
        let e = StudyPrecision::parse_list("f32,f16")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"f16\"") && e.contains("mp256"), "{e}");
        assert!(StudyPrecision::parse_list(" , ").is_err());
    }
}
