#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// The numerics suite's half-precision kernels (accelcore.conformance.numerics, docs/numerics.md): the
// computations of ../opencl/numerics_f16.cl in GLSL, one module, the function chosen by the specialization
// constant FN (constant_id 0; the same numbers as numerics_f32.comp). Needs shaderFloat16 (capability Float16)
// only: the buffers hold float (every input a half value, so float16_t(a[i]) is exact, and the half result
// converts back exactly), so no 16-bit storage feature is needed. r[i] = f(a[i], b[i], c[i]) in half.
layout(local_size_x = 64) in;
layout(constant_id = 0) const int FN = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer C { float c[]; };
layout(std430, binding = 3) writeonly buffer R { float r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    float16_t x = float16_t(a[i]), y = float16_t(b[i]), z = float16_t(c[i]);
    float16_t v = float16_t(0.0);
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
    case 18: v = atan(x, y); break;         // atan2
    case 19: v = sinh(x); break;            // sinh
    case 20: v = cosh(x); break;            // cosh
    case 21: v = tanh(x); break;            // tanh
    case 22: v = floor(x); break;           // floor
    case 23: v = ceil(x); break;            // ceil
    case 24: v = trunc(x); break;           // trunc
    case 25: v = round(x); break;           // round
    case 26: v = min(x, y); break;          // fmin
    case 27: v = max(x, y); break;          // fmax
    }
    r[i] = float(v);
}
