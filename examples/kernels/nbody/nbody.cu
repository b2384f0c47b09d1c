// nbody.cu — all-pairs gravitational n-body in double precision.
//
// Each step runs two kernels: `accelerations` (O(n^2), shared-memory tiles of BLOCK_SIZE bodies)
// then `integrate` (semi-implicit Euler: kick the velocity, then drift the position). After the
// time loop a third kernel, `energy`, writes each body's share of the total energy (kinetic plus
// half of its softened pair potentials); the host sums it.
//
// Build and run standalone:  nvcc -O3 -arch=sm_90 -o nbody nbody.cu && ./nbody
// Under mantissa:            mantissa run examples/kernels/nbody/nbody.toml
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 128
#endif

#define N_BODIES 4096
#define N_STEPS 10
#define DT 1.0e-3
#define EPS2 1.0e-2 // softening length squared

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// Acceleration that body j (at xj, yj, zj with mass mj) gives a body at (xi, yi, zi), added to
// (ax, ay, az). The softening keeps the j == i term finite (and zero: dx = dy = dz = 0).
__device__ void body_body(double xi, double yi, double zi, double xj, double yj, double zj,
                          double mj, double eps2, double& ax, double& ay, double& az)
{
    double dx = xj - xi;
    double dy = yj - yi;
    double dz = zj - zi;
    double r2 = dx * dx + dy * dy + dz * dz + eps2;
    double inv = 1.0 / sqrt(r2);
    double s = mj * (inv * inv * inv);
    ax += dx * s;
    ay += dy * s;
    az += dz * s;
}

__global__ void accelerations(const double* px, const double* py, const double* pz,
                              const double* m, double* ax, double* ay, double* az, int n,
                              double eps2)
{
    __shared__ double sx[BLOCK_SIZE];
    __shared__ double sy[BLOCK_SIZE];
    __shared__ double sz[BLOCK_SIZE];
    __shared__ double sm[BLOCK_SIZE];

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double xi = 0.0, yi = 0.0, zi = 0.0;
    if (i < n) {
        xi = px[i];
        yi = py[i];
        zi = pz[i];
    }
    double axi = 0.0, ayi = 0.0, azi = 0.0;

    for (int tile = 0; tile < n; tile += BLOCK_SIZE) {
        int j = tile + threadIdx.x;
        if (j < n) {
            sx[threadIdx.x] = px[j];
            sy[threadIdx.x] = py[j];
            sz[threadIdx.x] = pz[j];
            sm[threadIdx.x] = m[j];
        }
        __syncthreads();
        int count = min(BLOCK_SIZE, n - tile);
        for (int k = 0; k < count; k++) {
            body_body(xi, yi, zi, sx[k], sy[k], sz[k], sm[k], eps2, axi, ayi, azi);
        }
        __syncthreads();
    }
    if (i < n) {
        ax[i] = axi;
        ay[i] = ayi;
        az[i] = azi;
    }
}

__global__ void integrate(double* px, double* py, double* pz, double* vx, double* vy,
                          double* vz, const double* ax, const double* ay, const double* az,
                          int n, double dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double nvx = vx[i] + ax[i] * dt;
    double nvy = vy[i] + ay[i] * dt;
    double nvz = vz[i] + az[i] * dt;
    vx[i] = nvx;
    vy[i] = nvy;
    vz[i] = nvz;
    px[i] = px[i] + nvx * dt;
    py[i] = py[i] + nvy * dt;
    pz[i] = pz[i] + nvz * dt;
}

// e[i] = 1/2 m_i |v_i|^2 - 1/2 sum_{j != i} m_i m_j / sqrt(|r_ij|^2 + eps2): summing e over all
// bodies gives the total energy (each pair's potential counted once).
__global__ void energy(const double* px, const double* py, const double* pz, const double* vx,
                       const double* vy, const double* vz, const double* m, double* e, int n,
                       double eps2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double xi = px[i], yi = py[i], zi = pz[i], mi = m[i];
    double pot = 0.0;
    for (int j = 0; j < n; j++) {
        if (j == i) continue;
        double dx = px[j] - xi;
        double dy = py[j] - yi;
        double dz = pz[j] - zi;
        double r2 = dx * dx + dy * dy + dz * dz + eps2;
        pot += m[j] / sqrt(r2);
    }
    double v2 = vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i];
    e[i] = 0.5 * mi * v2 - 0.5 * mi * pot;
}

// Host-side uniform random numbers in [lo, hi) (a 64-bit LCG: reproducible and dependency-free).
static unsigned long long rng_state = 0x2545F4914F6CDD1DULL;
static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int main()
{
    const int n = N_BODIES;
    const size_t bytes = n * sizeof(double);
    double* h[7]; // px py pz vx vy vz m
    for (int k = 0; k < 7; k++) h[k] = (double*)malloc(bytes);
    for (int i = 0; i < n; i++) {
        h[0][i] = uniform(-1.0, 1.0);
        h[1][i] = uniform(-1.0, 1.0);
        h[2][i] = uniform(-1.0, 1.0);
        h[3][i] = uniform(-0.05, 0.05);
        h[4][i] = uniform(-0.05, 0.05);
        h[5][i] = uniform(-0.05, 0.05);
        h[6][i] = uniform(0.5, 1.5) / n;
    }

    double *px, *py, *pz, *vx, *vy, *vz, *m, *ax, *ay, *az, *e;
    double** d[11] = {&px, &py, &pz, &vx, &vy, &vz, &m, &ax, &ay, &az, &e};
    for (int k = 0; k < 11; k++) CUDA_CHECK(cudaMalloc(d[k], bytes));
    for (int k = 0; k < 7; k++) CUDA_CHECK(cudaMemcpy(*d[k], h[k], bytes, cudaMemcpyHostToDevice));

    const int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    for (int step = 0; step < N_STEPS; step++) {
        accelerations<<<blocks, BLOCK_SIZE>>>(px, py, pz, m, ax, ay, az, n, EPS2);
        integrate<<<blocks, BLOCK_SIZE>>>(px, py, pz, vx, vy, vz, ax, ay, az, n, DT);
    }
    energy<<<blocks, BLOCK_SIZE>>>(px, py, pz, vx, vy, vz, m, e, n, EPS2);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    double* he = (double*)malloc(bytes);
    CUDA_CHECK(cudaMemcpy(h[0], px, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h[1], py, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h[2], pz, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(he, e, bytes, cudaMemcpyDeviceToHost));
    double checksum = 0.0, total = 0.0;
    for (int i = 0; i < n; i++) {
        checksum += h[0][i] + h[1][i] + h[2][i];
        total += he[i];
    }
    printf("nbody: %d bodies, %d steps\n", n, N_STEPS);
    printf("position checksum = %.17g\n", checksum);
    printf("total energy      = %.17g\n", total);

    for (int k = 0; k < 11; k++) cudaFree(*d[k]);
    for (int k = 0; k < 7; k++) free(h[k]);
    free(he);
    return 0;
}
