#version 450
// Broadcasting element-wise add in the style of ggml's Vulkan shaders: the element types come from
// the build options (-DA_TYPE=float -DB_TYPE=float -DD_TYPE=float, or float16_t), the bindings are
// blocks A, B and D holding data_a, data_b and data_d, and one push-constant block carries the
// four extents and four element strides of each tensor, the packed misalignment offsets and
// three spare parameters. b is broadcast over a by taking each index modulo b's extent.

#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#ifndef FLOAT_TYPE
#define FLOAT_TYPE float
#endif

layout (push_constant) uniform parameter
{
    uint ne;
    uint ne00; uint ne01; uint ne02; uint ne03; uint nb00; uint nb01; uint nb02; uint nb03;
    uint ne10; uint ne11; uint ne12; uint ne13; uint nb10; uint nb11; uint nb12; uint nb13;
    uint ne20; uint ne21; uint ne22; uint ne23; uint nb20; uint nb21; uint nb22; uint nb23;
    uint misalign_offsets;
    float param1; float param2; int param3;
} p;

layout (local_size_x = 512, local_size_y = 1, local_size_z = 1) in;

layout (binding = 0) readonly buffer A {A_TYPE data_a[];};
layout (binding = 1) readonly buffer B {B_TYPE data_b[];};
layout (binding = 2) writeonly buffer D {D_TYPE data_d[];};

uint get_idx() {
    return gl_GlobalInvocationID.z * 262144 + gl_GlobalInvocationID.y * 512 + gl_GlobalInvocationID.x;
}

uint get_aoffset() { return p.misalign_offsets >> 16; }
uint get_boffset() { return (p.misalign_offsets >> 8) & 0xFF; }
uint get_doffset() { return p.misalign_offsets & 0xFF; }

void get_indices(uint idx, out uint i00, out uint i01, out uint i02, out uint i03) {
    i03 = idx / (p.ne02 * p.ne01 * p.ne00);
    const uint i03_offset = i03 * p.ne02 * p.ne01 * p.ne00;
    i02 = (idx - i03_offset) / (p.ne01 * p.ne00);
    const uint i02_offset = i02 * p.ne01 * p.ne00;
    i01 = (idx - i03_offset - i02_offset) / p.ne00;
    i00 = idx - i03_offset - i02_offset - i01 * p.ne00;
}

uint src0_idx(uint i00, uint i01, uint i02, uint i03) {
    return i03 * p.nb03 + i02 * p.nb02 + i01 * p.nb01 + i00 * p.nb00;
}

uint src1_idx(uint i00, uint i01, uint i02, uint i03) {
    return (i03 % p.ne13) * p.nb13 + (i02 % p.ne12) * p.nb12 + (i01 % p.ne11) * p.nb11 + (i00 % p.ne10) * p.nb10;
}

uint dst_idx(uint i00, uint i01, uint i02, uint i03) {
    return i03 * p.nb23 + i02 * p.nb22 + i01 * p.nb21 + i00 * p.nb20;
}

void main() {
    const uint idx = get_idx();
    if (idx >= p.ne) {
        return;
    }
    uint i00, i01, i02, i03;
    get_indices(idx, i00, i01, i02, i03);
    data_d[get_doffset() + dst_idx(i00, i01, i02, i03)] = D_TYPE(
        FLOAT_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]) +
        FLOAT_TYPE(data_b[get_boffset() + src1_idx(i00, i01, i02, i03)]));
}
