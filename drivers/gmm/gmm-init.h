/* gmm-init.h -- initialising a GMM from data.
 *
 * Method (documented in doc/gmm-init.md): weighted k-means++ seeding
 * (Arthur & Vassilvitskii 2007) of K = min(num_gauss, frames /
 * min_frames_per_gauss) centres on a frame subset (at most max_frames,
 * drawn with the seeded RNG), up to kmeans_iters Lloyd iterations on the
 * raw frames as scikit-learn's k-means initialisation does (or, with
 * kmeans_normalize, with each dimension divided by its global standard
 * deviation), then one Gaussian per cluster from the cluster's moments
 * (weight = cluster weight fraction; diag variances floored at
 * max(min_variance, 1e-3 * global variance); full covariances get a ridge
 * of 1e-3 * global variance on the diagonal and eigenvalues floored at
 * max(min_variance, max eig / 1e4)).  When K < num_gauss the GMM is grown
 * by splitting the heaviest Gaussians (Kaldi DiagGmm::Split, perturbation
 * 0.1 standard deviations, as in gmm-global-init-from-feats).  EM
 * iterations are the caller's (tools/gmm-init.c).
 */
#ifndef GH_GMM_INIT_H
#define GH_GMM_INIT_H
#include "gmm/gmm.h"

typedef struct {
  int32_t num_gauss;        /* target Gaussians per pdf */
  gh_covtype cov_type;
  int32_t kmeans_iters;     /* Lloyd iterations after seeding (default 10) */
  int kmeans_normalize;     /* 1: k-means on variance-normalised frames; 0 (default): on the
                               raw frames, as scikit-learn's k-means initialisation */
  int32_t max_frames;       /* subsample at most this many frames per pdf (default 200000) */
  uint64_t seed;            /* RNG seed (default 1) */
  double min_variance;      /* floor on variances / eigenvalues (default 1e-3) */
  int32_t min_frames_per_gauss; /* cap num_gauss at frames / this (default 10) */
  struct gh_backend *backend; /* computes the k-means distances (kernels/backend.h kmeans_*
                                 ops); NULL (default): the CPU implementation.  The result
                                 is the same on every backend (doc/gmm-init.md). */
} gh_init_opts;

void gh_init_opts_default(gh_init_opts *o);

/* Initialise g from frames X[N x D] (row-major float) with optional frame
 * weights w[N] (NULL = all 1).  Dies if N == 0.  Deterministic for a seed. */
void gh_gmm_init_from_data(gh_gmm *g, const float *X, const float *w, int64_t N,
                           int32_t D, const gh_init_opts *o, const char *what);

#endif
