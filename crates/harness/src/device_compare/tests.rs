//! The device comparison checked on the CPU: its table exactly, its CUDA element code compiled
//! by nvcc as host code and run against `compare.rs` element by element, the summary merge against
//! `compare::compare` (the kernel's reductions modelled here), and the module compiled by NVRTC.
//! The kernel itself runs in `the_gpu_comparison_equals_compare_rs_in_every_type` (GPU).

use super::*;
use crate::compare::compare;
use dashu_int::ops::UnsignedAbs;
use mantissa_gpu::testing::{require_nvcc_or_skip, require_nvrtc_or_skip};
use mantissa_gpu::{Arch, Target};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[test]
fn the_table_is_ten_to_the_q_within_2_to_the_minus_105() {
    let t = pow10_table();
    assert_eq!(t.len(), 3 * (Q_MAX - Q_MIN + 1) as usize);
    for q in Q_MIN..=Q_MAX {
        let i = 3 * (q - Q_MIN) as usize;
        let (mh, ml, k) = (t[i], t[i + 1], t[i + 2] as isize);
        assert!((1.0..=2.0).contains(&mh), "q={q}: mh={mh}");
        if (0..=22).contains(&q) {
            let exact: f64 = format!("1e{q}").parse().unwrap();
            assert_eq!((mh * 2f64.powi(k as i32), ml), (exact, 0.0), "q={q}");
        } else {
            assert!(ml != 0.0, "q={q}");
        }
        // |(mh + ml) 2^k - 10^q| <= 2^-105 10^q, in integers scaled by 2^200.
        let x = big_scaled(mh, 200)
            + if ml < 0.0 {
                -big_scaled(ml, 200)
            } else {
                big_scaled(ml, 200)
            };
        let p = IBig::from(10u8).pow(q.unsigned_abs() as usize);
        let (lhs, rhs) = if q >= 0 {
            // x 2^(k-200) vs 10^q  <=>  x 2^k vs 10^q 2^200
            (x << k as usize, p << 200)
        } else {
            // x 2^(k-200) vs 10^-|q|  <=>  x 10^|q| vs 2^(200-k)
            (x * p, IBig::ONE << (200 - k) as usize)
        };
        let diff = (lhs - &rhs).unsigned_abs();
        assert!(diff << 105 <= rhs.unsigned_abs(), "q={q}");
    }
}

#[test]
fn constants_match_the_cuda_sources() {
    let define = |src: &str, name: &str| -> i64 {
        let line = src
            .lines()
            .find(|l| l.starts_with(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("#define {name}"));
        let v = line.split_whitespace().nth(2).unwrap();
        v.trim_matches(|c| c == '(' || c == ')').parse().unwrap()
    };
    assert_eq!(define(COMPARE_CUH, "MC_Q_MIN"), i64::from(Q_MIN));
    assert_eq!(define(COMPARE_CUH, "MC_Q_MAX"), i64::from(Q_MAX));
    assert_eq!(define(EXACT_SUM_CU, "EXACT_LIMBS"), LIMBS as i64);
    assert_eq!(define(COMPARE_CU, "MC_W_LIMBS"), W_LIMBS as i64);
    assert_eq!(define(COMPARE_CU, "MC_W_UNDECIDED"), W_UNDECIDED as i64);
    assert_eq!(define(COMPARE_CU, "MC_W_WORST"), W_WORST as i64);
    assert_eq!(define(COMPARE_CU, "MC_W_EXACT_FLAGS"), W_EXACT_FLAGS as i64);
    for (d, code) in [
        (DType::F64, "MC_F64"),
        (DType::F32, "MC_F32"),
        (DType::F16, "MC_F16"),
        (DType::BF16, "MC_BF16"),
        (DType::I32, "MC_I32"),
        (DType::I64, "MC_I64"),
        (DType::U8, "MC_U8"),
        (DType::U32, "MC_U32"),
        (DType::U64, "MC_U64"),
    ] {
        assert_eq!(
            define(COMPARE_CUH, code),
            i64::from(dtype_code(d)),
            "{code}"
        );
    }
}

#[test]
fn the_module_compiles_with_nvrtc() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    let c = nvrtc
        .compile(&source(), FLAGS, Target::Ptx(Arch::new(8, 0)))
        .unwrap_or_else(|e| panic!("{e}"));
    for entry in ["mc_reset", "mc_compare"] {
        assert!(c.ptx.contains(&format!(".entry {entry}(")), "{entry}");
    }
    // No FMA the source did not write: --fmad=false holds.
    assert!(!c.ptx.contains("mad.rn.f64") && !c.ptx.contains("fma.rn.ftz"));
}

/// Adversarial pairs (v, r) and the output type (3.1415 is seed 002's example, not pi): specials against each other in every type, and
/// random pairs of the kinds that decide digits and relative errors near their boundaries.
#[allow(clippy::approx_constant, clippy::excessive_precision)]
pub(super) fn cases(n: usize) -> Vec<(f64, f64, DType)> {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        0.1,
        10.0,
        100.0,
        1e22,
        1e23,
        1e-22,
        1e-23,
        5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        0.9999999,
        1.0000001,
        3.1415,
        3.1479,
        1e300,
        1e-300,
        123456789.0,
        2f64.powi(-30),
        1.5e-323,
        1e16,
        1e17,
        9.999999999999999e22,
        3e-261,
        2.9999999999999996e-261,
    ];
    let mut out = Vec::new();
    for &a in &specials {
        for &b in &specials {
            out.push((a, b, DType::F64));
        }
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(20);
    let types = [DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64];
    for _ in 0..n {
        let e = rng.random_range(-320..300);
        let mut x = rng.random_range(1.0..10.0) * 10f64.powi(e);
        if rng.random_bool(0.5) {
            x = -x;
        }
        let y = match rng.random_range(0..10) {
            0 => f64::from_bits(x.to_bits().wrapping_add_signed(rng.random_range(-3..4))),
            1 => x * (1.0 + rng.random_range(-1e-6..1e-6)),
            2 if x.abs() < 3e38 => x as f32 as f64,
            3 => rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-20..20)),
            4 => format!("{:.*e}", rng.random_range(0..16usize), x)
                .parse()
                .unwrap(),
            5 => {
                x = f64::from(rng.random_range(-1_000_000..1_000_000));
                f64::from(rng.random_range(-1_000_000..1_000_000))
            }
            6 => x * 10f64.powi(rng.random_range(-3..4)),
            7 => f64::from_bits(x.to_bits() ^ (1 << rng.random_range(0..63))),
            8 => {
                x = format!("{:.*e}", rng.random_range(0..16usize), x)
                    .parse()
                    .unwrap();
                f64::from_bits(x.to_bits().wrapping_add_signed(rng.random_range(-2..3)))
            }
            _ => -x,
        };
        let y = if y.is_finite() { y } else { x };
        let d = types[rng.random_range(0..types.len())];
        let (x, y) = match d {
            DType::I64 => (x.round().clamp(-1e18, 1e18), y.round().clamp(-1e18, 1e18)),
            _ => (x, y),
        };
        out.push((x, y, d));
    }
    out
}

/// The host driver: `compare.cuh` compiled as host C++ through nvcc. Mode `pair` reads
/// "v_bits r_bits p emin below" lines and prints the element's McPair; mode `load` reads
/// "dtype bits" lines and prints mc_load's f64 bits.
const DRIVER: &str = r#"
#include <cstdio>
#include <cstring>
#include <cmath>
#include <vector>
#include "compare.cuh"
int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "load") == 0) {
        int d; unsigned long long b;
        while (scanf("%d %llx", &d, &b) == 2) printf("%llx\n", mc_bits(mc_load(&b, d, 0)));
        return 0;
    }
    std::vector<double> tab;
    FILE* t = fopen(argv[2], "r");
    unsigned long long b;
    while (fscanf(t, "%llx", &b) == 1) tab.push_back(mc_from_bits(b));
    fclose(t);
    unsigned long long vb, rb; int p, emin, below;
    while (scanf("%llx %llx %d %d %d", &vb, &rb, &p, &emin, &below) == 5) {
        McPair o = mc_pair(mc_from_bits(vb), mc_from_bits(rb), p, emin, tab.data(), below);
        printf("%d %d %d %d %llx %llx %llx\n", o.kind, o.differing, o.counted, o.digits,
               mc_bits(o.rel), mc_bits(o.abs), mc_bits(o.ulps));
    }
}
"#;

/// Builds the driver in a scratch directory; `None` (after the skip line) without nvcc.
fn driver(tag: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let nvcc = require_nvcc_or_skip()?;
    let dir = std::env::temp_dir().join(format!("mantissa-compare-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("compare.cuh"), COMPARE_CUH).unwrap();
    std::fs::write(dir.join("driver.cu"), DRIVER).unwrap();
    let table: Vec<String> = pow10_table()
        .iter()
        .map(|x| format!("{:x}", x.to_bits()))
        .collect();
    std::fs::write(dir.join("tab.txt"), table.join("\n")).unwrap();
    let exe = dir.join("driver");
    let out = std::process::Command::new(nvcc.path())
        // Host code only (`-x c++`: nvcc hands the file to its host compiler), so that no CUDA
        // runtime library is needed to link; no contraction, as on the device.
        .args([
            "-x",
            "c++",
            "--cudart",
            "none",
            "-O2",
            "-Xcompiler",
            "-ffp-contract=off",
            "-o",
        ])
        .arg(&exe)
        .arg(dir.join("driver.cu"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((dir, exe))
}

fn run_driver(exe: &std::path::Path, args: &[&std::ffi::OsStr], input: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(exe)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Written from another thread: the driver answers line by line, and a full output pipe
    // would otherwise stop it while this side is still writing.
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// One line of the driver's `pair` output.
struct Element {
    kind: u8,
    differing: bool,
    counted: bool,
    digits: u32,
    rel: f64,
    abs: f64,
    ulps: f64,
}

fn parse_element(line: &str) -> Element {
    let f: Vec<&str> = line.split_whitespace().collect();
    let hex = |s: &str| f64::from_bits(u64::from_str_radix(s, 16).unwrap());
    Element {
        kind: f[0].parse().unwrap(),
        differing: f[1] == "1",
        counted: f[2] == "1",
        digits: f[3].parse().unwrap(),
        rel: hex(f[4]),
        abs: hex(f[5]),
        ulps: hex(f[6]),
    }
}

#[test]
fn the_cuda_element_equals_compare_rs_on_adversarial_pairs() {
    let Some((dir, exe)) = driver("pairs") else {
        return;
    };
    let cases = cases(30_000);
    let input: String = cases
        .iter()
        .map(|&(v, r, d)| {
            let (p, emin) = format_params(d);
            format!("{:x} {:x} {p} {emin} 1000\n", v.to_bits(), r.to_bits())
        })
        .collect();
    let out = run_driver(
        &exe,
        &["pair".as_ref(), dir.join("tab.txt").as_os_str()],
        &input,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len());
    let mut undecided = 0;
    for (&(v, r, d), line) in cases.iter().zip(&lines) {
        let e = parse_element(line);
        let ctx = format!(
            "v={v:e} ({:#x}) r={r:e} ({:#x}) {d}: {line}",
            v.to_bits(),
            r.to_bits()
        );
        match pair(d, v, r) {
            Pair::Same { differing, counted } => {
                assert_eq!(
                    (e.kind, e.differing, e.counted),
                    (0, differing, counted),
                    "{ctx}"
                );
            }
            Pair::NonFinite => {
                assert_eq!((e.kind, e.digits), (2, 0), "{ctx}");
                assert_eq!((e.rel, e.ulps), (f64::INFINITY, f64::INFINITY), "{ctx}");
            }
            Pair::Finite(m) => {
                if e.kind == 3 {
                    undecided += 1;
                    continue;
                }
                assert_eq!(e.kind, 1, "{ctx}");
                let digits = if m.digits.is_infinite() {
                    1000
                } else {
                    m.digits as u32
                };
                assert_eq!((e.digits, e.counted), (digits, m.counted), "{ctx}");
                assert_eq!(
                    (e.rel.to_bits(), e.abs.to_bits(), e.ulps.to_bits()),
                    (m.rel.to_bits(), m.abs.to_bits(), m.ulps.to_bits()),
                    "{ctx}: rel {} abs {} ulps {}",
                    m.rel,
                    m.abs,
                    m.ulps
                );
            }
        }
    }
    // Doubles decide nearly everything; the rest is the host's, and correct either way.
    assert!(undecided * 1000 < cases.len(), "{undecided} undecided");

    // The whole comparison: the kernel's reductions modelled here over the driver's elements
    // (a third of the decided ones handed back as undecided, to exercise the merge), against
    // compare::compare.
    for d in [DType::F64, DType::F32, DType::I64] {
        let picked: Vec<(f64, f64)> = cases
            .iter()
            .filter(|c| c.2 == d)
            .map(|c| (c.0, c.1))
            .collect();
        let idx: Vec<usize> = cases
            .iter()
            .enumerate()
            .filter(|c| c.1 .2 == d)
            .map(|c| c.0)
            .collect();
        let mut words = vec![0u64; WORDS];
        words[W_FIRST_NONFINITE] = u64::MAX;
        words[W_WORST] = u64::MAX;
        let mut sum = IBig::ZERO;
        let mut undecided = Vec::new();
        for (k, (&(v, r), &i)) in picked.iter().zip(&idx).enumerate() {
            let e = parse_element(lines[i]);
            words[W_DIFFERING] += u64::from(e.differing);
            match e.kind {
                0 => words[W_COUNTED] += u64::from(e.counted),
                2 => {
                    words[W_NONFINITE] += 1;
                    words[W_FIRST_NONFINITE] = words[W_FIRST_NONFINITE].min(k as u64);
                    words[W_WORST] = words[W_WORST].min(k as u64);
                    words[W_MAX_REL] = f64::INFINITY.to_bits();
                    words[W_MAX_ULPS] = f64::INFINITY.to_bits();
                }
                1 if k % 3 != 0 => {
                    words[W_MAX_ABS] = words[W_MAX_ABS].max(e.abs.to_bits());
                    words[W_MAX_REL] = words[W_MAX_REL].max(e.rel.to_bits());
                    words[W_MAX_ULPS] = words[W_MAX_ULPS].max(e.ulps.to_bits());
                    if e.digits != 1000 {
                        words[W_WORST] = words[W_WORST].min((u64::from(e.digits) << 40) | k as u64);
                    }
                    if e.counted {
                        words[W_COUNTED] += 1;
                        if e.rel.is_finite() {
                            sum += big_scaled(e.rel, 1074);
                        } else {
                            words[W_EXACT_FLAGS] |= EXACT_POS_INF;
                        }
                    }
                }
                _ => {
                    words[W_UNDECIDED] += 1;
                    undecided.push((k, v, r));
                }
            }
        }
        // The exact sum as base-2^32 limbs (a valid, if normalised, limb state).
        let mut rest = sum.unsigned_abs();
        for l in 0..LIMBS {
            let digit = &rest & dashu_int::UBig::from(u32::MAX);
            words[W_LIMBS + l] = u64::try_from(digit).unwrap();
            rest >>= 32;
        }
        undecided.reverse(); // any order
        let got = Summary { words, undecided }.finish(d, picked.len());
        let (values, reference): (Vec<f64>, Vec<f64>) = picked.iter().copied().unzip();
        let want = compare(d, &values, &reference);
        assert_eq!(format!("{got:?}"), format!("{want:?}"), "{d}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// With a minimum to beat (`below`), an element's digits come back exactly when they are below
/// it and as "at least" (1000) otherwise: the kernel's shortcut for keeping the fewest digits.
#[test]
fn digits_below_a_minimum_are_exact_and_the_rest_say_at_least() {
    let Some((dir, exe)) = driver("below") else {
        return;
    };
    let cases = cases(30_000);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(20);
    let belows: Vec<i32> = cases.iter().map(|_| rng.random_range(0..=19)).collect();
    let input: String = cases
        .iter()
        .zip(&belows)
        .map(|(&(v, r, d), below)| {
            let (p, emin) = format_params(d);
            format!("{:x} {:x} {p} {emin} {below}\n", v.to_bits(), r.to_bits())
        })
        .collect();
    let out = run_driver(
        &exe,
        &["pair".as_ref(), dir.join("tab.txt").as_os_str()],
        &input,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len());
    let (mut exact, mut at_least) = (0, 0);
    for ((&(v, r, d), &below), line) in cases.iter().zip(&belows).zip(&lines) {
        let Pair::Finite(m) = pair(d, v, r) else {
            continue;
        };
        let e = parse_element(line);
        if e.kind == 3 || m.digits.is_infinite() {
            continue;
        }
        let ctx = format!("v={v:e} r={r:e} {d} below {below}: {line}");
        if (m.digits as i32) < below {
            assert_eq!(e.digits, m.digits as u32, "{ctx}");
            exact += 1;
        } else {
            assert_eq!(e.digits, 1000, "{ctx}");
            at_least += 1;
        }
    }
    assert!(
        exact > 1000 && at_least > 1000,
        "{exact} exact, {at_least} at least"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_cuda_loads_read_values_as_data_rs_does() {
    let Some((dir, exe)) = driver("loads") else {
        return;
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let mut input = String::new();
    let mut want = Vec::new();
    let mut bits16: Vec<u16> = vec![
        0, 0x8000, 0x7c00, 0xfc00, 0x7c01, 0x7e00, 0xfd55, 0x0001, 0x03ff, 0x7f80, 0x7f81, 0xff80,
    ];
    bits16.extend((0..2000).map(|_| rng.random::<u16>()));
    let mut bits32: Vec<u32> = vec![
        0,
        0x8000_0000,
        0x7f80_0000,
        0x7f80_0001,
        0x7fc0_0000,
        0xffc0_1234,
        1,
        0x007f_ffff,
    ];
    bits32.extend((0..2000).map(|_| rng.random::<u32>()));
    let bits64: Vec<u64> = (0..2000)
        .map(|_| rng.random::<u64>())
        .chain([u64::MAX, 1 << 63, (1 << 53) + 1])
        .collect();
    let mut add = |d: DType, raw: u64, data: HostData| {
        input.push_str(&format!("{} {raw:x}\n", dtype_code(d)));
        want.push(to_f64(&data)[0].to_bits());
    };
    for &b in &bits16 {
        add(
            DType::F16,
            u64::from(b),
            HostData::F16(vec![half::f16::from_bits(b)]),
        );
        add(
            DType::BF16,
            u64::from(b),
            HostData::BF16(vec![half::bf16::from_bits(b)]),
        );
        add(DType::U8, u64::from(b as u8), HostData::U8(vec![b as u8]));
    }
    for &b in &bits32 {
        add(
            DType::F32,
            u64::from(b),
            HostData::F32(vec![f32::from_bits(b)]),
        );
        add(DType::I32, u64::from(b), HostData::I32(vec![b as i32]));
        add(DType::U32, u64::from(b), HostData::U32(vec![b]));
    }
    for &b in &bits64 {
        add(DType::F64, b, HostData::F64(vec![f64::from_bits(b)]));
        add(DType::I64, b, HostData::I64(vec![b as i64]));
        add(DType::U64, b, HostData::U64(vec![b]));
    }
    let out = run_driver(&exe, &["load".as_ref()], &input);
    let got: Vec<u64> = out
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{}", input.lines().nth(k).unwrap());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `xs` in type `d`: floats rounded, integers rounded and clamped (NaN to 0).
fn in_type(d: DType, xs: &[f64]) -> HostData {
    fn int<T: TryFrom<i128> + Default>(x: f64, lo: f64, hi: f64) -> T {
        let x = if x.is_nan() {
            0.0
        } else {
            x.round().clamp(lo, hi)
        };
        T::try_from(x as i128).unwrap_or_default()
    }
    match d {
        DType::F64 => HostData::F64(xs.to_vec()),
        DType::F32 => HostData::F32(xs.iter().map(|&x| x as f32).collect()),
        DType::F16 => HostData::F16(xs.iter().map(|&x| half::f16::from_f64(x)).collect()),
        DType::BF16 => HostData::BF16(xs.iter().map(|&x| half::bf16::from_f64(x)).collect()),
        DType::I32 => HostData::I32(
            xs.iter()
                .map(|&x| int(x, -2147483648.0, 2147483647.0))
                .collect(),
        ),
        DType::I64 => HostData::I64(xs.iter().map(|&x| int(x, -9.2e18, 9.2e18)).collect()),
        DType::U8 => HostData::U8(xs.iter().map(|&x| int(x, 0.0, 255.0)).collect()),
        DType::U32 => HostData::U32(xs.iter().map(|&x| int(x, 0.0, 4294967295.0)).collect()),
        DType::U64 => HostData::U64(xs.iter().map(|&x| int(x, 0.0, 1.8e19)).collect()),
    }
}

fn viewed(xs: &[f64], v: View) -> Vec<f64> {
    (0..v.len).map(|k| xs[v.offset + k * v.stride]).collect()
}

#[test]
fn the_gpu_comparison_equals_compare_rs_in_every_type() {
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let mut comparer = DeviceComparer::new(&gpu).unwrap();
    let all = cases(20_000);
    let types = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U32,
        DType::U64,
    ];
    for d in types {
        // Integer types get integer-valued data scaled into their range as well.
        let (v, r): (Vec<f64>, Vec<f64>) = all
            .iter()
            .map(|&(v, r, _)| match d {
                DType::F64 | DType::F32 | DType::F16 | DType::BF16 => (v, r),
                _ => ((v * 1e3).clamp(-1e15, 1e15), (r * 1e3).clamp(-1e15, 1e15)),
            })
            .unzip();
        let (vd, rd) = (in_type(d, &v), in_type(d, &r));
        let (vb, rb) = (gpu.upload("v", &vd).unwrap(), gpu.upload("r", &rd).unwrap());
        let r64 = gpu.upload("r64", &HostData::F64(r.clone())).unwrap();
        let n = v.len();
        let strided = |offset| View {
            offset,
            len: (n - 2) / 3,
            stride: 3,
        };
        let jobs = [
            Job {
                values: Side::whole(&vb),
                reference: Side::whole(&rb),
            },
            Job {
                values: Side::whole(&vb),
                reference: Side::whole(&r64),
            },
            Job {
                values: Side {
                    buffer: &vb,
                    view: strided(1),
                },
                reference: Side {
                    buffer: &rb,
                    view: strided(2),
                },
            },
        ];
        let got = comparer.compare(&gpu, &jobs).unwrap();
        let (vh, rh) = (to_f64(&vd), to_f64(&rd));
        let want = [
            compare(d, &vh, &rh),
            compare(d, &vh, &r),
            compare(d, &viewed(&vh, strided(1)), &viewed(&rh, strided(2))),
        ];
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(format!("{g:?}"), format!("{w:?}"), "{d}, comparison {k}");
        }
        println!("{d}: {:?}", got[1]);
    }
    // Many blocks: 2^22 + 7 f32 results against f64 references, and a NaN every 1000.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let n = (1 << 22) + 7;
    let r: Vec<f64> = (0..n)
        .map(|_| rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-30..30)))
        .collect();
    let v: Vec<f32> = r
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            if i % 1000 == 999 {
                f32::NAN
            } else {
                (x * (1.0 + 1e-7)) as f32
            }
        })
        .collect();
    let vb = gpu.upload("v", &HostData::F32(v.clone())).unwrap();
    let rb = gpu.upload("r", &HostData::F64(r.clone())).unwrap();
    let got = comparer
        .compare(
            &gpu,
            &[Job {
                values: Side::whole(&vb),
                reference: Side::whole(&rb),
            }],
        )
        .unwrap();
    let want = compare(DType::F32, &to_f64(&HostData::F32(v)), &r);
    assert_eq!(format!("{:?}", got[0]), format!("{want:?}"));
}

/// Reduced outputs on the GPU equal `compare::reduce` on the host, bit for bit, for every
/// operation and element type: wide dynamic range, sums that cancel to zero, all −0.0, NaN,
/// infinities of one and of both signs, squares beyond the kernel's exact range (host fallback),
/// empty and strided views, and a many-block array.
#[test]
fn the_gpu_reductions_equal_compare_rs() {
    use crate::compare::reduce;
    use crate::spec::Reduce;
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let mut comparer = DeviceComparer::new(&gpu).unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
    let wide: Vec<f64> = (0..20_000)
        .map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-200..200)))
        .collect();
    let mut cancelling = wide.clone();
    cancelling.extend(wide.iter().map(|x| -x));
    let with = |x: f64| {
        let mut v = wide.clone();
        v[777] = x;
        v
    };
    let sets: Vec<(&str, Vec<f64>)> = vec![
        ("wide", wide.clone()),
        ("cancelling", cancelling),
        ("negative zeros", vec![-0.0; 1000]),
        ("nan", with(f64::NAN)),
        ("inf", with(f64::INFINITY)),
        ("both infinities", {
            let mut v = with(f64::NEG_INFINITY);
            v[10] = f64::INFINITY;
            v
        }),
        ("tiny", with(1e-300)),
        ("huge", with(1e300)),
        (
            "big",
            (0..(1 << 21) + 3).map(|k| (k as f64).sin() * 1e6).collect(),
        ),
    ];
    let ops = [
        Reduce::Sum,
        Reduce::Mean,
        Reduce::Min,
        Reduce::Max,
        Reduce::Norm2,
    ];
    for d in [DType::F64, DType::F32, DType::I64] {
        for (name, xs) in &sets {
            let data = in_type(d, xs);
            let host = to_f64(&data);
            let buffer = gpu.upload("x", &data).unwrap();
            let n = host.len();
            let views = [
                View {
                    offset: 0,
                    len: n,
                    stride: 1,
                },
                View {
                    offset: 1,
                    len: (n - 2) / 3,
                    stride: 3,
                },
                View {
                    offset: 5,
                    len: 0,
                    stride: 1,
                },
            ];
            for view in views {
                let want_values = viewed(&host, view);
                for op in ops {
                    let got = comparer
                        .reduce(
                            &gpu,
                            Side {
                                buffer: &buffer,
                                view,
                            },
                            op,
                        )
                        .unwrap();
                    let want = reduce(op, &want_values);
                    // ±0 are ordered (−0 < +0) on the GPU; the host's min/max may pick either.
                    let same = got.to_bits() == want.to_bits()
                        || (got.is_nan() && want.is_nan())
                        || (matches!(op, Reduce::Min | Reduce::Max) && got == 0.0 && want == 0.0);
                    assert!(
                        same,
                        "{d} {name} {view:?} {op:?}: GPU {got:e}, host {want:e}"
                    );
                }
            }
        }
    }
}
