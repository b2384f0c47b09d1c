//! Composite arithmetic (`comp32`, `comp64`): the value + error pairs of Taufer et al. as the
//! thesis in seed 000 tabulates them, kept for comparison with double-word arithmetic.
//!
//! A [`Comp<F>`] is a pair `(value, error)` of base-format numbers standing for the exact sum
//! `value + error` (seed 000, §2.2 and Table 3). Its four operators follow seed 000 Table 4
//! rounding for rounding, weaknesses included: the product never captures the rounding error of
//! `value · value`, the quotient ignores both operands' error parts, and pairs are never
//! renormalised. These are what the study measures, so they are reproduced, not fixed. This is
//! therefore *not* double-word arithmetic (that is [`crate::dw`]): its nominal
//! `2p` bits are reached by sums of exactly representable inputs, not by products or quotients.
//!
//! [`CompNorm<F>`] is the same arithmetic with each operand re-split by TwoSum first, the remedy
//! seed 000 §8.1 tries for its multiplication chain (see that type for how it differs from the
//! thesis's own experiment).
//!
//! Main types: [`Comp32`], [`Comp64`], [`CompNorm32`], [`CompNorm64`]. Square root and absolute
//! value are this crate's additions (the thesis has none) and are documented as such.
//!
//! # Special values
//! Each operator finishes with one rule, so results are predictable and nothing panics:
//! if the value part is NaN or ±inf the result is `(value, 0)`; if the value is finite but the
//! error computation overflowed or produced NaN, the result is `(value + error, 0)` — the
//! non-finite number that reading the pair back would give anyway. Division handles a zero,
//! infinite or NaN operand value before the table's formula (see [`Comp`]'s `Div`). Zeros keep
//! the sign the base arithmetic gives them.
//!
//! # Reading Table 4
//! The extracted table needs three decisions, each documented on its operator: the addition's
//! last term is printed `+ y2.value` and is read as `+ y2.error`; the subtraction entry repeats
//! the addition verbatim and is read as `x + (−y)`; the division stores `s + t·diff` as the value
//! *and* `t·diff` as the error, which is kept as printed although it counts the correction
//! twice whenever it is not absorbed by the rounding of `s + t·diff`. No operation is fused:
//! `x − s·y` rounds the product first (nvcc would contract it into an FMA by default, which
//! makes the residual exact; this type reproduces the table, not a compiler's choice).

use core::cmp::Ordering;
use core::fmt;
use core::ops::{Add, Div, Mul, Neg, Sub};

use crate::base::Base;
use crate::big::{self, Big};
use crate::eft::{fast_two_sum, two_prod, two_sum};
use crate::real::Real;

/// A composite number: the exact sum `value + error` of two base-format numbers (seed 000,
/// Table 3: value first, error second).
///
/// Nothing keeps `|error|` below an ulp of `value`: after a cancellation the error part can be
/// the larger one, even with `value == 0`. Equality and ordering compare the exact sums.
#[derive(Clone, Copy, Debug, Default)]
pub struct Comp<F: Base> {
    /// The leading part: what a plain base-format computation would hold.
    pub value: F,
    /// The tracked rounding error; the number is `value + error` exactly.
    pub error: F,
}

/// Single composite precision (`float2` in seed 000).
pub type Comp32 = Comp<f32>;
/// Double composite precision (`double2` in seed 000).
pub type Comp64 = Comp<f64>;

impl<F: Base> Comp<F> {
    /// The pair as given, without normalisation.
    pub const fn new(value: F, error: F) -> Self {
        Self { value, error }
    }

    /// A base-format number with a zero error part.
    pub fn from_base(x: F) -> Self {
        Self::new(x, F::ZERO)
    }

    /// Conversion from f64: `value` is the base-format number nearest to `x`, `error` the
    /// remainder `x − value` (exact in f64) rounded to the base format. Seed 000 prints no
    /// conversion routine; this is the reading of Table 3's "value + error" that its experiments
    /// imply (inputs generated in double, held as float2). So a comp32 holds an f64 to about
    /// 48 bits and a comp64 holds it exactly (error 0). Non-finite `x`, and `x` overflowing the
    /// base format, give `(value, 0)`.
    pub fn from_f64(x: f64) -> Self {
        let value = F::from_f64(x);
        if !value.is_finite() {
            return Self::from_base(value);
        }
        // x − value is exact in f64: value is x rounded to fewer bits, so it lies within a factor
        // of two of x (Sterbenz), or it is 0 and the difference is x itself.
        Self::new(value, F::from_f64(x - value.to_f64()))
    }

    /// `value + error` rounded once to f64 (both parts are exact in f64, so this is the f64
    /// nearest to the exact sum).
    pub fn to_f64(self) -> f64 {
        self.value.to_f64() + self.error.to_f64()
    }

    /// `value + error` rounded to the base format: how seed 000 Table 3 reads a composite
    /// number back as one float or double.
    pub fn collapse(self) -> F {
        self.value + self.error
    }

    /// The same exact value re-split by TwoSum so that `value = fl(value + error)` and `error` is
    /// the exact remainder (|error| ≤ ½ ulp(value)). Left unchanged when a part is not finite or
    /// when the exact sum lies beyond the base format's range (the pair can still hold it).
    pub fn normalized(self) -> Self {
        if !self.value.is_finite() || !self.error.is_finite() {
            return self;
        }
        // TwoSum, not FastTwoSum: after a cancellation |error| may exceed |value|.
        let (s, e) = two_sum(self.value, self.error);
        if s.is_finite() {
            Self::new(s, e)
        } else {
            self
        }
    }

    /// True when both parts are finite (the exact value is then finite).
    pub fn is_finite(self) -> bool {
        self.value.is_finite() && self.error.is_finite()
    }

    /// True when the pair stands for NaN (a NaN part, or opposite infinities).
    pub fn is_nan(self) -> bool {
        self.value.is_nan() || self.error.is_nan() || self.collapse().is_nan()
    }

    /// The exact value `value + error`; `None` unless both parts are finite.
    pub fn to_big(self) -> Option<Big> {
        self.is_finite()
            .then(|| big::exact(self.value.to_f64()) + big::exact(self.error.to_f64()))
    }

    /// The special-value rule every operator ends with (see the module doc).
    #[inline(always)]
    fn finish(value: F, error: F) -> Self {
        if !value.is_finite() {
            Self::from_base(value)
        } else if !error.is_finite() {
            Self::from_base(value + error)
        } else {
            Self::new(value, error)
        }
    }

    /// Square root — **not from the thesis**, which defines none. The operand is scaled by an
    /// even power of two to near 1 (so neither `s²` nor the sum can over- or underflow), re-split
    /// by TwoSum into `h + l`, and one Newton correction is applied: `s = √h`, then
    /// `(s, (h − s² + l) / 2s)` with `s²` formed exactly by TwoProd and the pair re-split by
    /// FastTwoSum, then scaled back. That gives about `2p − 2` bits, the usual double-word
    /// square root, except where a scaled-back error part becomes subnormal.
    /// sqrt(±0) = ±0, sqrt(+inf) = +inf; negative values (by the exact sum), −inf and NaN give
    /// NaN.
    pub fn sqrt(self) -> Self {
        let (v, e) = (self.value, self.error);
        if v.is_nan() || e.is_nan() {
            return Self::from_base(F::NAN);
        }
        if v == F::ZERO && e == F::ZERO {
            return Self::from_base(v);
        }
        if !v.is_finite() || !e.is_finite() {
            let c = self.collapse();
            return Self::from_base(if c > F::ZERO { c } else { F::NAN });
        }
        let lead = if v.abs() >= e.abs() { v } else { e };
        let k = lead.exponent().unwrap_or(0).div_euclid(2);
        let x = Self::new(v.scale2(-2 * k), e.scale2(-2 * k)).normalized();
        let (h, l) = (x.value, x.error);
        if h == F::ZERO {
            // TwoSum leaves no remainder beside a zero sum: the value is exactly 0.
            return Self::from_base(F::ZERO);
        }
        if h < F::ZERO {
            return Self::from_base(F::NAN);
        }
        let s = h.sqrt();
        let (p, pe) = two_prod(s, s);
        // h − p is exact: p = s² is within a factor of two of h (Sterbenz).
        let d = ((h - p) - pe) + l;
        let c = d / (s + s);
        let (r, re) = fast_two_sum(s, c);
        Self::finish(r.scale2(k), re.scale2(k))
    }

    /// Absolute value — **not from the thesis**. The sign is that of the exact sum (the error
    /// part may outweigh the value part after a cancellation); an exact zero gives `(+0, +0)`.
    pub fn abs(self) -> Self {
        let s = self.collapse();
        if s < F::ZERO {
            -self
        } else if s > F::ZERO {
            self
        } else if s == F::ZERO {
            // fl(v + e) is zero only when v + e is exactly zero (sums never underflow to 0).
            Self::new(F::ZERO, F::ZERO)
        } else {
            self
        }
    }

    /// Comparison of exact values. TwoSum makes the representation canonical (value = the
    /// rounded sum, error = the exact remainder) and rounding is monotone, so comparing the
    /// normalised pairs lexicographically orders the exact sums.
    fn compare(self, other: Self) -> Option<Ordering> {
        if self.is_nan() || other.is_nan() {
            return None;
        }
        // Past the NaN check a non-finite pair collapses to ±inf, and a finite pair is finite
        // however far its exact sum lies beyond the base range.
        match (self.is_finite(), other.is_finite()) {
            (true, true) => {}
            (false, false) => return self.collapse().partial_cmp(&other.collapse()),
            (true, false) => return F::ZERO.partial_cmp(&other.collapse()),
            (false, true) => return self.collapse().partial_cmp(&F::ZERO),
        }
        let (a, b) = (self.normalized(), other.normalized());
        let (sa, sb) = (a.value + a.error, b.value + b.error);
        if !sa.is_finite() || !sb.is_finite() {
            // An exact sum beyond the base range: compare exactly (rare, so the cost is fine).
            return Some(self.to_big()?.cmp(&other.to_big()?));
        }
        match a.value.partial_cmp(&b.value)? {
            Ordering::Equal => a.error.partial_cmp(&b.error),
            ord => Some(ord),
        }
    }
}

impl<F: Base> PartialEq for Comp<F> {
    fn eq(&self, other: &Self) -> bool {
        self.compare(*other) == Some(Ordering::Equal)
    }
}

impl<F: Base> PartialOrd for Comp<F> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.compare(*other)
    }
}

impl<F: Base> fmt::Display for Comp<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:e} + {:e})", self.value, self.error)
    }
}

impl<F: Base> Neg for Comp<F> {
    type Output = Self;
    /// Exact: both parts change sign.
    #[inline]
    fn neg(self) -> Self {
        Self::new(-self.value, -self.error)
    }
}

impl<F: Base> Add for Comp<F> {
    type Output = Self;
    /// Seed 000, Table 4, *Addition* (4 additions, 4 subtractions), evaluated left to right as C
    /// does, each operation rounded once:
    ///
    /// ```text
    /// z.value = x.value + y.value
    /// t       = z.value − x.value
    /// z.error = x.value − (z.value − t) + (y.value − t) + x.error + y.error
    /// ```
    ///
    /// The table prints `+ y2.value` as the last term; that would count `y` twice and is read as
    /// `+ y2.error` (the operation count, 4 + 4, is the same either way). The first three terms
    /// are Knuth's TwoSum remainder, exact; the two error parts are then added with one rounding
    /// each and the pair is not renormalised.
    #[inline]
    fn add(self, y: Self) -> Self {
        let x = self;
        let value = x.value + y.value;
        let t = value - x.value;
        let error = (((x.value - (value - t)) + (y.value - t)) + x.error) + y.error;
        Self::finish(value, error)
    }
}

impl<F: Base> Sub for Comp<F> {
    type Output = Self;
    /// Seed 000, Table 4, *Subtraction*. The table repeats the addition's text verbatim
    /// (pseudo code `z2 = x2 + y2`, same implementation); it is read as `z = x + (−y)`, which,
    /// negation being exact, rounds exactly as
    ///
    /// ```text
    /// z.value = x.value − y.value
    /// t       = z.value − x.value
    /// z.error = x.value − (z.value − t) − (y.value + t) + x.error − y.error
    /// ```
    #[inline]
    #[allow(clippy::suspicious_arithmetic_impl)]
    fn sub(self, y: Self) -> Self {
        self + (-y)
    }
}

impl<F: Base> Mul for Comp<F> {
    type Output = Self;
    /// Seed 000, Table 4, *Multiplication* (4 multiplications, 2 additions), left to right, no
    /// fused multiply-add:
    ///
    /// ```text
    /// z.value = x.value · y.value
    /// z.error = x.value · y.error + x.error · y.value + x.error · y.error
    /// ```
    ///
    /// The rounding error of `x.value · y.value` is never computed, so a product of two
    /// error-free operands is only as accurate as the base format (seed 000 §8.1 finds float2
    /// chains of products *less* accurate than float). A GPU compiler would contract the sums of
    /// products into FMAs by default; this is the uncontracted reading.
    #[inline]
    fn mul(self, y: Self) -> Self {
        let x = self;
        let value = x.value * y.value;
        let error = ((x.value * y.error) + (x.error * y.value)) + (x.error * y.error);
        Self::finish(value, error)
    }
}

impl<F: Base> Div for Comp<F> {
    type Output = Self;
    /// Seed 000, Table 4, *Division* (1 reciprocal, 4 multiplications, 1 addition,
    /// 1 subtraction):
    ///
    /// ```text
    /// t       = 1 / y.value
    /// s       = t · x.value
    /// diff    = x.value − (s · y.value)
    /// z.value = s + t · diff
    /// z.error = t · diff
    /// ```
    ///
    /// Neither operand's error part takes part, and `t · diff` is used twice (in `z.value`, where
    /// it may move `s` by an ulp, and again as `z.error`), both as the table has it. `s · y.value`
    /// is rounded before the subtraction, so `diff` is often 0 (for 1/3 and 1/10 in f32, say).
    /// The reciprocal is the correctly rounded `1 / y.value` (a GPU may use an approximate one).
    /// The result can be worse than the base format's own division: over 5000 comp32 quotients
    /// of error-free operands the tests see a worst relative error above 2u (u = 2^−p), where a
    /// correctly rounded f32 division stays within u.
    ///
    /// Before the formula, **not from the table**: if `x.value` or `y.value` is NaN or infinite,
    /// or `y.value` is ±0, the result is `(x.value / y.value, 0)` with IEEE semantics
    /// (x/±0 = ±inf, 0/0 = NaN, x/inf = ±0), since the formula would give NaN there. A
    /// `y.value` so small that `1 / y.value` overflows (subnormal for f32 and f64) still goes
    /// through the formula, which then yields ±inf or NaN: a weakness of the reciprocal-based
    /// scheme, kept.
    #[inline]
    fn div(self, y: Self) -> Self {
        let x = self;
        if !x.value.is_finite() || !y.value.is_finite() || y.value == F::ZERO {
            return Self::from_base(x.value / y.value);
        }
        let t = F::ONE / y.value;
        let s = t * x.value;
        let diff = x.value - (s * y.value);
        let value = s + t * diff;
        let error = t * diff;
        Self::finish(value, error)
    }
}

/// The integer `n` rounded to nearest-even at `p` significant bits (exact integer arithmetic).
fn round_int_to_bits(n: i128, p: u32) -> i128 {
    let mag = n.unsigned_abs();
    let len = 128 - mag.leading_zeros();
    if len <= p {
        return n;
    }
    let shift = len - p;
    let q = mag >> shift;
    let rem = mag & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let q = if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    };
    // At most 2^63 + 2^40 for an i64 input, so the cast back cannot wrap.
    let r = (q << shift) as i128;
    if n < 0 {
        -r
    } else {
        r
    }
}

/// The pair for an integer: value = n rounded to the base format, error = the remainder rounded
/// to the base format (the f64 conversion's rule, without going through a rounded f64).
fn comp_from_i64<F: Base>(n: i64) -> Comp<F> {
    let n = n as i128;
    let v = round_int_to_bits(n, F::DIGITS);
    let e = round_int_to_bits(n - v, F::DIGITS);
    // Each has at most p ≤ 53 significant bits and |v| ≤ 2^63, so both conversions are exact.
    Comp::new(F::from_f64(v as f64), F::from_f64(e as f64))
}

/// `comp32` / `comp64` from the base format's name (`f32` / `f64`).
fn comp_name<F: Base>(suffix: &str) -> String {
    format!("comp{}{suffix}", F::NAME.trim_start_matches('f'))
}

impl<F: Base> Real for Comp<F> {
    fn precision_name() -> String {
        comp_name::<F>("")
    }
    /// Nominal 2p (48 or 106): what the pair could hold, not what Table 4 delivers.
    fn significand_bits() -> u32 {
        2 * F::DIGITS
    }
    fn from_f64(x: f64) -> Self {
        Comp::from_f64(x)
    }
    fn from_i64(n: i64) -> Self {
        comp_from_i64(n)
    }
    fn to_f64(&self) -> f64 {
        Comp::to_f64(*self)
    }
    fn to_big(&self) -> Option<Big> {
        Comp::to_big(*self)
    }
    fn sqrt(&self) -> Self {
        Comp::sqrt(*self)
    }
    fn abs(&self) -> Self {
        Comp::abs(*self)
    }
    fn mul_add(&self, b: &Self, c: &Self) -> Self {
        *self * *b + *c
    }
    fn is_finite(&self) -> bool {
        Comp::is_finite(*self)
    }
    fn is_nan(&self) -> bool {
        Comp::is_nan(*self)
    }
}

/// Composite arithmetic with every operand re-split by TwoSum before each Table 4 operation.
///
/// Seed 000 §8.1 explains the poor accuracy of float2 product chains by the propagation of the
/// error part, and reports that normalising the intermediate result before each multiplication
/// improves accuracy. This type applies that idea to all four operators: `x ∘ y` is computed as
/// `norm(x) ∘ norm(y)` with [`Comp`]'s Table 4 formula, where `norm` is TwoSum
/// ([`Comp::normalized`]). Results are stored as the formula leaves them and normalised when
/// next used.
///
/// What differs from the thesis's experiment: seed 000 normalises by converting the pair to a
/// single float/double (`value + error`, rounded — which throws away the low part) and
/// converting that back to a composite number, which it relates to Dekker's splitting. The
/// TwoSum re-split here keeps `value + error` exactly, so it loses nothing, but it also cannot
/// recover what Table 4 already dropped: a product still misses the rounding error of
/// `value · value`, and a quotient still ignores both error parts. What it does change: an
/// operand whose information sits in its error part (e.g. `(0, e)` after a cancellation) is
/// moved into the value part, which the product's dominant term and the quotient do see; and
/// `x.error · y.error` can no longer be of the order of the leading term.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompNorm<F: Base> {
    /// The leading part, renormalised by TwoSum before each operation.
    pub value: F,
    /// The tracked rounding error; the number is `value + error` exactly.
    pub error: F,
}

/// `comp32n`: single composite precision with TwoSum renormalisation.
pub type CompNorm32 = CompNorm<f32>;
/// `comp64n`: double composite precision with TwoSum renormalisation.
pub type CompNorm64 = CompNorm<f64>;

impl<F: Base> From<Comp<F>> for CompNorm<F> {
    fn from(c: Comp<F>) -> Self {
        Self {
            value: c.value,
            error: c.error,
        }
    }
}

impl<F: Base> From<CompNorm<F>> for Comp<F> {
    fn from(c: CompNorm<F>) -> Self {
        Comp::new(c.value, c.error)
    }
}

impl<F: Base> CompNorm<F> {
    /// The pair as given, unnormalised: the number `value + error` (operations renormalise
    /// their operands themselves).
    pub const fn new(value: F, error: F) -> Self {
        Self { value, error }
    }
    /// The stored pair as a plain [`Comp`].
    pub fn comp(self) -> Comp<F> {
        self.into()
    }
    /// The operand as Table 4 sees it here: TwoSum re-split.
    #[inline(always)]
    fn norm(self) -> Comp<F> {
        self.comp().normalized()
    }
}

impl<F: Base> PartialEq for CompNorm<F> {
    fn eq(&self, other: &Self) -> bool {
        self.comp() == other.comp()
    }
}

impl<F: Base> PartialOrd for CompNorm<F> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.comp().partial_cmp(&other.comp())
    }
}

impl<F: Base> fmt::Display for CompNorm<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.comp(), f)
    }
}

impl<F: Base> Neg for CompNorm<F> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        (-self.comp()).into()
    }
}

macro_rules! impl_norm_op {
    ($tr:ident, $f:ident, $doc:literal) => {
        impl<F: Base> $tr for CompNorm<F> {
            type Output = Self;
            #[doc = $doc]
            #[inline]
            fn $f(self, y: Self) -> Self {
                $tr::$f(self.norm(), y.norm()).into()
            }
        }
    };
}

impl_norm_op!(
    Add,
    add,
    "Table 4 addition of the TwoSum-normalised operands."
);
impl_norm_op!(
    Sub,
    sub,
    "Table 4 subtraction of the TwoSum-normalised operands."
);
impl_norm_op!(
    Mul,
    mul,
    "Table 4 multiplication of the TwoSum-normalised operands."
);
impl_norm_op!(
    Div,
    div,
    "Table 4 division of the TwoSum-normalised operands."
);

impl<F: Base> Real for CompNorm<F> {
    fn precision_name() -> String {
        comp_name::<F>("n")
    }
    fn significand_bits() -> u32 {
        2 * F::DIGITS
    }
    fn from_f64(x: f64) -> Self {
        Comp::from_f64(x).into()
    }
    fn from_i64(n: i64) -> Self {
        comp_from_i64::<F>(n).into()
    }
    fn to_f64(&self) -> f64 {
        self.comp().to_f64()
    }
    fn to_big(&self) -> Option<Big> {
        self.comp().to_big()
    }
    fn sqrt(&self) -> Self {
        self.comp().sqrt().into()
    }
    fn abs(&self) -> Self {
        self.comp().abs().into()
    }
    fn mul_add(&self, b: &Self, c: &Self) -> Self {
        *self * *b + *c
    }
    fn is_finite(&self) -> bool {
        self.comp().is_finite()
    }
    fn is_nan(&self) -> bool {
        self.comp().is_nan()
    }
}

#[cfg(test)]
mod tests;
