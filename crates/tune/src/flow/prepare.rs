//! What a run does before any search, on its first GPU: build and run the program as written,
//! find its units, measure their demotion error with the shadow analysis, profile the kernels,
//! make each strategy's unit list, and open the results store those lists are the fingerprint of.

use super::{KernelProfile, Subject, TuneError, TuneEvent, TuneRequest};
use crate::store::{Identity, StoreShard, TrialStore};
use crate::strategy::Over;
use crate::unit::{Config, TuneUnit};
use crate::units::{
    attach_errors, buffer_units, demoted_module, math_units, program_units, site_errors,
    ErrorCoverage, ProgramUnits,
};
use mantissa_gpu::Gpu;
use mantissa_harness::{Base, Configuration, RunnerOptions, Session, TrialTiming};
use mantissa_ptx::fiset::FunctionProfile;
use mantissa_report::Backend;
use mantissa_shadow::{Analyses, ShadowRequest};

/// Everything the searches start from.
pub(super) struct Prepared {
    /// The program's units; its FISets and variables each end with the shared units (math
    /// calls, then buffers), so that each is the whole list its strategies search.
    pub units: ProgramUnits,
    /// The evaluator's one list: FISets, math calls, buffers, variables.
    pub all_units: Vec<TuneUnit>,
    /// Where each strategy's unit list lies in `all_units`.
    pub maps: UnitMaps,
    /// Math-call units among the shared ones.
    pub math: usize,
    /// Buffer units among the shared ones.
    pub buffers: usize,
    /// How many unit sites the shadow run measured.
    pub coverage: ErrorCoverage,
    /// Per kernel: FISets, share of time, registers.
    pub profile: Vec<KernelProfile>,
    /// The notes so far.
    pub notes: Vec<String>,
}

/// Per unit list, the index in the evaluator's list of each of its units: a search's index i
/// is the evaluator's unit `of(over)[i]`.
pub(super) struct UnitMaps {
    fisets: Vec<usize>,
    variables: Vec<usize>,
}

impl UnitMaps {
    /// The map of the list `over` names.
    pub fn of(&self, over: Over) -> &[usize] {
        match over {
            Over::Fisets => &self.fisets,
            Over::Variables => &self.variables,
        }
    }
}

/// The first of `gpus`, on which everything but the searches runs, once they are known to be
/// of one model (a speed-up measured on one model says nothing of another).
pub(super) fn first_of_one_model<'g>(gpus: &[&'g Gpu]) -> Result<&'g Gpu, TuneError> {
    let Some(&gpu) = gpus.first() else {
        return Err(TuneError::Devices("no GPU to tune on".into()));
    };
    if let Some(other) = gpus.iter().find(|g| g.info().name != gpu.info().name) {
        return Err(TuneError::Devices(format!(
            "GPU {} is a {} and GPU {} a {}: a tuning run's speed-ups are of one model; choose GPUs of one model with --devices",
            gpu.ordinal(),
            gpu.info().name,
            other.ordinal(),
            other.info().name
        )));
    }
    Ok(gpu)
}

/// The runner options of every device: the program as written is run for its outputs only
/// (its time is measured as a reference, with the run's own repetitions).
pub(super) fn runner_options() -> RunnerOptions {
    RunnerOptions {
        baseline_timing: TrialTiming::AccuracyOnly,
        ..RunnerOptions::default()
    }
}

/// On `runner` (the program run as written already), finds the units and their errors,
/// profiles the program and makes the unit lists (see [`Prepared`]).
pub(super) fn prepare(
    runner: &mut dyn Session,
    subject: &Subject<'_>,
    request: &TuneRequest,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<Prepared, TuneError> {
    let Found {
        mut units,
        maths,
        buffers,
        mut notes,
    } = find_units(runner, subject, request, progress)?;
    let coverage = measure_errors(subject, request, runner, &mut units, &mut notes, progress)?;
    let profile = profile(runner, &units.report.profiles, &units.fisets, &mut notes);
    let (math, buffers_n) = (maths.len(), buffers.len());
    let (all_units, maps) = unit_lists(&mut units, maths, buffers);
    Ok(Prepared {
        units,
        all_units,
        maps,
        math,
        buffers: buffers_n,
        coverage,
        profile,
        notes,
    })
}

/// The units found, before the shadow run.
struct Found {
    units: ProgramUnits,
    maths: Vec<TuneUnit>,
    buffers: Vec<TuneUnit>,
    notes: Vec<String>,
}

/// The program's FISets, variables, math calls and buffers; an error when there is none.
fn find_units(
    runner: &mut dyn Session,
    subject: &Subject<'_>,
    request: &TuneRequest,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<Found, TuneError> {
    let module = demoted_module(runner)?;
    let units = program_units(module, &request.fiset);
    let mut notes = units.report.notes.clone();
    let buffers = match subject.spec {
        Some(spec) => {
            let (buffers, why_not) = buffer_units(runner, spec);
            notes.extend(why_not);
            buffers
        }
        None => Vec::new(),
    };
    let maths = math_units(&units.module);
    progress(TuneEvent::Units {
        fisets: units.fisets.len(),
        variables: units.variables.len(),
        buffers: buffers.len(),
        math: maths.len(),
    });
    if units.fisets.is_empty()
        && units.variables.is_empty()
        && buffers.is_empty()
        && maths.is_empty()
    {
        return Err(TuneError::NothingToTune(format!(
            "{}: no f64 arithmetic that a configuration can demote and no f64 buffer that can be kept in f32 (no FISet, variable or buffer): nothing to tune",
            subject.name
        )));
    }
    if units.fisets.is_empty() {
        notes.push(
            "no FISet: no group of f64 arithmetic runs in f32 with fewer conversions than operations (memory-bound code, or arithmetic only inside math functions); modes 1-3 search the buffers alone".into(),
        );
    }
    Ok(Found {
        units,
        maths,
        buffers,
        notes,
    })
}

/// The demotion error of every f64 instruction (seed 002 §4.5's shadow run), attached to the
/// FISets and variables that hold it.
fn measure_errors(
    subject: &Subject<'_>,
    request: &TuneRequest,
    runner: &mut dyn Session,
    units: &mut ProgramUnits,
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<ErrorCoverage, TuneError> {
    progress(TuneEvent::Shadow);
    let shadow = mantissa_shadow::analyse_on(
        runner,
        subject.name,
        subject.dir,
        &ShadowRequest {
            flags: request.flags,
            analyses: Analyses {
                demotion: true,
                shadow: false,
                exceptions: false,
            },
            time: false,
        },
        &mut |_| {},
    )?;
    let plain = runner.base_module(&Base::AsBuilt)?;
    let pinned = runner.base_module(&Base::Pinned)?;
    let errors = site_errors(&shadow, &plain.module, &pinned.module);
    let mut coverage = ErrorCoverage::default();
    attach_errors(&mut units.fisets, &errors, &mut coverage);
    attach_errors(&mut units.variables, &errors, &mut coverage);
    if coverage.measured < coverage.sites {
        notes.push(format!(
            "the shadow run measured {} of the units' {} instructions (the others are ordered as if exact)",
            coverage.measured, coverage.sites
        ));
    }
    Ok(coverage)
}

/// One list for the evaluator (FISets, math calls, buffers, variables); each search sees its
/// own: modes the FISets, then math calls and buffers; the baseline the variables, then the same
/// math calls and buffers. Extends `units`' FISets and variables with the shared units.
fn unit_lists(
    units: &mut ProgramUnits,
    maths: Vec<TuneUnit>,
    buffers: Vec<TuneUnit>,
) -> (Vec<TuneUnit>, UnitMaps) {
    let (nf, nm, nb, nv) = (
        units.fisets.len(),
        maths.len(),
        buffers.len(),
        units.variables.len(),
    );
    let shared: Vec<TuneUnit> = maths.into_iter().chain(buffers).collect();
    let all_units: Vec<TuneUnit> = units
        .fisets
        .iter()
        .chain(shared.iter())
        .chain(units.variables.iter())
        .cloned()
        .collect();
    let maps = UnitMaps {
        fisets: (0..nf + nm + nb).collect(),
        variables: (nf + nm + nb..nf + nm + nb + nv)
            .chain(nf..nf + nm + nb)
            .collect(),
    };
    units.fisets.extend(shared.iter().cloned());
    units.variables.extend(shared);
    (all_units, maps)
}

/// The results store of the run (`--out`; a shard's own file with its settings), opened on the
/// evaluator's unit list `all_units`, whose fingerprint a resumed store must match.
/// `name_devices`: records name their GPU (several GPUs, or one that is not GPU 0).
pub(super) fn open_store(
    subject: &Subject<'_>,
    request: &TuneRequest,
    runner: &dyn Session,
    name_devices: bool,
    all_units: &[TuneUnit],
) -> Result<TrialStore, TuneError> {
    let shard = match (request.shard, subject.spec) {
        (None, _) => None,
        (Some(shard), Some(spec)) => Some(StoreShard {
            shard,
            settings: crate::shard::settings(spec, request),
        }),
        (Some(shard), None) => {
            return Err(TuneError::Devices(format!(
                "--shard {shard}: shards are a spec's; an application is tuned in one run"
            )))
        }
    };
    let identity = Identity {
        spec: subject.name.to_string(),
        flags: subject.flags.clone(),
        device: runner.device_name(),
        backend: runner
            .baseline()
            .first_launch
            .map_or(Backend::gpu(0, 0), |d| Backend::Gpu {
                grid: [d.grid.0, d.grid.1, d.grid.2],
                block: [d.block.0, d.block.1, d.block.2],
            }),
        name_devices,
    };
    Ok(TrialStore::open(
        request.out.as_deref(),
        request.resume,
        shard,
        identity,
        &fingerprint(all_units),
    )?)
}

/// What identifies the unit list across runs of the same program: each unit's kind, name, sites
/// and buffers — not its measured error, whose sums over atomics differ in their last bits from
/// run to run.
fn fingerprint(units: &[TuneUnit]) -> String {
    let shape: Vec<_> = units
        .iter()
        .map(|u| (u.kind, &u.name, &u.sites, &u.buffers))
        .collect();
    let text = serde_json::to_string(&shape).unwrap_or_default();
    format!("{:016x}", mantissa_gpu::cache::fnv1a64(text.as_bytes()))
}

/// Profiling runs of the program as written (one warm-up): enough for a share of time, which
/// only decides where demoting can pay.
const PROFILE_RUNS: u32 = 5;

/// Share of time, registers as written and with every FISet demoted, per kernel.
fn profile(
    runner: &mut dyn Session,
    profiles: &[FunctionProfile],
    fisets: &[TuneUnit],
    notes: &mut Vec<String>,
) -> Vec<KernelProfile> {
    let times = match runner.kernel_times(&Configuration::AsWritten, PROFILE_RUNS) {
        Ok(t) => t,
        Err(e) => {
            notes.push(format!("the time per kernel was not measured: {e}"));
            Vec::new()
        }
    };
    let f64_res = runner.baseline_resources().unwrap_or_default();
    let everything: Config = (0..fisets.len()).collect();
    let mixed_res = crate::gpu::configuration(fisets, &everything, "all fisets");
    let mixed = runner
        .configuration_resources(&mixed_res)
        .unwrap_or_default();
    profiles
        .iter()
        .map(|p| {
            let f = f64_res.iter().find(|(k, _)| *k == p.function).map(|r| r.1);
            let m = mixed.iter().find(|(k, _)| *k == p.function).map(|r| r.1);
            let t = times.iter().find(|t| t.kernel == p.function);
            KernelProfile {
                fisets: p.clone(),
                share: t.map(|t| t.share),
                time_ms: t.map(|t| t.median_ms),
                launches: t.map(|t| t.launches),
                registers_f64: f.map(|r| r.registers),
                registers_mixed: m.map(|r| r.registers),
                local_f64: f.map(|r| r.local_bytes),
                local_mixed: m.map(|r| r.local_bytes),
            }
        })
        .collect()
}
