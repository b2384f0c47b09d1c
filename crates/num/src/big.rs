//! Exact references: finite binary floats as arbitrary-precision values, and correctly rounded
//! conversion back to f64 (subnormals included, which dashu's own `to_f64` rounds twice).

pub use dashu_base::Abs;
use dashu_base::{BitTest, Sign, UnsignedAbs};
use dashu_float::{round::mode::HalfEven, Context, FBig, Repr};
use dashu_int::{IBig, UBig};

/// An arbitrary-precision binary float. Values built by [`exact`] carry unlimited precision, so
/// `+`, `-` and `*` between them are exact; division and square root need a finite precision
/// (see [`with_bits`]).
pub type Big = FBig<HalfEven, 2>;

/// The exact value of a finite f64 (also takes f32 through `as f64`, which is exact).
///
/// # Panics
/// On NaN or infinity: callers deal with non-finite values before asking for an exact value.
pub fn exact(x: f64) -> Big {
    assert!(x.is_finite(), "exact() needs a finite value, got {x}");
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as isize;
    let frac = bits & ((1u64 << 52) - 1);
    let (mant, exp) = if biased == 0 { (frac, -1074) } else { (frac | (1u64 << 52), biased - 1075) };
    let signed = if x.is_sign_negative() { -IBig::from(mant) } else { IBig::from(mant) };
    Big::from_repr(Repr::new(signed, exp), Context::new(0))
}

/// Alias kept short for tests: `big_from_f64(x)` is [`exact`]`(x)`.
pub fn big_from_f64(x: f64) -> Big {
    exact(x)
}

/// `x` rounded (to nearest even) to `bits` significant bits, and carrying that precision so that
/// later operations round to it too.
pub fn with_bits(x: Big, bits: usize) -> Big {
    let bits = bits.max(1);
    // dashu 0.4.5's `with_precision` rounds only when the current precision is larger than the
    // new one, and unlimited precision counts as 0: an exact value would silently keep all its
    // digits. Give it a finite precision at least as large as its digits first.
    let x = if x.precision() == 0 {
        let digits = x.digits().max(bits + 1);
        Big::from_repr(x.into_repr(), Context::new(digits))
    } else {
        x
    };
    x.with_precision(bits).value()
}

/// Round an exact value to the nearest f64 (ties to even), with correct subnormal rounding,
/// overflow to ±inf and underflow to ±0.
pub fn to_f64(x: &Big) -> f64 {
    let repr = x.repr();
    if repr.is_infinite() {
        return if repr.sign() == Sign::Negative { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    round_scaled_to_f64(repr.significand(), repr.exponent())
}

/// The f64 nearest to `m · 2^e` (ties to even).
pub fn round_scaled_to_f64(m: &IBig, e: isize) -> f64 {
    let negative = m.sign() == Sign::Negative;
    let mag: UBig = m.unsigned_abs();
    let signed = |v: f64| if negative { -v } else { v };
    if mag == UBig::ZERO {
        return signed(0.0);
    }
    let len = mag.bit_len() as isize; // value in [2^(e+len-1), 2^(e+len))
    let top = e + len - 1; // exponent of the leading bit
    // Lowest kept bit position: 53 significant bits, but never below the subnormal quantum.
    let keep_from = (top - 52).max(-1074);
    let value = if keep_from <= e {
        // Exact: every bit is kept (shift left to the quantum if needed).
        let q: u64 = (mag << ((e - keep_from) as usize)).try_into().unwrap_or(u64::MAX);
        compose(q, keep_from)
    } else {
        let drop = (keep_from - e) as usize;
        let q_big = &mag >> drop;
        let mut q: u64 = q_big.try_into().unwrap_or(u64::MAX);
        let half = mag.bit(drop - 1);
        let sticky = mag.trailing_zeros().map_or(false, |tz| tz < drop - 1);
        if half && (sticky || q & 1 == 1) {
            q += 1;
        }
        compose(q, keep_from)
    };
    signed(value)
}

/// q · 2^k for q ≤ 2^53 and k ≥ −1074, built from bits (overflowing to infinity).
fn compose(mut q: u64, mut k: isize) -> f64 {
    if q == 0 {
        return 0.0;
    }
    if q >> 53 != 0 {
        // Rounding carried into a 54th bit: q = 2^53 exactly.
        q >>= 1;
        k += 1;
    }
    let len = 64 - q.leading_zeros() as isize;
    let top = k + len - 1;
    if top > 1023 {
        return f64::INFINITY;
    }
    if top < -1022 {
        // Subnormal: k must be −1074 and q < 2^52.
        debug_assert_eq!(k, -1074);
        return f64::from_bits(q);
    }
    let mant = (q << (53 - len)) & ((1u64 << 52) - 1);
    f64::from_bits((((top + 1023) as u64) << 52) | mant)
}

/// |a − b| / |b| as an f64 (b ≠ 0), computed exactly before the final rounding.
pub fn rel_diff(a: &Big, b: &Big) -> f64 {
    let d = (a - b).abs();
    let q = with_bits(d, 64) / with_bits(b.clone().abs(), 64);
    to_f64(&q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn with_bits_rounds_exact_values() {
        // 1 + 2^-40 has 41 bits; at 32 bits it must round to 1 (dashu alone would not round).
        let x = with_bits(exact(1.0) + exact(2f64.powi(-40)), 32);
        assert_eq!(x, exact(1.0));
        assert_eq!(x.precision(), 32);
        let y = with_bits(exact(1.0) + exact(2f64.powi(-31)), 32);
        assert_eq!(y, exact(1.0) + exact(2f64.powi(-31)));
    }

    #[test]
    fn round_trip_specials_and_edges() {
        for x in [0.0, -0.0, 1.0, -1.5, f64::MAX, f64::MIN_POSITIVE, f64::from_bits(1), -f64::from_bits(0x000f_ffff_ffff_ffff)] {
            let y = to_f64(&exact(x));
            assert_eq!(y.to_bits() & !(1 << 63), x.to_bits() & !(1 << 63), "{x}");
        }
    }

    #[test]
    fn rounds_ties_to_even_and_subnormals_once() {
        // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: even is 1.
        assert_eq!(to_f64(&(exact(1.0) + exact(2f64.powi(-53)))), 1.0);
        // 1 + 2^-52 + 2^-53 ties to 1 + 2^-51 (even).
        let x = exact(1.0) + exact(2f64.powi(-52)) + exact(2f64.powi(-53));
        assert_eq!(to_f64(&x), 1.0 + 2f64.powi(-51));
        // Rounding that carries into a new binade: (2^53 − 1/2 − ε)… rounds up to 2^53.
        let x = exact(2f64.powi(53) - 1.0) + exact(0.5) + exact(2f64.powi(-30));
        assert_eq!(to_f64(&x), 2f64.powi(53));
        // Just above a tie rounds up.
        let x = exact(1.0) + exact(2f64.powi(-53)) + exact(2f64.powi(-200));
        assert_eq!(to_f64(&x), 1.0 + 2f64.powi(-52));
        // Subnormal quantum: 1.5·2^-1074 ties to 2·2^-1074, 2.5·2^-1074 to 2·2^-1074.
        let q = exact(f64::from_bits(1));
        let half_q = with_bits(q.clone(), 1) / Big::from(2);
        assert_eq!(to_f64(&(q.clone() + half_q.clone())), f64::from_bits(2));
        assert_eq!(to_f64(&(q.clone() * Big::from(2) + half_q.clone())), f64::from_bits(2));
        assert_eq!(to_f64(&half_q), 0.0);
        // Overflow: MAX + half an ulp rounds to infinity (tie, MAX is odd).
        let x = exact(f64::MAX) + exact(2f64.powi(970));
        assert_eq!(to_f64(&x), f64::INFINITY);
    }

    proptest! {
        #[test]
        fn sum_of_two_f64_rounds_like_hardware(a in any::<u64>(), b in any::<u64>()) {
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            prop_assume!(a.is_finite() && b.is_finite() && (a + b).is_finite());
            let r = to_f64(&(exact(a) + exact(b)));
            prop_assert!(r == a + b);
        }

        #[test]
        fn product_rounds_like_hardware(a in any::<u64>(), b in any::<u64>()) {
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            prop_assume!(a.is_finite() && b.is_finite() && (a * b).is_finite());
            let r = to_f64(&(exact(a) * exact(b)));
            prop_assert!(r == a * b || (r == 0.0 && a * b == 0.0), "{a:e}*{b:e}: {r:e} vs {:e}", a * b);
        }
    }
}
