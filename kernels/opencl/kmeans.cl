/* kmeans.cl -- the k-means distance ops for the opencl backend (backend.h
 * kmeans_*; host side: opencl-kmeans.c; the CUDA twin and the contract:
 * kernels/cuda/cuda-kmeans.cu).  One work-item per frame, the centres in
 * local memory by tiles of KM_KT (or read from global memory when a tile
 * does not fit), KM_KT running sums per work-item.  Each distance is
 * summed over d = 0..D-1 in order with contraction into fused
 * multiply-adds off, so it has the bits of the CPU implementation
 * (kernels/cpu/kmeans.c); centres in increasing index, strict <. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define KM_KT 16
#define KM_WG 64

__kernel __attribute__((reqd_work_group_size(KM_WG, 1, 1))) void gh_kmeans_nearest(
    __global const double *Zt, long N, int D, __global const double *C, int k0, int nk, int reset, int shared_c,
    __global double *d2, __global int *asg, __local double *cs) {
#pragma OPENCL FP_CONTRACT OFF
  const long i = get_global_id(0);
  const int lt = get_local_id(0);
  const int live = i < N;
  double bd = live ? d2[i] : 0.0;
  int best = live ? asg[i] : 0;
  for (int kb = 0; kb < nk; kb += KM_KT) {
    const int n = nk - kb < KM_KT ? nk - kb : KM_KT;
    __global const double *cg = C + (long)kb * D;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (shared_c)
      for (int e = lt; e < n * D; e += KM_WG) cs[e] = cg[e];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (live) {
      double s[KM_KT];
      for (int kk = 0; kk < KM_KT; ++kk) s[kk] = 0.0;
      for (int d = 0; d < D; ++d) {
        const double zd = Zt[(long)d * N + i];
        for (int kk = 0; kk < KM_KT; ++kk)
          if (kk < n) {
            const double t = zd - (shared_c ? cs[kk * D + d] : cg[kk * D + d]);
            s[kk] = s[kk] + t * t;
          }
      }
      for (int kk = 0; kk < KM_KT; ++kk)
        if (kk < n && ((reset && kb + kk == 0) || s[kk] < bd)) {
          bd = s[kk];
          best = k0 + kb + kk;
        }
    }
  }
  if (live) {
    d2[i] = bd;
    asg[i] = best;
  }
}
#endif
