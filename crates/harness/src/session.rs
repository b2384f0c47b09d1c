//! A session: one program on one device, and the one way an analysis reaches it.
//!
//! Analyses (shadow, diff; tune through them) hold no trial runner and no GPU handle: they ask a
//! [`Session`] for a base module, for a [`Recipe`] made into a [`Variant`], and for runs of it,
//! and read what comes back. Where a trial runs is the session's business:
//! - **a kernel spec replayed in this process** (today): [`TrialRunner`] is the session. A trial
//!   restores the spec's buffers, runs its steps with the variant loaded, compares the outputs
//!   with the baseline's on the GPU, and reads the variant's globals back;
//! - **an application run as it is** (issue 39, next): a trial is a run of the application with
//!   its modules replaced at load time by the variant's PTX (the attach library), its outputs the
//!   copies it makes back to the host, compared with the watched run's; its globals read before
//!   the module is unloaded; shadows mirror its own allocations. The application may load
//!   several modules: a session of it stands for one of them at a time, the others running as
//!   built, so an analysis sees one module either way.
//!
//! What every session promises, whichever it is:
//! - the baseline ([`Session::baseline`]) is the program as built, run once when the session was
//!   opened; every trial's outputs are compared with it;
//! - a variant with no passes and no runtime runs the build's own text, so its outputs are the
//!   baseline's bit for bit (an analysis that only observes must reproduce them);
//! - a trial error says whether anything else can run ([`TrialError::is_fatal`]); a refused
//!   recipe, a failed JIT or a faulting kernel is that trial's result, not the session's end.

use crate::recipe::{BaseModule, Recipe, Variant};
use crate::trial::shadowed::ShadowedRun;
use crate::trial::KernelTime;
use crate::trial::{GlobalBytes, Resources, TrialError, TrialOutcome, TrialRunner, TrialTiming};
use crate::{Base, Configuration};
use mantissa_gpu::{Arch, BuildFacts, HostData};
use std::sync::Arc;

/// Where an analysis runs its program (see the module docs).
pub trait Session {
    /// The device the trials run on, in words (`NVIDIA H100 80GB HBM3`).
    fn device_name(&self) -> String;
    /// How the program was built (front end, versions, flags), when the session built it.
    fn build_facts(&self) -> Option<&BuildFacts>;
    /// The program's PTX as built (what the baseline runs).
    fn as_built_ptx(&self) -> &str;
    /// The architecture the PTX targets: a runtime merged into a variant is compiled for it.
    fn target_arch(&self) -> Option<Arch>;
    /// The baseline: the program as built, run when the session was opened.
    fn baseline(&self) -> &TrialOutcome;
    /// `base` made (parsed, pinned, built under other flags, rewritten), once per session.
    fn base_module(&mut self, base: &Base) -> Result<Arc<BaseModule>, TrialError>;
    /// `recipe` made: its base, its passes, its runtime merged.
    fn make(&mut self, recipe: Recipe) -> Result<Variant, TrialError>;
    /// `variant` run as a trial: its symbols written after the restore, its globals read back
    /// after the checked run, then timed as `timing` asks.
    fn run_variant(
        &mut self,
        variant: &Variant,
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError>;
    /// `configuration` run as a trial (the program as built for
    /// [`Configuration::AsWritten`]; a demotion's rewrite otherwise), timed as `timing` asks.
    fn trial(
        &mut self,
        configuration: &Configuration,
        timing: TrialTiming,
    ) -> Result<TrialOutcome, TrialError>;
    /// Each kernel's time in `configuration`, the median of `runs` profiling runs (or of what
    /// the session measured already, which it says in its docs).
    fn kernel_times(
        &mut self,
        configuration: &Configuration,
        runs: u32,
    ) -> Result<Vec<KernelTime>, TrialError>;
    /// What `configuration`'s kernels use.
    fn configuration_resources(
        &mut self,
        configuration: &Configuration,
    ) -> Result<Resources, TrialError>;
    /// Runs the accuracy-only trials of configurations inside `universe` on one build whose
    /// demotions are switched at run time, where the session can; an error says why it cannot
    /// (each trial is then a build of its own).
    fn enable_switching(&mut self, universe: &Configuration) -> Result<(), TrialError>;
    /// `variant` (a shadow-values build) run once with a zeroed shadow beside every
    /// floating-point buffer, each output's shadow read back.
    fn run_shadowed(&mut self, variant: &Variant) -> Result<ShadowedRun, TrialError>;
    /// The outputs as the last checked run left them.
    fn outputs(&self) -> Result<Vec<(String, HostData)>, TrialError>;
    /// What the baseline's kernels use (registers, shared and local memory).
    fn baseline_resources(&self) -> Result<Resources, TrialError>;
    /// What `variant`'s kernels use.
    fn variant_resources(&mut self, variant: &Variant) -> Result<Resources, TrialError>;
}

impl Session for TrialRunner<'_> {
    fn device_name(&self) -> String {
        self.gpu().info().name.clone()
    }

    fn build_facts(&self) -> Option<&BuildFacts> {
        self.built().facts.as_ref()
    }

    fn as_built_ptx(&self) -> &str {
        &self.built().ptx
    }

    fn target_arch(&self) -> Option<Arch> {
        TrialRunner::target_arch(self)
    }

    fn baseline(&self) -> &TrialOutcome {
        TrialRunner::baseline(self)
    }

    fn base_module(&mut self, base: &Base) -> Result<Arc<BaseModule>, TrialError> {
        TrialRunner::base_module(self, base)
    }

    fn make(&mut self, recipe: Recipe) -> Result<Variant, TrialError> {
        TrialRunner::make(self, recipe)
    }

    fn run_variant(
        &mut self,
        variant: &Variant,
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        TrialRunner::run_variant(self, variant, timing)
    }

    fn trial(
        &mut self,
        configuration: &Configuration,
        timing: TrialTiming,
    ) -> Result<TrialOutcome, TrialError> {
        TrialRunner::trial(self, configuration, timing)
    }

    fn kernel_times(
        &mut self,
        configuration: &Configuration,
        runs: u32,
    ) -> Result<Vec<KernelTime>, TrialError> {
        TrialRunner::kernel_times(self, configuration, runs)
    }

    fn configuration_resources(
        &mut self,
        configuration: &Configuration,
    ) -> Result<Resources, TrialError> {
        TrialRunner::configuration_resources(self, configuration)
    }

    fn enable_switching(&mut self, universe: &Configuration) -> Result<(), TrialError> {
        TrialRunner::enable_switching(self, universe).map(|_| ())
    }

    fn run_shadowed(&mut self, variant: &Variant) -> Result<ShadowedRun, TrialError> {
        TrialRunner::run_shadowed(self, variant)
    }

    fn outputs(&self) -> Result<Vec<(String, HostData)>, TrialError> {
        self.download_outputs()
    }

    fn baseline_resources(&self) -> Result<Resources, TrialError> {
        TrialRunner::baseline_resources(self)
    }

    fn variant_resources(&mut self, variant: &Variant) -> Result<Resources, TrialError> {
        TrialRunner::variant_resources(self, variant)
    }
}
