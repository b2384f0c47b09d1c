// Scoring f32 results against a double reference. Always compiled with default flags, whatever
// variant produced the results: the reference must not be touched by -use_fast_math.
//
// The generated prelude before this text defines:
//   ARITY              1 or 2
//   REF_K              the bound on the reference's error, in f64 ulps of the reference
//                      (2 x CUDA's documented f64 error + 2)
//   reference_value(x, y)  the CUDA double call, e.g. sin(x), x / y
//   LGAMMA_REFLECTION  1 for lgamma (see reference below), else 0
//   BIN_SHIFT          an input's bin is its bit pattern >> BIN_SHIFT
//   BLOCK, ITEMS       threads per block and inputs per thread of a sweep tile (the host
//                      sizes its launches with the same constants)
//
// The per-input logic (ulp32, near_boundary, classify) is mirrored bit for bit on the host in
// src/gpu/host.rs, where it is unit-tested against exact arithmetic.

typedef unsigned long long u64;
typedef unsigned int u32;

// 2^k as a double, for k in [-1074, 1023], built from its bits (exact, and cheaper than ldexp).
__device__ __forceinline__ double pow2(int k)
{
    if (k >= -1022) return __longlong_as_double((long long)(k + 1023) << 52);
    return __longlong_as_double(1ll << (k + 1074));
}

// The binary exponent e of a finite nonzero double, |a| in [2^e, 2^(e+1)), subnormals included.
__device__ __forceinline__ int exponent_of(double a)
{
    u64 bits = (u64)__double_as_longlong(a) & 0x7fffffffffffffffull;
    int biased = (int)(bits >> 52);
    if (biased == 0) return -1074 + 63 - __clzll((long long)bits);
    return biased - 1023;
}

// The ulp of a real |a| in binary32 as crate::format defines it: exponent clamped below at
// -126 (fixed subnormal spacing 2^-149), unbounded above (so values past FLT_MAX have one).
__device__ __forceinline__ double ulp32(double a)
{
    int e = (a == 0.0) ? -126 : exponent_of(a);
    return pow2((e < -126 ? -126 : e) - 23);
}

// 1 / ulp32(a), exactly (a power of two in range): errors are scaled by it, a multiplication
// being exact here where a double division would be a long instruction sequence.
__device__ __forceinline__ double inverse_ulp32(double a)
{
    int e = (a == 0.0) ? -126 : exponent_of(a);
    return pow2(23 - (e < -126 ? -126 : e));
}

// The same in binary64 (exponent clamped at -1022, spacing 2^-1074 below).
__device__ __forceinline__ double ulp64(double a)
{
    int e = (a == 0.0) ? -1022 : exponent_of(a);
    return pow2((e < -1022 ? -1022 : e) - 52);
}

// A reference value and a bound on its absolute error.
struct Ref {
    double value;
    double bound;
};

__device__ Ref reference(double x, double y)
{
    Ref r;
#if LGAMMA_REFLECTION
    // CUDA documents its f64 lgamma as worse between about -23.0001 and -2.2637 (it computes
    // near the negative zeros by cancellation). There, use the reflection formula
    //   Gamma(x) Gamma(-x) = -pi / (x sin(pi x))  =>  lgamma(x) = log(pi / |x sinpi(x)|) - lgamma(-x),
    // whose terms are all well conditioned (-x is in (2.2, 23.5), where lgamma is accurate).
    // The bound is absolute and proportional to the terms: near a zero of lgamma they cancel,
    // the bound then exceeds the result's f32 spacing and those inputs come out hard.
    // At the poles (x a negative integer) sinpi is 0 and the value is +inf, as lgamma's is.
    if (x > -23.5 && x < -2.2) {
        double l1 = log(3.141592653589793 / fabs(x * sinpi(x)));
        double l2 = lgamma(-x);
        r.value = l1 - l2;
        // Each term within a few 2^-52 of its magnitude (log, lgamma, sinpi, the product and
        // quotient); 2^-48 leaves a factor of several over their sum.
        r.bound = pow2(-48) * (fabs(l1) + fabs(l2) + 1.0) + ulp64(r.value);
        return r;
    }
#endif
    r.value = reference_value(x, y);
    r.bound = fmax(REF_K * ulp64(r.value), pow2(-1072));
    return r;
}

// Whether a rounding boundary of binary32 lies within b of a >= 0: then the reference cannot
// decide the correctly rounded f32, and the input is handed to the CPU's exact reference.
// Boundaries are midpoints of consecutive f32 values (exact in double: 25 bits), and the
// overflow threshold FLT_MAX + ulp/2 = 2^128 - 2^103, the midpoint with "2^128". Zero is not a
// boundary: -0 and +0 compare equal. The midpoint inside [lo, hi] and the outer two are all
// checked, since next to a power of two the outer one on the narrow side can be nearer.
__device__ __forceinline__ double widen(float f)
{
    return isinf(f) ? pow2(128) : (double)f;
}
__device__ __forceinline__ double midpoint(float p, float q)
{
    return (widen(p) + widen(q)) * 0.5;
}
__device__ bool near_boundary(double a, double b)
{
    float lo = __double2float_rd(a);  // largest f32 <= a (FLT_MAX past it)
    float hi = __double2float_ru(a);  // smallest f32 >= a (+inf past FLT_MAX)
    double d = __longlong_as_double(0x7ff0000000000000ll);
    if (lo != hi) d = fabs(a - midpoint(lo, hi));
    if (lo > 0.0f) d = fmin(d, fabs(a - midpoint(__uint_as_float(__float_as_uint(lo) - 1), lo)));
    if (!isinf(hi)) d = fmin(d, fabs(a - midpoint(hi, __uint_as_float(__float_as_uint(hi) + 1))));
    return d <= b;
}

// The power of two P (>= 2^-125, where the f32 spacing changes across it) within b of a > 0,
// or 0. Near one the reference cannot say which side the exact value is on, so neither its ulp
// (which halves below P) nor so an error estimate for a result other than P.
__device__ double power_of_two_near(double a, double b)
{
    if (a == 0.0) return 0.0;
    double lo = pow2(exponent_of(a));  // lo <= a < 2 lo
    double p = (a - lo <= b) ? lo : ((2.0 * lo - a <= b) ? 2.0 * lo : 0.0);
    return p >= pow2(-125) ? p : 0.0;
}

// One input's verdict.
struct Outcome {
    double ulps;    // error in ulps of the reference (f32 spacing); +inf for special mismatches
    bool hard;      // the reference cannot decide the rounding, or the error's ulp
    bool wrong;     // decided here: the result is not the correctly rounded one
    bool infinite;  // a NaN/inf/finite mismatch
};

__device__ Outcome classify(float y, Ref ref)
{
    double r = ref.value;
    double inf = __longlong_as_double(0x7ff0000000000000ll);
    Outcome o = {0.0, false, false, false};
    if (isnan(r) || isnan(y)) {
        if (!(isnan(r) && isnan(y))) {
            o.ulps = inf;
            o.infinite = true;
            o.wrong = true;
        }
        return o;
    }
    if (isinf(r)) {
        if ((double)y != r) {
            o.ulps = inf;
            o.infinite = true;
            o.wrong = true;
        }
        return o;
    }
    float rounded = __double2float_rn(r);
    o.hard = near_boundary(fabs(r), ref.bound);
    if (isinf(y)) {
        // An infinite result is right only as the rounding of a value past the overflow
        // threshold (the correct IEEE overflow); against a finite rounding it is infinitely wrong.
        o.wrong = !o.hard && y != rounded;
        if (y != rounded) {
            o.ulps = inf;
            o.infinite = true;
        }
        return o;
    }
    // Next to a power of two the exact value's binade is undecided: a result other than that
    // power has an error known only to a factor of 2, so the CPU decides it (rare: a wrong
    // result right next to a power of two).
    double p = power_of_two_near(fabs(r), ref.bound);
    if (p != 0.0 && fabs((double)y) != p) o.hard = true;
    o.wrong = !o.hard && y != rounded;  // -0 == +0
    // Finite result: finite error even when r is past FLT_MAX (the ulp is unbounded above).
    // The scaling by a power of two is exact (no underflow: |y - r| is 0 or at least an ulp of
    // r's double); only the subtraction rounds.
    o.ulps = fabs((double)y - r) * inverse_ulp32(r);
    return o;
}

// The 32-bit key of an error, ordered as the errors are: positive floats order like their bits.
// Rounded up so a larger error never gets a smaller key; finite errors past FLT_MAX saturate
// below the key of an infinite error. The host re-scores each bin's argmax for the exact value.
__device__ __forceinline__ u32 error_key(double ulps)
{
    if (isinf(ulps)) return 0x7f800000u;
    float f = __double2float_ru(ulps);
    return isinf(f) ? 0x7f7fffffu : __float_as_uint(f);
}

// ---- Explicit inputs: one verdict per input (the bivariate search; re-scoring argmaxes).

extern "C" __global__ void score_list(const float* xs, const float* ys, const float* results, u64 n,
                                      double* ulps, double* refs, u32* flags)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
#if ARITY == 2
        Ref ref = reference((double)xs[i], (double)ys[i]);
#else
        Ref ref = reference((double)xs[i], 0.0);
#endif
        Outcome o = classify(results[i], ref);
        ulps[i] = o.ulps;
        refs[i] = ref.value;
        flags[i] = (o.hard ? 1u : 0u) | (o.wrong ? 2u : 0u) | (o.infinite ? 4u : 0u);
    }
}

// ---- Sweep of a bit-pattern range, reduced into bins.
//
// Tiles of TILE consecutive bit patterns, aligned to multiples of TILE: TILE divides the bin
// size, so a tile lies in one bin. Each block takes a contiguous run of tiles_per_block tiles,
// accumulates per thread while the bin stays the same, and flushes (block reduction, then one
// thread's atomics) when the bin changes and at the end: a handful of atomics per block rather
// than per input. Within a tile, consecutive threads read consecutive results (coalesced).

#if ARITY == 1
#define TILE ((u64)BLOCK * ITEMS)

struct Acc {
    u64 key;     // max of (error_key << 32 | input bits)
    double sum;  // sum of finite errors
    u32 finite, infinite, wrong, hard;
};

__device__ __forceinline__ void acc_merge(Acc& a, const Acc& b)
{
    a.key = a.key > b.key ? a.key : b.key;
    a.sum += b.sum;
    a.finite += b.finite;
    a.infinite += b.infinite;
    a.wrong += b.wrong;
    a.hard += b.hard;
}

// Reduces every thread's accumulator into bin `bin` (called by the whole block) and resets it.
__device__ void flush(Acc& a, u32 bin, u64* bin_key, double* bin_sum, u64* bin_counts)
{
    __shared__ Acc warps[BLOCK / 32];
    for (int off = 16; off > 0; off >>= 1) {
        Acc o;
        o.key = __shfl_down_sync(0xffffffffu, a.key, off);
        o.sum = __shfl_down_sync(0xffffffffu, a.sum, off);
        o.finite = __shfl_down_sync(0xffffffffu, a.finite, off);
        o.infinite = __shfl_down_sync(0xffffffffu, a.infinite, off);
        o.wrong = __shfl_down_sync(0xffffffffu, a.wrong, off);
        o.hard = __shfl_down_sync(0xffffffffu, a.hard, off);
        acc_merge(a, o);
    }
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x / 32] = a;
    __syncthreads();
    if (threadIdx.x == 0) {
        Acc t = warps[0];
        for (int w = 1; w < BLOCK / 32; ++w) acc_merge(t, warps[w]);
        if (t.finite + t.infinite > 0) {
            atomicMax(&bin_key[bin], t.key);
            if (t.sum != 0.0) atomicAdd(&bin_sum[bin], t.sum);
            u64* c = bin_counts + 4 * (u64)bin;
            if (t.finite) atomicAdd(&c[0], (u64)t.finite);
            if (t.infinite) atomicAdd(&c[1], (u64)t.infinite);
            if (t.wrong) atomicAdd(&c[2], (u64)t.wrong);
            if (t.hard) atomicAdd(&c[3], (u64)t.hard);
        }
    }
    // The shared slots are reused by the next flush.
    __syncthreads();
    a.key = 0;
    a.sum = 0.0;
    a.finite = a.infinite = a.wrong = a.hard = 0;
}

// Scores the results of bit patterns [start, start + n) (results[i] is pattern start + i).
// bin_counts holds four counters per bin: finite, infinite, wrong, hard. Hard inputs are also
// appended to `hard` through the counter hard_count (their total), the first hard_cap kept.
extern "C" __global__ void __launch_bounds__(BLOCK) score_range(
    u64 start, u64 n, const float* __restrict__ results, u64 tiles_per_block,
    u64* bin_key, double* bin_sum, u64* bin_counts, u32* hard, u64* hard_count, u64 hard_cap)
{
    u64 end = start + n;
    u64 first = start / TILE + (u64)blockIdx.x * tiles_per_block;
    u64 last = (end + TILE - 1) / TILE;
    u64 stop = first + tiles_per_block < last ? first + tiles_per_block : last;
    // Uniform across the block, as are the bins of the tiles: every thread reaches the flushes.
    if (first >= stop) return;
    Acc acc = {0, 0.0, 0, 0, 0, 0};
    u32 bin = (u32)((first * TILE) >> BIN_SHIFT);
    for (u64 t = first; t < stop; ++t) {
        u32 tile_bin = (u32)((t * TILE) >> BIN_SHIFT);
        if (tile_bin != bin) {
            flush(acc, bin, bin_key, bin_sum, bin_counts);
            bin = tile_bin;
        }
        for (int k = 0; k < ITEMS; ++k) {
            u64 i = t * TILE + (u64)k * BLOCK + threadIdx.x;
            if (i < start || i >= end) continue;
            u32 bits = (u32)i;
            Ref ref = reference((double)__uint_as_float(bits), 0.0);
            Outcome o = classify(results[i - start], ref);
            if (o.infinite) {
                acc.infinite++;
            } else {
                acc.finite++;
                acc.sum += o.ulps;
            }
            if (o.wrong) acc.wrong++;
            if (o.hard) {
                acc.hard++;
                u64 pos = atomicAdd(hard_count, 1ull);
                if (pos < hard_cap) hard[pos] = bits;
            }
            u64 key = ((u64)error_key(o.ulps) << 32) | bits;
            acc.key = key > acc.key ? key : acc.key;
        }
    }
    flush(acc, bin, bin_key, bin_sum, bin_counts);
}
#endif
