/* backend.h -- the one interface every compute backend implements (CPU
 * reference, CUDA; OpenCL later).  Modelled on ggml's backends: a struct of
 * function pointers plus an opaque context; the caller picks a backend once
 * (gh_backend_create) and never branches on it again.  Device buffers belong
 * to the backend and are named by opaque handles (gh_dev_model); host code
 * never touches device pointers.
 *
 * Kernels:
 *  - loglikes: the fused GMM likelihood kernel of Vaněk et al. (seeds 000,
 *    001): for a block of frames x a block of pdfs, each pdf's Gaussians are
 *    evaluated and log-added in one pass; output per-pdf log-likelihoods
 *    log sum_g exp(gconst_g + x.mu_invvar_g - 0.5 x'InvCov_g x) (natural
 *    log), variable Gaussians per pdf.
 *  - accumulate: the EM E-step (Araújo et al., seed 002; Cook et al., seed
 *    003): for weighted (frame, pdf) pairs, Gaussian posteriors within the
 *    pdf, then occupancy, first- and second-order statistics, summed in
 *    double on the device and fetched once per pass.
 */
#ifndef GH_BACKEND_H
#define GH_BACKEND_H
#include <stdint.h>
#include "../lib/gmm.h"

/* One weighted frame-to-pdf assignment for the E-step: frame index into the
 * feature block passed to accumulate(), pdf id, weight (posterior, or 1 for
 * an alignment / a global GMM). */
typedef struct { int32_t frame; int32_t pdf; float weight; } gh_frame_pdf;

typedef struct gh_backend gh_backend;
typedef struct gh_dev_model gh_dev_model;

typedef struct {
  const char *name; /* "cpu", "cuda" */
  void (*free)(gh_backend *b);
  /* Copy a GMM set to the backend (in the backend's own layout). */
  gh_dev_model *(*model_upload)(gh_backend *b, const gh_gmm_set *s);
  void (*model_free)(gh_backend *b, gh_dev_model *m);
  /* X: host [T x D] row-major float (D = model dim); out: host [T x P]
   * row-major float, per-pdf log-likelihoods (natural log). */
  void (*loglikes)(gh_backend *b, gh_dev_model *m, const float *X, int32_t T, float *out);
  /* Zero the model's device-side accumulators. */
  void (*acc_zero)(gh_backend *b, gh_dev_model *m);
  /* E-step over a block: X host [T x D]; pairs[npairs] reference rows of X.
   * Adds to the device accumulators; returns sum_pairs weight * log p(x|pdf)
   * (natural log, total not per frame). */
  double (*accumulate)(gh_backend *b, gh_dev_model *m, const float *X, int32_t T,
                       const gh_frame_pdf *pairs, int64_t npairs);
  /* Add the device accumulators into host accs (shaped like the model;
   * total_frames/total_loglike are not touched here). */
  void (*acc_fetch)(gh_backend *b, gh_dev_model *m, gh_accs_set *accs);
} gh_backend_ops;

struct gh_backend {
  const gh_backend_ops *ops;
  void *ctx;
  char device_name[128]; /* for logs: "cpu", "cuda (NVIDIA H200)" */
  double kernel_seconds;  /* time spent in loglikes kernels so far (CUDA:
                             device time by events, excluding transfers;
                             CPU: wall time); for benchmarks */
};

/* Flop count of one Gaussian evaluated on one frame, as defined by Vaněk et
 * al. (seed 000, Sec. V): full covariance 5 per off-diagonal element
 * (D(D-1)/2 of them) + 4 per diagonal element + 9 for the addLog; diagonal
 * (seed 001, Sec. V) 4 per dimension + 9.  Used by the benchmark's GFLOP/s. */
static inline double gh_gauss_flops(gh_covtype type, int32_t dim) {
  double d = dim;
  return type == GH_COV_FULL ? 5.0 * d * (d - 1) / 2 + 4.0 * d + 9.0 : 4.0 * d + 9.0;
}

/* device: "auto" (CUDA when a GPU is present, else CPU), "cpu", "cuda".
 * Logs the choice ("using device cuda (NVIDIA H200)").  Dies if "cuda" is
 * asked for and unavailable, or on an unknown name. */
gh_backend *gh_backend_create(const char *device);
void gh_backend_free(gh_backend *b);

/* Constructors of the individual backends (NULL if unavailable, with the
 * reason in gh_last_error()). */
gh_backend *gh_backend_cpu_new(void);
gh_backend *gh_backend_cuda_new(void);  /* built only with CUDA; else returns NULL */
int gh_cuda_device_count(void);         /* 0 without CUDA or GPU */

#endif
