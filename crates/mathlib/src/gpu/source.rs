//! The CUDA sources: a short generated prelude (the call under test, or the reference and its
//! bound) in front of one of two fixed templates, `cuda/eval.cu` and `cuda/score.cu`.
//!
//! Two modules per function so that the variant's flags reach only the call under test: the
//! eval module is compiled with [`eval_flags`] (fast math for [`Variant::Fast`]), the score
//! module, which holds the double reference, always with [`FlagSet::DEFAULT`].

use mantissa_gpu::{FlagSet, Source};

use crate::format::Format;
use crate::functions::{Function, Variant};
use crate::published;

use super::{BIN_SHIFT, BLOCK, ITEMS};

/// The eval template (see its comments).
pub const EVAL_TEMPLATE: &str = include_str!("../../cuda/eval.cu");
/// The score template (see its comments).
pub const SCORE_TEMPLATE: &str = include_str!("../../cuda/score.cu");

/// The flags the function under test is compiled with: `-use_fast_math` for the fast variant,
/// NVRTC's defaults otherwise (intrinsics are what they are under any flags).
pub fn eval_flags(variant: Variant) -> FlagSet {
    match variant {
        Variant::Fast => FlagSet::FAST,
        Variant::Default | Variant::Intrinsic => FlagSet::DEFAULT,
    }
}

/// Whether `eval_range` (the exhaustive sweep) exists for this function and format.
pub fn sweepable(f: Function, format: Format) -> bool {
    format == Format::F32 && f.arity() == 1
}

/// The eval module's source for `f` in `format` and `variant` (which must exist:
/// [`Function::has_variant`]).
pub fn eval_source(f: Function, format: Format, variant: Variant) -> Source {
    let ty = match format {
        Format::F32 => "float",
        Format::F64 => "double",
    };
    let call = f.cuda_call(format, variant);
    let prelude = format!(
        "// {name} ({fmt}, {var}): the call under test.\n\
         #define T {ty}\n\
         #define SWEEP {sweep}\n\
         __device__ __forceinline__ {ty} under_test({ty} x, {ty} y)\n\
         {{\n    (void)x;\n    (void)y;\n    return {call};\n}}\n\n",
        name = f.name(),
        fmt = format.name(),
        var = variant.name(),
        sweep = u8::from(sweepable(f, format)),
    );
    Source::new(
        format!(
            "mathlib_eval_{}_{}_{}.cu",
            f.name(),
            format.name(),
            variant.name()
        ),
        prelude + EVAL_TEMPLATE,
    )
}

/// The error bound of CUDA's f64 `f` that the reference relies on, in f64 ulps: the documented
/// maximum ([`published::documented`]), or where the guide gives none in ulps, the figure it
/// states for the region the reference uses the function in (lgamma: 4 outside the interval the
/// reference avoids), else a conservative 8.
pub fn reference_documented_ulps(f: Function) -> f64 {
    if let Some(u) = published::documented(f, Format::F64, Variant::Default).and_then(|d| d.ulps) {
        return u;
    }
    match f {
        Function::Lgamma => 4.0,
        _ => 8.0,
    }
}

/// The factor K of the reference's bound K·ulp64(r): twice the documented error, plus 2 (the
/// documented figures are measured maxima, not proofs, hence the margin).
pub fn bound_factor(f: Function) -> f64 {
    2.0 * reference_documented_ulps(f) + 2.0
}

/// The score module's source for `f` (f32 results; the reference in double).
pub fn score_source(f: Function) -> Source {
    let call = f.cuda_call(Format::F64, Variant::Default);
    let k = bound_factor(f);
    let prelude = format!(
        "// {name}: the double reference and its bound, for scoring f32 results.\n\
         #define ARITY {arity}\n\
         #define REF_K {k:?}\n\
         #define LGAMMA_REFLECTION {lgamma}\n\
         #define BIN_SHIFT {BIN_SHIFT}\n\
         #define BLOCK {BLOCK}\n\
         #define ITEMS {ITEMS}\n\
         __device__ __forceinline__ double reference_value(double x, double y)\n\
         {{\n    (void)x;\n    (void)y;\n    return {call};\n}}\n\n",
        name = f.name(),
        arity = f.arity(),
        lgamma = u8::from(f == Function::Lgamma),
    );
    Source::new(
        format!("mathlib_score_{}.cu", f.name()),
        prelude + SCORE_TEMPLATE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preludes_substitute_the_calls() {
        let s = eval_source(Function::Div, Format::F32, Variant::Intrinsic);
        assert!(s.text.contains("return __fdividef(x, y);"), "{}", s.text);
        assert!(s.text.contains("#define T float"));
        assert!(s.text.contains("#define SWEEP 0"));
        let s = eval_source(Function::Sin, Format::F32, Variant::Fast);
        assert!(s.text.contains("return sinf(x);") && s.text.contains("#define SWEEP 1"));
        let s = eval_source(Function::Pow, Format::F64, Variant::Default);
        assert!(s.text.contains("double under_test(double x, double y)"));
        assert!(s.text.contains("return pow(x, y);") && s.text.contains("#define SWEEP 0"));
        let s = score_source(Function::Exp10);
        assert!(s.text.contains("return exp10(x);") && s.text.contains("#define ARITY 1"));
        assert!(s.text.contains("#define LGAMMA_REFLECTION 0"));
        let s = score_source(Function::Div);
        assert!(s.text.contains("return x / y;") && s.text.contains("#define ARITY 2"));
        assert!(score_source(Function::Lgamma)
            .text
            .contains("#define LGAMMA_REFLECTION 1"));
        assert_eq!(eval_flags(Variant::Fast), FlagSet::FAST);
        assert_eq!(eval_flags(Variant::Intrinsic), FlagSet::DEFAULT);
    }

    #[test]
    fn bound_factors_follow_the_documented_f64_errors() {
        for f in Function::ALL {
            let k = bound_factor(f);
            assert!(k >= 2.0, "{f:?}: {k}");
            let text = score_source(f).text;
            assert!(text.contains(&format!("#define REF_K {k:?}\n")), "{f:?}");
        }
        // IEEE operations in double are correctly rounded: half an ulp, bounded by 2.
        assert_eq!(bound_factor(Function::Sqrt), 2.0);
        assert_eq!(bound_factor(Function::Div), 2.0);
    }
}
