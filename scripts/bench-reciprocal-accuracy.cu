// The accuracy of rcp.approx.ftz.f64 alone and after one Newton step (docs/BENCHMARKS.md, issue
// 21, "Where the demotion error's time goes"). Not part of the build: on a GPU machine,
//     nvcc -arch=sm_90 -O3 -o reciprocal scripts/bench-reciprocal-accuracy.cu && ./reciprocal
// Accuracy of rcp.approx.ftz.f64 alone and with one Newton step, against the exact reciprocal
// (checked with an exact FMA remainder: |1 - a*r| is the relative error of r, to within 2^-104).
#include <cstdio>
__global__ void k(unsigned long long seed, unsigned long long *worst) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long z = (t + seed) * 0x9E3779B97F4A7C15ull;
    z ^= z >> 31; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 27;
    // exponents in [2^-1000, 2^1000]
    unsigned long long e = 23 + (z >> 53) % 2000;
    double a = __longlong_as_double((long long)((z & 0x000FFFFFFFFFFFFFull) | (e << 52)));
    double r0, r1;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r0) : "d"(a));
    r1 = __fma_rn(r0, __fma_rn(-a, r0, 1.0), r0);
    double e0 = fabs(__fma_rn(-a, r0, 1.0)), e1 = fabs(__fma_rn(-a, r1, 1.0));
    atomicMax(&worst[0], (unsigned long long)__double_as_longlong(e0));
    atomicMax(&worst[1], (unsigned long long)__double_as_longlong(e1));
    // e = d * r1 against d / a, for d of 24 significant bits (an f32 result minus an f64 one)
    double d = __longlong_as_double((long long)(((z * 7) & 0x000FFFFFE0000000ull) | (1000ull << 52)));
    double q = __dmul_rn(d, r1), exact = __ddiv_rn(d, a);
    double rel = fabs(__dsub_rn(q, exact)) / exact;
    atomicMax(&worst[2], (unsigned long long)__double_as_longlong(rel));
}
int main() {
    unsigned long long *w, h[3];
    cudaMalloc(&w, 24); cudaMemset(w, 0, 24);
    for (int r = 0; r < 64; r++) k<<<65536, 256>>>(r * 0x1000000ull, w);
    cudaMemcpy(h, w, 24, cudaMemcpyDeviceToHost);
    double v[3]; for (int i = 0; i < 3; i++) v[i] = *(double *)&h[i];
    printf("%llu divisors in [2^-1000, 2^1000): max |1 - a r| rcp.approx %.3e (2^%.2f), one Newton step %.3e (2^%.2f); max rel. diff of d*r from d/a (rounded) %.3e (2^%.2f)\n",
           64ull * 65536 * 256, v[0], log2(v[0]), v[1], log2(v[1]), v[2], v[2] > 0 ? log2(v[2]) : -1e9);
    return 0;
}
