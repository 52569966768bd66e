/* AMD APP SDK / GPU Gems style: an array of structs in a __global buffer, updated in place. */
typedef struct {
    float4 pos;   /* xyz position, w mass */
    float4 vel;
} Body;

__kernel void integrate(__global Body *bodies, const float dt, const int count)
{
    int i = get_global_id(0);
    if (i >= count) return;
    Body b = bodies[i];
    b.pos.xyz += b.vel.xyz * dt;
    bodies[i] = b;
}
