//! Exact summation against a plain f64 loop over the same 2^24 doubles (128 MiB, far beyond every
//! cache level, so both stream from memory), in one run.
//!
//! Run: `cargo bench -p mantissa-num --bench exact_sum`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mantissa_num::{exact_dot, ExactSum};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;

const N: usize = 1 << 24;

/// The input on which xsum 0.1.6's large accumulator was 2% off: ±U(1e-6, 1e-5) and ±U(1e5, 1e6).
fn mixed() -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(24);
    (0..N)
        .map(|i| {
            let m = if i % 2 == 0 {
                rng.random_range(1e-6..1e-5)
            } else {
                rng.random_range(1e5..1e6)
            };
            if rng.random::<bool>() {
                -m
            } else {
                m
            }
        })
        .collect()
}

fn bench_sum(c: &mut Criterion) {
    let xs = mixed();
    let ys: Vec<f64> = xs.iter().rev().copied().collect();
    let mut g = c.benchmark_group("sum_2^24");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("naive_f64_loop", |b| {
        b.iter(|| {
            let mut s = 0.0f64;
            for &x in black_box(&xs) {
                s += x;
            }
            black_box(s)
        })
    });
    g.bench_function("exact_sum", |b| {
        b.iter(|| {
            let mut acc = ExactSum::new();
            acc.add_slice(black_box(&xs));
            black_box(acc.round())
        })
    });
    g.bench_function("naive_f64_dot", |b| {
        b.iter(|| {
            let mut s = 0.0f64;
            for (x, y) in black_box(&xs).iter().zip(black_box(&ys)) {
                s += x * y;
            }
            black_box(s)
        })
    });
    g.bench_function("exact_dot", |b| {
        b.iter(|| black_box(exact_dot(black_box(&xs), black_box(&ys))))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(15).warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(4));
    targets = bench_sum
}
criterion_main!(benches);
