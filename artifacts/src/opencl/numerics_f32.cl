// The numerics suite's single-precision kernels (accelcore.conformance.numerics, docs/numerics.md).
// One kernel per function; every kernel has the same four buffers and computes exactly one
// operation per work-item: r[i] = f(a[i], b[i], c[i]). Launched once per function over every
// input of its sweep (GLOBAL dispatch, one work-item per input), built with the default build
// options (no -cl-fast-relaxed-math, no -cl-denorms-are-zero): the OpenCL C spec's ULP table
// (section 7.4, full profile) is the promise these kernels are judged against.
// The same computations in GLSL: ../glsl/numerics_f32.comp (selected by a specialization constant).
// (Written out, not macro-generated: accelcore's package tools read __kernel declarations as text.)

__kernel void f32_add(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = x + y;
}
__kernel void f32_sub(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = x - y;
}
__kernel void f32_mul(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = x * y;
}
__kernel void f32_div(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = x / y;
}
__kernel void f32_sqrt(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = sqrt(x);
}
__kernel void f32_rsqrt(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = rsqrt(x);
}
__kernel void f32_fma(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = fma(x, y, z);
}
__kernel void f32_exp(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = exp(x);
}
__kernel void f32_exp2(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = exp2(x);
}
__kernel void f32_log(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = log(x);
}
__kernel void f32_log2(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = log2(x);
}
__kernel void f32_pow(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = pow(x, y);
}
__kernel void f32_sin(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = sin(x);
}
__kernel void f32_cos(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = cos(x);
}
__kernel void f32_tan(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = tan(x);
}
__kernel void f32_asin(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = asin(x);
}
__kernel void f32_acos(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = acos(x);
}
__kernel void f32_atan(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = atan(x);
}
__kernel void f32_atan2(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = atan2(x, y);
}
__kernel void f32_sinh(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = sinh(x);
}
__kernel void f32_cosh(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = cosh(x);
}
__kernel void f32_tanh(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = tanh(x);
}
__kernel void f32_floor(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = floor(x);
}
__kernel void f32_ceil(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = ceil(x);
}
__kernel void f32_trunc(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = trunc(x);
}
__kernel void f32_round(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = round(x);
}
__kernel void f32_fmod(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = fmod(x, y);
}
__kernel void f32_fmin(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = fmin(x, y);
}
__kernel void f32_fmax(__global const float *a, __global const float *b, __global const float *c,
                        __global float *r) {
    size_t i = get_global_id(0);
    float x = a[i], y = b[i], z = c[i];
    r[i] = fmax(x, y);
}
