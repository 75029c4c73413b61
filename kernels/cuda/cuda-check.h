/* cuda-check.h -- error checks shared by the CUDA sources of the kernels
 * library.  Every CUDA runtime call goes through CK(); every launch is
 * followed by CK_LAUNCH("name"), which also synchronises, so an error is
 * reported at the kernel that caused it.  Both die (gh_die) with CUDA's
 * message: one line, exit 1, unfinished outputs removed. */
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

#endif
