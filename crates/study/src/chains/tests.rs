use super::*;
use mantissa_num::big;
use mantissa_num::Mp256;
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};

fn config(workloads: Vec<&'static dyn Workload>, suite: Suite) -> StudyConfig {
    StudyConfig {
        seed: 7,
        ..StudyConfig::for_tests(workloads, suite)
    }
}

const QUICK: CpuTiming<'static> = CpuTiming {
    budget: std::time::Duration::from_millis(1),
    min_reps: 1,
    max_reps: 1,
    stop: crate::stop::Stop::NEVER,
};

fn point(workload: &'static str, class: InputClass, size: u64, p: &str) -> Point {
    Point {
        workload,
        algorithm: if workload == "chain" {
            "serial"
        } else {
            "div-rn"
        },
        data: Data::Intervals(class),
        size,
        seed: 3,
        precision: StudyPrecision::Real(p.parse().unwrap()),
        backend: Backend::Cpu { threads: 1 },
        flags: None,
    }
}

/// The relative error of the chain of `factors` in T against the exact product.
fn chain_rel<T: Real>(factors: &[f64]) -> f64 {
    let xs: Vec<T> = factors.iter().map(|&x| T::from_f64(x)).collect();
    rel_of(&Reference::of(&chain_product(&xs)), &chain_reference(&xs))
}

#[test]
fn exact_product_is_the_exact_product() {
    // (1 + 2^-12)^n = (2^12 + 1)^n / 2^(12 n), exactly, for every n up to 1000.
    let x = 1.0 + 2f64.powi(-12);
    for n in [0usize, 1, 2, 3, 17, 1000] {
        let got = exact_product(&vec![big::exact(x); n]);
        let num = IBig::from(4097u32).pow(n);
        let want = Big::from_repr(
            dashu_float::Repr::new(num, -12 * n as isize),
            dashu_float::Context::new(0),
        );
        assert_eq!(got, want, "n={n}");
    }
    // Against a left fold of exact products, on values of very different sizes and signs.
    let vals: Vec<Big> = [3.5, -1e-300, 7e250, 0.1, -2.0f64.powi(-1074), 123456789.0]
        .iter()
        .map(|&v| big::exact(v))
        .collect();
    let fold = vals.iter().fold(big::exact(1.0), |a, b| a * b.clone());
    assert_eq!(exact_product(&vals), fold);
    // mp values carry their precision; the product must not round to it.
    let m = Mp256::from_f64(1.0 / 3.0);
    let r = chain_reference(&[m.clone(), m.clone(), m]);
    let one_third = m_big(&Mp256::from_f64(1.0 / 3.0));
    let want = one_third.clone() * one_third.clone() * one_third;
    assert_eq!(r, Reference::Finite(want));
}

fn m_big(m: &Mp256) -> Big {
    let b = m.to_big().unwrap();
    Big::from_repr(b.into_repr(), dashu_float::Context::new(0))
}

#[test]
fn non_finite_factors_give_the_ieee_class() {
    assert_eq!(
        chain_reference(&[2.0f32, f32::INFINITY]),
        Reference::Infinite { negative: false }
    );
    assert_eq!(
        chain_reference(&[-2.0f64, f64::INFINITY]),
        Reference::Infinite { negative: true }
    );
    assert_eq!(chain_reference(&[0.0f64, f64::INFINITY]), Reference::NaN);
    assert_eq!(chain_reference(&[1.0f64, f64::NAN]), Reference::NaN);
    assert_eq!(
        chain_reference::<f64>(&[]),
        Reference::Finite(big::exact(1.0))
    );
}

struct PowersOfTwo;
impl PrecisionVisitor for PowersOfTwo {
    type Output = (f64, Reference, Reference);
    fn visit<T: Real>(self) -> Self::Output {
        // 2^k factors multiply exactly in every precision (the range stays within f32's).
        let ks = [3, -7, 20, -30, 1, 0, 45, -60, 5];
        let xs: Vec<T> = ks.iter().map(|&k| T::from_f64(2f64.powi(k))).collect();
        let v = chain_product(&xs);
        (v.to_f64(), Reference::of(&v), chain_reference(&xs))
    }
}

#[test]
fn exact_chains_are_exact_in_every_precision() {
    for p in Precision::ALL {
        let (v, got, want) = p.visit(PowersOfTwo);
        assert_eq!(v, 2f64.powi(-23), "{p}");
        assert_eq!(got, want, "{p}");
    }
}

#[test]
fn chain_errors_stay_within_each_precisions_bound() {
    let n = 100usize;
    let m = (n - 1) as f64;
    for class in [InputClass::chain(6), InputClass::chain(10)] {
        for seed in 0..10 {
            let f = chain_factors(&class, n as u64, seed);
            // One rounding of relative size <= u per product: (1 + u)^m - 1 < 1.01 m u.
            let bound = |u: f64| 1.01 * m * u;
            let f32e = chain_rel::<f32>(&f);
            assert!(f32e > 0.0 && f32e < bound(2f64.powi(-24)), "{f32e:e}");
            let f64e = chain_rel::<f64>(&f);
            assert!(f64e > 0.0 && f64e < bound(2f64.powi(-53)), "{f64e:e}");
            // DWTimesDW3: 4u^2 per product (MR22 Thm 2.8).
            assert!(chain_rel::<f64x2>(&f) < bound(4.0 * 2f64.powi(-106)));
            assert!(chain_rel::<f32x2>(&f) < bound(4.0 * 2f64.powi(-48)));
            assert!(chain_rel::<Mp256>(&f) < bound(2f64.powi(-256)));
        }
    }
}

/// Seed 000 §8.1 found float2/double2 worse than float/double and the normalized variant
/// better. Here the composite product (value = RN(xv·yv), error from the operands' errors
/// only) keeps f32's and f64's rounding errors: comp64 on f64 factors (zero error words) is f64
/// bit for bit, comp32 has f32's relative errors, and normalizing before each product does
/// not help: on the default classes comp32n is on average *less* accurate than comp32.
#[test]
fn composite_chains_are_no_better_than_the_base_and_normalizing_does_not_help() {
    for class in [InputClass::chain(6), InputClass::chain(10)] {
        let (mut f32s, mut c32, mut c32n) = (0.0, 0.0, 0.0);
        for seed in 0..50 {
            let f = chain_factors(&class, 100, seed);
            let d: f64 = chain_product(&f);
            let xs: Vec<Comp64> = f.iter().map(|&x| Comp64::from_f64(x)).collect();
            let c = chain_product(&xs);
            assert_eq!((c.value.to_bits(), c.error), (d.to_bits(), 0.0));
            let xs: Vec<CompNorm64> = f.iter().map(|&x| CompNorm64::from_f64(x)).collect();
            assert_eq!(chain_product(&xs).to_f64().to_bits(), d.to_bits());
            f32s += chain_rel::<f32>(&f);
            c32 += chain_rel::<Comp32>(&f);
            c32n += chain_rel::<CompNorm32>(&f);
        }
        assert!((c32 / f32s - 1.0).abs() < 0.05, "{c32:e} vs f32 {f32s:e}");
        assert!(
            c32n > c32,
            "{}: comp32n {c32n:e} comp32 {c32:e}",
            class.name
        );
    }
}

#[test]
fn overflow_and_underflow_are_recorded_with_a_note() {
    let big_class: InputClass = "1e3:2e3,1e3:2e3".parse().unwrap();
    let m = measure_cpu(&point("chain", big_class.clone(), 20, "f32"), None, QUICK);
    assert_eq!(m.status, Status::Ok);
    assert_eq!(m.value, Some(f64::INFINITY));
    assert!(m.reference.unwrap().is_finite());
    assert_eq!(m.error.as_ref().unwrap().abs, f64::INFINITY);
    let note = m.note.unwrap();
    let e = m.reference.unwrap().log2().floor();
    assert!(e > 190.0 && e < 230.0, "20 factors of about 2^10.5");
    let want = format!("not finite in f32 (exact magnitude 2^{e})");
    assert!(note.contains(&want), "{note}");
    // The same chain in f64 is finite, accurate and has no note.
    let m = measure_cpu(&point("chain", big_class, 20, "f64"), None, QUICK);
    assert!(m.note.is_none() && m.error.unwrap().rel.unwrap() < 20.0 * 2f64.powi(-53));
    let tiny: InputClass = "1e-3:2e-3,1e-3:2e-3".parse().unwrap();
    let m = measure_cpu(&point("chain", tiny, 20, "f32"), None, QUICK);
    assert_eq!(m.value, Some(0.0));
    assert!(m.note.unwrap().contains("underflows to 0 in f32"));
}

/// f32 arithmetic emulated in f64: a product of two f32 is exact in f64, and an f64 quotient
/// of f32 operands rounds to the correctly rounded f32 (53 >= 2·24 + 2), so this is IEEE f32
/// computed independently of f32's own operators.
fn emulated_f32_doundo(x0: f32, ys: &[f32]) -> f32 {
    ys.iter().fold(x0, |x, &y| {
        let p = (x as f64 * y as f64) as f32;
        (p as f64 / y as f64) as f32
    })
}

#[test]
fn doundo_f32_matches_an_independent_emulation_and_scores_it() {
    for class in InputClass::doundo_classes() {
        let steps = 100_000;
        let (xs, ys) = doundo_operands(&class, 1, steps, 3);
        let (x0, y): (f32, Vec<f32>) = (xs[0] as f32, ys.iter().map(|&v| v as f32).collect());
        let want = emulated_f32_doundo(x0, &y);
        assert_eq!(doundo(x0, &y).to_bits(), want.to_bits(), "{}", class.name);
        let m = measure_cpu(&point("doundo", class.clone(), steps, "f32"), None, QUICK);
        let abs = (want as f64 - x0 as f64).abs(); // exact: both f32 within a factor 2^29
        let e = m.error.unwrap();
        assert_eq!(e.abs, abs, "{}", class.name);
        let rel = abs / x0 as f64;
        assert!(
            (e.rel.unwrap() - rel).abs() <= 1e-15 * rel,
            "{}",
            class.name
        );
        assert_eq!(m.value, Some(want as f64));
        // Two roundings of relative size <= u per step.
        assert!(e.rel.unwrap() < 2.0 * steps as f64 * 2f64.powi(-24));
    }
}

#[test]
fn doundo_errors_follow_the_precisions() {
    let class = InputClass::doundo(true, false);
    let steps = 20_000u64;
    let (xs, ys) = doundo_operands(&class, 1, steps, 5);
    let rel = |p: Precision| {
        let m = measure_cpu(
            &point("doundo", class.clone(), steps, &p.to_string()),
            None,
            QUICK,
        );
        m.error.unwrap().rel.unwrap()
    };
    let n = steps as f64;
    assert!(rel(Precision::F64) < 2.0 * n * 2f64.powi(-53));
    // DWTimesDW3 (4u^2) then DWDivDW3 (9.8u^2).
    assert!(rel(Precision::F64x2) < 14.0 * n * 2f64.powi(-106));
    assert!(rel(Precision::F32x2) < 14.0 * n * 2f64.powi(-48));
    assert!(rel(Precision::F32) > 0.0);
    assert_eq!(xs.len(), 1);
    assert_eq!(ys.len(), steps as usize);
}

#[test]
fn plans_have_unique_keys_and_the_documented_defaults() {
    for suite in [Suite::Quick, Suite::Full] {
        let cfg = config(vec![&CHAIN, &DOUNDO], suite);
        let mut all = Vec::new();
        for w in [Experiment::Chain, Experiment::DoUndo] {
            all.extend(cpu_points(&cfg, w));
            all.extend(gpu_points(&cfg, w, (264, 1024)));
        }
        let keys: HashSet<String> = all.iter().map(|p| p.key("d")).collect();
        assert_eq!(keys.len(), all.len(), "{suite:?}");
        assert!(all.iter().all(|p| p.precision != StudyPrecision::Exact));
    }
    let cfg = config(vec![&CHAIN], Suite::Quick);
    let chain = cpu_points(&cfg, Experiment::Chain);
    // 2 classes x 4 sizes x (8 native + 4 mp) precisions, one thread.
    assert_eq!(chain.len(), 2 * 4 * 12);
    assert!(chain
        .iter()
        .all(|p| p.backend == Backend::Cpu { threads: 1 }));
    let names: HashSet<String> = chain.iter().map(|p| p.data.name()).collect();
    assert_eq!(names, HashSet::from(["chain-6".into(), "chain-10".into()]));
    let du = cpu_points(&cfg, Experiment::DoUndo);
    assert_eq!(du.len(), 4 * 8, "mp is not run for do/undo");
    assert!(du
        .iter()
        .all(|p| p.size == DOUNDO_QUICK && p.algorithm == "div-rn"));
    let gpu = gpu_points(&cfg, Experiment::DoUndo, (264, 1024));
    let serial = gpu.iter().filter(|p| p.backend == Backend::gpu(1, 1));
    assert_eq!(
        serial.count(),
        4 * 3 * 3,
        "4 classes x 3 modes x f32/comp32/f32x2"
    );
    let wide: Vec<&Point> = gpu
        .iter()
        .filter(|p| p.backend != Backend::gpu(1, 1))
        .collect();
    assert_eq!(
        wide.len(),
        3 * 3,
        "throughput on the first class only in quick"
    );
    assert!(wide
        .iter()
        .all(|p| p.size == DOUNDO_QUICK / THROUGHPUT_DIVISOR));
    let gchain = gpu_points(&cfg, Experiment::Chain, (264, 1024));
    assert_eq!(
        gchain.len(),
        2 * 4 * 8 * 2,
        "twin precisions, serial and rotations"
    );
}

#[test]
fn user_overrides_are_honoured() {
    let mut cfg = config(vec![&CHAIN, &DOUNDO], Suite::Quick);
    cfg.classes = Some(vec!["range2".parse().unwrap()]);
    cfg.sizes = Some(vec![0, 5, 200_000]);
    cfg.precisions = StudyPrecision::parse_list("f32,f64x2,mp128,exact").unwrap();
    let chain = cpu_points(&cfg, Experiment::Chain);
    let got: Vec<(u64, String)> = chain
        .iter()
        .map(|p| (p.size, p.precision.to_string()))
        .collect();
    // Size 0 is dropped, mp only up to MP_MAX_FACTORS, exact never.
    let want: Vec<(u64, String)> = [
        (5, "f32"),
        (5, "f64x2"),
        (5, "mp128"),
        (200_000, "f32"),
        (200_000, "f64x2"),
    ]
    .iter()
    .map(|&(n, p)| (n, p.to_string()))
    .collect();
    assert_eq!(got, want);
    assert!(chain
        .iter()
        .all(|p| p.data.name() == "range2" && p.seed == 7));
    let du = cpu_points(&cfg, Experiment::DoUndo);
    assert_eq!(du.len(), 3 * 2, "sizes 0, 5, 200000 x f32, f64x2");
    let gpu = gpu_points(&cfg, Experiment::DoUndo, (8, 32));
    assert!(gpu.iter().all(|p| p.precision.to_string() == "f32"));
    // User classes all get throughput points.
    assert!(gpu.iter().any(|p| p.backend == Backend::gpu(8, 32)));
    let gchain = gpu_points(&cfg, Experiment::Chain, (8, 32));
    assert!(gchain.iter().all(|p| p.precision.to_string() != "mp128"));
}

#[test]
fn input_classes_are_the_thesis_intervals() {
    let c = InputClass::chain(6);
    assert_eq!(
        (c.small.lo, c.small.hi, c.large.lo, c.large.hi),
        (0.1, 1.0, 1.0, 6.0)
    );
    assert_eq!(
        "chain-10".parse::<InputClass>().unwrap(),
        InputClass::chain(10)
    );
    let f = chain_factors(&InputClass::chain(10), 10_000, 1);
    let small = f.iter().filter(|&&x| x < 1.0).count();
    assert!((4700..5300).contains(&small), "{small}");
    assert!(f.iter().all(|&x| x > 0.1 && x < 10.0));
    let du = InputClass::doundo(false, true);
    assert_eq!(du.name, "du-xsmall-ylarge");
    assert_eq!("du-xsmall-ylarge".parse::<InputClass>().unwrap(), du);
    let (xs, ys) = doundo_operands(&du, 3, 1000, 1);
    assert!(xs.iter().all(|&x| x > 0.0 && x < 10.0));
    assert!(ys.iter().all(|&y| (1e5..1e6).contains(&y)));
    // The serial start value is the first of any thread count's.
    assert_eq!(doundo_operands(&du, 1, 10, 1).0[0], xs[0]);
    assert_eq!(doundo_operands(&du, 1, 1000, 1).1, ys);
}

fn counts(ops: &[(&str, u32)]) -> Counts {
    let mut c = Counts::default();
    for &(op, n) in ops {
        c.ops.insert(op.into(), n);
    }
    c
}

#[test]
fn the_division_check_accepts_only_the_modes_instruction() {
    let rn = counts(&[("div.rn.f32", 9), ("rcp.rn.f32", 9), ("mul.rn.f32", 40)]);
    assert!(check_division(DivMode::Rn, "k", &rn).is_ok());
    let e = check_division(DivMode::Full, "k", &rn).unwrap_err();
    assert!(
        e.contains("div.full.f32") && e.contains("div.rn.f32 ×9"),
        "{e}"
    );
    let full = counts(&[("div.full.f32", 9), ("rcp.approx.f32", 1)]);
    let e = check_division(DivMode::Full, "k", &full).unwrap_err();
    assert!(e.contains("rcp.approx.f32"), "{e}");
    let full = counts(&[("div.full.f32", 9)]);
    assert!(check_division(DivMode::Full, "k", &full).is_ok());
    let mixed = counts(&[("div.approx.f32", 9), ("div.rn.f32", 1)]);
    assert!(check_division(DivMode::Approx, "k", &mixed).is_err());
    assert!(check_division(DivMode::Approx, "k", &counts(&[("div.approx.f32", 2)])).is_ok());
    // rcp.rn is only the twin's IEEE reciprocal of div-rn.
    let e = check_division(
        DivMode::Approx,
        "k",
        &counts(&[("div.approx.f32", 2), ("rcp.rn.f32", 1)]),
    );
    assert!(e.is_err());
    let x = division_extra(&rn);
    assert_eq!(x["ptx.div.rn.f32"], 9.0);
    assert_eq!(x["ptx.div.full.f32"], 0.0);
    assert_eq!(x["ptx.rcp.rn.f32"], 9.0);
    assert!(!x.contains_key("ptx.mul.rn.f32"));
}

#[test]
fn modes_name_round_trip() {
    for m in DivMode::ALL {
        assert_eq!(DivMode::from_name(m.name()), Some(m));
    }
    assert_eq!(DivMode::Full.flags(), FlagSet::APPROX_DIV);
    assert_eq!(DivMode::from_name("div"), None);
}
