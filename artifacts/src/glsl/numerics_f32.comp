#version 450
// The numerics suite's single-precision kernels (accelcore.conformance.numerics, docs/numerics.md):
// the computations of ../opencl/numerics_f32.cl in GLSL, one module, the function chosen by the
// specialization constant FN (constant_id 0; the driver folds the switch away). Every work-item
// computes exactly one operation: r[i] = f(a[i], b[i], c[i]). Judged against the Vulkan spec's
// "Precision and Operation of SPIR-V Instructions" (no SignedZeroInfNanPreserve, no DenormPreserve).
layout(local_size_x = 64) in;
layout(constant_id = 0) const int FN = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer C { float c[]; };
layout(std430, binding = 3) writeonly buffer R { float r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    float x = a[i], y = b[i], z = c[i];
    float v = 0.0;
    switch (FN) {
    case 0: v = x + y; break;               // add
    case 1: v = x - y; break;               // sub
    case 2: v = x * y; break;               // mul
    case 3: v = x / y; break;               // div
    case 4: v = sqrt(x); break;             // sqrt
    case 5: v = inversesqrt(x); break;      // rsqrt
    case 6: v = fma(x, y, z); break;        // fma
    case 7: v = exp(x); break;              // exp
    case 8: v = exp2(x); break;             // exp2
    case 9: v = log(x); break;              // log
    case 10: v = log2(x); break;            // log2
    case 11: v = pow(x, y); break;          // pow
    case 12: v = sin(x); break;             // sin
    case 13: v = cos(x); break;             // cos
    case 14: v = tan(x); break;             // tan
    case 15: v = asin(x); break;            // asin
    case 16: v = acos(x); break;            // acos
    case 17: v = atan(x); break;            // atan
    case 18: v = atan(x, y); break;         // atan2 (y/x order as OpenCL's atan2(x, y): atan of x/y)
    case 19: v = sinh(x); break;            // sinh
    case 20: v = cosh(x); break;            // cosh
    case 21: v = tanh(x); break;            // tanh
    case 22: v = floor(x); break;           // floor
    case 23: v = ceil(x); break;            // ceil
    case 24: v = trunc(x); break;           // trunc
    case 25: v = round(x); break;           // round (GLSL: halves round either way)
    case 26: v = min(x, y); break;          // fmin (GLSL min: NaN operands undefined)
    case 27: v = max(x, y); break;          // fmax
    }
    r[i] = v;
}
