//! [`FatbinError`]: every way an image can be wrong, as a value whose `Display` is one line
//! naming what was wrong and where (a byte offset from the start of what was read).

use std::fmt;

/// What was wrong with an image, a fatbin, an entry or a host binary, and where.
///
/// Offsets are bytes from the start of the slice handed to the function that failed (for
/// [`crate::image_at`], from the pointer it was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FatbinError {
    /// Fewer bytes than a header or table needs.
    Truncated {
        /// What was being read ("fatbin header", "entry header", ...).
        what: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs from `offset`.
        need: u64,
        /// Bytes there are from `offset`.
        have: usize,
    },
    /// The first bytes are none of the magics this crate knows.
    BadMagic {
        /// What was expected there.
        what: &'static str,
        /// Where.
        offset: usize,
        /// The first (up to) four bytes, little-endian.
        found: u32,
    },
    /// A version field with a value this crate does not read.
    UnsupportedVersion {
        /// Which structure.
        what: &'static str,
        /// Where the structure starts.
        offset: usize,
        /// The version found.
        version: u32,
    },
    /// A size or offset field that points outside what holds it.
    OutOfBounds {
        /// Which field.
        what: &'static str,
        /// Where the structure holding the field starts.
        offset: usize,
        /// The field's value.
        value: u64,
        /// The largest value that would have fitted.
        limit: u64,
    },
    /// A field whose value is impossible (a header size below the header's own fields, ...).
    BadField {
        /// Which field.
        what: &'static str,
        /// Where the structure holding the field starts.
        offset: usize,
        /// The field's value.
        value: u64,
    },
    /// An entry compressed by an algorithm this crate does not decode.
    UnknownCompression {
        /// Where the entry header starts.
        offset: usize,
        /// The entry's flags.
        flags: u64,
    },
    /// A compressed payload that does not decode to the size its header gives.
    Decompress {
        /// "zstd" or "lz4".
        algorithm: &'static str,
        /// Where the entry header starts.
        offset: usize,
        /// What the decoder said, or which sizes disagreed.
        detail: String,
    },
    /// A size too large to be a real image (refused rather than allocated or sliced).
    TooLarge {
        /// What would have been that large.
        what: &'static str,
        /// Where its header starts.
        offset: usize,
        /// The size asked for.
        size: u64,
    },
    /// A fatbin wrapper whose fatbin pointer is null or, for a slice, points outside it.
    WrapperTarget {
        /// Where the wrapper starts.
        offset: usize,
        /// The pointer it holds.
        address: u64,
    },
    /// PTX that is not UTF-8 text.
    NotText {
        /// Where the entry (or PTX image) starts.
        offset: usize,
        /// The first byte that is not part of valid UTF-8, from the start of the text.
        at: usize,
    },
    /// A null pointer handed to [`crate::image_at`].
    NullPointer,
}

impl fmt::Display for FatbinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FatbinError::Truncated {
                what,
                offset,
                need,
                have,
            } => write!(
                f,
                "{what} at offset {offset:#x} is truncated: needs {need} bytes, {have} remain"
            ),
            FatbinError::BadMagic {
                what,
                offset,
                found,
            } => write!(
                f,
                "no {what} at offset {offset:#x}: its first bytes read {found:#010x}"
            ),
            FatbinError::UnsupportedVersion {
                what,
                offset,
                version,
            } => write!(
                f,
                "{what} at offset {offset:#x} has version {version:#x}, which this reader does not know"
            ),
            FatbinError::OutOfBounds {
                what,
                offset,
                value,
                limit,
            } => write!(
                f,
                "{what} {value:#x} of the structure at offset {offset:#x} points past its end (at most {limit:#x})"
            ),
            FatbinError::BadField {
                what,
                offset,
                value,
            } => write!(
                f,
                "{what} {value:#x} of the structure at offset {offset:#x} is impossible"
            ),
            FatbinError::UnknownCompression { offset, flags } => write!(
                f,
                "the entry at offset {offset:#x} is compressed by an unknown algorithm (flags {flags:#x})"
            ),
            FatbinError::Decompress {
                algorithm,
                offset,
                detail,
            } => write!(
                f,
                "the {algorithm} payload of the entry at offset {offset:#x} does not decompress: {detail}"
            ),
            FatbinError::TooLarge { what, offset, size } => write!(
                f,
                "{what} at offset {offset:#x} claims {size} bytes, more than an image can be"
            ),
            FatbinError::WrapperTarget { offset, address } => write!(
                f,
                "the fatbin wrapper at offset {offset:#x} points at {address:#x}, which holds no fatbin it can reach"
            ),
            FatbinError::NotText { offset, at } => write!(
                f,
                "the PTX at offset {offset:#x} is not UTF-8 text (byte {at} of it)"
            ),
            FatbinError::NullPointer => write!(f, "a null pointer was given as an image"),
        }
    }
}

impl std::error::Error for FatbinError {}
