//! One shadow analysis of a spec's program: the program built and run once as written (the
//! baseline, through [`TrialRunner`]), its PTX instrumented by
//! [`mantissa_ptx::pass::shadow::instrument`], the shadow runtime compiled for the PTX's target
//! and merged, and the result run as a trial of the same runner — the same inputs, restore,
//! steps and device comparison — with the statistics global read back after the checked run.
//!
//! **The instrumented outputs must be the baseline's, bit for bit.** The instrumentation only
//! observes; an output that differs means it changed the computation, and every number it
//! measured is suspect, so that is an error ([`ShadowError::ChangedOutputs`]), never a note.
//!
//! **Shadow values** (`--analysis shadow`) are their own instrumented run of the program as
//! written ([`crate::values`]), merged into the same per-site results by site index.
//!
//! **Too many resources.** Instrumentation adds registers; a kernel that then cannot launch with
//! the spec's block size comes back as [`TrialError::OutOfResources`]. The sites are then split
//! into halves (`ShadowOptions::only`, over the module's site indices) and each half run
//! separately, recursively, down to one site; every split is a note, so the report says the
//! program was measured in several runs (each the whole program, so every site still sees every
//! execution).

use crate::analyses::Analyses;
use crate::lines::{summarise, FunctionSummary, SiteResult};
use crate::source;
use crate::values::{self, changed_outputs, OutputDigits, Reseed};
use mantissa_gpu::{FlagSet, Gpu, LaunchDims};
use mantissa_harness::run::record_build;
use mantissa_harness::{pipelines, Base, Variant};
use mantissa_harness::{
    RunnerOptions, Session, Spec, SpecError, TrialError, TrialRunner, TrialTiming,
};
use mantissa_ptx::model::FunctionKind;
use mantissa_ptx::pass::pin_contraction::PinReport;
use mantissa_ptx::pass::shadow::{ShadowOptions, ShadowReport, SiteStats};
use serde::Serialize;
use std::collections::VecDeque;
use std::ops::Range;

/// What to analyse and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowRequest {
    /// The flag set the program is built with (the baseline is the program as written under it).
    pub flags: FlagSet,
    /// Which analyses.
    pub analyses: Analyses,
    /// Also time the program as written and instrumented (median of 5 runs after 1 warm-up).
    pub time: bool,
}

/// Where an analysis is, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShadowEvent {
    /// Building the program and running it as written.
    Baseline,
    /// The PTX is instrumented: this many sites in this many functions.
    Instrumented {
        /// Sites (floating-point instructions measured).
        sites: usize,
        /// Functions with at least one site.
        functions: usize,
    },
    /// Running the program with these sites instrumented.
    Running {
        /// Site indices instrumented in this run.
        sites: Range<u32>,
    },
    /// Running the program with shadow values (its own instrumented run).
    Values,
    /// The run of these sites exceeded resources and is split into two.
    Split {
        /// The sites that did not fit in one run.
        sites: Range<u32>,
        /// What the launch said.
        why: String,
    },
}

/// One instrumented run of the program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartRun {
    /// The analyses the run's build measures: `demotion,exceptions` (or one of them), or
    /// `shadow` (the values analysis, always a run of its own).
    pub analyses: String,
    /// The site indices instrumented.
    pub sites: Range<u32>,
    /// Median time of the whole step sequence, when timed.
    pub time_ms: Option<f64>,
}

/// What one kernel of one build uses per thread, as the driver reports it: instrumentation adds
/// registers (fewer threads resident) and may spill (local memory traffic).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelCost {
    /// The kernel.
    pub kernel: String,
    /// `as written`, or the analyses its instrumented build measures ([`PartRun::analyses`]).
    pub build: String,
    /// Registers per thread.
    pub registers: u32,
    /// Local memory per thread, bytes (spills and run-time-indexed arrays).
    pub local_bytes: u32,
}

/// The costs of `resources` as built for `build`.
pub(crate) fn costs(build: &str, resources: mantissa_harness::Resources) -> Vec<KernelCost> {
    resources
        .into_iter()
        .map(|(kernel, r)| KernelCost {
            kernel,
            build: build.to_string(),
            registers: r.registers,
            local_bytes: r.local_bytes,
        })
        .collect()
}

/// Time of the program as written against instrumented.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Overhead {
    /// Median time of the step sequence as written, ms.
    pub original_ms: f64,
    /// The instrumented runs' median times added up, ms (one run unless split).
    pub instrumented_ms: f64,
    /// `instrumented_ms / original_ms`.
    pub ratio: f64,
}

/// What an analysis found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShadowRun {
    /// The spec's name.
    pub spec: String,
    /// The flag set's name.
    pub flags: String,
    /// The analyses made.
    pub analyses: Analyses,
    /// The module's kernels (`.entry`), in PTX order.
    pub kernels: Vec<String>,
    /// Every site, in index order, with what was measured at it.
    pub sites: Vec<SiteResult>,
    /// The sites per function and source line, ranked, with source text.
    pub functions: Vec<FunctionSummary>,
    /// The instrumented runs of the demotion error and exceptions (more than one when the
    /// program had to be split); the shadow-values run is not among them.
    pub runs: Vec<PartRun>,
    /// Anything the reader should know (splits, the pass's notes).
    pub notes: Vec<String>,
    /// Shadow values: the definitions that re-seed their shadow and are not sites.
    pub reseeds: Vec<Reseed>,
    /// Shadow values: the digits right per floating-point output buffer.
    pub outputs: Vec<OutputDigits>,
    /// Original against instrumented time, when asked for.
    pub timing: Option<Overhead>,
    /// Registers and local memory per kernel: as written, then each instrumented build that
    /// ran whole (a split run's parts are not listed).
    pub resources: Vec<KernelCost>,
    /// The device's name.
    pub device: String,
    /// ptxas's contractions pinned in the module the analyses instrument, or why not.
    pub contraction: Contraction,
    /// The first launch of the steps (for records).
    #[serde(skip)]
    pub first_launch: Option<LaunchDims>,
    /// How the program was built (for records).
    #[serde(skip)]
    pub build: Option<mantissa_report::Build>,
}

/// What pinning ptxas's contractions did to the module the analyses instrument
/// ([`mantissa_harness::trial::pin`]): the instrumented program then fuses exactly the products
/// the program as built fuses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Contraction {
    /// The pairs pinned as `fma.rn`, the instructions given `.rn` and those left as written;
    /// `None` when nothing was pinned.
    pub pinned: Option<PinReport>,
    /// Why nothing was pinned (`contraction not pinned: no nvdisasm found`).
    pub note: Option<String>,
}

impl ShadowRun {
    /// Kernels with no site (no floating-point instruction the analyses measure).
    pub fn kernels_without_sites(&self) -> Vec<&str> {
        self.kernels
            .iter()
            .filter(|k| !self.sites.iter().any(|s| &s.site.function == *k))
            .map(String::as_str)
            .collect()
    }
}

/// Why an analysis did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// The spec is wrong (a usage error).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The program as written did not build, load or run, or the instrumented one failed.
    #[error("{0}")]
    Trial(TrialError),
    /// The pass refused the module.
    #[error("instrumenting: {0}")]
    Pass(#[from] mantissa_ptx::pass::shadow::ShadowError),
    /// The shadow-values pass refused the module, or the buffer table cannot hold the buffers.
    #[error("shadow values: {0}")]
    Values(#[from] mantissa_ptx::pass::shadow_values::ValuesError),
    /// The shadow-values program exceeds the launch's resources (it cannot be split: shadows
    /// flow through the whole program).
    #[error("shadow values: the instrumented program exceeds the launch's resources ({why}){}; shadows must flow through the whole program, so it cannot be split over runs: try a smaller block, or --analysis demotion,exceptions", .registers.map_or(String::new(), |r| format!("; it uses {r} registers per thread instrumented")))]
    ValuesResources {
        /// What the launch said.
        why: String,
        /// The instrumented kernel's registers per thread.
        registers: Option<u32>,
    },
    /// The shadow runtime did not compile.
    #[error("compiling the shadow runtime: {0}")]
    Runtime(String),
    /// The runtime did not merge into the program.
    #[error("merging the shadow runtime: {0}")]
    Link(#[from] mantissa_ptx::link::LinkError),
    /// The program's PTX names no `sm_` target to compile the runtime for.
    #[error("the program's PTX names no sm_ target (.target), so the shadow runtime cannot be compiled for it")]
    NoTarget,
    /// The instrumented program computed different outputs (see the module docs).
    #[error("the instrumented program changed its outputs ({0}): the instrumentation is wrong, so nothing it measured is reported")]
    ChangedOutputs(String),
    /// Even one site alone exceeds the resources of its kernel's launch.
    #[error("site {index} alone exceeds the launch's resources once instrumented ({why}){}", .registers.map_or(String::new(), |r| format!("; the kernel uses {r} registers per thread instrumented")))]
    Resources {
        /// The site.
        index: u32,
        /// What the launch said.
        why: String,
        /// The instrumented kernel's registers per thread.
        registers: Option<u32>,
    },
    /// The statistics read back do not fit the report (a bug of the pass or the runtime).
    #[error("reading the statistics back: {0}")]
    Decode(String),
}

impl From<TrialError> for ShadowError {
    fn from(e: TrialError) -> Self {
        match e {
            TrialError::Spec(s) => ShadowError::Spec(s),
            other => ShadowError::Trial(other),
        }
    }
}

impl ShadowError {
    /// Whether the user's input is wrong (exit 2) rather than the run failing (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, ShadowError::Spec(_))
    }
}

const TIMED: TrialTiming = TrialTiming::Timed {
    warmup: 1,
    repeats: 5,
};

/// Runs the analyses of `request` on `spec`'s program (see the module docs); `progress` hears
/// where it is.
pub fn analyse(
    gpu: &Gpu,
    spec: &Spec,
    request: &ShadowRequest,
    progress: &mut dyn FnMut(ShadowEvent),
) -> Result<ShadowRun, ShadowError> {
    progress(ShadowEvent::Baseline);
    let timing = if request.time {
        TIMED
    } else {
        TrialTiming::AccuracyOnly
    };
    let opts = RunnerOptions {
        baseline_timing: timing,
        ..RunnerOptions::default()
    };
    let mut runner = TrialRunner::new(gpu, spec, request.flags, opts)?;
    analyse_on(&mut runner, &spec.name, &spec.dir, request, progress)
}

/// [`analyse`] in a session the caller opened (a spec's program under `request.flags`, its
/// baseline timed when `request.time` asks for overheads, or an application): a tuner shares its
/// own, so that the program is built and pinned once. `name` names the program in the run;
/// `source_dir` is where relative source paths of its line info are read from.
pub fn analyse_on(
    runner: &mut dyn Session,
    name: &str,
    source_dir: &std::path::Path,
    request: &ShadowRequest,
    progress: &mut dyn FnMut(ShadowEvent),
) -> Result<ShadowRun, ShadowError> {
    let timing = if request.time {
        TIMED
    } else {
        TrialTiming::AccuracyOnly
    };
    let pinned = runner.base_module(&Base::Pinned)?;
    let module = &pinned.module;
    let kernels: Vec<String> = module
        .functions()
        .filter(|f| f.kind == FunctionKind::Entry)
        .map(|f| f.name.clone())
        .collect();
    let options = |only: Option<Range<u32>>| ShadowOptions {
        demotion: request.analyses.demotion,
        exceptions: request.analyses.exceptions,
        only,
    };
    let full = runner.make(pipelines::shadow(options(None)))?;
    let full_report = report_of(&full)?;
    let measured: Vec<_> = full_report
        .sites
        .iter()
        .filter(|s| s.demotion || s.exceptions)
        .collect();
    let mut run = ShadowRun {
        spec: name.to_string(),
        flags: request.flags.name(),
        analyses: request.analyses,
        kernels,
        sites: Vec::new(),
        functions: Vec::new(),
        runs: Vec::new(),
        notes: full_report.notes.clone(),
        reseeds: Vec::new(),
        outputs: Vec::new(),
        timing: None,
        resources: costs("as written", runner.baseline_resources()?),
        device: runner.device_name(),
        contraction: Contraction {
            pinned: pinned.pinning.clone(),
            note: pinned.notes.first().cloned(),
        },
        first_launch: runner.baseline().first_launch,
        build: runner.build_facts().map(record_build),
    };
    let functions = {
        let mut names: Vec<&str> = measured.iter().map(|s| s.site.function.as_str()).collect();
        names.dedup();
        names.len()
    };
    progress(ShadowEvent::Instrumented {
        sites: measured.len(),
        functions,
    });
    let n = full_report.sites.len() as u32;
    let mut stats: Vec<Option<SiteStats>> = vec![None; n as usize];
    // Site ranges still to run, first first (a split puts its halves at the front).
    let mut queue: VecDeque<Range<u32>> = VecDeque::new();
    if !measured.is_empty() {
        runner.target_arch().ok_or(ShadowError::NoTarget)?;
        queue.push_back(0..n);
    }
    while let Some(range) = queue.pop_front() {
        let split;
        let part = if range == (0..n) {
            &full
        } else {
            split = runner.make(pipelines::shadow(options(Some(range.clone()))))?;
            &split
        };
        let part_report = report_of(part)?;
        progress(ShadowEvent::Running {
            sites: range.clone(),
        });
        let global = part_report.global.as_str();
        match runner.run_variant(part, timing) {
            Ok((outcome, globals)) => {
                let changed = changed_outputs(&outcome);
                if !changed.is_empty() {
                    return Err(ShadowError::ChangedOutputs(format!(
                        "the {} build: {}",
                        request.analyses.without_values(),
                        changed.join(", ")
                    )));
                }
                let bytes = globals
                    .iter()
                    .find(|(name, _)| name == global)
                    .map(|(_, b)| b.as_slice())
                    .unwrap_or_default();
                let decoded = part_report
                    .decode(bytes)
                    .map_err(|e| ShadowError::Decode(e.to_string()))?;
                for (site, s) in part_report.sites.iter().zip(decoded) {
                    if site.instrumented {
                        stats[site.index as usize] = Some(s);
                    }
                }
                if range == (0..n) {
                    let r = runner.variant_resources(part)?;
                    run.resources
                        .extend(costs(&request.analyses.without_values(), r));
                }
                run.runs.push(PartRun {
                    analyses: request.analyses.without_values(),
                    sites: range,
                    time_ms: outcome.timing.map(|t| t.median_ms),
                });
            }
            Err(TrialError::OutOfResources {
                message, registers, ..
            }) => {
                if range.len() < 2 {
                    return Err(ShadowError::Resources {
                        index: range.start,
                        why: message,
                        registers,
                    });
                }
                let mid = range.start + (range.end - range.start) / 2;
                run.notes.push(format!(
                    "sites {}..{} exceed the launch's resources instrumented together{}: run as {}..{} and {}..{}",
                    range.start,
                    range.end,
                    registers.map_or(String::new(), |r| format!(" ({r} registers per thread)")),
                    range.start,
                    mid,
                    mid,
                    range.end
                ));
                progress(ShadowEvent::Split {
                    sites: range.clone(),
                    why: message,
                });
                queue.push_front(mid..range.end);
                queue.push_front(range.start..mid);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut shadow_values: Vec<Option<values::Values>> = vec![None; n as usize];
    if request.analyses.shadow {
        progress(ShadowEvent::Values);
        let v = values::run(runner, timing)?;
        run.runs.push(PartRun {
            analyses: "shadow".into(),
            sites: 0..n,
            time_ms: v.time_ms,
        });
        for (index, x) in v.sites {
            if let Some(slot) = shadow_values.get_mut(index as usize) {
                *slot = Some(x);
            }
        }
        run.resources.extend(v.resources);
        run.reseeds = v.reseeds;
        run.outputs = v.outputs;
        run.notes.extend(v.notes);
    }
    run.sites = full_report
        .sites
        .iter()
        .filter_map(|s| {
            let k = s.index as usize;
            let measured = stats[k].filter(|_| s.demotion || s.exceptions);
            let values = shadow_values[k].take();
            if measured.is_none() && values.is_none() {
                return None;
            }
            let mut r = SiteResult::new(s, &measured.unwrap_or_default());
            r.values = values;
            Some(r)
        })
        .collect();
    run.functions = summarise(&run.sites);
    source::attach(&mut run.functions, source_dir);
    if request.time {
        let original = runner.baseline().timing.as_ref().map(|t| t.median_ms);
        let parts: Option<f64> = run.runs.iter().map(|p| p.time_ms).sum();
        if let (Some(original_ms), Some(instrumented_ms)) = (original, parts) {
            run.timing = Some(Overhead {
                original_ms,
                instrumented_ms,
                ratio: instrumented_ms / original_ms,
            });
        }
    }
    Ok(run)
}

/// The shadow pass's report of a made shadow recipe.
fn report_of(variant: &Variant) -> Result<&ShadowReport, ShadowError> {
    variant.report::<ShadowReport>().ok_or_else(|| {
        ShadowError::Decode(format!("the {} build has no shadow report", variant.name))
    })
}
