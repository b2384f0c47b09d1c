//! `mantissa run` end to end without a GPU: a spec error is one line with its position and exit
//! code 2, found before the GPU is looked for; a good spec without a GPU is a failure (exit 1)
//! that says why.

mod support;

use std::path::PathBuf;
use std::process::Command;
use support::mantissa_binary;

/// A spec that is right: one buffer, one launch of `k`, one output.
const GOOD_SPEC: &str = "[source]\nfile = \"k.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = 1\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\"]\n[[outputs]]\nbuffer = \"u\"\n";

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mantissa-cli-run-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch directory");
    std::fs::write(
        d.join("k.cu"),
        "extern \"C\" __global__ void k(double* u) { u[0] = 1.0; }\n",
    )
    .expect("kernel file");
    d
}

#[test]
fn a_spec_error_is_one_line_with_its_position_and_exit_code_2() {
    let d = scratch_dir("bad");
    let spec = d.join("bad.toml");
    std::fs::write(
        &spec,
        "[source]\nfile = \"k.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = \"n\"\n",
    )
    .unwrap();
    let out = Command::new(mantissa_binary())
        .args(["run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr
            .trim_end()
            .ends_with("bad.toml:5:8: buffers.u.len: found unknown name 'n'; accepted sizes: none"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_good_spec_without_a_gpu_says_why_and_exits_1() {
    if mantissa_gpu::Gpu::probe().is_ok() {
        return; // covered by the harness's GPU tests
    }
    let d = scratch_dir("good");
    let spec = d.join("good.toml");
    std::fs::write(&spec, GOOD_SPEC).unwrap();
    let out = Command::new(mantissa_binary())
        .args(["run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: mantissa run needs a GPU: "),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// `--write-config` builds the program (nvcc: the example has `main()`) and lists every math
/// call and demotable f64 instruction, without a GPU; the file it writes runs with `--demote`.
#[test]
fn write_config_lists_the_math_calls_and_instructions_of_an_example() {
    if mantissa_gpu::testing::require_nvcc_or_skip().is_none() {
        return;
    }
    let d = scratch_dir("config");
    let config = d.join("options.json");
    let out = Command::new(mantissa_binary())
        .args([
            "run",
            "../../examples/kernels/options/options.toml",
            "--write-config",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("3 math calls"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let functions: Vec<&str> = json["math"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"].as_str().unwrap())
        .collect();
    assert_eq!(functions, ["erfc", "exp", "log"]);
    let instructions = json["instructions"].as_array().unwrap();
    assert!(!instructions.is_empty());
    assert!(instructions
        .iter()
        .all(|i| i["function"] == "_Z13black_scholesPKdS0_S0_PdS1_idd"
            && i["line"].as_u64() > Some(0)));
    std::fs::remove_dir_all(&d).ok();
}

/// A configuration file that is not one: exit 2, one line naming the file and what is accepted.
#[test]
fn a_bad_configuration_file_is_a_usage_error() {
    let d = scratch_dir("badconfig");
    let config = d.join("c.json");
    std::fs::write(&config, "{\"math\": \"some\"}").unwrap();
    let spec = d.join("good.toml");
    std::fs::write(&spec, GOOD_SPEC).unwrap();
    let out = Command::new(mantissa_binary())
        .args([
            "run",
            spec.to_str().unwrap(),
            "--demote",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("c.json:1:") && stderr.contains("\"math\": \"all\""),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// Runs `mantissa run SPEC ARGS...` on `spec` written into a scratch directory beside `k.cu`.
fn run_spec(tag: &str, spec: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let d = scratch_dir(tag);
    let path = d.join("s.toml");
    std::fs::write(&path, spec).unwrap();
    let out = Command::new(mantissa_binary())
        .arg("run")
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&d).ok();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--check` builds and checks without a GPU: a short summary and exit 0.
#[test]
fn check_builds_and_checks_without_a_gpu() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let (code, stdout, stderr) = run_spec(
        "check-good",
        GOOD_SPEC,
        &["--check", "--flags", "default,fast"],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("s.toml: checked without a GPU (flag sets default, fast; sm_90)"),
        "{stdout}"
    );
    assert!(stdout.contains("  1 launch of 1 kernel: k\n"), "{stdout}");
    assert!(
        stdout.contains("  1 buffer, 1 output, 0 references read"),
        "{stdout}"
    );
}

/// The three specs that `--write-config` used to accept: a kernel that does not exist,
/// a buffer for an `int`, an f64 `.npy` for an f32 buffer. `--check` and `--write-config` both
/// refuse them with the one-line error, exit 2, and write nothing.
#[test]
fn check_and_write_config_refuse_what_cannot_run() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let kernel = "extern \"C\" __global__ void k(double* u, int n) { if (n > 0) u[0] = 1.0; }\n";
    let head = "[source]\nfile = \"k.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = 1\n";
    let cases = [
        (
            format!("{head}[[steps]]\nlaunch = \"nope\"\ngrid = 1\nblock = 1\nargs = [\"u\", 1]\n[[outputs]]\nbuffer = \"u\"\n"),
            "s.toml:7:10: steps[0].launch: found unknown kernel 'nope'; accepted a kernel of the program: k",
        ),
        (
            format!("{head}[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\", \"u\"]\n[[outputs]]\nbuffer = \"u\"\n"),
            "s.toml:10:14: steps[0].args[1]: found buffer 'u' for parameter 2 (.u32); accepted a scalar for .u32 (a buffer needs a .u64/.b64 pointer parameter)",
        ),
        (
            format!("{head}[buffers.w]\ntype = \"f32\"\nlen = 2\ninit = {{ npy = \"w.npy\" }}\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\", 1]\n[[outputs]]\nbuffer = \"u\"\n"),
            "s.toml:9:8: buffers.w.init: found w.npy: dtype <f8, expected <f4 (f32); accepted 2 values of f32",
        ),
    ];
    for (i, (spec, expected)) in cases.iter().enumerate() {
        for mode in ["--check", "--write-config"] {
            let d = scratch_dir(&format!("refuse-{i}-{}", &mode[2..]));
            std::fs::write(d.join("k.cu"), kernel).unwrap();
            mantissa_harness::npy::write(
                &d.join("w.npy"),
                &mantissa_gpu::HostData::F64(vec![1.0, 2.0]),
            )
            .unwrap();
            std::fs::write(d.join("s.toml"), spec).unwrap();
            let config = d.join("c.json");
            let mut cmd = Command::new(mantissa_binary());
            cmd.arg("run").arg(d.join("s.toml")).arg(mode);
            if mode == "--write-config" {
                cmd.arg(&config);
            }
            let out = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{mode}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(
                stderr.trim_end().ends_with(expected),
                "{mode}: {stderr}\nexpected …{expected}"
            );
            assert!(!config.exists(), "{mode} wrote a configuration");
            std::fs::remove_dir_all(&d).ok();
        }
    }
}

/// `--set` overrides a size everywhere; a name that is not a size is a usage error naming them.
#[test]
fn set_overrides_sizes_and_refuses_unknown_names() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let spec = "[source]\nfile = \"k.cu\"\n[sizes]\nn = 1\nm = \"2 * n\"\n[buffers.u]\ntype = \"f64\"\nlen = \"m\"\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\"]\n[[outputs]]\nbuffer = \"u\"\nlen = 2\n";
    let (code, stdout, stderr) = run_spec("set-good", spec, &["--check", "--set", "n=8"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // With n = 1 the output's len = 2 is the whole buffer; with n = 0 it would not fit.
    let (code, _, stderr) = run_spec("set-small", spec, &["--check", "--set", "n=0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("buffers.u.len: found m = 0; accepted at least 1 element"),
        "{stderr}"
    );
    let (code, _, stderr) = run_spec("set-unknown", spec, &["--check", "--set", "k=3"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.trim_end().ends_with(
            "s.toml:3:1: --set k: found unknown size 'k'; accepted a size of [sizes]: n, m"
        ),
        "{stderr}"
    );
    let (code, _, stderr) = run_spec("set-bad", spec, &["--check", "--set", "n"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--set n: found no NAME=VALUE"), "{stderr}");
}

/// A program that does not compile: exit 1, one line naming the log file; `--verbose` prints
/// the log first.
#[test]
fn a_compile_error_names_its_log_and_verbose_prints_it() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let d = scratch_dir("compile-error");
    std::fs::write(
        d.join("k.cu"),
        "extern \"C\" __global__ void k(double* u) { u[0] = not_declared; }\n",
    )
    .unwrap();
    let spec = d.join("s.toml");
    std::fs::write(&spec, GOOD_SPEC).unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(mantissa_binary())
            .arg("run")
            .arg(&spec)
            .arg("--check")
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let log_file = stderr
        .trim_end()
        .rsplit("; whole log: ")
        .next()
        .map(PathBuf::from)
        .unwrap();
    let log = std::fs::read_to_string(&log_file).unwrap();
    assert!(log.contains("\"not_declared\" is undefined"), "{log}");
    let (code, stderr) = run(&["--verbose"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.lines().count() > 1, "{stderr}");
    assert!(stderr.starts_with(log.trim_end()), "{stderr}");
    std::fs::remove_dir_all(&d).ok();
}

/// `--check --set n=1e12` used to abort (SIGABRT) trying to make an 8 TB buffer: it allocates
/// nothing, echoes the sizes it used and states the memory a run needs; `run` itself refuses it
/// in one line before looking for a GPU.
#[test]
fn huge_sizes_are_checked_without_allocating_and_refused_by_run() {
    if mantissa_gpu::testing::require_nvrtc_or_skip().is_none() {
        return;
    }
    let spec = "[source]\nfile = \"k.cu\"\n[sizes]\nn = 1\nm = 64\n[buffers.u]\ntype = \"f64\"\nlen = \"n\"\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\"]\n[[outputs]]\nbuffer = \"u\"\nlen = 1\n";
    let (code, stdout, stderr) = run_spec("huge-check", spec, &["--check", "--set", "n=1e12"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("  sizes: n=1000000000000 (--set), m=64 (spec)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  memory: a run needs about 7.3 TiB of host memory and 21.8 TiB of device memory (largest buffers: u 7.3 TiB)"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run_spec("huge-run", spec, &["--set", "n=1e12"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("mantissa run: the spec needs about 7.3 TiB of host memory and ")
            && stderr.contains(
                " is free (largest buffers: u 7.3 TiB): choose smaller [sizes] (--set NAME=VALUE)"
            ),
        "{stderr}"
    );
}
