// A tomosynthesis-like projector (seed 003's setting, small), the example of `mantissa diff`:
// one thread per detector column marches a ray through a row of voxels, adding each voxel's
// value and the ray's position, then writes the sum and an absorption count as unsigned.
// Three causes of CPU/GPU differences are seeded, one per line (the tests name these lines):
// line 14 divides (approximate under --flags approx-div or fast), line 17 is a multiply-add
// (contracted into an fma), line 24 casts a possibly negative float to unsigned.
extern "C" __global__ void project(const float* __restrict__ vol, float* __restrict__ proj,
                                   unsigned* __restrict__ bins, float x0, float dist,
                                   float bias, int nx, int m, int steps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    float sum = 0.0f;
    float slope = (float)(2 * i - m) / dist;
    for (int k = 0; k < steps; ++k) {
        // The ray's position after k steps.
        float x = x0 + (float)k * slope;
        int cell = (int)x;
        cell = cell < 0 ? 0 : (cell >= nx ? nx - 1 : cell);
        sum += vol[cell] + x;
    }
    proj[i] = sum;
    // The CPU keeps the low 32 bits of a 64-bit conversion; the GPU saturates at 0.
    bins[i] = (unsigned)(sum - bias);
}
