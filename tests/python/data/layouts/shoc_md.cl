/* SHOC-style: the precision is chosen by the build options. */
#ifdef SINGLE_PRECISION
#define FPTYPE float
#else
#define FPTYPE double
#endif

__kernel void scale(__global FPTYPE *force, const FPTYPE cutsq, const int n) {
    int i = get_global_id(0);
    if (i < n) force[i] = force[i] * cutsq;
}
