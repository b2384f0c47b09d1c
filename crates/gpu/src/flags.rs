//! Named NVRTC flag sets: the floating-point behaviours a kernel is compiled under.
//!
//! The names are the project's vocabulary (design.md, "Names") and appear in records, so they are
//! stable strings. Each set changes only floating-point code generation; the architecture and
//! `-lineinfo` are added by the compiler (see [`crate::nvrtc::Compiler::options`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A named set of NVRTC options that changes floating-point code generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FlagSet {
    /// NVRTC defaults: FMA contraction on, IEEE division and square root, denormals kept.
    #[serde(rename = "default")]
    Default,
    /// Everything IEEE and nothing contracted: what a CPU computes, operation by operation.
    #[serde(rename = "strict")]
    Strict,
    /// `--use_fast_math`: approximate division, square root and intrinsics, flush-to-zero.
    #[serde(rename = "fast")]
    Fast,
    /// Only FMA contraction off.
    #[serde(rename = "nofma")]
    NoFma,
    /// Only single-precision denormals flushed to zero.
    #[serde(rename = "ftz")]
    Ftz,
    /// Only single-precision division approximate.
    #[serde(rename = "approx-div")]
    ApproxDiv,
    /// Only single-precision square root approximate.
    #[serde(rename = "approx-sqrt")]
    ApproxSqrt,
}

impl FlagSet {
    /// Every flag set, in the order tables list them.
    pub const ALL: [FlagSet; 7] = [
        FlagSet::Default,
        FlagSet::Strict,
        FlagSet::Fast,
        FlagSet::NoFma,
        FlagSet::Ftz,
        FlagSet::ApproxDiv,
        FlagSet::ApproxSqrt,
    ];

    /// The name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            FlagSet::Default => "default",
            FlagSet::Strict => "strict",
            FlagSet::Fast => "fast",
            FlagSet::NoFma => "nofma",
            FlagSet::Ftz => "ftz",
            FlagSet::ApproxDiv => "approx-div",
            FlagSet::ApproxSqrt => "approx-sqrt",
        }
    }

    /// The NVRTC options this set adds. `strict` spells every option out, rather than relying on
    /// defaults, so that its meaning does not drift if a later NVRTC changes a default.
    pub fn options(self) -> &'static [&'static str] {
        match self {
            FlagSet::Default => &[],
            FlagSet::Strict => &[
                "--fmad=false",
                "--prec-div=true",
                "--prec-sqrt=true",
                "--ftz=false",
            ],
            FlagSet::Fast => &["--use_fast_math"],
            FlagSet::NoFma => &["--fmad=false"],
            FlagSet::Ftz => &["--ftz=true"],
            FlagSet::ApproxDiv => &["--prec-div=false"],
            FlagSet::ApproxSqrt => &["--prec-sqrt=false"],
        }
    }

    /// One line for help texts and reports.
    pub fn describe(self) -> &'static str {
        match self {
            FlagSet::Default => "NVRTC defaults (FMA contraction, IEEE div/sqrt, denormals kept)",
            FlagSet::Strict => "no FMA contraction, IEEE div/sqrt, denormals kept",
            FlagSet::Fast => "--use_fast_math (approximate div/sqrt/intrinsics, flush-to-zero)",
            FlagSet::NoFma => "FMA contraction off, otherwise defaults",
            FlagSet::Ftz => "fp32 denormals flushed to zero, otherwise defaults",
            FlagSet::ApproxDiv => "approximate fp32 division, otherwise defaults",
            FlagSet::ApproxSqrt => "approximate fp32 square root, otherwise defaults",
        }
    }

    /// The accepted names, comma separated, for error messages and help.
    pub fn accepted_names() -> String {
        FlagSet::ALL.map(FlagSet::name).join(", ")
    }
}

impl fmt::Display for FlagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A flag-set name that is not one of [`FlagSet::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown flag set '{given}'; accepted: {accepted}", accepted = FlagSet::accepted_names())]
pub struct UnknownFlagSet {
    pub given: String,
}

impl FromStr for FlagSet {
    type Err = UnknownFlagSet;

    /// Case-insensitive, and `_` is read as `-` (`APPROX_DIV` is `approx-div`): names come
    /// from shells and TOML files where either spelling is natural.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        FlagSet::ALL
            .into_iter()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| UnknownFlagSet {
                given: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_strings_per_set() {
        let expect: [(FlagSet, &[&str]); 7] = [
            (FlagSet::Default, &[]),
            (
                FlagSet::Strict,
                &[
                    "--fmad=false",
                    "--prec-div=true",
                    "--prec-sqrt=true",
                    "--ftz=false",
                ],
            ),
            (FlagSet::Fast, &["--use_fast_math"]),
            (FlagSet::NoFma, &["--fmad=false"]),
            (FlagSet::Ftz, &["--ftz=true"]),
            (FlagSet::ApproxDiv, &["--prec-div=false"]),
            (FlagSet::ApproxSqrt, &["--prec-sqrt=false"]),
        ];
        for (set, options) in expect {
            assert_eq!(set.options(), options, "{set}");
        }
    }

    #[test]
    fn names_round_trip() {
        for set in FlagSet::ALL {
            assert_eq!(set.name().parse::<FlagSet>(), Ok(set));
            assert_eq!(set.to_string(), set.name());
            let json = serde_json::to_string(&set).unwrap();
            assert_eq!(json, format!("\"{}\"", set.name()));
            assert_eq!(serde_json::from_str::<FlagSet>(&json).unwrap(), set);
        }
        assert_eq!("APPROX_DIV".parse::<FlagSet>(), Ok(FlagSet::ApproxDiv));
        assert_eq!(" Strict ".parse::<FlagSet>(), Ok(FlagSet::Strict));
    }

    #[test]
    fn unknown_name_lists_accepted_names_on_one_line() {
        let err = "fastest".parse::<FlagSet>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown flag set 'fastest'; accepted: default, strict, fast, nofma, ftz, approx-div, approx-sqrt"
        );
        assert!(!err.contains('\n'));
        assert!("".parse::<FlagSet>().is_err());
        assert!("no-fma".parse::<FlagSet>().is_err());
    }
}
