// relax.cu — the example of `mantissa tune`: one kernel, two independent pieces of f64 work
// whose answer is known, so the tuner's choice can be checked.
//
//     mantissa tune examples/tune/relax.toml --digits 3,6 --speedup 10,50 --baseline
//
// Element i (x[i] uniform in [0.5, 1)):
// - `smooth`: `steps` iterations of a contracting map (its derivative is 0.5 − 0.025·x, so an
//   error made in one step shrinks by half in the next): run in f32 it stays within a few f32
//   ulps of the f64 result, about 6–7 correct digits. It is nearly all of the work
//   (compute-bound), so demoting it buys nearly all of the ideal speed-up.
// - `fragile`: (x + 1e8) − 1e8 cancels. In f64 it gives x back to 8 digits; in f32 both operands
//   round to 1e8 and the result is 0: no digit is right. Demoting it buys nothing measurable.
//
// So at 3 or 6 digits the best configuration demotes exactly the loop's arithmetic (lines
// marked LINE:loop), and any configuration demoting the LINE:cancel line misses every
// threshold. The GPU test (crates/tune/tests/gpu_tune.rs) checks the tuner against an
// exhaustive search of every FISet subset.

extern "C" __global__ void relax(int n, int steps, const double* x, double* smooth, double* fragile)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double xi = x[i];
    double a = xi;
    for (int k = 0; k < steps; ++k) {
        a = 0.5 * a + 0.25 * xi * (1.0 - 0.1 * a);     // LINE:loop
    }
    smooth[i] = a;
    double big = xi + 1.0e8;                            // LINE:cancel
    fragile[i] = (big - 1.0e8) * 3.0;                   // LINE:cancel-use
}
