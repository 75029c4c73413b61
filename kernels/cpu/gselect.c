/* gselect.c -- the CPU reference of the acc_gselect op (backend.h): the
 * E-step over given Gaussian selections, Kaldi's --gselect semantics
 * (gmm-global-acc-stats.cc / fgmm-global-acc-stats.cc: LogLikelihoodsPreselect,
 * ApplySoftMax, AccumulateForComponent with the posterior).
 *
 * Per frame t and entry j: ll_j = norm_g - 0.5 (x - mu_g)' P_g (x - mu_g)
 * (the numerical contract's reference form, gh_gselect_params; float P,
 * double arithmetic; -inf for a dead Gaussian),
 * lse_t = log sum_j exp(ll_j), post_j = exp(ll_j - lse_t), and the weighted
 * posterior w_t post_j added to the statistics of Gaussian sel[j].
 * OpenMP over frames in fixed blocks; each thread sums into its own
 * accumulators, which are added in thread order (so the result depends
 * only on the number of threads). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"
#include "gemm-forms.h"
#ifdef _OPENMP
#include <omp.h>
#endif

void gh_gselect_params(const gh_gmm *gmm, double **norm, double **mu) {
  const int32_t G = gmm->num_gauss, D = gmm->dim;
  *norm = gh_malloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
  *mu = gh_malloc(sizeof(double) * (size_t)((int64_t)G * D > 0 ? (int64_t)G * D : 1));
  double *work = gh_malloc(sizeof(double) * (size_t)gh_gauss_work_size(D));
  for (int32_t g = 0; g < G; ++g) {
    gh_gauss_info info;
    gh_gauss_exact(gmm, g, *mu + (int64_t)g * D, &info, work);
    (*norm)[g] = info.norm;
  }
  free(work);
}

double gh_cpu_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                          const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post, double *frame_ll) {
  gh_gselect_check(gmm, T, sel_off, sel, accs);
  const int32_t D = gmm->dim, G = gmm->num_gauss;
  const int full = gmm->type == GH_COV_FULL;
  const int64_t S = full ? gh_packed_size(D) : D;
  int nth = 1;
#ifdef _OPENMP
  nth = omp_get_max_threads();
  if (nth > 64) nth = 64;
  if ((int64_t)T < 256 * (int64_t)nth) nth = T / 256 > 1 ? T / 256 : 1;
#endif
  double *tot = gh_calloc((size_t)nth, sizeof(double));
  double **occ = gh_calloc((size_t)nth, sizeof(double *)), **mean = gh_calloc((size_t)nth, sizeof(double *)),
         **var = gh_calloc((size_t)nth, sizeof(double *));
  double *norm, *mu;
  gh_gselect_params(gmm, &norm, &mu);
  int32_t maxn = 1;
  for (int32_t t = 0; t < T; ++t)
    if (sel_off[t + 1] - sel_off[t] > maxn) maxn = sel_off[t + 1] - sel_off[t];
#pragma omp parallel num_threads(nth)
  {
    int th = 0;
#ifdef _OPENMP
    th = omp_get_thread_num();
#endif
    double *ll = gh_malloc(sizeof(double) * (size_t)maxn);
    double *o = NULL, *m = NULL, *v = NULL;
    if (accs) {
      o = occ[th] = gh_calloc((size_t)G, sizeof(double));
      m = mean[th] = gh_calloc((size_t)G * D, sizeof(double));
      v = var[th] = gh_calloc((size_t)G * S, sizeof(double));
    }
    const int32_t t0 = (int32_t)((int64_t)T * th / nth), t1 = (int32_t)((int64_t)T * (th + 1) / nth);
    double my = 0.0;
    for (int32_t t = t0; t < t1; ++t) {
      const float *x = X + (int64_t)t * D;
      const int32_t j0 = sel_off[t], n = sel_off[t + 1] - j0;
      double mx = -INFINITY;
      for (int32_t j = 0; j < n; ++j) {
        {
          const int32_t g = sel[j0 + j];
          ll[j] = gh_gauss_exact_loglike(gmm, g, mu + (int64_t)g * D, norm[g], x);
        }
        if (ll[j] > mx) mx = ll[j];
      }
      double lse = mx;
      if (mx != -INFINITY && !isnan(mx)) {
        double s = 0.0;
        for (int32_t j = 0; j < n; ++j) s += exp(ll[j] - mx);
        lse = mx + log(s);
      }
      const double wt = w ? w[t] : 1.0;
      my += wt * lse;
      if (frame_ll) frame_ll[t] = lse;
      for (int32_t j = 0; j < n; ++j) {
        const double p = isfinite(lse) ? exp(ll[j] - lse) : 0.0;
        if (post) post[j0 + j] = (float)p;
        if (!accs) continue;
        const double gm = wt * p;
        if (gm == 0.0) continue;
        const int32_t g = sel[j0 + j];
        o[g] += gm;
        double *mg = m + (int64_t)g * D, *vg = v + (int64_t)g * S;
        for (int32_t i = 0; i < D; ++i) mg[i] += gm * x[i];
        if (!full) {
          for (int32_t i = 0; i < D; ++i) vg[i] += gm * x[i] * x[i];
        } else {
          for (int32_t i = 0; i < D; ++i) {
            const double gx = gm * x[i];
            double *row = vg + gh_packed_index(i, 0);
            for (int32_t k = 0; k <= i; ++k) row[k] += gx * x[k];
          }
        }
      }
    }
    tot[th] = my;
    free(ll);
  }
  double total = 0.0;
  for (int th = 0; th < nth; ++th) {
    total += tot[th];
    if (!accs) continue;
    for (int64_t i = 0; i < G; ++i) accs->occupancy[i] += occ[th][i];
    for (int64_t i = 0; i < (int64_t)G * D; ++i) accs->mean_accs[i] += mean[th][i];
    for (int64_t i = 0; i < (int64_t)G * S; ++i) accs->var_accs[i] += var[th][i];
    free(occ[th]); free(mean[th]); free(var[th]);
  }
  free(occ); free(mean); free(var); free(tot); free(norm); free(mu);
  return total;
}
