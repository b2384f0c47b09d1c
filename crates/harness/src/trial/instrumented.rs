//! Instrumented programs through the one trial path: PTX that a pass rewrote to record something
//! into module globals (counters, shadow statistics) runs exactly as any trial does — loaded
//! through the JIT cache, restored, setup and steps run checked, outputs compared with the
//! baseline on the device — and the named globals are read back right after the checked run,
//! before any warm-up or timed repeat would add to them.
//!
//! The globals start every run from their value after loading (zero for a pass's counters):
//! the restore that precedes the checked run rewrites every `.global` variable of the module.
//! What the setup steps launch is instrumented too, so the globals hold the setup's and the
//! steps' contributions together.

use super::{device_error, pick, TrialError, TrialOutcome, TrialRunner, TrialTiming};
use mantissa_gpu::{Arch, DType, HostData};

/// Module globals read back after an instrumented run: (PTX name, bytes), in the order asked.
pub type GlobalBytes = Vec<(String, Vec<u8>)>;

/// One of the spec's working device buffers, as kernels see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferAddress {
    /// The spec's buffer name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// The device address of its first element (stable for the runner's life: restores copy
    /// into it).
    pub address: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

impl TrialRunner<'_> {
    /// Runs `ptx` (the baseline's PTX rewritten by an instrumenting pass, with its runtime
    /// merged) as a trial (the analyses run what they make from recipes instead,
    /// [`TrialRunner::make`] and [`TrialRunner::run_variant`]; this is the layer beneath): restored, checked, compared with the baseline on the GPU, then timed
    /// as `timing` asks; the module globals `read_back` are read after the checked run, before
    /// any repeat. A launch the instrumented kernels' resources cannot take comes back as
    /// [`TrialError::OutOfResources`], so that the caller can instrument less per run.
    pub fn run_instrumented(
        &mut self,
        ptx: &str,
        read_back: &[&str],
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        self.run_instrumented_with(ptx, &[], read_back, timing)
    }

    /// [`TrialRunner::run_instrumented`] with symbol writes made after the restore of the
    /// module's globals and before the setup steps (a table of device addresses, say): `writes`
    /// are (PTX name, bytes), each size-checked against the declaration.
    pub(crate) fn run_instrumented_with(
        &mut self,
        ptx: &str,
        writes: &[(String, Vec<u8>)],
        read_back: &[&str],
        timing: TrialTiming,
    ) -> Result<(TrialOutcome, GlobalBytes), TrialError> {
        let m = self.load(ptx)?;
        let first = self.restore_and_check(m, writes, &[])?;
        let loaded = pick(m, &self.baseline_module, &self.loaded, &self.switched)?;
        let mut globals = Vec::with_capacity(read_back.len());
        for name in read_back {
            let bytes = self
                .gpu
                .read_symbol(&loaded.module, name)
                .map_err(device_error(&format!("reading symbol '{name}'")))?;
            globals.push((name.to_string(), bytes));
        }
        let outcome = self.finish(m, writes, &[], first, timing, Vec::new())?;
        Ok((outcome, globals))
    }

    /// The spec's working buffers (what the steps' kernels receive), sorted by name.
    pub fn buffer_addresses(&self) -> Vec<BufferAddress> {
        let mut out: Vec<BufferAddress> = self
            .work
            .iter()
            .map(|(name, b)| BufferAddress {
                name: name.clone(),
                dtype: b.dtype(),
                address: b.device_address(),
                bytes: b.bytes(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The spec's output buffers as they are now: after a trial run with
    /// [`TrialTiming::AccuracyOnly`], what its checked run left (timed repeats run the steps
    /// again from the restore point).
    pub fn download_outputs(&self) -> Result<Vec<(String, HostData)>, TrialError> {
        super::outputs::download(self.gpu, &self.spec, &self.work)
            .map_err(device_error("downloading the outputs"))
    }

    /// The architecture of the baseline PTX's `.target` (`sm_90`): a device runtime merged into
    /// a rewrite of it must be compiled for no newer one.
    pub fn target_arch(&self) -> Option<Arch> {
        self.built.target_arch()
    }
}

impl super::build::Built {
    /// The architecture of the PTX's `.target`, when it names an `sm_` one (`sm_90a` is 9.0:
    /// a runtime for the family's base architecture joins it).
    pub fn target_arch(&self) -> Option<Arch> {
        mantissa_ptx::symbols::header(&self.ptx)
            .sm()
            .map(|n| Arch::new(n / 10, n % 10))
    }
}
