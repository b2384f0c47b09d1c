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
//! Not yet: shadow values ([`Session::run_shadowed`] needs every allocation mirrored), kernel
//! resources (the driver's registers per kernel; empty lists), build facts.

use super::events::Event;
use super::session::{AppSession, SessionError};
use super::trace::program::Program;
use super::AppRun;
use crate::compare::OutputResult;
use crate::recipe::{Base, BaseModule, Recipe, Variant};
use crate::trial::shadowed::ShadowedRun;
use crate::trial::variant::make_variant;
use crate::trial::{BuildKind, GlobalBytes, Resources, TrialError, TrialOutcome, TrialTiming};
use crate::Session;
use mantissa_gpu::{Arch, BuildFacts, HostData, LaunchDims, Timing};
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
        let outputs = c
            .groups
            .iter()
            .filter_map(|g| {
                let vs_baseline = g.last.clone()?;
                Some(OutputResult {
                    name: format!("buf{}[{}..{}]", g.buffer, g.offset, g.offset + g.bytes),
                    value: None,
                    vs_baseline,
                    vs_reference: None,
                    tolerance: None,
                    met: None,
                })
            })
            .collect();
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
            timing: c
                .kernel_ms
                .1
                .and_then(|ms| Timing::from_samples(vec![ms], 0, 1)),
            notes,
            first_launch,
            downloaded: Vec::new(),
            build: BuildKind::Static,
        })
    }

    /// The runtime `header` compiled by NVRTC for the target's architecture, once.
    fn runtime_ptx(
        &mut self,
        header: &'static mantissa_gpu::runtime::RuntimeHeader,
    ) -> Result<String, TrialError> {
        if let Some((_, p)) = self
            .analysed
            .runtimes
            .iter()
            .find(|(n, _)| *n == header.name)
        {
            return Ok(p.clone());
        }
        let arch = Session::target_arch(self).ok_or_else(|| {
            TrialError::Refused(format!(
                "the module's PTX names no sm_ target, which the runtime {} must be compiled for",
                header.name
            ))
        })?;
        let compiler = mantissa_gpu::Compiler::probe().map_err(|e| TrialError::Build {
            message: format!("compiling the runtime {}: {e}", header.name),
        })?;
        let ptx = mantissa_gpu::runtime::compile(&compiler, header, arch).map_err(|e| {
            TrialError::Build {
                message: format!("compiling the runtime {}: {e}", header.name),
            }
        })?;
        self.analysed.runtimes.push((header.name, ptx.clone()));
        Ok(ptx)
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
        _timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        let dir = self.next_trial_dir();
        let replace = self.stage(variant, &dir)?;
        let run = self
            .run_with(&dir, replace)
            .map_err(|e| TrialError::Failed(e.to_string()))?;
        if let Some(e) = self.failure(&run) {
            return Err(e);
        }
        let outcome = self
            .outcome_of(&run)
            .map_err(|e| TrialError::Failed(e.to_string()))?;
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

    fn run_shadowed(&mut self, _variant: &Variant) -> Result<ShadowedRun, TrialError> {
        Err(TrialError::Refused(
            "shadow values in an application need its allocations mirrored, which is not built \
             yet: use --analysis demotion,exceptions"
                .into(),
        ))
    }

    fn outputs(&self) -> Result<Vec<(String, HostData)>, TrialError> {
        self.last_copies()
            .map_err(|e| TrialError::Failed(e.to_string()))
    }

    fn baseline_resources(&self) -> Result<Resources, TrialError> {
        Ok(Vec::new())
    }

    fn variant_resources(&mut self, _variant: &Variant) -> Result<Resources, TrialError> {
        Ok(Vec::new())
    }
}

/// Values of `bytes` read as `dtype`, for the outputs list.
pub(crate) fn host_data(dtype: mantissa_gpu::DType, bytes: &[u8]) -> Option<HostData> {
    let encoded = crate::npy::encode_le(dtype, bytes)?;
    crate::npy::decode(&encoded, dtype, None).ok()
}
