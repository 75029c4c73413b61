/* cuda-check.h -- error checks shared by the CUDA sources of the kernels
 * library.  Every CUDA runtime call goes through CK(); a launch is
 * followed by CK_LAUNCH("name"), which also synchronises, so an error is
 * reported at the kernel that caused it -- except on the trainers' per-block
 * path (score groups, forward-backward, pairs, E-step batches), where a
 * synchronisation per launch was a large part of the iteration: there
 * CK(cudaGetLastError()) checks the launch and a fault while the kernel
 * runs is reported by the block's next synchronising call.  Both die
 * (gh_die) with CUDA's message: one line, exit 1, unfinished outputs
 * removed. */
#ifndef GH_CUDA_CHECK_H
#define GH_CUDA_CHECK_H
#include <cuda_runtime.h>
#include "base/gh-base.h"

#define CK(call)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess)                                                              \
      gh_die("CUDA error: %s failed: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, \
             __LINE__);                                                                 \
  } while (0)
#define CK_LAUNCH(what)                                                                 \
  do {                                                                                  \
    cudaError_t e_ = cudaGetLastError();                                                \
    if (e_ == cudaSuccess) e_ = cudaDeviceSynchronize();                                \
    if (e_ != cudaSuccess) gh_die("CUDA error: kernel %s failed: %s", what, cudaGetErrorString(e_)); \
  } while (0)

/* An fp32 Gaussian log-likelihood that is NaN or +inf is an overflow
 * artifact (a frame far outside the numerical contract's range: an FMA
 * chain reaches +inf at a positive cross term and later -inf products do
 * not undo it): it counts as -inf and never poisons the pdf's other
 * Gaussians (doc/reliability.md; as kernels/cpu/cpu-blas.c ovf). */
#ifdef __CUDACC__
static __device__ __forceinline__ float gh_ovf(float v) { return v < INFINITY ? v : -INFINITY; }
#endif

#endif
