//! f64x2 addition and product against the `twofloat` crate, interleaved: the criterion bench
//! (`benches/arith.rs`) runs each candidate's samples back to back, so drift of the machine
//! between them (frequency, other load) lands on one candidate; here every round times each
//! candidate once, in an order that rotates from round to round, and the medians and per-round
//! ratios come from the same rounds. Element-wise over 4096 independent pairs, as the bench.
//!
//! Run: `cargo run --release -p mantissa-num --example dw_vs_twofloat [ROUNDS=301]`.

use std::hint::black_box;
use std::time::Instant;

use mantissa_num::f64x2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use twofloat::TwoFloat;

const N: usize = 4096;
/// Passes over the N pairs per timed sample (about 0.5 ms).
const PASSES: usize = 100;

/// ns per operation of one sample: `PASSES` element-wise passes of `f` over `a`, `b`.
#[inline(never)] // one function per candidate: no candidate's loop is shaped by main's code around it
fn sample<T: Copy>(a: &[T], b: &[T], out: &mut [T], f: impl Fn(T, T) -> T) -> f64 {
    let t = Instant::now();
    for _ in 0..PASSES {
        for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
            *o = f(*x, *y);
        }
        black_box(&mut *out);
    }
    t.elapsed().as_secs_f64() * 1e9 / (PASSES * N) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(301);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut pairs = || -> Vec<f64x2> {
        (0..N)
            .map(|_| {
                let h = rng.random_range(0.5..2.0) * 1e3;
                f64x2::from_sum(h, h * rng.random_range(-1.0..1.0) * 1e-17)
            })
            .collect()
    };
    let (a, b) = (pairs(), pairs());
    let (ta, tb): (Vec<TwoFloat>, Vec<TwoFloat>) = (
        a.iter().map(|x| TwoFloat::new_add(x.hi, x.lo)).collect(),
        b.iter().map(|x| TwoFloat::new_add(x.hi, x.lo)).collect(),
    );
    let (mut out, mut tout) = (a.clone(), ta.clone());

    println!("{rounds} rounds, each timing every candidate once (rotating order); ns/op medians");
    for op in ["add", "mul"] {
        // 0: f64x2 (IEEE special values), 1: f64x2 fast, 2: twofloat.
        let mut times: [Vec<f64>; 3] = Default::default();
        let mut fast_wins = 0;
        for r in 0..rounds {
            let mut t = [0.0; 3];
            for k in 0..3 {
                let c = (k + r) % 3;
                t[c] = match (op, c) {
                    ("add", 0) => sample(&a, &b, &mut out, |x: f64x2, y| x + y),
                    ("add", 1) => sample(&a, &b, &mut out, |x: f64x2, y| x.add_fast(y)),
                    ("add", _) => sample(&ta, &tb, &mut tout, |x: TwoFloat, y| x + y),
                    (_, 0) => sample(&a, &b, &mut out, |x: f64x2, y| x * y),
                    (_, 1) => sample(&a, &b, &mut out, |x: f64x2, y| x.mul_fast(y)),
                    _ => sample(&ta, &tb, &mut tout, |x: TwoFloat, y| x * y),
                };
            }
            if t[1] <= t[2] {
                fast_wins += 1;
            }
            for c in 0..3 {
                times[c].push(t[c]);
            }
        }
        let ratios = |c: usize| -> f64 {
            median(times[c].iter().zip(&times[2]).map(|(x, t)| x / t).collect())
        };
        let [ieee, fast, tf] = times.clone().map(median);
        println!(
            "{op}: f64x2 {ieee:.3}  f64x2 fast {fast:.3}  twofloat {tf:.3}  | per-round ratio to twofloat (median): f64x2 {:.3}, fast {:.3}; fast at least as fast in {fast_wins}/{rounds} rounds",
            ratios(0),
            ratios(1)
        );
    }
}
