/* Single-precision GEMM in the style of Parboil's sgemm (mysgemmNT): column-major matrices,
 * C = alpha * A * B^T + beta * C, register tiling along TILE_N columns per work-item and one
 * TILE_TB_HEIGHT x TILE_N tile of B in __local memory per step. Every dimension must be a multiple
 * of its tile (M of TILE_M, N of TILE_N, K of TILE_TB_HEIGHT), as in Parboil. */

#define TILE_N 16
#define TILE_TB_HEIGHT 8
#define TILE_M (TILE_N * TILE_TB_HEIGHT)

__kernel __attribute__((reqd_work_group_size(TILE_N, TILE_TB_HEIGHT, 1)))
void mysgemmNT(__global const float *A, int lda,
               __global const float *B, int ldb,
               __global float *C, int ldc,
               int k, float alpha, float beta)
{
    __local float b_s[TILE_TB_HEIGHT][TILE_N];
    float c[TILE_N];
    for (int t = 0; t < TILE_N; t++)
        c[t] = 0.0f;

    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int m = get_group_id(0) * TILE_M + ty * TILE_N + tx;   /* the row of A and C this item owns */
    const int n0 = get_group_id(1) * TILE_N;                      /* the tile's first column of C */

    for (int kk = 0; kk < k; kk += TILE_TB_HEIGHT) {
        b_s[ty][tx] = B[(n0 + tx) + ldb * (kk + ty)];              /* B^T: B is stored n x k */
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < TILE_TB_HEIGHT; j++) {
            float a = A[m + lda * (kk + j)];
            for (int t = 0; t < TILE_N; t++)
                c[t] += a * b_s[j][t];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int t = 0; t < TILE_N; t++) {
        int idx = m + ldc * (n0 + t);
        C[idx] = alpha * c[t] + beta * C[idx];
    }
}
