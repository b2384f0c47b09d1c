//! The demotion error's quotient `e = d / a` (`d = |r32 − r64|` rounded, `a = |r64|`) without a
//! correctly rounded division, for the accumulated (loop) sites; the runtime's
//! `mantissa_shadow_quotient` (`crates/gpu/cuda/mantissa_shadow.cuh`) is the same sequence
//! with the same range, for the sites outside loops.
//!
//! ```text
//! y0 = rcp.approx.ftz(a)
//! t  = fma(−a, y0, 1)     y = fma(y0, t, y0)     one Newton step: h = |1 − a·y| small
//! q  = d·y                r = fma(−q, a, d)      e = fma(r, y, q)
//! ```
//!
//! every operation `.rn`. `div.rn.f64` stays outside the range below.
//!
//! **What `e` is.** Write x = d/a (exact), u = 2^-53, and assume no operation below leaves the
//! normal range (the range makes sure of it). Then q = x(1 + σ) with |σ| ≤ h + u + hu; the
//! remainder ρ = d − q·a = −d·σ exactly, rounded once to r = ρ(1 + δ), |δ| ≤ u; and
//! q + r·y = q + (ρ/a)(1 + δ)(1 + η) with a·y = 1 + η, |η| ≤ h, where q + ρ/a = x. So the
//! value the last fma rounds, v, satisfies |v − x| ≤ |ρ/a|·(h + u + hu) ≤ x·(h + u + hu)², and
//! e = RN(v): **e is the correctly rounded x except where x lies within a relative
//! (h + u + hu)² of a midpoint between two doubles** (the midpoint can then fall between x and
//! v, and e is the other neighbour), and it is always one of the two doubles around x
//! (faithful; x itself when x is a double, such as 1 for r32 = 0), which only needs
//! (h + u + hu)² below 2^-54. With the H200's h ≤ 2^-39.88 (measured over 2^30 random divisors,
//! docs/BENCHMARKS.md: a measurement, not a bound the PTX ISA documents) the band is a relative
//! 2^-79.75, at most 2^-26.7 of an ulp of e on either side of each midpoint. With the
//! interpreter's model of the reciprocal (error below 2^-20, so h < 2^-39.99) it is below
//! 2^-79.99. A quotient of doubles is never a midpoint itself (an odd 54-bit significand times
//! the divisor's would need more than 53 bits) but it can come within 2^-106 of one, and not
//! only by chance: a power of two over a divisor whose significand is all ones, such as
//! r64 = 1 − 2^-53 with r32 = 1 (d = 2^-53, x = 2^-53·(1 + 2^-53 + 2^-106 + …)), lies 2^-106
//! above a midpoint; with the interpreter's model of the reciprocal e is then the double below
//! (2^-53) where the division gives the one above (what the GPU's reciprocal gives there was
//! not run). `quotient_tests` has it, and a pair found by searching 3.6·10^9 random ones.
//!
//! **The range: 2^-896 ≤ a < 2^1021**, tested on `a`'s high word (the sign cleared): from
//! [`FAST_FROM`] = 127 << 20 (biased exponent 1023 − 896) below `FAST_FROM` + [`FAST_SPAN`] =
//! 2044 << 20 (biased exponent 1023 + 1021), whole binades. It rests on what both callers
//! guarantee: r32 is an f32 widened exactly, finite (|r32| ≤ 2^128 − 2^104), and e only matters
//! where r64 is finite and nonzero. Let 2^k ≤ a < 2^(k+1). Then:
//! - y0, t and y are normal (or t = 0): a is normal (no `.ftz` flush of the operand) and
//!   1/a > 2^-1021, so any approximation within a factor 2 is above 2^-1022; just below
//!   a = 2^1022, 1/a is just above 2^-1022 and an approximation a little low would be flushed
//!   to 0: hence 2^1021. t = 1 − a·y0 is a multiple of the product's unit, 2^-106 or more for
//!   a·y0 near 1, and y is 1/a within 2^-39.
//! - q is finite: d ≤ RN(|r32| + a), at most 2^128 − 2^104 while a < 2^74, so
//!   x ≤ (2^128 − 2^104)/2^-896 = 2^1024 − 2^1000 and q ≤ x(1 + 2^-39) is below the largest
//!   double, 2^1024 − 2^971 (for a ≥ 2^74, x < 2^55). In the binade below, a ≤ 2^-896(1 − 2^-24)
//!   with r32 = ±(2^128 − 2^104) makes x pass the largest double: q would overflow and e be NaN
//!   where the division gives +inf.
//! - d ≥ 2^(k−52) when d ≠ 0, so x > 2^-53 and q is normal: if |r32| ≤ a/2, d ≥ a/2; otherwise
//!   r32 is a multiple of r64's unit 2^(k−52) (a normal f32 above 2^(k−1) has a unit of
//!   2^(k−24) or more; a subnormal one, unit 2^-149, comes with a < 2^-125, where r64's unit
//!   is below 2^-177), and so is their nonzero difference.
//! - r is ρ exactly or within a relative u: d ≥ 2^-948 is normal, its unit 2^(kd−52)
//!   (2^kd ≤ d); q·a is d within 2^-39, so 2^(kq + k + 2) > d for 2^kq ≤ q, and q·a's unit
//!   2^(kq + k − 104) ≥ 2^(kd − 105) ≥ 2^-1053: ρ is a multiple of 2^-1074, exact if subnormal.
//! - d = 0 needs no branch: q = +0, r = fma(−0, a, +0) = +0, e = +0, what the division gives.
//!
//! Outside the range (subnormal and tiny r64, r64 ≥ 2^1021) `div.rn.f64` computes e, on the
//! out-of-line rare path of the site's group (`demotion.rs`), and only where the execution is measured
//! at all: the r64 = 0 and non-finite executions, which a kernel may have in every iteration,
//! divide nothing.

use crate::model::{Imm, Operand, Statement};
use crate::rewrite::{instruction, int};

/// `a`'s high word at the bottom of the range: 2^-896, biased exponent 127.
pub(crate) const FAST_FROM: u32 = 127 << 20;
/// The range's width in high words: up to 2^1021 (excluded), biased exponent 2044.
pub(crate) const FAST_SPAN: u32 = (2044 << 20) - FAST_FROM;

/// The registers of one quotient's code.
pub(crate) struct Registers<'r> {
    /// f64, in: d = |r32 − r64|.
    pub d: &'r str,
    /// f64, in: a = |r64|.
    pub a: &'r str,
    /// b32, in: `a`'s high word (r64's with the sign bit cleared).
    pub high: &'r str,
    /// pred, in: r32 is finite.
    pub r32_finite: &'r str,
    /// f64, out: e (meaningless where `rare`).
    pub e: &'r str,
    /// f64 scratch: the reciprocal, the Newton correction then the remainder, the quotient,
    /// −a.
    pub y: &'r str,
    /// See `y`.
    pub t: &'r str,
    /// See `y`.
    pub q: &'r str,
    /// See `y`.
    pub minus_a: &'r str,
    /// b32 scratch: the high word's offset into the range.
    pub offset: &'r str,
    /// pred, out: `e` is not the quotient: a outside the range (which takes in a = 0 and a not
    /// finite) or r32 not finite. The caller then divides ([`division`]) where the execution
    /// is measured at all.
    pub rare: &'r str,
}

/// The code computing `e` (module docs) where a is in the range, and `rare` elsewhere. No
/// branch and no division: the callers branch to an out-of-line path on `rare` (a predicated
/// `div.rn.f64`, or a select, would cost every execution the division: ptxas if-converts
/// `@p div.rn.f64` into the division's own fast path, run every time; ptxas 13.0, sm_90, the
/// profile fixture's sites: 13 DFMA/DMUL each that way, 5 without).
pub(crate) fn code(r: &Registers) -> Vec<Statement> {
    let reg = |name: &str| Operand::Reg(name.to_string());
    let mut code = rare_test(r.offset, r.high, r.r32_finite, r.rare).to_vec();
    code.extend([
        instruction("neg", &["f64"], vec![reg(r.minus_a), reg(r.a)]),
        instruction("rcp", &["approx", "ftz", "f64"], vec![reg(r.y), reg(r.a)]),
        instruction(
            "fma",
            &["rn", "f64"],
            vec![reg(r.t), reg(r.minus_a), reg(r.y), one()],
        ),
        instruction(
            "fma",
            &["rn", "f64"],
            vec![reg(r.y), reg(r.y), reg(r.t), reg(r.y)],
        ),
        instruction("mul", &["rn", "f64"], vec![reg(r.q), reg(r.d), reg(r.y)]),
        instruction(
            "fma",
            &["rn", "f64"],
            vec![reg(r.t), reg(r.q), reg(r.minus_a), reg(r.d)],
        ),
        instruction(
            "fma",
            &["rn", "f64"],
            vec![reg(r.e), reg(r.t), reg(r.y), reg(r.q)],
        ),
    ]);
    code
}

/// `rare` = a outside the range (a's high word `high` less [`FAST_FROM`] in `offset` wraps
/// below it) or r32 not finite (`r32_finite` false): what [`code`] tests, and what a rare path
/// tests again.
pub(crate) fn rare_test(offset: &str, high: &str, r32_finite: &str, rare: &str) -> [Statement; 2] {
    let reg = |name: &str| Operand::Reg(name.to_string());
    [
        instruction(
            "sub",
            &["u32"],
            vec![reg(offset), reg(high), int(FAST_FROM.into())],
        ),
        instruction(
            "setp",
            &["ge", "or", "u32"],
            vec![
                reg(rare),
                reg(offset),
                int(FAST_SPAN.into()),
                Operand::Not(Box::new(reg(r32_finite))),
            ],
        ),
    ]
}

/// `e = d / a` correctly rounded: the quotient outside the range.
pub(crate) fn division(e: &str, d: &str, a: &str) -> Statement {
    let reg = |name: &str| Operand::Reg(name.to_string());
    instruction("div", &["rn", "f64"], vec![reg(e), reg(d), reg(a)])
}

/// The f64 immediate 1.
fn one() -> Operand {
    Operand::Imm(Imm::F64(1f64.to_bits()))
}
