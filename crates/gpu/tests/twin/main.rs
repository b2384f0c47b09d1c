//! The CUDA twin (`cuda/mantissa.cuh`) against mantissa-num, bit for bit.
//!
//! `gpu_twin_is_bit_identical_to_mantissa_num` (needs a GPU; skips without one, fails under
//! `MANTISSA_REQUIRE_GPU=1`) runs every operation of the header ([`TwinOp::all`]: 40 per word
//! size) on 2^20 seeded inputs spread over eight magnitude classes (`inputs.rs`), once on the CPU
//! with mantissa-num and once per flag set of [`FlagSet::ALL`] on the GPU, through the
//! element-wise kernels of [`twin::elementwise`], and compares the **bit patterns** of both result
//! words. The one allowance: a NaN word matches any NaN word (sign and payload of NaNs are not
//! compared: x86 and the GPU make different default NaNs, and mantissa-num specifies none). Zeros
//! must agree in sign.
//!
//! Expected results: the IEEE Rust code for every f64-based op under every flag set and for every
//! f32-based op under `default`, `strict`, `nofma`, `approx-div` and `approx-sqrt`. Under `fast`
//! and `ftz`, which flush f32 subnormals (`--ftz=true`), the f32-based ops (f32 EFTs, f32x2,
//! comp32, comp32n) are compared with mantissa-num itself (no flushing) and with the same
//! mantissa-num code run over [`ftz::Ftz32`], a base format whose arithmetic and comparisons flush
//! exactly as the `.ftz.f32` PTX instructions are documented to do; every result must equal one
//! of them and each run must keep to one behaviour. (On an H200 with NVRTC 13.0 every run under
//! `fast` and `ftz` came out unflushed: bit-identical to mantissa-num, like `default`.)
//! Bit-identity is still asserted for every input. The PTX ISA does not say whether `.ftz` judges
//! a result subnormal before or after rounding (they differ only for results that round up to
//! ±2^-126), so the model comes in both conventions; each GPU result must equal one of them, and
//! all results must keep to the same one (the test names it). It also prints, per op and input
//! class, how many results ftz changes and how many computations it touches at all, and checks
//! that the model departs from IEEE only where it flushed something.
//!
//! Without a GPU, two other parts still run: `ptx.rs` (NVRTC only) checks the PTX that makes
//! bit-identity possible under every flag set, and `host.rs` (a host C++17 compiler only) runs the
//! same kernel source on the CPU with IEEE stand-ins for the CUDA intrinsics, which checks the
//! header's translation of every algorithm against mantissa-num on the same inputs.

mod cpu;
mod ftz;
mod host;
mod inputs;
mod ptx;

use cpu::{cpu_fn, eval, Model, Word};
use ftz::{FtzAfter, FtzBefore};
use inputs::{class_of, describe, generate, word_hex, Domain, Gen, Inputs, CLASSES, N, SEED};
use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::twin::{self, TwinOp};
use mantissa_gpu::{DeviceBuffer, FlagSet, Gpu, KernelArg, LaunchDims, Module};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

/// Shows a line in the test output even when the harness captures `println!`.
pub(crate) fn show(line: impl AsRef<str>) {
    let _ = writeln!(std::io::stderr(), "{}", line.as_ref());
}

/// Bit-identical words, or two NaNs.
fn same<W: Word>(x: W, y: W) -> bool {
    (x.is_nan_word() && y.is_nan_word()) || x.to_bits_u64() == y.to_bits_u64()
}

/// The op under ftz, per tininess convention: results, and whether anything flushed per element.
struct FtzReference<W> {
    after: Vec<W>,
    flushed: Vec<bool>,
    before: Vec<W>,
}

/// A word size with its references: IEEE mantissa-num, and for f32 the flush-to-zero models.
trait Family: Gen + Model<Self> {
    /// The op computed over [`ftz::Ftz32`]; `None` where ftz changes nothing (f64).
    fn ftz_reference(op: &TwinOp, inputs: &Inputs<Self>) -> Option<FtzReference<Self>>;
}

impl Family for f32 {
    fn ftz_reference(op: &TwinOp, inp: &Inputs<f32>) -> Option<FtzReference<f32>> {
        let (after, flushed) = eval::<f32, FtzAfter>(cpu_fn(op)?, &inp.a, &inp.b, &inp.k);
        let (before, _) = eval::<f32, FtzBefore>(cpu_fn(op)?, &inp.a, &inp.b, &inp.k);
        Some(FtzReference {
            after,
            flushed,
            before,
        })
    }
}

impl Family for f64 {
    fn ftz_reference(_: &TwinOp, _: &Inputs<f64>) -> Option<FtzReference<f64>> {
        None
    }
}

/// Whether element `i` of two result vectors agrees in both words.
fn same_pair<W: Word>(x: &[W], y: &[W], i: usize) -> bool {
    same(x[2 * i], y[2 * i]) && same(x[2 * i + 1], y[2 * i + 1])
}

/// Indices of elements whose two result words differ.
fn differing<W: Word>(x: &[W], y: &[W]) -> Vec<usize> {
    (0..x.len() / 2).filter(|&i| !same_pair(x, y, i)).collect()
}

/// Element `i`'s two words in hex.
fn hex<W: Word>(x: &[W], i: usize) -> String {
    format!("({}, {})", word_hex(x[2 * i]), word_hex(x[2 * i + 1]))
}

/// Counts per input class, as `class n, ...` (classes with none left out).
fn by_class(indices: impl Iterator<Item = usize>) -> String {
    let mut counts = [0usize; CLASSES.len()];
    for i in indices {
        counts[class_of(i)] += 1;
    }
    let parts: Vec<String> = CLASSES
        .iter()
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// What a run found: failures, what ftz changes, and which tininess convention the GPU showed.
#[derive(Default)]
struct Findings {
    failures: Vec<String>,
    ftz_changes: Vec<String>,
    ftz_unchanged: Vec<String>,
    compared: usize,
    /// GPU results under ftz that only the after-rounding model gives, and only the before one:
    /// how many, and the first.
    only_after: Tally,
    only_before: Tally,
    /// Runs under a flushing flag set whose results all equal IEEE where the models differ, all
    /// equal a flush model where it differs from IEEE, or never tell the two apart.
    ftz_unflushed_runs: usize,
    ftz_flushed_runs: usize,
    ftz_indistinct_runs: usize,
}

#[derive(Default)]
struct Tally {
    count: usize,
    first: Option<String>,
}

impl Tally {
    fn add(&mut self, example: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(example());
        }
    }
}

struct DeviceInputs<W> {
    host: Inputs<W>,
    a: DeviceBuffer,
    b: DeviceBuffer,
    k: DeviceBuffer,
}

fn upload<W: Family>(gpu: &Gpu, domain: Domain) -> DeviceInputs<W> {
    let host = generate::<W>(domain);
    let up = |name: &str, data| gpu.upload(name, &data).unwrap_or_else(|e| panic!("{e}"));
    DeviceInputs {
        a: up("a", W::to_host(host.a.clone())),
        b: up("b", W::to_host(host.b.clone())),
        k: up("k", mantissa_gpu::HostData::I32(host.k.clone())),
        host,
    }
}

/// Records what the ftz models say about one op: where flushing changes the result, and that it
/// changes nothing where nothing was flushed.
fn note_ftz<W: Family>(
    op: &TwinOp,
    inp: &Inputs<W>,
    ieee: &[W],
    r: &FtzReference<W>,
    found: &mut Findings,
) {
    let label = op.label();
    let changed = differing(ieee, &r.after);
    let touched = (0..N).filter(|&i| r.flushed[i]);
    if let Some(&i) = changed.iter().find(|&&i| !r.flushed[i]) {
        found.failures.push(format!(
            "{label}: the ftz model differs from IEEE without flushing anything, e.g. {}: IEEE {} model {}",
            describe(op.shape, inp, i),
            hex(ieee, i),
            hex(&r.after, i)
        ));
    }
    let tininess = differing(&r.after, &r.before).len();
    if changed.is_empty() {
        found
            .ftz_unchanged
            .push(format!("{label} (touched: {})", by_class(touched)));
    } else {
        found.ftz_changes.push(format!(
            "{label}: {} changed ({}); touched: {}; tininess-sensitive: {tininess}",
            changed.len(),
            by_class(changed.iter().copied()),
            by_class(touched)
        ));
    }
}

/// Every op of word size `W` under every flag set of `modules`.
fn run_family<W: Family>(gpu: &Gpu, modules: &[(FlagSet, Module)], found: &mut Findings) {
    let ops: Vec<TwinOp> = TwinOp::all()
        .into_iter()
        .filter(|o| o.ty.word() == W::dtype())
        .collect();
    // A finite pattern no op returns for a whole buffer: a kernel that wrote nothing shows up.
    let sentinel = W::from_bits_u64(0x7f7f_7f7f_7f7f_7f7f >> (64 - W::BITS));
    let fill = gpu
        .upload("sentinel", &W::to_host(vec![sentinel; 2 * N]))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = gpu
        .alloc_zeros("out", W::dtype(), 2 * N)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut domains: BTreeMap<Domain, DeviceInputs<W>> = BTreeMap::new();
    let any_ftz = modules.iter().any(|&(f, _)| f.flushes_f32_subnormals());
    for op in &ops {
        let label = op.label();
        let domain = Domain::for_op(op);
        let inp = domains
            .entry(domain)
            .or_insert_with(|| upload::<W>(gpu, domain));
        let Some(f) = cpu_fn::<W>(op) else {
            found
                .failures
                .push(format!("{label}: no CPU function to compare with"));
            continue;
        };
        let (ieee, _) = eval::<W, W>(f, &inp.host.a, &inp.host.b, &inp.host.k);
        let model = if any_ftz {
            W::ftz_reference(op, &inp.host)
        } else {
            None
        };
        if let Some(r) = &model {
            note_ftz(op, &inp.host, &ieee, r, found);
        }
        for (flags, module) in modules {
            gpu.copy(&fill, &mut out).unwrap_or_else(|e| panic!("{e}"));
            let args = [
                KernelArg::from(&out),
                KernelArg::from(&inp.a),
                KernelArg::from(&inp.b),
                KernelArg::from(&inp.k),
                KernelArg::from(N as i32),
            ];
            gpu.launch(
                module,
                &op.kernel_name(),
                LaunchDims::linear(N as u64, 256),
                &args,
            )
            .unwrap_or_else(|e| panic!("{flags} {label}: {e}"));
            let got = W::from_host(gpu.download(&out).unwrap_or_else(|e| panic!("{e}")))
                .expect("the output buffer keeps its type");
            found.compared += 1;
            let example = |i: usize, expected: &[W]| {
                format!(
                    "[{i}, {}] {} -> CPU {} GPU {}",
                    CLASSES[class_of(i)],
                    describe(op.shape, &inp.host, i),
                    hex(expected, i),
                    hex(&got, i)
                )
            };
            let (bad, expected, what) = match (&model, flags.flushes_f32_subnormals()) {
                (Some(r), true) => {
                    // The GPU may flush (either tininess convention) or, as the H200 with NVRTC
                    // 13.0 did, compute these `_rn` intrinsics without flushing at all. Each run
                    // must keep to one behaviour; which one is reported.
                    let mut bad = Vec::new();
                    let (mut unflushed, mut flushed) = (Tally::default(), Tally::default());
                    for i in 0..N {
                        let ieee_ok = same_pair(&got, &ieee, i);
                        let after = same_pair(&got, &r.after, i);
                        let before = same_pair(&got, &r.before, i);
                        match (ieee_ok, after || before) {
                            (false, false) => bad.push(i),
                            (true, false) => unflushed.add(|| example(i, &ieee)),
                            (false, true) => {
                                flushed.add(|| example(i, &r.after));
                                match (after, before) {
                                    (true, false) => found.only_after.add(|| {
                                        format!("{flags} {label} {}", example(i, &r.after))
                                    }),
                                    (false, true) => found.only_before.add(|| {
                                        format!("{flags} {label} {}", example(i, &r.before))
                                    }),
                                    _ => {}
                                }
                            }
                            (true, true) => {}
                        }
                    }
                    match (&unflushed.first, &flushed.first) {
                        (Some(u), Some(f)) => found.failures.push(format!(
                            "{flags} {label}: mixes unflushed results ({}, e.g. {u}) with flushed ones ({}, e.g. {f})",
                            unflushed.count, flushed.count
                        )),
                        (Some(_), None) => found.ftz_unflushed_runs += 1,
                        (None, Some(_)) => found.ftz_flushed_runs += 1,
                        (None, None) => found.ftz_indistinct_runs += 1,
                    }
                    (
                        bad,
                        &r.after,
                        "both mantissa-num and mantissa-num over the ftz model",
                    )
                }
                _ => (differing(&got, &ieee), &ieee, "mantissa-num"),
            };
            if !bad.is_empty() {
                let examples: Vec<String> =
                    bad.iter().take(3).map(|&i| example(i, expected)).collect();
                found.failures.push(format!(
                    "{flags} {label}: {} of {N} results differ from {what} ({}); {}",
                    bad.len(),
                    by_class(bad.iter().copied()),
                    examples.join("; ")
                ));
            }
        }
    }
}

#[test]
fn gpu_twin_is_bit_identical_to_mantissa_num() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let start = Instant::now();
    let src = twin::elementwise(&TwinOp::all());
    let modules: Vec<(FlagSet, Module)> = FlagSet::ALL
        .iter()
        .map(|&f| (f, gpu.build(&src, f).unwrap_or_else(|e| panic!("{f}: {e}"))))
        .collect();
    show(format!(
        "twin: {} kernels compiled under {} flag sets in {:.1} s",
        TwinOp::all().len(),
        modules.len(),
        start.elapsed().as_secs_f64()
    ));
    let mut found = Findings::default();
    let t = Instant::now();
    run_family::<f32>(&gpu, &modules, &mut found);
    show(format!(
        "twin: f32-based ops done in {:.1} s",
        t.elapsed().as_secs_f64()
    ));
    let t = Instant::now();
    run_family::<f64>(&gpu, &modules, &mut found);
    show(format!(
        "twin: f64-based ops done in {:.1} s",
        t.elapsed().as_secs_f64()
    ));

    show(format!(
        "twin: {} (op, flag set) runs of {N} inputs each (seed {SEED:#x}; {} per class: {}), \
         {} failed, {:.1} s in all",
        found.compared,
        N / CLASSES.len(),
        CLASSES.join(", "),
        found.failures.len(),
        start.elapsed().as_secs_f64()
    ));
    show("twin: f32-based results that ftz (fast, ftz) changes, which the GPU must reproduce:");
    for line in &found.ftz_changes {
        show(format!("  {line}"));
    }
    show(format!(
        "twin: f32-based ops whose results ftz never changes here: {}",
        found.ftz_unchanged.join("; ")
    ));
    let (after, before) = (&found.only_after, &found.only_before);
    let convention = match (after.count, before.count) {
        (0, 0) => "not distinguished by these inputs".to_string(),
        (a, 0) => format!("after rounding ({a} results tell)"),
        (0, b) => format!("before rounding ({b} results tell)"),
        (a, b) => format!("MIXED: {a} results after rounding, {b} before"),
    };
    show(format!(
        "twin: under fast/ftz, f32-based runs whose results are unflushed (IEEE): {}, flushed: {}, not told apart: {}",
        found.ftz_unflushed_runs, found.ftz_flushed_runs, found.ftz_indistinct_runs
    ));
    show(format!(
        "twin: where the GPU flushed, its ftz judges tininess {convention}"
    ));
    if let (Some(a), Some(b)) = (&after.first, &before.first) {
        found.failures.push(format!(
            "ftz tininess is not one convention: after rounding e.g. {a}; before rounding e.g. {b}"
        ));
    }
    assert!(
        found.failures.is_empty(),
        "{} failures:\n{}",
        found.failures.len(),
        found.failures.join("\n")
    );
}

/// Without a GPU: the CPU table covers every op of the header, for every base format.
#[test]
fn every_twin_op_has_a_cpu_function() {
    for op in TwinOp::all() {
        let ok = match op.ty.word() {
            mantissa_gpu::DType::F32 => {
                cpu_fn::<f32>(&op).is_some() && cpu_fn::<FtzAfter>(&op).is_some()
            }
            _ => cpu_fn::<f64>(&op).is_some(),
        };
        assert!(ok, "{}", op.label());
    }
}

/// Without a GPU: on a sample of the inputs, the ftz model equals IEEE wherever it flushed nothing
/// (what the GPU test relies on when it reports which results ftz changes).
#[test]
fn ftz_model_departs_from_ieee_only_where_it_flushes() {
    for op in TwinOp::all()
        .iter()
        .filter(|o| o.ty.word() == mantissa_gpu::DType::F32)
    {
        let full = generate::<f32>(Domain::for_op(op));
        // Every 64th element: 16384, all classes.
        let pick = |v: &[f32]| -> Vec<f32> {
            (0..N)
                .step_by(64)
                .flat_map(|i| [v[2 * i], v[2 * i + 1]])
                .collect()
        };
        let k: Vec<i32> = (0..N).step_by(64).map(|i| full.k[i]).collect();
        let (a, b) = (pick(&full.a), pick(&full.b));
        let (ieee, _) = eval::<f32, f32>(cpu_fn(op).unwrap(), &a, &b, &k);
        for (model, flushed) in [
            eval::<f32, FtzAfter>(cpu_fn(op).unwrap(), &a, &b, &k),
            eval::<f32, FtzBefore>(cpu_fn(op).unwrap(), &a, &b, &k),
        ] {
            for i in differing(&ieee, &model) {
                assert!(flushed[i], "{} element {i}", op.label());
            }
        }
    }
}
