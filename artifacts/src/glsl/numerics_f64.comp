#version 450
// The numerics suite's double-precision kernels (accelcore.conformance.numerics, docs/numerics.md): the
// computations of ../opencl/numerics_f64.cl that GLSL has for double - the core operations only (GLSL.std.450's
// exp, log, pow, trigonometric and hyperbolic functions exist for 16- and 32-bit floats only). One module, the
// function chosen by the specialization constant FN (constant_id 0; the same numbers as numerics_f32.comp).
// Needs shaderFloat64 (capability Float64). r[i] = f(a[i], b[i], c[i]), one operation per work-item.
layout(local_size_x = 64) in;
layout(constant_id = 0) const int FN = 0;
layout(std430, binding = 0) readonly buffer A { double a[]; };
layout(std430, binding = 1) readonly buffer B { double b[]; };
layout(std430, binding = 2) readonly buffer C { double c[]; };
layout(std430, binding = 3) writeonly buffer R { double r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    double x = a[i], y = b[i], z = c[i];
    double v = 0.0LF;
    switch (FN) {
    case 0: v = x + y; break;               // add
    case 1: v = x - y; break;               // sub
    case 2: v = x * y; break;               // mul
    case 3: v = x / y; break;               // div
    case 4: v = sqrt(x); break;             // sqrt
    case 5: v = inversesqrt(x); break;      // rsqrt
    case 6: v = fma(x, y, z); break;        // fma
    case 22: v = floor(x); break;           // floor
    case 23: v = ceil(x); break;            // ceil
    case 24: v = trunc(x); break;           // trunc
    case 25: v = round(x); break;           // round
    case 26: v = min(x, y); break;          // fmin
    case 27: v = max(x, y); break;          // fmax
    }
    r[i] = v;
}
