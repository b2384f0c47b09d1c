//! `mantissa diff` of a program reached only through a [`Session`] — an application run as it
//! is (`mantissa diff -- APP ARGS`), whose source and build the diff does not have. What it
//! explains is the program as built against **the same program with every switchable cause
//! switched** (each contraction split into a rounded multiply and add, each approximate or
//! flushing instruction made IEEE, each float-to-integer conversion given the x86-64 result:
//! [`mantissa_ptx::pass::cause`]) — what the GPU run would give if it computed as a strict CPU
//! program does. There is no other build to compare with (no source), so every fma is a
//! contraction candidate, and the math functions inlined into the PTX are listed, not searched.
//!
//! The search and the effects are the spec diff's ([`crate::search`], [`crate::analyse`]); the
//! outputs are what the session reports (an application's copies to the host, or what it
//! prints), compared element for element in their type. Not here: the time of each blamed line,
//! seed 003's builds and the math-function search, which need a spec's build.

use crate::analyse::{
    differing, explain, searched, Against, DiffError, DiffEvent, DiffRun, Explained, Observed,
    OutputDiff, Values,
};
use crate::mathfn::MathFunctions;
use mantissa_gpu::DType;
use mantissa_harness::compare::output_values;
use mantissa_harness::{pipelines, Base, Session, TrialTiming, Variant};
use mantissa_ptx::pass::cause::candidates;

/// What the reference is called in the run's document.
pub const EVERY_CAUSE: &str = "every cause switched";

/// `program` run once: each output the session reports, its values and its type.
fn run(
    session: &mut dyn Session,
    program: &Variant,
) -> Result<(Vec<String>, Vec<DType>, Values), DiffError> {
    session.run_variant(program, TrialTiming::AccuracyOnly)?;
    let outputs = session.outputs()?;
    let names = outputs.iter().map(|(n, _)| n.clone()).collect();
    let dtypes = outputs.iter().map(|(_, d)| d.dtype()).collect();
    let values = outputs
        .iter()
        .map(|(_, d)| output_values(d, None, None))
        .collect();
    Ok((names, dtypes, values))
}

/// The values of `program` run once, which must report the outputs `names` do.
fn values(
    session: &mut dyn Session,
    program: &Variant,
    names: &[String],
) -> Result<Values, DiffError> {
    let (theirs, _, v) = run(session, program)?;
    if theirs != names {
        return Err(DiffError::Trial(mantissa_harness::TrialError::Failed(format!(
            "{}: the outputs differ from the program as built's ({} against {}): a switched cause changed what the program copies back",
            program.name,
            theirs.join(", "),
            names.join(", ")
        ))));
    }
    Ok(v)
}

/// Explains `name`'s outputs as built against every cause switched (see the module docs).
pub fn diff_session(
    session: &mut dyn Session,
    name: &str,
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<DiffRun, DiffError> {
    progress(DiffEvent::Baseline);
    let as_built = session.make(pipelines::as_built())?;
    let (names, dtypes, first) = run(session, &as_built)?;
    let second = values(session, &as_built, &names)?;
    let unstable: Vec<String> = names
        .iter()
        .zip(differing(&second, &first))
        .filter(|(_, n)| *n > 0)
        .map(|(o, n)| format!("{o}: {n} elements"))
        .collect();
    if !unstable.is_empty() {
        return Err(DiffError::Nondeterministic(unstable.join(", ")));
    }
    let module = session.base_module(&Base::AsBuilt)?;
    let list = candidates(&module.module, None);
    let switchable = searched(&list, Against::Reference);
    progress(DiffEvent::Other(EVERY_CAUSE.into()));
    let everything = session.make(pipelines::causes(&list, &switchable)?)?;
    let reference = values(session, &everything, &names)?;
    let as_written = differing(&first, &reference);
    let total: u64 = as_written.iter().sum();
    if total == 0 {
        return Err(DiffError::NoDifference {
            flags: "the program as built".into(),
            against: EVERY_CAUSE.into(),
        });
    }
    progress(DiffEvent::Candidates {
        differing: total,
        switchable: switchable.len(),
        listed: list.len() - switchable.len(),
    });
    let Explained {
        found,
        minimal,
        with_all,
        blamed,
        notes: explained,
    } = explain(
        session,
        &Observed {
            list: &list,
            switchable: &switchable,
            first: &first,
            reference: &reference,
            dtypes: &dtypes,
            total,
        },
        &mut |session, program| values(session, program, &names),
        &mut |_, _| {},
        progress,
    )?;
    let mut notes = vec![format!(
        "compared with the program with every switchable cause switched ({}): no build of its source to compare with, so every fma is a contraction candidate",
        switchable.len()
    )];
    notes.extend(explained);
    let remaining = differing(&with_all, &reference);
    let outputs = names
        .iter()
        .zip(&first)
        .zip(as_written.iter().zip(&remaining))
        .map(|((n, v), (&d, &r))| OutputDiff {
            name: n.clone(),
            elements: v.len(),
            differing: d,
            remaining: r,
        })
        .collect();
    Ok(DiffRun {
        spec: name.to_string(),
        flags: "as built".into(),
        against: EVERY_CAUSE.into(),
        device: session.device_name(),
        outputs,
        candidates: list,
        blamed,
        differing: total,
        remaining: remaining.iter().sum(),
        search_trials: found.tests,
        effect_trials: minimal.len() + usize::from(!minimal.is_empty()),
        fell_back: found.fell_back,
        naive_time: None,
        costs: Vec::new(),
        builds: Vec::new(),
        math: MathFunctions::default(),
        notes,
    })
}
