//! Exact summation and exact dot products, correctly rounded once at the end.
//!
//! # Algorithm
//!
//! [`ExactSum`] is a two-level superaccumulator in the style of R. M. Neal, *Fast exact summation
//! using small and large superaccumulators*, arXiv:1505.05571 (2015):
//!
//! * The **large accumulator** has one 64-bit slot per value of the 12 sign + exponent bits of an
//!   f64 (4096 slots). Adding `x` adds its raw bit pattern to the slot its top 12 bits select and
//!   counts the addition. Within one slot every term shares sign and exponent, so the wrapped sum
//!   of raw patterns, minus `count · (slot << 52)`, is exactly the sum of the 52-bit fractions as
//!   long as at most 2^12 terms went in (2^12 · (2^52 − 1) < 2^64); the implicit leading bits
//!   add up to `count · 2^52`. A slot is flushed into the small accumulator before a 4097th term
//!   would enter it. Infinities and NaNs land in the slots of exponent 0x7ff like any other
//!   value and are told apart at flush time (a zero fraction sum means only infinities), so the
//!   hot loop is one read-modify-write of the slot and one of its counter per term plus a
//!   well-predicted test: no floating-point work, no data-dependent shifts, no special cases.
//! * The **small accumulator** is a fixed-point number of 32-bit digits, each kept in an `i64`
//!   (so 2^30 additions of signed 32-bit chunks fit before carries must be propagated), whose
//!   lowest bit is worth 2^−1074 and whose range reaches past 2^1024 by more than 64 bits: the
//!   exact sum of up to 2^64 finite f64s always fits.
//!
//! Nothing is ever rounded before [`ExactSum::round`], which rounds the exact value once, to
//! nearest with ties to even, subnormals and overflow to ±∞ included. [`ExactSum::round_f32`]
//! rounds the same exact value straight to f32 (rounding to f64 first would round twice).
//!
//! [`ExactDot`] keeps the same two levels over a wider fixed-point range (lowest bit 2^−2148,
//! the quantum of a product of two subnormals, up to past 2^2048 + 64 bits). Each product `a·b`
//! is split by an FMA into `p + e = a·b` (TwoProd), which is exact whenever `p` is finite and
//! `|p| ≥ 2^−968`; then `p` and `e` go through the large accumulator like two summands. Products
//! outside that range (those that overflow, or whose error term would underflow) take a slower
//! path that adds the 106-bit integer product of the two significands at its exact bit position,
//! so the dot product is exact over the whole f64 range.
//!
//! # Special values
//!
//! The same rules hold for sums and dot products (for a dot product the terms are the products
//! `a[i]·b[i]`, whose special values follow IEEE multiplication: `0·∞` is NaN):
//!
//! * a NaN term makes the result NaN;
//! * +∞ and −∞ both present make it NaN; otherwise an infinite term makes it that infinity;
//! * otherwise the exact sum of the finite terms is rounded. A finite exact value beyond the
//!   range of the format rounds to ±∞, but only the result is infinite: the exact value is
//!   kept, so `f64::MAX + f64::MAX − f64::MAX` returns `f64::MAX`;
//! * a non-zero exact value too small for the format rounds to a zero of its own sign (as IEEE
//!   rounding does); an exact zero gives +0.0, except when there was at least one term and
//!   every term was −0.0, which gives −0.0 (as IEEE addition does). The empty sum is +0.0.
//!
//! [`ExactSum::round_f32`] and the `f32` functions apply the same rules with the f32 range.
//! No input panics; the only limit is the documented 2^64 terms per accumulator (far beyond
//! anything that can be fed to it).

use core::fmt;

use dashu_float::{Context, Repr};
use dashu_int::IBig;

use crate::big::Big;

// ---------------------------------------------------------------------------------------------
// Target formats
// ---------------------------------------------------------------------------------------------

/// What rounding needs to know about an IEEE binary format.
#[derive(Clone, Copy)]
struct Format {
    /// Significand bits, the implicit one included.
    precision: u32,
    /// Exponent of the smallest normal number.
    min_exp: i32,
    /// Exponent of the largest finite number.
    max_exp: i32,
}

const F64: Format = Format {
    precision: 53,
    min_exp: -1022,
    max_exp: 1023,
};
const F32: Format = Format {
    precision: 24,
    min_exp: -126,
    max_exp: 127,
};

impl Format {
    /// Exponent of the quantum of subnormals (−1074, −149).
    const fn min_quantum(self) -> i32 {
        self.min_exp - (self.precision as i32 - 1)
    }

    /// Bit pattern of +∞ (the sign bit excluded).
    const fn inf_bits(self) -> u64 {
        ((self.max_exp - self.min_exp + 2) as u64) << (self.precision - 1)
    }
}

/// The rounded value of an accumulator, before it is packed into a concrete float type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rounded {
    Nan,
    /// ±∞ or a finite non-zero value: sign and magnitude bits (the inf pattern on overflow).
    Value {
        negative: bool,
        bits: u64,
    },
    /// An exact zero, with its sign.
    Zero {
        negative: bool,
    },
}

impl Rounded {
    fn to_f64(self) -> f64 {
        match self {
            Rounded::Nan => f64::NAN,
            Rounded::Value { negative, bits } => f64::from_bits(bits | (u64::from(negative) << 63)),
            Rounded::Zero { negative } => {
                if negative {
                    -0.0
                } else {
                    0.0
                }
            }
        }
    }

    fn to_f32(self) -> f32 {
        match self {
            Rounded::Nan => f32::NAN,
            // `bits` is at most the f32 inf pattern, so the narrowing is lossless.
            Rounded::Value { negative, bits } => {
                f32::from_bits(bits as u32 | (u32::from(negative) << 31))
            }
            Rounded::Zero { negative } => {
                if negative {
                    -0.0
                } else {
                    0.0
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small accumulator: fixed point with 32-bit digits in i64
// ---------------------------------------------------------------------------------------------

const DIGIT_BITS: u32 = 32;
const DIGIT_MASK: i64 = (1 << DIGIT_BITS) - 1;

/// Carries are propagated after this many [`Fixed::add_shifted`] calls. After a propagation
/// every digit but the top one lies in [0, 2^32); each call moves a digit by less than 2^32, so
/// 2^30 calls keep every digit below 2^62 + 2^32 in magnitude, safely inside an i64.
const NORMALIZE_EVERY: u32 = 1 << 30;

/// A fixed-point number Σ digits[i] · 2^(LSB + 32·i).
///
/// Digits are signed and may run outside [0, 2^32) between carry propagations; the top digit
/// carries the sign. `N` and `LSB` are chosen by the user type so that every bit position it
/// adds at, plus two digits, lies inside the array, and so that the value of 2^64 terms cannot
/// reach the top digit's sign bit.
#[derive(Clone, Debug)]
struct Fixed<const N: usize, const LSB: i32> {
    digits: [i64; N],
    /// `add_shifted` calls since carries were last propagated.
    pending: u32,
}

impl<const N: usize, const LSB: i32> Fixed<N, LSB> {
    const ZERO: Self = Self {
        digits: [0; N],
        pending: 0,
    };

    /// Adds (or subtracts) `mag · 2^(LSB + pos)`.
    ///
    /// `pos + 96` must not exceed `32·N` (callers guarantee it by construction; see the
    /// position bounds next to [`ExactSum`] and [`ExactDot`]).
    #[inline]
    fn add_shifted(&mut self, mag: u64, pos: u32, negative: bool) {
        let d = (pos / DIGIT_BITS) as usize;
        let v = u128::from(mag) << (pos % DIGIT_BITS);
        let c0 = (v as i64) & DIGIT_MASK;
        let c1 = ((v >> 32) as i64) & DIGIT_MASK;
        let c2 = (v >> 64) as i64; // below 2^31: mag < 2^64 and the shift is below 32
        let w = &mut self.digits[d..d + 3];
        if negative {
            w[0] -= c0;
            w[1] -= c1;
            w[2] -= c2;
        } else {
            w[0] += c0;
            w[1] += c1;
            w[2] += c2;
        }
        self.pending += 1;
        if self.pending >= NORMALIZE_EVERY {
            self.normalize();
        }
    }

    /// Propagates carries: afterwards every digit but the top one is in [0, 2^32) and the top
    /// digit alone carries the sign. The value is unchanged.
    fn normalize(&mut self) {
        let mut carry = 0i64;
        let (top, rest) = self.digits.split_last_mut().expect("N > 0");
        for d in rest {
            let v = *d + carry;
            *d = v & DIGIT_MASK;
            carry = v >> DIGIT_BITS; // arithmetic shift: floor division, so negatives borrow
        }
        *top += carry;
        self.pending = 0;
    }

    /// Adds another accumulator's value exactly.
    fn merge(&mut self, other: &Self) {
        let mut o = other.clone();
        o.normalize();
        self.normalize();
        for (d, s) in self.digits.iter_mut().zip(o.digits) {
            *d += s;
        }
        // Each digit moved by less than 2^32 (the top one by a small amount): one more call's worth.
        self.pending = 1;
    }

    /// Sign, and the magnitude with every digit but the top in [0, 2^32) and the top ≥ 0.
    fn sign_magnitude(&self) -> (bool, [i64; N]) {
        let mut m = self.clone();
        m.normalize();
        let negative = m.digits[N - 1] < 0;
        if negative {
            for d in &mut m.digits {
                *d = -*d;
            }
            m.normalize();
        }
        (negative, m.digits)
    }

    /// The value, rounded to nearest (ties to even) in `fmt`, with subnormals and overflow to
    /// ±∞. `None` for an exact zero.
    fn round(&self, fmt: Format) -> Option<(bool, u64)> {
        // Every quantum of the target must be a whole number of our units.
        debug_assert!(LSB <= fmt.min_quantum());
        let (negative, mag) = self.sign_magnitude();
        let top = mag.iter().rposition(|&d| d != 0)?;
        let lead = DIGIT_BITS as i64 * top as i64 + 63 - i64::from(mag[top].leading_zeros());
        let lead_exp = lead + i64::from(LSB);
        if lead_exp > i64::from(fmt.max_exp) {
            return Some((negative, fmt.inf_bits()));
        }
        let p = i64::from(fmt.precision);
        let qmin = i64::from(fmt.min_quantum());
        // The quantum of the result: p significant bits, but never below the subnormal quantum.
        let q = (lead_exp - (p - 1)).max(qmin);
        let qpos = (q - i64::from(LSB)) as usize; // ≥ 0 by the assertion above
        let m = if qpos == 0 {
            window(&mag, 0)
        } else {
            // One guard bit below the quantum, and a sticky bit for everything further down.
            let w = window(&mag, qpos - 1);
            let (m, guard) = (w >> 1, w & 1 == 1);
            if guard && (m & 1 == 1 || any_below(&mag, qpos - 1)) {
                m + 1
            } else {
                m
            }
        };
        // m ≤ 2^p. Adding m to the shifted exponent field lets a carry out of the significand
        // (m = 2^p) or out of the subnormal range (m = 2^(p-1) at q = qmin) step the exponent,
        // and an overflow land on or beyond the inf pattern.
        let bits = (((q - qmin) as u64) << (p - 1)) + m;
        Some((negative, bits.min(fmt.inf_bits())))
    }

    /// The exact value as a big float (trailing zero bits are normalised away by `Repr::new`).
    fn to_big(&self) -> Big {
        let mut m = self.clone();
        m.normalize();
        let mut acc = IBig::ZERO;
        for &d in m.digits.iter().rev() {
            acc = (acc << DIGIT_BITS as usize) + IBig::from(d);
        }
        Big::from_repr(Repr::new(acc, LSB as isize), Context::new(0))
    }
}

/// Bits `lo .. lo + 64` of a magnitude (digits below the top in [0, 2^32), top ≥ 0).
fn window<const N: usize>(mag: &[i64; N], lo: usize) -> u64 {
    let d = lo / DIGIT_BITS as usize;
    let mut acc: u128 = 0;
    for k in 0..3 {
        if let Some(&x) = mag.get(d + k) {
            acc = acc.wrapping_add((x as u64 as u128) << (DIGIT_BITS as usize * k));
        }
    }
    (acc >> (lo % DIGIT_BITS as usize)) as u64
}

/// Whether any bit below position `lo` of a magnitude is set.
fn any_below<const N: usize>(mag: &[i64; N], lo: usize) -> bool {
    let d = lo / DIGIT_BITS as usize;
    let s = lo % DIGIT_BITS as usize;
    mag[..d].iter().any(|&x| x != 0) || mag.get(d).is_some_and(|&x| x & ((1i64 << s) - 1) != 0)
}

// ---------------------------------------------------------------------------------------------
// Large accumulator: one slot per sign + exponent
// ---------------------------------------------------------------------------------------------

const SLOTS: usize = 1 << 12;
/// Terms a slot takes before it must be flushed: 2^12 fractions below 2^52 sum below 2^64.
const SLOT_CAPACITY: u16 = 1 << 12;
const FRAC_BITS: u32 = 52;
const EXP_FIELD: usize = 0x7ff;
const SIGN_SLOT: usize = 0x800;

/// What the large accumulator knows besides the finite value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Flags {
    nan: bool,
    pos_inf: bool,
    neg_inf: bool,
    /// Some term other than −0.0 was seen (decides the sign of an exact zero).
    not_all_neg_zero: bool,
}

impl Flags {
    fn merge(&mut self, o: Flags) {
        self.nan |= o.nan;
        self.pos_inf |= o.pos_inf;
        self.neg_inf |= o.neg_inf;
        self.not_all_neg_zero |= o.not_all_neg_zero;
    }
}

#[derive(Clone)]
struct Large {
    /// Wrapping sums of the raw bit patterns of the terms of each slot.
    sums: [u64; SLOTS],
    /// Terms in each slot since it was last flushed (≤ SLOT_CAPACITY).
    counts: [u16; SLOTS],
}

impl Large {
    fn new_boxed() -> Box<Self> {
        Box::new(Large {
            sums: [0; SLOTS],
            counts: [0; SLOTS],
        })
    }
}

/// Moves the content of one slot (`n` terms whose raw patterns sum to `raw` modulo 2^64) into a
/// fixed-point accumulator whose units are 2^(−1074 − offset).
#[inline]
fn flush_slot<const N: usize, const LSB: i32>(
    ix: usize,
    n: u16,
    raw: u64,
    fixed: &mut Fixed<N, LSB>,
    flags: &mut Flags,
) {
    if n == 0 {
        return;
    }
    let offset = (-1074 - LSB) as u32;
    // Every term of the slot has the same top 12 bits: remove them to get the fraction sum.
    let frac = raw.wrapping_sub(u64::from(n).wrapping_mul((ix as u64) << FRAC_BITS));
    let negative = ix & SIGN_SLOT != 0;
    let biased = ix & EXP_FIELD;
    if biased == EXP_FIELD {
        // Fractions are non-negative and cannot wrap, so their sum is zero iff all were ∞.
        if frac != 0 {
            flags.nan = true;
        } else if negative {
            flags.neg_inf = true;
        } else {
            flags.pos_inf = true;
        }
        flags.not_all_neg_zero = true;
    } else if biased == 0 {
        // Zeros and subnormals: fraction units of 2^−1074, no implicit bit.
        if frac != 0 || !negative {
            flags.not_all_neg_zero = true;
        }
        if frac != 0 {
            fixed.add_shifted(frac, offset, negative);
        }
    } else {
        // Fraction units of 2^(biased − 1075); each term also carries an implicit 2^52 units.
        flags.not_all_neg_zero = true;
        let pos = offset + biased as u32 - 1;
        fixed.add_shifted(frac, pos, negative);
        fixed.add_shifted(u64::from(n), pos + FRAC_BITS, negative);
    }
}

// ---------------------------------------------------------------------------------------------
// The shared two-level accumulator
// ---------------------------------------------------------------------------------------------

/// Large + small accumulator; `ExactSum` and `ExactDot` are thin wrappers with their own ranges.
#[derive(Clone)]
struct Acc<const N: usize, const LSB: i32> {
    large: Box<Large>,
    fixed: Fixed<N, LSB>,
    /// Flags of everything already flushed out of `large`.
    flags: Flags,
    len: u64,
}

impl<const N: usize, const LSB: i32> Acc<N, LSB> {
    fn new() -> Self {
        Self {
            large: Large::new_boxed(),
            fixed: Fixed::ZERO,
            flags: Flags::default(),
            len: 0,
        }
    }

    /// Adds one value to the large accumulator (does not count it in `len`).
    #[inline(always)]
    fn push(&mut self, x: f64) {
        let b = x.to_bits();
        let ix = (b >> FRAC_BITS) as usize; // < 4096, so the indexing below is unchecked
        if self.large.counts[ix] == SLOT_CAPACITY {
            self.flush_full(ix);
        }
        self.large.counts[ix] += 1;
        self.large.sums[ix] = self.large.sums[ix].wrapping_add(b);
    }

    #[cold]
    #[inline(never)]
    fn flush_full(&mut self, ix: usize) {
        flush_slot(
            ix,
            self.large.counts[ix],
            self.large.sums[ix],
            &mut self.fixed,
            &mut self.flags,
        );
        self.large.counts[ix] = 0;
        self.large.sums[ix] = 0;
    }

    /// The small accumulator and flags with every pending slot flushed in, leaving `self` as is.
    fn settled(&self) -> (Fixed<N, LSB>, Flags) {
        let mut fixed = self.fixed.clone();
        let mut flags = self.flags;
        for (ix, (&n, &raw)) in self.large.counts.iter().zip(&self.large.sums).enumerate() {
            flush_slot(ix, n, raw, &mut fixed, &mut flags);
        }
        (fixed, flags)
    }

    fn merge(&mut self, other: &Self) {
        for (ix, (&n, &raw)) in other.large.counts.iter().zip(&other.large.sums).enumerate() {
            flush_slot(ix, n, raw, &mut self.fixed, &mut self.flags);
        }
        self.fixed.merge(&other.fixed);
        self.flags.merge(other.flags);
        self.len += other.len;
    }

    fn round(&self, fmt: Format) -> Rounded {
        let (fixed, flags) = self.settled();
        if flags.nan || (flags.pos_inf && flags.neg_inf) {
            return Rounded::Nan;
        }
        if flags.pos_inf || flags.neg_inf {
            return Rounded::Value {
                negative: flags.neg_inf,
                bits: fmt.inf_bits(),
            };
        }
        match fixed.round(fmt) {
            Some((negative, bits)) => Rounded::Value { negative, bits },
            None => Rounded::Zero {
                negative: self.len > 0 && !flags.not_all_neg_zero,
            },
        }
    }

    fn to_big(&self) -> Option<Big> {
        let (fixed, flags) = self.settled();
        if flags.nan || flags.pos_inf || flags.neg_inf {
            return None;
        }
        Some(fixed.to_big())
    }
}

// ---------------------------------------------------------------------------------------------
// ExactSum
// ---------------------------------------------------------------------------------------------

/// Digits of the sum's small accumulator: 68 · 32 = 2176 bits from 2^−1074. A term's slot adds
/// at bit positions up to 2045 + 52 (the implicit bits of the top exponent), three digits wide,
/// so digit 67 is the highest touched; the exact sum of 2^64 terms is below 2^1088, i.e. bit
/// 2162, leaving the sign bit of the top digit free.
const SUM_DIGITS: usize = 68;
const SUM_LSB: i32 = -1074;

/// An exact accumulator of f64 values (a Neal-style large + small superaccumulator, see the
/// [module documentation](self)).
///
/// The exact sum of everything added is kept; [`round`](Self::round) and
/// [`round_f32`](Self::round_f32) round it once, to nearest with ties to even, and leave the
/// state untouched, so more values can be added afterwards. The result does not depend on the
/// order of the terms, nor on how they were split between accumulators later [`merge`](Self::merge)d.
///
/// Special values follow the [module rules](self#special-values): NaN wins, +∞ with −∞ is NaN,
/// an exact zero is +0.0 unless every one of at least one term was −0.0.
///
/// ```
/// use mantissa_num::exact::ExactSum;
/// let mut s = ExactSum::new();
/// s.add_slice(&[1e100, 1.0, -1e100]);
/// assert_eq!(s.round(), 1.0);
/// s.add_slice(&[f64::MAX, f64::MAX, -f64::MAX]);
/// assert_eq!(s.round(), f64::MAX); // the partial sum overflowed f64, the exact one does not
/// ```
///
/// An `ExactSum` takes about 41 KiB (on the heap), so create one per thread or per chunk, not
/// per element; [`round`](Self::round) scans all 4096 large slots, so it is meant to be called
/// once per sum rather than after every addition.
#[derive(Clone)]
pub struct ExactSum {
    acc: Acc<SUM_DIGITS, SUM_LSB>,
}

impl Default for ExactSum {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ExactSum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExactSum")
            .field("len", &self.len())
            .field("round", &self.round())
            .finish()
    }
}

impl ExactSum {
    /// An empty accumulator (its sum is +0.0).
    pub fn new() -> Self {
        Self { acc: Acc::new() }
    }

    /// Adds one term.
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.acc.len += 1;
        self.acc.push(x);
    }

    /// Adds every element of `xs`: the fast path, a few integer instructions per element.
    pub fn add_slice(&mut self, xs: &[f64]) {
        self.acc.len += xs.len() as u64;
        // Two terms per iteration: fewer loop-carried branches, same order of effects.
        let mut pairs = xs.chunks_exact(2);
        for p in &mut pairs {
            self.acc.push(p[0]);
            self.acc.push(p[1]);
        }
        for &x in pairs.remainder() {
            self.acc.push(x);
        }
    }

    /// Adds the exact sum held by `other` (which is left unchanged).
    pub fn merge(&mut self, other: &ExactSum) {
        self.acc.merge(&other.acc);
    }

    /// The exact sum rounded to the nearest f64 (ties to even), following the special-value
    /// rules of the [module documentation](self#special-values).
    pub fn round(&self) -> f64 {
        self.acc.round(F64).to_f64()
    }

    /// The exact sum rounded once, directly, to the nearest f32 (ties to even), with the f32
    /// range for subnormals and overflow.
    pub fn round_f32(&self) -> f32 {
        self.acc.round(F32).to_f32()
    }

    /// The exact sum; `None` if a NaN or an infinity was added.
    pub fn to_big(&self) -> Option<Big> {
        self.acc.to_big()
    }

    /// The number of terms added (merged accumulators included).
    pub fn len(&self) -> u64 {
        self.acc.len
    }

    /// Whether no term was added.
    pub fn is_empty(&self) -> bool {
        self.acc.len == 0
    }
}

impl Extend<f64> for ExactSum {
    fn extend<I: IntoIterator<Item = f64>>(&mut self, iter: I) {
        for x in iter {
            self.add(x);
        }
    }
}

impl FromIterator<f64> for ExactSum {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Self {
        let mut s = Self::new();
        s.extend(iter);
        s
    }
}

/// The correctly rounded (to nearest, ties to even) sum of `xs`; see [`ExactSum`].
pub fn exact_sum(xs: &[f64]) -> f64 {
    let mut s = ExactSum::new();
    s.add_slice(xs);
    s.round()
}

/// The correctly rounded f32 sum of f32 terms: the exact sum rounded once to f32.
pub fn exact_sum_f32(xs: &[f32]) -> f32 {
    let mut s = ExactSum::new();
    // f32 → f64 is exact; converting through a small buffer keeps the f64 fast path.
    let mut buf = [0.0f64; 256];
    for chunk in xs.chunks(buf.len()) {
        for (b, &x) in buf.iter_mut().zip(chunk) {
            *b = f64::from(x);
        }
        s.add_slice(&buf[..chunk.len()]);
    }
    s.round_f32()
}

// ---------------------------------------------------------------------------------------------
// ExactDot
// ---------------------------------------------------------------------------------------------

/// Digits of the dot product's small accumulator: 134 · 32 = 4288 bits from 2^−2148 (the
/// quantum of a product of two subnormals). The exact product path adds a 106-bit product at
/// positions up to 2·971 + 2148 (+64 for its high half), three digits wide, so digit 131 is the
/// highest touched; 2^64 products below 2^2048 sum below bit 4260, leaving the sign bit free.
const DOT_DIGITS: usize = 134;
const DOT_LSB: i32 = -2148;

/// Smallest biased exponent of a TwoProd result `p` whose error term is exact: |p| ≥ 2^−968
/// implies |a·b| > 2^−969, so the exponents of a and b sum to at least −970 and the quantum of
/// a·b, hence of the error term, is at least 2^−1074.
const SAFE_PROD_MIN_BIASED: u64 = 55;

/// The exact sign, significand and quantum exponent of a finite non-zero f64: x = ±m · 2^q.
#[inline]
fn decompose(x: f64) -> (bool, u64, i32) {
    let b = x.to_bits();
    let biased = ((b >> FRAC_BITS) & EXP_FIELD as u64) as i32;
    let frac = b & ((1 << FRAC_BITS) - 1);
    let (m, q) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << FRAC_BITS), biased - 1075)
    };
    (x.is_sign_negative(), m, q)
}

/// An exact accumulator of products of f64 pairs: Σ `a[i]·b[i]` with one rounding at the end.
///
/// Products are exact over the whole f64 range: TwoProd (`p = a·b`, `e = fma(a, b, −p)`) where
/// it is exact, the integer product of the significands at its bit position where it is not
/// (overflowing products, error terms below 2^−1074). See the [module documentation](self) for
/// the algorithm and the special-value rules, which apply to the products as terms: `0·∞` or a
/// NaN gives NaN, `∞·x` an infinity of the product's sign.
///
/// ```
/// use mantissa_num::exact::ExactDot;
/// let mut d = ExactDot::new();
/// d.add_slices(&[1e300, 1e-300, -1e300], &[1e10, 1.0, 1e10]).unwrap();
/// assert_eq!(d.round(), 1e-300); // the products 1e310 overflow f64 and cancel exactly
/// ```
#[derive(Clone)]
pub struct ExactDot {
    acc: Acc<DOT_DIGITS, DOT_LSB>,
}

/// [`ExactDot::add_slices`] and [`exact_dot`] need slices of equal length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("dot product of slices of different lengths: {left} and {right}")]
pub struct LengthMismatch {
    /// Length of the first slice.
    pub left: usize,
    /// Length of the second slice.
    pub right: usize,
}

impl Default for ExactDot {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ExactDot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExactDot")
            .field("len", &self.len())
            .field("round", &self.round())
            .finish()
    }
}

impl ExactDot {
    /// An empty accumulator (its value is +0.0).
    pub fn new() -> Self {
        Self { acc: Acc::new() }
    }

    #[inline(always)]
    fn push_product(&mut self, a: f64, b: f64) {
        let p = a * b;
        let e = a.mul_add(b, -p);
        let biased = (p.to_bits() >> FRAC_BITS) & EXP_FIELD as u64;
        // One unsigned comparison for SAFE_PROD_MIN_BIASED ≤ biased < 0x7ff (finite).
        if biased.wrapping_sub(SAFE_PROD_MIN_BIASED) < EXP_FIELD as u64 - SAFE_PROD_MIN_BIASED {
            self.acc.push(p);
            self.acc.push(e);
        } else {
            self.push_product_slow(a, b);
        }
    }

    /// Products TwoProd cannot split exactly, zeros and special values.
    #[cold]
    #[inline(never)]
    fn push_product_slow(&mut self, a: f64, b: f64) {
        if !a.is_finite() || !b.is_finite() || a == 0.0 || b == 0.0 {
            // IEEE multiplication gets these right and exactly: NaN, ±∞, 0·∞ = NaN, signed zeros.
            self.acc.push(a * b);
            return;
        }
        let (na, ma, qa) = decompose(a);
        let (nb, mb, qb) = decompose(b);
        let prod = u128::from(ma) * u128::from(mb); // < 2^106
        let pos = (qa + qb - DOT_LSB) as u32; // qa, qb ≥ −1074
        let fixed = &mut self.acc.fixed;
        fixed.add_shifted(prod as u64, pos, na != nb);
        fixed.add_shifted((prod >> 64) as u64, pos + 64, na != nb);
        self.acc.flags.not_all_neg_zero = true;
    }

    /// Adds the product `a·b`, exactly.
    #[inline]
    pub fn add_product(&mut self, a: f64, b: f64) {
        self.acc.len += 1;
        self.push_product(a, b);
    }

    /// Adds Σ `a[i]·b[i]`, exactly. On a length mismatch nothing is added.
    pub fn add_slices(&mut self, a: &[f64], b: &[f64]) -> Result<(), LengthMismatch> {
        if a.len() != b.len() {
            return Err(LengthMismatch {
                left: a.len(),
                right: b.len(),
            });
        }
        self.acc.len += a.len() as u64;
        for (&x, &y) in a.iter().zip(b) {
            self.push_product(x, y);
        }
        Ok(())
    }

    /// Adds the exact value held by `other` (which is left unchanged).
    pub fn merge(&mut self, other: &ExactDot) {
        self.acc.merge(&other.acc);
    }

    /// The exact dot product rounded to the nearest f64 (ties to even).
    pub fn round(&self) -> f64 {
        self.acc.round(F64).to_f64()
    }

    /// The exact dot product rounded once, directly, to the nearest f32 (ties to even).
    pub fn round_f32(&self) -> f32 {
        self.acc.round(F32).to_f32()
    }

    /// The exact dot product; `None` if a product was NaN or infinite.
    pub fn to_big(&self) -> Option<Big> {
        self.acc.to_big()
    }

    /// The number of products added (merged accumulators included).
    pub fn len(&self) -> u64 {
        self.acc.len
    }

    /// Whether no product was added.
    pub fn is_empty(&self) -> bool {
        self.acc.len == 0
    }
}

/// The correctly rounded (to nearest, ties to even) dot product Σ `a[i]·b[i]`; see [`ExactDot`].
pub fn exact_dot(a: &[f64], b: &[f64]) -> Result<f64, LengthMismatch> {
    let mut d = ExactDot::new();
    d.add_slices(a, b)?;
    Ok(d.round())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rounds_ties_guard_and_sticky() {
        let mut f = Fixed::<SUM_DIGITS, SUM_LSB>::ZERO;
        // 1 = 2^52 units of 2^−1074 shifted by 1074: bit position 1074.
        f.add_shifted(1, 1074, false);
        f.add_shifted(1, 1074 - 53, false); // + 2^−53: a tie, even is 1
        assert_eq!(f.round(F64), Some((false, 1f64.to_bits())));
        f.add_shifted(1, 0, false); // + 2^−1074: just above the tie
        assert_eq!(f.round(F64), Some((false, (1.0 + f64::EPSILON).to_bits())));
        f.add_shifted(2, 0, true); // − 2·2^−1074: just below the tie
        assert_eq!(f.round(F64), Some((false, 1f64.to_bits())));
    }

    #[test]
    fn fixed_handles_negative_and_borrowing_values() {
        let mut f = Fixed::<SUM_DIGITS, SUM_LSB>::ZERO;
        f.add_shifted(u64::MAX, 31, true);
        f.add_shifted(u64::MAX, 31, false);
        assert_eq!(f.round(F64), None);
        f.add_shifted(3, 0, true);
        assert_eq!(f.round(F64), Some((true, 3)));
        assert_eq!(f.to_big(), crate::big::exact(-f64::from_bits(3)));
    }

    #[test]
    fn digits_survive_the_worst_case_between_carry_propagations() {
        // The largest state add_shifted can reach: normalised digits at their maximum, then
        // NORMALIZE_EVERY − 1 calls that each move a digit by the most a call can (2^32 − 1:
        // u64::MAX at shift 0 does so for digits 0 and 1), all of one sign. The state is built
        // directly, 2^30 real calls would take seconds. One more call must then propagate the
        // carries without overflowing (the test profile checks overflow).
        let chunks = [DIGIT_MASK, DIGIT_MASK, 0];
        let k = i64::from(NORMALIZE_EVERY - 1);
        for negative in [false, true] {
            let sign = if negative { -1 } else { 1 };
            let mut f = Fixed::<4, SUM_LSB>::ZERO;
            f.digits = [DIGIT_MASK, DIGIT_MASK, DIGIT_MASK, 0];
            let start = f.to_big();
            for (d, c) in f.digits.iter_mut().zip(chunks) {
                *d += sign * k * c;
            }
            f.pending = NORMALIZE_EVERY - 1;
            f.add_shifted(u64::MAX, 0, negative);
            assert_eq!(f.pending, 0, "the call propagated the carries");
            let added = IBig::from(u64::MAX) * IBig::from(k + 1);
            let added = Big::from_repr(
                Repr::new(if negative { -added } else { added }, SUM_LSB as isize),
                Context::new(0),
            );
            assert_eq!(f.to_big(), start + added);
            assert!(f.digits[..3].iter().all(|&d| (0..=DIGIT_MASK).contains(&d)));
        }
    }

    #[test]
    fn position_bounds_hold_at_the_extremes() {
        // The largest positions each type adds at must leave room for three digits.
        let sum_max = (EXP_FIELD - 1) as u32 - 1 + FRAC_BITS;
        assert!(sum_max / DIGIT_BITS + 3 <= SUM_DIGITS as u32);
        let dot_slot_max = (-1074 - DOT_LSB) as u32 + sum_max;
        let dot_prod_max = (2 * 971 - DOT_LSB) as u32 + 64;
        assert!(dot_slot_max.max(dot_prod_max) / DIGIT_BITS + 3 <= DOT_DIGITS as u32);
        // 2^64 terms of magnitude below 2^1024 (2^2048 for products) stay below the sign bit.
        assert!(1024 + 64 - SUM_LSB < SUM_DIGITS as i32 * 32 - 1);
        assert!(2048 + 64 - DOT_LSB < DOT_DIGITS as i32 * 32 - 1);
    }
}
