//! GPU test (skips without a GPU): a spec whose source is ready PTX (no marking possible) under
//! `--demote none` and `--demote all`. The math call's source line is an opaque region and stays
//! f64; the arithmetic on the line before it is demoted; the empty configuration is bit-identical.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{FlagSet, Source};
use mantissa_harness::data::to_f64;
use mantissa_harness::exec::ExecOptions;
use mantissa_harness::{npy, run_spec, Configuration, Demotion, RunRequest, Spec};

// Line 3 is plain arithmetic, line 4 the math call: one statement per line, so that the opaque
// region of the call (line 4) does not swallow the arithmetic.
const KERNEL: &str = "extern \"C\" __global__ void f(const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a = x[i] * 1.1 + 0.3;
    if (i < n) y[i] = exp(a);
}
";

const SPEC: &str = r#"
name = "ready-ptx"
[source]
file = "f.ptx"
[sizes]
n = 4096
[buffers.x]
type = "f64"
len = "n"
init = { random = "uniform", min = -2.0, max = 2.0, seed = 3 }
[buffers.y]
type = "f64"
len = "n"
[[steps]]
launch = "f"
grid = "ceil(n / 256)"
block = 256
args = ["x", "y", "n"]
[[outputs]]
buffer = "y"
"#;

/// `--demote none,all` under `flag_sets`, one timed repeat, outputs saved under `dir/out`.
fn none_and_all(flag_sets: Vec<FlagSet>, dir: &std::path::Path) -> RunRequest {
    RunRequest {
        flag_sets,
        configurations: vec![
            Configuration::Demote(Demotion::none()),
            Configuration::Demote(Demotion::all()),
        ],
        exec: ExecOptions {
            warmup: 0,
            repeats: 1,
        },
        save_dir: Some(dir.join("out")),
    }
}

#[test]
fn ready_ptx_demotes_around_its_math_code() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mantissa-ptx-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let compiled = gpu
        .compile(&Source::new("f.cu", KERNEL), FlagSet::DEFAULT)
        .unwrap();
    std::fs::write(dir.join("f.ptx"), &compiled.ptx).unwrap();
    std::fs::write(dir.join("spec.toml"), SPEC).unwrap();
    let spec = Spec::load(&dir.join("spec.toml")).unwrap();
    let request = none_and_all(vec![FlagSet::DEFAULT], &dir);
    let result = run_spec(&gpu, &spec, &request, &mut |_| {}).unwrap();
    assert!(
        result.front_end.starts_with("ready PTX"),
        "{}",
        result.front_end
    );
    assert_eq!(result.runs.len(), 3);
    for run in &result.runs {
        let out = run.outcome.as_ref().unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{}: {:?}", run.configuration.name(), run.notes);
        let c = &out.outputs[0].vs_baseline;
        match run.configuration.name().as_str() {
            "as-written" | "none" => assert_eq!(c.differing, 0, "{}", run.configuration.name()),
            _ => {
                let notes = run.notes.join("; ");
                assert!(notes.contains("ready PTX"), "{notes}");
                // a = x * 1.1 + 0.3 in f32, then exp in f64: the error is a's rounding (about
                // 2^-24 relative, times |a| <= 2.5) carried through exp.
                assert!(c.differing > 0, "--demote all changed nothing");
                assert!(
                    c.max_rel < 1e-6 && c.max_rel > 1e-9,
                    "max rel {}",
                    c.max_rel
                );
            }
        }
    }
    // The demoted program computes exactly exp(f64(a32)), a32 the f32 evaluation of line 3
    // (contracted to one fma, as NVRTC's default flags do): check a few elements on the CPU.
    let x = to_f64(&mantissa_harness::data::materialize(&spec).unwrap().buffers[0].1);
    let y_all = to_f64(&npy::read_any(&dir.join("out/default.all/y.npy")).unwrap());
    for i in (0..x.len()).step_by(97) {
        let a32 = (x[i] as f32).mul_add(1.1f32, 0.3f32);
        let expected = f64::from(a32).exp();
        let rel = ((y_all[i] - expected) / expected).abs();
        // exp itself: CUDA's is within 1 ulp, Rust's within 1 ulp.
        assert!(rel < 1e-15, "element {i}: {} against {expected}", y_all[i]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The same kernel as CUDA source, built by NVRTC: the program as written loads NVRTC's cubin,
/// `--demote none` JIT-compiles the printed PTX of the marked build. Both must give the same bits
/// (the driver's JIT and NVRTC's ptxas are the same compiler), and `all` must replace the math
/// call too (the whole line in f32, not only the arithmetic).
#[test]
fn nvrtc_cubin_and_the_rewrite_path_agree_bit_for_bit() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mantissa-nvrtc-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("f.cu"), KERNEL).unwrap();
    std::fs::write(dir.join("spec.toml"), SPEC.replace("f.ptx", "f.cu")).unwrap();
    let spec = Spec::load(&dir.join("spec.toml")).unwrap();
    let request = none_and_all(vec![FlagSet::DEFAULT, FlagSet::STRICT], &dir);
    let result = run_spec(&gpu, &spec, &request, &mut |_| {}).unwrap();
    assert!(
        result.front_end.starts_with("NVRTC"),
        "{}",
        result.front_end
    );
    let y = |sub: &str| to_f64(&npy::read_any(&dir.join(sub).join("y.npy")).unwrap());
    assert_eq!(y("out"), y("out/default.none"));
    assert_eq!(y("out/strict.as-written"), y("out/strict.none"));
    let all = result
        .runs
        .iter()
        .find(|r| r.configuration.name() == "all")
        .unwrap();
    let notes = all.notes.join("; ");
    assert!(notes.contains("math calls in f32: exp (line 4)"), "{notes}");
    // exp(a) with a and exp in f32: within a few f32 ulps of the f32 evaluation on the CPU.
    let x = to_f64(&mantissa_harness::data::materialize(&spec).unwrap().buffers[0].1);
    let y_all = y("out/default.all");
    for i in (0..x.len()).step_by(97) {
        let a32 = (x[i] as f32).mul_add(1.1f32, 0.3f32);
        let expected = f64::from(a32.exp());
        let rel = ((y_all[i] - expected) / expected).abs();
        assert!(
            rel < 4.0 * f64::from(f32::EPSILON),
            "element {i}: {} against {expected}",
            y_all[i]
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
