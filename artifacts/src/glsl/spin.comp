#version 450
// Bounded spin: each item i < count runs min(iterations, 2^24) LCG steps from seed
// i * 2654435761 + 1 and stores the result. iterations comes from the parameter buffer
// (slot 0), so a test sets the run time without rebuilding; the clamp bounds it.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer Params { uint iterations; } params;
layout(set = 0, binding = 1) writeonly buffer Output { uint values[]; } dst;
layout(push_constant) uniform Count { uint count; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    uint steps = min(params.iterations, 16777216u);
    uint x = i * 2654435761u + 1u;
    for (uint s = 0u; s < steps; ++s) {
        x = x * 1664525u + 1013904223u;
    }
    dst.values[i] = x;
}
