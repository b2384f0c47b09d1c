//! Simulated programs for the strategy tests: units with a hidden error contribution and time
//! saving, an evaluator that answers [`Evaluate::trial`] from them, and the checks the strategies
//! rely on (each configuration asked once, timing skipped when the error threshold is missed).

use crate::evaluate::{ErrorThreshold, Evaluate, Need, Trial};
use crate::unit::{Config, TuneUnit, TuneUnitKind};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeSet;

/// What demoting one unit does to the simulated program.
#[derive(Debug, Clone)]
pub struct SimUnit {
    /// Its contribution to the output's relative error.
    pub error: f64,
    /// The time it saves, in % of the ideal speed-up (t64 − t32).
    pub saving_pct: f64,
    /// What the analyses say of it (may differ from the hidden truth).
    pub estimated_error: Option<f64>,
    /// Its r_ac.
    pub r_ac: Option<f64>,
}

/// Two units demoted together: extra error (their rounding compounds) and extra saving
/// (negative: the casts between them no longer cancel).
#[derive(Debug, Clone)]
pub struct Interaction {
    pub pair: (usize, usize),
    pub error: f64,
    pub saving_pct: f64,
}

/// A simulated program and its evaluator.
#[derive(Debug, Clone)]
pub struct Sim {
    pub units: Vec<SimUnit>,
    pub interactions: Vec<Interaction>,
    /// Half-width of the uniform timing noise, in %; also what a trial reports as `noise_pct`.
    pub noise_pct: f64,
    pub seed: u64,
    /// The error threshold the evaluator checks before timing (it skips timing below it).
    pub error_threshold: ErrorThreshold,
    /// Units whose demotion makes the trial fail (build failure): any configuration holding one.
    pub broken: BTreeSet<usize>,
    /// After this many trials, the next one is an evaluator error (the device is lost).
    pub lost_after: Option<usize>,
    /// Every configuration asked, in order.
    pub asked: Vec<Config>,
    /// Devices it simulates ([`Evaluate::width`]).
    pub width: usize,
    /// The size of every call: 1 for `trial`, the batch's for `trials`.
    pub calls: Vec<usize>,
}

/// t64 and t32 of every simulated program, ms.
const T64_MS: f64 = 10.0;
const T32_MS: f64 = 6.0;

impl Sim {
    pub fn new(units: Vec<SimUnit>, digits: f64, noise_pct: f64, seed: u64) -> Sim {
        Sim {
            units,
            interactions: Vec::new(),
            noise_pct,
            seed,
            error_threshold: ErrorThreshold::Digits(digits),
            broken: BTreeSet::new(),
            lost_after: None,
            asked: Vec::new(),
            width: 1,
            calls: Vec::new(),
        }
    }

    /// The units the strategies see.
    pub fn units(&self) -> Vec<TuneUnit> {
        self.units
            .iter()
            .enumerate()
            .map(|(i, u)| TuneUnit {
                kind: TuneUnitKind::Fiset,
                name: format!("fiset {i}"),
                sites: Vec::new(),
                buffers: Vec::new(),
                math: Vec::new(),
                error: u.estimated_error,
                r_ac: u.r_ac,
                lines: Vec::new(),
            })
            .collect()
    }

    /// The true (noise-free) relative error and speed-up of `config`.
    pub fn truth(&self, config: &Config) -> (f64, f64) {
        let mut error: f64 = config.iter().map(|&i| self.units[i].error).sum();
        let mut saving: f64 = config.iter().map(|&i| self.units[i].saving_pct).sum();
        for x in &self.interactions {
            if config.contains(&x.pair.0) && config.contains(&x.pair.1) {
                error += x.error;
                saving += x.saving_pct;
            }
        }
        (error, saving)
    }

    /// The trial of `config`, without recording it: the same configuration always gets the same
    /// answer (its noise is seeded by the configuration), so a chosen configuration can be
    /// re-evaluated.
    pub fn answer(&self, config: &Config, need: Need) -> Trial {
        let (error, true_speedup) = self.truth(config);
        // The f64 program itself, and anything more accurate than f64 can say, keeps 16 digits.
        let digits = if error > 0.0 {
            (-error.log10()).min(16.0)
        } else {
            16.0
        };
        let mut trial = Trial {
            digits,
            within_tolerance: None,
            speedup_pct: None,
            noise_pct: None,
            time_ms: None,
            failed: None,
        };
        if config.iter().any(|u| self.broken.contains(u)) {
            // Tempting numbers, so that a strategy reading them instead of `failed` is caught.
            trial.digits = 16.0;
            trial.speedup_pct = Some(99.0);
            trial.noise_pct = Some(0.0);
            trial.failed = Some("ptxas: build failed".into());
            return trial;
        }
        let accurate = match self.error_threshold {
            ErrorThreshold::Digits(d) => digits >= d,
            ErrorThreshold::SpecTolerance => false,
        };
        if matches!(need, Need::Speed { .. }) && accurate {
            let mask = config.iter().fold(0u64, |m, &i| m | 1 << i);
            let mut rng =
                Xoshiro256PlusPlus::seed_from_u64(self.seed ^ mask.wrapping_mul(0x9e37_79b9));
            let noise = if self.noise_pct > 0.0 {
                rng.random_range(-self.noise_pct..self.noise_pct)
            } else {
                0.0
            };
            let speedup = true_speedup + noise;
            trial.speedup_pct = Some(speedup);
            trial.noise_pct = Some(self.noise_pct);
            trial.time_ms = Some(T64_MS - (T64_MS - T32_MS) * speedup / 100.0);
        }
        trial
    }
}

impl Evaluate for Sim {
    type Error = String;

    fn trial(&mut self, config: &Config, need: Need) -> Result<Trial, String> {
        self.calls.push(1);
        assert!(
            !self.asked.contains(config),
            "configuration {config:?} asked twice"
        );
        if self.lost_after == Some(self.asked.len()) {
            return Err("device lost".into());
        }
        self.asked.push(config.clone());
        Ok(self.answer(config, need))
    }

    fn width(&self) -> usize {
        self.width
    }

    fn trials(&mut self, configs: &[Config], need: Need) -> Result<Vec<Trial>, String> {
        assert!(
            configs.len() <= self.width,
            "a batch wider than the devices"
        );
        let calls = self.calls.len();
        let answers = configs.iter().map(|c| self.trial(c, need)).collect();
        // The batch is one call, not one per configuration.
        self.calls.truncate(calls);
        self.calls.push(configs.len());
        answers
    }
}

/// A seeded random program of `n` units: errors over eight decades, savings 0–25 %, estimates
/// off by up to a factor 10, some interactions.
pub fn random(n: usize, seed: u64, digits: f64) -> Sim {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let units = (0..n)
        .map(|_| {
            let error = 10f64.powf(rng.random_range(-10.0..-2.0));
            SimUnit {
                error,
                saving_pct: rng.random_range(0.0..25.0),
                estimated_error: rng
                    .random_bool(0.9)
                    .then(|| error * 10f64.powf(rng.random_range(-1.0..1.0))),
                r_ac: rng.random_bool(0.9).then(|| rng.random_range(0.5..10.0)),
            }
        })
        .collect();
    let mut sim = Sim::new(units, digits, rng.random_range(0.1..2.0), seed);
    for a in 0..n {
        for b in a + 1..n {
            if rng.random_bool(0.2) {
                sim.interactions.push(Interaction {
                    pair: (a, b),
                    error: 10f64.powf(rng.random_range(-9.0..-4.0)),
                    saving_pct: rng.random_range(-8.0..2.0),
                });
            }
        }
    }
    if rng.random_bool(0.3) {
        sim.broken.insert(rng.random_range(0..n));
    }
    sim
}
