//! Flag sets: the floating-point behaviour a kernel is compiled under, as independent NVRTC
//! switches with named presets.
//!
//! The preset names are the project's vocabulary (design.md, "Names") and appear in records, so
//! they are stable strings. A flag set changes only floating-point code generation; the
//! architecture and `-lineinfo` are added by the compiler (see [`crate::nvrtc::Compiler::options`])
//! and everything else a user wants (`-D`, `-I`) is a [`crate::nvrtc::Source`] option.
//!
//! # Writing a flag set
//!
//! A flag set is written as terms joined by `+`, applied left to right, a later term overriding
//! what an earlier one set for the same switch:
//!
//! - a preset: `default`, `strict`, `fast`, `nofma`, `ftz`, `approx-div`, `approx-sqrt`;
//! - a switch: `fmad=`, `prec-div=`, `prec-sqrt=`, `ftz=` followed by `true` or `false`, or
//!   `use_fast_math` (NVRTC's own spellings; a leading `--` is allowed, so NVRTC options paste in).
//!
//! So `nofma+ftz` is FMA contraction off with f32 subnormals flushed, and `strict+ftz` is
//! `strict` except that it flushes. Names are case-insensitive and `_` reads as `-`
//! (`APPROX_DIV` is `approx-div`), because they come from shells and TOML files where either
//! spelling is natural. A flag set prints (and serializes) canonically: as its preset's name when
//! it equals a preset, otherwise as the shortest spelling from a preset (`strict+ftz`) or from
//! the defaults (`nofma+ftz`), switches in the order `fmad`, `prec-div`, `prec-sqrt`, `ftz`,
//! `use_fast_math`; the canonical string parses back to the same flag set.
//!
//! Explicit switches win over what `--use_fast_math` implies (`fast+nofma` emits `--fmad=false`
//! and `--use_fast_math`, and NVRTC 13.0 then contracts nothing, whatever the option order).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// NVRTC options that change floating-point code generation: four switches that are either left
/// at NVRTC's default (`None`) or set explicitly, and fast math.
///
/// Presets are associated constants ([`FlagSet::STRICT`], ...; all of them in [`FlagSet::ALL`]);
/// combinations are built with struct-update syntax (`FlagSet { ftz: Some(true),
/// ..FlagSet::STRICT }`) or parsed (see the module docs for the grammar).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlagSet {
    /// `--fmad`: contract multiply-add into FMA (NVRTC's default: on).
    pub fmad: Option<bool>,
    /// `--prec-div`: IEEE round-to-nearest f32 division (`false`: approximate; default: on).
    pub prec_div: Option<bool>,
    /// `--prec-sqrt`: IEEE round-to-nearest f32 square root (`false`: approximate; default: on).
    pub prec_sqrt: Option<bool>,
    /// `--ftz`: flush f32 subnormal inputs and results to zero (default: off).
    pub ftz: Option<bool>,
    /// `--use_fast_math`: fast intrinsics, and approximate div/sqrt, flush-to-zero and
    /// contraction for the switches not set explicitly.
    pub fast_math: bool,
}

/// The four tri-state switches, in option order: NVRTC's name, a getter and a setter.
type SwitchAccess = (
    &'static str,
    fn(&FlagSet) -> Option<bool>,
    fn(&mut FlagSet, bool),
);
const SWITCHES: [SwitchAccess; 4] = [
    ("fmad", |f| f.fmad, |f, v| f.fmad = Some(v)),
    ("prec-div", |f| f.prec_div, |f, v| f.prec_div = Some(v)),
    ("prec-sqrt", |f| f.prec_sqrt, |f, v| f.prec_sqrt = Some(v)),
    ("ftz", |f| f.ftz, |f, v| f.ftz = Some(v)),
];

/// The name `--use_fast_math` goes by as a term (after `_` → `-` normalisation).
const FAST_MATH_TERM: &str = "use-fast-math";

/// A preset: its flags, name and one-line description.
type Preset = (FlagSet, &'static str, &'static str);

/// The presets, in the order tables list them ([`FlagSet::ALL`]).
const PRESETS: [Preset; 7] = [
    (
        FlagSet::DEFAULT,
        "default",
        "NVRTC defaults (FMA contraction, IEEE div/sqrt, denormals kept)",
    ),
    (
        FlagSet::STRICT,
        "strict",
        "no FMA contraction, IEEE div/sqrt, denormals kept",
    ),
    (
        FlagSet::FAST,
        "fast",
        "--use_fast_math (approximate div/sqrt/intrinsics, flush-to-zero)",
    ),
    (
        FlagSet::NOFMA,
        "nofma",
        "FMA contraction off, otherwise defaults",
    ),
    (
        FlagSet::FTZ,
        "ftz",
        "fp32 denormals flushed to zero, otherwise defaults",
    ),
    (
        FlagSet::APPROX_DIV,
        "approx-div",
        "approximate fp32 division, otherwise defaults",
    ),
    (
        FlagSet::APPROX_SQRT,
        "approx-sqrt",
        "approximate fp32 square root, otherwise defaults",
    ),
];

impl FlagSet {
    /// NVRTC defaults: FMA contraction on, IEEE division and square root, denormals kept.
    pub const DEFAULT: FlagSet = FlagSet {
        fmad: None,
        prec_div: None,
        prec_sqrt: None,
        ftz: None,
        fast_math: false,
    };
    /// Everything IEEE and nothing contracted: what a CPU computes, operation by operation.
    /// Every switch is spelled out rather than left to defaults, so that its meaning does not
    /// drift if a later NVRTC changes a default.
    pub const STRICT: FlagSet = FlagSet {
        fmad: Some(false),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        ftz: Some(false),
        fast_math: false,
    };
    /// `--use_fast_math`: approximate division, square root and intrinsics, flush-to-zero.
    pub const FAST: FlagSet = FlagSet {
        fast_math: true,
        ..FlagSet::DEFAULT
    };
    /// Only FMA contraction off.
    pub const NOFMA: FlagSet = FlagSet {
        fmad: Some(false),
        ..FlagSet::DEFAULT
    };
    /// Only single-precision denormals flushed to zero.
    pub const FTZ: FlagSet = FlagSet {
        ftz: Some(true),
        ..FlagSet::DEFAULT
    };
    /// Only single-precision division approximate.
    pub const APPROX_DIV: FlagSet = FlagSet {
        prec_div: Some(false),
        ..FlagSet::DEFAULT
    };
    /// Only single-precision square root approximate.
    pub const APPROX_SQRT: FlagSet = FlagSet {
        prec_sqrt: Some(false),
        ..FlagSet::DEFAULT
    };

    /// Every preset, in the order tables list them.
    pub const ALL: [FlagSet; 7] = {
        let mut all = [FlagSet::DEFAULT; 7];
        let mut i = 0;
        while i < PRESETS.len() {
            all[i] = PRESETS[i].0;
            i += 1;
        }
        all
    };

    /// This flag set's entry in the preset table, if it is a preset.
    fn preset(self) -> Option<(usize, &'static Preset)> {
        PRESETS.iter().enumerate().find(|(_, p)| p.0 == self)
    }

    /// The preset this flag set equals, by name.
    pub fn preset_name(self) -> Option<&'static str> {
        self.preset().map(|(_, p)| p.1)
    }

    /// Whether this flag set is one of the named presets.
    pub fn is_preset(self) -> bool {
        self.preset().is_some()
    }

    /// The name used on the command line and in records: the preset's name, or the canonical
    /// `+` spelling of a combination (see the module docs).
    pub fn name(self) -> String {
        match self.preset_name() {
            Some(name) => name.to_string(),
            None => self.spelling(),
        }
    }

    /// The NVRTC options this flag set adds, switches first (in the order of the fields), then
    /// `--use_fast_math`.
    pub fn options(self) -> Vec<&'static str> {
        let mut opts: Vec<&'static str> = SWITCHES
            .iter()
            .filter_map(|(name, get, _)| get(&self).map(|on| switch_option(name, on)))
            .collect();
        if self.fast_math {
            opts.push("--use_fast_math");
        }
        opts
    }

    /// The nvcc options this flag set adds: the same switches under nvcc's own names, in the same
    /// order as [`FlagSet::options`]. nvcc happens to spell them as NVRTC does (`--fmad=false`,
    /// `--prec-div=true`, `--prec-sqrt=`, `--ftz=`, `--use_fast_math`), but the mapping is
    /// written out here on its own so that a change on either side shows in one place (and in
    /// the test that reads the options back into switches).
    pub fn nvcc_options(self) -> Vec<&'static str> {
        let mut opts = Vec::new();
        let mut push = |v: Option<bool>, on: &'static str, off: &'static str| {
            if let Some(v) = v {
                opts.push(if v { on } else { off });
            }
        };
        push(self.fmad, "--fmad=true", "--fmad=false");
        push(self.prec_div, "--prec-div=true", "--prec-div=false");
        push(self.prec_sqrt, "--prec-sqrt=true", "--prec-sqrt=false");
        push(self.ftz, "--ftz=true", "--ftz=false");
        if self.fast_math {
            opts.push("--use_fast_math");
        }
        opts
    }

    /// Whether f32 subnormals are flushed to zero (`--ftz=true`, alone or through fast math).
    pub fn flushes_f32_subnormals(self) -> bool {
        self.ftz.unwrap_or(self.fast_math)
    }

    /// One line for help texts and reports.
    pub fn describe(self) -> String {
        if let Some((_, preset)) = self.preset() {
            return preset.2.to_string();
        }
        let mut parts: Vec<&str> = Vec::new();
        let mut say = |v: Option<bool>, on: &'static str, off: &'static str| match v {
            Some(true) => parts.push(on),
            Some(false) => parts.push(off),
            None => {}
        };
        say(self.fmad, "FMA contraction on", "FMA contraction off");
        say(
            self.prec_div,
            "IEEE fp32 division",
            "approximate fp32 division",
        );
        say(
            self.prec_sqrt,
            "IEEE fp32 square root",
            "approximate fp32 square root",
        );
        say(
            self.ftz,
            "fp32 denormals flushed to zero",
            "fp32 denormals kept",
        );
        if self.fast_math {
            parts.push("--use_fast_math for the rest");
        } else {
            parts.push("otherwise defaults");
        }
        parts.join(", ")
    }

    /// What may be written, on one line, for help texts and error messages: the presets first
    /// (as the message listed before combinations existed), then the switches and the `+`.
    pub fn accepted_names() -> String {
        format!(
            "{}, or switches fmad=, prec-div=, prec-sqrt=, ftz= (true|false), use_fast_math, joined by '+' (e.g. nofma+ftz)",
            PRESETS.map(|p| p.1).join(", ")
        )
    }

    /// The terms that turn `base` into `self`, or `None` when some switch `self` leaves at its
    /// default is set by `base` (no term unsets a switch).
    fn terms_from(self, base: FlagSet) -> Option<Vec<String>> {
        let mut terms = Vec::new();
        for (name, get, set) in SWITCHES {
            match (get(&base), get(&self)) {
                (b, t) if b == t => {}
                (_, None) => return None,
                (_, Some(on)) => {
                    // A single-switch preset reads better than `name=value` where one exists.
                    let mut only = FlagSet::DEFAULT;
                    set(&mut only, on);
                    terms.push(match only.preset_name() {
                        Some(preset) => preset.to_string(),
                        None => format!("{name}={on}"),
                    });
                }
            }
        }
        match (base.fast_math, self.fast_math) {
            (true, false) => return None,
            (false, true) => terms.push("use_fast_math".to_string()),
            _ => {}
        }
        Some(terms)
    }

    /// The shortest `+` spelling: from a preset (its name, then terms) or from the defaults
    /// (terms only). Ties go to a preset, the earlier in [`FlagSet::ALL`]: `fast+nofma` reads
    /// better than `nofma+use_fast_math`.
    fn spelling(self) -> String {
        // The defaults reach every flag set (no switch to unset, no fast math to remove).
        let mut best = self.terms_from(FlagSet::DEFAULT).unwrap_or_default();
        let mut from_preset = false;
        for (base, name, _) in &PRESETS[1..] {
            if let Some(mut terms) = self.terms_from(*base) {
                terms.insert(0, name.to_string());
                if terms.len() < best.len() || (terms.len() == best.len() && !from_preset) {
                    best = terms;
                    from_preset = true;
                }
            }
        }
        best.join("+")
    }
}

/// The NVRTC option for switch `name` set to `on`.
fn switch_option(name: &str, on: bool) -> &'static str {
    match (name, on) {
        ("fmad", true) => "--fmad=true",
        ("fmad", false) => "--fmad=false",
        ("prec-div", true) => "--prec-div=true",
        ("prec-div", false) => "--prec-div=false",
        ("prec-sqrt", true) => "--prec-sqrt=true",
        ("prec-sqrt", false) => "--prec-sqrt=false",
        ("ftz", true) => "--ftz=true",
        _ => "--ftz=false",
    }
}

impl Default for FlagSet {
    fn default() -> Self {
        FlagSet::DEFAULT
    }
}

impl Ord for FlagSet {
    /// Presets first, in [`FlagSet::ALL`]'s order (how tables list them), then combinations by
    /// their canonical spelling.
    fn cmp(&self, other: &Self) -> Ordering {
        let rank = |f: &FlagSet| f.preset().map_or(PRESETS.len(), |(i, _)| i);
        rank(self)
            .cmp(&rank(other))
            .then_with(|| self.spelling().cmp(&other.spelling()))
    }
}

impl PartialOrd for FlagSet {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for FlagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A flag set that cannot be read: an unknown term or a malformed switch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown flag set '{given}'; accepted: {accepted}", accepted = FlagSet::accepted_names())]
pub struct UnknownFlagSet {
    /// The text as given.
    pub given: String,
}

impl FromStr for FlagSet {
    type Err = UnknownFlagSet;

    /// Reads the `+` grammar of the module docs.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownFlagSet {
            given: s.to_string(),
        };
        let mut flags = FlagSet::DEFAULT;
        for term in s.split('+') {
            let term = term.trim().to_ascii_lowercase().replace('_', "-");
            let term = term.strip_prefix("--").unwrap_or(&term);
            if let Some((preset, _, _)) = PRESETS.iter().find(|p| p.1 == term) {
                flags = flags.with(*preset);
            } else if term == FAST_MATH_TERM {
                flags.fast_math = true;
            } else {
                let (name, value) = term.split_once('=').ok_or_else(unknown)?;
                let on = value.parse::<bool>().map_err(|_| unknown())?;
                let (_, _, set) = SWITCHES
                    .iter()
                    .find(|(n, _, _)| *n == name)
                    .ok_or_else(unknown)?;
                set(&mut flags, on);
            }
        }
        Ok(flags)
    }
}

impl FlagSet {
    /// `self` with everything `later` sets applied over it (the meaning of `self+later`).
    pub fn with(mut self, later: FlagSet) -> FlagSet {
        for (_, get, set) in SWITCHES {
            if let Some(on) = get(&later) {
                set(&mut self, on);
            }
        }
        self.fast_math |= later.fast_math;
        self
    }
}

impl Serialize for FlagSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for FlagSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_strings_per_set() {
        let expect: [(FlagSet, &[&str]); 7] = [
            (FlagSet::DEFAULT, &[]),
            (
                FlagSet::STRICT,
                &[
                    "--fmad=false",
                    "--prec-div=true",
                    "--prec-sqrt=true",
                    "--ftz=false",
                ],
            ),
            (FlagSet::FAST, &["--use_fast_math"]),
            (FlagSet::NOFMA, &["--fmad=false"]),
            (FlagSet::FTZ, &["--ftz=true"]),
            (FlagSet::APPROX_DIV, &["--prec-div=false"]),
            (FlagSet::APPROX_SQRT, &["--prec-sqrt=false"]),
        ];
        for (set, options) in expect {
            assert_eq!(set.options(), options, "{set}");
        }
    }

    /// Reads nvcc options back into switches, as nvcc's documentation defines them.
    fn from_nvcc_options(opts: &[&str]) -> FlagSet {
        let mut f = FlagSet::DEFAULT;
        for o in opts {
            let (name, value) = o.split_once('=').unwrap_or((o, ""));
            let on = value == "true";
            match name {
                "--fmad" => f.fmad = Some(on),
                "--prec-div" => f.prec_div = Some(on),
                "--prec-sqrt" => f.prec_sqrt = Some(on),
                "--ftz" => f.ftz = Some(on),
                "--use_fast_math" => f.fast_math = true,
                other => panic!("not an nvcc floating-point option: {other}"),
            }
            assert!(
                value.is_empty() || value == "true" || value == "false",
                "{o}"
            );
        }
        f
    }

    #[test]
    fn every_flag_set_maps_onto_nvcc_options() {
        let mut sets: Vec<FlagSet> = FlagSet::ALL.to_vec();
        for s in [
            "nofma+ftz",
            "strict+ftz",
            "fast+nofma",
            "fmad=true+prec-div=false",
        ] {
            sets.push(s.parse().unwrap());
        }
        for set in sets {
            let opts = set.nvcc_options();
            assert_eq!(from_nvcc_options(&opts), set, "{set}: {opts:?}");
            // One option per switch set, fast math last.
            let switches = [set.fmad, set.prec_div, set.prec_sqrt, set.ftz];
            let n = switches.iter().flatten().count() + usize::from(set.fast_math);
            assert_eq!(opts.len(), n, "{set}");
        }
        assert_eq!(
            FlagSet::STRICT.nvcc_options(),
            [
                "--fmad=false",
                "--prec-div=true",
                "--prec-sqrt=true",
                "--ftz=false"
            ]
        );
        assert_eq!(FlagSet::FAST.nvcc_options(), ["--use_fast_math"]);
        assert!(FlagSet::DEFAULT.nvcc_options().is_empty());
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
        assert_eq!("APPROX_DIV".parse::<FlagSet>(), Ok(FlagSet::APPROX_DIV));
        assert_eq!(" Strict ".parse::<FlagSet>(), Ok(FlagSet::STRICT));
    }

    #[test]
    fn unknown_name_lists_accepted_names_on_one_line() {
        let err = "fastest".parse::<FlagSet>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown flag set 'fastest'; accepted: default, strict, fast, nofma, ftz, approx-div, approx-sqrt, or switches fmad=, prec-div=, prec-sqrt=, ftz= (true|false), use_fast_math, joined by '+' (e.g. nofma+ftz)"
        );
        assert!(!err.contains('\n'));
        for bad in [
            "",
            "no-fma",
            "nofma+",
            "ftz=yes",
            "fmad",
            "fmad=",
            "sqrt=true",
            "+ftz",
        ] {
            assert!(bad.parse::<FlagSet>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn combinations_are_later_terms_over_earlier() {
        let nofma_ftz: FlagSet = "nofma+ftz".parse().unwrap();
        assert_eq!(nofma_ftz.options(), ["--fmad=false", "--ftz=true"]);
        let strict_ftz: FlagSet = "strict+ftz".parse().unwrap();
        assert_eq!(
            strict_ftz.options(),
            [
                "--fmad=false",
                "--prec-div=true",
                "--prec-sqrt=true",
                "--ftz=true"
            ]
        );
        assert_eq!(
            strict_ftz,
            FlagSet {
                ftz: Some(true),
                ..FlagSet::STRICT
            }
        );
        // Switches in NVRTC's spelling, pasted options, any order.
        assert_eq!("ftz+nofma".parse::<FlagSet>(), Ok(nofma_ftz));
        assert_eq!("fmad=false+--ftz=true".parse::<FlagSet>(), Ok(nofma_ftz));
        assert_eq!(
            "--use_fast_math+fmad=false"
                .parse::<FlagSet>()
                .map(FlagSet::options),
            Ok(vec!["--fmad=false", "--use_fast_math"])
        );
        // Later wins: the ftz switch of strict is overridden, and then set back.
        assert_eq!(
            "strict+ftz+ftz=false".parse::<FlagSet>(),
            Ok(FlagSet::STRICT)
        );
    }

    #[test]
    fn combinations_equal_to_a_preset_print_as_the_preset() {
        let cases = [
            ("approx-div+prec-div=false", "approx-div"),
            (
                "fmad=false+prec-div=true+prec-sqrt=true+ftz=false",
                "strict",
            ),
            ("use_fast_math", "fast"),
            ("ftz=true", "ftz"),
            ("strict+default", "strict"),
        ];
        for (spec, name) in cases {
            let f: FlagSet = spec.parse().unwrap();
            assert!(f.is_preset(), "{spec}");
            assert_eq!(f.to_string(), name, "{spec}");
        }
    }

    #[test]
    fn combinations_print_canonically_and_round_trip() {
        let cases = [
            ("ftz+nofma", "nofma+ftz"),
            ("strict+ftz", "strict+ftz"),
            ("ftz=true+strict+ftz", "strict+ftz"),
            ("nofma+use_fast_math", "fast+nofma"),
            (
                "nofma+approx-div+approx-sqrt",
                "nofma+approx-div+approx-sqrt",
            ),
            ("fmad=true", "fmad=true"),
            ("strict+fmad=true", "strict+fmad=true"),
            // Equal lengths: spelled from a preset.
            ("default+prec-div=true+ftz", "ftz+prec-div=true"),
            // An explicit `fmad=true` is not the default (unset), so not `approx-div`.
            ("nofma+approx-div+fmad=true", "approx-div+fmad=true"),
        ];
        for (spec, canonical) in cases {
            let f: FlagSet = spec.parse().unwrap();
            assert!(!f.is_preset(), "{spec}");
            assert_eq!(f.to_string(), canonical, "{spec}");
            assert_eq!(canonical.parse::<FlagSet>(), Ok(f), "{spec}");
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{canonical}\""));
            assert_eq!(serde_json::from_str::<FlagSet>(&json).unwrap(), f);
        }
        assert!(serde_json::from_str::<FlagSet>("\"fastest\"").is_err());
    }

    #[test]
    fn order_lists_presets_first_as_tables_do() {
        let mut sets: Vec<FlagSet> = vec![
            "nofma+ftz".parse().unwrap(),
            FlagSet::APPROX_SQRT,
            "strict+ftz".parse().unwrap(),
            FlagSet::DEFAULT,
            FlagSet::FAST,
        ];
        sets.sort();
        let names: Vec<String> = sets.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            ["default", "fast", "approx-sqrt", "nofma+ftz", "strict+ftz"]
        );
        let mut all = FlagSet::ALL;
        all.reverse();
        all.sort();
        assert_eq!(all, FlagSet::ALL);
    }

    #[test]
    fn flushing_and_descriptions_follow_the_switches() {
        let flushing: Vec<String> = FlagSet::ALL
            .into_iter()
            .filter(|f| f.flushes_f32_subnormals())
            .map(FlagSet::name)
            .collect();
        assert_eq!(flushing, ["fast", "ftz"]);
        assert!(!"fast+ftz=false"
            .parse::<FlagSet>()
            .unwrap()
            .flushes_f32_subnormals());
        assert_eq!(
            "nofma+ftz".parse::<FlagSet>().unwrap().describe(),
            "FMA contraction off, fp32 denormals flushed to zero, otherwise defaults"
        );
        assert_eq!(
            FlagSet::STRICT.describe(),
            "no FMA contraction, IEEE div/sqrt, denormals kept"
        );
    }
}
