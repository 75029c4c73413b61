/* test_ops_tables.c -- the backend op table's sub-tables (backend.h
 * gh_backend_ops) and the capability query gh_backend_supports: for every
 * backend built here (cpu-ref, cpu; OpenCL when a device exists, CUDA when
 * a GPU does) every sub-table it has has no NULL entry, gh_backend_supports
 * agrees with the pointers, and the subjects each backend offers are the
 * ones written down below (a table that loses or gains a subject fails).
 * The checker itself is tested on a made-up table with a hole, and the
 * registry's fallbacks on a made-up backend with only the required
 * sub-table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "backend.h"
#include "registry/registry.h"

typedef void (*fnptr)(void);

/* Number of NULL entries of the sub-table t of `bytes` (a struct of
 * function pointers only); -1 if bytes is not a whole number of them. */
static int null_entries(const void *t, size_t bytes) {
  if (bytes == 0 || bytes % sizeof(fnptr)) return -1;
  int n = 0;
  for (size_t k = 0; k < bytes / sizeof(fnptr); ++k) {
    fnptr f;
    memcpy(&f, (const char *)t + k * sizeof(fnptr), sizeof f);
    n += f == NULL;
  }
  return n;
}

/* Checks b's table; want: the mask (1 << cap) of the subjects b must
 * report (GH_CAP_NCCL included: it needs b->caps too). */
static void check_backend(gh_backend *b, const char *label, unsigned want) {
  unsigned got = 0;
  int holes = 0, disagree = 0;
  for (int c = 0; c < GH_CAP_COUNT; ++c) {
    size_t bytes = 0;
    const char *name = NULL;
    const void *t = gh_backend_ops_table(b->ops, (gh_backend_cap)c, &bytes, &name);
    const int s = gh_backend_supports(b, (gh_backend_cap)c);
    if (s) got |= 1u << c;
    if (t) {
      const int z = null_entries(t, bytes);
      if (z != 0) { ++holes; printf("#   %s: sub-table %s has %d NULL entries\n", label, name, z); }
    }
    /* supported <=> the pointer is set; NCCL: supported => set */
    if (c == GH_CAP_NCCL ? (s && !t) : (s != (t != NULL))) {
      ++disagree;
      printf("#   %s: gh_backend_supports(%s) = %d, pointer %p\n", label, name, s, t);
    }
  }
  GH_TEST_OK(b->ops->gmm != NULL && gh_backend_supports(b, GH_CAP_GMM), "%s: has the required gmm sub-table", label);
  GH_TEST_OK(holes == 0, "%s: every sub-table it has is complete (no NULL entry)", label);
  GH_TEST_OK(disagree == 0, "%s: gh_backend_supports agrees with the sub-table pointers", label);
  GH_TEST_OK(got == want, "%s: subjects 0x%x, expected 0x%x", label, got, want);
  GH_TEST_OK(gh_backend_hmm_ops(b) == (b->ops->hmm ? b->ops->hmm : &gh_cpu_ref_hmm),
             "%s: gh_backend_hmm_ops is its own HMM sub-table, else the CPU reference's", label);
}

#define M(c) (1u << (c))

static int dummy_called;
static void dummy_free(gh_backend *b) { (void)b; ++dummy_called; }

int main(void) {
  /* the CPU reference's sub-tables (the registry's fallbacks) */
  GH_TEST_OK(null_entries(&gh_cpu_ref_hmm, sizeof gh_cpu_ref_hmm) == 0 &&
                 null_entries(&gh_cpu_ref_shrink, sizeof gh_cpu_ref_shrink) == 0 &&
                 null_entries(&gh_cpu_ref_gselect, sizeof gh_cpu_ref_gselect) == 0 &&
                 null_entries(&gh_cpu_ref_kmeans, sizeof gh_cpu_ref_kmeans) == 0 &&
                 null_entries(&gh_cpu_ref_align, sizeof gh_cpu_ref_align) == 0,
             "the CPU reference's fallback sub-tables are complete");

  /* the checker finds a hole, and the query answers 0 on NULL */
  gh_ops_kmeans holed = gh_cpu_ref_kmeans;
  holed.kmeans_fetch = NULL;
  GH_TEST_OK(null_entries(&holed, sizeof holed) == 1, "the checker counts a NULL entry of a sub-table");
  GH_TEST_OK(!gh_backend_supports(NULL, GH_CAP_GMM), "gh_backend_supports(NULL, ...) = 0");

  /* a made-up backend with only the required sub-table: every optional
   * subject absent, the registry's wrappers take the CPU reference */
  static const gh_ops_gmm gmm_only = {.free = dummy_free};
  static const gh_backend_ops bare_ops = {.name = "bare", .gmm = &gmm_only};
  gh_backend bare;
  memset(&bare, 0, sizeof bare);
  bare.ops = &bare_ops;
  snprintf(bare.device_name, sizeof bare.device_name, "bare");
  int any = 0;
  for (int c = 1; c < GH_CAP_COUNT; ++c) any |= gh_backend_supports(&bare, (gh_backend_cap)c);
  GH_TEST_OK(!any && gh_backend_supports(&bare, GH_CAP_GMM), "a backend with only gmm supports only GH_CAP_GMM");
  GH_TEST_OK(gh_backend_hmm_ops(&bare) == &gh_cpu_ref_hmm, "no HMM sub-table: gh_backend_hmm_ops is the CPU reference's");
  bare.caps |= GH_BACKEND_CAP_NCCL;
  GH_TEST_OK(!gh_backend_supports(&bare, GH_CAP_NCCL), "GH_CAP_NCCL needs the nccl sub-table, not the flag alone");
  /* k-means through the registry on the bare backend: the CPU reference */
  const double Z[4] = {0, 0, 3, 4}, C[2] = {0, 0};
  gh_dev_kmeans *z = gh_backend_kmeans_upload(&bare, Z, 2, 2);
  gh_backend_kmeans_nearest(&bare, z, C, 0, 1, 1);
  double d2[2] = {-1, -1};
  int32_t asg[2] = {-1, -1};
  gh_backend_kmeans_fetch(&bare, z, d2, asg);
  gh_backend_kmeans_free(&bare, z);
  GH_TEST_OK(d2[0] == 0 && d2[1] == 25 && asg[0] == 0 && asg[1] == 0,
             "k-means on a backend without the sub-table: the CPU reference's distances (0, 25)");
  gh_backend_free(&bare);
  GH_TEST_OK(dummy_called == 1, "gh_backend_free calls the gmm sub-table's free");

  const unsigned cpu_want = M(GH_CAP_GMM) | M(GH_CAP_PAIRS) | M(GH_CAP_HMM) | M(GH_CAP_SHRINK) | M(GH_CAP_DIST) |
                            M(GH_CAP_ALIGN);
  gh_backend *b = gh_backend_cpu_new();
  check_backend(b, "cpu-ref", cpu_want);
  GH_TEST_OK(b->ops->hmm == &gh_cpu_ref_hmm && b->ops->shrink == &gh_cpu_ref_shrink,
             "cpu-ref: its HMM and shrinkage sub-tables are the reference's");
  gh_backend_free(b);
  b = gh_backend_blas_new();
  check_backend(b, "cpu", cpu_want);
  gh_backend_free(b);

  b = gh_backend_opencl_new(NULL, 0);
  if (b) {
    /* with cl_khr_fp64 (PoCL); a device without it has the gmm sub-table only */
    const unsigned ocl_want = M(GH_CAP_GMM) | M(GH_CAP_PAIRS) | M(GH_CAP_RESIDENT) | M(GH_CAP_MSTEP) | M(GH_CAP_HMM) |
                              M(GH_CAP_HMM_DEV) | M(GH_CAP_DIST) | M(GH_CAP_GSELECT) | M(GH_CAP_KMEANS) |
                              M(GH_CAP_ALIGN);
    check_backend(b, "opencl", b->ops->pairs ? ocl_want : M(GH_CAP_GMM));
    gh_backend_free(b);
  } else {
    printf("ok %d - # SKIP no OpenCL device: %s\n", ++gh_t_n, gh_last_error());
  }

  if (gh_cuda_device_count() > 0) {
    const unsigned all = (1u << GH_CAP_COUNT) - 1;
    b = gh_backend_cuda_new();
    if (b) {
      check_backend(b, "cuda (no NCCL flag)", all & ~M(GH_CAP_NCCL));
      gh_backend_free(b);
    }
    b = gh_backend_create("cuda");
    check_backend(b, "cuda (registry)", all);
    gh_backend_free(b);
  } else {
    printf("ok %d - # SKIP no CUDA device\n", ++gh_t_n);
  }
  return gh_test_done();
}
