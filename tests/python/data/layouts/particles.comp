#version 450
// Sascha Willems-style: a std430 struct with a vec3 (16-byte stride) and a std140 uniform block.
layout(local_size_x = 16) in;
struct Particle { vec3 pos; float scale; };
layout(std430, binding = 0) readonly buffer Particles { Particle particles[]; };
layout(std430, binding = 1) writeonly buffer Result { float result[]; };
layout(std140, binding = 2) uniform Params { float offset; float clamp_max; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    Particle p = particles[i];
    result[i] = min((p.pos.x + 2.0 * p.pos.y + 3.0 * p.pos.z) * p.scale + offset, clamp_max);
}
