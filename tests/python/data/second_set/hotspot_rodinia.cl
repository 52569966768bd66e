/* Thermal simulation step in the style of Rodinia's hotspot: a BLOCK_SIZE x BLOCK_SIZE tile in
 * local memory (the qualifiers spelled without underscores, as Rodinia does), a "pyramid" of
 * `iteration` time steps per launch (each launch computes the inner (BLOCK_SIZE - 2*iteration)^2
 * cells of its tile), neighbours clamped at the chip's edges. */

#define BLOCK_SIZE 16
#define IN_RANGE(x, lo, hi) ((x) >= (lo) && (x) <= (hi))
#define AMB_TEMP 80.0f

kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, BLOCK_SIZE, 1)))
void hotspot(int iteration,
             global float *power,
             global float *temp_src,
             global float *temp_dst,
             int grid_cols,
             int grid_rows,
             int border_cols,
             int border_rows,
             float Cap,
             float Rx,
             float Ry,
             float Rz,
             float step)
{
    local float temp_on_tile[BLOCK_SIZE][BLOCK_SIZE];
    local float power_on_tile[BLOCK_SIZE][BLOCK_SIZE];
    local float temp_next[BLOCK_SIZE][BLOCK_SIZE];

    float step_div_cap = step / Cap;
    float Rx_1 = 1.0f / Rx;
    float Ry_1 = 1.0f / Ry;
    float Rz_1 = 1.0f / Rz;

    int bx = get_group_id(0);
    int by = get_group_id(1);
    int tx = get_local_id(0);
    int ty = get_local_id(1);

    /* the tile overlaps its neighbours by `iteration` cells on each side */
    int small_cols = BLOCK_SIZE - 2 * iteration;
    int small_rows = BLOCK_SIZE - 2 * iteration;
    int blk_x = small_cols * bx - border_cols;
    int blk_y = small_rows * by - border_rows;

    int gx = blk_x + tx;
    int gy = blk_y + ty;
    int index = grid_cols * gy + gx;

    if (IN_RANGE(gx, 0, grid_cols - 1) && IN_RANGE(gy, 0, grid_rows - 1)) {
        temp_on_tile[ty][tx] = temp_src[index];
        power_on_tile[ty][tx] = power[index];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* the part of the tile that lies on the chip */
    int valid_x_min = (blk_x < 0) ? -blk_x : 0;
    int valid_y_min = (blk_y < 0) ? -blk_y : 0;
    int valid_x_max = (blk_x + BLOCK_SIZE - 1 > grid_cols - 1) ? BLOCK_SIZE - 1 - (blk_x + BLOCK_SIZE - grid_cols)
                                                                : BLOCK_SIZE - 1;
    int valid_y_max = (blk_y + BLOCK_SIZE - 1 > grid_rows - 1) ? BLOCK_SIZE - 1 - (blk_y + BLOCK_SIZE - grid_rows)
                                                                : BLOCK_SIZE - 1;

    int N = (ty - 1 < valid_y_min) ? valid_y_min : ty - 1;
    int S = (ty + 1 > valid_y_max) ? valid_y_max : ty + 1;
    int W = (tx - 1 < valid_x_min) ? valid_x_min : tx - 1;
    int E = (tx + 1 > valid_x_max) ? valid_x_max : tx + 1;

    bool computed = false;
    for (int i = 0; i < iteration; i++) {
        computed = false;
        if (IN_RANGE(tx, i + 1, BLOCK_SIZE - i - 2) && IN_RANGE(ty, i + 1, BLOCK_SIZE - i - 2) &&
            IN_RANGE(tx, valid_x_min, valid_x_max) && IN_RANGE(ty, valid_y_min, valid_y_max)) {
            computed = true;
            float t = temp_on_tile[ty][tx];
            temp_next[ty][tx] = t + step_div_cap * (power_on_tile[ty][tx] +
                                                    (temp_on_tile[S][tx] + temp_on_tile[N][tx] - 2.0f * t) * Ry_1 +
                                                    (temp_on_tile[ty][E] + temp_on_tile[ty][W] - 2.0f * t) * Rx_1 +
                                                    (AMB_TEMP - t) * Rz_1);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i == iteration - 1)
            break;
        if (computed)
            temp_on_tile[ty][tx] = temp_next[ty][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (computed)
        temp_dst[index] = temp_next[ty][tx];
}
