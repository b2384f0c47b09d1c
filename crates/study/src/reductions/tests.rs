use super::*;

#[test]
fn pi_reference_is_pi() {
    let pi = pi_big();
    assert_eq!(mantissa_num::big::to_f64(&pi), std::f64::consts::PI);
    // 3.14159265358979323846264338327950288419716939937510 − the f64 nearest π.
    let f64_pi = mantissa_num::big::exact(std::f64::consts::PI);
    let diff = mantissa_num::big::to_f64(&(pi - f64_pi));
    assert!((diff - 1.2246467991473532e-16).abs() < 1e-31, "{diff:e}");
}

#[test]
fn accuracy_order_matches_the_thesis_on_range5() {
    // Seed 000 Table 11 order: f32 < comp32 (≈ f32x2 here) < f64 < f64x2 < exact.
    let data = Data::ZeroSum(InputClass::range(5));
    let point = |p: &str| Point {
        workload: "sum",
        algorithm: "serial",
        data: data.clone(),
        size: 1 << 16,
        seed: 3,
        precision: StudyPrecision::parse_list(p).unwrap()[0],
        backend: Backend::Cpu { threads: 1 },
        flags: None,
    };
    let inputs = Inputs::of(&point("f32"));
    let timing = CpuTiming::for_suite(Suite::Quick);
    let err = |p: &str| {
        cpu_outcome(&point(p), &inputs, None, timing)
            .value_f64
            .abs()
    };
    let (f32e, c32, f64e, dd, ex) = (
        err("f32"),
        err("comp32"),
        err("f64"),
        err("f64x2"),
        err("exact"),
    );
    assert!(
        f32e > c32 && c32 > f64e && f64e > dd,
        "{f32e:e} {c32:e} {f64e:e} {dd:e}"
    );
    assert_eq!(ex, 0.0);
}

#[test]
fn device_bytes_count_every_word_of_both_dot_vectors() {
    let point = |workload, p: &str| Point {
        workload,
        algorithm: "tree",
        data: Data::Uniform { lo: -1.0, hi: 2.0 },
        size: 1000,
        seed: 1,
        precision: StudyPrecision::parse_list(p).unwrap()[0],
        backend: Backend::gpu(1, 32),
        flags: Some(crate::gpu_reduce::FLAGS),
    };
    // Dot products upload both vectors converted: 16 bytes a value for the f64 pairs.
    assert_eq!(device_bytes(&point("dot", "f64x2")), 2 * 1000 * 16);
    assert_eq!(device_bytes(&point("dot", "comp64")), 2 * 1000 * 16);
    assert_eq!(device_bytes(&point("dot", "comp32")), 2 * 1000 * 8);
    assert_eq!(device_bytes(&point("dot", "f32")), 2 * 1000 * 4);
    // Sums of f64-based types read the f64 data as it is; f32-based ones get it converted.
    assert_eq!(device_bytes(&point("sum", "f64x2")), 1000 * 8);
    assert_eq!(device_bytes(&point("sum", "f32x2")), 1000 * 8);
    assert_eq!(device_bytes(&point("sum", "f32")), 1000 * 4);
    assert_eq!(device_bytes(&point("sum", "exact")), 1000 * 8);
    assert_eq!(device_bytes(&point("pi-midpoint", "f64x2")), 0);
}
