// float_literal.cu — a float kernel that silently computes in double.
//
// Everything is declared float, but the update is written with unsuffixed literals:
//
//     yi = yi + a * (2.0 * xi * xi / sqrt(yi * yi + 1.0) - yi);
//
// In C++ `2.0` and `1.0` are doubles, so the usual arithmetic conversions promote each float
// operand that meets one (cvt.f64.f32): the multiplies, the subtraction, the division and — since
// `yi * yi + 1.0` is a double — the square root become f64 instructions (f64 division and square
// root are long instruction sequences on the GPU), and every sweep's result is rounded back to
// float (cvt.rn.f32.f64) when it is assigned to `yi`. Only `yi * yi` stays a float product. The
// result is slightly *more* accurate than intended, and slower. float_literal_fixed.cu is the
// same program with 2.0f, 1.0f and sqrtf: compare the PTX of the two (nvcc -ptx) and their run
// times (mantissa run).
//
// Build and run standalone:  nvcc -O3 -arch=sm_90 -o float_literal float_literal.cu && ./float_literal
// Under mantissa:            mantissa run examples/kernels/float_literal/float_literal.toml
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif

#define N (1 << 20)
#define N_ITERATIONS 8     // launches
#define N_SWEEPS 64        // relaxation sweeps per launch
#define A 0.75f            // relaxation factor

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// Under-relaxed fixed-point iteration, elementwise, for y = 2 x^2 / sqrt(y^2 + 1):
//     y <- y + a (2 x^2 / sqrt(y^2 + 1) - y)
// `sweeps` times per launch (a contraction for |x| <= 1, y >= 0 and a = 0.75: it converges).
__global__ void relax(int n, int sweeps, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i];
    float yi = y[i];
    for (int k = 0; k < sweeps; k++) {
        yi = yi + a * (2.0 * xi * xi / sqrt(yi * yi + 1.0) - yi);
    }
    y[i] = yi;
}

static unsigned long long rng_state = 0xA0761D6478BD642FULL;
static float uniform(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    float u = (float)(rng_state >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

int main()
{
    const int n = N;
    const size_t bytes = n * sizeof(float);
    float* h_x = (float*)malloc(bytes);
    float* h_y = (float*)malloc(bytes);
    for (int i = 0; i < n; i++) {
        h_x[i] = uniform(-1.0f, 1.0f);
        h_y[i] = uniform(0.0f, 1.0f);
    }

    float *x, *y;
    CUDA_CHECK(cudaMalloc(&x, bytes));
    CUDA_CHECK(cudaMalloc(&y, bytes));
    CUDA_CHECK(cudaMemcpy(x, h_x, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y, h_y, bytes, cudaMemcpyHostToDevice));

    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    CUDA_CHECK(cudaEventRecord(start));
    for (int iter = 0; iter < N_ITERATIONS; iter++) {
        relax<<<blocks, BLOCK_SIZE>>>(n, N_SWEEPS, A, x, y);
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));

    CUDA_CHECK(cudaMemcpy(h_y, y, bytes, cudaMemcpyDeviceToHost));
    double checksum = 0.0;
    for (int i = 0; i < n; i++) checksum += h_y[i];
    printf("float_literal: n = %d, %d launches x %d sweeps, %.3f ms per launch\n",
           n, N_ITERATIONS, N_SWEEPS, ms / N_ITERATIONS);
    printf("sum of y = %.17g\n", checksum);

    cudaFree(x);
    cudaFree(y);
    free(h_x);
    free(h_y);
    return 0;
}
