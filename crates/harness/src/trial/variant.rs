//! Recipes made and run by the trial runner ([`crate::recipe`]): each base is made once per
//! runner (parsed, pinned, built under another flag set, or a configuration's rewrite), each
//! runtime compiled once for the program's target, and a made recipe ([`Variant`]) runs as an
//! instrumented trial ([`TrialRunner::run_instrumented_with`]): restored, checked, compared
//! with the baseline on the GPU, its globals read back before any repeat.

use super::build::build_module;
use super::{GlobalBytes, Resources, TrialError, TrialOutcome, TrialRunner, TrialTiming};
use crate::recipe::{Base, BaseModule, Recipe, Variant};
use mantissa_gpu::runtime::{self, RuntimeHeader};
use mantissa_ptx::pass::runtime::MergeRuntime;
use mantissa_ptx::pass::Pass;
use std::sync::Arc;

/// Makes `recipe` on its base, made already: its passes in order, its runtime (compiled by
/// `runtime_ptx`) merged. What [`TrialRunner::make`] and an application's session share.
pub(crate) fn make_variant(
    base: &BaseModule,
    recipe: Recipe,
    runtime_ptx: &mut dyn FnMut(&'static RuntimeHeader) -> Result<String, TrialError>,
) -> Result<Variant, TrialError> {
    let refused =
        |e: mantissa_ptx::pass::PassError| TrialError::Refused(format!("{}: {e}", recipe.name));
    let run = recipe.pipeline.run(&base.module).map_err(refused)?;
    let unchanged = run.reports.is_empty() && recipe.runtime.is_none();
    let mut reports = run.reports;
    let linked = match &recipe.runtime {
        None => None,
        Some(rt) => {
            let merge = MergeRuntime {
                name: rt.header.name.to_string(),
                ptx: runtime_ptx(rt.header)?,
                inline: rt.inline.clone(),
            };
            let out = merge.run(&run.module).map_err(refused)?;
            reports.push(out.report);
            Some(out.module)
        }
    };
    let ptx = match (&base.text, unchanged) {
        (Some(text), true) => text.clone(),
        _ => linked.as_ref().unwrap_or(&run.module).to_string(),
    };
    Ok(Variant {
        ptx,
        name: recipe.name,
        reports,
        notes: base.notes.clone(),
        module: run.module,
        writes: recipe.writes,
        read_back: recipe.read_back,
    })
}

/// `header` compiled for `arch` by the NVRTC found on this machine, once per `cache` (a
/// session without a GPU of its own: an application's, the interpreter's).
pub(crate) fn probed_runtime(
    cache: &mut Vec<(&'static str, String)>,
    header: &'static RuntimeHeader,
    arch: Option<mantissa_gpu::Arch>,
) -> Result<String, TrialError> {
    if let Some((_, p)) = cache.iter().find(|(n, _)| *n == header.name) {
        return Ok(p.clone());
    }
    let arch = arch.ok_or_else(|| {
        TrialError::Refused(format!(
            "the program's PTX names no sm_ target, which the runtime {} must be compiled for",
            header.name
        ))
    })?;
    let build = |e: String| TrialError::Build {
        message: format!("compiling the runtime {}: {e}", header.name),
    };
    let compiler = mantissa_gpu::Compiler::probe().map_err(|e| build(e.to_string()))?;
    let ptx = runtime::compile(&compiler, header, arch).map_err(|e| build(e.to_string()))?;
    cache.push((header.name, ptx.clone()));
    Ok(ptx)
}

/// What a runner keeps of the recipes it made: bases and compiled runtimes.
#[derive(Default)]
pub(crate) struct Made {
    bases: Vec<(Base, Arc<BaseModule>)>,
    runtimes: Vec<(&'static str, String)>,
}

impl TrialRunner<'_> {
    /// `base` parsed (and pinned, built or rewritten as it says), made once per runner.
    pub fn base_module(&mut self, base: &Base) -> Result<Arc<BaseModule>, TrialError> {
        if let Some((_, m)) = self.made.bases.iter().find(|(b, _)| b == base) {
            return Ok(m.clone());
        }
        let made = match base {
            Base::AsBuilt => BaseModule {
                module: mantissa_ptx::parse(&self.built.ptx).module,
                pinning: None,
                notes: Vec::new(),
                text: Some(self.built.ptx.clone()),
            },
            Base::Built(flags) if *flags == self.flags => {
                return self.base_module(&Base::AsBuilt);
            }
            Base::Pinned => {
                let plain = self.base_module(&Base::AsBuilt)?;
                let pinned = self.pinned(&plain.module);
                BaseModule {
                    text: pinned
                        .report
                        .is_none()
                        .then(|| plain.text.clone())
                        .flatten(),
                    module: pinned.module,
                    pinning: pinned.report,
                    notes: pinned.note.into_iter().collect(),
                }
            }
            Base::Built(flags) => {
                let built = build_module(self.gpu, &self.spec, *flags)
                    .map_err(|message| TrialError::Build { message })?;
                BaseModule {
                    module: mantissa_ptx::parse(&built.ptx).module,
                    pinning: None,
                    notes: Vec::new(),
                    text: Some(built.ptx),
                }
            }
            Base::Configured(c) => {
                let prepared = self.prepared_ptx(c)?;
                let ptx = prepared.ptx.as_deref().unwrap_or(&self.built.ptx);
                BaseModule {
                    module: mantissa_ptx::parse(ptx).module,
                    pinning: None,
                    notes: prepared.notes,
                    text: Some(ptx.to_string()),
                }
            }
        };
        let made = Arc::new(made);
        self.made.bases.push((base.clone(), made.clone()));
        Ok(made)
    }

    /// Makes `recipe`: its base, its passes in order, its runtime merged (see
    /// [`crate::recipe`]). A pass that refuses its input is [`TrialError::Refused`], naming the
    /// recipe and the pass; a runtime that does not compile is [`TrialError::Build`].
    pub fn make(&mut self, recipe: Recipe) -> Result<Variant, TrialError> {
        let base = self.base_module(&recipe.base)?;
        make_variant(&base, recipe, &mut |header| self.runtime_ptx(header))
    }

    /// Runs `variant` as a trial (see [`TrialRunner::run_instrumented_with`]): its symbols
    /// written after the restore, its globals read back after the checked run, then timed as
    /// `timing` asks.
    pub fn run_variant(
        &mut self,
        variant: &Variant,
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        let read: Vec<&str> = variant.read_back.iter().map(String::as_str).collect();
        self.run_instrumented_with(&variant.ptx, &variant.writes, &read, timing)
    }

    /// Each kernel of `variant` with its resources as the driver reports them.
    pub fn variant_resources(&mut self, variant: &Variant) -> Result<Resources, TrialError> {
        self.resources(&variant.ptx)
    }

    /// `header` compiled for the program's target, once per runner.
    fn runtime_ptx(&mut self, header: &'static RuntimeHeader) -> Result<String, TrialError> {
        if let Some((_, ptx)) = self.made.runtimes.iter().find(|(n, _)| *n == header.name) {
            return Ok(ptx.clone());
        }
        let arch = self.target_arch().ok_or_else(|| {
            TrialError::Refused(format!(
                "the program's PTX names no sm_ target, which the runtime {} must be compiled for",
                header.name
            ))
        })?;
        let ptx =
            runtime::compile(self.gpu.compiler(), header, arch).map_err(|e| TrialError::Build {
                message: format!("compiling the runtime {}: {e}", header.name),
            })?;
        self.made.runtimes.push((header.name, ptx.clone()));
        Ok(ptx)
    }
}
