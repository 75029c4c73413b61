/* test_dist_em.c -- drivers/train/dist-em.h helpers the distributed trainers
 * share: the accumulators' flat form (the reduction buffer) and the model
 * hash (the per-iteration same-model check); and backend.h acc_commit on
 * every backend (cpu-ref, cpu; OpenCL when a device exists, CUDA when a GPU
 * does): the double-double master after three blocks equals, bit for bit,
 * lib/base/dd.h's host accumulation of the three blocks' raw accumulators
 * (each block alone: acc_zero, accumulate, acc_raw_get), and ROUND writes
 * hi + lo into the accumulators. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "backend.h"
#include "gmm/shrink.h"
#include "train/dist-em.h"

static void make_set(gh_gmm_set *s) {
  memset(s, 0, sizeof *s);
  s->dim = 3;
  s->num_pdfs = 2;
  s->form = GH_SET_AM;
  s->pdfs = calloc(2, sizeof(gh_gmm));
  gh_gmm_init(&s->pdfs[0], GH_COV_DIAG, 2, 3);
  gh_gmm_init(&s->pdfs[1], GH_COV_FULL, 3, 3);
  for (int p = 0; p < 2; ++p) {
    gh_gmm *g = &s->pdfs[p];
    const int64_t S = gh_gmm_cov_size(g);
    for (int k = 0; k < g->num_gauss; ++k) {
      g->weights[k] = 1.0f / g->num_gauss;
      for (int i = 0; i < 3; ++i) g->means_invvars[k * 3 + i] = 0.1f * (k + i);
      for (int q = 0; q < S; ++q) g->inv_vars[k * S + q] = 0.0f;
      if (g->type == GH_COV_DIAG) for (int i = 0; i < 3; ++i) g->inv_vars[k * S + i] = 1.0f + k;
      else for (int i = 0, q = 0; i < 3; ++i) for (int j = 0; j <= i; ++j, ++q) g->inv_vars[k * S + q] = i == j ? 2.0f : 0.1f;
    }
    gh_gmm_compute_gconsts(g);
  }
}

/* acc_commit against the host double-double sum of the blocks */
static void test_commit(gh_backend *b, const gh_gmm_set *s) {
  const gh_backend_ops *ops = b->ops;
  if (!gh_backend_supports(b, GH_CAP_DIST)) {
    printf("ok %d - # SKIP %s has no acc_commit\n", ++gh_t_n, ops->name);
    ++gh_t_pass;
    return;
  }
  enum { T = 900, NB = 3 };
  float *X = malloc(sizeof(float) * T * 3);
  gh_frame_pdf *pairs = malloc(sizeof(gh_frame_pdf) * T);
  uint32_t r = 12345;
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < 3; ++i) {
      r = r * 1664525u + 1013904223u;
      X[t * 3 + i] = (float)((r >> 8) / 16777216.0 * 4.0 - 2.0) + (t % 7 == 0 ? 1000.0f : 0.0f);
    }
    pairs[t] = (gh_frame_pdf){t % (T / NB), t % 2, 0.25f + (t % 5) * 0.5f};
  }
  gh_dev_model *m = ops->gmm->model_upload(b, s);
  gh_dev_data *d[NB];
  for (int k = 0; k < NB; ++k) d[k] = ops->gmm->data_upload(b, X + (size_t)k * (T / NB) * 3, T / NB, 3, pairs + k * (T / NB), T / NB);
  const int64_t n = ops->dist->acc_raw_size(b, m);
  double *x = malloc(sizeof(double) * n), *hi = malloc(sizeof(double) * n), *lo = malloc(sizeof(double) * n),
         *got = malloc(sizeof(double) * n), *want = malloc(sizeof(double) * n);
  gh_dd_acc ref;
  gh_dd_acc_init(&ref, (size_t)n);
  for (int k = 0; k < NB; ++k) {
    ops->gmm->acc_zero(b, m);
    ops->gmm->accumulate(b, m, d[k]);
    ops->dist->acc_raw_get(b, m, x);
    gh_dd_acc_add(&ref, x);
  }
  ops->gmm->acc_zero(b, m);
  ops->dist->acc_commit(b, m, GH_ACC_MASTER_ZERO);
  for (int k = 0; k < NB; ++k) {
    ops->gmm->accumulate(b, m, d[k]);
    ops->dist->acc_commit(b, m, GH_ACC_COMMIT);
  }
  ops->dist->acc_raw_get(b, m, got);
  int zero = 1;
  for (int64_t i = 0; i < n; ++i) zero &= got[i] == 0.0;
  GH_TEST_OK(zero, "%s acc_commit: the accumulators are zero after a commit", ops->name);
  ops->dist->acc_master_get(b, m, hi, lo);
  GH_TEST_OK(!memcmp(hi, ref.hi, sizeof(double) * n) && !memcmp(lo, ref.lo, sizeof(double) * n),
             "%s acc_commit: master (hi, lo) of %d blocks = dd.h's host sum of their accumulators, bitwise", ops->name, NB);
  int nonzero_lo = 0;
  for (int64_t i = 0; i < n; ++i) nonzero_lo |= lo[i] != 0.0;
  GH_TEST_OK(nonzero_lo, "%s acc_commit: some lo parts are non-zero (the test sees the low word)", ops->name);
  ops->dist->acc_commit(b, m, GH_ACC_MASTER_ROUND);
  ops->dist->acc_raw_get(b, m, got);
  gh_dd_acc_reduce(&ref, NULL, want);
  GH_TEST_OK(!memcmp(got, want, sizeof(double) * n), "%s acc_commit ROUND: accumulators = hi + lo, bitwise", ops->name);
  ops->dist->acc_commit(b, m, GH_ACC_MASTER_ZERO);
  ops->dist->acc_master_get(b, m, hi, lo);
  zero = 1;
  for (int64_t i = 0; i < n; ++i) zero &= hi[i] == 0.0 && lo[i] == 0.0;
  GH_TEST_OK(zero, "%s acc_commit MASTER_ZERO: master zero", ops->name);
  gh_dd_acc_free(&ref);
  for (int k = 0; k < NB; ++k) ops->gmm->data_free(b, d[k]);
  ops->gmm->model_free(b, m);
  free(X); free(pairs); free(x); free(hi); free(lo); free(got); free(want);
}

/* --tol's monitor: the first value never converges; a change below tol
 * (a decrease included) does; tol <= 0 never does. */
static void test_monitor(void) {
  gh_em_monitor m;
  gh_em_monitor_init(&m, 1e-3);
  GH_TEST_OK(!gh_em_monitor_report(&m, -5.0), "first iteration: not converged");
  GH_TEST_OK(!gh_em_monitor_report(&m, -4.5) && m.change == 0.5, "improved by 0.5 >= tol: not converged");
  GH_TEST_OK(!gh_em_monitor_report(&m, -4.498), "improved by 2e-3 >= tol: not converged");
  GH_TEST_OK(gh_em_monitor_report(&m, -4.4975) && m.iters == 4, "improved by 5e-4 < tol: converged at 4");
  gh_em_monitor_init(&m, 1e-3);
  gh_em_monitor_report(&m, -1.0);
  GH_TEST_OK(gh_em_monitor_report(&m, -1.1), "a decrease converges (hmmlearn's rule)");
  gh_em_monitor_init(&m, 0);
  gh_em_monitor_report(&m, -1.0);
  GH_TEST_OK(!gh_em_monitor_report(&m, -1.0) && !m.converged, "tol 0: never converges");
  char buf[192];
  gh_em_monitor_describe(&m, buf, sizeof buf);
  GH_TEST_OK(strstr(buf, "not converged after 2 iterations") != NULL, "describe: %s", buf);
}

int main(void) {
  test_monitor();
  gh_gmm_set s;
  make_set(&s);
  gh_accs_set a, b;
  gh_accs_init(&a, &s);
  gh_accs_init(&b, &s);
  /* 2 x (1 + 3 + 3) + 3 x (1 + 3 + 6) doubles, then total_loglike, total_frames */
  const size_t n = gh_accs_flat_size(&a, 0);
  GH_TEST_OK(n == 2 * 7 + 3 * 10 + 2, "flat size %zu = 2 diag x 7 + 3 full x 10 + 2 totals", n);
  double *f = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n);
  for (size_t i = 0; i < n; ++i) f[i] = 1.0 + i * 0.5;
  gh_accs_unflatten(&a, 0, f);
  GH_TEST_OK(a.pdfs[0].occupancy[0] == 1.0 && a.pdfs[0].mean_accs[0] == 2.0 && a.pdfs[1].occupancy[0] == 1.0 + 14 * 0.5,
             "layout: per pdf occupancy, means, variances");
  GH_TEST_OK(a.total_loglike == f[n - 2] && a.total_frames == f[n - 1], "totals last (loglike, frames)");
  gh_accs_flatten(&a, 0, g);
  GH_TEST_OK(!memcmp(f, g, sizeof(double) * n), "flatten(unflatten(x)) == x");
  GH_TEST_OK(gh_accs_flat_size(&a, 1) == 0, "no shrinkage statistics: shrink part empty");
  /* shrinkage statistics: only full pdfs may carry them; use a full-only set */
  gh_gmm_set t;
  make_set(&t);
  gh_gmm_free(&t.pdfs[0]);
  gh_gmm_copy(&t.pdfs[0], &t.pdfs[1]);
  gh_accs_set c;
  gh_accs_init(&c, &t);
  gh_accs_shrink_init(&c, &t);
  const size_t ns = gh_accs_flat_size(&c, 1);
  GH_TEST_OK(ns == (size_t)(6 * gh_shrink_stats_size(3)), "shrink part: 6 Gaussians x %lld", (long long)gh_shrink_stats_size(3));
  double *h = malloc(sizeof(double) * ns), *h2 = malloc(sizeof(double) * ns);
  for (size_t i = 0; i < ns; ++i) h[i] = -1.0 * i;
  gh_accs_unflatten(&c, 1, h);
  gh_accs_flatten(&c, 1, h2);
  GH_TEST_OK(!memcmp(h, h2, sizeof(double) * ns) && c.pdfs[1].shrink[0] == -1.0 * gh_shrink_stats_size(3) * 3,
             "shrink part round trip, pdf order");
  /* the model hash: equal sets equal, any changed bit differs */
  gh_gmm_set u;
  memset(&u, 0, sizeof u);
  gh_gmm_set_copy(&u, &s);
  GH_TEST_OK(gh_gmm_set_hash(&u) == gh_gmm_set_hash(&s), "hash of a copy is equal");
  u.pdfs[1].inv_vars[5] = nextafterf(u.pdfs[1].inv_vars[5], 10.0f);
  GH_TEST_OK(gh_gmm_set_hash(&u) != gh_gmm_set_hash(&s), "one ulp in one inverse covariance changes the hash");
  free(f); free(g); free(h); free(h2);
  gh_accs_free(&a); gh_accs_free(&b); gh_accs_free(&c);
  gh_gmm_set_free(&t); gh_gmm_set_free(&u);
  gh_backend *cb = gh_backend_cpu_new();
  test_commit(cb, &s);
  gh_backend_free(cb);
  cb = gh_backend_blas_new();
  test_commit(cb, &s);
  gh_backend_free(cb);
  gh_backend *ocl = gh_backend_opencl_new(NULL, 0);
  if (ocl) {
    test_commit(ocl, &s);
    gh_backend_free(ocl);
  } else {
    printf("ok %d - # SKIP no OpenCL device\n", ++gh_t_n);
    ++gh_t_pass;
  }
  if (gh_cuda_device_count() > 0) {
    gh_backend *cu = gh_backend_cuda_new();
    test_commit(cu, &s);
    gh_backend_free(cu);
  } else {
    printf("ok %d - # SKIP no CUDA device\n", ++gh_t_n);
    ++gh_t_pass;
  }
  gh_gmm_set_free(&s);
  return gh_test_done();
}
