//! [`TrialRunner`]: one spec under one flag set, set up once and then run as many trials
//! (configurations) as a caller wants, each costing its program's GPU time plus a few device
//! copies, a comparison on the GPU and, for a new configuration, one JIT (cached by PTX hash).
//!
//! Built once ([`TrialRunner::new`]): the program is built, its PTX parsed and the spec planned
//! against it; every buffer's initial contents are uploaded once and kept as pristine copies
//! that nothing writes; the user's references are uploaded once; the baseline (the program as
//! written) is loaded and run once and its outputs kept on the device. Runners of the same spec
//! under other flag sets share all of that ([`Shared`], through [`RunnerOptions::shared`]), so
//! they compare with the one baseline (default flags, as written).
//!
//! Each [`TrialRunner::trial`]: the configuration's PTX is made (once per configuration) and
//! loaded through the JIT cache (once per PTX text; [`TrialRunner::prepare`] compiles many on
//! several CPU threads); the working buffers are restored from the pristine copies device to
//! device and the module's `.global` variables rewritten; the setup steps run, and the state they
//! leave is the restore point of every repeat; the steps run once, checked, and the outputs are
//! compared with the baseline's and the references on the GPU ([`crate::device_compare`]: only
//! summaries come back); then warm-up and timed repeats, each restored first outside the timed
//! region.
//!
//! What a trial runs is a [`Program`]: a loaded module plus symbol writes made after the restore.
//! A static build writes nothing; the *switched* build ([`switched`],
//! [`TrialRunner::enable_switching`]: every site able to run either precision, chosen by a mask
//! in a module global) is one loaded module with a different mask per trial, so that an
//! accuracy-only trial is a symbol write and no JIT ([`TrialOutcome::build`] says which ran).
//!
//! A configuration that keeps buffers in f32 ([`crate::config::Demotion::buffers`]) runs its
//! static build only; its buffers are narrowed after every restore from the pristine copies and
//! widened before the outputs are compared or downloaded ([`storage`]), so that the comparison
//! with the f64 baseline reads doubles.
//!
//! **Where things go.** A new trial strategy (a tuner's search, delta debugging) is a caller of
//! `TrialRunner`: `prepare`, then `trial` per configuration, `TrialError::is_fatal` to stop; it
//! touches no harness internals. A new way to make a program from a configuration (as the switched
//! build keeps its mask in a module global, so that a trial is a symbol write and no JIT) is a
//! `Program` made in a module of `trial/` beside the static path; the restore, the run and the
//! comparison stay as they are.

pub mod build;
mod instrumented;
pub use instrumented::{BufferAddress, GlobalBytes};
mod outputs;
pub mod pin;
mod profile;
pub use profile::KernelTime;
mod resources;
pub mod shadowed;
pub mod storage;
pub mod switched;
pub(crate) mod variant;

use crate::compare::OutputResult;
use crate::config::Configuration;
use crate::data::{materialize, Inputs};
use crate::device_compare::DeviceComparer;
use crate::exec::{context_lost, make_fills, ExecError, Steps};
use crate::spec::{Spec, SpecError};
use crate::validate::{plan, Plan};
use build::{build_module, prepare, Built, MarkedBuilds, Prepared};
use mantissa_gpu::cache::fnv1a64;
use mantissa_gpu::{
    DeviceBuffer, FlagSet, Gpu, GpuError, HostData, LaunchDims, Module, Timing, TimingOptions,
};
use outputs::Reference;
pub use pin::{pin_contraction, Pinned};
pub use resources::Resources;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
pub use switched::{BuildKind, SwitchSummary};

/// Whether a trial is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialTiming {
    /// Outputs only: one checked run, no repeats.
    AccuracyOnly,
    /// Then `warmup` untimed and `repeats` timed runs of the whole step sequence.
    Timed {
        /// Untimed runs after the checked one.
        warmup: u32,
        /// Timed runs (0: no timing).
        repeats: u32,
    },
}

/// How a runner is set up.
#[derive(Clone)]
pub struct RunnerOptions {
    /// Timing of the baseline run made by [`TrialRunner::new`].
    pub baseline_timing: TrialTiming,
    /// What another runner of the same spec already set up (inputs, references, baseline
    /// outputs): compare with its baseline instead of running one's own as the baseline.
    pub shared: Option<Arc<Shared>>,
    /// Bring every output buffer back to the host after each trial ([`TrialOutcome::downloaded`]).
    pub download_outputs: bool,
    /// Wait after every launch of the checked run so that a fault names its step and iteration
    /// (off: one wait at the end; a fault then names the step sequence only).
    pub wait_after_each_launch: bool,
    /// CPU threads for [`TrialRunner::prepare`]'s JIT.
    pub jit_threads: usize,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        RunnerOptions {
            baseline_timing: TrialTiming::Timed {
                warmup: 1,
                repeats: 5,
            },
            shared: None,
            download_outputs: false,
            wait_after_each_launch: true,
            jit_threads: std::thread::available_parallelism().map_or(4, |n| n.get()),
        }
    }
}

/// What runners of one spec share on the device: the buffers' pristine contents, the spec's
/// symbol bytes, the references, and the baseline's outputs.
pub struct Shared {
    pristine: HashMap<String, DeviceBuffer>,
    symbols: Vec<(String, Vec<u8>)>,
    references: Vec<Reference>,
    /// Copies of each output buffer after the baseline's run, by buffer name.
    baseline: HashMap<String, DeviceBuffer>,
    /// Per output (spec order): the baseline's reduced value, for reduced outputs.
    baseline_reduced: Vec<Option<f64>>,
}

/// A trial that ran.
#[derive(Debug, Clone)]
pub struct TrialOutcome {
    /// Per output, in spec order: against the baseline and the reference.
    pub outputs: Vec<OutputResult>,
    /// Device time of the whole step sequence (setup excluded), when timed.
    pub timing: Option<Timing>,
    /// What the configuration's rewrite did, and anything it could not do.
    pub notes: Vec<String>,
    /// The first launch's shape.
    pub first_launch: Option<LaunchDims>,
    /// Each output buffer after the checked run, when [`RunnerOptions::download_outputs`].
    pub downloaded: Vec<(String, HostData)>,
    /// Which build ran: the configuration's own module, or the switched build with its mask.
    pub build: BuildKind,
}

/// Why a trial did not run, and whether anything else can.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The configuration cannot be applied (skip it, go on).
    #[error("{0}")]
    Refused(String),
    /// The program or the configuration's PTX failed to build or JIT (skip it, go on).
    #[error("{message}")]
    Build {
        /// What failed, in one line (the JIT's log may follow on more lines).
        message: String,
    },
    /// A step failed while running: a kernel faulted, a launch was refused, an argument was
    /// out of range.
    #[error("{step}{iteration}: {message}")]
    KernelFault {
        /// `steps[1].steps[2] (launch stencil)`.
        step: String,
        /// `, iteration t=17` (empty outside loops).
        iteration: String,
        /// What went wrong.
        message: String,
        /// The CUDA context is gone with it (nothing else can run in this process).
        context_lost: bool,
    },
    /// A launch needs more registers or shared memory than its block size allows (the program
    /// as written ran, so it is what a rewrite added: skip it, or make it smaller and retry).
    #[error("{step}{iteration}: {message}")]
    OutOfResources {
        /// `steps[1].steps[2] (launch stencil)`.
        step: String,
        /// `, iteration t=17` (empty outside loops).
        iteration: String,
        /// What the driver or the launch check said.
        message: String,
        /// The kernel's registers per thread, as the driver reports them.
        registers: Option<u32>,
    },
    /// The device cannot be used any more (a sticky fault, a hang): stop everything.
    #[error("{0}")]
    DeviceLost(String),
    /// Another device failure (an allocation, a copy); the next trial may run.
    #[error("{0}")]
    Failed(String),
    /// The spec is wrong (only from [`TrialRunner::new`]).
    #[error(transparent)]
    Spec(#[from] SpecError),
}

impl TrialError {
    /// Whether nothing more can run: the device is lost, or the spec is wrong.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            TrialError::DeviceLost(_)
                | TrialError::Spec(_)
                | TrialError::KernelFault {
                    context_lost: true,
                    ..
                }
        )
    }
}

impl From<ExecError> for TrialError {
    fn from(e: ExecError) -> Self {
        let lost = e.context_lost();
        match e {
            ExecError::Step {
                step,
                iterations,
                cause,
                context_lost,
            } => TrialError::KernelFault {
                step,
                iteration: iterations,
                message: cause,
                context_lost,
            },
            ExecError::OutOfResources {
                step,
                iterations,
                cause,
                registers,
            } => TrialError::OutOfResources {
                step,
                iteration: iterations,
                message: cause,
                registers,
            },
            other if lost => TrialError::DeviceLost(other.to_string()),
            other => TrialError::Failed(other.to_string()),
        }
    }
}

/// A GPU failure while doing `what`, typed by whether the context survived.
fn device_error(what: &str) -> impl FnOnce(GpuError) -> TrialError + '_ {
    move |e| {
        if context_lost(&e) {
            TrialError::DeviceLost(format!("{what}: {e}"))
        } else {
            TrialError::Failed(format!("{what}: {e}"))
        }
    }
}

/// A module loaded for trials, with its `.global` variables as they are after loading and the
/// spec's symbols written: the state every trial starts from.
struct Loaded {
    module: Module,
    globals: Vec<(String, Vec<u8>)>,
}

/// What one trial runs: a loaded module, and the symbol writes (PTX name, bytes) made after the
/// restore. A static build writes nothing; a switched build writes its mask.
pub struct Program<'m> {
    loaded: &'m Loaded,
    writes: &'m [(String, Vec<u8>)],
}

/// Why a configuration has no PTX: refused (true) or a failed build (false), and the message.
type Unprepared = (bool, String);

/// Loaded modules kept per runner (least recently used out).
const LOADED_CAPACITY: usize = 8;

/// One spec under one flag set, ready for trials (see the module docs).
pub struct TrialRunner<'g> {
    gpu: &'g Gpu,
    spec: Spec,
    flags: FlagSet,
    built: Built,
    plan: Plan,
    shared: Arc<Shared>,
    work: HashMap<String, DeviceBuffer>,
    /// The buffers as the setup steps left them (only with setup steps).
    after_setup: Option<HashMap<String, DeviceBuffer>>,
    /// The module's `.global` variables as the setup steps left them.
    setup_globals: Vec<(String, Vec<u8>)>,
    fills: HashMap<String, DeviceBuffer>,
    comparer: DeviceComparer,
    marked: MarkedBuilds,
    /// Each configuration's PTX and notes, or why it has none.
    prepared: Vec<(Configuration, Result<Prepared, Unprepared>)>,
    baseline_module: Loaded,
    /// Loaded rewrites by the hash of their PTX, oldest first.
    loaded: Vec<(u64, Loaded)>,
    /// PTX whose JIT failed, by hash, with the message.
    jit_failed: HashMap<u64, String>,
    opts: RunnerOptions,
    baseline: Option<TrialOutcome>,
    /// The switched build, once [`TrialRunner::enable_switching`] made it.
    switched: Option<switched::SwitchedBuild>,
    /// The f32-storage conversion kernels, built by the first trial that keeps a buffer in f32.
    storage: Option<storage::Storage>,
    /// The recipes' bases and runtimes made so far ([`crate::recipe`]).
    made: variant::Made,
}

impl<'g> TrialRunner<'g> {
    /// Builds, plans and loads `spec` under `flags`, uploads (or takes from `opts.shared`) its
    /// inputs and references, and runs the baseline (as written) once.
    pub fn new(
        gpu: &'g Gpu,
        spec: &Spec,
        flags: FlagSet,
        opts: RunnerOptions,
    ) -> Result<Self, TrialError> {
        // Spec errors (inputs, references) come before any build.
        let (inputs, references) = match &opts.shared {
            Some(_) => (None, Vec::new()),
            None => {
                let inputs = materialize(spec)?;
                let references = crate::data::references(spec)?;
                (Some(inputs), references)
            }
        };
        let built =
            build_module(gpu, spec, flags).map_err(|message| TrialError::Build { message })?;
        let symbols = match (&opts.shared, &inputs) {
            (Some(s), _) => s.symbols.clone(),
            (None, Some(i)) => i.symbols.clone(),
            (None, None) => Vec::new(),
        };
        let plan = plan(spec, &built.ptx, &built.lowered, &symbols)?;
        let spec_symbols: Vec<(String, Vec<u8>)> = plan
            .symbols
            .iter()
            .map(|s| s.ptx_name.clone())
            .zip(symbols.iter().map(|s| s.1.clone()))
            .collect();
        // The program as written that does not load is a failed run, not a build error (which
        // would stop a spec run before anything is recorded).
        let module = match &built.compiled {
            Some(c) => gpu.load(c),
            None => gpu.load_jitted(&spec.name, &built.ptx),
        }
        .map_err(|e| match load_error(&e) {
            TrialError::Build { message } => TrialError::Failed(message),
            other => other,
        })?;
        let baseline_module = loaded(gpu, module, &spec_symbols)?;
        let shared_given = opts.shared.clone();
        let pristine = match (&shared_given, &inputs) {
            (None, Some(inputs)) => Some(upload(gpu, inputs)?),
            _ => None,
        };
        let pristine_ref = match (&shared_given, &pristine) {
            (Some(s), _) => &s.pristine,
            (None, Some(p)) => p,
            (None, None) => return Err(TrialError::Failed("no inputs (an internal error)".into())),
        };
        let mut work = HashMap::new();
        for (name, b) in pristine_ref {
            let w = gpu
                .alloc_zeros(name, b.dtype(), b.len())
                .map_err(device_error(&format!("allocating buffer '{name}'")))?;
            work.insert(name.clone(), w);
        }
        let fills = make_fills(gpu, spec).map_err(TrialError::from)?;
        let comparer =
            DeviceComparer::new(gpu).map_err(device_error("building the comparison kernels"))?;
        let mut runner = TrialRunner {
            gpu,
            spec: spec.clone(),
            flags,
            built,
            plan,
            // Replaced below once the baseline outputs exist (when this runner makes them).
            shared: shared_given.clone().unwrap_or_else(|| {
                Arc::new(Shared {
                    pristine: HashMap::new(),
                    symbols: symbols.clone(),
                    references: Vec::new(),
                    baseline: HashMap::new(),
                    baseline_reduced: Vec::new(),
                })
            }),
            work,
            after_setup: None,
            setup_globals: Vec::new(),
            fills,
            comparer,
            marked: MarkedBuilds::default(),
            prepared: Vec::new(),
            baseline_module,
            loaded: Vec::new(),
            jit_failed: HashMap::new(),
            opts,
            baseline: None,
            switched: None,
            storage: None,
            made: variant::Made::default(),
        };
        if shared_given.is_none() {
            let pristine = pristine.unwrap_or_default();
            let refs = outputs::upload_references(gpu, &runner.spec, references)
                .map_err(device_error("uploading the references"))?;
            // The baseline's checked run, on the pristine inputs, before anything is compared.
            runner.restore_from(&pristine)?;
            let program = Program {
                loaded: &runner.baseline_module,
                writes: &[],
            };
            let first = run_checked(
                gpu,
                &runner.spec,
                &runner.plan,
                &runner.fills,
                &program,
                &mut runner.work,
                &mut runner.after_setup,
                &mut runner.setup_globals,
                runner.opts.wait_after_each_launch,
            )?;
            let (baseline, baseline_reduced) =
                outputs::capture(gpu, &mut runner.comparer, &runner.spec, &runner.work)
                    .map_err(device_error("keeping the baseline's outputs"))?;
            runner.shared = Arc::new(Shared {
                pristine,
                symbols,
                references: refs,
                baseline,
                baseline_reduced,
            });
            let timing = runner.opts.baseline_timing;
            let outcome =
                runner.finish(ModuleRef::Baseline, &[], &[], first, timing, Vec::new())?;
            runner.baseline = Some(outcome);
        } else {
            let timing = runner.opts.baseline_timing;
            let outcome = runner.run(ModuleRef::Baseline, &[], &[], timing, Vec::new())?;
            runner.baseline = Some(outcome);
        }
        Ok(runner)
    }

    /// The baseline's (as written) outcome under this runner's flags.
    pub fn baseline(&self) -> &TrialOutcome {
        // Set by `new` before the runner is returned.
        self.baseline
            .as_ref()
            .unwrap_or_else(|| unreachable!("new() runs the baseline"))
    }

    /// What runners of this spec under other flag sets can share ([`RunnerOptions::shared`]).
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// The GPU its trials run on.
    pub(crate) fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// The flag set.
    pub fn flags(&self) -> FlagSet {
        self.flags
    }

    /// The baseline build (its PTX, front end and facts).
    pub fn built(&self) -> &Built {
        &self.built
    }

    /// The notes of `configuration`'s rewrite, once it was prepared (also when its trial failed).
    pub fn notes(&self, configuration: &Configuration) -> Vec<String> {
        self.prepared
            .iter()
            .find(|(c, _)| c == configuration)
            .and_then(|(_, p)| p.as_ref().ok())
            .map_or(Vec::new(), |p| p.notes.clone())
    }

    /// Makes the PTX of each configuration and JIT-compiles those not compiled yet on
    /// [`RunnerOptions::jit_threads`] CPU threads at once, so that their trials only load.
    /// Failures are kept and reported by [`TrialRunner::trial`].
    pub fn prepare(&mut self, configurations: &[Configuration]) {
        for c in configurations {
            let _ = self.prepared_ptx(c);
        }
        let texts: Vec<(String, String)> = self
            .prepared
            .iter()
            .filter(|(c, _)| configurations.contains(c))
            .filter_map(|(_, p)| p.as_ref().ok().and_then(|p| p.ptx.clone()))
            .filter(|ptx| !self.jit_failed.contains_key(&fnv1a64(ptx.as_bytes())))
            .map(|ptx| (self.spec.name.clone(), ptx))
            .collect();
        let items: Vec<(&str, &str)> = texts
            .iter()
            .map(|(n, p)| (n.as_str(), p.as_str()))
            .collect();
        let results = self.gpu.jit_many(&items, self.opts.jit_threads);
        for ((_, ptx), r) in texts.iter().zip(results) {
            if let Err(e) = r {
                self.jit_failed
                    .insert(fnv1a64(ptx.as_bytes()), format!("loading the module: {e}"));
            }
        }
    }

    /// The configuration's PTX and notes, made once.
    fn prepared_ptx(&mut self, configuration: &Configuration) -> Result<Prepared, TrialError> {
        if let Some((_, p)) = self.prepared.iter().find(|(c, _)| c == configuration) {
            return p.clone().map_err(|(refused, message)| match refused {
                true => TrialError::Refused(message),
                false => TrialError::Build { message },
            });
        }
        let p = prepare(
            self.gpu,
            &self.spec,
            self.flags,
            &self.built,
            &self.plan,
            configuration,
            &mut self.marked,
        );
        let kept = match &p {
            Ok(p) => Ok(p.clone()),
            Err(e) => Err((matches!(e, TrialError::Refused(_)), e.to_string())),
        };
        self.prepared.push((configuration.clone(), kept));
        p
    }

    /// The PTX `configuration` runs (`None`: the baseline build as it is), made once.
    pub fn ptx_of(&mut self, configuration: &Configuration) -> Result<Option<String>, TrialError> {
        self.prepared_ptx(configuration).map(|p| p.ptx)
    }

    /// Runs `configuration`: restores, runs, compares on the GPU, and times as asked.
    pub fn trial(
        &mut self,
        configuration: &Configuration,
        timing: TrialTiming,
    ) -> Result<TrialOutcome, TrialError> {
        let why_static = match self.switched_writes(configuration, timing) {
            Ok(r) => return self.run(ModuleRef::Switched, &r.writes, &[], timing, r.notes),
            Err(why) => why,
        };
        let prepared = self.prepared_ptx(configuration)?;
        let module = match &prepared.ptx {
            None => ModuleRef::Baseline,
            Some(ptx) => self.load(ptx)?,
        };
        let mut notes = prepared.notes;
        notes.extend(why_static);
        self.run(module, &[], &prepared.f32_buffers, timing, notes)
    }

    /// The spec's symbols under their PTX names, as every loaded module gets them.
    fn spec_symbols(&self) -> Vec<(String, Vec<u8>)> {
        self.plan
            .symbols
            .iter()
            .map(|s| s.ptx_name.clone())
            .zip(self.shared.symbols.iter().map(|s| s.1.clone()))
            .collect()
    }

    /// The loaded module of `ptx`, loading it (through the JIT cache) if needed.
    fn load(&mut self, ptx: &str) -> Result<ModuleRef, TrialError> {
        let hash = fnv1a64(ptx.as_bytes());
        if let Some(message) = self.jit_failed.get(&hash) {
            return Err(TrialError::Build {
                message: message.clone(),
            });
        }
        if let Some(i) = self.loaded.iter().position(|(h, _)| *h == hash) {
            let entry = self.loaded.remove(i);
            self.loaded.push(entry);
            return Ok(ModuleRef::Loaded(self.loaded.len() - 1));
        }
        let module = match self.gpu.load_jitted(&self.spec.name, ptx) {
            Ok(m) => m,
            Err(e) => {
                let err = load_error(&e);
                if let TrialError::Build { message } = &err {
                    self.jit_failed.insert(hash, message.clone());
                }
                return Err(err);
            }
        };
        let symbols = self.spec_symbols();
        let l = loaded(self.gpu, module, &symbols)?;
        if self.loaded.len() >= LOADED_CAPACITY {
            self.loaded.remove(0);
        }
        self.loaded.push((hash, l));
        Ok(ModuleRef::Loaded(self.loaded.len() - 1))
    }

    /// Copies `from` over the working buffers, device to device.
    fn restore_from(&mut self, from: &HashMap<String, DeviceBuffer>) -> Result<(), TrialError> {
        for (name, src) in from {
            if let Some(dst) = self.work.get_mut(name) {
                self.gpu
                    .copy(src, dst)
                    .map_err(device_error(&format!("restoring buffer '{name}'")))?;
            }
        }
        Ok(())
    }

    /// A whole trial of `m` with `writes`, the buffers `stored` kept in f32: restore, setup,
    /// checked run, compare, time.
    fn run(
        &mut self,
        m: ModuleRef,
        writes: &[(String, Vec<u8>)],
        stored: &[String],
        timing: TrialTiming,
        notes: Vec<String>,
    ) -> Result<TrialOutcome, TrialError> {
        let first = self.restore_and_check(m, writes, stored)?;
        self.finish(m, writes, stored, first, timing, notes)
    }

    /// Restores the working buffers (narrowing the ones `stored` keeps in f32) and runs `m`
    /// with `writes` once, checked: the start of every trial, static, switched or instrumented.
    fn restore_and_check(
        &mut self,
        m: ModuleRef,
        writes: &[(String, Vec<u8>)],
        stored: &[String],
    ) -> Result<Option<LaunchDims>, TrialError> {
        let shared = self.shared.clone();
        self.restore_from(&shared.pristine)?;
        convert(
            self.gpu,
            &mut self.storage,
            &mut self.work,
            stored,
            Layout::F32,
        )?;
        let loaded = pick(m, &self.baseline_module, &self.loaded, &self.switched)?;
        let program = Program { loaded, writes };
        run_checked(
            self.gpu,
            &self.spec,
            &self.plan,
            &self.fills,
            &program,
            &mut self.work,
            &mut self.after_setup,
            &mut self.setup_globals,
            self.opts.wait_after_each_launch,
        )
    }

    /// After the checked run: compare, download, time (buffers `stored` in f32 are widened
    /// for the comparison and narrowed again after each restore from the pristine copies).
    fn finish(
        &mut self,
        m: ModuleRef,
        writes: &[(String, Vec<u8>)],
        stored: &[String],
        first_launch: Option<LaunchDims>,
        timing: TrialTiming,
        notes: Vec<String>,
    ) -> Result<TrialOutcome, TrialError> {
        let shared = self.shared.clone();
        convert(
            self.gpu,
            &mut self.storage,
            &mut self.work,
            stored,
            Layout::F64,
        )?;
        let outputs = outputs::compare_all(
            self.gpu,
            &self.spec,
            &mut self.comparer,
            &self.work,
            &shared,
        )
        .map_err(device_error("comparing the outputs"))?;
        let downloaded = if self.opts.download_outputs {
            outputs::download(self.gpu, &self.spec, &self.work)
                .map_err(device_error("downloading the outputs"))?
        } else {
            Vec::new()
        };
        let (warmup, repeats) = match timing {
            TrialTiming::AccuracyOnly => (0, 0),
            TrialTiming::Timed { warmup, repeats } => (warmup, repeats),
        };
        let mut samples = Vec::new();
        for r in 0..warmup + repeats {
            self.restore_repeat(m, writes, stored)?;
            let TrialRunner {
                gpu,
                spec,
                plan,
                fills,
                work,
                baseline_module,
                loaded,
                switched,
                ..
            } = &mut *self;
            let gpu: &Gpu = gpu;
            let loaded = pick(m, baseline_module, loaded, switched)?;
            let failure: RefCell<Option<ExecError>> = RefCell::new(None);
            let mut steps = Steps::new(gpu, spec, plan, fills);
            let timed = gpu.time_with(TimingOptions { warmup: 0, reps: 1 }, 1, |_| {
                steps
                    .run(&spec.steps, work, &loaded.module, false)
                    .map_err(|e| {
                        let problem = e.to_string();
                        *failure.borrow_mut() = Some(e);
                        GpuError::BadLaunch {
                            kernel: "(spec steps)".into(),
                            problem,
                        }
                    })
            });
            if let Some(e) = failure.into_inner() {
                return Err(e.into());
            }
            let t = timed.map_err(device_error(&format!("timed run {}", r + 1)))?;
            if r >= warmup {
                samples.extend(t.samples_ms);
            }
        }
        Ok(TrialOutcome {
            outputs,
            timing: Timing::from_samples(samples, warmup, 1),
            notes,
            first_launch,
            downloaded,
            build: match m {
                ModuleRef::Switched => BuildKind::Switched,
                ModuleRef::Baseline | ModuleRef::Loaded(_) => BuildKind::Static,
            },
        })
    }
}

impl TrialRunner<'_> {
    /// Brings the working buffers and `m`'s globals back to the restore point of a repeat: the
    /// pristine inputs, or what the setup steps left (buffers `stored` in f32 narrowed). Outside
    /// any timed region.
    fn restore_repeat(
        &mut self,
        m: ModuleRef,
        writes: &[(String, Vec<u8>)],
        stored: &[String],
    ) -> Result<(), TrialError> {
        let TrialRunner {
            gpu,
            shared,
            work,
            after_setup,
            setup_globals,
            baseline_module,
            loaded,
            switched,
            storage,
            ..
        } = self;
        let gpu: &Gpu = gpu;
        let loaded = pick(m, baseline_module, loaded, switched)?;
        let (from, globals) = match after_setup.as_ref() {
            Some(snapshot) => (snapshot, &*setup_globals),
            None => (&shared.pristine, &loaded.globals),
        };
        for (name, src) in from {
            if let Some(dst) = work.get_mut(name) {
                gpu.copy(src, dst)
                    .map_err(device_error(&format!("restoring buffer '{name}'")))?;
            }
        }
        // The setup's end state is already in the f32 layout (its launches are rewritten too);
        // the pristine copies are f64.
        if after_setup.is_none() {
            convert(gpu, storage, work, stored, Layout::F32)?;
        }
        restore_globals(gpu, &loaded.module, globals, writes)
    }
}

/// The layout a buffer kept in f32 is converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Its values as floats in the first half: what the rewritten kernels read and write.
    F32,
    /// Its values as doubles: what the pristine copies, the comparison and downloads hold.
    F64,
}

/// Converts the working buffers `names` to `layout`, building the kernels on first use.
fn convert(
    gpu: &Gpu,
    storage: &mut Option<storage::Storage>,
    work: &mut HashMap<String, DeviceBuffer>,
    names: &[String],
    layout: Layout,
) -> Result<(), TrialError> {
    if names.is_empty() {
        return Ok(());
    }
    if storage.is_none() {
        *storage = Some(
            storage::Storage::new(gpu)
                .map_err(device_error("building the f32-storage conversion kernels"))?,
        );
    }
    let Some(kernels) = storage.as_mut() else {
        return Ok(());
    };
    for name in names {
        let Some(buffer) = work.get_mut(name) else {
            return Err(TrialError::Refused(format!(
                "buffer '{name}' kept in f32 is not a buffer of this run"
            )));
        };
        let what = format!("converting buffer '{name}' to its {layout:?} layout");
        match layout {
            Layout::F32 => kernels.narrow(gpu, buffer),
            Layout::F64 => kernels.widen(gpu, buffer),
        }
        .map_err(device_error(&what))?;
    }
    Ok(())
}

/// Which loaded module a trial runs.
#[derive(Debug, Clone, Copy)]
enum ModuleRef {
    Baseline,
    Loaded(usize),
    Switched,
}

/// The loaded module `m` names.
fn pick<'a>(
    m: ModuleRef,
    baseline: &'a Loaded,
    loaded: &'a [(u64, Loaded)],
    switched: &'a Option<switched::SwitchedBuild>,
) -> Result<&'a Loaded, TrialError> {
    match m {
        ModuleRef::Baseline => Ok(baseline),
        ModuleRef::Loaded(i) => Ok(&loaded[i].1),
        ModuleRef::Switched => switched
            .as_ref()
            .map(|s| &s.loaded)
            .ok_or_else(|| TrialError::Failed("no switched build (an internal error)".into())),
    }
}

/// Writes `globals` (the restore point of the module's `.global` variables) and then `writes`.
fn restore_globals(
    gpu: &Gpu,
    module: &Module,
    globals: &[(String, Vec<u8>)],
    writes: &[(String, Vec<u8>)],
) -> Result<(), TrialError> {
    for (name, bytes) in globals.iter().chain(writes) {
        gpu.write_symbol(module, name, bytes)
            .map_err(device_error(&format!("restoring symbol '{name}'")))?;
    }
    Ok(())
}

/// The values of `module`'s `.global` variables now.
fn read_globals(gpu: &Gpu, module: &Module) -> Result<Vec<(String, Vec<u8>)>, TrialError> {
    module
        .symbols()
        .iter()
        .filter(|s| s.space == "global" && s.bytes.is_some_and(|b| b > 0))
        .map(|s| {
            gpu.read_symbol(module, &s.name)
                .map(|bytes| (s.name.clone(), bytes))
                .map_err(device_error(&format!("reading symbol '{}'", s.name)))
        })
        .collect()
}

/// `module` with the spec's symbols written and its `.global` variables read back: the state
/// every trial of it starts from.
fn loaded(gpu: &Gpu, module: Module, symbols: &[(String, Vec<u8>)]) -> Result<Loaded, TrialError> {
    for (name, bytes) in symbols {
        gpu.write_symbol(&module, name, bytes)
            .map_err(device_error(&format!("setting symbol '{name}'")))?;
    }
    let globals = read_globals(gpu, &module)?;
    Ok(Loaded { module, globals })
}

/// A module that would not load: a build failure when the driver refused the image (skip the
/// configuration), else a device failure.
fn load_error(e: &GpuError) -> TrialError {
    let message = format!("loading the module: {e}");
    match e {
        GpuError::Jit { .. }
        | GpuError::ModuleLoad { .. }
        | GpuError::PtxTooNew { .. }
        | GpuError::BadImage { .. } => TrialError::Build { message },
        _ if context_lost(e) => TrialError::DeviceLost(message),
        _ => TrialError::Failed(message),
    }
}

/// Every buffer's initial contents, uploaded.
fn upload(gpu: &Gpu, inputs: &Inputs) -> Result<HashMap<String, DeviceBuffer>, TrialError> {
    crate::exec::upload_all(gpu, inputs).map_err(TrialError::from)
}

/// Runs `program` once, checked: its symbols restored, the setup steps (whose end state becomes
/// `after_setup` and `setup_globals`, the restore point of the repeats), then the steps. The
/// working buffers must hold the inputs already. Returns the steps' first launch.
#[allow(clippy::too_many_arguments)]
fn run_checked(
    gpu: &Gpu,
    spec: &Spec,
    plan: &Plan,
    fills: &HashMap<String, DeviceBuffer>,
    program: &Program,
    work: &mut HashMap<String, DeviceBuffer>,
    after_setup: &mut Option<HashMap<String, DeviceBuffer>>,
    setup_globals: &mut Vec<(String, Vec<u8>)>,
    wait: bool,
) -> Result<Option<LaunchDims>, TrialError> {
    let module = &program.loaded.module;
    restore_globals(gpu, module, &program.loaded.globals, program.writes)?;
    if !spec.setup.is_empty() {
        Steps::new(gpu, spec, plan, fills).run(&spec.setup, work, module, wait)?;
        let snapshot = after_setup.get_or_insert_with(HashMap::new);
        for (name, buf) in work.iter() {
            if !snapshot.contains_key(name) {
                let copy = gpu
                    .alloc_zeros(&format!("{name}#setup"), buf.dtype(), buf.len())
                    .map_err(device_error(&format!(
                        "allocating the restore point of '{name}'"
                    )))?;
                snapshot.insert(name.clone(), copy);
            }
            if let Some(dst) = snapshot.get_mut(name) {
                gpu.copy(buf, dst).map_err(device_error(&format!(
                    "keeping the restore point of '{name}'"
                )))?;
            }
        }
        *setup_globals = read_globals(gpu, module)?;
    }
    let mut steps = Steps::new(gpu, spec, plan, fills);
    steps.run(&spec.steps, work, module, wait)?;
    if !wait {
        gpu.synchronize().map_err(|e| TrialError::KernelFault {
            step: "steps".into(),
            iteration: " (not waited on after each launch, so the step is not known)".into(),
            message: e.to_string(),
            context_lost: context_lost(&e),
        })?;
    }
    Ok(steps.first_launch)
}
