/* fuzz_numerics.c -- libFuzzer harness: the numerical contract
 * (doc/reliability.md).  The input's bytes draw one GMM of D <= 8
 * dimensions and G <= 4 Gaussians (diag or full), with weights (some 0),
 * means up to 1e6 standard deviations from the origin, variances from
 * 1e-38 to 1e38 and, for full covariances, correlations; and 6 frames, each
 * near one Gaussian or up to 1e6 sigma away.  The model is stored as the
 * tools store it (float weights, means_invvars, inverse variances), checked
 * like a file (gh_gmm_set_check), and scored by the cpu-ref and cpu
 * backends (cpu twice: as configured, and with the whitened form forced on
 * full covariances, GH_CPU_WHITE=2); each result is compared with a float64 evaluation written here
 * (mu = P^-1 b, normaliser recomputed in double, Cholesky of our own):
 *  - never NaN for a finite model and finite frames;
 *  - -inf only where the float64 value is below -FLT_MAX (or every
 *    Gaussian is dead);
 *  - within 1e-3 + 1e-5 |ll| inside the contract's range (variances in
 *    [1e-30, 1e30], diagonal covariances or full ones of condition number
 *    <= 1e4, frames within 1e4 sigma).
 * A violation aborts. */
#include "fuzz-common.h"
#include "backend.h"
#include "gmm/gmm.h"

#include <float.h>
#include <math.h>

static gh_backend *fz_ref, *fz_blas;

typedef struct { const uint8_t *p; size_t n, i; } bytes;
static unsigned take(bytes *b) { return b->i < b->n ? b->p[b->i++] : 0; }
/* a value in [-1, 1) from two bytes */
static double unit(bytes *b) { return ((take(b) << 8 | take(b)) / 32768.0) - 1.0; }

/* float64 log-likelihood of x under g (see top); *in_range cleared when a
 * Gaussian with weight is outside the contract's range */
static double ref_loglike(const gh_gmm *g, const float *x, int *in_range) {
  const int D = g->dim, G = g->num_gauss, full = g->type == GH_COV_FULL;
  double best = -INFINITY, comp[4];
  double L[64], mu[8], y[8];
  for (int k = 0; k < G; ++k) {
    comp[k] = -INFINITY;
    if (!(g->weights[k] > 0)) continue;
    const float *b = g->means_invvars + k * D;
    double norm = log((double)g->weights[k]) - 0.5 * D * log(2 * M_PI), q = 0;
    if (!full) {
      const float *iv = g->inv_vars + k * D;
      for (int i = 0; i < D; ++i) {
        mu[i] = (double)b[i] / iv[i];
        norm += 0.5 * log((double)iv[i]);
        const double v = 1.0 / iv[i], d = (double)x[i] - mu[i];
        if (v < 1e-30 || v > 1e30 || fabs(d) > 1e4 * sqrt(v)) *in_range = 0;
        q += (double)iv[i] * d * d;
      }
    } else {
      const float *P = g->inv_vars + k * gh_packed_size(D);
      for (int i = 0; i < D; ++i)
        for (int j = 0; j <= i; ++j) L[i * D + j] = P[gh_packed_index(i, j)];
      int ok = 1;
      for (int j = 0; j < D && ok; ++j) { /* Cholesky P = L L' */
        double s = L[j * D + j];
        for (int m = 0; m < j; ++m) s -= L[j * D + m] * L[j * D + m];
        if (!(s > 0)) { ok = 0; break; }
        L[j * D + j] = sqrt(s);
        for (int i = j + 1; i < D; ++i) {
          double t = L[i * D + j];
          for (int m = 0; m < j; ++m) t -= L[i * D + m] * L[j * D + m];
          L[i * D + j] = t / L[j * D + j];
        }
      }
      if (!ok) continue; /* dead: the loader accepted it as positive definite in float only */
      for (int i = 0; i < D; ++i) {
        double t = b[i];
        for (int m = 0; m < i; ++m) t -= L[i * D + m] * y[m];
        y[i] = t / L[i * D + i];
        norm += log(L[i * D + i]);
      }
      for (int i = D - 1; i >= 0; --i) {
        double t = y[i];
        for (int m = i + 1; m < D; ++m) t -= L[m * D + i] * mu[m];
        mu[i] = t / L[i * D + i];
      }
      /* q = |L' (x - mu)|^2; range: diagonal of P within 1/1e30 .. 1/1e-30,
       * the condition number is bounded by the generator (see below) */
      for (int i = 0; i < D; ++i) {
        double t = 0;
        for (int m = i; m < D; ++m) t += L[m * D + i] * ((double)x[m] - mu[m]);
        q += t * t;
        const double pii = P[gh_packed_index(i, i)];
        if (pii > 1e30 || pii < 1e-30 || fabs((double)x[i] - mu[i]) * sqrt(pii) > 1e4) *in_range = 0;
      }
    }
    comp[k] = norm - 0.5 * q;
    if (comp[k] > best) best = comp[k];
  }
  if (!(best > -INFINITY)) return best;
  double s = 0;
  for (int k = 0; k < G; ++k) s += exp(comp[k] - best);
  return best + log(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  FUZZ_BEGIN();
  if (!fz_ref) { /* kept across inputs (not tracked) */
    fz_tracking = 0;
    fz_ref = gh_backend_cpu_new();
    fz_blas = gh_backend_blas_new();
    fz_tracking = 1;
  }
  bytes b = {data, size, 0};
  const int D = 1 + take(&b) % 8, G = 1 + take(&b) % 4, full = take(&b) & 1;
  const double offset = pow(10.0, (take(&b) % 7)) * (take(&b) & 1); /* 0 or 1 .. 1e6 sigma */
  gh_gmm_set s;
  memset(&s, 0, sizeof s);
  s.num_pdfs = 1;
  s.dim = D;
  s.pdfs = gh_calloc(1, sizeof(gh_gmm));
  gh_gmm *g = &s.pdfs[0];
  gh_gmm_init(g, full ? GH_COV_FULL : GH_COV_DIAG, G, D);
  double wsum = 0, sig[4][8], mus[4][8];
  for (int k = 0; k < G; ++k) {
    const unsigned wb = take(&b);
    g->weights[k] = (wb & 7) == 0 ? 0.0f : (float)(1 + wb);
    wsum += g->weights[k];
  }
  if (!(wsum > 0)) g->weights[0] = 1.0f, wsum = 1.0;
  for (int k = 0; k < G; ++k) g->weights[k] = (float)(g->weights[k] / wsum);
  for (int k = 0; k < G; ++k) {
    const double lv = ((int)(take(&b) % 77) - 38) * log(10.0); /* variance 1e-38 .. 1e38 */
    for (int i = 0; i < D; ++i) {
      const double v = exp(lv + 0.5 * unit(&b));
      sig[k][i] = sqrt(v);
      mus[k][i] = sig[k][i] * (offset + 3.0 * unit(&b));
    }
    if (!full) {
      for (int i = 0; i < D; ++i) {
        const float iv = (float)(1.0 / (sig[k][i] * sig[k][i]));
        g->inv_vars[k * D + i] = iv;
        g->means_invvars[k * D + i] = (float)(mus[k][i] * (double)iv);
      }
    } else {
      /* correlation rho between neighbours (condition number <= (1+|r|)/(1-|r|) x 2 <= 1e4 for |r| <= 0.999) */
      const double r = 0.999 * unit(&b);
      double C[64], A[64];
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < D; ++j)
          C[i * D + j] = (i == j ? 1.0 : pow(fabs(r), abs(i - j)) * (r < 0 && (abs(i - j) & 1) ? -1 : 1)) *
                         sig[k][i] * sig[k][j];
      /* P = C^-1 by Gauss-Jordan in double */
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < D; ++j) A[i * D + j] = i == j;
      for (int c = 0; c < D; ++c) {
        const double piv = C[c * D + c];
        for (int j = 0; j < D; ++j) { C[c * D + j] /= piv; A[c * D + j] /= piv; }
        for (int i = 0; i < D; ++i) {
          if (i == c) continue;
          const double f = C[i * D + c];
          for (int j = 0; j < D; ++j) { C[i * D + j] -= f * C[c * D + j]; A[i * D + j] -= f * A[c * D + j]; }
        }
      }
      for (int i = 0; i < D; ++i) {
        double t = 0;
        for (int j = 0; j < D; ++j) t += (double)(float)A[i * D + j] * mus[k][j];
        g->means_invvars[k * D + i] = (float)t;
        for (int j = 0; j <= i; ++j) g->inv_vars[k * gh_packed_size(D) + gh_packed_index(i, j)] = (float)A[i * D + j];
      }
    }
  }
  gh_gmm_compute_gconsts(g);
  gh_gmm_set_check(&s, "fuzz"); /* as a file would be: dies (longjmp) when the reader would refuse it */
  float X[6 * 8];
  for (int t = 0; t < 6; ++t) {
    const int k = take(&b) % G;
    const double far = (take(&b) & 3) == 0 ? pow(10.0, take(&b) % 7) : 0.0;
    for (int i = 0; i < D; ++i) X[t * D + i] = (float)(mus[k][i] + sig[k][i] * (unit(&b) * 2 + (i == 0 ? far : 0)));
  }
  for (int i = 0; i < 6 * D; ++i)
    if (!isfinite(X[i])) { /* the feature reader refuses these */
      gh_gmm_set_free(&s);
      FUZZ_END();
    }
  /* the third pass: cpu with the whitened form on every full pdf within its estimate
   * (GH_CPU_WHITE=2, read at model_upload) */
  gh_backend *bs[3] = {fz_ref, fz_blas, fz_blas};
  for (int which = 0; which < 3; ++which) {
    gh_backend *be = bs[which];
    if (which == 2) setenv("GH_CPU_WHITE", "2", 1);
    gh_dev_model *m = be->ops->gmm->model_upload(be, &s);
    if (which == 2) unsetenv("GH_CPU_WHITE");
    float out[6];
    be->ops->gmm->loglikes(be, m, X, 6, out);
    be->ops->gmm->model_free(be, m);
    for (int t = 0; t < 6; ++t) {
      int in_range = 1;
      const double ref = ref_loglike(g, X + t * D, &in_range);
      const double got = out[t];
      if (isnan(got)) abort();
      if (got == -INFINITY && ref > -FLT_MAX && ref > -INFINITY && in_range) abort();
      if (in_range && isfinite(ref) && fabs(ref) < FLT_MAX && !(fabs(got - ref) <= 1e-3 + 1e-5 * fabs(ref))) {
        fprintf(stderr, "fuzz_numerics: %s%s frame %d: %.9g vs float64 %.9g\n", be->ops->name, which == 2 ? " (whitened)" : "", t,
                got, ref);
        abort();
      }
    }
  }
  /* the E-step over Gaussian selections (acc_gselect, kernels/cpu/gselect.c): every Gaussian
   * selected on every frame, so its frame log-likelihood is the pdf's (same bound, in double) */
  {
    int32_t sel_off[7], sel[6 * 4];
    for (int t = 0; t <= 6; ++t) sel_off[t] = t * G;
    for (int t = 0; t < 6; ++t)
      for (int k = 0; k < G; ++k) sel[t * G + k] = (k + t) % G; /* any order */
    double fll[6];
    float post[6 * 4];
    gh_cpu_acc_gselect(NULL, g, X, 6, sel_off, sel, NULL, NULL, post, fll);
    for (int t = 0; t < 6; ++t) {
      int in_range = 1;
      const double ref = ref_loglike(g, X + t * D, &in_range);
      if (isnan(fll[t])) abort();
      for (int k = 0; k < G; ++k)
        if (isnan(post[t * G + k])) abort();
      if (fll[t] == -INFINITY && ref > -INFINITY && in_range) abort();
      if (in_range && isfinite(ref) && !(fabs(fll[t] - ref) <= 1e-3 + 1e-5 * fabs(ref))) {
        fprintf(stderr, "fuzz_numerics: acc_gselect frame %d: %.9g vs float64 %.9g\n", t, fll[t], ref);
        abort();
      }
    }
  }
  gh_gmm_set_free(&s);
  FUZZ_END();
}
