//! The math functions `mantissa diff` names (examples/diff/mathfn). Without a GPU: the marked
//! build of a kernel calling `expf`, `sinf` and `pow` lists exactly those, on their lines, with
//! their precisions, where the plain build names none. On a GPU: the example's output differs
//! from its Rust reference only through `expf` and `sinf`, so the diff blames no switchable
//! cause, leaves the difference unexplained, and names both functions with an input where CUDA
//! and Rust's std differ; the input re-evaluated through mathlib's `--check` path, and the CPU
//! result recomputed with Rust's own `f32` methods, confirm it.

use mantissa_diff::mathfn::{calls, marked_request, MathCall};
use mantissa_diff::{diff, Against, DiffRequest};
use mantissa_gpu::{BuildRequest, FlagSet, HostData};
use mantissa_harness::{data, npy, Spec};
use mantissa_mathlib::cpu::CpuLibrary;
use mantissa_mathlib::format::Format;
use mantissa_mathlib::functions::{Function, Variant};
use mantissa_mathlib::hexfloat::parse;
use mantissa_mathlib::measure::Column;
use mantissa_mathlib::MathGpu;
use std::path::{Path, PathBuf};

const SOURCE: &str = include_str!("../../../examples/diff/mathfn/expsin.cu");
const SPEC: &str = include_str!("../../../examples/diff/mathfn/expsin.toml");
/// The lines of expsin.cu calling expf and sinf.
const EXP_LINE: u32 = 6;
const SIN_LINE: u32 = 7;

/// A kernel calling two float functions and a double one, one per line (4, 5, 7).
const MIXED: &str =
    "extern \"C\" __global__ void k(const float* x, float* y, const double* a, double* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float e = expf(x[i]);
  float s = sinf(x[i]);
  y[i] = e * s;
  b[i] = pow(a[i], 0.5);
}
";

/// The calls of `m`, each with its file's name only (NVRTC makes a relative name absolute).
fn named_calls(m: &mantissa_ptx::Module) -> Vec<MathCall> {
    calls(m)
        .into_iter()
        .map(|c| MathCall {
            file: Path::new(&c.file)
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
            ..c
        })
        .collect()
}

fn call(function: &str, format: Format, line: u32) -> MathCall {
    MathCall {
        function: function.into(),
        format,
        file: "k.cu".into(),
        line,
    }
}

#[test]
fn the_marked_build_lists_exactly_the_math_calls_on_their_lines() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let builder = mantissa_gpu::Builder::new();
    let plain_request = BuildRequest::new("k.cu").with_text(MIXED);
    let request = marked_request(plain_request.clone()).unwrap_or_else(|e| panic!("{e}"));
    let marked = builder
        .build(&request)
        .unwrap_or_else(|e| panic!("marked build: {e}"));
    let marked = mantissa_ptx::parse(&marked.ptx).module;
    assert_eq!(
        named_calls(&marked),
        vec![
            call("expf", Format::F32, 4),
            call("sinf", Format::F32, 5),
            call("pow", Format::F64, 7),
        ]
    );
    // The marking changes no instruction, and without it NVRTC leaves expf and sinf anonymous.
    let plain = builder
        .build(&plain_request)
        .unwrap_or_else(|e| panic!("plain build: {e}"));
    let plain = mantissa_ptx::parse(&plain.ptx).module;
    assert!(mantissa_ptx::demote::same_code(&plain, &marked));
    let unmarked: Vec<String> = calls(&plain).into_iter().map(|c| c.function).collect();
    assert!(unmarked.is_empty(), "{unmarked:?}");
}

#[test]
fn a_float_call_of_a_double_spelling_is_listed_as_f32() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let text =
        "extern \"C\" __global__ void k(const float* x, float* y) {\n  y[0] = exp(x[0]);\n}\n";
    let request =
        marked_request(BuildRequest::new("k.cu").with_text(text)).unwrap_or_else(|e| panic!("{e}"));
    let built = mantissa_gpu::Builder::new()
        .build(&request)
        .unwrap_or_else(|e| panic!("{e}"));
    let m = mantissa_ptx::parse(&built.ptx).module;
    assert_eq!(named_calls(&m), vec![call("exp", Format::F32, 2)]);
}

/// The CPU original: `x.exp() * x.sin()` in f32 with Rust's std (the platform libm).
fn reference(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| v.exp() * v.sin()).collect()
}

/// The example in `dir` with its reference `y.npy`; returns the spec's path.
fn write_example(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("expsin.cu"), SOURCE).unwrap_or_else(|e| panic!("{e}"));
    let spec_path = dir.join("expsin.toml");
    std::fs::write(&spec_path, SPEC).unwrap_or_else(|e| panic!("{e}"));
    // The spec names its reference, which must exist to load it: a placeholder until the
    // inputs it generates give the real one.
    npy::write(&dir.join("y.npy"), &HostData::F32(Vec::new())).unwrap_or_else(|e| panic!("{e}"));
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let x = match spec.buffer("x").map(data::buffer_data) {
        Some(Ok(HostData::F32(v))) => v,
        _ => panic!("the spec's x is an f32 buffer"),
    };
    npy::write(&dir.join("y.npy"), &HostData::F32(reference(&x))).unwrap_or_else(|e| panic!("{e}"));
    spec_path
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mantissa-mathfn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Rust's own f32 method for the function (independent of mathlib's CPU table).
fn rust_std(f: Function, x: f32) -> f32 {
    match f {
        Function::Exp => x.exp(),
        Function::Sin => x.sin(),
        other => panic!("the example calls expf and sinf, not {other:?}"),
    }
}

#[test]
fn diff_names_expf_and_sinf_with_an_input_where_cuda_and_the_cpu_differ() {
    let Some(gpu) = mantissa_gpu::testing::require_gpu_or_skip() else {
        return;
    };
    let dir = scratch("gpu");
    let spec_path = write_example(&dir);
    let spec = Spec::load(&spec_path).unwrap_or_else(|e| panic!("{e}"));
    let mut request = DiffRequest::new(FlagSet::DEFAULT, Against::Reference);
    request.repeats = 0;
    let run = diff(&gpu, &spec, &request, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let text = mantissa_diff::text::render(&run);
    println!("{text}");
    // Only the math functions differ: nothing switchable explains anything.
    assert!(run.differing > 0, "{text}");
    assert!(run.blamed.is_empty(), "{text}");
    assert_eq!(run.remaining, run.differing, "{text}");
    let named: Vec<(String, u32)> = run
        .math
        .calls
        .iter()
        .map(|c| (c.function.clone(), c.line))
        .collect();
    assert_eq!(
        named,
        vec![
            ("expf".to_string(), EXP_LINE),
            ("sinf".to_string(), SIN_LINE)
        ],
        "{text}"
    );
    assert_eq!(run.math.checks.len(), 2, "{text}");
    let math_gpu = MathGpu::new(
        mantissa_gpu::Gpu::probe_device(gpu.info().ordinal).unwrap_or_else(|e| panic!("{e}")),
    );
    for c in &run.math.checks {
        let d = c
            .differing
            .as_ref()
            .unwrap_or_else(|| panic!("{}: {:?}\n{text}", c.function, c.why_not));
        assert!(text.contains(&c.describe()), "{text}");
        // The command the report prints, read back the way `mantissa mathlib --check` reads it.
        let parts: Vec<&str> = d.check.split_whitespace().collect();
        assert_eq!(
            parts[..3],
            ["mantissa", "mathlib", "--check"],
            "{}",
            d.check
        );
        assert_eq!(parts[3], c.function);
        let f = Function::parse(parts[3]).unwrap_or_else(|| panic!("{}", parts[3]));
        let x = parse(parts[4]).unwrap_or_else(|| panic!("{}", parts[4]));
        assert_eq!(x, d.args[0]);
        let checked = mantissa_mathlib::run::check(f, Format::F32, &[x], Some(&math_gpu))
            .unwrap_or_else(|e| panic!("{e}"));
        let column = |want| {
            checked
                .columns
                .iter()
                .find(|k| k.column == want)
                .map(|k| k.result)
                .unwrap_or_else(|| panic!("no {want:?} column"))
        };
        let (cuda, cpu) = (
            column(Column::Gpu(Variant::Default)),
            column(Column::Cpu(CpuLibrary::Std)),
        );
        assert_eq!(cuda.to_bits(), d.cuda.to_bits(), "{}", c.function);
        assert_eq!(cpu.to_bits(), d.cpu.to_bits(), "{}", c.function);
        assert_ne!(cuda.to_bits(), cpu.to_bits(), "{}", c.function);
        assert_eq!(
            f64::from(rust_std(f, x as f32)).to_bits(),
            cpu.to_bits(),
            "{}: Rust's f32 method",
            c.function
        );
        println!(
            "{}: re-checked at x = {}: CUDA {cuda:e}, CPU {cpu:e} ({} ulps apart)",
            c.function, parts[4], d.apart_ulps
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the example's reference (y.npy) beside its spec, so that `mantissa diff
/// examples/diff/mathfn/expsin.toml` has its CPU reference.
#[test]
#[ignore = "writes into examples/diff/mathfn; run by hand"]
fn write_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/diff/mathfn");
    write_example(&dir);
}
