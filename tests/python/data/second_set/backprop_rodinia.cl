/* Back-propagation kernels in the style of Rodinia's backprop: a (in+1) x (hid+1) weight matrix
 * with a bias row and column, 16 x 16 work-groups, the tiles handed in as __local pointer arguments. */

#define WIDTH 16
#define HEIGHT 16
#define ETA 0.3f
#define MOMENTUM 0.3f

__kernel void bpnn_layerforward_ocl(__global float *input_cuda,
                                    __global float *output_hidden_cuda,
                                    __global float *input_hidden_cuda,
                                    __global float *hidden_partial_sum,
                                    __local float *input_node,
                                    __local float *weight_matrix,
                                    int in,
                                    int hid)
{
    int by = get_group_id(1);
    int tx = get_local_id(0);
    int ty = get_local_id(1);

    int index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
    int index_in = HEIGHT * by + ty + 1;

    if (tx == 0)
        input_node[ty] = input_cuda[index_in];
    barrier(CLK_LOCAL_MEM_FENCE);

    weight_matrix[ty * WIDTH + tx] = input_hidden_cuda[index] * input_node[ty];
    barrier(CLK_LOCAL_MEM_FENCE);

    /* column sums of the tile, a tree over its rows */
    for (int stride = 1; stride < HEIGHT; stride *= 2) {
        if (ty % (2 * stride) == 0)
            weight_matrix[ty * WIDTH + tx] += weight_matrix[(ty + stride) * WIDTH + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (ty == 0)
        hidden_partial_sum[by * hid + tx] = weight_matrix[tx];
}

__kernel void bpnn_adjust_weights_ocl(__global float *delta,
                                      int hid,
                                      __global float *ly,
                                      int in,
                                      __global float *w,
                                      __global float *oldw)
{
    int by = get_group_id(1);
    int tx = get_local_id(0);
    int ty = get_local_id(1);

    int index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
    int index_y = HEIGHT * by + ty + 1;
    int index_x = tx + 1;

    float change = ETA * delta[index_x] * ly[index_y] + MOMENTUM * oldw[index];
    w[index] += change;
    oldw[index] = change;

    if (ty == 0 && by == 0) {
        float bias_change = ETA * delta[index_x] + MOMENTUM * oldw[index_x];
        w[index_x] += bias_change;
        oldw[index_x] = bias_change;
    }
}
