// orbits: a softened gravitational N-body cluster advanced by kick-drift-kick leapfrog steps
// whose size the *device* chooses every step: each body proposes eta * sqrt(eps / |a|) from its
// acceleration, a reduction takes the minimum, and the host copies it back, clamps it to the
// time left and launches the next kick. The arithmetic is all-pairs (N^2 interactions per step,
// each a square root and a division in f64), so the program is bound by f64 arithmetic rather
// than by memory: the example on which demoting instructions can pay, beside `reactor` (which is
// bound by launches and memory, and cannot).
//
// Build (f64, and its f32 twin from the same source):
//   nvcc -O3 -arch=sm_90 -o orbits orbits.cu
//   nvcc -O3 -arch=sm_90 -DREAL=float -o orbits_f32 orbits.cu
// Add `-lineinfo` to see source lines in mantissa's reports, `-cudart shared` for the shared
// CUDA runtime.
//
// Usage: orbits [BODIES [T_END]]   (defaults 32768 bodies, t_end 0.01)
// Prints the step count, the final time, the total energy before and after, its relative drift,
// and the interactions per second (a figure of merit for `--fom`).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef REAL
#define REAL double
#endif
typedef REAL real;

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "orbits: %s: %s\n", #call, cudaGetErrorString(e_));       \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

const int BLOCK = 128;

// Accelerations of every body (G = 1, Plummer softening eps2), and each block's smallest
// proposed step eta * sqrt(soft / |a|). Each thread owns PER bodies (BLOCK apart), so that every
// body read from the shared tile serves PER interactions from registers.
const int PER = 2;

template <typename T>
__global__ void accelerations(const T* __restrict__ pos, const T* __restrict__ mass,
                              T* __restrict__ acc, T* __restrict__ dt_block, int n, T eps2,
                              T eta) {
    __shared__ T tile[BLOCK * 4];
    __shared__ T best[BLOCK];
    int first = blockIdx.x * BLOCK * PER + threadIdx.x;
    T x[PER], y[PER], z[PER], ax[PER], ay[PER], az[PER];
    for (int p = 0; p < PER; p++) {
        int i = first + p * BLOCK;
        x[p] = i < n ? pos[3 * i] : T(0);
        y[p] = i < n ? pos[3 * i + 1] : T(0);
        z[p] = i < n ? pos[3 * i + 2] : T(0);
        ax[p] = ay[p] = az[p] = T(0);
    }
    for (int base = 0; base < n; base += BLOCK) {
        int j = base + threadIdx.x;
        tile[4 * threadIdx.x] = j < n ? pos[3 * j] : T(0);
        tile[4 * threadIdx.x + 1] = j < n ? pos[3 * j + 1] : T(0);
        tile[4 * threadIdx.x + 2] = j < n ? pos[3 * j + 2] : T(0);
        tile[4 * threadIdx.x + 3] = j < n ? mass[j] : T(0);
        __syncthreads();
        for (int k = 0; k < BLOCK; k++) {
            T xj = tile[4 * k], yj = tile[4 * k + 1], zj = tile[4 * k + 2], mj = tile[4 * k + 3];
#pragma unroll
            for (int p = 0; p < PER; p++) {
                T dx = xj - x[p];
                T dy = yj - y[p];
                T dz = zj - z[p];
                T r2 = dx * dx + dy * dy + dz * dz + eps2;
                T r = sqrt(r2);
                T s = mj / (r2 * r);
                ax[p] += s * dx;
                ay[p] += s * dy;
                az[p] += s * dz;
            }
        }
        __syncthreads();
    }
    T dt = T(1e30);
    for (int p = 0; p < PER; p++) {
        int i = first + p * BLOCK;
        if (i < n) {
            acc[3 * i] = ax[p];
            acc[3 * i + 1] = ay[p];
            acc[3 * i + 2] = az[p];
            T a = sqrt(ax[p] * ax[p] + ay[p] * ay[p] + az[p] * az[p]);
            dt = fmin(dt, eta * sqrt(sqrt(eps2) / (a + T(1e-30))));
        }
    }
    best[threadIdx.x] = dt;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) best[threadIdx.x] = fmin(best[threadIdx.x], best[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) dt_block[blockIdx.x] = best[0];
}

// The minimum of m values into out[0] (one block of 1024 threads).
extern "C" __global__ void smallest(const real* in, real* out, int m) {
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

// v += h a (a half kick), then, when drift is set, x += dt v.
template <typename T>
__global__ void kick_drift(T* pos, T* vel, const T* acc, T h, T dt, int drift, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 3 * n) return;
    vel[i] += h * acc[i];
    if (drift) pos[i] += dt * vel[i];
}

// Per body: its kinetic energy and half its potential energy with every other body.
extern "C" __global__ void energies(const real* pos, const real* vel, const real* mass,
                                    real* e, int n, real eps2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    real pot = 0;
    for (int j = 0; j < n; j++) {
        if (j == i) continue;
        real dx = pos[3 * j] - pos[3 * i];
        real dy = pos[3 * j + 1] - pos[3 * i + 1];
        real dz = pos[3 * j + 2] - pos[3 * i + 2];
        pot -= mass[j] / sqrt(dx * dx + dy * dy + dz * dz + eps2);
    }
    real v2 = vel[3 * i] * vel[3 * i] + vel[3 * i + 1] * vel[3 * i + 1] +
              vel[3 * i + 2] * vel[3 * i + 2];
    e[i] = mass[i] * (real(0.5) * v2 + real(0.5) * pot);
}

static double total_energy(const real* pos, const real* vel, const real* mass, real* e, int n,
                           real eps2, int blocks) {
    energies<<<blocks, BLOCK>>>(pos, vel, mass, e, n, eps2);
    std::vector<real> h(n);
    CHECK(cudaMemcpy(h.data(), e, n * sizeof(real), cudaMemcpyDeviceToHost));
    double sum = 0;
    for (int i = 0; i < n; i++) sum += h[i];
    return sum;
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 32768;
    double t_end = argc > 2 ? atof(argv[2]) : 0.01;
    if (n < 2 || !(t_end > 0)) {
        fprintf(stderr, "usage: orbits [BODIES >= 2 [T_END > 0]]\n");
        return 2;
    }
    const real eps2 = real(1e-4), eta = real(0.02);
    const int blocks = (n + BLOCK - 1) / BLOCK;
    const int acc_blocks = (n + BLOCK * PER - 1) / (BLOCK * PER);
    const long max_steps = 1000000;

    // A cold cluster: positions uniform in the unit ball from a fixed 64-bit LCG, small random
    // velocities, equal masses summing to 1.
    std::vector<real> p(3 * n), v(3 * n), m(n, real(1.0 / n));
    unsigned long long state = 0x9e3779b97f4a7c15ull;
    auto uniform = [&state]() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    };
    for (int i = 0; i < n; i++) {
        double x, y, z;
        do {
            x = uniform();
            y = uniform();
            z = uniform();
        } while (x * x + y * y + z * z > 1.0);
        p[3 * i] = real(x);
        p[3 * i + 1] = real(y);
        p[3 * i + 2] = real(z);
        for (int d = 0; d < 3; d++) v[3 * i + d] = real(0.05 * uniform());
    }

    real *pos, *vel, *mass, *acc, *dt_block, *dt_min, *e;
    CHECK(cudaMalloc(&pos, 3 * n * sizeof(real)));
    CHECK(cudaMalloc(&vel, 3 * n * sizeof(real)));
    CHECK(cudaMalloc(&mass, n * sizeof(real)));
    CHECK(cudaMalloc(&acc, 3 * n * sizeof(real)));
    CHECK(cudaMalloc(&dt_block, blocks * sizeof(real)));
    CHECK(cudaMalloc(&dt_min, sizeof(real)));
    CHECK(cudaMalloc(&e, n * sizeof(real)));
    CHECK(cudaMemcpy(pos, p.data(), 3 * n * sizeof(real), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(vel, v.data(), 3 * n * sizeof(real), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(mass, m.data(), n * sizeof(real), cudaMemcpyHostToDevice));

    double e0 = total_energy(pos, vel, mass, e, n, eps2, blocks);
    int kick_blocks = (3 * n + BLOCK - 1) / BLOCK;
    auto start = std::chrono::steady_clock::now();
    double t = 0;
    long steps = 0;
    accelerations<real><<<acc_blocks, BLOCK>>>(pos, mass, acc, dt_block, n, eps2, eta);
    while (t < t_end && steps < max_steps) {
        smallest<<<1, 1024>>>(dt_block, dt_min, acc_blocks);
        real dt;
        CHECK(cudaMemcpy(&dt, dt_min, sizeof(real), cudaMemcpyDeviceToHost));
        if (!(dt > 0)) {
            fprintf(stderr, "orbits: step %ld: the device proposed dt = %g\n", steps, (double)dt);
            return 1;
        }
        if (t + dt > t_end) dt = real(t_end - t);
        kick_drift<real><<<kick_blocks, BLOCK>>>(pos, vel, acc, dt / 2, dt, 1, n);
        accelerations<real><<<acc_blocks, BLOCK>>>(pos, mass, acc, dt_block, n, eps2, eta);
        kick_drift<real><<<kick_blocks, BLOCK>>>(pos, vel, acc, dt / 2, dt, 0, n);
        t += dt;
        steps++;
    }
    CHECK(cudaDeviceSynchronize());
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double e1 = total_energy(pos, vel, mass, e, n, eps2, blocks);
    std::vector<real> final_pos(3 * n);
    CHECK(cudaMemcpy(final_pos.data(), pos, 3 * n * sizeof(real), cudaMemcpyDeviceToHost));
    double cx = 0;
    for (int i = 0; i < n; i++) cx += m[i] * final_pos[3 * i];
    printf("bodies %d\nsteps %ld\ntime %.17g\nenergy0 %.17g\nenergy %.17g\ndrift %.3e\n"
           "centre_x %.17g\ninteractions_per_s %.6e\n",
           n, steps, t, e0, e1, std::fabs((e1 - e0) / e0), cx,
           (double)n * n * (steps + 1) / seconds);
    CHECK(cudaFree(pos));
    CHECK(cudaFree(vel));
    CHECK(cudaFree(mass));
    CHECK(cudaFree(acc));
    CHECK(cudaFree(dt_block));
    CHECK(cudaFree(dt_min));
    CHECK(cudaFree(e));
    return 0;
}
