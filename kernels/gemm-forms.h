/* gemm-forms.h -- host helpers of the GEMM forms of GMM likelihoods and
 * E-step statistics, shared by the backends that use them (the CPU BLAS
 * backend kernels/cpu/cpu-blas.c, OpenCL kernels/opencl/opencl.c, the
 * CUDA model centre in kernels/cuda/cuda-gemm.cu).  doc/kernels.md, "GEMM
 * forms".
 *
 * Expanded features of a frame x [D] centred by c [D] (x' = x - c):
 *   full:  xe = [1, x', vech(x'x')]   vech in Kaldi's packed order
 *                                      ((i, j), j <= i at i(i+1)/2 + j)
 *   diag:  xe = [1, x', x'^2]
 * of depth K = gh_gemm_depth(D, full).  For Gaussian g a parameter row a_g
 * [K] with ll_g(x) = a_g . xe (natural log, Kaldi's natural form, lib/gmm/gmm.h),
 * so the log-likelihoods of n frames against G Gaussians are one GEMM
 * L = Xe A^T [n x G] and the E-step statistics S = R^T Xe [G x K] (R the
 * posteriors [n x G]): row g of S = [sum gamma, sum gamma x',
 * sum gamma vech(x'x') or x'^2], centred at c.  Centring keeps the fp32
 * products small (no cancellation between large c0 x0 terms); the centred
 * statistics are uncentred exactly, in double, by gh_gemm_stats_uncentre.
 * (Kaldi evaluates GMMs the same way through BLAS: gconst + x.(InvCov mu)
 * - 0.5 x' InvCov x, DiagGmm::LogLikelihoods, FullGmm::LogLikelihoods.)
 */
#ifndef GH_GEMM_FORMS_H
#define GH_GEMM_FORMS_H
#include <stdint.h>
#include "gmm/gmm.h"

/* Depth K of the expanded features: full 1 + D + D(D+1)/2, diag 1 + 2D. */
static inline int32_t gh_gemm_depth(int32_t D, int full) {
  return full ? 1 + D + D * (D + 1) / 2 : 1 + 2 * D;
}

/* ---- the float64 reference form (doc/reliability.md, "Numerical contract") ----
 * The reference of every backend is the Gaussian the file's float
 * means_invvars b and inverse (co)variances P define, evaluated in double
 * with its normaliser recomputed in double (the stored float gconst is not
 * used: for features with a large offset it is a large number whose float
 * rounding alone is nats):
 *   mu = P^{-1} b,   norm = log w + 0.5 log det P - D/2 log 2 pi,
 *   ll(x) = norm - 0.5 (x - mu)' P (x - mu)        (natural log)
 * (gconst = norm - 0.5 mu' P mu, Kaldi's ComputeGconsts, in double).
 * A Gaussian with weight 0, a non-finite parameter, an inverse variance
 * <= 0 or an inverse covariance that is not positive definite in double is
 * "dead": norm = -inf, mu = 0, so ll = -inf everywhere (it never wins a
 * log-sum and never turns the others into NaN). */
typedef struct {
  double norm;   /* log w + 0.5 log det P - D/2 log 2 pi; -inf when dead */
  double rho;    /* fp32 amplification of the quadratic form's terms for
                    frames of this Gaussian: (1/D) sum_ij |P_ij| s_i s_j,
                    s_i = sqrt(Cov_ii); 1 for diagonal, grows with the
                    correlations (condition number) */
  double min_var, max_var; /* smallest / largest variance Cov_ii */
  double cond;   /* full: condition number of P (power iteration, ~2 digits); diag: max_var / min_var */
} gh_gauss_info;

/* Scratch (doubles) that gh_gauss_exact needs for dimension D. */
static inline int64_t gh_gauss_work_size(int32_t D) { return 3 * (int64_t)D * D + 4 * (int64_t)D + 4; }

/* Exact parameters of Gaussian k of g: mu [D] (double) and *info; work:
 * gh_gauss_work_size(D) doubles.  Returns 0, or -1 for a dead Gaussian
 * (info->norm = -inf, mu = 0). */
int gh_gauss_exact(const gh_gmm *g, int32_t k, double *mu, gh_gauss_info *info, double *work);

/* ll(x) = norm - 0.5 (x - mu)' P (x - mu) in double for frame x [D]
 * (float, as stored); -inf for a dead Gaussian (norm = -inf). */
double gh_gauss_exact_loglike(const gh_gmm *g, int32_t k, const double *mu, double norm, const float *x);

/* Estimated worst error (nats) of Gaussian k's log-likelihood evaluated as
 * an fp32 dot product a . xe of its parameter row for centre c (NULL: 0)
 * with fp32 expanded features, for frames drawn from the Gaussian:
 *   u |a0| + sqrt(K) u (|norm| + 4 E + 1.5 D sqrt(rho) + 50 rho)
 * with u = 2^-24, E = 0.5 sum_ij |P_ij| |mu_i - c_i| |mu_j - c_j| (the
 * size of the terms the centre's distance brings in) and K the depth
 * (rounding errors of the K terms add in quadrature, hence sqrt(K) and
 * sqrt(rho); calibrated against measured errors, doc/reliability.md: the
 * estimate is 2-4 times the largest error measured).
 * Frames further from the Gaussian add an error relative to their own
 * (larger) distance term, ~ sqrt(K) u rho: the 50 rho term keeps that
 * below the contract's 1e-5 relative.  Infinite for parameters whose row does not fit
 * in float.  0 for a dead Gaussian.  (doc/reliability.md.) */
double gh_gemm_row_error(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                         const double *c);

/* The same estimate for the form evaluated in double (u = 2^-53): large
 * only for a Gaussian ~1e8 of its own standard deviations from the centre,
 * where even double cancels (the cpu backend then evaluates the pdf in the
 * reference form itself). */
double gh_gemm_row_error_d(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                           const double *c);

/* Largest estimated fp32 error (gh_gemm_row_error) that a backend accepts
 * for the GEMM form; above it the pdf is evaluated in double.  5e-4 nats,
 * or $GH_GEMM_MAX_ROW_ERROR (tests and calibration only: a large value
 * forces the fp32 path, to measure what the estimate guards against). */
double gh_gemm_max_row_error(void);
#define GH_GEMM_MAX_ROW_ERROR gh_gemm_max_row_error()

/* ---- the whitened form (doc/reliability.md, "The whitened form") ----
 * ll(x) = norm - 0.5 |L'(x - mu)|^2 with P = L L' (Cholesky, lower L):
 * per Gaussian, the frame is centred at the Gaussian's own mean in double
 * and rounded to float (d = fl(x - mu), relative error 2^-24 of d itself),
 * multiplied by the float factor (an fp32 GEMM [n x D] x [D x D]) and the
 * squares summed in double.  No term is larger than the whitened
 * components' own sizes, so there is no cancellation between the
 * expanded form's x'Px, 2 mu'Px and mu'Pmu, whatever the offset of the
 * Gaussian from the data's centre; the cost is D^2 multiply-adds per
 * (frame, Gaussian) against the expanded form's D(D+1)/2.
 *
 * gh_white_error: estimated worst error (nats) of Gaussian k's
 * log-likelihood in this form for frames drawn from the Gaussian, from
 * work as gh_gauss_exact(g, k, ...) left it (full: L and L^-1):
 *   u sqrt(D + 1) (4 sqrt(V) + 50 sqrt(V / D)),
 *   V = sum_{i >= j} L_ij^2 Cov_ii,  u = 2^-24
 * (the rounding of the D products of each whitened component add in
 * quadrature; sqrt(V / D) is the relative error of the distance term of a
 * far frame, x 50 turns the contract's 1e-5 relative into the 5e-4 nats
 * budget, as gh_gemm_row_error's rho term).  V = D for a diagonal
 * covariance; it grows with the correlations.  Full covariances only:
 * for a diagonal Gaussian the estimate is INFINITY (its expanded form in
 * double, depth 2D + 1, costs what this form would).  INFINITY when the factor or the whitened
 * components of frames within 1e4 sigma do not fit float; 0 for a dead
 * Gaussian. */
double gh_white_error(const gh_gmm *g, int32_t k, const gh_gauss_info *info, const double *work);

/* Largest gh_white_error a backend accepts for the whitened form; above it
 * the pdf takes the double path.  GH_GEMM_MAX_ROW_ERROR's bound (5e-4), or
 * $GH_WHITE_MAX_ERROR (tests and calibration only: 0 turns the whitened
 * path off, a large value forces it where the expanded fp32 form fails). */
double gh_white_max_error(void);

/* Float factor of Gaussian k (full only) from gh_gauss_exact's work:
 * Lf [D x D] row-major, Lf[i][j] = L_ij for j <= i, 0 above, so that the
 * whitened frames of rows Dm [n x D] are Dm Lf (one GEMM). */
void gh_white_factor(int32_t D, const double *work, float *Lf);

/* The largest gh_gemm_row_error over every Gaussian of s for centre c
 * (NULL: uncentred); INFINITY when some row does not fit float (the
 * largest e_cen of gh_gemm_set_errors). */
double gh_gemm_set_row_error(const gh_gmm_set *s, const double *c);

/* Per-pdf error estimates of the set s and its exact form, for a
 * backend that keeps float rows on the device and recentres them there
 * (the CUDA backend: kernels/cuda/cuda.cu model_upload): for pdf p the
 * largest over its Gaussians of gh_gemm_row_error uncentred (e_unc[p], the
 * fused kernels' form gconst + b.x - 0.5 x'Px), centred at c (e_cen[p], the
 * fp32 GEMM forms) and gh_gemm_row_error_d at c (e_dbl[p], the GEMM forms
 * in double); NaN counts as INFINITY.  form [total Gaussians x (D + 1),
 * pdfs in order]: each Gaussian's [norm, mu (D)] of gh_gauss_exact (norm
 * -inf, mu 0 for a dead Gaussian), from which a backend builds the exact
 * row for any centre (gh_gemm_param_row_d).  Any output may be NULL (an
 * estimate not asked for is not computed).
 * OpenMP over the Gaussians. */
void gh_gemm_set_errors(const gh_gmm_set *s, const double *c, double *e_unc, double *e_cen, double *e_dbl,
                        double *form);

/* Parameter row a [K] of Gaussian k of g for centre c [D] (NULL: c = 0,
 * the uncentred row [gconst, b, q]).  With q the quadratic coefficients
 * (diag q_i = -0.5 iv_i; full q_ii = -0.5 P_ii, q_ij = -P_ij for j < i):
 *   a = [ll_g(c), b - P c, q]
 * from the exact form: ll_g(c) = norm - 0.5 (c - mu)' P (c - mu) and b - P c
 * in double (so a0 carries no rounding of a large stored gconst), stored as
 * float.  A dead Gaussian gets [-inf, 0, 0]. */
void gh_gemm_param_row(const gh_gmm *g, int32_t k, const double *c, float *a);
/* The same row in double from mu and info of gh_gauss_exact (no scratch). */
void gh_gemm_param_row_d(const gh_gmm *g, int32_t k, const double *mu, const gh_gauss_info *info,
                         const double *c, double *a);

/* The inverse of gh_gemm_param_row for an uncentred row: gconst, b and the
 * inverse (co)variance of Gaussian k of g from the row's elements
 * a[e * stride], e < K (stride 1: a row; the CUDA E-step layout keeps a
 * pdf's rows column by column, stride = its number of Gaussians).  Exact
 * (the row holds -0.5 P_ii / -P_ij, scaled by powers of two).  The weight
 * is not in the row and is left alone.  Used by the backends' model_fetch. */
void gh_gemm_row_to_gmm(const float *a, int64_t stride, gh_gmm *g, int32_t k);

/* s's parameters := orig's (same shapes: dies naming the pdf otherwise);
 * the backends' model_fetch for a model their device M-step never changes
 * (centred rows, or evaluated on the host: doc/reliability.md). */
void gh_model_fetch_copy(const gh_gmm_set *orig, gh_gmm_set *s);

/* Expanded features xe [K] (double) of frame x [D] centred by c [D]
 * (NULL: uncentred). */
void gh_gemm_expand(const float *x, const double *c, int32_t D, int full, double *xe);

/* A point near the model's data, used as its centre: for up to 64 pdfs
 * spread evenly over the set, the pdf's mean sum_g w_g mu_g / sum_g w_g over
 * up to 1024 / (pdfs sampled) of its Gaussians spread evenly (all of them
 * in most pdfs); c is the plain mean of those pdf means.  Full means are
 * solved by Cholesky in double; Gaussians of zero weight or a covariance
 * that is not positive definite are skipped.  c [D] double; zeros when no
 * Gaussian qualifies.  Any point near the data keeps the fp32 terms small;
 * the closer to the data's mean, the smaller (a UBM's weighted mean is the
 * mean of the data it was estimated on).  It depends on the model only, so
 * every job of a split training centres a frame alike. */
void gh_gemm_model_centre(const gh_gmm_set *s, double *c);

/* Adds one Gaussian's centred statistics s [K] (about centre c) to its
 * uncentred accumulators, exactly in double: *occ += s[0];
 * mean [D] += m' + occ c (m' = s[1..D]); var: diag [D] sum gamma x_i^2,
 * full packed [D(D+1)/2] sum gamma x_i x_j =
 * S'_ij + c_i m'_j + m'_i c_j + occ c_i c_j. */
void gh_gemm_stats_uncentre(int32_t D, int full, const double *c, const double *s, double *occ,
                            double *mean, double *var);

#endif
