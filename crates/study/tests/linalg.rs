//! NVRTC and GPU tests of `linalg` (workloads `ge` and `lu`). The kernels compile for sm_90 in
//! every precision (skips without NVRTC); on a GPU, Gaussian elimination and the blocked LU equal
//! the sequential CPU algorithms bit for bit in every precision and tile, the f64x2 residual kernel
//! equals its model, tile 64 is recorded as out of resources, and timings are sane. GPU tests skip
//! without a GPU and fail under `MANTISSA_REQUIRE_GPU=1`.

use mantissa_gpu::testing::{require_gpu_or_skip, require_nvrtc_or_skip};
use mantissa_gpu::{Arch, FlagSet, Target, TimingOptions};
use mantissa_gpu::{DeviceWords, Word};
use mantissa_num::{f32x2, f64x2, Comp32, Comp64, CompNorm32, CompNorm64};
use mantissa_report::{Backend, Status};
use mantissa_study::inputs::InputClass;
use mantissa_study::linalg::{
    device_pair, ge_forward, ge_kernels, linalg_source, lu_factor, lu_kernels, lu_residual_model,
    system, GpuRunner, GE_TILES, RESIDUAL_KERNEL,
};
use mantissa_study::study::{Data, Point, StudyPrecision};
use mantissa_study::workload::GpuMeasure;

const ONCE: TimingOptions = TimingOptions { warmup: 0, reps: 1 };

fn check_compiles<T: DeviceWords>() {
    let Some(compiler) = require_nvrtc_or_skip() else {
        return;
    };
    let source = linalg_source::<T>();
    let compiled = compiler
        .compile(&source, FlagSet::DEFAULT, Target::Cubin(Arch::new(9, 0)))
        .unwrap_or_else(|e| panic!("{}: {e}", source.name));
    let ptx = &compiled.ptx;
    let mut names: Vec<String> = ge_kernels::<T>().to_vec();
    for tile in [4, 8, 16, 32] {
        names.extend(lu_kernels::<T>(tile));
    }
    names.push(RESIDUAL_KERNEL.to_string());
    for k in names {
        assert!(ptx.contains(&format!(".entry {k}(")), "{k} missing");
    }
    // Every operation is an explicit _rn instruction: no contraction into FMAs in f32/f64 (the
    // CPU's `a − m·b` is a product then a difference).
    // (The residual kernel is f64x2, whose product uses an FMA, as dw.rs's does.)
    if T::words() == 1 {
        for body in ptx.split(".entry ").skip(1) {
            if !body.starts_with(RESIDUAL_KERNEL) {
                assert!(
                    !body.contains("fma.rn"),
                    "{}: FMA in {body:.40}",
                    source.name
                );
            }
        }
    }
}

#[test]
fn linalg_kernels_compile_for_every_precision() {
    check_compiles::<f32>();
    check_compiles::<f64>();
    check_compiles::<f32x2>();
    check_compiles::<f64x2>();
    check_compiles::<Comp32>();
    check_compiles::<Comp64>();
    check_compiles::<CompNorm32>();
    check_compiles::<CompNorm64>();
}

fn bits<T: DeviceWords>(xs: &[T]) -> Vec<u64> {
    let mut w = Vec::new();
    for x in xs {
        x.push_words(&mut w);
    }
    w.into_iter().map(|x| x.bits()).collect()
}

fn convert<T: DeviceWords>(xs: &[f64]) -> Vec<T> {
    xs.iter().map(|&x| T::from_f64(x)).collect()
}

/// GE and LU on the GPU equal the sequential CPU algorithms bit for bit.
fn same_as_cpu<T: DeviceWords>(runner: &mut GpuRunner) {
    let p = T::precision_name();
    for (k, n) in [50usize, 128].into_iter().enumerate() {
        let sys = system(&InputClass::range(1 + k), n, 7);
        let (a, b): (Vec<T>, Vec<T>) = (convert(&sys.a), convert(&sys.b));
        let (mut ca, mut cb) = (a.clone(), b.clone());
        ge_forward(&mut ca, &mut cb, n, None);
        for tile in GE_TILES {
            let (ga, gb, t) = runner.ge_forward_gpu(&a, &b, n, tile, ONCE).unwrap();
            assert_eq!(bits(&ga), bits(&ca), "{p} GE matrix n={n} tile {tile}");
            assert_eq!(bits(&gb), bits(&cb), "{p} GE vector n={n} tile {tile}");
            assert!(t.median_ms > 0.0);
        }
    }
    for n in [64usize, 96] {
        let sys = system(&InputClass::gmp_range(1), n, 3);
        let a: Vec<T> = convert(&sys.a);
        let mut ca = a.clone();
        lu_factor(&mut ca, n, None);
        for tile in [4u32, 8, 16, 32] {
            let (ga, _) = runner.lu_gpu(&a, n, tile, ONCE).unwrap();
            assert_eq!(bits(&ga), bits(&ca), "{p} LU n={n} tile {tile}");
        }
        // The residual kernel equals its model (n = 96 also covers partial 16-wide k tiles
        // against i, j limits; n = 64 whole tiles).
        let f: Vec<f64x2> = ca.iter().map(device_pair).collect();
        let ap: Vec<f64x2> = a.iter().map(device_pair).collect();
        let gr = runner.residual_gpu(&f, &ap, n).unwrap();
        let cr = lu_residual_model(&f, &ap, n);
        let eq = gr
            .iter()
            .zip(&cr)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
        assert!(eq, "{p} residual n={n}");
    }
}

#[test]
fn gpu_ge_and_lu_equal_the_cpu_bit_for_bit() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    same_as_cpu::<f32>(&mut runner);
    same_as_cpu::<f64>(&mut runner);
    same_as_cpu::<f32x2>(&mut runner);
    same_as_cpu::<f64x2>(&mut runner);
    same_as_cpu::<Comp32>(&mut runner);
    same_as_cpu::<Comp64>(&mut runner);
    same_as_cpu::<CompNorm32>(&mut runner);
    same_as_cpu::<CompNorm64>(&mut runner);
}

#[test]
fn residual_kernel_handles_sizes_off_the_tile() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    for n in [1usize, 17, 50] {
        let sys = system(&InputClass::range(2), n, 11);
        let mut f: Vec<f64> = sys.a.clone();
        lu_factor(&mut f, n, None);
        let f: Vec<f64x2> = f.iter().map(|&x| f64x2::from_parts(x, 0.0)).collect();
        let a: Vec<f64x2> = sys.a.iter().map(|&x| f64x2::from_parts(x, 0.0)).collect();
        let g = runner.residual_gpu(&f, &a, n).unwrap();
        let c = lu_residual_model(&f, &a, n);
        assert_eq!(
            g.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            c.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "n={n}"
        );
    }
}

fn point(workload: &'static str, n: u64, p: &str, tile: u32) -> Point {
    Point {
        workload,
        algorithm: if workload == "ge" { "fan" } else { "blocked" },
        data: Data::Intervals(InputClass::gmp_range(1)),
        size: n,
        seed: 1,
        precision: StudyPrecision::parse_list(p).unwrap()[0],
        backend: Backend::GpuTiles { tile },
        flags: Some(mantissa_study::linalg::FLAGS),
    }
}

#[test]
fn tile_64_is_out_of_resources_and_points_measure() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    let opts = TimingOptions { warmup: 1, reps: 3 };
    for p in ["f32", "f64", "f64x2"] {
        let m = runner.measure(&point("lu", 128, p, 64), opts).unwrap();
        assert_eq!(m.status, Status::OutOfResources, "{p}");
        assert!(
            m.note.as_deref().unwrap_or("").contains("4096 threads"),
            "{m:?}"
        );
    }
    for (w, p, tile) in [
        ("ge", "f64", 16),
        ("ge", "f32", 4),
        ("lu", "f64", 16),
        ("lu", "comp32", 8),
    ] {
        let m = runner.measure(&point(w, 256, p, tile), opts).unwrap();
        assert_eq!(m.status, Status::Ok, "{w} {p}: {m:?}");
        let t = m.time.as_ref().unwrap();
        assert!(
            t.median_ms > 0.0 && t.min_ms <= t.median_ms,
            "{w} {p}: {t:?}"
        );
        assert!(m.extra["gflops"] > 0.0, "{w} {p}");
        let e = m.error.as_ref().unwrap();
        assert!(e.abs.is_finite() && e.abs >= 0.0, "{w} {p}: {e:?}");
        if w == "lu" && p == "f64" {
            // Table 17: f64 has no mismatches on (1e-1, 1) & (1, 10).
            assert_eq!(m.extra["mismatches"], 0.0);
        }
    }
    // The accuracy does not depend on the tile (the same bits), the time does.
    let a = runner.measure(&point("lu", 256, "f32", 8), opts).unwrap();
    let b = runner.measure(&point("lu", 256, "f32", 32), opts).unwrap();
    assert_eq!(a.error, b.error);
    assert_eq!(a.extra["mismatches"], b.extra["mismatches"]);
}

/// A GPU point scores exactly as the CPU point of the same input and precision (same bits, same
/// reference): error, value, mismatches and notes.
#[test]
fn gpu_points_score_like_cpu_points() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let mut runner = GpuRunner::new(&gpu);
    let timing = mantissa_study::study::CpuTiming {
        budget: std::time::Duration::from_millis(1),
        min_reps: 1,
        max_reps: 1,
        stop: Default::default(),
    };
    for (w, n, p, tile) in [
        ("ge", 64, "f32", 8),
        ("ge", 100, "comp64n", 16),
        ("lu", 64, "comp64", 16),
        ("lu", 256, "f32x2", 32),
    ] {
        let g = point(w, n, p, tile);
        let c = Point {
            backend: Backend::Cpu { threads: 1 },
            flags: None,
            ..g.clone()
        };
        let gm = runner.measure(&g, ONCE).unwrap();
        let cm = mantissa_study::linalg::measure_cpu(&c, None, timing);
        assert_eq!(gm.error, cm.error, "{w} {n} {p}");
        assert_eq!(
            gm.value.map(f64::to_bits),
            cm.value.map(f64::to_bits),
            "{w} {p}"
        );
        assert_eq!(gm.note, cm.note, "{w} {p}");
        assert_eq!(
            gm.extra.get("mismatches"),
            cm.extra.get("mismatches"),
            "{w} {p}"
        );
    }
}
