#version 450
// Inputs in descriptor set 0, outputs in set 1.
layout (local_size_x = 64) in;

layout (set = 0, binding = 0) readonly buffer A { float a[]; };
layout (set = 0, binding = 1) readonly buffer B { float b[]; };
layout (set = 1, binding = 0) writeonly buffer C { float c[]; };
layout (set = 1, binding = 1) writeonly buffer D { float d[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= uint(a.length())) return;
    c[i] = a[i] + b[i];
    d[i] = a[i] * b[i];
}
