// The function under test, and nothing else: this module is the only one compiled with the
// variant's flags (`-use_fast_math` for the fast variant), so those flags change the call being
// measured and never the reference, which lives in score.cu under default flags.
//
// The generated prelude before this text defines:
//   T                  float or double, the format under test
//   SWEEP              1 when the function is a univariate f32 one (eval_range exists)
//   under_test(x, y)   the CUDA call, e.g. sinf(x), __fdividef(x, y), x / y

typedef unsigned long long u64;

#if SWEEP
// Every f32 whose bit pattern is in [start, start + n): out[i] = f(pattern start + i).
// A grid-stride loop so that a grid sized to the device covers a chunk of any length, and
// costly inputs (large sinf arguments) spread over all blocks rather than a few.
extern "C" __global__ void eval_range(u64 start, u64 n, float* out)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = __uint_as_float((unsigned int)(start + i));
        out[i] = under_test(x, 0.0f);
    }
}
#endif

// Explicit inputs: out[i] = f(xs[i], ys[i]) (ys unread by univariate functions).
extern "C" __global__ void eval_list(const T* xs, const T* ys, T* out, u64 n)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = under_test(xs[i], ys[i]);
    }
}
