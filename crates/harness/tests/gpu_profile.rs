//! Time per kernel (`TrialRunner::kernel_times`) on the GPU (skips without one): a program
//! whose one kernel does ~all the work gets ~all the share, launches are counted per run of
//! the steps, setup launches are not counted, and trials after a profile still give the
//! baseline's outputs (the profiling runs restore like repeats).

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::FlagSet;
use mantissa_harness::{Configuration, RunnerOptions, Spec, TrialRunner, TrialTiming};

const KERNELS: &str = r#"
extern "C" __global__ void init(double* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = 1.0 + 1e-3 * i;
}
extern "C" __global__ void light(double* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 0.5 + 0.25;
}
extern "C" __global__ void heavy(double* a, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i];
    for (int k = 0; k < iters; ++k) x = fma(x, 0.999999, 1e-7);
    a[i] = x;
}
"#;

const SPEC: &str = r#"
[source]
file = "kernels.cu"

[sizes]
n = 65536
iters = 200000

[buffers.a]
type = "f64"
len = "n"

[[setup]]
launch = "init"
grid = "n / 256"
block = 256
args = ["a", "n"]

[[steps]]
repeat = 3
steps = [{ launch = "light", grid = "n / 256", block = 256, args = ["a", "n"] }]

[[steps]]
launch = "heavy"
grid = "n / 256"
block = 256
args = ["a", "n", "iters"]

[[outputs]]
buffer = "a"
"#;

#[test]
fn the_kernel_doing_the_work_gets_the_share_and_launches_are_counted() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mantissa-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kernels.cu"), KERNELS).unwrap();
    std::fs::write(dir.join("spec.toml"), SPEC).unwrap();
    let spec = Spec::load(&dir.join("spec.toml")).unwrap();
    let mut runner =
        TrialRunner::new(&gpu, &spec, FlagSet::DEFAULT, RunnerOptions::default()).unwrap();
    let times = runner.kernel_times(&Configuration::AsWritten, 5).unwrap();
    println!("{times:?}");
    let names: Vec<&str> = times.iter().map(|t| t.kernel.as_str()).collect();
    assert_eq!(names, ["light", "heavy"], "setup's init is not counted");
    assert_eq!(times[0].launches, 3);
    assert_eq!(times[1].launches, 1);
    let total: f64 = times.iter().map(|t| t.share).sum();
    assert!((total - 1.0).abs() < 1e-12, "{total}");
    // 200000 dependent FMAs per thread (about 1 ms, latency-bound; 20000 measured 0.108 ms on
    // an H200) against three kernels of one load and store each (6.4 µs per launch measured,
    // launch cost included): the heavy one is nearly all of it.
    assert!(times[1].share > 0.9, "{times:?}");
    assert!(times[1].median_ms > 0.5, "{times:?}");
    // Each light launch reads and writes 512 KiB: far below 20 µs on any GPU of this decade,
    // unless waits for the host were counted.
    assert!(times[0].median_ms / 3.0 < 0.02, "{times:?}");
    assert!(times.iter().all(|t| t.median_ms > 0.0), "{times:?}");
    let after = runner
        .trial(&Configuration::AsWritten, TrialTiming::AccuracyOnly)
        .unwrap();
    for o in &after.outputs {
        assert_eq!(o.vs_baseline.differing, 0, "{}", o.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
