//! The shadow pass's GPU checks without a GPU (needs NVRTC for the known kernels and the
//! runtime; skips without it, fails under `MANTISSA_REQUIRE_NVRTC=1`): the instrumented module,
//! merged with the runtime and with every runtime function inlined (the interpreter has no
//! calls), runs in the PTX interpreter — the runtime's warp reductions, atomics and flushes
//! included — and must
//! - compute the bits of the kernel as written;
//! - give, per site, exactly the counts and maxima the CPU oracle computes from the original
//!   kernel (`oracle::expected`), and sums within the bound of summation order;
//! - report the seeded exceptions on exactly their lines and nothing on clean kernels;
//! - instrumented with shadow values, give the same statistics whether the sites outside loops
//!   add to the global at once (the runtime's `_once` forms: ballots, shuffles, `redux.sync`)
//!   or count into thread records (the form the crate's own interpreter tests check against
//!   hand-worked values).
//!
//! So the straight-line sites' per-execution runtime functions, which the tests inside the crate
//! replace by their contract or avoid, are checked as the device runs them. The GPU test
//! (`shadow_gpu.rs`) makes the same checks on the hardware, whose warps schedule as they do.

#[path = "../support/stats_agree.rs"]
mod agree;
#[path = "../support/shadow_check.rs"]
mod check;
#[path = "../support/shadow_known.rs"]
mod known;
#[path = "../support/modules.rs"]
mod modules;

use check::{
    check_each_analysis_alone, check_guarded_kernel, check_known_kernels,
    check_values_once_as_records, interp_args,
};
use known::{Case, Param};
use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::{runtime, Compiler, FlagSet, Source, Target};
use mantissa_ptx::interp::{self, Launch, Memory};
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::pass::shadow::{
    instrument, oracle, ErrorStats, ExceptionCounts, ShadowOptions, ShadowReport, SiteStats,
};
use mantissa_ptx::pass::shadow_values::{self, ValueStats};
use mantissa_ptx::Module;
use modules::{parse_clean, target_arch};

/// `merged` with every called function inlined, so that the interpreter can run it.
fn without_calls(merged: &Module) -> Module {
    mantissa_ptx::pass::inline::inline_every_call(merged)
        .unwrap_or_else(|e| panic!("inlining the runtime: {e}"))
        .module
}

/// Runs `case` on `m` in the interpreter; its output arrays as bits, and the memory.
fn run_case(m: &Module, case: &Case) -> (Vec<Vec<u64>>, Memory) {
    run_case_in(m, case, Memory::new())
}

/// [`run_case`] in `mem` (module variables already written there keep their bytes).
fn run_case_in(m: &Module, case: &Case, mut mem: Memory) -> (Vec<Vec<u64>>, Memory) {
    let args = interp_args(&mut mem, case);
    let options = interp::Options {
        undefined_reads: Some(interp::UNDEFINED_BITS),
        ..interp::Options::default()
    };
    interp::run_with(
        m,
        case.kernel,
        Launch::linear(case.blocks, case.threads),
        &args,
        &mut mem,
        &options,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", case.kernel));
    let outputs = case
        .params
        .iter()
        .zip(&args)
        .filter_map(|(p, a)| {
            let at = u64::from_le_bytes(a.0.clone().try_into().ok()?);
            let bits: Vec<u64> = match p {
                Param::OutF64(n) => mem
                    .read_f64s(at, *n)
                    .ok()?
                    .iter()
                    .map(|x| x.to_bits())
                    .collect(),
                Param::OutF32(n) => mem
                    .read_f32s(at, *n)
                    .ok()?
                    .iter()
                    .map(|x| u64::from(x.to_bits()))
                    .collect(),
                _ => return None,
            };
            Some(bits)
        })
        .collect();
    (outputs, mem)
}

/// The bytes of module variable `global` after a run.
fn global_bytes(mem: &Memory, global: &str, bytes: usize, what: &str) -> Vec<u8> {
    let at = mem
        .placed(global)
        .unwrap_or_else(|| panic!("{what}: the run never placed {global}"));
    mem.read(at, bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .to_vec()
}

/// `case` on `m` as written and instrumented with `options`, both in the interpreter; asserts
/// identical outputs and returns the report with the statistics read back.
fn run_instrumented(
    nvrtc: &Compiler,
    what: &str,
    m: &Module,
    case: &Case,
    options: &ShadowOptions,
) -> (ShadowReport, Vec<SiteStats>) {
    let (as_written, _) = run_case(m, case);
    let out = instrument(m, options).unwrap_or_else(|e| panic!("{what}: {e}"));
    let rt = runtime::compile(nvrtc, &runtime::SHADOW, target_arch(m))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let runnable = without_calls(&merged);
    let (outputs, mem) = run_case(&runnable, case);
    assert!(
        outputs == as_written,
        "{what}: the instrumented kernel computes other bits than the kernel as written"
    );
    let report = out.report;
    let bytes = global_bytes(&mem, &report.global, report.global_bytes(), what);
    let stats = report
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (report, stats)
}

fn known_module(nvrtc: &Compiler, flags: FlagSet) -> Module {
    let source = Source::new(known::KNOWN_NAME, known::KNOWN);
    let compiled = nvrtc
        .compile(&source, flags, Target::Ptx(mantissa_gpu::Arch::new(9, 0)))
        .unwrap_or_else(|e| panic!("{e}"));
    parse_clean("known.cu", &compiled.ptx)
}

#[test]
fn known_kernels_agree_with_the_oracle_and_compute_the_same_bits() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    check_known_kernels(
        &|flags| known_module(&nvrtc, flags),
        &mut |what, m, case, options| run_instrumented(&nvrtc, what, m, case, options),
    );
}

#[test]
fn each_analysis_alone_and_a_subset_of_sites_agree_with_the_oracle() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    let m = known_module(&nvrtc, FlagSet::DEFAULT);
    // A partial last warp too: 2 blocks of 48 threads.
    let cases = [known::exceptions(2, 64), known::exceptions(2, 48)];
    check_each_analysis_alone(&m, &cases, &mut |what, m, case, options| {
        run_instrumented(&nvrtc, what, m, case, options)
    });
}

#[test]
fn a_guarded_self_overwriting_kernel_agrees_with_the_oracle() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    check_guarded_kernel(&mut |what, m, case, options| {
        run_instrumented(&nvrtc, what, m, case, options)
    });
}

/// `case` on `m` instrumented with shadow values (thread records everywhere when
/// `records_everywhere`), run in the interpreter with no registered buffer; asserts the outputs
/// are the kernel's as written and returns the statistics of the sites and re-seed points.
fn run_values(
    nvrtc: &Compiler,
    what: &str,
    m: &Module,
    case: &Case,
    records_everywhere: bool,
) -> (Vec<ValueStats>, Vec<ValueStats>) {
    let (as_written, _) = run_case(m, case);
    let out = shadow_values::instrument_with(m, records_everywhere)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let rt = runtime::compile(nvrtc, &runtime::SHADOW_VALUES, target_arch(m))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let runnable = without_calls(&merged);
    let report = out.report;
    let mut mem = Memory::new();
    let table = shadow_values::table_bytes(&[]).unwrap_or_else(|e| panic!("{e}"));
    let at = mem
        .symbol(&runnable, &report.table)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    mem.write(at, &table)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (outputs, mem) = run_case_in(&runnable, case, mem);
    assert!(
        outputs == as_written,
        "{what}: the instrumented kernel computes other bits than the kernel as written"
    );
    let bytes = global_bytes(&mem, &report.global, report.global_bytes(), what);
    let stats = report
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (stats.sites, stats.reseeds)
}

#[test]
fn shadow_values_outside_loops_add_at_once_what_thread_records_add() {
    let Some(nvrtc) = require_nvrtc_or_skip() else {
        return;
    };
    // A partial last warp too: the `_once` forms combine only the lanes that exist.
    check_values_once_as_records(
        &|flags| known_module(&nvrtc, flags),
        &[known::exceptions(2, 48)],
        &mut |what, m, case, records| run_values(&nvrtc, what, m, case, records),
    );
}
