//! The CPU runs of GE and LU (one per precision, visited) and their predicted host cost.

use super::*;

// ---- CPU runs ----------------------------------------------------------------------------------

/// Measures one CPU point (`pool` is set when the point's backend has more than one thread).
pub fn measure_cpu(point: &Point, pool: Option<&ThreadPool>, timing: CpuTiming) -> Measurement {
    let (StudyPrecision::Real(p), Data::Intervals(class)) = (point.precision, &point.data) else {
        unreachable!("the linalg plan has real precisions and interval data only")
    };
    p.visit(CpuRun {
        point,
        class,
        pool,
        timing,
    })
}

struct CpuRun<'a> {
    point: &'a Point,
    class: &'a InputClass,
    pool: Option<&'a ThreadPool>,
    timing: CpuTiming<'a>,
}

impl PrecisionVisitor for CpuRun<'_> {
    type Output = Measurement;
    fn visit<T: Real>(self) -> Measurement {
        let n = self.point.size as usize;
        let sys = system(self.class, n, self.point.seed);
        let a: Vec<T> = convert(&sys.a);
        // The converted system as f64 (exact: see the module doc).
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let a_max = max_abs(&a64);
        let (pool, stop) = (self.pool, self.timing.stop);
        let (mut m, time) = if self.point.workload == "ge" {
            let b: Vec<T> = convert(&sys.b);
            let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
            let ((ua, ub), time) = self.timing.measure(|| {
                let (mut a, mut b) = (a.clone(), b.clone());
                ge_forward_until(&mut a, &mut b, n, pool, stop);
                (a, b)
            });
            let x = back_substitute(&ua, &ub, n);
            let bits = reference_bits::<T>();
            let key = data_key(&format!("ge{bits}"), &[&a64, &b64]);
            let reference = cached(&CPU_GE_REFS, key, stop, || {
                ge_reference_until(&a64, &b64, n, bits, stop)
            });
            (score_ge(&x, &ua, n, a_max, &reference), time)
        } else {
            let (f, time) = self.timing.measure(|| {
                let mut a = a.clone();
                lu_factor_until(&mut a, n, pool, stop);
                a
            });
            let pairs = factor_pairs(&f, n, pair_of);
            let a_pairs: Vec<f64x2> = a64.iter().map(|&x| f64x2::from_base(x)).collect();
            let residual = lu_residual_model_until(&pairs, &a_pairs, n, stop);
            let kind = lu_ref_kind::<T>(n);
            let reference = match kind {
                LuRefKind::Mp => Some(cached(&CPU_LU_REFS, data_key("mp", &[&a64]), stop, || {
                    lu_reference_mp(&a64, n, stop)
                })),
                LuRefKind::Pairs | LuRefKind::PairsShort => {
                    Some(cached(&CPU_LU_REFS, data_key("dd", &[&a64]), stop, || {
                        lu_reference_pairs(&a64, n, stop)
                    }))
                }
                LuRefKind::Nothing => None,
            };
            let scored = score_factors(&f, &pairs, n, &kind, &residual, a_max, reference);
            (scored, time)
        };
        m.extra
            .insert("gflops".into(), gflops(n, time.median_ms.max(1e-9)));
        m.time = Some(time);
        m
    }
}

// ---- The cost ----------------------------------------------------------------------------------

/// Refinement steps the GE reference is counted with: each adds about 50 bits to the solution's
/// f64 start, so 2·p + 8 bits need (2·p + 8) / 50 of them, at least 2.
fn refinement_steps(precision: StudyPrecision) -> f64 {
    let bits = (2 * significand_bits(precision) + 8).max(220);
    f64::from(bits.div_ceil(50)).max(2.0)
}

/// What a GE or LU point costs the host. Both: the system (n² + n f64 values) and its f64 copy.
/// GE: the reference (a pivoted f64 LU, then k refinement steps of n² exact products per part, so
/// about k²/2 · n²); LU: the factors and A as f64x2, the f64x2 residual (n³/3 products and
/// subtractions; the GPU computes its own) and the reference factorization (f64x2, or mp512 up to
/// [`MP_REFERENCE_MAX`]). On the CPU, the converted A, the factors kept from the first run and
/// the copy each repetition makes, and the timed elimination: 2n³/3 operations in the precision.
pub fn host_cost(point: &Point) -> Cost {
    let (n, p) = (point.size as f64, point.precision);
    let (nn, cube) = (n * n, 2.0 / 3.0 * n * n * n);
    let big_pool = if point.size >= 256 { all_cores() } else { 1 };
    let mut work = vec![generation(nn + n)];
    let mut bytes = 8.0 * (nn + n) + 8.0 * nn;
    if point.workload == "ge" {
        bytes += 8.0 * nn;
        work.push(Work::new(F64, cube, Pace::Independent).on(big_pool));
        let k = refinement_steps(p);
        let pool = if point.size >= 128 { all_cores() } else { 1 };
        work.push(Work::new(StudyPrecision::Exact, k * k / 2.0 * nn, Pace::Dependent).on(pool));
    } else {
        bytes += 40.0 * nn;
        if !point.backend.is_gpu() {
            // The GPU computes its points' residual itself.
            let pool = if point.size >= 128 { all_cores() } else { 1 };
            work.push(Work::new(F64X2, cube, Pace::Independent).on(pool));
        }
        let bits = significand_bits(p);
        let mp512 = StudyPrecision::Real(Precision::Mp(512));
        if bits > 53 && point.size as usize <= MP_REFERENCE_MAX {
            bytes += 2.0 * value_bytes(mp512) as f64 * nn;
            work.push(Work::new(mp512, cube, Pace::Independent).on(big_pool));
        } else if p != F64X2 || bits <= 53 {
            bytes += 16.0 * nn;
            work.push(Work::new(F64X2, cube, Pace::Independent).on(big_pool));
        }
    }
    if let Backend::Cpu { threads } = point.backend {
        bytes += 3.0 * value_bytes(p) as f64 * (nn + n);
        work.push(Work::new(p, cube, Pace::Independent).on(threads).timed());
    }
    Cost {
        bytes: bytes as u64,
        work,
    }
}
