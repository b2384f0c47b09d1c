//! CPU tests of the cause list and the cause passes: exact candidate lists of fixtures whose
//! causes are known from their source, every switched module assembling, and the switched
//! instructions computing (in the interpreter) what the CPU computes: Rust's own IEEE f32
//! arithmetic, and for casts the x86-64 conversion instructions themselves.

use super::*;
use crate::interp::{run, Arg, Launch, Memory, GLOBAL_BASE};
use crate::test_support::{assert_sound, parse_clean};

const RAY_DEFAULT: &str = include_str!("../../../tests/fixtures/ray_step.default.ptx");
const RAY_STRICT: &str = include_str!("../../../tests/fixtures/ray_step.strict.ptx");
const RAY_FAST: &str = include_str!("../../../tests/fixtures/ray_step.fast.ptx");
const DIVSQRT_FAST: &str = include_str!("../../../tests/fixtures/divsqrt.fast.ptx");

/// (line, cause, opcode) of each candidate, in list order.
fn summary(list: &[Candidate]) -> Vec<(u32, Cause, String)> {
    list.iter()
        .map(|c| (c.site.line, c.cause, c.op.clone()))
        .collect()
}

fn all_switchable(list: &[Candidate]) -> Vec<usize> {
    (0..list.len()).filter(|&k| list[k].switchable()).collect()
}

#[test]
fn the_ray_step_has_the_three_seeded_causes_of_its_source() {
    // ray_step.cu line 8: `img_shift_x - (start_x + (float)i * step_x[i]) * reci_pix_d` (an
    // fma the strict build lacks, and a product ptxas fuses into the subtraction); line 10:
    // `(unsigned short)(w * len[i] * f_length)` of a value that may be negative.
    let m = parse_clean("ray default", RAY_DEFAULT);
    let strict = parse_clean("ray strict", RAY_STRICT);
    let list = candidates(&m, Some(&strict));
    assert_eq!(
        summary(&list),
        vec![
            (8, Cause::Contraction, "fma.rn.f32".into()),
            (8, Cause::Contractible, "mul.f32".into()),
            (10, Cause::FloatToInt, "cvt.rzi.u32.f32".into()),
        ]
    );
    assert!(
        list[2].detail.contains("may be negative"),
        "{}",
        list[2].detail
    );
    // The strict build has nothing to switch but its cast.
    let own = candidates(&strict, Some(&strict));
    assert_eq!(
        summary(&own),
        vec![(10, Cause::FloatToInt, "cvt.rzi.u32.f32".into())]
    );
    // Fast math adds the approximate division (line 9) and .ftz on every f32 instruction.
    let fast = candidates(&parse_clean("ray fast", RAY_FAST), Some(&strict));
    let count = |c: Cause| fast.iter().filter(|x| x.cause == c).count();
    assert_eq!(count(Cause::Approximate), 1);
    assert_eq!(count(Cause::Contraction), 1);
    assert_eq!(count(Cause::Contractible), 1);
    assert_eq!(count(Cause::FloatToInt), 1);
    assert_eq!(count(Cause::FlushToZero), 7);
    assert_eq!(fast.len(), 11);
}

#[test]
fn divsqrt_lists_approximations_casts_and_the_special_function() {
    let m = parse_clean("divsqrt fast", DIVSQRT_FAST);
    let list = candidates(&m, None);
    let approx: Vec<&str> = list
        .iter()
        .filter(|c| c.cause == Cause::Approximate)
        .map(|c| c.op.as_str())
        .collect();
    assert_eq!(
        approx,
        [
            "div.approx.ftz.f32",
            "sqrt.approx.ftz.f32",
            "rcp.approx.ftz.f32",
            "rsqrt.approx.ftz.f32"
        ]
    );
    let math: Vec<&Candidate> = list
        .iter()
        .filter(|c| c.cause == Cause::MathFunction)
        .collect();
    assert_eq!(math.len(), 1);
    assert_eq!(math[0].op, "ex2.approx.ftz.f32");
    assert!(!math[0].switchable());
    let casts: Vec<&str> = list
        .iter()
        .filter(|c| c.cause == Cause::FloatToInt)
        .map(|c| c.op.as_str())
        .collect();
    assert_eq!(casts, ["cvt.rzi.ftz.u32.f32", "cvt.rzi.u32.f64"]);
}

#[test]
fn every_fixture_switched_whole_and_per_cause_assembles() {
    let strict = parse_clean("ray strict", RAY_STRICT);
    for (name, text) in crate::tests::FIXTURES {
        let m = parse_clean(name, text);
        let list = candidates(&m, Some(&strict));
        let all = all_switchable(&list);
        let run = switch(&m, &list, &all).unwrap_or_else(|e| panic!("{name}: {e}"));
        let changed: usize = run
            .reports
            .iter()
            .filter_map(|r| r.details::<CauseReport>())
            .map(|r| r.changes.len())
            .sum();
        assert_eq!(changed, all.len(), "{name}: one change per candidate");
        assert_sound(name, &run.module);
        // Each candidate alone changes exactly its own instruction.
        for &k in &all {
            let one = switch(&m, &list, &[k]).unwrap_or_else(|e| panic!("{name}: {e}"));
            let changes: Vec<&Change> = one
                .reports
                .iter()
                .filter_map(|r| r.details::<CauseReport>())
                .flat_map(|r| &r.changes)
                .collect();
            assert_eq!(changes.len(), 1, "{name} {}", list[k].site);
            assert_eq!(changes[0].inst, list[k].inst);
        }
    }
}

#[test]
fn listed_only_and_unknown_candidates_are_refused() {
    let m = parse_clean("divsqrt fast", DIVSQRT_FAST);
    let list = candidates(&m, None);
    let math = list
        .iter()
        .position(|c| c.cause == Cause::MathFunction)
        .unwrap_or_else(|| panic!("no math candidate"));
    assert!(matches!(
        switch(&m, &list, &[math]),
        Err(SwitchError::NotSwitchable {
            cause: Cause::MathFunction,
            ..
        })
    ));
    assert_eq!(
        switch(&m, &list, &[list.len()]).err(),
        Some(SwitchError::NoCandidate {
            index: list.len(),
            count: list.len()
        })
    );
}

#[test]
fn ftz_and_approximation_of_one_instruction_switch_independently() {
    let m = parse_clean("divsqrt fast", DIVSQRT_FAST);
    let list = candidates(&m, None);
    let div = |cause| {
        list.iter()
            .position(|c| c.cause == cause && c.op == "div.approx.ftz.f32")
            .unwrap_or_else(|| panic!("no {cause} div"))
    };
    let text = |chosen: &[usize]| {
        let run = switch(&m, &list, chosen).unwrap_or_else(|e| panic!("{e}"));
        let f = run
            .reports
            .iter()
            .filter_map(|r| r.details::<CauseReport>());
        f.flat_map(|r| r.changes.clone())
            .map(|c| c.after)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        text(&[div(Cause::FlushToZero)]),
        ["div.approx.f32 \t%f9, %f1, %f2;"]
    );
    assert_eq!(
        text(&[div(Cause::Approximate)]),
        ["div.rn.ftz.f32 \t%f9, %f1, %f2;"]
    );
    let both = text(&[div(Cause::FlushToZero), div(Cause::Approximate)]);
    assert_eq!(
        both.last().map(String::as_str),
        Some("div.rn.f32 \t%f9, %f1, %f2;")
    );
}

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// A one-thread kernel `k(buffer)` with `body` between loading the buffer's address into %rd2
/// and `ret`.
fn kernel(body: &str) -> Module {
    let text = format!(
        "{HEADER}.visible .entry k(\n\t.param .u64 k_param_0\n)\n{{\n\t.reg .pred %p<2>;\n\
         \t.reg .b16 %rs<8>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<16>;\n\t.reg .f64 %fd<4>;\n\
         \t.reg .b64 %rd<8>;\n\tld.param.u64 %rd1, [k_param_0];\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n{body}\n\tret;\n}}\n"
    );
    parse_clean("kernel", &text)
}

/// Runs `k` on a 64-byte buffer starting with `input`; returns the buffer.
fn run_on(m: &Module, input: &[u8]) -> Vec<u8> {
    let mut mem = Memory::new();
    let at = mem.alloc(64);
    assert_eq!(at, GLOBAL_BASE);
    mem.write(at, input).unwrap_or_else(|e| panic!("{e}"));
    run(m, "k", Launch::single(), &[Arg::u64(at)], &mut mem).unwrap_or_else(|e| panic!("{e}"));
    mem.read(at, 64).unwrap_or_else(|e| panic!("{e}")).to_vec()
}

/// Every cast of an f32 (`f`) or f64 (`fd`) operand at offset 0: u32 at 8, s32 at 12, u16 at
/// 16, s16 at 18, u8 at 20, s8 at 21, s64 at 24.
fn casts(float: &str) -> Module {
    let (reg, ld) = match float {
        "f32" => ("%f1", "ld.global.f32 %f1, [%rd2];"),
        _ => ("%fd1", "ld.global.f64 %fd1, [%rd2];"),
    };
    kernel(&format!(
        "\t{ld}\n\
         \tcvt.rzi.u32.{float} %r1, {reg};\n\tst.global.u32 [%rd2+8], %r1;\n\
         \tcvt.rzi.s32.{float} %r2, {reg};\n\tst.global.u32 [%rd2+12], %r2;\n\
         \tcvt.rzi.u16.{float} %rs1, {reg};\n\tst.global.u16 [%rd2+16], %rs1;\n\
         \tcvt.rzi.s16.{float} %rs2, {reg};\n\tst.global.u16 [%rd2+18], %rs2;\n\
         \tcvt.rzi.u8.{float} %rs3, {reg};\n\tst.global.u8 [%rd2+20], %rs3;\n\
         \tcvt.rzi.s8.{float} %rs4, {reg};\n\tst.global.u8 [%rd2+21], %rs4;\n\
         \tcvt.rzi.s64.{float} %rd3, {reg};\n\tst.global.u64 [%rd2+24], %rd3;"
    ))
}

/// What x86-64 computes for each cast of `x`, from the conversion instructions themselves
/// (`cvttss2si`/`cvttsd2si`, 32- and 64-bit), keeping low bytes for the narrower types:
/// the bytes at offsets 8..32 of the kernel's buffer.
#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // The intrinsics are safe from Rust 1.87 on; MSRV 1.85 needs the block.
fn x86_bytes(x: f64, float: &str) -> Vec<u8> {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of x86-64; these read only their argument.
    let (s32, s64) = unsafe {
        if float == "f32" {
            let v = _mm_set_ss(x as f32);
            (_mm_cvttss_si32(v), _mm_cvttss_si64(v))
        } else {
            let v = _mm_set_sd(x);
            (_mm_cvttsd_si32(v), _mm_cvttsd_si64(v))
        }
    };
    let (b32, b64) = (s32.to_le_bytes(), s64.to_le_bytes());
    let mut out = Vec::new();
    out.extend_from_slice(&b64[..4]); // u32: the low half of the 64-bit conversion
    out.extend_from_slice(&b32); // s32
    out.extend_from_slice(&b32[..2]); // u16
    out.extend_from_slice(&b32[..2]); // s16
    out.push(b32[0]); // u8
    out.push(b32[0]); // s8
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&b64); // s64
    out
}

/// Operands around every boundary of the table in [`convert`]'s docs.
fn adversarial() -> Vec<f64> {
    let p = |e: i32| 2f64.powi(e);
    let mut v = vec![
        0.0,
        -0.0,
        -0.5,
        -0.999,
        -1.0,
        -1.5,
        0.5,
        1.99,
        -128.5,
        127.9,
        255.9,
        256.0,
        -32768.9,
        65535.5,
        65536.0,
        -65537.0,
        p(31) - 128.0,
        p(31),
        -p(31),
        -p(31) - 256.0,
        p(32) - 256.0,
        p(32),
        3e9,
        -3e9,
        p(63) - p(40),
        p(63),
        -p(63),
        -p(63) - p(40),
        p(64),
        1e20,
        -1e20,
        1e-45,
        f64::from(f32::MAX),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];
    v.extend((0..40).map(|k| (k as f64 - 20.0) * 1.37e8));
    v
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_x86_oracle_gives_the_documented_c_results() {
    // Known results of C casts on x86-64 (gcc -O2 and clang): (unsigned)-1.0f, (unsigned)-0.5f,
    // (unsigned)4294967296.0f, (unsigned)NaN, (int)NaN, (unsigned)3e9f, (unsigned short)-1.5f.
    let u32_of = |x: f64| u32::from_le_bytes([0, 1, 2, 3].map(|k| x86_bytes(x, "f32")[k]));
    let s32_of = |x: f64| i32::from_le_bytes([4, 5, 6, 7].map(|k| x86_bytes(x, "f32")[k]));
    let u16_of = |x: f64| u16::from_le_bytes([8, 9].map(|k| x86_bytes(x, "f32")[k]));
    assert_eq!(u32_of(-1.0), 0xFFFF_FFFF);
    assert_eq!(u32_of(-0.5), 0);
    assert_eq!(u32_of(4294967296.0), 0);
    assert_eq!(u32_of(f64::NAN), 0);
    assert_eq!(s32_of(f64::NAN), i32::MIN);
    assert_eq!(u32_of(3e9), 3_000_000_000);
    assert_eq!(u16_of(-1.5), 0xFFFF);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn switched_casts_compute_what_x86_64_computes() {
    for float in ["f32", "f64"] {
        let m = casts(float);
        let list = candidates(&m, None);
        assert_eq!(list.len(), 7, "{float}: one cast candidate per cvt");
        assert!(list.iter().all(|c| c.cause == Cause::FloatToInt));
        let switched = switch(&m, &list, &all_switchable(&list))
            .unwrap_or_else(|e| panic!("{e}"))
            .module;
        assert_sound(float, &switched);
        let mut differ = 0;
        for x in adversarial() {
            let input = match float {
                "f32" => (x as f32).to_le_bytes().to_vec(),
                _ => x.to_le_bytes().to_vec(),
            };
            let want = x86_bytes(x, float);
            let got = run_on(&switched, &input);
            assert_eq!(&got[8..32], &want[..], "{float} x = {x:e}");
            differ += usize::from(run_on(&m, &input)[8..32] != want[..]);
        }
        // The GPU's saturation differs on the negative and out-of-range operands.
        assert!(
            differ >= 20,
            "{float}: only {differ} operands differ as written"
        );
    }
}

/// Inputs a (0), b (4), c (8); outputs from 12 on, one per line of `lines`, each a result
/// register %f4.. stored in order.
fn arith(lines: &[&str]) -> Module {
    let mut body = String::from(
        "\tld.global.f32 %f1, [%rd2];\n\tld.global.f32 %f2, [%rd2+4];\n\
         \tld.global.f32 %f3, [%rd2+8];\n",
    );
    for (k, line) in lines.iter().enumerate() {
        let r = format!("%f{}", 4 + k);
        body.push_str(&format!(
            "\t{};\n\tst.global.f32 [%rd2+{}], {r};\n",
            line.replace("RES", &r),
            12 + 4 * k
        ));
    }
    kernel(&body)
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn input(a: f32, b: f32, c: f32) -> Vec<u8> {
    [a, b, c].iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn switched_arithmetic_computes_what_the_cpu_computes() {
    let lines = [
        "fma.rn.f32 RES, %f1, %f2, %f3",
        "div.approx.f32 RES, %f1, %f2",
        "div.full.ftz.f32 RES, %f1, %f2",
        "sqrt.approx.f32 RES, %f1",
        "rcp.approx.f32 RES, %f1",
        "rsqrt.approx.f32 RES, %f1",
        "add.ftz.f32 RES, %f1, %f3",
    ];
    let m = arith(&lines);
    let list = candidates(&m, None);
    let causes: Vec<Cause> = list.iter().map(|c| c.cause).collect();
    use Cause::*;
    assert_eq!(
        causes,
        [
            Contraction,
            Approximate,
            FlushToZero,
            Approximate,
            Approximate,
            Approximate,
            Approximate,
            FlushToZero
        ]
    );
    let switched = switch(&m, &list, &all_switchable(&list))
        .unwrap_or_else(|e| panic!("{e}"))
        .module;
    assert_sound("arith", &switched);
    let one = 1.0 + f32::EPSILON;
    for (a, b, c) in [
        (one, one, -1.0),
        (1e-39, 3.0, 1e-39),
        (2.0, 7.0, 0.1),
        (10.0, 3.0, -3.3),
    ] {
        let got = floats(&run_on(&switched, &input(a, b, c))[12..40]);
        let want = [
            a * b + c,
            a / b,
            a / b,
            a.sqrt(),
            1.0 / a,
            1.0 / a.sqrt(),
            a + c,
        ];
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "a={a:e} b={b:e} c={c:e}");
    }
}

#[test]
fn the_originals_differ_where_the_cause_matters() {
    // What the switch changes, in the interpreter (approximations it cannot run): the fma
    // rounds once, .ftz flushes a subnormal sum.
    let m = arith(&["fma.rn.f32 RES, %f1, %f2, %f3", "add.ftz.f32 RES, %f1, %f3"]);
    let list = candidates(&m, None);
    let switched = switch(&m, &list, &all_switchable(&list))
        .unwrap_or_else(|e| panic!("{e}"))
        .module;
    // (1 + 2^-23)(1 + 2^-22) - 1 = 3·2^-23 + 2^-45: once rounded it keeps the 2^-45.
    let (a, b, c) = (1.0 + f32::EPSILON, 1.0 + 2.0 * f32::EPSILON, -1.0f32);
    let original = floats(&run_on(&m, &input(a, b, c))[12..16]);
    let split = floats(&run_on(&switched, &input(a, b, c))[12..16]);
    assert_eq!(original[0], a.mul_add(b, c));
    assert_eq!(split[0], a * b + c);
    assert_ne!(original[0], split[0]);
    let tiny = 1e-39f32;
    let original = floats(&run_on(&m, &input(tiny, 1.0, tiny))[16..20]);
    let kept = floats(&run_on(&switched, &input(tiny, 1.0, tiny))[16..20]);
    assert_eq!(original[0], 0.0);
    assert_eq!(kept[0], tiny + tiny);
}

#[test]
fn a_contractible_product_gets_rn_and_its_add_is_left_alone() {
    let m = arith(&["mul.f32 %f9, %f1, %f2;\n\tadd.f32 RES, %f9, %f3"]);
    let list = candidates(&m, None);
    assert_eq!(
        summary(&list),
        vec![(0, Cause::Contractible, "mul.f32".into())]
    );
    let run = switch(&m, &list, &[0]).unwrap_or_else(|e| panic!("{e}"));
    let text = assert_sound("contractible", &run.module);
    assert!(text.contains("mul.rn.f32 \t%f9, %f1, %f2;"), "{text}");
    assert!(text.contains("add.f32 \t%f4, %f9, %f3;"), "{text}");
}
