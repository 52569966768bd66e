/* Rodinia style: a __local tile (padded against bank conflicts), barriers, a header next to the file. */
#include "common.h"

__kernel void transpose(__global float *odata, __global const float *idata,
                        int width, int height, __local float *block)
{
    unsigned int xIndex = get_global_id(0);
    unsigned int yIndex = get_global_id(1);

    if ((xIndex < width) && (yIndex < height))
    {
        block[get_local_id(1) * (BLOCK_SIZE + 1) + get_local_id(0)] = idata[IDX(yIndex, xIndex, width)];
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    xIndex = get_group_id(1) * BLOCK_SIZE + get_local_id(0);
    yIndex = get_group_id(0) * BLOCK_SIZE + get_local_id(1);
    if ((xIndex < height) && (yIndex < width))
    {
        odata[IDX(yIndex, xIndex, height)] = block[get_local_id(0) * (BLOCK_SIZE + 1) + get_local_id(1)];
    }
}
