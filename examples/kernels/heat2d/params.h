// params.h — sizes and launch shape of heat2d.cu (and heat2d_f32.cu).
#ifndef HEAT2D_PARAMS_H
#define HEAT2D_PARAMS_H

// Thread block of the stencil kernel (BLOCK_X along x, the fast index).
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
// Threads per block of the 1D boundary kernels.
#define BLOCK_BC 128

// Interior grid; the arrays hold one ghost cell on each side: (NX + 2) x (NY + 2), row-major,
// x fastest.
#define NX 512
#define NY 512
#define N_STEPS 200

// Diffusion numbers r = alpha dt / h^2 along x and y (explicit scheme: stable for RX + RY <= 1/2).
#define RX 0.15
#define RY 0.10

// Wall value meaning "insulated" (zero flux: the ghost cell copies its interior neighbour).
#define INSULATED (-1.0)

#endif
