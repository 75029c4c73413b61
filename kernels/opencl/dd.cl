/* dd.cl -- backend.h acc_commit for the opencl backend (host side:
 * opencl.c ocl_acc_commit; the CUDA twin: kernels/cuda/cuda.cu
 * k_acc_commit; the arithmetic: lib/base/dd.h).  One work-item per
 * accumulator value: the block's double accumulators acc[0, n) are added
 * into the double-double master (hi at master[off_hi + i], lo at
 * master[off_lo + i]) with Knuth's TwoSum, renormalised, and zeroed.
 * Additions and subtractions only: nothing to contract, and the program
 * is built without -cl-unsafe-math-optimizations (reassociation would
 * break TwoSum). */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define DD_MASTER_ZERO 1 /* backend.h GH_ACC_MASTER_ZERO */
#define DD_COMMIT 2      /* GH_ACC_COMMIT */
#define DD_ROUND 4       /* GH_ACC_MASTER_ROUND */

__kernel void gh_acc_commit(__global double *acc, __global double *master, long off_hi, long off_lo, long n,
                            int flags) {
  const long i = get_global_id(0);
  if (i >= n) return;
  double h = (flags & DD_MASTER_ZERO) ? 0.0 : master[off_hi + i];
  double l = (flags & DD_MASTER_ZERO) ? 0.0 : master[off_lo + i];
  if (flags & DD_COMMIT) {
    const double a = acc[i];
    double s = h + a, bb = s - h;
    double e = (h - (s - bb)) + (a - bb);
    e += l;
    h = s + e;
    bb = h - s;
    l = (s - (h - bb)) + (e - bb);
    acc[i] = 0.0;
  }
  master[off_hi + i] = h;
  master[off_lo + i] = l;
  if (flags & DD_ROUND) acc[i] = h + l;
}
#endif
