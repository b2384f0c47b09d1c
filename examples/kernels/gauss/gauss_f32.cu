// gauss_f32.cu — gauss.cu written by hand in single precision: every float is a float, every
// literal has an f suffix, fabs is fabsf. Same kernels, same names, same launch order.
//
// Solve A x = b by Gaussian elimination without pivoting.
//
// The host drives the elimination one pivot row at a time:
//   for (t = 0; t < n - 1; t++) {
//       fan1<<<...>>>(m, a, b, n, t);   // multipliers m[i][t] = a[i][t] / a[t][t], rows i > t
//       fan2<<<...>>>(m, a, b, n, t);   // a[i][j] -= m[i][t] a[t][j] (j >= t), b[i] -= m[i][t] b[t]
//   }
// then one thread solves the upper-triangular system (back_substitute). Without pivoting the
// elimination needs a well-behaved matrix: make_dominant first makes A strictly diagonally
// dominant by rows (a[i][i] = 1 + sum_{j != i} |a[i][j]|).
//
// Build and run standalone:  nvcc -O3 -arch=sm_90 -o gauss_f32 gauss_f32.cu && ./gauss_f32
// Under mantissa:            mantissa run examples/kernels/gauss/gauss_f32.toml
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256      // 1D kernels
#endif
#ifndef BLOCK_XY
#define BLOCK_XY 16         // fan2: BLOCK_XY x BLOCK_XY threads
#endif

#define N 512

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// One thread per row: the diagonal becomes 1 + the sum of the row's off-diagonal magnitudes.
__global__ void make_dominant(float* a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 1.0f;
    for (int j = 0; j < n; j++) {
        if (j != i) s += fabsf(a[i * n + j]);
    }
    a[i * n + i] = s;
}

// Multipliers of pivot row t for the rows below it.
__global__ void fan1(float* m, const float* a, const float* b, int n, int t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= t || i >= n) return;
    m[i * n + t] = a[i * n + t] / a[t * n + t];
}

// Row updates below pivot row t: thread (x = column j, y = row i). Column t becomes exactly zero;
// the thread of column t also updates the right-hand side.
__global__ void fan2(const float* m, float* a, float* b, int n, int t)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i <= t || i >= n || j < t || j >= n) return;
    float mult = m[i * n + t];
    if (j == t) {
        a[i * n + t] = 0.0f;
        b[i] -= mult * b[t];
    } else {
        a[i * n + j] -= mult * a[t * n + j];
    }
}

// Back substitution on the upper-triangular system, by one thread (launch <<<1, 1>>>).
__global__ void back_substitute(const float* a, const float* b, float* x, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int i = n - 1; i >= 0; i--) {
        float s = b[i];
        for (int j = i + 1; j < n; j++) s -= a[i * n + j] * x[j];
        x[i] = s / a[i * n + i];
    }
}

static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;
static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int main()
{
    const int n = N;
    const size_t mat_bytes = (size_t)n * n * sizeof(float);
    const size_t vec_bytes = (size_t)n * sizeof(float);
    float* h_a = (float*)malloc(mat_bytes);
    float* h_b = (float*)malloc(vec_bytes);
    float* h_a0 = (float*)malloc(mat_bytes);
    float* h_b0 = (float*)malloc(vec_bytes);
    float* h_x = (float*)malloc(vec_bytes);
    for (int k = 0; k < n * n; k++) h_a[k] = (float)uniform(-1.0, 1.0);
    for (int i = 0; i < n; i++) h_b[i] = (float)uniform(-1.0, 1.0);

    float *a, *b, *m, *x;
    CUDA_CHECK(cudaMalloc(&a, mat_bytes));
    CUDA_CHECK(cudaMalloc(&m, mat_bytes));
    CUDA_CHECK(cudaMalloc(&b, vec_bytes));
    CUDA_CHECK(cudaMalloc(&x, vec_bytes));
    CUDA_CHECK(cudaMemcpy(a, h_a, mat_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, h_b, vec_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(m, 0, mat_bytes));

    const int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    const dim3 block2(BLOCK_XY, BLOCK_XY);
    const dim3 grid2((n + BLOCK_XY - 1) / BLOCK_XY, (n + BLOCK_XY - 1) / BLOCK_XY);

    make_dominant<<<blocks, BLOCK_SIZE>>>(a, n);
    // Keep the dominant A and b to check the residual at the end.
    CUDA_CHECK(cudaMemcpy(h_a0, a, mat_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_b0, b, vec_bytes, cudaMemcpyDeviceToHost));

    for (int t = 0; t < n - 1; t++) {
        fan1<<<blocks, BLOCK_SIZE>>>(m, a, b, n, t);
        fan2<<<grid2, block2>>>(m, a, b, n, t);
    }
    back_substitute<<<1, 1>>>(a, b, x, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h_x, x, vec_bytes, cudaMemcpyDeviceToHost));

    // Residual max_i |b_i - sum_j a_ij x_j| of the original (dominant) system.
    double checksum = 0.0, residual = 0.0; // host checks in double
    for (int i = 0; i < n; i++) {
        double r = h_b0[i];
        for (int j = 0; j < n; j++) r -= (double)h_a0[i * n + j] * h_x[j];
        residual = fmax(residual, fabs(r));
        checksum += h_x[i];
    }
    printf("gauss: n = %d\n", n);
    printf("sum of x         = %.17g\n", checksum);
    printf("max |b - A x|    = %.3g\n", residual);

    cudaFree(a); cudaFree(b); cudaFree(m); cudaFree(x);
    free(h_a); free(h_b); free(h_a0); free(h_b0); free(h_x);
    return 0;
}
