//! The trial runner on the GPU (skips without one):
//! - the shipped examples give bit-identical outputs through `TrialRunner` (inputs restored
//!   device to device, modules through the JIT cache) and through the one-shot path (fresh
//!   buffers, the driver's own PTX load), as written and with `--demote all`;
//! - setup steps, copies with offsets and output views: values computed here, the restore point
//!   taken after setup (a `__device__` counter the setup bumps reads 1 in every trial);
//! - trials of several configurations follow each other on one runner, and only a lost device
//!   or a wrong spec is fatal.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{FlagSet, HostData};
use mantissa_harness::data::{materialize, to_f64};
use mantissa_harness::exec::execute;
use mantissa_harness::spec::{Quantity, StepKind, View};
use mantissa_harness::validate::plan;
use mantissa_harness::{
    Configuration, Demotion, RunnerOptions, Spec, TrialError, TrialRunner, TrialTiming,
};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mantissa-trial-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn bits(data: &HostData) -> Vec<u64> {
    to_f64(data).iter().map(|x| x.to_bits()).collect()
}

/// The one-shot path's outputs of `ptx` (the driver JIT-compiles it: the old way).
fn one_shot(
    gpu: &mantissa_gpu::Gpu,
    spec: &Spec,
    ptx: &str,
    built: &mantissa_harness::run::Built,
) -> Vec<(String, HostData)> {
    let inputs = materialize(spec).unwrap();
    let p = plan(spec, &built.ptx, &built.lowered, &inputs.symbols).unwrap();
    let symbols: Vec<(String, Vec<u8>)> = p
        .symbols
        .iter()
        .map(|s| s.ptx_name.clone())
        .zip(inputs.symbols.iter().map(|s| s.1.clone()))
        .collect();
    let module = gpu.load_ptx(&spec.name, ptx).unwrap();
    execute(gpu, &module, &symbols, spec, &p, &inputs)
        .unwrap()
        .outputs
}

#[test]
fn the_examples_are_bit_identical_through_the_trial_runner_and_the_one_shot_path() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    for name in ["float_literal", "options", "heat2d", "nbody", "gauss"] {
        let path = Path::new("../../examples/kernels")
            .join(name)
            .join(format!("{name}.toml"));
        let spec = Spec::load(&path).unwrap();
        let opts = RunnerOptions {
            download_outputs: true,
            baseline_timing: TrialTiming::Timed {
                warmup: 1,
                repeats: 2,
            },
            ..RunnerOptions::default()
        };
        let mut runner = TrialRunner::new(&gpu, &spec, FlagSet::DEFAULT, opts).unwrap();
        let built = runner.built();
        let old = one_shot(&gpu, &spec, &built.ptx, built);
        let new = &runner.baseline().downloaded;
        assert_eq!(old.len(), new.len(), "{name}");
        for ((on, od), (nn, nd)) in old.iter().zip(new) {
            assert_eq!(on, nn);
            assert_eq!(bits(od), bits(nd), "{name}: output {on} as written");
        }
        for o in &runner.baseline().outputs {
            assert_eq!(o.vs_baseline.differing, 0, "{name}: {}", o.name);
        }
        let all = Configuration::Demote(Demotion::all());
        let ptx = runner.ptx_of(&all).unwrap().unwrap();
        let trial = runner.trial(&all, TrialTiming::AccuracyOnly).unwrap();
        let old = one_shot(&gpu, &spec, &ptx, runner.built());
        for ((on, od), (_, nd)) in old.iter().zip(&trial.downloaded) {
            assert_eq!(bits(od), bits(nd), "{name}: output {on} demoted");
        }
        // The same configuration again: cached module, same bits.
        let again = runner.trial(&all, TrialTiming::AccuracyOnly).unwrap();
        for ((_, a), (_, b)) in trial.downloaded.iter().zip(&again.downloaded) {
            assert_eq!(bits(a), bits(b), "{name}: second trial");
        }
        assert_eq!(
            format!("{:?}", trial.outputs),
            format!("{:?}", again.outputs),
            "{name}"
        );
        println!(
            "{name}: as written and demote(all) bit-identical to the one-shot path; {}",
            trial
                .outputs
                .iter()
                .map(|o| format!("{} differs in {}", o.name, o.vs_baseline.differing))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

const KERNELS: &str = r#"
__device__ int calls;
extern "C" __global__ void init(double* a) {
    a[threadIdx.x] = 10.0 * threadIdx.x;
    if (threadIdx.x == 0) calls += 1;
}
extern "C" __global__ void bump(double* a, double* seen) {
    a[threadIdx.x] += 1.0;
    if (threadIdx.x == 0) seen[0] = calls;
}
"#;

const SPEC: &str = r#"
[source]
file = "kernels.cu"

[buffers.a]
type = "f64"
len = 8

[buffers.b]
type = "f64"
len = 12
init = { constant = -1.0 }

[buffers.seen]
type = "f64"
len = 1

[[steps]]
launch = "init"
grid = 1
block = 8
args = ["a"]

[[steps]]
copy = { from = "a", to = "b", len = 4 }

[[steps]]
launch = "bump"
grid = 1
block = 8
args = ["a", "seen"]

# Quantities for the copy's offsets (taken out of the spec below).
[[steps]]
copy = { from = "a", to = "b", len = 2 }

[[steps]]
copy = { from = "a", to = "b", len = 5 }

[[outputs]]
buffer = "b"

[[outputs]]
buffer = "a"

[[outputs]]
buffer = "seen"
"#;

/// The spec with its first step moved to `setup`, the copy reading from element 2 and writing
/// from element 5, and views on `b` (elements 5..9) and `a` (1, 4, 7).
fn setup_spec(dir: &Path) -> Spec {
    std::fs::write(dir.join("kernels.cu"), KERNELS).unwrap();
    std::fs::write(dir.join("spec.toml"), SPEC).unwrap();
    let mut spec = Spec::load(&dir.join("spec.toml")).unwrap();
    let take_len = |s: &mut Spec| -> Quantity {
        match s.steps.pop().unwrap().kind {
            StepKind::Copy { len: Some(q), .. } => q,
            other => panic!("{other:?}"),
        }
    };
    let five = take_len(&mut spec);
    let two = take_len(&mut spec);
    let init = spec.steps.remove(0);
    spec.setup.push(init);
    match &mut spec.steps[0].kind {
        StepKind::Copy {
            src_offset,
            dst_offset,
            ..
        } => {
            *src_offset = Some(two);
            *dst_offset = Some(five);
        }
        other => panic!("{other:?}"),
    }
    spec.outputs[0].view = Some(View {
        offset: 5,
        len: 4,
        stride: 1,
    });
    spec.outputs[1].view = Some(View {
        offset: 1,
        len: 3,
        stride: 3,
    });
    spec
}

#[test]
fn setup_steps_copies_with_offsets_and_views() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let dir = scratch("setup");
    let spec = setup_spec(&dir);
    let opts = RunnerOptions {
        download_outputs: true,
        baseline_timing: TrialTiming::Timed {
            warmup: 1,
            repeats: 3,
        },
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(&gpu, &spec, FlagSet::DEFAULT, opts).unwrap();
    let want_b = [
        -1.0, -1.0, -1.0, -1.0, -1.0, 20.0, 30.0, 40.0, 50.0, -1.0, -1.0, -1.0,
    ];
    let want_a: Vec<f64> = (0..8).map(|i| 10.0 * f64::from(i) + 1.0).collect();
    for round in 0..3 {
        let outcome = if round == 0 {
            runner.baseline().clone()
        } else {
            runner
                .trial(
                    &Configuration::AsWritten,
                    TrialTiming::Timed {
                        warmup: 0,
                        repeats: 2,
                    },
                )
                .unwrap()
        };
        let got = |name: &str| {
            to_f64(
                &outcome
                    .downloaded
                    .iter()
                    .find(|(n, _)| n == name)
                    .unwrap()
                    .1,
            )
        };
        assert_eq!(got("b"), want_b, "round {round}");
        assert_eq!(got("a"), want_a, "round {round}");
        // The setup ran once in this trial: the counter was restored, then bumped once.
        assert_eq!(got("seen"), [1.0], "round {round}");
        assert!(outcome.timing.is_some());
        for o in &outcome.outputs {
            assert_eq!(o.vs_baseline.differing, 0, "{}", o.name);
        }
        assert_eq!(outcome.outputs[0].vs_baseline.elements, 4);
        assert_eq!(outcome.outputs[1].vs_baseline.elements, 3);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn trials_follow_each_other_on_one_runner_and_errors_say_whether_to_go_on() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let dir = scratch("refused");
    let spec = setup_spec(&dir);
    let mut runner =
        TrialRunner::new(&gpu, &spec, FlagSet::DEFAULT, RunnerOptions::default()).unwrap();
    // The empty demotion (marked build, rewrite, JIT) gives the baseline's bits.
    let none = Configuration::Demote(Demotion::none());
    let t = runner.trial(&none, TrialTiming::AccuracyOnly).unwrap();
    assert!(t.outputs.iter().all(|o| o.vs_baseline.differing == 0));
    let err = TrialError::Refused("x".into());
    assert!(!err.is_fatal());
    assert!(TrialError::DeviceLost("y".into()).is_fatal());
    let again = runner
        .trial(&Configuration::AsWritten, TrialTiming::AccuracyOnly)
        .unwrap();
    assert!(again.outputs.iter().all(|o| o.vs_baseline.differing == 0));
    std::fs::remove_dir_all(&dir).ok();
}
