// Bounded spin: each item i < count runs min(iterations, 2^24) LCG steps from seed
// i * 2654435761 + 1 and stores the result. iterations comes from the parameter buffer
// (argument 0), so a test sets the run time without rebuilding; the clamp bounds it.
__kernel void spin(__global const uint *params, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i >= count) {
        return;
    }
    uint steps = min(params[0], 16777216u);
    uint x = i * 2654435761u + 1u;
    for (uint s = 0u; s < steps; ++s) {
        x = x * 1664525u + 1013904223u;
    }
    dst[i] = x;
}
