/* cpu-dd.h -- backend.h acc_commit for the CPU backends (kernels/cpu/cpu.c,
 * cpu-blas.c): the elementwise double-double step of lib/base/dd.h over
 * one stretch of accumulators acc[n] and its master hi[n], lo[n]. */
#ifndef GH_CPU_DD_H
#define GH_CPU_DD_H
#include <stdint.h>

#include "backend.h"
#include "base/dd.h"

static inline void gh_cpu_acc_commit(double *acc, double *hi, double *lo, int64_t n, int flags) {
#pragma omp parallel for schedule(static) if (n > ((int64_t)1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    if (flags & GH_ACC_MASTER_ZERO) hi[i] = lo[i] = 0.0;
    if (flags & GH_ACC_COMMIT) {
      gh_dd_add(&hi[i], &lo[i], acc[i]);
      acc[i] = 0.0;
    }
    if (flags & GH_ACC_MASTER_ROUND) acc[i] = hi[i] + lo[i];
  }
}

#endif
