//! Tests of the storage-precision pass: every rewritten module assembles (ptxas) and, run on the
//! interpreter with the buffer's values as f32 in its first half, computes what the original
//! computes with its loads and stores of that buffer rounded to f32 (worked out here in Rust).
//! Kernels come from NVRTC (skipped without it) and from hand-written PTX for shapes NVRTC does
//! not emit on demand (generic addresses, immediate stores, a pointer walked in a loop).

use super::*;
use crate::interp::{run, Arg, Launch, Memory};
use crate::test_support::{assert_sound, parse_clean};

/// CUDA kernels, compiled by NVRTC: accesses the pass rewrites and the ones it refuses.
const KERNELS: &str = r#"
extern "C" __global__ void idx(double* a, const double* b, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) out[i] = a[i] * 2.0 + a[i + 1] + b[i];
}
extern "C" __global__ void rmw(double* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * 0.5 + 1.0;
}
extern "C" __global__ void stride(const double* a, double* out, int n) {
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += a[i];
  out[threadIdx.x] = s;
}
extern "C" __global__ void vec2(const double2* a, double* out, int n) {
  int i = threadIdx.x;
  if (i < n) { double2 v = a[i]; out[i] = v.x - v.y; }
}
__device__ __noinline__ double get(const double* p, int i) { return p[i]; }
extern "C" __global__ void viafunc(const double* a, double* out) {
  out[threadIdx.x] = get(a, threadIdx.x);
}
extern "C" __global__ void atom(double* a, double x) { atomicAdd(a + threadIdx.x, x); }
extern "C" __global__ void sel(const double* a, const double* b, double* out, int c) {
  const double* p = c ? a : b;
  out[threadIdx.x] = p[threadIdx.x];
}
extern "C" __global__ void stash(const double* a, const double** slot, double* out) {
  slot[threadIdx.x] = a + threadIdx.x;
  out[threadIdx.x] = a[0];
}
extern "C" __global__ void bits(const double* a, long long* out) {
  out[threadIdx.x] = ((const long long*)a)[threadIdx.x];
}
"#;

/// KERNELS compiled for sm_90 with the default flags; `None` (skipped) without NVRTC.
fn nvrtc_kernels() -> Option<Module> {
    use mantissa_gpu::{Arch, FlagSet, Source, Target};
    let nvrtc = mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let c = nvrtc
        .compile(
            &Source::new("store_f32.cu", KERNELS),
            FlagSet::DEFAULT,
            Target::Ptx(Arch::new(9, 0)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    Some(parse_clean("store_f32.cu", &c.ptx))
}

/// The PTX name of parameter `index` of `kernel`.
fn param(m: &Module, kernel: &str, index: usize) -> String {
    m.function(kernel).unwrap().params[index].name.clone()
}

fn request(m: &Module, kernel: &str, index: usize) -> StoreRequest {
    StoreRequest {
        function: kernel.into(),
        param: param(m, kernel, index),
    }
}

/// Rewrites `kernel`'s parameter `index`, which must be accepted, and checks the result is
/// sound (parses back, assembles).
fn stored(m: &Module, kernel: &str, index: usize) -> (Module, StoredBuffer) {
    let s = store_f32(m, &[request(m, kernel, index)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(s.report.refused.is_empty(), "{:?}", s.report.refused);
    assert_sound(kernel, &s.module);
    (s.module, s.report.stored[0].clone())
}

/// The reason `kernel`'s parameter `index` is refused, after checking the module is unchanged.
fn refused(m: &Module, kernel: &str, index: usize) -> String {
    let s = store_f32(m, &[request(m, kernel, index)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(s.report.stored.is_empty(), "{:?}", s.report.stored);
    assert_eq!(s.report.refused.len(), 1);
    assert_eq!(
        &s.module, m,
        "a refused request must leave the module as it was"
    );
    s.report.refused[0].reason.clone()
}

/// An n-element f64 buffer holding `values` as f32 in its first half and a marker in the
/// second, which nothing may touch.
const MARK: u8 = 0xA5;
fn f32_buffer(mem: &mut Memory, values: &[f64]) -> u64 {
    let a = mem.alloc(values.len() * 8);
    let narrow: Vec<u8> = values
        .iter()
        .flat_map(|&v| (v as f32).to_le_bytes())
        .collect();
    mem.write(a, &narrow).unwrap();
    mem.write(a + narrow.len() as u64, &vec![MARK; narrow.len()])
        .unwrap();
    a
}

fn read_f32_buffer(mem: &Memory, a: u64, n: usize) -> Vec<f32> {
    let tail = mem.read(a + 4 * n as u64, 4 * n).unwrap();
    assert!(
        tail.iter().all(|&b| b == MARK),
        "the second half was written"
    );
    mem.read_f32s(a, n).unwrap()
}

fn rounded(values: &[f64]) -> Vec<f64> {
    values.iter().map(|&v| v as f32 as f64).collect()
}

/// Values whose f32 rounding changes them (so a missed rewrite shows).
fn values(n: usize) -> Vec<f64> {
    (0..n).map(|i| 0.1 + i as f64 / 3.0).collect()
}

#[test]
fn indexed_loads_with_an_immediate_offset_read_f32() {
    let Some(m) = nvrtc_kernels() else { return };
    let (out, done) = stored(&m, "idx", 0);
    assert_eq!((done.loads, done.stores), (2, 0));
    // a[i + 1] is `[%rd+8]` in f64, `[t+4]` in f32.
    let text = out.function("idx").unwrap().to_string();
    assert_eq!(text.matches("ld.global.f32").count(), 2, "{text}");
    assert!(text.contains("+4];"), "{text}");
    let n = 6;
    let (a, b) = (
        values(n),
        (0..n).map(|i| i as f64 * 0.25).collect::<Vec<_>>(),
    );
    // The original on the rounded values: what the rewrite must compute, bit for bit.
    let mut mem = Memory::new();
    let (ar, bb, o) = (mem.f64s(&rounded(&a)), mem.f64s(&b), mem.alloc(8 * n));
    let args = [Arg::u64(ar), Arg::u64(bb), Arg::u64(o), Arg::i32(n as i32)];
    run(&m, "idx", Launch::linear(2, 4), &args, &mut mem).unwrap();
    let want = mem.read_f64s(o, n).unwrap();
    let mut mem = Memory::new();
    let (af, bb, o) = (f32_buffer(&mut mem, &a), mem.f64s(&b), mem.alloc(8 * n));
    let args = [Arg::u64(af), Arg::u64(bb), Arg::u64(o), Arg::i32(n as i32)];
    run(&out, "idx", Launch::linear(2, 4), &args, &mut mem).unwrap();
    let got = mem.read_f64s(o, n).unwrap();
    assert_eq!(got, want);
    // By hand: out[i] = fma(a[i], 2, a[i+1]) + b[i] on f32-rounded a; the last is not written.
    for i in 0..n - 1 {
        let (x, y) = (a[i] as f32 as f64, a[i + 1] as f32 as f64);
        assert_eq!(got[i], x.mul_add(2.0, y) + b[i], "{i}");
        assert_ne!(
            got[i],
            a[i].mul_add(2.0, a[i + 1]) + b[i],
            "{i}: f32 makes a difference"
        );
    }
    assert_eq!(got[n - 1], 0.0);
    assert_eq!(
        read_f32_buffer(&mem, af, n),
        a.iter().map(|&v| v as f32).collect::<Vec<_>>()
    );
}

#[test]
fn read_modify_write_stores_rounded_results_in_the_first_half() {
    let Some(m) = nvrtc_kernels() else { return };
    let (out, done) = stored(&m, "rmw", 0);
    assert_eq!((done.loads, done.stores), (1, 1));
    let n = 5;
    let a = values(n);
    let mut mem = Memory::new();
    let af = f32_buffer(&mut mem, &a);
    // 8 threads for 5 elements: the guard keeps the extra threads out.
    run(
        &out,
        "rmw",
        Launch::linear(1, 8),
        &[Arg::u64(af), Arg::i32(n as i32)],
        &mut mem,
    )
    .unwrap();
    let got = read_f32_buffer(&mem, af, n);
    let want: Vec<f32> = a
        .iter()
        .map(|&v| (v as f32 as f64).mul_add(0.5, 1.0) as f32)
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_strided_loop_sums_f32_values_in_order() {
    let Some(m) = nvrtc_kernels() else { return };
    let (out, done) = stored(&m, "stride", 0);
    assert_eq!((done.loads, done.stores), (1, 0));
    let (n, threads) = (11, 4);
    let a = values(n);
    let mut mem = Memory::new();
    let (af, o) = (f32_buffer(&mut mem, &a), mem.alloc(8 * threads));
    let args = [Arg::u64(af), Arg::u64(o), Arg::i32(n as i32)];
    run(
        &out,
        "stride",
        Launch::linear(1, threads as u32),
        &args,
        &mut mem,
    )
    .unwrap();
    let got = mem.read_f64s(o, threads).unwrap();
    let want: Vec<f64> = (0..threads)
        .map(|t| {
            (t..n)
                .step_by(threads)
                .fold(0.0, |s, i| s + a[i] as f32 as f64)
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_v2_load_converts_each_lane() {
    let Some(m) = nvrtc_kernels() else { return };
    let (out, done) = stored(&m, "vec2", 0);
    assert_eq!((done.loads, done.stores), (1, 0));
    assert!(out.to_string().contains("ld.global.v2.f32"));
    let n = 3;
    let a = values(2 * n);
    let mut mem = Memory::new();
    let (af, o) = (f32_buffer(&mut mem, &a), mem.alloc(8 * n));
    let args = [Arg::u64(af), Arg::u64(o), Arg::i32(n as i32)];
    run(&out, "vec2", Launch::linear(1, 4), &args, &mut mem).unwrap();
    let got = mem.read_f64s(o, n).unwrap();
    let want: Vec<f64> = (0..n)
        .map(|i| a[2 * i] as f32 as f64 - a[2 * i + 1] as f32 as f64)
        .collect();
    assert_eq!(got, want);
}

#[test]
fn escapes_and_other_accesses_are_refused_with_the_reason() {
    let Some(m) = nvrtc_kernels() else { return };
    let r = refused(&m, "viafunc", 0);
    assert!(r.contains("passed to _Z3getPKdi"), "{r}");
    let r = refused(&m, "atom", 0);
    assert!(
        r.contains("atom.global.add.f64") && r.contains("an atomic"),
        "{r}"
    );
    for index in [0, 1] {
        let r = refused(&m, "sel", index);
        assert!(
            r.contains("selp.b64") && r.contains("selects between"),
            "{r}"
        );
    }
    let r = refused(&m, "stash", 0);
    assert!(
        r.contains("stored to memory") && r.contains("st.global.u64"),
        "{r}"
    );
    let r = refused(&m, "bits", 0);
    assert!(
        r.contains("ld.global.u64") && r.contains("not an f64 load or store"),
        "{r}"
    );
    let r = refused(&m, "idx", 3);
    assert!(r.contains(".u32, not a pointer"), "{r}");
    // The out buffer of `sel` and `stash` is fine on its own.
    stored(&m, "sel", 2);
    stored(&m, "stash", 2);
}

#[test]
fn two_buffers_of_one_kernel_and_a_refusal_beside_them() {
    let Some(m) = nvrtc_kernels() else { return };
    let requests = [
        request(&m, "idx", 0),
        request(&m, "idx", 2),
        request(&m, "idx", 0),
        request(&m, "idx", 3),
        StoreRequest {
            function: "nothere".into(),
            param: "p".into(),
        },
    ];
    let s = store_f32(&m, &requests).unwrap();
    let done: Vec<(String, u32, u32)> = s
        .report
        .stored
        .iter()
        .map(|d| (d.request.param.clone(), d.loads, d.stores))
        .collect();
    assert_eq!(
        done,
        [(param(&m, "idx", 0), 2, 0), (param(&m, "idx", 2), 0, 1)]
    );
    assert_eq!(s.report.refused.len(), 2, "{:?}", s.report.refused);
    assert_sound("idx, two buffers", &s.module);
    let n = 5;
    let (a, b) = (values(n), values(n));
    let mut mem = Memory::new();
    let (af, bb) = (f32_buffer(&mut mem, &a), mem.f64s(&b));
    let o = f32_buffer(&mut mem, &vec![0.0; n]);
    let args = [Arg::u64(af), Arg::u64(bb), Arg::u64(o), Arg::i32(n as i32)];
    run(&s.module, "idx", Launch::linear(1, 8), &args, &mut mem).unwrap();
    let got = read_f32_buffer(&mem, o, n);
    let want: Vec<f32> = (0..n)
        .map(|i| match i + 1 < n {
            true => ((a[i] as f32 as f64).mul_add(2.0, a[i + 1] as f32 as f64) + b[i]) as f32,
            false => 0.0,
        })
        .collect();
    assert_eq!(got, want);
}

/// Generic addresses (no `cvta`), a `mad.wide` address, guarded accesses, a `.volatile` load, an
/// immediate stored (rounded at rewrite time), a `.v2` store, and a pointer walked in a loop up
/// to an end pointer (a comparison of derived registers).
const HAND: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry gen(
	.param .u64 gen_param_0,
	.param .u32 gen_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	.reg .f64 	%fd<3>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [gen_param_0];
	ld.param.u32 	%r1, [gen_param_1];
	mov.u32 	%r2, %tid.x;
	mad.wide.u32 	%rd3, %r2, 16, %rd1;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 st.f64 	[%rd3], 0d3FB999999999999A;
	@!%p1 ld.volatile.f64 	%fd1, [%rd3+8];
	@!%p1 add.f64 	%fd2, %fd1, %fd1;
	@!%p1 st.v2.f64 	[%rd3], {%fd2, 0d4000000000000000};
	ret;
}

.visible .entry walk(
	.param .u64 walk_param_0,
	.param .u32 walk_param_1,
	.param .u64 walk_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<3>;
	.reg .b64 	%rd<7>;

	ld.param.u64 	%rd1, [walk_param_0];
	ld.param.u32 	%r1, [walk_param_1];
	ld.param.u64 	%rd5, [walk_param_2];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd2, %rd3;
	mov.f64 	%fd1, 0d0000000000000000;
$L_loop:
	ld.global.nc.f64 	%fd2, [%rd2];
	add.f64 	%fd1, %fd1, %fd2;
	add.s64 	%rd2, %rd2, 16;
	setp.lt.u64 	%p1, %rd2, %rd4;
	@%p1 bra 	$L_loop;
	cvta.to.global.u64 	%rd6, %rd5;
	st.global.f64 	[%rd6], %fd1;
	ret;
}

.visible .entry join(
	.param .u64 join_param_0,
	.param .u64 join_param_1,
	.param .u32 join_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .f64 	%fd<2>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [join_param_0];
	ld.param.u64 	%rd2, [join_param_1];
	ld.param.u32 	%r1, [join_param_2];
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L_b;
	mov.u64 	%rd3, %rd1;
	bra.uni 	$L_done;
$L_b:
	mov.u64 	%rd3, %rd2;
$L_done:
	ld.f64 	%fd1, [%rd3];
	st.f64 	[%rd3+8], %fd1;
	ret;
}

.visible .entry odd(
	.param .u64 odd_param_0
)
{
	.reg .f64 	%fd<2>;
	.reg .b64 	%rd<2>;

	ld.param.u64 	%rd1, [odd_param_0];
	ld.f64 	%fd1, [%rd1+9];
	st.f64 	[%rd1], %fd1;
	ret;
}
"#;

#[test]
fn generic_guarded_immediate_and_vector_stores() {
    let m = parse_clean("hand", HAND);
    let (out, done) = stored(&m, "gen", 0);
    assert_eq!((done.loads, done.stores), (1, 2));
    let text = out.function("gen").unwrap().to_string();
    // Generic chain: no cvta inserted; 0.1 rounded to f32 at rewrite time; 2.0 exactly.
    assert!(!text.contains("cvta"), "{text}");
    assert!(text.contains("0f3DCCCCCD"), "{text}");
    assert!(
        text.contains("{%") && text.contains("0f40000000}"),
        "{text}"
    );
    assert!(text.contains("ld.volatile.f32"), "{text}");
    // Pairs (2t, 2t+1): threads below k write 0.1 to the first; the others double the second
    // into the first and write 2 to the second.
    let (pairs, k) = (4usize, 2u32);
    let a = values(2 * pairs);
    let mut mem = Memory::new();
    let af = f32_buffer(&mut mem, &a);
    run(
        &out,
        "gen",
        Launch::linear(1, pairs as u32),
        &[Arg::u64(af), Arg::i32(k as i32)],
        &mut mem,
    )
    .unwrap();
    let got = read_f32_buffer(&mem, af, 2 * pairs);
    let mut want: Vec<f32> = a.iter().map(|&v| v as f32).collect();
    for t in 0..pairs {
        if (t as u32) < k {
            want[2 * t] = 0.1f32;
        } else {
            want[2 * t] = ((a[2 * t + 1] as f32 as f64) * 2.0) as f32;
            want[2 * t + 1] = 2.0;
        }
    }
    assert_eq!(got, want);
}

#[test]
fn a_pointer_walked_to_an_end_pointer() {
    let m = parse_clean("hand", HAND);
    let (out, done) = stored(&m, "walk", 0);
    assert_eq!((done.loads, done.stores), (1, 0));
    let n = 8;
    let a = values(n);
    let mut mem = Memory::new();
    let (af, o) = (f32_buffer(&mut mem, &a), mem.alloc(8));
    let args = [Arg::u64(af), Arg::i32(n as i32), Arg::u64(o)];
    run(&out, "walk", Launch::single(), &args, &mut mem).unwrap();
    let want = (0..n).step_by(2).fold(0.0, |s, i| s + a[i] as f32 as f64);
    assert_eq!(mem.read_f64s(o, 1).unwrap(), [want]);
}

#[test]
fn joins_of_two_buffers_and_odd_offsets_are_refused() {
    let m = parse_clean("hand", HAND);
    for index in [0, 1] {
        let r = refused(&m, "join", index);
        assert!(
            r.contains("%rd3 holds join_param_") && r.contains("on some paths"),
            "{r}"
        );
    }
    let r = refused(&m, "odd", 0);
    assert!(r.contains("odd offset 9"), "{r}");
    let r = refused(&m, "walk", 1);
    assert!(r.contains("not a pointer"), "{r}");
    let r = store_f32(
        &m,
        &[StoreRequest {
            function: "walk".into(),
            param: "nope".into(),
        }],
    )
    .unwrap()
    .report
    .refused[0]
        .reason
        .clone();
    assert_eq!(r, "no parameter named nope");
}

#[test]
fn the_pass_in_a_pipeline_reports_its_counts() {
    let m = parse_clean("hand", HAND);
    let pass = StoreF32 {
        requests: vec![request(&m, "gen", 0), request(&m, "odd", 0)],
    };
    let run = crate::pass::Pipeline::new().then(pass).run(&m).unwrap();
    let r = &run.reports[0];
    assert_eq!(
        r.summary,
        "kept 1 buffers in f32: 1 loads and 2 stores rewritten; 1 refused"
    );
    assert_eq!(
        r.notes,
        ["odd parameter odd_param_0: `ld.f64 %fd1, [%rd1+9];` has an odd offset 9"]
    );
    assert_eq!(r.details::<StoreReport>().map(StoreReport::stores), Some(2));
}
