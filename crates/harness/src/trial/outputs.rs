//! A trial's outputs: the user's references read and uploaded, the baseline's outputs kept on
//! the device, each output (or the view of it the spec names) compared on the GPU, reduced
//! outputs reduced on the host.

use super::Shared;
use crate::compare::{compare, OutputResult};
use crate::device_compare::{DeviceComparer, Job, Side};
use crate::spec::{OutputSpec, Spec, View};
use mantissa_gpu::{DType, DeviceBuffer, Gpu, GpuError, HostData};
use std::collections::HashMap;

/// An output's reference, where the comparison needs it.
pub enum Reference {
    /// None given.
    None,
    /// The values of a whole output, on the device (f64).
    Device(DeviceBuffer),
    /// A reduced output's one value.
    Value(f64),
}

/// The part of its buffer an output compares: its view, or all of it.
pub fn view_of(spec: &Spec, o: &OutputSpec) -> View {
    o.view.unwrap_or(View {
        offset: 0,
        len: spec.buffer(&o.buffer).map_or(0, |b| b.len),
        stride: 1,
    })
}

/// as their value.
pub fn upload_references(
    gpu: &Gpu,
    spec: &Spec,
    references: Vec<Option<Vec<f64>>>,
) -> Result<Vec<Reference>, GpuError> {
    spec.outputs
        .iter()
        .zip(references)
        .map(|(o, r)| match r {
            None => Ok(Reference::None),
            Some(v) if o.reduce.is_some() => {
                Ok(Reference::Value(v.first().copied().unwrap_or(f64::NAN)))
            }
            Some(v) => gpu
                .upload(&format!("{}#reference", o.name()), &HostData::F64(v))
                .map(Reference::Device),
        })
        .collect()
}

/// A reduced output's value, reduced on the GPU exactly as `compare::reduce` would on the host.
fn reduced(
    gpu: &Gpu,
    comparer: &mut DeviceComparer,
    spec: &Spec,
    o: &OutputSpec,
    work: &HashMap<String, DeviceBuffer>,
) -> Result<f64, GpuError> {
    let (Some(r), Some(buffer)) = (o.reduce, work.get(&o.buffer)) else {
        return Ok(f64::NAN);
    };
    let side = Side {
        buffer,
        view: view_of(spec, o),
    };
    comparer.reduce(gpu, side, r)
}

/// Device copies of output buffers by name, and each output's reduced value (reduced outputs).
pub type Captured = (HashMap<String, DeviceBuffer>, Vec<Option<f64>>);

/// The baseline's outputs, kept: a device copy of each output buffer, and each reduced
/// output's value.
pub fn capture(
    gpu: &Gpu,
    comparer: &mut DeviceComparer,
    spec: &Spec,
    work: &HashMap<String, DeviceBuffer>,
) -> Result<Captured, GpuError> {
    let mut copies = HashMap::new();
    let mut values = Vec::new();
    for o in &spec.outputs {
        if o.reduce.is_some() {
            values.push(Some(reduced(gpu, comparer, spec, o, work)?));
            continue;
        }
        values.push(None);
        if copies.contains_key(&o.buffer) {
            continue;
        }
        if let Some(b) = work.get(&o.buffer) {
            let mut copy =
                gpu.alloc_zeros(&format!("{}#baseline", o.buffer), b.dtype(), b.len())?;
            gpu.copy(b, &mut copy)?;
            copies.insert(o.buffer.clone(), copy);
        }
    }
    Ok((copies, values))
}

/// Every output compared with the baseline's and its reference: whole outputs on the GPU in
/// one batch, reduced outputs one by one (one number each back).
pub fn compare_all(
    gpu: &Gpu,
    spec: &Spec,
    comparer: &mut DeviceComparer,
    work: &HashMap<String, DeviceBuffer>,
    shared: &Shared,
) -> Result<Vec<OutputResult>, GpuError> {
    let missing = |name: &str| GpuError::BadBuffer {
        what: format!("output '{name}'"),
        problem: "no such buffer (an internal error)".into(),
    };
    // Jobs for whole outputs: (output index, against the reference?) in job order.
    let mut jobs = Vec::new();
    let mut which = Vec::new();
    for (i, o) in spec.outputs.iter().enumerate() {
        if o.reduce.is_some() {
            continue;
        }
        let view = view_of(spec, o);
        let values = Side {
            buffer: work.get(&o.buffer).ok_or_else(|| missing(&o.buffer))?,
            view,
        };
        let base = Side {
            buffer: shared
                .baseline
                .get(&o.buffer)
                .ok_or_else(|| missing(&o.buffer))?,
            view,
        };
        jobs.push(Job {
            values,
            reference: base,
        });
        which.push((i, false));
        if let Some(Reference::Device(r)) = shared.references.get(i) {
            jobs.push(Job {
                values,
                reference: Side::whole(r),
            });
            which.push((i, true));
        }
    }
    let mut compared = comparer.compare(gpu, &jobs)?.into_iter();
    let mut vs = vec![(None, None); spec.outputs.len()];
    for &(i, against_reference) in &which {
        let c = compared.next();
        if against_reference {
            vs[i].1 = c;
        } else {
            vs[i].0 = c;
        }
    }
    let mut out = Vec::new();
    for (i, o) in spec.outputs.iter().enumerate() {
        let dtype = spec.buffer(&o.buffer).map_or(DType::F64, |b| b.dtype);
        let (value, vs_baseline, vs_reference) = match o.reduce {
            Some(_) => {
                let v = reduced(gpu, comparer, spec, o, work)?;
                let base = shared
                    .baseline_reduced
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or(f64::NAN);
                let reference = match shared.references.get(i) {
                    Some(Reference::Value(r)) => Some(compare(dtype, &[v], &[*r])),
                    _ => None,
                };
                (Some(v), compare(dtype, &[v], &[base]), reference)
            }
            None => {
                let (b, r) = std::mem::take(&mut vs[i]);
                (None, b.ok_or_else(|| missing(&o.buffer))?, r)
            }
        };
        let met = o
            .tolerance
            .map(|t| vs_reference.as_ref().unwrap_or(&vs_baseline).meets(&t));
        out.push(OutputResult {
            name: o.name(),
            value,
            vs_baseline,
            vs_reference,
            tolerance: o.tolerance,
            met,
        });
    }
    Ok(out)
}

/// Every output buffer, downloaded whole (for `--save`).
pub fn download(
    gpu: &Gpu,
    spec: &Spec,
    work: &HashMap<String, DeviceBuffer>,
) -> Result<Vec<(String, HostData)>, GpuError> {
    let mut out: Vec<(String, HostData)> = Vec::new();
    for o in &spec.outputs {
        if out.iter().any(|(n, _)| *n == o.buffer) {
            continue;
        }
        if let Some(b) = work.get(&o.buffer) {
            out.push((o.buffer.clone(), gpu.download(b)?));
        }
    }
    Ok(out)
}
