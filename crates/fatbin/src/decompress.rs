//! Entry payloads decompressed: Zstandard frames (ruzstd) and raw LZ4 blocks (lz4_flex), the
//! two algorithms nvcc 13 writes, into a buffer of exactly the size the entry header gives,
//! allocated fallibly: a corrupt size is an error, never an abort.

use crate::entry::{Compression, EntryHeader};
use crate::error::FatbinError;
use crate::image::MAX_IMAGE;
use std::io::Read;

/// The most an LZ4 block can grow: every input byte yields at most 255 output bytes (a length
/// byte of a literal or match run), plus a final literal run.
const LZ4_MAX_RATIO: u64 = 255;
/// The most a Zstandard frame can grow, with room to spare: a block decodes to at most 128 KiB
/// and takes at least 3 bytes (an RLE block: a 3-byte header and its byte), under 44,000 to 1.
const ZSTD_MAX_RATIO: u64 = 1 << 16;

/// The payload of `entry`, decompressed where it is compressed.
///
/// Before anything is allocated, the header's decompressed size must be one the stored bytes
/// can hold (the algorithm's largest ratio) and, for Zstandard, the frame's own content size
/// where it has one; Zstandard output grows as it is decoded, so memory follows what the
/// payload really holds, never a size field alone.
pub(crate) fn decompress(entry: &EntryHeader<'_>) -> Result<Vec<u8>, FatbinError> {
    let (algorithm, ratio) = match entry.compression {
        Compression::None => return copy(entry.stored, entry.offset),
        Compression::Zstd => ("zstd", ZSTD_MAX_RATIO),
        Compression::Lz4 => ("lz4", LZ4_MAX_RATIO),
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
    let stored = entry.stored.len() as u64;
    if expected > MAX_IMAGE || expected > stored.saturating_mul(ratio).saturating_add(64) {
        return Err(fail(format!(
            "the header's decompressed size {expected} is more than {stored} stored bytes can hold"
        )));
    }
    let out = if entry.compression == Compression::Zstd {
        if let Some(size) = zstd_content_size(entry.stored) {
            if size != expected {
                return Err(fail(format!(
                    "the frame holds {size} bytes where the header says {expected}"
                )));
            }
        }
        let mut out = Vec::new();
        reserve(&mut out, expected.min(1 << 20), entry.offset)?;
        let decoder = ruzstd::decoding::StreamingDecoder::new(entry.stored)
            .map_err(|e| fail(one_line(&e)))?;
        decoder
            .take(expected + 1)
            .read_to_end(&mut out)
            .map_err(|e| fail(one_line(&e)))?;
        out
    } else {
        let mut out = zeroed(expected, entry.offset)?;
        let written = lz4_flex::block::decompress_into(entry.stored, &mut out)
            .map_err(|e| fail(one_line(&e)))?;
        out.truncate(written);
        out
    };
    if out.len() as u64 != expected {
        return Err(fail(format!(
            "{} bytes where the header says {expected}",
            out.len()
        )));
    }
    Ok(out)
}

/// The content size a Zstandard frame header states, `None` where it states none or is not a
/// frame header (the decoder then says what is wrong).
fn zstd_content_size(frame: &[u8]) -> Option<u64> {
    if frame.get(..4)? != [0x28, 0xB5, 0x2F, 0xFD] {
        return None;
    }
    let descriptor = *frame.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    let field = match descriptor >> 6 {
        0 if single_segment => 1,
        0 => return None,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let dictionary = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let at = 5 + usize::from(!single_segment) + dictionary;
    let bytes = frame.get(at..at + field)?;
    let mut value = [0u8; 8];
    value[..field].copy_from_slice(bytes);
    let size = u64::from_le_bytes(value);
    Some(if field == 2 { size + 256 } else { size })
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
