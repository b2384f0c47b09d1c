//! [`Shard`]: one part `I/N` of a run split over a job array (`--shard I/N`).
//!
//! A sharded command plans exactly what the whole run would and keeps work unit `k` of the plan
//! (in the plan's deterministic order) when `k mod N == I`: round-robin, so that the costly units
//! a plan puts together (the largest sizes of a workload, the slow functions) spread over every
//! shard instead of landing on one.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Part `index` of `count` (`0 ≤ index < count`), written `I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// A `--shard` value that is not `I/N` with `0 ≤ I < N`; the message is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShardError(String);

impl Shard {
    /// The whole run as one shard, `0/1`.
    pub const ONE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`, or why that is not one.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError(format!(
                "shard {index}/0: a run cannot be split into 0 shards (N is at least 1)"
            )));
        }
        if index >= count {
            return Err(ShardError(format!(
                "shard {index}/{count}: the index counts from 0, so the shards of {count} are 0/{count} to {}/{count}",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }

    /// I: which shard, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// N: how many shards the run is split into.
    pub fn count(self) -> u32 {
        self.count
    }

    /// Whether work unit `unit` (its 0-based place in the plan) is this shard's.
    pub fn owns(self, unit: u64) -> bool {
        unit % u64::from(self.count) == u64::from(self.index)
    }

    /// What file names of this shard carry: `shard-I-of-N` (no `/`, which a path cannot hold).
    pub fn file_tag(self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }

    /// The shard a file tag names (the inverse of [`Shard::file_tag`]).
    pub fn from_file_tag(tag: &str) -> Option<Shard> {
        let (i, n) = tag.strip_prefix("shard-")?.split_once("-of-")?;
        Shard::new(i.parse().ok()?, n.parse().ok()?).ok()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let bad = || {
            ShardError(format!(
                "shard {s:?}: expected I/N, two whole numbers with 0 ≤ I < N, like 0/4"
            ))
        };
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let number = |t: &str| {
            let t = t.trim();
            // u32::from_str takes a leading '+': the form is digits only.
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            t.parse::<u32>().map_err(|_| bad())
        };
        Shard::new(number(i)?, number(n)?)
    }
}

/// Written as the string `"I/N"` (a record's header and a manifest say `"shard":"1/4"`).
impl Serialize for Shard {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Shard {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shard, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_print_and_refuse_in_one_line() {
        let s: Shard = "1/4".parse().unwrap();
        assert_eq!((s.index(), s.count()), (1, 4));
        assert_eq!(s.to_string(), "1/4");
        assert_eq!(" 0/1 ".parse::<Shard>().unwrap(), Shard::new(0, 1).unwrap());
        for (bad, says) in [
            ("3/3", "0/3 to 2/3"),
            ("a/2", "expected I/N"),
            ("0/0", "0 shards"),
            ("1", "expected I/N"),
            ("-1/4", "expected I/N"),
            ("+1/4", "expected I/N"),
            ("1/4/2", "expected I/N"),
            ("1/99999999999", "expected I/N"),
        ] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn units_go_round_robin_and_every_unit_has_exactly_one_shard() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard::new(i, 3).unwrap()).collect();
        let mine = |s: Shard| (0..10).filter(|&k| s.owns(k)).collect::<Vec<u64>>();
        assert_eq!(mine(shards[0]), [0, 3, 6, 9]);
        assert_eq!(mine(shards[1]), [1, 4, 7]);
        assert_eq!(mine(shards[2]), [2, 5, 8]);
        for k in 0..100 {
            assert_eq!(shards.iter().filter(|s| s.owns(k)).count(), 1, "unit {k}");
        }
        assert!((0..10).all(|k| Shard::new(0, 1).unwrap().owns(k)));
    }

    #[test]
    fn file_tags_and_json_round_trip() {
        let s = Shard::new(2, 12).unwrap();
        assert_eq!(s.file_tag(), "shard-2-of-12");
        assert_eq!(Shard::from_file_tag(&s.file_tag()), Some(s));
        assert_eq!(Shard::from_file_tag("shard-3-of-3"), None);
        assert_eq!(Shard::from_file_tag("shard-x-of-3"), None);
        assert_eq!(serde_json::to_string(&s).unwrap(), r#""2/12""#);
        assert_eq!(serde_json::from_str::<Shard>(r#""2/12""#).unwrap(), s);
        assert!(serde_json::from_str::<Shard>(r#""2/2""#).is_err());
    }
}
