//! `.npy` files: read any C-order little-endian array of a spec element type, write 1-D arrays.
//!
//! The format (NumPy's `format.py`): the magic `\x93NUMPY`, a version (1.0, 2.0 or 3.0), a
//! header length (u16 for 1.0, u32 after), and a Python dict literal with `descr`,
//! `fortran_order` and `shape`, padded so the data starts on a 64-byte boundary. Only the dict
//! forms NumPy itself writes are read. Arrays of any shape are accepted when their element count
//! fits (a 2-D field flattened in C order is what a kernel indexing `u[y * nx + x]` reads);
//! Fortran order and big-endian data are refused, since reading them as C order would silently
//! permute or garble the values. bf16 has no NumPy type, so bf16 buffers cannot use `.npy`.

use half::{bf16, f16};
use mantissa_gpu::{DType, HostData};
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

/// A problem with a `.npy` file, in one line (the caller adds the file and spec position).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NpyError(pub String);

/// The `descr` NumPy writes for each element type; `None` for bf16.
pub fn descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::BF16 => return None,
    })
}

fn dtype_of_descr(d: &str) -> Option<DType> {
    // '<' little-endian, '|' not applicable (bytes), '=' native (little-endian on every machine
    // CUDA runs on); '>' big-endian is refused rather than byte-swapped.
    let core = d.strip_prefix(['<', '|', '=']).unwrap_or(d);
    Some(match core {
        "f4" => DType::F32,
        "f8" => DType::F64,
        "f2" => DType::F16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u4" => DType::U32,
        "u8" => DType::U64,
        _ => return None,
    })
}

/// The header's three facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `descr` as written (`<f8`).
    pub descr: String,
    /// Whether the data is in Fortran order.
    pub fortran_order: bool,
    /// The shape; `[]` for a 0-d array (one element).
    pub shape: Vec<usize>,
}

impl Header {
    /// Elements in all.
    pub fn count(&self) -> usize {
        self.shape.iter().product()
    }

    /// The shape as Python writes it: `(3,)`, `(4, 5)`, `()`.
    pub fn shape_text(&self) -> String {
        match self.shape.as_slice() {
            [n] => format!("({n},)"),
            s => format!(
                "({})",
                s.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The text after `'key':` in a dict literal.
fn dict_value<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let i = dict
        .find(&format!("'{key}'"))
        .or_else(|| dict.find(&format!("\"{key}\"")))?;
    let rest = &dict[i + key.len() + 2..];
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

fn parse_header(dict: &str) -> Result<Header, NpyError> {
    let bad = |what: &str| NpyError(format!("unreadable .npy header ({what}): {}", dict.trim()));
    let d = dict_value(dict, "descr").ok_or_else(|| bad("no descr"))?;
    let quote = d.chars().next().ok_or_else(|| bad("empty descr"))?;
    if quote != '\'' && quote != '"' {
        return Err(NpyError(format!(
            "a structured dtype {}",
            d.split(", '").next().unwrap_or(d)
        )));
    }
    let descr: String = d[1..].chars().take_while(|c| *c != quote).collect();
    let f = dict_value(dict, "fortran_order").ok_or_else(|| bad("no fortran_order"))?;
    let fortran_order = f.starts_with("True");
    let s = dict_value(dict, "shape").ok_or_else(|| bad("no shape"))?;
    let s = s
        .strip_prefix('(')
        .ok_or_else(|| bad("shape is not a tuple"))?;
    let s = &s[..s.find(')').ok_or_else(|| bad("shape is not closed"))?];
    let shape = s
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| bad("shape"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Header {
        descr,
        fortran_order,
        shape,
    })
}

/// Splits a `.npy` file into its header and data bytes.
pub fn read_header(bytes: &[u8]) -> Result<(Header, &[u8]), NpyError> {
    if !bytes.starts_with(MAGIC) || bytes.len() < 10 {
        return Err(NpyError("not a .npy file (no \\x93NUMPY magic)".into()));
    }
    let major = bytes[6];
    let (len, start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => {
            return Err(NpyError(format!(
                ".npy format version {major}.{}; accepted 1.0, 2.0, 3.0",
                bytes[7]
            )))
        }
    };
    let end = start
        .checked_add(len)
        .filter(|e| *e <= bytes.len())
        .ok_or_else(|| NpyError("truncated .npy header".into()))?;
    let dict = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| NpyError("the .npy header is not text".into()))?;
    Ok((parse_header(dict)?, &bytes[end..]))
}

/// Reads a `.npy` holding `len` elements of `dtype`; errors say what was found and expected
/// (`dtype <f4, expected <f8 (f64)`).
pub fn read(path: &Path, dtype: DType, len: usize) -> Result<HostData, NpyError> {
    let bytes = std::fs::read(path).map_err(|e| NpyError(format!("cannot read ({e})")))?;
    decode(&bytes, dtype, Some(len))
}

/// Decodes `.npy` bytes as `dtype` (with `len` elements, when given).
pub fn decode(bytes: &[u8], dtype: DType, len: Option<usize>) -> Result<HostData, NpyError> {
    let Some(want) = descr(dtype) else {
        return Err(NpyError(
            "bf16 data cannot come from .npy (NumPy has no bfloat16 type)".into(),
        ));
    };
    let (h, data) = read_header(bytes)?;
    if dtype_of_descr(&h.descr) != Some(dtype) {
        return Err(NpyError(format!(
            "dtype {}, expected {want} ({dtype})",
            h.descr
        )));
    }
    if h.fortran_order && h.shape.len() > 1 {
        return Err(NpyError(format!(
            "Fortran-order array of shape {}, expected C order (numpy.ascontiguousarray)",
            h.shape_text()
        )));
    }
    let n = h.count();
    if let Some(len) = len {
        if n != len {
            return Err(NpyError(format!(
                "shape {} ({n} elements), expected {len} elements ({len},)",
                h.shape_text()
            )));
        }
    }
    let size = dtype.size();
    if data.len() < n * size {
        return Err(NpyError(format!(
            "truncated data: {} bytes for {n} elements of {size} bytes",
            data.len()
        )));
    }
    let data = &data[..n * size];
    macro_rules! le {
        ($t:ty, $w:literal) => {
            data.chunks_exact($w)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; $w])))
                .collect::<Vec<$t>>()
        };
    }
    Ok(match dtype {
        DType::F32 => HostData::F32(le!(f32, 4)),
        DType::F64 => HostData::F64(le!(f64, 8)),
        DType::F16 => HostData::F16(le!(u16, 2).into_iter().map(f16::from_bits).collect()),
        DType::BF16 => HostData::BF16(le!(u16, 2).into_iter().map(bf16::from_bits).collect()),
        DType::I32 => HostData::I32(le!(i32, 4)),
        DType::I64 => HostData::I64(le!(i64, 8)),
        DType::U8 => HostData::U8(data.to_vec()),
        DType::U32 => HostData::U32(le!(u32, 4)),
        DType::U64 => HostData::U64(le!(u64, 8)),
    })
}

/// Reads a `.npy` of any element type, as f64 (references for outputs may be f64 whatever the
/// output's type, or the output's own type).
pub fn read_any(path: &Path) -> Result<HostData, NpyError> {
    let bytes = std::fs::read(path).map_err(|e| NpyError(format!("cannot read ({e})")))?;
    let (h, _) = read_header(&bytes)?;
    let dtype = dtype_of_descr(&h.descr).ok_or_else(|| {
        NpyError(format!(
            "dtype {}, expected one of <f8, <f4, <f2, <i4, <i8, <u4, <u8, |u1",
            h.descr
        ))
    })?;
    decode(&bytes, dtype, None)
}

/// The bytes of a 1-D `.npy` file (version 1.0) holding `data`; `None` for bf16.
pub fn encode(data: &HostData) -> Option<Vec<u8>> {
    let mut out = header(data.dtype(), data.len())?;
    match data {
        HostData::F32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        HostData::F64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        HostData::F16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes())),
        HostData::BF16(_) => return None,
        HostData::I32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        HostData::I64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        HostData::U8(v) => out.extend_from_slice(v),
        HostData::U32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        HostData::U64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
    }
    Some(out)
}

/// A 1-D `.npy` of `dtype` holding `le_bytes`, the elements' little-endian bytes as a device
/// holds them (a whole number of elements); `None` for bf16 or a partial element.
pub fn encode_le(dtype: DType, le_bytes: &[u8]) -> Option<Vec<u8>> {
    if le_bytes.len() % dtype.size() != 0 {
        return None;
    }
    let mut out = header(dtype, le_bytes.len() / dtype.size())?;
    out.extend_from_slice(le_bytes);
    Some(out)
}

/// `le_bytes`, the elements' little-endian bytes as a device holds them, as host values of
/// `dtype`; `None` for a partial element.
pub fn host_data_le(dtype: DType, le_bytes: &[u8]) -> Option<HostData> {
    fn of<T, const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks_exact gives N bytes")))
            .collect()
    }
    if le_bytes.len() % dtype.size() != 0 {
        return None;
    }
    let b = le_bytes;
    Some(match dtype {
        DType::F32 => HostData::F32(of(b, f32::from_le_bytes)),
        DType::F64 => HostData::F64(of(b, f64::from_le_bytes)),
        DType::F16 => HostData::F16(of(b, half::f16::from_le_bytes)),
        DType::BF16 => HostData::BF16(of(b, half::bf16::from_le_bytes)),
        DType::I32 => HostData::I32(of(b, i32::from_le_bytes)),
        DType::I64 => HostData::I64(of(b, i64::from_le_bytes)),
        DType::U8 => HostData::U8(b.to_vec()),
        DType::U32 => HostData::U32(of(b, u32::from_le_bytes)),
        DType::U64 => HostData::U64(of(b, u64::from_le_bytes)),
    })
}

/// The magic, version and header of a 1-D `.npy` of `len` elements of `dtype`.
fn header(dtype: DType, len: usize) -> Option<Vec<u8>> {
    let d = descr(dtype)?;
    let dict = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': ({len},), }}");
    // Pad with spaces so that magic + version + length + dict + '\n' is a multiple of 64.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    let mut out = Vec::with_capacity(header.len() + 10 + len * dtype.size());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    Some(out)
}

/// Writes `data` as a 1-D `.npy` atomically (temporary file + rename, through the report crate's
/// writer).
pub fn write(path: &Path, data: &HostData) -> Result<(), NpyError> {
    let bytes = encode(data).ok_or_else(|| {
        NpyError(format!(
            "{}: bf16 cannot be saved as .npy (NumPy has no bfloat16 type)",
            path.display()
        ))
    })?;
    mantissa_report::record::write_atomically(path, &bytes).map_err(|e| NpyError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips() {
        let cases = [
            HostData::F32(vec![1.5, -2.25, f32::MIN_POSITIVE]),
            HostData::F64(vec![0.1, -0.0, f64::MAX]),
            HostData::F16(vec![f16::from_f32(0.5), f16::MAX]),
            HostData::I32(vec![-7, 8]),
            HostData::I64(vec![i64::MIN, 3]),
            HostData::U8(vec![0, 255, 7]),
            HostData::U32(vec![u32::MAX]),
            HostData::U64(vec![u64::MAX, 1]),
        ];
        for data in cases {
            let bytes = encode(&data).unwrap();
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0, "data starts 64-aligned");
            assert_eq!(bytes[10 + header_len - 1], b'\n');
            assert_eq!(
                decode(&bytes, data.dtype(), Some(data.len())).unwrap(),
                data
            );
        }
        assert_eq!(encode(&HostData::BF16(vec![bf16::ONE])), None);
    }

    #[test]
    fn numpy_written_headers_read() {
        // As numpy 1.26 writes np.arange(6, dtype='<f8').reshape(2, 3).
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        let header = format!("{dict}{}\n", " ".repeat(64 - (10 + dict.len() + 1) % 64));
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        for i in 0..6 {
            bytes.extend_from_slice(&(i as f64).to_le_bytes());
        }
        let data = decode(&bytes, DType::F64, Some(6)).unwrap();
        assert_eq!(data, HostData::F64(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
        assert_eq!(
            decode(&bytes, DType::F64, Some(5)).unwrap_err().0,
            "shape (2, 3) (6 elements), expected 5 elements (5,)"
        );
        assert_eq!(
            decode(&bytes, DType::F32, Some(6)).unwrap_err().0,
            "dtype <f8, expected <f4 (f32)"
        );
        let at = bytes.windows(5).position(|w| w == b"False").unwrap();
        let mut fortran = bytes.clone();
        fortran[at..at + 5].copy_from_slice(b"True ");
        let err = decode(&fortran, DType::F64, Some(6));
        assert!(err
            .unwrap_err()
            .0
            .starts_with("Fortran-order array of shape (2, 3)"));
        assert!(decode(b"PK\x03\x04", DType::F64, None)
            .unwrap_err()
            .0
            .contains("magic"));
        assert!(decode(&bytes, DType::BF16, None)
            .unwrap_err()
            .0
            .contains("bfloat16"));
    }

    #[test]
    fn write_is_atomic_and_reads_back() {
        let dir = std::env::temp_dir().join(format!("mantissa-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("u.npy");
        let data = HostData::F64(vec![1.0, 2.0, 3.0]);
        write(&p, &data).unwrap();
        assert_eq!(read(&p, DType::F64, 3).unwrap(), data);
        assert_eq!(read_any(&p).unwrap(), data);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
            .collect();
        assert!(leftovers.is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
