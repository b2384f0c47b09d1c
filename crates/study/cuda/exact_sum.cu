// exact_sum.cu: the exact sum of f64 values on the GPU (crates/study/src/gpu_reduce.rs
// `GpuReducer::exact_sum`), compiled by NVRTC after mantissa.cuh (for TwoSum).
//
// The exact value lives in EXACT_LIMBS signed 64-bit limbs, limb k holding an integer multiple of
// 2^(32k - 1074) (R. M. Neal's small superaccumulator, arXiv:1505.05571, with 32-bit digits).
// A finite double is m * 2^(e - 1075) with m < 2^53 (m * 2^-1074 for subnormals), i.e. m shifted
// left by p = max(e, 1) - 1 bits in units of 2^-1074; its digits land in limbs p/32 .. p/32 + 2
// (p <= 2045, so at most limb 65), each addition adding less than 2^32 in magnitude to a limb.
// Limbs are never normalised: the i64 sums of all additions ever made to a limb (in shared memory,
// then in global memory) stay exact while fewer than 2^31 additions reach it, which the host
// guarantees by refusing more than 2^30 elements (each element, and each of a thread's three
// expansion words at the end, adds at most once to a limb).
//
// Per thread, the hot path is an expansion a0 + a1 + a2 updated by TwoSum (ExBLAS's idea):
// a0 takes the element, a1 the rounding error of that, a2 the error of that; the third error, if
// not zero, is deposited into the block's shared limbs. On data of moderate dynamic range the
// second error is already zero (a1 holds the low bits exactly), so the limbs are almost never
// touched and the kernel costs a plain sum's memory traffic plus about 14 flops per element.
// TwoSum is exact unless a sum overflows: elements of magnitude 2^960 and above (exponent field
// >= 1983), infinities and NaNs take the rare path instead (deposited directly, or flagged), so
// |a0| < 2^960 * 2^30 can never overflow.
//
// Flags (OR-ed per block, then globally): NaN seen, +inf seen, -inf seen, and "some element was
// not -0.0" (decides the sign of an exact zero, as IEEE addition and ExactSum do). The host
// reads the limbs and flags and rounds the exact value once (gpu_reduce.rs `round_limbs`).

#define EXACT_LIMBS 67
#define EXACT_NAN 1u
#define EXACT_POS_INF 2u
#define EXACT_NEG_INF 4u
#define EXACT_NOT_ALL_NEG_ZERO 8u
// Exponent field from which an element skips the expansion: 2^(1983 - 1023) = 2^960.
#define EXACT_BIG_EXP 1983u

namespace exact {

typedef unsigned long long u64;

// Adds the finite double y to the limbs (shared memory, atomics: threads share them).
__device__ __forceinline__ void deposit(u64* limbs, double y) {
    const u64 b = (u64)__double_as_longlong(y);
    unsigned e = (unsigned)(b >> 52) & 0x7ffu;
    u64 m = b & 0xfffffffffffffull;
    if (e != 0) m |= 1ull << 52;
    else e = 1;
    if (m == 0) return; // ±0
    const unsigned p = e - 1, k = p >> 5, s = p & 31u;
    const u64 lo = m << s;
    u64 d0 = lo & 0xffffffffull, d1 = lo >> 32, d2 = s ? m >> (64 - s) : 0;
    if (b >> 63) { // two's complement: the limbs' i64 sums stay exact
        d0 = 0 - d0;
        d1 = 0 - d1;
        d2 = 0 - d2;
    }
    if (d0) atomicAdd(limbs + k, d0);
    if (d1) atomicAdd(limbs + k + 1, d1);
    if (d2) atomicAdd(limbs + k + 2, d2);
}

struct Expansion {
    double a0, a1, a2;
    unsigned flags;
};

// Elements of 2^960 and above, infinities and NaNs (never on the hot path of real data): returns
// the flags they raise. Not inlined, to keep the hot loop small; it takes no reference to the
// expansion, which would move it out of registers.
__device__ __noinline__ unsigned rare(double v, unsigned e, u64* limbs) {
    const u64 b = (u64)__double_as_longlong(v);
    if (e == 0x7ffu) {
        if (b & 0xfffffffffffffull) return EXACT_NAN;
        return (b >> 63) ? EXACT_NEG_INF : EXACT_POS_INF;
    }
    deposit(limbs, v);
    return EXACT_NOT_ALL_NEG_ZERO;
}

__device__ __forceinline__ void push(Expansion& x, double v, u64* limbs) {
    const unsigned e = ((unsigned)__double2hiint(v) >> 20) & 0x7ffu;
    if (e >= EXACT_BIG_EXP) {
        x.flags |= rare(v, e, limbs);
        return;
    }
    double s, r;
    mantissa::two_sum(x.a0, v, s, r);
    x.a0 = s;
    if (r != 0.0) {
        mantissa::two_sum(x.a1, r, s, r);
        x.a1 = s;
        if (r != 0.0) {
            mantissa::two_sum(x.a2, r, s, r);
            x.a2 = s;
            if (r != 0.0) deposit(limbs, r);
        }
    }
}

} // namespace exact

// Zeroes the global limbs and flags: part of every timed exact sum (launch with >= 67 threads).
extern "C" __global__ void exact_zero(unsigned long long* limbs, unsigned* flags) {
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) limbs[i] = 0;
    if (threadIdx.x == 0) flags[0] = 0;
}

// Adds x[0..n) into limbs (EXACT_LIMBS i64 as u64) and flags. Any grid and block shape.
extern "C" __global__ void __launch_bounds__(1024) exact_sum(const double* x, unsigned long long n, unsigned long long* limbs, unsigned* flags) {
    using exact::u64;
    __shared__ u64 sl[EXACT_LIMBS];
    __shared__ unsigned sflags;
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) sl[i] = 0;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();

    // -0.0 starts: a0 stays -0.0 exactly when every element it took was -0.0 (an RN sum is -0
    // only for -0 + -0), which decides the sign of an exact zero.
    exact::Expansion ex{-0.0, -0.0, -0.0, 0u};
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 nv = n >> 1;
    const double2* x2 = reinterpret_cast<const double2*>(x);
    u64 v = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; v + 3 * threads < nv; v += 4 * threads) {
        const double2 q0 = __ldg(x2 + v), q1 = __ldg(x2 + v + threads);
        const double2 q2 = __ldg(x2 + v + 2 * threads), q3 = __ldg(x2 + v + 3 * threads);
        exact::push(ex, q0.x, sl);
        exact::push(ex, q0.y, sl);
        exact::push(ex, q1.x, sl);
        exact::push(ex, q1.y, sl);
        exact::push(ex, q2.x, sl);
        exact::push(ex, q2.y, sl);
        exact::push(ex, q3.x, sl);
        exact::push(ex, q3.y, sl);
    }
    for (; v < nv; v += threads) {
        const double2 q = __ldg(x2 + v);
        exact::push(ex, q.x, sl);
        exact::push(ex, q.y, sl);
    }
    if ((n & 1) && v == nv) exact::push(ex, x[n - 1], sl);

    // Fold the warp's expansions into its first lane's, exactly (push keeps every rounding error),
    // so that one lane per warp, not every thread, deposits into the shared limbs: their three
    // words have about the same exponents in every thread, and 9 atomics per thread on the same
    // few limbs serialised (H200, 2^27 doubles: 528×256 took 0.284 ms, 264×1024 0.426 ms).
    const unsigned lane = threadIdx.x & 31u, warp_base = threadIdx.x & ~31u;
    const unsigned lanes = min(32u, blockDim.x - warp_base);
    const unsigned mask = lanes == 32u ? 0xffffffffu : (1u << lanes) - 1u;
    for (unsigned off = 16; off > 0; off >>= 1) {
        const double b0 = __shfl_down_sync(mask, ex.a0, off);
        const double b1 = __shfl_down_sync(mask, ex.a1, off);
        const double b2 = __shfl_down_sync(mask, ex.a2, off);
        if (lane < off && lane + off < lanes) {
            exact::push(ex, b0, sl);
            exact::push(ex, b1, sl);
            exact::push(ex, b2, sl);
        }
    }
    if (lane == 0) {
        // a0 is still -0.0 only if every element of the warp was -0.0.
        if ((u64)__double_as_longlong(ex.a0) != 0x8000000000000000ull) ex.flags |= EXACT_NOT_ALL_NEG_ZERO;
        exact::deposit(sl, ex.a0);
        exact::deposit(sl, ex.a1);
        exact::deposit(sl, ex.a2);
    }
    if (ex.flags) atomicOr(&sflags, ex.flags);
    __syncthreads();
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) {
        const u64 l = sl[i];
        if (l) atomicAdd(limbs + i, l);
    }
    if (threadIdx.x == 0 && sflags) atomicOr(flags, sflags);
}
