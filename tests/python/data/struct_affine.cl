typedef struct {
    float scale;   /* 0 */
    int n;         /* 4 */
    float4 bias;   /* 16: 8 bytes of padding before it */
    short step;    /* 32 */
    float tail;    /* 36; size rounds up to 48 (float4 alignment) */
} Params;

__kernel void affine(__global const float *x, __global float *y, Params p)
{
    int i = get_global_id(0);
    if (i >= p.n) return;
    y[i] = x[i] * p.scale + p.bias.x + p.bias.w * (float)p.step + p.tail;
}
