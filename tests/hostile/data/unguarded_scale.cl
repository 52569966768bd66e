kernel void scale(global const float* x, global float* y, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i];
}
