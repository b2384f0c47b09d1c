// A DBT-like ray step (seed 003, §3.2.4–3.2.6): the pixel coordinate is a multiply-add the
// compiler may contract, the weight is a division, and the absorption is cast to unsigned short
// although it can be negative.
extern "C" __global__ void ray_step(const float* step_x, const float* length,
                                   unsigned short* absorb, float start_x, float img_shift_x,
                                   float reci_img_pix_d, float absorb_temp, float f_length, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float px = img_shift_x - (start_x + (float)i * step_x[i]) * reci_img_pix_d;
    float weight = absorb_temp / px;
    absorb[i] = (unsigned short)(weight * length[i] * f_length);
}
