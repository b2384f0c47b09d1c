//! GPU tests of `mantissa_mathlib::gpu` (skip with a printed reason without a GPU; fail under
//! MANTISSA_REQUIRE_GPU=1). The device's verdicts are checked against the CPU's exact references
//! (`reference::reference`, `format::ulp_error`), against the host's copy of the scoring
//! (`gpu::host`), and the sweep's reductions against per-input scoring of the same inputs.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::Gpu;
use mantissa_mathlib::format::{ulp_error, Exact};
use mantissa_mathlib::gpu::host::{
    self, near_boundary, power_of_two_near, reference_bound, ulp32, ulp64,
};
use mantissa_mathlib::gpu::source::bound_factor;
use mantissa_mathlib::gpu::{bin_of, MathGpu, Score, Sweep, BINS};
use mantissa_mathlib::reference::reference;
use mantissa_mathlib::{Format, Function, Variant};
use mantissa_num::big;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One test at a time on the device: timings stay meaningful and memory use bounded.
static DEVICE: Mutex<()> = Mutex::new(());

struct Device {
    _turn: MutexGuard<'static, ()>,
    gpu: Arc<Gpu>,
    math: &'static MathGpu,
}

/// The shared device and its module cache, or `None` after printing why the test skips.
fn device() -> Option<Device> {
    let gpu = require_gpu_or_skip()?;
    static MATH: OnceLock<MathGpu> = OnceLock::new();
    let math = MATH.get_or_init(|| MathGpu::with_shared(gpu.clone()));
    let turn = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    Some(Device {
        _turn: turn,
        gpu,
        math,
    })
}

const ONE: u64 = 0x3f80_0000;

fn sweep(math: &MathGpu, f: Function, v: Variant, range: std::ops::Range<u64>) -> Sweep {
    let mut calls = Vec::new();
    let s = math
        .sweep_f32(f, v, range.clone(), &mut |done, total| {
            calls.push((done, total))
        })
        .unwrap_or_else(|e| panic!("sweep of {f:?} {v:?}: {e}"));
    let total = range.end - range.start;
    assert_eq!(
        calls.last(),
        Some(&(total, total)),
        "progress ends at the total"
    );
    assert!(
        calls.windows(2).all(|w| w[0].0 < w[1].0),
        "progress increases"
    );
    check_counts(&s, total);
    s
}

/// The sweep's numbers add up: every input once, bins consistent with the totals.
fn check_counts(s: &Sweep, total: u64) {
    assert_eq!(s.inputs, total);
    assert_eq!(
        s.finite + s.infinite,
        s.inputs,
        "every input finite or infinite"
    );
    assert_eq!(s.bins.len(), BINS);
    let bin_inputs: u64 = s.bins.iter().map(|b| b.count + b.infinite).sum();
    let bin_hard: u64 = s.bins.iter().map(|b| b.hard).sum();
    assert_eq!(bin_inputs, total);
    assert_eq!(bin_hard, s.hard_total);
    assert_eq!(s.hard.len() as u64, s.hard_total.min(1 << 22));
    assert!(
        s.hard.windows(2).all(|w| w[0] < w[1]),
        "hard inputs sorted and distinct"
    );
    assert!(s.not_correctly_rounded <= s.inputs);
    assert!(s.max_ulps >= 0.0 && s.sum_ulps >= 0.0 && s.sum_ulps.is_finite());
    assert!(s.device_ms > 0.0);
    if total > 0 {
        let b = &s.bins[bin_of(s.argmax)];
        assert_eq!(b.max_ulps, s.max_ulps);
        assert!(s.bins.iter().all(|b| b.max_ulps <= s.max_ulps));
    }
}

/// The exact error on the CPU, and the correctly rounded value; `None` when the reference
/// cannot decide. A correct overflow (the result and the rounding both ±inf against a finite
/// exact value) is 0, as the device counts it (`format::ulp_error` says infinite there).
fn cpu_error(f: Function, x: f32, y: f32, result: f32) -> Option<(f64, f64, Exact)> {
    let args = if f.arity() == 2 {
        vec![x as f64, y as f64]
    } else {
        vec![x as f64]
    };
    let r = reference(f, &args, Format::F32).ok()?;
    let mut e = ulp_error(Format::F32, result as f64, &r.exact);
    if e.is_infinite() && result.is_infinite() && result as f64 == r.rounded {
        e = 0.0;
    }
    Some((e, r.rounded, r.exact))
}

/// Checks device scores against the CPU: estimates within `tolerance` (1e-6 ulps, say; relative
/// 2^-50 more for huge errors) except where the device said hard, the rounded reference correct
/// wherever it is not hard, and every hard input's exact value within twice the bound of a
/// rounding boundary or of a power of two (where the ulp changes). Returns how many were
/// compared (the CPU's reference decided).
fn check_against_cpu(
    f: Function,
    xs: &[f32],
    ys: &[f32],
    scores: &[Score],
    tolerance: &dyn Fn(usize) -> f64,
) -> usize {
    let mut compared = 0;
    for (i, s) in scores.iter().enumerate() {
        let y = if f.arity() == 2 { ys[i] } else { 0.0 };
        let Some((exact_ulps, rounded, exact)) = cpu_error(f, xs[i], y, s.result) else {
            continue;
        };
        compared += 1;
        let what = format!(
            "{f:?}({:e}{}) = {:e}, reference {:e}",
            xs[i],
            if f.arity() == 2 {
                format!(", {y:e}")
            } else {
                String::new()
            },
            s.result,
            s.reference
        );
        if exact_ulps.is_infinite() || s.ulps.is_infinite() {
            assert_eq!(s.ulps, exact_ulps, "{what}");
        } else if !s.hard {
            let tol = tolerance(i) + exact_ulps * 2f64.powi(-50);
            assert!(
                (s.ulps - exact_ulps).abs() <= tol,
                "{what}: device {} vs exact {exact_ulps} ulps",
                s.ulps
            );
        }
        if !s.hard && s.reference.is_finite() {
            let dev_rounded = s.reference as f32 as f64;
            assert!(
                dev_rounded == rounded,
                "{what}: rounds to {dev_rounded:e}, correctly {rounded:e}"
            );
        }
        if s.hard {
            let Exact::Finite(z) = &exact else {
                panic!("{what}: hard, but the exact value is {exact:?}");
            };
            let z = big::to_f64(z).abs();
            let mut b = 2.0 * reference_bound(s.reference, bound_factor(f)) + ulp64(z);
            let x = xs[i] as f64;
            if f == Function::Lgamma && (-23.5..=-2.2).contains(&x) {
                // The reflection region's reference carries an absolute bound of about
                // 2^-48 (|log(π/|x·sinpi x|)| + |lgamma(−x)| + 1); its two terms are each
                // about lgamma(−x) in size.
                let l2 = libm::lgamma(-x).abs();
                b += 2.0 * 2f64.powi(-48) * (2.0 * l2 + 1.0);
            }
            assert!(
                near_boundary(z, b) || power_of_two_near(z, b) != 0.0,
                "{what}: hard, but the exact value {z:e} is not within {b:e} of a boundary or a power of two"
            );
        }
    }
    compared
}

/// Inputs worth checking from a sweep: a regular sample, every bin's argmax, the hard ones.
fn sample_of(s: &Sweep, range: &std::ops::Range<u64>, count: u64) -> Vec<f32> {
    let step = ((range.end - range.start) / count).max(1);
    let mut bits: Vec<u32> = (range.start..range.end)
        .step_by(step as usize)
        .map(|b| b as u32)
        .collect();
    bits.extend(
        s.bins
            .iter()
            .filter(|b| b.count + b.infinite > 0)
            .map(|b| b.argmax),
    );
    bits.extend(s.hard.iter().take(2000));
    bits.sort_unstable();
    bits.dedup();
    bits.into_iter().map(f32::from_bits).collect()
}

/// sinf, expf, logf, sqrtf over 2^24 inputs from 1.0: the device's estimates agree with the
/// exact errors, its roundings are correct where not hard, its hard inputs are near boundaries,
/// and sqrtf is correctly rounded everywhere (IEEE: at most half an ulp).
#[test]
fn sweeps_agree_with_the_cpu_reference() {
    let Some(d) = device() else { return };
    let range = ONE..ONE + (1 << 24);
    for f in [Function::Sin, Function::Exp, Function::Log, Function::Sqrt] {
        let s = sweep(d.math, f, Variant::Default, range.clone());
        eprintln!(
            "{:>5}: max {:.4} ulps at {:e}, mean {:.4}, {} not correctly rounded, {} hard, {:.1} ms",
            f.name(),
            s.max_ulps,
            f32::from_bits(s.argmax),
            s.mean_ulps(),
            s.not_correctly_rounded,
            s.hard_total,
            s.device_ms
        );
        assert_eq!(s.infinite, 0, "{f:?}: no special values in [1, 4)");
        assert!(
            s.max_ulps < 4.0,
            "{f:?}: CUDA documents at most 2 ulps here"
        );
        if f == Function::Sqrt {
            assert_eq!(s.not_correctly_rounded, 0, "sqrtf is IEEE by default");
            // At most half an ulp, up to the reference's bound over the f32 spacing.
            assert!(s.max_ulps <= 0.5 + 1e-6, "sqrtf max {} ulps", s.max_ulps);
        }
        let xs = sample_of(&s, &range, 3000);
        let scores = d.math.score_f32(f, Variant::Default, &xs, &[]).unwrap();
        // The argmax re-scored gives the sweep's maximum exactly; nothing sampled exceeds it.
        let at_max = xs.iter().position(|x| x.to_bits() == s.argmax).unwrap();
        assert_eq!(scores[at_max].ulps, s.max_ulps, "{f:?}");
        // (The bins' keys hold errors to f32 precision: among errors that close, any argmax.)
        assert!(
            scores
                .iter()
                .all(|sc| sc.ulps <= s.max_ulps * (1.0 + 2f64.powi(-22))),
            "{f:?}"
        );
        let compared = check_against_cpu(f, &xs, &[], &scores, &|_| 1e-6);
        assert!(
            compared * 10 >= xs.len() * 9,
            "{f:?}: only {compared} of {} decided on the CPU",
            xs.len()
        );
        if f == Function::Sqrt {
            // Hard inputs are decided on the CPU: all correctly rounded too.
            for &h in &s.hard {
                let x = f32::from_bits(h);
                let r = reference(f, &[x as f64], Format::F32).unwrap();
                assert_eq!(x.sqrt() as f64, r.rounded, "sqrtf({x:e})");
            }
        }
    }
}

/// The device's per-input verdicts equal the host's copy of the scoring, bit for bit.
#[test]
fn device_scoring_equals_the_host_copy() {
    let Some(d) = device() else { return };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(14);
    for f in [
        Function::Sin,
        Function::Exp,
        Function::Log,
        Function::Tgamma,
        Function::Erfinv,
        Function::Div,
        Function::Pow,
        Function::Atan2,
    ] {
        for v in [Variant::Default, Variant::Fast] {
            let n = 20_000;
            // All bit patterns, specials included, and ordinary magnitudes.
            let mut xs: Vec<f32> = (0..n)
                .map(|i| {
                    if i % 2 == 0 {
                        f32::from_bits(rng.random())
                    } else {
                        rng.random_range(-10.0f32..10.0)
                    }
                })
                .collect();
            xs.extend([
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                f32::MAX,
                f32::MIN_POSITIVE,
                f32::from_bits(1),
                1.0,
                -1.0,
            ]);
            let ys: Vec<f32> = (0..xs.len())
                .map(|i| {
                    if i % 3 == 0 {
                        f32::from_bits(rng.random())
                    } else {
                        rng.random_range(-4.0f32..4.0)
                    }
                })
                .collect();
            let scores = d.math.score_f32(f, v, &xs, &ys).unwrap();
            for (i, s) in scores.iter().enumerate() {
                let o = host::classify(
                    s.result,
                    s.reference,
                    reference_bound(s.reference, bound_factor(f)),
                );
                assert!(
                    o.ulps.to_bits() == s.ulps.to_bits(),
                    "{f:?} {v:?} at {:e}: device {} host {}",
                    xs[i],
                    s.ulps,
                    o.ulps
                );
                assert_eq!(o.hard, s.hard, "{f:?} {v:?} at {:e}", xs[i]);
            }
            // eval returns the same results as the scoring saw.
            let wide: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
            let wide_y: Vec<f64> = ys.iter().map(|&y| y as f64).collect();
            let results = d.math.eval(f, Format::F32, v, &wide, &wide_y).unwrap();
            for (r, s) in results.iter().zip(&scores) {
                assert!(
                    (*r as f32).to_bits() == s.result.to_bits()
                        || (r.is_nan() && s.result.is_nan())
                );
            }
        }
    }
}

/// Sweeps in small, unaligned chunks give the same bins as one chunk, and the same totals as
/// scoring every input of the range explicitly and reducing on the host.
#[test]
fn chunked_sweeps_agree_with_explicit_scoring() {
    let Some(d) = device() else { return };
    let small = MathGpu::with_shared(d.gpu.clone()).with_chunks((1 << 20) + 7, (1 << 20) + 3);
    // Across a bin boundary (0x3fa0_0000) and not aligned to tiles.
    let range = 0x3f9f_0123u64..0x3f9f_0123 + 3_000_001;
    for (f, v) in [
        (Function::Exp, Variant::Default),
        (Function::Sin, Variant::Fast),
        (Function::Lgamma, Variant::Default),
    ] {
        let whole = sweep(d.math, f, v, range.clone());
        let parts = sweep(&small, f, v, range.clone());
        for (b, (p, q)) in whole.bins.iter().zip(&parts.bins).enumerate() {
            assert_eq!(
                (p.count, p.infinite, p.not_correctly_rounded, p.hard),
                (q.count, q.infinite, q.not_correctly_rounded, q.hard),
                "{f:?} bin {b}"
            );
            assert_eq!(
                (p.max_ulps, p.argmax),
                (q.max_ulps, q.argmax),
                "{f:?} bin {b}"
            );
            assert!(
                (p.sum_ulps - q.sum_ulps).abs() <= 1e-9 * p.sum_ulps.max(1.0),
                "{f:?} bin {b}"
            );
        }
        assert_eq!(whole.hard, parts.hard);
        // Every input scored explicitly, reduced here.
        let xs: Vec<f32> = range.clone().map(|b| f32::from_bits(b as u32)).collect();
        let scores = small.score_f32(f, v, &xs, &[]).unwrap();
        let finite: Vec<&Score> = scores.iter().filter(|s| s.ulps.is_finite()).collect();
        assert_eq!(finite.len() as u64, whole.finite, "{f:?}");
        let max = scores.iter().map(|s| s.ulps).fold(0.0, f64::max);
        assert!(
            max >= whole.max_ulps && max <= whole.max_ulps * (1.0 + 2f64.powi(-22)),
            "{f:?}: {max} vs {}",
            whole.max_ulps
        );
        let sum: f64 = finite.iter().map(|s| s.ulps).sum();
        assert!(
            (sum - whole.sum_ulps).abs() <= 1e-9 * sum.max(1.0),
            "{f:?}: {sum} vs {}",
            whole.sum_ulps
        );
        let mut hard: Vec<u32> = scores
            .iter()
            .zip(&xs)
            .filter(|(s, _)| s.hard)
            .map(|(_, x)| x.to_bits())
            .collect();
        hard.sort_unstable();
        assert_eq!(hard, whole.hard, "{f:?}");
        let wrong = scores
            .iter()
            .filter(|s| {
                !(s.hard
                    || s.result == s.reference as f32
                    || (s.result.is_nan() && s.reference.is_nan()))
            })
            .count();
        assert_eq!(wrong as u64, whole.not_correctly_rounded, "{f:?}");
    }
    // Chunks smaller than a tile, and a range of one input.
    let tiny = MathGpu::with_shared(d.gpu.clone()).with_chunks(999, 1000);
    let a = sweep(
        &tiny,
        Function::Cbrt,
        Variant::Default,
        ONE + 5..ONE + 50_005,
    );
    let b = sweep(
        d.math,
        Function::Cbrt,
        Variant::Default,
        ONE + 5..ONE + 50_005,
    );
    assert_eq!(
        (
            a.max_ulps,
            a.argmax,
            a.not_correctly_rounded,
            a.hard.clone()
        ),
        (
            b.max_ulps,
            b.argmax,
            b.not_correctly_rounded,
            b.hard.clone()
        )
    );
    let one = sweep(d.math, Function::Cbrt, Variant::Default, ONE..ONE + 1);
    assert_eq!(
        (one.inputs, one.max_ulps, one.argmax),
        (1, 0.0, ONE as u32),
        "cbrt(1) = 1"
    );
    let none = d
        .math
        .sweep_f32(Function::Cbrt, Variant::Default, ONE..ONE, &mut |_, _| {})
        .unwrap();
    assert_eq!(none.inputs, 0);
}

/// The intrinsics and fast math are approximate: errors above an ulp, results not correctly
/// rounded; sinf under fast math is __sinf.
#[test]
fn intrinsics_and_fast_math_show_errors() {
    let Some(d) = device() else { return };
    let range = ONE..ONE + (1 << 22);
    let intrinsic = sweep(d.math, Function::Sin, Variant::Intrinsic, range.clone());
    assert!(
        intrinsic.max_ulps > 1.0 && intrinsic.not_correctly_rounded > 0,
        "__sinf: {}",
        intrinsic.max_ulps
    );
    let fast = sweep(d.math, Function::Sin, Variant::Fast, range.clone());
    assert_eq!(
        (fast.max_ulps, fast.argmax, fast.not_correctly_rounded),
        (
            intrinsic.max_ulps,
            intrinsic.argmax,
            intrinsic.not_correctly_rounded
        )
    );
    let default = sweep(d.math, Function::Sin, Variant::Default, range);
    assert!(default.max_ulps < intrinsic.max_ulps);

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let xs: Vec<f32> = (0..100_000)
        .map(|_| rng.random_range(-100.0f32..100.0))
        .collect();
    let mut ys: Vec<f32> = (0..100_000)
        .map(|_| rng.random_range(0.5f32..1000.0))
        .collect();
    // __fdividef returns 0 for divisors past 2^126: huge errors.
    ys[0] = 2f32.powi(127);
    let scores = d
        .math
        .score_f32(Function::Div, Variant::Intrinsic, &xs, &ys)
        .unwrap();
    let max = scores.iter().map(|s| s.ulps).fold(0.0, f64::max);
    let wrong = scores
        .iter()
        .filter(|s| !s.hard && s.result != s.reference as f32)
        .count();
    assert!(
        max > 1e6 && wrong > 0,
        "__fdividef: max {max}, {wrong} wrong"
    );
    assert_eq!(scores[0].result, 0.0);
    let ieee = d
        .math
        .score_f32(Function::Div, Variant::Default, &xs, &ys)
        .unwrap();
    assert!(
        ieee.iter()
            .all(|s| s.hard || (s.ulps <= 0.5 && s.result == s.reference as f32)),
        "x / y is IEEE by default"
    );
    check_against_cpu(
        Function::Div,
        &xs[..2000],
        &ys[..2000],
        &scores[..2000],
        &|_| 1e-6,
    );
}

/// Special values: NaN, infinities, zeros, overflow and poles score as the C99 results do.
#[test]
fn special_values_score_as_c99_says() {
    let Some(d) = device() else { return };
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let cases: &[(Function, &[f32])] = &[
        (
            Function::Log,
            &[0.0, -0.0, -1.0, inf, -inf, nan, 1.0, f32::from_bits(1)],
        ),
        (
            Function::Sqrt,
            &[-0.0, 0.0, -1.0, inf, -inf, nan, f32::from_bits(1)],
        ),
        (
            Function::Exp,
            &[
                89.0, 100.0, -104.0, -200.0, inf, -inf, nan, 0.0, -0.0, 88.72283,
            ],
        ),
        (
            Function::Lgamma,
            &[
                -3.0, -4.0, 0.0, -0.0, 1.0, 2.0, inf, -inf, nan, -2.5, -10.5, 4e36, 1e38,
            ],
        ),
        (
            Function::Tgamma,
            &[0.0, -0.0, -1.0, 36.0, 171.0, inf, -inf, nan, -0.5],
        ),
        (
            Function::Erfinv,
            &[1.0, -1.0, 0.0, -0.0, 2.0, nan, 0.999_999_94],
        ),
        (Function::Atanh, &[1.0, -1.0, 2.0, 0.0]),
    ];
    for &(f, xs) in cases {
        let scores = d.math.score_f32(f, Variant::Default, xs, &[]).unwrap();
        // Special values come out right (no infinite errors); finite ones within CUDA's few ulps.
        for (x, s) in xs.iter().zip(&scores) {
            // The guide gives lgammaf no figure on [−10.001, −2.264] ("larger"): −2.5 is 16 ulps
            // off there on CUDA 13.0.
            let documented_larger = f == Function::Lgamma && (-10.001..=-2.264).contains(x);
            assert!(
                documented_larger || s.ulps < 16.0,
                "{f:?}({x:e}) = {:e} against {:e}: {} ulps",
                s.result,
                s.reference,
                s.ulps
            );
        }
        check_against_cpu(f, xs, &[], &scores, &|_| 1e-6);
    }
    // Pole: lgamma(-3) = +inf on both sides.
    let s = d
        .math
        .score_f32(Function::Lgamma, Variant::Default, &[-3.0], &[])
        .unwrap()[0];
    assert_eq!((s.result, s.reference, s.ulps), (inf, f64::INFINITY, 0.0));
    // A correct overflow is no error: expf(89) = +inf, e^89 > f32::MAX.
    let s = d
        .math
        .score_f32(Function::Exp, Variant::Default, &[89.0], &[])
        .unwrap()[0];
    assert_eq!((s.result, s.ulps, s.hard), (inf, 0.0, false));
    assert!(s.reference.is_finite() && s.reference > f32::MAX as f64);
    // Bivariate special cases: pow(x, 0) = 1 even for NaN, atan2(±0, -0) = ±π, x / 0.
    let xs = [nan, 1.0, -1.0, 0.0, -0.0, 1.0, 0.0];
    let ys = [0.0, nan, inf, -3.0, -3.0, 0.0, 0.0];
    let scores = d
        .math
        .score_f32(Function::Pow, Variant::Default, &xs, &ys)
        .unwrap();
    assert!(scores.iter().all(|s| s.ulps == 0.0), "{scores:?}");
    let scores = d
        .math
        .score_f32(
            Function::Atan2,
            Variant::Default,
            &[0.0, -0.0],
            &[-0.0, -0.0],
        )
        .unwrap();
    assert!(scores.iter().all(|s| s.ulps < 1.0), "{scores:?}");
    assert!(scores[1].result < 0.0 && scores[1].reference < 0.0);
    let scores = d
        .math
        .score_f32(Function::Div, Variant::Default, &xs, &ys)
        .unwrap();
    assert!(scores.iter().all(|s| s.ulps == 0.0), "{scores:?}");
}

/// lgammaf between −23.5 and −2.2, where the reference is the reflection formula: the rounded
/// reference is correct where not hard, estimates are within the reference's bound, hard inputs
/// lie near boundaries (around the zeros of lgamma), and poles score 0.
#[test]
fn lgamma_reflection_region() {
    let Some(d) = device() else { return };
    let lo = (-23.5f32).to_bits() as u64; // negative: larger bit patterns are more negative
    let hi = (-2.2f32).to_bits() as u64;
    let mut xs: Vec<f32> = (hi..lo)
        .step_by(((lo - hi) / 20_000) as usize)
        .map(|b| f32::from_bits(b as u32))
        .collect();
    // Around the zeros of lgamma on the negative axis (found here by bisection of libm's
    // lgamma, whose sign is right even where its digits are not), and the poles.
    let zeros = lgamma_zeros(-23.5, -2.2);
    assert!(zeros.len() >= 20, "{zeros:?}");
    for z in zeros {
        let c = (z as f32).to_bits();
        xs.extend((c - 300..c + 300).map(f32::from_bits));
    }
    xs.extend((3..=23).map(|n| -(n as f32)));
    let scores = d
        .math
        .score_f32(Function::Lgamma, Variant::Default, &xs, &[])
        .unwrap();
    let hard = scores.iter().filter(|s| s.hard).count();
    eprintln!(
        "lgammaf reflection region: {} inputs, {hard} hard",
        xs.len()
    );
    assert!(hard > 0, "the zeros make some inputs hard");
    // The reflection bound over the f32 spacing: terms log(pi/|x sinpi x|) = r + lgamma(-x).
    let tolerance = |i: usize| {
        let x = xs[i] as f64;
        let r = scores[i].reference;
        let in_region = x > -23.5 && x < -2.2;
        if !in_region || !r.is_finite() {
            return 1e-6;
        }
        let l2 = libm::lgamma(-x);
        let b = 2f64.powi(-48) * ((r + l2).abs() + l2.abs() + 1.0) + ulp64(r);
        b / ulp32(r) + 1e-6
    };
    let compared = check_against_cpu(Function::Lgamma, &xs, &[], &scores, &tolerance);
    assert!(compared > xs.len() / 2);
    for n in 3..=23 {
        let s = scores[xs.iter().position(|&x| x == -(n as f32)).unwrap()];
        assert_eq!(
            (s.reference, s.ulps),
            (f64::INFINITY, 0.0),
            "lgamma(-{n}) is a pole"
        );
    }
}

/// The zeros of lgamma in (lo, hi): sign changes on a fine grid, bisected (no sign change
/// happens across a pole, where lgamma goes to +inf on both sides).
fn lgamma_zeros(lo: f64, hi: f64) -> Vec<f64> {
    let step = 1e-4;
    let mut zeros = Vec::new();
    let mut a = lo;
    while a < hi {
        let b = a + step;
        let (fa, fb) = (libm::lgamma(a), libm::lgamma(b));
        if fa.is_finite() && fb.is_finite() && (fa < 0.0) != (fb < 0.0) {
            let (mut l, mut h) = (a, b);
            for _ in 0..60 {
                let m = 0.5 * (l + h);
                if (libm::lgamma(m) < 0.0) == (fa < 0.0) {
                    l = m;
                } else {
                    h = m;
                }
            }
            zeros.push(0.5 * (l + h));
        }
        a = b;
    }
    zeros
}

/// eval: IEEE operations by default are the host's, bit for bit, in both formats and across
/// list chunks; bad requests are refused with a message.
#[test]
fn eval_matches_ieee_operations_and_refuses_bad_requests() {
    let Some(d) = device() else { return };
    let math = MathGpu::with_shared(d.gpu.clone()).with_chunks(1 << 20, 1000);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let n = 2500;
    let x32: Vec<f64> = (0..n)
        .map(|_| f32::from_bits(rng.random::<u32>() & 0x7fff_ffff) as f64)
        .collect();
    let y32: Vec<f64> = (0..n)
        .map(|_| f32::from_bits(rng.random()) as f64)
        .collect();
    let x64: Vec<f64> = (0..n)
        .map(|_| f64::from_bits(rng.random::<u64>() & 0x7fff_ffff_ffff_ffff))
        .collect();
    let y64: Vec<f64> = (0..n).map(|_| f64::from_bits(rng.random())).collect();
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let got = math
        .eval(Function::Sqrt, Format::F32, Variant::Default, &x32, &[])
        .unwrap();
    assert!(got
        .iter()
        .zip(&x32)
        .all(|(g, x)| same(*g, (*x as f32).sqrt() as f64)));
    let got = math
        .eval(Function::Div, Format::F32, Variant::Default, &x32, &y32)
        .unwrap();
    assert!(got
        .iter()
        .zip(x32.iter().zip(&y32))
        .all(|(g, (x, y))| same(*g, (*x as f32 / *y as f32) as f64)));
    let got = math
        .eval(Function::Sqrt, Format::F64, Variant::Default, &x64, &[])
        .unwrap();
    assert!(got.iter().zip(&x64).all(|(g, x)| same(*g, x.sqrt())));
    let got = math
        .eval(Function::Div, Format::F64, Variant::Fast, &x64, &y64)
        .unwrap();
    assert!(
        got.iter()
            .zip(x64.iter().zip(&y64))
            .all(|(g, (x, y))| same(*g, x / y)),
        "fast math leaves f64 division IEEE"
    );
    assert!(math
        .eval(Function::Sqrt, Format::F32, Variant::Default, &[], &[])
        .unwrap()
        .is_empty());

    let err = math
        .eval(Function::Sin, Format::F64, Variant::Intrinsic, &[1.0], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("no such variant"), "{err}");
    let err = math
        .eval(
            Function::Pow,
            Format::F32,
            Variant::Default,
            &[1.0, 2.0],
            &[1.0],
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("as many"), "{err}");
    let err = math
        .sweep_f32(Function::Pow, Variant::Default, 0..10, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("univariate"), "{err}");
    let err = math
        .sweep_f32(
            Function::Sin,
            Variant::Default,
            0..(1 << 32) + 1,
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("not within"), "{err}");
}

/// Whole binary32 sweeps: sqrtf correctly rounded on all 2^32 inputs, sinf within its
/// documented error, lgammaf's, fast expf's and fast cosf's counts adding up; each within the
/// time budget (about 1-3 s on
/// an H100 is the target; 10 s fails).
#[test]
fn full_sweeps_fit_the_time_budget() {
    let Some(d) = device() else { return };
    let all = 0..1u64 << 32;
    for (f, v) in [
        (Function::Sqrt, Variant::Default),
        (Function::Sin, Variant::Default),
        (Function::Lgamma, Variant::Default),
        (Function::Exp, Variant::Fast),
        // Results next to 1 for tiny inputs: how many come out hard (a binade undecided) shows
        // whether fast cosf ever returns something other than 1 there.
        (Function::Cos, Variant::Fast),
    ] {
        let wall = std::time::Instant::now();
        let s = sweep(d.math, f, v, all.clone());
        eprintln!(
            "{:>6} {:>8}: {:.0} ms on the device ({:.1} s wall), max {:.4} ulps at {:e}, mean {:.3e}, {} not correctly rounded, {} infinite, {} hard",
            f.name(),
            v.name(),
            s.device_ms,
            wall.elapsed().as_secs_f64(),
            s.max_ulps,
            f32::from_bits(s.argmax),
            s.mean_ulps(),
            s.not_correctly_rounded,
            s.infinite,
            s.hard_total
        );
        assert!(s.device_ms < 10_000.0, "{f:?}: {} ms", s.device_ms);
        match f {
            Function::Sqrt => {
                assert_eq!((s.not_correctly_rounded, s.infinite), (0, 0));
                assert!(s.max_ulps <= 0.5 + 1e-6, "sqrtf: {}", s.max_ulps);
            }
            Function::Sin => {
                assert_eq!(s.infinite, 0);
                assert!(s.max_ulps < 4.0, "sinf: {}", s.max_ulps);
            }
            _ => {}
        }
    }
}

/// (CPU only) the zeros the lgamma test centres on: the known first ones, two beside each pole.
#[test]
fn lgamma_zeros_are_found() {
    let zeros = lgamma_zeros(-23.5, -2.2);
    assert!(
        (zeros[zeros.len() - 1] - -2.457_024_738_220_8).abs() < 1e-9,
        "{zeros:?}"
    );
    assert!(
        (zeros[zeros.len() - 2] - -2.747_682_646_727_4).abs() < 1e-9,
        "{zeros:?}"
    );
    // Past about −13 the two zeros beside each pole are closer to it than the grid step (and
    // than f32's spacing there): the pole's neighbourhood is sampled anyway.
    assert!(zeros.len() >= 20, "{zeros:?}");
    // (Right next to a pole lgamma is too steep for its value to show the zero.)
    for z in zeros.iter().filter(|z| (*z - z.round()).abs() > 1e-3) {
        assert!(libm::lgamma(*z).abs() < 1e-6, "{z}");
    }
}
