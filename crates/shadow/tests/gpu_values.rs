//! GPU tests of the shadow values (`--analysis shadow`; skip without a GPU, fail under
//! `MANTISSA_REQUIRE_GPU=1`) on the known-answer kernels of `examples/shadow/values.cu`: per
//! output element, the error the shadow measures (the stored difference shadow − value) must
//! equal the error computed independently on the CPU (exact sums and dot products of
//! `mantissa_num`, the program's own result from a Rust replica of its operation order, checked
//! bit for bit against the GPU's) within the double-word bound stated beside each case; and the
//! per-site counts the cases imply (cancellations, exact local errors) are exact. Every
//! `examples/shadow` spec also runs with shadow values and outputs bit-identical to the program
//! as written (`analyse` refuses anything else).

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::FlagSet;
use mantissa_harness::Spec;
use mantissa_num::exact::{exact_sum, ExactDot, ExactSum};
use mantissa_ptx::op::{decode_name, Arith, OpKind, Rounding, Space, ValueType};
use mantissa_shadow::lines::SiteResult;
use mantissa_shadow::text::{render, Shown};
use mantissa_shadow::values::OutputDigits;
use mantissa_shadow::{analyse, Analyses, ShadowRequest, ShadowRun};
use std::path::{Path, PathBuf};

/// u² of the double-word shadow, u = 2^-53.
const U2: f64 = 1.0 / (1u128 << 106) as f64;
const N: usize = 1024;

fn examples() -> PathBuf {
    Path::new("../../examples").to_path_buf()
}

fn shadow_only() -> Analyses {
    Analyses {
        demotion: false,
        shadow: true,
        exceptions: false,
    }
}

fn analysed(spec: &Path) -> ShadowRun {
    let Some(gpu) = require_gpu_or_skip() else {
        unreachable!("callers check for a GPU first")
    };
    let spec = Spec::load(spec).unwrap_or_else(|e| panic!("{e}"));
    let request = ShadowRequest {
        flags: FlagSet::DEFAULT,
        analyses: shadow_only(),
        time: false,
    };
    let run = analyse(&gpu, &spec, &request, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    println!("{}", render(&run, Shown::All));
    run
}

fn output<'a>(run: &'a ShadowRun, name: &str) -> &'a OutputDigits {
    run.outputs
        .iter()
        .find(|o| o.buffer == name)
        .unwrap_or_else(|| panic!("no output {name}"))
}

/// The site of `function` that is a `kind` on f64 rounded to nearest (`add.rn.f64`), as its
/// opcode decodes (exactly one).
fn site<'a>(run: &'a ShadowRun, function: &str, kind: OpKind) -> &'a SiteResult {
    let found: Vec<&SiteResult> = run
        .sites
        .iter()
        .filter(|s| {
            let op = decode_name(&s.opcode);
            s.site.function == function
                && op.kind == kind
                && op.ty == Some(ValueType::F64)
                && op.rounding == Some(Rounding::Rn)
        })
        .collect();
    assert_eq!(found.len(), 1, "{function} {kind:?}: {found:?}");
    found[0]
}

/// The measured error of element k (shadow − value) against the CPU's (exact − value).
fn check(o: &OutputDigits, k: usize, value: f64, expected: f64, bound: f64) {
    assert_eq!(
        o.values[k].to_bits(),
        value.to_bits(),
        "{}[{k}]: the GPU computed {:e}, the CPU replica {:e}",
        o.buffer,
        o.values[k],
        value
    );
    let (hi, lo) = o.differences[k];
    let measured = hi + lo;
    assert!(
        (measured - expected).abs() <= bound,
        "{}[{k}]: measured error {measured:e}, CPU {expected:e}, bound {bound:e}",
        o.buffer
    );
}

/// The setup's zero-sum array (values.cu `make_zero_sum`), in Rust.
fn zero_sum_array(n: usize) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for k in 0..n / 2 {
        let m = (k as u32).wrapping_mul(2_654_435_761) % 1_000_003 + 1;
        let e = ((k as u32).wrapping_mul(7919) % 81) as i32 - 40;
        let v = f64::from(m) * 2f64.powi(e);
        x[(7 * (2 * k)) % n] = v;
        x[(7 * (2 * k + 1)) % n] = -v;
    }
    x
}

fn sequence(start: f64, step: f64) -> Vec<f64> {
    (0..N).map(|k| start + k as f64 * step).collect()
}

#[test]
fn shadow_errors_match_the_exact_errors_of_the_known_answer_kernels() {
    if require_gpu_or_skip().is_none() {
        return;
    }
    let run = analysed(&examples().join("shadow/values.toml"));

    // Serial zero sum: the exact sum is 0, so the result is its own error. Each double-word
    // addition errs by at most 3u^2 (+13u^3) of its exact result, the running sum S_k; the
    // stored difference by 2u^2 of itself: |measured - (0 - value)| <= 4u^2 (sum |S_k| + |value|).
    let x = zero_sum_array(N);
    assert_eq!(exact_sum(&x), 0.0);
    let mut value = 0.0f64;
    let mut exact = ExactSum::new();
    let mut partial = 0.0;
    for &xi in &x {
        value += xi;
        exact.add(xi);
        partial += exact.round().abs();
    }
    assert!(value != 0.0, "the serial sum of this array is not exact");
    let bound = 4.0 * U2 * (partial + value.abs());
    check(output(&run, "s"), 0, value, -value, bound);
    assert!(
        bound < 1e-6 * value.abs(),
        "the bound is far below the error it checks"
    );

    // a a + b: the double-word shadow of a a + b is exact (TwoProd, then a sum that fits), so
    // the measured error is the exact one within the stored difference's 2u^2.
    let (a, b) = (
        sequence(1.0, 2f64.powi(-30)),
        sequence(-1.0, -(2f64.powi(-29))),
    );
    let (fma, mul_add) = (output(&run, "y_fma"), output(&run, "y_mul_add"));
    for k in 0..N {
        let exact = (k * k) as f64 * 2f64.powi(-60);
        let fused = a[k].mul_add(a[k], b[k]);
        assert_eq!(fused, exact);
        check(fma, k, fused, 0.0, 0.0);
        let rounded = a[k] * a[k] + b[k];
        check(mul_add, k, rounded, exact - rounded, 4.0 * U2 * exact);
    }
    // The addition is exact (Sterbenz) and cancels the product's rounding error wherever the
    // product was inexact (k not a multiple of 16): a cancellation of >= 40 bits each time.
    let add = site(&run, "square_mul_add", OpKind::Arith(Arith::Add))
        .values
        .as_ref()
        .unwrap();
    assert_eq!(add.local.max, 0.0, "{add:?}");
    assert_eq!(add.cancellations, (N - N / 16) as u64, "{add:?}");
    assert!(add.cancel_max_bits >= 40, "{add:?}");
    let f = site(&run, "square_fma", OpKind::Fma)
        .values
        .as_ref()
        .unwrap();
    assert_eq!(
        (f.local.max, f.accumulated.max, f.cancellations),
        (0.0, 0.0, 0)
    );

    // (1 + x) - 1: the shadow is x exactly; the subtraction is exact and cancels.
    let tiny = sequence(1.0e-10, 1.0e-13);
    let y = output(&run, "y_one_plus_x");
    for (k, &t) in tiny.iter().enumerate() {
        let value = (1.0 + t) - 1.0;
        check(y, k, value, t - value, 4.0 * U2 * t);
    }
    let sub = site(&run, "one_plus_x", OpKind::Arith(Arith::Sub))
        .values
        .as_ref()
        .unwrap();
    assert_eq!(sub.local.max, 0.0, "{sub:?}");
    let inexact = tiny.iter().filter(|&&t| (1.0 + t) - 1.0 != t).count() as u64;
    assert_eq!(sub.cancellations, inexact, "{sub:?}");
    assert!(sub.cancel_max_bits >= 30, "{sub:?}");
    assert!(y.min_digits.unwrap() < 8.0, "{y:?}");

    // Dot product: per step, the double-word product errs by 4u^2 |u_k v_k| and the sum by
    // 3u^2 (+13u^3) |S_k|; the CPU's exact - value is rounded once (u of itself).
    let (u, v) = (sequence(1.0, -0.001953125), sequence(0.1, 0.003));
    let mut value = 0.0f64;
    let mut exact = ExactDot::new();
    let mut budget = 0.0;
    for k in 0..N {
        value = u[k].mul_add(v[k], value);
        exact.add_slices(&[u[k]], &[v[k]]).unwrap();
        budget += 4.0 * U2 * (u[k] * v[k]).abs() + 3.01 * U2 * exact.round().abs();
    }
    exact.add_slices(&[-value], &[1.0]).unwrap();
    let expected = exact.round();
    let bound = budget + 2.0 * U2 * expected.abs() + f64::EPSILON * expected.abs();
    check(output(&run, "d"), 0, value, expected, bound);
}

#[test]
fn every_shadow_example_runs_with_shadow_values_and_bit_identical_outputs() {
    if require_gpu_or_skip().is_none() {
        return;
    }
    let mut specs: Vec<PathBuf> = std::fs::read_dir(examples().join("shadow"))
        .unwrap()
        .filter_map(|f| f.ok().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    specs.sort();
    assert!(specs.len() >= 2, "{specs:?}");
    for spec in &specs {
        // `analyse` fails with ChangedOutputs unless every output is bit-identical.
        let run = analysed(spec);
        assert!(
            run.sites.iter().any(|s| s.values.is_some()),
            "{}: nothing measured",
            spec.display()
        );
        assert!(!run.outputs.is_empty(), "{}", spec.display());
    }
}

#[test]
fn shadows_follow_values_through_shared_memory() {
    if require_gpu_or_skip().is_none() {
        return;
    }
    let run = analysed(&examples().join("shadow/shared.toml"));
    // examples/shadow/shared.cu: per block of 128, t = (1 + x) - 1 (its shadow is x exactly),
    // summed by a tree through shared memory. Each double-word addition errs by 3u^2 (+13u^3)
    // of its exact result; the tree's nodes of one level sum to the block's sum (x > 0), so
    // over 7 levels: |measured - (exact - value)| <= 4u^2 (8 sum x) + u |exact - value|.
    let x = sequence(1.0e-10, 1.0e-13);
    let s = output(&run, "s");
    for (b, block) in x.chunks(128).enumerate() {
        let mut tile: Vec<f64> = block.iter().map(|&v| (1.0 + v) - 1.0).collect();
        let mut stride = 64;
        while stride > 0 {
            for t in 0..stride {
                tile[t] += tile[t + stride];
            }
            stride /= 2;
        }
        let value = tile[0];
        let mut exact = ExactSum::new();
        for &v in block {
            exact.add(v);
        }
        exact.add(-value);
        let expected = exact.round();
        assert!(
            expected != 0.0,
            "block {b}: the staged values carry no error to measure"
        );
        let sum: f64 = block.iter().sum();
        let bound = 4.0 * U2 * 8.0 * sum + f64::EPSILON * expected.abs();
        check(s, b, value, expected, bound);
    }
    // The shared loads find their shadows: none re-seeds.
    let shared: Vec<_> = run
        .reseeds
        .iter()
        .filter(|r| decode_name(&r.opcode).kind == OpKind::Load(Space::Shared))
        .collect();
    assert!(!shared.is_empty(), "{:?}", run.reseeds);
    for r in shared {
        assert!(r.executions > 0 && r.reseeded == 0, "{r:?}");
    }
}
