//! Decimal strings for double-word numbers at full precision: exact binary-to-decimal formatting
//! with a chosen number of significant digits, and parsing to the nearest double-word.
//!
//! Both directions work on exact integers (dashu-int), so no step rounds twice: a double-word's
//! value `m·2^e` is printed from `m·5^−e · 10^e`, and a decimal `n·10^k` is rounded to the base
//! format straight from the rational `n·10^k`.

use core::fmt;
use core::str::FromStr;

use dashu_base::{BitTest, Sign, UnsignedAbs};
use dashu_int::{IBig, UBig};

use crate::base::Base;
use crate::big::{round_to_format, Format};
use crate::dw::DoubleWord;

/// Why a decimal string is not a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid number {input:?}: expected a decimal like -1.25e-3, inf or nan")]
pub struct ParseNumberError {
    /// The rejected text, as given.
    pub input: String,
}

/// Significant decimal digits that identify a value of `bits` binary digits: ⌈bits·log10 2⌉ + 1.
pub fn digits_for_bits(bits: u32) -> usize {
    (bits as f64 * core::f64::consts::LOG10_2).ceil() as usize + 1
}

/// The exact value `m · 2^e` written with `sig` significant digits (round half to even) in
/// scientific notation, e.g. `-1.2345e-7`; plain positional notation for exponents in −4..16.
pub fn format_scaled(m: &IBig, e: isize, sig: usize) -> String {
    let sig = sig.max(1);
    let negative = m.sign() == Sign::Negative;
    let mag: UBig = m.unsigned_abs();
    if mag == UBig::ZERO {
        return if negative { "-0".into() } else { "0".into() };
    }
    // value = digits · 10^dexp exactly.
    let (digits, dexp): (UBig, isize) = if e >= 0 {
        (mag << e as usize, 0)
    } else {
        (mag * UBig::from(5u8).pow((-e) as usize), e)
    };
    let s = digits.to_string();
    let (kept, exp10) = round_digits(&s, sig, dexp);
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    // kept has `sig` digits d0.d1d2…, the value is d0.d1… × 10^exp10.
    let trimmed = kept.trim_end_matches('0');
    let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
    if (-4..16).contains(&exp10) {
        if exp10 >= 0 {
            let int_len = exp10 as usize + 1;
            if trimmed.len() <= int_len {
                out.push_str(trimmed);
                out.extend(core::iter::repeat_n('0', int_len - trimmed.len()));
            } else {
                out.push_str(&trimmed[..int_len]);
                out.push('.');
                out.push_str(&trimmed[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(core::iter::repeat_n('0', (-exp10 - 1) as usize));
            out.push_str(trimmed);
        }
    } else {
        out.push_str(&trimmed[..1]);
        if trimmed.len() > 1 {
            out.push('.');
            out.push_str(&trimmed[1..]);
        }
        out.push_str(&format!("e{exp10}"));
    }
    out
}

/// Round the decimal digit string `s` (value `s · 10^dexp`) to `sig` digits, half to even.
/// Returns the kept digits (exactly `sig` of them) and the decimal exponent of the first one.
fn round_digits(s: &str, sig: usize, dexp: isize) -> (String, isize) {
    let bytes = s.as_bytes();
    let exp10 = dexp + bytes.len() as isize - 1;
    if bytes.len() <= sig {
        let mut kept = s.to_string();
        kept.extend(core::iter::repeat_n('0', sig - bytes.len()));
        return (kept, exp10);
    }
    let mut kept: Vec<u8> = bytes[..sig].to_vec();
    let next = bytes[sig];
    let rest_nonzero = bytes[sig + 1..].iter().any(|&b| b != b'0');
    let last_odd = (kept[sig - 1] - b'0') % 2 == 1;
    let round_up = next > b'5' || (next == b'5' && (rest_nonzero || last_odd));
    if round_up {
        let mut i = sig;
        loop {
            if i == 0 {
                // 999… rolled over: one more digit in front.
                kept.insert(0, b'1');
                kept.truncate(sig);
                return (String::from_utf8(kept).unwrap_or_default(), exp10 + 1);
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    (String::from_utf8(kept).unwrap_or_default(), exp10)
}

/// A parsed decimal: `NaN`, `±inf`, or the exact rational `n · 10^k`.
enum Decimal {
    Nan,
    Inf(bool),
    Finite { n: IBig, k: i64 },
}

fn parse_decimal(s: &str) -> Result<Decimal, ParseNumberError> {
    let err = || ParseNumberError {
        input: s.to_string(),
    };
    let t = s.trim();
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    match body.to_ascii_lowercase().as_str() {
        "nan" => return Ok(Decimal::Nan),
        "inf" | "infinity" => return Ok(Decimal::Inf(negative)),
        _ => {}
    }
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty())
        || !all_digits(int_part)
        || !all_digits(frac_part)
    {
        return Err(err());
    }
    let mut k: i64 = match exponent {
        Some(x) => x.parse::<i64>().map_err(|_| err())?,
        None => 0,
    };
    k = k.checked_sub(frac_part.len() as i64).ok_or_else(err)?;
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    let n = if digits.is_empty() {
        UBig::ZERO
    } else {
        UBig::from_str(digits).map_err(|_| err())?
    };
    let n = if negative {
        -IBig::from(n)
    } else {
        IBig::from(n)
    };
    Ok(Decimal::Finite { n, k })
}

/// `num / den` rounded to nearest-even in `fmt` (num may be negative; den > 0), as an exact f64.
fn round_rational(num: &IBig, den: &UBig, fmt: &Format) -> f64 {
    let negative = num.sign() == Sign::Negative;
    let mag: UBig = num.unsigned_abs();
    if mag == UBig::ZERO {
        return if negative { -0.0 } else { 0.0 };
    }
    // Scale so the integer quotient has p + 3 bits and sits at least 2 bits below the
    // subnormal quantum: then the remainder only ever acts as a sticky bit.
    let quantum = (fmt.emin - fmt.p as i32 + 1) as isize;
    let est = mag.bit_len() as isize - den.bit_len() as isize; // log2(value) ∈ (est − 1, est + 1)
    let shift = (fmt.p as isize + 3 - est).max(2 - quantum);
    let (n2, d2) = if shift >= 0 {
        (mag << shift as usize, den.clone())
    } else {
        (mag, den << (-shift) as usize)
    };
    let q = &n2 / &d2;
    let sticky = (&n2 % &d2) != UBig::ZERO;
    let v = round_to_format(&q, -shift, sticky, fmt);
    if negative {
        -v
    } else {
        v
    }
}

/// Decimal exponents beyond this magnitude are resolved without big-integer work: even the
/// widest value (±10^±5000 with a long mantissa) is far outside every format here.
const EXP10_LIMIT: i64 = 5000;

impl<F: Base> FromStr for DoubleWord<F> {
    type Err = ParseNumberError;

    /// The double-word nearest to the decimal in the greedy sense: `hi` is the base float
    /// nearest to the exact decimal value, `lo` the base float nearest to the exact remainder.
    /// Accepts `[+-]digits[.digits][e[+-]digits]`, `inf`, `infinity` and `nan` (any case).
    /// Values beyond the range round to ±inf, values below it to ±0.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fmt = Format::of::<F>();
        let (n, k) = match parse_decimal(s)? {
            Decimal::Nan => return Ok(Self::from_base(F::NAN)),
            Decimal::Inf(neg) => {
                return Ok(Self::from_base(if neg {
                    -F::INFINITY
                } else {
                    F::INFINITY
                }))
            }
            Decimal::Finite { n, k } => (n, k),
        };
        let negative = n.sign() == Sign::Negative;
        let signed = |v: f64| F::from_f64(if negative { -v } else { v });
        if n == IBig::ZERO || k < -EXP10_LIMIT - ((&n).unsigned_abs().bit_len() as i64) {
            return Ok(Self::from_base(signed(0.0)));
        }
        if k > EXP10_LIMIT {
            return Ok(Self::from_base(signed(f64::INFINITY)));
        }
        // value = num / den exactly.
        let (num, den) = if k >= 0 {
            (n * IBig::from(UBig::from(10u8).pow(k as usize)), UBig::ONE)
        } else {
            (n, UBig::from(10u8).pow((-k) as usize))
        };
        let hi = round_rational(&num, &den, &fmt);
        if !hi.is_finite() {
            return Ok(Self::from_base(F::from_f64(hi)));
        }
        // remainder = num/den − hi = (num·2^s − M·2^(e+s)·den) / (den·2^s) with hi = M·2^e.
        let (m, e) = f64_parts(hi);
        let s = (-e).max(0) as usize;
        let r_num = (num << s) - IBig::from(m) * IBig::from(&den << (e + s as isize) as usize);
        let lo = round_rational(&r_num, &(den << s), &fmt);
        Ok(Self::from_sum(F::from_f64(hi), F::from_f64(lo)))
    }
}

/// (m, e) with x = m · 2^e exactly, m a signed integer.
fn f64_parts(x: f64) -> (i64, isize) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as isize;
    let frac = (bits & ((1u64 << 52) - 1)) as i64;
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1i64 << 52), biased - 1075)
    };
    (if x.is_sign_negative() { -m } else { m }, e)
}

impl<F: Base> fmt::Display for DoubleWord<F> {
    /// The exact value rounded to `{:.N}` significant digits, by default enough digits for the
    /// type's 2p bits (16 for f32x2, 33 for f64x2), trailing zeros dropped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.hi.is_nan() {
            return f.pad("NaN");
        }
        if !self.hi.is_finite() {
            return f.pad(if self.hi.is_sign_negative() {
                "-inf"
            } else {
                "inf"
            });
        }
        let sig = f
            .precision()
            .unwrap_or_else(|| digits_for_bits(2 * F::DIGITS));
        let (mh, eh) = f64_parts(self.hi.to_f64());
        let (ml, el) = f64_parts(self.lo.to_f64());
        // Exact sum of the two words as one scaled integer.
        let e = eh.min(el);
        let m = (IBig::from(mh) << (eh - e) as usize) + (IBig::from(ml) << (el - e) as usize);
        let s = if m == IBig::ZERO && self.hi.is_sign_negative() {
            "-0".to_string()
        } else {
            format_scaled(&m, e, sig)
        };
        f.pad(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::big::{exact, to_f64, Big};
    use crate::dw::{f32x2, f64x2};
    use proptest::prelude::*;

    #[test]
    fn formats_exact_values() {
        assert_eq!(
            f64x2::from_f64(0.1).to_string(),
            "0.100000000000000005551115123125783"
        );
        assert_eq!(format!("{:.5}", f64x2::from_f64(0.1)), "0.1");
        assert_eq!(f64x2::from_f64(-2.5).to_string(), "-2.5");
        assert_eq!(
            f64x2::from_f64(1e300).to_string(),
            "1.00000000000000005250476025520442e300"
        );
        assert_eq!(f64x2::from_f64(123456.0).to_string(), "123456");
        assert_eq!(format!("{:.3}", f64x2::from_f64(9.9996)), "10");
        assert_eq!(f64x2::ZERO.to_string(), "0");
        assert_eq!((-f64x2::ZERO).to_string(), "-0");
        assert_eq!(f64x2::from_base(f64::NAN).to_string(), "NaN");
        assert_eq!(f32x2::from_base(f32::NEG_INFINITY).to_string(), "-inf");
        // 0.33333333333333303727…: 48 bits, 16 digits, the 16th a zero.
        assert_eq!(f32x2::from_f64(1.0 / 3.0).to_string(), "0.333333333333333");
        // 1 + 2^-60 needs the low word: f64 alone would print 1.
        let x = f64x2::from_sum(1.0, 2f64.powi(-60));
        assert_eq!(x.to_string(), "1.0000000000000000008673617379884");
    }

    #[test]
    fn parses_to_the_nearest_double_word() {
        let x: f64x2 = "0.1".parse().unwrap();
        // hi is the f64 nearest to 1/10 and lo the f64 nearest to 1/10 − hi.
        assert_eq!(x.hi, 0.1);
        let rem = Big::from_str("0.1").map(|_| ()).is_ok();
        let _ = rem;
        let tenth = exact(1.0) / with_bits_big(10.0, 400);
        let lo_exact = tenth - exact(0.1);
        assert_eq!(x.lo, to_f64(&lo_exact));
        let y: f64x2 = "3.14159265358979323846264338327950288".parse().unwrap();
        assert_eq!(y.hi, core::f64::consts::PI);
        assert_eq!(y.lo, 1.2246467991473532e-16);
        let z: f32x2 = "-1.5e-3".parse().unwrap();
        assert_eq!(z.hi, -1.5e-3f32);
        assert_eq!("inf".parse::<f64x2>().unwrap().hi, f64::INFINITY);
        assert!("NaN".parse::<f32x2>().unwrap().is_nan());
        assert_eq!("1e400".parse::<f64x2>().unwrap().hi, f64::INFINITY);
        assert_eq!("-1e-400".parse::<f64x2>().unwrap(), -f64x2::ZERO);
        assert_eq!("1e-99999999".parse::<f64x2>().unwrap(), f64x2::ZERO);
        assert_eq!(
            "4.9406564584124654e-324".parse::<f64x2>().unwrap().hi,
            f64::from_bits(1)
        );
        assert_eq!("1e39".parse::<f32x2>().unwrap().hi, f32::INFINITY);
        for bad in ["", "-", "1.2.3", "e5", "1e", "abc", "1e5x", "--1"] {
            let err = bad.parse::<f64x2>().unwrap_err();
            assert!(err.to_string().contains("invalid number"), "{bad}: {err}");
        }
    }

    #[test]
    fn subnormal_low_word_tie() {
        // 3.630371e-38 lies 0.42 f32-ulps below the f32 h nearest to it; the remainder rounds to
        // −2^-149, exactly half of h's ulp, so the normalized pair is (h − ulp, +2^-149): the
        // same value, the nearest double-float to the decimal.
        let x: f32x2 = "3.630371e-38".parse().unwrap();
        let h = f32::from_bits(21342205);
        assert_eq!((x.hi, x.lo), (f32::from_bits(21342204), f32::from_bits(1)));
        assert_eq!(
            exact(x.hi as f64) + exact(x.lo as f64),
            exact(h as f64) - exact(f32::from_bits(1) as f64)
        );
    }

    fn with_bits_big(x: f64, bits: usize) -> Big {
        crate::big::with_bits(exact(x), bits)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn f64x2_round_trips_through_its_decimal(hi in -1e30f64..1e30, r in -1.0f64..1.0, e in -300i32..300) {
            let hi = hi * 2f64.powi(e) / 1e30;
            let x = f64x2::from_sum(hi, hi * r * 2f64.powi(-53));
            let s = x.to_string();
            let y: f64x2 = s.parse().unwrap();
            // 33 digits identify the value to ~2^-108 relative, below the type's own spacing.
            let (xb, yb) = (exact(x.hi) + exact(x.lo), exact(y.hi) + exact(y.lo));
            let rel = crate::big::rel_diff(&yb, &xb);
            prop_assert!(rel <= 2f64.powi(-106), "{x:?} -> {s} -> {y:?}: {rel:e}");
        }

        // Where the low word is normal (|v| ≥ 2^(emin+p)), hi is exactly the nearest base float.
        // Below, a subnormal low word can sit on a tie with hi's last bit, and normalization
        // (hi = RN(hi + lo)) may then move hi by one ulp: see `subnormal_low_word_tie`.
        #[test]
        fn f64_values_parse_exactly_like_std(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assume!(v.is_finite() && (v == 0.0 || v.abs() >= 2f64.powi(-1022 + 53)));
            let s = format!("{v:e}");
            let x: f64x2 = s.parse().unwrap();
            prop_assert_eq!(x.hi, s.parse::<f64>().unwrap());
        }

        #[test]
        fn f32_halves_parse_like_std(bits in any::<u32>()) {
            let v = f32::from_bits(bits);
            prop_assume!(v.is_finite() && (v == 0.0 || v.abs() >= 2f32.powi(-126 + 24)));
            let s = format!("{v:e}");
            let x: f32x2 = s.parse().unwrap();
            prop_assert_eq!(x.hi, s.parse::<f32>().unwrap());
        }
    }
}
