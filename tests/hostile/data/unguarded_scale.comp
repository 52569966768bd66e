#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    y[i] = 2.5 * x[i];
}
