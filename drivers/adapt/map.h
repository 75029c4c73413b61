/* map.h -- maximum a posteriori (MAP) adaptation of diagonal-covariance GMM
 * sets (Gauvain & Lee 1994; Reynolds, Quatieri & Dunn 2000, "Speaker
 * verification using adapted Gaussian mixture models", DSP 10, eqs. 11-14;
 * Kaldi's MapDiagGmmUpdate in gmm/mle-diag-gmm.cc).
 *
 * With a Gaussian's statistics from the E-step under the prior model
 * (occ_g = sum_t gamma_tg, m_g = sum_t gamma_tg x_t, s_g = sum_t gamma_tg x_t^2)
 * and the prior's w_g, mu_g, var_g, per Gaussian of each pdf:
 *   mean:     mu'_g  = (m_g + tau_m mu_g) / (occ_g + tau_m)
 *   variance: var'_g = (occ_g v_g + tau_v var_g) / (occ_g + tau_v),
 *             v_g = s_g/occ_g - 2 mu'_g m_g/occ_g + mu'_g^2  (spread around the new mean)
 *   weight:   w'_g   = (occ_g + tau_w w_g) / (sum_h occ_h + tau_w)
 * i.e. Reynolds' eq. 14 data-dependent coefficient alpha_g = occ_g/(occ_g + tau)
 * (Kaldi's form of it, with one tau per parameter type).  Gaussians with
 * occ_g = 0 keep mean and variance.  Each pdf is adapted on its own data.
 */
#ifndef GH_MAP_H
#define GH_MAP_H
#include "gmm/gmm.h"

typedef struct {
  double mean_tau;      /* default 10 (Kaldi) */
  double variance_tau;  /* default 50 (Kaldi) */
  double weight_tau;    /* default 10 (Kaldi) */
  uint32_t flags;       /* Kaldi GmmFlags: 1 means, 2 variances, 4 weights; default 1 */
} gh_map_opts;

void gh_map_opts_default(gh_map_opts *o);
/* "m", "mv", "mw", "mvw" (any order of m, v, w) -> flags; returns 0 or -1. */
int gh_map_parse_flags(const char *s, uint32_t *flags);

/* MAP-update diagonal GMM g in place from its accs a (formulas at top).
 * Returns the change of the ML auxiliary function of g on a (Kaldi
 * MlObjective; natural log, total), for logging.  Dies (naming pdf_index)
 * if g is not diagonal, the shapes differ, or a tau is negative. */
double gh_gmm_map_update(gh_gmm *g, const gh_gmm_accs *a, const gh_map_opts *o, int pdf_index);
/* Every pdf of the set (shapes must match accs).  Returns the summed
 * objective change; *count (if non-NULL) gets the total occupancy. */
double gh_gmm_set_map_update(gh_gmm_set *s, const gh_accs_set *accs, const gh_map_opts *o, double *count);

#endif
