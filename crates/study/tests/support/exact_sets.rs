// Input sets for the exact sum, included (`include!`) by the unit tests of src/gpu_reduce.rs and by
// tests/gpu_reduce.rs, so the CPU and GPU checks use the same adversarial data. Needs
// `rand::{Rng, SeedableRng}` and `rand_xoshiro::Xoshiro256PlusPlus` in scope.

/// Sets that stress the exact sum: the GPU tests use the same ones.
pub fn adversarial() -> Vec<(&'static str, Vec<f64>)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let tiny = f64::from_bits(1);
    // Every exponent field from subnormal (0) to 2^1023 (2046), random sign and fraction.
    let mut spread: Vec<f64> = (0..6000u64)
        .map(|i| {
            let field = i % 2047;
            let bits = (rng.random::<u64>() & (1 << 63 | ((1 << 52) - 1))) | field << 52;
            f64::from_bits(bits)
        })
        .collect();
    // The same values negated in another order, plus a few: all but those few cancel.
    let mut back: Vec<f64> = spread.iter().rev().map(|x| -x).collect();
    spread.append(&mut back);
    spread.push(3.0 * tiny);
    spread.push(1e-300);
    spread.push(f64::MAX);
    spread.push(-f64::MAX);
    spread.push(f64::MAX);
    vec![
        ("empty", vec![]),
        ("one", vec![0.1]),
        ("negative zeros", vec![-0.0, -0.0, -0.0]),
        ("mixed zeros", vec![-0.0, 0.0, -0.0]),
        ("cancel to zero", vec![1e300, 1.0, -1e300, -1.0]),
        (
            "huge cancellation",
            vec![1e308, 1.0, -1e308, 1e-300, 2f64.powi(-1074)],
        ),
        ("tie to even", vec![1.0, 2f64.powi(-53)]),
        ("tie above", vec![1.0, 2f64.powi(-53), 2f64.powi(-1074)]),
        (
            "subnormals",
            vec![
                tiny,
                tiny * 3.0,
                -tiny,
                f64::MIN_POSITIVE,
                -f64::MIN_POSITIVE / 2.0,
            ],
        ),
        ("overflow kept exact", vec![f64::MAX, f64::MAX, -f64::MAX]),
        ("overflow", vec![f64::MAX, f64::MAX]),
        ("spread", spread),
        ("nan", vec![1.0, f64::NAN, 2.0]),
        ("inf", vec![1.0, f64::INFINITY, -1e308]),
        ("-inf", vec![f64::NEG_INFINITY, 5.0]),
        ("both infinities", vec![f64::INFINITY, f64::NEG_INFINITY]),
        ("zero sum", zero_sum(10_001, 3)),
    ]
}

/// The study's zero-sum arrays: values in (1e-6, 1e-5) and (1e5, 1e6), each with its exact
/// negative, shuffled.
pub fn zero_sum(pairs: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut xs = Vec::with_capacity(2 * pairs);
    for i in 0..pairs {
        let v = if i % 2 == 0 {
            rng.random_range(1e-6..1e-5)
        } else {
            rng.random_range(1e5..1e6)
        };
        xs.push(v);
        xs.push(-v);
    }
    for i in (1..xs.len()).rev() {
        xs.swap(i, rng.random_range(0..=i));
    }
    xs
}

