#version 450
// A work-group reduction through shared memory and barrier().
layout (local_size_x = 128) in;

layout (set = 0, binding = 0) readonly buffer InBuf { float data_in[]; };
layout (set = 0, binding = 1) writeonly buffer OutBuf { float data_out[]; };
layout (push_constant) uniform Params { uint n; } params;

shared float sdata[128];

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint gid = gl_GlobalInvocationID.x;
    sdata[tid] = gid < params.n ? data_in[gid] : 0.0;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        barrier();
    }
    if (tid == 0) data_out[gl_WorkGroupID.x] = sdata[0];
}
