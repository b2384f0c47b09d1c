// shadow.cu — the example of `mantissa shadow`: one kernel with a cancellation, a NaN that
// starts on a known line and spreads to the next, and a kernel with nothing to report.
//
//     mantissa shadow examples/shadow/shadow.toml
//
// `seeded`, element i (x[i] uniform in [0.5, 1), z[i] = i):
// - `big = xi + 1.0e8` keeps xi's digits in double; its f32 form loses them (an f32 near 1e8 is
//   a multiple of 8), a small relative error (about 1e-8).
// - `d = big - 1.0e8` cancels: in double it gives xi back to 8 digits; in f32 both operands
//   are 1e8 and the result is 0, so the demotion error of this line is exactly 1 in every
//   thread: the largest of the program.
// - `q = z[i] / z[i]` is 1, except for i = 0 where it is 0/0: a NaN starts here (a division by
//   zero from operands that are not NaN).
// - `w[i] = q * 0.5` receives that NaN: it propagates here, it does not start here.
// `clean` squares and adds on [0.5, 1): no NaN, no infinity, no subnormal.
//
// The GPU test (crates/shadow/tests/gpu_shadow.rs) finds the lines by the LINE markers below.

extern "C" __global__ void seeded(int n, const double* x, const double* z, double* y, double* w)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double xi = x[i];
    double big = xi + 1.0e8;                 // LINE:absorb
    double d = big - 1.0e8;                  // LINE:cancel
    double q = z[i] / z[i];                  // LINE:nan-origin
    y[i] = d;
    w[i] = q * 0.5;                          // LINE:nan-propagated
}

extern "C" __global__ void clean(int n, const double* x, double* v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double xi = x[i];
    v[i] = xi * xi + 1.0;                    // LINE:clean
}
