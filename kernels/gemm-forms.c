/* gemm-forms.c -- host helpers of the GEMM forms (gemm-forms.h). */
#include "gemm-forms.h"
#include "base/env.h"
#include "base/gh-base.h"
#include "base/matrix.h"
#include "gmm/numerics.h"

#include <stdio.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG_2PI 1.8378770664093454836 /* log(2 pi), Kaldi M_LOG_2PI */

/* In-place Cholesky A = L L' of a row-major D x D matrix (lower triangle);
 * 0, or -1 if not positive definite (in double). */
static int chol_d(double *A, int32_t D) {
  for (int32_t j = 0; j < D; ++j) {
    double *rj = A + (size_t)j * D, d = rj[j];
    for (int32_t k = 0; k < j; ++k) d -= rj[k] * rj[k];
    if (!(d > 0.0) || !isfinite(d)) return -1;
    rj[j] = d = sqrt(d);
    for (int32_t i = j + 1; i < D; ++i) {
      double *ri = A + (size_t)i * D, t = ri[j];
      for (int32_t k = 0; k < j; ++k) t -= ri[k] * rj[k];
      ri[j] = t / d;
    }
  }
  return 0;
}

static void dead(int32_t D, double *mu, gh_gauss_info *info) {
  for (int32_t i = 0; i < D; ++i) mu[i] = 0.0;
  info->norm = -INFINITY;
  info->rho = 1.0;
  info->min_var = info->max_var = info->cond = 1.0;
}

int gh_gauss_exact(const gh_gmm *g, int32_t k, double *mu, gh_gauss_info *info, double *work) {
  const int32_t D = g->dim;
  const float *b = g->means_invvars + (int64_t)k * D;
  const double w = g->weights[k];
  if (!(w > 0) || !isfinite(w)) { dead(D, mu, info); return -1; }
  for (int32_t i = 0; i < D; ++i)
    if (!isfinite(b[i])) { dead(D, mu, info); return -1; }
  double norm = log(w) - 0.5 * LOG_2PI * D;
  if (g->type == GH_COV_DIAG) {
    const float *iv = g->inv_vars + (int64_t)k * D;
    double mn = INFINITY, mx = 0.0;
    for (int32_t i = 0; i < D; ++i) {
      if (!(iv[i] > 0.0f) || !isfinite(iv[i])) { dead(D, mu, info); return -1; }
      mu[i] = (double)b[i] / iv[i];
      norm += 0.5 * log((double)iv[i]);
      const double v = 1.0 / iv[i];
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    info->norm = norm;
    info->rho = 1.0;
    info->min_var = mn; info->max_var = mx; info->cond = mx / mn;
    return 0;
  }
  /* full: P = L L' (double), mu = L^-T L^-1 b, log det P = 2 sum log L_ii,
   * Cov_ii = sum_r (L^-1)_ri^2; condition number by power iterations on P
   * and Cov. */
  const float *P = g->inv_vars + (int64_t)k * gh_packed_size(D);
  double *L = work, *Li = work + (size_t)D * D, *v = Li + (size_t)D * D, *y = v + D, *s = y + D;
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      const double pij = P[gh_packed_index(i, j)];
      if (!isfinite(pij)) { dead(D, mu, info); return -1; }
      L[(size_t)i * D + j] = L[(size_t)j * D + i] = pij;
    }
  if (chol_d(L, D)) { dead(D, mu, info); return -1; }
  for (int32_t i = 0; i < D; ++i) norm += log(L[(size_t)i * D + i]);
  for (int32_t i = 0; i < D; ++i) { /* forward: L y = b */
    double t = b[i];
    for (int32_t j = 0; j < i; ++j) t -= L[(size_t)i * D + j] * y[j];
    y[i] = t / L[(size_t)i * D + i];
  }
  for (int32_t i = D - 1; i >= 0; --i) { /* back: L' mu = y */
    double t = y[i];
    for (int32_t j = i + 1; j < D; ++j) t -= L[(size_t)j * D + i] * mu[j];
    mu[i] = t / L[(size_t)i * D + i];
  }
  /* Li = L^-1 (lower), column by column */
  for (int32_t c = 0; c < D; ++c) {
    for (int32_t i = 0; i < c; ++i) Li[(size_t)i * D + c] = 0.0;
    for (int32_t i = c; i < D; ++i) {
      double t = i == c ? 1.0 : 0.0;
      for (int32_t j = c; j < i; ++j) t -= L[(size_t)i * D + j] * Li[(size_t)j * D + c];
      Li[(size_t)i * D + c] = t / L[(size_t)i * D + i];
    }
  }
  double mn = INFINITY, mx = 0.0;
  for (int32_t i = 0; i < D; ++i) {
    double cii = 0.0;
    for (int32_t r = i; r < D; ++r) cii += Li[(size_t)r * D + i] * Li[(size_t)r * D + i];
    s[i] = sqrt(cii);
    if (cii < mn) mn = cii;
    if (cii > mx) mx = cii;
  }
  double rho = 0.0;
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j < D; ++j)
      rho += fabs((double)P[i >= j ? gh_packed_index(i, j) : gh_packed_index(j, i)]) * s[i] * s[j];
  /* lambda_max(P) and lambda_max(Cov) = 1 / lambda_min(P): 30 power
   * iterations each from the all-ones vector (an estimate from below;
   * the condition number only selects a warning). */
  double lmax_p = 0.0, lmax_c = 0.0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t i = 0; i < D; ++i) v[i] = 1.0 / sqrt((double)D);
    double lam = 0.0;
    for (int it = 0; it < 30; ++it) {
      if (pass == 0) { /* y = P v */
        for (int32_t i = 0; i < D; ++i) {
          double t = 0.0;
          for (int32_t j = 0; j < D; ++j) t += (double)P[i >= j ? gh_packed_index(i, j) : gh_packed_index(j, i)] * v[j];
          y[i] = t;
        }
      } else { /* y = Cov v = Li' (Li v) */
        for (int32_t i = 0; i < D; ++i) {
          double t = 0.0;
          for (int32_t j = 0; j <= i; ++j) t += Li[(size_t)i * D + j] * v[j];
          s[i] = t;
        }
        for (int32_t i = 0; i < D; ++i) {
          double t = 0.0;
          for (int32_t r = i; r < D; ++r) t += Li[(size_t)r * D + i] * s[r];
          y[i] = t;
        }
      }
      double nrm = 0.0;
      for (int32_t i = 0; i < D; ++i) nrm += y[i] * y[i];
      nrm = sqrt(nrm);
      if (!(nrm > 0)) break;
      lam = nrm;
      for (int32_t i = 0; i < D; ++i) v[i] = y[i] / nrm;
    }
    if (pass == 0) lmax_p = lam; else lmax_c = lam;
  }
  info->norm = norm;
  info->rho = rho / D;
  info->min_var = mn; info->max_var = mx;
  info->cond = lmax_p * lmax_c;
  return 0;
}

double gh_gauss_exact_loglike(const gh_gmm *g, int32_t k, const double *mu, double norm, const float *x) {
  if (norm == -INFINITY) return -INFINITY;
  const int32_t D = g->dim;
  double q = 0.0;
  if (g->type == GH_COV_DIAG) {
    const float *iv = g->inv_vars + (int64_t)k * D;
    for (int32_t i = 0; i < D; ++i) {
      const double d = (double)x[i] - mu[i];
      q += (double)iv[i] * d * d;
    }
  } else {
    const float *P = g->inv_vars + (int64_t)k * gh_packed_size(D);
    for (int32_t i = 0; i < D; ++i) {
      const float *row = P + gh_packed_index(i, 0);
      const double di = (double)x[i] - mu[i];
      double t = 0.5 * (double)row[i] * di;
      for (int32_t j = 0; j < i; ++j) t += (double)row[j] * ((double)x[j] - mu[j]);
      q += 2.0 * di * t;
    }
  }
  return norm - 0.5 * q;
}

static double row_error(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                        const double *c, double u, double big);

double gh_gemm_row_error(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                         const double *c) {
  return row_error(g, k, mu, info, c, 0x1p-24, 1e36);
}

double gh_gemm_row_error_d(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                           const double *c) {
  return row_error(g, k, mu, info, c, 0x1p-53, 1e300);
}

static double row_error(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                        const double *c, double u, double big) {
  if (info->norm == -INFINITY) return 0.0;
  const int32_t D = g->dim;
  const int full = g->type == GH_COV_FULL;
  const float *P = g->inv_vars + (int64_t)k * (full ? gh_packed_size(D) : D);
  double Eabs = 0.0, quad = 0.0, maxterm = 0.0;
  for (int32_t i = 0; i < D; ++i) {
    const double ei = mu[i] - (c ? c[i] : 0.0);
    /* the largest expanded feature of frames within 1e4 sigma of mu:
     * (|e_i| + 1e4 sigma_i)^2 must fit float, times the coefficients */
    const double xm = fabs(ei) + 1e4 * sqrt(full ? info->max_var : 1.0 / P[i]);
    if (xm * xm > big) return INFINITY;
    double grad = 0.0; /* (P e)_i */
    /* diagonal: only j = i has pij != 0 (the other j's were skipped: the same operations, without the O(D^2)
     * loop that made a model upload's error estimates ~70% of hmm-train's model uploads, bench/RESULTS.md
     * D31) */
    for (int32_t j = full ? 0 : i; j < (full ? D : i + 1); ++j) {
      const double pij = full ? P[i >= j ? gh_packed_index(i, j) : gh_packed_index(j, i)] : (i == j ? P[i] : 0.0);
      if (pij == 0.0) continue;
      const double ej = mu[j] - (c ? c[j] : 0.0);
      Eabs += 0.5 * fabs(pij) * fabs(ei) * fabs(ej);
      quad += 0.5 * pij * ei * ej;
      grad += pij * ej;
      if (fabs(pij) * xm * xm > maxterm) maxterm = fabs(pij) * xm * xm;
    }
    if (fabs(grad) * xm > maxterm) maxterm = fabs(grad) * xm;
  }
  const double a0 = info->norm - quad;
  if (!(fabs(a0) < big) || !(maxterm < big)) return INFINITY;
  const double K = gh_gemm_depth(D, full);
  /* the last term: frames far from the Gaussian err by ~ sqrt(K) u rho
   * relative to their distance term; x 50 turns the contract's 1e-5
   * relative into the 5e-4 nats budget (found by fuzz_numerics: a
   * correlated full covariance, a frame 180 sigma away, 1.3 nats off) */
  return u * fabs(a0) + sqrt(K) * u * (fabs(info->norm) + 4.0 * Eabs + 1.5 * D * sqrt(info->rho) + 50.0 * info->rho);
}

double gh_gemm_max_row_error(void) {
  return gh_env_double("GH_GEMM_MAX_ROW_ERROR", 5e-4, DBL_MIN, DBL_MAX);
}

double gh_white_error(const gh_gmm *g, int32_t k, const gh_gauss_info *info, const double *work) {
  if (info->norm == -INFINITY) return 0.0;
  const int32_t D = g->dim;
  if (g->type != GH_COV_FULL) return INFINITY;
  const double *L = work, *Li = work + (size_t)D * D;
  double V = 0.0, smax = 0.0, ymax = 0.0;
  for (int32_t i = 0; i < D; ++i) {
    double cii = 0.0;
    for (int32_t r = i; r < D; ++r) cii += Li[(size_t)r * D + i] * Li[(size_t)r * D + i];
    const double si = sqrt(cii);
    if (si > smax) smax = si;
    for (int32_t j = 0; j <= i; ++j) {
      const double lij = L[(size_t)i * D + j];
      if (!(fabs(lij) < 1e36)) return INFINITY;
      V += lij * lij * cii;
      if (fabs(lij) * si > ymax) ymax = fabs(lij) * si;
    }
  }
  /* frames within 1e4 sigma: d_i and the products L_ij d_i fit float */
  if (!(1e4 * smax < 1e36) || !(1e4 * ymax * D < 1e36)) return INFINITY;
  return 0x1p-24 * sqrt(D + 1.0) * (4.0 * sqrt(V) + 50.0 * sqrt(V / D));
}

double gh_white_max_error(void) {
  return gh_env_double("GH_WHITE_MAX_ERROR", gh_gemm_max_row_error(), 0.0, DBL_MAX);
}

void gh_white_factor(int32_t D, const double *work, float *Lf) {
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j < D; ++j) Lf[(size_t)i * D + j] = j <= i ? (float)work[(size_t)i * D + j] : 0.0f;
}

double gh_gemm_set_row_error(const gh_gmm_set *s, const double *c) {
  double *e = gh_malloc(sizeof(double) * (size_t)(s->num_pdfs + 1)), worst = 0.0;
  gh_gemm_set_errors(s, c, NULL, e, NULL, NULL);
  for (int32_t p = 0; p < s->num_pdfs; ++p)
    if (!(e[p] <= worst)) worst = e[p];
  free(e);
  return worst;
}

void gh_gemm_set_errors(const gh_gmm_set *s, const double *c, double *e_unc, double *e_cen, double *e_dbl,
                        double *form) {
  const int32_t D = s->dim, P = s->num_pdfs;
  int64_t *goff = gh_malloc(sizeof(int64_t) * (size_t)(P + 1));
  goff[0] = 0;
  for (int32_t p = 0; p < P; ++p) goff[p + 1] = goff[p] + s->pdfs[p].num_gauss;
  const int64_t Gt = goff[P];
  /* per Gaussian (in parallel over all of them when there is enough work:
   * a UBM is one pdf), then the per-pdf maxima in order; NaN counts as
   * INFINITY.  (A score group's sub-model of 64 diagonal Gaussians took
   * 4-9 ms in a parallel region of 16 threads on an H200 host, the
   * iteration's other uploads of the same size 0.2 ms: hmm-train uploads
   * ~10 such models every iteration; bench/RESULTS.md D26.) */
  int any_full = 0;
  for (int32_t p = 0; p < P; ++p) any_full |= s->pdfs[p].type == GH_COV_FULL;
  int32_t *gp = gh_malloc(sizeof(int32_t) * (size_t)(Gt ? Gt : 1));
  double *eg = gh_malloc(sizeof(double) * 3 * (size_t)(Gt ? Gt : 1));
  for (int32_t p = 0; p < P; ++p)
    for (int64_t k = goff[p]; k < goff[p + 1]; ++k) gp[k] = p;
#pragma omp parallel if (Gt * (any_full ? (int64_t)D * D * D : (int64_t)D * 64) >= ((int64_t)1 << 22))
  {
    double *work = gh_malloc(sizeof(double) * (size_t)(gh_gauss_work_size(D) + D));
    double *mu = work + gh_gauss_work_size(D);
#pragma omp for schedule(dynamic, 16)
    for (int64_t gi = 0; gi < Gt; ++gi) {
      const gh_gmm *g = &s->pdfs[gp[gi]];
      const int32_t k = (int32_t)(gi - goff[gp[gi]]);
      gh_gauss_info info;
      gh_gauss_exact(g, k, mu, &info, work);
      double *e = eg + 3 * gi;
      e[0] = e_unc ? gh_gemm_row_error(g, k, mu, &info, NULL) : 0.0;
      e[1] = e_cen ? gh_gemm_row_error(g, k, mu, &info, c) : 0.0;
      e[2] = e_dbl ? gh_gemm_row_error_d(g, k, mu, &info, c) : 0.0;
      if (form) {
        double *f = form + gi * (D + 1);
        f[0] = info.norm;
        memcpy(f + 1, mu, sizeof(double) * (size_t)D);
      }
    }
    free(work);
  }
  for (int32_t p = 0; p < P; ++p) {
    double m[3] = {0.0, 0.0, 0.0};
    for (int64_t gi = goff[p]; gi < goff[p + 1]; ++gi)
      for (int q = 0; q < 3; ++q) {
        const double e = eg[3 * gi + q];
        if (!(e <= m[q])) m[q] = isnan(e) ? INFINITY : e;
      }
    if (e_unc) e_unc[p] = m[0];
    if (e_cen) e_cen[p] = m[1];
    if (e_dbl) e_dbl[p] = m[2];
  }
  free(eg);
  free(gp);
  free(goff);
}

void gh_gemm_param_row_d(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                         const double *c, double *a) {
  const int32_t D = g->dim;
  const int full = g->type == GH_COV_FULL;
  const int32_t K = gh_gemm_depth(D, full);
  if (info->norm == -INFINITY) {
    a[0] = -INFINITY;
    for (int32_t e = 1; e < K; ++e) a[e] = 0.0;
    return;
  }
  const float *b = g->means_invvars + (int64_t)k * D;
  const float *P = g->inv_vars + (int64_t)k * (full ? gh_packed_size(D) : D);
  double *q = a + 1 + D;
  double quad = 0.0; /* 0.5 (c - mu)' P (c - mu) */
  for (int32_t i = 0; i < D; ++i) {
    const double ci = c ? c[i] : 0.0, ei = ci - mu[i];
    double pc = 0.0, pe = 0.0;
    if (full) {
      for (int32_t j = 0; j < D; ++j) {
        const double pij = P[i >= j ? gh_packed_index(i, j) : gh_packed_index(j, i)];
        const double cj = c ? c[j] : 0.0;
        pc += pij * cj;
        pe += pij * (cj - mu[j]);
      }
      for (int32_t j = 0; j <= i; ++j) q[gh_packed_index(i, j)] = (j == i ? -0.5 : -1.0) * (double)P[gh_packed_index(i, j)];
    } else {
      pc = (double)P[i] * ci;
      pe = (double)P[i] * ei;
      q[i] = -0.5 * (double)P[i];
    }
    quad += 0.5 * ei * pe;
    a[1 + i] = (double)b[i] - pc;
  }
  a[0] = info->norm - quad;
}

void gh_gemm_param_row(const gh_gmm *g, int32_t k, const double *c, float *a) {
  const int32_t D = g->dim;
  const int32_t K = gh_gemm_depth(D, g->type == GH_COV_FULL);
  double *work = gh_malloc(sizeof(double) * (size_t)(gh_gauss_work_size(D) + D + K));
  double *mu = work + gh_gauss_work_size(D), *ad = mu + D;
  gh_gauss_info info;
  gh_gauss_exact(g, k, mu, &info, work);
  gh_gemm_param_row_d(g, k, mu, &info, c, ad);
  for (int32_t e = 0; e < K; ++e) a[e] = (float)ad[e];
  free(work);
}

void gh_gemm_row_to_gmm(const float *a, int64_t stride, gh_gmm *g, int32_t k) {
  const int32_t D = g->dim;
  const int full = g->type == GH_COV_FULL;
  const int64_t S = full ? gh_packed_size(D) : D;
  g->gconsts[k] = a[0];
  for (int32_t i = 0; i < D; ++i) g->means_invvars[(int64_t)k * D + i] = a[(1 + i) * stride];
  float *iv = g->inv_vars + (int64_t)k * S;
  if (full) {
    for (int32_t i = 0, q = 0; i < D; ++i)
      for (int32_t j = 0; j <= i; ++j, ++q) {
        const float r = a[(1 + D + q) * stride];
        iv[q] = i == j ? -2.0f * r : -r;
      }
  } else {
    for (int32_t i = 0; i < D; ++i) iv[i] = -2.0f * a[(1 + D + i) * stride];
  }
}

void gh_gemm_expand(const float *x, const double *c, int32_t D, int full, double *xe) {
  double *xc = xe + 1, *q = xe + 1 + D;
  xe[0] = 1.0;
  for (int32_t i = 0; i < D; ++i) xc[i] = c ? (double)x[i] - c[i] : (double)x[i];
  if (full) {
    for (int32_t i = 0; i < D; ++i) {
      double *qi = q + gh_packed_index(i, 0);
      for (int32_t j = 0; j <= i; ++j) qi[j] = xc[i] * xc[j];
    }
  } else {
    for (int32_t i = 0; i < D; ++i) q[i] = xc[i] * xc[i];
  }
}

/* mu = P^{-1} b for a packed positive definite P (Cholesky in double);
 * returns -1 if P is not positive definite.  L: scratch [D x D]. */
static int solve_packed(const float *P, const float *b, int32_t D, double *L, double *mu) {
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double s = P[gh_packed_index(i, j)];
      for (int32_t k = 0; k < j; ++k) s -= L[i * D + k] * L[j * D + k];
      if (i == j) {
        if (!(s > 0)) return -1;
        L[i * D + i] = sqrt(s);
      } else {
        L[i * D + j] = s / L[j * D + j];
      }
    }
  for (int32_t i = 0; i < D; ++i) {
    double s = b[i];
    for (int32_t k = 0; k < i; ++k) s -= L[i * D + k] * mu[k];
    mu[i] = s / L[i * D + i];
  }
  for (int32_t i = D - 1; i >= 0; --i) {
    double s = mu[i];
    for (int32_t k = i + 1; k < D; ++k) s -= L[k * D + i] * mu[k];
    mu[i] = s / L[i * D + i];
  }
  return 0;
}

void gh_gemm_model_centre(const gh_gmm_set *s, double *c) {
  const int32_t D = s->dim;
  memset(c, 0, sizeof(double) * D);
  if (s->num_pdfs <= 0 || D <= 0) return;
  const int npdf = s->num_pdfs < 64 ? s->num_pdfs : 64;
  const int per_pdf = 1024 / npdf; /* Gaussians visited per sampled pdf (>= 16) */
  double *mu = gh_malloc(sizeof(double) * D), *L = gh_malloc(sizeof(double) * D * D);
  double *pm = gh_malloc(sizeof(double) * D);
  int used = 0;
  for (int k = 0; k < npdf; ++k) {
    const gh_gmm *g = &s->pdfs[(int64_t)k * s->num_pdfs / npdf];
    const int ng = g->num_gauss < per_pdf ? g->num_gauss : per_pdf;
    double wsum = 0;
    memset(pm, 0, sizeof(double) * D);
    for (int j = 0; j < ng; ++j) {
      const int32_t kk = (int32_t)((int64_t)j * g->num_gauss / ng);
      const float *b = g->means_invvars + (int64_t)kk * D;
      const double w = g->weights[kk];
      int ok = w > 0;
      if (ok && g->type == GH_COV_FULL) {
        ok = solve_packed(g->inv_vars + (int64_t)kk * gh_packed_size(D), b, D, L, mu) == 0;
      } else {
        for (int32_t i = 0; i < D && ok; ++i) {
          const float iv = g->inv_vars[(int64_t)kk * D + i];
          if (!(iv > 0)) ok = 0;
          else mu[i] = b[i] / iv;
        }
      }
      if (!ok) continue;
      for (int32_t i = 0; i < D; ++i) pm[i] += w * mu[i];
      wsum += w;
    }
    if (!(wsum > 0)) continue;
    for (int32_t i = 0; i < D; ++i) c[i] += pm[i] / wsum;
    ++used;
  }
  for (int32_t i = 0; i < D && used; ++i) c[i] /= used;
  free(mu);
  free(L);
  free(pm);
}

void gh_gemm_stats_uncentre(int32_t D, int full, const double *c, const double *s, double *occ,
                            double *mean, double *var) {
  const double n = s[0];
  const double *m = s + 1, *q = s + 1 + D;
  *occ += n;
  for (int32_t i = 0; i < D; ++i) mean[i] += m[i] + n * c[i];
  if (full) {
    for (int32_t i = 0; i < D; ++i) {
      const double *qi = q + gh_packed_index(i, 0);
      double *vi = var + gh_packed_index(i, 0);
      for (int32_t j = 0; j <= i; ++j) vi[j] += qi[j] + c[i] * m[j] + m[i] * c[j] + n * c[i] * c[j];
    }
  } else {
    for (int32_t i = 0; i < D; ++i) var[i] += q[i] + 2.0 * c[i] * m[i] + n * c[i] * c[i];
  }
}

void gh_gmm_set_contract_check(const gh_gmm_set *s, const char *name) {
  const int32_t D = s->dim;
  double *work = gh_malloc(sizeof(double) * (size_t)(gh_gauss_work_size(D) + D));
  double *mu = work + gh_gauss_work_size(D);
  int64_t nbad = 0;
  int32_t bp = -1, bk = -1;
  char what[160] = "";
  for (int32_t p = 0; p < s->num_pdfs; ++p)
    for (int32_t k = 0; k < s->pdfs[p].num_gauss; ++k) {
      const gh_gmm *g = &s->pdfs[p];
      gh_gauss_info info;
      const int dead = gh_gauss_exact(g, k, mu, &info, work) != 0;
      char w[160] = "";
      if (dead) {
        if (g->weights[k] > 0)
          snprintf(w, sizeof w, "its inverse covariance is not positive definite in double (it scores -inf)");
      } else if (info.min_var < GH_CONTRACT_MIN_VAR) {
        snprintf(w, sizeof w, "variance %.3g below %.0e", info.min_var, GH_CONTRACT_MIN_VAR);
      } else if (info.max_var > GH_CONTRACT_MAX_VAR) {
        snprintf(w, sizeof w, "variance %.3g above %.0e", info.max_var, GH_CONTRACT_MAX_VAR);
      } else if (g->type == GH_COV_FULL && info.cond > GH_CONTRACT_MAX_COND * 1.01) {
        snprintf(w, sizeof w, "condition number %.3g above %.0e", info.cond, GH_CONTRACT_MAX_COND);
      }
      if (!w[0]) continue;
      if (nbad++ == 0) { bp = p; bk = k; snprintf(what, sizeof what, "%s", w); }
    }
  if (nbad)
    gh_warn("%s: pdf %d, Gaussian %d: %s; %lld Gaussian%s outside the numerical contract's range "
            "(doc/reliability.md): every backend still evaluates them in double where fp32 would err, but "
            "the stored float parameters may not represent the intended model",
            name, bp, bk, what, (long long)nbad, nbad == 1 ? " is" : "s are");
  free(work);
}

void gh_model_fetch_copy(const gh_gmm_set *orig, gh_gmm_set *s) {
  if (s->num_pdfs != orig->num_pdfs || s->dim != orig->dim)
    gh_die("model fetch: the set has %d pdfs of dimension %d, the device model %d of dimension %d", s->num_pdfs,
           s->dim, orig->num_pdfs, orig->dim);
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    if (s->pdfs[p].num_gauss != orig->pdfs[p].num_gauss || s->pdfs[p].type != orig->pdfs[p].type)
      gh_die("model fetch: pdf %d has %d Gaussians, the device model %d", p, s->pdfs[p].num_gauss,
             orig->pdfs[p].num_gauss);
    gh_gmm_copy(&s->pdfs[p], &orig->pdfs[p]);
  }
}

