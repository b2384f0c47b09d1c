//! What the commands that run a user's kernel spec (`run`, `shadow`, `diff`, `tune`) parse and
//! check alike: a flag set, a `--set NAME=VALUE`, and the GPU, whose absence is one line saying
//! how to check the spec without one.

use anyhow::anyhow;
use mantissa_gpu::{DeviceSelection, FlagSet, Gpu, Toolchain};
use mantissa_harness::spec::SizeOverride;
use std::path::Path;

/// A flag set as `--flags` takes it (a preset or a '+' combination).
pub fn parse_flags(s: &str) -> Result<FlagSet, String> {
    s.trim()
        .parse()
        .map_err(|e: mantissa_gpu::UnknownFlagSet| e.to_string())
}

/// A `--set NAME=VALUE` size override.
pub fn parse_override(s: &str) -> Result<SizeOverride, String> {
    s.parse()
}

/// The GPU `mantissa COMMAND SPEC` needs, or the one-line error naming the check without one.
pub fn gpu_for(command: &str, spec: &Path) -> anyhow::Result<Gpu> {
    Gpu::probe().map_err(|why| no_gpu(command, spec, why))
}

fn no_gpu(command: &str, spec: &Path, why: impl std::fmt::Display) -> anyhow::Error {
    anyhow!(
        "mantissa {command} needs a GPU: {why}; `mantissa run {} --check` checks the spec without one",
        spec.display()
    )
}

/// The GPUs of `selection` that `mantissa COMMAND SPEC` runs on, opened through one shared
/// toolchain (one compile per architecture), or the one-line error of [`gpu_for`]; a GPU named
/// in `--devices` that cannot be opened is named.
pub fn gpus_for(
    command: &str,
    spec: &Path,
    selection: &DeviceSelection,
) -> anyhow::Result<Vec<Gpu>> {
    let toolchain = Toolchain::probe().map_err(|why| no_gpu(command, spec, why))?;
    selection
        .open(&toolchain)
        .map_err(|why| anyhow!("mantissa {command} --devices {selection}: {why}"))
}
