// Tiled f32 matmul C (M x N) = A (M x K) * B (K x N), row-major; M, N, K from the parameter
// buffer (argument 3). Each work-group of 64 computes 8x8 tiles of C, striding over all tiles
// (any grid size covers the matrix), staging 8x8 tiles of A and B in local memory.
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void matmul(__global const float *a, __global const float *b, __global float *c, __global const uint *params) {
    __local float tile_a[8][8];
    __local float tile_b[8][8];
    uint lid = (uint)get_local_id(0);
    uint ty = lid / 8u;
    uint tx = lid % 8u;
    uint m = params[0];
    uint n = params[1];
    uint k = params[2];
    uint tiles_x = (n + 7u) / 8u;
    uint tiles = tiles_x * ((m + 7u) / 8u);
    for (uint t = (uint)get_group_id(0); t < tiles; t += (uint)get_num_groups(0)) {
        uint row = (t / tiles_x) * 8u + ty;
        uint col = (t % tiles_x) * 8u + tx;
        float acc = 0.0f;
        for (uint k0 = 0u; k0 < k; k0 += 8u) {
            uint ka = k0 + tx;
            uint kb = k0 + ty;
            tile_a[ty][tx] = (row < m && ka < k) ? a[row * k + ka] : 0.0f;
            tile_b[ty][tx] = (kb < k && col < n) ? b[kb * n + col] : 0.0f;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint kk = 0u; kk < 8u; ++kk) {
                acc += tile_a[ty][kk] * tile_b[kk][tx];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (row < m && col < n) {
            c[row * n + col] = acc;
        }
    }
}
