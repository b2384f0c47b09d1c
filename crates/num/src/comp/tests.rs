//! Table 4 reproduced step by step, the accuracy it reaches against exact references, its
//! documented weaknesses, and special values.

use super::*;
use crate::big::{exact, rel_diff, with_bits};
use dashu_base::SquareRoot;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

// ---- Table 4, one named temporary per rounding (seed 000, Table 4) --------------------------

fn table_add<F: Base>(xv: F, xe: F, yv: F, ye: F) -> (F, F) {
    let zv = xv + yv;
    let t = zv - xv;
    let r1 = zv - t;
    let r2 = xv - r1;
    let r3 = yv - t;
    let r4 = r2 + r3;
    let r5 = r4 + xe;
    let ze = r5 + ye;
    (zv, ze)
}

fn table_sub_written_out<F: Base>(xv: F, xe: F, yv: F, ye: F) -> (F, F) {
    let zv = xv - yv;
    let t = zv - xv;
    let r1 = zv - t;
    let r2 = xv - r1;
    let r3 = yv + t;
    let r4 = r2 - r3;
    let r5 = r4 + xe;
    let ze = r5 - ye;
    (zv, ze)
}

fn table_mul<F: Base>(xv: F, xe: F, yv: F, ye: F) -> (F, F) {
    let zv = xv * yv;
    let p1 = xv * ye;
    let p2 = xe * yv;
    let p3 = xe * ye;
    let s1 = p1 + p2;
    let ze = s1 + p3;
    (zv, ze)
}

fn table_div<F: Base>(xv: F, _xe: F, yv: F, _ye: F) -> (F, F) {
    let t = F::ONE / yv;
    let s = t * xv;
    let sy = s * yv;
    let diff = xv - sy;
    let td = t * diff;
    let zv = s + td;
    let ze = td;
    (zv, ze)
}

fn same_bits<F: Base>(a: Comp<F>, b: (F, F)) -> bool {
    // Bitwise through the exact f64 widening, so that −0 and +0 are told apart.
    a.value.to_f64().to_bits() == b.0.to_f64().to_bits()
        && a.error.to_f64().to_bits() == b.1.to_f64().to_bits()
}

/// Hand-picked pairs: error-free values, thesis-style conversions of f64, unnormalised pairs
/// (error larger than value), mixed signs, zeros and magnitudes far apart.
fn hand_pairs() -> Vec<(f64, f64)> {
    vec![
        (1.0, 0.0),
        (3.0, 0.0),
        (0.1, 0.0),
        (-2.5, 1.0e-9),
        (1.0 + 2f64.powi(-12), 0.0),
        (0.0, 2f64.powi(-30)),
        (1.0e-3, -4.0e-2),
        (-7.0, 3.0e-7),
        (6.02e23, 1.0e15),
        (1.0e-20, 1.0e-28),
        (-0.0, 0.0),
    ]
}

fn random_pairs<F: Base>(seed: u64, n: usize) -> Vec<Comp<F>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let m: f64 = rng.random_range(-1.0..1.0);
            let e: i32 = rng.random_range(-30..30);
            let x = m * 2f64.powi(e);
            if rng.random_bool(0.25) {
                // An unnormalised pair, as sums after cancellation produce.
                Comp::new(F::from_f64(x), F::from_f64(x * rng.random_range(-4.0..4.0)))
            } else {
                Comp::from_f64(x)
            }
        })
        .collect()
}

fn check_formulas<F: Base>() {
    let mut operands: Vec<Comp<F>> = hand_pairs()
        .into_iter()
        .map(|(v, e)| Comp::new(F::from_f64(v), F::from_f64(e)))
        .collect();
    operands.extend(random_pairs::<F>(7, 60));
    for &x in &operands {
        for &y in &operands {
            let args = (x.value, x.error, y.value, y.error);
            let (a, b, c, d) = args;
            let sum = table_add(a, b, c, d);
            if sum.0.is_finite() && sum.1.is_finite() {
                assert!(same_bits(x + y, sum), "{x} + {y}");
                assert!(
                    same_bits(x - y, table_sub_written_out(a, b, c, d)),
                    "{x} - {y}"
                );
            }
            let prod = table_mul(a, b, c, d);
            if prod.0.is_finite() && prod.1.is_finite() {
                assert!(same_bits(x * y, prod), "{x} * {y}");
            }
            if c != F::ZERO {
                let quo = table_div(a, b, c, d);
                if quo.0.is_finite() && quo.1.is_finite() {
                    assert!(same_bits(x / y, quo), "{x} / {y}");
                }
            }
        }
    }
}

#[test]
fn operators_reproduce_table_4_step_by_step() {
    check_formulas::<f32>();
    check_formulas::<f64>();
}

#[test]
fn hand_worked_values() {
    let p30 = 2f32.powi(-30);
    // 1 + 2^-30: the value part cannot hold it, TwoSum's remainder carries it exactly.
    let z = Comp32::from_base(1.0) + Comp32::from_base(p30);
    assert_eq!((z.value, z.error), (1.0, p30));
    // Subtracting it back cancels the value part; the information survives in the error part.
    let w = z - Comp32::from_base(1.0);
    assert_eq!((w.value, w.error), (0.0, p30));
    // 0.1 converted as the thesis does: value = 0.1f32, error = (0.1 − 0.1f32) rounded to f32.
    let c = Comp32::from_f64(0.1);
    assert_eq!(c.value, 0.1f32);
    assert_eq!(c.error, (0.1f64 - 0.1f32 as f64) as f32);
    assert_eq!(c.error, -1.490_116_1e-9);
    // Product: (2 + 2^-30)·(3 + 0) = (6, 3·2^-30), every term exact here.
    let p = Comp32::new(2.0, p30) * Comp32::from_base(3.0);
    assert_eq!((p.value, p.error), (6.0, 3.0 * p30));
    // Division 1/3 by hand: t = fl(1/3) = 11184811·2^-25; s·3 = 1 + 2^-25 rounds to 1, so
    // diff = 0 and the quotient is just fl(1/3) with a zero error part.
    let q = Comp32::from_base(1.0) / Comp32::from_base(3.0);
    assert_eq!(q.value, 11184811.0 * 2f32.powi(-25));
    assert_eq!(q.error, 0.0);
    // Division 1/10 in f32: t = fl(0.1) = 13421773·2^-27, s = t, s·10 = 1 + 2^-26 rounds to 1,
    // diff = 0 again.
    let q = Comp32::from_base(1.0) / Comp32::from_base(10.0);
    assert_eq!((q.value, q.error), (0.1f32, 0.0));
}

// ---- accuracy against exact references -------------------------------------------------------

/// −log2 of the relative error of `c` against the exact `reference`.
fn bits_of<T: Real>(c: &T, reference: &Big) -> f64 {
    -rel_diff(&c.to_big().expect("finite"), reference).log2()
}

/// Operands like the thesis's inputs: f64 values from (0.1, 1) and (1, 6) converted to comp.
fn thesis_operands<F: Base>(seed: u64, n: usize) -> Vec<(Comp<F>, Comp<F>)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let a: f64 = rng.random_range(0.1..1.0);
            let b: f64 = rng.random_range(1.0..6.0);
            (Comp::from_f64(a), Comp::from_f64(b))
        })
        .collect()
}

fn exact_of<F: Base>(x: Comp<F>) -> Big {
    x.to_big().expect("finite operand")
}

#[test]
fn accuracy_reached_against_exact_results() {
    fn run<F: Base>(min_add_bits: f64, mul_range: (f64, f64), min_div_bits: f64) {
        let p = F::DIGITS as f64;
        let (mut add, mut mul, mut div) = (f64::INFINITY, (f64::INFINITY, 0.0f64), f64::INFINITY);
        for (x, y) in thesis_operands::<F>(11, 400) {
            let (ex, ey) = (exact_of(x), exact_of(y));
            add = add.min(bits_of(&(x + y), &(ex.clone() + ey.clone())));
            add = add.min(bits_of(&(x - y), &(ex.clone() - ey.clone())));
            let b = bits_of(&(x * y), &(ex.clone() * ey.clone()));
            mul = (mul.0.min(b), mul.1.max(b));
            let q = with_bits(ex, 4 * F::DIGITS as usize) / with_bits(ey, 4 * F::DIGITS as usize);
            div = div.min(bits_of(&(x / y), &q));
        }
        // Sums of operands of unlike magnitude keep nearly all 2p bits: TwoSum is exact and only
        // the error parts' additions round.
        assert!(
            add >= min_add_bits,
            "{}: add reached only {add:.1} bits",
            F::NAME
        );
        // Products keep about p bits, never 2p (the weakness tested below).
        assert!(
            mul.0 >= mul_range.0 && mul.1 <= mul_range.1,
            "{}: mul {mul:?} bits (p = {p})",
            F::NAME
        );
        assert!(
            div >= min_div_bits,
            "{}: div reached only {div:.1} bits",
            F::NAME
        );
    }
    run::<f32>(43.0, (23.0, 42.0), 21.0);
    run::<f64>(101.0, (52.0, 80.0), 50.0);
}

#[test]
fn sqrt_reaches_nearly_2p_bits() {
    fn run<F: Base>(min_bits: f64) {
        for (x, y) in thesis_operands::<F>(12, 300) {
            for v in [x, y, x * y] {
                let r = with_bits(exact_of(v), 4 * F::DIGITS as usize).sqrt();
                let b = bits_of(&v.sqrt(), &r);
                assert!(b >= min_bits, "{}: sqrt({v}) only {b:.1} bits", F::NAME);
            }
        }
    }
    run::<f32>(45.0);
    run::<f64>(103.0);
}

// ---- weaknesses ------------------------------------------------------------------------------

/// Seed 000 §8.1: the product formula has no term for the rounding error of value·value, so a
/// product of error-free operands is exactly the base-format product: p bits, not 2p.
#[test]
fn weakness_products_drop_the_rounding_error_of_the_value_product() {
    let a = 1.0 + 2f32.powi(-12);
    let x = Comp32::from_base(a);
    let sq = x * x;
    // Exact square 1 + 2^-11 + 2^-24: the 2^-24 is half an f32 ulp, lost in the value part and
    // never put in the error part.
    assert_eq!((sq.value, sq.error), (1.0 + 2f32.powi(-11), 0.0));
    let reference = exact(a as f64) * exact(a as f64);
    let bits = bits_of(&sq, &reference);
    assert!(bits < 25.0, "{bits}");
    // A double-word product (TwoProd) would have kept it exactly.
    let (p, e) = two_prod(a, a);
    assert_eq!(exact(p as f64) + exact(e as f64), reference);
    // Normalising first does not help: the operand already is (a, 0).
    let sqn = CompNorm32::from_base_pair(a) * CompNorm32::from_base_pair(a);
    assert_eq!((sqn.value, sqn.error), (sq.value, sq.error));

    // Seed 000 §8.1's multiplication chain on error-free inputs from (0.1, 1) and (1, 6):
    // the error part stays 0 and comp32 is, bit for bit, the f32 chain.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let (mut f, mut c, mut reference) = (1.0f32, Comp32::from_base(1.0), Big::ONE);
    for i in 0..100 {
        let v: f32 = if i % 2 == 0 {
            rng.random_range(0.1..1.0)
        } else {
            rng.random_range(1.0..6.0)
        };
        f *= v;
        c = c * Comp32::from_base(v);
        reference *= exact(v as f64);
    }
    assert_eq!((c.value, c.error), (f, 0.0));
    let bits = bits_of(&c, &reference);
    assert!(
        bits < 26.0,
        "100-product chain kept {bits:.1} bits; nominal is 48"
    );
}

/// Seed 000 §8.2.2 (do-undo discussion): the quotient ignores both error parts, and its
/// residual `x − s·y` is rounded, so Table 4 division is *less* accurate than the base format's
/// own correctly rounded division.
#[test]
fn weakness_division_ignores_error_parts_and_loses_to_plain_division() {
    // 0.1 held to ~48 bits, divided by 1: the error part is simply dropped.
    let x = Comp32::from_f64(0.1);
    assert!(x.error != 0.0);
    let q = x / Comp32::from_base(1.0);
    assert_eq!((q.value, q.error), (0.1f32, 0.0));
    assert!(bits_of(&x, &exact(0.1)) > 45.0);
    assert!(bits_of(&q, &exact(0.1)) < 27.0);

    // Over many quotients the table's worst relative error exceeds 2u, while f32's own division
    // never exceeds u (u = 2^-24). Measured: about 3.3u for this seed.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let (mut worst_f32, mut worst_comp) = (0.0f64, 0.0f64);
    for _ in 0..5000 {
        let a: f32 = rng.random_range(0.1..1.0);
        let b: f32 = rng.random_range(1.0..6.0);
        let r = with_bits(exact(a as f64), 128) / with_bits(exact(b as f64), 128);
        worst_f32 = worst_f32.max(rel_diff(&exact((a / b) as f64), &r));
        let c = Comp32::from_base(a) / Comp32::from_base(b);
        worst_comp = worst_comp.max(rel_diff(&exact_of(c), &r));
    }
    let u = 2f64.powi(-24);
    assert!(worst_f32 <= u);
    assert!(
        worst_comp > 2.0 * u,
        "table division worst {:.2}u",
        worst_comp / u
    );
}

/// After a cancellation the information lives in the error part; Table 4 division reads only
/// value parts and returns 0. Normalising first (CompNorm) moves it into the value part.
#[test]
fn weakness_cancelled_value_part_is_invisible_to_division() {
    let one = Comp32::from_base(1.0);
    let small = Comp32::from_base(2f32.powi(-30));
    let d = (one + small) - one; // (0, 2^-30)
    assert_eq!((d.value, d.error), (0.0, 2f32.powi(-30)));
    let three = Comp32::from_base(3.0);
    let q = d / three;
    assert_eq!((q.value, q.error), (0.0, 0.0));

    let dn = (CompNorm32::from(one) + small.into()) - one.into();
    let qn = dn / three.into();
    let reference = with_bits(exact(2f64.powi(-30)), 200) / exact(3.0);
    assert!(bits_of(&qn, &reference) > 20.0);
}

// ---- CompNorm ------------------------------------------------------------------------------

impl CompNorm32 {
    fn from_base_pair(a: f32) -> Self {
        Self::new(a, 0.0)
    }
}

#[test]
fn comp_norm_applies_the_table_to_two_sum_normalised_operands() {
    for &x in &random_pairs::<f64>(21, 40) {
        for &y in &random_pairs::<f64>(22, 40) {
            let (nx, ny) = (x.normalized(), y.normalized());
            let (a, b) = (CompNorm64::from(x), CompNorm64::from(y));
            for (got, want) in [
                (a + b, nx + ny),
                (a - b, nx - ny),
                (a * b, nx * ny),
                (a / b, nx / ny),
            ] {
                let want = (want.value, want.error);
                assert!(same_bits(got.comp(), want), "{x} {y}");
            }
        }
    }
    // Normalisation keeps the exact value.
    for &x in &random_pairs::<f32>(23, 200) {
        assert_eq!(x.normalized().to_big(), x.to_big());
        let n = x.normalized();
        assert_eq!(n.value, n.value + n.error);
    }
}

// ---- Real, conversions, ordering -----------------------------------------------------------

#[test]
fn real_interface() {
    assert_eq!(Comp32::precision_name(), "comp32");
    assert_eq!(Comp64::precision_name(), "comp64");
    assert_eq!(CompNorm32::precision_name(), "comp32n");
    assert_eq!(CompNorm64::precision_name(), "comp64n");
    assert_eq!(Comp32::significand_bits(), 48);
    assert_eq!(CompNorm64::significand_bits(), 106);

    // Integers: value rounded to p bits, remainder in the error part, exactly.
    for n in [
        0i64,
        1,
        -7,
        (1 << 24) + 1,
        -((1 << 40) + 12345),
        i64::MAX,
        i64::MIN,
        (1 << 53) + 1,
    ] {
        let c = <Comp32 as Real>::from_i64(n);
        let rem = n as i128 - c.value as i128;
        assert_eq!(c.error as i128, rem, "{n}: {c}");
        let d = <Comp64 as Real>::from_i64(n);
        assert_eq!(d.to_big(), Some(Big::from(n)), "{n}");
    }
    // to_f64 is the nearest f64 to value + error.
    // comp32 holds 0.1 to about 48 bits only, so reading it back is not 0.1.
    let c = Comp32::from_f64(0.1);
    assert_eq!(Real::to_f64(&c), big::to_f64(&exact_of(c)));
    assert_ne!(Real::to_f64(&c), 0.1);
    assert_eq!(Real::to_f64(&Comp64::from_f64(0.1)), 0.1);
    assert_eq!(Real::to_f64(&Comp64::new(1.0, 2f64.powi(-60))), 1.0);
    assert_eq!(
        Real::to_f64(&Comp64::new(1.0, 2f64.powi(-52))),
        1.0 + f64::EPSILON
    );
    // mul_add is the composite product followed by the composite sum.
    let (a, b, d) = (
        Comp32::from_f64(1.5),
        Comp32::from_f64(0.1),
        Comp32::from_f64(-0.15),
    );
    let m = a.mul_add(&b, &d);
    let want = a * b + d;
    assert!(same_bits(m, (want.value, want.error)));
}

#[test]
fn ordering_and_equality_follow_exact_values() {
    let a = Comp64::new(1.0, 2f64.powi(-60));
    let b = Comp64::new(1.0 + f64::EPSILON, 2f64.powi(-60) - f64::EPSILON); // same exact value
    assert_eq!(a.to_big(), b.to_big());
    assert_eq!(a, b);
    assert!(Comp64::new(1.0, 1e-20) > Comp64::new(1.0, 0.0));
    // An unnormalised pair whose error outweighs its value.
    assert!(Comp64::new(1.0, -3.0) < Comp64::new(-1.5, 0.0));
    assert!(Comp64::new(0.0, 1e-300) > Comp64::new(0.0, 0.0));
    assert_eq!(Comp64::new(0.0, 0.0), Comp64::new(-0.0, 0.0));
    let nan = Comp64::new(f64::NAN, 0.0);
    assert!(nan.partial_cmp(&nan).is_none());
    assert!(nan != nan);
    assert!(Comp64::new(f64::INFINITY, 0.0) > Comp64::new(f64::MAX, 1e300));
    // Exact sums beyond f64's range are still ordered.
    let big1 = Comp64::new(f64::MAX, f64::MAX * f64::EPSILON / 2.0);
    let big2 = Comp64::new(f64::MAX, f64::MAX * f64::EPSILON / 4.0);
    assert!(big1 > big2);
}

// ---- special values ------------------------------------------------------------------------

fn is_pair<F: Base>(c: Comp<F>, value: F, error: F) -> bool {
    let same =
        |a: F, b: F| (a.is_nan() && b.is_nan()) || a.to_f64().to_bits() == b.to_f64().to_bits();
    same(c.value, value) && same(c.error, error)
}

#[test]
fn special_values() {
    let inf = Comp32::from_base(f32::INFINITY);
    let ninf = Comp32::from_base(f32::NEG_INFINITY);
    let nan = Comp32::from_base(f32::NAN);
    let one = Comp32::from_base(1.0);
    let zero = Comp32::from_base(0.0);
    let nzero = Comp32::from_base(-0.0);
    let max = Comp32::from_base(f32::MAX);
    let (i, n) = (f32::INFINITY, f32::NAN);

    // Conversions.
    assert!(is_pair(Comp32::from_f64(f64::NAN), n, 0.0));
    assert!(is_pair(Comp32::from_f64(f64::NEG_INFINITY), -i, 0.0));
    assert!(is_pair(Comp32::from_f64(1e300), i, 0.0)); // overflows f32
    assert!(is_pair(Comp32::from_f64(-0.0), -0.0, 0.0));
    assert!(is_pair(Comp32::from_f64(1e-300), 0.0, 0.0)); // underflows f32
    assert_eq!(inf.to_big(), None);
    assert_eq!(Real::to_f64(&ninf), f64::NEG_INFINITY);
    assert!(Real::is_nan(&nan) && !Real::is_finite(&inf) && Real::is_finite(&max));

    // Addition and subtraction.
    assert!(is_pair(inf + one, i, 0.0));
    assert!(is_pair(inf + inf, i, 0.0));
    assert!(is_pair(inf + ninf, n, 0.0));
    assert!(is_pair(inf - inf, n, 0.0));
    assert!(is_pair(nan + one, n, 0.0));
    assert!(is_pair(max + max, i, 0.0)); // overflow
    assert!(is_pair(-max - max, -i, 0.0));
    assert!(is_pair(zero + nzero, 0.0, 0.0));
    assert!(is_pair(nzero + nzero, -0.0, 0.0));
    // A finite value whose error computation overflows: reported as value + error.
    let e = Comp32::new(1.0, f32::MAX) + Comp32::new(1.0, f32::MAX);
    assert!(is_pair(e, i, 0.0));

    // Multiplication.
    assert!(is_pair(inf * one, i, 0.0));
    assert!(is_pair(inf * -one, -i, 0.0));
    assert!(is_pair(inf * zero, n, 0.0));
    assert!(is_pair(max * Comp32::from_base(2.0), i, 0.0));
    assert!(is_pair(nzero * one, -0.0, 0.0));
    assert!(is_pair(
        Comp32::new(0.0, 1e30) * Comp32::from_base(1e30),
        i,
        0.0
    ));

    // Division: IEEE semantics on the value parts for zero, inf and NaN operands.
    assert!(is_pair(one / zero, i, 0.0));
    assert!(is_pair(one / nzero, -i, 0.0));
    assert!(is_pair(-one / zero, -i, 0.0));
    assert!(is_pair(zero / zero, n, 0.0));
    assert!(is_pair(one / inf, 0.0, 0.0));
    assert!(is_pair(-one / inf, -0.0, 0.0));
    assert!(is_pair(inf / one, i, 0.0));
    assert!(is_pair(inf / inf, n, 0.0));
    assert!(is_pair(nan / one, n, 0.0));
    assert!(is_pair(one / nan, n, 0.0));
    // A subnormal divisor overflows the reciprocal: the formula gives a non-finite result even
    // though the exact quotient is 1 (kept, documented).
    let tiny = Comp32::from_base(f32::from_bits(1));
    assert!(!Real::is_finite(&(tiny / tiny)));
    assert!(is_pair(tiny / tiny, n, 0.0));

    // sqrt and abs (not from the thesis).
    assert!(is_pair(zero.sqrt(), 0.0, 0.0));
    assert!(is_pair(nzero.sqrt(), -0.0, 0.0));
    assert!(is_pair(inf.sqrt(), i, 0.0));
    assert!(is_pair(ninf.sqrt(), n, 0.0));
    assert!(is_pair((-one).sqrt(), n, 0.0));
    assert!(is_pair(nan.sqrt(), n, 0.0));
    assert!(is_pair(Comp32::new(1.0, -3.0).sqrt(), n, 0.0));
    assert!(is_pair(Comp32::new(1.0, -3.0).abs(), -1.0, 3.0));
    assert!(is_pair(Comp32::new(1.0, -1.0).abs(), 0.0, 0.0));
    assert!(is_pair(nzero.abs(), 0.0, 0.0));
    assert!(ninf.abs() == inf);
    // Exact sum 2·MAX, beyond f32's range; its root is not.
    let r = Comp32::new(f32::MAX, f32::MAX).sqrt();
    let want = with_bits(exact(f32::MAX as f64) * exact(2.0), 200).sqrt();
    assert!(bits_of(&r, &want) > 45.0, "{r}");
    let r = Comp64::new(5e-324, 0.0).sqrt();
    assert_eq!(Real::to_f64(&r), 5e-324f64.sqrt());

    // The normalised variant follows the same rules.
    let (inf_n, one_n) = (CompNorm32::from(inf), CompNorm32::from(one));
    assert!(is_pair((inf_n - inf_n).comp(), n, 0.0));
    assert!(is_pair((one_n / CompNorm32::from(zero)).comp(), i, 0.0));
    assert!(is_pair(
        (CompNorm32::from(max) * CompNorm32::from(max)).comp(),
        i,
        0.0
    ));
}

#[test]
fn no_operator_panics_on_any_bit_pattern() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
    let specials = [
        0.0f64,
        -0.0,
        1.0,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        f64::INFINITY,
        f64::NAN,
    ];
    for _ in 0..3000 {
        let pick = |rng: &mut Xoshiro256PlusPlus| {
            if rng.random_bool(0.3) {
                specials[rng.random_range(0..specials.len())]
            } else {
                f64::from_bits(rng.random())
            }
        };
        let x = Comp64::new(pick(&mut rng), pick(&mut rng));
        let y = Comp64::new(pick(&mut rng), pick(&mut rng));
        let (xn, yn) = (CompNorm64::from(x), CompNorm64::from(y));
        for r in [x + y, x - y, x * y, x / y, x.sqrt(), x.abs(), -x] {
            let _ = (r.to_big(), r.to_f64(), r.partial_cmp(&x));
        }
        for r in [xn + yn, xn - yn, xn * yn, xn / yn] {
            let _ = (Real::to_big(&r), Real::to_f64(&r));
        }
    }
}
