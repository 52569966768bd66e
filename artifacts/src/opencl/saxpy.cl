// saxpy: out[i] = a * x[i] + y[i] (f32). a comes from the parameter buffer (argument 3);
// element count = argument 4.
__kernel void saxpy(__global const float *x, __global const float *y, __global float *dst,
                    __global const float *params, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i >= count) {
        return;
    }
    dst[i] = params[0] * x[i] + y[i];
}
