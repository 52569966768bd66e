#version 450
// Kompute style: a specialisation constant, a push constant block, one invocation per group.
layout (local_size_x = 1) in;

layout (constant_id = 0) const float addend = 0;

layout (push_constant) uniform PushConstants {
    float val;
} push_const;

layout (set = 0, binding = 0) buffer buf_in_a { float in_a[]; };
layout (set = 0, binding = 1) buffer buf_out_a { float out_a[]; };

void main() {
    uint index = gl_GlobalInvocationID.x;
    out_a[index] = in_a[index] * push_const.val + addend;
}
