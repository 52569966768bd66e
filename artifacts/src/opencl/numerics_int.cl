// The numerics suite's bit-exact integer and float->int conversion kernels
// (accelcore.conformance.numerics.integer, docs/numerics.md "Integer operations and conversions").
// One kernel per operation; every kernel has the same three buffers of 32-bit words and computes
// exactly one operation per work-item: r[i] = op(a[i], b[i]) (a float operand is the bit pattern
// a[i], read with as_float). Launched once per operation over its whole sweep (GLOBAL dispatch),
// built with the default build options. Judged exactly: integer built-ins (OpenCL C 1.2 section
// 6.12.3) have one right answer; conversions (section 6.2.3) are exact where the value is in range,
// _sat conversions everywhere.
// The same computations in GLSL: ../glsl/numerics_int.comp (selected by a specialization constant).
// (Written out, not macro-generated: accelcore's package tools read __kernel declarations as text.)

__kernel void int_mul_hi_u32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = mul_hi(a[i], b[i]);
}
__kernel void int_mul_hi_i32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = as_uint(mul_hi(as_int(a[i]), as_int(b[i])));
}
__kernel void int_rotate_u32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = rotate(a[i], b[i]);
}
__kernel void int_clz_u32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = clz(a[i]);
}
__kernel void int_popcount_u32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = popcount(a[i]);
}
__kernel void int_add_sat_u32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = add_sat(a[i], b[i]);
}
__kernel void int_add_sat_i32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = as_uint(add_sat(as_int(a[i]), as_int(b[i])));
}
__kernel void cvt_f32_i32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = as_uint(convert_int(as_float(a[i])));
}
__kernel void cvt_f32_i32_rte(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = as_uint(convert_int_rte(as_float(a[i])));
}
__kernel void cvt_f32_i32_sat(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = as_uint(convert_int_sat(as_float(a[i])));
}
__kernel void cvt_f32_i32_sat_rte(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = as_uint(convert_int_sat_rte(as_float(a[i])));
}
__kernel void cvt_f32_u32(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = convert_uint(as_float(a[i]));
}
__kernel void cvt_f32_u32_rte(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = convert_uint_rte(as_float(a[i]));
}
__kernel void cvt_f32_u32_sat(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = convert_uint_sat(as_float(a[i]));
}
__kernel void cvt_f32_u32_sat_rte(__global const uint *a, __global const uint *b, __global uint *r) {
    size_t i = get_global_id(0);
    r[i] = convert_uint_sat_rte(as_float(a[i]));
}
