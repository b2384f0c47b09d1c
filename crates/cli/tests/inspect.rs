//! `mantissa inspect` end to end: the binary on committed PTX fixtures (no NVRTC or GPU needed),
//! its usage errors, when NVRTC is present on the examples' CUDA sources, and when nvcc is
//! present on a program with host code (without nvcc: the one-line install hint).

mod support;

use std::path::PathBuf;

use std::process::{Command, Output};
use support::mantissa_binary;

fn mantissa(args: &[&str]) -> Output {
    Command::new(mantissa_binary())
        .args(args)
        .output()
        .expect("the mantissa binary runs")
}

/// Writes `text` to a scratch file named `name` (fixtures are embedded, so the test does not
/// depend on where the source tree is).
fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mantissa-inspect-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const RAY_STEP_DEFAULT: &str = include_str!("../../ptx/tests/fixtures/ray_step.default.ptx");

#[test]
fn ptx_file_json_flags_the_unsafe_cast_and_the_contraction() {
    let path = scratch("ray_step.ptx", RAY_STEP_DEFAULT);
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["flag_sets"], serde_json::json!(["ptx"]));
    let k = &v["kernels"][0];
    assert_eq!(k["kernel"], "ray_step");
    let line = |n: u64| {
        k["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["at"]["line"] == n)
            .unwrap()
            .clone()
    };
    let kinds = |l: &serde_json::Value| -> Vec<String> {
        l["builds"][0]["highlights"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(&line(8)), ["contraction"]);
    assert_eq!(kinds(&line(10)), ["float_to_unsigned"]);
    assert_eq!(
        line(10)["builds"][0]["highlights"][0]["may_be_negative"],
        true
    );
    assert_eq!(k["census"]["ptx"][0]["total"]["ops"]["div.rn.f32"], 1);
}

#[test]
fn ptx_file_text_output_names_lines() {
    let path = scratch("ray_step_text.ptx", RAY_STEP_DEFAULT);
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--kernel", "ray_step"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // The first line says how the file became PTX.
    assert!(
        text.starts_with(
            "front end: ready PTX .version 9.0: the file is PTX, read as is\n\nkernel ray_step\n"
        ),
        "{text}"
    );
    assert!(text.contains("  line 8"), "{text}");
    assert!(text.contains("fma.rn.f32"), "{text}");
    assert!(text.contains("float→unsigned cvt.rzi.u32.f32"), "{text}");
}

#[test]
fn unknown_kernel_lists_the_kernels_found() {
    let path = scratch("ray_step_k.ptx", RAY_STEP_DEFAULT);
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--kernel", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no kernel 'nope'") && err.contains("kernels found: ray_step"),
        "{err}"
    );
}

#[test]
fn missing_file_and_bad_flags_are_usage_errors() {
    let out = mantissa(&["inspect", "/nonexistent/k.cu"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/k.cu"));
    let out = mantissa(&["inspect", "k.cu", "--flags", "fastest"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("accepted: default, strict"));
}

#[test]
fn malformed_ptx_reports_the_line_and_keeps_going() {
    let broken = RAY_STEP_DEFAULT.replace(
        "div.rn.f32 \t%f11, %f4, %f10;",
        "div.rn.f32 %f11 %f4, %f10;",
    );
    assert_ne!(broken, RAY_STEP_DEFAULT);
    let path = scratch("broken.ptx", &broken);
    let out = mantissa(&["inspect", path.to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 63: operand '%f11 %f4' not understood"),
        "{err}"
    );
    // The cast further down is still analysed.
    assert!(String::from_utf8_lossy(&out.stdout).contains("float→unsigned"));
}

#[test]
fn cuda_sources_compile_under_each_flag_set() {
    let src = include_str!("../../../examples/inspect/aab.cu");
    let path = scratch("aab.cu", src);
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--json"]);
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        // Without NVRTC: one line saying how to get it.
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("pip install nvidia-cuda-nvrtc"), "{err}");
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["flag_sets"],
        serde_json::json!(["default", "strict", "fast"])
    );
    let l = &v["kernels"][0]["lines"][0];
    assert_eq!(l["text"], "out[i] = a[i] * a[i] + b[i];");
    assert_eq!(
        l["builds"][0]["ops"],
        serde_json::json!([["fma.rn.f32", 1]])
    );
    assert_eq!(
        l["builds"][1]["ops"],
        serde_json::json!([["mul.rn.f32", 1], ["add.rn.f32", 1]])
    );
    // A syntax error shows NVRTC's log with line numbers.
    let bad = scratch(
        "bad.cu",
        "extern \"C\" __global__ void k(float* x)\n{\n    x[0] = y;\n}\n",
    );
    let out = mantissa(&["inspect", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.cu(3): error: identifier \"y\" is undefined"),
        "{err}"
    );
}

const APP: &str = include_str!("../../gpu/tests/fixtures/host_app/app.cu");
const APP_LOCAL: &str = include_str!("../../gpu/tests/fixtures/host_app/local.h");

/// The host-code program in its own scratch directory, its header in `inc/` (found through -I).
fn app_files(tag: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("mantissa-inspect-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(dir.join("inc/local.h"), APP_LOCAL).unwrap();
    let app = dir.join("app.cu");
    std::fs::write(&app, APP).unwrap();
    (dir.clone(), app)
}

#[test]
fn host_code_goes_through_nvcc_with_include_dirs_and_defines() {
    let (dir, app) = app_files("nvcc");
    let inc = dir.join("inc");
    let args = [
        "inspect",
        app.to_str().unwrap(),
        "-I",
        inc.to_str().unwrap(),
        "-D",
        "SCALE=3",
        "--define",
        "NDEBUG",
        "--flags",
        "default,strict",
    ];
    let json = mantissa(&[&args[..], &["--json"]].concat());
    if mantissa_gpu::testing::require_nvcc_or_skip().is_none() {
        return;
    }
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let front_end = v["front_end"].as_str().unwrap();
    assert!(
        front_end.starts_with("nvcc 13.")
            && front_end.ends_with("): the file includes <stdio.h> at line 4"),
        "{front_end}"
    );
    let kernels: Vec<&str> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(
        kernels,
        [
            "poly",
            "smooth",
            "_Z4axpyIfEvT_PKS0_PS0_i",
            "_Z4axpyIdEvT_PKS0_PS0_i"
        ]
    );
    let facts = &v["builds"][0]["facts"];
    assert_eq!(facts["front_end"], "nvcc");
    assert_eq!(facts["flags"], "default");
    let options: Vec<&str> = facts["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(
        options.contains(&format!("-I{}", inc.display()).as_str()),
        "{options:?}"
    );
    assert!(
        options.contains(&"-DSCALE=3") && options.contains(&"-DNDEBUG"),
        "{options:?}"
    );
    assert!(
        options.contains(&"-lineinfo") && options.contains(&"-arch=sm_90"),
        "{options:?}"
    );
    assert_eq!(
        v["builds"][1]["facts"]["options"][3], "--fmad=false",
        "strict's switches"
    );

    // Text: the front end first, then the kernels; the contraction in the __device__ helper
    // inlined into poly is flagged.
    let text = mantissa(&[&args[..], &["--kernel", "poly"]].concat());
    assert!(text.status.success());
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.starts_with("front end: nvcc 13."), "{out}");
    assert!(out.contains("kernel poly\n"), "{out}");
    assert!(
        out.contains("acc = acc * x + coef[k];") && out.contains("FMA contraction"),
        "{out}"
    );

    // By name of the template instance, demangled.
    let axpy = mantissa(&[&args[..], &["--kernel", "axpy"]].concat());
    assert!(
        axpy.status.success(),
        "{}",
        String::from_utf8_lossy(&axpy.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn host_code_without_nvcc_is_one_line_saying_what_to_install() {
    let (dir, app) = app_files("no-nvcc");
    let out = Command::new(mantissa_binary())
        .args(["inspect", app.to_str().unwrap(), "-I"])
        .arg(dir.join("inc"))
        .env("MANTISSA_NVCC", "/nonexistent/nvcc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "{} needs nvcc (the file includes <stdio.h> at line 4)",
            app.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("no nvcc at /nonexistent/nvcc (set by MANTISSA_NVCC)"),
        "{err}"
    );
    assert!(
        err.contains("pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88"),
        "{err}"
    );
    assert!(err.contains("nvcc -ptx -lineinfo -arch=sm_90 "), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn front_ends_that_cannot_read_the_file_are_refused() {
    let path = scratch("ray_step_fe.ptx", RAY_STEP_DEFAULT);
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--front-end", "nvcc"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("front end nvcc cannot build") && err.contains("use --front-end auto or ptx"),
        "{err}"
    );
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--front-end", "gcc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("accepted: auto, nvrtc, nvcc, ptx"));
    let out = mantissa(&["inspect", path.to_str().unwrap(), "-D", "1BAD"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad define '1BAD'"));
}
