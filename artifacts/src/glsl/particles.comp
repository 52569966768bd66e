#version 450
// One explicit-Euler step of a particle system, the way Sascha Willems' compute samples
// write it: the work-group size and the time step are specialization constants, the frame
// parameters a uniform block in set 0, the particle storage buffers in set 1.
//   vel.y -= gravity * DT;  pos.xyz += vel.xyz * DT   (w components untouched)
layout(local_size_x_id = 0) in;

layout(constant_id = 1) const float DT = 0.016;

layout(std140, set = 0, binding = 0) uniform UBO {
    float gravity;
    uint count;
} ubo;

layout(std430, set = 1, binding = 0) buffer Positions { vec4 pos[]; };
layout(std430, set = 1, binding = 1) buffer Velocities { vec4 vel[]; };

void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index >= ubo.count) {
        return;
    }
    vec4 v = vel[index];
    v.y -= ubo.gravity * DT;
    vec4 p = pos[index];
    p.xyz += v.xyz * DT;
    vel[index] = v;
    pos[index] = p;
}
