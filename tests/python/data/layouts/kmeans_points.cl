/* Rodinia-style: a struct whose long member is aligned to 8 (24 bytes, not numpy's packed 16). */
typedef struct { float weight; long assign; float cost; } Pt;

__kernel void score(__global const Pt *points, __global float *out, const int n) {
    int i = get_global_id(0);
    if (i < n) out[i] = points[i].weight * 2.0f + (float)points[i].assign + points[i].cost * 0.5f;
}
