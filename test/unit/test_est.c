/* test_est.c -- unit tests of the M-step (lib/gmm/gmm-est.c), mix-up targets and
 * splitting, initialisation (drivers/gmm/gmm-init.c), and EM monotonicity through
 * the CPU backend (drivers/train/gmm-data.c gh_data_estep). */
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"
#include "gh-test.h"
#include "train/gmm-data.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm-init.h"
#include "gmm/gmm.h"

/* Accumulate hard-assigned frames X[N x D] (assignment a[i]) into accs. */
static void acc_hard(gh_gmm_accs *A, const double *X, const int *a, int N) {
  int D = A->dim;
  int full = A->type == GH_COV_FULL;
  int64_t S = full ? gh_packed_size(D) : D;
  for (int i = 0; i < N; ++i) {
    int g = a[i];
    const double *x = X + (int64_t)i * D;
    A->occupancy[g] += 1;
    for (int d = 0; d < D; ++d) A->mean_accs[(int64_t)g * D + d] += x[d];
    if (!full)
      for (int d = 0; d < D; ++d) A->var_accs[(int64_t)g * S + d] += x[d] * x[d];
    else
      for (int r = 0; r < D; ++r)
        for (int c = 0; c <= r; ++c) A->var_accs[(int64_t)g * S + gh_packed_index(r, c)] += x[r] * x[c];
  }
}

static void set_one_gmm(gh_gmm_set *s, gh_covtype type, int G, int D) {
  memset(s, 0, sizeof *s);
  s->dim = D;
  s->num_pdfs = 1;
  s->pdfs = gh_calloc(1, sizeof(gh_gmm));
  gh_gmm_init(&s->pdfs[0], type, G, D);
  double *w = gh_malloc(sizeof(double) * G), *mu = gh_calloc(G * D, sizeof(double));
  int64_t S = type == GH_COV_FULL ? gh_packed_size(D) : D;
  double *cov = gh_calloc(G * S, sizeof(double));
  for (int g = 0; g < G; ++g) {
    w[g] = 1.0 / G;
    for (int d = 0; d < D; ++d) {
      mu[g * D + d] = g;
      cov[g * S + (type == GH_COV_FULL ? gh_packed_index(d, d) : d)] = 1.0;
    }
  }
  gh_gmm_set_moments(&s->pdfs[0], w, mu, cov);
  free(w); free(mu); free(cov);
}

static void test_diag_update(void) {
  enum { N = 200, D = 3, G = 3 };
  double X[N * D];
  int a[N];
  gh_rng r;
  gh_rng_seed(&r, 7);
  for (int i = 0; i < N; ++i) {
    a[i] = i < 100 ? 0 : (i < 195 ? 1 : 2); /* Gaussian 2 gets only 5 frames */
    for (int d = 0; d < D; ++d) X[i * D + d] = 3.0 * a[i] + (d + 1) * gh_rng_gauss(&r);
  }
  X[0] = 1e3; /* big value: variance must come out exact in double */
  gh_gmm_set s;
  set_one_gmm(&s, GH_COV_DIAG, G, D);
  gh_accs_set acc;
  gh_accs_init(&acc, &s);
  acc_hard(&acc.pdfs[0], X, a, N);

  /* reference moments */
  double m[G][D], v[G][D], n[G];
  memset(m, 0, sizeof m); memset(v, 0, sizeof v); memset(n, 0, sizeof n);
  for (int i = 0; i < N; ++i) { n[a[i]]++; for (int d = 0; d < D; ++d) m[a[i]][d] += X[i * D + d]; }
  for (int g = 0; g < G; ++g) for (int d = 0; d < D; ++d) m[g][d] /= n[g];
  for (int i = 0; i < N; ++i) for (int d = 0; d < D; ++d) { double t = X[i * D + d] - m[a[i]][d]; v[a[i]][d] += t * t; }
  for (int g = 0; g < G; ++g) for (int d = 0; d < D; ++d) v[g][d] /= n[g];

  /* 1) hygiene off: everything updated */
  gh_est_opts o;
  gh_est_opts_default(&o);
  o.min_gaussian_occupancy = 0;
  o.min_gaussian_weight = 0;
  gh_gmm_set s1;
  set_one_gmm(&s1, GH_COV_DIAG, G, D);
  gh_est_stats st;
  memset(&st, 0, sizeof st);
  gh_gmm_set_update(&s1, &acc, &o, &st);
  double w[G], mu[G * D], var[G * D];
  gh_gmm_get_moments(&s1.pdfs[0], w, mu, var);
  double maxw = 0, maxm = 0, maxv = 0;
  for (int g = 0; g < G; ++g) {
    maxw = fmax(maxw, fabs(w[g] - n[g] / N));
    for (int d = 0; d < D; ++d) {
      maxm = fmax(maxm, fabs(mu[g * D + d] - m[g][d]) / sqrt(v[g][d]));
      maxv = fmax(maxv, fabs(var[g * D + d] - v[g][d]) / v[g][d]);
    }
  }
  GH_TEST_OK(maxw < 1e-6, "diag M-step weights = occ/total (max err %.2g)", maxw);
  GH_TEST_OK(maxm < 1e-5, "diag M-step means = m/occ (max err %.2g sd)", maxm);
  GH_TEST_OK(maxv < 1e-5, "diag M-step variances = s/occ - mu^2 (max rel err %.2g)", maxv);
  GH_TEST_OK(st.objf_change > 0, "auxiliary function increases (%g)", st.objf_change);
  gh_gmm_set_free(&s1);

  /* 2) Kaldi defaults: Gaussian 2 (occ 5 <= 10) removed, weights renormalised */
  gh_est_opts_default(&o);
  set_one_gmm(&s1, GH_COV_DIAG, G, D);
  memset(&st, 0, sizeof st);
  gh_gmm_set_update(&s1, &acc, &o, &st);
  GH_TEST_OK(s1.pdfs[0].num_gauss == 2 && st.num_removed == 1, "low-count Gaussian removed (G=%d, removed %d)",
             s1.pdfs[0].num_gauss, st.num_removed);
  gh_gmm_get_moments(&s1.pdfs[0], w, mu, var);
  GH_TEST_NEAR(w[0] + w[1], 1.0, 1e-6, "weights renormalised after removal");
  GH_TEST_NEAR(w[0], 100.0 / 195.0, 1e-6, "renormalised weight = occ / occ of kept Gaussians");
  gh_gmm_set_free(&s1);

  /* 3) remove_low_count_gaussians = false: kept, mean not updated, weight max(prob, min) */
  o.remove_low_count_gaussians = 0;
  o.min_gaussian_weight = 0.05; /* 5/200 = 0.025 < 0.05 */
  o.min_gaussian_occupancy = 0;
  set_one_gmm(&s1, GH_COV_DIAG, G, D);
  gh_gmm_set_update(&s1, &acc, &o, NULL);
  gh_gmm_get_moments(&s1.pdfs[0], w, mu, var);
  GH_TEST_OK(s1.pdfs[0].num_gauss == 3, "remove-low-count-gaussians=false keeps the Gaussian");
  GH_TEST_NEAR(w[2], 0.05, 1e-6, "its weight is floored at min-gaussian-weight");
  GH_TEST_NEAR(mu[2 * D], 2.0, 1e-5, "its mean is not updated");
  gh_gmm_set_free(&s1);

  /* 4) variance floor */
  gh_est_opts_default(&o);
  o.min_gaussian_occupancy = 0;
  o.min_variance = 50.0;
  set_one_gmm(&s1, GH_COV_DIAG, G, D);
  memset(&st, 0, sizeof st);
  gh_gmm_set_update(&s1, &acc, &o, &st);
  gh_gmm_get_moments(&s1.pdfs[0], w, mu, var);
  double minv = 1e30;
  for (int k = 0; k < G * D; ++k) minv = fmin(minv, var[k]);
  GH_TEST_OK(minv >= 50.0 * (1 - 1e-6) && st.num_floored > 0, "variances floored at --min-variance (min %g, %d floored)",
             minv, st.num_floored);
  gh_gmm_set_free(&s1);
  gh_accs_free(&acc);
  gh_gmm_set_free(&s);
}

static void test_full_update(void) {
  enum { N = 500, D = 4, G = 2 };
  double X[N * D];
  int a[N];
  gh_rng r;
  gh_rng_seed(&r, 11);
  for (int i = 0; i < N; ++i) {
    a[i] = i % 2;
    double z0 = gh_rng_gauss(&r);
    for (int d = 0; d < D; ++d) X[i * D + d] = 5.0 * a[i] + z0 * (d + 1) + 0.5 * gh_rng_gauss(&r);
  }
  gh_gmm_set s;
  set_one_gmm(&s, GH_COV_FULL, G, D);
  gh_accs_set acc;
  gh_accs_init(&acc, &s);
  acc_hard(&acc.pdfs[0], X, a, N);
  gh_est_opts o;
  gh_est_opts_default(&o);
  o.min_gaussian_occupancy = 0;
  o.min_gaussian_weight = 0;
  gh_gmm_set_update(&s, &acc, &o, NULL);
  double w[G], mu[G * D], cov[G * 10];
  gh_gmm_get_moments(&s.pdfs[0], w, mu, cov);
  double err = 0;
  for (int g = 0; g < G; ++g) {
    double m[D] = {0}, C[10] = {0}, n = 0;
    for (int i = 0; i < N; ++i) if (a[i] == g) { n++; for (int d = 0; d < D; ++d) m[d] += X[i * D + d]; }
    for (int d = 0; d < D; ++d) m[d] /= n;
    for (int i = 0; i < N; ++i) if (a[i] == g)
      for (int rr = 0; rr < D; ++rr) for (int c = 0; c <= rr; ++c)
        C[gh_packed_index(rr, c)] += (X[i * D + rr] - m[rr]) * (X[i * D + c] - m[c]) / n;
    for (int d = 0; d < D; ++d) err = fmax(err, fabs(mu[g * D + d] - m[d]));
    for (int k = 0; k < 10; ++k) err = fmax(err, fabs(cov[g * 10 + k] - C[k]) / fabs(C[0]));
  }
  GH_TEST_OK(err < 1e-4, "full M-step means and covariances (max err %.2g)", err);
  gh_gmm_set_free(&s);

  /* eigenvalue floor via max-condition: near-singular data */
  for (int i = 0; i < N; ++i) {
    a[i] = 0;
    double z = gh_rng_gauss(&r);
    for (int d = 0; d < D; ++d) X[i * D + d] = z * (d + 1) + 1e-4 * gh_rng_gauss(&r);
  }
  set_one_gmm(&s, GH_COV_FULL, 1, D);
  gh_accs_free(&acc);
  gh_accs_init(&acc, &s);
  acc_hard(&acc.pdfs[0], X, a, N);
  gh_est_opts_default(&o);
  o.min_gaussian_occupancy = 0;
  o.max_condition = 100;
  gh_est_stats st;
  memset(&st, 0, sizeof st);
  gh_gmm_set_update(&s, &acc, &o, &st);
  GH_TEST_OK(st.num_floored == D - 1, "max-condition floors the %d small eigenvalues (floored %d)", D - 1, st.num_floored);
  gh_accs_free(&acc);
  gh_gmm_set_free(&s);
}

/* Kaldi's own M-step output: ami-full16.fgmm = fgmm-global-est
 * --min-gaussian-occupancy=3 of ami-full16.acc (all Gaussians updated, so
 * the result depends on the accs only). */
static void test_kaldi_full_fixture(void) {
  char mpath[1024], apath[1024];
  snprintf(mpath, sizeof mpath, "%s/data/kaldi-fixtures/ami-full16.fgmm", gh_test_shared());
  snprintf(apath, sizeof apath, "%s/data/kaldi-fixtures/ami-full16.acc", gh_test_shared());
  FILE *f = fopen(mpath, "rb");
  if (!f) { GH_TEST_OK(1, "# SKIP Kaldi fixture not found (%s)", mpath); return; }
  fclose(f);
  gh_gmm_set ref, s;
  gh_gmm_set_read(mpath, &ref);
  gh_gmm_set_read(mpath, &s);
  gh_accs_set acc;
  gh_accs_read(apath, &acc);
  gh_est_opts o;
  gh_est_opts_default(&o);
  o.min_gaussian_occupancy = 3;
  gh_gmm_set_update(&s, &acc, &o, NULL);
  const gh_gmm *a = &s.pdfs[0], *b = &ref.pdfs[0];
  GH_TEST_OK(a->num_gauss == b->num_gauss, "Kaldi fgmm-global-est fixture: same number of Gaussians (%d)", a->num_gauss);
  int G = a->num_gauss, D = a->dim;
  double ew = 0, em = 0, ei = 0, eg = 0;
  for (int g = 0; g < G; ++g) {
    ew = fmax(ew, fabs(a->weights[g] - b->weights[g]) / b->weights[g]);
    eg = fmax(eg, fabs(a->gconsts[g] - b->gconsts[g]) / fabs(b->gconsts[g]));
    double scale = 0;
    for (int k = 0; k < gh_packed_size(D); ++k) scale = fmax(scale, fabs(b->inv_vars[g * gh_packed_size(D) + k]));
    for (int k = 0; k < gh_packed_size(D); ++k)
      ei = fmax(ei, fabs(a->inv_vars[g * gh_packed_size(D) + k] - b->inv_vars[g * gh_packed_size(D) + k]) / scale);
    double ms = 0;
    for (int d = 0; d < D; ++d) ms = fmax(ms, fabs(b->means_invvars[g * D + d]));
    for (int d = 0; d < D; ++d) em = fmax(em, fabs(a->means_invvars[g * D + d] - b->means_invvars[g * D + d]) / ms);
  }
  GH_TEST_OK(ew < 1e-5, "Kaldi fixture: weights (max rel err %.2g)", ew);
  GH_TEST_OK(em < 1e-3, "Kaldi fixture: means_invcovars (max rel err %.2g)", em);
  GH_TEST_OK(ei < 1e-3, "Kaldi fixture: inv_covars (max rel err %.2g)", ei);
  GH_TEST_OK(eg < 1e-4, "Kaldi fixture: gconsts (max rel err %.2g)", eg);
  gh_accs_free(&acc);
  gh_gmm_set_free(&s);
  gh_gmm_set_free(&ref);
}

static void test_split(void) {
  int32_t t[3];
  double occs[3] = {100, 400, 0};
  int64_t tot = gh_split_targets(occs, 3, 6, 1.0, 0.0, t);
  GH_TEST_OK(t[0] == 1 && t[1] == 4 && t[2] == 1 && tot == 6, "split targets by occ^power (got %d %d %d)", t[0], t[1], t[2]);
  gh_split_targets(occs, 3, 6, 1.0, 150.0, t); /* pdf 1: (n+1)*150 >= 400 stops at 2 */
  GH_TEST_OK(t[1] == 2 && t[0] == 1, "min-count limits the split targets (got %d %d %d)", t[0], t[1], t[2]);

  gh_gmm_set s;
  set_one_gmm(&s, GH_COV_DIAG, 2, 3);
  gh_rng r;
  gh_rng_seed(&r, 3);
  gh_gmm_split(&s.pdfs[0], 5, 0.01, &r);
  double w[5], mu[15], v[15];
  gh_gmm_get_moments(&s.pdfs[0], w, mu, v);
  double sw = 0;
  for (int g = 0; g < 5; ++g) sw += w[g];
  GH_TEST_OK(s.pdfs[0].num_gauss == 5, "split to 5 Gaussians");
  GH_TEST_NEAR(sw, 1.0, 1e-6, "split keeps weights summing to 1");
  /* split order: 0 -> 2, 1 -> 3, 0 -> 4 (heaviest, first on ties); Gaussian 1 (mean 1) was split once */
  GH_TEST_NEAR(mu[1 * 3] + mu[3 * 3], 2.0, 1e-6, "split moves the two halves symmetrically");
  GH_TEST_OK(fabs(mu[3] - 1) > 0 && fabs(mu[3] - 1) < 0.1, "split perturbation is small (%g)", mu[3] - 1);
  GH_TEST_NEAR(w[1], 0.25, 1e-6, "split halves the weight");
  gh_gmm_set_free(&s);

  set_one_gmm(&s, GH_COV_FULL, 1, 3);
  gh_rng_seed(&r, 3);
  double oc[1] = {1000};
  int64_t n = gh_gmm_set_mixup(&s, 4, oc, 0.2, 20, 0.01, &r);
  GH_TEST_OK(n == 4 && s.pdfs[0].num_gauss == 4, "mix-up of a full-covariance set to 4 Gaussians");
  gh_gmm_set_free(&s);
}

/* Two-cluster data in 2-D plus a weak third cluster. */
static float *make_data(int N, int D, uint64_t seed) {
  float *X = gh_malloc(sizeof(float) * N * D);
  gh_rng r;
  gh_rng_seed(&r, seed);
  for (int i = 0; i < N; ++i) {
    int c = i % 5 == 0 ? 2 : i % 2;
    for (int d = 0; d < D; ++d) X[i * D + d] = (float)(4.0 * c * (d == 0 ? 1 : -0.5) + (1 + 0.5 * c) * gh_rng_gauss(&r));
  }
  return X;
}

static void test_init_and_em(void) {
  enum { N = 3000, D = 3 };
  float *X = make_data(N, D, 5);
  for (int full = 0; full <= 1; ++full) {
    gh_init_opts io;
    gh_init_opts_default(&io);
    io.num_gauss = 6;
    io.cov_type = full ? GH_COV_FULL : GH_COV_DIAG;
    io.seed = 42;
    gh_gmm a, b, c;
    gh_gmm_init_from_data(&a, X, NULL, N, D, &io, "test");
    gh_gmm_init_from_data(&b, X, NULL, N, D, &io, "test");
    io.seed = 43;
    gh_gmm_init_from_data(&c, X, NULL, N, D, &io, "test");
    int64_t S = full ? gh_packed_size(D) : D;
    int same = a.num_gauss == b.num_gauss && !memcmp(a.means_invvars, b.means_invvars, sizeof(float) * a.num_gauss * D) &&
               !memcmp(a.inv_vars, b.inv_vars, sizeof(float) * a.num_gauss * S);
    GH_TEST_OK(same, "%s init deterministic for a seed", full ? "full" : "diag");
    GH_TEST_OK(memcmp(a.means_invvars, c.means_invvars, sizeof(float) * a.num_gauss * D) != 0,
               "%s init differs for another seed", full ? "full" : "diag");
    double sw = 0;
    int finite = 1;
    for (int g = 0; g < a.num_gauss; ++g) { sw += a.weights[g]; finite &= isfinite(a.gconsts[g]); }
    GH_TEST_OK(a.num_gauss == 6 && finite, "%s init: 6 Gaussians, finite gconsts", full ? "full" : "diag");
    GH_TEST_NEAR(sw, 1.0, 1e-5, "%s init: weights sum to 1", full ? "full" : "diag");

    /* EM through the CPU backend: log-likelihood non-decreasing */
    gh_backend *be = gh_backend_cpu_new();
    if (!be) { GH_TEST_OK(0, "CPU backend available: %s", gh_last_error()); continue; }
    gh_gmm_set s;
    memset(&s, 0, sizeof s);
    s.dim = D; s.num_pdfs = 1; s.pdfs = gh_calloc(1, sizeof(gh_gmm));
    gh_gmm_copy(&s.pdfs[0], &a);
    gh_data d;
    memset(&d, 0, sizeof d);
    d.dim = D; d.num_frames = N; d.feats = X; d.num_pairs = N;
    d.pairs = gh_malloc(sizeof(gh_frame_pdf) * N);
    for (int i = 0; i < N; ++i) { d.pairs[i].frame = i; d.pairs[i].pdf = 0; d.pairs[i].weight = 1; }
    d.total_weight = N;
    gh_est_opts o;
    gh_est_opts_default(&o);
    double prev = -1e300;
    int mono = 1;
    double first = 0, last = 0;
    for (int it = 0; it < 15; ++it) {
      gh_accs_set acc;
      double ll = gh_data_estep(be, &s, &d, &acc, NULL);
      if (it == 0) first = ll;
      last = ll;
      if (ll < prev - 1e-5 * fabs(prev)) mono = 0;
      prev = ll;
      gh_gmm_set_update(&s, &acc, &o, NULL);
      gh_accs_free(&acc);
    }
    GH_TEST_OK(mono && last > first, "%s EM: avg log-likelihood non-decreasing over 15 iterations (%.5f -> %.5f)",
               full ? "full" : "diag", first, last);
    /* reference check of the E-step total against gh_gmm_loglike_ref */
    double ref = 0;
    for (int i = 0; i < N; ++i) ref += gh_gmm_loglike_ref(&s.pdfs[0], X + i * D, NULL);
    gh_accs_set acc;
    double ll = gh_data_estep(be, &s, &d, &acc, NULL);
    GH_TEST_NEAR(ll, ref / N, 1e-4 * fabs(ref / N), "%s E-step avg loglike matches gh_gmm_loglike_ref", full ? "full" : "diag");
    gh_accs_free(&acc);
    free(d.pairs);
    gh_gmm_set_free(&s);
    gh_backend_free(be);
    gh_gmm_free(&a); gh_gmm_free(&b); gh_gmm_free(&c);
  }
  /* fewer frames than num_gauss * min_frames_per_gauss: refused by default (as Kaldi; the
   * refusal is tested in numerics.bats), allowed with min_frames_per_gauss = 0 */
  gh_init_opts io;
  gh_init_opts_default(&io);
  io.num_gauss = 8;
  io.min_frames_per_gauss = 0;
  gh_gmm g;
  gh_gmm_init_from_data(&g, X, NULL, 40, D, &io, "small");
  GH_TEST_OK(g.num_gauss == 8, "init with 40 frames and min_frames_per_gauss 0 gives 8 Gaussians");
  gh_gmm_free(&g);
  free(X);
}

/* The host M-step in parallel (gh_gmm_set_update: pdfs in parallel for
 * many small pdfs, Gaussians in parallel inside a large pdf) gives the
 * serial loop's bytes and counts: P pdfs of G full Gaussians (D = 16), each
 * Gaussian's frames along a few directions (so its eigenvalues are
 * floored), some Gaussians below the occupancy minimum (removed). */
static int sets_identical(const gh_gmm_set *a, const gh_gmm_set *b) {
  if (a->num_pdfs != b->num_pdfs) return 0;
  for (int p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm *x = &a->pdfs[p], *y = &b->pdfs[p];
    if (x->num_gauss != y->num_gauss) return 0;
    const size_t G = (size_t)x->num_gauss, D = (size_t)x->dim, S = (size_t)gh_gmm_cov_size(x);
    if (memcmp(x->weights, y->weights, G * sizeof(float)) || memcmp(x->gconsts, y->gconsts, G * sizeof(float)) ||
        memcmp(x->means_invvars, y->means_invvars, G * D * sizeof(float)) ||
        memcmp(x->inv_vars, y->inv_vars, G * S * sizeof(float)))
      return 0;
  }
  return 1;
}

static void test_parallel_update(void) {
#ifdef _OPENMP
  enum { D = 16 };
  const int shapes[2][2] = {{40, 6}, {1, 96}}; /* P x G: by pdf; one UBM-like pdf: by Gaussian */
  for (int sh = 0; sh < 2; ++sh) {
    const int P = shapes[sh][0], G = shapes[sh][1];
    gh_gmm_set s;
    memset(&s, 0, sizeof s);
    s.dim = D;
    s.num_pdfs = P;
    s.pdfs = gh_calloc((size_t)P, sizeof(gh_gmm));
    gh_rng r;
    gh_rng_seed(&r, 7 + sh);
    gh_accs_set acc;
    for (int p = 0; p < P; ++p) {
      gh_gmm_set one;
      set_one_gmm(&one, GH_COV_FULL, G, D);
      s.pdfs[p] = one.pdfs[0];
      free(one.pdfs);
    }
    gh_accs_init(&acc, &s);
    for (int p = 0; p < P; ++p)
      for (int g = 0; g < G; ++g) {
        const int n = g % 7 == 3 ? 20 : 150 + 13 * g; /* 20 < 100: below the full-covariance minimum */
        double *X = gh_malloc(sizeof(double) * (size_t)n * D);
        int *a = gh_malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; ++i) {
          const double z0 = gh_rng_gauss(&r), z1 = gh_rng_gauss(&r);
          for (int d = 0; d < D; ++d)
            X[i * D + d] = g + z0 * (d + 1) + z1 * (d % 3) + (d < 4 ? 1e-3 : 0.3) * gh_rng_gauss(&r);
          a[i] = g;
        }
        acc_hard(&acc.pdfs[p], X, a, n);
        free(X);
        free(a);
      }
    gh_est_opts o;
    gh_est_opts_default(&o);
    o.remove_low_count_gaussians = 1;
    gh_gmm_set s1, s4;
    memset(&s1, 0, sizeof s1);
    memset(&s4, 0, sizeof s4);
    gh_gmm_set_copy(&s1, &s);
    gh_gmm_set_copy(&s4, &s);
    gh_est_stats st1, st4;
    memset(&st1, 0, sizeof st1);
    memset(&st4, 0, sizeof st4);
    const int nth = omp_get_max_threads();
    omp_set_num_threads(1);
    gh_gmm_set_update(&s1, &acc, &o, &st1);
    omp_set_num_threads(4);
    gh_gmm_set_update(&s4, &acc, &o, &st4);
    omp_set_num_threads(nth);
    GH_TEST_OK(sets_identical(&s1, &s4) && memcmp(&st1.objf_change, &st4.objf_change, sizeof(double)) == 0 &&
                   st1.count == st4.count && st1.num_removed == st4.num_removed && st1.num_floored == st4.num_floored &&
                   st1.num_gauss_floored == st4.num_gauss_floored && st1.worst_condition == st4.worst_condition &&
                   st1.num_removed > 0 && st1.num_eig_floored > 0,
               "host M-step, %d pdfs x %d full Gaussians: 4 threads give 1 thread's bytes and counts (removed %d, "
               "eigenvalues floored %d, objf change %.9g)", P, G, st1.num_removed, st1.num_eig_floored,
               st1.objf_change);
    gh_gmm_set_free(&s1);
    gh_gmm_set_free(&s4);
    gh_gmm_set_free(&s);
    gh_accs_free(&acc);
  }
#else
  printf("ok %d - # SKIP host M-step in parallel: built without OpenMP\n", ++gh_t_n);
  ++gh_t_pass;
#endif
}

int main(void) {
  gh_init("test_est");
  test_diag_update();
  test_full_update();
  test_parallel_update();
  test_kaldi_full_fixture();
  test_split();
  test_init_and_em();
  return gh_test_done();
}
