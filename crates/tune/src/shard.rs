//! A tuning run split into shards (`mantissa tune --shard I/N`) and joined again
//! (`mantissa merge`): what makes shards parts of one run ([`settings`], in every shard's store
//! manifest), the document each shard writes (`OUT/tune.shard-I-of-N.json`, [`document_file`]),
//! and the merge of those documents into the run a single process would have reported
//! ([`merge`]).
//!
//! Only the searches are divided ([`crate::plan`]); every shard builds the program, finds the
//! units, runs the shadow analysis and times the f64 and all-f32 references itself. So the
//! merge takes everything but the searches from shard 0, after checking that every shard found
//! the same units, and says in the notes that each shard's speed-ups are against its own
//! references.

use crate::evaluate::ErrorThreshold;
use crate::flow::{TuneRequest, TuneRun};
use crate::plan::{plans_of, SearchPlan};
use crate::strategy::Selection;
use crate::unit::TuneUnit;
use mantissa_harness::Spec;
use mantissa_report::Shard;
use std::collections::BTreeMap;

/// The document a shard's run writes into its output directory: `tune.shard-I-of-N.json`.
pub fn document_file(shard: Shard) -> String {
    format!("tune.{}.json", shard.file_tag())
}

/// The merged document `mantissa merge` writes, as a whole run's would read.
pub const MERGED_FILE: &str = "tune.json";

/// Why shard documents were not merged: one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ShardError(pub String);

/// Everything that makes two shards parts of one run, for the store's manifest: the spec and
/// its `--set` overrides, the flag set, the searches asked for (error thresholds in order,
/// speed-ups, modes, baseline, exhaustive), φ and the timing policy. (The store adds the units'
/// fingerprint.)
pub fn settings(spec: &Spec, request: &TuneRequest) -> BTreeMap<String, String> {
    let list = |items: Vec<String>| items.join(",");
    let errors = request
        .errors
        .iter()
        .map(|e| match e {
            ErrorThreshold::Digits(d) => d.to_string(),
            ErrorThreshold::SpecTolerance => TOLERANCE.to_string(),
        })
        .collect();
    let set = spec
        .overrides
        .iter()
        .map(|o| format!("{}={}", o.name, o.text))
        .collect();
    [
        ("spec", spec.path.display().to_string()),
        ("set", list(set)),
        ("flags", request.flags.name()),
        ("errors", list(errors)),
        (
            "speedups",
            list(request.speedups.iter().map(f64::to_string).collect()),
        ),
        (
            "modes",
            list(request.modes.iter().map(u8::to_string).collect()),
        ),
        ("baseline", request.baseline.to_string()),
        ("exhaustive", request.exhaustive.to_string()),
        ("max-fisets", request.fiset.max_sets.to_string()),
        ("warmup", request.policy.warmup.to_string()),
        ("repeats", request.policy.repeats.to_string()),
        ("max-repeats", request.policy.max_repeats.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// How [`settings`] writes the spec's tolerance among the error thresholds.
const TOLERANCE: &str = "tolerance";

/// The whole plan of the run whose manifest holds `settings` (the inverse of [`settings`] for
/// what decides the searches).
pub fn plans_of_settings(
    settings: &BTreeMap<String, String>,
) -> Result<Vec<SearchPlan>, ShardError> {
    let get = |k: &str| {
        settings.get(k).map(String::as_str).ok_or_else(|| {
            ShardError(format!(
                "the store's manifest has no setting {k:?}: it was not written by `mantissa tune --shard`"
            ))
        })
    };
    let bad = |k: &str, v: &str| {
        ShardError(format!(
            "the store's manifest has {k} = {v:?}, which is not a list `mantissa tune` writes"
        ))
    };
    fn items<T: std::str::FromStr>(v: &str) -> Result<Vec<T>, ()> {
        v.split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map_err(|_| ()))
            .collect()
    }
    let errors = get("errors")?
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            TOLERANCE => Ok(ErrorThreshold::SpecTolerance),
            d => d.parse().map(ErrorThreshold::Digits).map_err(|_| ()),
        })
        .collect::<Result<Vec<_>, ()>>()
        .map_err(|()| bad("errors", get("errors").unwrap_or_default()))?;
    let speedups: Vec<f64> = items(get("speedups")?)
        .map_err(|()| bad("speedups", get("speedups").unwrap_or_default()))?;
    let modes: Vec<u8> =
        items(get("modes")?).map_err(|()| bad("modes", get("modes").unwrap_or_default()))?;
    let flag = |k: &str| -> Result<bool, ShardError> {
        let v = get(k)?;
        v.parse().map_err(|_| bad(k, v))
    };
    let selection = Selection {
        modes: &modes,
        baseline: flag("baseline")?,
        exhaustive: flag("exhaustive")?,
    };
    Ok(plans_of(&errors, &speedups, selection, None))
}

/// What must agree between shards for their searches to be of one unit list: each unit's kind,
/// name and sites (the measured errors differ in their last bits from run to run).
fn shape(
    units: &[TuneUnit],
) -> Vec<(crate::unit::TuneUnitKind, &str, &[mantissa_ptx::site::Site])> {
    units
        .iter()
        .map(|u| (u.kind, u.name.as_str(), u.sites.as_slice()))
        .collect()
}

/// Joins the documents of every shard of one run (any order) into the run a single process
/// would have reported, given the run's whole plan: everything but the searches from shard 0,
/// the searches of all in plan order, trials and resumed records summed, the notes of shard 0
/// then any other shard's that shard 0 lacks, then the references each shard timed.
///
/// Refused, in one line: a document that is no shard's, shards of different splits, a shard
/// missing or given twice, shards that found other units, and a document whose searches are
/// not exactly its shard's part of the plan (an exhaustive search may be absent: a run leaves
/// it out, with a note, when there are too many units for it).
pub fn merge(runs: Vec<TuneRun>, plans: &[SearchPlan]) -> Result<TuneRun, ShardError> {
    let mut runs: Vec<(Shard, TuneRun)> = runs
        .into_iter()
        .map(|r| match r.shard {
            Some(s) => Ok((s, r)),
            None => Err(ShardError(format!(
                "a document of {} is a whole run's, not a shard's: merge only the tune.shard-I-of-N.json of `mantissa tune --shard` runs",
                r.spec
            ))),
        })
        .collect::<Result<_, _>>()?;
    runs.sort_by_key(|(s, _)| *s);
    let Some(&(first, _)) = runs.first() else {
        return Err(ShardError("no shard documents to merge".into()));
    };
    let n = first.count();
    for pair in runs.windows(2) {
        let (a, b) = (pair[0].0, pair[1].0);
        if b.count() != n {
            return Err(ShardError(format!(
                "shards {a} and {b} split the run differently: {n} shards vs {}",
                b.count()
            )));
        }
        if a == b {
            return Err(ShardError(format!("shard {a} appears twice")));
        }
    }
    if let Some(i) = (0..n).find(|&i| runs.get(i as usize).is_none_or(|(s, _)| s.index() != i)) {
        return Err(ShardError(format!(
            "the document of shard {i}/{n} is missing: its run did not finish; run it again with --resume, then merge again"
        )));
    }
    let base = &runs[0].1;
    for (s, r) in &runs[1..] {
        if shape(&r.fisets) != shape(&base.fisets) || shape(&r.variables) != shape(&base.variables)
        {
            return Err(ShardError(format!(
                "shards {first} and {s} found other units (FISets or variables differ in kind, name or sites): they built another program; run every shard with the same build"
            )));
        }
    }
    for (s, r) in &runs {
        check_searches(*s, r, plans)?;
    }
    let mut notes = base.notes.clone();
    for (_, r) in &runs[1..] {
        for note in &r.notes {
            if !notes.contains(note) {
                notes.push(note.clone());
            }
        }
    }
    let timed: Vec<String> = runs
        .iter()
        .map(|(s, r)| {
            format!(
                "shard {s} f64 {:.4} ms, all-f32 {:.4} ms",
                r.references.t64.median_ms, r.references.t32.median_ms
            )
        })
        .collect();
    notes.push(format!(
        "the run was split into {n} shards, each of which timed its own f64 and all-f32 programs, and a search's speed-ups are against its own shard's ({}); the references shown are shard {first}'s",
        timed.join("; ")
    ));
    let device_trials = runs.iter().map(|(_, r)| r.device_trials).sum();
    let resumed = runs.iter().map(|(_, r)| r.resumed).sum();
    let mut searches: Vec<_> = runs
        .iter_mut()
        .flat_map(|(_, r)| std::mem::take(&mut r.searches))
        .collect();
    searches.sort_by_key(|s| s.unit);
    let (_, mut merged) = runs.swap_remove(0);
    merged.searches = searches;
    merged.device_trials = device_trials;
    merged.resumed = resumed;
    merged.notes = notes;
    merged.shard = None;
    Ok(merged)
}

/// Whether a run may leave `plan` out: its strategy refuses more units than it takes (the
/// exhaustive search), and the run notes that instead of searching.
fn may_be_left_out(plan: &SearchPlan) -> bool {
    plan.strategy.max_units().is_some()
}

/// Refuses a document whose searches are not exactly `shard`'s part of `plans`, in order.
fn check_searches(shard: Shard, run: &TuneRun, plans: &[SearchPlan]) -> Result<(), ShardError> {
    let mut next = plans
        .iter()
        .filter(|p| shard.owns(p.unit as u64))
        .peekable();
    for s in &run.searches {
        // A search the shard left out (too many units for its strategy) is skipped over.
        while next
            .peek()
            .is_some_and(|p| p.unit < s.unit && may_be_left_out(p))
        {
            next.next();
        }
        match next.next() {
            Some(p) if p.unit == s.unit && p.label() == s.label => {}
            want => {
                return Err(ShardError(format!(
                    "the document of shard {shard} holds search {} ({}) where its plan has {}: it is not a document of this run",
                    s.unit,
                    s.label,
                    want.map_or("no more searches".into(), |p| format!("{} ({})", p.unit, p.label()))
                )))
            }
        }
    }
    if let Some(p) = next.find(|p| !may_be_left_out(p)) {
        return Err(ShardError(format!(
            "the document of shard {shard} lacks search {} ({}) of its plan: it is not a document of this run",
            p.unit,
            p.label()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::SearchEntry;
    use crate::noise::Time;

    /// One error threshold, modes 1 and 2, speed-ups 10 and 50, the baseline: 5 searches.
    fn whole_plan() -> Vec<SearchPlan> {
        plans_of(
            &[ErrorThreshold::Digits(3.0)],
            &[10.0, 50.0],
            Selection {
                modes: &[1, 2],
                baseline: true,
                exhaustive: false,
            },
            None,
        )
    }

    /// Shard `i` of `n`'s document: the fixture run with that shard's searches (empty
    /// searches) and its own times.
    fn shard_run(i: u32, n: u32) -> TuneRun {
        let shard = Shard::new(i, n).unwrap();
        let mut run = crate::fixture::run();
        let template = run.searches[0].clone();
        run.searches = whole_plan()
            .into_iter()
            .filter(|p| shard.owns(p.unit as u64))
            .map(|p| SearchEntry {
                label: p.label(),
                unit: p.unit,
                search: crate::strategy::Search {
                    strategy: p.strategy.name().to_string(),
                    thresholds: p.thresholds,
                    ..template.search.clone()
                },
                ..template.clone()
            })
            .collect();
        run.references.t64 = Time {
            median_ms: 1.0 + f64::from(i),
            ..run.references.t64
        };
        run.device_trials = 10 + i as usize;
        run.resumed = i as usize;
        run.notes = vec!["a <note>".into(), format!("shard note {i}")];
        run.shard = Some(shard);
        run
    }

    fn refusal(runs: Vec<TuneRun>) -> String {
        let e = merge(runs, &whole_plan()).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn shards_merge_into_the_whole_run_in_plan_order() {
        let runs = vec![shard_run(2, 3), shard_run(0, 3), shard_run(1, 3)];
        let merged = merge(runs, &whole_plan()).unwrap();
        let units: Vec<usize> = merged.searches.iter().map(|s| s.unit).collect();
        assert_eq!(units, [0, 1, 2, 3, 4]);
        let labels: Vec<String> = merged.searches.iter().map(|s| s.label.clone()).collect();
        let want: Vec<String> = whole_plan().iter().map(SearchPlan::label).collect();
        assert_eq!(labels, want);
        assert_eq!(merged.device_trials, 10 + 11 + 12);
        assert_eq!(merged.resumed, 3);
        assert_eq!(merged.shard, None);
        // Shard 0's references and notes, the others' notes it lacks, then the references note.
        assert_eq!(merged.references.t64.median_ms, 1.0);
        assert_eq!(
            merged.notes[..4],
            ["a <note>", "shard note 0", "shard note 1", "shard note 2"]
        );
        let last = &merged.notes[4];
        assert!(
            last.contains("each of which timed its own f64 and all-f32 programs")
                && last.contains(
                    "shard 0/3 f64 1.0000 ms, all-f32 0.5000 ms; shard 1/3 f64 2.0000 ms"
                )
                && last.contains("shard 2/3 f64 3.0000 ms"),
            "{last}"
        );
        assert_eq!(merged.notes.len(), 5);
        // One shard is the whole run.
        let one = merge(vec![shard_run(0, 1)], &whole_plan()).unwrap();
        assert_eq!(one.searches.len(), 5);
    }

    #[test]
    fn what_is_not_every_shard_of_one_run_is_refused_in_one_line() {
        let e = refusal(vec![shard_run(0, 3), shard_run(2, 3)]);
        assert!(e.contains("the document of shard 1/3 is missing"), "{e}");
        let e = refusal(vec![shard_run(0, 2), shard_run(1, 2), shard_run(1, 2)]);
        assert_eq!(e, "shard 1/2 appears twice");
        let e = refusal(vec![shard_run(0, 2), shard_run(1, 3)]);
        assert!(e.contains("split the run differently"), "{e}");
        let mut whole = shard_run(0, 1);
        whole.shard = None;
        assert!(refusal(vec![whole]).contains("is a whole run's, not a shard's"));
        // Other units.
        let mut other = shard_run(1, 2);
        other.fisets[1].name = "fiset 2 (k.cu:10)".into();
        let e = refusal(vec![shard_run(0, 2), other]);
        assert!(e.contains("shards 0/2 and 1/2 found other units"), "{e}");
        // Measured errors may differ: they are not the units' shape.
        let mut noisy = shard_run(1, 2);
        noisy.fisets[0].error = Some(1e-9);
        assert!(merge(vec![shard_run(0, 2), noisy], &whole_plan()).is_ok());
        // A document with another shard's search, one lacking one of its own, one of another
        // plan.
        let mut extra = shard_run(1, 2);
        extra.searches.push(shard_run(0, 2).searches[0].clone());
        let e = refusal(vec![shard_run(0, 2), extra]);
        assert!(
            e.contains("holds search 0 (mode 1, 3 digits) where its plan has no more searches"),
            "{e}"
        );
        let mut short = shard_run(1, 2);
        short.searches.pop();
        let e = refusal(vec![shard_run(0, 2), short]);
        assert!(
            e.contains("lacks search 3 (delta debugging, 3 digits, 10%)"),
            "{e}"
        );
        let mut relabelled = shard_run(0, 2);
        relabelled.searches[1].label = "mode 2, 4 digits, 50%".into();
        let e = refusal(vec![relabelled, shard_run(1, 2)]);
        assert!(e.contains("holds search 2 (mode 2, 4 digits, 50%) where its plan has 2 (mode 2, 3 digits, 50%)"), "{e}");
    }

    #[test]
    fn an_exhaustive_search_left_out_is_not_a_missing_search() {
        let plans = plans_of(
            &[ErrorThreshold::Digits(3.0)],
            &[10.0],
            Selection {
                modes: &[1],
                baseline: false,
                exhaustive: true,
            },
            None,
        );
        let mut run = shard_run(0, 1);
        run.searches.truncate(1);
        run.searches[0].label = plans[0].label();
        assert_eq!(plans[1].strategy.name(), crate::strategy::EXHAUSTIVE);
        assert!(merge(vec![run.clone()], &plans).is_ok());
        // Not so a mode.
        let plans = plans_of(
            &[ErrorThreshold::Digits(3.0)],
            &[10.0],
            Selection {
                modes: &[1, 2],
                baseline: false,
                exhaustive: false,
            },
            None,
        );
        let e = merge(vec![run], &plans).unwrap_err().to_string();
        assert!(e.contains("lacks search 1 (mode 2, 3 digits, 10%)"), "{e}");
    }

    #[test]
    fn the_settings_give_back_the_plan() {
        let request = TuneRequest {
            flags: mantissa_gpu::FlagSet::DEFAULT,
            errors: vec![ErrorThreshold::Digits(3.5), ErrorThreshold::SpecTolerance],
            speedups: vec![10.0, 25.5],
            modes: vec![3, 1],
            baseline: true,
            exhaustive: true,
            fiset: Default::default(),
            policy: Default::default(),
            out: None,
            resume: false,
            shard: None,
        };
        let spec = Spec::parse_with(
            include_str!("../../../examples/tune/relax.toml"),
            std::path::Path::new("../../examples/tune/relax.toml"),
            &["n=64".parse().unwrap()],
        )
        .unwrap();
        let s = settings(&spec, &request);
        assert_eq!(s["spec"], "../../examples/tune/relax.toml");
        assert_eq!(s["set"], "n=64");
        assert_eq!(s["errors"], "3.5,tolerance");
        assert_eq!(s["speedups"], "10,25.5");
        assert_eq!(plans_of_settings(&s).unwrap(), crate::plan::plans(&request));
        let mut bad = s.clone();
        bad.insert("modes".into(), "1,x".into());
        assert!(plans_of_settings(&bad).is_err());
        bad.remove("modes");
        let e = plans_of_settings(&bad).unwrap_err().to_string();
        assert!(e.contains("no setting \"modes\""), "{e}");
    }
}
