#version 450
// Tiled matrix transpose through shared memory (the CUDA SDK / NVIDIA "efficient transpose"
// pattern): src is height x width, dst = its transpose (width x height), both row-major f32.
// Each 16x16 work-group stages one tile, padded by a column against bank conflicts, and
// writes it back transposed so both the loads and the stores are row-contiguous.
#define TILE 16

layout(local_size_x = TILE, local_size_y = TILE, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };

layout(push_constant) uniform Size {
    uint width;
    uint height;
} size;

shared float tile[TILE][TILE + 1];

void main() {
    uvec2 base = gl_WorkGroupID.xy * TILE;
    uvec2 local = gl_LocalInvocationID.xy;

    uint x = base.x + local.x;
    uint y = base.y + local.y;
    if (x < size.width && y < size.height) {
        tile[local.y][local.x] = src[y * size.width + x];
    }
    barrier();

    x = base.y + local.x;
    y = base.x + local.y;
    if (x < size.height && y < size.width) {
        dst[y * size.height + x] = tile[local.x][local.y];
    }
}
