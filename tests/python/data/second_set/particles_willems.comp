#version 450
// Particle step in the style of Sascha Willems' Vulkan compute examples: an std430 storage buffer
// of structs holding vec3 members next to floats (each vec3 is aligned to 16 bytes; a float after
// it fills its fourth lane) and a uniform block (std140) of the step's parameters.

struct Particle {
    vec3 pos;     // offset 0
    float mass;   // offset 12: fills the vec3's tail
    vec3 vel;     // offset 16
                  // 4 bytes of padding: the vec4 below is aligned to 16
    vec4 color;   // offset 32
};                // 48 bytes

layout (std430, binding = 0) buffer ParticleSSBO {
    Particle particles[];
};

layout (binding = 1) uniform UBO {
    float deltaT;       // 0
    vec2 attractor;     // 8
    int particleCount;  // 16
    vec3 gravity;       // 32
    float damping;      // 44
} ubo;

layout (local_size_x = 256) in;

void main()
{
    uint index = gl_GlobalInvocationID.x;
    if (index >= ubo.particleCount)
        return;

    Particle p = particles[index];
    vec3 toAttractor = vec3(ubo.attractor, 0.0) - p.pos;
    float dist2 = dot(toAttractor, toAttractor) + 0.25;
    vec3 accel = ubo.gravity + toAttractor / (p.mass * dist2);

    p.vel = (p.vel + accel * ubo.deltaT) * ubo.damping;
    p.pos += p.vel * ubo.deltaT;
    p.color.r = clamp(length(p.vel) * 0.1, 0.0, 1.0);

    particles[index] = p;
}
