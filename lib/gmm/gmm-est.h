/* gmm-est.h -- the EM M-step (maximum-likelihood update) with Kaldi's
 * estimation hygiene (mle-diag-gmm.cc MleDiagGmmUpdate, mle-full-gmm.cc
 * MleFullGmmUpdate), splitting for mix-up (diag-gmm.cc / full-gmm.cc Split,
 * am-diag-gmm.cc SplitByCount, model-common.cc GetSplitTargets), and the
 * parallel-friendly accumulate -> sum -> estimate structure (accumulation
 * lives in the kernels' backend; summing in gmm.h gh_accs_add).
 *
 * All statistics and estimates are in double; the model keeps float
 * parameters (Kaldi's on-disk precision).  Log-likelihoods are natural log.
 */
#ifndef GH_GMM_EST_H
#define GH_GMM_EST_H
#include "gmm/gmm.h"

typedef struct gh_est_opts {
  double min_gaussian_weight;     /* default 1e-5 (Kaldi): a Gaussian with weight occ_g/occ_total
                                     <= this is not updated (and removed, see below) */
  double min_gaussian_occupancy;  /* a Gaussian with occ_g <= this is not updated (and removed).
                                     < 0 (the default, -1): Kaldi's default by covariance type,
                                     10 for diag (MleDiagGmmOptions), 100 for full
                                     (MleFullGmmOptions) */
  double min_variance;            /* absolute floor, default 1e-3 (Kaldi): diag: on each variance
                                     (MleDiagGmmOptions::min_variance); full: on each eigenvalue of
                                     the covariance (MleFullGmmOptions::variance_floor) */
  double rel_variance_floor;      /* diag only: if > 0, the floor of dimension d is
                                     max(min_variance, rel_variance_floor * var_d) where var_d is
                                     the variance of all data of that pdf (from the accs); plays
                                     the role of Kaldi's variance_floor_vector.  Default 0 (off) */
  double max_condition;           /* full: eigenvalue floor also >= max |eig| / max_condition,
                                     default 1e4 (Kaldi) */
  int remove_low_count_gaussians; /* default 1 (Kaldi): Gaussians failing the two minimums are
                                     removed (never the last one) and weights renormalised; if 0
                                     they keep mean/var and get weight max(w, min_gaussian_weight) */
  double variance_floor;          /* alias of min_variance under Kaldi's fgmm option name
                                     --variance-floor; < 0 (default -1): unset; >= 0 overrides */
  /* Covariance shrinkage inside the M-step (lib/gmm/shrink.h; --shrink of gmm-est
   * and gmm-est-gpu): NULL (default) or method none: off.  Applied to each
   * updated full covariance after the ML update, before the eigenvalue
   * floor; shrink_stats (if non-NULL) collects the lambdas. */
  const struct gh_shrink_opts *shrink;
  struct gh_shrink_stats *shrink_stats;
} gh_est_opts;

/* Fill *o with the defaults listed above. */
void gh_est_opts_default(gh_est_opts *o);

/* Register the options above on a tool's parser, Kaldi's names:
 * --min-gaussian-weight, --min-gaussian-occupancy, --min-variance,
 * --variance-floor, --rel-variance-floor, --max-condition,
 * --remove-low-count-gaussians. */
struct gh_opts;
void gh_est_opts_register(struct gh_opts *po, gh_est_opts *o);
/* The options of one covariance type only, for tools that take one:
 * cov GH_COV_DIAG leaves out the full-covariance --variance-floor and
 * --max-condition, GH_COV_FULL the diagonal --rel-variance-floor; any
 * other value registers all (gh_est_opts_register). */
void gh_est_opts_register_cov(struct gh_opts *po, gh_est_opts *o, int cov);

typedef struct gh_est_stats {
  double objf_change;   /* sum over updated pdfs of the auxiliary-function change
                           (Kaldi MlObjective new - old, natural log, total not per frame,
                           computed before Gaussians are removed, as Kaldi does) */
  double count;         /* total occupancy seen by the update */
  int num_removed;      /* Gaussians removed (low weight/occupancy) */
  int num_floored;      /* variances/eigenvalues floored */
  int num_gauss_floored; /* Gaussians with at least one variance/eigenvalue floored (0 where the
                            backend's M-step does not count them) */
  int num_eig_floored;  /* of num_floored, eigenvalues of full covariances */
  double worst_condition; /* largest condition number max|eig| / min eig of a full covariance
                             before its eigenvalue floor, over the Gaussians floored (inf if
                             min eig <= 0; 0: none measured) */
  double max_condition; /* the --max-condition in force (for the warning) */
  int num_not_updated;  /* Gaussians whose occupancy/weight was too low to update */
  int num_pdfs_no_data; /* pdfs with zero total occupancy (kept unchanged) */
} gh_est_stats;

/* The warnings of one M-step over a set of num_pdfs pdfs (pdfs without data,
 * Gaussians removed / not updated, variances floored) from its counts
 * `local`, then local added into *st (if non-NULL).  Shared by the host
 * M-step (gh_gmm_set_update) and the backends' device M-step (gh_dist_em_mstep),
 * so both log alike. */
void gh_est_stats_finish(const gh_est_stats *local, int32_t num_pdfs, gh_est_stats *st);

/* One M-step for every pdf: model := argmax given accs.  Shapes must match
 * (dies otherwise, naming the pdf).  Pdfs with zero total occupancy keep
 * their parameters (one warning with the count).  Adds counts to *st if
 * non-NULL.  Dies if a re-estimated covariance is not positive definite
 * (only possible with min_variance <= 0). */
void gh_gmm_set_update(gh_gmm_set *model, const gh_accs_set *accs,
                       const gh_est_opts *o, gh_est_stats *st);
/* The same for one GMM g (pdf_index is used in messages only).  Follows
 * Kaldi's MleDiagGmmUpdate / MleFullGmmUpdate line by line:
 *   w_g = occ_g / sum occ;  mu_g = m_g / occ_g;
 *   diag: var_g = s_g / occ_g - mu_g^2, floored;
 *   full: C_g = S_g / occ_g - mu_g mu_g', eigenvalues floored at
 *         max(min_variance, max|eig| / max_condition) (SpMatrix::ApplyFloor).
 * Accumulator flags (kGmmMeans=1, kGmmVariances=2, kGmmWeights=4; 0 means
 * all) select what is updated. */
void gh_gmm_update(gh_gmm *g, const gh_gmm_accs *a, const gh_est_opts *o,
                   gh_est_stats *st, int pdf_index);

/* The M-step's eigenvalue floor on one covariance (Kaldi SpMatrix::ApplyFloor
 * with floor max(abs_floor, max |eig| / max_condition); max_condition <= 0:
 * abs_floor only): cov packed [D(D+1)/2], double, modified in place.
 * Returns the number of eigenvalues raised; dies if LAPACK dsyev fails. */
int gh_cov_floor(double *cov, int32_t D, double abs_floor, double max_condition);

/* Auxiliary function of g given accs (Kaldi MlObjective): sum_g occ_g gconst_g
 * + m_g . means_invvars_g - 0.5 tr(S_g InvCov_g); natural log, total. */
double gh_gmm_ml_objective(const gh_gmm *g, const gh_gmm_accs *a);

/* Deterministic random numbers (splitmix64 + Box-Muller) for splitting and
 * initialisation: the same seed gives the same model on every platform. */
typedef struct { uint64_t s; int has_spare; double spare; } gh_rng;
void gh_rng_seed(gh_rng *r, uint64_t seed);
uint64_t gh_rng_u64(gh_rng *r);
double gh_rng_uniform(gh_rng *r);   /* [0, 1) */
double gh_rng_gauss(gh_rng *r);     /* N(0, 1) */

/* Split g up to target_num_gauss Gaussians (Kaldi DiagGmm::Split /
 * FullGmm::Split): repeatedly take the heaviest Gaussian (first on ties),
 * halve its weight, copy it, and move the two means by -/+ perturb_factor *
 * C^(1/2) r with r ~ N(0, I) (diag: per-dimension standard deviations; full:
 * Cholesky factor of the covariance).  Dies if target < current. */
void gh_gmm_split(gh_gmm *g, int32_t target_num_gauss, double perturb_factor, gh_rng *rng);

/* Per-pdf targets (Kaldi GetSplitTargets): start with one Gaussian per pdf,
 * then give Gaussians one at a time to the pdf with the largest
 * occ^power / n (ties: lowest pdf index) until target_total, never letting
 * a pdf's count exceed occ / min_count.  occs[P] (NULL: all 1).  targets[P]
 * out.  Returns the sum of targets. */
int64_t gh_split_targets(const double *occs, int32_t num_pdfs, int64_t target_total,
                         double power, double min_count, int32_t *targets);

/* Mix up (Kaldi AmDiagGmm::SplitByCount): targets from gh_split_targets,
 * then every pdf with fewer Gaussians than its target is split up to it
 * (pdfs already above their target are left as they are).  Returns the new
 * total number of Gaussians.  Kaldi's defaults: power 0.2, min_count 20,
 * perturb_factor 0.01. */
int64_t gh_gmm_set_mixup(gh_gmm_set *s, int64_t target_total, const double *occs,
                         double power, double min_count, double perturb_factor, gh_rng *rng);

/* Per-pdf total occupancies of accs into occs[num_pdfs]. */
void gh_accs_pdf_occs(const gh_accs_set *a, double *occs);

#endif
