//! The shipped examples, instrumented as `mantissa shadow` instruments them, run whole on
//! the CPU (needs NVRTC, and nvcc for the programs with `main()`; skips without them, fails
//! under `MANTISSA_REQUIRE_NVRTC=1`): every step of each spec (at small sizes, `--set`) in the
//! PTX interpreter (`mantissa_harness::interp_steps`), three times over the same inputs:
//! - the program as analysed (its contraction pinned, as `analyse` does), for the outputs;
//! - the CPU oracle (`oracle::expected`: the same launches, observed), for the demotion error
//!   and exceptions of every site, added over the launches;
//! - the demotion-and-exceptions build with the runtime merged and every runtime function
//!   inlined: its outputs must be the program's bit for bit, and its statistics the oracle's
//!   (counts and maxima exactly, sums within the bound of their order).
//!
//! The two options programs run approximate instructions the interpreter does not compute
//! as the hardware does; each test says which it leaves out and why.
//!
//! So the straight-line sites' runtime (options: 334 sites, warp reductions), the loop groups
//! (nbody, float_literal), shared memory (nbody) and statistics over many launches (gauss,
//! heat2d) are checked without a GPU. The shadow values' `_once` forms are checked against
//! thread records on the same programs.

#[path = "../../ptx/tests/support/stats_agree.rs"]
mod agree;

use agree::{assert_agree, assert_same_values};
use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::{runtime, Arch, Builder, FlagSet};
use mantissa_harness::data::materialize;
use mantissa_harness::interp_steps::run_steps;
use mantissa_harness::run::build_request;
use mantissa_harness::spec::SizeOverride;
use mantissa_harness::trial::pin::pin_contraction;
use mantissa_harness::validate::plan;
use mantissa_harness::Spec;
use mantissa_ptx::interp::{self, Memory};
use mantissa_ptx::link::merge_runtime;
use mantissa_ptx::pass::inline::inline_every_call;
use mantissa_ptx::pass::shadow::{
    instrument, oracle, ErrorStats, ShadowOptions, ShadowReport, SiteStats,
};
use mantissa_ptx::pass::shadow_values::{self, ValueStats};
use mantissa_ptx::Module;
use std::path::Path;
use std::sync::OnceLock;

/// The examples and the sizes the interpreter runs them at: the five f64 programs and their
/// f32 twins (exceptions and shadow values only: they have no f64 instruction to demote).
const EXAMPLES: [(&str, &[&str]); 10] = [
    (
        "float_literal/float_literal.toml",
        &["n=512", "iterations=2", "sweeps=4"],
    ),
    (
        "float_literal/float_literal_fixed.toml",
        &["n=512", "iterations=2", "sweeps=4"],
    ),
    ("gauss/gauss.toml", &["n=24"]),
    ("gauss/gauss_f32.toml", &["n=24"]),
    ("heat2d/heat2d.toml", &["nx=64", "ny=16", "steps=3"]),
    ("heat2d/heat2d_f32.toml", &["nx=64", "ny=16", "steps=3"]),
    ("nbody/nbody.toml", &["n=128", "steps=1"]),
    ("nbody/nbody_f32.toml", &["n=128", "steps=1"]),
    ("options/options.toml", &["n=128", "iterations=1"]),
    ("options/options_f32.toml", &["n=128", "iterations=1"]),
];

/// One example, built and planned.
struct Program {
    name: String,
    spec: Spec,
    inputs: mantissa_harness::data::Inputs,
    plan: mantissa_harness::validate::Plan,
    module: Module,
}

fn program(path: &str, sets: &[&str]) -> Program {
    let full = Path::new("../../examples/kernels").join(path);
    let overrides: Vec<SizeOverride> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let spec = Spec::load_with(&full, &overrides).unwrap_or_else(|e| panic!("{path}: {e}"));
    let inputs = materialize(&spec).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut request = build_request(&spec, FlagSet::DEFAULT, None).unwrap();
    request.arch = Some(Arch::new(9, 0));
    let built = Builder::new()
        .build(&request)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let lowered = built
        .compiled
        .as_ref()
        .map(|c| c.lowered_names.clone())
        .unwrap_or_default();
    let plan = plan(&spec, &built.ptx, &lowered, &inputs.symbols)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let parsed = mantissa_ptx::parse(&built.ptx).module;
    let module = pin_contraction(&parsed, Some(Arch::new(9, 0))).module;
    Program {
        name: spec.name.clone(),
        spec,
        inputs,
        plan,
        module,
    }
}

/// `m` with the runtime `rt` merged and every call inlined (the interpreter runs no calls).
fn runnable(m: &Module, rt: &str) -> Module {
    let merged = merge_runtime(m, rt).unwrap_or_else(|e| panic!("{e}"));
    inline_every_call(&merged)
        .unwrap_or_else(|e| panic!("inlining the runtime: {e}"))
        .module
}

/// `p`'s steps with every launch run on `m` (module variables written first, `table` too if
/// given); each output buffer's bytes, and the memory.
fn run_program(p: &Program, m: &Module, table: Option<(&str, &[u8])>) -> (Vec<Vec<u8>>, Memory) {
    let options = interp::Options {
        undefined_reads: Some(interp::UNDEFINED_BITS),
        steps: 1 << 32,
        ..interp::Options::default()
    };
    let mut launch = |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
        if let Some((name, bytes)) = table {
            let at = mem.symbol(m, name).map_err(|e| e.to_string())?;
            mem.write(at, bytes).map_err(|e| e.to_string())?;
        }
        interp::run_with(m, entry, l, args, mem, &options)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let run = run_steps(&p.spec, &p.plan, &p.inputs, m, &mut launch)
        .unwrap_or_else(|e| panic!("{}: {e}", p.name));
    let outputs = p
        .spec
        .outputs
        .iter()
        .map(|o| run.buffer_bytes(&o.buffer).expect("an output buffer"))
        .collect();
    (outputs, run.memory)
}

/// The oracle's statistics of every site of `p`, added over its launches.
fn oracle_of(p: &Program, options: &ShadowOptions, sites: usize) -> Vec<SiteStats> {
    let mut total = vec![SiteStats::default(); sites];
    let mut launch = |entry: &str, l: interp::Launch, args: &[interp::Arg], mem: &mut Memory| {
        let got =
            oracle::expected(&p.module, entry, l, args, mem, options).map_err(|e| e.to_string())?;
        for (t, g) in total.iter_mut().zip(got) {
            *t = t.added(&g);
        }
        Ok(())
    };
    run_steps(&p.spec, &p.plan, &p.inputs, &p.module, &mut launch)
        .unwrap_or_else(|e| panic!("{}: oracle: {e}", p.name));
    total
}

/// The bytes of module variable `name` in `mem` after a run.
fn global(mem: &Memory, name: &str, bytes: usize) -> Vec<u8> {
    let at = mem
        .placed(name)
        .unwrap_or_else(|| panic!("the run never placed {name}"));
    mem.read(at, bytes)
        .unwrap_or_else(|e| panic!("{e}"))
        .to_vec()
}

/// The runtime of `header` compiled once per process (every example's test merges it).
fn runtime_of(
    header: &'static runtime::RuntimeHeader,
    cell: &'static OnceLock<String>,
) -> &'static str {
    cell.get_or_init(|| {
        let nvrtc = require_nvrtc_or_skip().expect("NVRTC, found by the caller");
        runtime::compile(&nvrtc, header, Arch::new(9, 0)).unwrap()
    })
}

/// One example of [`EXAMPLES`] (by its spec's path) instrumented for demotion and exceptions:
/// its bits, and the oracle's statistics. The examples run as tests of their own so that the
/// test threads share them out (they took over three minutes in one test on two cores).
fn instrumented_computes_its_bits_and_the_oracles_statistics(path: &str) {
    if require_nvrtc_or_skip().is_none() {
        return;
    }
    static RT: OnceLock<String> = OnceLock::new();
    let rt = runtime_of(&runtime::SHADOW, &RT);
    let options = ShadowOptions::all();
    let (path, sets) = EXAMPLES
        .iter()
        .find(|(p, _)| *p == path)
        .expect("an example of EXAMPLES");
    let p = program(path, sets);
    let (as_written, _) = run_program(&p, &p.module, None);
    let out = instrument(&p.module, &options).unwrap_or_else(|e| panic!("{path}: {e}"));
    let m = runnable(&out.module, rt);
    let (outputs, mem) = run_program(&p, &m, None);
    assert!(
        outputs == as_written,
        "{path}: the instrumented program computes other bits than the program"
    );
    let report = out.report;
    let bytes = global(&mem, &report.global, report.global_bytes());
    let got = report.decode(&bytes).unwrap_or_else(|e| panic!("{e}"));
    let want = oracle_of(&p, &options, report.sites.len());
    assert_agree(path, &report, &got, &want);
    let measured = got
        .iter()
        .filter(|g| g.demotion.is_some_and(|d| d.count > 0))
        .count();
    let demotable = report.sites.iter().any(|s| s.demotion);
    assert!(measured > 0 || !demotable, "{path}: no site measured");
}

/// One example of [`EXAMPLES`] instrumented with shadow values: the statistics added at once
/// equal those added through thread records.
fn shadow_values_add_at_once_what_thread_records_add(path: &str) {
    if require_nvrtc_or_skip().is_none() {
        return;
    }
    static RT: OnceLock<String> = OnceLock::new();
    let rt = runtime_of(&runtime::SHADOW_VALUES, &RT);
    let table = shadow_values::table_bytes(&[]).unwrap();
    let (path, sets) = EXAMPLES
        .iter()
        .find(|(p, _)| *p == path)
        .expect("an example of EXAMPLES");
    let p = program(path, sets);
    let (as_written, _) = run_program(&p, &p.module, None);
    let mut stats = Vec::new();
    for records_everywhere in [false, true] {
        let out = shadow_values::instrument_with(&p.module, records_everywhere)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let m = runnable(&out.module, rt);
        let report = out.report;
        let (outputs, mem) = run_program(&p, &m, Some((&report.table, &table)));
        assert!(
            outputs == as_written,
            "{path}: the shadow-values build computes other bits than the program"
        );
        let bytes = global(&mem, &report.global, report.global_bytes());
        stats.push(report.decode(&bytes).unwrap_or_else(|e| panic!("{e}")));
    }
    assert_same_values(path, &stats[0].sites, &stats[1].sites);
    assert_same_values(path, &stats[0].reseeds, &stats[1].reseeds);
    assert!(
        stats[0].sites.iter().any(|s| s.local.count > 0),
        "{path}: no site measured"
    );
}

// The examples the demotion-and-exceptions build runs: all but options and options_f32.
// options' kernel runs `rcp.approx.ftz.f64`: the interpreter runs it by a model and does not
// model the f32 form the demotion error computes, and the oracle refuses it (the shadow-values
// tests below and the known kernels of crates/ptx/tests/it/shadow_interp.rs cover straight-line
// sites); options_f32's runs `ex2.approx.ftz.f32`, which the interpreter refuses.
#[test]
fn instrumented_float_literal() {
    instrumented_computes_its_bits_and_the_oracles_statistics("float_literal/float_literal.toml");
}

#[test]
fn instrumented_float_literal_fixed() {
    instrumented_computes_its_bits_and_the_oracles_statistics(
        "float_literal/float_literal_fixed.toml",
    );
}

#[test]
fn instrumented_gauss() {
    instrumented_computes_its_bits_and_the_oracles_statistics("gauss/gauss.toml");
}

#[test]
fn instrumented_gauss_f32() {
    instrumented_computes_its_bits_and_the_oracles_statistics("gauss/gauss_f32.toml");
}

#[test]
fn instrumented_heat2d() {
    instrumented_computes_its_bits_and_the_oracles_statistics("heat2d/heat2d.toml");
}

#[test]
fn instrumented_heat2d_f32() {
    instrumented_computes_its_bits_and_the_oracles_statistics("heat2d/heat2d_f32.toml");
}

#[test]
fn instrumented_nbody() {
    instrumented_computes_its_bits_and_the_oracles_statistics("nbody/nbody.toml");
}

#[test]
fn instrumented_nbody_f32() {
    instrumented_computes_its_bits_and_the_oracles_statistics("nbody/nbody_f32.toml");
}

// The examples the shadow-values builds run: all but options_f32, whose kernel runs
// `ex2.approx.ftz.f32` (its expf), which the interpreter refuses: the hardware's bits are not an
// IEEE rounding.
#[test]
fn shadow_values_float_literal() {
    shadow_values_add_at_once_what_thread_records_add("float_literal/float_literal.toml");
}

#[test]
fn shadow_values_float_literal_fixed() {
    shadow_values_add_at_once_what_thread_records_add("float_literal/float_literal_fixed.toml");
}

#[test]
fn shadow_values_gauss() {
    shadow_values_add_at_once_what_thread_records_add("gauss/gauss.toml");
}

#[test]
fn shadow_values_gauss_f32() {
    shadow_values_add_at_once_what_thread_records_add("gauss/gauss_f32.toml");
}

#[test]
fn shadow_values_heat2d() {
    shadow_values_add_at_once_what_thread_records_add("heat2d/heat2d.toml");
}

#[test]
fn shadow_values_heat2d_f32() {
    shadow_values_add_at_once_what_thread_records_add("heat2d/heat2d_f32.toml");
}

#[test]
fn shadow_values_nbody() {
    shadow_values_add_at_once_what_thread_records_add("nbody/nbody.toml");
}

#[test]
fn shadow_values_nbody_f32() {
    shadow_values_add_at_once_what_thread_records_add("nbody/nbody_f32.toml");
}

#[test]
fn shadow_values_options() {
    shadow_values_add_at_once_what_thread_records_add("options/options.toml");
}

/// Every example of [`EXAMPLES`] has its tests above (a new example needs its own).
#[test]
fn every_example_has_its_tests() {
    let this = include_str!("interp_examples.rs");
    for (path, _) in EXAMPLES {
        let demoted = !path.starts_with("options");
        let valued = !path.ends_with("options_f32.toml");
        let quoted = format!("(\"{path}\")");
        let wrapped = format!("(\n        \"{path}\",\n    )");
        let calls = this.matches(&quoted).count() + this.matches(&wrapped).count();
        assert_eq!(
            calls,
            usize::from(demoted) + usize::from(valued),
            "{path}: a test per build it runs in"
        );
    }
}
