/* 7-point 3-D Jacobi step in the style of Parboil's stencil (block2D_reg_tiling): a 2-D grid over
 * the interior (i, j), a loop along k keeping bottom/current/top in registers, and the current
 * plane shared through a __local tile handed in by the host. Boundary cells are not written. */

#define Index3D(_nx, _ny, _i, _j, _k) ((_i) + (_nx) * ((_j) + (_ny) * (_k)))

__kernel void block2D_reg_tiling(float c0,
                                 float c1,
                                 __global float *A0,
                                 __global float *Anext,
                                 int nx,
                                 int ny,
                                 int nz,
                                 __local float *sh_A0)
{
    const int i = get_global_id(0) + 1;
    const int j = get_global_id(1) + 1;
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int lx = get_local_size(0);
    const int ly = get_local_size(1);
    const bool inside = (i < nx - 1) && (j < ny - 1);

    float bottom = 0.0f, current = 0.0f, top = 0.0f;
    if (inside) {
        bottom = A0[Index3D(nx, ny, i, j, 0)];
        current = A0[Index3D(nx, ny, i, j, 1)];
    }

    for (int k = 1; k < nz - 1; k++) {
        if (inside)
            top = A0[Index3D(nx, ny, i, j, k + 1)];
        sh_A0[tx + lx * ty] = current;
        barrier(CLK_LOCAL_MEM_FENCE);

        if (inside) {
            float west = (tx > 0) ? sh_A0[(tx - 1) + lx * ty] : A0[Index3D(nx, ny, i - 1, j, k)];
            float east = (tx < lx - 1 && i + 1 < nx - 1) ? sh_A0[(tx + 1) + lx * ty] : A0[Index3D(nx, ny, i + 1, j, k)];
            float south = (ty > 0) ? sh_A0[tx + lx * (ty - 1)] : A0[Index3D(nx, ny, i, j - 1, k)];
            float north = (ty < ly - 1 && j + 1 < ny - 1) ? sh_A0[tx + lx * (ty + 1)] : A0[Index3D(nx, ny, i, j + 1, k)];
            Anext[Index3D(nx, ny, i, j, k)] = (top + bottom + west + east + south + north) * c1 - current * c0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        bottom = current;
        current = top;
    }
}
