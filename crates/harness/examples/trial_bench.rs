//! The trial runner's goals, measured on the GPU (docs/BENCHMARKS.md, "Trial runner"):
//!
//! 1. **Harness overhead per trial**: wall time of an accuracy-only trial (restore, run, compare
//!    on the GPU, summary back) minus the program's own GPU time (the median of timed repeats of
//!    the same step sequence), for an axpy of 2^10 and 2^24 doubles and for each shipped example
//!    that builds (they need nvcc). Goal: at most 1 ms plus the transfer of what is compared.
//! 2. **Device comparison of 10^8 elements**: `DeviceComparer::compare` wall time (reset, kernel,
//!    summary download), f64 against f64 identical, f64 one ulp apart everywhere (every element
//!    measured: digits, ulps, relative error), and f32 against an f64 reference. Goal: 5 ms.
//! 3. **Static configurations compiled per second**: distinct demotions of the 5,423-instruction
//!    fixture kernel (`crates/ptx/tests/fixtures/units/bench.nvrtc.ptx`), each a different half
//!    of its f64 instructions, rewritten and JIT-compiled through `Gpu::jit_many` on one thread
//!    and on every core, with a fresh JIT cache (`MANTISSA_CACHE` is pointed at a new directory);
//!    then the same set again (cache hits). Run with `CUDA_CACHE_DISABLE=1` so that the driver's
//!    own cache does not answer. Goal: 8 per second on a 16-core host.
//!
//! 4. **Accuracy-only trials, switched vs static**: per program, the wall time of an
//!    accuracy-only trial on the switched build (`TrialRunner::enable_switching` with every
//!    eligible instruction; the configuration demotes every switch, a mask write) and on the
//!    static rewrite of the same configuration with its module already loaded (a second runner
//!    without switching, after one untimed trial: the JIT is paid once, outside the median), next
//!    to the first static trial (its JIT included, from a cold cache) and the program's own GPU
//!    time; medians of 21. Goal: the program's GPU time plus 10 ms, no JIT.
//!
//! Run: `CUDA_CACHE_DISABLE=1 cargo run --release -p mantissa-harness --example trial_bench`.

use mantissa_gpu::{Gpu, HostData};
use mantissa_harness::config::{Demotion, Selection};
use mantissa_harness::device_compare::{DeviceComparer, Job, Side};
use mantissa_harness::{BuildKind, Configuration, RunnerOptions, Spec, TrialRunner, TrialTiming};
use std::path::Path;
use std::time::Instant;

const BIG_KERNEL: &str = include_str!("../../ptx/tests/fixtures/units/bench.nvrtc.ptx");

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

const AXPY: &str = r#"extern "C" __global__ void axpy(double* y, const double* x, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn axpy_spec(dir: &Path, n: usize) -> Result<Spec, Box<dyn std::error::Error>> {
    std::fs::write(dir.join("axpy.cu"), AXPY)?;
    let text = format!(
        r#"name = "axpy{n}"
[source]
file = "axpy.cu"
[sizes]
n = {n}
[buffers.x]
type = "f64"
len = "n"
init = {{ random = "uniform", seed = 1 }}
[buffers.y]
type = "f64"
len = "n"
init = {{ random = "uniform", seed = 2 }}
[[steps]]
launch = "axpy"
grid = "ceil(n / 256)"
block = 256
args = ["y", "x", 0.5, "n"]
[[outputs]]
buffer = "y"
"#
    );
    let path = dir.join(format!("axpy{n}.toml"));
    std::fs::write(&path, text)?;
    Ok(Spec::load(&path)?)
}

/// (program GPU time, trial wall time) in ms, medians.
fn trial_overhead(gpu: &Gpu, spec: &Spec) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let opts = RunnerOptions {
        wait_after_each_launch: false,
        baseline_timing: TrialTiming::AccuracyOnly,
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(gpu, spec, mantissa_gpu::FlagSet::DEFAULT, opts)?;
    let program = runner
        .trial(
            &Configuration::AsWritten,
            TrialTiming::Timed {
                warmup: 3,
                repeats: 21,
            },
        )?
        .timing
        .map_or(0.0, |t| t.median_ms);
    let mut walls = Vec::new();
    for _ in 0..31 {
        let t = Instant::now();
        runner.trial(&Configuration::AsWritten, TrialTiming::AccuracyOnly)?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok((program, median(walls)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A fresh JIT cache for part 3 (read when the Gpu is made).
    let cache = std::env::temp_dir().join(format!("mantissa-trial-bench-{}", std::process::id()));
    std::env::set_var("MANTISSA_CACHE", &cache);
    let gpu = Gpu::probe()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("device: {}, {threads} CPU threads", gpu.info().name);

    println!("\n1. harness overhead per accuracy-only trial (median of 31)\n");
    println!("| program | program GPU time (ms) | trial wall (ms) | overhead (ms) |");
    println!("|---|---:|---:|---:|");
    let dir = cache.join("specs");
    std::fs::create_dir_all(&dir)?;
    let mut specs = vec![axpy_spec(&dir, 1 << 10)?, axpy_spec(&dir, 1 << 24)?];
    for name in ["float_literal", "options", "heat2d", "nbody", "gauss"] {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/kernels")
            .join(name)
            .join(format!("{name}.toml"));
        match Spec::load(&p) {
            Ok(s) => specs.push(s),
            Err(e) => println!("| {name} | not loaded: {e} | | |"),
        }
    }
    for spec in &specs {
        match trial_overhead(&gpu, spec) {
            Ok((program, wall)) => println!(
                "| {} | {program:.3} | {wall:.3} | {:.3} |",
                spec.name,
                wall - program
            ),
            Err(e) => println!("| {} | failed: {e} | | |", spec.name),
        }
    }

    println!(
        "\n2. device comparison of 10^8 elements (median of 7, wall incl. summary download)\n"
    );
    println!("| values | reference | ms |");
    println!("|---|---|---:|");
    let n = 100_000_000usize;
    let r: Vec<f64> = (0..n).map(|i| 1.0 + (i as f64) * 1e-9).collect();
    let same = gpu.upload("r", &HostData::F64(r.clone()))?;
    let ulp: Vec<f64> = r.iter().map(|x| f64::from_bits(x.to_bits() + 1)).collect();
    let apart = gpu.upload("v", &HostData::F64(ulp))?;
    let single = gpu.upload("v32", &HostData::F32(r.iter().map(|&x| x as f32).collect()))?;
    drop(r);
    let mut comparer = DeviceComparer::new(&gpu)?;
    for (label, values) in [
        ("f64, identical", &same),
        ("f64, 1 ulp apart", &apart),
        ("f32", &single),
    ] {
        let mut times = Vec::new();
        for _ in 0..7 {
            gpu.synchronize()?;
            let t = Instant::now();
            comparer.compare(
                &gpu,
                &[Job {
                    values: Side::whole(values),
                    reference: Side::whole(&same),
                }],
            )?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!("| {label} | f64 | {:.3} |", median(times));
    }
    drop((same, apart, single));

    println!("\n3. static configurations of a 5,423-instruction kernel compiled per second\n");
    let module = mantissa_ptx::parse(BIG_KERNEL).module;
    let selectors: Vec<_> = mantissa_ptx::demote::candidates(&module)
        .into_iter()
        .filter_map(|c| c.selector)
        .collect();
    let texts = |from: u64, count: u64| -> Vec<String> {
        (from..from + count)
            .map(|seed| {
                // A different half of the instructions per configuration (splitmix64 bits).
                let chosen = selectors
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| {
                        let mut z = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (*j as u64);
                        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                        (z ^ (z >> 31)) & 1 == 0
                    })
                    .map(|(_, s)| mantissa_ptx::demote::Request::Selector(s.clone()))
                    .collect();
                let d = Demotion {
                    name: format!("half{seed}"),
                    math: Selection::Only(Vec::new()),
                    instructions: Selection::Only(chosen),
                    buffers: Vec::new(),
                };
                mantissa_ptx::demote::demote(&module, &d.demote_set())
                    .map(|r| r.module.to_string())
                    .unwrap_or_default()
            })
            .collect()
    };
    println!("| threads | configurations | wall (s) | per second |");
    println!("|---:|---:|---:|---:|");
    for (threads, from, count) in [(1usize, 0u64, 4u64), (threads, 100, 4 * threads as u64)] {
        let ptx = texts(from, count);
        let items: Vec<(&str, &str)> = ptx.iter().map(|p| ("bench", p.as_str())).collect();
        let t = Instant::now();
        let results = gpu.jit_many(&items, threads);
        let wall = t.elapsed().as_secs_f64();
        let failed = results.iter().filter(|r| r.is_err()).count();
        println!(
            "| {threads} | {count}{} | {wall:.2} | {:.2} |",
            if failed > 0 {
                format!(" ({failed} failed)")
            } else {
                String::new()
            },
            count as f64 / wall
        );
        if threads > 1 {
            let t = Instant::now();
            gpu.jit_many(&items, threads);
            let again = t.elapsed().as_secs_f64();
            println!(
                "| {threads} (cached) | {count} | {again:.3} | {:.0} |",
                count as f64 / again
            );
        }
    }

    println!("\n4. accuracy-only trials: switched build vs static rewrite (median of 21)\n");
    println!("| program | switches | program GPU time (ms) | switched trial (ms) | static trial, loaded (ms) | first static trial, with JIT (ms) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for spec in &specs {
        match switched_vs_static(&gpu, spec) {
            Ok(r) => println!(
                "| {} | {} | {:.3} | {:.3} | {:.3} | {:.1} |",
                spec.name, r.switches, r.program, r.switched, r.static_loaded, r.static_first
            ),
            Err(e) => println!("| {} | failed: {e} | | | | |", spec.name),
        }
    }
    std::fs::remove_dir_all(&cache).ok();
    Ok(())
}

/// Table 4's row of one program.
struct SwitchRow {
    switches: usize,
    program: f64,
    switched: f64,
    static_loaded: f64,
    static_first: f64,
}

fn median_wall(
    runner: &mut TrialRunner,
    c: &Configuration,
    want: BuildKind,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut walls = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let outcome = runner.trial(c, TrialTiming::AccuracyOnly)?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
        if outcome.build != want {
            return Err(format!("ran on a {:?} build: {:?}", outcome.build, outcome.notes).into());
        }
    }
    Ok(median(walls))
}

fn switched_vs_static(gpu: &Gpu, spec: &Spec) -> Result<SwitchRow, Box<dyn std::error::Error>> {
    let opts = RunnerOptions {
        wait_after_each_launch: false,
        baseline_timing: TrialTiming::AccuracyOnly,
        ..RunnerOptions::default()
    };
    let mut switched = TrialRunner::new(gpu, spec, mantissa_gpu::FlagSet::DEFAULT, opts.clone())?;
    let program = switched
        .trial(
            &Configuration::AsWritten,
            TrialTiming::Timed {
                warmup: 3,
                repeats: 21,
            },
        )?
        .timing
        .map_or(0.0, |t| t.median_ms);
    switched.enable_switching(&Configuration::Demote(Demotion::all()))?;
    let report = switched.switch_report().ok_or("no switched build")?.clone();
    // Every switch on: representable by construction (whole switches, no math calls).
    let c = Configuration::Demote(Demotion {
        name: "every-switch".into(),
        math: Selection::Only(Vec::new()),
        instructions: Selection::Only(
            report
                .switches
                .iter()
                .flat_map(|s| s.members.iter())
                .map(|m| mantissa_ptx::demote::Request::Site(m.site.clone()))
                .collect(),
        ),
        buffers: Vec::new(),
    });
    let switched_ms = median_wall(&mut switched, &c, BuildKind::Switched)?;
    let mut plain = TrialRunner::new(
        gpu,
        spec,
        mantissa_gpu::FlagSet::DEFAULT,
        RunnerOptions {
            shared: Some(switched.shared()),
            ..opts
        },
    )?;
    let t = Instant::now();
    plain.trial(&c, TrialTiming::AccuracyOnly)?;
    let static_first = t.elapsed().as_secs_f64() * 1e3;
    let static_loaded = median_wall(&mut plain, &c, BuildKind::Static)?;
    Ok(SwitchRow {
        switches: report.switches.len(),
        program,
        switched: switched_ms,
        static_loaded,
        static_first,
    })
}
