/* Image-processing style 2-D convolution on plain buffers (no image/sampler), 2-D NDRange. */
__kernel void convolve(const __global float *input, __constant float *filter, __global float *output,
                       const int width, const int height, const int filterWidth)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    if (col >= width || row >= height) return;
    const int half_w = filterWidth / 2;
    float sum = 0.0f;
    for (int fr = -half_w; fr <= half_w; fr++) {
        for (int fc = -half_w; fc <= half_w; fc++) {
            int r = clamp(row + fr, 0, height - 1);
            int c = clamp(col + fc, 0, width - 1);
            sum += input[r * width + c] * filter[(fr + half_w) * filterWidth + (fc + half_w)];
        }
    }
    output[row * width + col] = sum;
}
