#version 450
// The numerics suite's work-group barrier shader: the computation of ../opencl/numerics_barrier.cl in
// GLSL: a shared array and barrier() with memoryBarrierShared(), work-groups of 128 invocations.
// Each invocation writes its input to s[lid]; after a barrier it reads s[(lid + k) % 128] with
// k = 1 + group % 127; after another barrier the group sums s by a tree reduction, a barrier between
// steps, and invocation 0 stores the group's sum (mod 2^32).
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer V { uint v[]; };
layout(std430, binding = 1) writeonly buffer S { uint shuffled[]; };
layout(std430, binding = 2) writeonly buffer G { uint sums[]; };

shared uint s[128];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint group = gl_WorkGroupID.x;
    s[lid] = v[gl_GlobalInvocationID.x];
    memoryBarrierShared();
    barrier();
    shuffled[gl_GlobalInvocationID.x] = s[(lid + 1u + group % 127u) % 128u];
    memoryBarrierShared();
    barrier();
    for (uint half_size = 64u; half_size > 0u; half_size >>= 1) {
        if (lid < half_size)
            s[lid] += s[lid + half_size];
        memoryBarrierShared();
        barrier();
    }
    if (lid == 0u)
        sums[group] = s[0];
}
