//! Times the IR pipeline on modules of about 50,000 instructions: parse, decode, control-flow
//! and def-use graphs of every function, then the demotion pass (demote all) and printing.
//! Run: `cargo bench -p mantissa-ptx --bench ir -- --quick`.
//!
//! The modules are generated, not committed:
//! - `ten_kernels`: the NVRTC kernel of tests/fixtures/units/bench.cu (5,423 instructions, a
//!   loop of f64 arithmetic unrolled 360 times) ten times over, each copy renamed: 54,230
//!   instructions of real compiler output in one module;
//! - `one_kernel`: bench.cu's loop body written out 3,600 times (the generator below), built by
//!   NVRTC now (skipped without NVRTC): about 54,000 instructions in one function, the worst
//!   case for the per-function analyses.
//!
//! The machine these run on is shared, so criterion's wall-clock times include waiting for a
//! core. The bench also prints the CPU time of the whole pipeline per run, from the thread's
//! own scheduler statistics (`/proc/thread-self/schedstat`), which waiting does not inflate.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use mantissa_ptx::cfg::Cfg;
use mantissa_ptx::decode::Decoded;
use mantissa_ptx::demote::{demote, DemoteSet};
use mantissa_ptx::graph::Graph;

const KERNEL: &str = include_str!("../tests/fixtures/units/bench.nvrtc.ptx");

/// The fixture's header, then its `.entry bench` `copies` times as `bench_0`, `bench_1`, ...,
/// then its `.file` and debug sections once.
fn ten_kernels(copies: usize) -> String {
    let start = KERNEL.find(".visible .entry bench(").unwrap_or(0);
    // The kernel ends at the first line that is a lone closing brace.
    let end = KERNEL[start..]
        .find("\n}\n")
        .map_or(KERNEL.len(), |k| start + k + 3);
    let kernel = &KERNEL[start..end];
    let mut out = String::from(&KERNEL[..start]);
    for i in 0..copies {
        out.push_str(
            &kernel
                .replace(".entry bench(", &format!(".entry bench_{i}("))
                .replace("bench_param_", &format!("bench_{i}_param_")),
        );
        out.push('\n');
    }
    out.push_str(&KERNEL[end..]);
    out
}

/// bench.cu's kernel with its loop body written out `steps` times (`k` replaced by each value),
/// compiled by NVRTC for sm_90 with line info.
fn one_kernel(steps: usize) -> Option<String> {
    use mantissa_gpu::{Arch, CompileCache, Compiler, FlagSet, Source, Target};
    let nvrtc = Compiler::probe_with_cache(CompileCache::in_memory()).ok()?;
    let mut text = String::from(
        "extern \"C\" __global__ void bench(const double* in, double* out, int n) {\n\
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         if (i >= n) return;\n\
         double a = in[i], b = in[i + n], c = 1.0;\n",
    );
    for k in 0..steps {
        text.push_str(&format!(
            "{{ double t = a * b + c; c = t / (a + {k}) - b * 0.5; a = fma(a, 1.0001, t * 1e-3); \
             b = b > c ? b - c : c - b; c = c * c - a * 0.25 + (double)({k} & 7); }}\n"
        ));
    }
    text.push_str("out[i] = a + b + c;\n}\n");
    let c = nvrtc
        .compile(
            &Source::new("bench_unrolled.cu", &text),
            FlagSet::DEFAULT,
            Target::Ptx(Arch::new(9, 0)),
        )
        .ok()?;
    Some(c.ptx.clone())
}

/// CPU time this thread has run, in nanoseconds (`None` where /proc does not say).
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Parse, decode, CFG and def-use graph of every function, demote(all): the instructions
/// demoted, so the work cannot be optimised away.
fn pipeline(ptx: &str) -> u32 {
    let m = mantissa_ptx::parse(ptx).module;
    let mut edges = 0;
    for f in m.functions().filter(|f| f.body.is_some()) {
        let d = Decoded::of(f);
        let cfg = Cfg::build(&d);
        edges += Graph::of(&d, &cfg).edges.len();
    }
    let demoted = demote(&m, &DemoteSet::all()).map_or(0, |d| d.report.demoted());
    demoted + u32::from(edges == 0)
}

fn instructions(ptx: &str) -> usize {
    mantissa_ptx::parse(ptx)
        .module
        .functions()
        .map(|f| f.instructions().count())
        .sum()
}

fn bench(c: &mut Criterion) {
    let mut modules = vec![("ten_kernels", ten_kernels(10))];
    if let Some(p) = one_kernel(3600) {
        modules.push(("one_kernel", p));
    }
    for (name, ptx) in &modules {
        let n = instructions(ptx);
        if let Some(start) = cpu_ns() {
            let runs = 20;
            for _ in 0..runs {
                black_box(pipeline(black_box(ptx)));
            }
            if let Some(end) = cpu_ns() {
                println!(
                    "{name}: {n} instructions: parse + decode + cfg + graph + demote(all): \
                     {:.1} ms of CPU time per run (mean of {runs})",
                    (end - start) as f64 / runs as f64 / 1e6
                );
            }
        }
        c.bench_function(
            &format!("{name}: parse + decode + cfg + graph + demote(all), {n} instructions"),
            |b| b.iter(|| pipeline(black_box(ptx))),
        );
        // The stages apart, to see where the time goes.
        c.bench_function(&format!("{name}: parse"), |b| {
            b.iter(|| mantissa_ptx::parse(black_box(ptx)).module.items.len())
        });
        let m = mantissa_ptx::parse(ptx).module;
        c.bench_function(&format!("{name}: decode + cfg + graph"), |b| {
            b.iter(|| {
                m.functions()
                    .filter(|f| f.body.is_some())
                    .map(|f| {
                        let d = Decoded::of(f);
                        let cfg = Cfg::build(&d);
                        Graph::of(&d, &cfg).edges.len()
                    })
                    .sum::<usize>()
            })
        });
        c.bench_function(&format!("{name}: demote(all)"), |b| {
            b.iter(|| demote(black_box(&m), &DemoteSet::all()).map(|d| d.report.demoted()))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
