// reduce.cu: the study's GPU reductions (crates/study/src/gpu_reduce.rs), compiled by NVRTC after
// mantissa.cuh (mantissa_gpu::twin::HEADER) and followed by one MANTISSA_REDUCE_KERNELS line per
// precision, which instantiates the extern "C" kernels for that type.
//
// BIT-IDENTITY WITH THE CPU MODELS (gpu_reduce.rs `sum_model` and friends)
// Every f32/f64 operation is an explicit round-to-nearest intrinsic (__fadd_rn, __fmaf_rn,
// __ddiv_rn, ...), which no flag set contracts or approximates; the pair types call the twin's
// functions, which are bit-identical to crates/num. `Ops<T>` maps the Real trait's operations
// (Add, Mul, Div, mul_add, from_i64, from_f64) onto those, so the kernels run exactly what the
// Rust models run, in the same order:
// - thread t of T = grid*block threads takes the 2-element vectors v = t, t + T, t + 2T, ...
//   (elements 2v and 2v + 1, in that order; an odd n's last element is the tail of vector n/2)
//   and accumulates them serially from zero; loads are issued 4 vectors ahead, additions keep
//   this order;
// - a block then folds its threads' values in shared memory: with P the block size rounded up
//   to a power of two, for s = P/2, P/4, ..., 1: value[i] = value[i] + value[i + s] for every
//   i < s with i + s < block;
// - a second launch (one block, see gpu_reduce.rs `combine_shape`) reduces the block values the
//   same way; with one block in the first launch there is no second.
//
// THE EXACT SUM (exact_sum kernel): per thread an expansion of three doubles updated by TwoSum,
// whose final residual goes (rarely) into a block-local superaccumulator in shared memory; see
// the comments there.

namespace reduce {

typedef unsigned long long u64;

// ---- The Real operations of each precision ---------------------------------------------------

template <typename T> struct Ops;

template <> struct Ops<float> {
    static __device__ __forceinline__ float zero() { return 0.0f; }
    static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
    static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
    // Real::mul_add: one rounding.
    static __device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
    // Rust `n as f32`: one rounding of the integer.
    static __device__ __forceinline__ float from_i64(long long n) { return __ll2float_rn(n); }
    static __device__ __forceinline__ float add_f64(float acc, double x) {
        return __fadd_rn(acc, __double2float_rn(x));
    }
};

template <> struct Ops<double> {
    static __device__ __forceinline__ double zero() { return 0.0; }
    static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
    static __device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
    static __device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
    static __device__ __forceinline__ double from_i64(long long n) { return __ll2double_rn(n); }
    static __device__ __forceinline__ double add_f64(double acc, double x) { return __dadd_rn(acc, x); }
};

// Double-word: Add is AccurateDWPlusDW (dw.rs `add`), mul_add is mul then add (dw.rs Real impl).
// from_i64 is dw.rs `from_i64`: hi = F(f64(n)), then from_sum(hi, F(f64(n - hi))); `n - hi` is
// computed in 64-bit integers, exact for |n| < 2^62 (the kernels pass indices far below).
#define MANTISSA_REDUCE_DW_OPS(T, F, TO_F)                                                       \
    template <> struct Ops<mantissa::T> {                                                        \
        typedef mantissa::T V;                                                                   \
        static __device__ __forceinline__ V zero() { return mantissa::T##_from_base(F(0)); }     \
        static __device__ __forceinline__ V add(V a, V b) { return mantissa::T##_add(a, b); }    \
        static __device__ __forceinline__ V mul(V a, V b) { return mantissa::T##_mul(a, b); }    \
        static __device__ __forceinline__ V div(V a, V b) { return mantissa::T##_div(a, b); }    \
        static __device__ __forceinline__ V fma(V a, V b, V c) { return add(mul(a, b), c); }     \
        static __device__ __forceinline__ V from_i64(long long n) {                              \
            F hi = TO_F(__ll2double_rn(n));                                                      \
            long long rest = n - (long long)hi;                                                  \
            return mantissa::T##_from_sum(hi, TO_F(__ll2double_rn(rest)));                       \
        }                                                                                        \
        /* dw.rs from_f64: hi = F(x); lo = F(x - hi) unless hi is not finite. */                 \
        static __device__ __forceinline__ V from_f64(double x) {                                 \
            F hi = TO_F(x);                                                                      \
            V r;                                                                                 \
            r.hi = hi;                                                                           \
            r.lo = mantissa::is_finite(hi) ? TO_F(__dsub_rn(x, (double)hi)) : F(0);              \
            return r;                                                                            \
        }                                                                                        \
        static __device__ __forceinline__ V add_f64(V acc, double x);                            \
    };

__device__ __forceinline__ float to_float(double x) { return __double2float_rn(x); }
__device__ __forceinline__ double to_double(double x) { return x; }

MANTISSA_REDUCE_DW_OPS(f32x2, float, to_float)
MANTISSA_REDUCE_DW_OPS(f64x2, double, to_double)
#undef MANTISSA_REDUCE_DW_OPS

// DeviceWords::add_f64: acc + from_f64(x) in general, DWPlusFP for f64x2.
__device__ __forceinline__ mantissa::f32x2 Ops<mantissa::f32x2>::add_f64(mantissa::f32x2 acc, double x) {
    return add(acc, from_f64(x));
}
__device__ __forceinline__ mantissa::f64x2 Ops<mantissa::f64x2>::add_f64(mantissa::f64x2 acc, double x) {
    return mantissa::f64x2_add_base(acc, x);
}

// Composite: Table 4 operations (comp.rs), mul_add = mul then add. from_i64 is comp.rs
// `comp_from_i64`: value = n rounded to p bits, error = the rest rounded to p bits (both exactly
// what one integer-to-float conversion gives); from_f64 is comp.rs `from_f64`.
#define MANTISSA_REDUCE_COMP_OPS(T, F, TO_F, LL_TO_F, MAKE)                                      \
    template <> struct Ops<mantissa::T> {                                                        \
        typedef mantissa::T V;                                                                   \
        static __device__ __forceinline__ V zero() { return MAKE(F(0), F(0)); }                  \
        static __device__ __forceinline__ V add(V a, V b) { return mantissa::T##_add(a, b); }    \
        static __device__ __forceinline__ V mul(V a, V b) { return mantissa::T##_mul(a, b); }    \
        static __device__ __forceinline__ V div(V a, V b) { return mantissa::T##_div(a, b); }    \
        static __device__ __forceinline__ V fma(V a, V b, V c) { return add(mul(a, b), c); }     \
        static __device__ __forceinline__ V from_i64(long long n) {                              \
            F v = LL_TO_F(n);                                                                    \
            return MAKE(v, LL_TO_F(n - (long long)v));                                           \
        }                                                                                        \
        static __device__ __forceinline__ V from_f64(double x) {                                 \
            F v = TO_F(x);                                                                       \
            return MAKE(v, mantissa::is_finite(v) ? TO_F(__dsub_rn(x, (double)v)) : F(0));       \
        }                                                                                        \
        static __device__ __forceinline__ V add_f64(V acc, double x) { return add(acc, from_f64(x)); } \
    };

__device__ __forceinline__ float ll_to_float(long long n) { return __ll2float_rn(n); }
__device__ __forceinline__ double ll_to_double(long long n) { return __ll2double_rn(n); }

MANTISSA_REDUCE_COMP_OPS(comp32, float, to_float, ll_to_float, mantissa::comp_make)
MANTISSA_REDUCE_COMP_OPS(comp64, double, to_double, ll_to_double, mantissa::comp_make)
MANTISSA_REDUCE_COMP_OPS(comp32n, float, to_float, ll_to_float, mantissa::compn_make)
MANTISSA_REDUCE_COMP_OPS(comp64n, double, to_double, ll_to_double, mantissa::compn_make)
#undef MANTISSA_REDUCE_COMP_OPS

// ---- Loads -------------------------------------------------------------------------------------

// Vector v of 2 values (elements 2v, 2v + 1) in 8- or 16-byte loads (cudaMalloc'd buffers are
// 256-byte aligned, so every vector is aligned to its size).
template <typename T> __device__ __forceinline__ void load2(const T* p, u64 v, T& a, T& b) {
    if constexpr (sizeof(T) == 16) {
        const double2* q = reinterpret_cast<const double2*>(p) + 2 * v;
        double2 x = __ldg(q), y = __ldg(q + 1);
        a = *reinterpret_cast<const T*>(&x);
        b = *reinterpret_cast<const T*>(&y);
    } else if constexpr (sizeof(T) == 8) {
        float4 x = __ldg(reinterpret_cast<const float4*>(p) + v);
        float2 lo = make_float2(x.x, x.y), hi = make_float2(x.z, x.w);
        a = *reinterpret_cast<const T*>(&lo);
        b = *reinterpret_cast<const T*>(&hi);
    } else {
        float2 x = __ldg(reinterpret_cast<const float2*>(p) + v);
        a = *reinterpret_cast<const T*>(&x.x);
        b = *reinterpret_cast<const T*>(&x.y);
    }
}

template <> __device__ __forceinline__ void load2<double>(const double* p, u64 v, double& a, double& b) {
    double2 x = __ldg(reinterpret_cast<const double2*>(p) + v);
    a = x.x;
    b = x.y;
}

// ---- Sources of terms: what one element adds to the accumulator ------------------------------

template <typename T> struct SumOf {
    typedef T Item;
    const T* x;
    __device__ __forceinline__ void load(u64 v, Item& a, Item& b) const { load2(x, v, a, b); }
    __device__ __forceinline__ Item at(u64 i) const { return x[i]; }
    static __device__ __forceinline__ T step(T acc, Item a) { return Ops<T>::add(acc, a); }
};

template <typename T> struct SumOfF64 {
    typedef double Item;
    const double* x;
    __device__ __forceinline__ void load(u64 v, Item& a, Item& b) const {
        double2 q = __ldg(reinterpret_cast<const double2*>(x) + v);
        a = q.x;
        b = q.y;
    }
    __device__ __forceinline__ Item at(u64 i) const { return x[i]; }
    static __device__ __forceinline__ T step(T acc, Item a) { return Ops<T>::add_f64(acc, a); }
};

template <typename T> struct Pair {
    T a, b;
};

template <typename T, bool FUSED> struct DotOf {
    typedef Pair<T> Item;
    const T* a;
    const T* b;
    __device__ __forceinline__ void load(u64 v, Item& p, Item& q) const {
        load2(a, v, p.a, q.a);
        load2(b, v, p.b, q.b);
    }
    __device__ __forceinline__ Item at(u64 i) const { return Item{a[i], b[i]}; }
    static __device__ __forceinline__ T step(T acc, Item p) {
        // Real::mul_add(a, b, acc) when fused; `acc + a * b` otherwise.
        return FUSED ? Ops<T>::fma(p.a, p.b, acc) : Ops<T>::add(acc, Ops<T>::mul(p.a, p.b));
    }
};

// ---- The two levels of every reduction ---------------------------------------------------------

// Folds the block's values (one per thread) into partials[blockIdx.x], in the fixed tree order
// described at the top. Dynamic shared memory: blockDim.x values of T.
template <typename T> __device__ __forceinline__ void block_fold(T acc, T* partials) {
    extern __shared__ double2 smem[]; // double2: 16-byte alignment for every T
    T* sh = reinterpret_cast<T*>(smem);
    const unsigned tid = threadIdx.x, nb = blockDim.x;
    sh[tid] = acc;
    __syncthreads();
    unsigned p = 1;
    while (p < nb) p <<= 1;
    for (unsigned s = p >> 1; s > 0; s >>= 1) {
        if (tid < s && tid + s < nb) sh[tid] = Ops<T>::add(sh[tid], sh[tid + s]);
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = sh[0];
}

// The thread's serial accumulation over its 2-element vectors (order at the top of the file).
template <typename T, typename Src> __device__ __forceinline__ T thread_pass(const Src& src, u64 n) {
    typedef typename Src::Item Item;
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 nv = n >> 1;
    u64 v = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    T acc = Ops<T>::zero();
    // Four vectors in flight per thread: the loads are independent, the additions stay in order.
    for (; v + 3 * threads < nv; v += 4 * threads) {
        Item a0, b0, a1, b1, a2, b2, a3, b3;
        src.load(v, a0, b0);
        src.load(v + threads, a1, b1);
        src.load(v + 2 * threads, a2, b2);
        src.load(v + 3 * threads, a3, b3);
        acc = Src::step(acc, a0);
        acc = Src::step(acc, b0);
        acc = Src::step(acc, a1);
        acc = Src::step(acc, b1);
        acc = Src::step(acc, a2);
        acc = Src::step(acc, b2);
        acc = Src::step(acc, a3);
        acc = Src::step(acc, b3);
    }
    for (; v < nv; v += threads) {
        Item a, b;
        src.load(v, a, b);
        acc = Src::step(acc, a);
        acc = Src::step(acc, b);
    }
    // The odd element is vector nv's only one; its owner is the thread whose walk stopped at nv.
    if ((n & 1) && v == nv) acc = Src::step(acc, src.at(n - 1));
    return acc;
}

template <typename T, typename Src> __device__ __forceinline__ void reduce_stage(const Src& src, u64 n, T* partials) {
    block_fold<T>(thread_pass<T>(src, n), partials);
}

// Midpoint rule terms 4 / (1 + x_i^2), x_i = (i + 1/2) h, with c = {h, 1/2, 4, 1} in T.
template <typename T> __device__ __forceinline__ void pi_midpoint_stage(u64 n, const T* c, T* partials) {
    typedef Ops<T> O;
    const T h = c[0], half = c[1], four = c[2], one = c[3];
    const u64 threads = (u64)gridDim.x * blockDim.x;
    T acc = O::zero();
#pragma unroll 4
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += threads) {
        T x = O::mul(O::add(O::from_i64((long long)i), half), h);
        acc = O::add(acc, O::div(four, O::add(one, O::mul(x, x))));
    }
    block_fold<T>(acc, partials);
}

// Leibniz series on one thread: 4 * sum_k (+-1) / (2k + 1), with c = {1, -1, 4} in T.
template <typename T> __device__ __forceinline__ void pi_leibniz_serial(u64 terms, const T* c, T* out) {
    typedef Ops<T> O;
    const T one = c[0], minus_one = c[1], four = c[2];
    T acc = O::zero();
    for (u64 k = 0; k < terms; ++k)
        acc = O::add(acc, O::div((k & 1) ? minus_one : one, O::from_i64((long long)(2 * k + 1))));
    out[0] = O::mul(four, acc);
}

} // namespace reduce

// The extern "C" kernels of one precision P (its CUDA type TY, buffers of words W). Every value
// buffer holds values of TY as consecutive words (the layout of DeviceWords). The reductions
// are bounded to 1024-thread blocks so that every shape of the study (up to 1×1024) launches:
// without the bound, f64x2's dot and midpoint kernels use 68-80 registers and allow only
// 768-896 threads per block.
#define MANTISSA_REDUCE_KERNELS(P, TY, W)                                                        \
    extern "C" __global__ void __launch_bounds__(1024) sum_##P(const W* x, unsigned long long n, W* partials) {          \
        reduce::SumOf<TY> src{reinterpret_cast<const TY*>(x)};                                   \
        reduce::reduce_stage<TY>(src, n, reinterpret_cast<TY*>(partials));                       \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) sum_f64_in_##P(const double* x, unsigned long long n, W* partials) { \
        reduce::SumOfF64<TY> src{x};                                                             \
        reduce::reduce_stage<TY>(src, n, reinterpret_cast<TY*>(partials));                       \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) dot_##P(const W* a, const W* b, unsigned long long n, W* partials) { \
        reduce::DotOf<TY, false> src{reinterpret_cast<const TY*>(a), reinterpret_cast<const TY*>(b)}; \
        reduce::reduce_stage<TY>(src, n, reinterpret_cast<TY*>(partials));                       \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) dot_fused_##P(const W* a, const W* b, unsigned long long n, W* partials) { \
        reduce::DotOf<TY, true> src{reinterpret_cast<const TY*>(a), reinterpret_cast<const TY*>(b)}; \
        reduce::reduce_stage<TY>(src, n, reinterpret_cast<TY*>(partials));                       \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) pi_midpoint_##P(unsigned long long n, const W* c, W* partials) {  \
        reduce::pi_midpoint_stage<TY>(n, reinterpret_cast<const TY*>(c), reinterpret_cast<TY*>(partials)); \
    }                                                                                            \
    /* out = c[0] * out: the midpoint rule's final h * sum, in T. */                            \
    extern "C" __global__ void scale_##P(W* out, const W* c) {                                   \
        TY* o = reinterpret_cast<TY*>(out);                                                      \
        o[0] = reduce::Ops<TY>::mul(reinterpret_cast<const TY*>(c)[0], o[0]);                    \
    }                                                                                            \
    extern "C" __global__ void pi_leibniz_##P(unsigned long long terms, const W* c, W* out) {    \
        reduce::pi_leibniz_serial<TY>(terms, reinterpret_cast<const TY*>(c), reinterpret_cast<TY*>(out)); \
    }
