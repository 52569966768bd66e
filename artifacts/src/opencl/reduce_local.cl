// Work-group sum reduction (the classic two-stage reduction, first stage): each work-group
// sums get_local_size(0) inputs in a __local scratch array the host sizes
// (clSetKernelArg(k, 2, local_size * sizeof(float), NULL)) and writes one partial sum.
// Inputs past n count as 0. The local size must be a power of two.
__kernel void reduce_sum(__global const float* input, __global float* partial_sums,
                         __local float* scratch, const int n)
{
    int gid = get_global_id(0);
    int lid = get_local_id(0);
    int group_size = get_local_size(0);

    scratch[lid] = (gid < n) ? input[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int offset = group_size / 2; offset > 0; offset >>= 1) {
        if (lid < offset) {
            scratch[lid] += scratch[lid + offset];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (lid == 0) {
        partial_sums[get_group_id(0)] = scratch[0];
    }
}
