//! Seeded inputs for the bit-identity tests: `N` elements per domain, in eight magnitude classes of
//! `N / 8` each (see [`CLASSES`]). An element is a pair `a`, a pair `b` (a single-word argument is
//! `b`'s high word, an error-free transform takes `a[0]` and `b[0]`) and an integer `k` (the
//! exponent of `scale2`).
//!
//! Double-word pairs are normalised (`hi = RN(hi + lo)`, by TwoSum) as the double-word operations
//! require; composite pairs are not always (a composite's error part may exceed its value).

use crate::cpu::Word;
use mantissa_gpu::twin::{Shape, TwinOp, TwinType};
use mantissa_num::base::Base;
use mantissa_num::eft::two_sum;

/// Elements per domain: 2^20 = 1 048 576.
pub const N: usize = 1 << 20;
/// The seed of every input set (the word size and the domain are mixed into it).
pub const SEED: u64 = 0x6d61_6e74_6973_7361; // "mantissa"

/// The magnitude classes, in the order they fill the input vectors (class `c` holds elements
/// `c N/8 .. (c+1) N/8`). p: precision, emin/emax: exponent range of the base format.
pub const CLASSES: [&str; 8] = [
    // Exponents within ±30, the two operands within 3 binades.
    "similar",
    // b's exponent 1 to 3p below a's (or the other way round).
    "far-apart",
    // b ≈ −a: same high word with another low word, high words one ulp apart, b = −a exactly.
    "cancellation",
    // Exponents uniform over the whole range (products and quotients over- and underflow).
    "wide",
    // Exponents near emax (sums overflow, his near MAX), or near emax/2 (products overflow).
    "near-overflow",
    // Exponents near emin, subnormal high and low words, or near emin/2 (products underflow).
    "near-underflow",
    // Divisors with exponents below emin/2 or above emax/2: the rescaled division.
    "extreme-divisor",
    // ±0, ±inf, NaN, ±MAX, ±MIN_POSITIVE, subnormals, 1 − u and other edges, all pairs of them,
    // each against random values, and random bit patterns.
    "special",
];

/// Which inputs an operation reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Domain {
    /// Normalised pairs of any sign.
    Pairs,
    /// As [`Domain::Pairs`], with `a`'s high word made positive in 7 of 8 elements (square roots).
    Positive,
    /// Composite pairs: [`Domain::Pairs`] with a quarter of the pairs swapped (error above value)
    /// and an eighth given an unrelated error part.
    Comp,
    /// [`Domain::Comp`] with `a`'s value made positive in 7 of 8 elements.
    CompPositive,
}

impl Domain {
    pub fn for_op(op: &TwinOp) -> Domain {
        let comp = matches!(
            op.ty,
            TwinType::Comp32 | TwinType::Comp64 | TwinType::Comp32n | TwinType::Comp64n
        );
        match (comp, op.name == "sqrt") {
            (false, false) => Domain::Pairs,
            (false, true) => Domain::Positive,
            (true, false) => Domain::Comp,
            (true, true) => Domain::CompPositive,
        }
    }
}

/// Host inputs: `a` and `b` hold 2N words (pair i at 2i, 2i+1), `k` holds N ints.
pub struct Inputs<W> {
    pub a: Vec<W>,
    pub b: Vec<W>,
    pub k: Vec<i32>,
}

/// The class of element `i`.
pub fn class_of(i: usize) -> usize {
    i / (N / CLASSES.len())
}

/// SplitMix64: small, seeded, and good enough to spread inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo + 1) as u64) as i32
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// A base format the generator can build numbers of.
pub trait Gen: Word + Base {}
impl Gen for f32 {}
impl Gen for f64 {}

struct Fmt {
    p: i32,
    emin: i32,
    emax: i32,
}

fn fmt<W: Gen>() -> Fmt {
    Fmt {
        p: W::DIGITS as i32,
        emin: W::MIN_EXP,
        emax: W::MAX_EXP,
    }
}

/// A random number with exponent `e` (clamped to emax), random sign and fraction; subnormal below
/// emin, zero below the smallest subnormal.
fn value<W: Gen>(rng: &mut Rng, e: i32) -> W {
    let f = fmt::<W>();
    let mant = (f.p - 1) as u32;
    let frac = rng.next() & ((1u64 << mant) - 1);
    let sign = (rng.next() & 1) << (W::BITS - 1);
    let e = e.min(f.emax);
    let mag = if e >= f.emin {
        (((e - f.emin + 1) as u64) << mant) | frac
    } else {
        let shift = (f.emin - e) as u32;
        if shift > mant {
            0
        } else {
            ((1u64 << mant) | frac) >> shift
        }
    };
    W::from_bits_u64(sign | mag)
}

/// [`value`] with an exponent uniform in `lo..=hi`.
fn value_in<W: Gen>(rng: &mut Rng, lo: i32, hi: i32) -> W {
    let e = rng.range(lo, hi);
    value(rng, e)
}

/// [`pair`] with a high-word exponent uniform in `lo..=hi`.
fn pair_in<W: Gen>(rng: &mut Rng, lo: i32, hi: i32) -> [W; 2] {
    let e = rng.range(lo, hi);
    pair(rng, e)
}

/// The exponent of a finite non-zero word (of its leading bit for subnormals), else 0.
fn exp_of<W: Gen>(x: W) -> i32 {
    x.exponent().unwrap_or(0)
}

/// `(hi, lo)` re-split by TwoSum so that `hi = RN(hi + lo)`; `(hi, +0)` when that would not be
/// finite.
fn normalized<W: Gen>(hi: W, lo: W) -> [W; 2] {
    if !hi.is_finite() {
        return [hi, W::ZERO];
    }
    let (s, e) = two_sum(hi, lo);
    if s.is_finite() && e.is_finite() {
        [s, e]
    } else {
        [hi, W::ZERO]
    }
}

/// A normalised pair with high-word exponent `e` and a low word 0 to p binades below its ulp
/// (zero in one pair of eight).
fn pair<W: Gen>(rng: &mut Rng, e: i32) -> [W; 2] {
    let p = fmt::<W>().p;
    let hi: W = value(rng, e);
    let lo = if rng.below(8) == 0 {
        W::ZERO
    } else {
        value_in(rng, exp_of(hi) - 2 * p, exp_of(hi) - p)
    };
    normalized(hi, lo)
}

fn neg<W: Gen>(x: [W; 2]) -> [W; 2] {
    [-x[0], -x[1]]
}

/// The edges of a base format, positive and negative.
fn special_words<W: Gen>() -> Vec<W> {
    let f = fmt::<W>();
    let mant = (f.p - 1) as u32;
    let one = W::ONE.to_bits_u64();
    let pow2 = |e: i32| W::from_bits_u64(((e - f.emin + 1) as u64) << mant);
    let positive = [
        W::ZERO,
        W::from_bits_u64(1),               // smallest subnormal
        W::from_bits_u64((1 << mant) - 1), // largest subnormal
        W::from_bits_u64(1 << (mant - 1)), // 2^(emin-1), subnormal
        pow2(f.emin),                      // MIN_POSITIVE
        pow2(f.emin + f.p),                // smallest hi with a normal low word
        pow2(f.emin / 2),                  // divisor rescaling edges
        pow2(f.emin / 2 - 1),
        pow2(f.emax / 2),
        pow2(f.emax / 2 + 1),
        W::from_bits_u64(one - 1), // 1 − u
        W::ONE,
        W::from_bits_u64(one + 1),                 // 1 + 2u
        W::from_bits_u64(one + (1 << (mant - 1))), // 1.5
        W::TWO,
        W::MAX,
        W::INFINITY,
        W::NAN,
    ];
    positive.iter().flat_map(|&x| [x, -x]).collect()
}

/// Special pairs: each special word with a zero low word of either sign, and the finite non-zero
/// ones also with a random low word.
fn special_pairs<W: Gen>(rng: &mut Rng) -> Vec<[W; 2]> {
    let p = fmt::<W>().p;
    let mut out = Vec::new();
    for w in special_words::<W>() {
        out.push([w, W::ZERO]);
        out.push([w, -W::ZERO]);
        if w.is_finite() && w != W::ZERO {
            let lo = value_in(rng, exp_of(w) - p - 4, exp_of(w) - p - 1);
            out.push(normalized(w, lo));
        }
    }
    out
}

/// One element of class `class`: (a, b, k).
fn element<W: Gen>(
    rng: &mut Rng,
    class: usize,
    j: usize,
    specials: &[[W; 2]],
) -> ([W; 2], [W; 2], i32) {
    let f = fmt::<W>();
    let (p, emin, emax) = (f.p, f.emin, f.emax);
    let lowest = emin - p + 1; // exponent of the smallest subnormal
    let wide_k = 2 * (emax + p) + 4;
    match CLASSES[class] {
        "similar" => {
            let ea = rng.range(-30, 30);
            let eb = ea + rng.range(-3, 3);
            (pair(rng, ea), pair(rng, eb), rng.range(-p - 4, p + 4))
        }
        "far-apart" => {
            let ea = rng.range(-40, 40);
            let eb = ea - rng.range(1, 3 * p);
            let (a, b) = (pair(rng, ea), pair(rng, eb));
            let k = rng.range(-p - 4, p + 4);
            if rng.coin() {
                (a, b, k)
            } else {
                (b, a, k)
            }
        }
        "cancellation" => {
            let a: [W; 2] = pair_in(rng, -30, 30);
            let e = exp_of(a[0]);
            let b = match rng.below(4) {
                0 => normalized(-a[0], value_in(rng, e - 2 * p, e - p)),
                1 => {
                    let step = if rng.coin() { 1 } else { u64::MAX }; // ±1 ulp
                    let h = W::from_bits_u64(a[0].to_bits_u64().wrapping_add(step));
                    normalized(-h, value_in(rng, e - 2 * p, e - p))
                }
                2 => neg(a),
                _ => {
                    // The same high word, the low word changed in its last bits.
                    let l = W::from_bits_u64(a[1].to_bits_u64() ^ (1 + rng.below(7)));
                    normalized(-a[0], -l)
                }
            };
            (a, b, rng.range(-p - 4, p + 4))
        }
        "wide" => (
            pair_in(rng, lowest, emax),
            pair_in(rng, lowest, emax),
            rng.range(-wide_k, wide_k),
        ),
        "near-overflow" => {
            let (ea, eb) = if rng.coin() {
                (
                    rng.range(emax - 2 * p - 2, emax),
                    rng.range(emax - 2 * p - 2, emax),
                )
            } else {
                (emax / 2 + rng.range(-3, 3), emax / 2 + rng.range(-3, 3))
            };
            let mut a: [W; 2] = pair(rng, ea);
            if rng.below(8) == 0 {
                let m = if rng.coin() { W::MAX } else { -W::MAX };
                a = normalized(m, value_in(rng, emax - 2 * p, emax - p - 1));
            }
            let k = emax - exp_of(a[0]) + rng.range(-3, 3);
            (a, pair(rng, eb), k)
        }
        "near-underflow" => {
            let (ea, eb) = if rng.coin() {
                (
                    rng.range(lowest, emin + 2 * p + 4),
                    rng.range(lowest, emin + 2 * p + 4),
                )
            } else {
                (emin / 2 + rng.range(-p, 3), emin / 2 + rng.range(-p, 3))
            };
            let a: [W; 2] = pair(rng, ea);
            let k = emin - exp_of(a[0]) + rng.range(-p - 3, 3);
            (a, pair(rng, eb), k)
        }
        "extreme-divisor" => {
            let eb = if rng.coin() {
                rng.range(lowest, emin / 2 - 1)
            } else {
                rng.range(emax / 2 + 1, emax)
            };
            (
                pair_in(rng, lowest, emax),
                pair(rng, eb),
                rng.range(-wide_k, wide_k),
            )
        }
        _ => {
            // Specials: first every ordered pair of special pairs, then specials against random
            // pairs, then random bit patterns.
            let s = specials.len();
            let ks = [
                0,
                1,
                -1,
                p,
                -p,
                emax - emin,
                emin - emax,
                2 * emax + 2 * p,
                -2 * emax - 2 * p,
                i32::MAX,
                i32::MIN,
            ];
            let k = ks[rng.below(ks.len() as u64) as usize];
            if j < s * s {
                (specials[j / s], specials[j % s], k)
            } else if rng.below(3) > 0 {
                let sp = specials[rng.below(s as u64) as usize];
                let other = pair_in(rng, lowest, emax);
                if rng.coin() {
                    (sp, other, k)
                } else {
                    (other, sp, k)
                }
            } else {
                let raw = |rng: &mut Rng| {
                    normalized(W::from_bits_u64(rng.next()), W::from_bits_u64(rng.next()))
                };
                (raw(rng), raw(rng), rng.range(-wide_k, wide_k))
            }
        }
    }
}

/// The inputs of `domain` for words of type `W`.
pub fn generate<W: Gen>(domain: Domain) -> Inputs<W> {
    let mut rng = Rng::new(SEED ^ ((W::BITS as u64) << 56) ^ ((domain as u64) << 48));
    let specials = special_pairs::<W>(&mut rng);
    let per_class = N / CLASSES.len();
    let mut inputs = Inputs {
        a: Vec::with_capacity(2 * N),
        b: Vec::with_capacity(2 * N),
        k: Vec::with_capacity(N),
    };
    for i in 0..N {
        let (class, j) = (i / per_class, i % per_class);
        let (mut a, mut b, k) = element::<W>(&mut rng, class, j, &specials);
        if matches!(domain, Domain::Comp | Domain::CompPositive) {
            for x in [&mut a, &mut b] {
                match rng.below(8) {
                    0 | 1 => x.swap(0, 1),
                    2 => {
                        let e = rng.range(fmt::<W>().emin, fmt::<W>().emax);
                        x[1] = value(&mut rng, e);
                    }
                    _ => {}
                }
            }
        }
        if matches!(domain, Domain::Positive | Domain::CompPositive) && i % 8 != 0 {
            a[0] = W::from_bits_u64(a[0].to_bits_u64() & !(1u64 << (W::BITS - 1)));
        }
        inputs.a.extend(a);
        inputs.b.extend(b);
        inputs.k.push(k);
    }
    inputs
}

/// A word's bits in hex, zero-padded to its width.
pub fn word_hex<W: Word>(x: W) -> String {
    let width = (W::BITS / 4 + 2) as usize;
    format!("{:#0width$x}", x.to_bits_u64())
}

/// The shape's arguments for messages: what of `a`, `b` and `k` the operation reads.
pub fn describe<W: Word>(shape: Shape, inputs: &Inputs<W>, i: usize) -> String {
    let w = word_hex::<W>;
    let (a, b) = (&inputs.a, &inputs.b);
    let pa = format!("({}, {})", w(a[2 * i]), w(a[2 * i + 1]));
    let pb = format!("({}, {})", w(b[2 * i]), w(b[2 * i + 1]));
    match shape {
        Shape::Pairs => format!("a {pa} b {pb}"),
        Shape::PairWord => format!("a {pa} b {}", w(b[2 * i])),
        Shape::Pair | Shape::PairToWord => format!("a {pa}"),
        Shape::PairInt => format!("a {pa} k {}", inputs.k[i]),
        Shape::Words => format!("a {} b {}", w(a[2 * i]), w(b[2 * i])),
        Shape::Word => format!("a {}", w(a[2 * i])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<W: Gen>() {
        let inp = generate::<W>(Domain::Pairs);
        assert_eq!((inp.a.len(), inp.b.len(), inp.k.len()), (2 * N, 2 * N, N));
        let f = fmt::<W>();
        let mut sub_lo = 0;
        let mut classes_seen = [0usize; 8];
        for i in 0..N {
            for x in [&inp.a, &inp.b] {
                let (hi, lo) = (x[2 * i], x[2 * i + 1]);
                // Normalised: hi = RN(hi + lo) wherever hi is finite.
                if hi.is_finite() {
                    assert!(hi + lo == hi, "{hi:?} {lo:?}");
                    if lo != W::ZERO && lo.exponent().unwrap() < f.emin {
                        sub_lo += 1;
                    }
                }
            }
            classes_seen[class_of(i)] += 1;
        }
        assert!(sub_lo > 10_000, "subnormal low words: {sub_lo}");
        assert!(classes_seen.iter().all(|&c| c == N / 8));
        let specials = |v: &[W]| v.iter().filter(|x| !x.is_finite()).count();
        assert!(specials(&inp.a) > 1000 && specials(&inp.b) > 1000);
        let pos = generate::<W>(Domain::Positive);
        let negative = (0..N).filter(|&i| pos.a[2 * i].is_sign_negative()).count();
        assert!(negative < N / 8 + 1, "{negative}");
        let comp = generate::<W>(Domain::Comp);
        let swapped = (0..N)
            .filter(|&i| comp.a[2 * i].abs() < comp.a[2 * i + 1].abs())
            .count();
        assert!(swapped > N / 8, "{swapped}");
    }

    #[test]
    fn inputs_are_normalised_and_cover_every_class() {
        check::<f32>();
        check::<f64>();
    }
}
