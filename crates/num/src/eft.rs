//! Error-free transforms: each returns `(s, e)` with `s = fl(a ∘ b)` and `s + e = a ∘ b` exactly.
//!
//! They are exact in round-to-nearest binary arithmetic as long as no overflow occurs and, for the
//! products, the error term is not below the underflow threshold (|a·b| ≥ 2^(emin+p) suffices,
//! emin = −126 / −1022). Sources: Knuth (TAOCP vol. 2) for TwoSum, Dekker (1971) for FastTwoSum,
//! Veltkamp's split and the FMA-free product; the notation follows Muller et al., *Handbook of
//! Floating-Point Arithmetic* (2nd ed., 2018), §4.3–4.4.

use crate::base::Base;

/// Knuth's TwoSum (6 flops, no precondition): `s + e = a + b` exactly.
#[inline(always)]
pub fn two_sum<F: Base>(a: F, b: F) -> (F, F) {
    let s = a + b;
    let bb = s - a;
    let aa = s - bb;
    let e = (a - aa) + (b - bb);
    (s, e)
}

/// Dekker's FastTwoSum (3 flops): `s + e = a + b` exactly **provided the exponent of `a` is at
/// least that of `b`** (e.g. |a| ≥ |b|, or a = 0 ⇒ b = 0). Without that precondition `e` may be
/// wrong; callers in this crate establish it by construction.
#[inline(always)]
pub fn fast_two_sum<F: Base>(a: F, b: F) -> (F, F) {
    let s = a + b;
    let z = s - a;
    let e = b - z;
    (s, e)
}

/// TwoDiff (6 flops, no precondition): `s + e = a − b` exactly. Same as `two_sum(a, -b)`,
/// written out as seed 001 Algorithm 5 does.
#[inline(always)]
pub fn two_diff<F: Base>(a: F, b: F) -> (F, F) {
    let s = a - b;
    let bb = s - a;
    let aa = s - bb;
    let e = (a - aa) - (b + bb);
    (s, e)
}

/// TwoProd with an FMA ("Fast2Mult", 2 flops): `p + e = a·b` exactly when no underflow affects
/// the error term (|a·b| ≥ 2^(emin+p)) and a·b does not overflow.
#[inline(always)]
pub fn two_prod<F: Base>(a: F, b: F) -> (F, F) {
    let p = a * b;
    let e = F::fma(a, b, -p);
    (p, e)
}

/// Veltkamp's split: `hi + lo = a` exactly, each half fitting in ⌊p/2⌋ bits (the sign absorbs
/// the odd bit), so products of halves are exact. Valid while `SPLITTER·a` does not overflow
/// (|a| < MAX / 2^⌈p/2⌉).
#[inline(always)]
pub fn split<F: Base>(a: F) -> (F, F) {
    let c = F::SPLITTER * a;
    let hi = c - (c - a);
    let lo = a - hi;
    (hi, lo)
}

/// Dekker's TwoProd without an FMA (17 flops): `p + e = a·b` exactly under the conditions of
/// [`two_prod`] and of [`split`] for both operands.
#[inline(always)]
pub fn two_prod_dekker<F: Base>(a: F, b: F) -> (F, F) {
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let e = al * bl - (((p - ah * bh) - al * bh) - ah * bl);
    (p, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::big::{big_from_f64, Big};
    use proptest::prelude::*;

    fn exact_sum(a: f64, b: f64) -> Big {
        big_from_f64(a) + big_from_f64(b)
    }
    fn exact_prod(a: f64, b: f64) -> Big {
        big_from_f64(a) * big_from_f64(b)
    }

    /// Finite f64s spread over the whole exponent range, subnormals included.
    fn any_finite() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>()
                .prop_map(f64::from_bits)
                .prop_filter("finite", |x| x.is_finite()),
            (-1.0e6f64..1.0e6),
            any::<u32>()
                .prop_map(|b| f32::from_bits(b) as f64)
                .prop_filter("finite", |x| x.is_finite()),
        ]
    }

    /// Values whose products neither overflow nor leave an error term below the underflow
    /// threshold: the domain on which TwoProd is exact.
    fn product_safe() -> impl Strategy<Value = f64> {
        (any::<bool>(), 1.0f64..2.0, -400i32..400).prop_map(|(neg, m, e)| {
            let x = m * 2f64.powi(e);
            if neg {
                -x
            } else {
                x
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn two_sum_is_exact(a in any_finite(), b in any_finite()) {
            let (s, e) = two_sum(a, b);
            prop_assume!(s.is_finite());
            prop_assert_eq!(s, a + b);
            prop_assert_eq!(big_from_f64(s) + big_from_f64(e), exact_sum(a, b));
        }

        #[test]
        fn two_diff_is_exact(a in any_finite(), b in any_finite()) {
            let (s, e) = two_diff(a, b);
            prop_assume!(s.is_finite());
            prop_assert_eq!(s, a - b);
            prop_assert_eq!(big_from_f64(s) + big_from_f64(e), big_from_f64(a) - big_from_f64(b));
        }

        #[test]
        fn fast_two_sum_is_exact_when_ordered(a in any_finite(), b in any_finite()) {
            let (a, b) = if a.abs() >= b.abs() { (a, b) } else { (b, a) };
            let (s, e) = fast_two_sum(a, b);
            prop_assume!(s.is_finite());
            prop_assert_eq!(big_from_f64(s) + big_from_f64(e), exact_sum(a, b));
        }

        #[test]
        fn two_prod_is_exact(a in product_safe(), b in product_safe()) {
            let (p, e) = two_prod(a, b);
            prop_assert_eq!(p, a * b);
            prop_assert_eq!(big_from_f64(p) + big_from_f64(e), exact_prod(a, b));
        }

        #[test]
        fn two_prod_dekker_is_exact(a in product_safe(), b in product_safe()) {
            let (p, e) = two_prod_dekker(a, b);
            prop_assert_eq!(p, a * b);
            prop_assert_eq!(big_from_f64(p) + big_from_f64(e), exact_prod(a, b));
        }

        #[test]
        fn split_halves_are_exact_and_short(a in product_safe()) {
            let (h, l) = split(a);
            prop_assert_eq!(h + l, a);
            // Each half has at most 26 significant bits, so its square is exact in f64.
            prop_assert_eq!(big_from_f64(h * h), big_from_f64(h) * big_from_f64(h));
            prop_assert_eq!(big_from_f64(l * l), big_from_f64(l) * big_from_f64(l));
        }

        #[test]
        fn f32_transforms_are_exact(a in -1.0e18f32..1.0e18, b in -1.0e18f32..1.0e18) {
            let (s, e) = two_sum(a, b);
            prop_assert_eq!(big_from_f64(s as f64) + big_from_f64(e as f64), exact_sum(a as f64, b as f64));
            prop_assume!((a * b).abs() > 1e-30);
            let (p, e) = two_prod(a, b);
            prop_assert_eq!(big_from_f64(p as f64) + big_from_f64(e as f64), exact_prod(a as f64, b as f64));
            let (p, e) = two_prod_dekker(a, b);
            prop_assert_eq!(big_from_f64(p as f64) + big_from_f64(e as f64), exact_prod(a as f64, b as f64));
        }
    }

    #[test]
    fn fast_two_sum_needs_its_precondition() {
        // Documented failure: with |a| < |b| the error term can be wrong.
        let (a, b) = (1.0f64, 1.0e100);
        let (s, e) = fast_two_sum(a, b);
        assert_ne!(big_from_f64(s) + big_from_f64(e), exact_sum(a, b));
    }
}
