// A kernel that runs as long as n says (an LCG loop): the runaway of the recovery and interrupt tests.
__kernel void spin(__global uint* out, const uint n) {
    uint x = get_global_id(0);
    for (uint a = 0; a < n; a++) { x = x * 1664525u + 1013904223u; }
    out[get_global_id(0)] = x;
}
