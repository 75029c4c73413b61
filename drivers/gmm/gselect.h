/* gselect.h -- Gaussian selection and per-Gaussian posteriors of one global
 * GMM, for Kaldi's global-GMM tools (gmm-gselect, gmm-global-get-post,
 * fgmm-global-gselect-to-post, gmm-global-acc-stats --gselect; Kaldi
 * gmm/diag-gmm.cc GaussianSelection / GaussianSelectionPreselect,
 * hmm/posterior.cc VectorToPosteriorEntry).
 *
 * Per-Gaussian log-likelihoods come from the backends' loglikes kernel run
 * on the "exploded" model (gh_gmm_explode): one pdf per Gaussian whose only
 * Gaussian keeps its weight w_g (and gconst, log w_g included), so pdf g's log-likelihood
 * is log(w_g N(x; mu_g, C_g)) -- the dense [T x G] matrix Kaldi's
 * DiagGmm::LogLikelihoods gives.  Selection-restricted E-steps go through
 * the backends' acc_gselect op (kernels/backend.h). */
#ifndef GH_GSELECT_H
#define GH_GSELECT_H
#include <stdint.h>
#include "backend.h"
#include "gmm/gmm.h"
#include "io/table.h"

/* out := a set of G one-Gaussian pdfs (form GH_SET_AM), pdf g holding
 * Gaussian g of gmm with its weight w_g (not 1: the backends recompute the
 * normaliser, log w_g included, from the weight) and gmm's gconst_g.  For
 * loglikes only (a pdf's weights do not sum to 1). */
void gh_gmm_explode(const gh_gmm *gmm, gh_gmm_set *out);

/* Kaldi DiagGmm::GaussianSelection for one frame: ll[G] per-Gaussian
 * log-likelihoods; writes the indices of the min(n, G) largest to out[]
 * (best first; ties: larger index first, as Kaldi's sort of (loglike,
 * index) pairs in decreasing order) and returns their number; *lse gets
 * log sum exp of the selected log-likelihoods.  allowed: NULL, or a list
 * of na candidate indices to choose among (GaussianSelectionPreselect). */
int32_t gh_gselect_frame(const float *ll, int32_t G, int32_t n, const int32_t *allowed, int32_t na, int32_t *out,
                         double *lse);

/* Kaldi VectorToPosteriorEntry: softmax of ll[G] (float, as Kaldi), the
 * min(n, G) largest posteriors in decreasing order, then the smallest
 * dropped while below min_post (at least one kept), renormalised to sum to
 * one.  Writes *k (index, posterior) pairs to idx[] / post[] and returns
 * log sum_g exp(ll[g]) (over all G). */
double gh_post_topn(const float *ll, int32_t G, int32_t n, float min_post, int32_t *idx, float *post, int32_t *k);

/* Kaldi StringToGmmFlags: a subset of "mvwt" -> kGmmMeans 1 | kGmmVariances 2
 * | kGmmWeights 4 (t, transitions, is accepted and ignored); dies on any
 * other letter naming the option. */
uint32_t gh_gmm_flags_parse(const char *s, const char *option);
/* Kaldi AugmentGmmFlags: variances imply means, means imply weights, and
 * weights are always added. */
uint32_t gh_gmm_flags_augment(uint32_t flags);


/* The single GMM of a model read by gh_gmm_set_read that a Kaldi global-GMM
 * tool takes: dies (naming name) unless s has exactly one pdf of the given
 * type ("gmm-global-*": diag, "fgmm-global-*": full). */
gh_gmm *gh_global_gmm(gh_gmm_set *s, gh_covtype type, const char *name);

/* dst := the diagonal GMM with src's weights and, per Gaussian, the mean
 * and the diagonal of the covariance of full-covariance src (Kaldi
 * DiagGmm::CopyFromFullGmm, used by fgmm-global-to-gmm): covariances from
 * the inverse covariances in double (gh_gmm_get_moments), inv_vars =
 * 1 / diag, means_invvars = mean * inv_vars, gconsts recomputed.  dst is
 * overwritten (freed first if it is a valid GMM: it must be zeroed or
 * valid) and must not alias src. */
void gh_gmm_full_to_diag(gh_gmm *dst, const gh_gmm *src);

#endif
