/* gmm-init.c -- GMM initialisation from data: weighted k-means++ seeding
 * (Arthur & Vassilvitskii 2007, "k-means++: the advantages of careful
 * seeding", D^2 weighting), Lloyd iterations (raw or variance-normalised frames),
 * Gaussians from the cluster moments, then splitting (Kaldi DiagGmm::Split,
 * perturbation 0.1 as in gmm-global-init-from-feats) up to the requested
 * number when the data supports fewer.  See doc/gmm-init.md. */
#include "gmm/gmm-init.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "gmm/gmm-est.h"
#include "base/matrix.h"
#include "registry/registry.h"

void gh_init_opts_default(gh_init_opts *o) {
  o->num_gauss = 1;
  o->cov_type = GH_COV_DIAG;
  o->kmeans_iters = 10;
  o->kmeans_normalize = 0;
  o->max_frames = 200000;
  o->seed = 1;
  o->min_variance = 1e-3;
  o->min_frames_per_gauss = 10;
  o->backend = NULL;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sample index i with probability p_i / sum p (p_i >= 0, sum > 0). */
static int64_t sample(const double *p, int64_t n, double total, gh_rng *rng) {
  double u = gh_rng_uniform(rng) * total, acc = 0;
  int64_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] <= 0) continue;
    acc += p[i];
    last = i;
    if (u < acc) return i;
  }
  return last; /* rounding: the last positive one */
}

void gh_gmm_init_from_data(gh_gmm *g, const float *X, const float *w, int64_t N,
                           int32_t D, const gh_init_opts *o, const char *what) {
  if (N <= 0) gh_die("%s: no frames to initialise a GMM from", what);
  if (o->num_gauss < 1) gh_die("%s: number of Gaussians must be >= 1 (got %d)", what, o->num_gauss);
  gh_rng rng;
  gh_rng_seed(&rng, o->seed);
  const int full = o->cov_type == GH_COV_FULL;
  const int64_t S = full ? gh_packed_size(D) : D;

  /* 1. frames with positive weight, subsampled to max_frames */
  int64_t *idx = gh_malloc(sizeof(int64_t) * N), M = 0;
  for (int64_t i = 0; i < N; ++i)
    if (!w || w[i] > 0) idx[M++] = i;
  if (M == 0) gh_die("%s: all frame weights are zero", what);
  /* Kaldi's gmm-global-init-from-feats asserts num_frames >= 10 num_gauss
   * (InitGmmFromRandomFrames): Gaussians beyond frames / 10 would start
   * from splitting and EM would leave them untrained (below the minimum
   * occupancy), a model that looks trained but is not.  Checked on the
   * Gaussians asked for, before anything else is said about them. */
  const int64_t mfpg = o->min_frames_per_gauss;
  if (mfpg > 0 && (double)M < (double)mfpg * (double)o->num_gauss) {
    const int64_t can = M / mfpg;
    char remedy[160];
    if (can >= 1)
      snprintf(remedy, sizeof remedy, "lower --num-gauss to %lld or set --min-frames-per-gauss=0 to allow it",
               (long long)can);
    else
      snprintf(remedy, sizeof remedy, "give it more frames or set --min-frames-per-gauss=0 to allow it");
    gh_die("%s: --num-gauss=%d needs at least %lld frames (%lld per Gaussian, --min-frames-per-gauss, as Kaldi's "
           "gmm-global-init-from-feats), got %lld; %lld Gaussians would stay untrained: %s",
           what, o->num_gauss, (long long)(mfpg * o->num_gauss), (long long)mfpg, (long long)M,
           (long long)(o->num_gauss - can), remedy);
  }
  /* Bounded work (--min-frames-per-gauss=0): never more Gaussians than
   * frames to estimate them from (--num-gauss=1e8 on 150 frames would
   * otherwise split for hours). */
  const int64_t target = o->num_gauss < M ? o->num_gauss : M;
  if (o->num_gauss > M)
    gh_warn("%s: --num-gauss=%d but only %lld frames; initialising %lld Gaussians", what, o->num_gauss,
            (long long)M, (long long)M);
  if (o->max_frames > 0 && M > o->max_frames) {
    for (int64_t i = 0; i < o->max_frames; ++i) { /* partial Fisher-Yates */
      int64_t j = i + (int64_t)(gh_rng_uniform(&rng) * (double)(M - i));
      if (j >= M) j = M - 1;
      int64_t t = idx[i]; idx[i] = idx[j]; idx[j] = t;
    }
    M = o->max_frames;
    qsort(idx, (size_t)M, sizeof(int64_t), cmp_i64);
  }
  double *wt = gh_malloc(sizeof(double) * M), W = 0;
  for (int64_t i = 0; i < M; ++i) { wt[i] = w ? w[idx[i]] : 1.0; W += wt[i]; }

  /* 2. global moments; Z = the frames k-means clusters (raw, as scikit-learn's
   * k-means initialisation does, or variance-normalised) */
  double *gmean = gh_calloc(D, sizeof(double)), *gvar = gh_calloc(D, sizeof(double));
  for (int64_t i = 0; i < M; ++i) {
    const float *x = X + idx[i] * D;
    for (int32_t d = 0; d < D; ++d) { gmean[d] += wt[i] * x[d]; gvar[d] += wt[i] * (double)x[d] * x[d]; }
  }
  for (int32_t d = 0; d < D; ++d) {
    gmean[d] /= W;
    gvar[d] = gvar[d] / W - gmean[d] * gmean[d];
    if (gvar[d] < 0) gvar[d] = 0;
  }
  double *Z = gh_malloc(sizeof(double) * M * D);
  for (int64_t i = 0; i < M; ++i) {
    const float *x = X + idx[i] * D;
    for (int32_t d = 0; d < D; ++d)
      Z[i * D + d] = o->kmeans_normalize ? (x[d] - gmean[d]) / sqrt(gvar[d] > 1e-20 ? gvar[d] : 1e-20) : x[d];
  }

  /* 3. number of k-means centres */
  int64_t G0 = o->num_gauss;
  int64_t cap = o->min_frames_per_gauss > 0 ? M / o->min_frames_per_gauss : M;
  if (cap < 1) cap = 1;
  if (G0 > cap) G0 = cap;

  /* 4. k-means++ seeding (weights w_i * D(x_i)^2).  The distances are the
   * backend's (kmeans_* ops: the same bits on every backend; NULL: the CPU
   * implementation); the draws stay here, in the RNG's order. */
  gh_backend *be = o->backend;
  gh_dev_kmeans *zk = gh_backend_kmeans_upload(be, Z, M, D);
  double *C = gh_malloc(sizeof(double) * G0 * D);
  double *d2 = gh_malloc(sizeof(double) * M), *p = gh_malloc(sizeof(double) * M);
  int32_t *asg = gh_malloc(sizeof(int32_t) * M), *asg_new = gh_malloc(sizeof(int32_t) * M);
  int64_t first = sample(wt, M, W, &rng);
  memcpy(C, Z + first * D, sizeof(double) * D);
  gh_backend_kmeans_nearest(be, zk, C, 0, 1, 1); /* d2 = distance to centre 0, asg = 0 */
  gh_backend_kmeans_fetch(be, zk, d2, NULL);
  int64_t K = 1;
  while (K < G0) {
    double tot = 0;
    for (int64_t i = 0; i < M; ++i) { p[i] = wt[i] * d2[i]; tot += p[i]; }
    if (!(tot > 0)) break; /* all remaining frames coincide with a centre */
    int64_t j = sample(p, M, tot, &rng);
    memcpy(C + K * D, Z + j * D, sizeof(double) * D);
    gh_backend_kmeans_nearest(be, zk, C + K * D, (int32_t)K, 1, 0); /* nearer: d2, asg = e, K */
    gh_backend_kmeans_fetch(be, zk, d2, NULL);
    ++K;
  }
  gh_backend_kmeans_fetch(be, zk, NULL, asg);
  if (K < G0) gh_vlog(1, "%s: only %lld distinct k-means++ centres", what, (long long)K);

  /* 5. Lloyd iterations: centres from the assignment (here, O(M D)), the
   * assignment from the centres (the backend, O(M K D)) */
  double *cw = gh_malloc(sizeof(double) * K);
  for (int32_t it = 0; it < o->kmeans_iters; ++it) {
    memset(C, 0, sizeof(double) * K * D);
    memset(cw, 0, sizeof(double) * K);
    for (int64_t i = 0; i < M; ++i) {
      cw[asg[i]] += wt[i];
      for (int32_t d = 0; d < D; ++d) C[asg[i] * D + d] += wt[i] * Z[i * D + d];
    }
    for (int64_t k = 0; k < K; ++k) {
      if (cw[k] > 0) {
        for (int32_t d = 0; d < D; ++d) C[k * D + d] /= cw[k];
      } else { /* empty cluster: move it to the frame farthest from its centre */
        int64_t far = 0;
        for (int64_t i = 1; i < M; ++i) if (wt[i] * d2[i] > wt[far] * d2[far]) far = i;
        memcpy(C + k * D, Z + far * D, sizeof(double) * D);
        d2[far] = 0;
      }
    }
    gh_backend_kmeans_nearest(be, zk, C, 0, (int32_t)K, 1);
    gh_backend_kmeans_fetch(be, zk, d2, asg_new);
    int64_t changed = 0;
    for (int64_t i = 0; i < M; ++i) {
      if (asg_new[i] != asg[i]) ++changed;
      asg[i] = asg_new[i];
    }
    gh_vlog(2, "%s: k-means iteration %d: %lld frames changed cluster", what, it, (long long)changed);
    if (changed == 0) break;
  }
  gh_backend_kmeans_free(be, zk);

  /* 6. Gaussians from cluster moments (original space) */
  double *gw = gh_calloc(K, sizeof(double)), *mu = gh_calloc(K * D, sizeof(double));
  double *cov = gh_calloc(K * S, sizeof(double));
  for (int64_t i = 0; i < M; ++i) {
    int32_t k = asg[i];
    const float *x = X + idx[i] * D;
    gw[k] += wt[i];
    for (int32_t d = 0; d < D; ++d) mu[k * D + d] += wt[i] * x[d];
    if (!full) {
      for (int32_t d = 0; d < D; ++d) cov[k * S + d] += wt[i] * (double)x[d] * x[d];
    } else {
      for (int32_t r = 0; r < D; ++r)
        for (int32_t c = 0; c <= r; ++c) cov[k * S + gh_packed_index(r, c)] += wt[i] * (double)x[r] * x[c];
    }
  }
  int64_t Kk = 0; /* compact away empty clusters */
  for (int64_t k = 0; k < K; ++k) {
    if (!(gw[k] > 0)) continue;
    double *m = mu + Kk * D, *c = cov + Kk * S;
    memmove(m, mu + k * D, sizeof(double) * D);
    memmove(c, cov + k * S, sizeof(double) * S);
    for (int32_t d = 0; d < D; ++d) m[d] /= gw[k];
    for (int64_t s = 0; s < S; ++s) c[s] /= gw[k];
    if (!full) {
      for (int32_t d = 0; d < D; ++d) {
        c[d] -= m[d] * m[d];
        double fl = fmax(o->min_variance, 1e-3 * gvar[d]);
        if (!(c[d] >= fl)) c[d] = fl;
      }
    } else {
      for (int32_t r = 0; r < D; ++r)
        for (int32_t q = 0; q <= r; ++q) c[gh_packed_index(r, q)] -= m[r] * m[q];
      for (int32_t d = 0; d < D; ++d) c[gh_packed_index(d, d)] += 1e-3 * gvar[d];
      /* eigenvalue floor: max(min_variance, max eig / 1e4) (Kaldi's max
       * condition), lib/gmm/gmm-est.c gh_cov_floor: dsyev only when a
       * Cholesky test cannot prove that nothing is below the floor */
      gh_cov_floor(c, D, o->min_variance, 1e4);
    }
    gw[Kk] = gw[k] / W;
    ++Kk;
  }
  gh_gmm_init(g, o->cov_type, (int32_t)Kk, D);
  if (gh_gmm_set_moments(g, gw, mu, cov) != 0) gh_die("%s: initial covariance not usable: %s", what, gh_last_error());

  /* 7. grow by splitting when the data supported fewer centres */
  if (Kk < target) {
    gh_vlog(1, "%s: %lld k-means clusters, splitting up to %lld Gaussians", what, (long long)Kk, (long long)target);
    gh_gmm_split(g, (int32_t)target, 0.1, &rng);
  }
  free(idx); free(wt); free(gmean); free(gvar); free(Z); free(C); free(d2); free(p); free(asg); free(asg_new); free(cw);
  free(gw); free(mu); free(cov);
}
