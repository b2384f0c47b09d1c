// shared.cu: a known-answer kernel that stages values through shared memory, for
// `mantissa shadow --analysis shadow` (crates/shadow/tests/gpu_values.rs).
//
//     mantissa shadow examples/shadow/shared.toml --analysis shadow
//
// block_sum: each thread computes t = (1 + x) - 1 (exact subtraction, the addition loses x's
// low digits; the shadow keeps x) into shared memory, then the block sums its 128 values by a
// tree through shared memory; thread 0 writes the block's sum. The shadow of each sum is the
// exact sum of the block's x within the double-word bound, so the measured error of s[b] is
// exact_sum(x of block b) - s[b]: only if the shadows follow the values through shared memory.
// Everything is spelt with _rn intrinsics, so no flag set changes what it computes.

#define BLOCK 128

extern "C" __global__ void block_sum(int n, const double* x, double* s)
{
    __shared__ double tile[BLOCK];
    int t = threadIdx.x;
    int k = blockIdx.x * BLOCK + t;
    tile[t] = k < n ? __dsub_rn(__dadd_rn(1.0, x[k]), 1.0) : 0.0;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (t < stride) {
            tile[t] = __dadd_rn(tile[t], tile[t + stride]);
        }
        __syncthreads();
    }
    if (t == 0) {
        s[blockIdx.x] = tile[0];
    }
}
