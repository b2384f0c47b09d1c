//! The CPU algorithms of the study's reductions, written once over [`Real`]: serial, pairwise
//! (tree) and chunked-parallel sums and dot products, and the two π computations.
//!
//! Every algorithm fixes its order of operations, so a result depends only on the data, the
//! precision and (for the chunked ones) the thread count, never on scheduling.
//!
//! The `_until` forms check a [`Stop`] every [`CHECK_EVERY`] values (the same operations in the
//! same order, so the same bits) and return early, with a meaningless value, once it is set: the
//! study's runner drops such a point. The plain forms never stop.

use mantissa_num::Real;
use rayon::prelude::*;
use rayon::ThreadPool;

use crate::stop::{Stop, CHECK_EVERY};

/// Σ xs, left to right: ((x0 + x1) + x2) + …
pub fn serial_sum<T: Real>(xs: &[T]) -> T {
    serial_sum_until(xs, Stop::NEVER)
}

/// [`serial_sum`], checking `stop` every block.
pub fn serial_sum_until<T: Real>(xs: &[T], stop: Stop) -> T {
    let mut acc = T::zero();
    for block in xs.chunks(CHECK_EVERY) {
        if stop.requested() {
            break;
        }
        acc = block.iter().fold(acc, |acc, x| acc + x.clone());
    }
    acc
}

/// Σ xs by recursive halving (seed 004's "parallel" algorithm run on one thread): the sum of
/// the first ⌊n/2⌋ values plus the sum of the rest, down to single values.
pub fn pairwise_sum<T: Real>(xs: &[T]) -> T {
    pairwise_sum_until(xs, Stop::NEVER)
}

/// [`pairwise_sum`], checking `stop` at every subtree of more than a block.
pub fn pairwise_sum_until<T: Real>(xs: &[T], stop: Stop) -> T {
    pairwise(xs.len(), &|i| xs[i].clone(), 0, stop)
}

/// The pairwise sum of `f(offset) … f(offset + n − 1)`.
fn pairwise<T: Real>(n: usize, f: &(impl Fn(usize) -> T + Sync), offset: usize, stop: Stop) -> T {
    match n {
        0 => T::zero(),
        1 => f(offset),
        _ if n > CHECK_EVERY && stop.requested() => T::zero(),
        _ => {
            let h = n / 2;
            pairwise(h, f, offset, stop) + pairwise(n - h, f, offset + h, stop)
        }
    }
}

/// The contiguous chunk boundaries of `n` items over `parts` workers (sizes differ by ≤ 1).
fn chunks(n: usize, parts: usize) -> Vec<(usize, usize)> {
    let parts = parts.max(1);
    (0..parts)
        .map(|p| (n * p / parts, n * (p + 1) / parts))
        .collect()
}

/// Σ xs on the pool's threads: one contiguous chunk per thread summed serially, then the
/// partial sums added serially in chunk order.
pub fn chunked_sum<T: Real>(xs: &[T], pool: &ThreadPool) -> T {
    chunked_sum_until(xs, pool, Stop::NEVER)
}

/// [`chunked_sum`], each thread checking `stop` every block.
pub fn chunked_sum_until<T: Real>(xs: &[T], pool: &ThreadPool, stop: Stop) -> T {
    let parts = chunks(xs.len(), pool.current_num_threads());
    let partials: Vec<T> = pool.install(|| {
        parts
            .par_iter()
            .map(|&(a, b)| serial_sum_until(&xs[a..b], stop))
            .collect()
    });
    serial_sum(&partials)
}

/// Σ a_i·b_i, left to right. `fused`: acc = a_i·b_i + acc with [`Real::mul_add`] (one rounding
/// for f32/f64); otherwise the product and the sum round separately.
pub fn serial_dot<T: Real>(a: &[T], b: &[T], fused: bool) -> T {
    serial_dot_until(a, b, fused, Stop::NEVER)
}

/// [`serial_dot`], checking `stop` every block.
pub fn serial_dot_until<T: Real>(a: &[T], b: &[T], fused: bool, stop: Stop) -> T {
    let mut acc = T::zero();
    for (xs, ys) in a.chunks(CHECK_EVERY).zip(b.chunks(CHECK_EVERY)) {
        if stop.requested() {
            break;
        }
        acc = xs.iter().zip(ys).fold(acc, |acc, (x, y)| {
            if fused {
                x.mul_add(y, &acc)
            } else {
                acc + x.clone() * y.clone()
            }
        });
    }
    acc
}

/// Σ a_i·b_i by recursive halving of the products (seed 004 Fig. 4).
pub fn pairwise_dot<T: Real>(a: &[T], b: &[T]) -> T {
    pairwise_dot_until(a, b, Stop::NEVER)
}

/// [`pairwise_dot`], checking `stop` at every subtree of more than a block.
pub fn pairwise_dot_until<T: Real>(a: &[T], b: &[T], stop: Stop) -> T {
    let n = a.len().min(b.len());
    pairwise(n, &|i| a[i].clone() * b[i].clone(), 0, stop)
}

/// Leibniz's series on one thread (seed 001): 4 · (1 − 1/3 + 1/5 − …) over `terms` terms, each
/// term a division 1/(2k+1) in the precision, added or subtracted in turn.
pub fn leibniz<T: Real>(terms: u64) -> T {
    let one = T::one();
    let mut acc = T::zero();
    for k in 0..terms {
        let term = one.clone() / T::from_i64(2 * k as i64 + 1);
        acc = if k % 2 == 0 { acc + term } else { acc - term };
    }
    T::from_f64(4.0) * acc
}

/// The step width and midpoint-rule integrand of ∫₀¹ 4/(1+x²) dx (seed 003 Fig. 11):
/// f(i) = 4 / (1 + x_i²) with x_i = (i + ½)·h, h = 1/steps, every operation in T.
pub struct Midpoint<T> {
    /// The step width 1/steps, in T.
    pub h: T,
    four: T,
    half: T,
    one: T,
}

impl<T: Real> Midpoint<T> {
    /// The rule with `steps` steps.
    pub fn new(steps: u64) -> Self {
        Midpoint {
            h: T::one() / T::from_i64(steps as i64),
            four: T::from_f64(4.0),
            half: T::from_f64(0.5),
            one: T::one(),
        }
    }

    /// The integrand at the midpoint of step `i`.
    pub fn term(&self, i: u64) -> T {
        let x = (T::from_i64(i as i64) + self.half.clone()) * self.h.clone();
        self.four.clone() / (self.one.clone() + x.clone() * x)
    }
}

/// π by the midpoint rule, accumulating the terms serially, then h · Σ.
pub fn pi_midpoint_serial<T: Real>(steps: u64) -> T {
    pi_midpoint_serial_until(steps, Stop::NEVER)
}

/// [`pi_midpoint_serial`], checking `stop` every block of steps.
pub fn pi_midpoint_serial_until<T: Real>(steps: u64, stop: Stop) -> T {
    let m = Midpoint::<T>::new(steps);
    let sum = midpoint_fold(&m, 0, steps, stop);
    m.h.clone() * sum
}

/// The terms a..b of `m` accumulated serially, checking `stop` every block.
fn midpoint_fold<T: Real>(m: &Midpoint<T>, a: u64, b: u64, stop: Stop) -> T {
    let mut acc = T::zero();
    let mut start = a;
    while start < b && !stop.requested() {
        let end = b.min(start + CHECK_EVERY as u64);
        acc = (start..end).fold(acc, |acc, i| acc + m.term(i));
        start = end;
    }
    acc
}

/// π by the midpoint rule with a pairwise (tree) sum of the terms.
pub fn pi_midpoint_pairwise<T: Real>(steps: u64) -> T {
    pi_midpoint_pairwise_until(steps, Stop::NEVER)
}

/// [`pi_midpoint_pairwise`], checking `stop` at every subtree of more than a block.
pub fn pi_midpoint_pairwise_until<T: Real>(steps: u64, stop: Stop) -> T {
    let m = Midpoint::<T>::new(steps);
    let sum = pairwise(steps as usize, &|i| m.term(i as u64), 0, stop);
    m.h.clone() * sum
}

/// π by the midpoint rule on the pool's threads: contiguous chunks of steps accumulated
/// serially, partials added in chunk order, then h · Σ.
pub fn pi_midpoint_chunked<T: Real>(steps: u64, pool: &ThreadPool) -> T {
    pi_midpoint_chunked_until(steps, pool, Stop::NEVER)
}

/// [`pi_midpoint_chunked`], each thread checking `stop` every block of steps.
pub fn pi_midpoint_chunked_until<T: Real>(steps: u64, pool: &ThreadPool, stop: Stop) -> T {
    let m = Midpoint::<T>::new(steps);
    let parts = chunks(steps as usize, pool.current_num_threads());
    let partials: Vec<T> = pool.install(|| {
        parts
            .par_iter()
            .map(|&(a, b)| midpoint_fold(&m, a as u64, b as u64, stop))
            .collect()
    });
    m.h.clone() * serial_sum(&partials)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mantissa_num::{f64x2, Mp};

    fn pool(n: usize) -> ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    }

    #[test]
    fn orders_are_the_documented_ones() {
        // 1 + 2^-24 + 2^-24 in f32: serially each tiny term is lost (ties to even), pairwise
        // the two tiny terms meet first and survive.
        let xs = [1.0f32, 2f32.powi(-24), 2f32.powi(-24), 0.0];
        assert_eq!(serial_sum(&xs), 1.0);
        let tiny_first = [2f32.powi(-24), 2f32.powi(-24), 1.0, 0.0];
        assert_eq!(pairwise_sum(&tiny_first), 1.0 + 2f32.powi(-23));
        assert_eq!(serial_sum(&tiny_first), 1.0 + 2f32.powi(-23));
        assert_eq!(pairwise_sum(&xs), 1.0);
        assert_eq!(pairwise_sum::<f32>(&[]), 0.0);
        assert_eq!(pairwise_sum(&[3.0f32]), 3.0);
        // Chunked with 2 threads: (1 + 2^-24) + (2^-24 + 0) = 1 (tie to even) in f32.
        assert_eq!(chunked_sum(&xs, &pool(2)), 1.0);
        // With 3 chunks the tiny terms land in different chunks: same.
        assert_eq!(chunked_sum(&xs, &pool(3)), 1.0);
    }

    #[test]
    fn checked_forms_give_the_same_bits_and_stop_at_a_check() {
        use std::sync::atomic::AtomicBool;
        // Three blocks and a bit, values whose f32 sum depends on the order.
        let n = 3 * CHECK_EVERY + 5;
        let xs: Vec<f32> = (0..n)
            .map(|i| (1.0 + i as f32 * 1e-3).powi(if i % 2 == 0 { 3 } else { -3 }))
            .collect();
        let ys: Vec<f32> = xs.iter().rev().copied().collect();
        let fold = xs.iter().fold(0.0f32, |a, &x| a + x);
        assert_eq!(serial_sum(&xs).to_bits(), fold.to_bits());
        let fused = xs
            .iter()
            .zip(&ys)
            .fold(0.0f32, |a, (x, y)| f32::mul_add(*x, *y, a));
        assert_eq!(serial_dot(&xs, &ys, true).to_bits(), fused.to_bits());
        let midpoint = {
            let m = Midpoint::<f32>::new(n as u64);
            m.h * (0..n as u64).fold(0.0f32, |a, i| a + m.term(i))
        };
        assert_eq!(
            pi_midpoint_serial::<f32>(n as u64).to_bits(),
            midpoint.to_bits()
        );
        // A stop already requested: nothing is computed.
        let flag = AtomicBool::new(true);
        let stop = Stop::on(&flag);
        assert_eq!(serial_sum_until(&xs, stop), 0.0);
        assert_eq!(pairwise_sum_until(&xs, stop), 0.0);
        assert_eq!(chunked_sum_until(&xs, &pool(2), stop), 0.0);
        assert_eq!(serial_dot_until(&xs, &ys, false, stop), 0.0);
        assert_eq!(pairwise_dot_until(&xs, &ys, stop), 0.0);
        assert_eq!(pi_midpoint_serial_until::<f32>(1 << 30, stop), 0.0);
        assert_eq!(pi_midpoint_pairwise_until::<f32>(1 << 30, stop), 0.0);
        assert_eq!(
            pi_midpoint_chunked_until::<f32>(1 << 30, &pool(2), stop),
            0.0
        );
    }

    #[test]
    fn chunks_cover_everything_once() {
        for n in [0, 1, 5, 1000] {
            for p in [1, 2, 3, 7, 64] {
                let c = chunks(n, p);
                assert_eq!(c.len(), p);
                assert_eq!(c[0].0, 0);
                assert_eq!(c[p - 1].1, n);
                assert!(c.windows(2).all(|w| w[0].1 == w[1].0));
            }
        }
    }

    #[test]
    fn fused_dot_rounds_once_per_step() {
        // (1 + 2^-52)² = 1 + 2^-51 + 2^-104 rounds to 1 + 2^-51. Adding the exact negative
        // product: fused keeps −2^-104, unfused (and pairwise) cancel to 0.
        let e = 1.0 + 2f64.powi(-52);
        let (a, b) = ([e, e], [e, -e]);
        assert_eq!(serial_dot(&a, &b, true), -(2f64.powi(-104)));
        assert_eq!(serial_dot(&a, &b, false), 0.0);
        assert_eq!(pairwise_dot(&a, &b), 0.0);
    }

    #[test]
    fn white_paper_dot_product_in_f32() {
        use crate::inputs::{WHITE_PAPER_A as A, WHITE_PAPER_B as B};
        // Seed 004 Fig. 5 prints its inputs to 7 digits, and those f32 values have the exact
        // dot .0559578295…, not the figure's .0559587528…: the figure's bits cannot be
        // reproduced from the printed inputs. On the printed inputs (bits checked with Python
        // fractions): serial 0x3D6533F0, FMA 0x3D6533F6 (most accurate, as in the paper),
        // pairwise 0x3D6533E0 (here less accurate than serial, unlike the paper's example).
        assert_eq!(serial_dot(&A, &B, false).to_bits(), 0x3D65_33F0);
        assert_eq!(serial_dot(&A, &B, true).to_bits(), 0x3D65_33F6);
        assert_eq!(pairwise_dot(&A, &B).to_bits(), 0x3D65_33E0);
    }

    #[test]
    fn pi_converges_in_high_precision() {
        let pi = std::f64::consts::PI;
        // Leibniz with 2000 terms is off by about 1/2000.
        let l = leibniz::<f64x2>(2000).to_f64();
        assert!((l - pi).abs() < 5.1e-4 && (l - pi).abs() > 4.9e-4, "{l}");
        // Midpoint: error ≈ h²/6·… tiny; pairwise and chunked agree with serial to ~1e-15.
        let s = pi_midpoint_serial::<f64x2>(10_000).to_f64();
        let p = pi_midpoint_pairwise::<f64x2>(10_000).to_f64();
        let c = pi_midpoint_chunked::<f64x2>(10_000, &pool(3)).to_f64();
        for v in [s, p, c] {
            assert!((v - pi).abs() < 1e-8, "{v}");
        }
        let m = pi_midpoint_serial::<Mp<128>>(1000).to_f64();
        assert!((m - pi).abs() < 1e-6);
    }

    #[test]
    fn f32_serial_pi_degrades_while_the_tree_does_not() {
        // Seed 003 Fig. 13's shape: at 10^7 steps the serial f32 accumulation has lost digits
        // that the tree keeps.
        let pi = std::f64::consts::PI;
        let serial = (pi_midpoint_serial::<f32>(10_000_000) as f64 - pi).abs();
        let tree = (pi_midpoint_pairwise::<f32>(10_000_000) as f64 - pi).abs();
        assert!(serial > 100.0 * tree, "serial {serial:e} tree {tree:e}");
    }
}
