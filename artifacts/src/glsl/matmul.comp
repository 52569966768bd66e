#version 450
// Tiled f32 matmul C (M x N) = A (M x K) * B (K x N), row-major; M, N, K from the parameter
// buffer (slot 3). Each workgroup of 64 computes 8x8 tiles of C, striding over all tiles
// (any grid size covers the matrix), staging 8x8 tiles of A and B in shared memory.
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer A { float values[]; } a;
layout(set = 0, binding = 1) readonly buffer B { float values[]; } b;
layout(set = 0, binding = 2) writeonly buffer C { float values[]; } c;
layout(set = 0, binding = 3) readonly buffer Params { uint m; uint n; uint k; } params;

shared float tile_a[8][8];
shared float tile_b[8][8];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint ty = lid / 8u;
    uint tx = lid % 8u;
    uint m = params.m;
    uint n = params.n;
    uint k = params.k;
    uint tiles_x = (n + 7u) / 8u;
    uint tiles = tiles_x * ((m + 7u) / 8u);
    for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x) {
        uint row = (t / tiles_x) * 8u + ty;
        uint col = (t % tiles_x) * 8u + tx;
        float acc = 0.0;
        for (uint k0 = 0u; k0 < k; k0 += 8u) {
            uint ka = k0 + tx;
            uint kb = k0 + ty;
            tile_a[ty][tx] = (row < m && ka < k) ? a.values[row * k + ka] : 0.0;
            tile_b[ty][tx] = (kb < k && col < n) ? b.values[kb * n + col] : 0.0;
            barrier();
            for (uint kk = 0u; kk < 8u; ++kk) {
                acc += tile_a[ty][kk] * tile_b[kk][tx];
            }
            barrier();
        }
        if (row < m && col < n) {
            c.values[row * n + col] = acc;
        }
    }
}
