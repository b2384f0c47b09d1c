//! Element-wise throughput of the double-word operations, side by side in one run with the
//! `twofloat` crate (double-double), dashu-float at 106 bits, and plain f32/f64; `f64x2_fast`
//! rows are `add_fast`/`mul_fast`, without the special-value rule (twofloat has none either).
//!
//! Each measurement applies one operation to N = 4096 independent operand pairs (so the loop is
//! throughput-bound, as a GPU kernel or vectorised CPU loop would be, not latency-bound), and
//! criterion reports the time per batch; docs/BENCHMARKS.md divides by N.
//!
//! Run: `cargo bench -p mantissa-num --bench arith`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dashu_base::SquareRoot;
use dashu_float::{round::mode::HalfEven, FBig};
use mantissa_num::{f32x2, f64x2};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use twofloat::TwoFloat;

const N: usize = 4096;

fn operands() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut v = || {
        (0..N)
            .map(|_| rng.random_range(0.5..2.0) * 1e3)
            .collect::<Vec<f64>>()
    };
    (v(), v(), v(), v())
}

fn bench_ops(c: &mut Criterion) {
    let (ah, al, bh, bl) = operands();
    let a64: Vec<f64x2> = ah
        .iter()
        .zip(&al)
        .map(|(h, l)| f64x2::from_sum(*h, l * 1e-17))
        .collect();
    let b64: Vec<f64x2> = bh
        .iter()
        .zip(&bl)
        .map(|(h, l)| f64x2::from_sum(*h, l * 1e-17))
        .collect();
    let atf: Vec<TwoFloat> = a64.iter().map(|x| TwoFloat::new_add(x.hi, x.lo)).collect();
    let btf: Vec<TwoFloat> = b64.iter().map(|x| TwoFloat::new_add(x.hi, x.lo)).collect();
    let a32: Vec<f32x2> = ah
        .iter()
        .map(|&x| f32x2::from_f64(x * (1.0 + 1e-9)))
        .collect();
    let b32: Vec<f32x2> = bh
        .iter()
        .map(|&x| f32x2::from_f64(x * (1.0 - 1e-9)))
        .collect();
    type Big = FBig<HalfEven, 2>;
    let big = |x: f64x2| -> Big {
        (Big::try_from(x.hi).unwrap_or_default() + Big::try_from(x.lo).unwrap_or_default())
            .with_precision(106)
            .value()
    };
    let amp: Vec<Big> = a64.iter().map(|&x| big(x)).collect();
    let bmp: Vec<Big> = b64.iter().map(|&x| big(x)).collect();
    let af32: Vec<f32> = ah.iter().map(|&x| x as f32).collect();
    let bf32: Vec<f32> = bh.iter().map(|&x| x as f32).collect();

    macro_rules! elementwise {
        ($group:expr, $name:expr, $a:expr, $b:expr, $f:expr) => {
            $group.bench_function(BenchmarkId::from_parameter($name), |bencher| {
                let mut out = $a.clone();
                bencher.iter(|| {
                    for ((o, x), y) in out.iter_mut().zip($a.iter()).zip($b.iter()) {
                        *o = $f(x.clone(), y.clone());
                    }
                    black_box(&out);
                })
            });
        };
    }

    for op in ["add", "mul", "div", "sqrt"] {
        let mut g = c.benchmark_group(op);
        g.throughput(Throughput::Elements(N as u64));
        match op {
            "add" => {
                elementwise!(g, "f64", ah, bh, |x: f64, y: f64| x + y);
                elementwise!(g, "f32", af32, bf32, |x: f32, y: f32| x + y);
                elementwise!(g, "f64x2", a64, b64, |x: f64x2, y: f64x2| x + y);
                elementwise!(g, "f64x2_fast", a64, b64, |x: f64x2, y: f64x2| x
                    .add_fast(y));
                elementwise!(g, "f64x2_sloppy", a64, b64, |x: f64x2, y: f64x2| x
                    .add_sloppy(y));
                elementwise!(g, "twofloat", atf, btf, |x: TwoFloat, y: TwoFloat| x + y);
                elementwise!(g, "f32x2", a32, b32, |x: f32x2, y: f32x2| x + y);
                elementwise!(g, "dashu106", amp, bmp, |x: Big, y: Big| x + y);
            }
            "mul" => {
                elementwise!(g, "f64", ah, bh, |x: f64, y: f64| x * y);
                elementwise!(g, "f32", af32, bf32, |x: f32, y: f32| x * y);
                elementwise!(g, "f64x2", a64, b64, |x: f64x2, y: f64x2| x * y);
                elementwise!(g, "f64x2_fast", a64, b64, |x: f64x2, y: f64x2| x
                    .mul_fast(y));
                elementwise!(g, "f64x2_seed_alg8", a64, b64, |x: f64x2, y: f64x2| x
                    .mul_seed(y));
                elementwise!(g, "twofloat", atf, btf, |x: TwoFloat, y: TwoFloat| x * y);
                elementwise!(g, "f32x2", a32, b32, |x: f32x2, y: f32x2| x * y);
                elementwise!(g, "dashu106", amp, bmp, |x: Big, y: Big| x * y);
            }
            "div" => {
                elementwise!(g, "f64", ah, bh, |x: f64, y: f64| x / y);
                elementwise!(g, "f32", af32, bf32, |x: f32, y: f32| x / y);
                elementwise!(g, "f64x2", a64, b64, |x: f64x2, y: f64x2| x / y);
                elementwise!(g, "f64x2_dw2", a64, b64, |x: f64x2, y: f64x2| x.div_dw2(y));
                elementwise!(g, "twofloat", atf, btf, |x: TwoFloat, y: TwoFloat| x / y);
                elementwise!(g, "f32x2", a32, b32, |x: f32x2, y: f32x2| x / y);
                elementwise!(g, "dashu106", amp, bmp, |x: Big, y: Big| x / y);
            }
            _ => {
                elementwise!(g, "f64", ah, bh, |x: f64, _y: f64| x.sqrt());
                elementwise!(g, "f32", af32, bf32, |x: f32, _y: f32| x.sqrt());
                elementwise!(g, "f64x2", a64, b64, |x: f64x2, _y: f64x2| x.sqrt());
                elementwise!(g, "twofloat", atf, btf, |x: TwoFloat, _y: TwoFloat| x
                    .sqrt());
                elementwise!(g, "f32x2", a32, b32, |x: f32x2, _y: f32x2| x.sqrt());
                elementwise!(g, "dashu106", amp, bmp, |x: Big, _y: Big| x.sqrt());
            }
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = bench_ops
}
criterion_main!(benches);
