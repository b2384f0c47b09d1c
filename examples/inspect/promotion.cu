// promotion.cu — accidental double precision, one case per kernel (`mantissa inspect` flags each
// on its line, with the fix), and one deliberate double accumulator that must not be flagged.
#define DAMPING 0.3

extern "C" __global__ void literal(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0 * x[i] * x[i];
}

extern "C" __global__ void macro_constant(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * DAMPING;
}

extern "C" __global__ void reciprocal(const float* d, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0 / (1.0 + d[i]);
}

extern "C" __global__ void power(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float square = pow(x[i], 2);          // double under nvcc (std::pow), float under NVRTC
        float root = pow(x[i] + 1.0, 1.5);    // double everywhere: x[i] + 1.0 is a double
        y[i] = square + root;
    }
}

extern "C" __global__ void exponential(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = exp(-0.1 * x[i]);
}

extern "C" __global__ void double_accumulator(const float* x, float* out, int n)
{
    double acc = 0.0;
    for (int k = 0; k < n; k++) {
        acc += x[k];
    }
    out[0] = (float)acc;
}

extern "C" __global__ void all_float(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f / (1.0f + expf(-0.1f * x[i])) + powf(x[i], 1.5f) * 0.3f;
}
