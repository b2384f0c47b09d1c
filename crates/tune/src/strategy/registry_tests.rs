//! The registry: every strategy of this directory is in [`STRATEGIES`] once, under a name of its
//! own, and every entry searches simulated programs as the rest of the crate relies on (through
//! [`Strategy::run`] and the error it hands back), whatever strategy is added.

use super::sim::{random, Sim};
use super::*;
use crate::evaluate::ErrorThreshold;
use std::collections::BTreeSet;
use std::path::Path;

fn thresholds(digits: f64, speedup_pct: Option<f64>) -> Thresholds {
    Thresholds {
        error: ErrorThreshold::Digits(digits),
        speedup_pct,
    }
}

/// The identifiers of a Rust path or type (`Mode::ErrorOnly` → `Mode`, `ErrorOnly`).
fn idents(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The type after each `impl Strategy for` (or `impl super::Strategy for`) in `source`.
fn implementors(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("impl Strategy for ")
                .or_else(|| line.strip_prefix("impl super::Strategy for "))?;
            Some(
                rest.trim_end_matches(|c: char| c == '{' || c.is_whitespace())
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn every_strategy_in_this_directory_is_registered_under_a_name_of_its_own() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let registry_source = std::fs::read_to_string(dir.join("strategy.rs")).unwrap();
    let start = registry_source
        .find("pub static STRATEGIES")
        .expect("strategy.rs defines STRATEGIES");
    let body = &registry_source[start..];
    let body = &body[body.find("= &[").unwrap() + 4..body.find("];").unwrap()];
    let entries: Vec<BTreeSet<String>> = body
        .split(',')
        .map(str::trim)
        .filter(|e| e.starts_with('&'))
        .map(idents)
        .collect();
    assert_eq!(entries.len(), STRATEGIES.len(), "read {body}");

    let mut files: Vec<_> = std::fs::read_dir(dir.join("strategy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.push(dir.join("strategy.rs"));
    let mut found = 0;
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        for ty in implementors(&source) {
            found += 1;
            assert!(
                entries.iter().any(|e| e.contains(&ty)),
                "{} implements Strategy for {ty}, which STRATEGIES in strategy.rs does not list",
                file.display()
            );
        }
    }
    assert!(
        found >= 3,
        "found {found} implementations: is the test reading the sources?"
    );

    let mut names = BTreeSet::new();
    for s in STRATEGIES {
        assert!(
            names.insert(s.name()),
            "two strategies are named {:?}",
            s.name()
        );
    }
    // The names documents, stores and configuration files of earlier runs hold.
    for name in ["mode 1", "mode 2", "mode 3", DELTA_DEBUGGING, EXHAUSTIVE] {
        assert!(names.contains(name), "no strategy {name:?}");
        assert_eq!(by_name(name).map(|s| s.name()), Some(name));
    }
    // Every mode is registered (they share a type, so the sources cannot tell).
    for m in Mode::ALL {
        assert!(STRATEGIES.iter().any(|s| s.name() == m.name()), "{m:?}");
    }
    // A number of --mode selects one strategy.
    let numbers = mode_numbers();
    assert_eq!(numbers.iter().collect::<BTreeSet<_>>().len(), numbers.len());
}

#[test]
fn the_registry_says_what_the_plan_and_the_flow_relied_on() {
    let m1 = by_name("mode 1").unwrap();
    assert_eq!(
        (m1.over(), m1.speedups(), m1.needs_ideal(), m1.selector()),
        (Over::Fisets, Speedups::Ignored, false, Selector::Mode(1))
    );
    for (n, name) in [(2, "mode 2"), (3, "mode 3")] {
        let m = by_name(name).unwrap();
        assert_eq!(
            (m.over(), m.speedups(), m.needs_ideal(), m.selector()),
            (Over::Fisets, Speedups::Each, true, Selector::Mode(n))
        );
    }
    let d = by_name(DELTA_DEBUGGING).unwrap();
    assert_eq!(
        (d.over(), d.speedups(), d.needs_ideal(), d.selector()),
        (
            Over::Variables,
            Speedups::EachOrNone,
            true,
            Selector::Baseline
        )
    );
    let e = by_name(EXHAUSTIVE).unwrap();
    assert_eq!(
        (e.over(), e.speedups(), e.needs_ideal(), e.selector()),
        (Over::Fisets, Speedups::Each, true, Selector::Exhaustive)
    );
    assert_eq!(e.max_units(), Some(EXHAUSTIVE_MAX_UNITS));
    // The modes, then the baseline, then the exhaustive search.
    assert!(m1.place() < d.place() && d.place() < e.place());
    assert_eq!(mode_numbers()[..3], [1, 2, 3]);
    // The written names of the unit lists, and what reads them back.
    assert_eq!(
        (Over::Fisets.to_string(), Over::Variables.name()),
        ("fisets".to_string(), "variables")
    );
    assert_eq!("variables".parse(), Ok(Over::Variables));
    assert_eq!(
        "buffers".parse::<Over>(),
        Err("units \"buffers\": expected \"fisets\" or \"variables\"".to_string())
    );
}

#[test]
fn the_registry_runs_each_strategy_as_its_own_function_does() {
    let t = thresholds(5.0, Some(10.0));
    for seed in 0..20u64 {
        let base = random(1 + seed as usize % 6, seed, 5.0);
        let units = base.units();
        let direct = [
            mode(
                Mode::ErrorOnly,
                &units,
                &t,
                &mut base.clone(),
                &mut |_, _| {},
            ),
            mode(
                Mode::ErrorFirst,
                &units,
                &t,
                &mut base.clone(),
                &mut |_, _| {},
            ),
            mode(
                Mode::SpeedFirst,
                &units,
                &t,
                &mut base.clone(),
                &mut |_, _| {},
            ),
            delta_debugging(&units, &t, &mut base.clone(), &mut |_, _| {}),
            exhaustive(&units, &t, &mut base.clone(), &mut |_, _| {}),
        ];
        let names = ["mode 1", "mode 2", "mode 3", DELTA_DEBUGGING, EXHAUSTIVE];
        for (name, want) in names.into_iter().zip(direct) {
            let s = by_name(name).unwrap();
            let got = s.search(&units, &t, &mut base.clone(), &mut |_, _| {});
            assert_eq!(got.unwrap(), want.unwrap(), "seed {seed}, {name}");
        }
    }
}

/// Runs `s` on `sim`, checking what every search says of itself: trials = evaluator calls =
/// progress calls = log, the chosen trial is the logged one and did not fail, `first_met_at`
/// is the first passing trial.
fn checked(s: &dyn Strategy, sim: &mut Sim, t: &Thresholds) -> Search {
    let units = sim.units();
    let mut seen = Vec::new();
    let search = s
        .search(&units, t, sim, &mut |c, _| seen.push(c.clone()))
        .unwrap();
    let logged: Vec<Config> = search.log.iter().map(|(c, _)| c.clone()).collect();
    assert_eq!((&logged, &logged), (&sim.asked, &seen), "{s:?}");
    assert_eq!(search.trials, logged.len());
    assert_eq!(search.strategy, s.name());
    match &search.chosen {
        Some(c) => {
            let trial = search.log.iter().find(|(l, _)| l == c).map(|(_, t)| t);
            assert_eq!(search.chosen_trial.as_ref(), trial, "{s:?}");
            assert!(trial.unwrap().failed.is_none(), "{s:?}");
        }
        None => assert!(search.chosen_trial.is_none()),
    }
    let first = search
        .log
        .iter()
        .position(|(_, t)| passes(t, &search.thresholds))
        .map(|i| i + 1);
    assert_eq!(search.first_met_at, first, "{s:?}");
    search
}

#[test]
fn every_registered_strategy_chooses_only_what_meets_its_thresholds() {
    for s in STRATEGIES {
        for seed in 0..40u64 {
            let n = 1 + (seed as usize % 7);
            let digits = [3.0, 5.0, 7.0][seed as usize % 3];
            let pct = [5.0, 10.0, 20.0][(seed / 3) as usize % 3];
            let base = random(n, seed, digits);
            let asked = thresholds(digits, Some(pct));
            let search = checked(*s, &mut base.clone(), &asked);
            if s.speedups() == Speedups::Ignored {
                assert_eq!(search.thresholds.speedup_pct, None, "{s:?}");
            }
            let Some(c) = &search.chosen else { continue };
            let need = Need::Speed {
                threshold_pct: search.thresholds.speedup_pct,
            };
            let again = base.answer(c, need);
            assert!(again.meets_error(&asked), "{s:?} seed {seed}");
            if s.needs_ideal() {
                assert!(passes(&again, &asked), "{s:?} seed {seed}");
            }
        }
        // No units, no trials.
        let none = checked(*s, &mut random(0, 1, 3.0), &thresholds(3.0, Some(5.0)));
        assert_eq!((none.chosen, none.trials), (None, 0), "{s:?}");
    }
}

#[test]
fn every_registered_strategy_hands_back_the_evaluator_s_error_and_runs_ahead_unchanged() {
    for s in STRATEGIES {
        let t = thresholds(6.0, Some(40.0));
        let mut sim = random(5, 3, 6.0);
        sim.lost_after = Some(0);
        let units = sim.units();
        match s.search(&units, &t, &mut sim, &mut |_, _| {}) {
            Err(SearchError::Evaluate(e)) => assert_eq!(e, "device lost", "{s:?}"),
            other => panic!("{s:?}: expected the evaluator's error, got {other:?}"),
        }
        assert!(sim.asked.is_empty(), "{s:?}: no trial after the error");

        for seed in 0..20u64 {
            let base = random(1 + seed as usize % 6, seed, 5.0);
            let t = thresholds(5.0, Some(10.0));
            let alone = s
                .search(&base.units(), &t, &mut base.clone(), &mut |_, _| {})
                .unwrap();
            let mut many = base.clone();
            many.width = 3;
            let ahead = s
                .search(&base.units(), &t, &mut many, &mut |_, _| {})
                .unwrap();
            assert_eq!(
                (ahead.chosen, ahead.trials, ahead.log),
                (alone.chosen, alone.trials, alone.log),
                "{s:?} seed {seed}"
            );
            assert_eq!(many.asked.len(), ahead.trials + ahead.unused_ahead);
        }
    }
}

#[test]
fn a_strategy_with_a_unit_limit_refuses_beyond_it_before_any_trial() {
    for s in STRATEGIES {
        let Some(max) = s.max_units() else { continue };
        let mut sim = random(max + 1, 1, 3.0);
        let units = sim.units();
        let e = s
            .search(&units, &thresholds(3.0, None), &mut sim, &mut |_, _| {})
            .unwrap_err();
        assert!(
            matches!(e, SearchError::TooManyUnits { units, max: m } if units == max + 1 && m == max),
            "{s:?}: {e}"
        );
        assert!(sim.asked.is_empty());
    }
}
