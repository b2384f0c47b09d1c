//! The registry of measured functions: one row per function, with its arity and its CUDA
//! spellings. Adding a function is one row here, one reference in [`crate::reference`], and
//! its CPU entries in `cpu`.
//!
//! Its search regions (where large errors are likely, sampled beyond the uniform sample) are in
//! `regions`.

use serde::{Deserialize, Serialize};

use crate::format::Format;

/// A mathematical function, whatever the precision. Its CUDA spellings are [`Function::cuda_name`]
/// and [`Function::intrinsic_name`]; its correctly rounded reference is in [`crate::reference`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Function {
    /// sin x, x in radians; defined for every finite x, values in [−1, 1]. Large |x| tests the
    /// argument reduction. f32 intrinsic `__sinf`.
    Sin,
    /// cos x, x in radians; defined for every finite x, values in [−1, 1]. f32 intrinsic `__cosf`.
    Cos,
    /// tan x, x in radians; defined for every finite x, unbounded near odd multiples of π/2.
    /// f32 intrinsic `__tanf`.
    Tan,
    /// asin x, defined on [−1, 1] (NaN outside), values in [−π/2, π/2] radians.
    Asin,
    /// acos x, defined on [−1, 1] (NaN outside), values in [0, π] radians.
    Acos,
    /// atan x, defined everywhere, values in (−π/2, π/2) radians.
    Atan,
    /// atan2(y, x) in C's argument order (ordinate first): the angle of the point (x, y), in
    /// [−π, π] radians, with C99's special cases for zeros and infinities.
    Atan2,
    /// sinh x, the hyperbolic sine; overflows for |x| past about 89 (f32) or 710 (f64).
    Sinh,
    /// cosh x, the hyperbolic cosine, at least 1; overflows like sinh.
    Cosh,
    /// tanh x, the hyperbolic tangent, values in [−1, 1].
    Tanh,
    /// asinh x, the inverse hyperbolic sine, defined everywhere.
    Asinh,
    /// acosh x, the inverse hyperbolic cosine, defined for x ≥ 1 (NaN below), values ≥ 0.
    Acosh,
    /// atanh x, the inverse hyperbolic tangent, defined on [−1, 1] (±∞ at ±1, NaN outside).
    Atanh,
    /// eˣ; overflows past x ≈ 88.7 (f32) or 709.8 (f64), subnormal then 0 below. f32 intrinsic
    /// `__expf`.
    Exp,
    /// 2ˣ; exact at integer x within the format's range.
    Exp2,
    /// 10ˣ; exactly representable at the integers 0 to 10 (f32) or 22 (f64). f32 intrinsic
    /// `__exp10f`.
    Exp10,
    /// eˣ − 1, accurate near x = 0, where `exp(x) - 1` cancels.
    Expm1,
    /// ln x, the natural logarithm; defined for x ≥ 0 (−∞ at 0, NaN below). f32 intrinsic
    /// `__logf`.
    Log,
    /// log₂ x; exact at powers of two. f32 intrinsic `__log2f`.
    Log2,
    /// log₁₀ x; exact at powers of ten that the format holds. f32 intrinsic `__log10f`.
    Log10,
    /// ln(1 + x), accurate near x = 0, where `log(1 + x)` loses x; defined for x ≥ −1.
    Log1p,
    /// xʸ, two arguments, with C99's special cases (pow(x, ±0) = 1 for every x; a negative x
    /// with a non-integer y gives NaN). f32 intrinsic `__powf`.
    Pow,
    /// √x, correctly rounded by IEEE 754 in the default build (so its maximum error should be
    /// 0.5 ulp); approximate in f32 under `-use_fast_math`.
    Sqrt,
    /// 1/√x, CUDA's `rsqrt`/`rsqrtf`, which IEEE 754 does not require to be correctly rounded.
    Rsqrt,
    /// ∛x, defined for every x (negative x gives a negative root).
    Cbrt,
    /// √(x² + y²), two arguments, computed without the overflow or underflow of the naive
    /// formula.
    Hypot,
    /// erf x, the error function, values in [−1, 1].
    Erf,
    /// erfc x = 1 − erf x, accurate where erf x is near 1 (large x), values in [0, 2];
    /// underflows past x ≈ 10 (f32) or 27 (f64).
    Erfc,
    /// erfinv x, the inverse of erf, defined on [−1, 1] (±∞ at ±1, NaN outside).
    Erfinv,
    /// ln |Γ(x)|, the log-gamma function. Its zeros (x = 1, 2, and below −2 two between each
    /// pair of negative integers, −2.457… the first) are where relative accuracy is hardest.
    Lgamma,
    /// Γ(x), the gamma function; poles at 0 and the negative integers, overflows past x ≈ 35
    /// (f32) or 171.6 (f64).
    Tgamma,
    /// x / y: IEEE division by default, approximate under `-use_fast_math`, `__fdividef`.
    Div,
}

/// How the function under test is built on the GPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// The CUDA function, default nvcc/NVRTC flags.
    Default,
    /// The same call compiled with `-use_fast_math` (ftz, approximate division and square
    /// root, and the f32 functions that have one replaced by their intrinsic).
    Fast,
    /// The `__` intrinsic itself (`__sinf`, `__expf`, `__fdividef`, …), f32 only.
    Intrinsic,
}

impl Variant {
    /// All variants, in table order.
    pub const ALL: [Variant; 3] = [Variant::Default, Variant::Fast, Variant::Intrinsic];

    /// `default`, `fast` or `intrinsic`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::Fast => "fast",
            Variant::Intrinsic => "intrinsic",
        }
    }

    /// Parse a variant name.
    pub fn parse(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == s.trim())
    }
}

impl Function {
    /// Every function, in table order.
    pub const ALL: [Function; 32] = [
        Function::Sin,
        Function::Cos,
        Function::Tan,
        Function::Asin,
        Function::Acos,
        Function::Atan,
        Function::Atan2,
        Function::Sinh,
        Function::Cosh,
        Function::Tanh,
        Function::Asinh,
        Function::Acosh,
        Function::Atanh,
        Function::Exp,
        Function::Exp2,
        Function::Exp10,
        Function::Expm1,
        Function::Log,
        Function::Log2,
        Function::Log10,
        Function::Log1p,
        Function::Pow,
        Function::Sqrt,
        Function::Rsqrt,
        Function::Cbrt,
        Function::Hypot,
        Function::Erf,
        Function::Erfc,
        Function::Erfinv,
        Function::Lgamma,
        Function::Tgamma,
        Function::Div,
    ];

    /// The generic name: `sin`, `atan2`, `div`, …
    pub fn name(self) -> &'static str {
        match self {
            Function::Sin => "sin",
            Function::Cos => "cos",
            Function::Tan => "tan",
            Function::Asin => "asin",
            Function::Acos => "acos",
            Function::Atan => "atan",
            Function::Atan2 => "atan2",
            Function::Sinh => "sinh",
            Function::Cosh => "cosh",
            Function::Tanh => "tanh",
            Function::Asinh => "asinh",
            Function::Acosh => "acosh",
            Function::Atanh => "atanh",
            Function::Exp => "exp",
            Function::Exp2 => "exp2",
            Function::Exp10 => "exp10",
            Function::Expm1 => "expm1",
            Function::Log => "log",
            Function::Log2 => "log2",
            Function::Log10 => "log10",
            Function::Log1p => "log1p",
            Function::Pow => "pow",
            Function::Sqrt => "sqrt",
            Function::Rsqrt => "rsqrt",
            Function::Cbrt => "cbrt",
            Function::Hypot => "hypot",
            Function::Erf => "erf",
            Function::Erfc => "erfc",
            Function::Erfinv => "erfinv",
            Function::Lgamma => "lgamma",
            Function::Tgamma => "tgamma",
            Function::Div => "div",
        }
    }

    /// Look a function up by its generic name or any CUDA spelling (`sinf`, `__sinf`,
    /// `__fdividef`).
    pub fn parse(s: &str) -> Option<Function> {
        let s = s.trim();
        Function::ALL.into_iter().find(|f| {
            f.name() == s
                || Format::ALL.into_iter().any(|fmt| f.cuda_name(fmt) == s)
                || f.intrinsic_name() == Some(s)
        })
    }

    /// Whether the reference is one of the special functions (erf, erfc, erfinv, lgamma,
    /// tgamma: `reference::special`) rather than an elementary one.
    pub fn is_special(self) -> bool {
        matches!(
            self,
            Function::Erf | Function::Erfc | Function::Erfinv | Function::Lgamma | Function::Tgamma
        )
    }

    /// Number of arguments: 1, or 2 for atan2, pow, hypot and div.
    pub fn arity(self) -> usize {
        match self {
            Function::Atan2 | Function::Pow | Function::Hypot | Function::Div => 2,
            _ => 1,
        }
    }

    /// The CUDA spelling of the call in `format`: `sinf`/`sin`, … For div the operator, `/`.
    pub fn cuda_name(self, format: Format) -> &'static str {
        // Every CUDA f32 function is its f64 name with an `f`, except the operator.
        macro_rules! pick {
            ($($f:ident => $n32:literal, $n64:literal;)*) => {
                match self {
                    $(Function::$f => match format { Format::F32 => $n32, Format::F64 => $n64 },)*
                }
            };
        }
        pick! {
            Sin => "sinf", "sin"; Cos => "cosf", "cos"; Tan => "tanf", "tan";
            Asin => "asinf", "asin"; Acos => "acosf", "acos"; Atan => "atanf", "atan";
            Atan2 => "atan2f", "atan2"; Sinh => "sinhf", "sinh"; Cosh => "coshf", "cosh";
            Tanh => "tanhf", "tanh"; Asinh => "asinhf", "asinh"; Acosh => "acoshf", "acosh";
            Atanh => "atanhf", "atanh"; Exp => "expf", "exp"; Exp2 => "exp2f", "exp2";
            Exp10 => "exp10f", "exp10"; Expm1 => "expm1f", "expm1"; Log => "logf", "log";
            Log2 => "log2f", "log2"; Log10 => "log10f", "log10"; Log1p => "log1pf", "log1p";
            Pow => "powf", "pow"; Sqrt => "sqrtf", "sqrt"; Rsqrt => "rsqrtf", "rsqrt";
            Cbrt => "cbrtf", "cbrt"; Hypot => "hypotf", "hypot"; Erf => "erff", "erf";
            Erfc => "erfcf", "erfc"; Erfinv => "erfinvf", "erfinv"; Lgamma => "lgammaf", "lgamma";
            Tgamma => "tgammaf", "tgamma"; Div => "/", "/";
        }
    }

    /// The f32 intrinsic, where CUDA has one: `__sinf`, `__cosf`, `__tanf`, `__expf`,
    /// `__exp10f`, `__logf`, `__log2f`, `__log10f`, `__powf`, `__fdividef`.
    pub fn intrinsic_name(self) -> Option<&'static str> {
        Some(match self {
            Function::Sin => "__sinf",
            Function::Cos => "__cosf",
            Function::Tan => "__tanf",
            Function::Exp => "__expf",
            Function::Exp10 => "__exp10f",
            Function::Log => "__logf",
            Function::Log2 => "__log2f",
            Function::Log10 => "__log10f",
            Function::Pow => "__powf",
            Function::Div => "__fdividef",
            _ => return None,
        })
    }

    /// Whether this (format, variant) pair exists: intrinsics are f32 only and only for the
    /// functions above.
    pub fn has_variant(self, format: Format, variant: Variant) -> bool {
        match variant {
            Variant::Default | Variant::Fast => true,
            Variant::Intrinsic => format == Format::F32 && self.intrinsic_name().is_some(),
        }
    }

    /// The C expression that calls the function under test on `x` (and `y`) in `format` and
    /// `variant`, e.g. `sinf(x)`, `__fdividef(x, y)`, `x / y`.
    pub fn cuda_call(self, format: Format, variant: Variant) -> String {
        let name = if variant == Variant::Intrinsic {
            self.intrinsic_name().expect("has_variant checked")
        } else {
            self.cuda_name(format)
        };
        match (self, variant) {
            (Function::Div, Variant::Default | Variant::Fast) => "x / y".to_string(),
            _ if self.arity() == 2 => format!("{name}(x, y)"),
            _ => format!("{name}(x)"),
        }
    }

    /// Comma-separated list of every name, for "unknown function" errors.
    pub fn names() -> String {
        Function::ALL
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_cuda_spellings_parse() {
        for f in Function::ALL {
            assert_eq!(Function::parse(f.name()), Some(f));
            assert_eq!(
                Function::parse(f.cuda_name(Format::F64)).filter(|_| f != Function::Div),
                (f != Function::Div).then_some(f)
            );
        }
        assert_eq!(Function::parse("__fdividef"), Some(Function::Div));
        assert_eq!(Function::parse("lgammaf"), Some(Function::Lgamma));
        assert_eq!(Function::parse("nope"), None);
        assert_eq!(
            Function::Div.cuda_call(Format::F32, Variant::Intrinsic),
            "__fdividef(x, y)"
        );
        assert_eq!(
            Function::Pow.cuda_call(Format::F64, Variant::Default),
            "pow(x, y)"
        );
        assert!(!Function::Erf.has_variant(Format::F32, Variant::Intrinsic));
        assert!(!Function::Sin.has_variant(Format::F64, Variant::Intrinsic));
    }
}
