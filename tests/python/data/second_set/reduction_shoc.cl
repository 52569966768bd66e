/* Two-pass sum in the style of SHOC's reduction: FPTYPE comes from the build options
 * (-DFPTYPE=float or -DFPTYPE=double), each work-group folds a grid-stride slice of the input
 * into __local memory (a __local pointer argument sized by the host), then one work-item adds the
 * partial sums. */

#ifndef FPTYPE
#error "build with -DFPTYPE=float or -DFPTYPE=double"
#endif

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void reduce(__global const FPTYPE *g_idata,
                     __global FPTYPE *g_odata,
                     __local FPTYPE *sdata,
                     const unsigned int n)
{
    const unsigned int tid = get_local_id(0);
    const unsigned int blockSize = get_local_size(0);
    const unsigned int gridSize = blockSize * 2 * get_num_groups(0);
    unsigned int i = get_group_id(0) * (blockSize * 2) + tid;

    sdata[tid] = 0;
    while (i < n) {
        sdata[tid] += g_idata[i] + g_idata[i + blockSize];
        i += gridSize;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (tid == 0)
        g_odata[get_group_id(0)] = sdata[0];
}

__kernel void reduceNoLocal(__global FPTYPE *g_idata,
                            __global FPTYPE *g_odata,
                            unsigned int n)
{
    FPTYPE sum = 0;
    for (unsigned int i = 0; i < n; i++)
        sum += g_idata[i];
    g_odata[0] = sum;
}
