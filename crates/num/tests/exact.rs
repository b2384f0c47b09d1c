//! Tests of `mantissa_num::exact`. Every expected value comes from the exact big-float reference
//! (`big::exact`, `Big` arithmetic and `big::to_f64` / `ref_f32` below), never from the
//! accumulators under test.

use std::time::Instant;

use dashu_base::{BitTest, Sign, UnsignedAbs};
use dashu_int::UBig;
use mantissa_num::big::{self, Big};
use mantissa_num::exact::{
    exact_dot, exact_sum, exact_sum_f32, ExactDot, ExactSum, LengthMismatch,
};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

// ---------------------------------------------------------------------------------------------
// Reference
// ---------------------------------------------------------------------------------------------

fn big_sum(xs: &[f64]) -> Big {
    xs.iter().fold(Big::ZERO, |acc, &x| acc + big::exact(x))
}

fn big_dot(a: &[f64], b: &[f64]) -> Big {
    a.iter().zip(b).fold(Big::ZERO, |acc, (&x, &y)| {
        acc + big::exact(x) * big::exact(y)
    })
}

/// The f64 IEEE addition would give for an exact zero made of `terms`: −0.0 only if there is at
/// least one term and all are −0.0.
fn zero_with_ieee_sign(terms: impl IntoIterator<Item = f64>) -> f64 {
    let mut any = false;
    for t in terms {
        any = true;
        if !(t == 0.0 && t.is_sign_negative()) {
            return 0.0;
        }
    }
    if any {
        -0.0
    } else {
        0.0
    }
}

/// Reference f64 result of a finite sum, zero sign included.
fn ref_sum_f64(xs: &[f64]) -> f64 {
    let s = big_sum(xs);
    if s == Big::ZERO {
        zero_with_ieee_sign(xs.iter().copied())
    } else {
        big::to_f64(&s)
    }
}

/// Nearest f32 (ties to even) to an exact value; written independently of the accumulators.
fn ref_f32(x: &Big) -> f32 {
    let repr = x.repr();
    let (m, e) = (repr.significand(), repr.exponent());
    let negative = m.sign() == Sign::Negative;
    let mag: UBig = m.unsigned_abs();
    if mag == UBig::ZERO {
        return 0.0;
    }
    let top = e + mag.bit_len() as isize - 1;
    if top > 127 {
        return if negative {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
    }
    let keep_from = (top - 23).max(-149); // 24 bits, never below the subnormal quantum
    let q: u64 = if keep_from <= e {
        (mag << (e - keep_from) as usize).try_into().unwrap()
    } else {
        let drop = (keep_from - e) as usize;
        let q: u64 = (&mag >> drop).try_into().unwrap();
        let half = mag.bit(drop - 1);
        let sticky = mag.trailing_zeros().is_some_and(|tz| tz < drop - 1);
        q + u64::from(half && (sticky || q & 1 == 1))
    };
    // q < 2^25 and 2^keep_from (≥ 2^−149) are exact in f64, so is their product; it is an f32
    // value or at least 2^128, so the final narrowing is exact or overflows to ∞ as it should.
    let v = (q as f64 * f64::from_bits(((keep_from + 1023) as u64) << 52)) as f32;
    if negative {
        -v
    } else {
        v
    }
}

fn bits_eq_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn bits_eq_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn p2(k: i32) -> f64 {
    // Exact for −1074 ≤ k ≤ 1023 (two factors keep each partial power representable).
    2f64.powi(k / 2) * 2f64.powi(k - k / 2)
}

/// Checks the sum of finite `xs` in every way the API offers against the reference.
fn check_sum(xs: &[f64]) {
    let exact = big_sum(xs);
    let want = ref_sum_f64(xs);
    let mut s = ExactSum::new();
    s.add_slice(xs);
    assert!(
        bits_eq_f64(s.round(), want),
        "round: {:e} vs {:e} for {xs:?}",
        s.round(),
        want
    );
    assert!(bits_eq_f64(exact_sum(xs), want));
    assert_eq!(s.to_big(), Some(exact.clone()));
    let want32 = if exact == Big::ZERO {
        want as f32
    } else {
        ref_f32(&exact)
    };
    assert!(
        bits_eq_f32(s.round_f32(), want32),
        "round_f32: {:e} vs {:e}",
        s.round_f32(),
        want32
    );
    assert_eq!(s.len(), xs.len() as u64);
    // One at a time gives the same state.
    let mut one = ExactSum::new();
    for &x in xs {
        one.add(x);
    }
    assert!(bits_eq_f64(one.round(), want));
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// Finite f64 over the whole bit range, subnormals and zeros included, plus value families that
/// make cancellation and carries across slots likely.
fn any_finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<u64>().prop_map(f64::from_bits).prop_filter("finite", |x| x.is_finite()),
        1 => (any::<bool>(), 0u64..(1 << 52)).prop_map(|(s, m)| if s { -f64::from_bits(m) } else { f64::from_bits(m) }),
        1 => -1.0e3f64..1.0e3,
        1 => prop::sample::select(vec![0.0, -0.0, 1.0, -1.0, f64::MAX, -f64::MAX, f64::MIN_POSITIVE, f64::from_bits(1), -f64::from_bits(1)]),
        1 => (any::<bool>(), 1000i32..1024, 1.0f64..2.0).prop_map(|(s, e, m)| {
            let x = m * p2(e - 1) * 2.0;
            if s { -x } else { x }
        }).prop_filter("finite", |x| x.is_finite()),
    ]
}

/// Products over the whole range: safe ones, overflowing ones, underflowing ones.
fn any_factor() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => any::<u64>().prop_map(f64::from_bits).prop_filter("finite", |x| x.is_finite()),
        1 => (any::<bool>(), 1.0f64..2.0, -1074i32..1024).prop_map(|(s, m, e)| {
            let x = m * p2(e);
            if s { -x } else { x }
        }).prop_filter("finite", |x| x.is_finite()),
        1 => -10.0f64..10.0,
    ]
}

/// Finite values mixed with infinities, NaNs (payloads and signs included) and signed zeros.
fn any_with_specials() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any_finite(),
        1 => prop::sample::select(vec![
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_dead_beef),
            0.0,
            -0.0,
        ]),
        1 => any::<u64>().prop_map(f64::from_bits),
    ]
}

/// The special-value rules applied to `terms` (finite terms may be given as anything finite);
/// `finite` supplies the reference when every term is finite.
fn expected_with_specials(terms: impl Iterator<Item = f64>, finite: impl FnOnce() -> f64) -> f64 {
    let (mut nan, mut pos, mut neg) = (false, false, false);
    for t in terms {
        nan |= t.is_nan();
        pos |= t == f64::INFINITY;
        neg |= t == f64::NEG_INFINITY;
    }
    if nan || (pos && neg) {
        f64::NAN
    } else if pos {
        f64::INFINITY
    } else if neg {
        f64::NEG_INFINITY
    } else {
        finite()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sum_matches_big_reference(xs in prop::collection::vec(any_finite(), 0..120)) {
        check_sum(&xs);
    }

    #[test]
    fn cancelling_pairs_leave_the_residuals(
        xs in prop::collection::vec(any_finite(), 0..80),
        res in prop::collection::vec(any_finite(), 0..4),
        seed in any::<u64>(),
    ) {
        let mut terms: Vec<f64> = xs.iter().flat_map(|&x| [x, -x]).chain(res.iter().copied()).collect();
        terms.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
        let s: ExactSum = terms.iter().copied().collect();
        prop_assert_eq!(s.to_big(), Some(big_sum(&res)));
        let want = if res.is_empty() { 0.0 } else { big::to_f64(&big_sum(&res)) };
        let want = if want == 0.0 { zero_with_ieee_sign(terms.iter().copied()) } else { want };
        prop_assert!(bits_eq_f64(s.round(), want), "{:e} vs {:e}", s.round(), want);
    }

    #[test]
    fn merge_of_chunks_equals_whole_and_order_does_not_matter(
        xs in prop::collection::vec(any_finite(), 0..200),
        cut in 1usize..50,
        seed in any::<u64>(),
    ) {
        let mut whole = ExactSum::new();
        whole.add_slice(&xs);
        let mut merged = ExactSum::new();
        for chunk in xs.chunks(cut) {
            let mut part = ExactSum::new();
            part.add_slice(chunk);
            merged.merge(&part);
        }
        prop_assert_eq!(merged.len(), whole.len());
        prop_assert_eq!(merged.to_big(), whole.to_big());
        prop_assert_eq!(merged.round().to_bits(), whole.round().to_bits());
        let mut shuffled = xs.clone();
        shuffled.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
        prop_assert_eq!(exact_sum(&shuffled).to_bits(), whole.round().to_bits());
    }

    #[test]
    fn f32_sum_is_rounded_once(xs in prop::collection::vec(any::<u32>().prop_map(f32::from_bits).prop_filter("finite", |x| x.is_finite()), 0..100)) {
        let wide: Vec<f64> = xs.iter().map(|&x| f64::from(x)).collect();
        let exact = big_sum(&wide);
        let want = if exact == Big::ZERO { zero_with_ieee_sign(wide.iter().copied()) as f32 } else { ref_f32(&exact) };
        prop_assert!(bits_eq_f32(exact_sum_f32(&xs), want), "{:e} vs {:e}", exact_sum_f32(&xs), want);
    }

    #[test]
    fn special_values_follow_the_rules(
        xs in prop::collection::vec(any_with_specials(), 0..40),
        ys in prop::collection::vec(any_with_specials(), 0..40),
    ) {
        // Sum: NaN, or +∞ with −∞, gives NaN; otherwise an infinity wins; otherwise the reference.
        let want = expected_with_specials(xs.iter().copied(), || ref_sum_f64(&xs));
        prop_assert!(bits_eq_f64(exact_sum(&xs), want), "{:e} vs {:e}", exact_sum(&xs), want);
        let mut s = ExactSum::new();
        s.add_slice(&xs);
        prop_assert_eq!(s.to_big().is_none(), xs.iter().any(|x| !x.is_finite()));
        // Dot: the same rules over the products, whose special values are IEEE's (0·∞ = NaN).
        let n = xs.len().min(ys.len());
        let (a, b) = (&xs[..n], &ys[..n]);
        let special = |(x, y): (&f64, &f64)| {
            if x.is_finite() && y.is_finite() { 0.0 } else { x * y }
        };
        let want = expected_with_specials(a.iter().zip(b).map(special), || {
            let exact = big_dot(a, b);
            if exact == Big::ZERO {
                zero_with_ieee_sign(a.iter().zip(b).map(|(x, y)| x * y))
            } else {
                big::to_f64(&exact)
            }
        });
        let got = exact_dot(a, b).unwrap();
        prop_assert!(bits_eq_f64(got, want), "{:e} vs {:e}", got, want);
    }

    #[test]
    fn dot_matches_big_reference(pairs in prop::collection::vec((any_factor(), any_factor()), 0..100)) {
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let exact = big_dot(&a, &b);
        let mut d = ExactDot::new();
        d.add_slices(&a, &b).unwrap();
        prop_assert_eq!(d.to_big(), Some(exact.clone()));
        if exact != Big::ZERO {
            prop_assert_eq!(d.round().to_bits(), big::to_f64(&exact).to_bits());
            prop_assert_eq!(d.round_f32().to_bits(), ref_f32(&exact).to_bits());
        }
        prop_assert_eq!(exact_dot(&a, &b).unwrap().to_bits(), d.round().to_bits());
        // Split in two and merged, and one product at a time: the same value.
        let h = a.len() / 2;
        let mut d1 = ExactDot::new();
        d1.add_slices(&a[..h], &b[..h]).unwrap();
        let mut d2 = ExactDot::new();
        for (&x, &y) in a[h..].iter().zip(&b[h..]) {
            d2.add_product(x, y);
        }
        d1.merge(&d2);
        prop_assert_eq!(d1.to_big(), Some(exact));
        prop_assert_eq!(d1.len(), a.len() as u64);
    }
}

// ---------------------------------------------------------------------------------------------
// The input that broke the `xsum` crate
// ---------------------------------------------------------------------------------------------

/// 2^24 terms mixing ±U(1e−6, 1e−5) and ±U(1e5, 1e6), in random order.
fn mixed_magnitudes(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let x = if rng.random_bool(0.5) {
                rng.random_range(1e-6..1e-5)
            } else {
                rng.random_range(1e5..1e6)
            };
            if rng.random_bool(0.5) {
                -x
            } else {
                x
            }
        })
        .collect()
}

#[test]
fn xsum_bug_input_of_2_pow_24_terms() {
    let xs = mixed_magnitudes(1 << 24, 20150519);
    let t = Instant::now();
    let mut s = ExactSum::new();
    s.add_slice(&xs);
    let got = s.round();
    let t_acc = t.elapsed();
    let t = Instant::now();
    let exact = big_sum(&xs);
    let t_big = t.elapsed();
    eprintln!("2^24 mixed terms: ExactSum {t_acc:?}, Big reference {t_big:?}");
    assert_eq!(s.to_big(), Some(exact.clone()));
    assert_eq!(got.to_bits(), big::to_f64(&exact).to_bits());
    assert_eq!(s.round_f32().to_bits(), ref_f32(&exact).to_bits());
    // Chunked and merged, as rayon users would do it.
    let mut merged = ExactSum::new();
    for chunk in xs.chunks(1 << 20) {
        let mut part = ExactSum::new();
        part.add_slice(chunk);
        merged.merge(&part);
    }
    assert_eq!(merged.round().to_bits(), got.to_bits());
}

// ---------------------------------------------------------------------------------------------
// Cancellation, ranges, ties
// ---------------------------------------------------------------------------------------------

#[test]
fn cancelling_big_input_with_small_residuals() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let base: Vec<f64> = (0..50_000)
        .map(|_| f64::from_bits(rng.random::<u64>() >> 2) * 1e150)
        .filter(|x| x.is_finite())
        .collect();
    let residuals = [3.0 * f64::from_bits(1), 1e-300, -2.5e-310, 1.0];
    let mut xs: Vec<f64> = base
        .iter()
        .flat_map(|&x| [x, -x])
        .chain(residuals)
        .collect();
    xs.shuffle(&mut rng);
    let s: ExactSum = xs.iter().copied().collect();
    assert_eq!(s.to_big(), Some(big_sum(&residuals)));
    assert_eq!(s.round(), big::to_f64(&big_sum(&residuals)));
    check_sum(&xs);
}

#[test]
fn partial_sums_may_overflow_the_exact_sum_does_not() {
    let m = f64::MAX;
    check_sum(&[m, m, -m]);
    assert_eq!(exact_sum(&[m, m, -m]), m);
    check_sum(&[m, m, m, m, -m, -m, -m, 1.0]);
    check_sum(&[-m, -m, m, -1e300]);
    // 10 000 copies of MAX (several slot flushes), then the same negated, plus a small term.
    let mut xs = vec![m; 10_000];
    xs.extend(vec![-m; 10_000]);
    xs.push(1.5);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    xs.shuffle(&mut rng);
    assert_eq!(exact_sum(&xs), 1.5);
    check_sum(&xs);
}

#[test]
fn exact_sums_beyond_the_range_round_to_infinity() {
    let m = f64::MAX;
    assert_eq!(exact_sum(&[m, m]), f64::INFINITY);
    assert_eq!(exact_sum(&[-m, -m]), f64::NEG_INFINITY);
    let mut s = ExactSum::new();
    s.add_slice(&[m, m]);
    assert_eq!(s.to_big(), Some(big::exact(m) + big::exact(m)));
    // MAX + ½ulp is a tie with 2^1024; MAX has an odd significand, so it rounds to ∞.
    check_sum(&[m, p2(970)]);
    assert_eq!(exact_sum(&[m, p2(970)]), f64::INFINITY);
    // Just below the tie stays at MAX.
    check_sum(&[m, p2(970), -f64::from_bits(1)]);
    assert_eq!(exact_sum(&[m, p2(970), -f64::from_bits(1)]), m);
    check_sum(&[m, p2(969)]);
    // f32 range: f64 terms far above f32::MAX round to f32 ∞ once summed.
    let mut s = ExactSum::new();
    s.add_slice(&[1e300, -1e300, f64::from(f32::MAX), f64::from(f32::MAX)]);
    assert_eq!(s.round_f32(), f32::INFINITY);
    let mut s = ExactSum::new();
    s.add_slice(&[f64::from(f32::MAX), 2f64.powi(103)]); // f32::MAX + ½ulp: tie, odd → ∞
    assert_eq!(s.round_f32(), f32::INFINITY);
    s.add(-f64::from_bits(1)); // a sticky bit 1177 bits below makes it round down
    assert_eq!(s.round_f32(), f32::MAX);
}

#[test]
fn subnormals_and_tiny_terms() {
    let q = f64::from_bits(1);
    check_sum(&[q, q, q]);
    assert_eq!(exact_sum(&[q, q, q]), f64::from_bits(3));
    check_sum(&[f64::MIN_POSITIVE, -q]);
    check_sum(&[f64::from_bits(0x000f_ffff_ffff_ffff), q]); // carries into the normal range
    assert_eq!(
        exact_sum(&[f64::from_bits(0x000f_ffff_ffff_ffff), q]),
        f64::MIN_POSITIVE
    );
    // 100 000 subnormals (several flushes of the subnormal slots), both signs.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let xs: Vec<f64> = (0..100_000)
        .map(|_| {
            let x = f64::from_bits(rng.random_range(1..1u64 << 52));
            if rng.random_bool(0.4) {
                -x
            } else {
                x
            }
        })
        .collect();
    check_sum(&xs);
    // Subnormal f32 results, rounded from f64 terms far below the f32 range.
    let mut s = ExactSum::new();
    s.add_slice(&[f64::from(f32::from_bits(1)), 1e-300]);
    assert_eq!(s.round_f32(), f32::from_bits(1));
    let mut s = ExactSum::new();
    s.add_slice(&[f64::from(f32::from_bits(1)) / 2.0]); // half the f32 quantum: tie to even 0
    assert_eq!(s.round_f32(), 0.0);
    s.add(1e-300); // above the tie
    assert_eq!(s.round_f32(), f32::from_bits(1));
    let mut s = ExactSum::new();
    s.add_slice(&[f64::from(f32::from_bits(1)) * 1.5]); // tie between 1 and 2 quanta: even is 2
    assert_eq!(s.round_f32(), f32::from_bits(2));
}

#[test]
fn ties_with_and_without_a_far_sticky_bit() {
    let q = f64::from_bits(1);
    let eps = f64::EPSILON;
    // 1 + 2^−53 is a tie; even is 1.
    check_sum(&[1.0, p2(-53)]);
    assert_eq!(exact_sum(&[1.0, p2(-53)]), 1.0);
    // A sticky bit 1021 bits further down breaks the tie either way.
    assert_eq!(exact_sum(&[1.0, p2(-53), q]), 1.0 + eps);
    assert_eq!(exact_sum(&[1.0, p2(-53), -q]), 1.0);
    check_sum(&[1.0, p2(-53), q]);
    check_sum(&[1.0, p2(-53), -q]);
    // Odd neighbour below: the tie rounds up to the even one.
    assert_eq!(exact_sum(&[1.0 + eps, p2(-53)]), 1.0 + 2.0 * eps);
    check_sum(&[1.0 + eps, p2(-53)]);
    // Negative ties mirror the positive ones.
    assert_eq!(exact_sum(&[-1.0, -p2(-53), -q]), -1.0 - eps);
    check_sum(&[-1.0, -p2(-53), -q]);
    // Ties at the top of the range and in the terms' order: a tie made of many small terms.
    let mut xs = vec![p2(-60); 128]; // 128 · 2^−60 = 2^−53
    xs.push(1.0);
    check_sum(&xs);
    assert_eq!(exact_sum(&xs), 1.0);
    // f32 and the double-rounding trap: 1 + 2^−24 + 2^−80 rounds to 1 + 2^−23 in f32, but via
    // f64 it first becomes the f32 tie 1 + 2^−24, which then rounds to even 1.0.
    let xs = [1.0f32, 2f32.powi(-24), 2f32.powi(-80)];
    let want = ref_f32(&big_sum(&xs.map(f64::from)));
    assert_eq!(want, 1.0 + f32::EPSILON);
    assert_eq!(exact_sum_f32(&xs), want);
    assert_eq!(
        exact_sum(&xs.map(f64::from)) as f32,
        1.0,
        "the trap is real"
    );
    let xs = [1.0f32, 2f32.powi(-24)];
    assert_eq!(exact_sum_f32(&xs), 1.0);
}

#[test]
fn many_terms_in_one_slot() {
    // A million copies of one value plus its neighbour: every slot is flushed hundreds of times.
    let x = 1.0 + 3.0 * f64::EPSILON;
    let mut xs = vec![x; 1_000_000];
    xs.extend(vec![-1.0; 999_999]);
    check_sum(&xs);
}

// ---------------------------------------------------------------------------------------------
// Zeros and special values
// ---------------------------------------------------------------------------------------------

#[test]
fn signed_zeros_follow_ieee_addition() {
    let z = |xs: &[f64]| exact_sum(xs).to_bits();
    assert_eq!(z(&[]), 0f64.to_bits());
    assert_eq!(z(&[0.0]), 0f64.to_bits());
    assert_eq!(z(&[-0.0]), (-0f64).to_bits());
    assert_eq!(z(&[-0.0, -0.0]), (-0f64).to_bits());
    assert_eq!(z(&[-0.0, 0.0]), 0f64.to_bits());
    assert_eq!(z(&[0.0, -0.0]), 0f64.to_bits());
    assert_eq!(z(&[1.0, -1.0]), 0f64.to_bits());
    assert_eq!(z(&[-1.0, 1.0]), 0f64.to_bits());
    assert_eq!(z(&[-0.0, -1.0, 1.0]), 0f64.to_bits());
    assert_eq!(z(&[-f64::from_bits(1), f64::from_bits(1)]), 0f64.to_bits());
    // Enough −0.0 terms to flush their slot several times.
    assert_eq!(z(&vec![-0.0; 10_000]), (-0f64).to_bits());
    let mut xs = vec![-0.0; 10_000];
    xs.push(0.0);
    assert_eq!(z(&xs), 0f64.to_bits());
    // Empty merges keep the sign, merged non-negative zeros clear it.
    let mut a = ExactSum::new();
    a.add(-0.0);
    a.merge(&ExactSum::new());
    assert_eq!(a.round().to_bits(), (-0f64).to_bits());
    assert_eq!(a.round_f32().to_bits(), (-0f32).to_bits());
    let mut b = ExactSum::new();
    b.add(0.0);
    a.merge(&b);
    assert_eq!(a.round().to_bits(), 0f64.to_bits());
    assert_eq!(exact_sum_f32(&[-0.0, -0.0]).to_bits(), (-0f32).to_bits());
    assert_eq!(exact_sum_f32(&[]).to_bits(), 0f32.to_bits());
    assert_eq!(ExactSum::new().to_big(), Some(Big::ZERO));
    assert!(ExactSum::new().is_empty());
}

#[test]
fn infinities_and_nans() {
    let inf = f64::INFINITY;
    let nan = f64::NAN;
    assert!(exact_sum(&[1.0, nan, 2.0]).is_nan());
    assert!(exact_sum(&[-nan]).is_nan());
    assert!(exact_sum(&[inf, -inf]).is_nan());
    assert!(exact_sum(&[inf, nan]).is_nan());
    assert_eq!(exact_sum(&[inf, 1.0, f64::MAX]), inf);
    assert_eq!(exact_sum(&[-inf, f64::MAX, f64::MAX]), -inf);
    assert_eq!(exact_sum(&[inf, inf]), inf);
    // Many infinities (slot flushes), a NaN hidden among them, payload NaNs of both signs.
    let mut xs = vec![inf; 10_000];
    assert_eq!(exact_sum(&xs), inf);
    xs.push(f64::from_bits(0x7ff0_0000_0000_0001)); // signalling-NaN pattern
    assert!(exact_sum(&xs).is_nan());
    assert!(exact_sum(&vec![f64::from_bits(0xfff0_0000_0000_0001); 5000]).is_nan());
    assert!(exact_sum(&vec![-inf; 5000]).is_infinite());
    let mut s = ExactSum::new();
    s.add_slice(&[1.0, inf]);
    assert_eq!(s.to_big(), None);
    assert_eq!(s.round_f32(), f32::INFINITY);
    assert_eq!(s.len(), 2);
    let mut t = ExactSum::new();
    t.add(-inf);
    s.merge(&t);
    assert!(s.round().is_nan());
    assert!(s.round_f32().is_nan());
    assert!(exact_sum_f32(&[f32::NAN, 1.0]).is_nan());
    assert_eq!(exact_sum_f32(&[f32::NEG_INFINITY, 1.0]), f32::NEG_INFINITY);
}

#[test]
fn round_leaves_the_state_alone() {
    let mut s = ExactSum::new();
    s.add_slice(&[1e16, 1.0]);
    assert_eq!(s.round(), 1e16);
    assert_eq!(s.round(), 1e16);
    s.add(1.0);
    assert_eq!(s.round(), 1e16 + 2.0);
    let c = s.clone();
    s.add(-1e16);
    assert_eq!(s.round(), 2.0);
    assert_eq!(c.round(), 1e16 + 2.0);
    assert_eq!(
        format!("{c:?}"),
        "ExactSum { len: 3, round: 1.0000000000000002e16 }"
    );
}

#[test]
fn order_independence_on_a_large_shuffled_input() {
    let mut xs = mixed_magnitudes(200_000, 11);
    xs.extend((0..1000).map(|i| f64::from_bits(0x0008_0000_0000_0000 + i)));
    xs.extend((0..1000).map(|i| -1e300 * (1.0 + i as f64)));
    let want = exact_sum(&xs);
    assert_eq!(want.to_bits(), big::to_f64(&big_sum(&xs)).to_bits());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    for _ in 0..5 {
        xs.shuffle(&mut rng);
        assert_eq!(exact_sum(&xs).to_bits(), want.to_bits());
    }
}

#[test]
fn rayon_chunks_merge_exactly() {
    use rayon::prelude::*;
    let xs = mixed_magnitudes(1 << 18, 13);
    let merged = xs
        .par_chunks(1000)
        .map(|c| {
            let mut s = ExactSum::new();
            s.add_slice(c);
            s
        })
        .reduce(ExactSum::new, |mut a, b| {
            a.merge(&b);
            a
        });
    assert_eq!(merged.to_big(), Some(big_sum(&xs)));
    assert_eq!(merged.len(), xs.len() as u64);
}

// ---------------------------------------------------------------------------------------------
// Dot products
// ---------------------------------------------------------------------------------------------

fn check_dot(a: &[f64], b: &[f64]) {
    let exact = big_dot(a, b);
    let mut d = ExactDot::new();
    d.add_slices(a, b).unwrap();
    assert_eq!(d.to_big(), Some(exact.clone()), "to_big for {a:?} · {b:?}");
    let want = if exact == Big::ZERO {
        zero_with_ieee_sign(a.iter().zip(b).map(|(x, y)| x * y))
    } else {
        big::to_f64(&exact)
    };
    assert!(
        bits_eq_f64(d.round(), want),
        "round: {:e} vs {:e}",
        d.round(),
        want
    );
    let want32 = if exact == Big::ZERO {
        want as f32
    } else {
        ref_f32(&exact)
    };
    assert!(
        bits_eq_f32(d.round_f32(), want32),
        "round_f32: {:e} vs {:e}",
        d.round_f32(),
        want32
    );
}

#[test]
fn dot_with_underflowing_products() {
    let q = f64::from_bits(1);
    // tiny × tiny: every product underflows to 0 in f64, the exact sum is far below 2^−1074.
    check_dot(&[q, q, 3.0 * q], &[q, -q, q]);
    let mut d = ExactDot::new();
    d.add_slices(&[q], &[q]).unwrap();
    assert_eq!(d.to_big(), Some(big::exact(q) * big::exact(q)));
    assert_eq!(d.round(), 0.0);
    // ... but many of them add up to something representable: 2^1074 · 2^−1074 · 2^−1074.
    let mut d = ExactDot::new();
    let (a, b) = (vec![p2(-537); 4096], vec![p2(-537); 4096]);
    d.add_slices(&a, &b).unwrap();
    assert_eq!(d.round(), p2(-1062));
    // Normal p with an error term below 2^−1074 (TwoProd would lose it).
    let a = 1.0 + f64::EPSILON;
    let b = p2(-1000) * (1.0 + 3.0 * f64::EPSILON);
    check_dot(&[a, 1.0], &[b, -a * b]);
    let mut d = ExactDot::new();
    d.add_slices(&[a, 1.0], &[b, -(a * b)]).unwrap();
    assert_eq!(
        d.to_big(),
        Some(big::exact(a) * big::exact(b) - big::exact(a * b))
    );
    assert_ne!(d.to_big(), Some(Big::ZERO));
    // At the TwoProd boundary |p| ≈ 2^−968 both paths must agree with the reference.
    for k in -975..-960 {
        let x = p2(k / 2) * (1.0 + 5.0 * f64::EPSILON);
        let y = p2(k - k / 2) * (1.0 + 7.0 * f64::EPSILON);
        check_dot(&[x, -1.0], &[y, x * y]);
    }
}

#[test]
fn dot_with_overflowing_products_that_cancel() {
    let a = [1e300, -1e300, 1.5];
    let b = [1e300, 1e300, 2.0];
    check_dot(&a, &b);
    assert_eq!(exact_dot(&a, &b).unwrap(), 3.0);
    let m = f64::MAX;
    check_dot(&[m, m, -m, 1.0], &[m, m, m, 1.0]); // exact M² + M·(M − M)... beyond f64: ∞
    assert_eq!(
        exact_dot(&[m, m, -m, 1.0], &[m, m, m, 1.0]).unwrap(),
        f64::INFINITY
    );
    check_dot(&[m, -m, 1e-300], &[m, m, 1e-10]);
    assert_eq!(
        exact_dot(&[m, -m, 1e-300], &[m, m, 1e-10]).unwrap(),
        1e-300 * 1e-10
    );
    // An overflowing product rounds to ∞ in f64 though its value is finite: ∞·x semantics must
    // not be applied to it.
    check_dot(&[m, -1e308], &[2.0, 1e1]);
}

#[test]
// The decimal strings are kept as printed in the paper; they round to the nearest f32.
#[allow(clippy::excessive_precision)]
fn dot_nvidia_white_paper_example() {
    // In the style of Whitehead & Fit-Florea, "Precision & Performance: Floating Point and IEEE
    // 754 Compliance for NVIDIA GPUs" (2011), §3: a 4-element f32 dot product whose serial, FMA
    // and pairwise evaluations give different results. Here the exact value is the reference.
    let a = [1.907607f32, -0.7862027, 1.147311, 0.9604002];
    let b = [-0.9355000f32, -0.6915108, 1.724470, -0.7097529];
    let (a64, b64) = (a.map(f64::from), b.map(f64::from));
    check_dot(&a64, &b64);
    let exact = big_dot(&a64, &b64);
    let mut d = ExactDot::new();
    d.add_slices(&a64, &b64).unwrap();
    assert_eq!(d.round_f32(), ref_f32(&exact));
    // The three f32 evaluations of the paper, for the record (printed, not asserted: which of
    // them happens to hit the correctly rounded value depends on the data).
    let serial = a.iter().zip(&b).fold(0f32, |s, (x, y)| s + x * y);
    let fma = a.iter().zip(&b).fold(0f32, |s, (x, y)| x.mul_add(*y, s));
    let pairwise = (a[0] * b[0] + a[1] * b[1]) + (a[2] * b[2] + a[3] * b[3]);
    eprintln!(
        "white paper example: serial {serial:.9e}, fma {fma:.9e}, pairwise {pairwise:.9e}, \
         exact {:.9e} (f64 {:.17e})",
        d.round_f32(),
        d.round()
    );
}

#[test]
fn dot_special_values_and_signed_zeros() {
    let inf = f64::INFINITY;
    assert!(exact_dot(&[0.0], &[inf]).unwrap().is_nan());
    assert!(exact_dot(&[f64::NAN, 1.0], &[0.0, 1.0]).unwrap().is_nan());
    assert_eq!(exact_dot(&[inf, 1.0], &[-1.0, 1e300]).unwrap(), -inf);
    assert!(exact_dot(&[inf, inf], &[1.0, -1.0]).unwrap().is_nan());
    assert_eq!(exact_dot(&[inf, inf], &[-1.0, -1.0]).unwrap(), -inf);
    assert_eq!(
        exact_dot(&[-0.0, 0.0], &[1.0, -5.0]).unwrap().to_bits(),
        (-0f64).to_bits()
    );
    assert_eq!(
        exact_dot(&[-0.0, 0.0], &[1.0, 5.0]).unwrap().to_bits(),
        0f64.to_bits()
    );
    assert_eq!(exact_dot(&[], &[]).unwrap().to_bits(), 0f64.to_bits());
    // A product that underflows to −0.0 in f64 is not an exact −0.0 term.
    let q = f64::from_bits(1);
    let mut d = ExactDot::new();
    d.add_slices(&[q, -q], &[-q, q]).unwrap();
    assert_ne!(d.to_big(), Some(Big::ZERO));
    assert_eq!(d.round().to_bits(), (-0f64).to_bits()); // −2^−2147 rounds to −0
    let mut d = ExactDot::new();
    d.add_product(inf, 2.0);
    assert_eq!(d.to_big(), None);
    assert_eq!(d.round_f32(), f32::INFINITY);
}

#[test]
fn dot_length_mismatch_is_an_error() {
    let err = exact_dot(&[1.0, 2.0], &[1.0]).unwrap_err();
    assert_eq!(err, LengthMismatch { left: 2, right: 1 });
    let msg = err.to_string();
    assert!(msg.contains('2') && msg.contains('1'), "{msg}");
    let mut d = ExactDot::new();
    d.add_product(1.0, 1.0);
    assert!(d.add_slices(&[1.0], &[]).is_err());
    assert_eq!(d.round(), 1.0);
    assert_eq!(d.len(), 1);
}

#[test]
fn dot_random_full_range_against_big() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
    for n in [1, 2, 10, 1000, 20_000] {
        let gen = |rng: &mut Xoshiro256PlusPlus| loop {
            let x = f64::from_bits(rng.random::<u64>());
            if x.is_finite() {
                return x;
            }
        };
        let a: Vec<f64> = (0..n).map(|_| gen(&mut rng)).collect();
        let b: Vec<f64> = (0..n).map(|_| gen(&mut rng)).collect();
        check_dot(&a, &b);
        // Moderate magnitudes: everything on the TwoProd path.
        let a: Vec<f64> = (0..n).map(|_| rng.random_range(-1e3..1e3)).collect();
        let b: Vec<f64> = (0..n).map(|_| rng.random_range(-1e3..1e3)).collect();
        check_dot(&a, &b);
    }
}

#[test]
fn sums_and_dots_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ExactSum>();
    assert_send_sync::<ExactDot>();
}
