// nbody_f32.cu — nbody.cu written by hand in single precision: every double is a float, every
// literal has an f suffix, sqrt is sqrtf. Same kernels, same names, same launch order.
//
// Each step runs two kernels: `accelerations` (O(n^2), shared-memory tiles of BLOCK_SIZE bodies)
// then `integrate` (semi-implicit Euler: kick the velocity, then drift the position). After the
// time loop a third kernel, `energy`, writes each body's share of the total energy (kinetic plus
// half of its softened pair potentials); the host sums it.
//
// Build and run standalone:  nvcc -O3 -arch=sm_90 -o nbody_f32 nbody_f32.cu && ./nbody_f32
// Under mantissa:            mantissa run examples/kernels/nbody/nbody_f32.toml
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 128
#endif

#define N_BODIES 4096
#define N_STEPS 10
#define DT 1.0e-3f
#define EPS2 1.0e-2f // softening length squared

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
__device__ void body_body(float xi, float yi, float zi, float xj, float yj, float zj,
                          float mj, float eps2, float& ax, float& ay, float& az)
{
    float dx = xj - xi;
    float dy = yj - yi;
    float dz = zj - zi;
    float r2 = dx * dx + dy * dy + dz * dz + eps2;
    float inv = 1.0f / sqrtf(r2);
    float s = mj * (inv * inv * inv);
    ax += dx * s;
    ay += dy * s;
    az += dz * s;
}

__global__ void accelerations(const float* px, const float* py, const float* pz,
                              const float* m, float* ax, float* ay, float* az, int n,
                              float eps2)
{
    __shared__ float sx[BLOCK_SIZE];
    __shared__ float sy[BLOCK_SIZE];
    __shared__ float sz[BLOCK_SIZE];
    __shared__ float sm[BLOCK_SIZE];

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float xi = 0.0f, yi = 0.0f, zi = 0.0f;
    if (i < n) {
        xi = px[i];
        yi = py[i];
        zi = pz[i];
    }
    float axi = 0.0f, ayi = 0.0f, azi = 0.0f;

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

__global__ void integrate(float* px, float* py, float* pz, float* vx, float* vy,
                          float* vz, const float* ax, const float* ay, const float* az,
                          int n, float dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float nvx = vx[i] + ax[i] * dt;
    float nvy = vy[i] + ay[i] * dt;
    float nvz = vz[i] + az[i] * dt;
    vx[i] = nvx;
    vy[i] = nvy;
    vz[i] = nvz;
    px[i] = px[i] + nvx * dt;
    py[i] = py[i] + nvy * dt;
    pz[i] = pz[i] + nvz * dt;
}

// e[i] = 1/2 m_i |v_i|^2 - 1/2 sum_{j != i} m_i m_j / sqrt(|r_ij|^2 + eps2): summing e over all
// bodies gives the total energy (each pair's potential counted once).
__global__ void energy(const float* px, const float* py, const float* pz, const float* vx,
                       const float* vy, const float* vz, const float* m, float* e, int n,
                       float eps2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = px[i], yi = py[i], zi = pz[i], mi = m[i];
    float pot = 0.0f;
    for (int j = 0; j < n; j++) {
        if (j == i) continue;
        float dx = px[j] - xi;
        float dy = py[j] - yi;
        float dz = pz[j] - zi;
        float r2 = dx * dx + dy * dy + dz * dz + eps2;
        pot += m[j] / sqrtf(r2);
    }
    float v2 = vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i];
    e[i] = 0.5f * mi * v2 - 0.5f * mi * pot;
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
    const size_t bytes = n * sizeof(float);
    float* h[7]; // px py pz vx vy vz m
    for (int k = 0; k < 7; k++) h[k] = (float*)malloc(bytes);
    for (int i = 0; i < n; i++) {
        h[0][i] = uniform(-1.0, 1.0);
        h[1][i] = uniform(-1.0, 1.0);
        h[2][i] = uniform(-1.0, 1.0);
        h[3][i] = uniform(-0.05, 0.05);
        h[4][i] = uniform(-0.05, 0.05);
        h[5][i] = uniform(-0.05, 0.05);
        h[6][i] = uniform(0.5, 1.5) / n;
    }

    float *px, *py, *pz, *vx, *vy, *vz, *m, *ax, *ay, *az, *e;
    float** d[11] = {&px, &py, &pz, &vx, &vy, &vz, &m, &ax, &ay, &az, &e};
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

    float* he = (float*)malloc(bytes);
    CUDA_CHECK(cudaMemcpy(h[0], px, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h[1], py, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h[2], pz, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(he, e, bytes, cudaMemcpyDeviceToHost));
    double checksum = 0.0, total = 0.0; // host sums in double
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
