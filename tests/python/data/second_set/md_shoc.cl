/* Lennard-Jones forces over a neighbour list, in the style of SHOC's md benchmark: the precision
 * is chosen by the build options (-DSINGLE_PRECISION, otherwise double), positions and forces are
 * 4-wide vectors, the neighbour list is stored column-major (neighList[j * inum + i]). */

#ifdef SINGLE_PRECISION
#define POSVECTYPE float4
#define FORCEVECTYPE float4
#define FPTYPE float
#else
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define POSVECTYPE double4
#define FORCEVECTYPE double4
#define FPTYPE double
#endif

__kernel void compute_lj_force(__global FORCEVECTYPE *force,
                               __global POSVECTYPE *position,
                               const int neighCount,
                               __global int *neighList,
                               const FPTYPE cutsq,
                               const FPTYPE lj1,
                               const FPTYPE lj2,
                               const int inum)
{
    uint idx = get_global_id(0);

    POSVECTYPE ipos = position[idx];
    FORCEVECTYPE f = (FORCEVECTYPE)(0.0, 0.0, 0.0, 0.0);

    int j = 0;
    while (j < neighCount) {
        int jidx = neighList[j * inum + idx];
        POSVECTYPE jpos = position[jidx];

        FPTYPE delx = ipos.x - jpos.x;
        FPTYPE dely = ipos.y - jpos.y;
        FPTYPE delz = ipos.z - jpos.z;
        FPTYPE r2inv = delx * delx + dely * dely + delz * delz;

        if (r2inv < cutsq) {
            r2inv = (FPTYPE)1.0 / r2inv;
            FPTYPE r6inv = r2inv * r2inv * r2inv;
            FPTYPE forceC = r2inv * r6inv * (lj1 * r6inv - lj2);
            f.x += delx * forceC;
            f.y += dely * forceC;
            f.z += delz * forceC;
        }
        j++;
    }
    force[idx] = f;
}
