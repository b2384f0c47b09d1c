//! What the commands that run a user's kernel spec (`run`, `shadow`, `diff`, `tune`) parse and
//! check alike: a flag set, a `--set NAME=VALUE`, and the GPU, whose absence is one line saying
//! how to check the spec without one.

use anyhow::anyhow;
use mantissa_gpu::{FlagSet, Gpu};
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
    Gpu::probe().map_err(|why| {
        anyhow!(
            "mantissa {command} needs a GPU: {why}; `mantissa run {} --check` checks the spec without one",
            spec.display()
        )
    })
}
