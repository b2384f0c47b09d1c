//! GPU tests of `chains`: the multiplication chain equals the CPU's bit for bit in every twin
//! precision (one thread, and every rotation on many threads); do/undo in div-rn equals the CPU
//! bit for bit in f32, comp32 and f32x2 (one thread and many); the approximate modes run, pass
//! their PTX check and stay within a loose error bound; a small plan of both workloads measures
//! without failures. They skip without a GPU and fail under `MANTISSA_REQUIRE_GPU=1`.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::DeviceWords;
use mantissa_gpu::TimingOptions;
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};
use mantissa_report::{Backend, Status};
use mantissa_study::chains::{
    chain_factors, chain_product, doundo, doundo_operands, gpu_points, DivMode, Experiment,
    GpuRunner,
};
use mantissa_study::inputs::InputClass;
use mantissa_study::study::{StudyConfig, StudyPrecision, Suite};
use mantissa_study::workload::GpuMeasure;

const ONCE: TimingOptions = TimingOptions { warmup: 0, reps: 1 };

/// The words of a value (its exact bits).
fn bits<T: DeviceWords>(x: T) -> Vec<u64> {
    let mut w = Vec::new();
    x.push_words(&mut w);
    w.into_iter().map(mantissa_gpu::Word::bits).collect()
}

/// Factor sets: the thesis's classes at several lengths (including overflow in f32 at 1000),
/// powers of two, and values that underflow.
fn factor_sets() -> Vec<(String, Vec<f64>)> {
    let mut sets = Vec::new();
    for k in [6, 10] {
        for n in [1u64, 2, 10, 300, 1000] {
            let c = InputClass::chain(k);
            sets.push((format!("{} n={n}", c.name), chain_factors(&c, n, 11)));
        }
    }
    sets.push((
        "powers of two".into(),
        [3, -7, 20, -30, 1, 0, 45, -60, 5]
            .iter()
            .map(|&k| 2f64.powi(k))
            .collect(),
    ));
    sets.push(("underflow".into(), vec![1.5e-3; 200]));
    sets
}

fn chain_matches<T: DeviceWords>(runner: &mut GpuRunner<'_>) {
    for (name, f) in factor_sets() {
        let xs: Vec<T> = f.iter().map(|&x| T::from_f64(x)).collect();
        let want = chain_product(&xs);
        let (got, _) = runner.chain_products(&xs, (1, 1), ONCE).unwrap();
        assert_eq!(
            bits(got[0]),
            bits(want),
            "{} {name}: GPU {:?} CPU {:?}",
            T::precision_name(),
            got[0],
            want
        );
        // Many threads: thread t multiplies the rotation starting at factor t mod n.
        // More threads than the longest set has factors, so that the last rotation (t = n − 1)
        // and the wrap back to the first (t = n) both occur.
        let (got, _) = runner.chain_products(&xs, (9, 128), ONCE).unwrap();
        assert_eq!(got.len(), 1152);
        let n = xs.len();
        for t in [0, 1, 7, n.saturating_sub(1), n, 1151] {
            let s = t % n;
            let rotated: Vec<T> = xs[s..].iter().chain(&xs[..s]).copied().collect();
            assert_eq!(
                bits(got[t]),
                bits(chain_product(&rotated)),
                "{} {name} thread {t}",
                T::precision_name()
            );
        }
    }
}

#[test]
fn chains_are_bit_identical_to_the_cpu_in_every_twin_precision() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    chain_matches::<f32>(&mut runner);
    chain_matches::<f64>(&mut runner);
    chain_matches::<f32x2>(&mut runner);
    chain_matches::<f64x2>(&mut runner);
    chain_matches::<Comp32>(&mut runner);
    chain_matches::<Comp64>(&mut runner);
    chain_matches::<CompNorm32>(&mut runner);
    chain_matches::<CompNorm64>(&mut runner);
}

fn doundo_rn_matches<T: DeviceWords>(runner: &mut GpuRunner<'_>) {
    for class in InputClass::doundo_classes() {
        // 100003 steps: the 8-step batches and a tail.
        let (x0s, ys) = doundo_operands(&class, 64, 100_003, 5);
        let x: Vec<T> = x0s.iter().map(|&v| T::from_f64(v)).collect();
        let y: Vec<T> = ys.iter().map(|&v| T::from_f64(v)).collect();
        let (got, _, counts) = runner
            .doundo_run(DivMode::Rn, &x[..1], &y, (1, 1), ONCE)
            .unwrap();
        let want = doundo(x[0], &y);
        assert_eq!(
            bits(got[0]),
            bits(want),
            "{} {}: GPU {:?} CPU {:?}",
            T::precision_name(),
            class.name,
            got[0],
            want
        );
        assert!(counts.op("div.rn.f32") > 0);
        let (got, _, _) = runner
            .doundo_run(DivMode::Rn, &x, &y[..1000], (2, 32), ONCE)
            .unwrap();
        for (t, g) in got.iter().enumerate() {
            assert_eq!(
                bits(*g),
                bits(doundo(x[t], &y[..1000])),
                "{} {} thread {t}",
                T::precision_name(),
                class.name
            );
        }
    }
}

#[test]
fn doundo_div_rn_is_bit_identical_to_the_cpu() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    doundo_rn_matches::<f32>(&mut runner);
    doundo_rn_matches::<Comp32>(&mut runner);
    doundo_rn_matches::<f32x2>(&mut runner);
}

fn approx_modes_run<T: DeviceWords>(runner: &mut GpuRunner<'_>) {
    for class in InputClass::doundo_classes() {
        let steps = 100_000u64;
        let (x0s, ys) = doundo_operands(&class, 1, steps, 9);
        let x: Vec<T> = x0s.iter().map(|&v| T::from_f64(v)).collect();
        let y: Vec<T> = ys.iter().map(|&v| T::from_f64(v)).collect();
        let rn = doundo(x[0], &y);
        for mode in [DivMode::Full, DivMode::Approx] {
            // doundo_run refuses to run when the PTX check fails, so Ok means it passed.
            let (got, _, counts) = runner
                .doundo_run(mode, &x, &y, (1, 1), ONCE)
                .unwrap_or_else(|e| panic!("{} {}: {e}", mode.name(), T::precision_name()));
            assert!(counts.op(mode.instruction()) > 0);
            let (g, x0) = (got[0].to_f64(), x[0].to_f64());
            // Each division is within 2 ulp (PTX ISA), so far below this after 10^5 steps.
            let rel = ((g - x0) / x0).abs();
            assert!(
                got[0].is_finite() && rel < 0.05,
                "{} {} {}: x0 {x0:e} -> {g:e}",
                mode.name(),
                T::precision_name(),
                class.name
            );
            eprintln!(
                "{} {} {}: rel {rel:.3e} vs div-rn {:.3e} ({})",
                mode.name(),
                T::precision_name(),
                class.name,
                ((rn.to_f64() - x0) / x0).abs(),
                if bits(got[0]) == bits(rn) {
                    "same bits"
                } else {
                    "differs"
                }
            );
        }
    }
}

#[test]
fn approximate_division_modes_run_and_pass_their_ptx_check() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    approx_modes_run::<f32>(&mut runner);
    approx_modes_run::<Comp32>(&mut runner);
    approx_modes_run::<f32x2>(&mut runner);
}

/// A small plan of both workloads (the quick plan's shapes, shorter runs) measures without a
/// failed point, with the PTX counts and thread statistics in `extra`.
#[test]
fn a_small_gpu_plan_measures_every_point() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let cfg = StudyConfig {
        workloads: vec![
            &mantissa_study::chains::CHAIN,
            &mantissa_study::chains::DOUNDO,
        ],
        suite: Suite::Quick,
        cpu: false,
        precisions: StudyPrecision::defaults(),
        classes: None,
        sizes: Some(vec![100, 20_000]),
        threads: vec![1],
        seed: 1,
    };
    let full = mantissa_study::runner::full_device(&gpu);
    let mut runner = GpuRunner::new(&gpu);
    let timing = TimingOptions { warmup: 1, reps: 2 };
    let mut points = gpu_points(&cfg, Experiment::Chain, full);
    points.extend(gpu_points(&cfg, Experiment::DoUndo, full));
    for p in &points {
        let m = runner
            .measure(p, timing)
            .unwrap_or_else(|e| panic!("{}: {e}", p.key("gpu")));
        assert_eq!(m.status, Status::Ok, "{}: {:?}", p.key("gpu"), m.note);
        assert!(m.time.is_some() && m.error.is_some());
        if p.workload == "doundo" {
            let mode = DivMode::from_name(p.algorithm).unwrap();
            assert!(m.extra[&format!("ptx.{}", mode.instruction())] > 0.0);
            assert!(m.extra["gsteps_per_s"] > 0.0);
        }
        if p.backend != (Backend::gpu(1, 1)) {
            assert!(m.extra["threads_scored"] > 0.0, "{}", p.key("gpu"));
            assert_eq!(m.extra["threads"], f64::from(full.0) * f64::from(full.1));
        }
    }
}
