//! The harness's two performance goals, measured on the GPU (docs/BENCHMARKS.md):
//!
//! 1. **Launch overhead**: 10^4 launches of a tiny kernel (one block of 256 threads), queued
//!    back to back between two CUDA events, by a bare cudarc loop and by a spec
//!    (`repeat = 10000`) run through the harness. The GPU finishes each launch faster than a
//!    host can queue the next, so the event time is the host's queueing time; the difference per
//!    launch is what the harness adds (spec walk, argument resolution and checks).
//! 2. **Rewrite + JIT**: parse + demote(all) + print + driver JIT (`Gpu::load_ptx`) of a
//!    5,423-instruction kernel. Run with `CUDA_CACHE_DISABLE=1`, or the driver's JIT cache
//!    answers the repeats.
//!
//! Each figure is the median of 9 rounds; the two launch loops alternate within a round.
//! Run: `cargo run --release -p mantissa-harness --example harness_bench` (needs a GPU).

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use mantissa_gpu::{FlagSet, Gpu, Source};
use mantissa_harness::exec::ExecOptions;
use mantissa_harness::{run_spec, RunRequest, Spec};
use std::time::Instant;

const KERNEL: &str = r#"extern "C" __global__ void tick(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"#;

const LAUNCHES: usize = 10_000;
const ROUNDS: usize = 9;

const BIG_KERNEL: &str = include_str!("../../ptx/tests/fixtures/units/bench.nvrtc.ptx");

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = Gpu::probe()?;
    println!("device: {}", gpu.info().name);

    // The kernel once, for both loops.
    let compiled = gpu.compile(&Source::new("tick.cu", KERNEL), FlagSet::DEFAULT)?;

    // Bare cudarc: its own module from the same PTX, its own stream.
    let ctx = CudaContext::new(0)?;
    // As mantissa's Gpu does: one stream, no per-buffer event tracking (cudarc records events
    // around every launch argument otherwise, which is cudarc's cost, not a launch's).
    // SAFETY: every buffer here is used on this one stream only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(compiled.ptx.clone()))?;
    let tick = module.load_function("tick")?;
    let mut x = stream.alloc_zeros::<f32>(256)?;
    let n = 256i32;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let bare = |stream: &std::sync::Arc<cudarc::driver::CudaStream>,
                x: &mut cudarc::driver::CudaSlice<f32>|
     -> Result<f64, Box<dyn std::error::Error>> {
        let start =
            stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        for _ in 0..LAUNCHES {
            let mut b = stream.launch_builder(&tick);
            b.arg(&mut *x).arg(&n);
            // SAFETY: tick(float*, int) takes exactly these two arguments.
            unsafe { b.launch(cfg) }?;
        }
        let end =
            stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        end.synchronize()?;
        Ok(f64::from(start.elapsed_ms(&end)?))
    };

    // The harness: a spec that launches the same kernel 10^4 times.
    let dir = std::env::temp_dir().join(format!("mantissa-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("tick.cu"), KERNEL)?;
    std::fs::write(
        dir.join("tick.toml"),
        format!(
            r#"name = "tick"
[source]
file = "tick.cu"
[sizes]
n = 256
[buffers.x]
type = "f32"
len = "n"
[[steps]]
repeat = {LAUNCHES}
[[steps.steps]]
launch = "tick"
grid = 1
block = 256
args = ["x", "n"]
[[outputs]]
buffer = "x"
"#
        ),
    )?;
    let spec = Spec::load(&dir.join("tick.toml"))?;
    let request = RunRequest {
        exec: ExecOptions {
            warmup: 1,
            repeats: 1,
        },
        ..RunRequest::default()
    };
    let harness = || -> Result<f64, Box<dyn std::error::Error>> {
        let r = run_spec(&gpu, &spec, &request, &mut |_| {})?;
        let run = &r.runs[0];
        let outcome = run.outcome.as_ref().map_err(|e| e.clone())?;
        Ok(outcome.timing.as_ref().ok_or("no timing")?.median_ms)
    };

    bare(&stream, &mut x)?; // warm-up
    harness()?;
    let (mut b_ms, mut h_ms) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        b_ms.push(bare(&stream, &mut x)?);
        h_ms.push(harness()?);
    }
    let per = |ms: f64| ms * 1e3 / LAUNCHES as f64;
    let (b, h) = (median(b_ms.clone()), median(h_ms.clone()));
    println!(
        "launch loop, {LAUNCHES} launches, median of {ROUNDS}: bare cudarc {:.3} ms ({:.2} us/launch), harness {:.3} ms ({:.2} us/launch), harness adds {:.2} us/launch",
        b,
        per(b),
        h,
        per(h),
        per(h) - per(b)
    );
    println!(
        "  rounds (ms): bare {:?}\n               harness {:?}",
        b_ms.iter()
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>(),
        h_ms.iter()
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>()
    );

    // Rewrite + JIT of a 5,423-instruction kernel.
    let (mut rewrite_ms, mut jit_ms, mut total_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut demoted = 0;
    for k in 0..ROUNDS {
        let t0 = Instant::now();
        let m = mantissa_ptx::parse(BIG_KERNEL).module;
        let d = mantissa_ptx::demote::demote(&m, &mantissa_ptx::demote::DemoteSet::all())?;
        demoted = d.report.demoted();
        // A distinct comment per round, so no JIT cache can answer (with CUDA_CACHE_DISABLE=1
        // the driver does not cache anyway).
        let ptx = format!("{}\n// round {k}\n", d.module);
        let t1 = Instant::now();
        let module = gpu.load_ptx("bench", &ptx)?;
        let t2 = Instant::now();
        drop(module);
        rewrite_ms.push((t1 - t0).as_secs_f64() * 1e3);
        jit_ms.push((t2 - t1).as_secs_f64() * 1e3);
        total_ms.push((t2 - t0).as_secs_f64() * 1e3);
    }
    let instructions = mantissa_ptx::parse(BIG_KERNEL)
        .module
        .kernels()
        .map(|f| f.instructions().count())
        .sum::<usize>();
    println!(
        "rewrite + JIT, {instructions} instructions ({demoted} demoted), median of {ROUNDS}: parse+demote+print {:.1} ms, JIT {:.1} ms, total {:.1} ms",
        median(rewrite_ms),
        median(jit_ms),
        median(total_ms)
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
