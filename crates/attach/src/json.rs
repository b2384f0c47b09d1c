//! One event line of `events.jsonl`, written straight into the log's buffer: no intermediate
//! values, no allocation beyond the buffer's own growth (a launch appends one line), and no
//! `fmt` machinery for numbers (it was most of a watched launch's cost).

use std::io::Write as _;

/// A JSON object being written into a buffer; [`Line::end`] closes it and the line.
pub struct Line<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> Line<'a> {
    /// Opens `{"event":"<event>","seq":<seq>` in `buf`.
    pub fn start(buf: &'a mut Vec<u8>, event: &str, seq: u64) -> Self {
        buf.extend_from_slice(b"{\"event\":\"");
        buf.extend_from_slice(event.as_bytes());
        buf.extend_from_slice(b"\",\"seq\":");
        push_u64(buf, seq);
        Line { buf }
    }

    fn key(&mut self, key: &str) {
        self.buf.extend_from_slice(b",\"");
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// A string field (escaped).
    pub fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key);
        escape_into(self.buf, value);
        self
    }

    /// A string field, or `null`.
    pub fn opt_str(&mut self, key: &str, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.str(key, v),
            None => self.raw(key, "null"),
        }
    }

    /// An unsigned integer field.
    pub fn num(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        push_u64(self.buf, value);
        self
    }

    /// A float field (finite; a non-finite value is written as `null`).
    pub fn float(&mut self, key: &str, value: f64) -> &mut Self {
        self.key(key);
        if value.is_finite() {
            let _ = write!(self.buf, "{value}");
        } else {
            self.buf.extend_from_slice(b"null");
        }
        self
    }

    /// A boolean field.
    pub fn bool(&mut self, key: &str, value: bool) -> &mut Self {
        self.raw(key, if value { "true" } else { "false" })
    }

    /// A pointer or handle, as the string `"0x…"` (lowercase hex).
    pub fn ptr(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        self.buf.extend_from_slice(b"\"0x");
        let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
        for i in (0..digits).rev() {
            self.buf.push(HEX[(value >> (4 * i)) as usize & 15]);
        }
        self.buf.push(b'"');
        self
    }

    /// Three unsigned integers as an array.
    pub fn dim3(&mut self, key: &str, value: [u32; 3]) -> &mut Self {
        self.key(key);
        for (i, v) in value.into_iter().enumerate() {
            self.buf.push(if i == 0 { b'[' } else { b',' });
            push_u64(self.buf, u64::from(v));
        }
        self.buf.push(b']');
        self
    }

    /// An array of hex strings, one per byte slice (`null` for the array when `None`).
    pub fn hex_list<'b>(
        &mut self,
        key: &str,
        values: Option<impl Iterator<Item = &'b [u8]>>,
    ) -> &mut Self {
        let Some(values) = values else {
            return self.raw(key, "null");
        };
        self.key(key);
        self.buf.push(b'[');
        for (i, bytes) in values.enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            self.buf.push(b'"');
            hex_into(self.buf, bytes);
            self.buf.push(b'"');
        }
        self.buf.push(b']');
        self
    }

    /// A field whose value is already JSON.
    pub fn raw(&mut self, key: &str, json: &str) -> &mut Self {
        self.key(key);
        self.buf.extend_from_slice(json.as_bytes());
        self
    }

    /// Closes the object and the line.
    pub fn end(self) {
        self.buf.extend_from_slice(b"}\n");
    }
}

/// Lowercase hex digits.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// `value` in decimal.
fn push_u64(buf: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// `value` as a JSON string (quotes included).
pub fn escape_into(buf: &mut Vec<u8>, value: &str) {
    buf.push(b'"');
    if value.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        // Kernel names and keys: nothing to escape.
        buf.extend_from_slice(value.as_bytes());
        buf.push(b'"');
        return;
    }
    for c in value.chars() {
        match c {
            '"' => buf.extend_from_slice(b"\\\""),
            '\\' => buf.extend_from_slice(b"\\\\"),
            '\n' => buf.extend_from_slice(b"\\n"),
            '\r' => buf.extend_from_slice(b"\\r"),
            '\t' => buf.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(buf, "\\u{:04x}", c as u32);
            }
            c => {
                let mut utf8 = [0u8; 4];
                buf.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
    buf.push(b'"');
}

/// `bytes` as lowercase hex digits, in memory order.
pub fn hex_into(buf: &mut Vec<u8>, bytes: &[u8]) {
    let start = buf.len();
    buf.resize(start + 2 * bytes.len(), 0);
    for (pair, b) in buf[start..].chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&HEX_PAIRS[*b as usize]);
    }
}

/// Each byte's two hex digits.
static HEX_PAIRS: [[u8; 2]; 256] = {
    let mut pairs = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        pairs[i] = [HEX[i >> 4], HEX[i & 15]];
        i += 1;
    }
    pairs
};

/// The bytes hex digits spell (`None` for an odd length or a non-hex digit).
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |d: u8| (d as char).to_digit(16).map(|v| v as u8);
    digits
        .chunks(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_json_object() {
        let mut buf = Vec::new();
        let mut line = Line::start(&mut buf, "launch", 7);
        line.str("kernel", "k\"\n\u{1}")
            .ptr("stream", 0xab)
            .dim3("grid", [1, 2, 3])
            .hex_list("args", Some([&[1u8, 0xff][..], &[][..]].into_iter()))
            .opt_str("module", None)
            .bool("replaced", true)
            .float("ms", 1.5);
        line.end();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["event"], "launch");
        assert_eq!(v["seq"], 7);
        assert_eq!(v["kernel"], "k\"\n\u{1}");
        assert_eq!(v["stream"], "0xab");
        assert_eq!(v["grid"], serde_json::json!([1, 2, 3]));
        assert_eq!(v["args"], serde_json::json!(["01ff", ""]));
        assert!(v["module"].is_null());
        assert_eq!(v["ms"], 1.5);
    }

    #[test]
    fn numbers_and_pointers_as_fmt_writes_them() {
        for value in [0u64, 1, 9, 10, 255, 4096, 0xdead_beef, u64::MAX] {
            let mut buf = Vec::new();
            let mut line = Line::start(&mut buf, "e", value);
            line.num("n", value).ptr("p", value);
            line.end();
            let want =
                format!("{{\"event\":\"e\",\"seq\":{value},\"n\":{value},\"p\":\"{value:#x}\"}}\n");
            assert_eq!(String::from_utf8(buf).unwrap(), want);
        }
    }

    #[test]
    fn hex_round_trips() {
        let mut buf = Vec::new();
        hex_into(&mut buf, &[0, 1, 0xab, 0xff]);
        assert_eq!(buf, b"0001abff");
        assert_eq!(unhex("0001abFF"), Some(vec![0, 1, 0xab, 0xff]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }
}
