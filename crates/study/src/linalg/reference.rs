//! The exact references: GE's solution by iterative refinement, the LU reference factors, and
//! the per-process cache that computes each once per input.

use super::*;

// ---- References --------------------------------------------------------------------------------

/// An f64 LU with partial pivoting (the reference's correction solver).
struct PivotedLu {
    n: usize,
    lu: Vec<f64>,
    perm: Vec<usize>,
}

impl PivotedLu {
    fn new(a: &[f64], n: usize, stop: Stop) -> PivotedLu {
        let mut lu = a.to_vec();
        let mut perm: Vec<usize> = (0..n).collect();
        for k in 0..n {
            if stop.requested() {
                break;
            }
            let p = (k..n)
                .max_by(|&x, &y| lu[x * n + k].abs().total_cmp(&lu[y * n + k].abs()))
                .unwrap_or(k);
            if p != k {
                for j in 0..n {
                    lu.swap(p * n + j, k * n + j);
                }
                perm.swap(p, k);
            }
            let (top, rest) = lu.split_at_mut((k + 1) * n);
            let prow = &top[k * n..];
            let update = |row: &mut [f64]| {
                let l = row[k] / prow[k];
                row[k] = l;
                if l != 0.0 {
                    for j in k + 1..n {
                        row[j] -= l * prow[j];
                    }
                }
            };
            if n >= 256 {
                rest.par_chunks_mut(n).for_each(update);
            } else {
                rest.chunks_mut(n).for_each(update);
            }
        }
        PivotedLu { n, lu, perm }
    }

    fn solve(&self, r: &[f64]) -> Vec<f64> {
        let n = self.n;
        let mut y: Vec<f64> = self.perm.iter().map(|&p| r[p]).collect();
        for i in 0..n {
            for j in 0..i {
                y[i] -= self.lu[i * n + j] * y[j];
            }
        }
        for i in (0..n).rev() {
            for j in i + 1..n {
                y[i] -= self.lu[i * n + j] * y[j];
            }
            y[i] /= self.lu[i * n + i];
        }
        y
    }
}

/// The exact solution of A·x = b (f64 data) to a requested number of bits.
#[derive(Debug, Clone)]
pub struct GeReference {
    /// x*, exactly the sum of the refinement's parts; `None` entries where it failed.
    pub x: Vec<Option<Big>>,
    /// The last correction was below 2^-bits of x.
    pub converged: bool,
    /// Refinement steps taken.
    pub iterations: usize,
}

/// Iterative refinement to `bits` bits (see the module doc).
pub fn ge_reference(a: &[f64], b: &[f64], n: usize, bits: u32) -> GeReference {
    ge_reference_until(a, b, n, bits, Stop::NEVER)
}

/// [`ge_reference`], checking `stop` every elimination step and refinement (a stopped reference
/// is meaningless: the point is dropped, and the reference cache does not keep it).
pub fn ge_reference_until(a: &[f64], b: &[f64], n: usize, bits: u32, stop: Stop) -> GeReference {
    let lu = PivotedLu::new(a, n, stop);
    let first = lu.solve(b);
    let scale = first.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let mut parts = vec![first];
    let mut converged = false;
    let mut iterations = 0;
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    if finite(&parts[0]) {
        let tolerance = scale * 2f64.powi(-(bits as i32));
        while iterations < MAX_REFINEMENTS && !stop.requested() {
            iterations += 1;
            let residual_row = |i: usize| {
                let mut acc = ExactDot::new();
                acc.add_product(b[i], 1.0);
                for p in &parts {
                    for j in 0..n {
                        acc.add_product(-a[i * n + j], p[j]);
                    }
                }
                acc.round()
            };
            let r: Vec<f64> = if n >= 128 {
                (0..n).into_par_iter().map(residual_row).collect()
            } else {
                (0..n).map(residual_row).collect()
            };
            if r.iter().all(|&x| x == 0.0) {
                converged = true;
                break;
            }
            let d = lu.solve(&r);
            if !finite(&d) {
                break;
            }
            let size = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            parts.push(d);
            if size <= tolerance {
                converged = true;
                break;
            }
        }
    }
    let x = (0..n)
        .map(|i| {
            let mut s = ExactSum::new();
            for p in &parts {
                s.add(p[i]);
            }
            s.to_big()
        })
        .collect();
    GeReference {
        x,
        converged,
        iterations,
    }
}

/// Bits a reference needs for precision T: twice its significand, and at least 220.
pub(super) fn reference_bits<T: Real>() -> u32 {
    (2 * T::significand_bits() + 8).max(220)
}

/// A reference LU factorization (packed like the tested one).
#[derive(Debug, Clone)]
pub enum LuReference {
    /// f64x2 (106 bits).
    Pairs(Vec<f64x2>),
    /// mp512 values, exact as stored.
    Exact(Vec<Option<Big>>),
}

/// A pool of all cores for references of large systems (`None`: sequential, also when the pool
/// cannot start; the result is the same either way).
fn reference_pool(n: usize) -> Option<ThreadPool> {
    (n >= 256)
        .then(|| rayon::ThreadPoolBuilder::new().build().ok())
        .flatten()
}

/// The mp512 right-looking factorization of `a` (f64 data).
pub(super) fn lu_reference_mp(a: &[f64], n: usize, stop: Stop) -> LuReference {
    let mut m: Vec<Mp<512>> = convert(a);
    lu_factor_until(&mut m, n, reference_pool(n).as_ref(), stop);
    LuReference::Exact(m.iter().map(|x| x.to_big()).collect())
}

/// The f64x2 right-looking factorization of `a` on the CPU.
pub(super) fn lu_reference_pairs(a: &[f64], n: usize, stop: Stop) -> LuReference {
    let mut m: Vec<f64x2> = convert(a);
    lu_factor_until(&mut m, n, reference_pool(n).as_ref(), stop);
    LuReference::Pairs(m)
}

/// A small cache of references keyed by their input (the same reference serves every tile and
/// thread count, and every precision whose converted input is the same).
pub(super) struct RefCache<V> {
    pub(super) entries: Vec<(u64, Arc<V>)>,
}

impl<V> RefCache<V> {
    const KEEP: usize = 6;
    pub(super) const fn new() -> Self {
        RefCache {
            entries: Vec::new(),
        }
    }
    pub(super) fn get_or(&mut self, key: u64, stop: Stop, make: impl FnOnce() -> V) -> Arc<V> {
        if let Some((_, v)) = self.entries.iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        let v = Arc::new(make());
        if stop.requested() {
            // Made in part: good for nothing, least of all for the next run's points.
            return v;
        }
        if self.entries.len() >= Self::KEEP {
            self.entries.remove(0);
        }
        self.entries.push((key, v.clone()));
        v
    }
}

/// FNV-1a over 64-bit words (a cache key; inputs of 4M values are hashed per point, so it must
/// cost about a nanosecond a value).
pub(super) struct Fnv(pub(super) u64);

impl Fnv {
    pub(super) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub(super) fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// A key for f64 data and a label.
pub(super) fn data_key(label: &str, parts: &[&[f64]]) -> u64 {
    let mut h = Fnv::new();
    for b in label.bytes() {
        h.word(u64::from(b));
    }
    for p in parts {
        h.word(p.len() as u64);
        for x in *p {
            h.word(x.to_bits());
        }
    }
    h.0
}

pub(super) static CPU_GE_REFS: Mutex<RefCache<GeReference>> = Mutex::new(RefCache::new());
pub(super) static CPU_LU_REFS: Mutex<RefCache<LuReference>> = Mutex::new(RefCache::new());

pub(super) fn cached<V>(
    cache: &Mutex<RefCache<V>>,
    key: u64,
    stop: Stop,
    make: impl FnOnce() -> V,
) -> Arc<V> {
    // A poisoned cache only means another point panicked while filling it; the entries are whole.
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or(key, stop, make)
}
