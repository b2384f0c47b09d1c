//! The searches of a run grouped by what they chose: on a real program many searches (every
//! error threshold of mode 1, every performance threshold of modes 2 and 3) settle on the same
//! configuration, and the page and the text show it once with the searches that chose it,
//! rather than once per search.

use crate::flow::{SearchEntry, TuneRun};
use crate::unit::{Config, TuneUnit};

/// One configuration and the searches that chose it, or the searches that chose nothing.
pub struct Choice<'a> {
    /// The configuration (`None`: no configuration met these searches' thresholds).
    pub config: Option<&'a Config>,
    /// The units it indexes (the FISets or the variables).
    pub units: &'a [TuneUnit],
    /// The searches, in the run's order; the first one's trial, saved files and detail stand
    /// for all (one configuration is one trial, remembered across the run's searches).
    pub searches: Vec<&'a SearchEntry>,
}

impl Choice<'_> {
    /// The first search of the group.
    pub fn first(&self) -> &SearchEntry {
        self.searches[0]
    }
}

/// The unit list a search's configurations index.
pub fn units_of<'a>(run: &'a TuneRun, search: &SearchEntry) -> &'a [TuneUnit] {
    run.units(search.units)
}

/// The run's searches grouped by chosen configuration (over the same unit list), groups in the
/// order of their first search; the searches that chose nothing form one group, last.
pub fn group(run: &TuneRun) -> Vec<Choice<'_>> {
    let mut groups: Vec<Choice<'_>> = Vec::new();
    let mut none: Vec<&SearchEntry> = Vec::new();
    for s in &run.searches {
        let Some(config) = s.search.chosen.as_ref() else {
            none.push(s);
            continue;
        };
        let same = groups
            .iter_mut()
            .find(|g| g.config == Some(config) && g.first().units == s.units);
        match same {
            Some(g) => g.searches.push(s),
            None => groups.push(Choice {
                config: Some(config),
                units: units_of(run, s),
                searches: vec![s],
            }),
        }
    }
    if let Some(first) = none.first() {
        groups.push(Choice {
            config: None,
            units: units_of(run, first),
            searches: none,
        });
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{repeated, run};

    #[test]
    fn searches_that_chose_one_configuration_are_one_group() {
        let run = repeated(run(), 24);
        let groups = group(&run);
        // 24 searches chose FISet 1, one chose nothing.
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].searches.len(), 24);
        assert_eq!(groups[0].config, Some(&Config::from([0])));
        assert!(groups[1].config.is_none());
        assert_eq!(groups[1].searches.len(), 1);
    }

    #[test]
    fn one_search_is_one_group() {
        let run = run();
        let groups = group(&run);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].searches.len(), 1);
    }
}
