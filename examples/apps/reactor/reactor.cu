// reactor: a 1-D reaction-diffusion front (the bistable Nagumo equation
//   u_t = D u_xx + k u (1 - u) (u - a)
// on [0, L] with mirrored ends), advanced by explicit Euler steps whose size the *device*
// chooses every step: each cell proposes the largest stable step for itself, a reduction takes
// the minimum, and the host copies it back, clamps it to the time left and launches the update.
// The number of steps, and so the whole launch sequence, depends on values computed on the GPU:
// a program a fixed kernel spec cannot describe, and the example `mantissa trace` and the
// in-application analyses are shown on.
//
// Build (f64, and its f32 twin from the same source):
//   nvcc -O3 -arch=sm_90 -o reactor reactor.cu
//   nvcc -O3 -arch=sm_90 -DREAL=float -o reactor_f32 reactor.cu
// `-arch=sm_90` embeds the PTX beside the SASS, which is what mantissa reads. Add
// `-cudart shared` to link the shared CUDA runtime instead of the static one.
//
// Usage: reactor [CELLS [T_END]]   (defaults 65536 cells, t_end 100)
// Prints the step count, the final time, the front's position and the field's energy.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

#ifndef REAL
#define REAL double
#endif
typedef REAL real;

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "reactor: %s: %s\n", #call, cudaGetErrorString(e_));      \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

const int BLOCK = 256;

// The right-hand side per cell, and each block's smallest stable step: the diffusion limit
// dx^2 / (2 D), and 1 / |f'(u)| for the reaction, times a safety factor.
template <typename T>
__global__ void rates(const T* __restrict__ u, T* __restrict__ r, T* __restrict__ dt_block,
                      int n, T D, T k, T a, T dx, T safety) {
    __shared__ T best[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    T dt = T(1e30);
    if (i < n) {
        T left = u[i > 0 ? i - 1 : 1];
        T right = u[i < n - 1 ? i + 1 : n - 2];
        T c = u[i];
        T lap = (left - T(2) * c + right) / (dx * dx);
        T f = k * c * (T(1) - c) * (c - a);
        r[i] = D * lap + f;
        // f'(u) = k (-3u^2 + 2(1+a)u - a)
        T slope = k * (-T(3) * c * c + T(2) * (T(1) + a) * c - a);
        T reaction = T(1) / (fabs(slope) + T(1e-12));
        T diffusion = dx * dx / (T(2) * D);
        dt = safety * fmin(reaction, diffusion);
    }
    best[threadIdx.x] = dt;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) best[threadIdx.x] = fmin(best[threadIdx.x], best[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) dt_block[blockIdx.x] = best[0];
}

// One block of 1024 threads: the minimum of m values into out[0].
extern "C" __global__ void min_reduce(const real* in, real* out, int m) {
    __shared__ real best[1024];
    real v = real(1e30);
    for (int j = threadIdx.x; j < m; j += blockDim.x) v = fmin(v, in[j]);
    best[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) best[threadIdx.x] = fmin(best[threadIdx.x], best[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = best[0];
}

template <typename T>
__global__ void advance(T* u, const T* r, T dt, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] = u[i] + dt * r[i];
}

// The cell width the measurement uses, set by the host with cudaMemcpyToSymbol (as programs
// set their constants): a `__constant__` variable, which `mantissa trace` writes as a symbol.
__constant__ real cell_width;

// Per block: the sum of u^2 dx (the energy) and the number of cells above one half (the front).
extern "C" __global__ void measure(const real* u, real* energy, int* above, int n) {
    const real dx = cell_width;
    __shared__ real e[BLOCK];
    __shared__ int c[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    real v = i < n ? u[i] : real(0);
    e[threadIdx.x] = v * v * dx;
    c[threadIdx.x] = (i < n && v > real(0.5)) ? 1 : 0;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            e[threadIdx.x] += e[threadIdx.x + s];
            c[threadIdx.x] += c[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        energy[blockIdx.x] = e[0];
        above[blockIdx.x] = c[0];
    }
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 65536;
    double t_end = argc > 2 ? atof(argv[2]) : 100.0;
    if (n < 4 || !(t_end > 0)) {
        fprintf(stderr, "usage: reactor [CELLS >= 4 [T_END > 0]]\n");
        return 2;
    }
    // Cells of width 1: the diffusion limit (0.225) stays above the reaction's, which falls from
    // 0.1875 to 0.08 as the bump grows to the upper state: the step size changes as it runs.
    const real dx = 1, D = 1, k = 8, a = real(0.3), safety = real(0.45);
    const int blocks = (n + BLOCK - 1) / BLOCK;
    const long max_steps = 10000000;

    real *u, *r, *dt_block, *dt_min, *energy;
    int* above;
    CHECK(cudaMalloc(&u, n * sizeof(real)));
    CHECK(cudaMalloc(&r, n * sizeof(real)));
    CHECK(cudaMalloc(&dt_block, blocks * sizeof(real)));
    CHECK(cudaMalloc(&dt_min, sizeof(real)));
    CHECK(cudaMalloc(&energy, blocks * sizeof(real)));
    CHECK(cudaMalloc(&above, blocks * sizeof(int)));

    // The initial state, made on the host: a bump of height 0.6 in the middle, 20 cells wide,
    // which grows to the upper state u = 1 and spreads as two fronts.
    std::vector<real> u0(n);
    for (int i = 0; i < n; i++) {
        double x = (i - n / 2) / 20.0;
        u0[i] = real(0.6 * exp(-x * x));
    }
    CHECK(cudaMemcpy(u, u0.data(), n * sizeof(real), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(r, 0, n * sizeof(real)));
    CHECK(cudaMemcpyToSymbol(cell_width, &dx, sizeof(real)));

    double t = 0;
    long steps = 0;
    while (t < t_end && steps < max_steps) {
        rates<real><<<blocks, BLOCK>>>(u, r, dt_block, n, D, k, a, dx, safety);
        min_reduce<<<1, 1024>>>(dt_block, dt_min, blocks);
        real dt;
        CHECK(cudaMemcpy(&dt, dt_min, sizeof(real), cudaMemcpyDeviceToHost));
        if (!(dt > 0)) {
            fprintf(stderr, "reactor: step %ld: the device proposed dt = %g\n", steps, (double)dt);
            return 1;
        }
        if (t + dt > t_end) dt = real(t_end - t);
        advance<real><<<blocks, BLOCK>>>(u, r, dt, n);
        t += dt;
        steps++;
    }

    measure<<<blocks, BLOCK>>>(u, energy, above, n);
    std::vector<real> e(blocks);
    std::vector<int> c(blocks);
    CHECK(cudaMemcpy(e.data(), energy, blocks * sizeof(real), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(c.data(), above, blocks * sizeof(int), cudaMemcpyDeviceToHost));
    double total = 0;
    long cells = 0;
    for (int b = 0; b < blocks; b++) {
        total += e[b];
        cells += c[b];
    }
    printf("cells %d\nsteps %ld\ntime %.17g\nfront %.17g\nenergy %.17g\n", n, steps, t,
           cells * (double)dx, total);
    CHECK(cudaFree(u));
    CHECK(cudaFree(r));
    CHECK(cudaFree(dt_block));
    CHECK(cudaFree(dt_min));
    CHECK(cudaFree(energy));
    CHECK(cudaFree(above));
    return 0;
}
