#version 450
// Standard conformance kernel: out[i] = mix(in[i], i) for i < count.
// Slot 0 = binding 0 (read-only input), slot 1 = binding 1 (write-only output),
// element count = 4-byte push constant at offset 0 (kernel package convention).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer Input { uint values[]; } src;
layout(set = 0, binding = 1) writeonly buffer Output { uint values[]; } dst;
layout(push_constant) uniform Params { uint count; } params;

uint mix_word(uint x, uint i) {
    x ^= i * 0x9E3779B9u;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x + i;
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= params.count) {
        return;
    }
    dst.values[i] = mix_word(src.values[i], i);
}
