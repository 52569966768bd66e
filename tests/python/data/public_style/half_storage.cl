/* half storage with vload_half / vstore_half (no cl_khr_fp16 needed), arithmetic in float. */
__kernel void scale_half(__global const half *in, __global half *out, const float factor, const int n)
{
    int i = get_global_id(0);
    if (i < n) vstore_half(vload_half(i, in) * factor, i, out);
}
