// The numerics suite's denormal probe (accelcore.conformance.numerics.features, docs/numerics.md
// "Denormals"): one kernel, one launch; every work-item applies the operation op[i] to its operands,
// so the host can hand subnormal inputs to each operation, or normal inputs whose exact result is
// subnormal, and see per operation whether subnormals are kept or flushed to zero. Built with the
// default build options (no -cl-denorms-are-zero, no -cl-fast-relaxed-math).
// The same computation in GLSL: ../glsl/numerics_denorm.comp (and numerics_denorm_preserve.comp, with
// the DenormPreserve execution mode).
// op: 0 add, 1 sub, 2 mul, 3 div, 4 sqrt, 5 fma, 6 copy (a plain load and store of a[i]).

__kernel void denorm_ops(__global const int *op, __global const float *a, __global const float *b,
                         __global const float *c, __global float *r) {
    size_t i = get_global_id(0);
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
