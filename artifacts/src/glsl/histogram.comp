#version 450
// 256-bin histogram of (in[i] & 255) for i < count: per-workgroup bins in shared memory
// (shared atomics), merged into the global bins with global atomics. Bins accumulate.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer Input { uint values[]; } src;
layout(set = 0, binding = 1) buffer Bins { uint counts[256]; } bins;
layout(push_constant) uniform Count { uint count; } pc;

shared uint local_bins[256];

void main() {
    uint lid = gl_LocalInvocationID.x;
    for (uint b = lid; b < 256u; b += 64u) {
        local_bins[b] = 0u;
    }
    barrier();
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.count) {
        atomicAdd(local_bins[src.values[i] & 255u], 1u);
    }
    barrier();
    for (uint b = lid; b < 256u; b += 64u) {
        uint c = local_bins[b];
        if (c != 0u) {
            atomicAdd(bins.counts[b], c);
        }
    }
}
