// float_literal.cu — a float kernel that silently computes in double.
//
// Everything is declared float, but the update is written with unsuffixed literals:
//
//     y[i] = a * xi + 0.5 * yi + 2.0 * xi * xi / sqrt(xi * xi + 1.0);
//
// In C++ `0.5`, `2.0` and `1.0` are doubles, so the usual arithmetic conversions promote each
// float operand that meets one (cvt.f64.f32), the multiplies, the add, the division and — since
// `xi * xi + 1.0` is a double — the square root become f64 instructions (division and sqrt are
// long f64 sequences on the GPU), and the result is rounded back to float on the store
// (cvt.rn.f32.f64). `a * xi` and `xi * xi` alone stay float. The result is *more* accurate than
// intended, and slower. float_literal_fixed.cu is the same program with 0.5f, 2.0f, 1.0f and
// sqrtf: compare the PTX of the two (nvcc -ptx) and their run times (mantissa run).
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
#define N_ITERATIONS 8
#define A 0.75f

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// A damped SAXPY-like iteration with a smooth polynomial-over-root correction:
// y <- a x + y / 2 + 2 x^2 / sqrt(x^2 + 1)  (converges to 2 (a x + 2 x^2 / sqrt(x^2 + 1))).
__global__ void poly_update(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i];
    float yi = y[i];
    y[i] = a * xi + 0.5 * yi + 2.0 * xi * xi / sqrt(xi * xi + 1.0);
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
        h_x[i] = uniform(-2.0f, 2.0f);
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
        poly_update<<<blocks, BLOCK_SIZE>>>(n, A, x, y);
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));

    CUDA_CHECK(cudaMemcpy(h_y, y, bytes, cudaMemcpyDeviceToHost));
    double checksum = 0.0;
    for (int i = 0; i < n; i++) checksum += h_y[i];
    printf("float_literal: n = %d, %d iterations, %.3f ms per iteration\n", n, N_ITERATIONS,
           ms / N_ITERATIONS);
    printf("sum of y = %.9g\n", checksum);

    cudaFree(x);
    cudaFree(y);
    free(h_x);
    free(h_y);
    return 0;
}
