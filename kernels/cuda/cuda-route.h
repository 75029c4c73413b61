/* cuda-route.h -- the rule that sends a pdf of the CUDA E-step to the
 * batched path (kernels/cuda/cuda-white.cu), in plain C so that a unit test
 * runs it on a machine without a GPU (test/unit/test_cuda_white.c).
 *
 * A pdf whose per-pdf GEMM E-step would be evaluated in double (its centred
 * fp32 GEMM form errs beyond the numerical contract, or a pdf of few pairs
 * whose uncentred form does: cuda-gemm.h gg_estep_path == GH_PATH_DOUBLE)
 * used to take one DGEMM chain per pdf (estep_fp64: ~10 launches a pdf, 28x
 * the fused E-step on model B, bench/RESULTS.md M2).  Such pdfs now go to
 * one batched path over all of them at once:
 *   GH_CUDA_BATCH_WHITE   full pdfs whose whitened estimate (gemm-forms.h
 *                         gh_white_error, the largest over the pdf's
 *                         Gaussians) is within the whitened budget
 *                         (gh_white_max_error): ll = norm - 0.5 |L'(x - mu)|^2,
 *                         the centring in double, the factor product in float,
 *                         the squares summed in double;
 *   GH_CUDA_BATCH_DOUBLE  the others: norm - 0.5 (x - mu)'P(x - mu) in double
 *                         (the reference form, as the candidate kernels);
 *   GH_CUDA_BATCH_NONE    the pdf keeps its per-pdf path (the rule's mode is
 *                         off, the pdf is not on the double path, D is
 *                         above GH_CUDA_BATCH_MAX_D, the kernel's local
 *                         array, or npairs x G above GH_CUDA_BATCH_MAX_POST).
 * mode: 0 off (GH_CUDA_BATCH=0: the per-pdf DGEMMs, as before), 1 auto
 * (default), 2 the double form for every batched pdf (GH_CUDA_BATCH=double;
 * tests).  white_ok: 0 when the model's float factors are stale (a device
 * M-step rewrote its parameters after the upload) or were not made.
 * e_white: NaN counts as above any budget. */
#ifndef GH_CUDA_ROUTE_H
#define GH_CUDA_ROUTE_H

enum { GH_CUDA_BATCH_NONE = 0, GH_CUDA_BATCH_WHITE = 1, GH_CUDA_BATCH_DOUBLE = 2 };
#define GH_CUDA_BATCH_MAX_D 128
/* A pdf whose pairs x Gaussians exceed this keeps its per-pdf DGEMMs: its
 * GEMMs (>= 16 M posteriors, ~11 GFLOP at D = 36) fill a GPU by themselves,
 * and the DGEMM's fp64 tensor cores may beat the batched path's scalar
 * arithmetic there (a UBM outside the budget that the candidate E-step does
 * not take).  A guess, not measured. */
#define GH_CUDA_BATCH_MAX_POST (1LL << 24)

static inline int gh_cuda_batch_route(int on_double_path, int full, int D, long long npairs, int G, double e_white,
                                      double white_budget, int white_ok, int mode) {
  if (!on_double_path || mode == 0 || D < 1 || D > GH_CUDA_BATCH_MAX_D) return GH_CUDA_BATCH_NONE;
  if (npairs * (long long)G > GH_CUDA_BATCH_MAX_POST) return GH_CUDA_BATCH_NONE;
  if (mode == 1 && full && white_ok && e_white <= white_budget) return GH_CUDA_BATCH_WHITE;
  return GH_CUDA_BATCH_DOUBLE;
}

/* Scoring (loglikes) of a model on the GEMM forms whose pdfs outside the
 * centred fp32 budget (n_exact of them, evaluated in double at
 * --precision=auto: loglikes_fp64, one DGEMM over every Gaussian) all have
 * whitened factors (n_white of those): 1 when they are scored in the
 * whitened form instead (cuda-white.cu gh_cuda_batch_score), the other
 * pdfs by the fp32 GEMM forms; 0 keeps loglikes_fp64.  Only when every such
 * pdf can be whitened: the double form thread by thread would not beat the
 * DGEMM.  white_ok, mode: as gh_cuda_batch_route. */
static inline int gh_cuda_score_route(int n_exact, int n_white, int white_ok, int mode) {
  return mode == 1 && white_ok && n_exact > 0 && n_white == n_exact;
}

#endif
