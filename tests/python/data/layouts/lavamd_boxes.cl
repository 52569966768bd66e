/* Rodinia lavaMD-style: a buffer of structs holding an array of structs, and a struct named by its tag. */
typedef struct { int x; int number; } nei_str;
typedef struct { int offset; nei_str nei[26]; } box_str;
typedef struct tag { float lat; float lng; } LatLong;

__kernel void neighbours(__global const box_str *boxes, __global const struct tag *where, __global float *out) {
    int i = get_global_id(0);
    float s = (float)boxes[i].offset;
    for (int k = 0; k < 26; k++) s += (float)(boxes[i].nei[k].x * boxes[i].nei[k].number);
    out[i] = s + where[i].lat - where[i].lng;
}
