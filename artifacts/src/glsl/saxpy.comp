#version 450
// saxpy: out[i] = a * x[i] + y[i] (f32). a comes from the parameter buffer (slot 3);
// element count = push constant at offset 0.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer X { float values[]; } x;
layout(set = 0, binding = 1) readonly buffer Y { float values[]; } y;
layout(set = 0, binding = 2) writeonly buffer Out { float values[]; } dst;
layout(set = 0, binding = 3) readonly buffer Params { float a; } params;
layout(push_constant) uniform Count { uint count; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    dst.values[i] = params.a * x.values[i] + y.values[i];
}
