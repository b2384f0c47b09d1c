//! A faulting kernel (GPU; skips without one). In a test binary of its own, because an illegal
//! address corrupts the CUDA context for the rest of the process.

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_harness::{run_spec, RunRequest, Spec};

const KERNELS: &str = r#"
extern "C" __global__ void fine(double* y) { y[threadIdx.x] += 1.0; }
extern "C" __global__ void oob(double* y, long long at, int t) {
    if (t == 2) y[at] = 1.0;
}
"#;

const SPEC: &str = r#"
[source]
file = "kernels.cu"

[buffers.y]
type = "f64"
len = 32

[[steps]]
launch = "fine"
grid = 1
block = 32
args = ["y"]

[[steps]]
repeat = 4
counter = "t"
steps = [
  { launch = "fine", grid = 1, block = 32, args = ["y"] },
  { launch = "oob", grid = 1, block = 1, args = ["y", 1099511627776, "t"] },
]

[[outputs]]
buffer = "y"
"#;

#[test]
fn a_fault_names_the_step_and_the_iteration() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let d = std::env::temp_dir().join(format!("mantissa-gpu-fault-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("kernels.cu"), KERNELS).unwrap();
    std::fs::write(d.join("spec.toml"), SPEC).unwrap();
    let spec = Spec::load(&d.join("spec.toml")).unwrap();
    let result = run_spec(&gpu, &spec, &RunRequest::default(), &mut |_| {}).unwrap();
    let err = result.runs[0].outcome.as_ref().unwrap_err();
    assert!(
        err.starts_with("steps[1].steps[1] (launch oob), iteration t=2: "),
        "{err}"
    );
    assert!(
        err.to_lowercase().contains("illegal address") || err.contains("ILLEGAL_ADDRESS"),
        "{err}"
    );
    assert_eq!(result.records[0].status, mantissa_report::Status::Failed);
    std::fs::remove_dir_all(&d).ok();
}
