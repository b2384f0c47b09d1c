//! CPU models of the example kernels in `examples/kernels/` — test support, not a crate.
//!
//! One pure function per example. Each takes the spec's input buffers (slices, in the element
//! type of the spec: `f64` for `<name>.toml`, `f32` for `<name>_f32.toml`) and its sizes, and
//! returns the spec's outputs. Use it from a test with
//!
//! ```ignore
//! #[path = "../../../examples/kernels/models.rs"]
//! mod models;
//! ```
//!
//! (path relative to the test file). It depends on `std` only and compiles on its own:
//! `rustc --edition 2021 --crate-type lib examples/kernels/models.rs`; its own tests run with
//! `rustc --edition 2021 --test examples/kernels/models.rs -o /tmp/models_test && /tmp/models_test`.
//!
//! # How closely a model follows the GPU
//!
//! Every model performs the kernel's IEEE operations in the kernel's source order (C++ evaluates
//! `a + b + c` as `(a + b) + c`, `0.5 * m * v2` as `(0.5 * m) * v2`), in the kernel's precision,
//! with plain Rust operators — never `mul_add`. It also follows the kernels' loop orders (the
//! n-body tiles visit bodies `j = 0, 1, …, n-1` in order; the Gaussian elimination runs pivot by
//! pivot; the heat boundary kernels run west/east before south/north).
//!
//! * Under the `strict` flag set (no FMA contraction; IEEE division and square root, which are
//!   also nvcc's defaults) `+ - * /` and `sqrt` on the GPU are the same correctly rounded
//!   operations as here, so `nbody`, `heat2d`, `gauss` and `float_literal[_fixed]` agree with the
//!   GPU **bit for bit** (a tight tolerance of 0 ulps should hold; allow a couple to be safe).
//!   Checked on an H100: the standalone programs built with `nvcc -fmad=false`, and these models
//!   fed the programs' own host inputs, printed the same checksums to 17 digits, f64 and f32.
//! * Under the `default` flag set nvcc contracts `a * b + c` into one FMA (one rounding instead of
//!   two), so results differ by a few ulps per operation, and the differences grow with the
//!   length of the computation (n-body steps, elimination pivots, heat steps): compare with a
//!   loose relative tolerance (f64: ~1e-10, f32: ~1e-3 over the example sizes).
//! * `options` uses `exp`, `log` and `erfc`: CUDA's are not correctly rounded (1–5 ulps by the
//!   CUDA Programming Guide's tables) and neither are Rust's (`libm`) nor [`erfc`] here (≤ 6 ulps,
//!   see its doc), so even under `strict` expect agreement to a few ulps, not bits; the option
//!   prices then amplify that where they cancel (deep out of the money).
//!
//! Generic over [`Real`] (`f32`, `f64`): the `f32` instance models the hand-written `_f32.cu`
//! twins (whose literals have an `f` suffix: [`Real::lit`] rounds the decimal literal to the type,
//! as the compiler does — through `f64` first, which is the same value for every literal used).

#![allow(dead_code)]

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The floating-point types the kernels come in.
pub trait Real:
    Copy
    + PartialOrd
    + Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A source literal (`0.5` in the f64 kernel, `0.5f` in the f32 one).
    fn lit(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Correctly rounded square root (CUDA `sqrt`/`sqrtf` without fast-math).
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    /// Natural logarithm (CUDA `log`/`logf`).
    fn ln(self) -> Self;
    fn abs(self) -> Self;
    /// Complementary error function (CUDA `erfc`/`erfcf`).
    fn erfc(self) -> Self;
}

impl Real for f64 {
    fn lit(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn erfc(self) -> Self {
        erfc(self)
    }
}

impl Real for f32 {
    fn lit(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn ln(self) -> Self {
        f32::ln(self)
    }
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn erfc(self) -> Self {
        erfc(self as f64) as f32
    }
}

fn zeros<T: Real>(n: usize) -> Vec<T> {
    vec![T::lit(0.0); n]
}

// ------------------------------------------------------------------------------------------------
// erfc (Rust's std has none)
// ------------------------------------------------------------------------------------------------

const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;

/// `exp(-x²)` without the error of rounding `x²` first: `x = h + l` with `h` holding the top 26
/// significand bits, so `h²` is exact and `x² = h² + l (x + h)`.
fn exp_neg_square(x: f64) -> f64 {
    let h = f64::from_bits(x.to_bits() & 0xFFFF_FFFF_F800_0000);
    let l = x - h;
    (-(h * h)).exp() * (-(l * (x + h))).exp()
}

/// The complementary error function in f64, to within 6 ulps of the true value for results
/// above the subnormal range (checked against a reference implementation on 26 000 points in
/// [-6, 27]). For `|x| < 0.75`, `1 - erf(x)` from erf's Taylor series; above, the continued
/// fraction `erfc(x) = e^{-x²}/√π · 2x / (2x²+1 - 1·2/(2x²+5 - 3·4/(2x²+9 - …)))`, evaluated
/// backwards from a depth that grows as `1/x²`; `erfc(-x) = 2 - erfc(x)`.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 0.75 {
        // erf(x) = 2/√π Σ (-1)^k x^(2k+1) / (k! (2k+1))
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut k = 0.0;
        loop {
            k += 1.0;
            term *= -x2 / k;
            let t = term / (2.0 * k + 1.0);
            sum += t;
            if t.abs() <= 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - 2.0 * FRAC_1_SQRT_PI * sum;
    }
    if x > 27.3 {
        return 0.0; // below the smallest subnormal
    }
    let z = 2.0 * x * x;
    let depth = (130.0 / (x * x)).ceil() as usize + 10;
    let mut f = z + 1.0 + 4.0 * depth as f64;
    for k in (1..=depth).rev() {
        let kf = k as f64;
        f = z + 1.0 + 4.0 * (kf - 1.0) - (2.0 * kf - 1.0) * (2.0 * kf) / f;
    }
    exp_neg_square(x) * FRAC_1_SQRT_PI * 2.0 * x / f
}

// ------------------------------------------------------------------------------------------------
// nbody (nbody.cu, nbody_f32.cu)
// ------------------------------------------------------------------------------------------------

/// The outputs of [`nbody`]: the final state and the `energy` kernel's per-body array.
#[derive(Clone, Debug)]
pub struct NbodyOut<T> {
    pub px: Vec<T>,
    pub py: Vec<T>,
    pub pz: Vec<T>,
    pub vx: Vec<T>,
    pub vy: Vec<T>,
    pub vz: Vec<T>,
    /// `e[i] = 0.5 m_i |v_i|² - 0.5 m_i Σ_{j≠i} m_j / sqrt(|r_ij|² + eps2)`; the spec's
    /// `reduce = "sum"` output is its sum (the total energy).
    pub e: Vec<T>,
}

/// `nbody.toml`: `steps` × (`accelerations`, `integrate`), then `energy`. Inputs are the spec's
/// buffers `px py pz vx vy vz m` (length n each) and its sizes `steps`, `dt`, `eps2`.
#[allow(clippy::too_many_arguments)]
pub fn nbody<T: Real>(
    px: &[T],
    py: &[T],
    pz: &[T],
    vx: &[T],
    vy: &[T],
    vz: &[T],
    m: &[T],
    steps: usize,
    dt: T,
    eps2: T,
) -> NbodyOut<T> {
    let n = px.len();
    for s in [py, pz, vx, vy, vz, m] {
        assert_eq!(s.len(), n, "nbody: all input buffers have length n");
    }
    let (mut px, mut py, mut pz) = (px.to_vec(), py.to_vec(), pz.to_vec());
    let (mut vx, mut vy, mut vz) = (vx.to_vec(), vy.to_vec(), vz.to_vec());
    let (mut ax, mut ay, mut az) = (zeros::<T>(n), zeros::<T>(n), zeros::<T>(n));
    for _ in 0..steps {
        nbody_accelerations(&px, &py, &pz, m, &mut ax, &mut ay, &mut az, eps2);
        nbody_integrate(
            &mut px, &mut py, &mut pz, &mut vx, &mut vy, &mut vz, &ax, &ay, &az, dt,
        );
    }
    let e = nbody_energy(&px, &py, &pz, &vx, &vy, &vz, m, eps2);
    NbodyOut {
        px,
        py,
        pz,
        vx,
        vy,
        vz,
        e,
    }
}

/// The kernel `accelerations` (one thread per body i; j in order 0..n, i included: its term is 0).
#[allow(clippy::too_many_arguments)]
pub fn nbody_accelerations<T: Real>(
    px: &[T],
    py: &[T],
    pz: &[T],
    m: &[T],
    ax: &mut [T],
    ay: &mut [T],
    az: &mut [T],
    eps2: T,
) {
    let n = px.len();
    let one = T::lit(1.0);
    for i in 0..n {
        let (xi, yi, zi) = (px[i], py[i], pz[i]);
        let (mut axi, mut ayi, mut azi) = (T::lit(0.0), T::lit(0.0), T::lit(0.0));
        for j in 0..n {
            // body_body()
            let dx = px[j] - xi;
            let dy = py[j] - yi;
            let dz = pz[j] - zi;
            let r2 = dx * dx + dy * dy + dz * dz + eps2;
            let inv = one / r2.sqrt();
            let s = m[j] * (inv * inv * inv);
            axi = axi + dx * s;
            ayi = ayi + dy * s;
            azi = azi + dz * s;
        }
        ax[i] = axi;
        ay[i] = ayi;
        az[i] = azi;
    }
}

/// The kernel `integrate`: semi-implicit Euler (kick, then drift with the new velocity).
#[allow(clippy::too_many_arguments)]
pub fn nbody_integrate<T: Real>(
    px: &mut [T],
    py: &mut [T],
    pz: &mut [T],
    vx: &mut [T],
    vy: &mut [T],
    vz: &mut [T],
    ax: &[T],
    ay: &[T],
    az: &[T],
    dt: T,
) {
    for i in 0..px.len() {
        let nvx = vx[i] + ax[i] * dt;
        let nvy = vy[i] + ay[i] * dt;
        let nvz = vz[i] + az[i] * dt;
        vx[i] = nvx;
        vy[i] = nvy;
        vz[i] = nvz;
        px[i] = px[i] + nvx * dt;
        py[i] = py[i] + nvy * dt;
        pz[i] = pz[i] + nvz * dt;
    }
}

/// The kernel `energy`: each body's share of the total energy.
#[allow(clippy::too_many_arguments)]
pub fn nbody_energy<T: Real>(
    px: &[T],
    py: &[T],
    pz: &[T],
    vx: &[T],
    vy: &[T],
    vz: &[T],
    m: &[T],
    eps2: T,
) -> Vec<T> {
    let n = px.len();
    let half = T::lit(0.5);
    let mut e = zeros::<T>(n);
    for i in 0..n {
        let (xi, yi, zi, mi) = (px[i], py[i], pz[i], m[i]);
        let mut pot = T::lit(0.0);
        for j in 0..n {
            if j == i {
                continue;
            }
            let dx = px[j] - xi;
            let dy = py[j] - yi;
            let dz = pz[j] - zi;
            let r2 = dx * dx + dy * dy + dz * dz + eps2;
            pot = pot + m[j] / r2.sqrt();
        }
        let v2 = vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i];
        e[i] = half * mi * v2 - half * mi * pot;
    }
    e
}

// ------------------------------------------------------------------------------------------------
// heat2d (heat2d.cu, heat2d_f32.cu)
// ------------------------------------------------------------------------------------------------

/// `heat2d.toml`: `steps` × (`apply_bc_x`, `apply_bc_y`, `heat_step` u → u_new, copy u_new → u),
/// then `apply_bc_x`, `apply_bc_y` once more. `u` is the spec's buffer of `(nx+2)·(ny+2)` cells
/// (row-major, x fastest, one ghost cell on each side); `u_new` starts as zeros as in the spec.
/// `coef` is the `__constant__ c_coef` table (centre, west, east, south, north) and `wall` is
/// `c_wall` (west, east, south, north; a negative value means insulated). Returns the final `u`.
pub fn heat2d<T: Real>(
    u: &[T],
    nx: usize,
    ny: usize,
    steps: usize,
    coef: &[T; 5],
    wall: &[T; 4],
) -> Vec<T> {
    let cells = (nx + 2) * (ny + 2);
    assert_eq!(u.len(), cells, "heat2d: u has (nx + 2) * (ny + 2) cells");
    let mut u = u.to_vec();
    let mut u_new = zeros::<T>(cells);
    for _ in 0..steps {
        heat2d_apply_bc_x(&mut u, nx, ny, wall);
        heat2d_apply_bc_y(&mut u, nx, ny, wall);
        heat2d_step(&u, &mut u_new, nx, ny, coef);
        u.copy_from_slice(&u_new);
    }
    heat2d_apply_bc_x(&mut u, nx, ny, wall);
    heat2d_apply_bc_y(&mut u, nx, ny, wall);
    u
}

fn wall_value<T: Real>(wall: T, inside: T) -> T {
    if wall >= T::lit(0.0) {
        wall
    } else {
        inside
    }
}

/// The kernel `apply_bc_x`: west and east ghost columns of the interior rows.
pub fn heat2d_apply_bc_x<T: Real>(u: &mut [T], nx: usize, ny: usize, wall: &[T; 4]) {
    let w = nx + 2;
    for j in 1..=ny {
        u[j * w] = wall_value(wall[0], u[j * w + 1]);
        u[j * w + nx + 1] = wall_value(wall[1], u[j * w + nx]);
    }
}

/// The kernel `apply_bc_y`: south and north ghost rows, corners included.
pub fn heat2d_apply_bc_y<T: Real>(u: &mut [T], nx: usize, ny: usize, wall: &[T; 4]) {
    let w = nx + 2;
    for i in 0..w {
        u[i] = wall_value(wall[2], u[w + i]);
        u[(ny + 1) * w + i] = wall_value(wall[3], u[ny * w + i]);
    }
}

/// The kernel `heat_step`: the 5-point update of the interior cells.
pub fn heat2d_step<T: Real>(u: &[T], u_new: &mut [T], nx: usize, ny: usize, coef: &[T; 5]) {
    let w = nx + 2;
    for j in 1..=ny {
        for i in 1..=nx {
            let c = j * w + i;
            u_new[c] = coef[0] * u[c]
                + coef[1] * u[c - 1]
                + coef[2] * u[c + 1]
                + coef[3] * u[c - w]
                + coef[4] * u[c + w];
        }
    }
}

/// The sum of the interior cells (what insulated walls conserve).
pub fn heat2d_interior_sum<T: Real>(u: &[T], nx: usize, ny: usize) -> f64 {
    let w = nx + 2;
    let mut s = 0.0;
    for j in 1..=ny {
        for i in 1..=nx {
            s += u[j * w + i].to_f64();
        }
    }
    s
}

// ------------------------------------------------------------------------------------------------
// options (options.cu, options_f32.cu)
// ------------------------------------------------------------------------------------------------

/// `1/√2` as the kernels write it (`INV_SQRT2`), digit for digit.
#[allow(clippy::excessive_precision, clippy::approx_constant)]
const INV_SQRT2: f64 = 0.707_106_781_186_547_524_40;

/// The kernel's `norm_cdf`: `0.5 * erfc(-x * INV_SQRT2)`.
pub fn norm_cdf<T: Real>(x: T) -> T {
    T::lit(0.5) * (-x * T::lit(INV_SQRT2)).erfc()
}

/// `options.toml`: the kernel `black_scholes` (its repetitions give the same result). Inputs are
/// the spec's buffers `spot`, `strike`, `years` and sizes `r`, `sigma`; returns `(call, put)`.
pub fn options<T: Real>(spot: &[T], strike: &[T], years: &[T], r: T, sigma: T) -> (Vec<T>, Vec<T>) {
    let n = spot.len();
    assert!(
        strike.len() == n && years.len() == n,
        "options: all input buffers have length n"
    );
    let mut call = zeros::<T>(n);
    let mut put = zeros::<T>(n);
    for i in 0..n {
        let (c, p) = black_scholes(spot[i], strike[i], years[i], r, sigma);
        call[i] = c;
        put[i] = p;
    }
    (call, put)
}

/// One option, as one thread of `black_scholes` prices it: `(call, put)`.
pub fn black_scholes<T: Real>(s: T, k: T, t: T, r: T, sigma: T) -> (T, T) {
    let sqrt_t = t.sqrt();
    let vol_t = sigma * sqrt_t;
    let d1 = ((s / k).ln() + (r + T::lit(0.5) * sigma * sigma) * t) / vol_t;
    let d2 = d1 - vol_t;
    let discount = k * (-r * t).exp();
    let call = s * norm_cdf(d1) - discount * norm_cdf(d2);
    let put = discount * norm_cdf(-d2) - s * norm_cdf(-d1);
    (call, put)
}

// ------------------------------------------------------------------------------------------------
// gauss (gauss.cu, gauss_f32.cu)
// ------------------------------------------------------------------------------------------------

/// The outputs of [`gauss`]: every buffer of the spec after the run.
#[derive(Clone, Debug)]
pub struct GaussOut<T> {
    /// The upper-triangular factor (row-major n×n; exact zeros below the diagonal).
    pub a: Vec<T>,
    /// The transformed right-hand side.
    pub b: Vec<T>,
    /// The multipliers (strictly lower part; zeros elsewhere, as the spec's zero init).
    pub m: Vec<T>,
    /// The solution from `back_substitute`.
    pub x: Vec<T>,
}

/// `gauss.toml`: `make_dominant`, then `fan1`, `fan2` for t = 0..n-2, then `back_substitute`.
/// Inputs are the spec's buffers `a` (n×n, row-major, as generated: before `make_dominant`) and
/// `b` (n).
pub fn gauss<T: Real>(a: &[T], b: &[T], n: usize) -> GaussOut<T> {
    assert_eq!(a.len(), n * n, "gauss: a has n * n elements");
    assert_eq!(b.len(), n, "gauss: b has n elements");
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    let mut m = zeros::<T>(n * n);
    gauss_make_dominant(&mut a, n);
    for t in 0..n.saturating_sub(1) {
        gauss_fan1(&mut m, &a, n, t);
        gauss_fan2(&m, &mut a, &mut b, n, t);
    }
    let x = gauss_back_substitute(&a, &b, n);
    GaussOut { a, b, m, x }
}

/// The kernel `make_dominant`: `a[i][i] = 1 + Σ_{j≠i} |a[i][j]|`, summed in order j = 0..n.
pub fn gauss_make_dominant<T: Real>(a: &mut [T], n: usize) {
    for i in 0..n {
        let mut s = T::lit(1.0);
        for j in 0..n {
            if j != i {
                s = s + a[i * n + j].abs();
            }
        }
        a[i * n + i] = s;
    }
}

/// The kernel `fan1`: the multipliers of pivot row t.
pub fn gauss_fan1<T: Real>(m: &mut [T], a: &[T], n: usize, t: usize) {
    for i in t + 1..n {
        m[i * n + t] = a[i * n + t] / a[t * n + t];
    }
}

/// The kernel `fan2`: the row updates below pivot row t (column t set to exactly zero).
pub fn gauss_fan2<T: Real>(m: &[T], a: &mut [T], b: &mut [T], n: usize, t: usize) {
    for i in t + 1..n {
        let mult = m[i * n + t];
        a[i * n + t] = T::lit(0.0);
        b[i] = b[i] - mult * b[t];
        for j in t + 1..n {
            a[i * n + j] = a[i * n + j] - mult * a[t * n + j];
        }
    }
}

/// The kernel `back_substitute` (one thread): x from the upper-triangular system.
pub fn gauss_back_substitute<T: Real>(a: &[T], b: &[T], n: usize) -> Vec<T> {
    let mut x = zeros::<T>(n);
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s = s - a[i * n + j] * x[j];
        }
        x[i] = s / a[i * n + i];
    }
    x
}

// ------------------------------------------------------------------------------------------------
// float_literal (float_literal.cu, float_literal_fixed.cu)
// ------------------------------------------------------------------------------------------------

/// `float_literal.toml`: `iterations` launches of `relax`, each `sweeps` sweeps of the update as
/// written, with double literals: `yi = yi + a * (2.0 * xi * xi / sqrt(yi * yi + 1.0) - yi)`.
/// `yi * yi` is an f32 product; everything else is f64 (C++'s usual arithmetic conversions),
/// rounded to f32 once per sweep, when it is assigned to the float `yi`.
pub fn float_literal(x: &[f32], y: &[f32], a: f32, sweeps: usize, iterations: usize) -> Vec<f32> {
    assert_eq!(x.len(), y.len(), "float_literal: x and y have length n");
    let mut y = y.to_vec();
    for (yi, &xi) in y.iter_mut().zip(x) {
        let xd = xi as f64;
        for _ in 0..iterations * sweeps {
            let yd = *yi as f64;
            let target = 2.0 * xd * xd / (((*yi * *yi) as f64) + 1.0).sqrt();
            *yi = (yd + a as f64 * (target - yd)) as f32;
        }
    }
    y
}

/// `float_literal_fixed.toml`: the same iteration all in f32:
/// `yi = yi + a * (2.0f * xi * xi / sqrtf(yi * yi + 1.0f) - yi)`.
pub fn float_literal_fixed(
    x: &[f32],
    y: &[f32],
    a: f32,
    sweeps: usize,
    iterations: usize,
) -> Vec<f32> {
    assert_eq!(
        x.len(),
        y.len(),
        "float_literal_fixed: x and y have length n"
    );
    let mut y = y.to_vec();
    for (yi, &xi) in y.iter_mut().zip(x) {
        for _ in 0..iterations * sweeps {
            *yi = *yi + a * (2.0f32 * xi * xi / (*yi * *yi + 1.0f32).sqrt() - *yi);
        }
    }
    y
}

// ------------------------------------------------------------------------------------------------
// Tests: physical and numerical sanity of the models on small cases
// ------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    /// Uniform numbers in [lo, hi) from a 64-bit LCG (the tests' own inputs).
    struct Lcg(u64);
    impl Lcg {
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((self.0 >> 11) as f64 / 9007199254740992.0)
        }
        fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
            (0..n).map(|_| self.uniform(lo, hi)).collect()
        }
    }

    fn to_f32(v: &[f64]) -> Vec<f32> {
        v.iter().map(|&x| x as f32).collect()
    }

    fn total<T: Real>(v: &[T]) -> f64 {
        v.iter().map(|x| x.to_f64()).sum()
    }

    // -- erfc --------------------------------------------------------------------------------

    #[test]
    fn erfc_known_values() {
        // erfc(x) to 17 digits (from the series definitions, e.g. Abramowitz & Stegun 7.1).
        let cases = [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_034_8e-12),
            (-1.0, 1.842_700_792_949_715),
        ];
        for (x, want) in cases {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 1e-15,
                "erfc({x}) = {got:e}, want {want:e}"
            );
        }
    }

    #[test]
    fn erfc_is_continuous_across_its_branches() {
        for x in [0.75, -0.75, 27.3] {
            let (lo, hi) = (erfc(x - 1e-12), erfc(x + 1e-12));
            assert!(
                lo >= hi && (lo - hi) / hi.max(1e-300) < 1e-10,
                "erfc jumps at {x}"
            );
        }
        assert_eq!(erfc(40.0), 0.0);
        assert_eq!(erfc(-40.0), 2.0);
    }

    // -- nbody -------------------------------------------------------------------------------

    fn nbody_case(n: usize, seed: u64) -> [Vec<f64>; 7] {
        let mut g = Lcg(seed);
        let px = g.vec(n, -1.0, 1.0);
        let py = g.vec(n, -1.0, 1.0);
        let pz = g.vec(n, -1.0, 1.0);
        let vx = g.vec(n, -0.05, 0.05);
        let vy = g.vec(n, -0.05, 0.05);
        let vz = g.vec(n, -0.05, 0.05);
        let m: Vec<f64> = g.vec(n, 0.5, 1.5).iter().map(|x| x / n as f64).collect();
        [px, py, pz, vx, vy, vz, m]
    }

    fn nbody_drift(dt: f64, steps: usize) -> f64 {
        let [px, py, pz, vx, vy, vz, m] = nbody_case(32, 1);
        let e0 = total(&nbody_energy(&px, &py, &pz, &vx, &vy, &vz, &m, 1e-2));
        let out = nbody(&px, &py, &pz, &vx, &vy, &vz, &m, steps, dt, 1e-2);
        ((total(&out.e) - e0) / e0).abs()
    }

    #[test]
    fn nbody_conserves_energy() {
        // Semi-implicit Euler is symplectic: the energy error stays O(dt), without secular drift.
        let drift = nbody_drift(1e-3, 1000);
        assert!(drift < 1e-3, "relative energy drift {drift:e} over t = 1");
        // First order: a ten times smaller step gives a several times smaller error.
        let fine = nbody_drift(1e-4, 10_000);
        eprintln!("nbody: relative energy error at t = 1: dt = 1e-3 {drift:e}, dt = 1e-4 {fine:e}");
        assert!(
            fine < drift / 3.0,
            "dt = 1e-4 drift {fine:e} vs dt = 1e-3 drift {drift:e}"
        );
    }

    #[test]
    fn nbody_conserves_momentum() {
        // Softened pair forces are equal and opposite: total momentum stays put (to rounding).
        let [px, py, pz, vx, vy, vz, m] = nbody_case(24, 2);
        let p0: f64 = (0..24).map(|i| m[i] * vx[i]).sum();
        let out = nbody(&px, &py, &pz, &vx, &vy, &vz, &m, 200, 1e-3, 1e-2);
        let p1: f64 = (0..24).map(|i| m[i] * out.vx[i]).sum();
        assert!((p1 - p0).abs() < 1e-14, "momentum {p0:e} -> {p1:e}");
    }

    #[test]
    fn nbody_two_bodies_attract() {
        let z = [0.0, 0.0];
        // eps2 > 0 as on the GPU: the self term is 0 · (1/eps)³ = 0 (with eps2 = 0 it would be 0 · ∞ = NaN).
        let out = nbody(
            &[-0.5, 0.5],
            &z,
            &z,
            &z,
            &z,
            &z,
            &[1.0, 1.0],
            1,
            0.01,
            1e-20,
        );
        // a = m / r² = 1: after one kick-drift step each body moved dt² = 1e-4 inwards.
        assert!((out.px[0] - (-0.5 + 1e-4)).abs() < 1e-15);
        assert!((out.px[1] - (0.5 - 1e-4)).abs() < 1e-15);
        assert!((out.vx[0] - 0.01).abs() < 1e-15);
    }

    #[test]
    fn nbody_f32_follows_f64() {
        let [px, py, pz, vx, vy, vz, m] = nbody_case(64, 3);
        let d = nbody(&px, &py, &pz, &vx, &vy, &vz, &m, 10, 1e-3, 1e-2);
        let s = nbody(
            &to_f32(&px),
            &to_f32(&py),
            &to_f32(&pz),
            &to_f32(&vx),
            &to_f32(&vy),
            &to_f32(&vz),
            &to_f32(&m),
            10,
            1e-3f32,
            1e-2f32,
        );
        for i in 0..64 {
            assert!((s.px[i] as f64 - d.px[i]).abs() < 1e-5, "body {i}");
        }
        let (ed, es) = (total(&d.e), total(&s.e));
        assert!(
            ((es - ed) / ed).abs() < 1e-4,
            "energy f32 {es:e} vs f64 {ed:e}"
        );
    }

    // -- heat2d ------------------------------------------------------------------------------

    const COEF: [f64; 5] = [1.0 - 2.0 * 0.15 - 2.0 * 0.10, 0.15, 0.15, 0.10, 0.10];

    #[test]
    fn heat2d_insulated_conserves_heat() {
        let (nx, ny) = (16, 12);
        let u0 = Lcg(4).vec((nx + 2) * (ny + 2), 0.0, 1.0);
        let s0 = heat2d_interior_sum(&u0, nx, ny);
        let u = heat2d(&u0, nx, ny, 300, &COEF, &[-1.0; 4]);
        let s1 = heat2d_interior_sum(&u, nx, ny);
        // Exact in real arithmetic with weights summing to 1; here COEF[0] is 1 ulp below 0.5.
        assert!(((s1 - s0) / s0).abs() < 1e-12, "sum {s0} -> {s1}");
        // ... and the field flattens towards its mean.
        let mean = s0 / (nx * ny) as f64;
        let w = nx + 2;
        for j in 1..=ny {
            for i in 1..=nx {
                assert!(
                    (u[j * w + i] - mean).abs() < 0.1,
                    "cell ({i}, {j}) = {}",
                    u[j * w + i]
                );
            }
        }
    }

    #[test]
    fn heat2d_cold_walls_drain_heat() {
        let (nx, ny) = (16, 12);
        let u0 = Lcg(5).vec((nx + 2) * (ny + 2), 0.0, 1.0);
        let mut prev = heat2d_interior_sum(&u0, nx, ny);
        let mut ratio = 0.0;
        let mut u = u0.clone();
        for _ in 0..30 {
            u = heat2d(&u, nx, ny, 10, &COEF, &[0.0; 4]);
            let s = heat2d_interior_sum(&u, nx, ny);
            assert!(s < prev, "the sum must decrease: {prev} -> {s}");
            // Maximum principle: values stay within [0, 1].
            assert!(u.iter().all(|&v| (0.0..=1.0).contains(&v)));
            ratio = s / prev;
            prev = s;
        }
        // Once the higher modes have died out the sum decays like the slowest mode, by
        // 1 - 4 rx sin²(π / 2(nx+1)) - 4 ry sin²(π / 2(ny+1)) per step (the ghost cells sit on
        // the walls, so the interior spans nx + 1 cell widths).
        let pi = std::f64::consts::PI;
        let lambda = 1.0
            - 4.0 * 0.15 * (pi / (2.0 * (nx + 1) as f64)).sin().powi(2)
            - 4.0 * 0.10 * (pi / (2.0 * (ny + 1) as f64)).sin().powi(2);
        let want = lambda.powi(10);
        assert!(
            (ratio - want).abs() < 1e-3 * want,
            "decay per 10 steps {ratio} vs {want}"
        );
    }

    #[test]
    fn heat2d_hot_wall_approaches_linear_profile() {
        // West at 1, east at 0, south/north insulated: the steady state is linear in x,
        // u = (nx + 1 - i) / (nx + 1) with the ghost cells as the wall positions.
        let (nx, ny) = (8, 4);
        let u = heat2d(
            &vec![0.0; (nx + 2) * (ny + 2)],
            nx,
            ny,
            4000,
            &COEF,
            &[1.0, 0.0, -1.0, -1.0],
        );
        let w = nx + 2;
        for j in 1..=ny {
            for i in 1..=nx {
                let want = (nx + 1 - i) as f64 / (nx + 1) as f64;
                assert!(
                    (u[j * w + i] - want).abs() < 1e-9,
                    "({i}, {j}) {} vs {want}",
                    u[j * w + i]
                );
            }
        }
    }

    #[test]
    fn heat2d_f32_follows_f64() {
        let (nx, ny) = (20, 20);
        let u0 = Lcg(6).vec((nx + 2) * (ny + 2), 0.0, 1.0);
        let wall = [1.0, 0.0, -1.0, -1.0];
        let d = heat2d(&u0, nx, ny, 100, &COEF, &wall);
        let coef32 = [0.5f32, 0.15, 0.15, 0.1, 0.1];
        let s = heat2d(
            &to_f32(&u0),
            nx,
            ny,
            100,
            &coef32,
            &[1.0f32, 0.0, -1.0, -1.0],
        );
        for k in 0..d.len() {
            assert!(
                (s[k] as f64 - d[k]).abs() < 1e-5,
                "cell {k}: {} vs {}",
                s[k],
                d[k]
            );
        }
    }

    // -- options -----------------------------------------------------------------------------

    #[test]
    fn options_textbook_value() {
        // Hull, Options, Futures and Other Derivatives: S = K = 100, r = 5%, σ = 20%, T = 1.
        let (c, p) = black_scholes(100.0, 100.0, 1.0, 0.05, 0.2);
        assert!((c - 10.450_583_572_185_565).abs() < 1e-12, "call {c}");
        assert!((p - 5.573_526_022_256_971).abs() < 1e-12, "put {p}");
        assert!((c - 10.4506).abs() < 1e-4);
    }

    #[test]
    fn options_put_call_parity() {
        let mut g = Lcg(7);
        let n = 2000;
        let spot: Vec<f64> = g
            .vec(n, (10.0f64).ln(), (1000.0f64).ln())
            .iter()
            .map(|x| x.exp())
            .collect();
        let strike = g.vec(n, 50.0, 150.0);
        let years = g.vec(n, 0.1, 5.0);
        let (r, sigma) = (0.02, 0.30);
        let (call, put) = options(&spot, &strike, &years, r, sigma);
        for i in 0..n {
            let lhs = call[i] - put[i];
            let rhs = spot[i] - strike[i] * (-r * years[i]).exp();
            // C - P = S - K e^{-rT}: the two sides are differences of numbers up to ~S.
            assert!(
                (lhs - rhs).abs() <= 1e-12 * spot[i].max(strike[i]),
                "option {i}: {lhs} vs {rhs}"
            );
            assert!(call[i] >= -1e-12 * spot[i] && put[i] >= -1e-12 * strike[i]);
            // Arbitrage bounds: max(S - K e^{-rT}, 0) <= C <= S.
            assert!(call[i] <= spot[i] * (1.0 + 1e-15) && call[i] >= rhs - 1e-12 * spot[i]);
        }
    }

    #[test]
    fn options_f32_follows_f64() {
        let (c, p) = black_scholes(100.0f32, 100.0, 1.0, 0.05, 0.2);
        assert!((c as f64 - 10.450_583_572_185_565).abs() < 1e-4, "call {c}");
        assert!((p as f64 - 5.573_526_022_256_971).abs() < 1e-4, "put {p}");
    }

    // -- gauss -------------------------------------------------------------------------------

    fn gauss_case(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut g = Lcg(seed);
        (g.vec(n * n, -1.0, 1.0), g.vec(n, -1.0, 1.0))
    }

    fn residual<T: Real>(a: &[T], b: &[T], x: &[T], n: usize) -> f64 {
        let mut worst: f64 = 0.0;
        for i in 0..n {
            let mut r = b[i].to_f64();
            for j in 0..n {
                r -= a[i * n + j].to_f64() * x[j].to_f64();
            }
            worst = worst.max(r.abs());
        }
        worst
    }

    #[test]
    fn gauss_solves_dominant_system() {
        let n = 64;
        let (a0, b0) = gauss_case(n, 8);
        let out = gauss(&a0, &b0, n);
        let mut a_dom = a0.clone();
        gauss_make_dominant(&mut a_dom, n);
        let r = residual(&a_dom, &b0, &out.x, n);
        assert!(r < 1e-13, "residual {r:e}");
        // The factor is upper triangular with exact zeros below the diagonal; L U = A.
        for i in 0..n {
            for j in 0..i {
                assert_eq!(out.a[i * n + j], 0.0);
            }
        }
        for i in 0..n {
            for j in 0..n {
                let mut lu = out.a[i * n + j];
                for k in 0..i.min(j + 1) {
                    lu += out.m[i * n + k] * out.a[k * n + j];
                }
                assert!((lu - a_dom[i * n + j]).abs() < 1e-12, "(LU - A)[{i}][{j}]");
            }
        }
    }

    #[test]
    fn gauss_f32_solves_dominant_system() {
        let n = 64;
        let (a0, b0) = gauss_case(n, 9);
        let (a32, b32) = (to_f32(&a0), to_f32(&b0));
        let out = gauss(&a32, &b32, n);
        let mut a_dom = a32.clone();
        gauss_make_dominant(&mut a_dom, n);
        let r = residual(&a_dom, &b32, &out.x, n);
        assert!(r < 1e-5, "residual {r:e}");
    }

    // -- float_literal -----------------------------------------------------------------------

    #[test]
    fn float_literal_double_evaluation_is_more_accurate() {
        let mut g = Lcg(10);
        let n = 4096;
        let x = to_f32(&g.vec(n, -1.0, 1.0));
        let y = to_f32(&g.vec(n, 0.0, 1.0));
        let (a, sweeps, iters) = (0.75f32, 16, 2);
        let acc = float_literal(&x, &y, a, sweeps, iters);
        let fix = float_literal_fixed(&x, &y, a, sweeps, iters);
        // An f64 reference, y kept in f64 throughout.
        let mut yr: Vec<f64> = y.iter().map(|&v| v as f64).collect();
        for (yi, &xi) in yr.iter_mut().zip(&x) {
            let xd = xi as f64;
            for _ in 0..sweeps * iters {
                *yi = *yi + a as f64 * (2.0 * xd * xd / (*yi * *yi + 1.0).sqrt() - *yi);
            }
        }
        let (mut e_acc, mut e_fix, mut differ) = (0.0f64, 0.0f64, 0);
        for i in 0..n {
            // y -> 2x²/sqrt(y²+1) is near zero for small |x|: absolute errors there.
            let scale = yr[i].abs().max(1e-2);
            e_acc = e_acc.max((acc[i] as f64 - yr[i]).abs() / scale);
            e_fix = e_fix.max((fix[i] as f64 - yr[i]).abs() / scale);
            assert!(
                ((acc[i] - fix[i]) as f64).abs() <= 1e-5 * scale,
                "element {i}"
            );
            differ += (acc[i] != fix[i]) as usize;
        }
        eprintln!("float_literal: max error double-evaluated {e_acc:e}, all-f32 {e_fix:e}, {differ} of {n} differ");
        // Both are f32 results; the accidental double evaluation rounds once per sweep.
        assert!(e_acc < 2e-7, "double-evaluated: max rel error {e_acc:e}");
        assert!(e_fix < 2e-6, "all-f32: max rel error {e_fix:e}");
        assert!(e_acc < e_fix, "{e_acc:e} vs {e_fix:e}");
        assert!(
            differ > n / 20,
            "the two versions differ in {differ} of {n} elements"
        );
    }
}
