// The demotion error's cost per execution, taken apart (docs/BENCHMARKS.md, issue 21, "Where the
// demotion error's time goes"). Not part of the build: compile and run it on a GPU machine,
//     nvcc -arch=sm_90 -O3 -o demotion-cost scripts/bench-demotion-cost.cu && ./demotion-cost
// One kernel, 1,056 blocks x 256 threads, 2,000 iterations of 8 independent f64 FMA chains per
// thread, each FMA a site whose demotion error is measured per execution with its count, sum and
// maximum in registers, as `pass::shadow` instruments a loop site. Variants: nothing measured;
// the inserted code as it is (cvt to f32, the f32 FMA, cvt back, |r32 - r64| / |r64| with
// div.rn.f64); the division replaced by rcp.approx.ftz.f64 and one Newton step; no division;
// the conversions replaced by plain bit moves (not a rounding: a floor only); the conversions as
// exact round-to-nearest-even on the integer pipe (checked against cvt on 2^30 inputs), with
// either division. Medians of 5 after a warm-up, each variant in two passes.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>

#define SITES 8
struct Acc { unsigned long long count; double sum, max; };

// f64 -> f32 round to nearest even on the integer pipe for results that are f32-normal; cvt
// otherwise (rare: zero, subnormal, overflow, NaN), behind a branch.
__device__ __forceinline__ float narrow(double x) {
    unsigned long long u = (unsigned long long)__double_as_longlong(x);
    unsigned hi = (unsigned)(u >> 32);
    unsigned ahi = hi & 0x7fffffffu;
    if (__builtin_expect(ahi - 0x38100000u < 0x0FE00000u, 1)) {
        unsigned long long a = u & 0x7fffffffffffffffull;
        a += 0x0FFFFFFFull + ((a >> 29) & 1);
        // Rebias the exponent: f64 bias 1023, f32 bias 127, 896 << 23 spans 33 bits.
        unsigned f = (unsigned)((a >> 29) - 0x1C0000000ull);
        return __int_as_float((int)(f | (hi & 0x80000000u)));
    }
    return __double2float_rn(x);
}
// f32 -> f64 exactly, by bits for normal numbers.
__device__ __forceinline__ double widen(float f) {
    unsigned b = (unsigned)__float_as_int(f);
    unsigned ab = b & 0x7fffffffu;
    if (__builtin_expect(ab - 0x00800000u < 0x7f000000u, 1)) {
        unsigned long long w = ((unsigned long long)ab << 29) + 0x3800000000000000ull;
        return __longlong_as_double((long long)(w | ((unsigned long long)(b & 0x80000000u) << 32)));
    }
    return (double)f;
}

template <int V>
__device__ __forceinline__ void site(double r64, double x, double a, double b, Acc &acc) {
    if (V == 0) return;
    float xf, af, bf;
    if (V == 5 || V == 6) {  // RNE narrowing on the integer pipe; cvt only out of range
        xf = narrow(x); af = narrow(a); bf = narrow(b);
    } else if (V == 4) {  // conversions replaced by bit moves (cost floor without F2F; not RNE)
        xf = __int_as_float((int)(__double_as_longlong(x) >> 29));
        af = __int_as_float((int)(__double_as_longlong(a) >> 29));
        bf = __int_as_float((int)(__double_as_longlong(b) >> 29));
    } else {
        xf = __double2float_rn(x); af = __double2float_rn(a); bf = __double2float_rn(b);
    }
    float r32 = __fmaf_rn(xf, af, bf);
    double wide;
    if (V == 4) wide = __longlong_as_double(((long long)__float_as_int(r32)) << 29);
    else if (V == 5 || V == 6) wide = widen(r32);
    else wide = (double)r32;
    long long bits = __double_as_longlong(r64);
    unsigned hi = (unsigned)(bits >> 32) & 0x7fffffffu, lo = (unsigned)bits;
    unsigned nb = (unsigned)__float_as_int(r32) & 0x7fffffffu;
    bool nonfin = hi >= 0x7ff00000u || nb >= 0x7f800000u;
    bool zero = (hi | lo) == 0 && nb < 0x7f800000u;
    bool skip = nonfin || zero;
    double a64 = fabs(r64);
    double d = fabs(__dsub_rn(wide, r64));
    double e;
    if (V == 1 || V == 4 || V == 5) e = __ddiv_rn(d, a64);
    else if (V == 2 || V == 6) {  // approximate reciprocal and one Newton step
        double r;
        asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(a64));
        r = __fma_rn(r, __fma_rn(-a64, r, 1.0), r);
        e = __dmul_rn(d, r);
    } else e = d;  // V == 3: no division
    if (!skip) { acc.count += 1; acc.sum = __dadd_rn(acc.sum, e); acc.max = fmax(acc.max, e); }
}

template <int V>
__global__ void k(const double *in, double *out, unsigned long long *stats, int iters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double x[SITES];
    Acc acc[SITES];
    for (int s = 0; s < SITES; s++) { x[s] = in[(t * SITES + s) & 1023]; acc[s] = {0, 0.0, 0.0}; }
    double a = 0.999999, b = 1e-7;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int s = 0; s < SITES; s++) {
            double xo = x[s];
            x[s] = __fma_rn(xo, a, b);
            site<V>(x[s], xo, a, b, acc[s]);
        }
    }
    double sum = 0;
    unsigned long long c = 0;
    for (int s = 0; s < SITES; s++) { sum += x[s] + acc[s].sum + acc[s].max; c += acc[s].count; }
    out[t] = sum;
    if (c == 12345) stats[0] = c;
}

// narrow/widen against the F2F instructions on every kind of input: random bit patterns over
// the whole range, and values near f32 rounding boundaries, f32-normal limits and ties.
__global__ void check(unsigned long long seed, unsigned long long *bad) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long z = (t + seed) * 0x9E3779B97F4A7C15ull;
    z ^= z >> 31; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 27;
    double xs[4];
    xs[0] = __longlong_as_double((long long)z);                                     // anything
    xs[1] = __longlong_as_double((long long)((z & 0x800FFFFFFFFFFFFFull) | ((0x36Aull + (t % 0x120)) << 52)));  // near f32 limits
    xs[2] = __longlong_as_double((long long)((z & ~0x1FFFFFFFull) | 0x10000000ull)); // exact ties
    xs[3] = __longlong_as_double((long long)(0x47EFFFFFE0000000ull + (z & 0x3FFFFFFFull) - 0x1FFFFFFFull)); // overflow edge
    for (int i = 0; i < 4; i++) {
        float a = narrow(xs[i]), b = __double2float_rn(xs[i]);
        if (__float_as_int(a) != __float_as_int(b)) atomicAdd(&bad[0], 1ull);
        double w = widen(b), v = (double)b;
        if (__double_as_longlong(w) != __double_as_longlong(v) && !(b != b)) atomicAdd(&bad[1], 1ull);
    }
}

template <int V>
float run(const double *in, double *out, unsigned long long *st, int blocks) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    k<V><<<blocks, 256>>>(in, out, st, 2000);
    std::vector<float> ts;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(a); k<V><<<blocks, 256>>>(in, out, st, 2000); cudaEventRecord(b);
        cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    return ts[2];
}

int main() {
    int blocks = 132 * 8;
    double *in, *out; unsigned long long *st;
    cudaMalloc(&in, 1024 * 8); cudaMalloc(&out, (size_t)blocks * 256 * 8); cudaMalloc(&st, 8);
    std::vector<double> h(1024); for (int i = 0; i < 1024; i++) h[i] = 0.5 + i / 2048.0;
    cudaMemcpy(in, h.data(), 1024 * 8, cudaMemcpyHostToDevice);
    for (int pass = 0; pass < 2; pass++) {
        printf("pass %d: none %.3f ms | current (cvt + div.rn) %.3f | rcp.approx+Newton %.3f | no division %.3f | no F2F (bit moves) + div.rn %.3f\n",
               pass, run<0>(in, out, st, blocks), run<1>(in, out, st, blocks), run<2>(in, out, st, blocks),
               run<3>(in, out, st, blocks), run<4>(in, out, st, blocks));
    }
    for (int pass = 0; pass < 2; pass++)
        printf("pass %d: integer RNE conversions + div.rn %.3f | integer RNE conversions + rcp.approx+Newton %.3f\n",
               pass, run<5>(in, out, st, blocks), run<6>(in, out, st, blocks));
    unsigned long long *bad, hb[2];
    cudaMalloc(&bad, 16); cudaMemset(bad, 0, 16);
    for (int r = 0; r < 16; r++) check<<<65536, 256>>>(r * 0x1000000ull, bad);
    cudaMemcpy(hb, bad, 16, cudaMemcpyDeviceToHost);
    printf("checked %llu inputs: narrow differs from cvt.rn.f32.f64 on %llu, widen from cvt.f64.f32 on %llu\n",
           16ull * 65536 * 256 * 4, hb[0], hb[1]);
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
