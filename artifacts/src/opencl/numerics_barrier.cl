// The numerics suite's work-group barrier kernel (accelcore.conformance.numerics.atomics,
// docs/numerics.md "Work-group barriers"): __local memory and barrier(CLK_LOCAL_MEM_FENCE)
// (OpenCL C 1.2 section 6.12.8), work-groups of exactly 128 work-items (reqd_work_group_size).
// Each work-item writes its input to s[lid]; after a barrier it reads a neighbour's,
// s[(lid + k) % 128] with k = 1 + group % 127 (so a missing barrier shows as a wrong neighbour);
// after another barrier the group sums s by a tree reduction, a barrier between steps, and
// work-item 0 stores the group's sum (mod 2^32).
// The same computation in GLSL: ../glsl/numerics_barrier.comp.

__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void barrier_local_u32(__global const uint *v, __global uint *shuffled, __global uint *sums) {
    __local uint s[128];
    uint lid = get_local_id(0);
    uint group = get_group_id(0);
    s[lid] = v[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    shuffled[get_global_id(0)] = s[(lid + 1u + group % 127u) % 128u];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint half_size = 64u; half_size > 0u; half_size >>= 1) {
        if (lid < half_size)
            s[lid] += s[lid + half_size];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0u)
        sums[group] = s[0];
}
