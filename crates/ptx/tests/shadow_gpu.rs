//! GPU tests of the shadow pass (skip without a GPU; fail under `MANTISSA_REQUIRE_GPU=1`): the
//! known kernels (`fixtures/shadow/known.cu`, through NVRTC) and the guarded, self-overwriting
//! profile kernel (`fixtures/count/profile.ptx`) are instrumented, merged with the runtime,
//! loaded and launched, and
//! - compute the same bits as the kernels as written;
//! - give, per site, exactly the counts and maxima the CPU oracle computes from the original
//!   kernel in the interpreter (`oracle::expected`), and sums within the bound of summation order;
//! - report the seeded exceptions on exactly their lines, and none on clean kernels;
//! - instrumented with shadow values, give the same statistics whether the sites outside loops
//!   add to the global at once (`_once` forms, warp-combined) or count into thread records
//!   (the form the interpreter tests check against hand-worked values).

#[path = "support/shadow_known.rs"]
mod known;

use known::{Case, Param};
#[path = "support/stats_agree.rs"]
mod agree;
#[path = "support/shadow_check.rs"]
mod check;
#[path = "support/modules.rs"]
mod modules;

use check::{
    check_each_analysis_alone, check_guarded_kernel, check_known_kernels,
    check_values_once_as_records,
};
use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{runtime, DType, FlagSet, Gpu, HostData, KernelArg, LaunchDims, Source, Target};
use mantissa_ptx::interp::{self, Launch, Memory};
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::pass::shadow::{
    instrument, oracle, ErrorStats, ExceptionCounts, ShadowOptions, ShadowReport, SiteStats,
};
use mantissa_ptx::pass::shadow_values::{self, ValueStats};
use mantissa_ptx::Module;
use modules::{parse_clean, target_arch};

/// Launches `case` on `module` and returns every output array as bits (f64 as u64, f32 as u32).
fn launch(gpu: &Gpu, module: &mantissa_gpu::Module, case: &Case) -> Vec<Vec<u64>> {
    let mut buffers = Vec::new();
    for p in &case.params {
        let b = match p {
            Param::F64s(v) => Some(gpu.upload("in", &HostData::from(v.clone()))),
            Param::F32s(v) => Some(gpu.upload("in", &HostData::from(v.clone()))),
            Param::OutF64(n) => Some(gpu.alloc_zeros("out", DType::F64, *n)),
            Param::OutF32(n) => Some(gpu.alloc_zeros("out", DType::F32, *n)),
            Param::Int(_) => None,
        };
        buffers.push(b.map(|r| r.unwrap_or_else(|e| panic!("{e}"))));
    }
    let args: Vec<KernelArg> = case
        .params
        .iter()
        .zip(&buffers)
        .map(|(p, b)| match (p, b) {
            (Param::Int(k), _) => KernelArg::from(*k),
            (_, Some(b)) => KernelArg::from(b),
            _ => unreachable!("every array has a buffer"),
        })
        .collect();
    gpu.launch_sync(
        module,
        case.kernel,
        LaunchDims::new((case.blocks, 1, 1), (case.threads, 1, 1)),
        &args,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", case.kernel));
    case.params
        .iter()
        .zip(&buffers)
        .filter(|(p, _)| matches!(p, Param::OutF64(_) | Param::OutF32(_)))
        .map(|(_, b)| match b.as_ref().map(|b| gpu.download(b)) {
            Some(Ok(HostData::F64(v))) => v.iter().map(|x| x.to_bits()).collect(),
            Some(Ok(HostData::F32(v))) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            other => panic!("{}: download: {other:?}", case.kernel),
        })
        .collect()
}

/// The outputs of `case` on `m` as written.
fn as_written(gpu: &Gpu, what: &str, m: &Module, case: &Case) -> Vec<Vec<u64>> {
    let original = gpu
        .load_ptx(what, &m.to_string())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    launch(gpu, &original, case)
}

/// Launches `case` on the instrumented `loaded`, asserts it computes the bits `as_written`, and
/// returns the bytes of its statistics global `global`.
fn same_bits_then_read(
    gpu: &Gpu,
    what: &str,
    loaded: &mantissa_gpu::Module,
    case: &Case,
    as_written: &[Vec<u64>],
    global: &str,
) -> Vec<u8> {
    assert!(
        launch(gpu, loaded, case) == as_written,
        "{what}: the instrumented kernel computes other bits than the kernel as written"
    );
    gpu.read_symbol(loaded, global)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Runs `case` on `m` as written and instrumented; asserts identical outputs and returns the
/// report with the statistics read back.
fn run_instrumented(
    gpu: &Gpu,
    what: &str,
    m: &Module,
    case: &Case,
    options: &ShadowOptions,
) -> (ShadowReport, Vec<SiteStats>) {
    let as_written = as_written(gpu, what, m, case);
    let out = instrument(m, options).unwrap_or_else(|e| panic!("{what}: {e}"));
    let rt = runtime::compile(gpu.compiler(), &runtime::SHADOW, target_arch(m))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let ptx = merged.to_string();
    let loaded = gpu
        .load_ptx(what, &ptx)
        .unwrap_or_else(|e| panic!("{what}: {e}\n{ptx}"));
    let report = out.report;
    gpu.write_symbol(&loaded, &report.global, &vec![0u8; report.global_bytes()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let bytes = same_bits_then_read(gpu, what, &loaded, case, &as_written, &report.global);
    let stats = report
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (report, stats)
}

fn known_module(gpu: &Gpu, flags: FlagSet) -> Module {
    let source = Source::new(known::KNOWN_NAME, known::KNOWN);
    let compiled = gpu
        .compiler()
        .compile(&source, flags, Target::Ptx(gpu.arch()))
        .unwrap_or_else(|e| panic!("{e}"));
    parse_clean("known.cu", &compiled.ptx)
}

#[test]
fn known_kernels_agree_with_the_oracle_and_compute_the_same_bits() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    check_known_kernels(
        &|flags| known_module(&gpu, flags),
        &mut |what, m, case, options| run_instrumented(&gpu, what, m, case, options),
    );
}

#[test]
fn each_analysis_alone_and_a_subset_of_sites_agree_with_the_oracle() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let m = known_module(&gpu, FlagSet::DEFAULT);
    check_each_analysis_alone(
        &m,
        &[known::exceptions(2, 64)],
        &mut |what, m, case, options| run_instrumented(&gpu, what, m, case, options),
    );
}

#[test]
fn a_guarded_self_overwriting_kernel_agrees_with_the_oracle() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    check_guarded_kernel(&mut |what, m, case, options| {
        run_instrumented(&gpu, what, m, case, options)
    });
}

/// `case` on `m` instrumented with shadow values (thread records everywhere when
/// `records_everywhere`), run on the GPU with no registered buffer; asserts the outputs are the
/// kernel's as written and returns the statistics of the sites and re-seed points.
fn run_values(
    gpu: &Gpu,
    what: &str,
    m: &Module,
    case: &Case,
    records_everywhere: bool,
) -> (Vec<ValueStats>, Vec<ValueStats>) {
    let as_written = as_written(gpu, what, m, case);
    let out = shadow_values::instrument_with(m, records_everywhere)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let rt = runtime::compile(gpu.compiler(), &runtime::SHADOW_VALUES, target_arch(m))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let merged = merge_runtime(&out.module, &rt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let inlined = shadow_values::inline_runtime(&merged).unwrap_or_else(|e| panic!("{what}: {e}"));
    let loaded = gpu
        .load_ptx(what, &inlined.to_string())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let report = out.report;
    gpu.write_symbol(&loaded, &report.global, &vec![0u8; report.global_bytes()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let table = shadow_values::table_bytes(&[]).unwrap_or_else(|e| panic!("{e}"));
    gpu.write_symbol(&loaded, &report.table, &table)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let bytes = same_bits_then_read(gpu, what, &loaded, case, &as_written, &report.global);
    let stats = report
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    (stats.sites, stats.reseeds)
}

#[test]
fn shadow_values_outside_loops_add_at_once_what_thread_records_add() {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    check_values_once_as_records(
        &|flags| known_module(&gpu, flags),
        &[],
        &mut |what, m, case, records| run_values(&gpu, what, m, case, records),
    );
}
