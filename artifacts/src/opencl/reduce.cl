// Workgroup reduction: out[g] = sum (mod 2^32) of in[64g .. 64g+63] (items >= count count as 0),
// a tree in local memory with a barrier per level. Work-group size must be 64.
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void reduce(__global const uint *src, __global uint *dst, const uint count) {
    __local uint partial[64];
    uint lid = (uint)get_local_id(0);
    uint i = (uint)get_global_id(0);
    partial[lid] = i < count ? src[i] : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = 32u; stride > 0u; stride >>= 1) {
        if (lid < stride) {
            partial[lid] += partial[lid + stride];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0u) {
        dst[get_group_id(0)] = partial[0];
    }
}
