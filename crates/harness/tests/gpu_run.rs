//! GPU tests (skip without a GPU): a two-kernel spec with a loop, a loop counter argument, a
//! `__constant__` table and a C++ (mangled) kernel, run under two flag sets, checked against
//! values computed here; outputs saved as .npy and compared with a reference.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{FlagSet, HostData};
use mantissa_harness::exec::ExecOptions;
use mantissa_harness::{run_spec, RunEvent, RunRequest, Spec};
use std::path::PathBuf;

const KERNELS: &str = r#"
__constant__ double table[4];

extern "C" __global__ void saxpy(double* y, const double* x, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// C++ linkage: the spec names it `scale`, the PTX has its mangled name.
__global__ void scale(double* y, int n, int t) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * table[t % 4];
}

template <typename T>
__global__ void total(const T* y, T* out, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        T s = 0;
        for (int i = 0; i < n; ++i) s += y[i];
        out[0] = s;
    }
}
"#;

const SPEC: &str = r#"
name = "two-kernels"
[source]
file = "kernels.cu"

[sizes]
n = 1000
a = 3.0

[buffers.x]
type = "f64"
len = "n"
init = { sequence = { start = 1.0, step = 1.0 } }

[buffers.y]
type = "f64"
len = "n"
init = { constant = 2.0 }

[buffers.sum]
type = "f64"
len = 1

[symbols.table]
type = "f64"
value = [1.0, 0.5, 4.0, 0.25]

[[steps]]
launch = "saxpy"
grid = "ceil(n / 256)"
block = 256
args = ["y", "x", "a", "n"]

[[steps]]
repeat = 3
counter = "t"
steps = [ { launch = "scale", grid = "ceil(n / 128)", block = 128, args = ["y", "n", "t"] } ]

[[steps]]
launch = "total<double>"
grid = 1
block = 1
args = ["y", "sum", "n"]

[[outputs]]
buffer = "y"
tolerance = { digits = 15 }
reference = "y_ref.npy"

[[outputs]]
buffer = "sum"
reduce = "sum"
tolerance = { rel = 1e-15 }
"#;

fn workdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mantissa-gpu-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_two_kernel_spec_runs_and_matches_values_computed_here() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let d = workdir("two");
    std::fs::write(d.join("kernels.cu"), KERNELS).unwrap();
    std::fs::write(d.join("spec.toml"), SPEC).unwrap();
    // y = (3 x + 2) * 1 * 0.5 * 4: every value exact in f64, whatever FMA contraction does.
    let expected: Vec<f64> = (1..=1000).map(|x| (3.0 * x as f64 + 2.0) * 2.0).collect();
    mantissa_harness::npy::write(&d.join("y_ref.npy"), &HostData::F64(expected.clone())).unwrap();
    let spec = Spec::load(&d.join("spec.toml")).unwrap();
    let request = RunRequest {
        flag_sets: vec![FlagSet::DEFAULT, FlagSet::NOFMA],
        exec: ExecOptions {
            warmup: 1,
            repeats: 3,
        },
        save_dir: Some(d.join("out")),
        ..RunRequest::default()
    };
    let mut records = 0;
    let result = run_spec(&gpu, &spec, &request, &mut |e| {
        if let RunEvent::Record(_) = e {
            records += 1;
        }
    })
    .unwrap();
    assert_eq!(result.runs.len(), 2);
    assert_eq!(records, 4, "one record per output per run");
    assert!(
        result.front_end.starts_with("NVRTC"),
        "{}",
        result.front_end
    );
    for run in &result.runs {
        let out = run.outcome.as_ref().unwrap_or_else(|e| panic!("{e}"));
        let y = &out.outputs[0];
        assert_eq!(y.vs_baseline.digits, f64::INFINITY);
        assert_eq!(y.vs_baseline.differing, 0);
        let r = y.vs_reference.as_ref().unwrap();
        assert_eq!((r.differing, r.max_ulps), (0, 0.0));
        assert_eq!(y.met, Some(true));
        let s = &out.outputs[1];
        assert_eq!(s.value, Some(expected.iter().sum::<f64>()));
        let t = out.timing.as_ref().unwrap();
        assert_eq!(t.samples_ms.len(), 3);
        assert!(t.median_ms > 0.0);
    }
    let saved =
        mantissa_harness::npy::read(&d.join("out/y.npy"), mantissa_gpu::DType::F64, 1000).unwrap();
    assert_eq!(saved, HostData::F64(expected));
    assert!(d.join("out/nofma.as-written/y.npy").exists());
    let rec = &result.records[0];
    assert_eq!(
        (
            rec.workload.as_str(),
            rec.algorithm.as_str(),
            rec.precision.as_str()
        ),
        ("two-kernels", "y", "as-written")
    );
    assert_eq!(
        rec.backend,
        mantissa_report::Backend::Gpu {
            grid: [4, 1, 1],
            block: [256, 1, 1]
        }
    );
    assert!(rec.build.as_ref().is_some_and(|b| b.front_end == "nvrtc"));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_spec_error_against_the_ptx_comes_before_anything_runs() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let d = workdir("bad");
    std::fs::write(d.join("kernels.cu"), KERNELS).unwrap();
    let bad = SPEC
        .replace(
            "args = [\"y\", \"x\", \"a\", \"n\"]",
            "args = [\"y\", \"a\", \"x\", \"n\"]",
        )
        .replace("reference = \"y_ref.npy\"\n", "");
    std::fs::write(d.join("spec.toml"), bad).unwrap();
    let spec = Spec::load(&d.join("spec.toml")).unwrap();
    let err = run_spec(&gpu, &spec, &RunRequest::default(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("steps[0].args[1]: found the size")
            || err.contains("steps[0].args[2]: found buffer 'x' for parameter 3 (.f64)"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).ok();
}

const MORE_KERNELS: &str = r#"
struct P { double a; double b; int k; };
__constant__ P params;
__device__ double acc;

extern "C" __global__ void axpb(double* y, int n, int s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * params.b + s + params.k;
}

extern "C" __global__ void add_acc(double* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) { acc += params.a; out[0] = acc; }
}
"#;

const MORE_SPEC: &str = r#"
[source]
file = "more.cu"

[sizes]
n = 8

[buffers.y]
type = "f64"
len = "n"
init = { constant = 1.0 }

[buffers.z]
type = "f64"
len = "n"

[buffers.w]
type = "f64"
len = 4

[buffers.out]
type = "f64"
len = 1

[symbols.params]
fields = ["f64", "f64", "i32"]
value = [[0.5, 2.0, 3]]

[symbols.acc]
type = "f64"
value = [10.0]

[[steps]]
repeat = 2
counter = "i"
steps = [
  { repeat = 3, counter = "j", steps = [ { launch = "axpb", grid = 1, block = "n", args = ["y", "n", "i * 3 + j"] } ] },
  { launch = "add_acc", grid = 1, block = 1, args = ["out"] },
]

[[steps]]
copy = { from = "y", to = "z" }

[[steps]]
fill = { buffer = "y", value = 7 }

[[steps]]
copy = { from = "z", to = "w" }

[[outputs]]
buffer = "y"
[[outputs]]
buffer = "z"
[[outputs]]
buffer = "w"
[[outputs]]
buffer = "out"
"#;

#[test]
fn nested_loops_copies_fills_struct_and_device_symbols() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let d = workdir("more");
    std::fs::write(d.join("more.cu"), MORE_KERNELS).unwrap();
    std::fs::write(d.join("spec.toml"), MORE_SPEC).unwrap();
    let spec = Spec::load(&d.join("spec.toml")).unwrap();
    let request = RunRequest {
        save_dir: Some(d.join("out")),
        ..RunRequest::default()
    };
    let result = run_spec(&gpu, &spec, &request, &mut |_| {}).unwrap();
    let out = result.runs[0]
        .outcome
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.timing.is_some());
    // y = y * 2 + s + 3 for s = i * 3 + j = 0, 1, ..., 5 in loop order; exact in f64.
    let mut y = 1.0f64;
    for s in 0..6 {
        y = y * 2.0 + f64::from(s) + 3.0;
    }
    let read = |name: &str, len: usize| {
        mantissa_harness::npy::read(
            &d.join(format!("out/{name}.npy")),
            mantissa_gpu::DType::F64,
            len,
        )
        .unwrap()
    };
    assert_eq!(read("y", 8), HostData::F64(vec![7.0; 8]), "fill");
    assert_eq!(
        read("z", 8),
        HostData::F64(vec![y; 8]),
        "loops, then a whole copy"
    );
    assert_eq!(
        read("w", 4),
        HostData::F64(vec![y; 4]),
        "a copy of the shorter length"
    );
    // acc starts at the spec's 10.0 and gains params.a = 0.5 twice.
    assert_eq!(read("out", 1), HostData::F64(vec![11.0]));
    std::fs::remove_dir_all(&d).ok();
}

const POINTER_AND_STRUCT: &str = r#"
struct Affine { double a; float b; int k; };

// y[i] = p.a * y[i] + p.b + p.k: the struct is passed by value, as bytes in the spec.
extern "C" __global__ void affine(double* y, Affine p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = p.a * y[i] + p.b + p.k;
}
"#;

/// `{ buffer, offset }` passes a pointer into a buffer and `{ bytes }` a struct by value: the
/// upper half of y is transformed, the lower half is not; every value exact.
#[test]
fn pointers_into_buffers_and_structs_by_value_reach_the_kernel() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let d = workdir("pointer-struct");
    std::fs::write(d.join("kernels.cu"), POINTER_AND_STRUCT).unwrap();
    // Affine { a = 2.0, b = 0.5f, k = 3 }: 8 + 4 + 4 bytes.
    let mut p = 2.0f64.to_le_bytes().to_vec();
    p.extend(0.5f32.to_le_bytes());
    p.extend(3i32.to_le_bytes());
    let hex: String = p.iter().map(|b| format!("{b:02x}")).collect();
    let spec = format!(
        "[source]\nfile = \"kernels.cu\"\n[buffers.y]\ntype = \"f64\"\nlen = 64\n\
         init = {{ sequence = {{ start = 0.0, step = 1.0 }} }}\n\
         [[steps]]\nlaunch = \"affine\"\ngrid = 1\nblock = 32\n\
         args = [{{ buffer = \"y\", offset = 32 }}, {{ bytes = \"{hex}\" }}, 32]\n\
         [[outputs]]\nbuffer = \"y\"\n"
    );
    std::fs::write(d.join("spec.toml"), spec).unwrap();
    let spec = Spec::load(&d.join("spec.toml")).unwrap();
    let request = RunRequest {
        save_dir: Some(d.join("out")),
        ..RunRequest::default()
    };
    run_spec(&gpu, &spec, &request, &mut |_| {}).unwrap();
    let y =
        mantissa_harness::npy::read(&d.join("out/y.npy"), mantissa_gpu::DType::F64, 64).unwrap();
    let expected: Vec<f64> = (0..64)
        .map(|i| {
            if i < 32 {
                i as f64
            } else {
                2.0 * i as f64 + 3.5
            }
        })
        .collect();
    assert_eq!(y, HostData::F64(expected));
    std::fs::remove_dir_all(&d).ok();
}
