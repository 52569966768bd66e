#version 450
// N-body velocity step in the style of Sascha Willems' computenbody example: a shared-memory tile
// of SHARED_DATA_SIZE positions, specialization constants for the tile size (also the work-group
// size, local_size_x_id) and the physics, a uniform block with the time step and particle count.

struct Particle {
    vec4 pos;   // xyz = position, w = mass
    vec4 vel;   // xyz = velocity, w = unused (kept)
};

layout (std430, binding = 0) buffer Pos {
    Particle particles[];
};

layout (binding = 1) uniform UBO {
    float deltaT;
    int particleCount;
} ubo;

layout (constant_id = 0) const int SHARED_DATA_SIZE = 512;
layout (constant_id = 1) const float GRAVITY = 0.002;
layout (constant_id = 2) const float POWER = 0.75;
layout (constant_id = 3) const float SOFTEN = 0.0075;

layout (local_size_x_id = 0) in;

shared vec4 sharedData[SHARED_DATA_SIZE];

void main()
{
    uint index = gl_GlobalInvocationID.x;
    bool in_range = index < uint(ubo.particleCount);
    vec4 position = in_range ? particles[index].pos : vec4(0.0);
    vec4 velocity = in_range ? particles[index].vel : vec4(0.0);
    vec4 acceleration = vec4(0.0);

    for (int i = 0; i < ubo.particleCount; i += SHARED_DATA_SIZE) {
        uint src = uint(i) + gl_LocalInvocationID.x;
        sharedData[gl_LocalInvocationID.x] = (src < uint(ubo.particleCount)) ? particles[src].pos : vec4(0.0);
        memoryBarrierShared();
        barrier();

        for (int j = 0; j < SHARED_DATA_SIZE; j++) {
            vec4 other = sharedData[j];
            vec3 len = other.xyz - position.xyz;
            acceleration.xyz += GRAVITY * len * other.w / pow(dot(len, len) + SOFTEN, POWER);
        }
        memoryBarrierShared();
        barrier();
    }

    if (in_range) {
        particles[index].vel.xyz += ubo.deltaT * acceleration.xyz;
    }
}
