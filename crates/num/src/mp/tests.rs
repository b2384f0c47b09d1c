//! Each operation against an independent exact computation rounded once, special values, and
//! the precision really being BITS bits.

use super::*;
use crate::big::{exact, with_bits};
use dashu_base::SquareRoot;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Random finite values of several magnitude classes, each with up to 53 bits (so `BITS`-bit
/// operands are obtained by rounding, and for BITS ≥ 64 the operands are exact f64s plus a
/// long tail, see `operand`).
fn magnitudes(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let m: f64 = rng.random_range(1.0..2.0);
    let e = match rng.random_range(0..5) {
        0 => rng.random_range(-4..4),        // near 1
        1 => rng.random_range(-60..60),      // moderate spread
        2 => rng.random_range(-1000..1000),  // f64's whole range
        3 => rng.random_range(-1074..-1022), // subnormal f64
        _ => rng.random_range(900..1023),    // near overflow
    };
    let x = m * 2f64.powi(e.clamp(-1022, 1023)) * if e < -1022 { 2f64.powi(e + 1022) } else { 1.0 };
    if rng.random_bool(0.5) {
        -x
    } else {
        x
    }
}

/// An operand with the full BITS bits: the sum of a few random f64s of decreasing magnitude,
/// rounded to BITS, so that wide precisions are exercised with long significands.
fn operand<const BITS: u32>(rng: &mut Xoshiro256PlusPlus) -> Mp<BITS> {
    let lead = magnitudes(rng);
    let mut x = exact(lead);
    let mut scale = lead;
    for _ in 0..(BITS / 50) {
        scale *= 2f64.powi(-50) * rng.random_range(-1.0..1.0);
        if scale == 0.0 {
            break;
        }
        x += exact(scale);
    }
    let m = Mp::<BITS>::from_big(&x);
    assert_eq!(
        m.as_big().map(|b| b.repr().digits() <= BITS as usize),
        Some(true)
    );
    m
}

fn big_of<const BITS: u32>(x: &Mp<BITS>) -> Big {
    x.to_big().expect("finite")
}

/// The reference rounding: at `bits` through `big::with_bits` (independent of `Mp::round`).
fn rounded(x: Big, bits: u32) -> Big {
    with_bits(x, bits as usize)
}

fn check_ops<const BITS: u32>(seed: u64, n: usize) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let wide = 4 * BITS as usize;
    for _ in 0..n {
        let (x, y) = (operand::<BITS>(&mut rng), operand::<BITS>(&mut rng));
        let (bx, by) = (big_of(&x), big_of(&y));
        // + − × from exact operands: exact result rounded once.
        assert_eq!(
            big_of(&(&x + &y)),
            rounded(bx.clone() + by.clone(), BITS),
            "{:e} + {:e}",
            x.to_f64(),
            y.to_f64()
        );
        assert_eq!(
            big_of(&(&x - &y)),
            rounded(bx.clone() - by.clone(), BITS),
            "{:e} - {:e}",
            x.to_f64(),
            y.to_f64()
        );
        assert_eq!(
            big_of(&(&x * &y)),
            rounded(bx.clone() * by.clone(), BITS),
            "{:e} * {:e}",
            x.to_f64(),
            y.to_f64()
        );
        // ÷ and √ against a 4·BITS computation rounded to BITS. That reference uses dashu's own
        // division and root, whose last-bit slips at 4·BITS (see `div_rounded`) can change the
        // BITS-bit rounding only within 2^(−3·BITS) of a tie: not a concern for random operands.
        let q = with_bits(bx.clone(), wide) / with_bits(by.clone(), wide);
        assert_eq!(
            big_of(&(&x / &y)),
            rounded(q, BITS),
            "{:e} / {:e}",
            x.to_f64(),
            y.to_f64()
        );
        let ax = x.abs();
        let r = with_bits(big_of(&ax), wide).sqrt();
        assert_eq!(
            big_of(&ax.sqrt()),
            rounded(r, BITS),
            "sqrt {:e}",
            ax.to_f64()
        );
        // Cancellation: x − (x + tiny) and near-equal differences.
        let near = &x + &Mp::from_f64(bx.repr().exponent() as f64);
        assert_eq!(
            big_of(&(&x - &near)),
            rounded(bx.clone() - big_of(&near), BITS)
        );
    }
}

#[test]
fn ops_are_correctly_rounded_mp32() {
    check_ops::<32>(1, 1500);
}

#[test]
fn ops_are_correctly_rounded_mp64() {
    check_ops::<64>(2, 1500);
}

#[test]
fn ops_are_correctly_rounded_mp256() {
    check_ops::<256>(3, 600);
}

#[test]
fn ties_round_to_even() {
    // 1 + 3·2^-32 at 32 bits: halfway between 1 + 2^-31 (odd last bit) and 1 + 2^-30 (even).
    let x = Mp32::from_f64(1.0) + Mp32::from_f64(3.0 * 2f64.powi(-32));
    assert_eq!(x.to_f64(), 1.0 + 2f64.powi(-30));
    // 1 + 2^-32 is halfway between 1 (even) and 1 + 2^-31.
    let x = Mp32::from_f64(1.0) + Mp32::from_f64(2f64.powi(-32));
    assert_eq!(x.to_f64(), 1.0);
}

#[test]
fn mp32_has_exactly_32_bits() {
    let one = Mp32::from_f64(1.0);
    // 2^-31 is the last bit of a 32-bit significand starting at 1.
    let a = one.clone() + Mp32::from_f64(2f64.powi(-31));
    assert_eq!(a.to_f64(), 1.0 + 2f64.powi(-31));
    let b = one.clone() + Mp32::from_f64(2f64.powi(-33));
    assert_eq!(b.to_f64(), 1.0);
    assert!(b == one);
    // 0.1 rounded to 32 bits, not 53.
    let t = Mp32::from_f64(0.1);
    assert_ne!(t.to_f64(), 0.1);
    assert_eq!(t.to_big(), Some(with_bits(exact(0.1), 32)));
    assert!(big_of(&t).repr().digits() <= 32);
    // mp64 holds every f64 exactly; mp53 is f64's significand but not its exponent range.
    assert_eq!(Mp64::from_f64(0.1).to_f64(), 0.1);
    let huge = Mp::<53>::from_f64(f64::MAX) * Mp::<53>::from_f64(2.0);
    assert!(huge.is_finite());
    assert_eq!(huge.to_f64(), f64::INFINITY);
    // Integers: rounded like from_f64 would, but from the exact integer.
    assert_eq!(Mp32::from_i64((1 << 40) + 1).to_f64(), (1u64 << 40) as f64);
    assert_eq!(Mp64::from_i64(i64::MAX).to_big(), Some(Big::from(i64::MAX)));
    assert_eq!(Mp64::from_i64(i64::MIN).to_f64(), i64::MIN as f64);
}

#[test]
fn names_and_bits() {
    assert_eq!(Mp32::precision_name(), "mp32");
    assert_eq!(Mp1024::precision_name(), "mp1024");
    assert_eq!(Mp128::significand_bits(), 128);
    assert_eq!(Mp512::significand_bits(), 512);
    // Wide precisions keep more: 1/3 in mp1024 is within 2^-1024 relative.
    let third = Mp1024::from_f64(1.0) / Mp1024::from_f64(3.0);
    let err = big_of(&(Mp1024::from_f64(1.0) - third * Mp1024::from_f64(3.0)));
    assert!(err.repr().is_zero() || err.repr().exponent() + err.repr().digits() as isize <= -1023);
}

#[test]
fn to_f64_is_correctly_rounded() {
    // 1 + 2^-53 + 2^-80 rounds up in f64 (just above the tie); with 128 bits it is held exactly.
    let x =
        Mp128::from_f64(1.0) + Mp128::from_f64(2f64.powi(-53)) + Mp128::from_f64(2f64.powi(-80));
    assert_eq!(x.to_f64(), 1.0 + f64::EPSILON);
    // Subnormal result: 3·2^-1076 rounds to 2^-1074 (quantum) once, not twice.
    let s = Mp64::from_f64(3.0) * Mp64::from_f64(2f64.powi(-1000)) * Mp64::from_f64(2f64.powi(-76));
    assert_eq!(s.to_f64(), f64::from_bits(1));
    let tiny = Mp64::from_f64(5e-324) * Mp64::from_f64(1e-10);
    assert!(tiny.is_finite() && tiny.to_f64() == 0.0);
}

#[test]
fn ordering_is_consistent() {
    let v: Vec<Mp64> = [
        -f64::INFINITY,
        -3.5,
        -0.0,
        0.0,
        1e-300,
        0.1,
        2.0,
        f64::INFINITY,
    ]
    .iter()
    .map(|&x| Mp64::from_f64(x))
    .collect();
    for (i, a) in v.iter().enumerate() {
        for (j, b) in v.iter().enumerate() {
            let want = if (i == 2 || i == 3) && (j == 2 || j == 3) {
                Ordering::Equal
            } else {
                i.cmp(&j)
            };
            assert_eq!(a.partial_cmp(b), Some(want), "{a} vs {b}");
            assert_eq!(a == b, want == Ordering::Equal);
        }
    }
    let nan = Mp64::nan();
    assert_eq!(nan.partial_cmp(&nan), None);
    assert!(nan != nan);
    assert_eq!(nan.partial_cmp(&Mp64::from_f64(1.0)), None);
    // Values that differ only beyond f64's precision are ordered.
    let a = Mp128::from_f64(1.0) + Mp128::from_f64(2f64.powi(-100));
    assert!(a > Mp128::from_f64(1.0));
}

#[test]
fn special_values() {
    type M = Mp256;
    let (one, zero, nzero) = (M::from_f64(1.0), M::from_f64(0.0), M::from_f64(-0.0));
    let (inf, ninf, nan) = (
        M::from_f64(f64::INFINITY),
        M::from_f64(f64::NEG_INFINITY),
        M::from_f64(f64::NAN),
    );
    let f = |x: &M| x.to_f64();
    let is_nan = |x: M| x.is_nan() && x.to_f64().is_nan() && x.to_big().is_none();

    assert!(nzero == zero && !nzero.is_sign_negative() && f(&nzero).to_bits() == 0);
    assert_eq!(f(&(&one / &zero)), f64::INFINITY);
    assert_eq!(f(&(&-one.clone() / &zero)), f64::NEG_INFINITY);
    assert_eq!(f(&(&one / &nzero)), f64::INFINITY); // −0 folded into +0
    assert!(is_nan(&zero / &zero));
    assert!(is_nan(&inf - &inf));
    assert!(is_nan(&inf + &ninf));
    assert_eq!(f(&(&inf + &inf)), f64::INFINITY);
    assert_eq!(f(&(&ninf - &inf)), f64::NEG_INFINITY);
    assert_eq!(f(&(&inf + &one)), f64::INFINITY);
    assert_eq!(f(&(&one - &inf)), f64::NEG_INFINITY);
    assert!(is_nan(&zero * &inf));
    assert!(is_nan(&ninf * &zero));
    assert_eq!(f(&(&ninf * &-one.clone())), f64::INFINITY);
    assert_eq!(f(&(&inf * &ninf)), f64::NEG_INFINITY);
    assert!(is_nan(&inf / &ninf));
    assert_eq!(f(&(&one / &inf)), 0.0);
    assert_eq!(f(&(&ninf / &one)), f64::NEG_INFINITY);
    assert_eq!(f(&(&inf / &zero)), f64::INFINITY);
    for x in [&one, &zero, &inf, &ninf, &nan] {
        assert!(is_nan(x + &nan) && is_nan(&nan * x) && is_nan(x / &nan) && is_nan(&nan - x));
    }
    assert!(is_nan((-one.clone()).sqrt()));
    assert!(is_nan(ninf.sqrt()));
    assert!(is_nan(nan.sqrt()));
    assert_eq!(f(&inf.sqrt()), f64::INFINITY);
    assert_eq!(f(&zero.sqrt()), 0.0);
    assert_eq!(f(&ninf.abs()), f64::INFINITY);
    assert!(is_nan(nan.abs()));
    assert!(!inf.is_finite() && inf.is_infinite() && !inf.is_nan() && inf.to_big().is_none());
    // Exponents beyond f64: no overflow inside, overflow only when converting.
    let mut big_v = M::from_f64(f64::MAX);
    for _ in 0..10 {
        big_v = &big_v * &big_v;
    }
    assert!(big_v.is_finite() && f(&big_v) == f64::INFINITY);
    assert_eq!(f(&(&one / &big_v)), 0.0);
    assert_eq!(big_v.partial_cmp(&inf), Some(Ordering::Less));
    // mul_add: product then sum.
    let (a, b, c) = (M::from_f64(3.0), M::from_f64(0.1), M::from_f64(-0.3));
    assert_eq!(a.mul_add(&b, &c), &(&a * &b) + &c);
}

#[test]
fn from_f64_rounds_subnormals_and_extremes() {
    for x in [
        5e-324,
        -2.5e-320,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        1.0 / 3.0,
    ] {
        let m = Mp32::from_f64(x);
        assert_eq!(m.to_big(), Some(with_bits(exact(x), 32)));
        let back = Mp64::from_f64(x);
        assert_eq!(back.to_f64(), x);
    }
}
