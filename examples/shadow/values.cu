// values.cu: known-answer kernels for `mantissa shadow --analysis shadow` (higher-precision
// shadow values). Each has an exact answer the CPU computes independently, so the error the
// shadows measure per output element can be checked (crates/shadow/tests/gpu_values.rs).
//
//     mantissa shadow examples/shadow/values.toml --analysis shadow
//
// - make_zero_sum (setup): x holds n/2 values v_k = m_k 2^e_k of wildly different magnitudes
//   (e_k in [-40, 40]) and their negatives, scrambled (element j at (7 j) mod n): the exact sum
//   is 0, built from integers only, so every x is exact.
// - serial_sum: one thread adds x in order; the exact sum is 0, so the result IS the error.
// - square_fma / square_mul_add: a a + b with a = 1 + k 2^-30, b = -(1 + k 2^-29), exact
//   a a + b = k^2 2^-60: the FMA gets it exactly, the rounded product then the sum loses it.
// - one_plus_x: (1 + x) - 1 for tiny x: the subtraction is exact, the addition loses x's digits.
// - dot: one thread, s = fma(a_k, b_k, s) in order (the exact value from an exact dot product).
// Everything is spelt with _rn intrinsics, so no flag set changes what it computes.

extern "C" __global__ void make_zero_sum(int n, double* x)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n / 2) return;
    unsigned int m = (unsigned int)k * 2654435761u % 1000003u + 1u;
    int e = (int)((unsigned int)k * 7919u % 81u) - 40;
    double scale = __longlong_as_double((long long)(e + 1023) << 52);
    double v = __dmul_rn((double)m, scale);
    x[(7 * (2 * k)) % n] = v;
    x[(7 * (2 * k + 1)) % n] = -v;
}

extern "C" __global__ void serial_sum(int n, const double* x, double* s)
{
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    double acc = 0.0;
    for (int k = 0; k < n; ++k) {
        acc = __dadd_rn(acc, x[k]);
    }
    s[0] = acc;
}

extern "C" __global__ void square_fma(int n, const double* a, const double* b, double* y)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    y[k] = __fma_rn(a[k], a[k], b[k]);
}

extern "C" __global__ void square_mul_add(int n, const double* a, const double* b, double* y)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    y[k] = __dadd_rn(__dmul_rn(a[k], a[k]), b[k]);
}

extern "C" __global__ void one_plus_x(int n, const double* x, double* y)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    y[k] = __dsub_rn(__dadd_rn(1.0, x[k]), 1.0);
}

extern "C" __global__ void dot(int n, const double* a, const double* b, double* d)
{
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    double s = 0.0;
    for (int k = 0; k < n; ++k) {
        s = __fma_rn(a[k], b[k], s);
    }
    d[0] = s;
}
