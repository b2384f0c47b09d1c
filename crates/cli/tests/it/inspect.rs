//! `mantissa inspect` end to end: the binary on committed PTX fixtures (no NVRTC or GPU needed),
//! its usage errors, when NVRTC is present on the examples' CUDA sources, and when nvcc is
//! present on a program with host code (without nvcc: the one-line install hint).

use crate::support;

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

const RAY_STEP_DEFAULT: &str = include_str!("../../../ptx/tests/fixtures/ray_step.default.ptx");

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
    // An fma, and a mul.f32 feeding sub.f32 that ptxas fuses too.
    assert_eq!(kinds(&line(8)), ["contraction", "contractible"]);
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
    // Every line is named by its file; code without line info is never a "line 0".
    assert!(text.contains("\n  ray_step.cu:8:\n"), "{text}");
    assert!(!text.contains("line 0"), "{text}");
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
    let src = include_str!("../../../../examples/inspect/aab.cu");
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

const APP: &str = include_str!("../../../gpu/tests/fixtures/host_app/app.cu");
const APP_LOCAL: &str = include_str!("../../../gpu/tests/fixtures/host_app/local.h");

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

/// `inspect --json` of a scratch copy of `text` named `name`, with `extra` options; `None`
/// (skipped) without NVRTC.
fn inspect_json(name: &str, text: &str, extra: &[&str]) -> Option<serde_json::Value> {
    mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let path = scratch(name, text);
    let out = mantissa(&[&["inspect", path.to_str().unwrap(), "--json"], extra].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn kernel<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kernel"] == name)
        .unwrap_or_else(|| panic!("no kernel {name}"))
}

const PROMOTION: &str = include_str!("../../../../examples/inspect/promotion.cu");

#[test]
fn accidental_double_is_flagged_per_line_with_its_fix() {
    let Some(v) = inspect_json("promotion.cu", PROMOTION, &[]) else {
        return;
    };
    // (kernel, label, constants, per execution, fix) of each accident, known from the PTX.
    let expect = [
        ("literal", "promotion.cu:8", vec![], 2, "write 2.0f"),
        (
            "macro_constant",
            "promotion.cu:14",
            vec![0.3],
            1,
            "write #define DAMPING 0.3f",
        ),
        ("reciprocal", "promotion.cu:20", vec![1.0], 2, "write 1.0f"),
        (
            "power",
            "promotion.cu:28",
            vec![1.0],
            97,
            "write 1.0f, 1.5f, powf()",
        ),
        (
            "exponential",
            "promotion.cu:36",
            vec![-0.1],
            18,
            "write 0.1f, expf()",
        ),
    ];
    for (k, label, constants, per, fix) in expect {
        let p = kernel(&v, k)["promotions"].as_array().unwrap();
        assert_eq!(p.len(), 1, "{k}: {p:?}");
        let p = &p[0];
        assert_eq!(p["accidental"], true, "{k}");
        assert_eq!(p["label"], label, "{k}");
        assert_eq!(p["constants"], serde_json::json!(constants), "{k}");
        assert_eq!(p["per_execution"], per, "{k}");
        assert_eq!(p["fix"], fix, "{k}");
        assert_eq!(p["promotions"], 1, "{k}");
        assert_eq!(p["to_f32"], 1, "{k}");
        assert_eq!(p["build"], "default", "{k}");
    }
    // The double accumulator is intentional: carried around the loop.
    let acc = &kernel(&v, "double_accumulator")["promotions"][0];
    assert_eq!(acc["accidental"], false);
    assert_eq!(acc["carried"][0]["kind"], "loop_carried");
    // Ranked first on its line; an all-float kernel has none.
    let line = kernel(&v, "exponential")["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == "promotion.cu:36")
        .cloned()
        .unwrap();
    assert_eq!(line["rank"], "accidental_double");
    assert_eq!(line["file"], "promotion.cu");
    assert!(kernel(&v, "all_float")["promotions"]
        .as_array()
        .unwrap()
        .is_empty());

    // The text: the finding under its file:line, intentional double in the summary, no line 0.
    let path = scratch("promotion_text.cu", PROMOTION);
    let out = mantissa(&["inspect", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  promotion_text.cu:14: if (i < n) y[i] = x[i] * DAMPING;\n    ! accidental double precision (default): 1 float→double conversion (%f1), rounded back to float once; 1 f64 instruction per execution of this line\n      f64 constants: 0.3\n      from: DAMPING (0.3) → #define DAMPING 0.3f\n      fix: write #define DAMPING 0.3f\n"),
        "{text}"
    );
    assert!(
        text.contains("intentional double, not flagged (an f64 value outlives the expression): promotion_text.cu:42 (f64 %fd23 carried across loop iterations)"),
        "{text}"
    );
    assert!(!text.contains("line 0"), "{text}");
    assert!(
        text.contains("floating-point instructions with no line info"),
        "{text}"
    );
}

const FLOAT_LITERAL: &str =
    include_str!("../../../../examples/kernels/float_literal/float_literal.cu");

#[test]
fn float_literal_shows_its_accident() {
    let path = scratch("float_literal.cu", FLOAT_LITERAL);
    let out = mantissa(&["inspect", path.to_str().unwrap(), "--flags", "default"]);
    if mantissa_gpu::testing::require_nvcc_or_skip().is_none() {
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("  float_literal.cu:51: yi = yi + a * (2.0 * xi * xi / sqrt(yi * yi + 1.0) - yi);\n    ! accidental double precision (default): 12 float→double conversions"), "{text}");
    assert!(text.contains("5 f64 instructions per execution of this line (its code appears 5× after unrolling); 27 in all, with float_literal.cu:48"), "{text}");
    assert!(
        text.contains("      fix: write 2.0f, 1.0f, sqrtf()\n"),
        "{text}"
    );
}

const CONTRACT: &str = include_str!("../../../ptx/tests/fixtures/sass/contract.cu");

#[test]
fn contraction_is_confirmed_from_the_sass() {
    let Some(v) = inspect_json("contract.cu", CONTRACT, &["--flags", "default,strict"]) else {
        return;
    };
    let line = |k: &str, n: u64| {
        kernel(&v, k)["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["at"]["line"] == n)
            .cloned()
            .unwrap()
    };
    let update = line("update", 18);
    assert_eq!(update["rank"], "contraction");
    assert_eq!(update["builds"][0]["highlights"][0]["kind"], "contractible");
    assert_eq!(update["builds"][0]["highlights"][0]["pairs"], 1);
    assert!(update["builds"][1]["highlights"]
        .as_array()
        .unwrap()
        .is_empty());
    if mantissa_gpu::cuda_tool("nvdisasm").is_none() {
        assert!(
            std::env::var("MANTISSA_REQUIRE_NVDISASM").as_deref() != Ok("1"),
            "nvdisasm not found but MANTISSA_REQUIRE_NVDISASM=1"
        );
        assert_eq!(v["sass"]["checked"], false);
        eprintln!("SASS part skipped: no nvdisasm");
        return;
    }
    assert_eq!(v["sass"]["checked"], true);
    // x -= m*a: one FFMA by default, FMUL + FADD under strict.
    assert_eq!(update["builds"][0]["sass"]["FFMA"], 1);
    assert_eq!(update["builds"][1]["sass"]["FMUL"], 1);
    assert_eq!(update["builds"][1]["sass"]["FADD"], 1);
    assert!(update["builds"][1]["sass"].get("FFMA").is_none());
    // __fmul_rn: never fused.
    let rounded = line("rounded", 12);
    assert!(rounded["builds"][0]["sass"].get("FFMA").is_none());
    assert_eq!(rounded["rank"], serde_json::Value::Null);
}

#[test]
fn file_problems_are_one_line_each() {
    let Some(_) = mantissa_gpu::testing::require_nvrtc_or_skip() else {
        return;
    };
    // A Latin-1 byte in a comment: read, compiled, lines labelled.
    let mut bytes = b"// caf".to_vec();
    bytes.push(0xE9);
    bytes.extend_from_slice(b"\nextern \"C\" __global__ void k(float* x) { x[0] = x[1] * 0.3; }\n");
    let path = scratch("latin1.cu", "");
    std::fs::write(&path, &bytes).unwrap();
    let out = mantissa(&["inspect", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("latin1.cu:2: extern"), "{text}");
    assert!(text.contains("accidental double precision"), "{text}");
    // No kernels: exit 1, one line saying what to check.
    let path = scratch("nokernel.cu", "__device__ float f(float x) { return x; }\n");
    let out = mantissa(&["inspect", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no kernels in") && err.contains("__global__"),
        "{err}"
    );
}

#[test]
fn unknown_architectures_are_usage_errors() {
    let out = mantissa(&["inspect", "k.cu", "--arch", "sm_1000"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'sm_1000'") && err.contains("accepted: sm_50") && err.contains("sm_90"),
        "{err}"
    );
}

/// `inspect FILE` (text) of scratch files `files` (name, text), the first one inspected, with
/// `extra` options; `None` (skipped) without NVRTC.
fn inspect_text(files: &[(&str, &str)], extra: &[&str]) -> Option<(String, String, i32)> {
    mantissa_gpu::testing::require_nvrtc_or_skip()?;
    let paths: Vec<PathBuf> = files.iter().map(|(n, t)| scratch(n, t)).collect();
    let out = mantissa(&[&["inspect", paths[0].to_str().unwrap()], extra].concat());
    Some((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    ))
}

/// A cardiac-cell model's shape: a `__device__` function in a header, inlined, computing
/// `Vmyo = 0.65*Vcell` in double, and a macro defined in a header of its own.
const CELL_H: &str = "#include \"cell_eta.h\"\n__device__ inline float membrane(float Vcell, float g)\n{\n    float Vmyo;\n    Vmyo = 0.65*Vcell;\n    return Vmyo + g * ETA;\n}\n";
const CELL_ETA_H: &str = "#define ETA 0.3\n";
const CELL_CU: &str = "#include \"cell.h\"\n\n__global__ void cell(const float* v, const float* g, float* out, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        out[i] = membrane(v[i], g[i]);\n    }\n}\n";

#[test]
fn an_inlined_callee_is_flagged_on_its_own_line_with_a_header_macro_named() {
    let files = [
        ("cell.cu", CELL_CU),
        ("cell.h", CELL_H),
        ("cell_eta.h", CELL_ETA_H),
    ];
    let Some((text, err, code)) = inspect_text(&files, &["--flags", "default"]) else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    // The culprit's own line, with the inlining chain as context.
    assert!(text.contains("  cell.h:5 (inlined at cell.cu:7): Vmyo = 0.65*Vcell;\n    ! accidental double precision (default): 1 float→double conversion"), "{text}");
    assert!(
        text.contains("      from: 0.65 → 0.65f\n      fix: write 0.65f\n"),
        "{text}"
    );
    // The macro from a header with no code is named, not a bare constant.
    assert!(
        text.contains("      from: ETA (0.3) → #define ETA 0.3f\n"),
        "{text}"
    );
    assert!(!text.contains("constant 0.3"), "{text}");
    assert!(!text.contains("(default): ,"), "{text}");
}

const STENCIL: &str = "__global__ void stencil(const float* u, float* un, int nx, int ny, float r)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;\n    int j = blockIdx.y * blockDim.y + threadIdx.y + 1;\n    if (i < nx - 1 && j < ny - 1) {\n        float c = u[j * nx + i];\n        un[j * nx + i] = c + r * ((u[j * nx + i + 1] - 2.0 * c + u[j * nx + i - 1])\n                                + (u[(j + 1) * nx + i] - 2.0 * c\n                                   + u[(j - 1) * nx + i]));\n    }\n}\n";

#[test]
fn a_statement_over_several_lines_names_the_literal_on_its_line() {
    let Some((text, err, code)) = inspect_text(&[("stencil.cu", STENCIL)], &["--flags", "default"])
    else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(
            "  stencil.cu:9: + u[(j - 1) * nx + i]));\n    ! accidental double precision"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "      from: 2.0 (stencil.cu:7, stencil.cu:8) → 2.0f\n      fix: write 2.0f\n"
        ),
        "{text}"
    );
}

const BLOCKS_AND_UNROLLED: &str = "__global__ void blocks(const float* x, float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    int nb = (int)ceil((double)n / 256);\n    if (i < n) y[i] = x[i] * nb;\n}\n\n__global__ void unrolled(const float* x, float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i * 5 + 4 < n) {\n#pragma unroll\n        for (int k = 0; k < 5; k++) {\n            y[i * 5 + k] = x[i * 5 + k] * 1.1;\n        }\n    }\n}\n";

#[test]
fn explicit_casts_are_deliberate_and_unrolled_copies_are_one_finding() {
    let Some((text, err, code)) = inspect_text(&[("blocks.cu", BLOCKS_AND_UNROLLED)], &[]) else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    let (blocks, unrolled) = text.split_once("kernel _Z8unrolled").unwrap();
    assert!(!blocks.contains("accidental"), "{blocks}");
    assert!(
        !text.contains("ceilf") && !text.contains("0.00390625f"),
        "{text}"
    );
    assert!(
        blocks.contains("blocks.cu:4 (explicit (double) cast in the source)"),
        "{blocks}"
    );
    assert_eq!(
        unrolled.matches("! accidental double precision").count(),
        1,
        "{unrolled}"
    );
    assert!(
        unrolled.contains("(its code appears 5× after unrolling)"),
        "{unrolled}"
    );
}

const SOFTPLUS_AND_DIVISIONS: &str = "__global__ void softplus(const float* x, float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = logf(1.0f + expf(x[i]));\n}\n\n__global__ void divs(const float* a, const float* b, float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        float p = a[i] / b[i];\n        float q = b[i] / (a[i] + 1.0f);\n        float r = sqrtf(a[i] * a[i] + b[i]);\n        y[i] = p + q / r;\n    }\n}\n";

#[test]
fn library_flushes_are_not_flagged_and_a_flag_sets_doing_is_one_line() {
    let Some((text, err, code)) = inspect_text(&[("softdiv.cu", SOFTPLUS_AND_DIVISIONS)], &[])
    else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    let (softplus, divs) = text.split_once("kernel _Z4divs").unwrap();
    // expf's ex2.approx.ftz is in every build, strict's too: CUDA's choice, not the flags'.
    let default_and_strict: String = softplus
        .lines()
        .skip_while(|l| !l.contains("softdiv.cu:4"))
        .take_while(|l| !l.trim_start().starts_with("fast"))
        .collect();
    assert!(!default_and_strict.contains("flush-to-zero"), "{softplus}");
    // fast's divisions: one line for the kernel, none per line.
    assert_eq!(divs.matches("! approximate division").count(), 0, "{divs}");
    assert!(divs.contains("  fast (the flag set, on every line alike): every division approximate (3 lines: softdiv.cu:11, softdiv.cu:12, softdiv.cu:14); every square root approximate (1 line: softdiv.cu:13)"), "{divs}");
    // What the source decides stays on its line.
    assert!(
        divs.contains("  softdiv.cu:13: float r = sqrtf(a[i] * a[i] + b[i]);\n"),
        "{divs}"
    );
}

const REMOVED_HOST_APIS: &str = "#include <cstdio>\n#include <cuda_runtime.h>\n\n__global__ void twice(float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * y[i];\n}\n\nint main()\n{\n    cudaDeviceProp p;\n    cudaGetDeviceProperties(&p, 0);\n    printf(\"clock %d kHz\\n\", p.clockRate);\n    cudaThreadSynchronize();\n    return 0;\n}\n";
const TEXTURE_REFERENCE: &str = "texture<float, 1> tex;\n\n__global__ void fetch(float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = tex1Dfetch(tex, i);\n}\n";
const HOST_HELPER: &str = "void check(int code)\n{\n    if (code != 0) {\n        throw code;\n    }\n}\n\n__global__ void twice(float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * y[i];\n}\n";

#[test]
fn host_side_workarounds_are_applied_and_said() {
    if mantissa_gpu::testing::require_nvcc_or_skip().is_none() {
        return;
    }
    let Some((text, err, code)) = inspect_text(
        &[("oldhost.cu", REMOVED_HOST_APIS)],
        &["--flags", "default"],
    ) else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("\nnote: CUDA 13 removed clockRate, cudaThreadSynchronize from the runtime; compiled with -DclockRate=major -DcudaThreadSynchronize=cudaDeviceSynchronize (inspect never runs host code"), "{text}");
    // --no-workarounds: the file as written fails, with the hint.
    let (_, err, code) = inspect_text(
        &[("oldhost.cu", REMOVED_HOST_APIS)],
        &["--flags", "default", "--no-workarounds"],
    )
    .unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("hint: CUDA 13 removed clockRate"), "{err}");
    // Texture references: a hint.
    let (_, err, code) =
        inspect_text(&[("texref.cu", TEXTURE_REFERENCE)], &["--flags", "default"]).unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("texture references (texture<T, N> name) were removed in CUDA 12"),
        "{err}"
    );
    // A host helper without host headers: NVRTC refuses it, nvcc builds it, and says why.
    let (text, err, code) =
        inspect_text(&[("helper.cu", HOST_HELPER)], &["--flags", "default"]).unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("front end: nvcc "), "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("NVRTC refused host code"),
        "{text}"
    );
    assert!(!err.contains("-default-device"), "{err}");
}

const AXPY: &str = "template <typename T>\n__global__ void axpy(T a, const T* x, T* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];\n}\n\ntemplate __global__ void axpy<float>(float, const float*, float*, int);\ntemplate __global__ void axpy<double>(double, const double*, double*, int);\n";

#[test]
fn kernel_names_template_instantiations() {
    let Some((text, err, code)) = inspect_text(&[("axpy.cu", AXPY)], &["--kernel", "axpy<float>"])
    else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    assert_eq!(text.matches("\nkernel ").count(), 1, "{text}");
    assert!(
        text.contains("\nkernel _Z4axpyIfEvT_PKS0_PS0_i ("),
        "{text}"
    );
    let (_, err, code) = inspect_text(&[("axpy.cu", AXPY)], &["--kernel", "axpy<half>"]).unwrap();
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
