//! GPU test of pinning ptxas's contractions (skips without a GPU; fails under
//! `MANTISSA_REQUIRE_GPU=1`): every shipped example (`examples/kernels/*/*.toml`, f64 and f32
//! programs, `examples/shadow`, `examples/diff/projector`; they need nvcc) under the `default`
//! and `fast` flag sets, its PTX pinned (`TrialRunner::pinned`) and run through the
//! TrialRunner as `mantissa shadow` runs an instrumented module, gives outputs bit-identical to
//! the program as written. Pinning needs ptxas and nvdisasm: without them the test fails (it
//! would test nothing). What each run pinned and compared is printed.

use mantissa_gpu::testing::{require_gpu_or_skip, require_nvcc_or_skip};
use mantissa_gpu::FlagSet;
use mantissa_harness::{pipelines, Base, RunnerOptions, Spec, TrialRunner, TrialTiming};

mod support;

use support::example_specs;

#[test]
fn every_pinned_example_computes_the_outputs_of_the_program_as_written() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    if require_nvcc_or_skip().is_none() {
        return;
    }
    let mut failures = Vec::new();
    for path in example_specs() {
        let spec = Spec::load(&path).unwrap_or_else(|e| panic!("{e}"));
        for flags in [FlagSet::DEFAULT, FlagSet::FAST] {
            let what = format!("{} {flags}", spec.name);
            let mut runner = TrialRunner::new(&gpu, &spec, flags, RunnerOptions::default())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let pinned = runner
                .base_module(&Base::Pinned)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let report = pinned.pinning.clone().unwrap_or_else(|| {
                panic!(
                    "{what}: {}",
                    pinned.notes.first().cloned().unwrap_or_default()
                )
            });
            let made = runner
                .make(pipelines::pinned())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let (outcome, _) = runner
                .run_variant(&made, TrialTiming::AccuracyOnly)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let compared: Vec<String> = outcome
                .outputs
                .iter()
                .map(|o| {
                    format!(
                        "{} {}/{} differ",
                        o.name, o.vs_baseline.differing, o.vs_baseline.elements
                    )
                })
                .collect();
            println!("{what}: {}; {}", report.summary(), compared.join(", "));
            assert!(!outcome.outputs.is_empty(), "{what}: no output compared");
            for o in &outcome.outputs {
                if o.vs_baseline.differing > 0 || o.vs_baseline.nonfinite_mismatches > 0 {
                    failures.push(format!(
                        "{what}: {}: {} of {} elements differ from the program as written",
                        o.name, o.vs_baseline.differing, o.vs_baseline.elements
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
