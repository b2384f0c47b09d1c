//! GPU tests of `gpu_reduce`: every reduction equals its CPU model bit for bit, in every
//! precision, over launch shapes from 1×1 to the full device and sizes that are odd, smaller than
//! the thread count, or zero; the exact sum equals `ExactSum::round` on adversarial inputs. They
//! skip without a GPU and fail under `MANTISSA_REQUIRE_GPU=1`.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{DeviceWords, Word};
use mantissa_gpu::{Gpu, TimingOptions};
use mantissa_num::exact::ExactSum;
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};
use mantissa_study::gpu_reduce::{
    dot_model, pi_leibniz_model, pi_midpoint_model, sum_f64_in_model, sum_model, GpuReducer, Shape,
};
use mantissa_study::reductions::SEED_000_GRID;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

include!("support/exact_sets.rs");

const ONCE: TimingOptions = TimingOptions { warmup: 0, reps: 1 };
const SIZES: [usize; 8] = [0, 1, 2, 3, 67, 1023, 4097, 100_003];

/// The study's shapes (seed 001) plus odd ones: a block that is not a power of two, a grid that
/// is not a multiple of anything.
fn shapes(gpu: &Gpu) -> Vec<Shape> {
    let mut s: Vec<Shape> = SEED_000_GRID
        .into_iter()
        .chain([(3, 48), (7, 1000)])
        .map(|(g, b)| Shape::new(g, b))
        .collect();
    s.push(Shape::full_device(gpu));
    s
}

/// Values of mixed sign and magnitude (so that every precision rounds, and differently).
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let m: f64 = rng.random_range(-1.0..1.0);
            m * 2f64.powi(rng.random_range(-20..20))
        })
        .collect()
}

/// The words of a value, NaNs made equal (their payloads are not part of the contract).
fn bits<T: DeviceWords>(x: T) -> Vec<u64> {
    let mut w = Vec::new();
    x.push_words(&mut w);
    w.into_iter()
        .map(|v| if v.is_nan() { u64::MAX } else { v.bits() })
        .collect()
}

fn assert_same<T: DeviceWords>(gpu: T, model: T, what: &str) {
    assert_eq!(
        bits(gpu),
        bits(model),
        "{what}: GPU {gpu:?} vs model {model:?}"
    );
}

fn check_sums<T: DeviceWords>(gpu: &Gpu) {
    let mut r = GpuReducer::new(gpu);
    let p = T::precision_name();
    for &n in &SIZES {
        let xs = data(n, n as u64);
        let ts: Vec<T> = xs.iter().map(|&x| T::from_f64(x)).collect();
        for shape in shapes(gpu) {
            let (got, _) = r.sum(&ts, shape, ONCE).expect("sum runs");
            assert_same(
                got,
                sum_model(&ts, shape),
                &format!("sum {p} n={n} {shape}"),
            );
            let (got, _) = r
                .sum_f64_in::<T>(&xs, shape, ONCE)
                .expect("sum_f64_in runs");
            let model = sum_f64_in_model::<T>(&xs, shape);
            assert_same(got, model, &format!("sum_f64_in {p} n={n} {shape}"));
        }
    }
}

fn check_dots<T: DeviceWords>(gpu: &Gpu) {
    let mut r = GpuReducer::new(gpu);
    let p = T::precision_name();
    for &n in &SIZES {
        let a: Vec<T> = data(n, 1000 + n as u64)
            .into_iter()
            .map(T::from_f64)
            .collect();
        let b: Vec<T> = data(n, 2000 + n as u64)
            .into_iter()
            .map(T::from_f64)
            .collect();
        for shape in shapes(gpu) {
            for fused in [false, true] {
                let (got, _) = r.dot(&a, &b, fused, shape, ONCE).expect("dot runs");
                let model = dot_model(&a, &b, fused, shape);
                assert_same(got, model, &format!("dot {p} fused={fused} n={n} {shape}"));
            }
        }
    }
}

fn check_pis<T: DeviceWords>(gpu: &Gpu) {
    let mut r = GpuReducer::new(gpu);
    let p = T::precision_name();
    for steps in [1u64, 2, 1001, 100_003] {
        for shape in shapes(gpu) {
            let (got, _) = r
                .pi_midpoint::<T>(steps, shape, ONCE)
                .expect("pi_midpoint runs");
            let model = pi_midpoint_model::<T>(steps, shape);
            assert_same(
                got,
                model,
                &format!("pi_midpoint {p} steps={steps} {shape}"),
            );
        }
    }
    for terms in [0u64, 1, 2, 1001, 20_000] {
        let (got, _) = r.pi_leibniz::<T>(terms, ONCE).expect("pi_leibniz runs");
        let model = pi_leibniz_model::<T>(terms);
        assert_same(got, model, &format!("pi_leibniz {p} terms={terms}"));
    }
}

macro_rules! per_precision {
    ($name:ident, $check:ident) => {
        #[test]
        fn $name() {
            let Some(gpu) = require_gpu_or_skip() else {
                return;
            };
            $check::<f32>(&gpu);
            $check::<f64>(&gpu);
            $check::<f32x2>(&gpu);
            $check::<f64x2>(&gpu);
            $check::<Comp32>(&gpu);
            $check::<Comp64>(&gpu);
            $check::<CompNorm32>(&gpu);
            $check::<CompNorm64>(&gpu);
        }
    };
}

per_precision!(sums_match_the_model_bit_for_bit, check_sums);
per_precision!(dots_match_the_model_bit_for_bit, check_dots);
per_precision!(pi_quadratures_match_the_model_bit_for_bit, check_pis);

/// Past 2^31 bytes (f64x2 values: 2 GiB) and 2^27 elements, on the full device.
#[test]
fn large_sums_use_64_bit_offsets() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut r = GpuReducer::new(&gpu);
    let shape = Shape::full_device(&gpu);
    let xs = data((1 << 27) + 3, 5);
    let (got, _) = r.sum::<f64>(&xs, shape, ONCE).expect("f64 sum runs");
    assert_same(got, sum_model(&xs, shape), "f64 sum of 2^27 + 3");
    let (got, _) = r
        .sum_f64_in::<f64x2>(&xs, shape, ONCE)
        .expect("f64x2 sum runs");
    assert_same(
        got,
        sum_f64_in_model::<f64x2>(&xs, shape),
        "f64x2 sum_f64_in",
    );
    let (got, _) = r.exact_sum(&xs, shape, ONCE).expect("exact sum runs");
    let want = xs.iter().copied().collect::<ExactSum>().round();
    assert_eq!(got.to_bits(), want.to_bits(), "exact sum of 2^27 + 3");
    let ds: Vec<f64x2> = xs.iter().map(|&x| f64x2::from_f64(x)).collect();
    let (got, _) = r.sum(&ds, shape, ONCE).expect("f64x2 sum runs");
    assert_same(got, sum_model(&ds, shape), "f64x2 sum of 2 GiB");
}

fn assert_exact(got: f64, xs: &[f64], what: &str) {
    let want = xs.iter().copied().collect::<ExactSum>().round();
    assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "{what}: GPU {got:e} vs exact {want:e}"
    );
}

#[test]
fn exact_sum_is_correctly_rounded_on_adversarial_sets() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut r = GpuReducer::new(&gpu);
    for (name, xs) in adversarial() {
        for shape in shapes(&gpu) {
            let (got, _) = r.exact_sum(&xs, shape, ONCE).expect("exact sum runs");
            assert_exact(got, &xs, &format!("{name} {shape}"));
        }
    }
}

#[test]
fn exact_sum_is_correctly_rounded_on_large_sets() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut r = GpuReducer::new(&gpu);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    // Random bit patterns over the whole finite range (huge and subnormal values in one sum).
    let wild: Vec<f64> = (0..1_000_003)
        .map(|_| {
            f64::from_bits(
                rng.random::<u64>() & !(0x7ffu64 << 52) | rng.random_range(0..2047u64) << 52,
            )
        })
        .collect();
    let sets = [
        ("zero-sum 2e6", zero_sum(1_000_000, 9)),
        ("zero-sum plus one", {
            let mut z = zero_sum(500_000, 10);
            z.push(1e-7);
            z
        }),
        ("uniform", data(3_000_001, 12)),
        ("wild", wild),
    ];
    for (name, xs) in &sets {
        for shape in [
            Shape::new(1, 1024),
            Shape::new(128, 32),
            Shape::full_device(&gpu),
        ] {
            let (got, _) = r.exact_sum(xs, shape, ONCE).expect("exact sum runs");
            assert_exact(got, xs, &format!("{name} {shape}"));
        }
    }
}
