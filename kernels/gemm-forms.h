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

/* Parameter row a [K] of Gaussian k of g for centre c [D] (NULL: c = 0,
 * the uncentred row [gconst, b, q]).  With q the quadratic coefficients
 * (diag q_i = -0.5 iv_i; full q_ii = -0.5 P_ii, q_ij = -P_ij for j < i):
 *   a = [ll_g(c), b + grad of the quadratic part at c, q]
 *     = [ll_g(c), b_i + 2 q_ii c_i + sum_{j<i} q_ij c_j + sum_{j>i} q_ji c_j, q],
 * computed in double, stored as float. */
void gh_gemm_param_row(const gh_gmm *g, int32_t k, const double *c, float *a);

/* The inverse of gh_gemm_param_row for an uncentred row: gconst, b and the
 * inverse (co)variance of Gaussian k of g from the row's elements
 * a[e * stride], e < K (stride 1: a row; the CUDA E-step layout keeps a
 * pdf's rows column by column, stride = its number of Gaussians).  Exact
 * (the row holds -0.5 P_ii / -P_ij, scaled by powers of two).  The weight
 * is not in the row and is left alone.  Used by the backends' model_fetch. */
void gh_gemm_row_to_gmm(const float *a, int64_t stride, gh_gmm *g, int32_t k);

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
