//! Input data of the study: the magnitude intervals of seed 000 (named ranges and user
//! intervals), zero-sum arrays and general arrays drawn from them, and dot-product vectors.
//!
//! Everything is generated in f64 from a seeded xoshiro256++ stream, so a record's
//! (input, size, seed) reproduces its data exactly. A workload in a narrower precision converts
//! the f64 data with `Real::from_f64`; the exact negatives of a zero-sum array stay exact
//! negatives in every precision because negation is exact.

use std::fmt;
use std::str::FromStr;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// An open interval of positive magnitudes (lo, hi), drawn from uniformly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end (exclusive: draws are above it).
    pub lo: f64,
    /// Upper end (exclusive).
    pub hi: f64,
}

/// Why an interval is not usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    #[error("interval {0:?}: expected LO:HI with finite numbers 0 < LO < HI, e.g. 1e-6:1e-5")]
    /// An interval that is not `LO:HI` with finite 0 < LO < HI.
    BadInterval(String),
    #[error("input class {0:?}: expected range1..range5 (seed 000 Table 11), gmp-range1..gmp-range5 (Table 7), chain-K (K > 1, §8.1), du-small, du-large, du-xsmall-ylarge, du-xlarge-ysmall (§8.2.2), or SMALL_LO:SMALL_HI,LARGE_LO:LARGE_HI")]
    /// A class name that is neither a named class nor two intervals.
    UnknownClass(String),
}

impl Interval {
    /// A checked interval: finite, 0 < lo < hi.
    pub fn new(lo: f64, hi: f64) -> Result<Interval, InputError> {
        if lo.is_finite() && hi.is_finite() && lo > 0.0 && lo < hi {
            Ok(Interval { lo, hi })
        } else {
            Err(InputError::BadInterval(format!("{lo:e}:{hi:e}")))
        }
    }

    pub(crate) fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> f64 {
        // Uniform in [lo, hi); hi − lo is finite because both are finite and positive.
        let x = self.lo + (self.hi - self.lo) * rng.random::<f64>();
        if x > self.lo {
            x
        } else {
            // Keep the interval open at lo (and never return 0 for denormal-width intervals).
            // The next f64 above lo (lo is positive and finite).
            f64::from_bits(self.lo.to_bits() + 1)
        }
    }
}

impl FromStr for Interval {
    type Err = InputError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InputError::BadInterval(s.to_string());
        let (lo, hi) = s.split_once(':').ok_or_else(bad)?;
        let lo: f64 = lo.trim().parse().map_err(|_| bad())?;
        let hi: f64 = hi.trim().parse().map_err(|_| bad())?;
        Interval::new(lo, hi).map_err(|_| bad())
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:e}:{:e}", self.lo, self.hi)
    }
}

/// An input class: a small-magnitude and a large-magnitude interval, as in seed 000 ch. 5.
#[derive(Debug, Clone, PartialEq)]
pub struct InputClass {
    /// The name in records: `range3`, `gmp-range4`, or the intervals as typed.
    pub name: String,
    /// The interval of small magnitudes.
    pub small: Interval,
    /// The interval of large magnitudes.
    pub large: Interval,
}

/// Seed 000 Table 11 (float, double, float2, double2, CUMP on 8M elements): range k is
/// (10^-(k+1), 10^-k) and (10^k, 10^(k+1)).
const TABLE_11: [(f64, f64, f64, f64); 5] = [
    (1e-2, 1e-1, 1e1, 1e2),
    (1e-3, 1e-2, 1e2, 1e3),
    (1e-4, 1e-3, 1e3, 1e4),
    (1e-5, 1e-4, 1e4, 1e5),
    (1e-6, 1e-5, 1e5, 1e6),
];

/// Seed 000 Table 7 (GMP and CUMP at 32…256 bits on 1024 and 1,048,576 elements).
const TABLE_7: [(f64, f64, f64, f64); 5] = [
    (1e-1, 1e0, 1e0, 1e1),
    (1e-4, 1e-3, 1e3, 1e4),
    (1e-13, 1e-12, 1e12, 1e13),
    (1e-19, 1e-18, 1e18, 1e19),
    (1e-37, 1e-36, 1e36, 1e37),
];

fn class(name: String, (a, b, c, d): (f64, f64, f64, f64)) -> InputClass {
    InputClass {
        name,
        small: Interval { lo: a, hi: b },
        large: Interval { lo: c, hi: d },
    }
}

impl InputClass {
    /// Range `k` (1–5) of seed 000 Table 11.
    pub fn range(k: usize) -> InputClass {
        class(format!("range{k}"), TABLE_11[k - 1])
    }

    /// Range `k` (1–5) of seed 000 Table 7.
    pub fn gmp_range(k: usize) -> InputClass {
        class(format!("gmp-range{k}"), TABLE_7[k - 1])
    }

    /// The five ranges of Table 11.
    pub fn table_11() -> Vec<InputClass> {
        (1..=5).map(InputClass::range).collect()
    }

    /// The five ranges of Table 7.
    pub fn table_7() -> Vec<InputClass> {
        (1..=5).map(InputClass::gmp_range).collect()
    }

    /// The multiplication-chain factors of seed 000 §8.1: (0.1, 1) and (1, `k`), named `chain-k`.
    /// Figs 22 and 23 use k = 6 and k = 10. `k` must exceed 1.
    pub fn chain(k: u32) -> InputClass {
        class(format!("chain-{k}"), (0.1, 1.0, 1.0, f64::from(k.max(2))))
    }

    /// The do/undo operand classes of seed 000 §8.2.2 (Table 20, Figs 25–29): x and y each small,
    /// in (0, 10), or large, in (10^5, 10^6). Read as (x's interval, y's interval): `small` holds
    /// x's and `large` y's, whatever their magnitudes. (0, 10) is the thesis's open interval, kept
    /// open at 0 (the one value that could be drawn at 0 is replaced by the next double above it).
    pub fn doundo(x_large: bool, y_large: bool) -> InputClass {
        let small = Interval { lo: 0.0, hi: 10.0 };
        let large = Interval { lo: 1e5, hi: 1e6 };
        let name = match (x_large, y_large) {
            (false, false) => "du-small",
            (true, true) => "du-large",
            (false, true) => "du-xsmall-ylarge",
            (true, false) => "du-xlarge-ysmall",
        };
        InputClass {
            name: name.into(),
            small: if x_large { large } else { small },
            large: if y_large { large } else { small },
        }
    }

    /// The four do/undo classes in Table 20's order.
    pub fn doundo_classes() -> Vec<InputClass> {
        [(false, true), (false, false), (true, false), (true, true)]
            .into_iter()
            .map(|(x, y)| InputClass::doundo(x, y))
            .collect()
    }

    /// `n` values, each drawn from the small or the large interval with probability 1/2 (seed 000
    /// §8.1's chain factors), positive.
    pub fn mixed(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                if rng.random::<bool>() {
                    self.large.draw(&mut rng)
                } else {
                    self.small.draw(&mut rng)
                }
            })
            .collect()
    }

    /// `m` values from the small interval and `n` from the large one, from two streams of `seed`,
    /// so the first values are the same whatever `m` and `n` (do/undo's x's and y's).
    pub fn split_draws(&self, m: usize, n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut rx = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut ry = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let xs = (0..m).map(|_| self.small.draw(&mut rx)).collect();
        let ys = (0..n).map(|_| self.large.draw(&mut ry)).collect();
        (xs, ys)
    }

    /// Draws `n` values: half from each interval (the odd one from the large), random signs.
    /// Their sum is in general not zero.
    pub fn general(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut v: Vec<f64> = (0..n)
            .map(|i| {
                let x = if i % 2 == 0 {
                    self.large.draw(&mut rng)
                } else {
                    self.small.draw(&mut rng)
                };
                if rng.random::<bool>() {
                    -x
                } else {
                    x
                }
            })
            .collect();
        v.shuffle(&mut rng);
        v
    }

    /// A zero-sum array of `n` values (seed 000 ch. 5): n/4 draws from each interval, each
    /// followed by its exact negative, shuffled. `n` is rounded down to a multiple of 4 by the
    /// caller's choice of sizes; an odd remainder is filled with zero pairs' partner `0.0`.
    pub fn zero_sum(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut v = Vec::with_capacity(n);
        while v.len() + 2 <= n {
            let x = if (v.len() / 2) % 2 == 0 {
                self.large.draw(&mut rng)
            } else {
                self.small.draw(&mut rng)
            };
            v.push(x);
            v.push(-x);
        }
        if v.len() < n {
            v.push(0.0);
        }
        v.shuffle(&mut rng);
        v
    }
}

impl FromStr for InputClass {
    type Err = InputError;
    /// `range1`…`range5`, `gmp-range1`…`gmp-range5`, `chain-K`, the four `du-…` classes, or
    /// `SMALL_LO:SMALL_HI,LARGE_LO:LARGE_HI`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let numbered = |prefix: &str| {
            t.strip_prefix(prefix)
                .and_then(|k| k.parse::<usize>().ok())
                .filter(|k| (1..=5).contains(k))
        };
        if let Some(k) = numbered("gmp-range") {
            return Ok(InputClass::gmp_range(k));
        }
        if let Some(k) = numbered("range") {
            return Ok(InputClass::range(k));
        }
        if let Some(k) = t
            .strip_prefix("chain-")
            .and_then(|k| k.parse::<u32>().ok())
            .filter(|&k| k > 1)
        {
            return Ok(InputClass::chain(k));
        }
        if let Some(c) = InputClass::doundo_classes()
            .into_iter()
            .find(|c| c.name == t)
        {
            return Ok(c);
        }
        if let Some((a, b)) = t.split_once(',') {
            let small: Interval = a.parse()?;
            let large: Interval = b.parse()?;
            return Ok(InputClass {
                name: format!("{small},{large}"),
                small,
                large,
            });
        }
        Err(InputError::UnknownClass(s.to_string()))
    }
}

/// The white paper's 4-element dot product (seed 004 §3.2, Fig. 5), as f32 values. The digits
/// are the paper's, as printed.
#[allow(clippy::excessive_precision)]
pub const WHITE_PAPER_A: [f32; 4] = [1.907607, -0.7862027, 1.147311, 0.9604002];
#[allow(clippy::excessive_precision)]
/// The second vector of the white paper's dot product (see [`WHITE_PAPER_A`]).
pub const WHITE_PAPER_B: [f32; 4] = [-0.9355000, -0.6915108, 1.724470, -0.7097529];

/// Two vectors of `n` values uniform in (lo, hi) (the white paper draws from (−1, 2)).
pub fn uniform_vectors(n: usize, lo: f64, hi: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut draw = || lo + (hi - lo) * rng.random::<f64>();
    let a = (0..n).map(|_| draw()).collect();
    let b = (0..n).map(|_| draw()).collect();
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_num::exact::exact_sum;

    #[test]
    fn zero_sum_arrays_sum_to_exactly_zero_and_mix_both_intervals() {
        for class in InputClass::table_11().iter().chain(&InputClass::table_7()) {
            for n in [0, 1, 2, 3, 4, 1000, 1023] {
                let v = class.zero_sum(n, 42);
                assert_eq!(v.len(), n);
                assert_eq!(exact_sum(&v), 0.0, "{} n={n}", class.name);
            }
            let v = class.zero_sum(4096, 1);
            let small = v.iter().filter(|x| x.abs() < class.small.hi).count();
            let large = v.iter().filter(|x| x.abs() > class.large.lo).count();
            assert_eq!((small, large), (2048, 2048), "{}", class.name);
            assert!(v.iter().all(|x| {
                let a = x.abs();
                (a > class.small.lo && a < class.small.hi)
                    || (a > class.large.lo && a < class.large.hi)
            }));
        }
    }

    #[test]
    fn generation_is_reproducible_from_the_seed() {
        let c = InputClass::range(5);
        assert_eq!(c.zero_sum(100, 9), c.zero_sum(100, 9));
        assert_ne!(c.zero_sum(100, 9), c.zero_sum(100, 10));
        assert_eq!(c.general(100, 9), c.general(100, 9));
        assert_ne!(exact_sum(&c.general(100, 9)), 0.0);
    }

    #[test]
    fn classes_parse_by_name_and_by_interval() {
        assert_eq!(
            "range3".parse::<InputClass>().unwrap(),
            InputClass::range(3)
        );
        assert_eq!(
            "GMP-Range5".parse::<InputClass>().unwrap(),
            InputClass::gmp_range(5)
        );
        let c: InputClass = "1e-3:1e-2,1e4:1e5".parse().unwrap();
        assert_eq!((c.small.lo, c.large.hi), (1e-3, 1e5));
        for bad in [
            "range0",
            "range6",
            "x",
            "5:1,1:2",
            "1:2",
            "0:1,2:3",
            "1:inf,2:3",
            "nan:1,2:3",
            "chain-1",
            "chain-x",
            "du-medium",
        ] {
            assert!(bad.parse::<InputClass>().is_err(), "{bad}");
        }
        let e = "2:1,3:4".parse::<InputClass>().unwrap_err().to_string();
        assert!(e.contains("\"2:1\"") && e.contains("0 < LO < HI"), "{e}");
    }

    #[test]
    fn table_values_match_the_thesis() {
        // Table 11 range 5 and Table 7 range 5, as printed in seed 000.
        let r5 = InputClass::range(5);
        assert_eq!(
            (r5.small.lo, r5.small.hi, r5.large.lo, r5.large.hi),
            (1e-6, 1e-5, 1e5, 1e6)
        );
        let g5 = InputClass::gmp_range(5);
        assert_eq!((g5.small.lo, g5.large.hi), (1e-37, 1e37));
    }
}
