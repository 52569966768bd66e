#version 450
// SAXPY the way Kompute's examples write it: y = a * x + y (f32), the scalar and the length
// in a push-constant block set per dispatch. Invocations past n do nothing (the dispatch is
// rounded up to whole work-groups).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(set = 0, binding = 1) buffer BufY { float y[]; };

layout(push_constant) uniform Params {
    float a;
    uint n;
} p;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) {
        return;
    }
    y[i] = p.a * x[i] + y[i];
}
