/* test_cuda_device.c -- the CUDA backend's device check (kernels/cuda/cuda.cu
 * gh_cuda_archs_run_on, doc/kernels.md "CUDA devices the build runs on"):
 * which compute capabilities an architecture list has code for, against
 * NVIDIA's compatibility rules written out case by case (CUDA C++
 * Programming Guide, "Binary Compatibility" and "PTX Compatibility"), and,
 * when a GPU is present, that the backend starts exactly on a device the
 * build has code for.  No GPU needed for the first part. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"
#include "gh-test.h"

#ifdef GH_HAVE_CUDA
int gh_cuda_archs_run_on(const char *archs, int major, int minor); /* kernels/cuda/cuda.cu */
const char *gh_cuda_build_archs(void);                             /* kernels/cuda/cuda.cu */
int gh_cuda_device_capability(int *major, int *minor);             /* kernels/cuda/cuda.cu */

int main(void) {
  static const struct {
    const char *archs;
    int major, minor, runs;
  } cases[] = {
      /* this project's list: SASS for H100 / H200 only, PTX for 9.0 and newer */
      {"sm_90a compute_90", 9, 0, 1},  {"sm_90a compute_90", 10, 0, 1}, {"sm_90a compute_90", 12, 0, 1},
      {"sm_90a compute_90", 8, 0, 0},  {"sm_90a compute_90", 8, 9, 0},  {"sm_90a compute_90", 7, 0, 0},
      {"sm_90a compute_90", 6, 1, 0},
      /* arch-specific SASS and PTX: that capability only */
      {"sm_90a", 9, 0, 1}, {"sm_90a", 10, 0, 0}, {"compute_90a", 9, 0, 1}, {"compute_90a", 10, 0, 0},
      /* plain SASS: the same major, the same or a later minor */
      {"sm_86", 8, 6, 1}, {"sm_86", 8, 9, 1}, {"sm_86", 8, 0, 0}, {"sm_86", 9, 0, 0}, {"sm_80", 8, 6, 1},
      /* family SASS (sm_XYf): the same major, the same or a later minor */
      {"sm_100f", 10, 3, 1}, {"sm_100f", 10, 0, 1}, {"sm_100f", 12, 0, 0},
      /* plain PTX: that capability and every later one */
      {"compute_70", 7, 0, 1}, {"compute_70", 9, 0, 1}, {"compute_70", 6, 1, 0},
      /* lists: any member; spaces around; no code at all */
      {"sm_70 sm_80", 8, 6, 1}, {"sm_70 sm_80", 7, 5, 1}, {"sm_70 sm_80", 9, 0, 0}, {"  sm_80  ", 8, 0, 1},
      {"", 9, 0, 0}, {"lto_90", 9, 0, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const int r = gh_cuda_archs_run_on(cases[k].archs, cases[k].major, cases[k].minor);
    GH_TEST_OK(r == cases[k].runs, "\"%s\" on compute capability %d.%d: %s (expected %s)", cases[k].archs,
               cases[k].major, cases[k].minor, r ? "runs" : "no code", cases[k].runs ? "runs" : "no code");
  }
  const char *mine = gh_cuda_build_archs();
  GH_TEST_OK(mine && *mine && gh_cuda_archs_run_on(mine, 9, 0), "this build (%s) has code for H100 / H200 (9.0)",
             mine ? mine : "(null)");
  /* with a GPU: the backend starts exactly where the build has code */
  int major = 0, minor = 0;
  if (gh_cuda_device_count() > 0 && gh_cuda_device_capability(&major, &minor) == 0) {
    gh_backend *b = gh_backend_cuda_new();
    const int runs = gh_cuda_archs_run_on(mine, major, minor);
    GH_TEST_OK((b != NULL) == runs, "CUDA device of capability %d.%d: backend %s (build %s)", major, minor,
               b ? "started" : gh_last_error(), mine);
    if (b) gh_backend_free(b);
  } else {
    printf("# no CUDA device: the backend's start is not checked\n");
  }
  return gh_test_done();
}
#else
int main(void) {
  GH_TEST_OK(1, "# SKIP built without CUDA");
  return gh_test_done();
}
#endif
