/* Particle potential and forces between neighbouring boxes, in the style of Rodinia's lavaMD:
 * typedef'd structs passed by value (par_str, dim_str with long members) and through __global
 * pointers (box_str with a nested array of nei_str, FOUR_VECTOR records), __local copies of the
 * home and neighbour boxes. One work-group per box. */

#define fp float

#ifndef NUMBER_PAR_PER_BOX
#define NUMBER_PAR_PER_BOX 32
#endif
#ifndef NUMBER_THREADS
#define NUMBER_THREADS 32
#endif

#define DOT(A, B) ((A.x) * (B.x) + (A.y) * (B.y) + (A.z) * (B.z))

typedef struct {
    fp x, y, z;
} THREE_VECTOR;

typedef struct {
    fp v, x, y, z;
} FOUR_VECTOR;

typedef struct nei_str {
    int x, y, z;   /* neighbour box coordinates */
    int number;    /* neighbour box index */
    long offset;   /* its first particle */
} nei_str;

typedef struct box_str {
    int x, y, z;
    int number;
    long offset;
    int nn;        /* neighbours used */
    nei_str nei[26];
} box_str;

typedef struct par_str {
    fp alpha;
} par_str;

typedef struct dim_str {
    int cur_arg;
    int arch_arg;
    int cores_arg;
    int boxes1d_arg;
    long number_boxes;
    long box_mem;
    long space_elem;
    long space_mem;
    long space_mem2;
} dim_str;

__kernel void kernel_gpu_opencl(par_str d_par_gpu,
                                dim_str d_dim_gpu,
                                __global box_str *d_box_gpu,
                                __global FOUR_VECTOR *d_rv_gpu,
                                __global fp *d_qv_gpu,
                                __global FOUR_VECTOR *d_fv_gpu)
{
    int bx = get_group_id(0);
    int tx = get_local_id(0);

    __local FOUR_VECTOR rA_shared[NUMBER_PAR_PER_BOX];
    __local FOUR_VECTOR rB_shared[NUMBER_PAR_PER_BOX];
    __local fp qB_shared[NUMBER_PAR_PER_BOX];

    if (bx >= d_dim_gpu.number_boxes)
        return;   /* whole work-groups leave together */

    fp a2 = 2.0f * d_par_gpu.alpha * d_par_gpu.alpha;
    long first_i = d_box_gpu[bx].offset;

    for (int w = tx; w < NUMBER_PAR_PER_BOX; w += NUMBER_THREADS)
        rA_shared[w] = d_rv_gpu[first_i + w];
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int k = 0; k < 1 + d_box_gpu[bx].nn; k++) {
        int pointer = (k == 0) ? bx : d_box_gpu[bx].nei[k - 1].number;
        long first_j = d_box_gpu[pointer].offset;

        for (int w = tx; w < NUMBER_PAR_PER_BOX; w += NUMBER_THREADS) {
            rB_shared[w] = d_rv_gpu[first_j + w];
            qB_shared[w] = d_qv_gpu[first_j + w];
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int i = tx; i < NUMBER_PAR_PER_BOX; i += NUMBER_THREADS) {
            FOUR_VECTOR fA = d_fv_gpu[first_i + i];
            for (int j = 0; j < NUMBER_PAR_PER_BOX; j++) {
                fp r2 = rA_shared[i].v + rB_shared[j].v - DOT(rA_shared[i], rB_shared[j]);
                fp u2 = a2 * r2;
                fp vij = exp(-u2);
                fp fs = 2.0f * vij;
                THREE_VECTOR d;
                d.x = rA_shared[i].x - rB_shared[j].x;
                d.y = rA_shared[i].y - rB_shared[j].y;
                d.z = rA_shared[i].z - rB_shared[j].z;
                fA.v += qB_shared[j] * vij;
                fA.x += qB_shared[j] * fs * d.x;
                fA.y += qB_shared[j] * fs * d.y;
                fA.z += qB_shared[j] * fs * d.z;
            }
            d_fv_gpu[first_i + i] = fA;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
