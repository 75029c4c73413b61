/* gmm.c -- GMM sets in Kaldi's layout: allocation, moments <-> natural
 * parameters, gconsts, reference log-likelihoods, model file I/O (Kaldi
 * gmm/diag-gmm.cc, gmm/full-gmm.cc, gmm/am-diag-gmm.cc).  See gmm.h. */
#include "gmm/gmm.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "hmm/transition.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define GH_LOG_2PI 1.8378770664093454836 /* log(2 pi), Kaldi M_LOG_2PI */

int64_t gh_gmm_cov_size(const gh_gmm *g) {
  return g->type == GH_COV_FULL ? gh_packed_size(g->dim) : g->dim;
}

void gh_gmm_init(gh_gmm *g, gh_covtype type, int32_t num_gauss, int32_t dim) {
  if (num_gauss < 0 || dim < 0) gh_die("gh_gmm_init: bad shape %d x %d", num_gauss, dim);
  memset(g, 0, sizeof(*g));
  g->type = type;
  g->num_gauss = num_gauss;
  g->dim = dim;
  size_t G = (size_t)(num_gauss ? num_gauss : 1);
  g->gconsts = gh_calloc(G, sizeof(float));
  g->weights = gh_calloc(G, sizeof(float));
  g->means_invvars = gh_calloc(G * (size_t)(dim ? dim : 1), sizeof(float));
  g->inv_vars = gh_calloc(G * (size_t)(gh_gmm_cov_size(g) ? gh_gmm_cov_size(g) : 1), sizeof(float));
}

void gh_gmm_free(gh_gmm *g) {
  if (!g) return;
  free(g->gconsts);
  free(g->weights);
  free(g->means_invvars);
  free(g->inv_vars);
  memset(g, 0, sizeof(*g));
}

void gh_gmm_copy(gh_gmm *dst, const gh_gmm *src) {
  if (dst == src) return;
  gh_gmm tmp;
  gh_gmm_init(&tmp, src->type, src->num_gauss, src->dim);
  size_t G = (size_t)src->num_gauss, D = (size_t)src->dim, C = (size_t)gh_gmm_cov_size(src);
  if (G) {
    memcpy(tmp.gconsts, src->gconsts, G * sizeof(float));
    memcpy(tmp.weights, src->weights, G * sizeof(float));
    memcpy(tmp.means_invvars, src->means_invvars, G * D * sizeof(float));
    memcpy(tmp.inv_vars, src->inv_vars, G * C * sizeof(float));
  }
  gh_gmm_free(dst);
  *dst = tmp;
}

void gh_gmm_set_free(gh_gmm_set *s) {
  if (!s) return;
  for (int32_t p = 0; p < s->num_pdfs; ++p) gh_gmm_free(&s->pdfs[p]);
  free(s->pdfs);
  gh_transition_free(s->trans);
  memset(s, 0, sizeof(*s));
}

void gh_gmm_set_copy(gh_gmm_set *dst, const gh_gmm_set *src) {
  if (dst == src) return;
  gh_gmm_set tmp;
  memset(&tmp, 0, sizeof(tmp));
  tmp.dim = src->dim;
  tmp.num_pdfs = src->num_pdfs;
  tmp.form = src->form;
  tmp.pdfs = gh_calloc((size_t)(src->num_pdfs ? src->num_pdfs : 1), sizeof(gh_gmm));
  for (int32_t p = 0; p < src->num_pdfs; ++p) gh_gmm_copy(&tmp.pdfs[p], &src->pdfs[p]);
  tmp.trans = gh_transition_copy(src->trans);
  gh_gmm_set_free(dst);
  *dst = tmp;
}

int64_t gh_gmm_set_total_gauss(const gh_gmm_set *s) {
  int64_t n = 0;
  for (int32_t p = 0; p < s->num_pdfs; ++p) n += s->pdfs[p].num_gauss;
  return n;
}

/* ---------------- dense symmetric helpers (double) ---------------- */

static void unpack_sym(const float *packed, int32_t D, double *A) {
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) A[(size_t)i * D + j] = A[(size_t)j * D + i] = packed[gh_packed_index(i, j)];
}

static void unpack_sym_d(const double *packed, int32_t D, double *A) {
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) A[(size_t)i * D + j] = A[(size_t)j * D + i] = packed[gh_packed_index(i, j)];
}

/* In-place Cholesky A = L L' (row-major, lower triangle used and
 * overwritten by L; the strict upper triangle is not touched).  Plain loops
 * (Cholesky-Crout, sums in double): for the small matrices of GMMs (D <=
 * ~100) several times faster than LAPACKE's row-major dpotrf, whose
 * transposition copies and (with a threaded OpenBLAS) thread wake-ups
 * dominate there (bench/RESULTS.md D1).  Returns 0, or k + 1
 * if the leading minor of order k + 1 is not positive definite (LAPACK's
 * info convention). */
static int chol(double *A, int32_t D) {
  for (int32_t j = 0; j < D; ++j) {
    double *rj = A + (size_t)j * D;
    double d = rj[j];
    for (int32_t k = 0; k < j; ++k) d -= rj[k] * rj[k];
    if (!(d > 0.0)) return j + 1;
    d = sqrt(d);
    rj[j] = d;
    for (int32_t i = j + 1; i < D; ++i) {
      double *ri = A + (size_t)i * D;
      double t = ri[j];
      for (int32_t k = 0; k < j; ++k) t -= ri[k] * rj[k];
      ri[j] = t / d;
    }
  }
  return 0;
}

/* In-place inverse of a symmetric positive definite matrix; returns 0 or
 * non-zero if not positive definite.  Result is fully symmetric.
 * A = L L' (chol); L^-1 in place (LAPACK dtrti2's order: columns from the
 * last, each from the already inverted trailing block); then
 * A^-1 = L^-T L^-1 in place (dlauum's order: row i, columns j = 0..i). */
static int spd_inverse(double *A, int32_t D) {
  int info = chol(A, D);
  if (info) return info;
  for (int32_t j = D - 1; j >= 0; --j) {
    const double ajj = 1.0 / A[(size_t)j * D + j];
    A[(size_t)j * D + j] = ajj;
    for (int32_t i = D - 1; i > j; --i) { /* x_i = sum_{k=j+1..i} Linv[i][k] L[k][j] */
      double t = 0.0;
      for (int32_t k = j + 1; k <= i; ++k) t += A[(size_t)i * D + k] * A[(size_t)k * D + j];
      A[(size_t)i * D + j] = -ajj * t;
    }
  }
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double t = 0.0;
      for (int32_t k = i; k < D; ++k) t += A[(size_t)k * D + i] * A[(size_t)k * D + j];
      A[(size_t)i * D + j] = t;
    }
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j < i; ++j) A[(size_t)j * D + i] = A[(size_t)i * D + j];
  return 0;
}

/* ---------------- moments ---------------- */

void gh_gmm_get_moments(const gh_gmm *g, double *weights, double *means, double *covs) {
  int32_t G = g->num_gauss, D = g->dim;
  if (g->type == GH_COV_DIAG) {
    for (int32_t k = 0; k < G; ++k) {
      if (weights) weights[k] = g->weights[k];
      for (int32_t d = 0; d < D; ++d) {
        double iv = g->inv_vars[(size_t)k * D + d];
        double var = 1.0 / iv;
        if (means) means[(size_t)k * D + d] = g->means_invvars[(size_t)k * D + d] * var;
        if (covs) covs[(size_t)k * D + d] = var;
      }
    }
    return;
  }
  int64_t P = gh_packed_size(D);
  /* Gaussians are independent: spread over the cores (OpenMP, when the
   * build has it; each thread its own work matrix; no BLAS inside, so no
   * oversubscription), results identical to the serial loop. */
#pragma omp parallel if (G >= 32 && D >= 16)
  {
  double *A = gh_malloc((size_t)D * D * sizeof(double));
#pragma omp for schedule(static)
  for (int32_t k = 0; k < G; ++k) {
    if (weights) weights[k] = g->weights[k];
    unpack_sym(g->inv_vars + k * P, D, A);
    if (spd_inverse(A, D))
      gh_die("gh_gmm_get_moments: inverse covariance of Gaussian %d is not positive definite", k);
    const float *mi = g->means_invvars + (size_t)k * D;
    if (means)
      for (int32_t i = 0; i < D; ++i) {
        double s = 0;
        for (int32_t j = 0; j < D; ++j) s += A[(size_t)i * D + j] * mi[j];
        means[(size_t)k * D + i] = s;
      }
    if (covs)
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j <= i; ++j) covs[k * P + gh_packed_index(i, j)] = A[(size_t)i * D + j];
  }
  free(A);
  }
}

int gh_gmm_set_moments(gh_gmm *g, const double *weights, const double *means, const double *covs) {
  int32_t G = g->num_gauss, D = g->dim;
  if (g->type == GH_COV_DIAG) {
    for (int32_t k = 0; k < G; ++k)
      for (int32_t d = 0; d < D; ++d)
        if (!(covs[(size_t)k * D + d] > 0.0)) {
          gh_set_error("Gaussian %d: variance %g in dimension %d is not positive", k, covs[(size_t)k * D + d], d);
          return -1;
        }
    for (int32_t k = 0; k < G; ++k) {
      g->weights[k] = (float)weights[k];
      for (int32_t d = 0; d < D; ++d) {
        /* b from the stored (float) inverse variance, so that b / iv is
         * the mean up to b's own rounding (doc/reliability.md) */
        const float ivf = (float)(1.0 / covs[(size_t)k * D + d]);
        g->inv_vars[(size_t)k * D + d] = ivf;
        g->means_invvars[(size_t)k * D + d] = (float)(means[(size_t)k * D + d] * (double)ivf);
      }
    }
  } else {
    int64_t P = gh_packed_size(D);
    int32_t bad = -1; /* first Gaussian whose covariance is not positive definite */
#pragma omp parallel if (G >= 32 && D >= 16)
    {
    double *A = gh_malloc((size_t)D * D * sizeof(double));
#pragma omp for schedule(static)
    for (int32_t k = 0; k < G; ++k) {
      unpack_sym_d(covs + k * P, D, A);
      if (spd_inverse(A, D)) {
#pragma omp critical(gh_set_moments_bad)
        if (bad < 0 || k < bad) bad = k;
        continue;
      }
      g->weights[k] = (float)weights[k];
      /* b = P_f mu with P_f the stored (float) inverse covariance, so that
       * P_f^-1 b is the mean up to b's own rounding; with the double
       * inverse the implied mean would be off by ~ cond(P) 6e-8 |mu|
       * (doc/reliability.md) */
      for (int32_t i = 0; i < D; ++i) {
        double s = 0;
        for (int32_t j = 0; j < D; ++j) s += (double)(float)A[(size_t)i * D + j] * means[(size_t)k * D + j];
        g->means_invvars[(size_t)k * D + i] = (float)s;
        for (int32_t j = 0; j <= i; ++j) g->inv_vars[k * P + gh_packed_index(i, j)] = (float)A[(size_t)i * D + j];
      }
    }
    free(A);
    }
    if (bad >= 0) {
      gh_set_error("Gaussian %d: covariance is not positive definite", bad);
      return -1;
    }
  }
  gh_gmm_compute_gconsts(g);
  /* The float parameters must be usable: a variance beyond float range
   * (features of magnitude ~1e19 and more) gives an inverse variance of 0. */
  for (int32_t k = 0; k < G; ++k)
    if (g->weights[k] > 0 && !isfinite(g->gconsts[k])) {
      gh_set_error("Gaussian %d: parameters out of float range (inverse covariance underflows or overflows; "
                   "scale the features)", k);
      return -1;
    }
  return 0;
}

/* gconst of one Gaussian in double; NaN if a full inverse covariance is not
 * positive definite or a diagonal inverse variance is not positive. */
static double gconst_one(const gh_gmm *g, int32_t k, double *work) {
  int32_t D = g->dim;
  double gc = log((double)g->weights[k]) - 0.5 * GH_LOG_2PI * D;
  const float *mi = g->means_invvars + (size_t)k * D;
  if (g->type == GH_COV_DIAG) {
    const float *iv = g->inv_vars + (size_t)k * D;
    for (int32_t d = 0; d < D; ++d) {
      if (!(iv[d] > 0.0f)) return NAN;
      gc += 0.5 * log((double)iv[d]) - 0.5 * (double)mi[d] * mi[d] / iv[d];
    }
    return gc;
  }
  /* full: InvCov = L L'; log det Cov = -2 sum log L_ii;
   * mu' InvCov mu = mi' Cov mi = |L^{-1} mi|^2. */
  int64_t P = gh_packed_size(D);
  unpack_sym(g->inv_vars + k * P, D, work);
  if (chol(work, D)) return NAN;
  double logdet_inv = 0, quad = 0;
  double *y = work + (size_t)D * D;
  for (int32_t i = 0; i < D; ++i) {
    double s = mi[i];
    for (int32_t j = 0; j < i; ++j) s -= work[(size_t)i * D + j] * y[j];
    y[i] = s / work[(size_t)i * D + i];
    quad += y[i] * y[i];
    logdet_inv += 2.0 * log(work[(size_t)i * D + i]);
  }
  /* log det Cov = -logdet_inv */
  gc -= 0.5 * (-logdet_inv + quad);
  return gc;
}

int gh_gmm_compute_gconsts(gh_gmm *g) {
  int num_bad = 0;
#pragma omp parallel if (g->type == GH_COV_FULL && g->num_gauss >= 32 && g->dim >= 16) reduction(+ : num_bad)
  {
  double *work = g->type == GH_COV_FULL ? gh_malloc(((size_t)g->dim * g->dim + g->dim + 1) * sizeof(double)) : NULL;
#pragma omp for schedule(static)
  for (int32_t k = 0; k < g->num_gauss; ++k) {
    double gc = gconst_one(g, k, work);
    if (!isfinite(gc)) {
      ++num_bad;
      gc = -INFINITY; /* as Kaldi: +inf made -inf; NaN (invalid covariance) also -inf here */
    }
    g->gconsts[k] = (float)gc;
  }
  free(work);
  }
  return num_bad;
}

double gh_gmm_loglike_ref(const gh_gmm *g, const float *x, double *per_gauss) {
  int32_t G = g->num_gauss, D = g->dim;
  double maxv = -INFINITY;
  double *ll = per_gauss ? per_gauss : gh_malloc((size_t)(G ? G : 1) * sizeof(double));
  int64_t C = gh_gmm_cov_size(g);
  for (int32_t k = 0; k < G; ++k) {
    const float *mi = g->means_invvars + (size_t)k * D;
    const float *iv = g->inv_vars + k * C;
    double v = g->gconsts[k], lin = 0, quad = 0;
    for (int32_t d = 0; d < D; ++d) lin += (double)mi[d] * x[d];
    if (g->type == GH_COV_DIAG) {
      for (int32_t d = 0; d < D; ++d) quad += (double)iv[d] * x[d] * x[d];
    } else {
      for (int32_t i = 0; i < D; ++i) {
        const float *row = iv + gh_packed_index(i, 0);
        double s = 0;
        for (int32_t j = 0; j < i; ++j) s += (double)row[j] * x[j];
        quad += 2.0 * s * x[i] + (double)row[i] * x[i] * x[i];
      }
    }
    v += lin - 0.5 * quad;
    ll[k] = v;
    if (v > maxv) maxv = v;
  }
  double tot;
  if (!isfinite(maxv)) {
    tot = maxv;
  } else {
    double s = 0;
    for (int32_t k = 0; k < G; ++k) s += exp(ll[k] - maxv);
    tot = maxv + log(s);
  }
  if (!per_gauss) free(ll);
  return tot;
}

void gh_gmm_diag_to_full(gh_gmm *dst, const gh_gmm *src) {
  if (src->type != GH_COV_DIAG) gh_die("gh_gmm_diag_to_full: source GMM is not diagonal");
  int32_t G = src->num_gauss, D = src->dim;
  gh_gmm tmp;
  gh_gmm_init(&tmp, GH_COV_FULL, G, D);
  int64_t P = gh_packed_size(D);
  for (int32_t k = 0; k < G; ++k) {
    tmp.weights[k] = src->weights[k];
    for (int32_t d = 0; d < D; ++d) {
      tmp.means_invvars[(size_t)k * D + d] = src->means_invvars[(size_t)k * D + d];
      tmp.inv_vars[k * P + gh_packed_index(d, d)] = src->inv_vars[(size_t)k * D + d];
    }
  }
  gh_gmm_compute_gconsts(&tmp);
  gh_gmm_free(dst);
  *dst = tmp;
}

/* ---------------- reading ---------------- */

/* Steal the data of a vector / matrix read by kaldi-io. */
static float *read_vec(gh_istream *in, int binary, int32_t *n) {
  gh_vector v = {0, NULL};
  gh_read_vector(in, binary, &v);
  *n = v.dim;
  return v.data;
}

static float *read_mat(gh_istream *in, int binary, int32_t *rows, int32_t *cols) {
  gh_matrix m = {0, 0, NULL};
  gh_read_matrix(in, binary, &m);
  *rows = m.rows;
  *cols = m.cols;
  return m.data;
}

static int gconst_close(double stored, double computed) {
  if (isinf(stored) && isinf(computed)) return (stored > 0) == (computed > 0);
  if (!isfinite(stored) || !isfinite(computed)) return 0;
  double tol = 1e-3 * fmax(1.0, fabs(computed));
  return fabs(stored - computed) <= tol;
}

void gh_gmm_read(gh_istream *in, int binary, gh_gmm *g) {
  const char *tok = gh_read_token(in, binary);
  gh_covtype type;
  if (!strcmp(tok, "<DiagGMM>") || !strcmp(tok, "<DiagGMMBegin>"))
    type = GH_COV_DIAG;
  else if (!strcmp(tok, "<FullGMM>") || !strcmp(tok, "<FullGMMBegin>"))
    type = GH_COV_FULL;
  else
    gh_istream_fail(in, "expected <DiagGMM> or <FullGMM>, got '%s'", gh_printable_token(tok));
  const char *tname = type == GH_COV_DIAG ? "DiagGMM" : "FullGMM";
  float *gconsts = NULL, *weights = NULL, *mi = NULL;
  int32_t ngc = -1, G = 0, r = 0, D = 0;
  tok = gh_read_token(in, binary);
  if (!strcmp(tok, "<GCONSTS>")) {
    gconsts = read_vec(in, binary, &ngc);
    gh_expect_token(in, binary, "<WEIGHTS>");
  } else if (strcmp(tok, "<WEIGHTS>")) {
    gh_istream_fail(in, "%s: expected <WEIGHTS> or <GCONSTS>, got '%s'", tname, gh_printable_token(tok));
  }
  weights = read_vec(in, binary, &G);
  gh_expect_token(in, binary, type == GH_COV_DIAG ? "<MEANS_INVVARS>" : "<MEANS_INVCOVARS>");
  mi = read_mat(in, binary, &r, &D);
  if (G <= 0) gh_istream_fail(in, "%s: no Gaussians (empty <WEIGHTS>)", tname);
  if (r != G)
    gh_istream_fail(in, "%s: %s has %d rows but there are %d weights", tname,
                    type == GH_COV_DIAG ? "<MEANS_INVVARS>" : "<MEANS_INVCOVARS>", r, G);
  if (D <= 0) gh_istream_fail(in, "%s: feature dimension is %d", tname, D);
  /* Budget: the inverse (co)variances still to come are G x D (diag) or
   * G x D(D+1)/2 (full) values on disk. */
  gh_istream_need(in, (uint64_t)G, (uint64_t)(type == GH_COV_DIAG ? D : gh_packed_size(D)) * (binary ? 4 : 2),
                  type == GH_COV_DIAG ? "<INV_VARS>" : "<INV_COVARS>");
  gh_gmm_init(g, type, G, D);
  memcpy(g->weights, weights, (size_t)G * sizeof(float));
  memcpy(g->means_invvars, mi, (size_t)G * D * sizeof(float));
  free(weights);
  free(mi);
  if (type == GH_COV_DIAG) {
    gh_expect_token(in, binary, "<INV_VARS>");
    int32_t r2, c2;
    float *iv = read_mat(in, binary, &r2, &c2);
    if (r2 != G || c2 != D)
      gh_istream_fail(in, "DiagGMM: <INV_VARS> is %d x %d, expected %d x %d", r2, c2, G, D);
    memcpy(g->inv_vars, iv, (size_t)G * D * sizeof(float));
    free(iv);
  } else {
    gh_expect_token(in, binary, "<INV_COVARS>");
    int64_t P = gh_packed_size(D);
    for (int32_t k = 0; k < G; ++k) {
      int32_t n = 0;
      float *pk = NULL;
      gh_read_packed(in, binary, &n, &pk);
      if (n != D) gh_istream_fail(in, "FullGMM: inverse covariance %d is %d x %d, expected %d x %d", k, n, n, D, D);
      memcpy(g->inv_vars + k * P, pk, (size_t)P * sizeof(float));
      free(pk);
    }
  }
  tok = gh_read_token(in, binary);
  if (type == GH_COV_DIAG ? (strcmp(tok, "</DiagGMM>") && strcmp(tok, "<DiagGMMEnd>"))
                          : (strcmp(tok, "</FullGMM>") && strcmp(tok, "<FullGMMEnd>")))
    gh_istream_fail(in, "expected </%s>, got '%s'", tname, gh_printable_token(tok));
  /* Validate parameters, then gconsts. */
  for (int32_t k = 0; k < G; ++k) {
    if (!gh_isfinite_f(g->weights[k]) || g->weights[k] < 0.0f)
      gh_istream_fail(in, "%s: weight of Gaussian %d is %g (must be finite and >= 0)", tname, k,
                      (double)g->weights[k]);
  }
  int64_t C = gh_gmm_cov_size(g);
  for (int64_t i = 0; i < (int64_t)G * D; ++i)
    if (!gh_isfinite_f(g->means_invvars[i]))
      gh_istream_fail(in, "%s: non-finite mean value (Gaussian %d, dimension %d)", tname, (int)(i / D), (int)(i % D));
  for (int64_t i = 0; i < (int64_t)G * C; ++i)
    if (!gh_isfinite_f(g->inv_vars[i]))
      gh_istream_fail(in, "%s: non-finite inverse variance (Gaussian %d)", tname, (int)(i / C));
  for (int32_t k = 0; k < G; ++k)
    for (int32_t d = 0; d < D; ++d) {
      float v = type == GH_COV_DIAG ? g->inv_vars[(size_t)k * D + d] : g->inv_vars[k * C + gh_packed_index(d, d)];
      if (!(v > 0.0f))
        gh_istream_fail(in, "%s: inverse variance %g of Gaussian %d, dimension %d is not positive", tname,
                        (double)v, k, d);
    }
  if (type == GH_COV_FULL) { /* positive definite: the Cholesky factorisation must exist */
    double *A = gh_malloc((size_t)D * D * sizeof(double));
    for (int32_t k = 0; k < G; ++k) {
      unpack_sym(g->inv_vars + k * C, D, A);
      if (chol(A, D)) {
        free(A);
        gh_istream_fail(in, "%s: inverse covariance of Gaussian %d is not positive definite (Cholesky failed)",
                        tname, k);
      }
    }
    free(A);
  }
  gh_gmm_compute_gconsts(g);
  if (gconsts && ngc == G) {
    int num_diff = 0, worst = -1;
    double worst_err = 0;
    for (int32_t k = 0; k < G; ++k)
      if (!gconst_close(gconsts[k], g->gconsts[k])) {
        double e = fabs((double)gconsts[k] - g->gconsts[k]);
        if (worst < 0 || e > worst_err || isnan(e)) { worst = k; worst_err = e; }
        ++num_diff;
      }
    if (num_diff)
      gh_warn("%s: %d stored <GCONSTS> differ from the values implied by the parameters (worst: Gaussian %d, "
              "stored %g, computed %g); using the computed ones",
              gh_istream_name(in), num_diff, worst, (double)gconsts[worst], (double)g->gconsts[worst]);
    else
      memcpy(g->gconsts, gconsts, (size_t)G * sizeof(float));
  } else if (gconsts) {
    gh_warn("%s: <GCONSTS> has %d values for %d Gaussians; recomputed", gh_istream_name(in), ngc, G);
  }
  free(gconsts);
}

void gh_gmm_set_read_stream(gh_istream *in, int binary, gh_gmm_set *s) {
  memset(s, 0, sizeof(*s));
  const char *tok = gh_peek_token(in, binary);
  if (!strcmp(tok, "<DiagGMM>") || !strcmp(tok, "<DiagGMMBegin>") || !strcmp(tok, "<FullGMM>") ||
      !strcmp(tok, "<FullGMMBegin>")) {
    s->form = GH_SET_GLOBAL;
    s->num_pdfs = 1;
    s->pdfs = gh_calloc(1, sizeof(gh_gmm));
    gh_gmm_read(in, binary, &s->pdfs[0]);
    s->dim = s->pdfs[0].dim;
    return;
  }
  if (!strcmp(tok, "<TransitionModel>")) {
    s->trans = gh_transition_read(in, binary);
    tok = gh_peek_token(in, binary);
  }
  if (!*tok) gh_istream_fail(in, "unexpected end of file (expected a GMM model)");
  if (strcmp(tok, "<DIMENSION>"))
    gh_istream_fail_type(in, "a GMM model", "<TransitionModel>, <DIMENSION>, <DiagGMM> or <FullGMM>", tok,
                         "gmm-score-gpu final.mdl scp:feats.scp ark:loglikes.ark");
  s->form = GH_SET_AM;
  gh_expect_token(in, binary, "<DIMENSION>");
  int32_t D = gh_read_int32(in, binary);
  gh_expect_token(in, binary, "<NUMPDFS>");
  int32_t P = gh_read_int32(in, binary);
  if (D <= 0 || D > 1000000) gh_istream_fail(in, "bad <DIMENSION> %d", D);
  if (P <= 0 || P > 100000000) gh_istream_fail(in, "bad <NUMPDFS> %d", P);
  s->dim = D;
  gh_istream_need(in, (uint64_t)P, 9, "<NUMPDFS> GMMs"); /* each at least "<DiagGMM>" */
  s->pdfs = gh_calloc((size_t)P, sizeof(gh_gmm));
  for (int32_t p = 0; p < P; ++p) {
    gh_gmm_read(in, binary, &s->pdfs[p]);
    s->num_pdfs = p + 1;
    if (s->pdfs[p].dim != D)
      gh_istream_fail(in, "pdf %d has dimension %d but <DIMENSION> is %d", p, s->pdfs[p].dim, D);
  }
  if (s->trans && s->trans->num_pdfs > P)
    gh_istream_fail(in, "the TransitionModel refers to %d pdfs but the model has %d", s->trans->num_pdfs, P);
}

void gh_gmm_set_read(const char *rxfilename, gh_gmm_set *s) {
  gh_istream *in = gh_istream_open(rxfilename);
  if (!in) gh_die("reading model: %s%s", gh_last_error(), gh_rspecifier_hint(rxfilename));
  int binary = gh_read_binary_marker(in);
  gh_gmm_set_read_stream(in, binary, s);
  /* Trailing data is suspicious (a concatenation or a wrong file). */
  if (!binary) gh_skip_ws(in);
  if (gh_istream_peek(in) != -1)
    gh_warn("%s: unexpected data after the model at offset %lld (ignored)", gh_istream_name(in),
            (long long)gh_istream_tell(in));
  gh_istream_close(in);
  gh_gmm_set_check(s, rxfilename);
}

int32_t gh_gmm_set_table_read(const char *rspecifier, char ***keys, gh_gmm_set **sets) {
  const char *colon = strchr(rspecifier, ':');
  if (!colon || strncmp(rspecifier, "ark", 3) || (rspecifier[3] != ':' && rspecifier[3] != ','))
    gh_die("%s: a table of models is read as ark:<rxfilename> (scp: and plain files are not tables here)",
           rspecifier);
  for (const char *o = rspecifier + 3; o < colon;) { /* ",opt" items */
    ++o;
    size_t n = strcspn(o, ",:");
    static const char *const ok[] = {"s", "cs", "o", "no", "p", "bg", "t", "b"};
    int known = 0;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; ++i) known |= strlen(ok[i]) == n && !strncmp(o, ok[i], n);
    if (!known) gh_die("%s: unknown read option '%.*s'", rspecifier, (int)n, o);
    o += n;
  }
  gh_istream *in = gh_istream_open(colon + 1);
  if (!in) gh_die("%s: %s", rspecifier, gh_last_error());
  int32_t n = 0, cap = 0;
  char **k = NULL;
  gh_gmm_set *m = NULL;
  gh_strmap seen = {0};
  char key[4096];
  for (;;) {
    gh_skip_ws(in);
    if (gh_istream_peek(in) == -1) break;
    size_t len = 0;
    int c;
    while ((c = gh_istream_peek(in)) != -1 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      if (len + 1 >= sizeof key) gh_die("%s: a key longer than %zu bytes at offset %lld (not an archive?)", rspecifier,
                                        sizeof key - 1, (long long)gh_istream_tell(in));
      key[len++] = (char)gh_istream_getc(in);
    }
    key[len] = '\0';
    if (c != ' ') gh_die("%s: key '%s' is not followed by a space and a model (offset %lld)", rspecifier, key,
                         (long long)gh_istream_tell(in));
    gh_istream_getc(in);
    if (!gh_strmap_put(&seen, key, n)) gh_die("%s: key '%s' appears twice", rspecifier, key);
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      k = gh_realloc(k, sizeof *k * (size_t)cap);
      m = gh_realloc(m, sizeof *m * (size_t)cap);
    }
    gh_istream_set_key(in, key);
    const int binary = gh_read_binary_marker(in);
    gh_gmm_set_read_stream(in, binary, &m[n]);
    char name[4200];
    snprintf(name, sizeof name, "%s, key '%s'", rspecifier, key);
    gh_gmm_set_check(&m[n], name);
    k[n++] = gh_strdup(key);
  }
  gh_istream_close(in);
  gh_strmap_free(&seen);
  *keys = k;
  *sets = m;
  return n;
}

void gh_gmm_set_check(const gh_gmm_set *s, const char *name) {
  if (s->num_pdfs <= 0) gh_die("%s: model has no pdfs", name);
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    if (g->dim != s->dim) {
      char what[32];
      snprintf(what, sizeof what, "pdf %d", p);
      gh_die_dim(name, NULL, what, g->dim, s->dim, "the model's <DIMENSION>");
    }
    if (g->num_gauss <= 0) gh_die("%s: pdf %d has no Gaussians", name, p);
    double sum = 0;
    for (int32_t k = 0; k < g->num_gauss; ++k) {
      if (!gh_isfinite_f(g->weights[k]) || g->weights[k] < 0)
        gh_die("%s: pdf %d, Gaussian %d: weight %g is not finite and >= 0", name, p, k, (double)g->weights[k]);
      sum += g->weights[k];
    }
    /* A Kaldi .mdl may carry scaled weights on purpose (gmm-boost-silence
     * multiplies the silence pdfs' weights; Kaldi reads them unchecked). */
    if (s->trans && !(sum > 0))
      gh_die("%s: pdf %d: weights sum to %g (must be positive)", name, p, sum);
    if (!s->trans && fabs(sum - 1.0) > 0.01)
      gh_die("%s: pdf %d: weights sum to %g, not 1", name, p, sum);
    if (!s->trans && fabs(sum - 1.0) > 1e-4) gh_warn("%s: pdf %d: weights sum to %.7g", name, p, sum);
    int64_t C = gh_gmm_cov_size(g);
    for (int32_t k = 0; k < g->num_gauss; ++k) {
      for (int32_t d = 0; d < g->dim; ++d) {
        float mi = g->means_invvars[(size_t)k * g->dim + d];
        float iv = g->type == GH_COV_DIAG ? g->inv_vars[(size_t)k * g->dim + d]
                                          : g->inv_vars[k * C + gh_packed_index(d, d)];
        if (!gh_isfinite_f(mi)) gh_die("%s: pdf %d, Gaussian %d: non-finite mean in dimension %d", name, p, k, d);
        if (!gh_isfinite_f(iv) || !(iv > 0))
          gh_die("%s: pdf %d, Gaussian %d: inverse variance %g in dimension %d is not positive", name, p, k,
                 (double)iv, d);
      }
      if (isnan(g->gconsts[k]) || (g->gconsts[k] > 0 && isinf(g->gconsts[k])))
        gh_die("%s: pdf %d, Gaussian %d: invalid gconst %g", name, p, k, (double)g->gconsts[k]);
    }
  }
}

/* ---------------- writing ---------------- */

void gh_gmm_write(gh_ostream *out, int binary, const gh_gmm *g) {
  FILE *fp = gh_ostream_fp(out);
  int full = g->type == GH_COV_FULL;
  gh_write_token(out, binary, full ? "<FullGMM>" : "<DiagGMM>");
  if (!binary) fputs("\n", fp);
  gh_write_token(out, binary, "<GCONSTS>");
  gh_model_write_vector(out, binary, g->num_gauss, g->gconsts);
  gh_write_token(out, binary, "<WEIGHTS>");
  gh_model_write_vector(out, binary, g->num_gauss, g->weights);
  gh_write_token(out, binary, full ? "<MEANS_INVCOVARS>" : "<MEANS_INVVARS>");
  gh_model_write_matrix(out, binary, g->num_gauss, g->dim, g->means_invvars);
  if (!full) {
    gh_write_token(out, binary, "<INV_VARS>");
    gh_model_write_matrix(out, binary, g->num_gauss, g->dim, g->inv_vars);
  } else {
    gh_write_token(out, binary, "<INV_COVARS>");
    int64_t P = gh_packed_size(g->dim);
    for (int32_t k = 0; k < g->num_gauss; ++k) gh_model_write_packed(out, binary, g->dim, g->inv_vars + k * P);
  }
  gh_write_token(out, binary, full ? "</FullGMM>" : "</DiagGMM>");
  if (!binary) fputs("\n", fp);
}

void gh_gmm_set_write_stream(gh_ostream *out, int binary, const gh_gmm_set *s) {
  /* Never write a model that our own reader would reject. */
  gh_gmm_set_check(s, gh_ostream_name(out));
  if (s->form == GH_SET_GLOBAL && s->num_pdfs == 1 && !s->trans) {
    gh_gmm_write(out, binary, &s->pdfs[0]);
    return;
  }
  if (s->trans) gh_transition_write(out, binary, s->trans);
  gh_write_token(out, binary, "<DIMENSION>");
  gh_write_int32(out, binary, s->dim);
  gh_write_token(out, binary, "<NUMPDFS>");
  gh_write_int32(out, binary, s->num_pdfs);
  for (int32_t p = 0; p < s->num_pdfs; ++p) gh_gmm_write(out, binary, &s->pdfs[p]);
}

void gh_gmm_set_write(const char *wxfilename, int binary, const gh_gmm_set *s) {
  gh_ostream *out = gh_ostream_open(wxfilename);
  gh_write_binary_marker(out, binary);
  gh_gmm_set_write_stream(out, binary, s);
  gh_ostream_close(out);
}

double gh_gmm_set_max_diff(const gh_gmm_set *a, const gh_gmm_set *r) {
  if (a->num_pdfs != r->num_pdfs || a->dim != r->dim) return INFINITY;
  double worst = 0;
  for (int32_t p = 0; p < r->num_pdfs; ++p) {
    const gh_gmm *x = &a->pdfs[p], *y = &r->pdfs[p];
    if (x->num_gauss != y->num_gauss || x->type != y->type) return INFINITY;
    const int64_t G = y->num_gauss, D = y->dim, S = gh_gmm_cov_size(y);
    struct { const float *g, *r; int64_t n; } arr[4] = {
        {x->weights, y->weights, G}, {x->gconsts, y->gconsts, G},
        {x->means_invvars, y->means_invvars, G * D}, {x->inv_vars, y->inv_vars, G * S}};
    for (int k = 0; k < 4; ++k)
      for (int64_t i = 0; i < arr[k].n; ++i) {
        double e = fabs((double)arr[k].g[i] - arr[k].r[i]) / (1 + fabs(arr[k].r[i]));
        if (!(e <= worst)) worst = e;
      }
  }
  return worst;
}
