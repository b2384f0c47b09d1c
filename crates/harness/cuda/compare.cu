// compare.cu: an output compared with its baseline or reference on the GPU
// (crates/harness/src/device_compare.rs), compiled by NVRTC with --fmad=false after mantissa.cuh,
// crates/study/cuda/exact_sum.cu (the exact sum's limbs) and compare.cuh (one element).
//
// One summary of MC_WORDS u64 words per comparison; every word is reduced with integer atomics,
// so the result does not depend on the order in which threads finish:
//   counts (differing, non-finite mismatches, counted in the mean, undecided): atomicAdd;
//   the first non-finite mismatch and the worst element (digits << 40 | index): atomicMin;
//   max abs, rel, ulps: atomicMax on the bits, which order like the values for doubles >= +0;
//   the sum of the relative errors: exactly, in EXACT_LIMBS limbs (exact_sum.cu), so the host's
//   mean (the exact sum rounded once, over n) is the one compare.rs computes.
// Undecided elements append (index, value, reference) to `undecided`, up to `capacity` of them;
// the count keeps counting past it, and the host falls back to comparing on the CPU then.

#define MC_W_DIFFERING 0
#define MC_W_NONFINITE 1
#define MC_W_FIRST_NONFINITE 2
#define MC_W_MAX_ABS 3
#define MC_W_MAX_REL 4
#define MC_W_MAX_ULPS 5
#define MC_W_WORST 6
#define MC_W_COUNTED 7
#define MC_W_UNDECIDED 8
#define MC_W_EXACT_FLAGS 9
#define MC_W_LIMBS 16
#define MC_WORDS (MC_W_LIMBS + EXACT_LIMBS)
#define MC_BLOCK 256

// Every summary to its starting value: zero, and all ones for the two minima.
extern "C" __global__ void mc_reset(mc_u64* summaries, unsigned count) {
    const mc_u64 words = (mc_u64)count * MC_WORDS;
    for (mc_u64 i = (mc_u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (mc_u64)gridDim.x * blockDim.x) {
        const unsigned w = (unsigned)(i % MC_WORDS);
        summaries[i] = (w == MC_W_FIRST_NONFINITE || w == MC_W_WORST) ? ~0ull : 0ull;
    }
}

__device__ __forceinline__ mc_u64 mc_warp_sum(mc_u64 x) {
    for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(0xffffffffu, x, off);
    return x;
}
__device__ __forceinline__ mc_u64 mc_warp_min(mc_u64 x) {
    for (int off = 16; off > 0; off >>= 1) {
        const mc_u64 y = __shfl_down_sync(0xffffffffu, x, off);
        x = y < x ? y : x;
    }
    return x;
}
__device__ __forceinline__ mc_u64 mc_warp_max(mc_u64 x) {
    for (int off = 16; off > 0; off >>= 1) {
        const mc_u64 y = __shfl_down_sync(0xffffffffu, x, off);
        x = y > x ? y : x;
    }
    return x;
}

// The warp's expansions folded into lane 0's, exactly as exact_sum.cu folds them (push keeps
// every rounding error; what overflows the expansion goes to the shared limbs `sl`). Inlined,
// so the expansion stays in registers.
__device__ __forceinline__ void mc_warp_fold(exact::Expansion& ex, mc_u64* sl) {
    const unsigned lane = threadIdx.x & 31u;
    for (unsigned off = 16; off > 0; off >>= 1) {
        const double b0 = __shfl_down_sync(0xffffffffu, ex.a0, off);
        const double b1 = __shfl_down_sync(0xffffffffu, ex.a1, off);
        const double b2 = __shfl_down_sync(0xffffffffu, ex.a2, off);
        if (lane < off) {
            exact::push(ex, b0, sl);
            exact::push(ex, b1, sl);
            exact::push(ex, b2, sl);
        }
    }
}

// Element k of the comparison is values[voff + k*vstride] against refs[roff + k*rstride]; its
// summary is words slot*MC_WORDS.. of `summaries` (reset by mc_reset), its undecided elements go
// to triples slot*capacity.. of `undecided_all`. Launch with MC_BLOCK threads per block, any
// number of blocks.
extern "C" __global__ void __launch_bounds__(MC_BLOCK) mc_compare(
    const void* values, int vtype, mc_u64 voff, mc_u64 vstride,
    const void* refs, int rtype, mc_u64 roff, mc_u64 rstride,
    mc_u64 n, int p, int emin, const double* tab,
    mc_u64* summaries, double* undecided_all, unsigned slot, mc_u64 capacity) {
    // This comparison's summary and undecided list: slot `slot` of the arrays.
    mc_u64* summary = summaries + (mc_u64)slot * MC_WORDS;
    double* undecided = undecided_all + (mc_u64)slot * 3 * capacity;
    __shared__ mc_u64 sl[EXACT_LIMBS];
    __shared__ mc_u64 sw[MC_W_LIMBS];
    __shared__ unsigned sflags;
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) sl[i] = 0;
    if (threadIdx.x < MC_W_LIMBS) sw[threadIdx.x] = (threadIdx.x == MC_W_FIRST_NONFINITE || threadIdx.x == MC_W_WORST) ? ~0ull : 0ull;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();

    mc_u64 differing = 0, nonfinite = 0, first_nonfinite = ~0ull, worst = ~0ull, counted = 0;
    mc_u64 max_abs = 0, max_rel = 0, max_ulps = 0; // bits of doubles >= +0
    exact::Expansion ex{0.0, 0.0, 0.0, 0u};
    const mc_u64 stride = (mc_u64)gridDim.x * blockDim.x;
    for (mc_u64 k = (mc_u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const double v = mc_load(values, vtype, voff + k * vstride);
        const double r = mc_load(refs, rtype, roff + k * rstride);
        // Digits matter only below this thread's fewest so far (later indices lose ties).
        const mc_u64 have = worst >> 40;
        const McPair o = mc_pair(v, r, p, emin, tab, have < MC_DIGITS_INF ? (int)have : MC_DIGITS_INF);
        differing += (mc_u64)o.differing;
        if (o.kind == MC_SAME) {
            counted += (mc_u64)o.counted;
        } else if (o.kind == MC_NONFINITE) {
            nonfinite += 1;
            if (k < first_nonfinite) first_nonfinite = k;
            if (k < worst) worst = k; // digits 0
            max_rel = 0x7ff0000000000000ull;
            max_ulps = 0x7ff0000000000000ull;
        } else if (o.kind == MC_FINITE) {
            const mc_u64 a = mc_bits(o.abs), rl = mc_bits(o.rel), u = mc_bits(o.ulps);
            if (a > max_abs) max_abs = a;
            if (rl > max_rel) max_rel = rl;
            if (u > max_ulps) max_ulps = u;
            if (o.digits != MC_DIGITS_INF) {
                const mc_u64 key = ((mc_u64)o.digits << 40) | k;
                if (key < worst) worst = key;
            }
            if (o.counted) {
                counted += 1;
                exact::push(ex, o.rel, sl);
            }
        } else {
            const mc_u64 slot = atomicAdd(summary + MC_W_UNDECIDED, 1ull);
            if (slot < capacity) {
                undecided[3 * slot] = (double)k;
                undecided[3 * slot + 1] = v;
                undecided[3 * slot + 2] = r;
            }
        }
    }

    const unsigned lane = threadIdx.x & 31u;
    mc_warp_fold(ex, sl);
    differing = mc_warp_sum(differing);
    nonfinite = mc_warp_sum(nonfinite);
    counted = mc_warp_sum(counted);
    first_nonfinite = mc_warp_min(first_nonfinite);
    worst = mc_warp_min(worst);
    max_abs = mc_warp_max(max_abs);
    max_rel = mc_warp_max(max_rel);
    max_ulps = mc_warp_max(max_ulps);
    // Flags of rare terms (an infinite relative error) are per thread: OR them all.
    unsigned flags = ex.flags;
    for (int off = 16; off > 0; off >>= 1) flags |= __shfl_down_sync(0xffffffffu, flags, off);
    if (lane == 0) {
        exact::deposit(sl, ex.a0);
        exact::deposit(sl, ex.a1);
        exact::deposit(sl, ex.a2);
        if (flags) atomicOr(&sflags, flags);
        if (differing) atomicAdd(sw + MC_W_DIFFERING, differing);
        if (nonfinite) atomicAdd(sw + MC_W_NONFINITE, nonfinite);
        if (counted) atomicAdd(sw + MC_W_COUNTED, counted);
        atomicMin(sw + MC_W_FIRST_NONFINITE, first_nonfinite);
        atomicMin(sw + MC_W_WORST, worst);
        atomicMax(sw + MC_W_MAX_ABS, max_abs);
        atomicMax(sw + MC_W_MAX_REL, max_rel);
        atomicMax(sw + MC_W_MAX_ULPS, max_ulps);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (sw[MC_W_DIFFERING]) atomicAdd(summary + MC_W_DIFFERING, sw[MC_W_DIFFERING]);
        if (sw[MC_W_NONFINITE]) atomicAdd(summary + MC_W_NONFINITE, sw[MC_W_NONFINITE]);
        if (sw[MC_W_COUNTED]) atomicAdd(summary + MC_W_COUNTED, sw[MC_W_COUNTED]);
        atomicMin(summary + MC_W_FIRST_NONFINITE, sw[MC_W_FIRST_NONFINITE]);
        atomicMin(summary + MC_W_WORST, sw[MC_W_WORST]);
        atomicMax(summary + MC_W_MAX_ABS, sw[MC_W_MAX_ABS]);
        atomicMax(summary + MC_W_MAX_REL, sw[MC_W_MAX_REL]);
        atomicMax(summary + MC_W_MAX_ULPS, sw[MC_W_MAX_ULPS]);
        if (sflags) atomicOr(summary + MC_W_EXACT_FLAGS, (mc_u64)sflags);
    }
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) {
        const mc_u64 l = sl[i];
        if (l) atomicAdd(summary + MC_W_LIMBS + i, l);
    }
}

// ---- Reduced outputs (device_compare/reduce.rs): one value per output, as compare.rs `reduce`
// computes it on the host, with only MR_WORDS words coming back.
//   sum, mean: the exact sum in limbs (exact_sum.cu), rounded once on the host;
//   norm2: the exact sum of x*x = p + e (TwoProduct by FMA), exact while x*x neither overflows nor
//     underflows, else MR_HOST asks the host to reduce instead;
//   min, max: atomicMin/Max on order-preserving keys of the bits (-0 orders below +0).
// Words: [0] flags (exact_sum.cu's, MR_HOST), [1] smallest key, [2] largest key, [3..] limbs.
#define MR_SUM 0
#define MR_MINMAX 1
#define MR_NORM2 2
#define MR_HOST 0x100u
#define MR_WORDS (3 + EXACT_LIMBS)

extern "C" __global__ void mc_reduce_reset(mc_u64* out) {
    for (unsigned i = threadIdx.x; i < MR_WORDS; i += blockDim.x) out[i] = i == 1 ? ~0ull : 0ull;
}

__device__ __forceinline__ mc_u64 mr_key(double x) {
    const mc_u64 b = mc_bits(x);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

extern "C" __global__ void __launch_bounds__(MC_BLOCK) mc_reduce(
    const void* values, int vtype, mc_u64 voff, mc_u64 vstride, mc_u64 n, int op, mc_u64* out) {
    __shared__ mc_u64 sl[EXACT_LIMBS];
    __shared__ unsigned sflags;
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) sl[i] = 0;
    if (threadIdx.x == 0) sflags = 0;
    __syncthreads();
    exact::Expansion ex{-0.0, -0.0, -0.0, 0u};
    mc_u64 lo = ~0ull, hi = 0;
    const mc_u64 stride = (mc_u64)gridDim.x * blockDim.x;
    for (mc_u64 k = (mc_u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const double x = mc_load(values, vtype, voff + k * vstride);
        if (op == MR_SUM) {
            exact::push(ex, x, sl);
        } else if (op == MR_NORM2) {
            const double a = fabs(x);
            if (a != a) {
                ex.flags |= EXACT_NAN;
            } else if (a != 0.0 && (a < 0x1p-480 || a > 0x1p511)) {
                ex.flags |= MR_HOST;
            } else {
                const double p = __dmul_rn(x, x);
                exact::push(ex, p, sl);
                exact::push(ex, fma(x, x, -p), sl);
            }
        } else if (x != x) {
            ex.flags |= EXACT_NAN;
        } else {
            const mc_u64 key = mr_key(x);
            lo = key < lo ? key : lo;
            hi = key > hi ? key : hi;
        }
    }
    const unsigned lane = threadIdx.x & 31u;
    mc_warp_fold(ex, sl);
    lo = mc_warp_min(lo);
    hi = mc_warp_max(hi);
    unsigned flags = ex.flags;
    for (int off = 16; off > 0; off >>= 1) flags |= __shfl_down_sync(0xffffffffu, flags, off);
    if (lane == 0) {
        // a0 is still -0.0 only if every element the warp summed was -0.0.
        if (mc_bits(ex.a0) != 0x8000000000000000ull) flags |= EXACT_NOT_ALL_NEG_ZERO;
        exact::deposit(sl, ex.a0);
        exact::deposit(sl, ex.a1);
        exact::deposit(sl, ex.a2);
        if (flags) atomicOr(&sflags, flags);
        if (op == MR_MINMAX) {
            atomicMin(out + 1, lo);
            atomicMax(out + 2, hi);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && sflags) atomicOr(out, (mc_u64)sflags);
    for (unsigned i = threadIdx.x; i < EXACT_LIMBS; i += blockDim.x) {
        const mc_u64 l = sl[i];
        if (l) atomicAdd(out + 3 + i, l);
    }
}
