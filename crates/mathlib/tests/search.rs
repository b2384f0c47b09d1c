//! The search engine on subjects whose errors are known by construction.

use std::time::Duration;

use mantissa_mathlib::search::{search, SearchOptions, Subject};
use mantissa_mathlib::{Format, Function, MathlibError};

/// f32 square root one ulp below the correctly rounded value: every positive input is off by
/// between 0.5 and 1.5 ulps of the exact root.
struct OneUlpLow;

impl Subject for OneUlpLow {
    fn eval(
        &self,
        _: Function,
        _: Format,
        xs: &[f64],
        _: &[f64],
    ) -> Result<Vec<f64>, MathlibError> {
        Ok(xs
            .iter()
            .map(|&x| one_below((x as f32).sqrt()) as f64)
            .collect())
    }
}

/// The f32 just below a positive finite `r` (`f32::next_down` needs Rust 1.86; the crate
/// supports 1.85).
fn one_below(r: f32) -> f32 {
    f32::from_bits(r.to_bits() - 1)
}

/// f64 square root pushed up by round(64·e^−|x−1.7|) ulps: the largest error, 64.5 ulps at
/// most, sits at x ≈ 1.7 and the error grows towards it from everywhere, so a climb finds it.
struct Bump;

impl Subject for Bump {
    fn eval(
        &self,
        _: Function,
        _: Format,
        xs: &[f64],
        _: &[f64],
    ) -> Result<Vec<f64>, MathlibError> {
        Ok(xs
            .iter()
            .map(|&x| {
                let r = x.sqrt();
                if !r.is_finite() || r == 0.0 {
                    return r;
                }
                let k = (64.0 * (-(x - 1.7).abs()).exp()).round() as u64;
                f64::from_bits(r.to_bits() + k)
            })
            .collect())
    }
}

#[test]
fn a_sample_of_a_one_ulp_low_square_root_is_never_correctly_rounded() {
    let uniform: Vec<[f64; 2]> = (1..=4000u32)
        .map(|i| [f32::from_bits(0x0080_0000 + i * 500_000) as f64, 0.0])
        .collect();
    let n = uniform.len() as u64;
    let options = SearchOptions {
        budget: Duration::from_secs(3),
        uniform,
        ..Default::default()
    };
    let s = search(
        Function::Sqrt,
        Format::F32,
        &[&OneUlpLow],
        &options,
        &mut |_| {},
    )
    .unwrap();
    let stats = &s.results[0].stats;
    assert_eq!(stats.sampled, n);
    assert_eq!(
        stats.not_correctly_rounded, n,
        "every result is one ulp off"
    );
    assert!(
        stats.max_ulps > 1.0 && stats.max_ulps <= 1.5,
        "max {}",
        stats.max_ulps
    );
    assert!(
        stats.mean_ulps() > 0.9 && stats.mean_ulps() < 1.1,
        "mean {}",
        stats.mean_ulps()
    );
    assert_eq!(s.undecided, 0);
    let w = stats.worst.as_ref().unwrap();
    assert_eq!(w.result, one_below((w.args[0] as f32).sqrt()) as f64);
}

#[test]
fn the_climb_finds_a_planted_maximum() {
    let options = SearchOptions {
        budget: Duration::from_secs(4),
        batch: 512,
        ..Default::default()
    };
    let s = search(Function::Sqrt, Format::F64, &[&Bump], &options, &mut |_| {}).unwrap();
    let stats = &s.results[0].stats;
    let w = stats.worst.as_ref().unwrap();
    assert!(
        stats.max_ulps > 63.5,
        "max {} at {:?}",
        stats.max_ulps,
        w.args
    );
    assert!((w.args[0] - 1.7).abs() < 0.01, "found at {}", w.args[0]);
}
