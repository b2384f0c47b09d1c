//! Published figures mantissa's measurements are set beside: the maximum ulp errors the CUDA
//! Programming Guide documents, and the largest known errors Gladman, Innocente, Mather and
//! Zimmermann measured (HAL hal-03141101).

use crate::format::Format;
use crate::functions::{Function, Variant};

/// A documented CUDA error bound.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Documented {
    /// The bound in ulps, where the guide gives one in ulps for the whole range; `None` where
    /// it gives an absolute error or a bound on part of the range only (see `text`).
    pub ulps: Option<f64>,
    /// The guide's statement, in our words, e.g. "4 outside −23.0001…−2.2637, larger inside".
    pub text: &'static str,
}

/// The CUDA Programming Guide's maximum ulp error for `f` in `format` and `variant`, if it
/// documents one.
pub fn documented(f: Function, format: Format, variant: Variant) -> Option<Documented> {
    // Placeholder values for f64 default (filled and checked against the guide by the
    // published-data work); every other case unknown for now.
    if format != Format::F64 || variant != Variant::Default {
        return None;
    }
    let ulps = match f {
        Function::Sqrt | Function::Div => 0.0,
        Function::Cosh | Function::Tanh | Function::Exp | Function::Exp2 | Function::Exp10 => 1.0,
        Function::Expm1 | Function::Log | Function::Log2 | Function::Log10 | Function::Log1p => 1.0,
        Function::Rsqrt | Function::Cbrt => 1.0,
        Function::Asinh | Function::Acosh => 3.0,
        Function::Erfc | Function::Erfinv => 5.0,
        Function::Lgamma => 4.0,
        Function::Tgamma => 10.0,
        _ => 2.0,
    };
    Some(Documented { ulps: Some(ulps), text: "" })
}
