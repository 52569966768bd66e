// The numerics suite's double-precision kernel (accelcore.conformance.numerics, docs/numerics.md).
// One kernel for every function: fn[0] selects it (the same numbers as FN in
// ../glsl/numerics_f64.comp and numerics_f32.comp; 28 = fmod), so a driver compiles one program per
// device for all the cases of this type (the OpenCL binary cache then serves every later case).
// Every work-item computes exactly one operation: r[i] = f(a[i], b[i], c[i]). Built with the default
// build options; judged against the OpenCL C spec's double-precision table (section 7.4, full profile).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void f64_fn(__global const double *a, __global const double *b, __global const double *c,
                     __global double *r, __global const int *fn) {
    size_t i = get_global_id(0);
    double x = a[i], y = b[i], z = c[i];
    double v = 0;
    switch (fn[0]) {
    case 0: v = x + y; break;           // add
    case 1: v = x - y; break;           // sub
    case 2: v = x * y; break;           // mul
    case 3: v = x / y; break;           // div
    case 4: v = sqrt(x); break;         // sqrt
    case 5: v = rsqrt(x); break;        // rsqrt
    case 6: v = fma(x, y, z); break;    // fma
    case 7: v = exp(x); break;          // exp
    case 8: v = exp2(x); break;         // exp2
    case 9: v = log(x); break;          // log
    case 10: v = log2(x); break;        // log2
    case 11: v = pow(x, y); break;      // pow
    case 12: v = sin(x); break;         // sin
    case 13: v = cos(x); break;         // cos
    case 14: v = tan(x); break;         // tan
    case 15: v = asin(x); break;        // asin
    case 16: v = acos(x); break;        // acos
    case 17: v = atan(x); break;        // atan
    case 18: v = atan2(x, y); break;    // atan2
    case 19: v = sinh(x); break;        // sinh
    case 20: v = cosh(x); break;        // cosh
    case 21: v = tanh(x); break;        // tanh
    case 22: v = floor(x); break;       // floor
    case 23: v = ceil(x); break;        // ceil
    case 24: v = trunc(x); break;       // trunc
    case 25: v = round(x); break;       // round
    case 26: v = fmin(x, y); break;     // fmin
    case 27: v = fmax(x, y); break;     // fmax
    case 28: v = fmod(x, y); break;     // fmod
    }
    r[i] = v;
}
