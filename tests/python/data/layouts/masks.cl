/* A char mask (numpy bool is accepted for 8-bit integer elements) and a signed int buffer. */
__kernel void masked(__global const uchar *mask, __global const int *v, __global int *out) {
    int i = get_global_id(0);
    out[i] = mask[i] ? v[i] : -v[i];
}
