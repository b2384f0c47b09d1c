//! Bytes as hex digits, two per byte, in memory order: how the attach library writes launch
//! arguments, and how specs (`{ bytes = "…" }`) and recipe files write bytes.

/// `bytes` as lowercase hex.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex digits (either case, surrounding spaces ignored); `None` for an odd count or
/// anything that is not a hex digit.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let t = text.trim();
    if t.len() % 2 != 0 || !t.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_and_refuses_what_is_not_hex() {
        assert_eq!(super::encode(&[0, 0x80, 0x3f]), "00803f");
        assert_eq!(super::decode(" 00803F "), Some(vec![0, 0x80, 0x3f]));
        assert_eq!(super::decode("0"), None);
        assert_eq!(super::decode("zz"), None);
    }
}
