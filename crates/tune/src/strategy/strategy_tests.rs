//! The strategies on simulated programs: hand-worked visiting orders and trial counts, and
//! properties checked by brute force on seeded random programs.

use super::sim::{random, Sim, SimUnit};
use super::*;
use crate::evaluate::ErrorThreshold;
use crate::unit::TuneUnit;

fn cfg(units: &[usize]) -> Config {
    units.iter().copied().collect()
}

fn thresholds(digits: f64, speedup_pct: Option<f64>) -> Thresholds {
    Thresholds {
        error: ErrorThreshold::Digits(digits),
        speedup_pct,
    }
}

/// Five units (hidden error, saving %, estimated error, r_ac):
/// 0: 1e-4, 10, 1e-4, 2 · 1: 1e-8, 3, 1e-8, 5 · 2: 1e-2, 30, none, 1 · 3: 5e-7, 20, 1e-6, 8 ·
/// 4: 1e-7, 6, 1e-7, none. Noise ±0.5 %, far from every threshold used below.
fn five(digits: f64) -> Sim {
    let unit = |error, saving_pct, estimated_error, r_ac| SimUnit {
        error,
        saving_pct,
        estimated_error,
        r_ac,
    };
    Sim::new(
        vec![
            unit(1e-4, 10.0, Some(1e-4), Some(2.0)),
            unit(1e-8, 3.0, Some(1e-8), Some(5.0)),
            unit(1e-2, 30.0, None, Some(1.0)),
            unit(5e-7, 20.0, Some(1e-6), Some(8.0)),
            unit(1e-7, 6.0, Some(1e-7), None),
        ],
        digits,
        0.5,
        7,
    )
}

/// Runs a mode on `sim`, checking that the progress callback saw exactly the logged trials.
fn run_mode(m: Mode, sim: &mut Sim, t: &Thresholds) -> Search {
    let units = sim.units();
    let mut seen = Vec::new();
    let search = mode(m, &units, t, sim, &mut |c, _| seen.push(c.clone())).unwrap();
    check_bookkeeping(&search, sim, &seen);
    search
}

fn run_delta(sim: &mut Sim, t: &Thresholds) -> Search {
    let units = sim.units();
    let mut seen = Vec::new();
    let search = delta_debugging(&units, t, sim, &mut |c, _| seen.push(c.clone())).unwrap();
    check_bookkeeping(&search, sim, &seen);
    search
}

fn run_exhaustive(sim: &mut Sim, t: &Thresholds) -> Search {
    let units = sim.units();
    let mut seen = Vec::new();
    let search = exhaustive(&units, t, sim, &mut |c, _| seen.push(c.clone())).unwrap();
    check_bookkeeping(&search, sim, &seen);
    search
}

/// What every search must say of itself: trials = evaluator calls = progress calls = log, the
/// chosen trial is the logged one, `first_met_at` is the first passing trial.
fn check_bookkeeping(search: &Search, sim: &Sim, progress: &[Config]) {
    let logged: Vec<Config> = search.log.iter().map(|(c, _)| c.clone()).collect();
    assert_eq!(logged, sim.asked);
    assert_eq!(logged, progress);
    assert_eq!(search.trials, sim.asked.len());
    match &search.chosen {
        Some(c) => {
            let logged = search.log.iter().find(|(l, _)| l == c).map(|(_, t)| t);
            assert_eq!(search.chosen_trial.as_ref(), logged);
            assert!(search.chosen_trial.as_ref().unwrap().failed.is_none());
        }
        None => assert!(search.chosen_trial.is_none()),
    }
    let first = search
        .log
        .iter()
        .position(|(_, t)| passes(t, &search.thresholds))
        .map(|i| i + 1);
    assert_eq!(search.first_met_at, first);
}

#[test]
fn order_puts_units_without_the_key_last_and_breaks_ties_by_index() {
    let unit = |error, r_ac| TuneUnit {
        kind: crate::TuneUnitKind::Fiset,
        name: String::new(),
        sites: Vec::new(),
        buffers: Vec::new(),
        math: Vec::new(),
        error,
        r_ac,
        lines: Vec::new(),
    };
    let units = [
        unit(None, Some(1.0)),
        unit(Some(2e-5), None),
        unit(Some(1e-9), Some(3.0)),
        unit(Some(2e-5), Some(3.0)),
        unit(None, Some(7.0)),
    ];
    assert_eq!(modes::order(Mode::ErrorOnly, &units), [2, 1, 3, 0, 4]);
    assert_eq!(modes::order(Mode::ErrorFirst, &units), [2, 1, 3, 0, 4]);
    assert_eq!(modes::order(Mode::SpeedFirst, &units), [4, 2, 3, 0, 1]);
}

#[test]
fn candidates_are_the_singles_then_the_growing_unions() {
    let units = five(6.0).units();
    let c = |list: &[&[usize]]| list.iter().map(|u| cfg(u)).collect::<Vec<_>>();
    assert_eq!(
        candidates(Mode::ErrorFirst, &units),
        c(&[
            &[1],
            &[4],
            &[3],
            &[0],
            &[2],
            &[1, 4],
            &[1, 3, 4],
            &[0, 1, 3, 4],
            &[0, 1, 2, 3, 4]
        ])
    );
    assert_eq!(
        candidates(Mode::SpeedFirst, &units),
        c(&[
            &[3],
            &[1],
            &[0],
            &[2],
            &[4],
            &[1, 3],
            &[0, 1, 3],
            &[0, 1, 2, 3],
            &[0, 1, 2, 3, 4]
        ])
    );
    assert_eq!(candidates(Mode::ErrorOnly, &units[..1]), c(&[&[0]]));
    assert!(candidates(Mode::ErrorOnly, &[]).is_empty());
}

#[test]
fn mode_1_stops_at_the_first_accurate_candidate_even_when_slow() {
    // {1} keeps 8 digits at a 3 % speed-up; {3} would keep 6.3 digits at 20 %.
    let mut sim = five(6.0);
    let s = run_mode(Mode::ErrorOnly, &mut sim, &thresholds(6.0, Some(25.0)));
    assert_eq!(s.strategy, "mode 1");
    assert_eq!(
        s.thresholds.speedup_pct, None,
        "mode 1 has no performance threshold"
    );
    assert_eq!(
        (s.chosen, s.trials, s.first_met_at),
        (Some(cfg(&[1])), 1, Some(1))
    );
    let speedup = s.chosen_trial.unwrap().speedup_pct.unwrap();
    assert!((speedup - 3.0).abs() <= 0.5, "{speedup}");

    // Slower than f64 (the casts of unit 1 cost 2 % of the ideal): still chosen, though no
    // trial met "a speed-up outside the noise".
    let mut sim = five(6.0);
    sim.units[1].saving_pct = -2.0;
    let s = run_mode(Mode::ErrorOnly, &mut sim, &thresholds(6.0, None));
    assert_eq!(
        (s.chosen, s.trials, s.first_met_at),
        (Some(cfg(&[1])), 1, None)
    );
    assert!(s.chosen_trial.unwrap().speedup_pct.unwrap() < 0.0);

    // 9 digits: no unit alone (the most accurate keeps 8), so no union is tried either: the
    // five singles, once each.
    let mut sim = five(9.0);
    let s = run_mode(Mode::ErrorOnly, &mut sim, &thresholds(9.0, None));
    assert_eq!((s.chosen, s.trials, s.first_met_at), (None, 5, None));
}

#[test]
fn mode_2_runs_in_error_order_until_both_thresholds_hold() {
    let t = |p| thresholds(6.0, Some(p));
    // 10 %: {1} (3 %), {4} (6 %), then {3} (6.3 digits, 20 %).
    let s = run_mode(Mode::ErrorFirst, &mut five(6.0), &t(10.0));
    assert_eq!(
        (s.chosen, s.trials, s.first_met_at),
        (Some(cfg(&[3])), 3, Some(3))
    );
    // 25 %: no single unit; {1,4} is 9 %, {1,3,4} keeps 6.2 digits at 29 %: trial 7.
    let s = run_mode(Mode::ErrorFirst, &mut five(6.0), &t(25.0));
    assert_eq!((s.chosen, s.trials), (Some(cfg(&[1, 3, 4])), 7));
    // Candidates that miss the error threshold are not timed.
    assert!(s
        .log
        .iter()
        .filter(|(c, _)| c == &cfg(&[2]))
        .all(|(_, t)| t.speedup_pct.is_none()));
    // 40 %: nothing accurate is that fast: the five singles, then the unions of the accurate
    // ones only ({1,4}, {1,3,4}; units 0 and 2 keep 4 and 2 digits alone).
    let s = run_mode(Mode::ErrorFirst, &mut five(6.0), &t(40.0));
    assert_eq!((s.chosen, s.trials, s.first_met_at), (None, 7, None));
    assert_eq!(s.log[5].0, cfg(&[1, 4]));
    assert_eq!(s.log[6].0, cfg(&[1, 3, 4]));
}

#[test]
fn mode_3_runs_in_decreasing_r_ac_until_both_thresholds_hold() {
    let s = run_mode(
        Mode::SpeedFirst,
        &mut five(6.0),
        &thresholds(6.0, Some(10.0)),
    );
    assert_eq!((s.chosen, s.trials), (Some(cfg(&[3])), 1));
    // 3 digits, 25 %: {3} 20 %, {1}, {0}, {2} (2 digits), {4}, {1,3} 23 %, then {0,1,3} 33 %.
    let s = run_mode(
        Mode::SpeedFirst,
        &mut five(3.0),
        &thresholds(3.0, Some(25.0)),
    );
    assert_eq!(
        (s.chosen, s.trials, s.first_met_at),
        (Some(cfg(&[0, 1, 3])), 7, Some(7))
    );
    // 6 digits, 25 %: singles {3} 20 %, {1}, {0} (4 digits), {2} (2 digits), {4}; the unions
    // of the accurate ones in r_ac order: {1,3} 23 %, then {1,3,4} 29 % at trial 7 (the
    // union with unit 0 that the plain prefix order would try is skipped).
    let s = run_mode(
        Mode::SpeedFirst,
        &mut five(6.0),
        &thresholds(6.0, Some(25.0)),
    );
    assert_eq!((s.chosen, s.trials), (Some(cfg(&[1, 3, 4])), 7));
}

#[test]
fn delta_debugging_reaches_a_1_minimal_configuration_in_eight_trials() {
    // Worked by hand in the module order (parts in index order, subsets before complements):
    // demote all (fails); keep {0,1,2}: demote {3,4} passes (26 %); keep {0,1}, keep {2}
    // fail; n = 3: keep {0}, keep {1} fail, keep {2} remembered; complements: keep {1,2}
    // fails, keep {0,2}: demote {1,3,4} passes (29 %); n = 2 on {0,2}: both remembered, done.
    let mut sim = five(6.0);
    let t = thresholds(6.0, Some(10.0));
    let s = run_delta(&mut sim, &t);
    assert_eq!(s.strategy, DELTA_DEBUGGING);
    let order: Vec<Config> = [
        &[0, 1, 2, 3, 4][..],
        &[3, 4],
        &[2, 3, 4],
        &[0, 1, 3, 4],
        &[1, 2, 3, 4],
        &[0, 2, 3, 4],
        &[0, 3, 4],
        &[1, 3, 4],
    ]
    .iter()
    .map(|u| cfg(u))
    .collect();
    assert_eq!(sim.asked, order);
    assert_eq!(
        (s.chosen, s.trials, s.first_met_at),
        (Some(cfg(&[1, 3, 4])), 8, Some(2))
    );

    // Demoting everything passes: one trial.
    let s = run_delta(&mut five(1.0), &thresholds(1.0, Some(10.0)));
    assert_eq!((s.chosen, s.trials), (Some(cfg(&[0, 1, 2, 3, 4])), 1));
    // Nothing passes at 9 digits.
    let s = run_delta(&mut five(9.0), &thresholds(9.0, Some(5.0)));
    assert_eq!((s.chosen, s.first_met_at), (None, None));
}

#[test]
fn exhaustive_finds_the_fastest_passing_configuration() {
    let mut sim = five(6.0);
    let s = run_exhaustive(&mut sim, &thresholds(6.0, Some(10.0)));
    assert_eq!(s.trials, 31);
    // Accurate to 6 digits: the subsets of {1,3,4}; demoting all three is the fastest (29 %).
    assert_eq!(s.chosen, Some(cfg(&[1, 3, 4])));
    // Bit-mask order: {0} is trial 1, {3} (first passing, 20 %) is mask 8.
    assert_eq!(s.first_met_at, Some(8));
}

#[test]
fn a_failed_trial_is_never_chosen() {
    // Unit 1 breaks the build (its trial reports 16 digits and 99 %, but failed).
    let mut sim = five(6.0);
    sim.broken.insert(1);
    let s = run_mode(Mode::ErrorOnly, &mut sim, &thresholds(6.0, None));
    assert_eq!((s.chosen, s.trials), (Some(cfg(&[4])), 2));

    let mut sim = five(6.0);
    sim.broken.insert(3);
    let s = run_exhaustive(&mut sim, &thresholds(6.0, Some(5.0)));
    assert_eq!(s.chosen, Some(cfg(&[1, 4])), "9 % without unit 3");
    let mut sim = five(6.0);
    sim.broken.insert(3);
    let s = run_mode(Mode::ErrorFirst, &mut sim, &thresholds(6.0, Some(10.0)));
    // Singles {1} 3 %, {4} 6 %, {3} failed, {0} and {2} inaccurate; the one union {1,4} 9 %.
    assert_eq!((s.chosen, s.trials), (None, 6));
}

#[test]
fn an_evaluator_error_stops_every_search() {
    let t = thresholds(6.0, Some(40.0));
    type Run = fn(&[TuneUnit], &Thresholds, &mut Sim) -> Result<Search, SearchError<String>>;
    let runs: [Run; 4] = [
        |u, t, s| mode(Mode::ErrorFirst, u, t, s, &mut |_, _| {}),
        |u, t, s| mode(Mode::SpeedFirst, u, t, s, &mut |_, _| {}),
        |u, t, s| delta_debugging(u, t, s, &mut |_, _| {}),
        |u, t, s| exhaustive(u, t, s, &mut |_, _| {}),
    ];
    for run in runs {
        let mut sim = five(6.0);
        sim.lost_after = Some(2);
        let units = sim.units();
        match run(&units, &t, &mut sim) {
            Err(SearchError::Evaluate(e)) => assert_eq!(e, "device lost"),
            other => panic!("expected the evaluator's error, got {other:?}"),
        }
        assert_eq!(sim.asked.len(), 2, "no trial after the error");
    }
}

#[test]
fn the_exhaustive_search_refuses_more_than_16_units() {
    let mut sim = random(17, 1, 3.0);
    let units = sim.units();
    let e = exhaustive(&units, &thresholds(3.0, None), &mut sim, &mut |_, _| {}).unwrap_err();
    assert!(matches!(
        e,
        SearchError::TooManyUnits { units: 17, max: 16 }
    ));
    assert!(sim.asked.is_empty());
    assert_eq!(
        e.to_string(),
        "the exhaustive search takes at most 16 units (2^16 - 1 trials), not 17; use a mode or \
         delta debugging"
    );
}

#[test]
fn no_units_no_trials() {
    let t = thresholds(3.0, Some(5.0));
    let mut sim = random(0, 1, 3.0);
    for m in Mode::ALL {
        let s = run_mode(m, &mut sim, &t);
        assert_eq!((s.chosen, s.trials), (None, 0));
    }
    assert_eq!(run_delta(&mut sim, &t).trials, 0);
    assert_eq!(run_exhaustive(&mut sim, &t).trials, 0);
}

/// Every subset's answer (re-evaluated, not the search's log).
fn every_subset(sim: &Sim, t: &Thresholds) -> Vec<(Config, Trial)> {
    let n = sim.units.len();
    (1u32..1 << n)
        .map(|mask| {
            let c: Config = (0..n).filter(|i| mask & (1 << i) != 0).collect();
            let trial = sim.answer(
                &c,
                Need::Speed {
                    threshold_pct: t.speedup_pct,
                },
            );
            (c, trial)
        })
        .collect()
}

#[test]
fn random_programs_every_choice_re_evaluates_as_meeting_its_thresholds() {
    let mut found = [0usize; 5];
    for seed in 0..150u64 {
        let n = 1 + (seed as usize % 8);
        let digits = [3.0, 5.0, 7.0][seed as usize % 3];
        let pct = [5.0, 10.0, 20.0][(seed / 3) as usize % 3];
        let t = thresholds(digits, Some(pct));
        let base = random(n, seed, digits);
        let need = Need::Speed {
            threshold_pct: Some(pct),
        };

        // The searches whose choice passes both thresholds.
        let mut both = Vec::new();
        for (k, m) in Mode::ALL.into_iter().enumerate() {
            let s = run_mode(m, &mut base.clone(), &t);
            // What the mode must try, worked out independently: the singles in its order, then
            // the unions of the first k of those accurate alone.
            let order = modes::order(m, &base.units());
            let tt = m.thresholds(&t);
            let accurate: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&i| base.answer(&cfg(&[i]), need).meets_error(&tt))
                .collect();
            let all: Vec<Config> = order
                .iter()
                .map(|&i| cfg(&[i]))
                .chain((2..=accurate.len()).map(|k| cfg(&accurate[..k])))
                .collect();
            assert!(
                s.trials <= (2 * n - 1)
                    && s.log.iter().map(|(c, _)| c).eq(all.iter().take(s.trials))
            );
            if let Some(c) = &s.chosen {
                found[k] += 1;
                let again = base.answer(c, need);
                assert!(again.meets_error(&s.thresholds), "seed {seed} {m:?}");
                if m != Mode::ErrorOnly {
                    assert!(passes(&again, &t), "seed {seed} {m:?}");
                }
                assert_eq!(s.trials, all.iter().position(|x| x == c).unwrap() + 1);
            } else {
                assert_eq!(s.trials, all.len());
            }
            if m != Mode::ErrorOnly {
                both.push(s);
            }
        }

        let brute = every_subset(&base, &t);
        let pass = |c: &Config| passes(&base.answer(c, need), &t);

        let d = run_delta(&mut base.clone(), &t);
        match &d.chosen {
            Some(c) => {
                found[3] += 1;
                assert!(pass(c), "seed {seed}");
                // The documented 1-minimality: demoting any one more unit fails.
                for u in (0..n).filter(|u| !c.contains(u)) {
                    let mut more = c.clone();
                    more.insert(u);
                    assert!(!pass(&more), "seed {seed}: {c:?} + {u} passes");
                }
            }
            None => {
                // Demoting everything, each unit alone and each all-but-one failed.
                assert!(!pass(&(0..n).collect()));
                for u in 0..n {
                    assert!(!pass(&cfg(&[u])), "seed {seed}");
                    assert!(!pass(&(0..n).filter(|&v| v != u).collect()), "seed {seed}");
                }
            }
        }

        let e = run_exhaustive(&mut base.clone(), &t);
        let best = brute
            .iter()
            .filter(|(_, trial)| passes(trial, &t))
            .max_by(|a, b| {
                a.1.speedup_pct
                    .unwrap()
                    .total_cmp(&b.1.speedup_pct.unwrap())
            });
        assert_eq!(e.trials, (1 << n) - 1);
        assert_eq!(
            e.chosen_trial.as_ref().map(|t| t.speedup_pct),
            best.map(|b| b.1.speedup_pct)
        );
        if let Some(c) = &e.chosen {
            found[4] += 1;
            assert!(pass(c));
            assert!(base.broken.iter().all(|b| !c.contains(b)));
        }
        // Whatever another strategy chose passes, so the exhaustive search finds one too, at
        // least as fast.
        both.push(d);
        for s in &both {
            if let (Some(t1), Some(t2)) = (&s.chosen_trial, &e.chosen_trial) {
                assert!(t1.speedup_pct <= t2.speedup_pct);
            }
            assert!(s.chosen.is_none() || e.chosen.is_some());
        }
    }
    // The random programs are not all trivial one way or the other.
    assert!(found.iter().all(|&f| (20..150).contains(&f)), "{found:?}");
}

/// The parts of a search that must not depend on how many devices ran it: chosen, its trial,
/// trials, log, first met at.
type Outcome<'s> = (
    Option<Config>,
    Option<Trial>,
    usize,
    &'s [(Config, Trial)],
    Option<usize>,
);

fn outcome(s: &Search) -> Outcome<'_> {
    (
        s.chosen.clone(),
        s.chosen_trial.clone(),
        s.trials,
        &s.log,
        s.first_met_at,
    )
}

#[test]
fn running_ahead_on_several_devices_changes_no_search_and_saves_rounds() {
    // Rounds: calls to the evaluator (one trial, or one batch over the devices).
    let (mut rounds_one, mut rounds_many, mut unused) = (0usize, 0usize, 0usize);
    for seed in 0..60u64 {
        let n = 1 + (seed as usize % 8);
        let digits = [3.0, 5.0, 7.0][seed as usize % 3];
        let t = thresholds(digits, Some([5.0, 10.0, 20.0][(seed / 3) as usize % 3]));
        let base = random(n, seed, digits);
        type Run = fn(&[TuneUnit], &Thresholds, &mut Sim) -> Search;
        let runs: [Run; 5] = [
            |u, t, s| mode(Mode::ErrorOnly, u, t, s, &mut |_, _| {}).unwrap(),
            |u, t, s| mode(Mode::ErrorFirst, u, t, s, &mut |_, _| {}).unwrap(),
            |u, t, s| mode(Mode::SpeedFirst, u, t, s, &mut |_, _| {}).unwrap(),
            |u, t, s| delta_debugging(u, t, s, &mut |_, _| {}).unwrap(),
            |u, t, s| exhaustive(u, t, s, &mut |_, _| {}).unwrap(),
        ];
        for run in runs {
            let mut one = base.clone();
            let alone = run(&base.units(), &t, &mut one);
            assert_eq!(alone.unused_ahead, 0);
            rounds_one += one.calls.len();
            for width in 2..=8 {
                let mut many = base.clone();
                many.width = width;
                let ahead = run(&base.units(), &t, &mut many);
                assert_eq!(
                    outcome(&ahead),
                    outcome(&alone),
                    "seed {seed}, {width} devices"
                );
                // Everything run was either used by the search or counted as unused.
                assert_eq!(many.asked.len(), ahead.trials + ahead.unused_ahead);
                assert!(alone.log.iter().all(|(c, _)| many.asked.contains(c)));
                assert!(many.calls.iter().all(|&c| c <= width));
                if width == 4 {
                    rounds_many += many.calls.len();
                    unused += ahead.unused_ahead;
                }
            }
        }
    }
    // Four devices take far fewer rounds than one, at a price in unused trials.
    assert!(
        rounds_many * 2 < rounds_one,
        "{rounds_many} rounds on 4 devices, {rounds_one} on one"
    );
    assert!(unused > 0);
}

#[test]
fn an_evaluator_error_inside_a_batch_stops_the_search() {
    let mut sim = random(6, 7, 3.0);
    sim.width = 4;
    sim.lost_after = Some(2);
    let t = thresholds(3.0, Some(10.0));
    let units = sim.units();
    assert!(exhaustive(&units, &t, &mut sim.clone(), &mut |_, _| {}).is_err());
    assert!(delta_debugging(&units, &t, &mut sim.clone(), &mut |_, _| {}).is_err());
}
