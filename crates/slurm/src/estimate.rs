//! Time and memory per shard, from the work: each command's own cost model gives every shard's
//! share (unit k goes to shard k mod N), and the job array asks for the largest share with a
//! margin — time ×[`TIME_FACTOR`] + [`TIME_EXTRA_SECONDS`] in whole minutes, memory
//! ×[`MEM_FACTOR`] + [`MEM_EXTRA_MIB`] (+ [`GPU_MEM_EXTRA_MIB`] with a GPU).
//!
//! The models are meant to be right within a small factor (mantissa_study::cost says so of
//! its own); the factor of 2 covers a slower node, the 10 minutes the start of the process,
//! NVRTC builds and writing the records.

use mantissa_mathlib::measure::Plan as MathlibPlan;
use mantissa_study::guard;
use mantissa_study::study::{Plan as StudyPlan, Suite};

use crate::limits::{format_mem, format_time};

/// The estimated time is multiplied by this…
pub const TIME_FACTOR: f64 = 2.0;
/// …and this many seconds are added, before rounding up to whole minutes.
pub const TIME_EXTRA_SECONDS: f64 = 600.0;
/// The largest unit's memory is multiplied by this…
pub const MEM_FACTOR: f64 = 1.25;
/// …and this many MiB added for the process itself (binary, thread stacks, the records).
pub const MEM_EXTRA_MIB: u64 = 512;
/// MiB added when the shard has a GPU: the CUDA driver's and NVRTC's host memory.
pub const GPU_MEM_EXTRA_MIB: u64 = 1024;
/// Host bytes a tuning shard is given for its largest need (the program's buffers, read back
/// for every trial, and the builds), with the margins above: 2 GiB × 1.25 + 512 MiB + 1024 MiB
/// is `--mem 4G`. A fixed figure: the tuner has no cost model.
pub const TUNE_BYTES: u64 = 2 << 30;

/// One shard's share of the work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardLoad {
    /// Units it runs.
    pub units: usize,
    /// Their estimated seconds, in all.
    pub seconds: f64,
    /// The most host bytes one of them needs.
    pub bytes: u64,
}

/// Every shard's share, and which model gave them.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Shard by shard, 0 first.
    pub shards: Vec<ShardLoad>,
    /// What a unit is (`point`, `function`).
    pub unit: &'static str,
    /// The model, for people: where the numbers come from.
    pub model: String,
}

impl Estimate {
    /// A study's: the points of `plans` (CPU plan first, as the study runs them) under
    /// `mantissa_study::guard`'s host model, the one `mantissa study` estimates with.
    pub fn study(plans: &[&StudyPlan], suite: Suite, shards: u32) -> Estimate {
        let shards = guard::shard_estimates(plans, suite, shards)
            .iter()
            .map(|e| ShardLoad {
                units: e.workloads.iter().map(|w| w.points).sum(),
                seconds: e.seconds(),
                bytes: e.largest.as_ref().map_or(0, |l| l.1),
            })
            .collect();
        Estimate {
            shards,
            unit: "point",
            model:
                "the study's host cost model (mantissa_study::guard), as `mantissa study` estimates"
                    .into(),
        }
    }

    /// mathlib's: each (function, format) of `plan` under `mantissa_mathlib::estimate` (its
    /// search budget, sweeps and builds), with a GPU or without.
    pub fn mathlib(plan: &MathlibPlan, gpu: bool, shards: u32) -> Estimate {
        let shards = mantissa_mathlib::estimate::shard_estimates(plan, gpu, shards)
            .into_iter()
            .map(|e| ShardLoad {
                units: e.units,
                seconds: e.seconds,
                bytes: e.bytes,
            })
            .collect();
        Estimate {
            shards,
            unit: "function",
            model: format!(
                "mathlib's {} s budget per function and format, plus sweeps and builds (mantissa_mathlib::estimate)",
                plan.budget.as_secs_f64()
            ),
        }
    }

    /// A tuning run's: `searches` searches dealt round-robin, of no known time (how many trials
    /// a search runs is found only by running it, so `--time` must be given) and a fixed
    /// [`TUNE_BYTES`] of memory.
    pub fn tune(searches: usize, shards: u32) -> Estimate {
        let n = shards.max(1) as usize;
        let shards = (0..n)
            .map(|i| ShardLoad {
                units: (i..searches).step_by(n).count(),
                seconds: 0.0,
                bytes: TUNE_BYTES,
            })
            .collect();
        Estimate {
            shards,
            unit: "search",
            model: "no model of a tuning run's time (its trials are found by running it: --time is required); a fixed 2 GiB of host memory".into(),
        }
    }

    /// Units in all.
    pub fn units(&self) -> usize {
        self.shards.iter().map(|s| s.units).sum()
    }

    /// The shard estimated to take longest (the first of equals).
    pub fn slowest(&self) -> ShardLoad {
        self.shards
            .iter()
            .fold(None::<&ShardLoad>, |best, s| match best {
                Some(b) if b.seconds >= s.seconds => Some(b),
                _ => Some(s),
            })
            .cloned()
            .unwrap_or_default()
    }

    /// The most bytes a unit of any shard needs.
    pub fn most_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.bytes).max().unwrap_or(0)
    }
}

/// What each array task asks Slurm for, and how each figure was arrived at.
#[derive(Clone, Debug, PartialEq)]
pub struct JobResources {
    /// GPUs per task (`--gpus`; none when 0).
    pub gpus: u32,
    /// CPUs per task (`--cpus-per-task`), also the shards' `--threads`.
    pub cpus: u32,
    /// Time limit in seconds (`--time`).
    pub seconds: u64,
    /// Memory in MiB (`--mem`; 0 is all of the node's).
    pub mem_mib: u64,
    /// One line per figure: the value and where it came from.
    pub how: Vec<String>,
}

/// The time limit for an estimate of `seconds`: ×[`TIME_FACTOR`] + [`TIME_EXTRA_SECONDS`],
/// rounded up to whole minutes.
pub fn time_limit(seconds: f64) -> u64 {
    let s = seconds.max(0.0) * TIME_FACTOR + TIME_EXTRA_SECONDS;
    (s / 60.0).ceil() as u64 * 60
}

/// The memory limit in MiB for a largest unit of `bytes`: ×[`MEM_FACTOR`] + [`MEM_EXTRA_MIB`]
/// (+ [`GPU_MEM_EXTRA_MIB`] with a GPU), rounded up to whole MiB.
pub fn memory_limit(bytes: u64, gpu: bool) -> u64 {
    let mib = (bytes as f64 * MEM_FACTOR / (1u64 << 20) as f64).ceil() as u64;
    mib + MEM_EXTRA_MIB + if gpu { GPU_MEM_EXTRA_MIB } else { 0 }
}

impl JobResources {
    /// The resources of every task of `estimate`'s array: `time` and `mem` (seconds, MiB) where
    /// the user gave them, else from the estimate; `gpus` and `cpus` as decided, with why.
    pub fn new(
        estimate: &Estimate,
        time: Option<u64>,
        mem: Option<u64>,
        (gpus, gpus_why): (u32, &str),
        (cpus, cpus_why): (u32, &str),
    ) -> JobResources {
        let slowest = estimate.slowest();
        let bytes = estimate.most_bytes();
        let mut how = Vec::new();
        let seconds = match time {
            Some(t) => {
                how.push(format!("--time {} (given)", format_time(t)));
                t
            }
            None => {
                let t = time_limit(slowest.seconds);
                how.push(format!(
                    "--time {}: the largest shard's {} {}{} ~{} × {TIME_FACTOR} + {} min, in whole minutes",
                    format_time(t),
                    slowest.units,
                    estimate.unit,
                    if slowest.units == 1 { "" } else { "s" },
                    guard::duration(slowest.seconds),
                    TIME_EXTRA_SECONDS / 60.0,
                ));
                t
            }
        };
        let mem_mib = match mem {
            Some(m) => {
                how.push(format!(
                    "--mem {} (given{})",
                    format_mem(m),
                    if m == 0 { ": all of the node's" } else { "" }
                ));
                m
            }
            None => {
                let m = memory_limit(bytes, gpus > 0);
                how.push(format!(
                    "--mem {}: the largest {}'s {} × {MEM_FACTOR} + {MEM_EXTRA_MIB} MiB{}",
                    format_mem(m),
                    estimate.unit,
                    guard::bytes(bytes),
                    if gpus > 0 {
                        format!(" + {GPU_MEM_EXTRA_MIB} MiB for CUDA")
                    } else {
                        String::new()
                    }
                ));
                m
            }
        };
        how.push(format!("--cpus-per-task {cpus}: {cpus_why}"));
        how.push(format!("--gpus {gpus}: {gpus_why}"));
        JobResources {
            gpus,
            cpus,
            seconds,
            mem_mib,
            how,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_study::registry;
    use mantissa_study::study::{StudyConfig, StudyPrecision};

    fn study_estimate(workload: &str, size: u64, shards: u32) -> Estimate {
        let cfg = StudyConfig {
            workloads: vec![registry::find(workload).unwrap()],
            suite: Suite::Quick,
            cpu: true,
            precisions: StudyPrecision::parse_list("f32,f64,f64x2,comp64").unwrap(),
            classes: None,
            sizes: Some(vec![size]),
            threads: vec![1, 2],
            seed: 1,
        };
        Estimate::study(&[&StudyPlan::cpu(&cfg)], cfg.suite, shards)
    }

    #[test]
    fn a_tuning_run_deals_its_searches_round_robin_in_a_fixed_memory() {
        let e = Estimate::tune(7, 3);
        let units: Vec<usize> = e.shards.iter().map(|s| s.units).collect();
        assert_eq!(units, [3, 2, 2]);
        assert_eq!(e.units(), 7);
        assert_eq!(memory_limit(e.most_bytes(), true), 4096);
    }

    #[test]
    fn limits_add_the_stated_margins() {
        // 100 s: 2 × 100 + 600 = 800 s, up to 14 minutes.
        assert_eq!(time_limit(100.0), 14 * 60);
        assert_eq!(time_limit(0.0), 10 * 60);
        assert_eq!(time_limit(30.0), 11 * 60);
        assert_eq!(memory_limit(0, false), 512);
        assert_eq!(memory_limit(1 << 30, false), 1280 + 512);
        assert_eq!(memory_limit(1 << 30, true), 1280 + 512 + 1024);
    }

    #[test]
    fn a_bigger_study_asks_for_more_time_and_memory() {
        // LU of order 512 and 4,096: 512 times the arithmetic, 64 times the matrix.
        let small = study_estimate("lu", 512, 4);
        let big = study_estimate("lu", 4096, 4);
        assert_eq!(small.units(), big.units());
        assert_eq!(small.shards.len(), 4);
        let res = |e: &Estimate| JobResources::new(e, None, None, (0, "cpu"), (2, "given"));
        let (rs, rb) = (res(&small), res(&big));
        assert!(rb.seconds > rs.seconds, "{:?} {:?}", rs.how, rb.how);
        assert!(rb.mem_mib > rs.mem_mib, "{:?} {:?}", rs.how, rb.how);
        // What is given is kept.
        let given = JobResources::new(&big, Some(3600), Some(0), (1, "x"), (4, "y"));
        assert_eq!((given.seconds, given.mem_mib), (3600, 0));
        assert!(given.how[0].ends_with("(given)"), "{:?}", given.how);
        assert!(
            given.how[1].contains("all of the node's"),
            "{:?}",
            given.how
        );
    }

    #[test]
    fn more_shards_ask_for_less_time_each() {
        let one = study_estimate("sum", 1 << 22, 1);
        let four = study_estimate("sum", 1 << 22, 4);
        assert!(four.slowest().seconds < one.slowest().seconds);
        assert!(four.slowest().seconds * 4.0 >= one.slowest().seconds);
        // Memory follows the largest point, not the share.
        assert_eq!(four.most_bytes(), one.most_bytes());
    }
}
