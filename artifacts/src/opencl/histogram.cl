// 256-bin histogram of (in[i] & 255) for i < count: per-work-group bins in local memory
// (local atomics), merged into the global bins with global atomics. Bins accumulate.
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void histogram(__global const uint *src, __global uint *bins, const uint count) {
    __local uint local_bins[256];
    uint lid = (uint)get_local_id(0);
    for (uint b = lid; b < 256u; b += 64u) {
        local_bins[b] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint i = (uint)get_global_id(0);
    if (i < count) {
        atomic_add(&local_bins[src[i] & 255u], 1u);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = lid; b < 256u; b += 64u) {
        uint c = local_bins[b];
        if (c != 0u) {
            atomic_add(&bins[b], c);
        }
    }
}
