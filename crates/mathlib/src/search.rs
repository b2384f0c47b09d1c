//! Measuring by sampling and search, for everything that is not swept exhaustively: binary64
//! functions, bivariate functions, and the CPU libraries. A first phase evaluates an unbiased
//! sample (the mean and the share not correctly rounded are over it); a second climbs from the
//! largest errors found towards larger ones (neighbours a few ulps to 2^40 ulps away) until the
//! time budget is spent. Every error is measured against the correctly rounded reference of
//! [`crate::reference`], so every maximum reported is exact, and re-checkable.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::format::Format;
use crate::functions::Function;
use crate::reference::{reference, Reference};
use crate::regions::{neighbour, random_input};
use crate::stats::{same_value, Stats};
use crate::MathlibError;

/// A library function implementation being measured: a GPU build or a CPU library.
pub trait Subject: Sync {
    /// `f` at the inputs (`ys` ignored for univariate functions), in `format`, widened to f64.
    fn eval(
        &self,
        f: Function,
        format: Format,
        xs: &[f64],
        ys: &[f64],
    ) -> Result<Vec<f64>, MathlibError>;
}

/// What to evaluate and for how long.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// Wall-clock time for both phases.
    pub budget: Duration,
    /// The unbiased sample; when empty, random inputs ([`random_input`]) are drawn for up to
    /// `random_share` of the budget.
    pub uniform: Vec<[f64; 2]>,
    /// Extra starting points (e.g. the GPU sweep's worst inputs): counted for maxima only.
    pub seeds: Vec<[f64; 2]>,
    /// Share of the budget for the random phase when `uniform` is empty.
    pub random_share: f64,
    /// The random generator's seed (results are reproducible for a seed, a budget aside).
    pub seed: u64,
    /// Inputs per batch (one reference computation in parallel, one call per subject).
    pub batch: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            budget: Duration::from_secs(10),
            uniform: Vec::new(),
            seeds: Vec::new(),
            random_share: 0.4,
            seed: 0x6d61_6e74_6973_7361,
            batch: 4096,
        }
    }
}

/// One subject's result, plus how many of the unbiased sample's results differ from the
/// first subject's.
#[derive(Clone, Debug, Default)]
pub struct SearchResult {
    /// The statistics.
    pub stats: Stats,
    /// Unbiased inputs where this subject's result differs from subject 0's.
    pub differs_from_first: u64,
}

/// Totals of one search, for the record.
#[derive(Clone, Debug, Default)]
pub struct SearchSummary {
    /// Per subject, in the order given.
    pub results: Vec<SearchResult>,
    /// References computed.
    pub references: u64,
    /// Inputs whose rounding could not be decided (skipped, never guessed).
    pub undecided: u64,
    /// Wall-clock time spent.
    pub seconds: f64,
}

/// Measure `subjects` on `f` in `format`; `progress(done_fraction)` is called after each batch.
pub fn search(
    f: Function,
    format: Format,
    subjects: &[&dyn Subject],
    options: &SearchOptions,
    progress: &mut dyn FnMut(f64),
) -> Result<SearchSummary, MathlibError> {
    let start = Instant::now();
    let deadline = start + options.budget;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(options.seed ^ (f as u64) << 8 ^ format as u64);
    let mut summary = SearchSummary {
        results: vec![SearchResult::default(); subjects.len()],
        ..Default::default()
    };
    // Each subject's largest errors: where the climb starts from.
    let mut pools: Vec<Vec<(f64, [f64; 2])>> = vec![Vec::new(); subjects.len()];
    let batch = options.batch.max(1);
    let elapsed_share = |now: Instant| {
        now.duration_since(start).as_secs_f64() / options.budget.as_secs_f64().max(1e-9)
    };

    // Phase 1: the unbiased sample (given, or random), then the seeds.
    let random_phase = options.uniform.is_empty();
    let mut given = options.uniform.chunks(batch);
    loop {
        let inputs: Vec<[f64; 2]> = if random_phase {
            if elapsed_share(Instant::now()) >= options.random_share {
                break;
            }
            (0..batch)
                .map(|_| random_input(f, format, &mut rng))
                .collect()
        } else {
            match given.next() {
                Some(c) => c.to_vec(),
                None => break,
            }
        };
        evaluate(f, format, subjects, &inputs, true, &mut summary, &mut pools)?;
        progress(elapsed_share(Instant::now()).min(1.0));
        if !random_phase && Instant::now() >= deadline {
            break;
        }
    }
    for chunk in options.seeds.chunks(batch) {
        evaluate(f, format, subjects, chunk, false, &mut summary, &mut pools)?;
    }

    // Phase 2: climb from each subject's pool in turn.
    let mut turn = 0usize;
    while Instant::now() < deadline
        && subjects
            .iter()
            .enumerate()
            .any(|(i, _)| !pools[i].is_empty())
    {
        let pool = &pools[turn % subjects.len()];
        turn += 1;
        if pool.is_empty() {
            continue;
        }
        let inputs: Vec<[f64; 2]> = (0..batch)
            .map(|_| {
                // Favour the top of the pool: the square of a uniform picks low ranks.
                let rank = ((rng.random::<f64>().powi(2)) * pool.len() as f64) as usize;
                let [x, y] = pool[rank.min(pool.len() - 1)].1;
                match (f.arity(), rng.random_range(0..3)) {
                    (2, 0) => [x, neighbour(&mut rng, y, format)],
                    (2, 1) => [
                        neighbour(&mut rng, x, format),
                        neighbour(&mut rng, y, format),
                    ],
                    _ => [neighbour(&mut rng, x, format), y],
                }
            })
            .collect();
        evaluate(
            f,
            format,
            subjects,
            &inputs,
            false,
            &mut summary,
            &mut pools,
        )?;
        progress(elapsed_share(Instant::now()).min(1.0));
    }
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// The size of each subject's pool of largest errors.
const POOL: usize = 64;

fn evaluate(
    f: Function,
    format: Format,
    subjects: &[&dyn Subject],
    inputs: &[[f64; 2]],
    unbiased: bool,
    summary: &mut SearchSummary,
    pools: &mut [Vec<(f64, [f64; 2])>],
) -> Result<(), MathlibError> {
    let arity = f.arity();
    let refs: Vec<Option<Reference>> = inputs
        .par_iter()
        .map(|a| reference(f, &a[..arity], format).ok())
        .collect();
    summary.references += inputs.len() as u64;
    summary.undecided += refs.iter().filter(|r| r.is_none()).count() as u64;
    let xs: Vec<f64> = inputs.iter().map(|a| a[0]).collect();
    let ys: Vec<f64> = inputs.iter().map(|a| a[1]).collect();
    let mut first: Vec<f64> = Vec::new();
    for (s, subject) in subjects.iter().enumerate() {
        let results = subject.eval(f, format, &xs, &ys)?;
        let out = &mut summary.results[s];
        for (i, r) in refs.iter().enumerate() {
            let Some(r) = r else { continue };
            let e = out
                .stats
                .add(format, &inputs[i][..arity], results[i], r, unbiased);
            if unbiased && s > 0 && !same_value(results[i], first[i]) {
                out.differs_from_first += 1;
            }
            let pool = &mut pools[s];
            let better = pool.len() < POOL || e > pool[pool.len() - 1].0;
            if e > 0.0 && e.is_finite() && better && !pool.iter().any(|p| p.1 == inputs[i]) {
                let at = pool.partition_point(|p| p.0 >= e);
                pool.insert(at, (e, inputs[i]));
                pool.truncate(POOL);
            }
        }
        if s == 0 {
            first = results;
        }
    }
    Ok(())
}
