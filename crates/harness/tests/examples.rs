//! GPU tests of the shipped examples (`examples/kernels/`; skip without a GPU; they need nvcc,
//! since every example is a whole program with `main()`):
//! - the program as written, under `strict` (no FMA contraction), against the CPU models of
//!   `examples/kernels/models.rs` fed the same inputs;
//! - the empty configuration (`--demote none`: marked build, PTX parsed, rewritten with nothing,
//!   printed and JIT-compiled) bit-identical to the program as written, under `default` and
//!   `strict`;
//! - `--demote all` against the program rewritten by hand in f32 (`<name>_f32.cu`; for
//!   `float_literal`, the fixed version), fed the f64 inputs rounded to f32: the rewrite must be
//!   as accurate as the hand-written f32 program, measured against the f64 baseline.
//!
//! Every figure is printed, so the test log of a GPU run shows what was measured.

#[path = "../../../examples/kernels/models.rs"]
mod models;

use mantissa_gpu::testing::require_gpu_or_skip;
use mantissa_gpu::{FlagSet, HostData};
use mantissa_harness::compare::compare;
use mantissa_harness::data::{materialize, to_f64, Inputs};
use mantissa_harness::exec::ExecOptions;
use mantissa_harness::spec::{lookup, Init};
use mantissa_harness::{npy, run_spec, Configuration, Demotion, RunRequest, Spec};
use std::path::{Path, PathBuf};

/// Tests run in the crate's directory (cargo, and the GPU machine's runner).
fn example(name: &str, file: &str) -> PathBuf {
    Path::new("../../examples/kernels").join(name).join(file)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mantissa-examples-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn size(spec: &Spec, name: &str) -> f64 {
    lookup(&spec.sizes, name)
        .unwrap_or_else(|| panic!("{}: no size {name}", spec.name))
        .as_f64()
}

fn buffer<'a>(inputs: &'a Inputs, name: &str) -> &'a HostData {
    &inputs.buffers.iter().find(|(n, _)| n == name).unwrap().1
}

fn f64s(data: &HostData) -> Vec<f64> {
    match data {
        HostData::F64(v) => v.clone(),
        other => panic!("expected f64 data, found {}", other.dtype()),
    }
}

fn f32s(data: &HostData) -> Vec<f32> {
    match data {
        HostData::F32(v) => v.clone(),
        other => panic!("expected f32 data, found {}", other.dtype()),
    }
}

fn symbol_f64(inputs: &Inputs, name: &str) -> Vec<f64> {
    let bytes = &inputs.symbols.iter().find(|(n, _)| n == name).unwrap().1;
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The output buffers of one run saved by `--save`.
fn saved(dir: &Path, flags: FlagSet, configuration: &str, buffer: &str) -> Vec<f64> {
    let sub = if flags == FlagSet::DEFAULT && configuration == "as-written" {
        dir.to_path_buf()
    } else {
        dir.join(format!("{}.{configuration}", flags.name()))
    };
    to_f64(&npy::read_any(&sub.join(format!("{buffer}.npy"))).unwrap())
}

/// max |a - b| / max |b|: a normwise relative difference, stable where elements are near zero.
fn normwise(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    if scale == 0.0 {
        diff
    } else {
        diff / scale
    }
}

fn request(save: &Path, configurations: Vec<Configuration>) -> RunRequest {
    RunRequest {
        flag_sets: vec![FlagSet::DEFAULT, FlagSet::STRICT],
        configurations,
        exec: ExecOptions {
            warmup: 0,
            repeats: 1,
        },
        save_dir: Some(save.to_path_buf()),
    }
}

/// The model's outputs (buffer name, f64 values) for an example's inputs.
type Model = fn(&Spec, &Inputs) -> Vec<(&'static str, Vec<f64>)>;

fn nbody_model(spec: &Spec, inputs: &Inputs) -> Vec<(&'static str, Vec<f64>)> {
    let b = |n: &str| f64s(buffer(inputs, n));
    let out = models::nbody(
        &b("px"),
        &b("py"),
        &b("pz"),
        &b("vx"),
        &b("vy"),
        &b("vz"),
        &b("m"),
        size(spec, "steps") as usize,
        size(spec, "dt"),
        size(spec, "eps2"),
    );
    vec![("px", out.px), ("py", out.py), ("pz", out.pz), ("e", out.e)]
}

fn heat2d_model(spec: &Spec, inputs: &Inputs) -> Vec<(&'static str, Vec<f64>)> {
    let coef: [f64; 5] = symbol_f64(inputs, "c_coef").try_into().unwrap();
    let wall: [f64; 4] = symbol_f64(inputs, "c_wall").try_into().unwrap();
    let u = models::heat2d(
        &f64s(buffer(inputs, "u")),
        size(spec, "nx") as usize,
        size(spec, "ny") as usize,
        size(spec, "steps") as usize,
        &coef,
        &wall,
    );
    vec![("u", u)]
}

fn options_model(spec: &Spec, inputs: &Inputs) -> Vec<(&'static str, Vec<f64>)> {
    let (call, put) = models::options(
        &f64s(buffer(inputs, "spot")),
        &f64s(buffer(inputs, "strike")),
        &f64s(buffer(inputs, "years")),
        size(spec, "r"),
        size(spec, "sigma"),
    );
    vec![("call", call), ("put", put)]
}

fn gauss_model(spec: &Spec, inputs: &Inputs) -> Vec<(&'static str, Vec<f64>)> {
    let out = models::gauss(
        &f64s(buffer(inputs, "a")),
        &f64s(buffer(inputs, "b")),
        size(spec, "n") as usize,
    );
    vec![("x", out.x), ("a", out.a), ("b", out.b)]
}

fn float_literal_model(spec: &Spec, inputs: &Inputs) -> Vec<(&'static str, Vec<f64>)> {
    let y = models::float_literal(
        &f32s(buffer(inputs, "x")),
        &f32s(buffer(inputs, "y")),
        size(spec, "a") as f32,
        size(spec, "sweeps") as usize,
        size(spec, "iterations") as usize,
    );
    vec![("y", y.into_iter().map(f64::from).collect())]
}

/// How close the program as written, under `strict`, must be to its model.
#[derive(Clone, Copy, Debug)]
enum Agreement {
    /// At most this many ulps per element: 0 where the model performs the kernel's correctly
    /// rounded operations in the same order.
    Ulps(f64),
    /// Normwise relative difference at most this: where CUDA's math functions (not correctly
    /// rounded, nor are the model's) are used and prices cancel.
    Normwise(f64),
}

/// Checks one example (see the module docs).
fn check(name: &str, twin: &str, model: Model, agreement: Agreement) {
    let Some(gpu) = require_gpu_or_skip() else {
        return;
    };
    let spec = Spec::load(&example(name, &format!("{name}.toml"))).unwrap();
    let inputs = materialize(&spec).unwrap();
    let dir = scratch(name);
    let result = run_spec(
        &gpu,
        &spec,
        &request(
            &dir.join("runs"),
            vec![
                Configuration::Demote(Demotion::none()),
                Configuration::Demote(Demotion::all()),
            ],
        ),
        &mut |_| {},
    )
    .unwrap();
    for run in &result.runs {
        eprintln!(
            "{name}: {} / {}: {}",
            run.configuration.name(),
            run.flags.name(),
            match &run.outcome {
                Ok(_) => run.notes.join("; "),
                Err(e) => panic!("{name} {} {}: {e}", run.configuration.name(), run.flags),
            }
        );
    }
    let runs = dir.join("runs");
    let buffers: Vec<&'static str> = model(&spec, &inputs).iter().map(|(b, _)| *b).collect();

    // The empty configuration changes nothing, bit for bit.
    for flags in [FlagSet::DEFAULT, FlagSet::STRICT] {
        for b in &buffers {
            let written = saved(&runs, flags, "as-written", b);
            let none = saved(&runs, flags, "none", b);
            let same = written
                .iter()
                .zip(&none)
                .filter(|(x, y)| x.to_bits() == y.to_bits())
                .count();
            assert_eq!(
                same,
                written.len(),
                "{name} {b} ({flags}): the empty configuration differs in {} of {} elements",
                written.len() - same,
                written.len()
            );
        }
    }

    // The program as written against its CPU model, under strict.
    for (b, expected) in model(&spec, &inputs) {
        let got = saved(&runs, FlagSet::STRICT, "as-written", b);
        let dtype = spec.buffer(b).unwrap().dtype;
        let c = compare(dtype, &got, &expected);
        eprintln!(
            "{name}: {b}: strict GPU vs CPU model: {} of {} differ, max {} ulps, max rel {:e}",
            c.differing, c.elements, c.max_ulps, c.max_rel
        );
        let ok = match agreement {
            Agreement::Ulps(u) => c.max_ulps <= u,
            Agreement::Normwise(r) => normwise(&got, &expected) <= r,
        };
        assert!(
            ok,
            "{name} {b}: GPU (strict) vs model: {} ulps, normwise {:e}; expected {agreement:?}",
            c.max_ulps,
            normwise(&got, &expected)
        );
    }

    // --demote all against the hand-written f32 program fed the same inputs rounded to f32.
    let mut twin = Spec::load(&example(name, twin)).unwrap();
    for b in &mut twin.buffers {
        let data = buffer(&inputs, &b.name);
        let rounded: Vec<f32> = to_f64(data).iter().map(|&v| v as f32).collect();
        let path = dir.join(format!("{}.npy", b.name));
        npy::write(&path, &HostData::F32(rounded)).unwrap();
        b.init = Init::Npy(path.clone(), path.display().to_string());
    }
    let twin_result = run_spec(
        &gpu,
        &twin,
        &request(&dir.join("twin"), vec![]),
        &mut |_| {},
    )
    .unwrap();
    assert!(twin_result.runs.iter().all(|r| r.outcome.is_ok()));
    for flags in [FlagSet::DEFAULT, FlagSet::STRICT] {
        for b in &buffers {
            if spec
                .outputs
                .iter()
                .all(|o| o.buffer != *b || o.reduce.is_some())
            {
                continue;
            }
            let baseline = saved(&runs, flags, "as-written", b);
            let all = saved(&runs, flags, "all", b);
            let hand = saved(&dir.join("twin"), flags, "as-written", b);
            let (e_all, e_hand) = (normwise(&all, &baseline), normwise(&hand, &baseline));
            let differing = all
                .iter()
                .zip(&hand)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            eprintln!(
                "{name}: {b} ({flags}): error vs f64 baseline, normwise: --demote all {e_all:e}, hand-written f32 {e_hand:e}; all vs hand differ in {differing} of {}",
                all.len()
            );
            // The same precision: neither is more than 4x (plus a few f32 ulps) off the other.
            let floor = 8.0 * f64::from(f32::EPSILON);
            assert!(
                e_all <= 4.0 * e_hand + floor && e_hand <= 4.0 * e_all + floor,
                "{name} {b} ({flags}): --demote all {e_all:e} vs hand-written f32 {e_hand:e}"
            );
            // And it is really f32: far from the f64 baseline unless the data make it exact.
            assert!(
                e_all > 0.0 || e_hand == 0.0,
                "{name} {b}: --demote all equals the f64 baseline"
            );
        }
    }
}

#[test]
fn nbody() {
    check("nbody", "nbody_f32.toml", nbody_model, Agreement::Ulps(0.0));
}

#[test]
fn heat2d() {
    check(
        "heat2d",
        "heat2d_f32.toml",
        heat2d_model,
        Agreement::Ulps(0.0),
    );
}

#[test]
fn options() {
    check(
        "options",
        "options_f32.toml",
        options_model,
        Agreement::Normwise(1e-13),
    );
}

#[test]
fn gauss() {
    check("gauss", "gauss_f32.toml", gauss_model, Agreement::Ulps(0.0));
}

#[test]
fn float_literal() {
    check(
        "float_literal",
        "float_literal_fixed.toml",
        float_literal_model,
        Agreement::Ulps(0.0),
    );
}
