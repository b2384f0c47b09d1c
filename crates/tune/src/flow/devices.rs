//! The devices the searches run on: a runner per GPU, Eq. 3's references timed on each (a
//! speed-up is measured against its own device's), and whether a speed-up can be measured at
//! all.

use super::{TuneError, TuneEvent, TuneRequest};
use crate::gpu::{reference_time, Device, EvaluateError, References, TimingPolicy};
use crate::noise::Time;
use crate::store::TrialStore;
use crate::strategy::STRATEGIES;
use mantissa_gpu::Gpu;
use mantissa_harness::{Configuration, Demotion, Session, Spec, TrialRunner};

/// The runners of the GPUs after the first: the program built (the toolchain's caches make that
/// one compile per architecture), loaded and run as written on each.
pub(super) fn other_runners<'g>(
    gpus: &[&'g Gpu],
    spec: &Spec,
    request: &TuneRequest,
) -> Result<Vec<TrialRunner<'g>>, TuneError> {
    Ok(gpus[1..]
        .iter()
        .map(|g| TrialRunner::new(g, spec, request.flags, super::prepare::runner_options()))
        .collect::<Result<Vec<_>, _>>()?)
}

/// The devices, ready for trials.
pub(super) struct Devices<'r, 'g> {
    /// One per GPU, in the order given.
    pub devices: Vec<Device<'r, 'g>>,
    /// Whether the all-f32 program is measurably faster than the f64 one on the first GPU: a
    /// speed-up in % of the ideal exists.
    pub measurable: bool,
}

/// Times the references on every device at once (once per run, or taken from the resumed
/// store), records those timed now, and switches each runner to one build of everything for
/// the accuracy-only trials; notes several GPUs, an ideal that cannot be measured and a device
/// that cannot switch.
pub(super) fn devices<'r, 'g>(
    runners: Vec<(&'r mut (dyn Session + Send + 'g), u32)>,
    store: &mut TrialStore,
    policy: &TimingPolicy,
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<Devices<'r, 'g>, TuneError> {
    progress(TuneEvent::References);
    let mut runners = runners;
    let timed = device_references(&mut runners, store, policy)?;
    let mut devices = Vec::with_capacity(runners.len());
    for ((runner, ordinal), (references, measured)) in runners.into_iter().zip(timed) {
        for (which, (t, d)) in measured {
            store.reference_measured(which, ordinal, t, d)?;
        }
        devices.push(Device {
            runner,
            ordinal,
            references,
        });
    }
    let references = devices[0].references;
    progress(TuneEvent::Timed(references));
    if devices.len() > 1 {
        let each: Vec<String> = devices
            .iter()
            .map(|d| {
                format!(
                    "GPU {} {:.4}/{:.4} ms",
                    d.ordinal, d.references.t64.median_ms, d.references.t32.median_ms
                )
            })
            .collect();
        notes.push(format!(
            "the trials ran on {} GPUs, each timed against the f64/all-f32 programs timed on its own GPU: {}",
            devices.len(),
            each.join(", ")
        ));
    }
    let measurable =
        crate::noise::speedup(&references.t64, &references.t64, &references.t32).is_some();
    if !measurable {
        notes.push(unmeasurable_note(&references));
    }
    // Accuracy-only trials without a JIT each: one switched build of everything per device.
    let several = devices.len() > 1;
    for d in devices.iter_mut() {
        if let Err(e) = d
            .runner
            .enable_switching(&Configuration::Demote(Demotion::all()))
        {
            let on = if several {
                format!(" on GPU {}", d.ordinal)
            } else {
                String::new()
            };
            notes.push(format!("every trial is a build of its own{on}: {e}"));
        }
    }
    Ok(Devices {
        devices,
        measurable,
    })
}

/// Why only the strategies that need no ideal speed-up ran (mode 1).
fn unmeasurable_note(references: &References) -> String {
    let without: Vec<&str> = STRATEGIES
        .iter()
        .filter(|s| !s.needs_ideal())
        .map(|s| s.name())
        .collect();
    format!(
        "the all-f32 program ({:.4} ms) is not measurably faster than the f64 program ({:.4} ms): no speed-up in % of the ideal exists, so no performance threshold can be met and only {} ran",
        references.t32.median_ms,
        references.t64.median_ms,
        without.join(" and ")
    )
}

/// References a device timed, to be recorded: `(which, (time, digits))`.
type Timed = Vec<(&'static str, (Time, f64))>;

/// The f64 and all-f32 references of every runner (each with its GPU's ordinal), from the
/// resumed store or timed now, the runners at the same time, each on its own GPU.
fn device_references(
    runners: &mut [(&mut (dyn Session + Send + '_), u32)],
    store: &TrialStore,
    policy: &TimingPolicy,
) -> Result<Vec<(References, Timed)>, EvaluateError> {
    let time = |runner: &mut dyn Session, ordinal: u32| {
        let mut measured: Timed = Vec::new();
        let mut get = |which: &'static str, c: &Configuration| {
            if let Some(r) = store.reference(which, ordinal) {
                return Ok(r);
            }
            let r = reference_time(runner, c, policy)?;
            measured.push((which, r));
            Ok::<_, EvaluateError>(r)
        };
        let (t64, _) = get("f64", &Configuration::AsWritten)?;
        let (t32, digits32) = get("all-f32", &Configuration::Demote(Demotion::all()))?;
        Ok((References { t64, t32, digits32 }, measured))
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = runners
            .iter_mut()
            .map(|(runner, ordinal)| {
                let (time, ordinal) = (&time, *ordinal);
                scope.spawn(move || time(&mut **runner, ordinal))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(EvaluateError::Fatal(
                        "timing the references panicked".into(),
                    ))
                })
            })
            .collect()
    })
}
