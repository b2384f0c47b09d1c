// options.cu — Black–Scholes prices of European call and put options in double precision.
//
//   d1 = (log(S/K) + (r + sigma^2/2) T) / (sigma sqrt(T)),   d2 = d1 - sigma sqrt(T)
//   call = S N(d1) - K e^{-rT} N(d2),   put = K e^{-rT} N(-d2) - S N(-d1)
// with the standard normal CDF N(x) = erfc(-x / sqrt(2)) / 2, which (unlike 1 - N(-x) or
// (1 + erf(x/sqrt 2))/2) keeps full relative accuracy in the far left tail.
//
// Build and run standalone:  nvcc -O3 -arch=sm_90 -o options options.cu && ./options
// Under mantissa:            mantissa run examples/kernels/options/options.toml
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif

#define N_OPTIONS (1 << 18)
#define N_ITERATIONS 4      // the pricing is repeated, as a benchmark would, to time it
#define RISK_FREE 0.02
#define VOLATILITY 0.30

#define INV_SQRT2 0.70710678118654752440

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// Standard normal cumulative distribution function.
__device__ double norm_cdf(double x)
{
    return 0.5 * erfc(-x * INV_SQRT2);
}

__global__ void black_scholes(const double* spot, const double* strike, const double* years,
                              double* call, double* put, int n, double r, double sigma)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double s = spot[i];
    double k = strike[i];
    double t = years[i];
    double sqrt_t = sqrt(t);
    double vol_t = sigma * sqrt_t;
    double d1 = (log(s / k) + (r + 0.5 * sigma * sigma) * t) / vol_t;
    double d2 = d1 - vol_t;
    double discount = k * exp(-r * t);
    call[i] = s * norm_cdf(d1) - discount * norm_cdf(d2);
    put[i] = discount * norm_cdf(-d2) - s * norm_cdf(-d1);
}

static unsigned long long rng_state = 0xDA942042E4DD58B5ULL;
static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int main()
{
    const int n = N_OPTIONS;
    const size_t bytes = n * sizeof(double);
    double* h_spot = (double*)malloc(bytes);
    double* h_strike = (double*)malloc(bytes);
    double* h_years = (double*)malloc(bytes);
    double* h_call = (double*)malloc(bytes);
    double* h_put = (double*)malloc(bytes);
    for (int i = 0; i < n; i++) {
        h_spot[i] = exp(uniform(log(10.0), log(1000.0))); // log-uniform: deep in and out of the money
        h_strike[i] = uniform(50.0, 150.0);
        h_years[i] = uniform(0.1, 5.0);
    }

    double *spot, *strike, *years, *call, *put;
    CUDA_CHECK(cudaMalloc(&spot, bytes));
    CUDA_CHECK(cudaMalloc(&strike, bytes));
    CUDA_CHECK(cudaMalloc(&years, bytes));
    CUDA_CHECK(cudaMalloc(&call, bytes));
    CUDA_CHECK(cudaMalloc(&put, bytes));
    CUDA_CHECK(cudaMemcpy(spot, h_spot, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(strike, h_strike, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(years, h_years, bytes, cudaMemcpyHostToDevice));

    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    CUDA_CHECK(cudaEventRecord(start));
    for (int iter = 0; iter < N_ITERATIONS; iter++) {
        black_scholes<<<blocks, BLOCK_SIZE>>>(spot, strike, years, call, put, n, RISK_FREE,
                                             VOLATILITY);
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));

    CUDA_CHECK(cudaMemcpy(h_call, call, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_put, put, bytes, cudaMemcpyDeviceToHost));
    double call_sum = 0.0, put_sum = 0.0, parity = 0.0;
    for (int i = 0; i < n; i++) {
        call_sum += h_call[i];
        put_sum += h_put[i];
        // Put–call parity: C - P = S - K e^{-rT}.
        double gap = (h_call[i] - h_put[i]) - (h_spot[i] - h_strike[i] * exp(-RISK_FREE * h_years[i]));
        parity = fmax(parity, fabs(gap) / h_spot[i]);
    }
    printf("options: %d options, %d iterations, %.3f ms per iteration\n", n, N_ITERATIONS,
           ms / N_ITERATIONS);
    printf("call sum = %.17g\n", call_sum);
    printf("put sum  = %.17g\n", put_sum);
    printf("max |put-call parity gap| / S = %.3g\n", parity);

    cudaFree(spot); cudaFree(strike); cudaFree(years); cudaFree(call); cudaFree(put);
    free(h_spot); free(h_strike); free(h_years); free(h_call); free(h_put);
    return 0;
}
