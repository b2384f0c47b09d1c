// chains.cu: the multiplication chain and do/undo kernels of the study (crates/study/src/chains.rs,
// seed 000 ch. 8), compiled by NVRTC after mantissa.cuh (mantissa_gpu::twin::HEADER).
//
// Two kinds of module are built from this file:
// - the chain module (CHAINS_DIV_MODE undefined, default flags): chain_<p> for every twin
//   precision, instantiated by one CHAINS_CHAIN_KERNEL line per precision;
// - one do/undo module per division mode: chains.rs prepends
//     #define CHAINS_DIV_MODE k   (0 = div-rn, 1 = div-full, 2 = div-approx)
//   and compiles it under the mode's flag set (default, approx-div = --prec-div=false, default);
//   it holds doundo_f32, doundo_comp32 and doundo_f32x2.
//
// BIT-IDENTITY WITH THE CPU (chains.rs `chain_product`, `doundo`)
// Products are the twin's (f32/f64: __fmul_rn/__dmul_rn; pairs: mantissa::T_mul), which no flag
// changes. In div-rn mode every division is IEEE round-to-nearest: f32's `/` compiled with the
// default flags is div.rn.f32, and comp32/f32x2 call the twin's comp32_div / f32x2_div (__fdiv_rn
// inside; 1/y may appear as rcp.rn.f32, also IEEE). So div-rn runs exactly the Rust operations.
//
// THE APPROXIMATE MODES change f32 divisions only, and nothing else:
// - f32: `x / y` becomes div.full.f32 (div-full, --prec-div=false) or __fdividef = div.approx.f32
//   (div-approx).
// - comp32 (comp32_div_mode): the two f32 divisions of seed 000 Table 4's division, the
//   reciprocal t = 1 / y.value and the special-case quotient x.value / y.value (non-finite or zero
//   operands), use the mode's division; the products, sums and comp_finish are the twin's.
// - f32x2 (f32x2_div_mode): the two f32 divisions of DWDivDW3 (JMP17 Alg. 18), the reciprocal
//   th = 1 / y.hi and the base quotient x.hi / y.hi used when the result is not finite; the
//   Newton correction (FMA residual, FastTwoSum, DWTimesFP3, DWPlusFP), DWTimesDW3 and the
//   rescaling of extreme divisors are the twin's.
// The numerator 1 of the reciprocals is the kernel argument `one` (always 1.0f), not a literal:
// with a literal, --prec-div=false compiles 1/y to rcp.approx.f32 instead of div.full.f32, and
// the mode would not be the division it names. chains.rs checks each kernel's PTX for it.

namespace chains {

typedef unsigned long long u64;

// ---- Products of the twin --------------------------------------------------------------------

template <typename T> struct Mul;
template <> struct Mul<float> {
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
};
template <> struct Mul<double> {
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
};
#define CHAINS_TWIN_MUL(T)                                                                       \
    template <> struct Mul<mantissa::T> {                                                        \
        static __device__ __forceinline__ mantissa::T mul(mantissa::T a, mantissa::T b) {       \
            return mantissa::T##_mul(a, b);                                                      \
        }                                                                                        \
    };
CHAINS_TWIN_MUL(f32x2)
CHAINS_TWIN_MUL(f64x2)
CHAINS_TWIN_MUL(comp32)
CHAINS_TWIN_MUL(comp64)
CHAINS_TWIN_MUL(comp32n)
CHAINS_TWIN_MUL(comp64n)
#undef CHAINS_TWIN_MUL

// ---- The multiplication chain ------------------------------------------------------------------

// Thread t of `threads` multiplies the n factors in the rotated order x[t mod n], x[t+1 mod n],
// ..., from the first factor (no multiplication by one): thread 0 is the CPU's left fold.
template <typename T> __device__ __forceinline__ void chain(const T* x, u64 n, u64 threads, T* out) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads || n == 0) return;
    u64 j = t % n;
    T acc = x[j];
    for (u64 i = 1; i < n; ++i) {
        if (++j == n) j = 0;
        acc = Mul<T>::mul(acc, x[j]);
    }
    out[t] = acc;
}

#ifdef CHAINS_DIV_MODE

// ---- The mode's f32 division -------------------------------------------------------------------

#if CHAINS_DIV_MODE == 2
__device__ __forceinline__ float mode_div(float a, float b) { return __fdividef(a, b); }
#else
// div-rn: default flags, so div.rn.f32; div-full: --prec-div=false, so div.full.f32.
__device__ __forceinline__ float mode_div(float a, float b) { return a / b; }
#endif

// Seed 000 Table 4's division (mantissa.cuh comp_div) with the mode's f32 divisions.
__device__ __forceinline__ mantissa::comp32 comp32_div_mode(mantissa::comp32 x, mantissa::comp32 y, float one) {
    using namespace mantissa;
    if (!is_finite(x.value) || !is_finite(y.value) || y.value == 0.0f)
        return comp_from_base(mode_div(x.value, y.value));
    float t = mode_div(one, y.value);
    float s = mul_rn(t, x.value);
    float diff = sub_rn(x.value, mul_rn(s, y.value));
    float value = add_rn(s, mul_rn(t, diff));
    float error = mul_rn(t, diff);
    return comp_finish(value, error);
}

// DWDivDW3 without rescaling (mantissa.cuh dw_div_dw3_unscaled) with the mode's f32 divisions.
__device__ __forceinline__ mantissa::f32x2 f32x2_div_unscaled_mode(mantissa::f32x2 x, mantissa::f32x2 y, float one) {
    using namespace mantissa;
    float th = mode_div(one, y.hi);
    float rh = fma_rn(flip_sign(y.hi), th, 1.0f);
    float rl = flip_sign(mul_rn(y.lo, th));
    float eh, el;
    fast_two_sum(rh, rl, eh, el);
    f32x2 d = dw_mul_base(dw_make(eh, el), th);
    f32x2 m = dw_add_base(d, th);
    f32x2 z = dw_mul(x, m);
    if (is_finite(z.hi)) return z;
    return dw_special(z.hi, mode_div(x.hi, y.hi));
}

// mantissa.cuh dw_div: extreme divisors rescaled to [1, 2) first, as the twin does.
__device__ __forceinline__ mantissa::f32x2 f32x2_div_mode(mantissa::f32x2 x, mantissa::f32x2 y, float one) {
    using namespace mantissa;
    if (!dw_divisor_needs_scaling(y.hi)) return f32x2_div_unscaled_mode(x, y, one);
    int ky = 0, kx = 0;
    exponent(y.hi, ky);
    exponent(x.hi, kx);
    return dw_scale2(f32x2_div_unscaled_mode(dw_scale2(x, -kx), dw_scale2(y, -ky), one), kx - ky);
}

// One do/undo step x <- (x * y) / y in each precision.
template <typename T> struct Step;
template <> struct Step<float> {
    static __device__ __forceinline__ float step(float x, float y, float) { return mode_div(__fmul_rn(x, y), y); }
};
template <> struct Step<mantissa::comp32> {
    typedef mantissa::comp32 V;
    static __device__ __forceinline__ V step(V x, V y, float one) {
#if CHAINS_DIV_MODE == 0
        (void)one;
        return mantissa::comp32_div(mantissa::comp32_mul(x, y), y);
#else
        return comp32_div_mode(mantissa::comp32_mul(x, y), y, one);
#endif
    }
};
template <> struct Step<mantissa::f32x2> {
    typedef mantissa::f32x2 V;
    static __device__ __forceinline__ V step(V x, V y, float one) {
#if CHAINS_DIV_MODE == 0
        (void)one;
        return mantissa::f32x2_div(mantissa::f32x2_mul(x, y), y);
#else
        return f32x2_div_mode(mantissa::f32x2_mul(x, y), y, one);
#endif
    }
};

// Thread t of `threads` starts from x0[t] and applies the steps with y[0], ..., y[steps-1] in
// order. The y's are loaded 8 at a time ahead of their steps (they do not depend on x), so one
// thread waits on the dependent arithmetic, not on memory; the steps keep their order.
template <typename T> __device__ __forceinline__ void doundo(const T* x0, const T* y, u64 steps, float one, T* out, u64 threads) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    T x = x0[t];
    u64 i = 0;
    for (; i + 8 <= steps; i += 8) {
        T b[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) b[k] = y[i + k];
#pragma unroll
        for (int k = 0; k < 8; ++k) x = Step<T>::step(x, b[k], one);
    }
    for (; i < steps; ++i) x = Step<T>::step(x, y[i], one);
    out[t] = x;
}

#endif // CHAINS_DIV_MODE

} // namespace chains

// chain_<P>(factors, n, threads, out): buffers of words W holding values of TY.
#define CHAINS_CHAIN_KERNEL(P, TY, W)                                                            \
    extern "C" __global__ void __launch_bounds__(1024) chain_##P(const W* x, unsigned long long n, unsigned long long threads, W* out) { \
        chains::chain<TY>(reinterpret_cast<const TY*>(x), n, threads, reinterpret_cast<TY*>(out)); \
    }

// doundo_<P>(x0, y, steps, one, out, threads); `one` must be 1.0f (see the top of the file).
#define CHAINS_DOUNDO_KERNEL(P, TY)                                                              \
    extern "C" __global__ void __launch_bounds__(1024) doundo_##P(const float* x0, const float* y, unsigned long long steps, float one, float* out, unsigned long long threads) { \
        chains::doundo<TY>(reinterpret_cast<const TY*>(x0), reinterpret_cast<const TY*>(y), steps, one, reinterpret_cast<TY*>(out), threads); \
    }
