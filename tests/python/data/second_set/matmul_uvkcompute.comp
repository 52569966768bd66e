#version 450 core
// Tiled matrix multiply in the style of uVkCompute's matmul benchmarks: C = A * B with the matrix
// sizes and the tile sizes as specialization constants (the work-group size is the tile,
// local_size_x_id / local_size_y_id), vec4 loads, and the tiles of A and B in shared arrays sized
// by the specialization constants. Each invocation computes one vec4 of C. M must be a multiple
// of WG_Y, N of 4 * WG_X and K of TILE_K (a multiple of 4), as the benchmark requires.

layout (binding = 0) buffer InputA { vec4 x[]; } inputA;   // M x K, row-major
layout (binding = 1) buffer InputB { vec4 x[]; } inputB;   // K x N, row-major
layout (binding = 2) buffer Output { vec4 x[]; } outputO;  // M x N, row-major

layout (constant_id = 0) const uint M = 64;
layout (constant_id = 1) const uint N = 64;
layout (constant_id = 2) const uint K = 64;
layout (constant_id = 3) const uint WG_X = 4;     // vec4 columns of C per tile
layout (constant_id = 4) const uint WG_Y = 8;     // rows of C per tile
layout (constant_id = 5) const uint TILE_K = 8;   // depth of one step

layout (local_size_x_id = 3, local_size_y_id = 4, local_size_z = 1) in;

shared vec4 tileA[WG_Y][TILE_K / 4];
shared vec4 tileB[TILE_K][WG_X];

void main()
{
    const uint lx = gl_LocalInvocationID.x;
    const uint ly = gl_LocalInvocationID.y;
    const uint col4 = gl_GlobalInvocationID.x;    // vec4 column of C
    const uint row = gl_GlobalInvocationID.y;     // row of C
    const uint K4 = K / 4;
    const uint N4 = N / 4;

    vec4 acc = vec4(0.0);
    for (uint k0 = 0; k0 < K; k0 += TILE_K) {
        for (uint c = lx; c < TILE_K / 4; c += WG_X)
            tileA[ly][c] = inputA.x[row * K4 + k0 / 4 + c];
        for (uint r = ly; r < TILE_K; r += WG_Y)
            tileB[r][lx] = inputB.x[(k0 + r) * N4 + col4];
        barrier();

        for (uint c = 0; c < TILE_K / 4; c++) {
            vec4 a = tileA[ly][c];
            acc += a.x * tileB[4 * c + 0][lx];
            acc += a.y * tileB[4 * c + 1][lx];
            acc += a.z * tileB[4 * c + 2][lx];
            acc += a.w * tileB[4 * c + 3][lx];
        }
        barrier();
    }
    outputO.x[row * N4 + col4] = acc;
}
