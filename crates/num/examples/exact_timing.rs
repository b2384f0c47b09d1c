//! Rough timing of `ExactSum::add_slice` + `round` (and `ExactDot::add_slices` + `round`) against
//! naive loops over the same data: medians of 11 runs, the candidates run alternately so that
//! load from other processes hits both alike. Not a benchmark suite. Run with
//! `cargo run --release -p mantissa-num --example exact_timing`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mantissa_num::exact::{ExactDot, ExactSum};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const RUNS: usize = 11;

fn median_ms(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// Median times of `a` and `b`, run alternately.
fn compare<A, B>(mut a: impl FnMut() -> A, mut b: impl FnMut() -> B) -> (f64, f64) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        black_box(a());
        ta.push(t.elapsed());
        let t = Instant::now();
        black_box(b());
        tb.push(t.elapsed());
    }
    (median_ms(ta), median_ms(tb))
}

fn main() {
    let n = 1usize << 24;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    // ±U(1e−6, 1e−5) mixed with ±U(1e5, 1e6) (the xsum-bug input), and random bit patterns
    // over the whole finite range.
    let mixed: Vec<f64> = (0..n)
        .map(|_| {
            let x = if rng.random_bool(0.5) {
                rng.random_range(1e-6..1e-5)
            } else {
                rng.random_range(1e5..1e6)
            };
            if rng.random_bool(0.5) {
                -x
            } else {
                x
            }
        })
        .collect();
    let wide: Vec<f64> = (0..n)
        .map(|_| loop {
            let x = f64::from_bits(rng.random::<u64>());
            if x.is_finite() {
                break x;
            }
        })
        .collect();
    let other: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();

    println!("n = 2^24, medians of {RUNS} runs");
    for (name, xs) in [
        ("sum, mixed 1e-6..1e6", &mixed),
        ("sum, full-range bits", &wide),
    ] {
        let (naive, exact) = compare(
            || {
                let mut s = 0.0;
                for &x in black_box(xs.as_slice()) {
                    s += x;
                }
                s
            },
            || {
                let mut s = ExactSum::new();
                s.add_slice(black_box(xs.as_slice()));
                s.round()
            },
        );
        println!(
            "{name:>22}: naive {naive:7.2} ms, ExactSum {exact:7.2} ms, ratio {:.2}",
            exact / naive
        );
    }
    let (naive, exact) = compare(
        || {
            let mut s = 0.0;
            for (&x, &y) in black_box(mixed.as_slice())
                .iter()
                .zip(black_box(other.as_slice()))
            {
                s += x * y;
            }
            s
        },
        || {
            let mut d = ExactDot::new();
            d.add_slices(black_box(&mixed), black_box(&other))
                .unwrap_or_default();
            d.round()
        },
    );
    println!(
        "{:>22}: naive {naive:7.2} ms, ExactDot {exact:7.2} ms, ratio {:.2}",
        "dot, mixed · U(-1,1)",
        exact / naive
    );
}
