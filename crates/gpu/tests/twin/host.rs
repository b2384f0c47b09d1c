//! The twin kernels compiled for the host CPU: a check of the header's *translation* of the Rust
//! code that needs neither a GPU nor NVRTC, only a C++17 compiler (`$CXX`, else `c++`; the test
//! skips with a printed reason without one).
//!
//! The very source the GPU test loads ([`twin::elementwise_source`]) is compiled with a small
//! shim that defines the CUDA intrinsics the header uses as their IEEE meaning (`__fadd_rn(a, b)`
//! is `a + b`, `__fmaf_rn` is `fmaf`, `__float_as_uint` a bit copy, ...), with `-O2
//! -ffp-contract=off` so that the host compiler contracts nothing either. Each kernel then runs
//! once per element over the inputs of the GPU test and must give the IEEE mantissa-num results
//! bit for bit (NaN matching any NaN). What this cannot check is the GPU's arithmetic and the
//! flag sets: that is the GPU test's job, and the NVRTC tests' for the PTX.

use crate::cpu::{cpu_fn, eval, Word};
use crate::inputs::{generate, Domain, Inputs, CLASSES, N};
use crate::{by_class, differing, hex, show, Family};
use mantissa_gpu::testing::skip_or_fail;
use mantissa_gpu::twin::{self, TwinOp};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// CUDA's names for what the header needs, with their IEEE meaning on the host.
const SHIM: &str = r#"// Host shim for mantissa.cuh (tests/twin/host.rs).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__ __restrict
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline unsigned __float_as_uint(float x) { unsigned u; std::memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned u) { float x; std::memcpy(&x, &u, 4); return x; }
static inline long long __double_as_longlong(double x) { long long u; std::memcpy(&u, &x, 8); return u; }
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline double __longlong_as_double(long long u) { double x; std::memcpy(&x, &u, 8); return x; }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
struct host_dim3 { unsigned x, y, z; };
static host_dim3 blockIdx, blockDim, threadIdx;
"#;

/// `main`: `twin_host KERNEL N A B K` runs KERNEL over N elements read from the files A, B
/// (2N words each) and K (N ints) and writes the 2N result words to stdout.
fn host_main(ops: &[TwinOp]) -> String {
    let mut s = String::from(
        r#"
template <typename W>
static int run(void (*kernel)(W*, const W*, const W*, const int*, int), int n,
               const char* pa, const char* pb, const char* pk) {
    std::vector<W> a(2 * (size_t)n), b(2 * (size_t)n), out(2 * (size_t)n);
    std::vector<int> k((size_t)n);
    std::memset(out.data(), 0x7f, out.size() * sizeof(W)); // a finite sentinel
    const char* paths[3] = {pa, pb, pk};
    void* dst[3] = {a.data(), b.data(), k.data()};
    size_t bytes[3] = {a.size() * sizeof(W), b.size() * sizeof(W), k.size() * sizeof(int)};
    for (int f = 0; f < 3; ++f) {
        FILE* file = std::fopen(paths[f], "rb");
        if (!file || std::fread(dst[f], 1, bytes[f], file) != bytes[f]) return 4;
        std::fclose(file);
    }
    blockDim.x = 1;
    threadIdx.x = 0;
    for (int i = 0; i < n; ++i) {
        blockIdx.x = (unsigned)i;
        kernel(out.data(), a.data(), b.data(), k.data(), n);
    }
    return std::fwrite(out.data(), sizeof(W), out.size(), stdout) == out.size() ? 0 : 5;
}

int main(int argc, char** argv) {
    if (argc != 6) return 2;
    std::string name = argv[1];
    int n = std::atoi(argv[2]);
"#,
    );
    for op in ops {
        let w = match op.ty.word() {
            mantissa_gpu::DType::F32 => "float",
            _ => "double",
        };
        let k = op.kernel_name();
        let _ = writeln!(
            s,
            "    if (name == \"{k}\") return run<{w}>({k}, n, argv[3], argv[4], argv[5]);"
        );
    }
    s.push_str("    return 3;\n}\n");
    s
}

/// The C++ compiler to use: `$CXX`, else `c++`, if it runs.
fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(cxx)
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mantissa-twin-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn write_words<W: Word>(path: &Path, words: &[W]) {
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.to_bits_u64().to_le_bytes()[..(W::BITS / 8) as usize].to_vec())
        .collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn read_words<W: Word>(bytes: &[u8]) -> Vec<W> {
    let size = (W::BITS / 8) as usize;
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            W::from_bits_u64(u64::from_le_bytes(b))
        })
        .collect()
}

/// Every op of word size `W` through the host binary; failures appended to `failures`.
fn run_family<W: Family>(exe: &Path, dir: &Path, failures: &mut Vec<String>) -> usize {
    let ops: Vec<TwinOp> = TwinOp::all()
        .into_iter()
        .filter(|o| o.ty.word() == W::dtype())
        .collect();
    let mut domains: BTreeMap<Domain, (Inputs<W>, [PathBuf; 3])> = BTreeMap::new();
    for op in &ops {
        let domain = Domain::for_op(op);
        let (inp, files) = domains.entry(domain).or_insert_with(|| {
            let inp = generate::<W>(domain);
            let stem = format!("{}-{domain:?}", W::BITS);
            let files = ["a", "b", "k"].map(|x| dir.join(format!("{stem}.{x}")));
            write_words(&files[0], &inp.a);
            write_words(&files[1], &inp.b);
            let k: Vec<u8> = inp.k.iter().flat_map(|k| k.to_le_bytes()).collect();
            std::fs::write(&files[2], k).unwrap_or_else(|e| panic!("{e}"));
            (inp, files)
        });
        let Some(f) = cpu_fn::<W>(op) else {
            failures.push(format!("{}: no CPU function", op.label()));
            continue;
        };
        let (expected, _) = eval::<W, W>(f, &inp.a, &inp.b, &inp.k);
        let out = Command::new(exe)
            .arg(op.kernel_name())
            .arg(N.to_string())
            .args(files.iter())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
        if !out.status.success() {
            failures.push(format!("{}: host run failed: {}", op.label(), out.status));
            continue;
        }
        let got: Vec<W> = read_words(&out.stdout);
        assert_eq!(got.len(), 2 * N, "{}", op.label());
        let bad = differing(&got, &expected);
        if let Some(&i) = bad.first() {
            failures.push(format!(
                "{}: {} of {N} host results differ ({}); first [{i}, {}] {} -> Rust {} host {}",
                op.label(),
                bad.len(),
                by_class(bad.iter().copied()),
                CLASSES[crate::inputs::class_of(i)],
                crate::inputs::describe(op.shape, inp, i),
                hex(&expected, i),
                hex(&got, i)
            ));
        }
    }
    ops.len()
}

#[test]
fn host_compiled_twin_matches_mantissa_num() {
    let Some(cxx) = compiler() else {
        skip_or_fail(
            false,
            "CXX",
            &"no C++ compiler (set CXX or install c++) to build the host twin",
        );
        return;
    };
    let dir = scratch();
    let ops = TwinOp::all();
    let src = format!(
        "{SHIM}\n{}\n{}",
        twin::elementwise_source(&ops),
        host_main(&ops)
    );
    let cpp = dir.join("twin_host.cpp");
    let exe = dir.join("twin_host");
    std::fs::write(&cpp, src).unwrap_or_else(|e| panic!("{e}"));
    let build = Command::new(&cxx)
        .args([
            "-std=c++17",
            "-O2",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-o",
        ])
        .arg(&exe)
        .arg(&cpp)
        .output()
        .unwrap_or_else(|e| panic!("{cxx}: {e}"));
    assert!(
        build.status.success(),
        "{cxx} failed on {}:\n{}",
        cpp.display(),
        String::from_utf8_lossy(&build.stderr)
    );
    let mut failures = Vec::new();
    let n =
        run_family::<f32>(&exe, &dir, &mut failures) + run_family::<f64>(&exe, &dir, &mut failures);
    let _ = std::fs::remove_dir_all(&dir);
    show(format!(
        "twin (host {cxx}): {n} ops x {N} inputs, {} failed",
        failures.len()
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
