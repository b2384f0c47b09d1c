//! A whole `mantissa mathlib` run: every (function, format) of a plan, resumed from and
//! appended to the records as it goes; and `--check`, one input on every column.

use std::sync::atomic::{AtomicBool, Ordering};

use mantissa_gpu::{run_pool, PoolError, PoolSummary};
use mantissa_report::Store;

use crate::cpu::CpuLibrary;
use crate::format::{ulp_error, Format};
use crate::functions::{Function, Variant};
use crate::gpu::MathGpu;
use crate::measure::{measure, Column, Measurement, Plan};
use crate::records::{read, recorded, Record, Setting};
use crate::reference::{reference, Reference};
use crate::MathlibError;

/// What a run reports as it goes.
pub enum Event<'a> {
    /// Progress inside one function: (what, fraction).
    Progress(&'a str, f64),
    /// A function finished (or was read back from the records: `resumed`).
    Measured {
        /// Its columns.
        measurements: &'a [Measurement],
        /// True when taken from earlier records.
        resumed: bool,
    },
    /// A run on several GPUs ended: where its time went, per GPU (in the order given).
    Pool(&'a PoolSummary),
}

/// The setting a plan runs under on this machine.
pub fn setting(plan: &Plan, gpu: Option<&MathGpu>) -> Setting {
    Setting {
        device: gpu.map(|g| g.gpu().info().name.clone()),
        driver: gpu.map(|g| g.gpu().info().driver.to_string()),
        cpu: plan.libraries.iter().map(|l| l.describe()).collect(),
        budget_s: plan.budget.as_secs_f64(),
        cpu_sample: plan.cpu_sample,
        seed: plan.seed,
    }
}

/// Measure every (function, format) of `plan` — each pair one work unit, formats outer and
/// functions inner — or, with a sharded `store`, the units that are its shard's. With `store`,
/// units it already holds under the same setting are read back instead of measured, and each
/// measured unit's columns are appended as it finishes. One GPU (or none): [`run_plan_on`].
pub fn run_plan(
    plan: &Plan,
    gpu: Option<&MathGpu>,
    store: Option<&mut Store<Record>>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Measurement>, MathlibError> {
    run_plan_on(
        plan,
        gpu.map(std::slice::from_ref).unwrap_or(&[]),
        store,
        &AtomicBool::new(false),
        on_event,
    )
}

/// [`run_plan`] on every GPU of `gpus` (distinct devices of one model): each device has a
/// worker thread that measures one unit at a time (so a timed sweep never shares its GPU), a
/// free device takes the next unit, and results are appended and reported in plan order
/// whichever device measured them ([`mantissa_gpu::run_pool`]). With several devices, progress
/// is reported per finished unit rather than inside each function. Once `stop` is set no
/// further unit starts: the units finished are kept (and returned), the ones running finish.
pub fn run_plan_on(
    plan: &Plan,
    gpus: &[MathGpu],
    store: Option<&mut Store<Record>>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Measurement>, MathlibError> {
    check_columns(plan, gpus)?;
    check_devices(gpus)?;
    run_units(plan, gpus, store, stop, on_event)
}

/// Refuses a plan with no column to measure: no GPU in use and no CPU library.
pub fn check_columns(plan: &Plan, gpus: &[MathGpu]) -> Result<(), MathlibError> {
    if gpus.is_empty() && plan.libraries.is_empty() {
        return Err(MathlibError::Usage(
            "nothing to measure: no GPU is in use and --libraries none leaves no CPU column; give --libraries std,libm (or run where a GPU is, without --cpu-only)".into(),
        ));
    }
    Ok(())
}

/// [`run_plan_on`] without the check that devices are distinct: two handles on one GPU, the only
/// way to exercise the pool on a machine with one GPU. For tests only.
#[doc(hidden)]
pub fn run_plan_sharing_devices_for_tests(
    plan: &Plan,
    gpus: &[MathGpu],
    store: Option<&mut Store<Record>>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Measurement>, MathlibError> {
    run_units(plan, gpus, store, stop, on_event)
}

/// The unit loop of [`run_plan_on`]: in this thread for one GPU or none, pooled for several.
fn run_units(
    plan: &Plan,
    gpus: &[MathGpu],
    mut store: Option<&mut Store<Record>>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Measurement>, MathlibError> {
    let setting = setting(plan, gpus.first());
    let old = match &store {
        Some(s) if s.previous_records() > 0 => read(s.path())?.0,
        _ => Vec::new(),
    };
    let units: Vec<(u64, Format, Function)> = plan
        .formats
        .iter()
        .flat_map(|&format| plan.functions.iter().map(move |&f| (format, f)))
        .zip(0u64..)
        .map(|((format, f), unit)| (unit, format, f))
        .filter(|(unit, ..)| store.as_ref().is_none_or(|s| s.owns(*unit)))
        .collect();
    // A record names its GPU's ordinal only where that is news: several GPUs, or not GPU 0.
    let name_ordinal = |g: &MathGpu| {
        let ordinal = g.gpu().ordinal();
        (gpus.len() > 1 || ordinal != 0).then_some(ordinal as u32)
    };
    let mut all = Vec::new();
    // What to do with one unit's result, in plan order.
    let mut keep = |unit: u64,
                    measured: Vec<Measurement>,
                    resumed: bool,
                    ordinal: Option<u32>,
                    on_event: &mut dyn FnMut(Event<'_>)|
     -> Result<(), MathlibError> {
        if let (false, Some(store)) = (resumed, store.as_deref_mut()) {
            let records = measured.iter().map(|m| Record {
                device_ordinal: ordinal,
                ..Record::new(&setting, m.clone())
            });
            store.append_unit(records, unit)?;
        }
        on_event(Event::Measured {
            measurements: &measured,
            resumed,
        });
        all.extend(measured);
        Ok(())
    };
    if gpus.len() <= 1 {
        let gpu = gpus.first();
        for &(unit, format, f) in &units {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let before = recorded(&old, &setting, f, format);
            if !before.is_empty() {
                keep(unit, before, true, None, on_event)?;
                continue;
            }
            let ms = measure(f, format, plan, gpu, &mut |what, p| {
                on_event(Event::Progress(what, p))
            })?;
            keep(unit, ms, false, gpu.and_then(name_ordinal), on_event)?;
        }
        return Ok(all);
    }
    let total = units.len();
    let pooled = run_pool(
        gpus,
        &units,
        stop,
        |_, gpu| gpu,
        |gpu, _, &(_, format, f)| -> Result<_, MathlibError> {
            let before = recorded(&old, &setting, f, format);
            if !before.is_empty() {
                return Ok((before, true, None));
            }
            let ms = measure(f, format, plan, Some(*gpu), &mut |_, _| {})?;
            Ok((ms, false, name_ordinal(gpu)))
        },
        |i, &(unit, ..), measured| {
            let (ms, resumed, ordinal) = measured?;
            keep(unit, ms, resumed, ordinal, on_event)?;
            on_event(Event::Progress("functions", (i + 1) as f64 / total as f64));
            Ok(())
        },
    );
    match pooled {
        Ok(pool) => {
            on_event(Event::Pool(&pool));
            Ok(all)
        }
        Err(PoolError::Emit(e)) => Err(e),
        Err(e) => Err(MathlibError::Usage(e.to_string())),
    }
}

/// Refuses a device given twice (its timings would be shared) and devices of different models
/// (the records' setting names one).
fn check_devices(gpus: &[MathGpu]) -> Result<(), MathlibError> {
    for (i, g) in gpus.iter().enumerate() {
        let (a, b) = (gpus[0].gpu().info(), g.gpu().info());
        if gpus[..i].iter().any(|e| e.gpu().ordinal() == b.ordinal) {
            return Err(MathlibError::Usage(format!(
                "GPU {} is given twice: each GPU measures one function at a time",
                b.ordinal
            )));
        }
        if a.name != b.name {
            return Err(MathlibError::Usage(format!(
                "GPU {} ({}) and GPU {} ({}) differ: the records name one GPU model; choose GPUs of one model with --devices",
                a.ordinal, a.name, b.ordinal, b.name
            )));
        }
    }
    Ok(())
}

/// One column's answer at the checked input.
#[derive(Clone, Debug)]
pub struct CheckedColumn {
    /// The column.
    pub column: Column,
    /// Its result.
    pub result: f64,
    /// Its error in ulps.
    pub ulps: f64,
}

/// `--check`: the input, its correctly rounded result and every column's result and error.
#[derive(Clone, Debug)]
pub struct Check {
    /// The function.
    pub function: Function,
    /// The format.
    pub format: Format,
    /// The arguments, rounded to the format.
    pub args: Vec<f64>,
    /// The reference.
    pub reference: Reference,
    /// The columns.
    pub columns: Vec<CheckedColumn>,
}

/// `n` arguments for `f`, or the one-line usage error that says how many it takes.
pub fn check_arity(f: Function, n: usize) -> Result<(), MathlibError> {
    if n == f.arity() {
        return Ok(());
    }
    Err(MathlibError::Usage(format!(
        "{} takes {} argument(s) (x or x,y), got {n}",
        f.name(),
        f.arity()
    )))
}

/// Evaluate one input on every GPU variant (when `gpu` is given) and CPU library.
pub fn check(
    f: Function,
    format: Format,
    args: &[f64],
    gpu: Option<&MathGpu>,
) -> Result<Check, MathlibError> {
    check_arity(f, args.len())?;
    let args: Vec<f64> = args.iter().map(|&a| format.round_f64(a)).collect();
    let reference = reference(f, &args, format).map_err(|e| MathlibError::Usage(e.to_string()))?;
    let mut columns = Vec::new();
    let y = if args.len() > 1 { args[1] } else { 0.0 };
    if let Some(gpu) = gpu {
        for v in Variant::ALL
            .into_iter()
            .filter(|&v| f.has_variant(format, v))
        {
            let result = gpu.eval(f, format, v, &args[..1], &[y])?[0];
            columns.push(CheckedColumn {
                column: Column::Gpu(v),
                result,
                ulps: ulp_error(format, result, &reference.exact),
            });
        }
    }
    for lib in CpuLibrary::ALL {
        if let Some(result) = lib.eval(f, format, args[0], y) {
            columns.push(CheckedColumn {
                column: Column::Cpu(lib),
                result,
                ulps: ulp_error(format, result, &reference.exact),
            });
        }
    }
    Ok(Check {
        function: f,
        format,
        args,
        reference,
        columns,
    })
}
