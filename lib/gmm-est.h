/* gmm-est.h -- the EM M-step (maximum-likelihood update) with Kaldi's
 * estimation hygiene (mle-diag-gmm.cc MleDiagGmmUpdate, mle-full-gmm.cc
 * MleFullGmmUpdate), splitting for mix-up, and the parallel-friendly
 * accumulate -> sum -> estimate structure (accumulation lives in the
 * kernels' backend; summing in gmm.h gh_accs_add).
 */
#ifndef GH_GMM_EST_H
#define GH_GMM_EST_H
#include "gmm.h"

typedef struct {
  double min_gaussian_weight;     /* Kaldi default 1e-5: below this the Gaussian is removed */
  double min_gaussian_occupancy;  /* default 10 (Kaldi's diag default; full uses 10 as well): below,
                                     mean/var are not updated (and the Gaussian may be removed) */
  double min_variance;            /* diag: variance floor (absolute), default 0.001 */
  double variance_floor;          /* diag: floor as a fraction of the global variance
                                     (per dim, of all data in that pdf), default 0 (off) */
  double max_condition;           /* full: eigenvalue floor = max eig / max_condition, default 1e4 */
  double min_eigenvalue;          /* full: absolute eigenvalue floor, default 0 (off) */
  int remove_low_count_gaussians; /* default 1 */
} gh_est_opts;

void gh_est_opts_default(gh_est_opts *o);

typedef struct {
  double objf_change;   /* not computed here: 0 */
  int num_removed;      /* Gaussians removed (low weight/occupancy) */
  int num_floored;      /* variances/eigenvalues floored */
  int num_not_updated;  /* Gaussians whose occupancy was too low to update */
} gh_est_stats;

/* One M-step: model := argmax given accs.  Shapes must match (dies
 * otherwise, naming the pdf).  Pdfs with zero total occupancy keep their
 * parameters (warned).  Adds counts to *st if non-NULL. */
void gh_gmm_set_update(gh_gmm_set *model, const gh_accs_set *accs,
                       const gh_est_opts *o, gh_est_stats *st);
void gh_gmm_update(gh_gmm *g, const gh_gmm_accs *a, const gh_est_opts *o,
                   gh_est_stats *st, int pdf_index);

/* Mix up (Kaldi DiagGmm::Split / AmDiagGmm::SplitByCount): grow the set to
 * target_total Gaussians, distributing them over pdfs in proportion to
 * occ^power (power default 0.2) given per-pdf occupancies occs[P] (NULL:
 * evenly), and within a pdf splitting the heaviest Gaussian repeatedly:
 * weight halved, means moved by +/- perturb_factor (default 0.01) standard
 * deviations. */
void gh_gmm_split(gh_gmm *g, int32_t target_num_gauss, double perturb_factor);
void gh_gmm_set_mixup(gh_gmm_set *s, int64_t target_total, const double *occs,
                      double power, double perturb_factor);

#endif
