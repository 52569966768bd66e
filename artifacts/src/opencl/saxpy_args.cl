// SAXPY the way the Khronos OpenCL SDK and pyopencl examples write it: y = a * x + y (f32),
// the scalar a and the length n passed by value. Work-items past n do nothing, so the host
// may round the global size up.
__kernel void saxpy(const float a, __global const float* x, __global float* y, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
