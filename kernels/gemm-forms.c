/* gemm-forms.c -- host helpers of the GEMM forms (gemm-forms.h). */
#include "gemm-forms.h"
#include "base/gh-base.h"
#include "base/matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gh_gemm_param_row(const gh_gmm *g, int32_t k, const double *c, float *a) {
  const int32_t D = g->dim;
  const int full = g->type == GH_COV_FULL;
  const float *b = g->means_invvars + (int64_t)k * D;
  const float *iv = g->inv_vars + (int64_t)k * (full ? gh_packed_size(D) : D);
  float *q = a + 1 + D;
  /* quadratic coefficients, as stored in the row */
  if (full) {
    for (int32_t i = 0; i < D; ++i)
      for (int32_t j = 0; j <= i; ++j)
        q[gh_packed_index(i, j)] = (j == i ? -0.5f : -1.0f) * iv[gh_packed_index(i, j)];
  } else {
    for (int32_t i = 0; i < D; ++i) q[i] = -0.5f * iv[i];
  }
  double ll = g->gconsts[k];
  for (int32_t i = 0; i < D; ++i) {
    double grad = b[i], qc = 0.0; /* qc = sum_{j<=i} q_ij c_j */
    if (c) {
      if (full) {
        const float *qi = q + gh_packed_index(i, 0);
        for (int32_t j = 0; j < i; ++j) qc += (double)qi[j] * c[j];
        grad += qc + 2.0 * (double)qi[i] * c[i];
        qc += (double)qi[i] * c[i];
        for (int32_t j = i + 1; j < D; ++j) grad += (double)q[gh_packed_index(j, i)] * c[j];
      } else {
        qc = (double)q[i] * c[i];
        grad += 2.0 * qc;
      }
      ll += c[i] * ((double)b[i] + qc);
    }
    a[1 + i] = (float)grad;
  }
  a[0] = (float)ll;
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
