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
    assert!(instructions.iter().all(
        |i| i["kernel"] == "_Z13black_scholesPKdS0_S0_PdS1_idd" && i["line"].as_u64() > Some(0)
    ));
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
