//! What a `mantissa mathlib` run costs before it runs, unit by unit: a unit is one (function,
//! format) of the plan, in the order [`crate::run::run_plan`] measures them (formats outer,
//! functions inner), and `--shard I/N` gives unit k to shard k mod N. `mantissa slurm` sizes a
//! job array's time and memory from the largest shard ([`shard_estimates`]).
//!
//! The model is the run's own structure: a search is bounded by the plan's per-function budget
//! (plus the batch in progress when the budget ends), an exhaustive binary32 sweep by the
//! device's rate; the constants are from docs/BENCHMARKS.md ("Math-library accuracy").

use mantissa_report::Shard;

use crate::cpu::CpuLibrary;
use crate::format::Format;
use crate::functions::{Function, Variant};
use crate::measure::Plan;

/// Seconds a search may run past its budget: the batch in progress at the deadline and the batch
/// of seeds from the sweep, each 4,096 correctly rounded references; at erfinv's 228 µs (the
/// slowest reference, on one core) one batch is 0.93 s.
pub const SEARCH_OVERRUN_SECONDS: f64 = 2.0;

/// Seconds per exhaustive binary32 sweep of one GPU build: 2^32 inputs took 38-79 ms on an H200
/// and the settlement of its hard inputs and bin maxima about as long; 0.5 s leaves room for a
/// GPU several times slower.
pub const SWEEP_SECONDS: f64 = 0.5;

/// Seconds to build one GPU variant's module (NVRTC): the 56 modules of the binary32 benchmark
/// took about 6 of its 8.5-11.2 s.
pub const BUILD_SECONDS: f64 = 0.2;

/// Host bytes a unit holds besides its uniform sample: batches of 4,096 inputs with their
/// references and results, the pools of largest errors, a sweep's 4,096 bins and hard inputs.
pub const WORKING_BYTES: u64 = 64 << 20;

/// The estimate of one unit.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitEstimate {
    /// The function.
    pub function: Function,
    /// The format.
    pub format: Format,
    /// Estimated wall-clock seconds.
    pub seconds: f64,
    /// Estimated peak host bytes.
    pub bytes: u64,
}

/// The estimate of one shard: its units' seconds summed, the largest unit's bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardEstimate {
    /// Units it measures.
    pub units: usize,
    /// Their estimated seconds, in all.
    pub seconds: f64,
    /// The most bytes one of them holds.
    pub bytes: u64,
}

/// Every unit of `plan`, in run order; `gpu` says whether the run has a GPU (without one only
/// the CPU columns are measured, as [`crate::measure::measure`] does).
pub fn units(plan: &Plan, gpu: bool) -> Vec<UnitEstimate> {
    let mut out = Vec::new();
    for &format in &plan.formats {
        for &function in &plan.functions {
            out.push(unit(plan, function, format, gpu));
        }
    }
    out
}

/// The estimate of one (function, format), following [`crate::measure::measure`]: the GPU
/// variants it has (swept when binary32 univariate, else searched), the CPU libraries that have
/// it (always searched), one search for every searched column together.
fn unit(plan: &Plan, function: Function, format: Format, gpu: bool) -> UnitEstimate {
    let variants: Vec<Variant> = if gpu {
        plan.variants
            .iter()
            .copied()
            .filter(|&v| function.has_variant(format, v))
            .collect()
    } else {
        Vec::new()
    };
    let libraries: Vec<CpuLibrary> = plan
        .libraries
        .iter()
        .copied()
        .filter(|l| l.has(function, format))
        .collect();
    let exhaustive = format == Format::F32 && function.arity() == 1;
    let mut seconds = variants.len() as f64 * BUILD_SECONDS;
    let mut bytes = WORKING_BYTES;
    if exhaustive {
        seconds += variants.len() as f64 * SWEEP_SECONDS;
    }
    let searched = if exhaustive {
        // The swept default build joins the CPU columns' search; no CPU column, no search.
        if libraries.is_empty() {
            0
        } else {
            libraries.len() + usize::from(variants.contains(&Variant::Default))
        }
    } else {
        libraries.len() + variants.len()
    };
    if searched > 0 {
        seconds += plan.budget.as_secs_f64() + SEARCH_OVERRUN_SECONDS;
        if exhaustive {
            // The uniform sample (two f64 per input) and each column's results on it.
            bytes += plan.cpu_sample * (16 + 8 * searched as u64);
        }
    }
    UnitEstimate {
        function,
        format,
        seconds,
        bytes,
    }
}

/// The estimate of each of `shards` shards of `plan`: the units each owns
/// ([`mantissa_report::Shard::owns`]: unit k is shard k mod N's).
pub fn shard_estimates(plan: &Plan, gpu: bool, shards: u32) -> Vec<ShardEstimate> {
    let all = units(plan, gpu);
    (0..shards)
        .filter_map(|i| Shard::new(i, shards).ok())
        .map(|shard| {
            let mine = (0u64..)
                .zip(&all)
                .filter(|(k, _)| shard.owns(*k))
                .map(|(_, u)| u);
            mine.fold(ShardEstimate::default(), |s, u| ShardEstimate {
                units: s.units + 1,
                seconds: s.seconds + u.seconds,
                bytes: s.bytes.max(u.bytes),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn plan(functions: &[Function], formats: &[Format], budget: f64) -> Plan {
        Plan {
            functions: functions.to_vec(),
            formats: formats.to_vec(),
            variants: Variant::ALL.to_vec(),
            libraries: CpuLibrary::ALL.to_vec(),
            budget: Duration::from_secs_f64(budget),
            cpu_sample: 1 << 16,
            seed: 1,
        }
    }

    #[test]
    fn units_follow_the_run_order_and_the_budget() {
        let p = plan(&[Function::Sin, Function::Atan2], &Format::ALL, 5.0);
        let u = units(&p, false);
        let order: Vec<(Function, Format)> = u.iter().map(|u| (u.function, u.format)).collect();
        assert_eq!(
            order,
            vec![
                (Function::Sin, Format::F32),
                (Function::Atan2, Format::F32),
                (Function::Sin, Format::F64),
                (Function::Atan2, Format::F64),
            ]
        );
        // Without a GPU every unit is one CPU search: the budget and its overrun.
        for unit in &u {
            assert_eq!(unit.seconds, 5.0 + SEARCH_OVERRUN_SECONDS, "{unit:?}");
        }
        // binary32 sin keeps a uniform sample of 65,536 inputs and two columns' results.
        assert_eq!(u[0].bytes, WORKING_BYTES + (1 << 16) * (16 + 8 * 2));
        assert_eq!(u[1].bytes, WORKING_BYTES);
    }

    #[test]
    fn a_gpu_adds_sweeps_and_builds_and_no_cpu_column_means_no_search() {
        let mut p = plan(&[Function::Sin], &[Format::F32], 3.0);
        let variants = Variant::ALL
            .iter()
            .filter(|&&v| Function::Sin.has_variant(Format::F32, v))
            .count() as f64;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let with_gpu = units(&p, true)[0].seconds;
        let gpu_work = variants * (BUILD_SECONDS + SWEEP_SECONDS);
        assert!(variants >= 2.0, "sinf has a fast and an intrinsic build");
        assert!(
            close(with_gpu, gpu_work + 3.0 + SEARCH_OVERRUN_SECONDS),
            "{with_gpu}"
        );
        p.libraries.clear();
        let gpu_only = units(&p, true)[0].seconds;
        assert!(close(gpu_only, gpu_work), "{gpu_only}");
    }

    #[test]
    fn shards_share_units_round_robin_and_a_bigger_run_estimates_more() {
        let fns = &Function::ALL[..10];
        let p = plan(fns, &Format::ALL, 2.0);
        let shards = shard_estimates(&p, true, 4);
        // 20 units over 4 shards: 5 each.
        assert_eq!(
            shards.iter().map(|s| s.units).collect::<Vec<_>>(),
            vec![5; 4]
        );
        let total: f64 = shards.iter().map(|s| s.seconds).sum();
        let whole: f64 = units(&p, true).iter().map(|u| u.seconds).sum();
        assert!((total - whole).abs() < 1e-9);
        let slowest = |v: &[ShardEstimate]| v.iter().map(|s| s.seconds).fold(0.0, f64::max);
        // A longer budget, or more functions, costs the largest shard more.
        let longer = shard_estimates(&plan(fns, &Format::ALL, 10.0), true, 4);
        // 8 s more budget for each of a shard's 5 units.
        assert!((slowest(&longer) - slowest(&shards) - 5.0 * 8.0).abs() < 1e-9);
        let more = shard_estimates(&plan(&Function::ALL, &Format::ALL, 2.0), true, 4);
        assert!(slowest(&more) > 2.0 * slowest(&shards));
        // A larger CPU sample needs more memory.
        let mut big = plan(fns, &Format::ALL, 2.0);
        big.cpu_sample = 1 << 24;
        let most = |v: &[ShardEstimate]| v.iter().map(|s| s.bytes).max().unwrap();
        assert!(most(&shard_estimates(&big, true, 4)) > most(&shards) + (1 << 28));
    }
}
