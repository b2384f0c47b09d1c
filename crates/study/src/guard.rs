//! The guard before a run: every point's host cost ([`crate::workload::Workload::host_cost`])
//! summed into an estimate per workload ([`estimate`]), a refusal, in one line, of a point whose
//! memory is more than the machine has free ([`check_memory`]), and the verdict on the run's
//! length ([`Length`]): fine, worth a warning (over [`WARN_SECONDS`]) or too long to start
//! without `--force` (over [`FORCE_SECONDS`]). Nothing is allocated or run here.

use mantissa_report::Shard;

use crate::cost::Cost;
use crate::registry;
use crate::study::{Plan, Point, StudyError, Suite};

/// A run estimated at more than this many seconds is announced with its estimate (10 minutes).
pub const WARN_SECONDS: f64 = 600.0;
/// A run estimated at more than this many seconds does not start without `--force` (4 hours: the
/// full suite on a 2-core machine is estimated below it; an mp256 LU of order 16,384 is
/// hundreds of hours).
pub const FORCE_SECONDS: f64 = 4.0 * 3600.0;

/// The estimate of one workload's points.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadEstimate {
    /// The workload's command-line name.
    pub workload: &'static str,
    /// Points still to run.
    pub points: usize,
    /// Their estimated host time, in seconds.
    pub seconds: f64,
}

/// The estimate of a run: its host time per workload and its most memory-hungry point.
#[derive(Debug, Clone, Default)]
pub struct Estimate {
    /// Per workload, in the plan's order.
    pub workloads: Vec<WorkloadEstimate>,
    /// The point that needs the most memory, and how much.
    pub largest: Option<(Point, u64)>,
}

impl Estimate {
    /// The whole run's estimated host time, in seconds.
    pub fn seconds(&self) -> f64 {
        self.workloads.iter().map(|w| w.seconds).sum()
    }

    /// How long the run is, against the thresholds.
    pub fn length(&self) -> Length {
        Length::of(self.seconds())
    }

    /// The estimate per workload in one line: `lu 3 points ~52 h, sum 120 points ~4 min`.
    pub fn summary(&self) -> String {
        self.workloads
            .iter()
            .filter(|w| w.points > 0)
            .map(|w| {
                format!(
                    "{} {} point{} ~{}",
                    w.workload,
                    w.points,
                    if w.points == 1 { "" } else { "s" },
                    duration(w.seconds)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A run's length against [`WARN_SECONDS`] and [`FORCE_SECONDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Shorter than the warning threshold.
    Short,
    /// Long enough to say so before starting.
    Long,
    /// Too long to start without `--force`.
    TooLong,
}

impl Length {
    /// The verdict on `seconds`.
    pub fn of(seconds: f64) -> Length {
        if seconds > FORCE_SECONDS {
            Length::TooLong
        } else if seconds > WARN_SECONDS {
            Length::Long
        } else {
            Length::Short
        }
    }
}

/// The host cost of `point` (its workload's model), or nothing for a point of no workload (the
/// runner refuses those with its own message).
pub fn cost_of(point: &Point, suite: Suite) -> Cost {
    registry::of_point(point).map_or_else(Cost::default, |w| w.host_cost(point, suite))
}

/// The estimate of the points of `plans` that `done` does not already have (`--resume`).
pub fn estimate(plans: &[&Plan], suite: Suite, done: &dyn Fn(&Point) -> bool) -> Estimate {
    let timing = crate::study::CpuTiming::for_suite(suite);
    let mut out = Estimate::default();
    for point in plans.iter().flat_map(|p| &p.points).filter(|p| !done(p)) {
        let cost = cost_of(point, suite);
        let name = registry::of_point(point).map_or(point.workload, |w| w.name());
        match out.workloads.iter_mut().find(|w| w.workload == name) {
            Some(w) => {
                w.points += 1;
                w.seconds += cost.seconds(&timing);
            }
            None => out.workloads.push(WorkloadEstimate {
                workload: name,
                points: 1,
                seconds: cost.seconds(&timing),
            }),
        }
        if out.largest.as_ref().is_none_or(|(_, b)| cost.bytes > *b) {
            out.largest = Some((point.clone(), cost.bytes));
        }
    }
    out
}

/// The estimate of each of `shards` shards of a run (`--shard I/N`): the units of `plans`
/// ([`Plan::units`]: CPU points, then GPU points) that each shard owns
/// ([`mantissa_report::Shard::owns`]: unit k is shard k mod N's). `mantissa slurm` sizes a job
/// array's time and memory from the largest of them.
pub fn shard_estimates(plans: &[&Plan], suite: Suite, shards: u32) -> Vec<Estimate> {
    (0..shards)
        .filter_map(|i| Shard::new(i, shards).ok())
        .map(|shard| {
            let share = Plan {
                points: plans
                    .iter()
                    .flat_map(|p| p.units())
                    .filter(|(unit, _)| shard.owns(*unit))
                    .map(|(_, p)| p.clone())
                    .collect(),
                first_unit: 0,
            };
            estimate(&[&share], suite, &|_| false)
        })
        .collect()
}

/// Refuses, in one line, a run whose largest point needs more than `available` bytes: what it
/// needs, what is free, and how to shrink it (the largest size of that point that fits, fewer
/// precisions, or `--force`).
pub fn check_memory(estimate: &Estimate, suite: Suite, available: u64) -> Result<(), StudyError> {
    let Some((point, need)) = &estimate.largest else {
        return Ok(());
    };
    if *need <= available {
        return Ok(());
    }
    let fits = largest_size_that_fits(point, suite, available)
        .map(|n| format!("at most --size {} fits", size_text(n)))
        .unwrap_or_else(|| "no size fits".into());
    Err(StudyError::Usage(format!(
        "{} {} at size {} needs {} of memory and {} is free: choose a smaller --size ({fits}) or fewer --precision, or --force to try anyway",
        point.workload,
        point.precision,
        point.size,
        bytes(*need),
        bytes(available),
    )))
}

/// The largest power of two below `point`'s size at which it fits in `available` bytes.
fn largest_size_that_fits(point: &Point, suite: Suite, available: u64) -> Option<u64> {
    let mut p = point.clone();
    p.size = point.size.checked_next_power_of_two().unwrap_or(1 << 63) / 2;
    while p.size >= 1 {
        if p.size < point.size && cost_of(&p, suite).bytes <= available {
            return Some(p.size);
        }
        p.size /= 2;
    }
    None
}

/// `2^k` for powers of two from 1024 up, the number otherwise.
fn size_text(n: u64) -> String {
    if n >= 1024 && n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// The host's free memory: `MemAvailable` of /proc/meminfo (what can be allocated without
/// swapping), or nothing where there is no such file.
pub fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes for a person: `512 MiB`, `16.0 GiB`, `8.0 TiB`.
pub fn bytes(n: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let b = n as f64;
    if b >= 1024.0 * GIB {
        format!("{:.1} TiB", b / GIB / 1024.0)
    } else if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{} MiB", n.div_ceil(1 << 20))
    }
}

/// A duration for a person, to two figures: `40 s`, `12 min`, `3.5 h`, `14 days`.
pub fn duration(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{:.0} s", seconds.max(1.0))
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 48.0 * 3600.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.0} days", seconds / 86400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{ns_per_op, Pace};
    use crate::registry::find;
    use crate::study::{StudyConfig, StudyPrecision};
    use mantissa_num::precision::Precision;

    fn config(workload: &str, size: u64, precisions: &str) -> StudyConfig {
        let mut cfg = StudyConfig::for_tests(vec![find(workload).unwrap()], Suite::Quick);
        cfg.sizes = Some(vec![size]);
        cfg.precisions = StudyPrecision::parse_list(precisions).unwrap();
        cfg.threads = vec![1];
        cfg
    }

    fn estimate_of(cfg: &StudyConfig) -> Estimate {
        estimate(&[&Plan::cpu(cfg)], cfg.suite, &|_| false)
    }

    #[test]
    fn a_sum_of_2_to_the_40_is_refused_naming_needed_and_free_bytes() {
        let cfg = config("sum", 1 << 40, "f64");
        let e = estimate_of(&cfg);
        let (point, need) = e.largest.clone().unwrap();
        // 2^40 f64 inputs and their f64 copy: 16 TiB at least.
        assert!(need >= 16 << 40, "{need}");
        assert_eq!(point.size, 1 << 40);
        let free = 24u64 << 30;
        let msg = check_memory(&e, cfg.suite, free).unwrap_err().to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.contains(&bytes(need)) && msg.contains("24.0 GiB is free"),
            "{msg}"
        );
        // Half of 24 GiB at 16 bytes an element: 2^30 elements fit.
        assert!(msg.contains("at most --size 2^30 fits"), "{msg}");
        assert!(
            msg.contains("--precision") && msg.contains("--force"),
            "{msg}"
        );
        // What fits passes.
        check_memory(
            &estimate_of(&config("sum", 1 << 20, "f64")),
            cfg.suite,
            free,
        )
        .unwrap();
    }

    #[test]
    fn sum_memory_is_the_inputs_and_the_converted_copy() {
        let n = 1u64 << 20;
        let point = |p: &str| {
            let cfg = config("sum", n, p);
            Plan::cpu(&cfg).points.into_iter().next().unwrap()
        };
        assert_eq!(cost_of(&point("f64"), Suite::Quick).bytes, 16 * n);
        assert_eq!(cost_of(&point("f64x2"), Suite::Quick).bytes, 24 * n);
        assert_eq!(cost_of(&point("f32"), Suite::Quick).bytes, 12 * n);
        // The exact sum reads the f64 data as it is.
        assert_eq!(cost_of(&point("exact"), Suite::Quick).bytes, 8 * n);
    }

    #[test]
    fn lu_in_mp256_at_16384_is_hours_and_needs_force() {
        let cfg = config("lu", 16_384, "mp256");
        // The quick suite keeps mp small; a user's size runs it (mp up to the suite's limit is
        // the planner's rule, so plan the point directly).
        let point = Point {
            precision: StudyPrecision::Real(Precision::Mp(256)),
            ..Plan::cpu(&config("lu", 16_384, "f64")).points[0].clone()
        };
        let cost = cost_of(&point, cfg.suite);
        let timing = crate::study::CpuTiming::for_suite(cfg.suite);
        let seconds = cost.seconds(&timing);
        // 2/3 · 16384³ = 2.93e12 mp256 operations at 428 ns: about 350 hours on one core.
        let ops = 2.0 / 3.0 * 16_384f64.powi(3);
        let want = ops * ns_per_op(point.precision, Pace::Independent) * 1e-9;
        assert!(
            seconds >= want && seconds < 2.0 * want,
            "{seconds} vs {want}"
        );
        assert!(duration(seconds).ends_with("days"), "{}", duration(seconds));
        assert_eq!(Length::of(seconds), Length::TooLong);
    }

    #[test]
    fn the_model_counts_the_operations_of_a_small_point() {
        // A serial f64 sum of 2^20 values: 2^20 additions at 0.81 ns, timed (0.85 ms, under the
        // quick budget of 60 ms: the first run and 15 repetitions), plus generating the data
        // (12 f64 operations a value) and the exact reference (1 ns a value) once.
        let n = (1u64 << 20) as f64;
        let cfg = config("sum", 1 << 20, "f64");
        let point = Plan::cpu(&cfg).points[0].clone();
        assert_eq!(point.algorithm, "serial");
        assert_eq!(point.backend, mantissa_report::Backend::Cpu { threads: 1 });
        let cost = cost_of(&point, cfg.suite);
        let once = n * 0.81e-9;
        let want = 16.0 * once + n * 12.0 * 0.81e-9 + n * 1e-9 + n * 0.15e-9;
        let timing = crate::study::CpuTiming::for_suite(cfg.suite);
        assert!(
            (cost.seconds(&timing) - want).abs() < 1e-12,
            "{}",
            cost.seconds(&timing)
        );
    }

    #[test]
    fn the_default_quick_suite_needs_no_warning() {
        let mut cfg = StudyConfig::for_tests(crate::registry::WORKLOADS.to_vec(), Suite::Quick);
        cfg.threads = StudyConfig::default_threads();
        let e = estimate_of(&cfg);
        assert_eq!(e.length(), Length::Short, "{}", e.summary());
        // The full suite is long but starts without --force.
        cfg.suite = Suite::Full;
        let e = estimate_of(&cfg);
        assert_ne!(e.length(), Length::TooLong, "{}", e.summary());
    }

    #[test]
    fn resumed_points_are_not_counted() {
        let cfg = config("sum", 1 << 10, "f32,f64");
        let plan = Plan::cpu(&cfg);
        let all = estimate(&[&plan], cfg.suite, &|_| false);
        let none = estimate(&[&plan], cfg.suite, &|_| true);
        assert_eq!(all.workloads[0].points, plan.points.len());
        assert!(none.workloads.is_empty() && none.largest.is_none());
        assert_eq!(none.seconds(), 0.0);
    }

    #[test]
    fn shards_share_the_points_round_robin_and_a_bigger_run_estimates_more() {
        let cfg = config("sum", 1 << 16, "f32,f64,f64x2");
        let plan = Plan::cpu(&cfg);
        let whole = estimate(&[&plan], cfg.suite, &|_| false);
        let shards = shard_estimates(&[&plan], cfg.suite, 4);
        assert_eq!(shards.len(), 4);
        let points: usize = shards
            .iter()
            .flat_map(|s| &s.workloads)
            .map(|w| w.points)
            .sum();
        assert_eq!(points, plan.points.len());
        // Shard 1 holds points 1, 5, 9, …: ceil((n − 1) / 4) of them.
        assert_eq!(
            shards[1].workloads[0].points,
            (plan.points.len() - 1).div_ceil(4)
        );
        let total: f64 = shards.iter().map(Estimate::seconds).sum();
        assert!((total - whole.seconds()).abs() <= 1e-9 * whole.seconds());
        // Every shard's largest point is at most the run's, and one of them has it.
        let need = |e: &Estimate| e.largest.as_ref().map_or(0, |l| l.1);
        assert_eq!(shards.iter().map(need).max(), Some(need(&whole)));
        // One shard is the whole run.
        assert_eq!(
            shard_estimates(&[&plan], cfg.suite, 1)[0].seconds(),
            whole.seconds()
        );
        // A bigger configuration (16 times the size) costs its largest shard more time and more
        // memory.
        let big = config("sum", 1 << 20, "f32,f64,f64x2");
        let big_shards = shard_estimates(&[&Plan::cpu(&big)], big.suite, 4);
        let slowest = |v: &[Estimate]| v.iter().map(Estimate::seconds).fold(0.0, f64::max);
        let hungriest = |v: &[Estimate]| v.iter().map(need).max().unwrap_or(0);
        assert!(slowest(&big_shards) > 4.0 * slowest(&shards));
        assert_eq!(hungriest(&big_shards), 16 * hungriest(&shards));
    }

    #[test]
    fn meminfo_and_units_read_and_print() {
        let text =
            "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(22_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(bytes(16 << 30), "16.0 GiB");
        assert_eq!(bytes(3 << 20), "3 MiB");
        assert_eq!(duration(40.0), "40 s");
        assert_eq!(duration(720.0), "12 min");
        assert_eq!(duration(3.5 * 3600.0), "3.5 h");
        assert_eq!(size_text(1 << 30), "2^30");
        assert_eq!(Length::of(60.0), Length::Short);
        assert_eq!(Length::of(3600.0), Length::Long);
    }
}
