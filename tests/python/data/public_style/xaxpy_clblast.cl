/* CLBlast style: tuning parameters come from -D build options, vector loads of VW floats. */
#ifndef WGS
  #define WGS 64
#endif
#ifndef WPT
  #define WPT 1
#endif
#define real float
#define realV float4

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void XaxpyFast(const int n, const real alpha,
               const __global real* restrict xgm, __global real* ygm)
{
  #pragma unroll
  for (int _w = 0; _w < WPT; _w += 1) {
    const int id = _w * get_global_size(0) + get_global_id(0);
    if (id * 4 < n) {
      realV xv = vload4(id, xgm);
      realV yv = vload4(id, ygm);
      yv = alpha * xv + yv;
      vstore4(yv, id, ygm);
    }
  }
}
