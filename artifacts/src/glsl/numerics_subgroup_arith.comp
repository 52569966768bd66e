#version 450
// The numerics suite's subgroup sums (accelcore.conformance.numerics.features, docs/numerics.md
// "Subgroups"): the computation of sg_add in ../opencl/numerics_subgroup.cl with
// GL_KHR_shader_subgroup_arithmetic (GroupNonUniformArithmetic): the subgroup's sum of a (wrapping
// uint), the inclusive prefix sum, the subgroup id and the invocation's id in it.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) writeonly buffer R { uint r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = a[i];
    r[4 * i] = subgroupAdd(x);
    r[4 * i + 1] = subgroupInclusiveAdd(x);
    r[4 * i + 2] = gl_SubgroupID;
    r[4 * i + 3] = gl_SubgroupInvocationID;
}
