//! Where to look for large errors: random inputs over a function's whole range, and the regions
//! where libraries are known to struggle (huge trigonometric arguments, log near 1, exp near
//! overflow and underflow, inverse functions near the ends of their domains, lgamma near its
//! zeros, tgamma near its poles, …). The search in [`crate::search`] starts from these.

use rand::Rng;

use crate::format::Format;
use crate::functions::Function;

/// An interval sampled uniformly in value (`log: false`) or in magnitude's logarithm.
#[derive(Copy, Clone, Debug)]
struct Region {
    lo: f64,
    hi: f64,
    log: bool,
}

const fn lin(lo: f64, hi: f64) -> Region {
    Region { lo, hi, log: false }
}
const fn log(lo: f64, hi: f64) -> Region {
    Region { lo, hi, log: true }
}

/// The regions of the first argument worth extra samples, per function and format.
fn hard_regions(f: Function, format: Format) -> Vec<Region> {
    let big = format.max();
    let (exp_hi, exp_lo) = match format {
        // The arguments where exp overflows and where its result leaves the subnormal range.
        Format::F32 => (88.8, -104.0),
        Format::F64 => (709.8, -745.2),
    };
    use Function::*;
    match f {
        Sin | Cos | Tan => vec![
            log(1e-8, 1.0),
            lin(-10.0, 10.0),
            log(1e4, 1e22),
            log(1e22, big),
        ],
        Asin | Acos => vec![
            lin(-1.0, 1.0),
            lin(0.9, 1.0),
            lin(-1.0, -0.9),
            lin(0.4, 0.6),
        ],
        Atan => vec![log(1e-8, 1e8), lin(-2.0, 2.0)],
        Sinh | Cosh => vec![
            lin(-exp_hi - 1.0, exp_hi + 1.0),
            log(1e-8, 1.0),
            lin(exp_hi - 2.0, exp_hi + 0.5),
        ],
        Tanh => vec![lin(-10.0, 10.0), log(1e-8, 1.0), lin(0.4, 0.7)],
        Asinh => vec![log(1e-8, 1e8), lin(-2.0, 2.0)],
        Acosh => vec![lin(1.0, 1.01), lin(1.0, 3.0), log(1.0, 1e8)],
        Atanh => vec![
            lin(-1.0, 1.0),
            lin(0.9, 1.0),
            lin(0.4, 0.6),
            log(1e-8, 1e-1),
        ],
        Exp | Expm1 | Exp2 | Exp10 => {
            let k = match f {
                Exp2 => std::f64::consts::LOG2_E,
                Exp10 => std::f64::consts::LOG10_E,
                _ => 1.0,
            };
            vec![
                lin(exp_lo * k, exp_hi * k),
                lin((exp_hi - 1.0) * k, (exp_hi + 0.2) * k),
                lin(exp_lo * k, (exp_lo + 30.0) * k),
                log(1e-10, 1.0),
                lin(-1.0, 1.0),
            ]
        }
        Log | Log2 | Log10 => vec![
            lin(0.5, 2.0),
            lin(0.99, 1.01),
            log(1e-300, big),
            log(4.9e-324, 2.2e-308),
        ],
        Log1p => vec![
            log(1e-10, 1.0),
            lin(-1.0, -0.9),
            lin(-0.5, 1.0),
            log(1.0, big),
        ],
        Pow => vec![lin(0.9, 1.1), log(1e-5, 1e5), lin(-10.0, -0.1)],
        Sqrt | Rsqrt | Cbrt => vec![log(1e-300, big), lin(0.5, 4.0), log(4.9e-324, 2.2e-308)],
        Hypot | Div => vec![log(1e-300, big), lin(-4.0, 4.0)],
        Atan2 => vec![lin(-4.0, 4.0), log(1e-30, 1e30)],
        Erf => vec![lin(-6.0, 6.0), log(1e-10, 1.0), lin(0.4, 2.5)],
        Erfc => vec![lin(-6.0, 30.0), lin(5.0, 27.3), lin(0.4, 2.5)],
        Erfinv => vec![
            lin(-1.0, 1.0),
            lin(0.99, 1.0),
            lin(-1.0, -0.99),
            log(1e-10, 0.1),
        ],
        Lgamma => vec![
            lin(0.9, 2.1),
            lin(-10.0, -2.0),
            lin(-2.8, -2.4),
            lin(-2.46, -2.45),
            log(1e-8, 1e-1),
            log(1.0, 1e30),
        ],
        Tgamma => vec![
            lin(-20.0, 40.0),
            lin(-180.0, -100.0),
            lin(160.0, 172.0),
            log(1e-8, 1e-1),
            lin(0.5, 3.0),
        ],
    }
}

/// A random value in a region, rounded to `format`.
fn sample(rng: &mut impl Rng, r: Region, format: Format) -> f64 {
    let x = if r.log && r.lo > 0.0 {
        let (a, b) = (r.lo.ln(), r.hi.ln());
        (a + (b - a) * rng.random::<f64>()).exp()
    } else {
        r.lo + (r.hi - r.lo) * rng.random::<f64>()
    };
    let x = if r.log && rng.random::<bool>() && r.lo > 0.0 {
        -x
    } else {
        x
    };
    format.round_f64(x.clamp(-format.max(), format.max()))
}

/// A random finite value of `format`, uniform over bit patterns (so every binade, the
/// subnormals and both signs get their share).
pub fn random_bits(rng: &mut impl Rng, format: Format) -> f64 {
    loop {
        let x = match format {
            Format::F32 => f32::from_bits(rng.random::<u32>()) as f64,
            Format::F64 => f64::from_bits(rng.random::<u64>()),
        };
        if x.is_finite() {
            return x;
        }
    }
}

/// The second argument of a bivariate function, given the first.
fn second(f: Function, format: Format, rng: &mut impl Rng, x: f64) -> f64 {
    match f {
        Function::Pow => match rng.random_range(0..4) {
            // Integer exponents (exact results and the negative-base branch).
            0 => rng.random_range(-40i32..40) as f64,
            // Exponents that take results near overflow and underflow from x.
            1 => {
                let target = if rng.random::<bool>() {
                    format.max().ln()
                } else {
                    -format.max().ln()
                };
                let l = x.abs().ln();
                if l != 0.0 && l.is_finite() {
                    format.round_f64(target / l * (1.0 - 1e-3 * rng.random::<f64>()))
                } else {
                    1.5
                }
            }
            2 => sample(rng, log(1e-3, 1e3), format),
            _ => random_bits(rng, format),
        },
        _ => {
            if rng.random::<bool>() {
                random_bits(rng, format)
            } else {
                // Near the first argument: hypot(x, ≈x), atan2 near the diagonal, x/≈x.
                format.round_f64(x * (1.0 + (rng.random::<f64>() - 0.5) * 1e-3))
            }
        }
    }
}

/// One random input: a mixture of uniform bit patterns (a third) and the function's hard
/// regions (two thirds); `[x, y]` with y = 0 for univariate functions.
pub fn random_input(f: Function, format: Format, rng: &mut impl Rng) -> [f64; 2] {
    let regions = hard_regions(f, format);
    let x = if rng.random_range(0..3) == 0 {
        random_bits(rng, format)
    } else {
        let region = regions[rng.random_range(0..regions.len())];
        sample(rng, region, format)
    };
    let y = if f.arity() == 2 {
        second(f, format, rng, x)
    } else {
        0.0
    };
    [x, y]
}

/// A neighbour of `v` in `format`: up to 2^k representable numbers away, k drawn so that small
/// steps are most frequent (the climb refines around a large error, and sometimes jumps).
pub fn neighbour(rng: &mut impl Rng, v: f64, format: Format) -> f64 {
    let max_k = match format {
        Format::F32 => 20,
        Format::F64 => 40,
    };
    let k = (rng.random::<f64>().powi(3) * max_k as f64) as u32;
    let step = rng.random_range(1..=(1u64 << k)) as i64;
    let step = if rng.random::<bool>() { step } else { -step };
    let moved = match format {
        Format::F32 => {
            let b = (v as f32).to_bits() as i64;
            f32::from_bits((b + step).clamp(0, u32::MAX as i64) as u32) as f64
        }
        Format::F64 => {
            let b = v.to_bits() as i128;
            f64::from_bits((b + step as i128).clamp(0, u64::MAX as i128) as u64)
        }
    };
    // Stepping across the sign bit or into NaN patterns: stay where we were.
    if moved.is_finite() && moved.is_sign_negative() == v.is_sign_negative() {
        moved
    } else {
        v
    }
}

/// The plot bin of an input: its sign and exponent (one bin per binade: 512 for f32, 4096 for
/// f64), so bins follow the input's magnitude on a log scale. Records keep the largest error per
/// bin; finer bins would only make records and pages larger than a plot can show.
pub fn bin_of(x: f64, format: Format) -> usize {
    match format {
        Format::F32 => ((x as f32).to_bits() >> 23) as usize,
        Format::F64 => (x.to_bits() >> 52) as usize,
    }
}

/// The number of bins of one sign (the negative inputs' bins follow the positive ones).
pub fn bins_per_sign(format: Format) -> usize {
    match format {
        Format::F32 => 256,
        Format::F64 => 2048,
    }
}

/// The smallest input magnitude of a bin (for plot axes).
pub fn bin_start(bin: usize, format: Format) -> f64 {
    match format {
        Format::F32 => f32::from_bits((bin as u32) << 23) as f64,
        Format::F64 => f64::from_bits((bin as u64) << 52),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn inputs_are_representable_and_neighbours_stay_finite() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        for f in Function::ALL {
            for format in Format::ALL {
                for _ in 0..200 {
                    let [x, y] = random_input(f, format, &mut rng);
                    assert!(x.is_finite() && y.is_finite(), "{f:?} {x} {y}");
                    assert_eq!(format.round_f64(x), x);
                    assert_eq!(format.round_f64(y), y);
                    let n = neighbour(&mut rng, x, format);
                    assert!(n.is_finite() && format.round_f64(n) == n);
                }
            }
        }
        assert_eq!(bin_of(1.0, Format::F32), 0x7f);
        assert_eq!(bin_of(-1.5, Format::F32), 0x17f);
        assert_eq!(bin_start(0x7f, Format::F32), 1.0);
        assert_eq!(bin_of(-2.0, Format::F64), 0xc00);
    }
}
