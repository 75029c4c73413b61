/* cuda-gemm.h -- the GEMM-shaped GMM likelihoods and E-step of the CUDA
 * backend (kernels/cuda/cuda-gemm.cu; internal to kernels/cuda/).
 *
 * Expanded features (doc/kernels.md "GEMM forms"): for a frame x, centred by
 * a vector c (x' = x - c),
 *   full:  xe = [1, x', vech(x'x')]  (vech in Kaldi's packed order: (i, j),
 *                                     j <= i, index i(i+1)/2 + j), E = 1 + D + D(D+1)/2
 *   diag:  xe = [1, x', x'^2],        E = 1 + 2D
 * and for a Gaussian g the parameter row a_g (centred for c) with
 *   ll_g(x) = a_g . xe        (natural log, Kaldi's form, lib/gmm/gmm.h)
 * so the likelihoods of n frames against the G Gaussians are one GEMM
 * L = Xe A^T [n x G], and the E-step statistics S = R^T Xe [G x E] with R the
 * posteriors: S row g = [sum gamma, sum gamma x', sum gamma vech(x'x')] --
 * Kaldi's occupancy, mean and variance accumulators (uncentred on the way
 * into the double accumulators, exactly: see k_acc_add).
 * Centring (x' = x - c with c near the data) keeps the fp32 terms small: no
 * cancellation between large c0 x0 products.  The parameter rows for a
 * centre c come from the uncentred ones on the device (k_recentre):
 *   gconst'_g = ll_g(c),  b'_g = b_g - P_g c,  quadratic part unchanged.
 *
 * All functions die (gh_die) on CUDA / cuBLAS errors.  cuBLAS is loaded at
 * run time (dlopen of libcublas.so.13 / .12 / libcublas.so): a build with
 * nvcc needs no cuBLAS at link time, and without the library the backend
 * keeps the fused kernels (gg_available() == 0).
 */
#ifndef GH_CUDA_GEMM_H
#define GH_CUDA_GEMM_H
#include <stdint.h>
#include "backend.h"

typedef struct gg_ctx gg_ctx;     /* cuBLAS handle + grow-only scratch */
typedef struct gg_model gg_model; /* expanded parameter rows of a GMM set */

/* Non-zero when cuBLAS could be loaded (first call loads it; logs once
 * when it cannot, then the fused kernels are used everywhere).  Thread
 * safe: a call while gg_preload's thread is loading waits for it. */
int gg_available(void);
/* Starts loading cuBLAS on a thread of its own (once per process), so that
 * the library's ~50 ms dlopen runs while the CUDA context is created
 * (gh_backend_cuda_new) instead of in the first model upload (bench/RESULTS.md
 * D21).  Does nothing when no thread can be started. */
void gg_preload(void);
gg_ctx *gg_ctx_new(void);
void gg_ctx_free(gg_ctx *g);

/* Parameter rows of set s (uncentred, float, on the device), the model's
 * own centre `centre` [D] (gemm-forms.h gh_gemm_model_centre, double on the
 * host; gg_loglikes centres by it), the exact form `form` [total Gaussians
 * x (D + 1)]: [norm, mu] per Gaussian (gemm-forms.h gh_gemm_set_errors:
 * every centred row's a0 = norm - 0.5 (c - mu)'P(c - mu) comes from it,
 * never from the float gconst) and e_cen [P] (NULL: zeros): each pdf's
 * centred fp32 error estimate (gh_gemm_set_errors).  At GH_PREC_AUTO, a
 * full pdf of many Gaussians takes the candidate E-step (exact in double
 * for the Gaussians that matter, cuda-gemm.cu estep_cand), and a pdf
 * whose estimate is above the numerical contract's budget
 * (GH_GEMM_MAX_ROW_ERROR, doc/reliability.md) is otherwise evaluated in
 * double (DGEMM). */
gg_model *gg_model_new(const gh_gmm_set *s, const double *centre, const double *form, const double *e_cen);
void gg_model_free(gg_model *m);
/* The model's own centre [D] (double, host; gemm-forms.h gh_gemm_model_centre). */
const double *gg_model_centre(const gg_model *m);
/* The uncentred parameter rows on the device (Gaussian k of pdf p, in
 * global order i = first Gaussian of p + k: row_off[i] .. + E floats, the
 * padding after E zero) and their offsets; after writing new rows call
 * gg_model_rows_changed, which drops the centred and split copies. */
float *gg_model_rows(gg_model *m, const long long **dRowOff);
void gg_model_rows_changed(gg_model *m);
/* The exact form on the device [total Gaussians x (D + 1)] doubles: [norm,
 * mu] of each Gaussian's float parameters (gemm-forms.h gh_gauss_exact): a
 * device M-step that writes new rows writes these too (before
 * gg_model_rows_changed).  gg_model_exact: 1 when pdf p is evaluated in
 * double at GH_PREC_AUTO. */
double *gg_model_exact_form(gg_model *m);
int gg_model_exact(const gg_model *m, int p);
/* The arithmetic path (backend.h GH_PATH_FP32, _CAND or _DOUBLE) that
 * gg_estep_pdf takes for pdf p at precision prec: for the path counters
 * (gh_backend path_pairs). */
int gg_estep_path(const gg_model *m, int p, int prec);
/* 1 when every pdf has the same covariance type (needed by gg_loglikes). */
int gg_model_homogeneous(const gg_model *m);
/* Number of Gaussians of pdf p, total number of Gaussians. */
int gg_model_gauss(const gg_model *m, int p);
int64_t gg_model_total_gauss(const gg_model *m);
int gg_model_full(const gg_model *m, int p);

/* Resolves GH_PREC_AUTO (measured on an H200, bench/RESULTS.md D3):
 * with `cols` output columns (Gaussians: all of them when scoring, the
 * pdf's in the E-step) and `depth` expanded features (padded E): TF32X3
 * when cols >= GG_SPLIT_MIN_COLS and depth >= GG_SPLIT_MIN_DEPTH
 * (compute-bound GEMMs -- scoring 5000 x 16 full D=36 5.75 ms vs 10.34
 * fp32, 1 x 1024 full D=40 1.27 vs 2.54; E-step 1 x 1024 full D=40 16.2 ms
 * vs 22.7, 500k x 128 full D=36 4.16 vs 4.91 -- at the same statistics
 * error), else FP32 (memory-bound: diagonal covariances, few Gaussians,
 * where the split's extra passes cost more: E-step 150k x 16 D=19 0.60 vs
 * 0.39 ms, 1 x 2048 diag 9.15 vs 7.29).  (An earlier E-step, before the
 * split-K statistics, was slower in TF32X3 at every shape.)  Other values
 * are returned as they are. */
#define GG_SPLIT_MIN_COLS 64
#define GG_SPLIT_MIN_DEPTH 128
int gg_resolve_precision(int prec, int64_t cols, int depth);

/* The tensor-core kernels of our own (cuda-tc.h: the likelihood matrix
 * kept on the chip) serve a diagonal pdf -- or, in gg_loglikes, a set of
 * diagonal pdfs -- with padded row length Ep <= GT_MAX_EP and (the largest
 * pdf) at least min_gauss Gaussians, at any precision but FP32 (AUTO and
 * TF32X3: 3xTF32; TF32: one TF32 product); FP32 keeps the cuBLAS SGEMM
 * forms.  GH_CUDA_TC=0|1 forces the choice (benchmarks, tests).
 * Thresholds measured on an H200 (bench/RESULTS.md D5): scoring
 * GG_TC_MIN_GAUSS (5000 pdfs x 64 diag D=36: 5.7 ms against 7.8 for the
 * fused kernel; x 32: 5.5 against 4.0), the E-step
 * GG_TC_MIN_ESTEP_GAUSS (262k frames, D=40: 64 Gaussians 0.70 ms against
 * 0.54 for cuBLAS, 256: 1.15 against 1.08, 2048: 6.87 against 7.37).
 * gg_use_tc decides for one pdf (full: its type, maxG: its Gaussians);
 * gg_model_tc for gg_loglikes on model m (homogeneous diagonal sets). */
#define GG_TC_MIN_GAUSS 64
#define GG_TC_MIN_ESTEP_GAUSS 1024
int gg_use_tc(int full, int Ep, int maxG, int prec, int min_gauss);
int gg_model_tc(const gg_model *m, int prec);
/* gg_model_tc's answer for a homogeneous diagonal set of dimension D
 * whose largest pdf has maxG Gaussians, without the set. */
int gg_diag_set_tc(int D, int maxG, int prec);

/* Per-pdf log-likelihoods of n frames: dX [n x Dp] device floats (first D
 * used), dOut [n x P] device floats (natural log).  Centred by the model's
 * own centre.  Chunked internally. */
void gg_loglikes(gg_ctx *g, gg_model *m, const float *dX, int Dp, int64_t n, float *dOut, int prec);

/* Expanded features of a resident data set's pdfs (one per pdf: npdf),
 * kept across E-steps: the frames of a gh_dev_data never change, so EM
 * iterations after the first expand nothing.  Takes device memory up to a
 * quarter of what is free at its first use; pdfs that do not fit (or need
 * more than one chunk) are expanded into scratch at every E-step. */
typedef struct gg_xcache gg_xcache;
gg_xcache *gg_xcache_new(int npdf);
void gg_xcache_free(gg_xcache *c);

/* E-step of pdf p over its n pairs: dFrames[k] (row of dX) and dW[k]
 * (weight), k < n, device arrays; centre: host [D] double (the data's
 * mean).  Adds the UNcentred statistics of each Gaussian g of p into
 * dAcc[g * E + e] (double, E = 1 + D + S: occupancy, first order, second
 * order, as the fused kernels' accumulators), and w * log p(x|p) of the
 * pairs into *dTotal (device double); all additions in a fixed order
 * (deterministic).  Chunked internally (up to 2^20 pairs or 4 GB of
 * scratch per chunk); the statistics GEMM is split over the chunk's rows
 * into slices summed in double (a deterministic split-K).  xc: the data's
 * cache (gg_xcache_new; NULL: none), where dX, dFrames, dW and centre are
 * that data's. */
#define GG_PREC_FP64 64 /* gg_estep_pdf's prec: the double path whatever the estimate (cuda-estep.cu: the pdfs of few
                           pairs that the fused kernels would take but cannot serve within the contract) */
void gg_estep_pdf(gg_ctx *g, gg_model *m, int p, const float *dX, int Dp, const int32_t *dFrames,
                  const float *dW, int64_t n, const double *centre, double *dAcc, double *dTotal,
                  int prec, gg_xcache *xc);

/* Adds v[0..n) (device doubles) into *dst in a fixed order that depends on n
 * only (deterministic; default stream only: the parts of long vectors go
 * through a device-global scratch). */
void gg_sum_into(const double *v, int64_t n, double *dst);

/* Arithmetic of gg_hmm_gemm. */
enum { GG_HMM_FP32 = 0, GG_HMM_FP64 = 1, GG_HMM_TF32 = 2 };

/* Plain column-major C = A B (no transposes) on the default stream for the
 * dense HMM path (cuda-hmm-dense.cu): A [m x k] lda, B [k x n] ldb, C [m x n] ldc,
 * all device pointers.  type GG_HMM_FP64: double with CUBLAS_COMPUTE_64F;
 * GG_HMM_FP32: float with CUBLAS_COMPUTE_32F (fp32 FMAs, no TF32);
 * GG_HMM_TF32: float with CUBLAS_COMPUTE_32F_FAST_TF32 (one TF32 tensor-core
 * product; exact for operands already rounded to TF32, which is how the
 * caller does 3xTF32: one product over the stacked split operands).  Uses
 * one cuBLAS handle of its own, created on first use.  Returns 0, or -1
 * (nothing done) when cuBLAS is unavailable; dies on a cuBLAS error. */
int gg_hmm_gemm(int type, int m, int n, int k, const void *A, int lda, const void *B, int ldb, void *C,
                int ldc);

#ifdef __CUDACC__
/* v rounded to nearest (ties away) at TF32's 10 mantissa bits (finite v):
 * the big part of the 3xTF32 split v = big + small, small =
 * gg_tf32_round(v - big) (Ootomo & Yokota 2022). */
static __device__ __forceinline__ float gg_tf32_round(float v) {
  unsigned u = __float_as_uint(v);
  u = (u + 0x1000u) & 0xFFFFE000u;
  return __uint_as_float(u);
}
#endif
#endif
