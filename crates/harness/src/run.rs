//! [`run_spec`]: every (flag set x configuration) of a spec built, checked against its PTX, run,
//! compared with the baseline (default flags, as written) and the user's references, timed, and
//! recorded.
//!
//! Spec errors come back as `Err` before anything runs. A build or run that fails later does not:
//! it becomes a [`ConfigRun`] whose outcome is the error (and a failed record), so the
//! configurations that finished are kept, and the caller is told of each record as it is made
//! ([`RunEvent::Record`]) to append it at once.

use crate::compare::{compare, output_values, Comparison, OutputResult};
use crate::config::{self, Configuration};
use crate::data::materialize;
use crate::exec::{execute, ExecError, ExecOptions, Execution};
use crate::npy;
use crate::spec::{FrontEnd, Spec, SpecError};
use crate::validate::{plan, Plan};
use mantissa_gpu::{
    BuildFacts, BuildRequest, Define, FlagSet, FrontEnd as GpuFrontEnd, Gpu, GpuError, Timing,
};
use mantissa_report::{Backend, Build, ErrorMetrics, Record, Status, TimeStats, SCHEMA};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// Flag sets; `default` is added first if missing (it is the baseline).
    pub flag_sets: Vec<FlagSet>,
    /// Configurations; `AsWritten` is added first if missing (it is the baseline).
    pub configurations: Vec<Configuration>,
    /// Warm-up and timed repeats.
    pub exec: ExecOptions,
    /// Where to write each run's output buffers as `.npy` (`None`: nowhere).
    pub save_dir: Option<PathBuf>,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            flag_sets: vec![FlagSet::DEFAULT],
            configurations: vec![Configuration::AsWritten],
            exec: ExecOptions::default(),
            save_dir: None,
        }
    }
}

/// What happened, for progress displays and for appending records as they are made.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// A build starts.
    Building {
        /// Its flag set.
        flags: FlagSet,
    },
    /// A (flag set, configuration) run starts.
    Running {
        /// Its flag set.
        flags: FlagSet,
        /// Its configuration.
        configuration: &'a Configuration,
    },
    /// A record is ready (one per output per run).
    Record(&'a Record),
}

/// Errors that stop a spec before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The spec is wrong (one line with its position).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The baseline could not be built, so nothing can be checked or compared.
    #[error("{0}")]
    Build(String),
}

/// One (flag set, configuration) run.
#[derive(Debug, Clone)]
pub struct ConfigRun {
    /// Its flag set.
    pub flags: FlagSet,
    /// Its configuration.
    pub configuration: Configuration,
    /// How its program was built.
    pub build: Option<BuildFacts>,
    /// What the configuration's rewrite did (instructions demoted, conversions, math calls in
    /// f32) and anything it could not do.
    pub notes: Vec<String>,
    /// Its outputs compared, and its time; or why it failed (one line).
    pub outcome: Result<RunOutcome, String>,
}

/// A run that finished.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Per output, in spec order.
    pub outputs: Vec<OutputResult>,
    /// Device time of the whole step sequence.
    pub timing: Option<Timing>,
}

/// Everything a spec run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The spec's name.
    pub name: String,
    /// Which front end built the program, in words (`nvrtc 13.0`, `ptx file`).
    pub front_end: String,
    /// One per (flag set, configuration), baseline first.
    pub runs: Vec<ConfigRun>,
    /// The records made (also given to the callback as they were made).
    pub records: Vec<Record>,
}

/// A built program: its PTX, and what to load.
pub struct Built {
    /// The PTX (kernel signatures and symbols are read from it).
    pub ptx: String,
    /// Name expressions mapped to lowered names.
    pub lowered: BTreeMap<String, String>,
    /// Build facts for records.
    pub facts: Option<BuildFacts>,
    /// The compilation, for loading its cubin when the PTX is not changed.
    pub compiled: Option<std::sync::Arc<mantissa_gpu::Compiled>>,
    /// Front end in words, with why it was chosen.
    pub front_end: String,
    /// Which front end built it.
    pub kind: GpuFrontEnd,
}

/// The build request of the spec's program under `flags`; `units` marks math calls (see
/// [`mantissa_gpu::BuildRequest::units`]).
pub fn build_request(
    spec: &Spec,
    flags: FlagSet,
    units: Option<Vec<u32>>,
) -> Result<BuildRequest, String> {
    let src = &spec.source;
    let mut request = BuildRequest::new(&src.file);
    request.include_dirs = src.include.clone();
    for (name, value) in &src.define {
        request.defines.push(Define {
            name: name.clone(),
            value: value.clone(),
        });
    }
    request.arch = match &src.arch {
        Some(a) => Some(a.parse().map_err(|e| format!("{e}"))?),
        None => None,
    };
    request.flags = flags;
    request.units = units;
    request.front_end = match src.front_end {
        FrontEnd::Auto => None,
        FrontEnd::Nvrtc => Some(GpuFrontEnd::Nvrtc),
        FrontEnd::Nvcc => Some(GpuFrontEnd::Nvcc),
        FrontEnd::Ptx => Some(GpuFrontEnd::Ptx),
    };
    // Templated kernels are found through NVRTC name expressions.
    for (step, _) in spec.walk() {
        if let crate::spec::StepKind::Launch(l) = &step.kind {
            if l.kernel.contains('<') && !request.name_expressions.contains(&l.kernel) {
                request.name_expressions.push(l.kernel.clone());
            }
        }
    }
    Ok(request)
}

/// Builds the spec's program under `flags` through the front end the spec names or the one
/// chosen for the file (nvcc for host code, NVRTC for device-only code, ready PTX as is).
pub fn build_module(gpu: &Gpu, spec: &Spec, flags: FlagSet) -> Result<Built, String> {
    let request = build_request(spec, flags, None)?;
    let built = gpu
        .builder()
        .build_for(&arch_defaulted(gpu, request), true)
        .map_err(|e| e.to_string())?;
    Ok(Built {
        lowered: built
            .compiled
            .as_ref()
            .map(|c| c.lowered_names.clone())
            .unwrap_or_default(),
        front_end: built.choice.to_string(),
        kind: built.choice.front_end,
        ptx: built.ptx,
        facts: Some(built.facts),
        compiled: built.compiled,
    })
}

/// The request for the device's own architecture unless the spec names one.
fn arch_defaulted(gpu: &Gpu, mut request: BuildRequest) -> BuildRequest {
    if request.arch.is_none() {
        request.arch = Some(gpu.arch());
    }
    request
}

/// The PTX of one configuration, and what was done to make it.
struct Prepared {
    /// PTX to load, or `None` to load the baseline build as it is (its cubin).
    ptx: Option<String>,
    /// What the rewrite did, for the record's note.
    notes: Vec<String>,
}

/// Marked builds of one flag set, by the list of call lines replaced: a configuration file run
/// with several flag sets, or `none` and `all` together, build each at most once.
#[derive(Default)]
struct MarkedBuilds {
    builds: BTreeMap<Vec<u32>, Result<String, String>>,
    /// The math calls of the marked build (no call replaced) when it has the baseline's code, or
    /// why it cannot be used; `None` until checked.
    calls: Option<Result<Vec<config::MathCall>, String>>,
}

impl MarkedBuilds {
    fn ptx(
        &mut self,
        gpu: &Gpu,
        spec: &Spec,
        flags: FlagSet,
        lines: &[u32],
    ) -> Result<String, String> {
        self.builds
            .entry(lines.to_vec())
            .or_insert_with(|| {
                let request = build_request(spec, flags, Some(lines.to_vec()))?;
                gpu.builder()
                    .build_for(&arch_defaulted(gpu, request), false)
                    .map(|b| b.ptx)
                    .map_err(|e| format!("marked build: {e}"))
            })
            .clone()
    }

    /// The math calls a configuration can replace, once the marked build is checked against the
    /// baseline's PTX.
    fn calls(
        &mut self,
        gpu: &Gpu,
        spec: &Spec,
        flags: FlagSet,
        baseline: &str,
    ) -> Result<Vec<config::MathCall>, String> {
        if let Some(checked) = &self.calls {
            return checked.clone();
        }
        let checked = self
            .ptx(gpu, spec, flags, &[])
            .and_then(|marked| marked_calls(baseline, &marked));
        self.calls = Some(checked.clone());
        checked
    }
}

/// The math calls of `marked` when it has the same instructions as `plain` (the marking header
/// must not change the code), or why it cannot stand in for `plain`.
fn marked_calls(plain: &str, marked: &str) -> Result<Vec<config::MathCall>, String> {
    let marked = mantissa_ptx::parse(marked).module;
    if mantissa_ptx::demote::same_code(&mantissa_ptx::parse(plain).module, &marked) {
        Ok(config::math_calls(&marked))
    } else {
        Err("the build with math calls marked differs from the program as written".into())
    }
}

/// Makes the PTX of `configuration` from the baseline build `built` (see [`crate::config`]).
fn prepare(
    gpu: &Gpu,
    spec: &Spec,
    flags: FlagSet,
    built: &Built,
    configuration: &Configuration,
    marked: &mut MarkedBuilds,
) -> Result<Prepared, String> {
    let demotion = match configuration {
        Configuration::AsWritten => {
            return Ok(Prepared {
                ptx: None,
                notes: Vec::new(),
            })
        }
        Configuration::Demote(d) => d,
    };
    let mut notes = Vec::new();
    // The PTX the rewrite starts from: a marked build (math calls are units, the listed ones
    // replaced by their f32 functions), or the baseline itself where marking is impossible
    // (ready PTX) or would change the code.
    let base = if built.kind == GpuFrontEnd::Ptx {
        if !demotion.math_lines(&[]).is_empty() || demotion.math.is_all() {
            notes.push("ready PTX: math calls cannot be marked, so they stay f64 (f64 code that manipulates bits is kept whole)".into());
        }
        built.ptx.clone()
    } else {
        match marked.calls(gpu, spec, flags, &built.ptx) {
            Ok(calls) => {
                let lines = demotion.math_lines(&calls);
                if !lines.is_empty() {
                    notes.push(format!(
                        "math calls in f32: {}",
                        calls
                            .iter()
                            .filter(|c| lines.contains(&c.line))
                            .map(|c| format!("{} (line {})", c.function, c.line))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                marked.ptx(gpu, spec, flags, &lines)?
            }
            Err(why) => {
                notes.push(format!(
                    "{why}: math calls stay f64, and f64 code that manipulates bits is kept whole"
                ));
                built.ptx.clone()
            }
        }
    };
    let parsed = mantissa_ptx::parse(&base).module;
    let demoted = mantissa_ptx::demote::demote(&parsed, &demotion.demote_set())
        .map_err(|e| format!("demoting: {e}"))?;
    let r = &demoted.report;
    let (to32, to64) = r
        .functions
        .iter()
        .fold((0, 0), |(a, b), f| (a + f.cvt_to_f32, b + f.cvt_to_f64));
    notes.push(format!(
        "{} f64 instructions in f32, {} conversions in, {} out",
        r.demoted(),
        to32,
        to64
    ));
    if !r.unmatched.is_empty() {
        notes.push(format!(
            "{} selectors name no instruction of this build (first: {})",
            r.unmatched.len(),
            r.unmatched[0]
        ));
    }
    if !r.refused.is_empty() {
        notes.push(format!(
            "{} instructions not demotable (first: {}: {})",
            r.refused.len(),
            r.refused[0].requested,
            r.refused[0].reason
        ));
    }
    notes.extend(r.notes.iter().cloned());
    Ok(Prepared {
        ptx: Some(demoted.module.to_string()),
        notes,
    })
}

fn run_one(
    gpu: &Gpu,
    spec: &Spec,
    built: &Built,
    plan: &Plan,
    inputs: &crate::data::Inputs,
    prepared: &Prepared,
    exec: ExecOptions,
) -> Result<Execution, String> {
    let symbols: Vec<(String, Vec<u8>)> = plan
        .symbols
        .iter()
        .map(|s| s.ptx_name.clone())
        .zip(inputs.symbols.iter().map(|s| s.1.clone()))
        .collect();
    let name = spec.name.clone();
    let load = || -> Result<mantissa_gpu::Module, GpuError> {
        match (&built.compiled, &prepared.ptx) {
            (Some(c), None) => gpu.load(c),
            (_, Some(ptx)) => gpu.load_ptx(&name, ptx),
            (None, None) => gpu.load_ptx(&name, &built.ptx),
        }
    };
    execute(gpu, &load, &symbols, spec, plan, inputs, exec).map_err(|e: ExecError| e.to_string())
}

/// Runs a spec: the baseline first (default flags, as written), then every other (flag set,
/// configuration); see the module docs for what is an error and what is a failed run.
pub fn run_spec(
    gpu: &Gpu,
    spec: &Spec,
    request: &RunRequest,
    progress: &mut dyn FnMut(RunEvent),
) -> Result<RunResult, HarnessError> {
    let inputs = materialize(spec)?;
    // References are read before anything runs, so that a bad one is a spec error.
    let references = crate::data::references(spec)?;
    let mut flag_sets = vec![FlagSet::DEFAULT];
    flag_sets.extend(
        request
            .flag_sets
            .iter()
            .copied()
            .filter(|f| *f != FlagSet::DEFAULT),
    );
    flag_sets.dedup();
    let mut configurations = vec![Configuration::AsWritten];
    configurations.extend(
        request
            .configurations
            .iter()
            .filter(|c| **c != Configuration::AsWritten)
            .cloned(),
    );

    let mut result = RunResult {
        name: spec.name.clone(),
        front_end: String::new(),
        runs: Vec::new(),
        records: Vec::new(),
    };
    let mut baseline: Option<Vec<Vec<f64>>> = None;
    for flags in flag_sets {
        progress(RunEvent::Building { flags });
        let built = build_module(gpu, spec, flags);
        let (built, plan) = match built {
            Ok(b) => {
                let p = plan(spec, &b.ptx, &b.lowered, &inputs.symbols)?;
                (b, p)
            }
            Err(e) if flags == FlagSet::DEFAULT => return Err(HarnessError::Build(e)),
            Err(e) => {
                for configuration in &configurations {
                    let run = ConfigRun {
                        flags,
                        configuration: configuration.clone(),
                        build: None,
                        notes: Vec::new(),
                        outcome: Err(e.clone()),
                    };
                    push_records(gpu, spec, &run, None, &mut result, progress);
                    result.runs.push(run);
                }
                continue;
            }
        };
        if result.front_end.is_empty() {
            result.front_end = built.front_end.clone();
        }
        let mut marked = MarkedBuilds::default();
        for configuration in &configurations {
            progress(RunEvent::Running {
                flags,
                configuration,
            });
            let prepared = prepare(gpu, spec, flags, &built, configuration, &mut marked);
            let notes = prepared.as_ref().map_or(Vec::new(), |p| p.notes.clone());
            let outcome = prepared
                .and_then(|p| run_one(gpu, spec, &built, &plan, &inputs, &p, request.exec))
                .and_then(|ex| {
                    let values: Vec<Vec<f64>> = spec
                        .outputs
                        .iter()
                        .map(|o| {
                            ex.outputs
                                .iter()
                                .find(|(n, _)| *n == o.buffer)
                                .map(|(_, d)| output_values(d, o.view.as_ref(), o.reduce))
                                .unwrap_or_default()
                        })
                        .collect();
                    if let Some(dir) = &request.save_dir {
                        save(dir, flags, configuration, &ex)?;
                    }
                    let base = baseline.get_or_insert_with(|| values.clone());
                    let outputs = spec
                        .outputs
                        .iter()
                        .enumerate()
                        .map(|(i, o)| {
                            let dtype = spec
                                .buffer(&o.buffer)
                                .map_or(mantissa_gpu::DType::F64, |b| b.dtype);
                            let vs_baseline = compare(dtype, &values[i], &base[i]);
                            let vs_reference = references[i]
                                .as_ref()
                                .map(|r| compare(dtype, &values[i], r));
                            let met = o
                                .tolerance
                                .map(|t| vs_reference.as_ref().unwrap_or(&vs_baseline).meets(&t));
                            OutputResult {
                                name: o.name(),
                                value: o.reduce.map(|_| values[i][0]),
                                vs_baseline,
                                vs_reference,
                                tolerance: o.tolerance,
                                met,
                            }
                        })
                        .collect();
                    Ok((
                        RunOutcome {
                            outputs,
                            timing: ex.timing.clone(),
                        },
                        ex.first_launch,
                    ))
                });
            let (outcome, dims) = match outcome {
                Ok((o, d)) => (Ok(o), d),
                Err(e) => (Err(e), None),
            };
            let run = ConfigRun {
                flags,
                configuration: configuration.clone(),
                build: built.facts.clone(),
                notes,
                outcome,
            };
            push_records(gpu, spec, &run, dims, &mut result, progress);
            result.runs.push(run);
        }
    }
    Ok(result)
}

fn save(
    dir: &std::path::Path,
    flags: FlagSet,
    configuration: &Configuration,
    ex: &Execution,
) -> Result<(), String> {
    let sub = if flags == FlagSet::DEFAULT && *configuration == Configuration::AsWritten {
        dir.to_path_buf()
    } else {
        dir.join(format!("{}.{}", flags.name(), configuration.name()))
    };
    std::fs::create_dir_all(&sub).map_err(|e| format!("{}: {e}", sub.display()))?;
    for (name, data) in &ex.outputs {
        npy::write(&sub.join(format!("{name}.npy")), data).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn metrics(c: &Comparison) -> ErrorMetrics {
    ErrorMetrics {
        abs: c.max_abs,
        rel: Some(c.max_rel),
        ulps: Some(c.max_ulps),
        digits: Some(c.digits.min(99.0)),
    }
}

fn push_records(
    gpu: &Gpu,
    spec: &Spec,
    run: &ConfigRun,
    dims: Option<mantissa_gpu::LaunchDims>,
    result: &mut RunResult,
    progress: &mut dyn FnMut(RunEvent),
) {
    let seeds = spec.seeds();
    let backend = dims.map_or(
        Backend::Gpu {
            grid: [0; 3],
            block: [0; 3],
        },
        |d| Backend::Gpu {
            grid: [d.grid.0, d.grid.1, d.grid.2],
            block: [d.block.0, d.block.1, d.block.2],
        },
    );
    let seed_note = if seeds.is_empty() {
        String::new()
    } else {
        format!(
            "seeds: {}",
            seeds
                .iter()
                .map(|(b, s)| format!("{b}={s}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    for (i, o) in spec.outputs.iter().enumerate() {
        let size = spec.buffer(&o.buffer).map_or(0, |b| b.len) as u64;
        let mut extra = BTreeMap::new();
        let mut descriptions = BTreeMap::new();
        let mut note = run.notes.clone();
        let (status, value, reference, error, time) = match &run.outcome {
            Ok(out) => {
                let r = &out.outputs[i];
                let c = &r.vs_baseline;
                let mut put = |k: &str, v: f64, d: &str| {
                    extra.insert(k.to_string(), v);
                    descriptions.insert(k.to_string(), d.to_string());
                };
                put("baseline.digits", c.digits.min(99.0), "correct decimal digits against the baseline (default flags, as written), minimum over elements (seed 002), capped at 99");
                put(
                    "baseline.max_rel",
                    c.max_rel,
                    "largest relative error against the baseline",
                );
                put(
                    "baseline.mean_rel",
                    c.mean_rel,
                    "mean relative error against the baseline, finite elements",
                );
                put(
                    "baseline.max_ulps",
                    c.max_ulps,
                    "largest distance to the baseline in ulps of the output's type",
                );
                put(
                    "baseline.differing",
                    c.differing as f64,
                    "elements whose bits differ from the baseline",
                );
                put(
                    "baseline.nonfinite_mismatches",
                    c.nonfinite_mismatches as f64,
                    "elements NaN or infinite where the baseline is not the same",
                );
                if let Some(rc) = &r.vs_reference {
                    put("reference.digits", rc.digits.min(99.0), "correct decimal digits against the spec's reference .npy, minimum over elements");
                    put(
                        "reference.max_rel",
                        rc.max_rel,
                        "largest relative error against the spec's reference",
                    );
                }
                if let Some(m) = r.met {
                    put("tolerance_met", f64::from(u8::from(m)), "1 when the output's tolerance is met (against the reference if given, else the baseline)");
                    note.push(format!(
                        "tolerance {}: {}",
                        r.tolerance.map_or(String::new(), |t| t.to_string()),
                        if m { "met" } else { "NOT met" }
                    ));
                }
                let error = Some(metrics(r.vs_reference.as_ref().unwrap_or(c)));
                // A record's `reference` is one number; a buffer's reference is not, and a
                // reduced output's reference value lives in the .npy the spec names.
                let reference = None;
                let time = out.timing.as_ref().map(|t| TimeStats {
                    median_ms: t.median_ms,
                    min_ms: t.min_ms,
                    max_ms: t.max_ms,
                    reps: t.samples_ms.len() as u32,
                });
                (Status::Ok, r.value, reference, error, time)
            }
            Err(e) => {
                note.push(e.clone());
                (Status::Failed, None, None, None, None)
            }
        };
        if !seed_note.is_empty() {
            note.push(seed_note.clone());
        }
        let record = Record {
            schema: SCHEMA,
            workload: spec.name.clone(),
            algorithm: o.name(),
            input: "spec".into(),
            size,
            seed: seeds.first().map_or(0, |s| s.1),
            precision: run.configuration.name(),
            backend,
            flags: Some(run.flags.name()),
            device: gpu.info().name.clone(),
            status,
            value,
            reference,
            error,
            time,
            extra,
            descriptions,
            note: (!note.is_empty()).then(|| note.join("; ")),
            build: run.build.as_ref().map(|f| Build {
                front_end: f.front_end.clone(),
                front_end_version: f.front_end_version.clone(),
                flags: f.flags.clone(),
                options: f.options.clone(),
                arch: f.arch.clone(),
                source_hash: f.source_hash.clone(),
            }),
            version: Record::current_version(),
            git_revision: Record::current_git_revision(),
            date: Record::now(),
        };
        progress(RunEvent::Record(&record));
        result.records.push(record);
    }
}

/// The configuration naming every math call and every eligible f64 instruction of the spec's
/// program built with the default flags (see [`config::full_configuration`]). Builds only: no
/// GPU is needed (the architecture is the spec's, or the front end's default).
pub fn full_configuration(spec: &Spec) -> Result<config::Demotion, String> {
    let builder = mantissa_gpu::Builder::new();
    let plain = builder
        .build(&build_request(spec, FlagSet::DEFAULT, None)?)
        .map_err(|e| e.to_string())?;
    if plain.choice.front_end == GpuFrontEnd::Ptx {
        return Ok(config::full_configuration(&plain.ptx));
    }
    let marked = builder
        .build(&build_request(spec, FlagSet::DEFAULT, Some(Vec::new()))?)
        .map_err(|e| format!("marked build: {e}"))?;
    let usable = marked_calls(&plain.ptx, &marked.ptx).is_ok();
    Ok(config::full_configuration(if usable {
        &marked.ptx
    } else {
        &plain.ptx
    }))
}
