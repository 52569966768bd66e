/**
 * gemm.cl: C = alpha * A * B + beta * C, written as PolyBench/ACC's OpenCL gemm kernel
 * (PolyBench/GPU 1.0 style): DATA_TYPE from a #define, sizes and scalars by value,
 * one work-item per element of C with j = get_global_id(0) (column), i = get_global_id(1) (row).
 * A is NI x NK, B is NK x NJ, C is NI x NJ, all row-major. The host rounds the global size
 * up to its work-group size, so the kernel checks i < ni and j < nj.
 */

#define DATA_TYPE float

__kernel void gemm(__global DATA_TYPE *a, __global DATA_TYPE *b, __global DATA_TYPE *c,
                   DATA_TYPE alpha, DATA_TYPE beta, int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);

    if ((i < ni) && (j < nj))
    {
        c[i * nj + j] *= beta;
        int k;
        for (k = 0; k < nk; k++)
        {
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
        }
    }
}
