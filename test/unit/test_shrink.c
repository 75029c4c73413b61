/* test_shrink.c -- unit tests of covariance shrinkage (lib/gmm/shrink.c), the
 * shrinkage statistics (CPU reference kernels/cpu/shrink.c, the backend
 * dispatcher, the accs file block) and the positive-definite guarantee.
 * References are brute-force double loops written here, independent of the
 * code under test (only the per-Gaussian log-likelihood gh_gmm_loglike_ref is
 * shared, to get the posteriors). */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "gh-test.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm-init.h"
#include "gmm/gmm.h"
#include "gmm/shrink.h"

/* A one-pdf set of G full Gaussians in dimension D with random means and
 * covariances (A A' + I). */
static void make_pdf(gh_gmm *pdf, int G, int D, gh_rng *r) {
  gh_gmm_init(pdf, GH_COV_FULL, G, D);
  double *w = gh_malloc(sizeof(double) * G), *mu = gh_malloc(sizeof(double) * G * D);
  double *cov = gh_calloc((size_t)G * gh_packed_size(D), sizeof(double));
  for (int g = 0; g < G; ++g) {
    w[g] = 1.0 / G;
    for (int d = 0; d < D; ++d) mu[g * D + d] = 5.0 + 2.0 * gh_rng_gauss(r);
    double *A = gh_malloc(sizeof(double) * D * D);
    for (int i = 0; i < D * D; ++i) A[i] = 0.5 * gh_rng_gauss(r);
    for (int i = 0; i < D; ++i)
      for (int j = 0; j <= i; ++j) {
        double v = i == j ? 1.0 : 0.0;
        for (int k = 0; k < D; ++k) v += A[i * D + k] * A[j * D + k];
        cov[g * gh_packed_size(D) + gh_packed_index(i, j)] = v;
      }
    free(A);
  }
  if (gh_gmm_set_moments(pdf, w, mu, cov) != 0) gh_die("make_model: %s", gh_last_error());
  free(w); free(mu); free(cov);
}

/* A set of P full pdfs with ng[p] Gaussians each. */
static void make_set(gh_gmm_set *s, int P, const int *ng, int D, gh_rng *r) {
  memset(s, 0, sizeof *s);
  s->dim = D;
  s->num_pdfs = P;
  s->pdfs = gh_calloc(P, sizeof(gh_gmm));
  for (int p = 0; p < P; ++p) make_pdf(&s->pdfs[p], ng[p], D, r);
}

static void make_model(gh_gmm_set *s, int G, int D, gh_rng *r) { make_set(s, 1, &G, D, r); }

/* CUDA acc_shrink vs the CPU reference on a multi-pdf model (pdf 3 without
 * pairs, more pairs than one CUDA segment); SKIP without a GPU. */
static void test_cuda(void) {
  if (gh_cuda_device_count() <= 0) {
    GH_TEST_OK(1, "# SKIP no GPU: CUDA shrinkage statistics not checked");
    return;
  }
  gh_rng r;
  gh_rng_seed(&r, 11);
  const int P = 4, ng[4] = {1, 3, 5, 2}, D = 13, T = 12000;
  gh_gmm_set m;
  make_set(&m, P, ng, D, &r);
  float *X = gh_malloc(sizeof(float) * T * D);
  gh_frame_pdf *pairs = gh_malloc(sizeof(gh_frame_pdf) * T);
  for (int t = 0; t < T; ++t) {
    for (int d = 0; d < D; ++d) X[t * D + d] = (float)(5.0 + 2.5 * gh_rng_gauss(&r));
    pairs[t].frame = t; pairs[t].pdf = (int)(gh_rng_u64(&r) % 3); pairs[t].weight = (float)(0.1 + 0.9 * gh_rng_uniform(&r));
  }
  gh_accs_set a, b;
  gh_accs_init(&a, &m); gh_accs_shrink_init(&a, &m);
  gh_accs_init(&b, &m); gh_accs_shrink_init(&b, &m);
  gh_cpu_acc_shrink(NULL, &m, X, T, pairs, T, &a);
  gh_backend *cu = gh_backend_create("cuda");
  gh_backend_acc_shrink(cu, &m, X, T, pairs, T, &b);
  double worst = 0;
  const int64_t K = gh_shrink_stats_size(D);
  for (int p = 0; p < P; ++p)
    for (int64_t q = 0; q < ng[p] * K; ++q) {
      double x = b.pdfs[p].shrink[q], y = a.pdfs[p].shrink[q];
      double sc = fabs(a.pdfs[p].shrink[(q / K) * K + 1 + D + gh_packed_index(0, 0)]) + fabs(y);
      worst = fmax(worst, fabs(x - y) / (sc > 0 ? sc : 1));
    }
  GH_TEST_OK(worst < 1e-9, "CUDA shrinkage statistics = CPU reference (4 pdfs, D 13, 12000 pairs; max rel %.2g)", worst);
  gh_backend_free(cu);
  gh_accs_free(&a); gh_accs_free(&b); gh_gmm_set_free(&m);
  free(X); free(pairs);
}

static double rel(double a, double b) { return fabs(a - b) / (1.0 + fabs(b)); }

int main(void) {
  gh_rng r;
  gh_rng_seed(&r, 7);
  const int G = 2, D = 4, T = 300;
  const int64_t P = gh_packed_size(D), K = gh_shrink_stats_size(D);
  gh_gmm_set model;
  make_model(&model, G, D, &r);
  float *X = gh_malloc(sizeof(float) * T * D);
  gh_frame_pdf *pairs = gh_malloc(sizeof(gh_frame_pdf) * T);
  for (int t = 0; t < T; ++t) {
    for (int d = 0; d < D; ++d) X[t * D + d] = (float)(5.0 + 2.5 * gh_rng_gauss(&r));
    pairs[t].frame = t; pairs[t].pdf = 0; pairs[t].weight = (float)(0.1 + 0.9 * gh_rng_uniform(&r));
  }

  /* 1. CPU reference statistics vs brute force (weighted posteriors). */
  gh_accs_set accs;
  gh_accs_init(&accs, &model);
  gh_accs_shrink_init(&accs, &model);
  gh_cpu_acc_shrink(NULL, &model, X, T, pairs, T, &accs);
  double *gam = gh_malloc(sizeof(double) * T * G), ll[8];
  for (int t = 0; t < T; ++t) {
    double lse = gh_gmm_loglike_ref(&model.pdfs[0], X + t * D, ll);
    for (int g = 0; g < G; ++g) gam[t * G + g] = pairs[t].weight * exp(ll[g] - lse);
  }
  double worst = 0;
  for (int g = 0; g < G; ++g) {
    const double *c = accs.pdfs[0].shrink_centre + g * D, *st = accs.pdfs[0].shrink + g * K;
    double want[1 + 4 + 20 + 16 + 10 + 8] = {0};
    for (int t = 0; t < T; ++t) {
      double y = gam[t * G + g], z[4];
      for (int d = 0; d < D; ++d) z[d] = X[t * D + d] - c[d];
      want[0] += y * y;
      for (int i = 0; i < D; ++i) want[1 + i] += y * z[i];
      for (int i = 0; i < D; ++i)
        for (int j = 0; j <= i; ++j) {
          want[1 + D + gh_packed_index(i, j)] += y * z[i] * z[j];
          want[1 + D + P + D * D + gh_packed_index(i, j)] += y * pow(z[i], 2) * pow(z[j], 2);
        }
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < D; ++j) want[1 + D + P + i * D + j] += y * pow(z[i], 2) * z[j];
    }
    for (int k = 0; k < K; ++k) worst = fmax(worst, rel(st[k], want[k]));
  }
  GH_TEST_OK(worst < 1e-12, "CPU shrinkage statistics equal brute force with posterior weights (max rel %.2g)", worst);

  /* 2. the backend dispatcher on the CPU backend gives the same numbers */
  gh_backend *be = gh_backend_create("cpu");
  gh_accs_set a2;
  gh_accs_init(&a2, &model);
  gh_accs_shrink_init(&a2, &model);
  gh_backend_acc_shrink(be, &model, X, T, pairs, T, &a2);
  GH_TEST_OK(!memcmp(a2.pdfs[0].shrink, accs.pdfs[0].shrink, sizeof(double) * G * K),
             "gh_backend_acc_shrink(cpu) = gh_cpu_acc_shrink");

  /* 3. fourth-order moments about the weighted mean from the shifted statistics */
  worst = 0;
  for (int g = 0; g < G; ++g) {
    double n = 0, mu[4] = {0}, F[10], want[10] = {0};
    for (int t = 0; t < T; ++t) {
      n += gam[t * G + g];
      for (int d = 0; d < D; ++d) mu[d] += gam[t * G + g] * X[t * D + d];
    }
    for (int d = 0; d < D; ++d) mu[d] /= n;
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < D; ++i)
        for (int j = 0; j <= i; ++j)
          want[gh_packed_index(i, j)] += gam[t * G + g] * pow(X[t * D + i] - mu[i], 2) * pow(X[t * D + j] - mu[j], 2);
    gh_shrink_fourth_about_mean(D, n, accs.pdfs[0].shrink_centre + g * D, mu, accs.pdfs[0].shrink + g * K, F);
    for (int k = 0; k < P; ++k) worst = fmax(worst, fabs(F[k] - want[k]) / want[k]);
  }
  GH_TEST_OK(worst < 1e-10, "fourth moments about the mean from moments about the model mean (max rel %.2g)", worst);

  /* 4. accs file round trip with the block (binary and text), and add() */
  char path[] = "/tmp/test_shrink_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  for (int binary = 0; binary <= 1; ++binary) {
    gh_accs_write(path, binary, &accs);
    gh_accs_set back;
    gh_accs_read(path, &back);
    GH_TEST_OK(back.pdfs[0].shrink && !memcmp(back.pdfs[0].shrink, accs.pdfs[0].shrink, sizeof(double) * G * K) &&
                   !memcmp(back.pdfs[0].shrink_centre, accs.pdfs[0].shrink_centre, sizeof(double) * G * D),
               "accs with shrinkage statistics read back exactly (%s)", binary ? "binary" : "text");
    gh_accs_free(&back);
  }
  unlink(path);
  gh_accs_add(&a2, &accs, "test");
  GH_TEST_NEAR(a2.pdfs[0].shrink[K + 5], 2 * accs.pdfs[0].shrink[K + 5], 1e-9 * fabs(accs.pdfs[0].shrink[K + 5]),
               "gh_accs_add sums the shrinkage statistics");

  /* 5. intensities: closed forms */
  gh_shrink_opts o;
  double S[10];
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) S[gh_packed_index(i, j)] = i == j ? 2.0 + i : 0.3;
  GH_TEST_OK(gh_shrink_parse("fixed:0.25", &o) == 0 && gh_shrink_intensity(&o, D, S, 50, 50, NULL, NULL) == 0.25,
             "fixed: lambda = factor");
  GH_TEST_OK(gh_shrink_parse("occupancy:30", &o) == 0 &&
                 fabs(gh_shrink_intensity(&o, D, S, 90, 90, NULL, NULL) - 0.25) < 1e-15,
             "occupancy: lambda = tau / (tau + n)");
  GH_TEST_OK(gh_shrink_parse("oas", &o) == 0 && gh_shrink_intensity(&o, D, S, 1.0, 1.0, NULL, NULL) < 0,
             "oas: N <= 1 -> not defined (skipped)");
  double SI[10];
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) SI[gh_packed_index(i, j)] = i == j ? 3.0 : 0.0;
  double Fz[10] = {0};
  for (int i = 0; i < D; ++i) Fz[gh_packed_index(i, i)] = 100.0;
  gh_shrink_parse("lw", &o);
  GH_TEST_OK(gh_shrink_intensity(&o, D, SI, 10, 10, Fz, NULL) == 0.0, "lw: S = m I already -> lambda 0");
  /* oas for S = m I: a = D m^2 / D^2, so num/den = (m^2/D + m^2) / ((N+1)(0)) -> den 0 -> 1 */
  gh_shrink_parse("oas", &o);
  GH_TEST_OK(gh_shrink_intensity(&o, D, SI, 10, 10, NULL, NULL) == 1.0, "oas: S = m I -> den 0 -> lambda 1");
  /* ss: big fourth moments -> clipped to 1 and reported */
  double Fb[10];
  for (int k = 0; k < P; ++k) Fb[k] = 1e6;
  int clipped = 0;
  gh_shrink_parse("ss", &o);
  GH_TEST_OK(gh_shrink_intensity(&o, D, S, 10, 10, Fb, &clipped) == 1.0 && clipped == 1, "ss: clipped to 1");
  /* ss from a hand computation: sum_{i!=j}(F/n - s^2)/(N-1) / sum_{i!=j} s^2 */
  double Fm[10];
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) Fm[gh_packed_index(i, j)] = 20.0 * (0.09 + 0.05);
  double want_ss = (0.05 / 9.0) / 0.09;
  GH_TEST_NEAR(gh_shrink_intensity(&o, D, S, 20, 10, Fm, NULL), want_ss, 1e-12, "ss: lambda by hand");

  /* 6. apply: targets */
  double Sa[10];
  memcpy(Sa, S, sizeof Sa);
  gh_shrink_apply(&o, D, Sa, 0.5);
  GH_TEST_OK(Sa[gh_packed_index(2, 2)] == S[gh_packed_index(2, 2)] && Sa[gh_packed_index(2, 1)] == 0.15,
             "ss / diag target: variances kept, off-diagonals * (1 - lambda)");
  gh_shrink_parse("lw", &o);
  memcpy(Sa, S, sizeof Sa);
  gh_shrink_apply(&o, D, Sa, 1.0);
  GH_TEST_OK(Sa[gh_packed_index(0, 0)] == 3.5 && Sa[gh_packed_index(3, 3)] == 3.5 && Sa[gh_packed_index(1, 0)] == 0,
             "identity target with lambda 1: tr(S)/D I");

  /* 7. parse errors */
  GH_TEST_OK(gh_shrink_parse("fixed:1.5", &o) != 0 && strstr(gh_last_error(), "[0, 1]"), "fixed:1.5 rejected");
  GH_TEST_OK(gh_shrink_parse("fixed:-0.1", &o) != 0, "fixed:-0.1 rejected");
  GH_TEST_OK(gh_shrink_parse("fixed", &o) != 0 && strstr(gh_last_error(), "needs a parameter"), "fixed without lambda");
  GH_TEST_OK(gh_shrink_parse("fixed:x", &o) != 0, "fixed:x rejected");
  GH_TEST_OK(gh_shrink_parse("occupancy:-1", &o) != 0, "occupancy:-1 rejected");
  GH_TEST_OK(gh_shrink_parse("lw:2", &o) != 0 && strstr(gh_last_error(), "no parameter"), "lw:2 rejected");
  GH_TEST_OK(gh_shrink_parse("bogus", &o) != 0 && strstr(gh_last_error(), "unknown"), "unknown method rejected");

  /* 8. positive definite after shrinkage + floor, from a rank-1 S and lambda 0 */
  double v[4] = {1, 2, -1, 0.5}, S1[10];
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) S1[gh_packed_index(i, j)] = v[i] * v[j];
  gh_shrink_parse("fixed:0", &o);
  gh_shrink_apply(&o, D, S1, 0.0);
  int nf = gh_cov_floor(S1, D, 1e-3, 1e4);
  double L[16] = {0};
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) L[i * D + j] = S1[gh_packed_index(i, j)];
  GH_TEST_OK(nf == 3 && LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', D, L, D) == 0,
             "rank-1 S, lambda 0: floor raises 3 eigenvalues, Cholesky succeeds");

  test_cuda();
  gh_backend_free(be);
  gh_accs_free(&accs);
  gh_accs_free(&a2);
  gh_gmm_set_free(&model);
  free(X); free(pairs); free(gam);
  return gh_test_done();
}
