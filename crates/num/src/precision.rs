//! The precisions mantissa studies, by name, and a way to run generic code in any of them.
//!
//! A command line or a record names a precision as a string (`f32`, `f64x2`, `mp256`, ...);
//! [`Precision`] parses and prints those names, and [`Precision::visit`] calls a generic
//! function with the matching [`Real`] type, so a workload written once over `T: Real` runs in
//! every precision without a hand-written `match` at each call site.

use core::fmt;
use core::str::FromStr;

use crate::{
    f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64, Mp1024, Mp128, Mp256, Mp32, Mp512, Mp64,
    Real,
};

/// A number type under study.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Precision {
    /// `f32`: IEEE binary32, the GPU's fast format.
    F32,
    /// `f64`: IEEE binary64, the reference cost every other precision is compared with.
    F64,
    /// `f32x2`: double-float, two f32 words (about 48 bits) on f32 hardware.
    F32x2,
    /// `f64x2`: double-double, two f64 words (about 106 bits).
    F64x2,
    /// `comp32`: seed 000's composite `float2` (value + tracked error), as published.
    Comp32,
    /// `comp64`: seed 000's composite `double2`, as published.
    Comp64,
    /// `comp32n`: the composite scheme with re-normalization before each operation (seed 000
    /// §8.1).
    Comp32n,
    /// `comp64n`: `comp64` with re-normalization before each operation.
    Comp64n,
    /// Arbitrary precision with this many significand bits (one of [`MP_BITS`]).
    Mp(u32),
}

/// The arbitrary-precision widths available (the GMP rows of seed 000 Tables 7–8 and more).
pub const MP_BITS: [u32; 6] = [32, 64, 128, 256, 512, 1024];

impl Precision {
    /// Every precision, in the order tables list them.
    pub const ALL: [Precision; 14] = [
        Precision::F32,
        Precision::F64,
        Precision::F32x2,
        Precision::F64x2,
        Precision::Comp32,
        Precision::Comp64,
        Precision::Comp32n,
        Precision::Comp64n,
        Precision::Mp(32),
        Precision::Mp(64),
        Precision::Mp(128),
        Precision::Mp(256),
        Precision::Mp(512),
        Precision::Mp(1024),
    ];

    /// The hardware-speed precisions (everything but mp).
    pub const NATIVE: [Precision; 8] = [
        Precision::F32,
        Precision::F64,
        Precision::F32x2,
        Precision::F64x2,
        Precision::Comp32,
        Precision::Comp64,
        Precision::Comp32n,
        Precision::Comp64n,
    ];

    /// The name used on the command line and in records (`f32x2`, `mp256`), as `Display` writes
    /// it.
    pub fn name(self) -> String {
        self.to_string()
    }

    /// Run `visitor` with this precision's [`Real`] type.
    pub fn visit<V: PrecisionVisitor>(self, visitor: V) -> V::Output {
        match self {
            Precision::F32 => visitor.visit::<f32>(),
            Precision::F64 => visitor.visit::<f64>(),
            Precision::F32x2 => visitor.visit::<f32x2>(),
            Precision::F64x2 => visitor.visit::<f64x2>(),
            Precision::Comp32 => visitor.visit::<Comp32>(),
            Precision::Comp64 => visitor.visit::<Comp64>(),
            Precision::Comp32n => visitor.visit::<CompNorm32>(),
            Precision::Comp64n => visitor.visit::<CompNorm64>(),
            Precision::Mp(32) => visitor.visit::<Mp32>(),
            Precision::Mp(64) => visitor.visit::<Mp64>(),
            Precision::Mp(128) => visitor.visit::<Mp128>(),
            Precision::Mp(256) => visitor.visit::<Mp256>(),
            Precision::Mp(512) => visitor.visit::<Mp512>(),
            // Construction goes through `FromStr`/`ALL`, which only admit MP_BITS.
            Precision::Mp(_) => visitor.visit::<Mp1024>(),
        }
    }

    /// Parse a comma-separated list (`f32,f64x2,mp256`), rejecting duplicates.
    pub fn parse_list(s: &str) -> Result<Vec<Precision>, PrecisionError> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let p: Precision = part.parse()?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            return Err(PrecisionError {
                input: s.to_string(),
            });
        }
        Ok(out)
    }
}

/// Generic code to run in a precision chosen at run time: see [`Precision::visit`].
pub trait PrecisionVisitor {
    /// What the generic code returns.
    type Output;
    /// The generic code, monomorphised for each precision's [`Real`] type; called once with the
    /// type the run-time [`Precision`] names.
    fn visit<T: Real>(self) -> Self::Output;
}

/// An unknown precision name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision {input:?}: expected one of f32, f64, f32x2, f64x2, comp32, comp64, comp32n, comp64n, mp32, mp64, mp128, mp256, mp512, mp1024")]
pub struct PrecisionError {
    /// The rejected name, as given.
    pub input: String,
}

impl FromStr for Precision {
    type Err = PrecisionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || PrecisionError {
            input: s.to_string(),
        };
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "f32" => Precision::F32,
            "f64" => Precision::F64,
            "f32x2" => Precision::F32x2,
            "f64x2" => Precision::F64x2,
            "comp32" => Precision::Comp32,
            "comp64" => Precision::Comp64,
            "comp32n" => Precision::Comp32n,
            "comp64n" => Precision::Comp64n,
            other => {
                let bits: u32 = other
                    .strip_prefix("mp")
                    .and_then(|b| b.parse().ok())
                    .ok_or_else(err)?;
                if !MP_BITS.contains(&bits) {
                    return Err(err());
                }
                Precision::Mp(bits)
            }
        })
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
            Precision::F32x2 => "f32x2",
            Precision::F64x2 => "f64x2",
            Precision::Comp32 => "comp32",
            Precision::Comp64 => "comp64",
            Precision::Comp32n => "comp32n",
            Precision::Comp64n => "comp64n",
            Precision::Mp(bits) => return write!(f, "mp{bits}"),
        };
        f.pad(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Name;
    impl PrecisionVisitor for Name {
        type Output = String;
        fn visit<T: Real>(self) -> String {
            T::precision_name()
        }
    }

    #[test]
    fn names_round_trip_and_match_the_types() {
        for p in Precision::ALL {
            assert_eq!(p.to_string().parse::<Precision>(), Ok(p));
            assert_eq!(p.visit(Name), p.to_string(), "{p:?}");
        }
    }

    #[test]
    fn bad_names_list_what_is_accepted() {
        for bad in ["f16", "mp100", "mp", "", "double"] {
            let e = bad.parse::<Precision>().unwrap_err().to_string();
            assert!(e.contains("expected one of f32, f64"), "{e}");
        }
        assert_eq!(
            Precision::parse_list("f32, f64x2,f32").unwrap(),
            vec![Precision::F32, Precision::F64x2]
        );
        assert!(Precision::parse_list(",").is_err());
        assert!(Precision::parse_list("f32,mp7").is_err());
    }
}
