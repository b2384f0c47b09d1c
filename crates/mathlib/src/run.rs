//! A whole `mantissa mathlib` run: every (function, format) of a plan, resumed from and
//! appended to the records as it goes; and `--check`, one input on every column.

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
/// measured unit's columns are appended as it finishes.
pub fn run_plan(
    plan: &Plan,
    gpu: Option<&MathGpu>,
    mut store: Option<&mut Store<Record>>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Measurement>, MathlibError> {
    let setting = setting(plan, gpu);
    let old = match &store {
        Some(s) if s.previous_records() > 0 => read(s.path())?.0,
        _ => Vec::new(),
    };
    let units = plan
        .formats
        .iter()
        .flat_map(|&format| plan.functions.iter().map(move |&f| (format, f)));
    let mut all = Vec::new();
    for (unit, (format, f)) in (0u64..).zip(units) {
        if store.as_ref().is_some_and(|s| !s.owns(unit)) {
            continue;
        }
        let before = recorded(&old, &setting, f, format);
        if !before.is_empty() {
            on_event(Event::Measured {
                measurements: &before,
                resumed: true,
            });
            all.extend(before);
            continue;
        }
        let ms = measure(f, format, plan, gpu, &mut |what, p| {
            on_event(Event::Progress(what, p))
        })?;
        if let Some(store) = store.as_deref_mut() {
            let records = ms.iter().map(|m| Record::new(&setting, m.clone()));
            store.append_unit(records, unit)?;
        }
        on_event(Event::Measured {
            measurements: &ms,
            resumed: false,
        });
        all.extend(ms);
    }
    Ok(all)
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
