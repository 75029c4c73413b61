/* kaldi-gconst.c -- see kaldi-gconst.h (Kaldi gmm/diag-gmm.cc ComputeGconsts). */
#include "gmm/kaldi-gconst.h"

#include <math.h>
#include "base/gh-base.h"

int gh_gmm_kaldi_gconsts(gh_gmm *g, const char *what) {
  if (g->type != GH_COV_DIAG) gh_die("%s: Kaldi gconsts of a full-covariance GMM are not supported", what);
  int32_t D = g->dim;
  int bad = 0;
  float offset = (float)(-0.5 * 1.8378770664093454835606594728112 * (double)D); /* Kaldi M_LOG_2PI */
  for (int32_t k = 0; k < g->num_gauss; ++k) {
    if (!(g->weights[k] >= 0.0f)) gh_die("%s: Gaussian %d has weight %g (negative)", what, k, (double)g->weights[k]);
    const float *iv = g->inv_vars + (int64_t)k * D, *mi = g->means_invvars + (int64_t)k * D;
    float gc = logf(g->weights[k]) + offset;
    for (int32_t d = 0; d < D; ++d)
      gc = (float)((double)gc + (0.5 * (double)logf(iv[d]) - 0.5 * (double)mi[d] * (double)mi[d] / (double)iv[d]));
    if (isnan(gc)) gh_die("%s: Gaussian %d: not a number in gconst computation", what, k);
    if (isinf(gc)) {
      bad++;
      if (gc > 0) gc = -gc;
    }
    g->gconsts[k] = gc;
  }
  return bad;
}
