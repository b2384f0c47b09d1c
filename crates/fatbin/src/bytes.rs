//! Bounds-checked little-endian reads: every out-of-range read is a [`FatbinError::Truncated`].

use crate::error::FatbinError;

/// `len` bytes of `bytes` from `at`, or `Truncated` naming `what`, which starts at `start`.
pub(crate) fn slice<'a>(
    bytes: &'a [u8],
    at: usize,
    len: u64,
    what: &'static str,
    start: usize,
) -> Result<&'a [u8], FatbinError> {
    let truncated = || FatbinError::Truncated {
        what,
        offset: start,
        need: ((at - start.min(at)) as u64).saturating_add(len),
        have: bytes.len().saturating_sub(start),
    };
    let len = usize::try_from(len).map_err(|_| truncated())?;
    let end = at.checked_add(len).ok_or_else(truncated)?;
    bytes.get(at..end).ok_or_else(truncated)
}

/// `N` bytes at `at` as an array (see [`slice`]).
fn array<const N: usize>(
    bytes: &[u8],
    at: usize,
    what: &'static str,
    start: usize,
) -> Result<[u8; N], FatbinError> {
    let s = slice(bytes, at, N as u64, what, start)?;
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    Ok(out)
}

/// Defines a reader of a little-endian integer at `at` of the structure `what` starting at
/// `start` (see [`slice`]).
macro_rules! reader {
    ($name:ident, $t:ty) => {
        #[doc = concat!("A little-endian `", stringify!($t), "` at `at` (see [`slice`]).")]
        pub(crate) fn $name(
            bytes: &[u8],
            at: usize,
            what: &'static str,
            start: usize,
        ) -> Result<$t, FatbinError> {
            array(bytes, at, what, start).map(<$t>::from_le_bytes)
        }
    };
}

reader!(u16_at, u16);
reader!(u32_at, u32);
reader!(u64_at, u64);

/// The first up to four bytes of `bytes` as a little-endian `u32`, zero-filled: for messages.
pub(crate) fn head_word(bytes: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    let n = bytes.len().min(4);
    w[..n].copy_from_slice(&bytes[..n]);
    u32::from_le_bytes(w)
}

/// `x` rounded up to a multiple of 8, `None` on overflow.
pub(crate) fn align8(x: u64) -> Option<u64> {
    x.checked_add(7).map(|v| v & !7)
}
