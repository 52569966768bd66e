// Bit-exact u32 integer ops: for each i < count,
// out[4i] = a+b, out[4i+1] = a*b, out[4i+2] = a^b, out[4i+3] = (a << (b & 31)) ^ (a >> ((b >> 5) & 31)).
__kernel void intops(__global const uint *a_in, __global const uint *b_in, __global uint4 *dst, const uint count) {
    uint i = (uint)get_global_id(0);
    if (i >= count) {
        return;
    }
    uint a = a_in[i];
    uint b = b_in[i];
    dst[i] = (uint4)(a + b, a * b, a ^ b, (a << (b & 31u)) ^ (a >> ((b >> 5u) & 31u)));
}
