// linalg.cu: Gaussian elimination (Fan1/Fan2) and blocked LU decomposition (diagonal, perimeter,
// internal) for the precision study (crates/study/src/linalg.rs), compiled by NVRTC after
// mantissa.cuh (mantissa_gpu::twin::HEADER) and followed by one MANTISSA_LINALG_KERNELS line
// per precision (and MANTISSA_LINALG_CHECK once for the f64x2 residual kernel).
//
// BIT-IDENTITY WITH THE CPU MODELS (linalg.rs `ge_forward`, `lu_factor`)
// f32/f64 use explicit round-to-nearest intrinsics, the pair types the twin's operators, so each
// operation is the Rust one. Every matrix element sees the same sequence of operations as in the
// CPU's right-looking order, whatever the tile size:
// - GE, step t: m_i = a_it / a_tt is stored in a_it (Fan1); a_ij = a_ij - m_i * a_tj for j > t
//   and b_i = b_i - m_i * b_t (Fan2, the thread of column t updates b_i);
// - LU, step k: a_ik = a_ik / a_kk for i > k, then a_ij = a_ij - a_ik * a_kj for i, j > k. The
//   blocked kernels apply exactly these updates to each element, in increasing k: the diagonal
//   and perimeter kernels walk k inside the tile with a barrier per step, the internal kernel
//   subtracts the B products of its tile one at a time (not a separately summed dot product).
// Matrices are row-major n x n arrays of the precision's values (1 or 2 words each).

namespace linalg {

typedef unsigned long long u64;

// ---- The Real operations: Sub, Mul, Div of each precision --------------------------------------

__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
// The twin's operators: dw_sub/dw_mul/dw_div, comp_*, compn_* (the Rust Sub/Mul/Div impls).
template <typename T> __device__ __forceinline__ T sub(T a, T b) { return a - b; }
template <typename T> __device__ __forceinline__ T mul(T a, T b) { return a * b; }
template <typename T> __device__ __forceinline__ T div(T a, T b) { return a / b; }

// ---- Gaussian elimination ----------------------------------------------------------------------

// Fan1: one thread per row i > t (1-D blocks of 512): the multiplier, stored in place of a_it.
template <typename T> __device__ __forceinline__ void fan1(T* a, int n, int t) {
    int i = t + 1 + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        a[(u64)i * n + t] = div(a[(u64)i * n + t], a[(u64)t * n + t]);
    }
}

// Fan2: tile x tile threads per block over rows i > t (y) and columns j >= t (x). Column t holds
// the multipliers and is not updated; its thread updates b_i instead.
template <typename T> __device__ __forceinline__ void fan2(T* a, T* b, int n, int t) {
    int j = t + blockIdx.x * blockDim.x + threadIdx.x;
    int i = t + 1 + blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) {
        return;
    }
    T m = a[(u64)i * n + t];
    if (j == t) {
        b[i] = sub(b[i], mul(m, b[t]));
    } else {
        a[(u64)i * n + j] = sub(a[(u64)i * n + j], mul(m, a[(u64)t * n + j]));
    }
}

// ---- Blocked LU: B x B threads per block, 2 B^2 values of static shared memory ----------------

// Shared tiles as raw 16-byte-aligned storage (the pair types are plain structs).
#define LINALG_TILES(T, B, NAME0, NAME1)                                                         \
    __shared__ __align__(16) unsigned char raw_[2 * B * B * sizeof(T)];                          \
    T(*NAME0)[B] = reinterpret_cast<T(*)[B]>(raw_);                                              \
    T(*NAME1)[B] = reinterpret_cast<T(*)[B]>(raw_ + B * B * sizeof(T));

// The diagonal tile at (o, o), factored in place; one block.
template <typename T, int B> __device__ __forceinline__ void lu_diagonal(T* a, int n, int o) {
    LINALG_TILES(T, B, s, unused)
    (void)unused;
    int tx = threadIdx.x, ty = threadIdx.y;
    s[ty][tx] = a[(u64)(o + ty) * n + o + tx];
    for (int k = 0; k < B - 1; ++k) {
        __syncthreads();
        if (ty > k && tx == k) {
            s[ty][k] = div(s[ty][k], s[k][k]);
        }
        __syncthreads();
        if (ty > k && tx > k) {
            s[ty][tx] = sub(s[ty][tx], mul(s[ty][k], s[k][tx]));
        }
    }
    __syncthreads();
    a[(u64)(o + ty) * n + o + tx] = s[ty][tx];
}

// The perimeter of block step o: 2m blocks for the m tiles right of the diagonal tile (rows of U:
// forward substitution with the unit lower part of the diagonal tile) and the m tiles below it
// (columns of L: updates with the upper part, then the division by the pivot).
template <typename T, int B> __device__ __forceinline__ void lu_perimeter(T* a, int n, int o) {
    LINALG_TILES(T, B, d, w)
    int tx = threadIdx.x, ty = threadIdx.y;
    int m = (n - o) / B - 1;
    int blk = blockIdx.x;
    d[ty][tx] = a[(u64)(o + ty) * n + o + tx];
    if (blk < m) {
        int c = o + B * (blk + 1);
        w[ty][tx] = a[(u64)(o + ty) * n + c + tx];
        for (int k = 0; k < B - 1; ++k) {
            __syncthreads();
            if (ty > k) {
                w[ty][tx] = sub(w[ty][tx], mul(d[ty][k], w[k][tx]));
            }
        }
        __syncthreads();
        a[(u64)(o + ty) * n + c + tx] = w[ty][tx];
    } else {
        int r = o + B * (blk - m + 1);
        w[ty][tx] = a[(u64)(r + ty) * n + o + tx];
        for (int k = 0; k < B; ++k) {
            __syncthreads();
            if (tx == k) {
                w[ty][k] = div(w[ty][k], d[k][k]);
            }
            __syncthreads();
            if (tx > k) {
                w[ty][tx] = sub(w[ty][tx], mul(w[ty][k], d[k][tx]));
            }
        }
        __syncthreads();
        a[(u64)(r + ty) * n + o + tx] = w[ty][tx];
    }
}

// The trailing update of block step o: block (x, y) updates the tile at rows o + B(y + 1),
// columns o + B(x + 1), one element per thread, with the B products of the perimeter tiles
// subtracted one at a time in increasing k.
template <typename T, int B> __device__ __forceinline__ void lu_internal(T* a, int n, int o) {
    LINALG_TILES(T, B, l, u)
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = o + B * (blockIdx.y + 1) + ty;
    int j = o + B * (blockIdx.x + 1) + tx;
    l[ty][tx] = a[(u64)i * n + o + tx];
    u[ty][tx] = a[(u64)(o + ty) * n + j];
    __syncthreads();
    T acc = a[(u64)i * n + j];
#pragma unroll 8
    for (int k = 0; k < B; ++k) {
        acc = sub(acc, mul(l[ty][k], u[k][tx]));
    }
    a[(u64)i * n + j] = acc;
}

#undef LINALG_TILES

// ---- The residual A - L*U in f64x2 (mismatch counts) -------------------------------------------

// f and a are n x n arrays of normalized f64x2 values (the factors as packed LU, and A); r gets
// the high word of A_ij - sum_k L_ik U_kj with L_ii = 1: products for k < min(i, j) in
// increasing k, then U_ij (i <= j) or L_ij * U_jj (i > j). 16 x 16 threads per block.
__device__ __forceinline__ void lu_residual(const mantissa::f64x2* f, const mantissa::f64x2* a,
                                            int n, double* r) {
    __shared__ mantissa::f64x2 sl[16][16];
    __shared__ mantissa::f64x2 su[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx;
    int i_last = min(blockIdx.y * 16 + 15, n - 1), j_last = min(blockIdx.x * 16 + 15, n - 1);
    int block_lim = min(i_last, j_last);
    int lim = min(i, j);
    mantissa::f64x2 acc = (i < n && j < n) ? a[(u64)i * n + j] : mantissa::f64x2_from_base(0.0);
    for (int kt = 0; kt < block_lim; kt += 16) {
        sl[ty][tx] = (i < n && kt + tx < n) ? f[(u64)i * n + kt + tx] : mantissa::f64x2_from_base(0.0);
        su[ty][tx] = (kt + ty < n && j < n) ? f[(u64)(kt + ty) * n + j] : mantissa::f64x2_from_base(0.0);
        __syncthreads();
        for (int kk = 0; kk < 16; ++kk) {
            if (kt + kk < lim) {
                acc = mantissa::f64x2_sub(acc, mantissa::f64x2_mul(sl[ty][kk], su[kk][tx]));
            }
        }
        __syncthreads();
    }
    if (i < n && j < n) {
        mantissa::f64x2 fij = f[(u64)i * n + j];
        if (i <= j) {
            acc = mantissa::f64x2_sub(acc, fij);
        } else {
            acc = mantissa::f64x2_sub(acc, mantissa::f64x2_mul(fij, f[(u64)j * n + j]));
        }
        r[(u64)i * n + j] = acc.hi;
    }
}

} // namespace linalg

// The extern "C" kernels of one tile size B of precision P (CUDA type TY, buffers of words W).
#define MANTISSA_LINALG_LU(P, TY, W, B)                                                          \
    extern "C" __global__ void lu_diagonal_##P##_##B(W* a, int n, int o) {                       \
        linalg::lu_diagonal<TY, B>(reinterpret_cast<TY*>(a), n, o);                              \
    }                                                                                            \
    extern "C" __global__ void lu_perimeter_##P##_##B(W* a, int n, int o) {                      \
        linalg::lu_perimeter<TY, B>(reinterpret_cast<TY*>(a), n, o);                             \
    }                                                                                            \
    extern "C" __global__ void lu_internal_##P##_##B(W* a, int n, int o) {                       \
        linalg::lu_internal<TY, B>(reinterpret_cast<TY*>(a), n, o);                              \
    }

// All kernels of precision P: Fan1, Fan2 and the LU kernels of tiles 4, 8, 16 and 32.
#define MANTISSA_LINALG_KERNELS(P, TY, W)                                                        \
    extern "C" __global__ void ge_fan1_##P(W* a, int n, int t) {                                 \
        linalg::fan1<TY>(reinterpret_cast<TY*>(a), n, t);                                        \
    }                                                                                            \
    extern "C" __global__ void ge_fan2_##P(W* a, W* b, int n, int t) {                           \
        linalg::fan2<TY>(reinterpret_cast<TY*>(a), reinterpret_cast<TY*>(b), n, t);             \
    }                                                                                            \
    MANTISSA_LINALG_LU(P, TY, W, 4)                                                              \
    MANTISSA_LINALG_LU(P, TY, W, 8)                                                              \
    MANTISSA_LINALG_LU(P, TY, W, 16)                                                             \
    MANTISSA_LINALG_LU(P, TY, W, 32)

#define MANTISSA_LINALG_CHECK()                                                                  \
    extern "C" __global__ void lu_residual_f64x2(const double* f, const double* a, int n,        \
                                                 double* r) {                                    \
        linalg::lu_residual(reinterpret_cast<const mantissa::f64x2*>(f),                         \
                            reinterpret_cast<const mantissa::f64x2*>(a), n, r);                  \
    }
