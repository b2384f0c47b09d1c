use super::*;
use mantissa_gpu::{Arch, Target};
use mantissa_num::{f64x2, Comp64};

fn cfg(suite: Suite) -> StudyConfig {
    StudyConfig {
        seed: 7,
        ..StudyConfig::for_tests(vec![&Intensity], suite)
    }
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// Operations the text applies to the chains, with the loop body counted once per trip.
fn chain_ops_in(text: &str, apply: &str) -> u64 {
    let trips = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("for (int r = 0; r < "))
        .and_then(|rest| rest.split(';').next())
        .map_or(1, |t| t.parse::<u64>().unwrap());
    let mut in_loop = false;
    let mut total = 0;
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with("for (") {
            in_loop = true;
        } else if l == "}" {
            in_loop = false;
        } else if l.starts_with('y') && l.contains(&format!("= {apply}(y")) {
            total += if in_loop { trips } else { 1 };
        }
    }
    total
}

#[test]
fn generated_kernels_have_n_ops_16_chains_one_load_one_store() {
    for p in Precision::NATIVE {
        for op in Op::BOTH {
            for n in [1, 2, 15, 16, 17, 100, 1000, 1001, 5000, 10000, 10007] {
                let text = kernel_text(p, op, n).unwrap();
                let c = cuda_names(p).unwrap();
                let apply = if op == Op::Add { &c.add } else { &c.mul };
                assert_eq!(chain_ops_in(&text, apply), n, "{p} {op:?} N={n}");
                let m = chains_used(n);
                // Chains declared: y0..y(m-1), never y(m).
                assert!(text.contains(&format!(" y{} = x{};", m - 1, m - 1)));
                assert!(!text.contains(&format!(" y{m} ")));
                assert_eq!(count(&text, "in[gid]"), 1, "one load");
                assert_eq!(count(&text, "out[gid] ="), 1, "one store");
                assert_eq!(count(&text, "= in["), 1);
                // Derivations: x1..x(m-1), each once; the final sum adds m-1 terms.
                assert_eq!(count(&text, "(x"), (m - 1) as usize);
                assert_eq!(count(&text, "(s, y"), (m - 1) as usize);
                let body = if looped(p, n) { 16 + n % 16 } else { n };
                assert_eq!(chain_lines(&text) as u64, body);
                assert_eq!(text.contains("#pragma unroll 1"), looped(p, n));
                assert!(text.contains(&kernel_name(p, op, n)));
            }
        }
    }
}

/// Lines of the form `yI = f(yI, xI)`.
fn chain_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim().starts_with('y') && l.contains("(y"))
        .count()
}

#[test]
fn zero_operations_and_mp_are_refused_clearly() {
    let e = kernel_text(Precision::F64, Op::Add, 0).unwrap_err();
    assert_eq!(e, IntensityError::NoOperations);
    assert!(e.to_string().contains("N = 0") && e.to_string().contains("N >= 1"));
    let e = kernel_source(Precision::Mp(128), Op::Mul, 10).unwrap_err();
    assert!(e.to_string().contains("mp128"), "{e}");
}

#[test]
fn ops_per_chain_add_up_to_n() {
    for n in [1, 5, 16, 17, 31, 1000, 10000] {
        let total: u64 = (0..chains_used(n)).map(|c| ops_on_chain(n, c)).sum();
        assert_eq!(total, n);
    }
    assert_eq!(ops_on_chain(17, 0), 2);
    assert_eq!(ops_on_chain(17, 1), 1);
    assert_eq!(rounds(Precision::F64, 10000), 625);
    assert_eq!(rounds(Precision::F64, 1000), 0);
    assert_eq!(rounds(Precision::F64x2, 1000), 62);
    assert_eq!(rounds(Precision::Comp32, 100), 0);
}

/// The model in f64 against exact arithmetic: close (a few ulps per chain op), and Mp<1024>
/// (error ≈ 2^-1000 a step) agrees with the exact chains to ~300 digits, which checks the
/// exact reference independently of the model's floating-point rounding.
#[test]
fn model_agrees_with_exact_and_mp_references() {
    type M = mantissa_num::Mp<1024>;
    for op in Op::BOTH {
        for n in [1u64, 7, 16, 100, 1000, 10000] {
            let xs: Vec<f64> = inputs(op, 3, 11);
            for x in &xs {
                let e = exact(&big::exact(*x), op, n);
                let mp = model(&M::from_f64(*x), op, n).to_big().unwrap();
                let rel = mantissa_num::metrics::rel_error(&mp, &e);
                assert!(rel < 1e-250, "{op:?} N={n}: mp vs exact {rel:e}");
                let f = model(x, op, n);
                let rel = (f - big::to_f64(&e)).abs() / big::to_f64(&e);
                // Each chain op adds at most half an ulp of relative error, a mul chain's
                // compounding also about that: k ops ≤ ~k·2^-53, with k ≤ N/16 + 1.
                let bound = (n / CHAINS + 2 + 16) as f64 * 2f64.powi(-52);
                assert!(rel <= bound, "{op:?} N={n}: f64 {rel:e} > {bound:e}");
            }
        }
    }
}

/// Small integers add exactly: add chains from x0 = 1 give exactly Σ (k_c + 1)(1 + c).
#[test]
fn exact_inputs_give_exact_results_in_every_precision() {
    struct V;
    impl PrecisionVisitor for V {
        type Output = ();
        fn visit<T: Real>(self) {
            for n in [1u64, 16, 37, 1000] {
                let want: u64 = (0..chains_used(n))
                    .map(|c| (ops_on_chain(n, c) + 1) * (1 + c))
                    .sum();
                let got = model(&T::one(), Op::Add, n);
                assert_eq!(got.to_f64(), want as f64, "{} N={n}", T::precision_name());
                let e = exact(&big::exact(1.0), Op::Add, n);
                assert_eq!(big::to_f64(&e), want as f64);
            }
        }
    }
    for p in Precision::ALL {
        p.visit(V);
    }
}

#[test]
fn inputs_use_both_words_and_stay_in_range() {
    let xs: Vec<f64x2> = inputs(Op::Mul, 100, 3);
    assert!(xs
        .iter()
        .all(|x| x.lo != 0.0 && (1.0..1.0 + 1.0 / 64.0).contains(&x.hi)));
    let c: Vec<Comp64> = inputs(Op::Add, 100, 3);
    assert!(c
        .iter()
        .all(|x| x.error != 0.0 && (1.0..=2.0).contains(&x.value)));
    let again: Vec<f64x2> = inputs(Op::Mul, 100, 3);
    assert_eq!(xs, again, "seeded");
    assert_eq!(sample_indices(4096)[0], 0);
    assert_eq!(sample_indices(4096).len(), SAMPLES);
    assert_eq!(sample_indices(3), vec![0, 1, 2]);
}

/// No chain overflows or underflows at N = 10000 in any precision: the results are finite,
/// normal, and within the bounds of the module doc.
#[test]
fn no_chain_leaves_the_normal_range_at_n_10000() {
    struct V;
    impl PrecisionVisitor for V {
        type Output = ();
        fn visit<T: Real>(self) {
            for op in Op::BOTH {
                for x in inputs::<T>(op, 8, 5) {
                    let y = model(&x, op, 10000).to_f64();
                    assert!(y.is_finite() && y > 1e-8 && y < 16.0 * 2f64.powi(14), "{y}");
                }
            }
        }
    }
    for p in Precision::NATIVE {
        p.visit(V);
    }
}

#[test]
fn error_grows_with_n_for_f32_and_pairs_beat_base_types() {
    let rel = |p: Precision, op: Op, n: u64| {
        struct V(Op, u64);
        impl PrecisionVisitor for V {
            type Output = f64;
            fn visit<T: Real>(self) -> f64 {
                let xs: Vec<T> = inputs(self.0, 64, 1);
                let rs: Vec<T> = xs.iter().map(|x| model(x, self.0, self.1)).collect();
                score(&xs, &rs, self.0, self.1).rel_mean
            }
        }
        p.visit(V(op, n))
    };
    for op in Op::BOTH {
        let (small, large) = (rel(Precision::F32, op, 20), rel(Precision::F32, op, 10000));
        assert!(large > 10.0 * small, "{op:?}: f32 {small:e} -> {large:e}");
        let f64e = rel(Precision::F64, op, 10000);
        assert!(rel(Precision::F64x2, op, 10000) < 1e-10 * f64e);
        assert!(rel(Precision::F32x2, op, 10000) < 1e-3 * large);
        assert!(large > 1e6 * f64e);
    }
    // Table 4's product drops xv·yv's rounding error: composite mul errs like its base type.
    let (c, f) = (
        rel(Precision::Comp32, Op::Mul, 1000),
        rel(Precision::F32, Op::Mul, 1000),
    );
    assert!(c > f / 2.0 && c < 2.0 * f, "comp32 {c:e} f32 {f:e}");
    // The unnormalised error word: comp32 add falls behind f32x2 as N grows, comp32n not.
    let d = rel(Precision::F32x2, Op::Add, 10000);
    assert!(rel(Precision::Comp32, Op::Add, 10000) > 10.0 * d);
    assert!(rel(Precision::Comp32n, Op::Add, 10000) < 10.0 * d);
}

#[test]
fn cpu_points_run_and_score() {
    let point = Point {
        workload: "intensity",
        algorithm: "mul",
        data: Data::Nothing,
        size: 100,
        seed: 1,
        precision: StudyPrecision::Real(Precision::Comp32),
        backend: Backend::Cpu { threads: 2 },
        flags: None,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let m = measure_cpu(&point, Some(&pool), CpuTiming::for_suite(Suite::Quick));
    assert_eq!(m.status, Status::Ok);
    let e = m.error.unwrap();
    // Table 4's product keeps no TwoProd error term: comp32 mul errs like f32 (see the
    // module doc), between 2^-24 and 100 chain steps of it.
    assert!(
        e.rel.unwrap() > 1e-9 && e.rel.unwrap() < 100.0 * 2f64.powi(-24),
        "{e:?}"
    );
    assert!(m.extra["rel_err_max"] >= m.extra["rel_err_mean"]);
    let seq = measure_cpu(&point, None, CpuTiming::for_suite(Suite::Quick));
    assert_eq!(seq.value, m.value, "the pool changes nothing but time");
}

#[test]
fn plans_have_unique_keys_and_honour_the_user() {
    for suite in [Suite::Quick, Suite::Full] {
        let c = cfg(suite);
        let mut all = cpu_points(&c);
        all.extend(gpu_points(&c, (264, 1024)));
        let keys: std::collections::HashSet<_> = all.iter().map(|p| p.key("d")).collect();
        assert_eq!(keys.len(), all.len());
        assert!(all.iter().all(|p| !matches!(
            p.precision,
            StudyPrecision::Exact | StudyPrecision::Real(Precision::Mp(_))
        )));
    }
    let full = gpu_points(&cfg(Suite::Full), (264, 1024));
    let sizes: std::collections::BTreeSet<u64> = full.iter().map(|p| p.size).collect();
    assert_eq!(sizes.into_iter().collect::<Vec<_>>(), THESIS_SIZES);
    for b in [
        (1, 1),
        (1, 256),
        (1, 512),
        (1, 1024),
        (264, 1024),
        (1056, 256),
    ] {
        let want = Backend::gpu(b.0, b.1);
        assert!(full.iter().any(|p| p.backend == want), "{want:?}");
    }
    let mut c = cfg(Suite::Quick);
    c.sizes = Some(vec![0, 3, 7]);
    c.precisions = StudyPrecision::parse_list("f64x2,mp256,exact").unwrap();
    c.threads = vec![1, 4];
    let cpu = cpu_points(&c);
    assert_eq!(cpu.len(), 2 * 2 * 2, "ops × sizes × threads");
    assert!(cpu
        .iter()
        .all(|p| p.precision.to_string() == "f64x2" && p.size != 0));
    assert!(cpu.iter().any(|p| p.backend == Backend::Cpu { threads: 4 }));
    c.cpu = false;
    assert!(cpu_points(&c).is_empty());
}

#[test]
fn executed_counts_expand_the_loop() {
    // A census of a hand-made function: 2 adds outside, 3 in a loop body.
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .f64 %fd<4>;
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    add.rn.f64 %fd1, %fd2, %fd3;
    mov.u32 %r1, 0;
$L_loop:
    add.rn.f64 %fd1, %fd1, %fd3;
    add.rn.f64 %fd2, %fd2, %fd3;
    fma.rn.f64 %fd2, %fd2, %fd3, %fd1;
    add.s32 %r1, %r1, 1;
    setp.lt.s32 %p1, %r1, 10;
    @%p1 bra $L_loop;
    sub.rn.f64 %fd1, %fd1, %fd2;
    ret;
}
"#;
    let c = ptx_counts(ptx, "k", 10);
    assert_eq!(c["add.f64"], 1 + 2 * 10);
    assert_eq!(c["fma.f64"], 10);
    assert_eq!(c["sub.f64"], 1);
    assert_eq!(arithmetic_of(&c, "f64"), 1 + 30 + 1);
    assert_eq!(arithmetic_of(&c, "f32"), 0);
    assert!(ptx_counts(ptx, "other", 10).is_empty());
}

/// NVRTC compile time of f64x2 add kernels, straight-line against looped (the measurement
/// behind [`straight_max`]; run with `--ignored --nocapture`).
#[test]
#[ignore = "a measurement, not a check: takes about half a minute"]
fn nvrtc_compile_times() {
    let Some(nvrtc) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    for (n, looped) in [(100, false), (1000, false), (1000, true), (10000, true)] {
        for p in [Precision::F64x2, Precision::F64] {
            let text = generate(p, Op::Add, n, looped, None).unwrap();
            let src = Source::new(
                format!("t{n}{looped}.cu"),
                format!("{}\n{text}", twin::HEADER),
            );
            let start = std::time::Instant::now();
            nvrtc
                .compile(&src, FlagSet::DEFAULT, Target::Cubin(Arch::new(9, 0)))
                .unwrap();
            println!(
                "{p} add N={n} looped={looped}: {:.2} s",
                start.elapsed().as_secs_f64()
            );
        }
    }
}
