#version 450
// Bit-exact u32 integer ops: for each i < count,
// out[4i] = a+b, out[4i+1] = a*b, out[4i+2] = a^b, out[4i+3] = (a << (b & 31)) ^ (a >> ((b >> 5) & 31)).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer A { uint values[]; } a_in;
layout(set = 0, binding = 1) readonly buffer B { uint values[]; } b_in;
layout(set = 0, binding = 2) writeonly buffer Out { uvec4 values[]; } dst;
layout(push_constant) uniform Count { uint count; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    uint a = a_in.values[i];
    uint b = b_in.values[i];
    dst.values[i] = uvec4(a + b, a * b, a ^ b, (a << (b & 31u)) ^ (a >> ((b >> 5u) & 31u)));
}
