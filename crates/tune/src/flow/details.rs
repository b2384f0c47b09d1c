//! What a run measures of each chosen configuration once the searches are done: its digits per
//! output element and its registers ([`crate::detail`]), once per distinct configuration.

use super::SearchEntry;
use super::TuneRequest;
use crate::detail::Detail;
use crate::strategy::Over;
use crate::unit::Config;
use crate::units::ProgramUnits;
use mantissa_harness::{Session, Spec};

/// Measures every chosen configuration's output elements and registers ([`crate::detail`]);
/// a configuration that fails here is noted, not fatal (its search's result stands).
pub(super) fn details(
    runner: &mut dyn Session,
    spec: Option<&Spec>,
    request: &TuneRequest,
    units: &ProgramUnits,
    searches: &mut [SearchEntry],
    notes: &mut Vec<String>,
) {
    if searches.iter().all(|s| s.search.chosen.is_none()) {
        return;
    }
    let baseline = match crate::detail::baseline_outputs(runner) {
        Ok(b) => b,
        Err(e) => {
            notes.push(format!(
                "the outputs as written could not be read back: {e}"
            ));
            return;
        }
    };
    let mut done: Vec<(Over, Config, Detail)> = Vec::new();
    for s in searches.iter_mut() {
        let Some(c) = s.search.chosen.clone() else {
            continue;
        };
        if let Some((_, _, d)) = done.iter().find(|(u, k, _)| *u == s.units && *k == c) {
            s.detail = Some(d.clone());
            continue;
        }
        let list = units.list(s.units);
        let dir = request.out.as_ref().map(|d| d.join("configs"));
        let stem = crate::save::slug(&s.label);
        let save = dir.as_deref().map(|d| (d, stem.as_str()));
        match crate::detail::detail(runner, spec, list, &c, &baseline, save) {
            Ok(d) => {
                done.push((s.units, c, d.clone()));
                s.detail = Some(d);
            }
            Err(e) => notes.push(format!("{}: measuring its elements: {e}", s.label)),
        }
    }
}
