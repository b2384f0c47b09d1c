use super::*;
use mantissa_num::{f32x2, Comp32, Comp64, CompNorm32, CompNorm64, Mp64};
use mantissa_report::Status;

fn pool(threads: usize) -> ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// A = L·U with small integer L (unit lower) and U (upper, power-of-two diagonal), x integer,
/// b = A·x: every step of elimination is exact in every precision.
fn exact_system(n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut l = vec![0.0; n * n];
    let mut u = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let v = ((i * 7 + j * 3) % 5) as f64 - 2.0;
            if i > j {
                l[i * n + j] = v;
            } else if i == j {
                l[i * n + j] = 1.0;
                u[i * n + j] = [1.0, 2.0, -4.0, 0.5][i % 4];
            } else {
                u[i * n + j] = v;
            }
        }
    }
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = (0..n).map(|k| l[i * n + k] * u[k * n + j]).sum();
        }
    }
    let x: Vec<f64> = (0..n).map(|i| i as f64 - 3.0).collect();
    let b: Vec<f64> = (0..n)
        .map(|i| (0..n).map(|j| a[i * n + j] * x[j]).sum())
        .collect();
    // The packed factors (L below the diagonal, U on and above).
    let packed: Vec<f64> = (0..n * n)
        .map(|k| if k / n > k % n { l[k] } else { u[k] })
        .collect();
    (a, b, x, packed)
}

fn exact_in<T: Real>() {
    let n = 9;
    let (a, b, x, packed) = exact_system(n);
    let p2 = pool(2);
    for pool in [None, Some(&p2)] {
        let (mut ta, mut tb): (Vec<T>, Vec<T>) = (convert(&a), convert(&b));
        ge_forward(&mut ta, &mut tb, n, pool);
        let got: Vec<f64> = back_substitute(&ta, &tb, n)
            .iter()
            .map(|v| v.to_f64())
            .collect();
        assert_eq!(got, x, "{}", T::precision_name());
        let got: Vec<f64> = ta.iter().map(|v| v.to_f64()).collect();
        assert_eq!(got, packed, "GE factors {}", T::precision_name());
        let mut f: Vec<T> = convert(&a);
        lu_factor(&mut f, n, pool);
        let got: Vec<f64> = f.iter().map(|v| v.to_f64()).collect();
        assert_eq!(got, packed, "LU {}", T::precision_name());
    }
}

#[test]
fn known_systems_solve_exactly_in_every_precision() {
    exact_in::<f32>();
    exact_in::<f64>();
    exact_in::<f32x2>();
    exact_in::<f64x2>();
    exact_in::<Comp32>();
    exact_in::<Comp64>();
    exact_in::<CompNorm32>();
    exact_in::<CompNorm64>();
    exact_in::<Mp64>();
}

fn bits_of<T: Real>(xs: &[T]) -> Vec<Option<Big>> {
    xs.iter().map(|x| x.to_big()).collect()
}

/// The rows of each step in parallel: the same operations, so the same values.
fn parallel_same<T: Real>() {
    let n = 40;
    let sys = system(&InputClass::range(3), n, 5);
    let p3 = pool(3);
    let (mut a1, mut b1): (Vec<T>, Vec<T>) = (convert(&sys.a), convert(&sys.b));
    let (mut a2, mut b2) = (a1.clone(), b1.clone());
    ge_forward(&mut a1, &mut b1, n, None);
    ge_forward(&mut a2, &mut b2, n, Some(&p3));
    assert_eq!(bits_of(&a1), bits_of(&a2));
    assert_eq!(bits_of(&b1), bits_of(&b2));
    // GE's multipliers and U are LU's factors (the same operations in the same order).
    let mut f1: Vec<T> = convert(&sys.a);
    let mut f2 = f1.clone();
    lu_factor(&mut f1, n, None);
    lu_factor(&mut f2, n, Some(&p3));
    assert_eq!(bits_of(&f1), bits_of(&f2));
    assert_eq!(bits_of(&f1), bits_of(&a1));
}

#[test]
fn threaded_runs_equal_sequential_ones() {
    parallel_same::<f32>();
    parallel_same::<f64>();
    parallel_same::<f64x2>();
    parallel_same::<Comp32>();
    parallel_same::<CompNorm64>();
    parallel_same::<Mp64>();
}

/// Gaussian elimination with partial pivoting in T (the test's independent reference).
fn pivoted_solve<T: Real>(a: &[f64], b: &[f64], n: usize) -> Vec<T> {
    let mut a: Vec<T> = convert(a);
    let mut b: Vec<T> = convert(b);
    for k in 0..n {
        let p = (k..n)
            .max_by(|&x, &y| a[x * n + k].abs().partial_cmp(&a[y * n + k].abs()).unwrap())
            .unwrap();
        for j in 0..n {
            a.swap(p * n + j, k * n + j);
        }
        b.swap(p, k);
        for i in k + 1..n {
            let m = a[i * n + k].clone() / a[k * n + k].clone();
            for j in k..n {
                a[i * n + j] = a[i * n + j].clone() - m.clone() * a[k * n + j].clone();
            }
            b[i] = b[i].clone() - m * b[k].clone();
        }
    }
    back_substitute(&a, &b, n)
}

#[test]
fn refined_reference_agrees_with_mp1024() {
    for (class, n) in [(InputClass::range(1), 20), (InputClass::range(4), 12)] {
        let sys = system(&class, n, 9);
        let r = ge_reference(&sys.a, &sys.b, n, 240);
        assert!(r.converged, "{}", class.name);
        let mp = pivoted_solve::<Mp<1024>>(&sys.a, &sys.b, n);
        let scale = mp.iter().fold(0.0f64, |m, x| m.max(x.to_f64().abs()));
        for (x, y) in r.x.iter().zip(&mp) {
            let d = big::to_f64(&(x.clone().unwrap() - y.to_big().unwrap())).abs();
            assert!(d <= scale * 2f64.powi(-236), "{} {d:e}", class.name);
        }
        // And it is not just the f64 solution.
        let f: Vec<f64> = pivoted_solve::<f64>(&sys.a, &sys.b, n);
        let d = big::to_f64(&(r.x[0].clone().unwrap() - big::exact(f[0]))).abs();
        assert!(d > 0.0);
    }
}

#[test]
fn singular_systems_are_reported_not_silent() {
    // Row 1 − 2·row 0 = (0, 0, 1): the second pivot is exactly 0.
    let n = 3;
    let a = [1.0, 2.0, 3.0, 2.0, 4.0, 7.0, 1.0, 1.0, 1.0];
    let b = [1.0, 2.0, 3.0];
    let (mut ta, mut tb) = (a.to_vec(), b.to_vec());
    ge_forward(&mut ta, &mut tb, n, None);
    let x = back_substitute(&ta, &tb, n);
    let reference = ge_reference(&a, &b, n, 220);
    let m = score_ge(&x, &ta, n, 7.0, &reference);
    let note = m.note.unwrap();
    assert!(
        note.contains("near-singular: pivot 0.0e0 at step 1"),
        "{note}"
    );
    assert!(note.contains("NaN or infinite"), "{note}");
    assert!(m.error.is_none());
    // LU of the same matrix: infinite factors are counted, not scored.
    let mut f = a.to_vec();
    lu_factor(&mut f, n, None);
    let pairs: Vec<f64x2> = f.iter().map(pair_of).collect();
    let ap: Vec<f64x2> = a.iter().map(|&x| f64x2::from_base(x)).collect();
    let residual = lu_residual_model(&pairs, &ap, n);
    let exact = |k: usize| f[k].to_big();
    let factors = LuFactors {
        n,
        pairs: &pairs,
        exact: &exact,
        bits: 53,
    };
    let reference = lu_reference_pairs(&a, n, Stop::NEVER);
    let m = score_lu(&factors, &residual, 7.0, Some(&reference), None);
    let note = m.note.unwrap();
    assert!(note.contains("near-singular") && note.contains("NaN or infinite"));
    assert!(m.extra["mismatches"] >= 1.0);
    // A regular system has no note.
    let sys = system(&InputClass::range(1), 8, 1);
    let (mut ta, mut tb) = (sys.a.clone(), sys.b.clone());
    ge_forward(&mut ta, &mut tb, 8, None);
    let x = back_substitute(&ta, &tb, 8);
    let r = ge_reference(&sys.a, &sys.b, 8, 220);
    let m = score_ge(&x, &ta, 8, max_abs(&sys.a), &r);
    assert_eq!(m.note, None);
    assert!(m.error.unwrap().abs > 0.0);
}

#[test]
fn near_singular_threshold() {
    assert_eq!(near_singular_note(&[1.0, 0.5], 2, 53, 1.0), None);
    let note = near_singular_note(&[1.0, 3.1e-9, 1e-3], 3, 24, 10.0).unwrap();
    assert!(
        note.starts_with("near-singular: pivot 3.1e-9 at step 1"),
        "{note}"
    );
}

#[test]
fn mismatches_are_counted_on_a_constructed_case() {
    let n = 6;
    let (a, _, _, packed) = exact_system(n);
    let f: Vec<f64x2> = packed.iter().map(|&x| f64x2::from_base(x)).collect();
    let exact: Vec<f64x2> = a.iter().map(|&x| f64x2::from_base(x)).collect();
    assert!(lu_residual_model(&f, &exact, n).iter().all(|&r| r == 0.0));
    let mut perturbed = exact.clone();
    perturbed[0] += f64x2::from_base(1e-3);
    perturbed[n + 2] -= f64x2::from_base(2e-4);
    perturbed[3 * n + 3] += f64x2::from_base(5e-5);
    perturbed[4 * n + 1] = f64x2::from_base(f64::NAN);
    let r = lu_residual_model(&f, &perturbed, n);
    assert!((r[0] - 1e-3).abs() < 1e-15, "{}", r[0]);
    assert!((r[n + 2] + 2e-4).abs() < 1e-15);
    assert!((r[3 * n + 3] - 5e-5).abs() < 1e-15);
    assert_eq!(count_mismatches(&r), 3);
}

#[test]
fn systems_draw_the_values_of_the_shared_generator() {
    // The same (class, seed) gives the same values here as in every other workload: A is the
    // first n² of `InputClass::mixed`'s draws and b the next n.
    for class in [InputClass::range(1), InputClass::range(4)] {
        let n = 12;
        let sys = system(&class, n, 5);
        let drawn = class.mixed(n * n + n, 5);
        assert_eq!(sys.a, drawn[..n * n]);
        assert_eq!(sys.b, drawn[n * n..]);
        // Both intervals occur.
        let within = |x: f64, i: &crate::inputs::Interval| x >= i.lo && x < i.hi;
        assert!(sys.a.iter().any(|&x| within(x, &class.small)));
        assert!(sys.a.iter().any(|&x| within(x, &class.large)));
    }
}

#[test]
fn converted_inputs_are_exact_f64_values() {
    fn check<T: Real>() {
        for class in InputClass::table_11().iter().chain(&InputClass::table_7()) {
            for x in class.mixed(2000, 3) {
                let v = T::from_f64(x);
                assert_eq!(
                    v.to_big(),
                    Some(big::exact(v.to_f64())),
                    "{} {x:e}",
                    T::precision_name()
                );
            }
        }
    }
    check::<f32>();
    check::<f32x2>();
    check::<Comp32>();
    check::<CompNorm32>();
    check::<f64x2>();
    check::<Comp64>();
}

#[test]
fn device_pairs_are_exact() {
    fn check<T: DeviceWords>() {
        let n = 24;
        let sys = system(&InputClass::range(4), n, 2);
        let mut f: Vec<T> = convert(&sys.a);
        lu_factor(&mut f, n, None);
        for x in &f {
            let p = device_pair(x);
            assert_eq!(p, pair_of(x));
            assert_eq!(p.to_big(), x.to_big(), "{} {x:?}", T::precision_name());
        }
    }
    check::<f32>();
    check::<f64>();
    check::<f32x2>();
    check::<f64x2>();
    check::<Comp32>();
    check::<Comp64>();
    check::<CompNorm32>();
    check::<CompNorm64>();
}

#[test]
fn lu_references_agree() {
    let n = 40;
    let sys = system(&InputClass::gmp_range(1), n, 4);
    let (LuReference::Pairs(dd), LuReference::Exact(mp)) = (
        lu_reference_pairs(&sys.a[..n * n], n, Stop::NEVER),
        lu_reference_mp(&sys.a[..n * n], n, Stop::NEVER),
    ) else {
        panic!("reference kinds")
    };
    for (x, y) in dd.iter().zip(&mp) {
        let y = y.clone().unwrap();
        let d = big::to_f64(&(x.to_big().unwrap() - y.clone())).abs();
        assert!(d <= 1e-24 * big::to_f64(&y).abs().max(1.0), "{d:e}");
    }
}

#[test]
fn out_of_resources_decisions() {
    for bytes in [4, 8, 16] {
        let why = out_of_resources("LU", lu_needs(64, bytes), 1024).unwrap();
        assert!(why.contains("4096 threads"), "{why}");
        for tile in [4, 8, 16, 32] {
            assert_eq!(out_of_resources("LU", lu_needs(tile, bytes), 1024), None);
        }
    }
    // A 32-byte type at 32×32 would need 64 KiB of static shared memory.
    let why = out_of_resources("LU", lu_needs(32, 32), 1024).unwrap();
    assert!(why.contains("65536 bytes of shared memory"), "{why}");
    assert_eq!(out_of_resources("Fan2", fan2_needs(32), 1024), None);
    assert!(out_of_resources("Fan2", fan2_needs(32), 512).is_some());
}

fn config(suite: Suite) -> StudyConfig {
    StudyConfig::for_tests(vec![&GE, &LU], suite)
}

fn all_points(cfg: &StudyConfig) -> Vec<Point> {
    let mut v = Vec::new();
    for w in [Solver::Ge, Solver::Lu] {
        v.extend(cpu_points(cfg, w));
        v.extend(gpu_points(cfg, w));
    }
    v
}

#[test]
fn plans_have_unique_keys_and_keep_mp_small() {
    for suite in [Suite::Quick, Suite::Full] {
        let cfg = config(suite);
        let points = all_points(&cfg);
        let keys: std::collections::HashSet<_> = points.iter().map(|p| p.key("d")).collect();
        assert_eq!(keys.len(), points.len());
        let mp_max = if suite == Suite::Quick { 64 } else { 128 };
        for p in &points {
            assert!(p.precision != StudyPrecision::Exact);
            if is_mp(p.precision) {
                assert!(!p.backend.is_gpu() && p.size <= mp_max, "{p:?}");
            }
            if let Backend::GpuTiles { tile } = p.backend {
                if p.workload == "lu" {
                    assert_eq!(p.size % u64::from(tile), 0);
                } else {
                    assert!(u64::from(tile) <= p.size && tile <= 32);
                }
            }
        }
        // Table 19's "out of resources" rows are planned.
        assert!(points
            .iter()
            .any(|p| p.backend == Backend::GpuTiles { tile: 64 }));
        // Every default LU class and the GE class appear.
        for c in ["gmp-range1", "range1", "range2", "range3", "range4"] {
            assert!(points
                .iter()
                .any(|p| p.workload == "lu" && p.data.name() == c));
        }
        assert!(points
            .iter()
            .filter(|p| p.workload == "ge")
            .all(|p| p.data.name() == "range1"));
    }
}

#[test]
fn quick_cpu_plan_stays_small() {
    let cfg = config(Suite::Quick);
    let cpu: Vec<Point> = [Solver::Ge, Solver::Lu]
        .iter()
        .flat_map(|&w| cpu_points(&cfg, w))
        .collect();
    assert!(cpu.iter().all(|p| p.size <= 256));
    // The largest size runs only the thesis's four precisions.
    assert!(cpu
        .iter()
        .filter(|p| p.size == 256)
        .all(|p| thesis_four(p.precision)));
    assert!(cpu.len() < 120, "{} points", cpu.len());
    // Quick GPU sizes stop at 2048, and 4×4 tiles stop early.
    let gpu: Vec<Point> = [Solver::Ge, Solver::Lu]
        .iter()
        .flat_map(|&w| gpu_points(&cfg, w))
        .collect();
    assert!(gpu.iter().all(|p| p.size <= 2048));
    assert!(gpu
        .iter()
        .filter(|p| p.backend == Backend::GpuTiles { tile: 4 })
        .all(|p| p.size <= 1024));
}

#[test]
fn user_sizes_classes_and_precisions_are_honoured() {
    let mut cfg = config(Suite::Quick);
    cfg.sizes = Some(vec![32, 512]);
    cfg.classes = Some(vec![InputClass::range(3)]);
    cfg.precisions = StudyPrecision::parse_list("f32,mp128,exact").unwrap();
    let points = all_points(&cfg);
    assert!(!points.is_empty());
    for p in &points {
        assert!(p.size == 32 || p.size == 512);
        assert_eq!(p.data.name(), "range3");
        let name = p.precision.to_string();
        assert!(name == "f32" || (name == "mp128" && p.size == 32 && !p.backend.is_gpu()));
    }
    assert!(points.iter().any(|p| p.precision.to_string() == "mp128"));
    // LU tiles divide n: no 64 at n = 32, 4 through 64 at 512 (4×4 too: the user's sizes).
    let lu_tiles = |n| {
        let mut t: Vec<u32> = points
            .iter()
            .filter(|p| p.workload == "lu" && p.size == n && p.backend.is_gpu())
            .map(|p| match p.backend {
                Backend::GpuTiles { tile } => tile,
                _ => 0,
            })
            .collect();
        t.sort();
        t
    };
    assert_eq!(lu_tiles(32), vec![4, 8, 16, 32]);
    assert_eq!(lu_tiles(512), vec![4, 8, 16, 32, 64]);
}

fn cpu_point(w: &'static str, class: InputClass, n: u64, p: &str) -> Point {
    Point {
        workload: w,
        algorithm: if w == "ge" { "fan" } else { "blocked" },
        data: Data::Intervals(class),
        size: n,
        seed: 2,
        precision: StudyPrecision::parse_list(p).unwrap()[0],
        backend: Backend::Cpu { threads: 1 },
        flags: None,
    }
}

#[test]
fn cpu_points_measure_in_the_expected_order() {
    let timing = CpuTiming {
        budget: std::time::Duration::from_millis(1),
        min_reps: 1,
        max_reps: 1,
        stop: Default::default(),
    };
    let err = |w, class: InputClass, p: &str| {
        let m = measure_cpu(&cpu_point(w, class, 48, p), None, timing);
        assert_eq!(m.status, Status::Ok);
        assert!(m.time.unwrap().median_ms > 0.0);
        assert!(m.extra["gflops"] > 0.0);
        (
            m.error.unwrap().abs,
            m.extra.get("mismatches").copied(),
            m.note,
        )
    };
    let ge = |p| err("ge", InputClass::range(1), p).0;
    let (f32e, f64e, dd, mp) = (ge("f32"), ge("f64"), ge("f64x2"), ge("mp128"));
    assert!(
        f32e > f64e && f64e > dd && dd > mp && mp > 0.0,
        "{f32e:e} {f64e:e} {dd:e} {mp:e}"
    );
    let lu = |p| err("lu", InputClass::gmp_range(1), p);
    let (f32e, f64e, dd) = (lu("f32"), lu("f64"), lu("f64x2"));
    assert!(f32e.0 > f64e.0 && f64e.0 > dd.0 && dd.0 > 0.0);
    // Table 17: no f64 mismatches on (1e-1, 1) & (1, 10).
    assert_eq!(f64e.1, Some(0.0));
    assert_eq!(dd.2, None, "mp512 reference at n = 48: no caveat");
}

/// The quick CPU suite of both workloads within its budget (~15 s on 2 cores); slow, so only on
/// request: `cargo test -p mantissa-study --lib linalg -- --ignored`.
#[test]
#[ignore]
fn quick_cpu_suite_fits_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(Suite::Quick);
    let plan = crate::study::Plan::cpu(&cfg);
    let mut log = mantissa_report::ResultsLog::open(dir.path(), false).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let start = std::time::Instant::now();
    let s =
        crate::runner::run_cpu(&plan, Suite::Quick, &mut log, &crate::NoProgress, &stop).unwrap();
    let secs = start.elapsed().as_secs_f64();
    eprintln!("{} points in {secs:.1} s", s.measured);
    assert_eq!(s.measured, plan.points.len());
    assert!(secs < 15.0, "{secs} s");
}

/// The blocked kernels of `cuda/linalg.cu` replayed on the CPU phase by phase (each phase between
/// two barriers is race-free, so a sequential replay is exact): they equal the right-looking
/// order bit for bit, the claim the GPU tests check on the device.
fn blocked_model<T: Real>(a: &mut [T], n: usize, b: usize) {
    let at = |i: usize, j: usize| i * n + j;
    for o in (0..n).step_by(b) {
        // Diagonal.
        for k in 0..b - 1 {
            for ty in k + 1..b {
                a[at(o + ty, o + k)] = a[at(o + ty, o + k)].clone() / a[at(o + k, o + k)].clone();
            }
            for ty in k + 1..b {
                for tx in k + 1..b {
                    let p = a[at(o + ty, o + k)].clone() * a[at(o + k, o + tx)].clone();
                    a[at(o + ty, o + tx)] = a[at(o + ty, o + tx)].clone() - p;
                }
            }
        }
        let m = (n - o) / b - 1;
        // Perimeter: row tiles, then column tiles.
        for blk in 0..m {
            let c = o + b * (blk + 1);
            for k in 0..b - 1 {
                for ty in k + 1..b {
                    for tx in 0..b {
                        let p = a[at(o + ty, o + k)].clone() * a[at(o + k, c + tx)].clone();
                        a[at(o + ty, c + tx)] = a[at(o + ty, c + tx)].clone() - p;
                    }
                }
            }
            let r = o + b * (blk + 1);
            for k in 0..b {
                for ty in 0..b {
                    a[at(r + ty, o + k)] =
                        a[at(r + ty, o + k)].clone() / a[at(o + k, o + k)].clone();
                }
                for ty in 0..b {
                    for tx in k + 1..b {
                        let p = a[at(r + ty, o + k)].clone() * a[at(o + k, o + tx)].clone();
                        a[at(r + ty, o + tx)] = a[at(r + ty, o + tx)].clone() - p;
                    }
                }
            }
        }
        // Internal.
        for i in o + b..n {
            for j in o + b..n {
                let mut acc = a[at(i, j)].clone();
                for k in 0..b {
                    acc = acc - a[at(i, o + k)].clone() * a[at(o + k, j)].clone();
                }
                a[at(i, j)] = acc;
            }
        }
    }
}

#[test]
fn blocked_order_is_the_right_looking_order() {
    fn check<T: Real>() {
        let n = 32;
        let sys = system(&InputClass::range(2), n, 8);
        let mut right: Vec<T> = convert(&sys.a);
        lu_factor(&mut right, n, None);
        for b in [4, 8, 16, 32] {
            let mut blocked: Vec<T> = convert(&sys.a);
            blocked_model(&mut blocked, n, b);
            assert_eq!(
                bits_of(&blocked),
                bits_of(&right),
                "{} b={b}",
                T::precision_name()
            );
        }
    }
    check::<f32>();
    check::<f64>();
    check::<Comp32>();
    check::<f32x2>();
}
