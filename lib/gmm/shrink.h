/* shrink.h -- shrinkage of full covariance matrices (fc-shrink, and
 * gmm-est / gmm-est-gpu --shrink inside EM).  doc/shrink.md has the
 * derivations, the weighted forms and the evaluation.
 *
 * For one Gaussian with posterior weights gamma_t (occupancy n = sum gamma_t,
 * ML mean mu = sum gamma x / n, centred frames y_t = x_t - mu) the sample
 * covariance is the ML (M-step) one, S = sum gamma y y' / n, and the shrunk
 * estimate is
 *     Sigma = (1 - lambda) S + lambda T,   0 <= lambda <= 1,
 * with target T and intensity lambda per method:
 *   fixed      lambda = --factor; T = diag(S) (or mu_S I with target identity,
 *              mu_S = tr(S)/D: scikit-learn ShrunkCovariance).
 *   occupancy  lambda = tau / (tau + n), T as for fixed (more shrinkage for
 *              Gaussians that saw few frames; the count-based smoothing of
 *              MAP / I-smoothing, Gauvain & Lee 1994).
 *   oas        Chen, Wiesel, Eldar & Hero 2010, "Shrinkage algorithms for MMSE
 *              covariance estimation", IEEE TSP 58(10), eq. 23 in the form
 *              scikit-learn uses (the 2/p terms dropped):
 *                a = ||S||_F^2 / D^2,  m = tr(S) / D,
 *                lambda = min(1, (a + m^2) / ((N + 1)(a - m^2 / D))),
 *              T = m I.
 *   lw         Ledoit & Wolf 2004, "A well-conditioned estimator for
 *              large-dimensional covariance matrices", J. Multivariate Anal.
 *              88, the consistent estimator S* = (b^2/d^2) m I + (1 - b^2/d^2) S
 *              (their m, d^2, b^2 = min(bbar^2, d^2)) with the norm ||A||^2 = tr(AA')/D:
 *                d^2 = ||S - m I||_F^2 / D,
 *                b^2 = min(d^2, (sum_t gamma_t ||y_t||^4 / n - ||S||_F^2) / (D N)),
 *                lambda = b^2 / d^2,  T = m I
 *              (= scikit-learn ledoit_wolf_shrinkage for unit weights).
 *   ss         Schäfer & Strimmer 2005, "A shrinkage approach to large-scale
 *              covariance matrix estimation", Stat. Appl. Genet. Mol. Biol.
 *              4(1) art. 32, Table 1 target "D" (diagonal, unequal
 *              variance), as Bell & King 2009/2010 ("Shrinkage estimation of
 *              full covariance matrices for speech recognition") apply it
 *              per Gaussian with posterior-weighted statistics:
 *                lambda = sum_{i!=j} Var^(s_ij) / sum_{i!=j} s_ij^2,
 *              S&S's unbiased s_ij = n/(n-1) w_ij and Var^(s_ij) = n/(n-1)^3
 *              sum_t (w_tij - w_ij)^2 (w_tij = y_ti y_tj, w_ij its mean),
 *              generalised to weights with N = n_eff:
 *                lambda = sum_{i!=j} (F_ij / n - S_ij^2) / (N - 1)
 *                         / sum_{i!=j} S_ij^2,
 *              F_ij = sum_t gamma_t y_ti^2 y_tj^2; clipped to [0, 1];
 *              T = diag(S): variances unchanged, off-diagonals * (1-lambda).
 *   diag       lambda = 1, T = diag(S): the model becomes diagonal
 *              (fc-shrink only).
 * N, the sample size of oas / lw / ss, is the effective sample size
 * n_eff = n^2 / sum_t gamma_t^2 (Kish): the variance of a weighted mean of
 * iid terms is Var / n_eff, so the unweighted estimators' 1/n factors
 * become 1/n_eff; for hard alignments (gamma in {0, 1}) n_eff = n and every
 * formula is the textbook one.  lw and ss need sum gamma^2 and F from the
 * shrinkage statistics (below); oas uses n_eff when the accs carry them and
 * the occupancy n otherwise (it needs nothing else); occupancy uses n.
 *
 * Positive definiteness: the caller floors the eigenvalues of Sigma
 * afterwards with the M-step's floor (gmm-est.h gh_cov_floor: eigenvalues
 * >= max(--min-variance, max eig / --max-condition)), so the output is
 * positive definite even when S is singular and lambda = 0.
 *
 * Shrinkage statistics (gh_gmm_accs.shrink, written after the standard
 * accumulators, doc/format.md): for each Gaussian g, moments of its frames
 * about a fixed centre c_g, the mean of the model the E-step used (so
 * split jobs' statistics add up), z = x - c_g:
 *   [0]                 sum gamma^2
 *   [1, 1+D)            s1_i  = sum gamma z_i
 *   [1+D, 1+D+P)        s2_ij = sum gamma z_i z_j          (packed, i >= j)
 *   [1+D+P, 1+D+P+D*D)  s3_ij = sum gamma z_i^2 z_j         (row i, column j)
 *   [1+D+P+D*D, K)      s4_ij = sum gamma z_i^2 z_j^2      (packed)
 * K = gh_shrink_stats_size(D), P = D(D+1)/2.  F about the ML mean mu is
 * obtained exactly from these by expanding (z - delta)^2 with delta = mu - c
 * (gh_shrink_fourth_about_mean); the data are centred at c, close to mu, so
 * no large raw fourth powers cancel.
 */
#ifndef GH_SHRINK_H
#define GH_SHRINK_H
#include <stdint.h>
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"

typedef enum {
  GH_SHRINK_NONE = 0,
  GH_SHRINK_FIXED,
  GH_SHRINK_OCCUPANCY,
  GH_SHRINK_OAS,
  GH_SHRINK_LW,
  GH_SHRINK_SS,
  GH_SHRINK_DIAG,
} gh_shrink_method;

typedef enum { GH_SHRINK_TARGET_DIAG = 0, GH_SHRINK_TARGET_IDENTITY = 1 } gh_shrink_target;

typedef struct gh_shrink_opts {
  gh_shrink_method method;
  double factor;           /* fixed: lambda, in [0, 1] */
  double tau;              /* occupancy: tau >= 0, in frames */
  gh_shrink_target target; /* fixed, occupancy: diag(S) (default) or tr(S)/D I */
} gh_shrink_opts;

/* Per-method summary over the Gaussians shrunk (for the stderr line). */
typedef struct gh_shrink_stats {
  int64_t num_shrunk;   /* Gaussians whose covariance was shrunk */
  int64_t num_skipped;  /* kept as they were: occupancy 0 or sample size <= 1 */
  int64_t num_clipped;  /* estimated lambda clipped to 1 */
  double sum_lambda, min_lambda, max_lambda;
  int used_n_eff;       /* 1 if N = n_eff was used (oas/lw/ss), else occupancy */
} gh_shrink_stats;

/* Defaults: method NONE, factor 0, tau 0, target diag. */
void gh_shrink_opts_default(gh_shrink_opts *o);
/* Name <-> method: "none", "fixed", "occupancy", "oas", "lw", "ss", "diag".
 * Returns 0, or -1 if unknown. */
int gh_shrink_method_parse(const char *s, gh_shrink_method *m);
const char *gh_shrink_method_name(gh_shrink_method m);
/* "METHOD[:PARAM]" as in --shrink=fixed:0.3, occupancy:200, lw: PARAM is
 * the factor (fixed) or tau (occupancy); other methods take none.  Fills
 * *o (defaults first) and checks it with gh_shrink_opts_check.  Returns 0,
 * or -1 with the reason in gh_last_error(). */
int gh_shrink_parse(const char *spec, gh_shrink_opts *o);
/* Checks factor in [0, 1] (fixed), tau finite and >= 0 (occupancy).
 * Returns 0, or -1 with the reason in gh_last_error(). */
int gh_shrink_opts_check(const gh_shrink_opts *o);
/* 1 for the methods that need the shrinkage statistics (lw, ss). */
int gh_shrink_needs_stats(gh_shrink_method m);

/* Doubles of shrinkage statistics per Gaussian: 1 + D + D(D+1) + D^2. */
static inline int64_t gh_shrink_stats_size(int32_t D) {
  return 1 + (int64_t)D + (int64_t)D * (D + 1) + (int64_t)D * D;
}

/* F_ij = sum_t gamma_t y_ti^2 y_tj^2 about mean[D] (packed [D(D+1)/2],
 * double) from one Gaussian's statistics st[K] about centre[D] and its
 * occupancy n (the layout at the top; exact algebra, no approximation). */
void gh_shrink_fourth_about_mean(int32_t D, double n, const double *centre, const double *mean,
                                 const double *st, double *F);

/* The intensity lambda of method o->method for one Gaussian: S packed
 * [D(D+1)/2] ML covariance, n occupancy, N the sample size (n_eff, or n;
 * only oas / lw / ss use it), F packed fourth moments about the mean (lw,
 * ss; else NULL).  *clipped (if non-NULL) is set to 1 when the estimate was
 * above 1 and clipped.  Returns lambda in [0, 1], or -1 if it is not
 * defined (N <= 1 for oas / lw / ss; S = 0).  Formulas at the top. */
double gh_shrink_intensity(const gh_shrink_opts *o, int32_t D, const double *S, double n, double N,
                           const double *F, int *clipped);
/* S := (1 - lambda) S + lambda T in place (packed), T of method o (diag(S)
 * for fixed/occupancy with target diag, ss and diag; tr(S)/D I otherwise). */
void gh_shrink_apply(const gh_shrink_opts *o, int32_t D, double *S, double lambda);

/* One Gaussian g of accs a: shrink its ML covariance S (packed, in place;
 * mean[D] is the ML mean m_g / n_g), taking n, n_eff and F from a
 * (a->shrink must be present for lw / ss: the caller checks).  Updates *st.
 * Returns lambda, or -1 if the Gaussian was skipped (S unchanged). */
double gh_shrink_gaussian(const gh_shrink_opts *o, const gh_gmm_accs *a, int32_t g, const double *mean,
                          double *S, gh_shrink_stats *st);

/* Zero *st (min_lambda = +inf, max_lambda = -inf). */
void gh_shrink_stats_init(gh_shrink_stats *st);
/* One log line "fc-shrink: method lw: lambda mean 0.12 (min 0.01, max 0.9)
 * over 40 Gaussians, 0 clipped to 1, 2 skipped (...)" via gh_log. */
void gh_shrink_stats_log(const gh_shrink_opts *o, const gh_shrink_stats *st);

/* Shrinkage statistics of accumulators (gh_gmm_accs.shrink / shrink_centre). */
/* Zeroed statistics for every pdf of a (shaped like model), centres =
 * the model's means (in double, from its natural parameters).  Dies naming
 * the pdf if one is diagonal (the statistics are for full covariances). */
void gh_accs_shrink_init(gh_accs_set *a, const gh_gmm_set *model);
/* 1 if every pdf of a carries shrinkage statistics. */
int gh_accs_have_shrink(const gh_accs_set *a);

/* --shrink and --shrinkage-stats of the EM tools (gmm-est-gpu, gmm-train):
 * shrinkage inside every M-step and fc-shrink's fourth-order statistics
 * in --write-accs.  Register, then after option parsing
 * gh_mstep_shrink_parse (dies on a bad spec or "diag", which is fc-shrink's
 * only), then gh_mstep_shrink_attach once the model is read: dies naming
 * model_in and the pdf unless every pdf is full-covariance (when either
 * option is on), warns when --shrinkage-stats has no --write-accs, and
 * points eo->shrink / eo->shrink_stats at so / sst when a method is set. */
typedef struct {
  const char *spec;     /* --shrink: none, fixed:LAMBDA, occupancy:TAU, oas, lw, ss */
  int shrinkage_stats;  /* --shrinkage-stats */
  gh_shrink_opts so;    /* spec, parsed */
  gh_shrink_stats sst;  /* the lambdas of the last M-step */
} gh_mstep_shrink;
struct gh_opts;
void gh_mstep_shrink_register(struct gh_opts *po, gh_mstep_shrink *ms);
void gh_mstep_shrink_parse(gh_mstep_shrink *ms);
void gh_mstep_shrink_attach(gh_mstep_shrink *ms, const gh_gmm_set *model, const char *model_in,
                            const char *write_accs, gh_est_opts *eo);

#endif
