//! One `mantissa diff` of a spec's program: the program built and run as written (through the
//! harness's [`TrialRunner`]), its outputs against a reference (the spec's `reference` files,
//! or the outputs of another flag set's build), the causes listed per site
//! ([`mantissa_ptx::pass::cause::candidates`]), the search ([`crate::search`]) for a minimal set
//! whose switching makes the outputs equal the reference, one trial per test, then each member
//! switched alone to measure its own effect.
//!
//! **What "equal" means.** Element by element in the output's type: a reference of another type
//! (an f64 `.npy` for an f32 output) is rounded to the output's type first; NaN equals NaN.
//!
//! **The baseline of the search is the PTX as the driver JITs it**, not NVRTC's cubin: every
//! trial is JIT-compiled PTX, so the unswitched PTX is run the same way (twice: two runs of the
//! same build that differ mean atomics or races, and no cause can be attributed then), and so is
//! another flag set's build compared against (its PTX, in the same runner).

use crate::builds::{Build, OutputError};
use crate::cost::LineCost;
use crate::mathfn::{math_functions, MathFunctions};
use crate::sass::SassCheck;
use crate::search::{search, Found, SetVerdict};
use mantissa_gpu::{DType, FlagSet, Gpu, HostData, Timing};
use mantissa_harness::compare::{compare, output_values};
use mantissa_harness::spec::{OutputSpec, Tolerance};
use mantissa_harness::{
    pipelines, Base, RunnerOptions, Session, Spec, SpecError, TrialError, TrialRunner, TrialTiming,
    Variant,
};
use mantissa_ptx::pass::cause::{candidates, Candidate, SwitchError};
use serde::Serialize;

/// What the outputs are compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// The spec's `reference` of every output (the CPU program's results).
    Reference,
    /// The outputs of the program built under another flag set.
    Flags(FlagSet),
}

impl Against {
    /// `reference` or the flag set's name.
    pub fn name(self) -> String {
        match self {
            Against::Reference => "reference".into(),
            Against::Flags(f) => f.name(),
        }
    }
}

/// What to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffRequest {
    /// The flag set the program is built with (its outputs are what is explained).
    pub flags: FlagSet,
    /// What they are compared with.
    pub against: Against,
    /// Timed repetitions of each timed build (the program as written, each blamed line's
    /// causes switched off, the four builds); 0 times nothing (no time cost, no builds).
    pub repeats: u32,
    /// Make and measure seed 003's four builds ([`crate::builds`]).
    pub builds: bool,
}

impl DiffRequest {
    /// Timed repetitions unless asked otherwise: enough for a median and a spread that a
    /// preempted repetition does not move.
    pub const DEFAULT_REPEATS: u32 = 11;

    /// Explains `flags` against `against`, timing the causes' cost, without the four builds.
    pub fn new(flags: FlagSet, against: Against) -> DiffRequest {
        DiffRequest {
            flags,
            against,
            repeats: DiffRequest::DEFAULT_REPEATS,
            builds: false,
        }
    }
}

/// Where a diff is, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffEvent {
    /// Building and running the program as written (twice, to check it is deterministic).
    Baseline,
    /// Building and running the other flag set's program.
    Other(String),
    /// The outputs differ in this many elements; this many candidates are switchable.
    Candidates {
        /// Differing elements as written.
        differing: u64,
        /// Candidates the search switches.
        switchable: usize,
        /// Candidates listed only.
        listed: usize,
    },
    /// One trial of the search ran.
    Trial {
        /// Trials so far.
        number: usize,
        /// Candidates switched.
        switched: usize,
        /// Elements still differing.
        differing: u64,
    },
    /// Measuring each member of the minimal set alone.
    Effects(usize),
    /// Timing the program with one blamed line's causes switched off (line, of how many).
    Cost(usize, usize),
    /// Making and measuring one build (its name).
    Build(String),
    /// Searching for an input where CUDA's and the CPU's math function (its name) differ.
    MathFunction(String),
    /// Running one build (its name) with shadow values, for its digits against a
    /// higher-precision shadow.
    Shadow(String),
}

/// One output as written and with the minimal set switched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputDiff {
    /// The output's name.
    pub name: String,
    /// Elements compared.
    pub elements: usize,
    /// Elements differing from the reference as written.
    pub differing: u64,
    /// Elements still differing with the minimal set switched.
    pub remaining: u64,
}

/// What one switched cause does on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// Output elements it changes (against the program as written).
    pub changed: u64,
    /// Of the elements that differ from the reference as written, how many it alone makes
    /// equal.
    pub fixes: u64,
    /// The largest change, in units in the last place of the output's type.
    pub max_ulps: f64,
    /// The largest change relative to the value as written.
    pub max_rel: f64,
}

/// A member of the minimal set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Blamed {
    /// Its index in [`DiffRun::candidates`].
    pub candidate: usize,
    /// Its effect alone.
    pub alone: Effect,
    /// What the SASS says, for a contraction.
    pub sass: SassCheck,
}

/// What a diff found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffRun {
    /// The spec's name.
    pub spec: String,
    /// The flag set explained.
    pub flags: String,
    /// `reference` or the other flag set.
    pub against: String,
    /// The device.
    pub device: String,
    /// Every output.
    pub outputs: Vec<OutputDiff>,
    /// Every candidate cause listed, switchable or not.
    pub candidates: Vec<Candidate>,
    /// The minimal set, with each member's effect alone.
    pub blamed: Vec<Blamed>,
    /// Elements differing as written, over all outputs.
    pub differing: u64,
    /// Elements still differing with the minimal set switched (unexplained).
    pub remaining: u64,
    /// Trials of the search (tests of sets).
    pub search_trials: usize,
    /// Trials measuring members alone.
    pub effect_trials: usize,
    /// The search fell back to one-at-a-time reduction (interacting causes).
    pub fell_back: bool,
    /// The program as written, timed (absent when nothing was timed).
    pub naive_time: Option<Timing>,
    /// Per blamed source line, the time with its causes switched off ([`crate::cost`]).
    pub costs: Vec<LineCost>,
    /// Seed 003's four builds, when asked for ([`crate::builds`]).
    pub builds: Vec<Build>,
    /// The math functions the kernels call, per line; where differences remain unexplained,
    /// an input per function where CUDA and the CPU differ ([`crate::mathfn`]).
    pub math: MathFunctions,
    /// Anything the reader should know.
    pub notes: Vec<String>,
}

impl DiffRun {
    /// Candidates that cannot be switched (math functions, accidental double): where what
    /// remains may come from.
    pub fn listed_only(&self) -> impl Iterator<Item = &Candidate> {
        self.candidates.iter().filter(|c| !c.switchable())
    }
}

/// Why a diff did not finish.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The spec is wrong (a usage error).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// An output has no reference to compare with.
    #[error("output '{0}' has no reference: give it `reference = \"FILE.npy\"` in the spec, or use --against FLAGS")]
    NoReference(String),
    /// The outputs already equal the reference.
    #[error("no difference to explain: every output of {flags} equals the {against} element for element")]
    NoDifference {
        /// The flag set.
        flags: String,
        /// What it was compared with.
        against: String,
    },
    /// Two runs of the same build differ.
    #[error("two runs of the same build differ ({0}): the program is not deterministic (atomics, races), so no cause can be attributed")]
    Nondeterministic(String),
    /// The program or a trial failed.
    #[error("{0}")]
    Trial(TrialError),
    /// The cause passes refused a set (a bug).
    #[error("switching causes: {0}")]
    Switch(#[from] SwitchError),
}

impl From<TrialError> for DiffError {
    fn from(e: TrialError) -> Self {
        match e {
            TrialError::Spec(s) => DiffError::Spec(s),
            other => DiffError::Trial(other),
        }
    }
}

impl DiffError {
    /// Whether the user's input is wrong (exit 2) rather than the run failing (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            DiffError::Spec(_) | DiffError::NoReference(_) | DiffError::NoDifference { .. }
        )
    }
}

/// Each output's compared values, in spec order, as f64 in the output's type.
pub(crate) type Values = Vec<Vec<f64>>;

/// Each output buffer as a trial downloaded it (what the shadow run of a build must reproduce).
pub(crate) type Downloaded = Vec<(String, HostData)>;

/// The values of every output of `spec` from a trial's downloaded buffers.
fn values_of(spec: &Spec, downloaded: &[(String, HostData)]) -> Result<Values, DiffError> {
    spec.outputs
        .iter()
        .map(|o| {
            let data = downloaded
                .iter()
                .find(|(b, _)| *b == o.buffer)
                .map(|(_, d)| d)
                .ok_or_else(|| {
                    DiffError::Trial(TrialError::Failed(format!(
                        "output buffer '{}' was not downloaded",
                        o.buffer
                    )))
                })?;
            Ok(output_values(data, o.view.as_ref(), o.reduce))
        })
        .collect()
}

fn dtype_of(spec: &Spec, o: &OutputSpec) -> DType {
    spec.buffer(&o.buffer).map_or(DType::F64, |b| b.dtype)
}

/// `x` as a value of `dtype` (a reference of another type is rounded to the output's).
fn in_type(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 => f64::from(x as f32),
        _ => x,
    }
}

/// Equal in the output's type: the same bits, or both NaN.
pub(crate) fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Elements of `values` that differ from `reference`, per output.
pub(crate) fn differing(values: &Values, reference: &Values) -> Vec<u64> {
    values
        .iter()
        .zip(reference)
        .map(|(v, r)| v.iter().zip(r).filter(|(a, b)| !same(**a, **b)).count() as u64)
        .collect()
}

/// Runs `program` as a trial and returns its outputs' values.
fn trial(runner: &mut dyn Session, spec: &Spec, program: &Variant) -> Result<Values, DiffError> {
    Ok(trial_with_outputs(runner, spec, program)?.0)
}

/// [`trial`], with the output buffers as downloaded.
fn trial_with_outputs(
    runner: &mut dyn Session,
    spec: &Spec,
    program: &Variant,
) -> Result<(Values, Downloaded), DiffError> {
    let (outcome, _) = runner.run_variant(program, TrialTiming::AccuracyOnly)?;
    Ok((values_of(spec, &outcome.downloaded)?, outcome.downloaded))
}

/// The tolerance an output must stay within for a build to count as "within tolerance": the
/// spec's, or bit-identity when it gives none (no deviation was allowed).
fn tolerance_of(o: &OutputSpec) -> Tolerance {
    o.tolerance.unwrap_or(Tolerance::Exact)
}

/// Whether every output of `values` stays within its tolerance of `reference`.
fn within_tolerance(spec: &Spec, values: &Values, reference: &Values) -> bool {
    spec.outputs
        .iter()
        .zip(values.iter().zip(reference))
        .all(|(o, (v, r))| compare(dtype_of(spec, o), v, r).meets(&tolerance_of(o)))
}

/// The candidates the search switches: the switchable ones, less, against another flag set,
/// the float→integer conversions. Every GPU build converts alike (saturating), so they cannot
/// cause a difference between two builds; switched to the x86-64 result they *make* one, and
/// a candidate that makes the outputs differ more breaks the monotonicity the binary splitting
/// assumes: against `strict`, the projector's line-24 cast switched made every set containing
/// it fail, and four harmless line-18 casts tested beside it were blamed.
pub(crate) fn searched(list: &[Candidate], against: Against) -> Vec<usize> {
    (0..list.len())
        .filter(|&k| list[k].switchable())
        .filter(|&k| {
            !(matches!(against, Against::Flags(_))
                && list[k].cause == mantissa_ptx::pass::cause::Cause::FloatToInt)
        })
        .collect()
}

/// What measuring after the search needs: the runner, the candidates of the program as
/// written and the reference its outputs are compared with.
pub(crate) struct Measuring<'s, 'g> {
    pub(crate) runner: &'s mut (dyn Session + 'g),
    pub(crate) spec: &'s Spec,
    pub(crate) request: DiffRequest,
    pub(crate) list: Vec<Candidate>,
    pub(crate) reference: Values,
}

impl Measuring<'_, '_> {
    /// Runs `program` as a timed trial (the request's repetitions after two warm-ups): its
    /// outputs' values and the harness's timing of the step sequence.
    pub(crate) fn timed(
        &mut self,
        program: &Variant,
    ) -> Result<(Values, Option<Timing>), DiffError> {
        let (values, timing, _) = self.timed_with_outputs(program)?;
        Ok((values, timing))
    }

    /// The output buffers of `program` run once, untimed.
    pub(crate) fn outputs_of(&mut self, program: &Variant) -> Result<Downloaded, DiffError> {
        Ok(trial_with_outputs(self.runner, self.spec, program)?.1)
    }

    /// [`Measuring::timed`], with the output buffers of the checked run as downloaded.
    pub(crate) fn timed_with_outputs(
        &mut self,
        program: &Variant,
    ) -> Result<(Values, Option<Timing>, Downloaded), DiffError> {
        let timing = TrialTiming::Timed {
            warmup: 2,
            repeats: self.request.repeats,
        };
        let (outcome, _) = self.runner.run_variant(program, timing)?;
        let values = values_of(self.spec, &outcome.downloaded)?;
        Ok((values, outcome.timing, outcome.downloaded))
    }

    /// The program as written with the candidates `chosen` switched, made by the runner (its
    /// reports say what each cause pass did).
    pub(crate) fn switched(&mut self, chosen: &[usize]) -> Result<Variant, DiffError> {
        let recipe = pipelines::causes(&self.list, chosen)?;
        Ok(self.runner.make(recipe)?)
    }

    /// Each output of `values` against the reference, with the harness's error metrics.
    pub(crate) fn errors(&self, values: &Values) -> Vec<OutputError> {
        self.spec
            .outputs
            .iter()
            .zip(values.iter().zip(&self.reference))
            .map(|(o, (v, r))| {
                let c = compare(dtype_of(self.spec, o), v, r);
                OutputError {
                    name: o.name(),
                    within_tolerance: c.meets(&tolerance_of(o)),
                    differing: c.differing as u64,
                    max_ulps: c.max_ulps,
                    max_rel: c.max_rel,
                    digits: c.digits,
                    shadow: None,
                }
            })
            .collect()
    }

    /// Whether every output of `values` stays within its tolerance of the reference.
    pub(crate) fn within_tolerance(&self, values: &Values) -> bool {
        within_tolerance(self.spec, values, &self.reference)
    }
}

/// Fails with a usage error, before anything runs, when an output has no reference or its
/// reference's length or type does not fit the output (the `.npy` is read to check it).
pub fn check_references(spec: &Spec) -> Result<(), DiffError> {
    if let Some(o) = spec.outputs.iter().find(|o| o.reference.is_none()) {
        return Err(DiffError::NoReference(o.name()));
    }
    mantissa_harness::data::references(spec)?;
    Ok(())
}

/// Explains `spec`'s differences as `request` asks (see the module docs); `progress` hears
/// where it is.
pub fn diff(
    gpu: &Gpu,
    spec: &Spec,
    request: &DiffRequest,
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<DiffRun, DiffError> {
    if request.against == Against::Reference {
        check_references(spec)?;
    }
    progress(DiffEvent::Baseline);
    let opts = RunnerOptions {
        baseline_timing: TrialTiming::AccuracyOnly,
        download_outputs: true,
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(gpu, spec, request.flags, opts)?;
    let runner: &mut dyn Session = &mut runner;
    // Run as every trial is: its PTX JIT-compiled by the driver, in this runner.
    let as_built = runner.make(pipelines::as_built())?;
    let (first, first_outputs) = trial_with_outputs(runner, spec, &as_built)?;
    let second = trial(runner, spec, &as_built)?;
    let unstable: Vec<String> = spec
        .outputs
        .iter()
        .zip(differing(&second, &first))
        .filter(|(_, n)| *n > 0)
        .map(|(o, n)| format!("{}: {n} elements", o.name()))
        .collect();
    if !unstable.is_empty() {
        return Err(DiffError::Nondeterministic(unstable.join(", ")));
    }
    let mut notes = Vec::new();
    let cubin = values_of(spec, &runner.baseline().downloaded)?;
    if differing(&cubin, &first).iter().any(|&n| n > 0) {
        notes.push(
            "the driver's JIT of the PTX computes differently from the build's own binary; \
             the JIT's results are explained (every trial is JIT-compiled)"
                .into(),
        );
    }
    let reference: Values = match request.against {
        Against::Reference => {
            let refs = mantissa_harness::data::references(spec)?;
            spec.outputs
                .iter()
                .zip(refs)
                .map(|(o, r)| {
                    let dtype = dtype_of(spec, o);
                    r.unwrap_or_default()
                        .into_iter()
                        .map(|x| in_type(dtype, x))
                        .collect()
                })
                .collect()
        }
        Against::Flags(other) => {
            // Run as every trial is: its PTX JIT-compiled by the driver, in this runner.
            progress(DiffEvent::Other(other.name()));
            let other = runner.make(pipelines::other_build(other))?;
            trial(runner, spec, &other)?
        }
    };
    let as_written = differing(&first, &reference);
    let total: u64 = as_written.iter().sum();
    if total == 0 {
        return Err(DiffError::NoDifference {
            flags: request.flags.name(),
            against: request.against.name(),
        });
    }
    let strict = match runner.base_module(&Base::Built(FlagSet::STRICT)) {
        Ok(b) => Some(b),
        Err(TrialError::Build { message }) => {
            notes.push(format!(
                "the strict build failed ({message}): every fma is a contraction candidate"
            ));
            None
        }
        Err(e) => return Err(e.into()),
    };
    let module = runner.base_module(&Base::AsBuilt)?;
    let list = candidates(&module.module, strict.as_ref().map(|b| &b.module));
    let switchable = searched(&list, request.against);
    progress(DiffEvent::Candidates {
        differing: total,
        switchable: switchable.len(),
        listed: list.len() - switchable.len(),
    });
    // Sets whose outputs stay within tolerance: the switch sets the fastest build is chosen
    // among.
    let mut within: Vec<Vec<usize>> = Vec::new();
    let dtypes: Vec<DType> = spec.outputs.iter().map(|o| dtype_of(spec, o)).collect();
    let Explained {
        found,
        minimal,
        with_all,
        blamed,
        notes: explained,
    } = explain(
        runner,
        &Observed {
            list: &list,
            switchable: &switchable,
            first: &first,
            reference: &reference,
            dtypes: &dtypes,
            total,
        },
        &mut |runner, program| trial(runner, spec, program),
        &mut |chosen, values| {
            if within_tolerance(spec, values, &reference) {
                within.push(chosen.to_vec());
            }
        },
        progress,
    )?;
    notes.extend(explained);
    let remaining = differing(&with_all, &reference);
    let outputs = spec
        .outputs
        .iter()
        .zip(&first)
        .zip(as_written.iter().zip(&remaining))
        .map(|((o, v), (&d, &r))| OutputDiff {
            name: o.name(),
            elements: v.len(),
            differing: d,
            remaining: r,
        })
        .collect();
    let effect_trials = minimal.len() + usize::from(!minimal.is_empty());
    let unexplained = remaining.iter().sum::<u64>() > 0;
    let math = math_functions(
        gpu,
        spec,
        request.flags,
        &module.module,
        unexplained,
        &mut |name| progress(DiffEvent::MathFunction(name.to_string())),
    );
    let mut session = Measuring {
        runner,
        spec,
        request: *request,
        list,
        reference,
    };
    let (mut naive_time, mut costs, mut builds) = (None, Vec::new(), Vec::new());
    if request.repeats > 0 {
        let (_, t) = session.timed(&as_built)?;
        naive_time = t;
        let mut measured = Vec::new();
        if let Some(naive) = &naive_time {
            measured = crate::cost::measure(&mut session, &minimal, naive, progress)?;
        }
        if let (true, Some(naive)) = (request.builds, &naive_time) {
            let (made, note) = crate::builds::make(
                &mut session,
                &crate::builds::Tried {
                    naive,
                    naive_values: &first,
                    naive_outputs: &first_outputs,
                    minimal: &minimal,
                    within: &within,
                    costs: &measured,
                },
                progress,
            )?;
            builds = made;
            notes.extend(note);
        }
        costs = measured.into_iter().map(|(c, _)| c).collect();
    } else if request.builds {
        notes.push("the four builds need timing: --repeats 0 made none".into());
    }
    let list = session.list;
    Ok(DiffRun {
        spec: spec.name.clone(),
        flags: request.flags.name(),
        against: request.against.name(),
        device: gpu.info().name.clone(),
        outputs,
        candidates: list,
        blamed,
        differing: total,
        remaining: remaining.iter().sum(),
        search_trials: found.tests,
        effect_trials,
        fell_back: found.fell_back,
        naive_time,
        costs,
        builds,
        math,
        notes,
    })
}

/// What a diff has observed before its search: the candidates, those it switches, the outputs as
/// written and the reference (each output's type), and how many elements differ.
pub(crate) struct Observed<'a> {
    pub(crate) list: &'a [Candidate],
    pub(crate) switchable: &'a [usize],
    pub(crate) first: &'a Values,
    pub(crate) reference: &'a Values,
    pub(crate) dtypes: &'a [DType],
    pub(crate) total: u64,
}

/// What the search and the effects found.
pub(crate) struct Explained {
    /// The search's result (its indices are into the switchable candidates).
    pub(crate) found: Found,
    /// The minimal set, as indices into the candidate list.
    pub(crate) minimal: Vec<usize>,
    /// The outputs with the minimal set switched.
    pub(crate) with_all: Values,
    /// Each member alone, with what the SASS says.
    pub(crate) blamed: Vec<Blamed>,
    /// What the reader should know: the SASS could not be read, the causes interact.
    pub(crate) notes: Vec<String>,
}

/// The search for a minimal set of switchable causes whose switching makes the outputs equal
/// the reference, then each member switched alone, each a program `run` runs through `runner`;
/// `searched` sees every set the search tries with its outputs.
pub(crate) fn explain(
    runner: &mut dyn Session,
    o: &Observed<'_>,
    run: &mut dyn FnMut(&mut dyn Session, &Variant) -> Result<Values, DiffError>,
    searched: &mut dyn FnMut(&[usize], &Values),
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<Explained, DiffError> {
    let mut switched = |runner: &mut dyn Session, chosen: &[usize]| {
        let program = runner.make(pipelines::causes(o.list, chosen)?)?;
        run(runner, &program)
    };
    let mut number = 0;
    let found: Found = search(o.switchable.len(), o.total, |set| {
        let chosen: Vec<usize> = set.iter().map(|&k| o.switchable[k]).collect();
        let values = switched(runner, &chosen)?;
        searched(&chosen, &values);
        let d: u64 = differing(&values, o.reference).iter().sum();
        number += 1;
        progress(DiffEvent::Trial {
            number,
            switched: set.len(),
            differing: d,
        });
        Ok::<_, DiffError>(SetVerdict { differing: d })
    })?;
    let minimal: Vec<usize> = found.minimal.iter().map(|&k| o.switchable[k]).collect();
    progress(DiffEvent::Effects(minimal.len()));
    let with_all = if minimal.is_empty() {
        o.first.clone()
    } else {
        switched(runner, &minimal)?
    };
    let mut blamed = Vec::new();
    for &c in &minimal {
        let values = switched(runner, &[c])?;
        blamed.push(Blamed {
            candidate: c,
            alone: effect(o.dtypes, o.first, &values, o.reference),
            sass: SassCheck::NotApplicable,
        });
    }
    let members: Vec<&Candidate> = minimal.iter().map(|&c| &o.list[c]).collect();
    let (checks, note) = crate::sass::check(runner.as_built_ptx(), &members);
    for (b, check) in blamed.iter_mut().zip(checks) {
        b.sass = check;
    }
    let mut notes: Vec<String> = note.into_iter().collect();
    if found.fell_back {
        notes.push(
            "the causes interact (switching more brought a difference back): the set was \
             reduced one candidate at a time"
                .into(),
        );
    }
    Ok(Explained {
        found,
        minimal,
        with_all,
        blamed,
        notes,
    })
}

/// What switching one cause alone did: `values` against the program as written (`first`)
/// and the reference.
pub(crate) fn effect(
    dtypes: &[DType],
    first: &Values,
    values: &Values,
    reference: &Values,
) -> Effect {
    let mut e = Effect {
        changed: 0,
        fixes: 0,
        max_ulps: 0.0,
        max_rel: 0.0,
    };
    for (((&dtype, v), f), r) in dtypes.iter().zip(values).zip(first).zip(reference) {
        let c = compare(dtype, v, f);
        e.changed += c.differing as u64;
        e.max_ulps = e.max_ulps.max(c.max_ulps);
        e.max_rel = e.max_rel.max(c.max_rel);
        e.fixes += v
            .iter()
            .zip(f)
            .zip(r)
            .filter(|((v, f), r)| !same(**f, **r) && same(**v, **r))
            .count() as u64;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn against_another_build_float_to_int_conversions_are_not_searched() {
        let cand = |cause, line| Candidate {
            site: mantissa_ptx::site::Site {
                function: "k".into(),
                file: "k.cu".into(),
                line,
                ordinal: 0,
                inlined: Vec::new(),
            },
            inst: mantissa_ptx::InstId(line),
            cause,
            op: String::new(),
            detail: String::new(),
            not_switchable: None,
        };
        use mantissa_ptx::pass::cause::Cause;
        let list = vec![
            cand(Cause::Contraction, 17),
            cand(Cause::FloatToInt, 18),
            cand(Cause::FloatToInt, 24),
            Candidate {
                not_switchable: Some("listed".into()),
                ..cand(Cause::MathFunction, 30)
            },
        ];
        assert_eq!(searched(&list, Against::Reference), vec![0, 1, 2]);
        assert_eq!(searched(&list, Against::Flags(FlagSet::STRICT)), vec![0]);
    }

    #[test]
    fn equality_is_in_the_outputs_type_and_nan_equals_nan() {
        assert!(same(f64::NAN, -f64::NAN));
        assert!(!same(0.0, -0.0));
        let r = in_type(DType::F32, 0.1);
        assert!(same(r, f64::from(0.1f32)));
        assert!(!same(in_type(DType::F64, 0.1), f64::from(0.1f32)));
        let v = vec![vec![1.0, 2.0, f64::NAN], vec![5.0]];
        let r = vec![vec![1.0, 2.5, f64::NAN], vec![6.0]];
        assert_eq!(differing(&v, &r), vec![1, 1]);
    }
}
