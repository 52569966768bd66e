#version 450
// Sascha Willems style: parameters in a std140 uniform block, particles in an SSBO.
struct Particle {
    vec2 pos;
    vec2 vel;
};

layout (std140, binding = 0) buffer Pos {
    Particle particles[];
};

layout (binding = 1) uniform UBO {
    float deltaT;
    int particleCount;
    vec2 gravity;
    vec4 damping;
} ubo;

layout (local_size_x = 64) in;

void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index >= ubo.particleCount)
        return;
    vec2 vel = particles[index].vel + ubo.gravity * ubo.deltaT;
    vel *= ubo.damping.x;
    particles[index].vel = vel;
    particles[index].pos += vel * ubo.deltaT;
}
