//! What a run of a spec will allocate, estimated from the spec alone before anything is: the
//! host holds every buffer's initial contents and the references (as f64); the device holds
//! each buffer twice (a pristine copy and the working one), three times with a `[[setup]]`
//! (its restore point), each fill's source, a baseline copy of each output and the references.
//! `mantissa run` refuses, in one line, a spec whose estimate is more than is free, naming the
//! buffers that dominate ([`MemoryNeed::refusal`]).

use crate::spec::{Spec, StepKind};

/// A spec's estimated memory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryNeed {
    /// Host bytes.
    pub host: u64,
    /// Device bytes.
    pub device: u64,
    /// Each buffer's bytes (one copy), largest first.
    pub buffers: Vec<(String, u64)>,
}

/// Estimates what running `spec` allocates (see the module's description).
pub fn estimate(spec: &Spec) -> MemoryNeed {
    let bytes = |len: usize, size: usize| (len as u64).saturating_mul(size as u64);
    let copies: u64 = if spec.setup.is_empty() { 2 } else { 3 };
    let mut need = MemoryNeed::default();
    for b in &spec.buffers {
        let one = bytes(b.len, b.dtype.size());
        let fills = spec
            .walk()
            .iter()
            .filter(|(s, _)| matches!(&s.kind, StepKind::Fill { buffer, .. } if *buffer == b.name))
            .count() as u64;
        let baselines = spec.outputs.iter().filter(|o| o.buffer == b.name).count() as u64;
        let device = one.saturating_mul(copies + fills + baselines);
        need.host = need.host.saturating_add(one);
        need.device = need.device.saturating_add(device);
        need.buffers.push((b.name.clone(), one));
    }
    for o in spec.outputs.iter().filter(|o| o.reference.is_some()) {
        let len = spec.buffer(&o.buffer).map_or(0, |b| b.len);
        let refs = bytes(o.compared_len(len), 8);
        need.host = need.host.saturating_add(refs);
        need.device = need.device.saturating_add(refs);
    }
    need.buffers.sort_by_key(|b| std::cmp::Reverse(b.1));
    need
}

impl MemoryNeed {
    /// The one-line refusal when `needed` bytes of `what` memory (`host`, `device`) are more
    /// than `available` (`is free`, `is on the device`: `available_is`), naming the buffers
    /// that dominate; `bytes` writes a size for a person. `None` when it fits.
    pub fn refusal(
        &self,
        what: &str,
        needed: u64,
        available: u64,
        available_is: &str,
        bytes: &dyn Fn(u64) -> String,
    ) -> Option<String> {
        if needed <= available {
            return None;
        }
        Some(format!(
            "needs about {} of {what} memory and {} {available_is} (largest buffers: {}): choose smaller [sizes] (--set NAME=VALUE)",
            bytes(needed),
            bytes(available),
            self.dominant(bytes)
        ))
    }

    /// `u 4.0 TiB, v 4.0 TiB`: the (at most three) largest buffers and their sizes.
    pub fn dominant(&self, bytes: &dyn Fn(u64) -> String) -> String {
        let mut parts: Vec<String> = self
            .buffers
            .iter()
            .take(3)
            .map(|(n, b)| format!("{n} {}", bytes(*b)))
            .collect();
        if self.buffers.len() > 3 {
            parts.push(format!("{} more", self.buffers.len() - 3));
        }
        parts.join(", ")
    }
}
