/* A __constant table and a struct passed by value (AMD APP SDK / Khronos samples style). */
typedef struct {
    float scale;
    float offset;
    int n;
    int taps;
} Params;

__kernel void fir(__global const float *in, __global float *out, __constant float *coeffs, const Params p)
{
    int i = get_global_id(0);
    if (i >= p.n) return;
    float acc = 0.0f;
    for (int t = 0; t < p.taps; ++t) {
        int k = i - t;
        acc += (k >= 0 ? in[k] : 0.0f) * coeffs[t];
    }
    out[i] = acc * p.scale + p.offset;
}
