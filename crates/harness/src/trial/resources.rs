//! What a build's kernels use per thread once loaded (registers, spills, shared memory), for
//! analyses that rewrite a program and must say what the rewrite cost: an instrumented kernel
//! that gains registers loses occupancy, and one that spills runs from local memory.

use super::{device_error, pick, Loaded, TrialError, TrialRunner};
use mantissa_gpu::KernelResources;

/// Kernels with their resources, in PTX order.
pub type Resources = Vec<(String, KernelResources)>;

impl TrialRunner<'_> {
    /// Each kernel (`.entry`) of `ptx` with its resources as the driver reports them; `ptx` is
    /// loaded through the JIT cache (nothing to compile when a trial already ran it).
    pub(crate) fn resources(&mut self, ptx: &str) -> Result<Resources, TrialError> {
        let m = self.load(ptx)?;
        of(pick(
            m,
            &self.baseline_module,
            &self.loaded,
            &self.switched,
        )?)
    }

    /// The same for the program `configuration` runs (its static build).
    pub fn configuration_resources(
        &mut self,
        configuration: &crate::config::Configuration,
    ) -> Result<Resources, TrialError> {
        match self.ptx_of(configuration)? {
            Some(ptx) => self.resources(&ptx),
            None => self.baseline_resources(),
        }
    }

    /// The same for the program as written.
    pub fn baseline_resources(&self) -> Result<Resources, TrialError> {
        of(&self.baseline_module)
    }
}

fn of(loaded: &Loaded) -> Result<Resources, TrialError> {
    let names: Vec<String> = loaded
        .module
        .entries()
        .unwrap_or_default()
        .iter()
        .map(|e| e.name.clone())
        .collect();
    names
        .into_iter()
        .map(|k| {
            let r = loaded
                .module
                .resources(&k)
                .map_err(device_error(&format!("querying kernel '{k}'")))?;
            Ok((k, r))
        })
        .collect()
}
