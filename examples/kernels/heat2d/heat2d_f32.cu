// heat2d_f32.cu — heat2d.cu written by hand in single precision: every double is a float, every
// literal has an f suffix. Same kernels, same names, same launch order, same params.h.
//
// Per time step three kernels and one copy:
//   apply_bc_x   west and east ghost columns (a fixed temperature, or insulated)
//   apply_bc_y   south and north ghost rows, corners included (after apply_bc_x)
//   heat_step    u_new = c0 u + c1 u_west + c2 u_east + c3 u_south + c4 u_north  (interior)
//   cudaMemcpy   u_new -> u
// The stencil weights and the wall temperatures live in __constant__ tables that the host fills.
//
// Build and run standalone:  nvcc -O3 -arch=sm_90 -o heat2d_f32 heat2d_f32.cu && ./heat2d_f32
// Under mantissa:            mantissa run examples/kernels/heat2d/heat2d_f32.toml
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "params.h"

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// Stencil weights: centre, west, east, south, north.
__constant__ float c_coef[5];
// Wall temperatures: west, east, south, north; a negative value (INSULATED) means zero flux.
__constant__ float c_wall[4];

__device__ __forceinline__ int idx(int i, int j, int nx) { return j * (nx + 2) + i; }

// The ghost value for a wall: its fixed temperature, or (insulated) the interior neighbour.
__device__ __forceinline__ float wall_value(float wall, float inside)
{
    return wall >= 0.0f ? wall : inside;
}

// One thread per interior row j = 1..ny.
__global__ void apply_bc_x(float* u, int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (j > ny) return;
    u[idx(0, j, nx)] = wall_value(c_wall[0], u[idx(1, j, nx)]);
    u[idx(nx + 1, j, nx)] = wall_value(c_wall[1], u[idx(nx, j, nx)]);
}

// One thread per column i = 0..nx+1 (corners too, from the ghost columns apply_bc_x just set).
__global__ void apply_bc_y(float* u, int nx, int ny)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > nx + 1) return;
    u[idx(i, 0, nx)] = wall_value(c_wall[2], u[idx(i, 1, nx)]);
    u[idx(i, ny + 1, nx)] = wall_value(c_wall[3], u[idx(i, ny, nx)]);
}

__global__ void heat_step(const float* u, float* u_new, int nx, int ny)
{
    int i = blockIdx.x * BLOCK_X + threadIdx.x + 1;
    int j = blockIdx.y * BLOCK_Y + threadIdx.y + 1;
    if (i > nx || j > ny) return;
    int c = idx(i, j, nx);
    int w = nx + 2;
    u_new[c] = c_coef[0] * u[c] + c_coef[1] * u[c - 1] + c_coef[2] * u[c + 1]
             + c_coef[3] * u[c - w] + c_coef[4] * u[c + w];
}

static unsigned long long rng_state = 0x853C49E6748FEA9BULL;
static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int main()
{
    const int nx = NX, ny = NY;
    const size_t cells = (size_t)(nx + 2) * (ny + 2);
    const size_t bytes = cells * sizeof(float);

    float* h_u = (float*)malloc(bytes);
    for (size_t k = 0; k < cells; k++) h_u[k] = (float)uniform(0.0, 1.0);

    // Hot west wall at 1, cold east wall at 0, insulated south and north walls.
    const float rx = (float)RX, ry = (float)RY;
    const float coef[5] = {1.0f - 2.0f * rx - 2.0f * ry, rx, rx, ry, ry};
    const float wall[4] = {1.0f, 0.0f, (float)INSULATED, (float)INSULATED};
    CUDA_CHECK(cudaMemcpyToSymbol(c_coef, coef, sizeof(coef)));
    CUDA_CHECK(cudaMemcpyToSymbol(c_wall, wall, sizeof(wall)));

    float *u, *u_new;
    CUDA_CHECK(cudaMalloc(&u, bytes));
    CUDA_CHECK(cudaMalloc(&u_new, bytes));
    CUDA_CHECK(cudaMemcpy(u, h_u, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(u_new, 0, bytes));

    const dim3 block(BLOCK_X, BLOCK_Y);
    const dim3 grid((nx + BLOCK_X - 1) / BLOCK_X, (ny + BLOCK_Y - 1) / BLOCK_Y);
    const int grid_x = (ny + BLOCK_BC - 1) / BLOCK_BC;
    const int grid_y = (nx + 2 + BLOCK_BC - 1) / BLOCK_BC;
    for (int step = 0; step < N_STEPS; step++) {
        apply_bc_x<<<grid_x, BLOCK_BC>>>(u, nx, ny);
        apply_bc_y<<<grid_y, BLOCK_BC>>>(u, nx, ny);
        heat_step<<<grid, block>>>(u, u_new, nx, ny);
        CUDA_CHECK(cudaMemcpy(u, u_new, bytes, cudaMemcpyDeviceToDevice));
    }
    // The copy brought u_new's (unset) ghost cells along: set them once more for the output.
    apply_bc_x<<<grid_x, BLOCK_BC>>>(u, nx, ny);
    apply_bc_y<<<grid_y, BLOCK_BC>>>(u, nx, ny);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h_u, u, bytes, cudaMemcpyDeviceToHost));

    double interior = 0.0; // host sums in double
    for (int j = 1; j <= ny; j++)
        for (int i = 1; i <= nx; i++) interior += h_u[j * (nx + 2) + i];
    printf("heat2d: %d x %d, %d steps\n", nx, ny, N_STEPS);
    printf("interior sum = %.17g\n", interior);
    printf("u(centre)    = %.17g\n", h_u[(ny / 2) * (nx + 2) + nx / 2]);

    cudaFree(u);
    cudaFree(u_new);
    free(h_u);
    return 0;
}
