#version 450
// The numerics suite's denormal probe (accelcore.conformance.numerics.features, docs/numerics.md
// "Denormals"): the computation of ../opencl/numerics_denorm.cl in GLSL. Every invocation applies the
// operation op[i] to its operands (0 add, 1 sub, 2 mul, 3 div, 4 sqrt, 5 fma, 6 copy). No float-controls
// execution mode: the Vulkan spec lets any subnormal input or result be flushed to zero.
// With OpExecutionMode DenormPreserve 32: numerics_denorm_preserve.comp.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer O { int op[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) readonly buffer C { float c[]; };
layout(std430, binding = 4) writeonly buffer R { float r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    float x = a[i], y = b[i], z = c[i];
    float v;
    switch (op[i]) {
    case 0: v = x + y; break;
    case 1: v = x - y; break;
    case 2: v = x * y; break;
    case 3: v = x / y; break;
    case 4: v = sqrt(x); break;
    case 5: v = fma(x, y, z); break;
    default: v = x; break;
    }
    r[i] = v;
}
