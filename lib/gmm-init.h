/* gmm-init.h -- initialising a GMM from data.
 *
 * Method (documented in doc/gmm-init.md): k-means++ seeding (Arthur &
 * Vassilvitskii 2007) of min(num_gauss, ...) centres on a frame subset,
 * a few Lloyd iterations, then Gaussians from the cluster moments
 * (weights = cluster fractions, diagonal or full covariance, floored);
 * when num_gauss exceeds what the data supports the GMM is grown by
 * split-and-mix-up as Kaldi's gmm-global-init-from-feats does.
 */
#ifndef GH_GMM_INIT_H
#define GH_GMM_INIT_H
#include "gmm.h"

typedef struct {
  int32_t num_gauss;        /* target Gaussians per pdf */
  gh_covtype cov_type;
  int32_t kmeans_iters;     /* Lloyd iterations after seeding (default 10) */
  int32_t max_frames;       /* subsample at most this many frames per pdf (default 200000) */
  uint64_t seed;            /* RNG seed (default 1) */
  double min_variance;      /* floor on variances / eigenvalues (default 1e-3) */
  int32_t min_frames_per_gauss; /* cap num_gauss at frames / this (default 10) */
} gh_init_opts;

void gh_init_opts_default(gh_init_opts *o);

/* Initialise g from frames X[N x D] (row-major float) with optional frame
 * weights w[N] (NULL = all 1).  Dies if N == 0.  Deterministic for a seed. */
void gh_gmm_init_from_data(gh_gmm *g, const float *X, const float *w, int64_t N,
                           int32_t D, const gh_init_opts *o, const char *what);

#endif
