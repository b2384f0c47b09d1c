//! `mantissa run` end to end without a GPU: a spec error is one line with its position and exit
//! code 2, found before the GPU is looked for; a good spec without a GPU is a failure (exit 1)
//! that says why.

mod support;

use std::path::PathBuf;
use std::process::Command;
use support::mantissa_binary;

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
    std::fs::write(
        &spec,
        "[source]\nfile = \"k.cu\"\n[buffers.u]\ntype = \"f64\"\nlen = 1\n[[steps]]\nlaunch = \"k\"\ngrid = 1\nblock = 1\nargs = [\"u\"]\n[[outputs]]\nbuffer = \"u\"\n",
    )
    .unwrap();
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
