//! Each rule of the module docs, and metrics against hand-computed values.

use super::*;
use crate::big::exact;
use crate::comp::Comp64;
use crate::mp::{Mp128, Mp32};

fn b(x: f64) -> Big {
    exact(x)
}

#[test]
fn one_ulp_at_one() {
    let m = measure(&(1.0 + f64::EPSILON), &Reference::from_f64(1.0));
    assert_eq!(m.ulps_f64, 1.0);
    assert_eq!(m.abs, f64::EPSILON);
    assert_eq!(m.rel, f64::EPSILON);
    assert_eq!(m.bits, 52.0);
    // Below 1 the reference's binade decides: 1 − 2^-53 is one ulp below 1 in 1's binade?
    // No: ulp(1) = 2^-52, so it is half an ulp of the reference 1.
    assert_eq!(ulps_f64(&b(1.0 - f64::EPSILON / 2.0), &b(1.0)), 0.5);
    // And against the reference 1 − 2^-53 (binade [1/2, 1), ulp 2^-53), 1 is one ulp away.
    assert_eq!(ulps_f64(&b(1.0), &b(1.0 - f64::EPSILON / 2.0)), 1.0);
}

#[test]
fn fractional_ulps_below_one_f64_ulp() {
    // A double-word-like result: 1 + 2^-60 against 1 is 2^-8 f64 ulps.
    let c = Comp64::new(1.0, 2f64.powi(-60));
    let m = measure(&c, &Reference::from_f64(1.0));
    assert_eq!(m.ulps_f64, 2f64.powi(-8));
    assert_eq!(m.rel, 2f64.powi(-60));
    assert_eq!(m.bits, 60.0);
    // Same difference in f32 ulps (ulp(1) = 2^-23).
    assert_eq!(
        ulps_base::<f32>(&c.to_big().unwrap(), &b(1.0)),
        2f64.powi(-37)
    );
    assert_eq!(
        ulps_in_format(&c.to_big().unwrap(), &b(1.0), 24, -126),
        2f64.powi(-37)
    );
}

#[test]
fn ulps_in_generic_formats_and_subnormals() {
    // In a p = 11, emin = −14 format (binary16): ulp at 1 is 2^-10.
    assert_eq!(
        ulps_in_format(&b(1.0 + 2f64.powi(-10)), &b(1.0), 11, -14),
        1.0
    );
    // Subnormal binade: ulp is 2^(emin − p + 1) = 2^-24 for binary16, whatever the value.
    assert_eq!(ulp_exponent(&b(2f64.powi(-20)), 11, -14), -24);
    assert_eq!(
        ulps_in_format(&b(3.0 * 2f64.powi(-24)), &b(2f64.powi(-24)), 11, -14),
        2.0
    );
    // f64 subnormals: one quantum apart is one ulp.
    assert_eq!(ulps_f64(&b(f64::from_bits(5)), &b(f64::from_bits(4))), 1.0);
    // Large values: ulp(2^100) = 2^48.
    assert_eq!(
        ulps_f64(&(b(2f64.powi(100)) + b(2f64.powi(47))), &b(2f64.powi(100))),
        0.5
    );
}

#[test]
#[allow(clippy::approx_constant)] // 3.1415 is the paper's example, not an approximation of π here
fn digits_follow_seed_002_section_4_5() {
    // The paper's example: 3.1479 against 3.1415 is accurate to 3 digits (3, 1, 4).
    let r = Reference::from_f64(3.1415);
    assert_eq!(measure(&3.1479f64, &r).digits, 3.0);
    // Off by exactly 1e-3 relative: 3 correct digits (integers, since 1.001 has no exact binary
    // value).
    assert_eq!(correct_digits(&b(1001.0), &b(1000.0)), 3.0);
    assert_eq!(correct_digits(&b(2002.0), &b(2000.0)), 3.0);
    assert_eq!(correct_digits(&b(999.0), &b(1000.0)), 0.0);
    // Digits are read from the exact binary value: the f64 nearest 1.001 is
    // 1.000999999999999889..., which shares four digits (1.000) with 1.
    assert_eq!(correct_digits(&b(1.001), &b(1.0)), 4.0);
    assert_eq!(correct_digits(&b(0.999), &b(1.0)), 0.0); // 0.999 shares no leading digit with 1
    assert_eq!(correct_digits(&b(1.0), &b(0.999)), 0.0);
    assert_eq!(correct_digits(&b(123.456), &b(123.45)), 5.0);
    assert_eq!(correct_digits(&b(-123.456), &b(-123.45)), 5.0);
    assert_eq!(correct_digits(&b(-123.456), &b(123.456)), 0.0);
    assert_eq!(correct_digits(&b(1.0e-300 * 1.5), &b(1.0e-300 * 1.4)), 1.0);
    assert_eq!(correct_digits(&b(0.0), &b(5.0)), 0.0);
    // f32 0.1 against f64 0.1: 0.100000001490... vs 0.1000000000000000055...: 8 digits.
    assert_eq!(correct_digits(&b(0.1f32 as f64), &b(0.1)), 8.0);
    // Exact decimal comparison, not rounded printing: 0.3 (f64) is 0.29999999999999998889...
    // and 0.1 + 0.2 is 0.30000000000000004440...: no digit in common.
    assert_eq!(correct_digits(&b(0.1 + 0.2), &b(0.3)), 0.0);
    // Deep agreement: mp128 values differing at 2^-120 relative share about 36 digits.
    let x = Mp128::from_f64(1.0) / Mp128::from_f64(3.0);
    let y = &x + &Mp128::from_f64(2f64.powi(-121));
    let d = correct_digits(&y.to_big().unwrap(), &x.to_big().unwrap());
    assert!((35.0..=37.0).contains(&d), "{d}");
    assert_eq!(correct_digits(&b(1.25), &b(1.25)), f64::INFINITY);
}

#[test]
fn relative_error_and_digits_of_mp32() {
    let m = measure(&Mp32::from_f64(0.1), &Reference::from_f64(0.1));
    assert!(m.rel > 0.0 && m.rel < 2f64.powi(-32));
    assert!(m.bits > 32.0);
    assert!(m.ulps_f64 > 1.0); // mp32 cannot hold 0.1 to within an f64 ulp
    assert!(m.digits >= 9.0);
}

#[test]
fn zero_reference() {
    let zero = Reference::from_f64(0.0);
    assert_eq!(measure(&0.0f64, &zero), ErrorMetrics::EXACT);
    assert_eq!(measure(&-0.0f64, &zero), ErrorMetrics::EXACT);
    let m = measure(&1e-300f64, &zero);
    assert_eq!(m.abs, 1e-300);
    assert_eq!(m.rel, f64::INFINITY);
    assert_eq!(m.digits, 0.0);
    assert_eq!(m.bits, 0.0);
    // ulp of 0 is the smallest subnormal: 3 quanta are 3 ulps.
    let m = measure(&f64::from_bits(3), &zero);
    assert_eq!(m.ulps_f64, 3.0);
    assert_eq!(ulp_exponent(&b(0.0), 53, -1022), -1074);
    assert_eq!(ulp_exponent(&b(0.0), 24, -126), -149);
}

#[test]
fn non_finite_rules() {
    let nan = Reference::NaN;
    let pinf = Reference::from_f64(f64::INFINITY);
    let ninf = Reference::from_f64(f64::NEG_INFINITY);
    let one = Reference::from_f64(1.0);
    // Both NaN, same infinity: zero error.
    assert_eq!(measure(&f64::NAN, &nan), ErrorMetrics::EXACT);
    assert_eq!(
        measure(&Mp32::from_f64(f64::NAN), &nan),
        ErrorMetrics::EXACT
    );
    assert_eq!(measure(&f64::INFINITY, &pinf), ErrorMetrics::EXACT);
    assert_eq!(measure(&f32::NEG_INFINITY, &ninf), ErrorMetrics::EXACT);
    assert_eq!(
        measure(&Comp64::new(f64::INFINITY, 0.0), &pinf),
        ErrorMetrics::EXACT
    );
    // Every other mismatch: +inf errors, 0 digits.
    for (c, r) in [
        (f64::NAN, &one),
        (f64::NAN, &pinf),
        (1.0, &nan),
        (f64::INFINITY, &nan),
        (f64::INFINITY, &ninf),
        (f64::NEG_INFINITY, &pinf),
        (f64::INFINITY, &one),
        (1.0, &pinf),
        (f64::MAX, &pinf),
    ] {
        let m = measure(&c, r);
        assert_eq!(m, ErrorMetrics::MISMATCH, "{c} vs {r:?}");
        assert!(m.abs.is_infinite() && m.rel.is_infinite() && m.ulps_f64.is_infinite());
        assert_eq!((m.digits, m.bits), (0.0, 0.0));
    }
    assert_eq!(Reference::of(&Mp32::from_f64(f64::NEG_INFINITY)), ninf);
    assert_eq!(
        Reference::from_big(big::exact(2.0)),
        Reference::from_f64(2.0)
    );
}

#[test]
fn exact_match_and_tiny_differences_beyond_f64() {
    let r = Reference::from_big(exact(1.0) + exact(2f64.powi(-200)));
    let m = measure(&Mp128::from_f64(1.0), &r);
    // |diff| = 2^-200: far below an f64 ulp, still measured.
    assert_eq!(m.abs, 2f64.powi(-200));
    assert_eq!(m.ulps_f64, 2f64.powi(-148));
    // 2^-200 ≈ 6.2e-61: the reference is 1.(60 zeros)62…, so 61 digits agree.
    assert_eq!(m.digits, 61.0);
    let same = Reference::Finite(exact(0.75));
    assert_eq!(measure(&0.75f32, &same), ErrorMetrics::EXACT);
}

#[test]
fn ordered_integer_distance() {
    assert_eq!(ulps_between(1.0f64, 1.0 + f64::EPSILON), Some(1));
    assert_eq!(ulps_between(1.0f32, 1.0 + f32::EPSILON), Some(1));
    assert_eq!(ulps_between(0.0f64, -0.0), Some(0));
    assert_eq!(ulps_between(f64::from_bits(1), -f64::from_bits(1)), Some(2));
    assert_eq!(ulps_between(f32::MAX, f32::INFINITY), Some(1));
    assert_eq!(ulps_between(-1.0f32, 1.0), Some(2 * 0x3f80_0000));
    assert_eq!(
        ulps_between(f64::NEG_INFINITY, f64::INFINITY),
        Some(2 * 0x7ff0_0000_0000_0000)
    );
    assert_eq!(ulps_between(f64::NAN, 1.0), None);
    assert_eq!(ulps_between(1.0f32, f32::NAN), None);
    // Across a binade boundary: 1 − 2^-53 and 1 + 2^-52 are two apart.
    assert_eq!(
        ulps_between(1.0 - f64::EPSILON / 2.0, 1.0 + f64::EPSILON),
        Some(2)
    );
}
