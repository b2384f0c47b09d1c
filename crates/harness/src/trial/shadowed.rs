//! A variant run with a shadow beside every floating-point buffer: what the shadow-values
//! analysis ([`mantissa_ptx::pass::shadow_values`]) needs of the place its program runs.
//!
//! The instrumented kernels find each buffer's shadow through the table
//! [`TABLE_GLOBAL`] (buffer address, bytes, shadow address per entry; [`table_bytes`]). Here the
//! buffers are the spec's working buffers and the shadows are allocated in this process, zeroed,
//! twice each buffer's bytes in doubles (one per f32 element, two per f64 element: the shadow
//! holds the value's difference from its higher-precision twin as a double-double). An attached
//! application mirrors its own allocations instead; the analysis reads the same
//! [`ShadowedRun`] from either.

use super::{device_error, GlobalBytes, TrialError, TrialOutcome, TrialRunner, TrialTiming};
use crate::recipe::Variant;
use mantissa_gpu::{DType, DeviceBuffer, HostData};
use mantissa_ptx::pass::shadow_values::{table_bytes, ShadowedBuffer, TABLE_GLOBAL};

/// An output's shadow after the run: per element, the difference of the higher-precision value
/// from the computed one, as a double-double (`lo` all zero for an f32 output).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputShadow {
    /// The output buffer's name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// High words of the differences, one per element.
    pub hi: Vec<f64>,
    /// Low words (zero for f32 buffers).
    pub lo: Vec<f64>,
}

/// What a shadowed run gives back.
#[derive(Debug, Clone)]
pub struct ShadowedRun {
    /// The trial (checked against the baseline, untimed).
    pub outcome: TrialOutcome,
    /// The globals the variant reads back.
    pub globals: GlobalBytes,
    /// Every output as the checked run left it.
    pub outputs: Vec<(String, HostData)>,
    /// Each floating-point output's shadow.
    pub shadows: Vec<OutputShadow>,
}

impl TrialRunner<'_> {
    /// Runs `variant` (made by [`crate::pipelines::shadow_values`]) once, unrepeated, with a
    /// zeroed shadow of every f32 and f64 working buffer registered in its table; see the
    /// module docs.
    pub fn run_shadowed(&mut self, variant: &Variant) -> Result<ShadowedRun, TrialError> {
        let buffers: Vec<_> = self
            .buffer_addresses()
            .into_iter()
            .filter(|b| matches!(b.dtype, DType::F32 | DType::F64))
            .collect();
        let mut shadows: Vec<DeviceBuffer> = Vec::with_capacity(buffers.len());
        for b in &buffers {
            let doubles = (2 * b.bytes / 8) as usize;
            let what = format!("allocating the shadow of '{}'", b.name);
            let s = self
                .gpu
                .alloc_zeros(&format!("{}#shadow", b.name), DType::F64, doubles.max(1))
                .map_err(device_error(&what))?;
            shadows.push(s);
        }
        let table: Vec<ShadowedBuffer> = buffers
            .iter()
            .zip(&shadows)
            .map(|(b, s)| ShadowedBuffer {
                address: b.address,
                bytes: b.bytes,
                shadow: s.device_address(),
            })
            .collect();
        let table = table_bytes(&table).map_err(|e| TrialError::Refused(e.to_string()))?;
        let mut writes = variant.writes.clone();
        writes.retain(|(name, _)| name != TABLE_GLOBAL);
        writes.push((TABLE_GLOBAL.to_string(), table));
        let read: Vec<&str> = variant.read_back.iter().map(String::as_str).collect();
        let (outcome, globals) =
            self.run_instrumented_with(&variant.ptx, &writes, &read, TrialTiming::AccuracyOnly)?;
        let outputs = self.download_outputs()?;
        let mut out = Vec::new();
        for (name, _) in &outputs {
            let Some(k) = buffers.iter().position(|b| &b.name == name) else {
                continue;
            };
            let what = format!("downloading the shadow of '{name}'");
            let diffs = match self
                .gpu
                .download(&shadows[k])
                .map_err(device_error(&what))?
            {
                HostData::F64(d) => d,
                _ => Vec::new(),
            };
            let (hi, lo) = match buffers[k].dtype {
                DType::F64 => diffs
                    .chunks(2)
                    .map(|c| (c[0], c.get(1).copied().unwrap_or(0.0)))
                    .unzip(),
                _ => (diffs.clone(), vec![0.0; diffs.len()]),
            };
            out.push(OutputShadow {
                name: name.clone(),
                dtype: buffers[k].dtype,
                hi,
                lo,
            });
        }
        Ok(ShadowedRun {
            outcome,
            globals,
            outputs,
            shadows: out,
        })
    }
}
