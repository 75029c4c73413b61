/* gmm.h -- GMM sets (one GMM per pdf) in Kaldi's on-disk layout, and their
 * accumulators (sufficient statistics) for EM.
 *
 * A gh_gmm holds parameters in Kaldi's "natural-to-evaluate" form (diag-gmm.h,
 * full-gmm.h), exactly as stored on disk, so reading a model is a copy:
 *   diag:  loglike_g(x) = gconst_g + x . means_invvars_g - 0.5 * (x*x) . inv_vars_g
 *   full:  loglike_g(x) = gconst_g + x . means_invcovars_g - 0.5 * x' InvCov_g x
 * with gconst_g = log w_g - 0.5*(D log 2pi + log det Cov_g + mu' InvCov_g mu)
 * (natural log), and the per-pdf log-likelihood log sum_g exp(loglike_g(x)).
 * Full inverse covariances are Kaldi SpMatrix packed lower triangles
 * (matrix.h gh_packed_index), D(D+1)/2 floats per Gaussian.
 *
 * On-disk set layout (Kaldi AmDiagGmm, extended to allow <FullGMM> entries):
 *   <DIMENSION> D <NUMPDFS> P, then P x (<DiagGMM> ... </DiagGMM> |
 *   <FullGMM> ... </FullGMM>).
 * gh_gmm_set_read also accepts: a Kaldi .mdl (TransitionModel, kept verbatim
 * as parsed structure and written back before the set), and a Kaldi global
 * <DiagGMM> or <FullGMM> (read as a set of one pdf; written back in the same
 * global form when the set was read from one and still has one pdf).
 */
#ifndef GH_GMM_H
#define GH_GMM_H
#include <stdint.h>
#include "kaldi-io.h"

typedef enum { GH_COV_DIAG = 0, GH_COV_FULL = 1 } gh_covtype;

typedef struct {
  gh_covtype type;
  int32_t num_gauss, dim;
  float *gconsts;        /* [G] */
  float *weights;        /* [G], sum to 1 */
  float *means_invvars;  /* [G x D]: mean_g * InvCov_g (Kaldi MEANS_INVVARS / MEANS_INVCOVARS) */
  float *inv_vars;       /* diag: [G x D] 1/var; full: [G x D(D+1)/2] packed InvCov_g */
} gh_gmm;

/* Kaldi TransitionModel, parsed so it can be written back in binary or
 * text (opaque here; lib/transition.c owns it). */
typedef struct gh_transition_model gh_transition_model;

typedef enum {
  GH_SET_AM = 0,      /* <DIMENSION> <NUMPDFS> + GMMs (our native form) */
  GH_SET_GLOBAL = 1,  /* a single bare <DiagGMM>/<FullGMM> (Kaldi global GMM) */
} gh_set_form;

typedef struct {
  int32_t dim, num_pdfs;
  gh_gmm *pdfs;                  /* [num_pdfs] */
  gh_set_form form;              /* how it was read; decides how it is written */
  gh_transition_model *trans;    /* non-NULL if read from a Kaldi .mdl */
} gh_gmm_set;

/* Allocate a GMM with G Gaussians of dimension D, zero parameters. */
void gh_gmm_init(gh_gmm *g, gh_covtype type, int32_t num_gauss, int32_t dim);
void gh_gmm_free(gh_gmm *g);
void gh_gmm_copy(gh_gmm *dst, const gh_gmm *src);
void gh_gmm_set_free(gh_gmm_set *s);

/* Natural parameters <-> moments, in double.
 * gh_gmm_get_moments: means [G x D]; covs: diag [G x D] variances, full
 *   [G x D(D+1)/2] packed covariances.  Inverts full matrices (Cholesky,
 *   LAPACK); dies if one is not positive definite.
 * gh_gmm_set_moments: sets weights/means/covariances and computes
 *   inv_vars, means_invvars and gconsts (ComputeGconsts, Kaldi diag-gmm.cc /
 *   full-gmm.cc).  Returns 0, or -1 (message in gh_last_error) if a
 *   covariance is not positive definite. */
void gh_gmm_get_moments(const gh_gmm *g, double *weights, double *means, double *covs);
int gh_gmm_set_moments(gh_gmm *g, const double *weights, const double *means, const double *covs);
/* Recompute gconsts from weights/means_invvars/inv_vars (Kaldi
 * ComputeGconsts); returns number of Gaussians whose gconst is not finite. */
int gh_gmm_compute_gconsts(gh_gmm *g);

/* Reference log-likelihoods in double (used by tests and the CPU path's
 * checks): per-Gaussian [G] for one frame x[D], and the log-sum. */
double gh_gmm_loglike_ref(const gh_gmm *g, const float *x, double *per_gauss /* [G] or NULL */);

/* Read any supported model file (see top); dies with file name and what
 * was wrong.  rxfilename as in gh_istream_open. */
void gh_gmm_set_read(const char *rxfilename, gh_gmm_set *s);
/* Read from an open stream (after the binary marker). */
void gh_gmm_set_read_stream(gh_istream *in, int binary, gh_gmm_set *s);
/* Write atomically (temp file + rename); binary or Kaldi text form. */
void gh_gmm_set_write(const char *wxfilename, int binary, const gh_gmm_set *s);
void gh_gmm_set_write_stream(gh_ostream *out, int binary, const gh_gmm_set *s);
/* Single GMM object <DiagGMM>/<FullGMM> (Kaldi DiagGmm::Read/Write). */
void gh_gmm_read(gh_istream *in, int binary, gh_gmm *g);
void gh_gmm_write(gh_ostream *out, int binary, const gh_gmm *g);
/* Sanity checks after reading: finite values, weights >= 0 summing to ~1,
 * positive inverse variances.  Dies naming file and pdf index. */
void gh_gmm_set_check(const gh_gmm_set *s, const char *name);
int64_t gh_gmm_set_total_gauss(const gh_gmm_set *s);

/* ---------------- accumulators ----------------
 * Statistics for the EM M-step, in double (Kaldi AccumDiagGmm /
 * AccumFullGmm with flags = kGmmAll):
 *   occupancy[g]  = sum_t gamma_tg
 *   mean_accs[g]  = sum_t gamma_tg x_t                       [G x D]
 *   var_accs[g]   = diag: sum_t gamma_tg x_t^2               [G x D]
 *                   full: sum_t gamma_tg x_t x_t' (packed)   [G x D(D+1)/2]
 * In memory the full statistics are NOT centred; Kaldi's file form is
 * centred (x x' - mean_acc mean_acc'/occ), converted on read/write. */
typedef struct {
  gh_covtype type;
  int32_t num_gauss, dim;
  uint32_t flags;     /* Kaldi GmmFlags (kGmmMeans=1, kGmmVariances=2, kGmmWeights=4) */
  double *occupancy;  /* [G] */
  double *mean_accs;  /* [G x D] */
  double *var_accs;   /* see above */
} gh_gmm_accs;

typedef struct {
  int32_t num_pdfs;
  gh_gmm_accs *pdfs;
  double total_frames;   /* sum of frame weights */
  double total_loglike;  /* sum of weight * log p(x|pdf), natural log */
  int global_form;       /* 1: a single bare <GMMACCS>/<FULLGMMACCS> on disk */
} gh_accs_set;

/* Zeroed accumulators shaped like the model. */
void gh_accs_init(gh_accs_set *a, const gh_gmm_set *model);
void gh_accs_free(gh_accs_set *a);
/* a += b; dies if shapes differ (names both sources in the message). */
void gh_accs_add(gh_accs_set *a, const gh_accs_set *b, const char *what);
/* File I/O: Kaldi AccumAmDiagGmm layout (int32 num_pdfs, accs..., double
 * total_frames, double total_loglike) or a bare Kaldi global acc.  Write is
 * atomic. */
void gh_accs_read(const char *rxfilename, gh_accs_set *a);
void gh_accs_write(const char *wxfilename, int binary, const gh_accs_set *a);

#endif
