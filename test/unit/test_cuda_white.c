/* test_cuda_white.c -- the CUDA E-step's batched path for pdfs outside the
 * fp32 budget (kernels/cuda/cuda-white.cu; the rule kernels/cuda/cuda-route.h).
 *
 * Everywhere (no GPU needed):
 *  - the rules gh_cuda_batch_route and gh_cuda_score_route on chosen inputs
 *    (which pdfs are batched, whitened or in double, the modes of
 *    GH_CUDA_BATCH, the dimension limit, NaN estimates, stale factors);
 *  - the generated ill-conditioned models (below) are what the tests need:
 *    every case has pdfs whose centred fp32 estimate (gh_gemm_set_errors)
 *    is above the budget (so the CUDA backend routes them to the double
 *    path) and every Gaussian's whitened estimate (gh_white_error) within
 *    it (so the rule takes the whitened form).
 * With a GPU (gh_cuda_device_count() > 0; else "# SKIP no GPU"), for each
 * case and each of GH_CUDA_BATCH = (unset: whitened), double, 0 (the
 * per-pdf DGEMMs of before):
 *  - the E-step's statistics against the float64 reference (the Gaussians
 *    the float parameters define, gemm-forms.h gh_gauss_exact, evaluated in
 *    double: the numerical contract's reference, doc/reliability.md):
 *    |got - ref| <= 1e-5 max(1, max |ref|) per statistic array and pdf;
 *    total log-likelihood within 1e-3 nats per pair (weighted);
 *  - the same statistics against the cpu backend (its double GEMM path):
 *    1e-5 of the largest, as above;
 *  - the path counters: the whitened and the double modes count their pairs
 *    as GH_PATH_WHITE / GH_PATH_DOUBLE;
 *  - two runs byte-identical (no atomics in the batched path);
 *  - after a device M-step (the factors made again on the device): the next
 *    E-step against the cpu backend's on the fetched model (1e-5), every
 *    pair on the batched path;
 *  - loglikes, whitened (default) and by the DGEMM (GH_CUDA_BATCH=0), within
 *    1e-3 nats + 1e-5 relative of the reference.
 * Models: P pdfs of G full Gaussians, D dimensions; each covariance Q diag(l)
 * Q' with Q random orthogonal and eigenvalues l log-spaced over [1/cond, 1]
 * (condition 1e2-1e4), each mean at base + offset * u (u a random unit
 * vector, base 60 in dimension 0 and 12 in the others: MFCC-like), offsets
 * 0-1e4 standard deviations (of the largest eigenvalue, 1); frames drawn from
 * the Gaussians themselves.  Pairs: each frame with its own pdf (weight
 * 1), plus, when the offset is at most 10, with a random other pdf (weight
 * 0.3); one pdf gets more than SEG (2,048) pairs, so that its statistics
 * are the sum of several tasks.
 */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "gh-test.h"
#include "gemm-forms.h"
#include "gmm/gmm-est.h"
#include "cuda/cuda-route.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2.0 * log(urand())) * cos(2 * M_PI * urand()); }

/* ---------------------------------------------------------- the rule */
static void check_rule(void) {
  const double B = 5e-4;
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, 1e-4, B, 1, 1) == GH_CUDA_BATCH_WHITE,
             "rule: full pdf on the double path, whitened estimate within budget -> whitened");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, 1e-3, B, 1, 1) == GH_CUDA_BATCH_DOUBLE,
             "rule: whitened estimate above budget -> batched double");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, NAN, B, 1, 1) == GH_CUDA_BATCH_DOUBLE,
             "rule: NaN whitened estimate -> batched double");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, 1e-4, B, 0, 1) == GH_CUDA_BATCH_DOUBLE,
             "rule: no (or stale) factors -> batched double");
  GH_TEST_OK(gh_cuda_batch_route(1, 0, 40, 1000, 16, 0.0, B, 1, 1) == GH_CUDA_BATCH_DOUBLE,
             "rule: diagonal pdf on the double path -> batched double, never whitened");
  GH_TEST_OK(gh_cuda_batch_route(0, 1, 40, 1000, 16, 1e-4, B, 1, 1) == GH_CUDA_BATCH_NONE,
             "rule: pdf not on the double path keeps its path");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, 1e-4, B, 1, 0) == GH_CUDA_BATCH_NONE,
             "rule: GH_CUDA_BATCH=0 -> the per-pdf path");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, 1e-4, B, 1, 2) == GH_CUDA_BATCH_DOUBLE,
             "rule: GH_CUDA_BATCH=double -> batched double even when whitening would do");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, GH_CUDA_BATCH_MAX_D, 1000, 16, 1e-4, B, 1, 1) == GH_CUDA_BATCH_WHITE &&
                 gh_cuda_batch_route(1, 1, GH_CUDA_BATCH_MAX_D + 1, 1000, 16, 1e-4, B, 1, 1) == GH_CUDA_BATCH_NONE,
             "rule: D = %d batched, D = %d keeps the per-pdf path", GH_CUDA_BATCH_MAX_D, GH_CUDA_BATCH_MAX_D + 1);
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, 1000, 16, B, B, 1, 1) == GH_CUDA_BATCH_WHITE,
             "rule: estimate equal to the budget -> whitened (<=)");
  GH_TEST_OK(gh_cuda_batch_route(1, 1, 40, (1LL << 20), 16, 1e-4, B, 1, 1) == GH_CUDA_BATCH_WHITE &&
                 gh_cuda_batch_route(1, 1, 40, (1LL << 20) + 1, 16, 1e-4, B, 1, 1) == GH_CUDA_BATCH_NONE,
             "rule: 2^24 posteriors batched, one pair more keeps the per-pdf DGEMMs");
  GH_TEST_OK(gh_cuda_score_route(5, 5, 1, 1) == 1, "score rule: every double-path pdf has factors -> whitened");
  GH_TEST_OK(gh_cuda_score_route(5, 4, 1, 1) == 0, "score rule: one double-path pdf without factors -> DGEMM");
  GH_TEST_OK(gh_cuda_score_route(0, 0, 1, 1) == 0, "score rule: no double-path pdf -> unchanged");
  GH_TEST_OK(gh_cuda_score_route(5, 5, 0, 1) == 0, "score rule: stale factors -> DGEMM");
  GH_TEST_OK(gh_cuda_score_route(5, 5, 1, 0) == 0 && gh_cuda_score_route(5, 5, 1, 2) == 0,
             "score rule: GH_CUDA_BATCH=0 or double -> DGEMM");
}

/* ------------------------------------------------------- the models */
typedef struct {
  const char *name;
  int P, G, D, T;
  double cond, offset;
  gh_gmm_set set;
  float *X;
  gh_frame_pdf *pairs;
  int64_t npairs;
} wcase;

/* Random orthogonal Q [D x D] (Gram-Schmidt of a Gaussian matrix, twice). */
static void rand_orth(double *Q, int D) {
  for (int i = 0; i < D * D; ++i) Q[i] = nrand();
  for (int pass = 0; pass < 2; ++pass)
    for (int c = 0; c < D; ++c) {
      for (int k = 0; k < c; ++k) {
        double d = 0;
        for (int i = 0; i < D; ++i) d += Q[i * D + c] * Q[i * D + k];
        for (int i = 0; i < D; ++i) Q[i * D + c] -= d * Q[i * D + k];
      }
      double n = 0;
      for (int i = 0; i < D; ++i) n += Q[i * D + c] * Q[i * D + c];
      n = sqrt(n);
      for (int i = 0; i < D; ++i) Q[i * D + c] /= n;
    }
}

static void make_case(wcase *w) {
  const int P = w->P, G = w->G, D = w->D;
  memset(&w->set, 0, sizeof w->set);
  w->set.dim = D;
  w->set.num_pdfs = P;
  w->set.form = GH_SET_AM;
  w->set.pdfs = calloc(P, sizeof(gh_gmm));
  double *Q = malloc(sizeof(double) * D * D), *lam = malloc(sizeof(double) * D);
  double *mu = malloc(sizeof(double) * (size_t)P * G * D), *C = malloc(sizeof(double) * (size_t)P * G * D * D);
  for (int p = 0; p < P; ++p) {
    gh_gmm *g = &w->set.pdfs[p];
    gh_gmm_init(g, GH_COV_FULL, G, D);
    for (int k = 0; k < G; ++k) {
      rand_orth(Q, D);
      for (int i = 0; i < D; ++i) lam[i] = pow(w->cond, -(double)i / (D - 1)); /* [1/cond, 1] */
      double *m = mu + ((size_t)p * G + k) * D, *Ck = C + ((size_t)p * G + k) * D * D;
      double un = 0;
      for (int i = 0; i < D; ++i) { m[i] = nrand(); un += m[i] * m[i]; }
      un = sqrt(un);
      for (int i = 0; i < D; ++i) m[i] = (i == 0 ? 60.0 : 12.0) + w->offset * m[i] / un + 0.5 * nrand();
      /* Sigma = Q diag(lam) Q', P = Q diag(1/lam) Q'; Ck: the factor Q diag(sqrt lam) for sampling */
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < D; ++j) Ck[i * D + j] = Q[i * D + j] * sqrt(lam[j]);
      const double wk = (0.5 + urand()) / G;
      double b[128];
      for (int i = 0; i < D; ++i) {
        double s = 0;
        for (int j = 0; j < D; ++j) {
          double pij = 0;
          for (int r = 0; r < D; ++r) pij += Q[i * D + r] * Q[j * D + r] / lam[r];
          s += pij * m[j];
          if (j <= i) g->inv_vars[(size_t)k * gh_packed_size(D) + gh_packed_index(i, j)] = (float)pij;
        }
        b[i] = s;
        g->means_invvars[(size_t)k * D + i] = (float)s;
      }
      double logdet = 0, mPm = 0;
      for (int i = 0; i < D; ++i) { logdet += log(lam[i]); mPm += b[i] * m[i]; }
      g->weights[k] = (float)wk;
      g->gconsts[k] = (float)(log(wk) - 0.5 * (D * log(2 * M_PI) + logdet + mPm));
    }
  }
  /* frames from the Gaussians; pairs */
  w->X = malloc(sizeof(float) * (size_t)w->T * D);
  w->pairs = malloc(sizeof(gh_frame_pdf) * (size_t)w->T * 2);
  w->npairs = 0;
  for (int t = 0; t < w->T; ++t) {
    /* the first 2,600 frames all from pdf 0 (more than one task of SEG pairs) */
    const int p = t < 2600 ? 0 : (int)(urand() * P) % P, k = (int)(urand() * G) % G;
    const double *m = mu + ((size_t)p * G + k) * D, *Ck = C + ((size_t)p * G + k) * D * D;
    double z[128];
    for (int j = 0; j < D; ++j) z[j] = nrand();
    for (int i = 0; i < D; ++i) {
      double s = m[i];
      for (int j = 0; j < D; ++j) s += Ck[i * D + j] * z[j];
      w->X[(size_t)t * D + i] = (float)s;
    }
    w->pairs[w->npairs++] = (gh_frame_pdf){.frame = t, .pdf = p, .weight = 1.0f};
    if (w->offset <= 10.0) {
      int q = (int)(urand() * P) % P;
      if (q != p) w->pairs[w->npairs++] = (gh_frame_pdf){.frame = t, .pdf = q, .weight = 0.3f};
    }
  }
  free(Q); free(lam); free(mu); free(C);
}

static void free_case(wcase *w) {
  gh_gmm_set_free(&w->set);
  free(w->X);
  free(w->pairs);
}

/* The rule's inputs on the CPU: how many pdfs fail the centred fp32
 * estimate, the largest whitened estimate over all Gaussians. */
static void case_inputs(const wcase *w, int *n_exact, double *worst_white) {
  const int P = w->P, D = w->D;
  double *c = calloc(D, sizeof(double)), *e_cen = malloc(sizeof(double) * P);
  gh_gemm_model_centre(&w->set, c);
  gh_gemm_set_errors(&w->set, c, NULL, e_cen, NULL, NULL);
  *n_exact = 0;
  for (int p = 0; p < P; ++p) *n_exact += !(e_cen[p] <= GH_GEMM_MAX_ROW_ERROR);
  double *mu = malloc(sizeof(double) * D), *work = malloc(sizeof(double) * gh_gauss_work_size(D));
  double worst = 0;
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < w->G; ++k) {
      gh_gauss_info info;
      gh_gauss_exact(&w->set.pdfs[p], k, mu, &info, work);
      const double e = gh_white_error(&w->set.pdfs[p], k, &info, work);
      if (!(e <= worst)) worst = e;
    }
  *worst_white = worst;
  free(c); free(e_cen); free(mu); free(work);
}

/* ------------------------------------------------- float64 reference */
typedef struct {
  double tot;
  gh_accs_set accs;
} estep_out;

static void ref_estep(const wcase *w, estep_out *o) {
  const int D = w->D, P = w->P, G = w->G;
  gh_accs_init(&o->accs, &w->set);
  o->tot = 0;
  double *mu = malloc(sizeof(double) * (size_t)P * G * D), *norm = malloc(sizeof(double) * (size_t)P * G);
  double *work = malloc(sizeof(double) * gh_gauss_work_size(D)), ll[256];
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < G; ++k) {
      gh_gauss_info info;
      gh_gauss_exact(&w->set.pdfs[p], k, mu + ((size_t)p * G + k) * D, &info, work);
      norm[p * G + k] = info.norm;
    }
  for (int64_t n = 0; n < w->npairs; ++n) {
    const int p = w->pairs[n].pdf;
    const float *x = w->X + (size_t)w->pairs[n].frame * D;
    double mx = -INFINITY;
    for (int k = 0; k < G; ++k) {
      ll[k] = gh_gauss_exact_loglike(&w->set.pdfs[p], k, mu + ((size_t)p * G + k) * D, norm[p * G + k], x);
      if (ll[k] > mx) mx = ll[k];
    }
    double s = 0;
    for (int k = 0; k < G; ++k) s += exp(ll[k] - mx);
    const double lse = mx + log(s), wt = w->pairs[n].weight;
    o->tot += wt * lse;
    gh_gmm_accs *a = &o->accs.pdfs[p];
    for (int k = 0; k < G; ++k) {
      const double gm = wt * exp(ll[k] - lse);
      a->occupancy[k] += gm;
      for (int i = 0; i < D; ++i) {
        a->mean_accs[(size_t)k * D + i] += gm * x[i];
        for (int j = 0; j <= i; ++j)
          a->var_accs[(size_t)k * gh_packed_size(D) + gh_packed_index(i, j)] += gm * (double)x[i] * x[j];
      }
    }
  }
  free(mu); free(norm); free(work);
}

/* One E-step of backend b over the case's pairs (two data blocks, to check
 * that the accumulators add up across calls); path counters into paths. */
static void dev_estep(gh_backend *b, const wcase *w, estep_out *o, int64_t *paths) {
  gh_accs_init(&o->accs, &w->set);
  memset(b->path_pairs, 0, sizeof b->path_pairs);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &w->set);
  b->ops->gmm->acc_zero(b, m);
  const int64_t half = w->npairs / 2;
  gh_dev_data *d1 = b->ops->gmm->data_upload(b, w->X, w->T, w->D, w->pairs, half);
  gh_dev_data *d2 = b->ops->gmm->data_upload(b, w->X, w->T, w->D, w->pairs + half, w->npairs - half);
  o->tot = b->ops->gmm->accumulate(b, m, d1);
  o->tot += b->ops->gmm->accumulate(b, m, d2);
  b->ops->gmm->data_free(b, d1);
  b->ops->gmm->data_free(b, d2);
  b->ops->gmm->acc_fetch(b, m, &o->accs);
  b->ops->gmm->model_free(b, m);
  if (paths) memcpy(paths, b->path_pairs, sizeof b->path_pairs);
}

/* Largest |a - r| / max(1, max |r|) over each statistic array of each pdf. */
static double stat_err(const gh_accs_set *a, const gh_accs_set *r) {
  double worst = 0;
  for (int p = 0; p < r->num_pdfs; ++p) {
    const gh_gmm_accs *x = &a->pdfs[p], *y = &r->pdfs[p];
    const int64_t G = y->num_gauss, D = y->dim, S = gh_packed_size(y->dim);
    struct { const double *g, *f; int64_t n; } arr[3] = {
        {x->occupancy, y->occupancy, G}, {x->mean_accs, y->mean_accs, G * D}, {x->var_accs, y->var_accs, G * S}};
    for (int k = 0; k < 3; ++k) {
      double scale = 1;
      for (int64_t i = 0; i < arr[k].n; ++i) if (fabs(arr[k].f[i]) > scale) scale = fabs(arr[k].f[i]);
      for (int64_t i = 0; i < arr[k].n; ++i) {
        const double e = fabs(arr[k].g[i] - arr[k].f[i]) / scale;
        if (!(e <= worst)) worst = e;
      }
    }
  }
  return worst;
}

static int accs_same(const gh_accs_set *a, const gh_accs_set *b) {
  for (int p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm_accs *x = &a->pdfs[p], *y = &b->pdfs[p];
    const int64_t G = x->num_gauss, D = x->dim, S = gh_packed_size(x->dim);
    if (memcmp(x->occupancy, y->occupancy, sizeof(double) * G) ||
        memcmp(x->mean_accs, y->mean_accs, sizeof(double) * G * D) ||
        memcmp(x->var_accs, y->var_accs, sizeof(double) * G * S))
      return 0;
  }
  return 1;
}

/* After a device M-step (cuda: the factors made again on the device,
 * k_white_refresh): the next E-step on the device model against the same
 * E-step on the fetched model uploaded to the cpu backend (statistics within
 * 1e-5 of the largest), with its pairs on the batched path. */
static void check_after_mstep(gh_backend *b, gh_backend *cpu, const wcase *w) {
  gh_dev_model *m = b->ops->gmm->model_upload(b, &w->set);
  gh_dev_data *dd = b->ops->gmm->data_upload(b, w->X, w->T, w->D, w->pairs, w->npairs);
  b->ops->gmm->acc_zero(b, m);
  b->ops->gmm->accumulate(b, m, dd);
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  eo.remove_low_count_gaussians = 0;
  gh_est_stats st;
  memset(&st, 0, sizeof st);
  const int rc = b->ops->mstep->mstep(b, m, &eo, &st);
  if (rc != 0) {
    printf("ok %d - # SKIP %s: device M-step declined (%s)\n", ++gh_t_n, w->name, gh_last_error());
    ++gh_t_pass;
  } else {
    memset(b->path_pairs, 0, sizeof b->path_pairs);
    b->ops->gmm->acc_zero(b, m);
    const double tot = b->ops->gmm->accumulate(b, m, dd);
    gh_accs_set a;
    gh_accs_init(&a, &w->set);
    b->ops->gmm->acc_fetch(b, m, &a);
    gh_gmm_set upd;
    memset(&upd, 0, sizeof upd);
    gh_gmm_set_copy(&upd, &w->set);
    b->ops->mstep->model_fetch(b, m, &upd);
    estep_out h;
    wcase w2 = *w;
    w2.set = upd;
    dev_estep(cpu, &w2, &h, NULL);
    const double e = stat_err(&a, &h.accs), et = fabs(tot - h.tot) / (double)w->npairs;
    const int64_t batched = b->path_pairs[GH_PATH_WHITE] + b->path_pairs[GH_PATH_DOUBLE];
    GH_TEST_OK(e <= 1e-5 && et <= 1e-3 && batched == w->npairs,
               "%s, cuda after a device M-step: statistics vs cpu on the fetched model %.3g (<= 1e-5), total %.3g "
               "nats per pair, %lld whitened + %lld double of %lld pairs", w->name, e, et,
               (long long)b->path_pairs[GH_PATH_WHITE], (long long)b->path_pairs[GH_PATH_DOUBLE],
               (long long)w->npairs);
    gh_accs_free(&a);
    gh_accs_free(&h.accs);
    gh_gmm_set_free(&upd);
  }
  b->ops->gmm->data_free(b, dd);
  b->ops->gmm->model_free(b, m);
}

/* loglikes of backend b against the reference: the largest
 * |got - ref| / (1e-3 + 1e-5 |ref|) (<= 1 passes). */
static double check_loglikes(gh_backend *b, const wcase *w) {
  const int P = w->P, G = w->G, D = w->D, T = w->T < 3000 ? w->T : 3000;
  float *out = malloc(sizeof(float) * (size_t)T * P);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &w->set);
  b->ops->gmm->loglikes(b, m, w->X, T, out);
  b->ops->gmm->model_free(b, m);
  double *mu = malloc(sizeof(double) * (size_t)P * G * D), *norm = malloc(sizeof(double) * (size_t)P * G);
  double *work = malloc(sizeof(double) * gh_gauss_work_size(D)), ll[256], worst = 0;
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < G; ++k) {
      gh_gauss_info info;
      gh_gauss_exact(&w->set.pdfs[p], k, mu + ((size_t)p * G + k) * D, &info, work);
      norm[p * G + k] = info.norm;
    }
  for (int t = 0; t < T; ++t)
    for (int p = 0; p < P; ++p) {
      double mx = -INFINITY, s = 0;
      for (int k = 0; k < G; ++k) {
        ll[k] = gh_gauss_exact_loglike(&w->set.pdfs[p], k, mu + ((size_t)p * G + k) * D, norm[p * G + k],
                                       w->X + (size_t)t * D);
        if (ll[k] > mx) mx = ll[k];
      }
      for (int k = 0; k < G; ++k) s += exp(ll[k] - mx);
      const double ref = mx + log(s), e = fabs(out[(size_t)t * P + p] - ref) / (1e-3 + 1e-5 * fabs(ref));
      if (!(e <= worst)) worst = e;
    }
  free(out); free(mu); free(norm); free(work);
  return worst;
}

int main(void) {
  check_rule();
  wcase cases[] = {
      {"P=40 G=8 D=20 cond 1e2 offset 1e4", 40, 8, 20, 6000, 1e2, 1e4, {0}, NULL, NULL, 0},
      {"P=40 G=8 D=20 cond 1e3 offset 1e2", 40, 8, 20, 6000, 1e3, 1e2, {0}, NULL, NULL, 0},
      {"P=40 G=8 D=20 cond 1e4 offset 0", 40, 8, 20, 6000, 1e4, 0.0, {0}, NULL, NULL, 0},
      {"P=24 G=16 D=40 cond 1e4 offset 1e3", 24, 16, 40, 6000, 1e4, 1e3, {0}, NULL, NULL, 0},
      {"P=30 G=4 D=36 cond 1e3 offset 10", 30, 4, 36, 5000, 1e3, 10.0, {0}, NULL, NULL, 0},
  };
  const int ncase = (int)(sizeof cases / sizeof cases[0]);
  const int gpu = gh_cuda_device_count() > 0;
  gh_backend *cu = gpu ? gh_backend_create("cuda") : NULL;
  gh_backend *cpu = gh_backend_create("cpu");
  if (gpu) GH_TEST_OK(cu && !strcmp(cu->ops->name, "cuda"), "create cuda backend");
  for (int ci = 0; ci < ncase; ++ci) {
    wcase *w = &cases[ci];
    make_case(w);
    int nex;
    double ww;
    case_inputs(w, &nex, &ww);
    GH_TEST_OK(nex > 0, "%s: %d of %d pdfs outside the centred fp32 budget (the double path)", w->name, nex, w->P);
    GH_TEST_OK(ww <= gh_white_max_error(), "%s: largest whitened estimate %.3g nats within the budget %.3g",
               w->name, ww, gh_white_max_error());
    estep_out ref, host;
    ref_estep(w, &ref);
    dev_estep(cpu, w, &host, NULL);
    double wsum = 0;
    for (int64_t n = 0; n < w->npairs; ++n) wsum += w->pairs[n].weight;
    {
      /* the same form on the cpu backend (GH_CPU_WHITE=1: its whitened path
       * for the pdfs outside the fp32 budget) within the same tolerances:
       * what the CUDA checks below ask of the form is reachable */
      estep_out o;
      int64_t paths[8];
      setenv("GH_CPU_WHITE", "1", 1);
      dev_estep(cpu, w, &o, paths);
      unsetenv("GH_CPU_WHITE");
      const double es = stat_err(&o.accs, &ref.accs), et = fabs(o.tot - ref.tot) / wsum;
      GH_TEST_OK(es <= 1e-5 && et <= 1e-3 && paths[GH_PATH_WHITE] > 0,
                 "%s, cpu whitened: statistics vs float64 %.3g (<= 1e-5), total %.3g nats per pair (<= 1e-3), %lld "
                 "pairs whitened", w->name, es, et, (long long)paths[GH_PATH_WHITE]);
      gh_accs_free(&o.accs);
      setenv("GH_CPU_WHITE", "1", 1);
      const double el = check_loglikes(cpu, w);
      unsetenv("GH_CPU_WHITE");
      GH_TEST_OK(el <= 1.0, "%s, cpu whitened loglikes vs float64: %.3g of (1e-3 nats + 1e-5 relative)", w->name, el);
    }
    GH_TEST_OK(stat_err(&host.accs, &ref.accs) <= 1e-5, "%s, cpu (double path): statistics vs float64 %.3g",
               w->name, stat_err(&host.accs, &ref.accs));
    if (!gpu || !cu) {
      printf("ok %d - # SKIP no GPU (%s: the CUDA batched path)\n", ++gh_t_n, w->name);
      ++gh_t_pass;
      gh_accs_free(&ref.accs);
      gh_accs_free(&host.accs);
      free_case(w);
      continue;
    }
    static const struct { const char *env, *name; int path; } modes[] = {
        {NULL, "whitened", GH_PATH_WHITE}, {"double", "batched double", GH_PATH_DOUBLE}, {"0", "per-pdf DGEMM", -1}};
    for (int mo = 0; mo < 3; ++mo) {
      if (modes[mo].env) setenv("GH_CUDA_BATCH", modes[mo].env, 1); else unsetenv("GH_CUDA_BATCH");
      estep_out o, o2;
      int64_t paths[8];
      dev_estep(cu, w, &o, paths);
      const double es = stat_err(&o.accs, &ref.accs), eh = stat_err(&o.accs, &host.accs);
      const double et = fabs(o.tot - ref.tot) / wsum;
      GH_TEST_OK(es <= 1e-5, "%s, cuda %s: statistics vs float64 %.3g (<= 1e-5 of the largest)", w->name,
                 modes[mo].name, es);
      GH_TEST_OK(eh <= 1e-5, "%s, cuda %s: statistics vs cpu backend %.3g (<= 1e-5 of the largest)", w->name,
                 modes[mo].name, eh);
      GH_TEST_OK(et <= 1e-3, "%s, cuda %s: total log-likelihood vs float64 %.3g nats per pair (<= 1e-3)", w->name,
                 modes[mo].name, et);
      if (modes[mo].path >= 0)
        GH_TEST_OK(paths[modes[mo].path] > 0, "%s, cuda %s: %lld pairs counted on its path (white %lld, double "
                   "%lld, fp32 %lld)", w->name, modes[mo].name, (long long)paths[modes[mo].path],
                   (long long)paths[GH_PATH_WHITE], (long long)paths[GH_PATH_DOUBLE], (long long)paths[GH_PATH_FP32]);
      dev_estep(cu, w, &o2, NULL);
      GH_TEST_OK(accs_same(&o.accs, &o2.accs) && o.tot == o2.tot, "%s, cuda %s: two runs byte-identical", w->name,
                 modes[mo].name);
      gh_accs_free(&o.accs);
      gh_accs_free(&o2.accs);
    }
    for (int mo = 0; mo < 2; ++mo) {
      if (mo) setenv("GH_CUDA_BATCH", "0", 1); else unsetenv("GH_CUDA_BATCH");
      const double el = check_loglikes(cu, w);
      GH_TEST_OK(el <= 1.0, "%s, cuda loglikes (%s) vs float64: %.3g of (1e-3 nats + 1e-5 relative)", w->name,
                 mo ? "DGEMM" : "whitened", el);
    }
    unsetenv("GH_CUDA_BATCH");
    check_after_mstep(cu, cpu, w);
    gh_accs_free(&ref.accs);
    gh_accs_free(&host.accs);
    free_case(w);
  }
  if (cu) gh_backend_free(cu);
  gh_backend_free(cpu);
  return gh_test_done();
}
