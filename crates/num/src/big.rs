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
    let (mant, exp) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    let signed = if x.is_sign_negative() {
        -IBig::from(mant)
    } else {
        IBig::from(mant)
    };
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
        return if repr.sign() == Sign::Negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    round_scaled_to_f64(repr.significand(), repr.exponent())
}

/// Round an exact value to the nearest value of `fmt` (e.g. [`BINARY32`]), returned as the f64
/// holding it exactly; ±inf on overflow, NaN-free.
pub fn to_format(x: &Big, fmt: &Format) -> f64 {
    let repr = x.repr();
    let negative = repr.sign() == Sign::Negative;
    let v = if repr.is_infinite() {
        f64::INFINITY
    } else {
        round_to_format(
            &repr.significand().unsigned_abs(),
            repr.exponent(),
            false,
            fmt,
        )
    };
    if negative {
        -v
    } else {
        v
    }
}

/// The f64 nearest to `m · 2^e` (ties to even).
pub fn round_scaled_to_f64(m: &IBig, e: isize) -> f64 {
    let negative = m.sign() == Sign::Negative;
    let v = round_to_format(&m.unsigned_abs(), e, false, &BINARY64);
    if negative {
        -v
    } else {
        v
    }
}

/// A binary floating-point format for rounding: `p` significant bits, smallest normal exponent
/// `emin`, largest finite exponent `emax`. Its values are a subset of f64's.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    /// Significant bits, the implicit bit included (53 for binary64).
    pub p: u32,
    /// Exponent e of the smallest normal number 2^e; below it values are subnormal and lose
    /// bits.
    pub emin: i32,
    /// Exponent e of the largest finite binade [2^e, 2^(e+1)); beyond it values overflow to ∞.
    pub emax: i32,
}

/// IEEE binary64 (`f64`): the format exact references are rounded to for records.
pub const BINARY64: Format = Format {
    p: 53,
    emin: -1022,
    emax: 1023,
};
/// IEEE binary32 (`f32`): rounds exact values as an f32 operation would.
pub const BINARY32: Format = Format {
    p: 24,
    emin: -126,
    emax: 127,
};

impl Format {
    /// The format of a base type.
    pub fn of<F: crate::base::Base>() -> Format {
        Format {
            p: F::DIGITS,
            emin: F::MIN_EXP,
            emax: F::MAX_EXP,
        }
    }
}

/// `(mag + δ) · 2^e` rounded to nearest-even in `fmt`, where `0 ≤ δ < 1` and `sticky` says
/// whether δ > 0. Returns a non-negative f64 (exact, since `fmt` ⊆ binary64), +inf on overflow.
pub fn round_to_format(mag: &UBig, e: isize, sticky: bool, fmt: &Format) -> f64 {
    if *mag == UBig::ZERO {
        // Only reachable with δ < 1 ulp of the lowest bit: callers keep enough guard bits that a
        // non-zero δ alone is far below the format's quantum.
        return 0.0;
    }
    let len = mag.bit_len() as isize;
    let top = e + len - 1; // exponent of the leading bit
    let quantum = (fmt.emin - fmt.p as i32 + 1) as isize;
    // Lowest kept bit position: p significant bits, but never below the subnormal quantum.
    let keep_from = (top - (fmt.p as isize - 1)).max(quantum);
    let (q, k) = if keep_from <= e {
        // Every bit is kept. A sticky δ could not be placed against half a quantum here, so
        // callers with a sticky remainder supply at least two guard bits below the quantum.
        debug_assert!(
            !sticky,
            "round_to_format: sticky remainder without guard bits"
        );
        let q: u64 = (mag << ((e - keep_from) as usize))
            .try_into()
            .unwrap_or(u64::MAX);
        (q, keep_from)
    } else {
        let drop = (keep_from - e) as usize;
        let mut q: u64 = (mag >> drop).try_into().unwrap_or(u64::MAX);
        let half = mag.bit(drop - 1);
        let below_half = sticky || mag.trailing_zeros().is_some_and(|tz| tz < drop - 1);
        if half && (below_half || q & 1 == 1) {
            q += 1;
        }
        (q, keep_from)
    };
    compose(q, k, fmt)
}

/// q · 2^k for q ≤ 2^p and k ≥ the format's quantum exponent, built from bits (overflowing to
/// infinity beyond the format's range).
fn compose(mut q: u64, mut k: isize, fmt: &Format) -> f64 {
    if q == 0 {
        return 0.0;
    }
    if q >> fmt.p != 0 {
        // Rounding carried into a new leading bit: q = 2^p exactly.
        q >>= 1;
        k += 1;
    }
    let len = 64 - q.leading_zeros() as isize;
    let top = k + len - 1;
    if top > fmt.emax as isize {
        return f64::INFINITY;
    }
    // q < 2^53 and −1074 ≤ k: q · 2^k is an exact f64 (possibly subnormal), and scaling by a
    // power of two in two exact steps reproduces it.
    let v = q as f64;
    let half = (k / 2) as i32;
    v * crate::base::pow2_f64(half) * crate::base::pow2_f64(k as i32 - half)
}

/// |a − b| / |b| as an f64 (b ≠ 0), computed exactly before the final rounding.
pub fn rel_diff(a: &Big, b: &Big) -> f64 {
    let d = (a - b).abs();
    let q = with_bits(d, 64) / with_bits(b.clone().abs(), 64);
    to_f64(&q)
}

/// Flag bits of the exact GPU sums (`crates/study/cuda/exact_sum.cu`): a NaN was seen.
pub const EXACT_NAN: u32 = 1;
/// A +inf was seen.
pub const EXACT_POS_INF: u32 = 2;
/// A −inf was seen.
pub const EXACT_NEG_INF: u32 = 4;
/// A term other than −0.0 was seen (an exact zero sum is then +0.0).
pub const EXACT_NOT_ALL_NEG_ZERO: u32 = 8;

/// The f64 nearest to the exact value held by the exact kernels' limbs (limb k counts units of
/// 2^(32k − 1074), as two's complement i64), with the special-value rules of
/// [`crate::exact::ExactSum`]: NaN if a NaN or both infinities were seen, else the
/// infinity seen; an exact zero is −0.0 only when there were terms and all were −0.0.
pub fn round_limbs(limbs: &[i64], flags: u32, terms: usize) -> f64 {
    let (pos, neg) = (flags & EXACT_POS_INF != 0, flags & EXACT_NEG_INF != 0);
    if flags & EXACT_NAN != 0 || (pos && neg) {
        return f64::NAN;
    }
    if pos {
        return f64::INFINITY;
    }
    if neg {
        return f64::NEG_INFINITY;
    }
    let m = limbs
        .iter()
        .enumerate()
        .fold(IBig::ZERO, |m, (k, &l)| m + (IBig::from(l) << (32 * k)));
    if m == IBig::ZERO {
        return if terms > 0 && flags & EXACT_NOT_ALL_NEG_ZERO == 0 {
            -0.0
        } else {
            0.0
        };
    }
    round_scaled_to_f64(&m, -1074)
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
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.5,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(0x000f_ffff_ffff_ffff),
        ] {
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
        assert_eq!(
            to_f64(&(q.clone() * Big::from(2) + half_q.clone())),
            f64::from_bits(2)
        );
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
