/* numerics.c -- the numerical contract's checks (numerics.h). */
#include "gmm/numerics.h"
#include "base/gh-base.h"

#include <math.h>
#include <stdlib.h>

void gh_loglikes_check(const char *rspec, const char *key, const float *ll, int64_t T, int32_t P, int *warned) {
  const double far = -0.5 * GH_CONTRACT_MAX_SIGMAS * GH_CONTRACT_MAX_SIGMAS;
  for (int64_t t = 0; t < T; ++t) {
    const float *r = ll + t * P;
    float best = -INFINITY;
    for (int32_t p = 0; p < P; ++p) {
      if (isnan(r[p]))
        gh_die("%s, key %s, frame %lld: the log-likelihood of pdf %d is NaN", rspec, key, (long long)t, p);
      if (r[p] > best) best = r[p];
    }
    if (P > 0 && best == -INFINITY)
      gh_die("%s, key %s, frame %lld: log-likelihood -inf under every Gaussian of every pdf (no Gaussian of the "
             "model can produce this frame)", rspec, key, (long long)t);
    if (P > 0 && best < far && warned && !*warned) {
      *warned = 1;
      gh_warn("%s, key %s, frame %lld: best log-likelihood %.4g: the frame is more than %.0e standard "
              "deviations from every Gaussian, outside the numerical contract (doc/reliability.md): its "
              "log-likelihoods are accurate to about 1e-5 relative only",
              rspec, key, (long long)t, best, GH_CONTRACT_MAX_SIGMAS);
    }
  }
}

void gh_max_condition_check(double max_condition, const char *option) {
  if (!(max_condition <= GH_FLOAT_MAX_CONDITION))
    gh_die("%s=%g: above %.0e, which float model parameters cannot represent (the inverse covariance's "
           "float rounding times the condition number changes the Gaussian by more than 6%%; "
           "doc/reliability.md)", option, max_condition, GH_FLOAT_MAX_CONDITION);
  static int warned; /* once per process */
  if (max_condition > GH_CONTRACT_MAX_COND * 1.0001 && !warned++)
    gh_warn("%s=%g: above Kaldi's default %.0e: covariances of condition number up to %g are outside the "
            "numerical contract (their float parameters perturb the Gaussian by up to %.1e relative; "
            "doc/reliability.md)", option, max_condition, GH_CONTRACT_MAX_COND, max_condition,
            max_condition * 0x1p-24);
}
