/* Double precision, guarded the way most projects guard it. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void daxpy(const int n, const double alpha, __global const double *x, __global double *y)
{
    int i = get_global_id(0);
    if (i < n) y[i] = alpha * x[i] + y[i];
}
