#version 450
// A shader that runs as long as p.n says (an LCG loop): the runaway of the recovery and interrupt tests.
layout(local_size_x = 64) in;
layout(push_constant) uniform P { uint n; } p;
layout(set = 0, binding = 0) buffer Out { uint v[]; };
void main() {
    uint x = gl_GlobalInvocationID.x;
    for (uint a = 0u; a < p.n; a++) { x = x * 1664525u + 1013904223u; }
    v[gl_GlobalInvocationID.x] = x;
}
