//! An application as a [`Session`]: what shadow (and, next, diff and tune) ask of a program,
//! answered by runs of the application. The analyses work on one module, the **target**: the
//! one with PTX that the most launches came from; the application's other modules run as they
//! are. A made recipe replaces the target at load time (`<key>.ptx`), its symbol writes go in
//! `<key>.writes.json` and the globals it reads back are read when the program ends
//! (`<key>.reads.json`), so an instrumented run accumulates over the whole application.
//!
//! A trial's outputs are the baseline's groups of copies to the host (see
//! [`super::session`]), compared with the baseline's last copies; its time is the application's
//! kernel time. A trial that ends badly is [`TrialError::Failed`] (the next may run), a
//! replacement the driver refuses is [`TrialError::Build`], a launch out of resources is
//! [`TrialError::OutOfResources`] (so that shadow splits its sites).
//!
//! Kernel resources are what the attach library asked the driver (`cuFuncGetAttribute`) at each
//! kernel's first launch in a run of that variant. Not yet: shadow values
//! ([`Session::run_shadowed`] needs every allocation mirrored), build facts.

use super::events::Event;
use super::session::{AppSession, PrintedOutput, SessionError};
use super::trace::program::Program;
use super::AppRun;
use crate::compare::OutputResult;
use crate::config::{Configuration, Demotion};
use crate::recipe::{Base, BaseModule, Recipe, Variant};
use crate::trial::build::demote_instructions;
use crate::trial::shadowed::ShadowedRun;
use crate::trial::variant::make_variant;
use crate::trial::{
    BuildKind, GlobalBytes, KernelTime, Resources, TrialError, TrialOutcome, TrialTiming,
};
use crate::Session;
use mantissa_gpu::{Arch, BuildFacts, DType, HostData, LaunchDims, Timing};
use std::collections::HashMap;
use std::sync::Arc;

/// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
const OUT_OF_RESOURCES: i64 = 701;

/// What the session keeps for the analyses.
pub(crate) struct Analysed {
    /// The target module's index in [`AppSession::modules`], when one has PTX and launches.
    target: Option<usize>,
    bases: Vec<(Base, Arc<BaseModule>)>,
    runtimes: Vec<(&'static str, String)>,
    device: std::sync::OnceLock<String>,
    /// The baseline as a trial outcome.
    pub(crate) outcome: TrialOutcome,
    /// The last checked trial's copies to the host ([`Session::outputs`]); none before one.
    last_outputs: Option<Vec<(String, HostData)>>,
    /// What each variant's kernels used, by the hash of its PTX, from its last run.
    resources: HashMap<u64, Resources>,
    /// What trials are compared on instead of the copies to the host, when given.
    printed: Vec<PrintedOutput>,
    /// What a trial costs instead of its kernel time, when given.
    cost: Option<Figure>,
}

/// A figure of merit the application prints, the cost of a run instead of its kernel time:
/// `--fom REGEX` (`higher`: a rate, whose reciprocal is the cost; else a time-like figure).
#[derive(Debug, Clone)]
pub struct Figure {
    /// Where it is printed.
    pub printed: PrintedOutput,
    /// Whether higher is better.
    pub higher: bool,
}

impl Figure {
    /// The run's cost: the figure (lower is better) or its reciprocal (higher is better).
    fn cost(&self, run: &AppRun) -> Option<f64> {
        let v = self.printed.value(run)?;
        let c = if self.higher { 1.0 / v } else { v };
        (c.is_finite() && c > 0.0).then_some(c)
    }
}

impl Analysed {
    /// The target: of the modules with PTX, the one most launches came from.
    pub(crate) fn new(program: &Program, modules: &[super::session::AppModule]) -> Analysed {
        let mut launches: HashMap<&str, usize> = HashMap::new();
        for op in &program.ops {
            if let super::trace::program::Op::Launch { module, .. } = op {
                *launches.entry(module.as_str()).or_default() += 1;
            }
        }
        let target = modules
            .iter()
            .enumerate()
            .filter(|(_, m)| m.ptx.is_some())
            .max_by_key(|(_, m)| launches.get(m.key.as_str()).copied().unwrap_or(0))
            .map(|(i, _)| i);
        Analysed {
            target,
            bases: Vec::new(),
            runtimes: Vec::new(),
            device: std::sync::OnceLock::new(),
            last_outputs: None,
            resources: HashMap::new(),
            printed: Vec::new(),
            cost: None,
            outcome: TrialOutcome {
                outputs: Vec::new(),
                timing: None,
                notes: Vec::new(),
                first_launch: None,
                downloaded: Vec::new(),
                build: BuildKind::Static,
            },
        }
    }
}

fn no_target() -> TrialError {
    TrialError::Refused(
        "the application loaded no module with PTX: rebuild it with PTX beside the SASS \
         (`-gencode arch=compute_XX,code=compute_XX`, or `-arch=sm_XX`)"
            .into(),
    )
}

impl AppSession {
    fn target(&self) -> Result<&super::session::AppModule, TrialError> {
        self.analysed
            .target
            .map(|i| &self.modules[i])
            .ok_or_else(no_target)
    }

    /// The target module's key, when there is one.
    pub fn target_key(&self) -> Option<&str> {
        self.analysed.target.map(|i| self.modules[i].key.as_str())
    }

    /// `run` as a trial outcome: the baseline's groups compared, the kernel time, the first
    /// launch's shape.
    pub(crate) fn outcome_of(&self, run: &AppRun) -> Result<TrialOutcome, SessionError> {
        let c = self.compare(run)?;
        let outputs = if self.analysed.printed.is_empty() {
            copy_results(&c)
        } else {
            self.printed_results(run)
        };
        let first_launch = run.events.iter().find_map(|e| match e {
            Event::Launch {
                grid,
                block,
                shared,
                ..
            } => Some(
                LaunchDims::new((grid[0], grid[1], grid[2]), (block[0], block[1], block[2]))
                    .with_shared_bytes(*shared as u32),
            ),
            _ => None,
        });
        let mut notes = Vec::new();
        if let Some(d) = c.diverged {
            notes.push(format!("the copies to the host diverge: {d}"));
        }
        Ok(TrialOutcome {
            outputs,
            timing: self
                .run_cost(run)
                .and_then(|ms| Timing::from_samples(vec![ms], 0, 1)),
            notes,
            first_launch,
            downloaded: Vec::new(),
            build: BuildKind::Static,
        })
    }

    /// Runs the application once with its target module made as `configuration` says (a
    /// configuration file's sites name the target's instructions, as `mantissa tune -- APP`
    /// saves them), the other modules as they are.
    pub fn run_configuration(
        &mut self,
        configuration: &Configuration,
    ) -> Result<super::session::AppTrial, SessionError> {
        let name = configuration.name();
        let refused = |e: TrialError| SessionError::Refused(format!("{name}: {e}"));
        let recipe = Recipe::new(&name, Base::Configured(configuration.clone()));
        let variant = Session::make(self, recipe).map_err(refused)?;
        let key = self.target().map_err(refused)?.key.clone();
        let dir = self.next_trial_dir();
        let replace = self.stage(&variant, &dir).map_err(refused)?;
        let run = self.run_with(&dir, Some(replace))?;
        Ok(super::session::AppTrial {
            name,
            refused: super::session::refused_loads(&run),
            run,
            reports: vec![(key, variant.reports)],
            not_rewritten: Vec::new(),
            notes: variant.notes,
        })
    }

    /// Compares trials on what the application prints (`--output NAME=REGEX`) instead of its
    /// copies to the host; each must be in the baseline's output.
    pub fn compare_printed(&mut self, printed: Vec<PrintedOutput>) -> Result<(), SessionError> {
        if let Some(p) = printed.iter().find(|p| p.value(&self.baseline).is_none()) {
            return Err(SessionError::NotPrinted(p.name.clone()));
        }
        self.analysed.printed = printed;
        self.analysed.outcome = self.outcome_of(&self.baseline)?;
        Ok(())
    }

    /// Costs runs by a figure the application prints (`--fom`) instead of their kernel time;
    /// the baseline must print it.
    pub fn cost_by(&mut self, figure: Figure) -> Result<(), SessionError> {
        if figure.cost(&self.baseline).is_none() {
            return Err(SessionError::NotPrinted(figure.printed.name.clone()));
        }
        self.analysed.cost = Some(figure);
        self.analysed.outcome = self.outcome_of(&self.baseline)?;
        Ok(())
    }

    /// What `run` is compared on, by name: the values it printed (`--output`; NaN where it
    /// printed none), else its last copy of each group of copies to the host.
    fn outputs_of(&self, run: &AppRun) -> Result<Vec<(String, HostData)>, SessionError> {
        if self.analysed.printed.is_empty() {
            return self.last_copies(run);
        }
        Ok(self
            .analysed
            .printed
            .iter()
            .map(|p| {
                let v = p.value(run).unwrap_or(f64::NAN);
                (format!("printed {}", p.name), HostData::F64(vec![v]))
            })
            .collect())
    }

    /// `run`'s cost: its kernel time in ms, or the figure of merit it printed.
    fn run_cost(&self, run: &AppRun) -> Option<f64> {
        match &self.analysed.cost {
            Some(f) => f.cost(run),
            None => super::session::kernel_ms(run),
        }
    }

    /// The printed outputs of `run` against the baseline's (a value it did not print compares
    /// as NaN: no digit is correct).
    fn printed_results(&self, run: &AppRun) -> Vec<OutputResult> {
        self.analysed
            .printed
            .iter()
            .map(|p| {
                let base = p.value(&self.baseline).unwrap_or(f64::NAN);
                let got = p.value(run).unwrap_or(f64::NAN);
                OutputResult {
                    name: format!("printed {}", p.name),
                    value: None,
                    vs_baseline: crate::compare::compare(DType::F64, &[got], &[base]),
                    vs_reference: None,
                    tolerance: None,
                    met: None,
                }
            })
            .collect()
    }

    /// The runtime `header` compiled by NVRTC for the target's architecture, once.
    fn runtime_ptx(
        &mut self,
        header: &'static mantissa_gpu::runtime::RuntimeHeader,
    ) -> Result<String, TrialError> {
        let arch = Session::target_arch(self);
        crate::trial::variant::probed_runtime(&mut self.analysed.runtimes, header, arch)
    }

    /// Writes `variant` as the target's replacement under `dir/replace`.
    fn stage(
        &self,
        variant: &Variant,
        dir: &std::path::Path,
    ) -> Result<std::path::PathBuf, TrialError> {
        let key = &self.target()?.key;
        let replace = dir.join("replace");
        let io = |p: &std::path::Path, e: mantissa_files::WriteError| {
            TrialError::Failed(format!("{}: {e}", p.display()))
        };
        mantissa_files::ensure_dir(&replace).map_err(|e| io(&replace, e))?;
        let mut files = vec![(format!("{key}.ptx"), variant.ptx().as_bytes().to_vec())];
        if !variant.writes().is_empty() {
            let w: Vec<_> = variant
                .writes()
                .iter()
                .map(|(n, b)| serde_json::json!({ "symbol": n, "hex": crate::hex::encode(b) }))
                .collect();
            files.push((
                format!("{key}.writes.json"),
                serde_json::to_vec(&w).unwrap_or_default(),
            ));
        }
        if !variant.read_back.is_empty() {
            let r = serde_json::to_vec(&variant.read_back).unwrap_or_default();
            files.push((format!("{key}.reads.json"), r));
        }
        for (name, bytes) in files {
            let p = replace.join(name);
            mantissa_files::write_file(&p, &bytes).map_err(|e| io(&p, e))?;
        }
        Ok(replace)
    }

    /// One run of the application in a fresh trial directory, its target replaced by
    /// `variant` (none: as it is); a run that ended badly is the trial's error.
    fn replaced_run(&mut self, variant: Option<&Variant>) -> Result<AppRun, TrialError> {
        let dir = self.next_trial_dir();
        let replace = variant.map(|v| self.stage(v, &dir)).transpose()?;
        let run = self
            .run_with(&dir, replace)
            .map_err(|e| TrialError::Failed(e.to_string()))?;
        if let (Some(v), Some(key)) = (variant, self.target_key()) {
            let used = function_resources(&run, key);
            if !used.is_empty() {
                let hash = mantissa_fatbin::fnv1a64(v.ptx().as_bytes());
                self.analysed.resources.insert(hash, used);
            }
        }
        match self.failure(&run) {
            Some(e) => Err(e),
            None => Ok(run),
        }
    }

    /// What `variant`'s kernels used in its last run (one run first, when none ran it yet).
    fn resources_of(&mut self, variant: &Variant) -> Result<Resources, TrialError> {
        let hash = mantissa_fatbin::fnv1a64(variant.ptx().as_bytes());
        if !self.analysed.resources.contains_key(&hash) {
            self.replaced_run(Some(variant))?;
        }
        Ok(self
            .analysed
            .resources
            .get(&hash)
            .cloned()
            .unwrap_or_default())
    }

    /// `variant` run as a trial: the checked run compared with the baseline, then as `timing`
    /// asks. Every run is a process of its own, so the checked run is the first timed one:
    /// `warmup` runs follow it untimed, then `repeats - 1` timed ones; the samples are each
    /// run's kernel time. Returns the checked run beside the outcome.
    fn timed_trial(
        &mut self,
        variant: Option<&Variant>,
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, AppRun), TrialError> {
        let run = self.replaced_run(variant)?;
        let failed = |e: SessionError| TrialError::Failed(e.to_string());
        let mut outcome = self.outcome_of(&run).map_err(failed)?;
        self.analysed.last_outputs = Some(self.outputs_of(&run).map_err(failed)?);
        if let TrialTiming::Timed { warmup, repeats } = timing {
            let mut samples: Vec<f64> = outcome.timing.iter().map(|t| t.median_ms).collect();
            for _ in 0..warmup {
                self.replaced_run(variant)?;
            }
            for _ in 1..repeats {
                let again = self.replaced_run(variant)?;
                samples.extend(self.run_cost(&again));
            }
            outcome.timing = Timing::from_samples(samples, warmup, 1);
        }
        Ok((outcome, run))
    }

    /// How `run` went wrong, as a trial error; `None` when it ran to the end.
    fn failure(&self, run: &AppRun) -> Option<TrialError> {
        let key = self.target_key().unwrap_or_default();
        for e in &run.events {
            match e {
                Event::Load {
                    module: Some(k),
                    replaced: true,
                    error: Some(code),
                    jit_log,
                    ..
                } if k == key => {
                    return Some(TrialError::Build {
                        message: format!(
                            "the driver refused the rewritten module (CUresult {code}): {}",
                            jit_log.as_deref().unwrap_or("").trim()
                        ),
                    })
                }
                Event::Launch {
                    kernel,
                    error: Some(OUT_OF_RESOURCES),
                    ..
                } => {
                    return Some(TrialError::OutOfResources {
                        step: format!("launch {}", kernel.as_deref().unwrap_or("?")),
                        iteration: String::new(),
                        message: "too many resources requested for launch (CUresult 701)".into(),
                        registers: None,
                    })
                }
                _ => {}
            }
        }
        (run.exit != super::Exit::Code(0)).then(|| {
            TrialError::Failed(format!(
                "the application ended with {} (its output: {})",
                run.exit,
                run.dir.display()
            ))
        })
    }
}

impl Session for AppSession {
    fn device_name(&self) -> String {
        self.analysed
            .device
            .get_or_init(|| {
                mantissa_gpu::Toolchain::probe()
                    .ok()
                    .and_then(|t| t.open(0).ok())
                    .map_or_else(|| "an unknown GPU".into(), |g| g.info().name.clone())
            })
            .clone()
    }

    fn build_facts(&self) -> Option<&BuildFacts> {
        None
    }

    fn as_built_ptx(&self) -> &str {
        self.analysed
            .target
            .and_then(|i| self.modules[i].text.as_deref())
            .unwrap_or("")
    }

    fn target_arch(&self) -> Option<Arch> {
        mantissa_ptx::symbols::header(self.as_built_ptx())
            .sm()
            .map(|n| Arch::new(n / 10, n % 10))
    }

    fn baseline(&self) -> &TrialOutcome {
        &self.analysed.outcome
    }

    fn base_module(&mut self, base: &Base) -> Result<Arc<BaseModule>, TrialError> {
        if let Some((_, m)) = self.analysed.bases.iter().find(|(b, _)| b == base) {
            return Ok(m.clone());
        }
        let target = self.target()?;
        let (module, text) = (
            target.ptx.clone().ok_or_else(no_target)?,
            target.text.clone(),
        );
        let made = match base {
            Base::AsBuilt => BaseModule {
                module,
                pinning: None,
                notes: Vec::new(),
                text,
            },
            Base::Pinned => {
                let pinned = crate::trial::pin::pin_contraction(&module, self.target_arch());
                BaseModule {
                    text: pinned.report.is_none().then_some(text).flatten(),
                    module: pinned.module,
                    pinning: pinned.report,
                    notes: pinned.note.into_iter().collect(),
                }
            }
            Base::Configured(Configuration::AsWritten) => BaseModule {
                module,
                pinning: None,
                notes: Vec::new(),
                text,
            },
            Base::Configured(Configuration::Demote(d)) => {
                let (module, notes) = demote_instructions(&module, &app_demotion(d)?)?;
                BaseModule {
                    module,
                    pinning: None,
                    notes,
                    text: None,
                }
            }
            other => {
                return Err(TrialError::Refused(format!(
                    "an application's module is as its build made it: {other} is not available"
                )))
            }
        };
        let made = Arc::new(made);
        self.analysed.bases.push((base.clone(), made.clone()));
        Ok(made)
    }

    fn make(&mut self, recipe: Recipe) -> Result<Variant, TrialError> {
        let base = self.base_module(&recipe.base)?;
        make_variant(&base, recipe, &mut |header| self.runtime_ptx(header))
    }

    fn run_variant(
        &mut self,
        variant: &Variant,
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        let (outcome, run) = self.timed_trial(Some(variant), timing)?;
        let key = self.target()?.key.clone();
        let mut globals = Vec::new();
        for name in &variant.read_back {
            let file = run.dir.join("reads").join(&key).join(format!("{name}.bin"));
            let bytes = std::fs::read(&file).map_err(|e| {
                let why = run.events.iter().find_map(|ev| match ev {
                    Event::Read {
                        symbol,
                        error: Some(err),
                        ..
                    } if symbol == name => Some(err.clone()),
                    _ => None,
                });
                TrialError::Failed(format!(
                    "the global {name} was not read back when the application ended: {}",
                    why.unwrap_or_else(|| e.to_string())
                ))
            })?;
            globals.push((name.clone(), bytes));
        }
        Ok((outcome, globals))
    }

    fn trial(
        &mut self,
        configuration: &Configuration,
        timing: TrialTiming,
    ) -> Result<TrialOutcome, TrialError> {
        let variant = match configuration {
            Configuration::AsWritten => None,
            Configuration::Demote(_) => Some(self.make(Recipe::new(
                &configuration.name(),
                Base::Configured(configuration.clone()),
            ))?),
        };
        let (mut outcome, _) = self.timed_trial(variant.as_ref(), timing)?;
        if let Some(v) = &variant {
            outcome.notes.splice(0..0, v.notes.iter().cloned());
        }
        Ok(outcome)
    }

    /// The baseline's own per-kernel times for the program as written (one run, each launch
    /// timed by the attach library); `runs` runs of a demotion.
    fn kernel_times(
        &mut self,
        configuration: &Configuration,
        runs: u32,
    ) -> Result<Vec<KernelTime>, TrialError> {
        let key = self.target()?.key.clone();
        let mut per_run = Vec::new();
        if *configuration == Configuration::AsWritten {
            per_run.push(kernel_totals(&self.baseline, &key));
        } else {
            let variant = self.make(Recipe::new(
                &configuration.name(),
                Base::Configured(configuration.clone()),
            ))?;
            for _ in 0..runs.max(1) {
                let run = self.replaced_run(Some(&variant))?;
                per_run.push(kernel_totals(&run, &key));
            }
        }
        Ok(kernel_time_medians(&per_run))
    }

    /// Not known for an application (the driver's attributes are not recorded yet): empty.
    fn configuration_resources(
        &mut self,
        configuration: &Configuration,
    ) -> Result<Resources, TrialError> {
        if *configuration == Configuration::AsWritten {
            return self.baseline_resources();
        }
        let variant = self.make(Recipe::new(
            &configuration.name(),
            Base::Configured(configuration.clone()),
        ))?;
        self.resources_of(&variant)
    }

    fn enable_switching(&mut self, _universe: &Configuration) -> Result<(), TrialError> {
        Err(TrialError::Refused(
            "an application's trial is a run of it with its module rewritten and JIT-compiled at load".into(),
        ))
    }

    fn run_shadowed(&mut self, _variant: &Variant) -> Result<ShadowedRun, TrialError> {
        Err(TrialError::Refused(
            "shadow values in an application need its allocations mirrored, which is not built \
             yet: use --analysis demotion,exceptions"
                .into(),
        ))
    }

    fn outputs(&self) -> Result<Vec<(String, HostData)>, TrialError> {
        match &self.analysed.last_outputs {
            Some(outputs) => Ok(outputs.clone()),
            None => self
                .outputs_of(&self.baseline)
                .map_err(|e| TrialError::Failed(e.to_string())),
        }
    }

    /// As the attach library asked the driver at each kernel's first launch (empty where the
    /// driver would not say).
    fn baseline_resources(&self) -> Result<Resources, TrialError> {
        Ok(self
            .target_key()
            .map(|key| function_resources(&self.baseline, key))
            .unwrap_or_default())
    }

    fn variant_resources(&mut self, variant: &Variant) -> Result<Resources, TrialError> {
        self.resources_of(variant)
    }
}

/// Each kernel of the module `key` with what it used in `run`, in the order of first launch.
fn function_resources(run: &AppRun, key: &str) -> Resources {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::Function {
                module: Some(m),
                kernel: Some(k),
                resources,
            } if m == key => Some((k.clone(), *resources)),
            _ => None,
        })
        .collect()
}

/// Each group of copies to the host that the trial made, against the baseline's last.
fn copy_results(c: &super::session::AppComparison) -> Vec<OutputResult> {
    c.groups
        .iter()
        .filter_map(|g| {
            let vs_baseline = g.last.clone()?;
            Some(OutputResult {
                name: g.name.clone(),
                value: None,
                vs_baseline,
                vs_reference: None,
                tolerance: None,
                met: None,
            })
        })
        .collect()
}

/// `d` as an application's module can take it: its instructions. Math calls are named by a
/// spec's marked build (an application's PTX has them inlined: their f64 instructions are
/// instructions); buffers are a spec's.
fn app_demotion(d: &Demotion) -> Result<Demotion, TrialError> {
    crate::config::instructions_only(
        d,
        "name a spec's buffers; an application's allocations are its own",
        "math calls are named by a spec's marked build; in an application's PTX they are inlined, and their f64 instructions are demoted as instructions",
    )
}

/// Per kernel of the module `key`, its summed time (ms) and launches in `run`: the last total
/// the attach library wrote of each.
fn kernel_totals(run: &AppRun, key: &str) -> Vec<(String, f64, u64)> {
    let mut out: Vec<(String, f64, u64)> = Vec::new();
    for e in &run.events {
        if let Event::KernelTime {
            module: Some(m),
            kernel: Some(k),
            ms,
            launches,
        } = e
        {
            if m != key {
                continue;
            }
            match out.iter_mut().find(|(n, ..)| n == k) {
                Some(t) => *t = (k.clone(), *ms, *launches),
                None => out.push((k.clone(), *ms, *launches)),
            }
        }
    }
    out
}

/// Each kernel's median time over runs (a run that did not time it counts as no sample), its
/// launches in the first run that timed it, and its share of the medians' sum.
fn kernel_time_medians(per_run: &[Vec<(String, f64, u64)>]) -> Vec<KernelTime> {
    let mut names: Vec<&str> = Vec::new();
    for run in per_run {
        for (k, ..) in run {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    let mut times: Vec<KernelTime> = names
        .into_iter()
        .filter_map(|name| {
            let found: Vec<(f64, u64)> = per_run
                .iter()
                .filter_map(|r| r.iter().find(|t| t.0 == name).map(|t| (t.1, t.2)))
                .collect();
            let median = Timing::from_samples(found.iter().map(|f| f.0).collect(), 0, 1)?;
            Some(KernelTime {
                kernel: name.to_string(),
                launches: found[0].1,
                median_ms: median.median_ms,
                share: 0.0,
            })
        })
        .collect();
    let total: f64 = times.iter().map(|t| t.median_ms).sum();
    for t in &mut times {
        t.share = if total > 0.0 {
            t.median_ms / total
        } else {
            0.0
        };
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_in(dir: &std::path::Path, events: Vec<Event>, stdout: &str) -> AppRun {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("stdout.txt"), stdout).unwrap();
        AppRun {
            dir: dir.to_path_buf(),
            exit: super::super::Exit::Code(0),
            wall: std::time::Duration::ZERO,
            events,
        }
    }

    fn time(module: &str, kernel: &str, ms: f64, launches: u64) -> Event {
        Event::KernelTime {
            module: Some(module.into()),
            kernel: Some(kernel.into()),
            ms,
            launches,
        }
    }

    #[test]
    fn kernel_times_are_the_last_totals_of_the_target_s_kernels_median_over_runs() {
        let dir = std::env::temp_dir().join(format!("mantissa-kt-{}", std::process::id()));
        // Totals are cumulative: the last line of a kernel is its run's total; another
        // module's kernels are not the target's.
        let runs: Vec<AppRun> = [(1.0, 3.0), (2.0, 5.0), (4.0, 4.0)]
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| {
                run_in(
                    &dir.join(i.to_string()),
                    vec![
                        time("m", "a", a / 2.0, 1),
                        time("m", "a", a, 2),
                        time("m", "b", b, 7),
                        time("other", "a", 100.0, 1),
                    ],
                    "",
                )
            })
            .collect();
        let per_run: Vec<_> = runs.iter().map(|r| kernel_totals(r, "m")).collect();
        assert_eq!(per_run[0], vec![("a".into(), 1.0, 2), ("b".into(), 3.0, 7)]);
        let t = kernel_time_medians(&per_run);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].kernel.as_str(), t[0].median_ms, t[0].launches),
            ("a", 2.0, 2)
        );
        assert_eq!(
            (t[1].kernel.as_str(), t[1].median_ms, t[1].launches),
            ("b", 4.0, 7)
        );
        assert!((t[0].share - 2.0 / 6.0).abs() < 1e-12 && (t[1].share - 4.0 / 6.0).abs() < 1e-12);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_figure_of_merit_is_a_cost_lower_is_better() {
        let dir = std::env::temp_dir().join(format!("mantissa-fom-{}", std::process::id()));
        let run = run_in(&dir, Vec::new(), "zones/s 2.5e6\nzones/s 4e6\n");
        let printed = PrintedOutput::parse(r"fom=zones/s (\S+)").unwrap();
        let rate = Figure {
            printed: printed.clone(),
            higher: true,
        };
        // The last match; a rate's cost is its reciprocal.
        assert_eq!(rate.cost(&run), Some(1.0 / 4e6));
        let time = Figure {
            printed,
            higher: false,
        };
        assert_eq!(time.cost(&run), Some(4e6));
        let zero = run_in(&dir, Vec::new(), "zones/s 0\n");
        assert_eq!(rate.cost(&zero), None, "no finite positive cost");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_application_takes_instructions_only() {
        let mut d = Demotion::all();
        assert_eq!(
            app_demotion(&d).unwrap().math,
            crate::config::Selection::Only(Vec::new())
        );
        d.buffers = vec!["u".into()];
        assert!(app_demotion(&d)
            .unwrap_err()
            .to_string()
            .contains("allocations are its own"));
    }
}
