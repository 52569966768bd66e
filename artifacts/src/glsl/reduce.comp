#version 450
// Workgroup reduction: out[g] = sum (mod 2^32) of in[64g .. 64g+63] (items >= count count as 0),
// a tree in shared memory with a barrier per level.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer Input { uint values[]; } src;
layout(set = 0, binding = 1) writeonly buffer Output { uint values[]; } dst;
layout(push_constant) uniform Count { uint count; } pc;

shared uint partial[64];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint i = gl_GlobalInvocationID.x;
    partial[lid] = i < pc.count ? src.values[i] : 0u;
    barrier();
    for (uint stride = 32u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            partial[lid] += partial[lid + stride];
        }
        barrier();
    }
    if (lid == 0u) {
        dst.values[gl_WorkGroupID.x] = partial[0];
    }
}
