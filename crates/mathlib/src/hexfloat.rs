//! Inputs as people write them and as the tables print them: C99 hexadecimal floats
//! (`0x1.921fb6p+1`, exact) beside shortest round-trip decimals.

use crate::format::Format;

/// The C99 `%a` spelling of `x` in `format`: `0x1.921fb6p+1` (f32: 6 hex digits, f64: 13),
/// trailing zero digits dropped, subnormals as `0x0.…p-126`/`p-1022`.
pub fn to_hex(x: f64, format: Format) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0x0p+0");
    }
    let (frac_bits, bias, digits) = match format {
        Format::F32 => (23u32, 127i64, 6usize),
        Format::F64 => (52u32, 1023i64, 13usize),
    };
    let (biased, frac) = match format {
        Format::F32 => {
            let b = (x as f32).to_bits();
            (((b >> 23) & 0xff) as i64, (b & 0x7f_ffff) as u64)
        }
        Format::F64 => {
            let b = x.to_bits();
            (((b >> 52) & 0x7ff) as i64, b & ((1u64 << 52) - 1))
        }
    };
    // Left-align the fraction on whole hex digits (f32's 23 bits become 24).
    let shifted = frac << (digits as u32 * 4 - frac_bits);
    let mut hex = format!("{shifted:0digits$x}");
    while hex.ends_with('0') {
        hex.pop();
    }
    let (lead, exp) = if biased == 0 {
        (0, 1 - bias)
    } else {
        (1, biased - bias)
    };
    let dot = if hex.is_empty() { "" } else { "." };
    format!("{sign}0x{lead}{dot}{hex}p{exp:+}")
}

/// Shortest decimal that reads back to the same value in `format`.
pub fn to_decimal(x: f64, format: Format) -> String {
    match format {
        Format::F32 => format!("{:e}", x as f32),
        Format::F64 => format!("{x:e}"),
    }
}

/// Parse a decimal or C99 hexadecimal float (`0x1.8p3`, `-0x1p-149`), `inf`, `nan`.
/// Hex floats are exact; decimals are rounded to f64 by Rust's parser. Returns None on
/// anything else.
pub fn parse(s: &str) -> Option<f64> {
    let t = s.trim();
    let (negative, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = body.to_ascii_lowercase();
    let magnitude = if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex(hex)?
    } else {
        match lower.as_str() {
            "inf" | "infinity" => f64::INFINITY,
            "nan" => f64::NAN,
            _ => {
                // Rust's parser accepts "inf"/"nan" spellings we handled; refuse other words.
                if !lower.chars().next()?.is_ascii_digit() && !lower.starts_with('.') {
                    return None;
                }
                lower.parse::<f64>().ok()?
            }
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// The part after `0x`: hex digits, an optional `.` and digits, and an optional `p±exp`.
fn parse_hex(s: &str) -> Option<f64> {
    let (mant, exp) = match s.split_once('p') {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    // Accumulate up to 64 significant bits exactly; more digits than that only set a sticky
    // bit, which a value written from a float never has.
    let mut m: u128 = 0;
    let mut e2 = exp;
    let mut sticky = false;
    for (i, c) in int.chars().chain(frac.chars()).enumerate() {
        let d = c.to_digit(16)? as u128;
        if m >> 100 == 0 {
            m = m * 16 + d;
            if i >= int.len() {
                e2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if i < int.len() {
                e2 += 4;
            }
        }
    }
    if m == 0 {
        return Some(0.0);
    }
    let m = dashu_int::UBig::from(m);
    Some(mantissa_num::big::round_to_format(
        &m,
        e2 as isize,
        sticky,
        &mantissa_num::big::BINARY64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_in_both_formats() {
        let cases32 = [
            1.0f32,
            -0.0,
            std::f32::consts::PI,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            0.1,
        ];
        for x in cases32 {
            let h = to_hex(x as f64, Format::F32);
            assert_eq!(parse(&h).unwrap().to_bits(), (x as f64).to_bits(), "{h}");
        }
        let cases64 = [
            1.0,
            -2.5,
            std::f64::consts::PI,
            5e-324,
            f64::MAX,
            5992555.0,
            0.1,
        ];
        for x in cases64 {
            let h = to_hex(x, Format::F64);
            assert_eq!(parse(&h).unwrap().to_bits(), x.to_bits(), "{h}");
        }
        assert_eq!(
            to_hex(std::f64::consts::PI, Format::F64),
            "0x1.921fb54442d18p+1"
        );
        assert_eq!(
            to_hex(std::f32::consts::PI as f64, Format::F32),
            "0x1.921fb6p+1"
        );
        assert_eq!(to_hex(1.0, Format::F32), "0x1p+0");
        assert_eq!(to_hex(1e-45f32 as f64, Format::F32), "0x0.000002p-126");
        assert_eq!(parse("0x1.8p3"), Some(12.0));
        assert_eq!(parse("-0X1P-1074"), Some(-5e-324));
        assert_eq!(parse("2.5e3"), Some(2500.0));
        assert_eq!(parse("1e400"), Some(f64::INFINITY));
        assert!(parse("nan").unwrap().is_nan());
        for bad in ["", "abc", "0x", "0xg", "1.2.3", "--1", "0x1p"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
