//! The run's searches: each planned search through its strategy ([`crate::strategy`]), over the
//! unit list the strategy names, on the one evaluator of the run; its choice saved as a
//! configuration file.

use super::prepare::UnitMaps;
use super::{SearchEntry, Subject, TuneError, TuneEvent, TuneRequest};
use crate::evaluate::{Evaluate, Need, Trial};
use crate::gpu::{EvaluateError, GpuEvaluator, References};
use crate::plan::SearchPlan;
use crate::strategy::{Search, SearchError};
use crate::unit::Config;
use crate::units::ProgramUnits;

/// What every search of a run shares besides the evaluator.
pub(super) struct Searching<'a> {
    /// The request (`--out`: where chosen configurations are saved).
    pub request: &'a TuneRequest,
    /// The program (its directory: where a configuration's sources are).
    pub subject: &'a Subject<'a>,
    /// The units, one list per strategy's [`crate::strategy::Over`].
    pub units: &'a ProgramUnits,
    /// Where those lists lie in the evaluator's.
    pub maps: &'a UnitMaps,
    /// Whether a speed-up in % of the ideal can be measured.
    pub measurable: bool,
}

/// Runs `plans` in order, in runs of one error threshold, to which the evaluator is set once
/// per run. A search its strategy refuses (too many units) is noted and left out.
pub(super) fn search_all(
    eval: &mut GpuEvaluator<'_, '_>,
    plans: &[SearchPlan],
    cx: &Searching<'_>,
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<Vec<SearchEntry>, TuneError> {
    let mut searches = Vec::new();
    for group in plans.chunk_by(|a, b| a.thresholds.error == b.thresholds.error) {
        eval.set_error(group[0].thresholds.error);
        for plan in group {
            if let Some(entry) = search_one(eval, plan, cx, notes, progress)? {
                searches.push(entry);
            }
        }
    }
    Ok(searches)
}

/// One planned search; `None` when its strategy refused the units (noted).
fn search_one(
    eval: &mut GpuEvaluator<'_, '_>,
    plan: &SearchPlan,
    cx: &Searching<'_>,
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(TuneEvent),
) -> Result<Option<SearchEntry>, TuneError> {
    let (strategy, t) = (plan.strategy, plan.thresholds);
    let label = plan.label();
    progress(TuneEvent::Search {
        label: label.clone(),
    });
    // A search that stops only on a measured speed-up cannot without a measurable ideal, and
    // its trials would be spent for nothing.
    if strategy.needs_ideal() && !cx.measurable {
        return Ok(Some(unrun(plan, label)));
    }
    let over = strategy.over();
    let mut number = 0;
    let mut report = |c: &Config, trial: &Trial| {
        number += 1;
        progress(TuneEvent::Trial {
            number,
            config: crate::store::config_key(c),
            trial: trial.clone(),
        });
    };
    let mut sub = Sub {
        inner: eval,
        map: cx.maps.of(over),
    };
    let list = cx.units.list(over);
    let search = match strategy.search(list, &t, &mut sub, &mut report) {
        Ok(s) => s,
        Err(e @ SearchError::TooManyUnits { .. }) => {
            notes.push(e.to_string());
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let saved = match (&cx.request.out, &search.chosen) {
        (Some(dir), Some(c)) => Some(
            crate::save::save(
                &dir.join("configs"),
                &crate::save::slug(&label),
                list,
                c,
                &cx.units.module,
                cx.subject.dir,
            )
            .map_err(|e| {
                TuneError::Save(format!("saving a configuration in {}: {e}", dir.display()))
            })?,
        ),
        _ => None,
    };
    Ok(Some(SearchEntry {
        label,
        unit: plan.unit,
        units: over,
        search,
        saved,
        detail: None,
    }))
}

/// A planned search that ran no trial: it would have needed a measurable ideal speed-up.
fn unrun(plan: &SearchPlan, label: String) -> SearchEntry {
    SearchEntry {
        label,
        unit: plan.unit,
        units: plan.strategy.over(),
        search: Search {
            strategy: plan.strategy.name().to_string(),
            thresholds: plan.thresholds,
            chosen: None,
            chosen_trial: None,
            trials: 0,
            log: Vec::new(),
            first_met_at: None,
            unused_ahead: 0,
        },
        saved: None,
        detail: None,
    }
}

/// With trials run in batches over several GPUs, how many batches and how long each GPU was
/// busy.
pub(super) fn batches_note(
    eval: &GpuEvaluator<'_, '_>,
    devices: &[(u32, References)],
) -> Option<String> {
    if eval.batches == 0 {
        return None;
    }
    let busy: Vec<String> = devices
        .iter()
        .zip(&eval.busy)
        .map(|((o, _), b)| format!("GPU {o} {:.2} s", b.as_secs_f64()))
        .collect();
    Some(format!(
        "{} batches of trials ran over the GPUs, busy {}",
        eval.batches,
        busy.join(", ")
    ))
}

/// An evaluator over a sub-list of the run's units: the search's index i is unit `map[i]`.
struct Sub<'e, 'r, 'g> {
    inner: &'e mut GpuEvaluator<'r, 'g>,
    map: &'e [usize],
}

impl Sub<'_, '_, '_> {
    fn mapped(&self, config: &Config) -> Config {
        config.iter().map(|&i| self.map[i]).collect()
    }
}

impl Evaluate for Sub<'_, '_, '_> {
    type Error = EvaluateError;
    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, EvaluateError> {
        let mapped = self.mapped(config);
        self.inner.trial(&mapped, need)
    }

    fn width(&self) -> usize {
        self.inner.width()
    }

    fn trials(&mut self, configs: &[Config], need: Need) -> Result<Vec<Trial>, EvaluateError> {
        let mapped: Vec<Config> = configs.iter().map(|c| self.mapped(c)).collect();
        self.inner.trials(&mapped, need)
    }
}
