//! A small tuning run for the renderers' tests: two FISets, one mode-2 search of three trials
//! (one inaccurate and untimed, one chosen, one bit-identical), a note to escape.

use crate::evaluate::{ErrorThreshold, Thresholds, Trial};
use crate::flow::{SearchEntry, TuneRun};
use crate::gpu::References;
use crate::noise::Time;
use crate::strategy::{Over, Search};
use crate::unit::{Config, TuneUnit, TuneUnitKind};
use crate::units::ErrorCoverage;

fn unit(name: &str) -> TuneUnit {
    TuneUnit {
        kind: TuneUnitKind::Fiset,
        name: name.into(),
        sites: Vec::new(),
        buffers: Vec::new(),
        math: Vec::new(),
        error: None,
        r_ac: None,
        lines: Vec::new(),
    }
}

fn trial(digits: f64, speedup: Option<f64>) -> Trial {
    Trial {
        digits,
        within_tolerance: None,
        speedup_pct: speedup,
        noise_pct: speedup.map(|_| 1.0),
        time_ms: speedup.map(|_| 1.0),
        failed: None,
    }
}

/// The run.
pub fn run() -> TuneRun {
    let t = Thresholds {
        error: ErrorThreshold::Digits(3.0),
        speedup_pct: Some(10.0),
    };
    let a: Config = [0].into_iter().collect();
    let b: Config = [1].into_iter().collect();
    let ab: Config = [0, 1].into_iter().collect();
    let log = vec![
        (b.clone(), trial(1.0, None)),
        (a.clone(), trial(6.5, Some(40.0))),
        (ab, trial(f64::INFINITY, Some(120.0))),
    ];
    let time = Time {
        median_ms: 1.0,
        noise_ms: 0.01,
        reps: 10,
    };
    TuneRun {
        spec: "k<1>".into(),
        device: "H200".into(),
        flags: "default".into(),
        fisets: vec![unit("fiset 1 (k.cu:3)"), unit("fiset 2 (k.cu:9)")],
        variables: Vec::new(),
        shared: 0,
        math: 0,
        buffers: 0,
        coverage: ErrorCoverage::default(),
        profile: Vec::new(),
        references: References {
            t64: time,
            t32: Time {
                median_ms: 0.5,
                ..time
            },
            digits32: 2.0,
        },
        devices: Vec::new(),
        searches: vec![SearchEntry {
            label: "mode 2, 3 digits, 10%".into(),
            unit: 0,
            units: Over::Fisets,
            search: Search {
                strategy: "mode 2".into(),
                thresholds: t,
                chosen: Some(a.clone()),
                chosen_trial: Some(trial(6.5, Some(40.0))),
                trials: 3,
                log,
                first_met_at: Some(2),
                unused_ahead: 0,
            },
            saved: None,
            detail: None,
        }],
        device_trials: 3,
        resumed: 0,
        notes: vec!["a <note>".into()],
        shard: None,
    }
}

/// `run` with its search repeated `n` times under other thresholds, every copy choosing the
/// same configuration (as on a real program, where most searches settle on one FISet), one more
/// search that chose nothing, and FISet 1 spread over 65 source lines.
pub fn repeated(mut run: TuneRun, n: usize) -> TuneRun {
    let lines: Vec<(String, u32)> = (100..200)
        .filter(|l| l % 3 != 0)
        .take(65)
        .map(|l| ("/src/solver.cu".to_string(), l))
        .collect();
    run.fisets[0].name = format!("fiset 1 ({})", crate::units::where_(&lines));
    run.fisets[0].lines = lines;
    let one = run.searches[0].clone();
    let copy = |k: usize, chosen: bool| {
        let (digits, pct) = ((1 + k / 4) as f64, [5.0, 10.0, 20.0, 40.0][k % 4]);
        let mut s = one.clone();
        s.label = format!("mode 2, {digits} digits, {pct}%");
        s.unit = k;
        s.search.thresholds = Thresholds {
            error: ErrorThreshold::Digits(digits),
            speedup_pct: Some(pct),
        };
        if !chosen {
            s.search.chosen = None;
            s.search.chosen_trial = None;
            s.search.first_met_at = None;
        }
        s
    };
    run.searches = (0..n).map(|k| copy(k, true)).collect();
    run.searches.push(copy(n, false));
    run
}
