//! The tuning flow on the CPU: `examples/tune/relax` (see relax.cu: a contracting loop that
//! keeps about 6 digits in f32 and is nearly all of the work, beside a cancellation that keeps
//! none), at sizes the PTX interpreter affords, tuned through
//! [`mantissa_harness::interp_session::InterpSession`] with
//! [`mantissa_tune::flow::tune_session_until`]: the same stages as on a GPU (units, the shadow
//! run's demotion errors, the references, modes 1 and 2, the delta-debugging baseline and the
//! exhaustive search), every trial on the interpreter, times by its deterministic cost model
//! (f64 arithmetic counted twice). Needs NVRTC (skips without it; fails under
//! `MANTISSA_REQUIRE_NVRTC=1`); the shadow run's contraction pinning uses ptxas and nvdisasm
//! when found.
//!
//! What it checks, as crates/tune/tests/gpu_tune.rs checks it on a GPU:
//! - the run completes and the shadow run measured errors;
//! - one kernel has all of the modelled cost; one FISet holds the loop, another the
//!   cancellation; modes 1 and 2 choose the loop's alone, and every configuration demoting the
//!   cancellation misses 3 digits;
//! - every search's chosen configuration meets 3 digits (and, but for mode 1, 10% of the
//!   ideal speed-up);
//! - mode 2's choice reaches at least 90% of the best speed-up among the exhaustive search's
//!   configurations that meet 3 digits (the model has no noise: exactly);
//! - the chosen configurations, run again through the session, give the same digits.

use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::{Arch, Builder, FlagSet};
use mantissa_harness::interp_session::InterpSession;
use mantissa_harness::run::build_request;
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::{Session, Spec, TrialTiming};
use mantissa_ptx::fiset::FisetOptions;
use mantissa_tune::flow::{tune_session_until, Subject, TuneRequest, TuneRun};
use mantissa_tune::gpu::{relative_digits, TimingPolicy};
use mantissa_tune::{ErrorThreshold, Thresholds};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

const RELAX_CU: &str = include_str!("../../../examples/tune/relax.cu");

/// The line of relax.cu marked `// LINE:{name}`.
fn marked(name: &str) -> u32 {
    let tag = format!("// LINE:{name}");
    let found: Vec<u32> = RELAX_CU
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(&tag))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(found.len(), 1, "one {tag} in relax.cu");
    found[0]
}

/// relax at 256 elements (4 blocks) and 256 iterations: the loop still contracts to f32's last
/// digits, the cancellation still loses every digit, and the program as written costs about
/// 600 000 weighted instructions (0.6 model ms): the whole test takes seconds in a debug build.
const SIZES: [&str; 3] = ["n=256", "steps=256", "block=64"];

fn request() -> TuneRequest {
    TuneRequest {
        flags: FlagSet::DEFAULT,
        errors: vec![ErrorThreshold::Digits(3.0)],
        speedups: vec![10.0],
        modes: vec![1, 2],
        baseline: true,
        exhaustive: true,
        fiset: FisetOptions::default(),
        policy: TimingPolicy::default(),
        out: None,
        resume: false,
        shard: None,
    }
}

fn search<'r>(run: &'r TuneRun, strategy: &str) -> &'r mantissa_tune::strategy::Search {
    &run.searches
        .iter()
        .find(|s| s.search.strategy == strategy)
        .unwrap_or_else(|| panic!("no {strategy} search: {:?}", run.searches))
        .search
}

#[test]
fn the_tuning_flow_runs_on_the_interpreter() {
    if require_nvrtc_or_skip().is_none() {
        return;
    }
    let start = Instant::now();
    let path = Path::new("../../examples/tune/relax.toml");
    let overrides: Vec<SizeOverride> = SIZES.iter().map(|s| s.parse().unwrap()).collect();
    let spec = Spec::load_with(path, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let mut build = build_request(&spec, FlagSet::DEFAULT, None).unwrap();
    build.arch = Some(Arch::new(9, 0));
    let built = Builder::new()
        .build(&build)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut session = InterpSession::new(&spec, built.ptx).unwrap_or_else(|e| panic!("{e}"));
    let subject = Subject {
        name: &spec.name,
        dir: &spec.dir,
        flags: FlagSet::DEFAULT.name().to_string(),
        spec: Some(&spec),
    };
    let run = tune_session_until(
        &mut session,
        &subject,
        &request(),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{}", mantissa_tune::text::render(&run));
    println!("tuned in {:.1} s", start.elapsed().as_secs_f64());

    assert_eq!(run.device, "the PTX interpreter");
    assert!(run.coverage.measured > 0, "{:?}", run.coverage);
    assert!(
        run.references.t64.median_ms > run.references.t32.median_ms,
        "the all-f32 program is modelled cheaper: {:?}",
        run.references
    );

    // Table 3's share of time: one kernel, all of the modelled cost, launched once per run.
    assert_eq!(run.profile.len(), 1, "{:?}", run.profile);
    let p = &run.profile[0];
    assert_eq!(p.fisets.function, "relax");
    assert_eq!((p.launches, p.share), (Some(1), Some(1.0)));
    assert!(p.time_ms.is_some_and(|t| t > 0.0), "{p:?}");

    // The FISets separate the loop from the cancellation.
    let (loop_line, cancel_line) = (marked("loop"), marked("cancel"));
    let holds = |u: &mantissa_tune::TuneUnit, line: u32| u.lines.iter().any(|(_, l)| *l == line);
    let loop_sets: Vec<usize> = (0..run.fisets.len())
        .filter(|&i| holds(&run.fisets[i], loop_line))
        .collect();
    assert_eq!(
        loop_sets.len(),
        1,
        "one FISet holds the loop: {:#?}",
        run.fisets
    );
    let l = loop_sets[0];
    assert!(
        !holds(&run.fisets[l], cancel_line),
        "the loop's FISet holds the cancellation"
    );
    assert!(
        run.fisets.iter().any(|u| holds(u, cancel_line)),
        "a FISet holds the cancellation"
    );

    let t = Thresholds {
        error: ErrorThreshold::Digits(3.0),
        speedup_pct: Some(10.0),
    };
    for s in &run.searches {
        if let Some(trial) = &s.search.chosen_trial {
            assert!(trial.meets_error(&t), "{}: {trial:?}", s.label);
            if s.search.strategy != "mode 1" {
                assert!(trial.meets_speed(&t), "{}: {trial:?}", s.label);
            }
        }
    }

    // Modes 1 and 2 choose the loop alone; whatever demotes the cancellation misses 3 digits.
    let want: mantissa_tune::Config = [l].into_iter().collect();
    for m in ["mode 1", "mode 2"] {
        assert_eq!(search(&run, m).chosen.as_ref(), Some(&want), "{m}");
    }
    let exhaustive = search(&run, "exhaustive");
    assert!(
        exhaustive.chosen.as_ref().is_some_and(|c| c.contains(&l)),
        "the best demotes the loop: {:?}",
        exhaustive.chosen
    );
    for (c, trial) in &exhaustive.log {
        if c.iter().any(|&u| holds(&run.fisets[u], cancel_line)) {
            assert!(trial.digits < 3.0, "{c:?} keeps {} digits", trial.digits);
        }
    }

    // Mode 2 stops at the first configuration meeting both thresholds, not at the best: it
    // must reach 90% of the best speed-up the exhaustive search found within 3 digits.
    let best = exhaustive
        .log
        .iter()
        .filter(|(_, trial)| trial.meets_error(&t))
        .filter_map(|(_, trial)| trial.speedup_pct)
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(
        best > 10.0,
        "the exhaustive search found no speed-up: {best}"
    );
    let m2 = search(&run, "mode 2")
        .chosen_trial
        .as_ref()
        .expect("mode 2 chose");
    let sm = m2.speedup_pct.expect("mode 2's choice is timed");
    assert!(
        sm >= 0.9 * best,
        "mode 2's {sm:.1}% is below 90% of the exhaustive best {best:.1}%"
    );

    // Each chosen configuration run again through the session: the same digits, exactly.
    for s in &run.searches {
        let (Some(chosen), Some(trial)) = (&s.search.chosen, &s.search.chosen_trial) else {
            continue;
        };
        let units = run.units(s.units);
        let c = mantissa_tune::gpu::configuration(units, chosen, &s.label);
        let again = session
            .trial(&c, TrialTiming::AccuracyOnly)
            .unwrap_or_else(|e| panic!("{}: {e}", s.label));
        let digits = again
            .outputs
            .iter()
            .map(|o| relative_digits(&o.vs_baseline))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(digits, trial.digits, "{}: run again", s.label);
    }
    println!("checked in {:.1} s", start.elapsed().as_secs_f64());
}
