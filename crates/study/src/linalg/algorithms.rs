//! The CPU algorithms, generic over the precision: GE's forward elimination and back
//! substitution, the right-looking LU, and the LU residual in f64x2 (see the parent module).

use super::*;

// ---- CPU algorithms (generic over the precision) -----------------------------------------------

/// Runs `f` on every row chunk of `rest` (rows of length n), in parallel on `pool` if given;
/// rows after a stop request are left alone (a row is at most n operations: an mp256 row of
/// order 16,384 is about 15 ms).
fn for_rows<T: Real>(
    rest: &mut [T],
    extra: Option<&mut [T]>,
    n: usize,
    pool: Option<&ThreadPool>,
    stop: Stop,
    f: &(dyn Fn(&mut [T], Option<&mut T>) + Sync),
) {
    let f = &|row: &mut [T], bi: Option<&mut T>| {
        if !stop.requested() {
            f(row, bi)
        }
    };
    match (pool, extra) {
        (Some(pool), Some(b)) => pool.install(|| {
            rest.par_chunks_mut(n)
                .zip(b.par_iter_mut())
                .for_each(|(row, bi)| f(row, Some(bi)))
        }),
        (Some(pool), None) => pool.install(|| rest.par_chunks_mut(n).for_each(|row| f(row, None))),
        (None, Some(b)) => rest
            .chunks_mut(n)
            .zip(b.iter_mut())
            .for_each(|(row, bi)| f(row, Some(bi))),
        (None, None) => rest.chunks_mut(n).for_each(|row| f(row, None)),
    }
}

/// Forward elimination without pivoting (the GPU's Fan1/Fan2 order): for t = 0..n−2,
/// m_i = a_it / a_tt stored in a_it, a_ij ← a_ij − m_i·a_tj for j > t, b_i ← b_i − m_i·b_t.
/// With a pool, the rows of each step are updated in parallel (same operations, same bits).
pub fn ge_forward<T: Real>(a: &mut [T], b: &mut [T], n: usize, pool: Option<&ThreadPool>) {
    ge_forward_until(a, b, n, pool, Stop::NEVER)
}

/// [`ge_forward`], checking `stop` every row (and leaving the system half-eliminated when it is
/// set: the point is dropped).
pub fn ge_forward_until<T: Real>(
    a: &mut [T],
    b: &mut [T],
    n: usize,
    pool: Option<&ThreadPool>,
    stop: Stop,
) {
    for t in 0..n.saturating_sub(1) {
        if stop.requested() {
            return;
        }
        let (top, rest) = a.split_at_mut((t + 1) * n);
        let pivot_row = &top[t * n..];
        let (b_top, b_rest) = b.split_at_mut(t + 1);
        let bt = &b_top[t];
        let update = |row: &mut [T], bi: Option<&mut T>| {
            let m = row[t].clone() / pivot_row[t].clone();
            for j in t + 1..n {
                row[j] = row[j].clone() - m.clone() * pivot_row[j].clone();
            }
            if let Some(bi) = bi {
                *bi = bi.clone() - m.clone() * bt.clone();
            }
            row[t] = m;
        };
        for_rows(rest, Some(b_rest), n, pool, stop, &update);
    }
}

/// Back substitution on the upper triangle of `a`: x_i = (b_i − Σ_{j>i} a_ij·x_j) / a_ii, the
/// subtractions in increasing j.
pub fn back_substitute<T: Real>(a: &[T], b: &[T], n: usize) -> Vec<T> {
    let mut x: Vec<T> = vec![T::zero(); n];
    for i in (0..n).rev() {
        let mut s = b[i].clone();
        for j in i + 1..n {
            s = s - a[i * n + j].clone() * x[j].clone();
        }
        x[i] = s / a[i * n + i].clone();
    }
    x
}

/// Right-looking LU without pivoting, in place (unit L below the diagonal, U on and above): for
/// k = 0..n−1, a_ik ← a_ik / a_kk, then a_ij ← a_ij − a_ik·a_kj for i, j > k. The GPU's blocked
/// kernels apply exactly these operations to each element in the same order.
pub fn lu_factor<T: Real>(a: &mut [T], n: usize, pool: Option<&ThreadPool>) {
    lu_factor_until(a, n, pool, Stop::NEVER)
}

/// [`lu_factor`], checking `stop` every row (and leaving the factors incomplete when it is set:
/// the point is dropped).
pub fn lu_factor_until<T: Real>(a: &mut [T], n: usize, pool: Option<&ThreadPool>, stop: Stop) {
    for k in 0..n.saturating_sub(1) {
        if stop.requested() {
            return;
        }
        let (top, rest) = a.split_at_mut((k + 1) * n);
        let pivot_row = &top[k * n..];
        let update = |row: &mut [T], _: Option<&mut T>| {
            let l = row[k].clone() / pivot_row[k].clone();
            for j in k + 1..n {
                row[j] = row[j].clone() - l.clone() * pivot_row[j].clone();
            }
            row[k] = l;
        };
        for_rows(rest, None, n, pool, stop, &update);
    }
}

/// The residual A − L·U of packed factors `f` (exact f64x2 values) against `a`, in f64x2
/// arithmetic, as the GPU kernel `lu_residual_f64x2` computes it: products for k < min(i, j) in
/// increasing k, then U_ij (i ≤ j) or L_ij·U_jj (i > j); the high word of each entry.
pub fn lu_residual_model(f: &[f64x2], a: &[f64x2], n: usize) -> Vec<f64> {
    lu_residual_model_until(f, a, n, Stop::NEVER)
}

/// [`lu_residual_model`], checking `stop` every row (rows after it are NaN: the point is
/// dropped).
pub fn lu_residual_model_until(f: &[f64x2], a: &[f64x2], n: usize, stop: Stop) -> Vec<f64> {
    let row = |i: usize| -> Vec<f64> {
        if stop.requested() {
            return vec![f64::NAN; n];
        }
        (0..n)
            .map(|j| {
                let mut acc = a[i * n + j];
                for k in 0..i.min(j) {
                    acc -= f[i * n + k] * f[k * n + j];
                }
                acc = if i <= j {
                    acc - f[i * n + j]
                } else {
                    acc - f[i * n + j] * f[j * n + j]
                };
                acc.hi
            })
            .collect()
    };
    let rows: Vec<Vec<f64>> = if n >= 128 {
        (0..n).into_par_iter().map(row).collect()
    } else {
        (0..n).map(row).collect()
    };
    rows.concat()
}
