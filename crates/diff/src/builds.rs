//! Seed 003's four builds (ch. 5), made from the program's PTX and measured through the trial
//! runner: time (the harness's [`Timing`], against the program as written) and error against
//! the reference (the harness's comparison).
//!
//! - **naive**: the program as written under the requested flags.
//! - **cpu-matching**: the minimal set of causes switched off.
//! - **fastest**: the fastest, by median, of the builds tried whose every output stays within
//!   the spec's tolerance of the reference (an output without `tolerance` must equal it): the
//!   preset flag sets' builds, the switch sets the search tested, each blamed line switched off
//!   alone, and the other three builds.
//! - **most-accurate**: IEEE operations: every approximate division, reciprocal and square root
//!   made `.rn`, every `.ftz` removed. Contractions are *kept*: an `fma` rounds once where
//!   `mul.rn` + `add.rn` round twice, so its error bound (half an ulp of the result) is never
//!   larger than the split pair's, and splitting one can only add an error (the CPU-matching
//!   build splits them to match, not to be accurate). Float→integer conversions are kept as
//!   the GPU computes them: saturating is not less accurate than wrapping. Math-library code
//!   stays as it is (listed, not switched), and f32 arithmetic stays f32: there is no pass
//!   promoting f32 to f64 yet (the inverse of `pass::demote`), so this build does not compute
//!   in f64 where digits are lost.

use crate::analyse::{DiffError, DiffEvent, Session, Values};
use crate::cost::{LineCost, Relative};
use mantissa_gpu::{FlagSet, Timing};
use mantissa_harness::trial::build::build_module;
use mantissa_ptx::pass::cause::{Cause, CauseReport};
use mantissa_ptx::pass::PipelineRun;
use serde::Serialize;

/// The builds' names, in the order tables list them.
pub const NAMES: [&str; 4] = ["naive", "cpu-matching", "fastest", "most-accurate"];

/// One output of a build against the reference (the harness's metrics).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputError {
    /// The output's name.
    pub name: String,
    /// Within the spec's tolerance (bit-identical when it gives none).
    pub within_tolerance: bool,
    /// Elements whose bits differ from the reference.
    pub differing: u64,
    /// Largest distance in ulps of the output's type.
    pub max_ulps: f64,
    /// Largest relative error.
    pub max_rel: f64,
    /// Correct decimal digits, minimum over elements (infinite when all are equal).
    pub digits: f64,
}

/// One instruction a build changed, at its source line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineChange {
    /// The source file (as the PTX names it).
    pub file: String,
    /// The source line.
    pub line: u32,
    /// The cause switched.
    pub cause: Cause,
    /// The instruction as written.
    pub before: String,
    /// What replaced it.
    pub after: String,
}

/// One of the four builds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Build {
    /// `naive`, `cpu-matching`, `fastest` or `most-accurate`.
    pub name: String,
    /// How it was made, in words.
    pub how: String,
    /// The flag set its PTX was built with.
    pub flags: String,
    /// The candidates switched (indices into the run's candidates).
    pub switched: Vec<usize>,
    /// Every instruction changed from that flag set's PTX, in source-line order.
    pub changes: Vec<LineChange>,
    /// Its time against the program as written.
    pub time: Relative,
    /// Each output against the reference.
    pub errors: Vec<OutputError>,
    /// Every output within its tolerance.
    pub within_tolerance: bool,
    /// The PTX (saved as NAME.ptx; not in the JSON).
    #[serde(skip)]
    pub ptx: String,
}

/// What the diff already ran that the builds reuse.
pub(crate) struct Tried<'a> {
    /// The program as written, timed.
    pub naive: &'a Timing,
    /// Its outputs.
    pub naive_values: &'a Values,
    /// The minimal set.
    pub minimal: &'a [usize],
    /// The switch sets the search tested whose outputs stayed within tolerance.
    pub within: &'a [Vec<usize>],
    /// Each blamed line switched off alone, with its outputs.
    pub costs: &'a [(LineCost, Values)],
}

/// Search sets timed as fastest candidates, at most: each costs a timed trial.
const MAX_SEARCH_SETS: usize = 8;

/// Where a build's PTX comes from.
#[derive(Clone)]
enum Origin {
    /// The program as written with these candidates switched.
    Switched(Vec<usize>),
    /// Another flag set's build, as written.
    Flags(FlagSet, String),
}

/// A measured build before it is named.
struct Measured {
    origin: Origin,
    how: String,
    time: Timing,
    values: Values,
}

/// Makes and measures the four builds; a note when no build stays within tolerance (then
/// there is no fastest).
pub(crate) fn make(
    session: &mut Session<'_, '_>,
    tried: &Tried<'_>,
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<(Vec<Build>, Option<String>), DiffError> {
    let flags = session.request.flags;
    let naive = Measured {
        origin: Origin::Switched(Vec::new()),
        how: format!("as written under {}", flags.name()),
        time: tried.naive.clone(),
        values: tried.naive_values.clone(),
    };
    progress(DiffEvent::Build(NAMES[1].into()));
    let cpu = measure(
        session,
        Origin::Switched(tried.minimal.to_vec()),
        format!("the minimal set switched ({} causes)", tried.minimal.len()),
    )?;
    progress(DiffEvent::Build(NAMES[3].into()));
    let ieee: Vec<usize> = (0..session.list.len())
        .filter(|&k| {
            let c = &session.list[k];
            c.switchable() && matches!(c.cause, Cause::Approximate | Cause::FlushToZero)
        })
        .collect();
    let accurate = measure(
        session,
        Origin::Switched(ieee.clone()),
        format!(
            "IEEE division, reciprocal and square root, no ftz ({} switched); fma kept",
            ieee.len()
        ),
    )?;
    // The fastest: among everything tried that stays within tolerance.
    progress(DiffEvent::Build(NAMES[2].into()));
    let mut pool: Vec<Measured> = Vec::new();
    for (cost, values) in tried.costs {
        pool.push(Measured {
            origin: Origin::Switched(cost.candidates.clone()),
            how: format!(
                "line {} switched off alone ({} causes)",
                cost.line,
                cost.candidates.len()
            ),
            time: cost.switched_off.time.clone(),
            values: values.clone(),
        });
    }
    let mut sets: Vec<&Vec<usize>> = tried
        .within
        .iter()
        .filter(|s| s.as_slice() != tried.minimal)
        .collect();
    sets.sort_by_key(|s| s.len());
    sets.dedup();
    for set in sets.into_iter().take(MAX_SEARCH_SETS) {
        pool.push(measure(
            session,
            Origin::Switched(set.clone()),
            format!("a set the search tried ({} causes switched)", set.len()),
        )?);
    }
    let mut note = None;
    for other in FlagSet::ALL.into_iter().filter(|f| *f != flags) {
        match build_module(session.gpu, session.spec, other) {
            Ok(built) => pool.push(measure(
                session,
                Origin::Flags(other, built.ptx),
                format!("as written under {}", other.name()),
            )?),
            Err(e) => {
                let first = e.lines().next().unwrap_or_default().to_string();
                note = Some(format!("the {} build failed: {first}", other.name()));
            }
        }
    }
    let candidates = [&naive, &cpu, &accurate]
        .into_iter()
        .chain(pool.iter())
        .filter(|m| session.within_tolerance(&m.values));
    let fastest = candidates.min_by(|a, b| a.time.median_ms.total_cmp(&b.time.median_ms));
    let mut out = vec![named(session, NAMES[0], &naive, tried.naive)?];
    out.push(named(session, NAMES[1], &cpu, tried.naive)?);
    match fastest {
        Some(f) => out.push(named(session, NAMES[2], f, tried.naive)?),
        None => {
            note = Some(
                "no build tried stays within the spec's tolerance of the reference, so there \
                 is no fastest one (an output without `tolerance` must equal the reference)"
                    .into(),
            )
        }
    }
    out.push(named(session, NAMES[3], &accurate, tried.naive)?);
    Ok((out, note))
}

/// Runs one build timed.
fn measure(
    session: &mut Session<'_, '_>,
    origin: Origin,
    how: String,
) -> Result<Measured, DiffError> {
    let ptx = ptx_of(session, &origin)?.0;
    let (values, time) = session.timed(&ptx)?;
    let time = time.ok_or_else(|| {
        DiffError::Trial(mantissa_harness::TrialError::Failed(
            "a timed trial came back without a timing".into(),
        ))
    })?;
    Ok(Measured {
        origin,
        how,
        time,
        values,
    })
}

/// The PTX of `origin`, and the passes' run when it switches something.
fn ptx_of(
    session: &Session<'_, '_>,
    origin: &Origin,
) -> Result<(String, Option<PipelineRun>), DiffError> {
    Ok(match origin {
        Origin::Switched(set) if set.is_empty() => (session.ptx.clone(), None),
        Origin::Switched(set) => {
            let run = session.switched(set)?;
            (run.module.to_string(), Some(run))
        }
        Origin::Flags(_, ptx) => (ptx.clone(), None),
    })
}

/// `m` as the build `name`.
fn named(
    session: &Session<'_, '_>,
    name: &str,
    m: &Measured,
    naive: &Timing,
) -> Result<Build, DiffError> {
    let (ptx, run) = ptx_of(session, &m.origin)?;
    let (flags, switched) = match &m.origin {
        Origin::Switched(set) => (session.request.flags, set.clone()),
        Origin::Flags(f, _) => (*f, Vec::new()),
    };
    let errors = session.errors(&m.values);
    Ok(Build {
        name: name.into(),
        how: m.how.clone(),
        flags: flags.name(),
        switched,
        changes: run.map_or_else(Vec::new, |r| line_changes(session, &r)),
        time: Relative::of(m.time.clone(), naive),
        within_tolerance: errors.iter().all(|e| e.within_tolerance),
        errors,
        ptx,
    })
}

/// Every instruction the passes of `run` changed, at its candidate's source line.
fn line_changes(session: &Session<'_, '_>, run: &PipelineRun) -> Vec<LineChange> {
    let mut out = Vec::new();
    for report in &run.reports {
        let Some(r) = report.details::<CauseReport>() else {
            continue;
        };
        for change in &r.changes {
            // The contraction pass reports both of its causes as one; the candidate says which.
            let c = session
                .list
                .iter()
                .filter(|c| c.inst == change.inst)
                .min_by_key(|c| c.cause != r.cause);
            let Some(c) = c else { continue };
            out.push(LineChange {
                file: c.site.file.clone(),
                line: c.site.line,
                cause: c.cause,
                before: change.before.clone(),
                after: change.after.clone(),
            });
        }
    }
    out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    out
}

/// The changes of `build` as text, one instruction per line under its source line.
pub fn changes_text(build: &Build) -> String {
    let mut s = format!(
        "# {}: {}\n# PTX of the {} build; {} instructions changed\n",
        build.name,
        build.how,
        build.flags,
        build.changes.len()
    );
    let mut last: Option<(&str, u32)> = None;
    for c in &build.changes {
        if last != Some((c.file.as_str(), c.line)) {
            let file = c.file.rsplit(['/', '\\']).next().unwrap_or("");
            s.push_str(&format!("{file}:{}\n", c.line));
            last = Some((c.file.as_str(), c.line));
        }
        s.push_str(&format!(
            "  {:<14} {}\n  {:<14} -> {}\n",
            c.cause.name(),
            c.before,
            "",
            c.after
        ));
    }
    if build.changes.is_empty() {
        s.push_str("(no instruction changed)\n");
    }
    s
}
