/* kaldi-gconst.h -- Kaldi's DiagGmm::ComputeGconsts in Kaldi's own mix of
 * float and double arithmetic, so that a model written after it is
 * byte-identical to Kaldi's (gmm-init-mono, gmm-boost-silence).
 * gh_gmm_compute_gconsts (gmm.h) computes the same quantity entirely in
 * double, which can differ from Kaldi's float in the last bit. */
#ifndef GH_KALDI_GCONST_H
#define GH_KALDI_GCONST_H
#include "gmm/gmm.h"

/* For a diagonal GMM: gconst_g = log w_g - 0.5 D log(2 pi)
 *   + sum_d (0.5 log iv_gd - 0.5 mi_gd^2 / iv_gd), accumulated in a float
 * with each term in double (natural log); +inf becomes -inf (as Kaldi).
 * Returns the number of non-finite gconsts; dies (naming "what" and the
 * Gaussian) on NaN or a negative weight, or if g is not diagonal. */
int gh_gmm_kaldi_gconsts(gh_gmm *g, const char *what);

#endif
