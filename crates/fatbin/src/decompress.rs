//! Entry payloads decompressed: Zstandard frames (ruzstd) and raw LZ4 blocks (lz4_flex), the
//! two algorithms nvcc 13 writes, into a buffer of exactly the size the entry header gives,
//! allocated fallibly: a corrupt size is an error, never an abort.

use crate::entry::{Compression, EntryHeader};
use crate::error::FatbinError;
use crate::image::MAX_IMAGE;

/// The most an LZ4 block can grow: every input byte yields at most 255 output bytes (a length
/// byte of a literal or match run), plus a final literal run.
const LZ4_MAX_RATIO: u64 = 255;

/// The payload of `entry`, decompressed where it is compressed.
pub(crate) fn decompress(entry: &EntryHeader<'_>) -> Result<Vec<u8>, FatbinError> {
    let algorithm = match entry.compression {
        Compression::None => return copy(entry.stored, entry.offset),
        Compression::Zstd => "zstd",
        Compression::Lz4 => "lz4",
        Compression::Unknown => {
            return Err(FatbinError::UnknownCompression {
                offset: entry.offset,
                flags: entry.flags,
            })
        }
    };
    let fail = |detail: String| FatbinError::Decompress {
        algorithm,
        offset: entry.offset,
        detail,
    };
    let expected = entry.uncompressed_len;
    if expected > MAX_IMAGE {
        return Err(FatbinError::TooLarge {
            what: "decompressed payload",
            offset: entry.offset,
            size: expected,
        });
    }
    if entry.compression == Compression::Lz4
        && expected > (entry.stored.len() as u64).saturating_mul(LZ4_MAX_RATIO) + 16
    {
        return Err(fail(format!(
            "the header's size {expected} is more than {} bytes of LZ4 can hold",
            entry.stored.len()
        )));
    }
    let mut out = zeroed(expected, entry.offset)?;
    let written = match entry.compression {
        Compression::Zstd => ruzstd::decoding::FrameDecoder::new()
            .decode_all(entry.stored, &mut out)
            .map_err(|e| fail(one_line(&e)))?,
        _ => lz4_flex::block::decompress_into(entry.stored, &mut out)
            .map_err(|e| fail(one_line(&e)))?,
    };
    if written as u64 != expected {
        return Err(fail(format!(
            "{written} bytes where the header says {expected}"
        )));
    }
    Ok(out)
}

/// `bytes` copied into a fallibly allocated vector.
fn copy(bytes: &[u8], offset: usize) -> Result<Vec<u8>, FatbinError> {
    let mut out = Vec::new();
    reserve(&mut out, bytes.len() as u64, offset)?;
    out.extend_from_slice(bytes);
    Ok(out)
}

/// `len` zero bytes, fallibly allocated.
fn zeroed(len: u64, offset: usize) -> Result<Vec<u8>, FatbinError> {
    let mut out = Vec::new();
    reserve(&mut out, len, offset)?;
    out.resize(len as usize, 0);
    Ok(out)
}

/// Reserves `len` bytes in `out`, or `TooLarge`.
fn reserve(out: &mut Vec<u8>, len: u64, offset: usize) -> Result<(), FatbinError> {
    let too_large = FatbinError::TooLarge {
        what: "payload",
        offset,
        size: len,
    };
    let len = usize::try_from(len).map_err(|_| too_large.clone())?;
    out.try_reserve_exact(len).map_err(|_| too_large)
}

/// A decoder's error as one line.
fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().replace(['\n', '\r'], " ")
}
