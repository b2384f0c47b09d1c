//! `TrialRunner::run_instrumented` on the GPU (skips without one): the baseline's PTX with
//! execution counters (the counting pass, inline atomics: no runtime to merge) runs as a trial
//! of `examples/shadow/shadow.toml` (n = 4096 threads per kernel, no setup steps):
//! - the counters are read after the checked run and before the warm-up and timed repeats, so
//!   each kernel's first instruction counts exactly one execution per thread (4096), not one per
//!   thread per repeat;
//! - they start from zero in every trial (the restore rewrites the module's globals), so a
//!   second trial reads the same counts;
//! - the outputs compare bit-identical with the baseline, and the trial is timed as asked.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::FlagSet;
use mantissa_harness::{RunnerOptions, Spec, TrialRunner, TrialTiming};
use mantissa_ptx::pass::count::{count, CountOptions, Counter, Which, COUNTS_GLOBAL};
use std::path::Path;

#[test]
fn counters_are_read_after_the_checked_run_only_and_restart_from_zero() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let spec = Spec::load(Path::new("../../examples/shadow/shadow.toml")).unwrap();
    let opts = RunnerOptions {
        baseline_timing: TrialTiming::AccuracyOnly,
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(&gpu, &spec, FlagSet::DEFAULT, opts).unwrap();
    assert!(
        runner.target_arch().is_some(),
        "the PTX names its sm_ target"
    );
    let module = mantissa_ptx::parse(&runner.built().ptx).module;
    let counted = count(
        &module,
        CountOptions {
            which: Which::Every,
            counter: Counter::InlineAtomic,
        },
    )
    .unwrap();
    let ptx = counted.module.to_string();
    let timing = TrialTiming::Timed {
        warmup: 1,
        repeats: 3,
    };
    let mut seen = Vec::new();
    for trial in 0..2 {
        let (outcome, globals) = runner
            .run_instrumented(&ptx, &[COUNTS_GLOBAL], timing)
            .unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        for o in &outcome.outputs {
            assert_eq!(o.vs_baseline.differing, 0, "trial {trial}: {}", o.name);
        }
        assert_eq!(outcome.timing.as_ref().map(|t| t.samples_ms.len()), Some(3));
        assert_eq!(globals.len(), 1);
        assert_eq!(globals[0].0, COUNTS_GLOBAL);
        let counts = counted.report.decode(&globals[0].1).unwrap();
        for kernel in ["seeded", "clean"] {
            let first = counted
                .report
                .sites
                .iter()
                .find(|s| s.function == kernel)
                .unwrap_or_else(|| panic!("no site in {kernel}"));
            assert_eq!(
                counts[first.index as usize], 4096,
                "trial {trial}: {kernel}'s first instruction, once per thread"
            );
        }
        seen.push(counts);
    }
    assert_eq!(
        seen[0], seen[1],
        "every trial starts its counters from zero"
    );
}
