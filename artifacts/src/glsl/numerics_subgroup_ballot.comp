#version 450
// The numerics suite's subgroup broadcast (accelcore.conformance.numerics.features, docs/numerics.md
// "Subgroups"): the computation of sg_broadcast in ../opencl/numerics_subgroup.cl with
// GL_KHR_shader_subgroup_ballot (GroupNonUniformBallot): the value of the subgroup's invocation 0.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) writeonly buffer R { uint r[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = a[i];
    r[4 * i] = subgroupBroadcast(x, 0u);
    r[4 * i + 1] = 0u;
    r[4 * i + 2] = gl_SubgroupID;
    r[4 * i + 3] = gl_SubgroupInvocationID;
}
