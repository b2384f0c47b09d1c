//! The host's copy of the per-input scoring done on the device (`cuda/score.cu`), operation
//! for operation, so it can be tested here against exact arithmetic, and the key packing the
//! device's reductions use.
//!
//! The GPU tests check that the device's verdicts equal these bit for bit.

/// An input's verdict against a double reference (see [`classify`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct InputVerdict {
    /// The error in ulps of the reference (binary32 spacing, per [`crate::format`]); +inf for a
    /// NaN/infinity/finite mismatch.
    pub ulps: f64,
    /// The reference cannot decide the correctly rounded result (a rounding boundary lies
    /// within its bound), or the error's ulp (a power of two lies within it, and the result is
    /// not that power).
    pub hard: bool,
    /// Decided without the CPU: the result is not the correctly rounded one (never set when
    /// `hard`, except for special-value mismatches, which do not depend on rounding).
    pub wrong: bool,
    /// A special-value mismatch (`ulps` is then infinite).
    pub infinite: bool,
}

/// 2^k for k in [-1074, 1023], from its bits.
pub fn pow2(k: i32) -> f64 {
    assert!(
        (-1074..=1023).contains(&k),
        "2^{k} is not a finite nonzero double"
    );
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// The binary exponent of a finite nonzero double, subnormals included.
fn exponent_of(a: f64) -> i32 {
    crate::format::binary_exponent(a) as i32
}

/// The binary32 ulp of a real |a| as [`crate::format`] defines it (exponent clamped below at
/// −126, unbounded above), for finite `a`.
pub fn ulp32(a: f64) -> f64 {
    let e = if a == 0.0 { -126 } else { exponent_of(a) };
    pow2(e.max(-126) - 23)
}

/// 1 / [`ulp32`], exactly (the device scales errors by it).
pub fn inverse_ulp32(a: f64) -> f64 {
    let e = if a == 0.0 { -126 } else { exponent_of(a) };
    pow2(23 - e.max(-126))
}

/// The binary64 ulp of |a|, the same way (clamped at −1022).
pub fn ulp64(a: f64) -> f64 {
    let e = if a == 0.0 { -1022 } else { exponent_of(a) };
    pow2(e.max(-1022) - 52)
}

/// The largest f32 ≤ a, for a ≥ 0 (f32::MAX past it): CUDA's `__double2float_rd`.
pub fn f32_down(a: f64) -> f32 {
    let f = a as f32;
    if (f as f64) > a {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    }
}

/// The smallest f32 ≥ a, for a ≥ 0 (+inf past f32::MAX): CUDA's `__double2float_ru`.
pub fn f32_up(a: f64) -> f32 {
    let f = a as f32;
    if (f as f64) < a {
        f32::from_bits(f.to_bits() + 1)
    } else {
        f
    }
}

/// An f32 as a double, +inf standing for 2^128 (the value just past f32::MAX).
fn widen(f: f32) -> f64 {
    if f.is_infinite() {
        pow2(128)
    } else {
        f as f64
    }
}

fn midpoint(p: f32, q: f32) -> f64 {
    (widen(p) + widen(q)) * 0.5
}

/// Whether a binary32 rounding boundary (a midpoint of consecutive f32 values, or the overflow
/// threshold f32::MAX + ulp/2) lies within `b` of `a` ≥ 0. Zero is not one: ±0 compare equal.
pub fn near_boundary(a: f64, b: f64) -> bool {
    let lo = f32_down(a);
    let hi = f32_up(a);
    let mut d = f64::INFINITY;
    if lo != hi {
        d = (a - midpoint(lo, hi)).abs();
    }
    if lo > 0.0 {
        d = d.min((a - midpoint(f32::from_bits(lo.to_bits() - 1), lo)).abs());
    }
    if !hi.is_infinite() {
        d = d.min((a - midpoint(hi, f32::from_bits(hi.to_bits() + 1))).abs());
    }
    d <= b
}

/// The power of two P ≥ 2^-125 within `b` of `a` > 0, or 0 (the device's `power_of_two_near`):
/// the f32 spacing halves below P, so near one the reference cannot tell the exact value's ulp.
pub fn power_of_two_near(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        return 0.0;
    }
    let lo = pow2(exponent_of(a));
    let p = if a - lo <= b {
        lo
    } else if 2.0 * lo - a <= b {
        2.0 * lo
    } else {
        0.0
    };
    if p >= pow2(-125) {
        p
    } else {
        0.0
    }
}

/// The bound of a reference r from CUDA's double function: K·ulp64(r), at least 4·2^-1074.
pub fn reference_bound(r: f64, k: f64) -> f64 {
    (k * ulp64(r)).max(pow2(-1072))
}

/// The verdict on an f32 result `y` against a double reference `r` with absolute error at most
/// `bound` (the device's `classify`).
///
/// Both NaN: 0. One NaN, or r = ±inf and y not the same infinity: infinite. Otherwise `rounded`
/// = r to f32; y = ±inf is 0 when it equals `rounded` (a correct overflow), else infinite; a
/// finite y has error |y − r| / ulp32(r) (finite also when r is past f32::MAX). `hard` when a
/// rounding boundary is within the bound, or a power of two is (its ulp then undecided) and y is
/// not that power. `wrong` is y ≠ `rounded` (−0 = +0) when not hard.
pub fn classify(y: f32, r: f64, bound: f64) -> InputVerdict {
    let mut o = InputVerdict {
        ulps: 0.0,
        hard: false,
        wrong: false,
        infinite: false,
    };
    let mismatch = InputVerdict {
        ulps: f64::INFINITY,
        hard: false,
        wrong: true,
        infinite: true,
    };
    if r.is_nan() || y.is_nan() {
        return if r.is_nan() && y.is_nan() {
            o
        } else {
            mismatch
        };
    }
    if r.is_infinite() {
        return if y as f64 != r { mismatch } else { o };
    }
    let rounded = r as f32;
    o.hard = near_boundary(r.abs(), bound);
    if y.is_infinite() {
        o.wrong = !o.hard && y != rounded;
        if y != rounded {
            o.ulps = f64::INFINITY;
            o.infinite = true;
        }
        return o;
    }
    let p = power_of_two_near(r.abs(), bound);
    if p != 0.0 && (y as f64).abs() != p {
        o.hard = true;
    }
    o.wrong = !o.hard && y != rounded;
    o.ulps = (y as f64 - r).abs() * inverse_ulp32(r);
    o
}

/// The 32-bit key of an error (the device's `error_key`): float bits, which order as the values
/// do for non-negative floats; rounded up, finite errors past f32::MAX saturating just below
/// the key of +inf.
pub fn error_key(ulps: f64) -> u32 {
    if ulps.is_infinite() {
        return 0x7f80_0000;
    }
    let f = f32_up(ulps);
    if f.is_infinite() {
        0x7f7f_ffff
    } else {
        f.to_bits()
    }
}

/// Packs an error key and an input into the u64 whose maximum is the largest error and, among
/// equal keys, the largest input.
pub fn pack(key: u32, input: u32) -> u64 {
    (u64::from(key) << 32) | u64::from(input)
}

/// The error key and the input of a packed u64.
pub fn unpack(packed: u64) -> (u32, u32) {
    ((packed >> 32) as u32, packed as u32)
}

/// The error a key stands for, to f32 precision (an upper bound of the error it was made from,
/// up to saturation).
pub fn key_value(key: u32) -> f64 {
    f32::from_bits(key) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{ulp_error, Exact, Format};
    use mantissa_num::big;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn f32_of(bits: u32) -> f32 {
        f32::from_bits(bits)
    }

    /// Whether no f32 rounding boundary lies in the closed interval [a − b, a + b], decided
    /// exactly: the independent definition of "not hard". Rounding is monotone, so it suffices
    /// that values a hair outside both ends round alike (the hair, 2^-1200, is far below any
    /// f32 spacing and catches a boundary exactly at an end).
    fn rounding_constant(a: f64, b: f64) -> bool {
        let (ea, eb) = (big::exact(a), big::exact(b));
        let hair = crate::reference::pow2(-1200);
        let lo = Format::F32.round_big(&(ea.clone() - eb.clone() - hair.clone()));
        let hi = Format::F32.round_big(&(ea + eb + hair));
        // ±0 are the same result (f64 == says so).
        lo == hi
    }

    #[test]
    fn pow2_and_ulps_match_the_format_definitions() {
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(-1074), f64::from_bits(1));
        assert_eq!(pow2(-1022), f64::MIN_POSITIVE);
        assert_eq!(pow2(1023), 2f64.powi(1023));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(14);
        let mut samples: Vec<f64> = (0..20_000)
            .map(|_| f64::from_bits(rng.random::<u64>() & 0x7fff_ffff_ffff_ffff))
            .filter(|x| x.is_finite())
            .collect();
        samples.extend([
            0.0,
            f64::from_bits(1),
            1.0,
            1.5,
            f32::MAX as f64,
            2f64.powi(128),
            2f64.powi(-126),
            2f64.powi(-127),
            2f64.powi(-149),
            f64::MAX,
        ]);
        for a in samples {
            assert_eq!(ulp32(a), Format::F32.ulp_of_f64(a), "{a:e}");
            assert_eq!(inverse_ulp32(a) * ulp32(a), 1.0, "{a:e}");
            // (Format::ulp_of_f64 goes through powi, which underflows to 0 for f64 spacings
            // below about 2^-1023; the exponent itself is what to compare.)
            let e = if a == 0.0 {
                -1022
            } else {
                crate::format::binary_exponent(a)
            };
            assert_eq!(ulp64(a), pow2(Format::F64.ulp_exp(e) as i32), "{a:e}");
            assert_eq!(
                ulp64(a),
                big::to_f64(&crate::reference::pow2(Format::F64.ulp_exp(e) as isize)),
                "{a:e}"
            );
        }
    }

    #[test]
    fn directed_conversions_bracket() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for _ in 0..100_000 {
            // Doubles over f32's range and somewhat past it, many exactly f32.
            let a = if rng.random::<bool>() {
                f32_of(rng.random::<u32>() & 0x7fff_ffff) as f64
            } else {
                f64::from_bits(rng.random_range(0x3600_0000_0000_0000u64..0x4810_0000_0000_0000))
            };
            if !a.is_finite() {
                continue;
            }
            let (lo, hi) = (f32_down(a), f32_up(a));
            assert!((lo as f64) <= a && (a <= hi as f64), "{a:e}");
            assert!(lo.is_finite());
            if lo != hi {
                assert_eq!(f32_of(lo.to_bits() + 1), hi, "{a:e}: adjacent");
            } else {
                assert_eq!(lo as f64, a);
            }
        }
        assert_eq!(f32_up(f32::MAX as f64 * 1.0000001), f32::INFINITY);
        assert_eq!(f32_down(1e300), f32::MAX);
        assert_eq!(f32_up(1e-300), f32_of(1));
        assert_eq!(f32_down(1e-300), 0.0);
    }

    /// The boundary test against its exact definition, on values placed at, just inside and
    /// just outside a bound's distance of boundaries: midpoints of normals, subnormals, across
    /// binade edges (where the spacing halves), the overflow threshold, and exact f32 values.
    #[test]
    fn near_boundary_agrees_with_exact_rounding() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let specials: Vec<u32> = vec![
            0,
            1,
            2,
            0x007f_ffff,
            0x0080_0000,
            0x0080_0001,
            0x3f80_0000,
            0x3f7f_ffff,
            0x7f7f_fffe,
            0x7f7f_ffff,
        ];
        let (mut checked, mut hard) = (0, 0);
        for round in 0..4000 {
            let bits = if round < specials.len() * 20 {
                specials[round % specials.len()]
            } else {
                rng.random::<u32>() & 0x7f7f_ffff
            };
            let f = f32_of(bits);
            let next = widen(f32_of(bits + 1));
            let m = (f as f64 + next) * 0.5;
            for b_ulps in [2.0, 6.0, 22.0] {
                let b = reference_bound(m, b_ulps);
                for a in [
                    m,
                    m - b,
                    m + b,
                    m - 2.0 * b,
                    m + 2.0 * b,
                    f as f64,
                    next,
                    m - ulp64(m) * (b_ulps + 1.0),
                    m + ulp64(m) * (b_ulps + 1.0),
                ] {
                    if !(a.is_finite() && a >= 0.0) {
                        continue;
                    }
                    let got = near_boundary(a, b);
                    let want = !rounding_constant(a, b);
                    assert_eq!(got, want, "a = {a:e} ({:#x}), b = {b:e}", a.to_bits());
                    checked += 1;
                    hard += usize::from(got);
                }
            }
        }
        assert!(
            checked > 50_000 && hard > checked / 4 && hard < checked * 3 / 4,
            "{checked} {hard}"
        );
    }

    #[test]
    fn near_boundary_on_random_values_and_bounds() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut hard = 0;
        for _ in 0..30_000 {
            let a =
                f64::from_bits(rng.random_range(0x3690_0000_0000_0000u64..0x47f8_0000_0000_0000));
            // Bounds from a few f64 ulps to several f32 ulps: both answers occur.
            let b = ulp64(a) * 2f64.powi(rng.random_range(0..34));
            let got = near_boundary(a, b);
            assert_eq!(got, !rounding_constant(a, b), "a = {a:e}, b = {b:e}");
            hard += usize::from(got);
        }
        assert!(hard > 1000 && hard < 29_000, "{hard}");
    }

    #[test]
    fn overflow_threshold_and_zero() {
        let threshold = f32::MAX as f64 + 2f64.powi(103); // 2^128 − 2^103
        assert_eq!(threshold, 2f64.powi(128) - 2f64.powi(103));
        assert_eq!(
            threshold as f32,
            f32::INFINITY,
            "ties to even past MAX overflow"
        );
        assert!(near_boundary(threshold, 0.0));
        assert!(near_boundary(
            threshold + ulp64(threshold),
            2.0 * ulp64(threshold)
        ));
        assert!(!near_boundary(threshold * 1.01, 1e30));
        assert!(!near_boundary(1e39, ulp64(1e39) * 22.0));
        assert!(!near_boundary(0.0, 1e-300), "zero is no boundary");
        assert!(
            near_boundary(2f64.powi(-150), 0.0),
            "half the smallest subnormal"
        );
        assert!(!near_boundary(1.0, ulp64(1.0) * 100.0), "an exact f32");
    }

    /// The error against [`ulp_error`] with the reference taken as exact: equal up to the one
    /// rounding of the subtraction.
    #[test]
    fn finite_errors_match_ulp_error() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        for i in 0..40_000 {
            let r = match i % 4 {
                0 => f64::from_bits(
                    rng.random_range(0x3690_0000_0000_0000u64..0x47f8_0000_0000_0000),
                ),
                1 => f64::from_bits(
                    rng.random_range(0x3800_0000_0000_0000u64..0x3820_0000_0000_0000),
                ), // f32 subnormals
                2 => -f64::from_bits(
                    rng.random_range(0x3f00_0000_0000_0000u64..0x4100_0000_0000_0000),
                ),
                _ => f64::from_bits(
                    rng.random_range(0x47e0_0000_0000_0000u64..0x4800_0000_0000_0000),
                ), // around f32::MAX and past it
            };
            // Results near r, and far off.
            let y = match i % 3 {
                0 => r as f32,
                1 => f32_of((r as f32).to_bits().wrapping_add(rng.random_range(0..40))),
                _ => f32_of(rng.random::<u32>()),
            };
            if y.is_nan() {
                continue;
            }
            let o = classify(y, r, reference_bound(r, 6.0));
            let want = ulp_error(Format::F32, y as f64, &Exact::Finite(big::exact(r)));
            if want.is_infinite() || o.infinite {
                // Only an infinite y against a finite r: the one documented divergence from
                // ulp_error is a correct overflow (y = rounded = ±inf), 0 here.
                assert!(y.is_infinite(), "{y:e} vs {r:e}");
                assert_eq!(o.infinite, y != r as f32);
                continue;
            }
            let rel = ((o.ulps - want) / want.max(1e-300)).abs();
            assert!(
                rel <= 2f64.powi(-52),
                "{y:e} vs {r:e}: {} vs {want}",
                o.ulps
            );
        }
    }

    #[test]
    fn special_values() {
        let b = 0.0;
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        let o = classify(f32::NAN, nan, b);
        assert_eq!((o.ulps, o.wrong, o.infinite), (0.0, false, false));
        let o = classify(1.0, nan, b);
        assert_eq!((o.ulps, o.wrong, o.infinite), (inf, true, true));
        let o = classify(f32::NAN, 1.0, b);
        assert_eq!((o.ulps, o.wrong, o.infinite), (inf, true, true));
        let o = classify(f32::INFINITY, inf, b);
        assert_eq!((o.ulps, o.wrong, o.infinite), (0.0, false, false));
        let o = classify(f32::NEG_INFINITY, inf, b);
        assert!(o.infinite && o.wrong);
        let o = classify(f32::MAX, inf, b);
        assert!(
            o.infinite && o.wrong,
            "finite against an infinite reference"
        );
        // A correct overflow: r past the threshold, y = +inf.
        let o = classify(f32::INFINITY, 1e39, reference_bound(1e39, 6.0));
        assert_eq!(
            (o.ulps, o.wrong, o.infinite, o.hard),
            (0.0, false, false, false)
        );
        // Overflow where the rounding is finite.
        let o = classify(f32::INFINITY, 3e38, reference_bound(3e38, 6.0));
        assert!(o.infinite && o.wrong);
        // A finite result against a value past f32::MAX: finite error, not correctly rounded.
        let o = classify(f32::MAX, 1e39, reference_bound(1e39, 6.0));
        assert!(!o.infinite && o.wrong && o.ulps.is_finite() && o.ulps > 1e6);
        // Signed zeros are the same result.
        let o = classify(-0.0, 0.0, reference_bound(0.0, 6.0));
        assert_eq!((o.ulps, o.wrong, o.hard), (0.0, false, false));
        let o = classify(0.0, -1e-60, reference_bound(-1e-60, 6.0));
        assert_eq!((o.wrong, o.hard), (false, false));
        assert!(o.ulps < 1e-10);
        // A midpoint reference is hard, and not counted wrong either way.
        let m = (1.0 + f32_of(0x3f80_0001) as f64) * 0.5;
        let o = classify(1.0, m, reference_bound(m, 2.0));
        assert!(o.hard && !o.wrong);
        assert_eq!(o.ulps, 0.5);
    }

    /// Outside the powers-of-two zones the exact value's ulp is r's, for any exact value within
    /// the bound; inside them a result other than the power is hard.
    #[test]
    fn binade_is_decided_away_from_powers_of_two() {
        use crate::format::big_exponent;
        let (mut decided, mut undecided) = (0, 0);
        for e in [
            -149, -130, -126, -125, -124, -60, -1, 0, 1, 30, 127, 128, 300,
        ] {
            let p = 2f64.powi(e);
            for k in -40i32..=40 {
                let r = if k < 0 {
                    p - (-k) as f64 * ulp64(p) / 2.0
                } else {
                    p + k as f64 * ulp64(p)
                };
                let b = reference_bound(r, 6.0);
                let near = power_of_two_near(r, b);
                assert!(near == 0.0 || near == p, "r = {r:e}");
                for z in [big::exact(r) - big::exact(b), big::exact(r) + big::exact(b)] {
                    let ez = big_exponent(&z).unwrap();
                    let ulp_z = 2f64.powi(Format::F32.ulp_exp(ez) as i32);
                    if near == 0.0 {
                        assert_eq!(ulp_z, ulp32(r), "r = {r:e}, exact {z}");
                    }
                }
                if near == 0.0 {
                    decided += 1;
                } else {
                    undecided += 1;
                    assert!(e >= -125);
                    let off = f32::from_bits((p as f32).to_bits() - 1);
                    let o = classify(off, r, b);
                    assert!(o.hard && !o.wrong, "r = {r:e}");
                    let o = classify(p as f32, r, b);
                    assert!(!o.hard && o.ulps < 1e-6, "r = {r:e}");
                }
            }
        }
        assert!(decided > 300 && undecided > 100, "{decided} {undecided}");
        assert_eq!(
            power_of_two_near(1.0 + 2f64.powi(-30), reference_bound(1.0, 6.0)),
            0.0
        );
        assert_eq!(
            power_of_two_near(2f64.powi(-126) * (1.0 + 2f64.powi(-52)), 1e-300),
            0.0,
            "no change of spacing at 2^-126"
        );
        assert_eq!(
            power_of_two_near(f64::MAX, 1e300),
            0.0,
            "2 x 2^1023 overflows harmlessly"
        );
        assert_eq!(power_of_two_near(0.0, 1.0), 0.0);
    }

    #[test]
    fn keys_order_like_errors() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut errs: Vec<f64> = (0..5000)
            .map(|_| rng.random::<f64>() * 10f64.powi(rng.random_range(-10..50)))
            .collect();
        errs.extend([
            0.0,
            0.5,
            1.0,
            f32::MAX as f64,
            1e39,
            1e300,
            f64::INFINITY,
            1e-50,
        ]);
        for &a in &errs {
            for &b in &errs {
                if a < b {
                    assert!(error_key(a) <= error_key(b), "{a:e} {b:e}");
                }
            }
            assert!(
                key_value(error_key(a)) >= a || error_key(a) == 0x7f7f_ffff,
                "{a:e}"
            );
            assert!(
                key_value(error_key(a)) <= a * (1.0 + 2f64.powi(-23))
                    || a < 1e-45
                    || error_key(a) >= 0x7f7f_ffff,
                "{a:e}"
            );
        }
        assert!(error_key(1e300) < error_key(f64::INFINITY));
        assert_eq!(error_key(0.0), 0);
        let p = pack(error_key(3.5), 0xdead_beef);
        assert_eq!(unpack(p), (error_key(3.5), 0xdead_beef));
        assert!(pack(error_key(3.5), 0) > pack(error_key(3.25), u32::MAX));
    }
}
