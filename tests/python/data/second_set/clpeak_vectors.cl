/* Vector-type arithmetic in the style of clpeak's kernels: float4/float8/float3 buffers, float8,
 * float4 and float3 arguments by value, swizzles (.lo/.hi/.even/.odd/.s567/.wzyx), cross/dot, and vload8 /
 * convert_int8_rte / vstore8 on plain float and int buffers. */

#define VEC_LANES 8
typedef float8 vec8_t;

__kernel __attribute__((vec_type_hint(float8))) void vec_mix(__global const float4 *a,
                      __global const vec8_t *b,
                      __global vec8_t *out8,
                      __global float4 *out4,
                      __global float3 *out3,
                      __global float *outs,
                      const vec8_t scale,
                      const float4 bias,
                      const float3 shift,
                      const int n)
{
    int gid = get_global_id(0);
    if (gid >= n)
        return;
    float4 x = a[gid];
    vec8_t y = b[gid];
    out8[gid] = y * scale + (vec8_t)(x, x.wzyx);
    out4[gid] = (y.lo + y.hi) * bias + y.even * y.odd;
    out3[gid] = cross(x.xyz, y.s567) + shift;
    outs[gid] = dot(x, y.hi) + dot(y.lo, bias);
}

__kernel void quantize8(__global const float *src,
                        __global int *dst,
                        const float inv_scale,
                        const int nvec)
{
    int gid = get_global_id(0);
    if (gid >= nvec)
        return;
    vec8_t v = vload8(gid, src);
    vstore8(convert_int8_rte(v * inv_scale), gid, dst);
}
