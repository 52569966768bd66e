#version 450
// The numerics suite's subgroup ids and sizes (accelcore.conformance.numerics.features,
// docs/numerics.md "Subgroups"): the computation of sg_ids in ../opencl/numerics_subgroup.cl with
// GL_KHR_shader_subgroup_basic (GroupNonUniform). GLSL has no per-subgroup actual size, so both size
// fields are gl_SubgroupSize (the spec: every subgroup of a compute workgroup whose size is a multiple
// of it is full).
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer R { uint r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    r[5 * i] = gl_SubgroupSize;
    r[5 * i + 1] = gl_SubgroupSize;
    r[5 * i + 2] = gl_NumSubgroups;
    r[5 * i + 3] = gl_SubgroupID;
    r[5 * i + 4] = gl_SubgroupInvocationID;
}
