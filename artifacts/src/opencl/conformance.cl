// Standard conformance kernel: out[i] = mix(in[i], i) for i < count.
// Argument 0 = slot 0 (read-only input), argument 1 = slot 1 (output),
// argument 2 = element count (kernel package convention).
static uint mix_word(uint x, uint i) {
    x ^= i * 0x9E3779B9u;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x + i;
}

__kernel void conformance(__global const uint *src, __global uint *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i >= count) {
        return;
    }
    dst[i] = mix_word(src[i], i);
}
