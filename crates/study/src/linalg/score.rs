//! Scoring a result against its reference: GE's mean errors, LU's mismatches and factor errors,
//! the near-singular note.

use super::*;

// ---- Scoring -----------------------------------------------------------------------------------

/// The note for the smallest pivot if it is below n·2^-p·max|a|.
pub fn near_singular_note(pivots: &[f64], n: usize, bits: u32, max_abs: f64) -> Option<String> {
    let threshold = n as f64 * 2f64.powi(-(bits as i32)) * max_abs;
    let (step, pivot) = pivots
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_finite())
        .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    (pivot.abs() < threshold).then(|| {
        format!(
            "near-singular: pivot {:.1e} at step {step} (below n·u·max|a| = {threshold:.1e})",
            pivot
        )
    })
}

fn join_notes(notes: Vec<String>) -> Option<String> {
    (!notes.is_empty()).then(|| notes.join("; "))
}

pub(super) fn max_abs(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// Scores a GE solution `x` (with the eliminated matrix `u` for its pivots) against `reference`;
/// `a_max` is max|a| of the converted system.
pub fn score_ge<T: Real>(
    x: &[T],
    u: &[T],
    n: usize,
    a_max: f64,
    reference: &GeReference,
) -> Measurement {
    let mut m = measured();
    let mut notes = Vec::new();
    let pivots: Vec<f64> = (0..n).map(|t| u[t * n + t].to_f64()).collect();
    notes.extend(near_singular_note(&pivots, n, T::significand_bits(), a_max));
    m.value = x.first().map(|v| v.to_f64());
    m.reference = reference
        .x
        .first()
        .and_then(|r| r.as_ref())
        .map(big::to_f64);
    let bad = x.iter().filter(|v| !v.is_finite()).count();
    if bad > 0 {
        notes.push(format!("{bad} of {n} solution entries are NaN or infinite"));
    } else if !reference.converged || reference.x.iter().any(|r| r.is_none()) {
        notes.push(format!(
            "reference did not converge in {} refinement steps (A numerically singular in f64?)",
            reference.iterations
        ));
    } else if n > 0 {
        let mut sum_err = 0.0;
        let mut sum_ref = 0.0;
        for (xi, ri) in x.iter().zip(&reference.x) {
            let (Some(xb), Some(rb)) = (xi.to_big(), ri.as_ref()) else {
                continue;
            };
            sum_err += big::to_f64(&(xb - rb.clone())).abs();
            sum_ref += big::to_f64(rb).abs();
        }
        m.error = Some(mean_errors(sum_err, sum_ref, n as f64));
    }
    m.note = join_notes(notes);
    m
}

/// An `Ok` measurement with nothing filled in yet.
fn measured() -> Measurement {
    Measurement {
        status: Status::Ok,
        value: None,
        reference: None,
        error: None,
        time: None,
        extra: BTreeMap::new(),
        note: None,
        build: None,
    }
}

fn mean_errors(sum_err: f64, sum_ref: f64, count: f64) -> ErrorMetrics {
    let rel = (sum_ref > 0.0).then(|| sum_err / sum_ref);
    ErrorMetrics {
        abs: sum_err / count,
        rel,
        ulps: None,
        digits: rel.map(|r| {
            if r > 0.0 {
                (-r.log10()).min(99.0)
            } else {
                99.0
            }
        }),
    }
}

/// Counts residual entries above the tolerance (NaN and infinities included).
pub fn count_mismatches(residual: &[f64]) -> usize {
    residual
        .iter()
        .filter(|r| r.is_nan() || r.abs() > MISMATCH_TOLERANCE)
        .count()
}

/// The exact f64x2 of a value (nearest for mp: only the residual uses it).
pub(super) fn pair_of<T: Real>(x: &T) -> f64x2 {
    match x.to_big() {
        Some(b) => {
            let hi = big::to_f64(&b);
            if !hi.is_finite() {
                return f64x2::from_parts(hi, 0.0);
            }
            f64x2::from_parts(hi, big::to_f64(&(b - big::exact(hi))))
        }
        None => f64x2::from_parts(x.to_f64(), 0.0),
    }
}

/// What the LU scoring needs from the tested factors.
pub struct LuFactors<'a> {
    /// The order.
    pub n: usize,
    /// The factors as f64x2 (exact, or nearest for mp).
    pub pairs: &'a [f64x2],
    /// The exact value of entry k (`None` for NaN/inf).
    pub exact: &'a dyn Fn(usize) -> Option<Big>,
    /// Significand bits of the tested precision.
    pub bits: u32,
}

/// Scores LU factors: mismatches from `residual`, mean error against `reference` (if any), the
/// near-singular note; `note` is added (the reference's caveat).
pub fn score_lu(
    f: &LuFactors,
    residual: &[f64],
    a_max: f64,
    reference: Option<&LuReference>,
    note: Option<String>,
) -> Measurement {
    let n = f.n;
    let mut m = measured();
    let mut notes = Vec::new();
    let pivots: Vec<f64> = (0..n).map(|t| f.pairs[t * n + t].hi).collect();
    notes.extend(near_singular_note(&pivots, n, f.bits, a_max));
    let mismatches = count_mismatches(residual);
    m.extra.insert("mismatches".into(), mismatches as f64);
    m.extra.insert(
        "mismatch_pct".into(),
        100.0 * mismatches as f64 / (n * n).max(1) as f64,
    );
    let last = (n * n).checked_sub(1);
    m.value = last.map(|k| f.pairs[k].to_f64());
    let bad = f.pairs.iter().filter(|p| !p.is_finite()).count();
    if bad > 0 {
        notes.push(format!(
            "{bad} of {} factor entries are NaN or infinite",
            n * n
        ));
    } else if let Some(reference) = reference {
        let (mut sum_err, mut sum_ref) = (0.0, 0.0);
        match reference {
            LuReference::Pairs(r) => {
                m.reference = last.map(|k| r[k].to_f64());
                for (x, y) in f.pairs.iter().zip(r) {
                    sum_err += (*x - *y).to_f64().abs();
                    sum_ref += y.to_f64().abs();
                }
            }
            LuReference::Exact(r) => {
                m.reference = last.and_then(|k| r[k].as_ref()).map(big::to_f64);
                for (k, y) in r.iter().enumerate() {
                    if let (Some(x), Some(y)) = ((f.exact)(k), y) {
                        sum_err += big::to_f64(&(x - y.clone())).abs();
                        sum_ref += big::to_f64(y).abs();
                    }
                }
            }
        }
        if n > 0 {
            m.error = Some(mean_errors(sum_err, sum_ref, (n * n) as f64));
        }
    }
    notes.extend(note);
    m.note = join_notes(notes);
    m
}

/// Which LU reference precision T gets at order n, and the caveat for the note.
pub(super) enum LuRefKind {
    /// f64x2, enough bits.
    Pairs,
    /// mp512.
    Mp,
    /// f64x2, fewer than twice the tested bits.
    PairsShort,
    /// None: the tested precision is f64x2 itself.
    Nothing,
}

pub(super) fn lu_ref_kind<T: Real>(n: usize) -> LuRefKind {
    if T::significand_bits() <= 53 {
        LuRefKind::Pairs
    } else if n <= MP_REFERENCE_MAX {
        LuRefKind::Mp
    } else if T::precision_name() == "f64x2" {
        LuRefKind::Nothing
    } else {
        LuRefKind::PairsShort
    }
}

/// The computed factors as f64x2 (`to_pair`: exact for every pair type), in parallel for large
/// matrices.
pub(super) fn factor_pairs<T: Sync>(f: &[T], n: usize, to_pair: fn(&T) -> f64x2) -> Vec<f64x2> {
    if n >= 256 {
        f.par_iter().map(to_pair).collect()
    } else {
        f.iter().map(to_pair).collect()
    }
}

/// Scores computed LU factors `f` (and their `pairs`) against `reference` and the residual,
/// with the note of the reference `kind`: the same for CPU and GPU points.
pub(super) fn score_factors<T: Real>(
    f: &[T],
    pairs: &[f64x2],
    n: usize,
    kind: &LuRefKind,
    residual: &[f64],
    a_max: f64,
    reference: Option<std::sync::Arc<LuReference>>,
) -> Measurement {
    let exact = |k: usize| f[k].to_big();
    let factors = LuFactors {
        n,
        pairs,
        exact: &exact,
        bits: T::significand_bits(),
    };
    let note = lu_ref_note(kind, T::significand_bits());
    score_lu(&factors, residual, a_max, reference.as_deref(), note)
}

fn lu_ref_note(kind: &LuRefKind, bits: u32) -> Option<String> {
    match kind {
        LuRefKind::PairsShort => Some(format!(
            "error.abs against an f64x2 reference (106 bits), not twice the tested {bits} bits (mp512 only up to n = {MP_REFERENCE_MAX})"
        )),
        LuRefKind::Nothing => Some(format!(
            "no error.abs: the only reference above n = {MP_REFERENCE_MAX} is f64x2 itself"
        )),
        LuRefKind::Mp if bits > 256 => Some(format!(
            "error.abs against mp512, fewer than twice the tested {bits} bits"
        )),
        LuRefKind::Mp | LuRefKind::Pairs => None,
    }
}

pub(super) fn gflops(n: usize, ms: f64) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n / (ms * 1e6)
}
