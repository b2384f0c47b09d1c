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
//! - **most-accurate**: IEEE operations, computed in f64: every approximate division,
//!   reciprocal and square root made `.rn`, every `.ftz` removed, then every f32 arithmetic
//!   instruction promoted to f64 ([`mantissa_ptx::pass::promote`], [`most_accurate`]), so that
//!   chains of f32 operations keep their intermediates in f64 and are rounded to f32 once,
//!   where a value is stored, passed to a call or read by an instruction without an f64 form
//!   (the hardware special functions, directed roundings, bit operations). Contractions are
//!   *kept*: an `fma` rounds once where `mul.rn` + `add.rn` round twice, so its error bound
//!   (half an ulp of the result) is never larger than the split pair's, and splitting one can
//!   only add an error (the CPU-matching build splits them to match, not to be accurate); this
//!   holds in f64 as in f32. Float→integer conversions are kept as the GPU computes them
//!   (saturating is not less accurate than wrapping), now of the f64 value. Math-library code
//!   stays as it is (listed, not switched; code nvcc marks as inlined from a math function is
//!   not promoted). f64 arithmetic stays f64: an f64 program has nothing to promote, and
//!   double-word arithmetic (pairs of f64) is out of scope, so its most-accurate build is its
//!   IEEE build. The build's change list names every promoted instruction (`promoted`) and
//!   every conversion of an f32 value into f64 for promoted code (`to_f64`), per source line.
//!
//! Each build's error is measured twice: against the reference, and per floating-point output
//! against the higher-precision shadow of that same build (digits right, minimum and median
//! over the elements), by the shadow-values analysis of `mantissa shadow`
//! ([`mantissa_shadow::values::output_digits_of`]) run on the build's PTX through the same
//! runner. When that run is impossible (the instrumented build exceeds the launch's resources,
//! or it changes the build's outputs), the build says why and has no shadow digits.

use crate::analyse::{DiffError, DiffEvent, Downloaded, Measuring, Values};
use crate::cost::{LineCost, Relative};
use mantissa_gpu::{FlagSet, Timing};
use mantissa_harness::{pipelines, Base, Recipe, TrialError, Variant};
use mantissa_ptx::model::Module;
use mantissa_ptx::pass::cause::{Candidate, Cause, CauseReport, SwitchError};
use mantissa_ptx::pass::promote::PromoteReport;
use mantissa_ptx::pass::{PipelineRun, Report};
use serde::{Serialize, Serializer};

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
    /// Digits against the build's own higher-precision shadow, for a floating-point output
    /// when the shadow run was possible (over the output's whole buffer).
    pub shadow: Option<ShadowDigits>,
}

/// The digits an output's elements get right against the higher-precision shadow of the same
/// build (`mantissa_shadow::values::OutputDigits`, summarised).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShadowDigits {
    /// The fewest digits of any element (`None`: no element with a finite value and shadow).
    pub min: Option<f64>,
    /// The median over those elements.
    pub median: Option<f64>,
    /// Elements with a finite value and shadow (the others are not in the digits).
    pub finite: usize,
    /// Elements of the buffer.
    pub elements: usize,
}

/// What a build did to one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A cause switched off.
    Switched(Cause),
    /// Computed in f64 (`pass::promote`).
    Promoted,
    /// An f32 value converted to f64 after it is written, for the promoted code reading it.
    ToF64,
}

impl ChangeKind {
    /// The name listings and JSON use: the cause's (`approximate`), `promoted` or `to_f64`.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Switched(c) => c.name(),
            ChangeKind::Promoted => "promoted",
            ChangeKind::ToF64 => "to_f64",
        }
    }
}

impl Serialize for ChangeKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One instruction a build changed, at its source line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineChange {
    /// The source file (as the PTX names it).
    pub file: String,
    /// The source line.
    pub line: u32,
    /// What was done to it: the cause switched, or promoted to f64.
    pub kind: ChangeKind,
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
    /// Why the outputs have no digits against the shadow, when the shadow run was impossible.
    pub shadow_unavailable: Option<String>,
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
    /// Its output buffers, as downloaded.
    pub naive_outputs: &'a Downloaded,
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
    /// The program as written with these candidates switched, then its f32 arithmetic
    /// promoted to f64 ([`most_accurate`]).
    Promoted(Vec<usize>),
    /// Another flag set's build, as written.
    Flags(FlagSet),
}

/// A measured build before it is named.
struct Measured {
    origin: Origin,
    how: String,
    time: Timing,
    values: Values,
    /// Its output buffers, as its timed trial's checked run left them (`None` for a cost
    /// trial, which kept only the values: downloaded again when it is named).
    outputs: Option<Downloaded>,
}

/// Makes and measures the four builds; notes when no build stays within tolerance (then there
/// is no fastest), when another flag set's build failed, and what promotion left in f32.
pub(crate) fn make(
    session: &mut Measuring<'_, '_>,
    tried: &Tried<'_>,
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<(Vec<Build>, Vec<String>), DiffError> {
    let flags = session.request.flags;
    let naive = Measured {
        origin: Origin::Switched(Vec::new()),
        how: format!("as written under {}", flags.name()),
        time: tried.naive.clone(),
        values: tried.naive_values.clone(),
        outputs: Some(tried.naive_outputs.clone()),
    };
    progress(DiffEvent::Build(NAMES[1].into()));
    let cpu = measure(
        session,
        Origin::Switched(tried.minimal.to_vec()),
        format!("the minimal set switched ({} causes)", tried.minimal.len()),
    )?;
    progress(DiffEvent::Build(NAMES[3].into()));
    let ieee = ieee_switches(&session.list);
    let origin = Origin::Promoted(ieee.clone());
    let made = variant_of(session, &origin)?;
    let promotion = made.report::<PromoteReport>();
    let promoted = promotion.map_or(0, PromoteReport::promoted);
    let mut notes: Vec<String> = promotion
        .map(|p| {
            p.notes
                .iter()
                .map(|n| format!("most-accurate: {n}"))
                .collect()
        })
        .unwrap_or_default();
    let accurate = measure(
        session,
        origin,
        format!(
            "IEEE division, reciprocal and square root, no ftz ({} switched); fma kept; {}",
            ieee.len(),
            if promoted > 0 {
                format!(
                    "f32 arithmetic in f64 ({promoted} instructions promoted, chains kept in f64)"
                )
            } else {
                "no f32 arithmetic to promote (f64 stays f64: double-word arithmetic is not \
                 done)"
                    .to_string()
            }
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
            outputs: None,
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
    for other in FlagSet::ALL.into_iter().filter(|f| *f != flags) {
        match session.runner.base_module(&Base::Built(other)) {
            Ok(_) => pool.push(measure(
                session,
                Origin::Flags(other),
                format!("as written under {}", other.name()),
            )?),
            Err(TrialError::Build { message }) => {
                let first = message.lines().next().unwrap_or_default().to_string();
                notes.push(format!("the {} build failed: {first}", other.name()));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let candidates = [&naive, &cpu, &accurate]
        .into_iter()
        .chain(pool.iter())
        .filter(|m| session.within_tolerance(&m.values));
    let fastest = candidates.min_by(|a, b| a.time.median_ms.total_cmp(&b.time.median_ms));
    let mut out = vec![named(session, NAMES[0], &naive, tried.naive, progress)?];
    out.push(named(session, NAMES[1], &cpu, tried.naive, progress)?);
    match fastest {
        Some(f) => out.push(named(session, NAMES[2], f, tried.naive, progress)?),
        None => notes.push(
            "no build tried stays within the spec's tolerance of the reference, so there is no \
             fastest one (an output without `tolerance` must equal the reference)"
                .into(),
        ),
    }
    out.push(named(session, NAMES[3], &accurate, tried.naive, progress)?);
    Ok((out, notes))
}

/// Runs one build timed.
fn measure(
    session: &mut Measuring<'_, '_>,
    origin: Origin,
    how: String,
) -> Result<Measured, DiffError> {
    let made = variant_of(session, &origin)?;
    let (values, time, outputs) = session.timed_with_outputs(&made)?;
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
        outputs: Some(outputs),
    })
}

/// The recipe of `origin` (see [`mantissa_harness::pipelines`]).
fn recipe_of(session: &Measuring<'_, '_>, origin: &Origin) -> Result<Recipe, DiffError> {
    Ok(match origin {
        Origin::Switched(set) if set.is_empty() => pipelines::as_built(),
        Origin::Switched(set) => pipelines::causes(&session.list, set)?,
        Origin::Promoted(set) => pipelines::most_accurate(&session.list, set)?,
        Origin::Flags(flags) => pipelines::other_build(*flags),
    })
}

/// The program of `origin`, made by the runner.
fn variant_of(session: &mut Measuring<'_, '_>, origin: &Origin) -> Result<Variant, DiffError> {
    let recipe = recipe_of(session, origin)?;
    Ok(session.runner.make(recipe)?)
}

/// The candidates the most-accurate build switches: every switchable approximate division,
/// reciprocal, square root and flush-to-zero.
pub fn ieee_switches(list: &[Candidate]) -> Vec<usize> {
    (0..list.len())
        .filter(|&k| {
            let c = &list[k];
            c.switchable() && matches!(c.cause, Cause::Approximate | Cause::FlushToZero)
        })
        .collect()
}

/// The most-accurate build of `module` (the program as written, `list` its candidates): the
/// candidates `ieee` switched ([`ieee_switches`]), then every eligible f32 instruction promoted
/// to f64 ([`pipelines::most_accurate`], run here on a module the caller has); the cause
/// passes' reports, then promotion's ([`PromoteReport`]).
pub fn most_accurate(
    module: &Module,
    list: &[Candidate],
    ieee: &[usize],
) -> Result<PipelineRun, SwitchError> {
    Ok(pipelines::most_accurate(list, ieee)?.pipeline.run(module)?)
}

/// `m` as the build `name`, with its digits against its own shadow.
fn named(
    session: &mut Measuring<'_, '_>,
    name: &str,
    m: &Measured,
    naive: &Timing,
    progress: &mut dyn FnMut(DiffEvent),
) -> Result<Build, DiffError> {
    let made = variant_of(session, &m.origin)?;
    let (flags, switched) = match &m.origin {
        Origin::Switched(set) | Origin::Promoted(set) => (session.request.flags, set.clone()),
        Origin::Flags(f) => (*f, Vec::new()),
    };
    let mut errors = session.errors(&m.values);
    progress(DiffEvent::Shadow(name.into()));
    let outputs = match &m.outputs {
        Some(o) => o.clone(),
        None => session.outputs_of(&made)?,
    };
    let recipe = recipe_of(session, &m.origin)?;
    let shadow_unavailable = match crate::digits::of_build(session, recipe, &outputs)? {
        Ok(digits) => {
            crate::digits::attach(session.spec, &mut errors, &digits);
            None
        }
        Err(why) => Some(why),
    };
    Ok(Build {
        name: name.into(),
        how: m.how.clone(),
        flags: flags.name(),
        switched,
        changes: line_changes(&session.list, &made.reports),
        time: Relative::of(m.time.clone(), naive),
        within_tolerance: errors.iter().all(|e| e.within_tolerance),
        errors,
        shadow_unavailable,
        ptx: made.ptx().to_string(),
    })
}

/// Every instruction the passes of `reports` changed, at its source line: the cause passes' at
/// their candidate's (`list`, the candidates they switched), promotion's at their site.
pub fn line_changes(list: &[Candidate], reports: &[Report]) -> Vec<LineChange> {
    let mut out = Vec::new();
    for report in reports {
        if let Some(p) = report.details::<PromoteReport>() {
            out.extend(p.changes.iter().map(|c| LineChange {
                file: c.site.file.clone(),
                line: c.site.line,
                kind: if c.promoted {
                    ChangeKind::Promoted
                } else {
                    ChangeKind::ToF64
                },
                before: c.before.clone(),
                after: c.after.clone(),
            }));
        }
        let Some(r) = report.details::<CauseReport>() else {
            continue;
        };
        for change in &r.changes {
            // The contraction pass reports both of its causes as one; the candidate says which.
            let c = list
                .iter()
                .filter(|c| c.inst == change.inst)
                .min_by_key(|c| c.cause != r.cause);
            let Some(c) = c else { continue };
            out.push(LineChange {
                file: c.site.file.clone(),
                line: c.site.line,
                kind: ChangeKind::Switched(c.cause),
                before: change.before.clone(),
                after: change.after.clone(),
            });
        }
    }
    // Stable: within a line, the passes' order, then module order.
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
            c.kind.name(),
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
