//! What a `copy` step moves: `len` elements from `src_offset` of one buffer to `dst_offset` of
//! another (or of the same one). [`CopyRange::resolve`] is the one rule for offsets, lengths and
//! bounds: the spec checks constant copies with it before anything runs, and the executor checks
//! copies whose offsets depend on a loop counter with it at each iteration.

use crate::expr::Val;
use std::fmt;

/// The elements one copy moves, in elements of the buffers' type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRange {
    /// First element read from the source.
    pub src_offset: usize,
    /// First element written in the destination.
    pub dst_offset: usize,
    /// Elements moved.
    pub len: usize,
}

/// Why a copy's offsets or length do not fit its buffers: the key at fault, what it was, and what
/// it may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRangeError {
    /// `src_offset`, `dst_offset` or `len`.
    pub key: &'static str,
    /// What was found.
    pub found: String,
    /// What would be accepted.
    pub accepted: String,
}

impl fmt::Display for CopyRangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "copy.{}: found {}; accepted {}",
            self.key, self.found, self.accepted
        )
    }
}

impl std::error::Error for CopyRangeError {}

/// One side of a copy: the buffer's name and length.
#[derive(Debug, Clone, Copy)]
pub struct CopySide<'a> {
    /// The buffer's name, for messages.
    pub name: &'a str,
    /// Its length in elements.
    pub len: usize,
}

fn count(
    key: &'static str,
    v: Val,
    accepted: impl Fn() -> String,
) -> Result<usize, CopyRangeError> {
    v.as_integer()
        .and_then(|i| usize::try_from(i).ok())
        .ok_or_else(|| CopyRangeError {
            key,
            found: format!("{key} = {v}"),
            accepted: accepted(),
        })
}

impl CopyRange {
    /// Resolves a copy from `src` to `dst` with the offsets and length written (`None`: not
    /// written). Offsets default to 0; the length to what fits in both buffers from their offsets
    /// (`min(src.len - src_offset, dst.len - dst_offset)`). Each value must be a non-negative
    /// integer, each range must lie inside its buffer, and a copy within one buffer must not
    /// overlap itself (the device copy's result would depend on its order); the same range onto
    /// itself is allowed and moves nothing.
    pub fn resolve(
        src: CopySide,
        dst: CopySide,
        src_offset: Option<Val>,
        dst_offset: Option<Val>,
        len: Option<Val>,
    ) -> Result<CopyRange, CopyRangeError> {
        let offset = |key: &'static str, v: Option<Val>, side: CopySide| match v {
            None => Ok(0),
            Some(v) => {
                let accepted = || {
                    format!(
                        "an integer from 0 to {} (the length of {})",
                        side.len, side.name
                    )
                };
                let o = count(key, v, accepted)?;
                if o > side.len {
                    return Err(CopyRangeError {
                        key,
                        found: format!("{key} = {o}"),
                        accepted: accepted(),
                    });
                }
                Ok(o)
            }
        };
        let src_offset = offset("src_offset", src_offset, src)?;
        let dst_offset = offset("dst_offset", dst_offset, dst)?;
        let fits = (src.len - src_offset).min(dst.len - dst_offset);
        let len = match len {
            None => fits,
            Some(v) => {
                let accepted = || {
                    format!(
                        "an integer from 0 to {fits} (what fits in {} ({}) from element {src_offset} and in {} ({}) from element {dst_offset})",
                        src.name, src.len, dst.name, dst.len
                    )
                };
                let n = count("len", v, accepted)?;
                if n > fits {
                    return Err(CopyRangeError {
                        key: "len",
                        found: format!("len = {n}"),
                        accepted: accepted(),
                    });
                }
                n
            }
        };
        let range = CopyRange {
            src_offset,
            dst_offset,
            len,
        };
        if src.name == dst.name && range.overlaps_itself() {
            return Err(CopyRangeError {
                key: "dst_offset",
                found: format!(
                    "a copy within {} from elements {}..{} to the overlapping {}..{}",
                    src.name,
                    src_offset,
                    src_offset + len,
                    dst_offset,
                    dst_offset + len
                ),
                accepted: "ranges of one buffer that do not overlap (or a second buffer)".into(),
            });
        }
        Ok(range)
    }

    /// Whether source and destination ranges share an element but are not the same range
    /// (which only matters within one buffer).
    pub fn overlaps_itself(&self) -> bool {
        self.len > 0
            && self.src_offset != self.dst_offset
            && self.src_offset.abs_diff(self.dst_offset) < self.len
    }

    /// What the copy does, on host slices: the model the device copy must match.
    pub fn apply<T: Copy>(&self, src: &[T], dst: &mut [T]) {
        dst[self.dst_offset..self.dst_offset + self.len]
            .copy_from_slice(&src[self.src_offset..self.src_offset + self.len]);
    }

    /// What the copy does within one buffer (ranges that do not overlap, or the same range).
    pub fn apply_within<T: Copy>(&self, buf: &mut [T]) {
        buf.copy_within(self.src_offset..self.src_offset + self.len, self.dst_offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(name: &str, len: usize) -> CopySide<'_> {
        CopySide { name, len }
    }

    #[test]
    fn defaults_are_offset_zero_and_what_fits() {
        let r = CopyRange::resolve(side("u", 10), side("v", 6), None, None, None).unwrap();
        assert_eq!((r.src_offset, r.dst_offset, r.len), (0, 0, 6));
        let r = CopyRange::resolve(
            side("u", 10),
            side("v", 6),
            Some(Val::Int(7)),
            Some(Val::Int(1)),
            None,
        )
        .unwrap();
        assert_eq!(r.len, 3, "3 left in u from 7, 5 in v from 1");
        // Offsets at the very end leave nothing to copy, which is allowed.
        let r = CopyRange::resolve(side("u", 10), side("v", 6), Some(Val::Int(10)), None, None)
            .unwrap();
        assert_eq!(r.len, 0);
    }

    #[test]
    fn ranges_past_either_end_are_refused_naming_the_key() {
        let e = CopyRange::resolve(
            side("u", 10),
            side("v", 6),
            Some(Val::Int(4)),
            Some(Val::Int(2)),
            Some(Val::Int(5)),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "copy.len: found len = 5; accepted an integer from 0 to 4 (what fits in u (10) from element 4 and in v (6) from element 2)");
        let e = CopyRange::resolve(side("u", 10), side("v", 6), None, Some(Val::Int(7)), None)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "copy.dst_offset: found dst_offset = 7; accepted an integer from 0 to 6 (the length of v)"
        );
        let e = CopyRange::resolve(side("u", 10), side("v", 6), Some(Val::Int(-1)), None, None)
            .unwrap_err();
        assert_eq!(e.key, "src_offset");
        let e = CopyRange::resolve(
            side("u", 10),
            side("v", 6),
            Some(Val::Float(1.5)),
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(e.found, "src_offset = 1.5");
        // An integral float counts, as elsewhere in specs.
        let r = CopyRange::resolve(
            side("u", 10),
            side("v", 6),
            Some(Val::Float(2.0)),
            None,
            None,
        )
        .unwrap();
        assert_eq!(r.src_offset, 2);
    }

    #[test]
    fn copies_within_one_buffer_must_not_overlap() {
        let within = |s, d, n| {
            CopyRange::resolve(
                side("u", 12),
                side("u", 12),
                Some(Val::Int(s)),
                Some(Val::Int(d)),
                Some(Val::Int(n)),
            )
        };
        // Variable 0 of a structure of arrays (stride 4) copied to variable 2: disjoint.
        let r = within(0, 8, 4).unwrap();
        let mut buf: Vec<i32> = (0..12).collect();
        r.apply_within(&mut buf);
        assert_eq!(buf, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3]);
        // Adjacent ranges share no element.
        within(0, 4, 4).unwrap();
        within(4, 0, 4).unwrap();
        // One element shared, either direction.
        assert!(within(0, 3, 4).unwrap_err().found.contains("overlapping"));
        assert!(within(3, 0, 4).is_err());
        // The same range onto itself moves nothing.
        within(2, 2, 5).unwrap();
    }

    #[test]
    fn the_host_model_moves_exactly_the_range() {
        let r = CopyRange::resolve(
            side("u", 6),
            side("v", 5),
            Some(Val::Int(1)),
            Some(Val::Int(3)),
            Some(Val::Int(2)),
        )
        .unwrap();
        let src = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0];
        let mut dst = [0.0; 5];
        r.apply(&src, &mut dst);
        assert_eq!(dst, [0.0, 0.0, 0.0, 11.0, 12.0]);
    }
}
