//! The accuracy of single operations: seed 001's correctness test (its Table 1), in every
//! precision, against an exact reference.
//!
//! For N random f64 operand pairs (x, y), each precision converts x and y to its own type
//! (rounding them if it must: f32 cannot even hold most inputs, and that is part of what the table
//! shows), applies one operation, and the exact value of its result is compared with the exact
//! result of the operation on the f64 inputs. The error is counted in units in the last place of
//! the reference in f64 (a real number: double-word results are far below one f64 ulp). Seed 001
//! instead converted each result to f64 and counted whole f64 ulps against an f64 computation,
//! which rounds every double-word error to 0 or 1.

use core::fmt;
use core::str::FromStr;

use mantissa_num::big::{exact, Big};
use mantissa_num::metrics::ulps_f64;
use mantissa_num::precision::{Precision, PrecisionVisitor};
use mantissa_num::{Mp, Real};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::Serialize;

use crate::progress::Progress;

/// One arithmetic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Addition.
    Add,
    /// Subtraction.
    Sub,
    /// Multiplication.
    Mul,
    /// Division.
    Div,
    /// Square root (of the first operand).
    Sqrt,
}

impl Op {
    /// Every operation, in the order tables list them.
    pub const ALL: [Op; 5] = [Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Sqrt];

    pub(crate) fn apply<T: Real>(self, x: T, y: T) -> T {
        match self {
            Op::Add => x + y,
            Op::Sub => x - y,
            Op::Mul => x * y,
            Op::Div => x / y,
            Op::Sqrt => x.abs().sqrt(),
        }
    }

    /// The exact result for f64 operands; division and square root are correctly rounded to
    /// 320 bits (relative error ≤ 2^-320, i.e. ≤ 2^-266 f64 ulps, far below anything measured).
    /// `None` when the exact result is not finite (division by zero).
    pub(crate) fn reference(self, x: f64, y: f64) -> Option<Big> {
        let (bx, by) = (exact(x), exact(y));
        Some(match self {
            Op::Add => bx + by,
            Op::Sub => bx - by,
            Op::Mul => bx * by,
            Op::Div => (Mp::<320>::from_big(&bx) / Mp::<320>::from_big(&by))
                .as_big()?
                .clone(),
            Op::Sqrt => Mp::<320>::from_big(&exact(x.abs()))
                .sqrt()
                .as_big()?
                .clone(),
        })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Sqrt => "sqrt",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown operation {0:?}: expected add, sub, mul, div or sqrt")]
/// An operation name that is not one of [`Op::ALL`].
pub struct OpError(pub String);

impl FromStr for Op {
    type Err = OpError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Op::ALL
            .into_iter()
            .find(|op| op.to_string() == s.trim())
            .ok_or_else(|| OpError(s.to_string()))
    }
}

/// How operand magnitudes are drawn from [lo, hi] (each operand gets a random sign).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Magnitude uniform in [lo, hi].
    Uniform,
    /// log(magnitude) uniform in [log lo, log hi] (needs lo > 0).
    LogUniform,
}

/// Operand magnitudes: `lo ≤ |x| ≤ hi`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Range {
    /// Smallest magnitude.
    pub lo: f64,
    /// Largest magnitude.
    pub hi: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
/// Why a `--range` is not usable.
pub enum RangeError {
    #[error("invalid range {0:?}: expected LO:HI with finite numbers, 0 ≤ LO < HI (e.g. 0:1e6)")]
    /// Not `LO:HI` with finite 0 ≤ LO < HI.
    Syntax(String),
    #[error("invalid range {0:?}: log-uniform magnitudes need LO > 0 (e.g. 1e-6:1e6)")]
    /// A log-uniform distribution with LO = 0.
    LogNeedsPositive(String),
}

impl FromStr for Range {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || RangeError::Syntax(s.to_string());
        let (lo, hi) = s.split_once(':').ok_or_else(err)?;
        let lo: f64 = lo.trim().parse().map_err(|_| err())?;
        let hi: f64 = hi.trim().parse().map_err(|_| err())?;
        if !(lo.is_finite() && hi.is_finite() && lo >= 0.0 && lo < hi) {
            return Err(err());
        }
        Ok(Range { lo, hi })
    }
}

impl Range {
    /// Checks that `dist` can draw from this range.
    pub fn check(&self, dist: Distribution) -> Result<(), RangeError> {
        if dist == Distribution::LogUniform && self.lo <= 0.0 {
            return Err(RangeError::LogNeedsPositive(format!(
                "{}:{}",
                self.lo, self.hi
            )));
        }
        Ok(())
    }

    fn draw(&self, dist: Distribution, rng: &mut Xoshiro256PlusPlus) -> f64 {
        let m = match dist {
            Distribution::Uniform => rng.random_range(self.lo..=self.hi),
            Distribution::LogUniform => rng
                .random_range(self.lo.ln()..=self.hi.ln())
                .exp()
                .clamp(self.lo, self.hi),
        };
        if rng.random::<bool>() {
            -m
        } else {
            m
        }
    }
}

/// What to measure.
#[derive(Clone, Debug, Serialize)]
pub struct OpsConfig {
    /// Operand pairs per operation and precision.
    pub samples: usize,
    /// Operand magnitudes.
    pub range: Range,
    /// How magnitudes are drawn.
    pub distribution: Distribution,
    /// Seed of the operands.
    pub seed: u64,
    #[serde(serialize_with = "names")]
    /// The precisions measured.
    pub precisions: Vec<Precision>,
    /// The operations measured.
    pub ops: Vec<Op>,
}

fn names<S: serde::Serializer>(ps: &[Precision], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ps.iter().map(|p| p.to_string()))
}

impl Default for OpsConfig {
    /// Seed 001's experiment: 10^6 operand pairs uniform in ±10^6, the hardware-speed precisions.
    fn default() -> Self {
        OpsConfig {
            samples: 1_000_000,
            range: Range { lo: 0.0, hi: 1e6 },
            distribution: Distribution::Uniform,
            seed: 1,
            precisions: vec![
                Precision::F32,
                Precision::F64,
                Precision::F32x2,
                Precision::F64x2,
                Precision::Comp32,
                Precision::Comp64,
            ],
            ops: Op::ALL.to_vec(),
        }
    }
}

/// The error distribution of one operation in one precision, in f64 ulps of the exact result.
#[derive(Clone, Debug, Serialize)]
pub struct OpErrorStats {
    /// The precision's name.
    pub precision: String,
    /// The operation.
    pub op: Op,
    /// Operand pairs measured.
    pub samples: usize,
    /// Mean error.
    pub mean: f64,
    /// Median error.
    pub median: f64,
    /// 99th-percentile error.
    pub p99: f64,
    /// Largest error.
    pub max: f64,
    /// Standard deviation of the error.
    pub std: f64,
    /// Results that were NaN or infinite while the exact result is finite (excluded from the
    /// statistics above, which then cover `samples − nonfinite` values).
    pub nonfinite: usize,
}

/// Operand pairs per parallel work item: large enough to amortise scheduling, small enough for
/// a smooth progress bar.
pub(crate) const CHUNK: usize = 4096;

/// Run the experiment. Deterministic for a given configuration (each chunk of operand pairs has
/// its own seeded generator), whatever the number of threads.
pub fn run(config: &OpsConfig, progress: &dyn Progress) -> Vec<OpErrorStats> {
    let chunks = config.samples.div_ceil(CHUNK);
    let mut out = Vec::new();
    for &op in &config.ops {
        progress.start(&format!("{op}"), config.samples as u64);
        // errors[precision][sample], gathered per chunk then concatenated in chunk order.
        let per_chunk: Vec<Vec<Vec<f64>>> = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let n = CHUNK.min(config.samples - c * CHUNK);
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(
                    config.seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                let pairs: Vec<(f64, f64)> = (0..n)
                    .map(|_| {
                        (
                            config.range.draw(config.distribution, &mut rng),
                            config.range.draw(config.distribution, &mut rng),
                        )
                    })
                    .collect();
                let refs: Vec<Option<Big>> =
                    pairs.iter().map(|&(x, y)| op.reference(x, y)).collect();
                let errs = config
                    .precisions
                    .iter()
                    .map(|p| {
                        p.visit(ChunkErrors {
                            op,
                            pairs: &pairs,
                            refs: &refs,
                        })
                    })
                    .collect();
                progress.advance(n as u64);
                errs
            })
            .collect();
        progress.finish();
        for (i, p) in config.precisions.iter().enumerate() {
            let errors: Vec<f64> = per_chunk
                .iter()
                .flat_map(|c| c[i].iter().copied())
                .collect();
            out.push(summarize(p.to_string(), op, config.samples, errors));
        }
    }
    out
}

/// Operand pairs of chunk `c` (of [`CHUNK`] pairs; the last may be shorter): each chunk has its
/// own seeded generator, so the operands do not depend on how chunks are scheduled, and the
/// GPU run of a configuration sees exactly the operands of the CPU run.
pub(crate) fn operand_chunk(config: &OpsConfig, c: usize) -> Vec<(f64, f64)> {
    let n = CHUNK.min(config.samples - c * CHUNK);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(
        config.seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    (0..n)
        .map(|_| {
            (
                config.range.draw(config.distribution, &mut rng),
                config.range.draw(config.distribution, &mut rng),
            )
        })
        .collect()
}

/// Every operand pair of a configuration, in order.
pub(crate) fn operands(config: &OpsConfig) -> Vec<(f64, f64)> {
    (0..config.samples.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|c| operand_chunk(config, c))
        .collect()
}

/// Errors of one precision over one chunk; a non-finite result is recorded as NaN.
struct ChunkErrors<'a> {
    op: Op,
    pairs: &'a [(f64, f64)],
    refs: &'a [Option<Big>],
}

impl PrecisionVisitor for ChunkErrors<'_> {
    type Output = Vec<f64>;
    fn visit<T: Real>(self) -> Vec<f64> {
        self.pairs
            .iter()
            .zip(self.refs)
            .filter_map(|(&(x, y), r)| {
                let r = r.as_ref()?;
                let z = self.op.apply(T::from_f64(x), T::from_f64(y));
                Some(match z.to_big() {
                    Some(zb) => ulps_f64(&zb, r),
                    None => f64::NAN,
                })
            })
            .collect()
    }
}

pub(crate) fn summarize(
    precision: String,
    op: Op,
    samples: usize,
    mut errors: Vec<f64>,
) -> OpErrorStats {
    let before = errors.len();
    errors.retain(|e| e.is_finite());
    let nonfinite = before - errors.len() + (samples - before);
    let n = errors.len();
    if n == 0 {
        return OpErrorStats {
            precision,
            op,
            samples,
            mean: f64::NAN,
            median: f64::NAN,
            p99: f64::NAN,
            max: f64::NAN,
            std: f64::NAN,
            nonfinite,
        };
    }
    errors.sort_by(f64::total_cmp);
    let mean = errors.iter().sum::<f64>() / n as f64;
    let var = errors.iter().map(|e| (e - mean) * (e - mean)).sum::<f64>() / n as f64;
    // Nearest-rank quantiles: the smallest value with at least q·n values at or below it.
    let quantile = |q: f64| errors[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    OpErrorStats {
        precision,
        op,
        samples,
        mean,
        median: quantile(0.5),
        p99: quantile(0.99),
        max: errors[n - 1],
        std: var.sqrt(),
        nonfinite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    fn small(precisions: Vec<Precision>) -> OpsConfig {
        OpsConfig {
            samples: 5000,
            precisions,
            ..OpsConfig::default()
        }
    }

    fn stat<'a>(s: &'a [OpErrorStats], p: &str, op: Op) -> &'a OpErrorStats {
        s.iter()
            .find(|r| r.precision == p && r.op == op)
            .expect("row present")
    }

    #[test]
    fn f64_is_correctly_rounded_and_double_words_are_far_below_an_ulp() {
        let s = run(
            &small(vec![
                Precision::F64,
                Precision::F64x2,
                Precision::F32x2,
                Precision::F32,
            ]),
            &NoProgress,
        );
        for op in Op::ALL {
            // One IEEE operation is correctly rounded: at most half an ulp.
            assert!(
                stat(&s, "f64", op).max <= 0.5,
                "{op}: {:?}",
                stat(&s, "f64", op)
            );
            // f64 inputs are exact in f64x2 and its ops have bounds ≤ 9.8u² = 9.8·2^-106,
            // i.e. ≤ 9.8·2^-53 f64 ulps (relative to ulp: factor ≤ 2).
            assert!(
                stat(&s, "f64x2", op).max < 20.0 * 2f64.powi(-53),
                "{op}: {:?}",
                stat(&s, "f64x2", op)
            );
            // f32 cannot hold the inputs: millions of f64 ulps.
            assert!(stat(&s, "f32", op).median > 1e5, "{op}");
            // f32x2 holds 48 bits: errors of a few f64 ulps, up to about 2^5.
            let fx = stat(&s, "f32x2", op);
            assert!(fx.median < 64.0 && fx.median > 0.01, "{op}: {fx:?}");
        }
    }

    #[test]
    fn deterministic_and_thread_independent() {
        let c = small(vec![Precision::F32x2]);
        let a = run(&c, &NoProgress);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let b = pool.install(|| run(&c, &NoProgress));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((x.mean, x.max, x.median), (y.mean, y.max, y.median));
        }
    }

    #[test]
    fn ranges_parse_and_reject_bad_input() {
        assert_eq!("0:1e6".parse::<Range>(), Ok(Range { lo: 0.0, hi: 1e6 }));
        for bad in ["5:1", "1", "a:b", "-1:2", "0:inf", "3:3"] {
            let e = bad.parse::<Range>().unwrap_err().to_string();
            assert!(e.contains("expected LO:HI"), "{bad}: {e}");
        }
        let r: Range = "0:10".parse().unwrap();
        assert!(r.check(Distribution::LogUniform).is_err());
        assert!(r.check(Distribution::Uniform).is_ok());
    }

    #[test]
    fn quantiles_use_nearest_rank() {
        let s = summarize(
            "f64".into(),
            Op::Add,
            100,
            (1..=100).map(f64::from).collect(),
        );
        assert_eq!((s.median, s.p99, s.max, s.mean), (50.0, 99.0, 100.0, 50.5));
        let t = summarize(
            "f64".into(),
            Op::Add,
            4,
            vec![1.0, f64::NAN, 3.0, f64::INFINITY],
        );
        assert_eq!((t.nonfinite, t.max), (2, 3.0));
    }
}
