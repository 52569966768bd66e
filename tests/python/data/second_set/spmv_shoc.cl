/* Sparse matrix-vector product in the style of SHOC's spmv: CSR with one work-item per row
 * (scalar), CSR with one vecWidth-wide slice of a work-group per row (vector, a static __local
 * array of partial sums) and ELLPACK-R. FPTYPE from -DSINGLE_PRECISION / -DK_DOUBLE_PRECISION; the
 * texture path is compiled only with -DUSE_TEXTURE. */

#ifdef SINGLE_PRECISION
#define FPTYPE float
#elif K_DOUBLE_PRECISION
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define FPTYPE double
#endif

#define VECTOR_BLOCK 128

#ifdef USE_TEXTURE
__constant sampler_t texFetchSampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
float texFetch(image2d_t image, const int idx)
{
    int2 coord = {idx % 8192, idx / 8192};
    return read_imagef(image, texFetchSampler, coord).x;
}
#define VEC_ARG image2d_t vec
#define VEC_LOAD(i) texFetch(vec, (i))
#else
#define VEC_ARG __global const FPTYPE *restrict vec
#define VEC_LOAD(i) vec[(i)]
#endif

__kernel void spmv_csr_scalar_kernel(__global const FPTYPE *restrict val,
                                     VEC_ARG,
                                     __global const int *restrict cols,
                                     __global const int *restrict rowDelimiters,
                                     const int dim,
                                     __global FPTYPE *restrict out)
{
    int myRow = get_global_id(0);
    if (myRow < dim) {
        FPTYPE t = 0;
        int start = rowDelimiters[myRow];
        int end = rowDelimiters[myRow + 1];
        for (int j = start; j < end; j++) {
            int col = cols[j];
            t += val[j] * VEC_LOAD(col);
        }
        out[myRow] = t;
    }
}

__kernel __attribute__((reqd_work_group_size(VECTOR_BLOCK, 1, 1)))
void spmv_csr_vector_kernel(__global const FPTYPE *restrict val,
                            VEC_ARG,
                            __global const int *restrict cols,
                            __global const int *restrict rowDelimiters,
                            const int dim,
                            const int vecWidth,
                            __global FPTYPE *restrict out)
{
    __local FPTYPE partialSums[VECTOR_BLOCK];

    int t = get_local_id(0);
    int id = t & (vecWidth - 1);                 /* lane within the row's slice */
    int vecsPerBlock = get_local_size(0) / vecWidth;
    int myRow = get_group_id(0) * vecsPerBlock + t / vecWidth;

    FPTYPE mySum = 0;
    if (myRow < dim) {
        int start = rowDelimiters[myRow];
        int end = rowDelimiters[myRow + 1];
        for (int j = start + id; j < end; j += vecWidth)
            mySum += val[j] * VEC_LOAD(cols[j]);
    }
    partialSums[t] = mySum;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int step = vecWidth / 2; step > 0; step >>= 1) {
        if (id < step)
            partialSums[t] += partialSums[t + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (id == 0 && myRow < dim)
        out[myRow] = partialSums[t];
}

__kernel void spmv_ellpackr_kernel(__global const FPTYPE *restrict val,
                                   VEC_ARG,
                                   __global const int *restrict cols,
                                   __global const int *restrict rowLengths,
                                   const int dim,
                                   __global FPTYPE *restrict out)
{
    int t = get_global_id(0);
    if (t < dim) {
        FPTYPE result = 0;
        int max = rowLengths[t];
        for (int i = 0; i < max; i++) {
            int ind = i * dim + t;   /* column-major: entry i of every row, then entry i + 1 */
            result += val[ind] * VEC_LOAD(cols[ind]);
        }
        out[t] = result;
    }
}
