/* PolyBench/GPU style ATAX: y = A^T (A x), two kernels, sizes and type by #define. */
#define NX 96
#define NY 80
#define DATA_TYPE float

__kernel void atax_kernel1(__global DATA_TYPE *A, __global DATA_TYPE *x, __global DATA_TYPE *tmp, int nx, int ny)
{
    int i = get_global_id(0);
    if (i < nx)
    {
        int j;
        tmp[i] = 0;
        for (j = 0; j < ny; j++)
        {
            tmp[i] += A[i * NY + j] * x[j];
        }
    }
}

__kernel void atax_kernel2(__global DATA_TYPE *A, __global DATA_TYPE *y, __global DATA_TYPE *tmp, int nx, int ny)
{
    int j = get_global_id(0);
    if (j < ny)
    {
        int i;
        y[j] = 0;
        for (i = 0; i < nx; i++)
        {
            y[j] += A[i * NY + j] * tmp[i];
        }
    }
}
